//! The agent's path: a client driving `zot serve` over its stdin/stdout,
//! with a single-threaded Rust echo extension behind it (this binary's
//! `--echo` mode), against a relay floor: this binary's `--relay` mode, a
//! process that forwards bytes between the client and the same echo
//! extension untouched, so it has the same two pipe hops each way and no
//! host logic. Start-up and stop are compared with `--start-floor`, a
//! process that spawns the same extensions, does their handshakes, prints
//! a ready line, and on the end of its stdin sends each `shutdown` and
//! waits for them.
//!
//! Both sides run in the same run, in interleaved rounds (which side goes
//! first alternates), so drift on a noisy machine hits both alike.
//! Context switches are summed over every thread of the zot (or relay)
//! process from `/proc/PID/task/*/status`; CPU per call is utime + stime of
//! `/proc/PID/stat` over the sequential calls.

use super::{r2, stat_cpu, switches_in, switches_of_process, thread_cpu, us, Dist, Env, Res};
use serde_json::{json, Value};
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

/// Sequential calls per side, in rounds, after a warm-up round.
const SEQ_CALLS: usize = 5_000;
const SEQ_ROUNDS: usize = 10;
const WARM_CALLS: usize = 300;
/// Calls per pipelined burst, and bursts per side.
const PIPE_CALLS: usize = 5_000;
const PIPE_REPS: usize = 5;
/// Start-up and stop measurements per side: one extension, fifty.
const START_REPS_1: usize = 20;
const START_REPS_50: usize = 5;

/// Runs one of the helper processes when `args` asks for it.
pub fn mode(args: &[String]) -> Option<Res<()>> {
    match args.first()?.as_str() {
        "--echo" => Some(echo_main(args.get(1).map_or("", String::as_str))),
        "--relay" => Some(relay_main(&args[1..])),
        "--start-floor" => Some(start_floor_main(&args[1..])),
        _ => None,
    }
}

// ----- the helper processes --------------------------------------------------------------

/// A single-threaded echo extension: `echo<sfx>` answers its arguments as
/// JSON text. Each frame is written and flushed as it is made, as the
/// upstream SDKs do.
fn echo_main(sfx: &str) -> Res<()> {
    let mut r = BufReader::with_capacity(64 * 1024, io::stdin().lock());
    let mut w = BufWriter::with_capacity(64 * 1024, io::stdout().lock());
    let name = format!("echo{sfx}");
    // `type` first, as the SDKs write frames (the prefix checks rely on it).
    writeln!(w, "{{\"type\":\"hello\",\"name\":\"{name}\",\"version\":\"1\",\"capabilities\":[\"tools\"]}}")?;
    w.flush()?;
    let mut line = Vec::new();
    loop {
        line.clear();
        if r.read_until(b'\n', &mut line)? == 0 {
            return Ok(());
        }
        let Ok(v) = serde_json::from_slice::<Value>(&line) else { continue };
        match v["type"].as_str() {
            Some("hello_ack") => {
                writeln!(w, "{{\"type\":\"register_tool\",\"name\":\"{name}\",\"description\":\"echo\",\"schema\":{{\"type\":\"object\"}}}}")?;
                w.write_all(b"{\"type\":\"ready\"}\n")?;
            }
            Some("tool_call") => {
                let text = Value::String(v["args"].to_string());
                writeln!(w, "{{\"type\":\"tool_result\",\"id\":{},\"content\":[{{\"type\":\"text\",\"text\":{text}}}]}}", v["id"])?;
            }
            Some("shutdown") => {
                w.write_all(b"{\"type\":\"shutdown_ack\"}\n")?;
                w.flush()?;
                return Ok(());
            }
            _ => {}
        }
        w.flush()?;
    }
}

/// `--relay EXE ARGS...`: runs the extension and copies bytes both ways,
/// untouched, until it exits.
fn relay_main(args: &[String]) -> Res<()> {
    let (exe, rest) = args.split_first().ok_or("usage: --relay EXE [ARGS...]")?;
    let mut child = Command::new(exe).args(rest).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn()?;
    let mut to_child = child.stdin.take().ok_or("no stdin")?;
    let mut from_child = child.stdout.take().ok_or("no stdout")?;
    std::thread::spawn(move || {
        let _ = io::copy(&mut io::stdin().lock(), &mut to_child);
    });
    let mut out = io::stdout().lock();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = from_child.read(&mut buf)?;
        if n == 0 {
            break;
        }
        out.write_all(&buf[..n])?;
        out.flush()?;
    }
    child.wait()?;
    Ok(())
}

/// `--start-floor N`: spawns N echo extensions (`--echo _i`), does every
/// handshake, prints `{"type":"ready"}`; at the end of stdin sends each
/// `shutdown`, closes its stdin and waits for all.
fn start_floor_main(args: &[String]) -> Res<()> {
    let n: usize = args.first().and_then(|a| a.parse().ok()).ok_or("usage: --start-floor N")?;
    let exe = std::env::current_exe()?;
    let mut kids: Vec<(Child, ChildStdin, BufReader<ChildStdout>)> = Vec::with_capacity(n);
    for i in 1..=n {
        let sfx = if i == 1 { String::new() } else { format!("_{i}") };
        let mut c = Command::new(&exe).args(["--echo", &sfx]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn()?;
        let w = c.stdin.take().ok_or("no stdin")?;
        let r = BufReader::new(c.stdout.take().ok_or("no stdout")?);
        kids.push((c, w, r));
    }
    let cwd = std::env::current_dir()?.display().to_string();
    let ack = json!({"type": "hello_ack", "protocol_version": 1, "zot_version": "bench", "provider": "", "model": "",
        "cwd": cwd, "extension_dir": cwd, "data_dir": cwd, "capabilities": ["call_tool"]});
    let ack = format!("{ack}\n");
    let mut line = String::new();
    for (_, w, r) in &mut kids {
        line.clear();
        r.read_line(&mut line)?;
        w.write_all(ack.as_bytes())?;
    }
    for (_, _, r) in &mut kids {
        loop {
            line.clear();
            if r.read_line(&mut line)? == 0 || line.starts_with("{\"type\":\"ready\"") {
                break;
            }
        }
    }
    let mut out = io::stdout().lock();
    out.write_all(b"{\"type\":\"ready\"}\n")?;
    out.flush()?;
    let _ = io::copy(&mut io::stdin().lock(), &mut io::sink());
    for (_, w, _) in &mut kids {
        let _ = w.write_all(b"{\"type\":\"shutdown\"}\n");
    }
    let mut waits = Vec::with_capacity(n);
    for (c, w, r) in kids {
        drop(w);
        waits.push((c, r));
    }
    for (mut c, _) in waits {
        c.wait()?;
    }
    Ok(())
}

// ----- the client ------------------------------------------------------------------------

/// Which side a process is.
#[derive(Clone, Copy, PartialEq)]
enum Side {
    Floor,
    Serve,
}

/// A process the client talks to: `zot serve` or the relay.
struct Proc {
    side: Side,
    child: Child,
    w: BufWriter<ChildStdin>,
    r: BufReader<ChildStdout>,
    line: Vec<u8>,
}

impl Proc {
    fn spawn(side: Side, mut cmd: Command) -> Res<Proc> {
        let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn()?;
        let w = BufWriter::with_capacity(64 * 1024, child.stdin.take().ok_or("no stdin")?);
        let r = BufReader::with_capacity(64 * 1024, child.stdout.take().ok_or("no stdout")?);
        Ok(Proc { side, child, w, r, line: Vec::new() })
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn read(&mut self) -> Res<()> {
        self.line.clear();
        if self.r.read_until(b'\n', &mut self.line)? == 0 {
            return Err(format!("{} closed its stdout", self.name()).into());
        }
        Ok(())
    }

    fn name(&self) -> &'static str {
        match self.side {
            Side::Floor => "the relay",
            Side::Serve => "zot serve",
        }
    }

    /// Reads lines until one starts with `prefix`.
    fn until(&mut self, prefix: &[u8]) -> Res<()> {
        loop {
            self.read()?;
            if self.line.starts_with(prefix) {
                return Ok(());
            }
        }
    }

    fn request(&self, id: usize) -> Vec<u8> {
        match self.side {
            Side::Floor => format!("{{\"type\":\"tool_call\",\"id\":\"{id}\",\"name\":\"echo\",\"args\":{{\"i\":{id}}}}}\n"),
            Side::Serve => format!("{{\"id\":{id},\"type\":\"tool\",\"name\":\"echo\",\"args\":{{\"i\":{id}}}}}\n"),
        }
        .into_bytes()
    }

    fn reply_prefix(&self) -> &'static [u8] {
        match self.side {
            Side::Floor => b"{\"type\":\"tool_result\"",
            Side::Serve => b"{\"type\":\"response\"",
        }
    }

    /// One call, one reply; false when the reply is an error.
    fn call(&mut self, id: usize) -> Res<bool> {
        let req = self.request(id);
        self.w.write_all(&req)?;
        self.w.flush()?;
        self.until(self.reply_prefix())?;
        Ok(!is_error(&self.line))
    }
}

/// An error reply: `"ok":false` from serve, `"is_error":true` from the
/// extension; with its code when there is one.
fn is_error(line: &[u8]) -> bool {
    let has = |n: &[u8]| line.windows(n.len()).any(|w| w == n);
    has(b"\"ok\":false") || has(b"\"is_error\":true")
}

fn error_code(line: &[u8]) -> String {
    serde_json::from_slice::<Value>(line).ok().and_then(|v| v["error"]["code"].as_str().map(str::to_string)).unwrap_or_else(|| "is_error".into())
}

/// The echo extension's folders for `zot serve`: `n` of them, the first
/// registering `echo`, the others `echo_<i>`.
fn echo_dirs(env: &Env, n: usize) -> Res<Vec<PathBuf>> {
    let exe = std::env::current_exe()?;
    let exe = exe.to_string_lossy();
    (1..=n)
        .map(|i| {
            let sfx = if i == 1 { String::new() } else { format!("_{i}") };
            env.manifest("serve-echo", &format!("echo{sfx}"), &exe, &["--echo", &sfx])
        })
        .collect()
}

fn serve_cmd(env: &Env, dirs: &[PathBuf]) -> Command {
    let mut cmd = Command::new(&env.zot);
    cmd.arg("serve").arg("--no-ext").arg("--cwd").arg(&env.tmp).env("ZOT_HOME", &env.home).current_dir(&env.tmp);
    for d in dirs {
        cmd.arg("--ext").arg(d);
    }
    cmd
}

fn start_serve(env: &Env, dirs: &[PathBuf]) -> Res<Proc> {
    let mut p = Proc::spawn(Side::Serve, serve_cmd(env, dirs))?;
    p.until(b"{\"type\":\"ready\"")?;
    if !p.line.windows(6).any(|w| w == b"\"echo\"") {
        return Err(format!("zot serve is ready without the echo extension: {}", String::from_utf8_lossy(&p.line)).into());
    }
    Ok(p)
}

fn start_relay(env: &Env) -> Res<Proc> {
    let exe = std::env::current_exe()?;
    let mut cmd = Command::new(&exe);
    cmd.arg("--relay").arg(&exe).arg("--echo").current_dir(&env.tmp);
    let mut p = Proc::spawn(Side::Floor, cmd)?;
    p.until(b"{\"type\":\"hello\"")?;
    let d = env.tmp.display().to_string();
    let ack = json!({"type": "hello_ack", "protocol_version": 1, "zot_version": "bench", "provider": "", "model": "",
        "cwd": d, "extension_dir": d, "data_dir": d, "capabilities": ["call_tool"]});
    writeln!(p.w, "{ack}")?;
    p.w.flush()?;
    p.until(b"{\"type\":\"ready\"")?;
    Ok(p)
}

/// Stops `zot serve` with a `shutdown` request, the relay by closing its
/// stdin after a `shutdown` frame; returns the time to its exit in µs.
fn stop(p: Proc) -> Res<f64> {
    let Proc { side, mut child, mut w, r, .. } = p;
    let t = Instant::now();
    match side {
        Side::Serve => w.write_all(b"{\"id\":\"stop\",\"type\":\"shutdown\"}\n")?,
        Side::Floor => w.write_all(b"{\"type\":\"shutdown\"}\n")?,
    }
    w.flush()?;
    drop(w);
    drop(r);
    child.wait()?;
    Ok(us(t.elapsed()))
}

/// Peak RSS (VmHWM) of `pid` in KiB.
fn vm_hwm(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines().find_map(|l| l.strip_prefix("VmHWM:")).and_then(|v| v.split_whitespace().next()?.parse().ok()).unwrap_or(0)
}

/// One side's figures.
#[derive(Default)]
struct SideFigures {
    seq: Vec<f64>,
    seq_errors: usize,
    switches: u64,
    cpu: f64,
    /// Pipelined bursts: calls per second, and the error codes seen.
    pipe_rates: Vec<f64>,
    pipe_errors: Vec<(String, usize)>,
    /// CPU seconds of the process's threads (schedstat) over every burst.
    pipe_cpu: f64,
    start1: Vec<f64>,
    stop1: Vec<f64>,
    start50: Vec<f64>,
    stop50: Vec<f64>,
    hwm50: Vec<f64>,
    /// Per thread name over the sequential calls: CPU seconds, switches.
    threads: Vec<(String, f64, u64)>,
}

/// CPU seconds (schedstat) and context switches of each thread of `pid`.
fn thread_times(pid: u32) -> Vec<(String, f64, u64)> {
    let Ok(rd) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Vec::new() };
    rd.flatten()
        .map(|t| {
            let name = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default().trim_end().to_string();
            (name, thread_cpu(&t.path()), switches_in(&t.path().join("status")))
        })
        .collect()
}

/// CPU seconds (schedstat) of every thread of `pid`, summed.
fn threads_cpu(pid: u32) -> f64 {
    thread_times(pid).iter().map(|t| t.1).sum()
}

impl SideFigures {
    /// Adds what each thread did between `before` and `after`.
    fn add_threads(&mut self, before: &[(String, f64, u64)], after: &[(String, f64, u64)]) {
        for (name, cpu, sw) in after {
            let (c0, s0) = before.iter().find(|b| &b.0 == name).map_or((0.0, 0), |b| (b.1, b.2));
            match self.threads.iter_mut().find(|t| &t.0 == name) {
                Some(t) => {
                    t.1 += cpu - c0;
                    t.2 += sw.saturating_sub(s0);
                }
                None => self.threads.push((name.clone(), cpu - c0, sw.saturating_sub(s0))),
            }
        }
    }

    /// `name CPU µs / switches` per call, busiest first.
    fn threads_per_call(&self) -> Vec<(String, f64, f64)> {
        let n = self.seq.len().max(1) as f64;
        let mut v: Vec<(String, f64, f64)> = self.threads.iter().map(|(t, c, s)| (t.clone(), c / n * 1e6, *s as f64 / n)).collect();
        v.sort_by(|a, b| b.1.total_cmp(&a.1));
        v
    }

    fn error(&mut self, code: String) {
        match self.pipe_errors.iter_mut().find(|e| e.0 == code) {
            Some(e) => e.1 += 1,
            None => self.pipe_errors.push((code, 1)),
        }
    }
    fn pipe_error_count(&self) -> usize {
        self.pipe_errors.iter().map(|e| e.1).sum()
    }
}

/// `PIPE_CALLS` requests written as fast as the pipe takes them by one
/// thread while this one reads the replies; returns calls per second.
fn burst(p: &mut Proc, first_id: usize, f: &mut SideFigures) -> Res<f64> {
    let reqs: Vec<Vec<u8>> = (0..PIPE_CALLS).map(|i| p.request(first_id + i)).collect();
    let prefix = p.reply_prefix();
    let Proc { w, r, line, .. } = p;
    let t = Instant::now();
    let mut codes = Vec::new();
    std::thread::scope(|s| -> Res<()> {
        let writer = s.spawn(move || -> io::Result<()> {
            for q in &reqs {
                w.write_all(q)?;
            }
            w.flush()
        });
        let mut got = 0;
        while got < PIPE_CALLS {
            line.clear();
            if r.read_until(b'\n', line)? == 0 {
                return Err("closed its stdout during a burst".into());
            }
            if line.starts_with(prefix) {
                got += 1;
                if is_error(line) {
                    codes.push(error_code(line));
                }
            }
        }
        writer.join().map_err(|_| "the writer panicked")??;
        Ok(())
    })?;
    let rate = PIPE_CALLS as f64 / t.elapsed().as_secs_f64();
    for c in codes {
        f.error(c);
    }
    Ok(rate)
}

/// The serve path against its floor.
pub struct ServeBench {
    floor: SideFigures,
    serve: SideFigures,
}

pub fn run(env: &Env) -> Res<ServeBench> {
    let one = echo_dirs(env, 1)?;
    let fifty = echo_dirs(env, 50)?;
    let mut fl = SideFigures::default();
    let mut sv = SideFigures::default();
    let mut relay = start_relay(env)?;
    let mut serve = start_serve(env, &one)?;
    let mut id = 0usize;
    let per_round = SEQ_CALLS / SEQ_ROUNDS;
    for round in 0..=SEQ_ROUNDS {
        for part in 0..2 {
            let floor_now = (part == 0) == (round % 2 == 0);
            let (p, f) = if floor_now { (&mut relay, &mut fl) } else { (&mut serve, &mut sv) };
            let warm = round == 0;
            let n = if warm { WARM_CALLS } else { per_round };
            let (sw0, cpu0, th0) = (switches_of_process(p.pid()), pid_stat_cpu(p.pid()), thread_times(p.pid()));
            for _ in 0..n {
                id += 1;
                let t = Instant::now();
                let ok = p.call(id)?;
                let dt = us(t.elapsed());
                if !warm {
                    f.seq.push(dt);
                    f.seq_errors += usize::from(!ok);
                }
            }
            if !warm {
                f.switches += switches_of_process(p.pid()).saturating_sub(sw0);
                f.cpu += pid_stat_cpu(p.pid()) - cpu0;
                f.add_threads(&th0, &thread_times(p.pid()));
            }
        }
    }
    for rep in 0..PIPE_REPS {
        for part in 0..2 {
            let floor_now = (part == 0) == (rep % 2 == 0);
            let (p, f) = if floor_now { (&mut relay, &mut fl) } else { (&mut serve, &mut sv) };
            let cpu0 = threads_cpu(p.pid());
            let rate = burst(p, id + 1, f)?;
            f.pipe_cpu += threads_cpu(p.pid()) - cpu0;
            id += PIPE_CALLS;
            f.pipe_rates.push(rate);
        }
    }
    stop(relay)?;
    stop(serve)?;
    let exe = std::env::current_exe()?;
    for (reps, dirs) in [(START_REPS_1, &one), (START_REPS_50, &fifty)] {
        for rep in 0..reps {
            for part in 0..2 {
                let floor_now = (part == 0) == (rep % 2 == 0);
                let t = Instant::now();
                let p = if floor_now {
                    let mut cmd = Command::new(&exe);
                    cmd.arg("--start-floor").arg(dirs.len().to_string()).current_dir(&env.tmp);
                    let mut p = Proc::spawn(Side::Floor, cmd)?;
                    p.until(b"{\"type\":\"ready\"")?;
                    p
                } else {
                    start_serve(env, dirs)?
                };
                let ready = us(t.elapsed());
                let f = if floor_now { &mut fl } else { &mut sv };
                if dirs.len() == 50 {
                    f.hwm50.push(vm_hwm(p.pid()) as f64);
                }
                let stopped = stop(p)?;
                match dirs.len() {
                    1 => {
                        f.start1.push(ready);
                        f.stop1.push(stopped);
                    }
                    _ => {
                        f.start50.push(ready);
                        f.stop50.push(stopped);
                    }
                }
            }
        }
    }
    Ok(ServeBench { floor: fl, serve: sv })
}

fn pid_stat_cpu(pid: u32) -> f64 {
    stat_cpu(Path::new(&format!("/proc/{pid}/stat")))
}

fn med(v: &[f64]) -> f64 {
    Dist::new(v.to_vec()).p50()
}

/// A target: its name, the measured value, the limit, whether it is met.
pub type Goal = (String, f64, &'static str, bool);

/// One row of the report: the figure, both sides, the ratio, the target.
pub struct Row {
    pub what: String,
    pub floor: String,
    pub serve: String,
    pub ratio: String,
    pub target: &'static str,
    pub pass: Option<bool>,
}

impl ServeBench {
    /// The rows of the table, the JSON figures, and each target.
    pub fn report(&self) -> (Vec<Row>, Value, Vec<Goal>) {
        let (f, s) = (&self.floor, &self.serve);
        let (fd, sd) = (Dist::new(f.seq.clone()), Dist::new(s.seq.clone()));
        let mut rows = Vec::new();
        let mut goals = Vec::new();
        let mut row = |what: &str, fv: String, sv: String, ratio: String, target: &'static str, pass: Option<bool>| {
            rows.push(Row { what: what.into(), floor: fv, serve: sv, ratio, target, pass });
        };
        let x = |a: f64, b: f64| format!("{:.2}×", a / b);
        let (p50, p99) = (sd.p50() / fd.p50(), sd.p99() / fd.p99());
        row("sequential tool call round trip, p50", format!("{:.1} µs", fd.p50()), format!("{:.1} µs", sd.p50()), x(sd.p50(), fd.p50()), "≤ 1.25× floor", Some(p50 <= 1.25));
        row("sequential tool call round trip, p99", format!("{:.1} µs", fd.p99()), format!("{:.1} µs", sd.p99()), x(sd.p99(), fd.p99()), "≤ 1.5× floor", Some(p99 <= 1.5));
        goals.push(("serve_p50_ratio_to_relay".to_string(), p50, "<= 1.25", p50 <= 1.25));
        goals.push(("serve_p99_ratio_to_relay".to_string(), p99, "<= 1.5", p99 <= 1.5));
        let n = f.seq.len().max(1) as f64;
        let ns = s.seq.len().max(1) as f64;
        let (fsw, ssw) = (f.switches as f64 / n, s.switches as f64 / ns);
        row("context switches per call (relay / zot process, all threads)", format!("{fsw:.2}"), format!("{ssw:.2}"), x(ssw, fsw), "", None);
        let (fcpu, scpu) = (f.cpu / n * 1e6, s.cpu / ns * 1e6);
        row("CPU per call (relay / zot process, utime+stime)", format!("{fcpu:.1} µs"), format!("{scpu:.1} µs"), x(scpu, fcpu), "", None);
        let threads = |v: &SideFigures| {
            v.threads_per_call().iter().map(|(t, c, s)| format!("{t} {c:.1} µs/{s:.2}")).collect::<Vec<_>>().join(", ")
        };
        row("per thread: CPU (schedstat) / switches per call", threads(f), threads(s), String::new(), "", None);
        let (fr, sr) = (med(&f.pipe_rates), med(&s.pipe_rates));
        let se = s.pipe_error_count();
        let codes = |v: &SideFigures| {
            let per = |n: usize| n as f64 / PIPE_REPS as f64;
            if v.pipe_errors.is_empty() {
                "0 errors".to_string()
            } else {
                v.pipe_errors.iter().map(|(c, n)| format!("{c} {:.0}/burst", per(*n))).collect::<Vec<_>>().join(", ")
            }
        };
        let pipe_ok = sr >= 0.9 * fr && se == 0;
        row(
            &format!("{PIPE_CALLS} pipelined calls (median of {PIPE_REPS} bursts)"),
            format!("{:.0} calls/s, {}", fr, codes(f)),
            format!("{:.0} calls/s, {}", sr, codes(s)),
            x(sr, fr),
            "≥ 0.9× floor, 0 errors",
            Some(pipe_ok),
        );
        goals.push(("serve_pipelined_ratio_to_relay".to_string(), sr / fr, ">= 0.9 with 0 errors", pipe_ok));
        let pipe_cpu = |v: &SideFigures| v.pipe_cpu / (PIPE_CALLS * PIPE_REPS) as f64 * 1e6;
        let (fpc, spc) = (pipe_cpu(f), pipe_cpu(s));
        row("CPU per pipelined call (relay / zot process, schedstat of all threads)", format!("{fpc:.1} µs"), format!("{spc:.1} µs"), x(spc, fpc), "", None);
        let ms = |v: &[f64]| med(v) / 1000.0;
        let (f1, s1) = (ms(&f.start1), ms(&s.start1));
        row("start-up to ready, 1 extension", format!("{f1:.2} ms"), format!("{s1:.2} ms"), super::text::over_floor_ms(s1 - f1), "≤ floor + 1 ms", Some(s1 <= f1 + 1.0));
        goals.push(("serve_startup_1_ext_ms_over_floor".to_string(), s1 - f1, "<= 1", s1 <= f1 + 1.0));
        let (f50, s50) = (ms(&f.start50), ms(&s.start50));
        row("start-up to ready, 50 extensions", format!("{f50:.1} ms"), format!("{s50:.1} ms"), x(s50, f50), "≤ 1.2× floor", Some(s50 <= 1.2 * f50));
        goals.push(("serve_startup_50_ext_ratio".to_string(), s50 / f50, "<= 1.2", s50 <= 1.2 * f50));
        let (fs1, ss1) = (ms(&f.stop1), ms(&s.stop1));
        row("stop, 1 extension", format!("{fs1:.2} ms"), format!("{ss1:.2} ms"), x(ss1, fs1), "≤ 2× floor", Some(ss1 <= 2.0 * fs1));
        goals.push(("serve_stop_1_ext_ratio".to_string(), ss1 / fs1, "<= 2", ss1 <= 2.0 * fs1));
        let (fs50, ss50) = (ms(&f.stop50), ms(&s.stop50));
        row("stop, 50 extensions", format!("{fs50:.1} ms"), format!("{ss50:.1} ms"), x(ss50, fs50), "", None);
        let (fh, sh) = (med(&f.hwm50) / 1024.0, med(&s.hwm50) / 1024.0);
        row("peak RSS (VmHWM) with 50 extensions", format!("{fh:.2} MiB"), format!("{sh:.2} MiB"), x(sh, fh), "≤ 8 MiB", Some(sh <= 8.0));
        goals.push(("serve_rss_50_ext_mib".to_string(), sh, "<= 8", sh <= 8.0));
        let side = |v: &SideFigures, d: &Dist, sw: f64, cpu: f64| {
            json!({
                "sequential": d.json(), "sequential_errors": v.seq_errors,
                "switches_per_call": r2(sw), "cpu_us_per_call": r2(cpu),
                "pipelined_calls_per_s": med(&v.pipe_rates).round(),
                "pipelined_runs_calls_per_s": v.pipe_rates.iter().map(|r| r.round()).collect::<Vec<_>>(),
                "pipelined_errors": v.pipe_errors.iter().map(|(c, n)| json!({"code": c, "count": n})).collect::<Vec<_>>(),
                "pipelined_cpu_us_per_call": r2(pipe_cpu(v)),
                "startup_1_ms": r2(ms(&v.start1)), "startup_50_ms": r2(ms(&v.start50)),
                "stop_1_ms": r2(ms(&v.stop1)), "stop_50_ms": r2(ms(&v.stop50)),
                "vm_hwm_50_kib": med(&v.hwm50),
                "threads_per_call": v.threads_per_call().iter().map(|(t, c, s)| json!({"thread": t, "cpu_us": r2(*c), "switches": r2(*s)})).collect::<Vec<_>>(),
            })
        };
        let j = json!({
            "relay": side(f, &fd, fsw, fcpu),
            "serve": side(s, &sd, ssw, scpu),
            "calls": {"sequential": SEQ_CALLS, "rounds": SEQ_ROUNDS, "pipelined": PIPE_CALLS, "bursts": PIPE_REPS,
                      "startups_1": START_REPS_1, "startups_50": START_REPS_50},
        });
        (rows, j, goals)
    }
}
