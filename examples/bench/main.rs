//! `make bench`: how close the host comes to the physical limit of talking to
//! an extension over pipes, and what it costs. Std only (plus the crate's own
//! dependencies); run the release build:
//!
//! ```sh
//! cargo build --release --examples --bin zot && target/release/examples/bench
//! ```
//!
//! Prints a markdown table and writes the same figures as JSON to
//! `target/bench.json`. Everything runs in a temp dir (`ZOT_HOME` too). The
//! floor (raw JSON lines to the echo extension, no host) and the host are
//! measured in interleaved rounds of the same run, so drift on a noisy
//! machine hits both alike; ratios are of the pooled medians.
//!
//! The MCP path ([`mcp`]): a tool round trip through an MCP server against
//! the same echo as a zot extension, 20 servers started in parallel
//! against by hand, and memory per server; this binary is the MCP echo
//! server of it (`--mcp-echo`).
//!
//! The serve path ([`serve`]): a client driving `zot serve` against a relay
//! floor, in the same run; this binary is also the single-threaded echo
//! extension (`--echo`), the relay (`--relay`) and the start-up floor
//! (`--start-floor`) of that comparison.
//!
//! `bench --profile KIND [N]` runs one workload alone, for `perf` or
//! `valgrind --tool=callgrind`: `floor`, `tool`, `command`, `chain` (N
//! sequential calls), `load`, `load4` (a pipelined run), `start50` (N
//! start-ups and shutdowns of 50 extensions), `serve` (the serve path
//! against its relay floor, alone), `mcp` (the MCP path alone).
use serde_json::{json, Map, Value};
use std::fmt::Write as _;
use std::fs;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use zot_host::discovery::Sources;
use zot_host::home::Home;
use zot_host::host::{Config, Host, Request, Response};

mod confine;
mod mcp;
mod serve;
mod text;
mod trust;

const MIB: usize = 1024 * 1024;

/// Sequential round trips: rounds × calls per round (after a warm-up).
const ROUNDS: usize = 30;
const PER_ROUND: usize = 150;
/// Pipelined load: calling threads × calls each keeps in flight.
const THREADS: usize = 8;
const WINDOW: usize = 16;
const LOAD_TIME: Duration = Duration::from_millis(1000);
const LOAD_REPS: usize = 3;
const FLOOR_CALLS: u64 = 40_000;
const BIG: usize = 8 * MIB;
const BIG_REPS: usize = 7;

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(r) = serve::mode(&args).or_else(|| mcp::mode(&args)) {
        if let Err(e) = r {
            eprintln!("bench {}: {e}", args[0]);
            std::process::exit(1);
        }
        return;
    }
    let result = match args.first().map(String::as_str) {
        Some("--confine") => Env::new().and_then(|e| confine::run(&e)).map(|c| {
            let (o, b) = &c.round_trip;
            println!("start to ready, 10 echo: unconfined {:.2} ms, confined {:.2} ms ({:+.3} ms per extension)", c.ready10.0 / 1e3, c.ready10.1 / 1e3, (c.ready10.1 - c.ready10.0) / 1e4);
            println!("tool round trip p50/p99: unconfined {:.1}/{:.1} µs, confined {:.1}/{:.1} µs", o.p50(), o.p99(), b.p50(), b.p99());
        }),
        Some("--profile") => profile(args.get(1).map_or("tool", String::as_str), args.get(2).and_then(|n| n.parse().ok()).unwrap_or(20_000)),
        Some(a) => Err(format!("unknown argument {a:?} (expected nothing, --confine, or --profile KIND N)").into()),
        None => run(),
    };
    if let Err(e) = result {
        eprintln!("bench: {e}");
        std::process::exit(1);
    }
}

// ----- setup -------------------------------------------------------------------

struct Env {
    target: PathBuf,
    echo: PathBuf,
    guard: PathBuf,
    zot: PathBuf,
    tmp: PathBuf,
    home: PathBuf,
}

impl Env {
    fn new() -> Res<Env> {
        let exe = std::env::current_exe()?;
        // target/<profile>/examples/bench
        let profile = exe.parent().and_then(Path::parent).ok_or("cannot locate the target directory")?;
        let target = profile.parent().ok_or("cannot locate the target directory")?.to_path_buf();
        let echo = profile.join("examples/echo");
        let guard = profile.join("examples/guard");
        let zot = profile.join("zot");
        for p in [&echo, &guard, &zot] {
            if !p.is_file() {
                return Err(format!("{} is missing: run `cargo build --release --examples --bin zot`", p.display()).into());
            }
        }
        let tmp = std::env::temp_dir().join(format!("zot-bench-{}", std::process::id()));
        let _ = fs::remove_dir_all(&tmp);
        let home = tmp.join("home");
        fs::create_dir_all(&home)?;
        Ok(Env { target, echo, guard, zot, tmp, home })
    }

    /// Writes `<tmp>/<group>/<name>/extension.json` and returns its folder.
    fn manifest(&self, group: &str, name: &str, exec: &str, args: &[&str]) -> Res<PathBuf> {
        let dir = self.tmp.join(group).join(name);
        fs::create_dir_all(&dir)?;
        let m = json!({"name": name, "version": "1.0.0", "exec": exec, "args": args});
        fs::write(dir.join("extension.json"), serde_json::to_vec_pretty(&m)?)?;
        Ok(dir)
    }

    /// `n` echo extensions; the first registers `echo`, the others `echo_<i>`.
    fn echoes(&self, n: usize) -> Res<Vec<PathBuf>> {
        self.echoes_in("echo", n)
    }

    /// [`Env::echoes`] in `<tmp>/<group>/`.
    fn echoes_in(&self, group: &str, n: usize) -> Res<Vec<PathBuf>> {
        let exec = self.echo.to_string_lossy();
        (1..=n)
            .map(|i| match i {
                1 => self.manifest(group, "echo", &exec, &[]),
                _ => self.manifest(group, &format!("echo_{i}"), &exec, &[&format!("_{i}")]),
            })
            .collect()
    }

    /// The real interpreter behind `python3` (not a pyenv or asdf shim, whose
    /// own start-up would be measured too), if there is one.
    fn python(&self) -> Option<String> {
        let out = Command::new("python3").args(["-c", "import sys; print(sys.executable)"]).output().ok()?;
        let exe = String::from_utf8(out.stdout).ok()?.trim().to_string();
        (out.status.success() && !exe.is_empty()).then_some(exe)
    }

    fn pythons(&self, python: &str, n: usize) -> Res<Vec<PathBuf>> {
        (1..=n)
            .map(|i| {
                let dir = self.manifest("py", &format!("py_{i}"), python, &["ext.py", &format!("_{i}")])?;
                fs::write(dir.join("ext.py"), PY_EXT)?;
                Ok(dir)
            })
            .collect()
    }

    fn config(&self, dirs: &[PathBuf]) -> Config {
        let mut cfg = Config::new(Home::at(&self.home), self.tmp.clone());
        cfg.sources = Sources { ext_paths: dirs.to_vec(), no_ext: true };
        cfg
    }

    fn start(&self, dirs: &[PathBuf]) -> Res<Host> {
        let (host, _events) = Host::start(self.config(dirs))?;
        let report = host.wait_ready()?;
        if report.ready.len() != dirs.len() {
            return Err(format!("only {} of {} extensions ready: {:?}", report.ready.len(), dirs.len(), report.errors).into());
        }
        Ok(host)
    }
}

impl Drop for Env {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.tmp);
    }
}

const PY_EXT: &str = r#"import json, sys
sfx = sys.argv[1] if len(sys.argv) > 1 else ""
def emit(f):
    sys.stdout.write(json.dumps(f) + "\n"); sys.stdout.flush()
emit({"type": "hello", "name": "py" + sfx, "version": "1", "capabilities": ["tools"]})
for line in sys.stdin:
    m = json.loads(line); t = m.get("type")
    if t == "hello_ack":
        emit({"type": "register_tool", "name": "py" + sfx, "description": "echo", "schema": {"type": "object"}})
        emit({"type": "ready"})
    elif t == "tool_call":
        emit({"type": "tool_result", "id": m["id"], "content": [{"type": "text", "text": json.dumps(m.get("args"))}]})
    elif t == "shutdown":
        emit({"type": "shutdown_ack"}); break
"#;

// ----- the floor: JSON lines to an extension, no host ---------------------------------

struct Peer {
    child: Child,
    w: BufWriter<ChildStdin>,
    r: BufReader<ChildStdout>,
    line: Vec<u8>,
}

impl Peer {
    /// Spawns `exe` and does the handshake by hand, up to its `ready`.
    fn spawn(exe: &Path, args: &[&str], dir: &Path) -> Res<Peer> {
        Peer::start(exe, args, dir)?.handshake(dir)
    }

    /// Spawns `exe`, without waiting for anything.
    fn start(exe: &Path, args: &[&str], dir: &Path) -> Res<Peer> {
        let mut child = Command::new(exe)
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let w = BufWriter::with_capacity(64 * 1024, child.stdin.take().ok_or("no stdin")?);
        let r = BufReader::with_capacity(64 * 1024, child.stdout.take().ok_or("no stdout")?);
        Ok(Peer { child, w, r, line: Vec::new() })
    }

    /// `hello`, `hello_ack`, then frames up to `ready`.
    fn handshake(mut self, dir: &Path) -> Res<Peer> {
        let p = &mut self;
        p.read()?;
        if !p.line.starts_with(br#"{"type":"hello""#) && !p.line.starts_with(br#"{"type": "hello""#) {
            return Err(format!("{}: expected hello, got {}", dir.display(), String::from_utf8_lossy(&p.line)).into());
        }
        let d = dir.display().to_string();
        let ack = json!({"type": "hello_ack", "protocol_version": 1, "zot_version": "bench", "provider": "",
            "model": "", "cwd": d, "extension_dir": d, "data_dir": d});
        p.send(format!("{ack}\n").as_bytes())?;
        loop {
            p.read()?;
            if p.line.starts_with(br#"{"type":"ready""#) || p.line.starts_with(br#"{"type": "ready""#) {
                return Ok(self);
            }
        }
    }

    fn send(&mut self, frame: &[u8]) -> Res<()> {
        self.w.write_all(frame)?;
        self.w.flush()?;
        Ok(())
    }

    fn read(&mut self) -> Res<usize> {
        self.line.clear();
        let n = self.r.read_until(b'\n', &mut self.line)?;
        if n == 0 {
            return Err("the extension closed its stdout".into());
        }
        Ok(n)
    }

    /// One request, one reply line; returns the reply's length.
    fn call(&mut self, frame: &[u8]) -> Res<usize> {
        self.send(frame)?;
        self.read()
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn close(mut self) {
        let _ = self.send(b"{\"type\":\"shutdown\"}\n");
        drop(self.w);
        let _ = self.child.wait();
    }
}

fn tool_frame(id: u64, name: &str) -> Vec<u8> {
    format!("{{\"type\":\"tool_call\",\"id\":\"{id}\",\"name\":\"{name}\",\"args\":{{\"i\":{id}}}}}\n").into_bytes()
}

fn command_frame(id: u64) -> Vec<u8> {
    format!("{{\"type\":\"command_invoked\",\"id\":\"{id}\",\"name\":\"echo\",\"args\":\"hello\"}}\n").into_bytes()
}

fn intercept_frame(id: u64) -> Vec<u8> {
    format!(
        "{{\"type\":\"event_intercept\",\"id\":\"{id}\",\"event\":\"tool_call\",\"tool_id\":\"t1\",\"tool_name\":\"bash\",\"tool_args\":{{\"command\":\"ls\"}}}}\n"
    )
    .into_bytes()
}

fn intercept_payload() -> Map<String, Value> {
    let Value::Object(m) = json!({"tool_id": "t1", "tool_name": "bash", "tool_args": {"command": "ls"}}) else {
        unreachable!()
    };
    m
}

// ----- statistics and CPU ------------------------------------------------------------

/// Sorted durations in µs.
struct Dist(Vec<f64>);

impl Dist {
    fn new(mut v: Vec<f64>) -> Dist {
        v.sort_by(f64::total_cmp);
        Dist(v)
    }
    fn q(&self, q: f64) -> f64 {
        if self.0.is_empty() {
            return f64::NAN;
        }
        let i = ((self.0.len() - 1) as f64 * q).round() as usize;
        self.0[i]
    }
    fn p50(&self) -> f64 {
        self.q(0.5)
    }
    fn p99(&self) -> f64 {
        self.q(0.99)
    }
    fn json(&self) -> Value {
        json!({"p50_us": r2(self.p50()), "p99_us": r2(self.p99()), "samples": self.0.len()})
    }
}

fn median(v: &[f64]) -> f64 {
    Dist::new(v.to_vec()).p50()
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn r2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// User + system CPU seconds of this process.
fn self_cpu() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// utime + stime of a `/proc/.../stat` file, in seconds.
fn stat_cpu(path: &Path) -> f64 {
    let Ok(s) = fs::read_to_string(path) else { return 0.0 };
    let Some(rest) = s.rfind(')').map(|i| &s[i + 2..]) else { return 0.0 };
    let f: Vec<&str> = rest.split(' ').collect();
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let t = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    (t(11) + t(12)) / hz
}

fn pid_cpu(pid: u32) -> f64 {
    stat_cpu(Path::new(&format!("/proc/{pid}/stat")))
}

/// CPU seconds of this process's host threads (the dispatcher and the
/// per-extension threads), leaving out the calling threads.
fn host_threads_cpu() -> f64 {
    let Ok(rd) = fs::read_dir("/proc/self/task") else { return 0.0 };
    rd.flatten()
        .filter(|t| {
            fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.starts_with("zot-dispatcher") || c.starts_with("zot-ext-"))
        })
        .map(|t| thread_cpu(&t.path()))
        .sum()
}

/// CPU seconds of one thread: `schedstat` (nanoseconds) when the kernel
/// keeps it, else `stat` (clock ticks).
fn thread_cpu(task: &Path) -> f64 {
    let ns = fs::read_to_string(task.join("schedstat")).ok().and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok());
    match ns {
        Some(ns) if ns > 0 => ns as f64 / 1e9,
        _ => stat_cpu(&task.join("stat")),
    }
}

fn ext_pids(host: &Host) -> Vec<u32> {
    match host.list() {
        Ok(l) => l.extensions.iter().filter_map(|e| e.pid).collect(),
        Err(_) => Vec::new(),
    }
}

// ----- the runs --------------------------------------------------------------------

/// Voluntary and involuntary context switches of this process's threads
/// that `pick(tid, name)`.
fn switches_of_threads(pick: impl Fn(u32, &str) -> bool) -> u64 {
    let Ok(rd) = fs::read_dir("/proc/self/task") else { return 0 };
    rd.flatten()
        .filter(|t| {
            let tid = t.file_name().to_str().and_then(|n| n.parse().ok()).unwrap_or(0);
            let name = fs::read_to_string(t.path().join("comm")).unwrap_or_default();
            pick(tid, name.trim_end())
        })
        .map(|t| switches_in(&t.path().join("status")))
        .sum()
}

/// Context switches of every thread of process `pid`.
fn switches_of_process(pid: u32) -> u64 {
    let Ok(rd) = fs::read_dir(format!("/proc/{pid}/task")) else { return 0 };
    rd.flatten().map(|t| switches_in(&t.path().join("status"))).sum()
}

fn switches_in(status: &Path) -> u64 {
    let s = fs::read_to_string(status).unwrap_or_default();
    s.lines()
        .filter(|l| l.starts_with("voluntary_ctxt_switches:") || l.starts_with("nonvoluntary_ctxt_switches:"))
        .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum()
}

/// What one hand-off between two threads costs here: `n` round trips of a
/// crossbeam ping-pong (the channels the host uses), halved, in µs.
fn hop_costs(n: usize) -> Vec<f64> {
    let (atx, arx) = crossbeam_channel::bounded::<u64>(1);
    let (btx, brx) = crossbeam_channel::bounded::<u64>(1);
    let echo = std::thread::spawn(move || {
        while let Ok(x) = arx.recv() {
            if btx.send(x).is_err() {
                break;
            }
        }
    });
    let mut out = Vec::with_capacity(n);
    for i in 0..n as u64 {
        let t = Instant::now();
        if atx.send(i).is_err() || brx.recv().is_err() {
            break;
        }
        out.push(us(t.elapsed()) / 2.0);
    }
    drop(atx);
    let _ = echo.join();
    out
}

struct Latency {
    /// Context switches per tool call: (floor, host), counted over the
    /// bench's calling thread, the host's threads and the echo process.
    switches: (f64, f64),
    /// One hand-off between two threads (half a crossbeam ping-pong).
    hop: Dist,
    floor_tool: Dist,
    host_tool: Dist,
    floor_cmd: Dist,
    host_cmd: Dist,
    floor_chain: Dist,
    host_chain: Dist,
}

fn latency(env: &Env) -> Res<Latency> {
    let echo = env.echoes(1)?;
    let ga = env.manifest("guard", "guard_a", &env.guard.to_string_lossy(), &[])?;
    let gb = env.manifest("guard", "guard_b", &env.guard.to_string_lossy(), &[])?;
    let host = env.start(&[echo[0].clone(), ga.clone(), gb.clone()])?;
    let mut fe = Peer::spawn(&env.echo, &[], &echo[0])?;
    let mut fa = Peer::spawn(&env.guard, &[], &ga)?;
    let mut fb = Peer::spawn(&env.guard, &[], &gb)?;
    let payload = intercept_payload();
    let mut id = 0u64;
    let mut v: [Vec<f64>; 6] = Default::default();
    let host_echo = ext_pids(&host).first().copied().unwrap_or(0);
    let main_tid = std::process::id();
    let fe_pid = fe.pid();
    let floor_switches = || switches_of_process(fe_pid) + switches_of_threads(|tid, _| tid == main_tid);
    let host_switches = || {
        switches_of_process(host_echo)
            + switches_of_threads(|tid, name| tid == main_tid || name.starts_with("zot-dispatcher") || name.starts_with("zot-ext-"))
    };
    let (mut fsw, mut hsw) = (0u64, 0u64);
    let mut hops = Vec::new();

    for round in 0..=ROUNDS {
        let warm = round == 0;
        for part in 0..2 {
            // Alternate which side goes first.
            let floor_now = (part == 0) == (round % 2 == 0);
            let sw0 = if floor_now { floor_switches() } else { host_switches() };
            for _ in 0..PER_ROUND {
                id += 1;
                let t = Instant::now();
                if floor_now {
                    fe.call(&tool_frame(id, "echo"))?;
                } else {
                    host.tool("echo", Some(json!({"i": id})))?;
                }
                let dt = us(t.elapsed());
                if !warm {
                    v[usize::from(!floor_now)].push(dt);
                }
            }
            if !warm {
                match floor_now {
                    true => fsw += floor_switches().saturating_sub(sw0),
                    false => hsw += host_switches().saturating_sub(sw0),
                }
            }
            if !warm && part == 1 {
                hops.extend(hop_costs(PER_ROUND));
            }
            for _ in 0..PER_ROUND {
                id += 1;
                let t = Instant::now();
                if floor_now {
                    fe.call(&command_frame(id))?;
                } else {
                    host.command("echo", "hello")?;
                }
                let dt = us(t.elapsed());
                if !warm {
                    v[2 + usize::from(!floor_now)].push(dt);
                }
            }
            for _ in 0..PER_ROUND / 2 {
                id += 1;
                let t = Instant::now();
                if floor_now {
                    fa.call(&intercept_frame(id))?;
                    fb.call(&intercept_frame(id))?;
                } else {
                    let o = host.intercept("tool_call", payload.clone())?;
                    if o.block {
                        return Err("the guards blocked `ls`".into());
                    }
                }
                let dt = us(t.elapsed());
                if !warm {
                    v[4 + usize::from(!floor_now)].push(dt);
                }
            }
        }
    }
    host.shutdown();
    fe.close();
    fa.close();
    fb.close();
    let [a, b, c, d, e, f] = v;
    let n = (ROUNDS * PER_ROUND) as f64;
    Ok(Latency {
        switches: (fsw as f64 / n, hsw as f64 / n),
        hop: Dist::new(hops),
        floor_tool: Dist::new(a),
        host_tool: Dist::new(b),
        floor_cmd: Dist::new(c),
        host_cmd: Dist::new(d),
        floor_chain: Dist::new(e),
        host_chain: Dist::new(f),
    })
}

/// One pipelined run's figures.
#[derive(Clone, Copy, Default)]
struct Load {
    calls: u64,
    secs: f64,
    /// Whole bench process (host threads and callers) CPU seconds.
    proc_cpu: f64,
    /// Dispatcher and per-extension host threads only.
    host_cpu: f64,
    ext_cpu: f64,
}

impl Load {
    fn rate(&self) -> f64 {
        self.calls as f64 / self.secs
    }
    fn per10k(&self, cpu: f64) -> f64 {
        cpu / self.calls as f64 * 10_000.0
    }
}

/// `THREADS` callers, each keeping `WINDOW` tool calls in flight through
/// `Host::submit`, spread over `tools`, for `LOAD_TIME`.
fn host_load(host: &Host, tools: &[String]) -> Res<Load> {
    let pids = ext_pids(host);
    let ext0: f64 = pids.iter().map(|&p| pid_cpu(p)).sum();
    let (cpu0, h0) = (self_cpu(), host_threads_cpu());
    let start = Instant::now();
    let deadline = start + LOAD_TIME;
    let results: Vec<Res<u64>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                s.spawn(move || -> Res<u64> {
                    let (tx, rx) = mpsc::channel::<bool>();
                    let mut n = t;
                    let submit = |n: usize| {
                        let tx = tx.clone();
                        let req = Request::Tool { name: tools[n % tools.len()].clone(), args: Some(json!({"i": n})), tool_id: None };
                        host.submit(req, Box::new(move |r| {
                            let _ = tx.send(matches!(r, Ok(Response::Tool(_))));
                        }));
                    };
                    for _ in 0..WINDOW {
                        submit(n);
                        n += 1;
                    }
                    let (mut inflight, mut done) = (WINDOW, 0u64);
                    while inflight > 0 {
                        if !rx.recv()? {
                            return Err("a pipelined call failed".into());
                        }
                        inflight -= 1;
                        done += 1;
                        if Instant::now() < deadline {
                            submit(n);
                            n += 1;
                            inflight += 1;
                        }
                    }
                    Ok(done)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("a caller panicked".into()))).collect()
    });
    let secs = start.elapsed().as_secs_f64();
    let (cpu1, h1) = (self_cpu(), host_threads_cpu());
    let ext1: f64 = pids.iter().map(|&p| pid_cpu(p)).sum();
    let mut calls = 0;
    for r in results {
        calls += r?;
    }
    Ok(Load { calls, secs, proc_cpu: cpu1 - cpu0, host_cpu: h1 - h0, ext_cpu: ext1 - ext0 })
}

/// The floor for pipelining: one writer and one reader on the echo
/// extension's pipes, `THREADS * WINDOW` calls in flight, `FLOOR_CALLS` calls.
fn floor_load(peer: &mut Peer) -> Res<Load> {
    let pid = peer.pid();
    let ext0 = pid_cpu(pid);
    let cpu0 = self_cpu();
    let start = Instant::now();
    let (slots_tx, slots_rx) = crossbeam_channel::bounded::<()>(THREADS * WINDOW);
    let Peer { w, r, line, .. } = peer;
    std::thread::scope(|s| -> Res<()> {
        let writer = s.spawn(move || -> Res<()> {
            for id in 1..=FLOOR_CALLS {
                if slots_tx.try_send(()).is_err() {
                    w.flush()?;
                    slots_tx.send(())?;
                }
                w.write_all(&tool_frame(id, "echo"))?;
            }
            w.flush()?;
            Ok(())
        });
        let slots_rx = slots_rx;
        let read = (|| -> Res<()> {
            for _ in 0..FLOOR_CALLS {
                line.clear();
                if r.read_until(b'\n', line)? == 0 {
                    return Err("echo closed its stdout".into());
                }
                let _ = slots_rx.recv();
            }
            Ok(())
        })();
        // A writer waiting for a slot gives up once the reader is gone.
        drop(slots_rx);
        let wrote = writer.join().map_err(|_| "the writer panicked")?;
        read.and(wrote)
    })?;
    let secs = start.elapsed().as_secs_f64();
    let cpu1 = self_cpu();
    Ok(Load { calls: FLOOR_CALLS, secs, proc_cpu: cpu1 - cpu0, host_cpu: cpu1 - cpu0, ext_cpu: pid_cpu(pid) - ext0 })
}

struct Throughput {
    floor: Vec<Load>,
    one: Vec<Load>,
    four: Vec<Load>,
}

fn throughput(env: &Env) -> Res<Throughput> {
    let echoes = env.echoes(4)?;
    let tools: Vec<String> = (1..=4).map(|i| if i == 1 { "echo".into() } else { format!("echo_{i}") }).collect();
    let one = env.start(&echoes[..1])?;
    let four = env.start(&echoes)?;
    let mut peer = Peer::spawn(&env.echo, &[], &echoes[0])?;
    // Warm-up.
    host_load_short(&one)?;
    let mut t = Throughput { floor: Vec::new(), one: Vec::new(), four: Vec::new() };
    for rep in 0..LOAD_REPS {
        let order: [u8; 3] = if rep % 2 == 0 { [0, 1, 2] } else { [2, 1, 0] };
        for k in order {
            match k {
                0 => t.floor.push(floor_load(&mut peer)?),
                1 => t.one.push(host_load(&one, &tools[..1])?),
                _ => t.four.push(host_load(&four, &tools)?),
            }
        }
    }
    one.shutdown();
    four.shutdown();
    peer.close();
    Ok(t)
}

fn host_load_short(host: &Host) -> Res<()> {
    for i in 0..500 {
        host.tool("echo", Some(json!({"i": i})))?;
    }
    Ok(())
}

/// Medians over the runs of one kind.
struct LoadSummary {
    rate: f64,
    host: f64,
    process: f64,
    ext: f64,
    runs: Vec<f64>,
}

fn summarize(v: &[Load]) -> LoadSummary {
    let m = |f: &dyn Fn(&Load) -> f64| median(&v.iter().map(f).collect::<Vec<_>>());
    LoadSummary {
        rate: m(&|l| l.rate()),
        host: m(&|l| l.per10k(l.host_cpu)),
        process: m(&|l| l.per10k(l.proc_cpu)),
        ext: m(&|l| l.per10k(l.ext_cpu)),
        runs: v.iter().map(|l| l.rate().round()).collect(),
    }
}

struct Startup {
    /// (kind, count, host start → ready, floor spawn → every ready)
    ready: Vec<(String, usize, Dist, Dist)>,
    shutdown50: Dist,
    floor_shutdown50: Dist,
    python: Option<String>,
}

/// The floor for start-up: spawn every extension, then do each handshake
/// by hand (they start in parallel), up to the last `ready`.
fn floor_start(exe_of: &dyn Fn(&Path) -> (PathBuf, Vec<String>), dirs: &[PathBuf]) -> Res<Vec<Peer>> {
    let started: Vec<Peer> = dirs
        .iter()
        .map(|d| {
            let (exe, args) = exe_of(d);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            Peer::start(&exe, &args, d)
        })
        .collect::<Res<_>>()?;
    started.into_iter().zip(dirs).map(|(p, d)| p.handshake(d)).collect()
}

fn floor_stop(peers: Vec<Peer>) {
    // Everyone gets `shutdown` and end of input first, as the host does.
    let children: Vec<Child> = peers
        .into_iter()
        .map(|mut p| {
            let _ = p.send(b"{\"type\":\"shutdown\"}\n");
            let Peer { child, .. } = p;
            child
        })
        .collect();
    for mut c in children {
        let _ = c.wait();
    }
}

fn startup(env: &Env) -> Res<Startup> {
    let e50 = env.echoes(50)?;
    let python = env.python();
    let mut sets: Vec<(String, Vec<PathBuf>, usize)> = vec![
        ("echo".into(), e50[..1].to_vec(), 7),
        ("echo".into(), e50[..10].to_vec(), 5),
        ("echo".into(), e50.clone(), 5),
    ];
    if let Some(py) = &python {
        sets.push(("python".into(), env.pythons(py, 10)?, 3));
    }
    // How each extension is run, for the floor: as its manifest says.
    let exe_of = |d: &Path| -> (PathBuf, Vec<String>) {
        let m: Value = fs::read(d.join("extension.json")).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default();
        let exe = PathBuf::from(m["exec"].as_str().unwrap_or_default());
        let args = m["args"].as_array().map(|a| a.iter().filter_map(|x| x.as_str().map(String::from)).collect()).unwrap_or_default();
        (exe, args)
    };
    let mut host_t: Vec<Vec<f64>> = vec![Vec::new(); sets.len()];
    let mut floor_t: Vec<Vec<f64>> = vec![Vec::new(); sets.len()];
    let (mut shut, mut fshut) = (Vec::new(), Vec::new());
    // Warm the page cache and the dynamic loader.
    env.start(&e50[..10])?.shutdown();
    for round in 0..7 {
        for (k, (_, dirs, reps)) in sets.iter().enumerate() {
            if round >= *reps {
                continue;
            }
            for floor_now in [round % 2 == 0, round % 2 == 1] {
                if floor_now {
                    let t = Instant::now();
                    let peers = floor_start(&exe_of, dirs)?;
                    floor_t[k].push(us(t.elapsed()));
                    let t = Instant::now();
                    floor_stop(peers);
                    if dirs.len() == 50 {
                        fshut.push(us(t.elapsed()));
                    }
                } else {
                    let t = Instant::now();
                    let host = env.start(dirs)?;
                    host_t[k].push(us(t.elapsed()));
                    let t = Instant::now();
                    host.shutdown();
                    if dirs.len() == 50 {
                        shut.push(us(t.elapsed()));
                    }
                }
            }
        }
    }
    let ready = sets
        .into_iter()
        .zip(host_t.into_iter().zip(floor_t))
        .map(|((kind, dirs, _), (h, f))| (kind, dirs.len(), Dist::new(h), Dist::new(f)))
        .collect();
    Ok(Startup { ready, shutdown50: Dist::new(shut), floor_shutdown50: Dist::new(fshut), python })
}

struct Mem {
    /// (extensions, VmHWM KiB, VmRSS KiB, threads, start → `ready` µs)
    rows: Vec<(usize, u64, u64, u64, f64)>,
}

/// Starts `cmd` (a `zot serve`) in the bench's home and reads its output
/// up to the `ready` notification.
fn serve_until_ready(mut cmd: Command, env: &Env) -> Res<(std::process::Child, BufReader<std::process::ChildStdout>)> {
    let mut child = cmd.env("ZOT_HOME", &env.home).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn()?;
    let mut out = BufReader::new(child.stdout.take().ok_or("no stdout")?);
    let mut line = String::new();
    loop {
        line.clear();
        if out.read_line(&mut line)? == 0 {
            return Err("zot serve ended before ready".into());
        }
        if line.starts_with(r#"{"type":"ready""#) {
            return Ok((child, out));
        }
    }
}

/// Runs `zot serve` with `dirs`, waits for `ready`, reads its memory, stops it.
fn serve_memory(env: &Env, dirs: &[PathBuf]) -> Res<(u64, u64, u64, f64)> {
    let mut cmd = Command::new(&env.zot);
    cmd.arg("serve").arg("--no-ext").arg("--cwd").arg(&env.tmp);
    for d in dirs {
        cmd.arg("--ext").arg(d);
    }
    let started = Instant::now();
    let (mut child, mut out) = serve_until_ready(cmd, env)?;
    let ready = us(started.elapsed());
    let mut line = String::new();
    let status = fs::read_to_string(format!("/proc/{}/status", child.id()))?;
    let field = |k: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(k))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let r = (field("VmHWM:"), field("VmRSS:"), field("Threads:"), ready);
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    stdin.write_all(b"{\"id\":1,\"type\":\"shutdown\"}\n")?;
    drop(stdin);
    while out.read_line(&mut line)? > 0 {}
    child.wait()?;
    Ok(r)
}

fn memory(env: &Env) -> Res<Mem> {
    let e200 = env.echoes(200)?;
    let counts = [0usize, 10, 50, 200];
    let mut samples: Vec<Vec<(u64, u64, u64, f64)>> = vec![Vec::new(); counts.len()];
    for _ in 0..3 {
        for (k, &n) in counts.iter().enumerate() {
            samples[k].push(serve_memory(env, &e200[..n])?);
        }
    }
    let rows = counts
        .iter()
        .zip(samples)
        .map(|(&n, mut s)| {
            s.sort_by_key(|x| x.0);
            let (hwm, rss, th, _) = s[s.len() / 2];
            let mut ready: Vec<f64> = s.iter().map(|x| x.3).collect();
            ready.sort_by(f64::total_cmp);
            (n, hwm, rss, th, ready[ready.len() / 2])
        })
        .collect();
    Ok(Mem { rows })
}

struct Big {
    floor: Vec<f64>,
    host: Vec<f64>,
}

fn big(env: &Env) -> Res<Big> {
    let echo = env.echoes(1)?;
    let host = env.start(&echo)?;
    let mut peer = Peer::spawn(&env.echo, &[], &echo[0])?;
    let mut b = Big { floor: Vec::new(), host: Vec::new() };
    let args = json!({"bytes": BIG});
    let frame = format!("{{\"type\":\"tool_call\",\"id\":\"1\",\"name\":\"big\",\"args\":{args}}}\n");
    for rep in 0..=BIG_REPS {
        for part in 0..2 {
            let floor_now = (part == 0) == (rep % 2 == 0);
            let t = Instant::now();
            let n = if floor_now {
                peer.call(frame.as_bytes())?
            } else {
                let r = host.tool("big", Some(args.clone()))?;
                r.content.first().and_then(|c| c["text"].as_str()).map_or(0, str::len)
            };
            let secs = t.elapsed().as_secs_f64();
            if n < BIG {
                return Err(format!("short big reply: {n} bytes").into());
            }
            if rep > 0 {
                let mbs = BIG as f64 / MIB as f64 / secs;
                if floor_now { &mut b.floor } else { &mut b.host }.push(mbs);
            }
        }
    }
    host.shutdown();
    peer.close();
    Ok(b)
}

fn profile(kind: &str, n: u64) -> Res<()> {
    let env = Env::new()?;
    let echo = env.echoes(4)?;
    let ga = env.manifest("guard", "guard_a", &env.guard.to_string_lossy(), &[])?;
    let gb = env.manifest("guard", "guard_b", &env.guard.to_string_lossy(), &[])?;
    let t = Instant::now();
    match kind {
        "floor" => {
            let mut p = Peer::spawn(&env.echo, &[], &echo[0])?;
            let t = Instant::now();
            for id in 0..n {
                p.call(&tool_frame(id, "echo"))?;
            }
            eprintln!("{kind}: {:.2} µs per call", us(t.elapsed()) / n as f64);
            p.close();
        }
        "tool" | "command" | "chain" => {
            let host = env.start(&[echo[0].clone(), ga, gb])?;
            let t = Instant::now();
            for id in 0..n {
                match kind {
                    "tool" => drop(host.tool("echo", Some(json!({"i": id})))?),
                    "command" => drop(host.command("echo", "hello")?),
                    _ => drop(host.intercept("tool_call", intercept_payload())?),
                }
            }
            eprintln!("{kind}: {:.2} µs per call", us(t.elapsed()) / n as f64);
        }
        "load" | "load4" => {
            let k = if kind == "load" { 1 } else { 4 };
            let host = env.start(&echo[..k])?;
            let tools: Vec<String> = (1..=k).map(|i| if i == 1 { "echo".into() } else { format!("echo_{i}") }).collect();
            let l = host_load(&host, &tools)?;
            eprintln!("{kind}: {:.0} calls/s, host threads {:.3} s/10k", l.rate(), l.per10k(l.host_cpu));
        }
        "start50" => {
            let e50 = env.echoes(50)?;
            for _ in 0..n {
                let t = Instant::now();
                let host = env.start(&e50)?;
                let ready = t.elapsed();
                host.shutdown();
                eprintln!("start50: ready in {:.1} ms, stopped {:.1} ms later", us(ready) / 1000.0, us(t.elapsed() - ready) / 1000.0);
            }
        }
        "mcp" => {
            let m = mcp::run(&env)?;
            let (e, s) = (&m.ext_tool, &m.mcp_tool);
            eprintln!("tool round trip p50 / p99: extension {:.1} / {:.1} µs, MCP server {:.1} / {:.1} µs ({:.2}×)", e.p50(), e.p99(), s.p50(), s.p99(), s.p50() / e.p50());
            let (h, b) = (m.host_start.p50() / 1000.0, m.hand_start.p50() / 1000.0);
            eprintln!("20 servers: host {h:.1} ms, by hand {b:.1} ms ({:.2}×)", h / b);
            let per = (m.serve_hwm.1 as f64 - m.serve_hwm.0 as f64) / 20.0;
            eprintln!("memory: zot serve VmHWM {} → {} KiB with 20 servers ({per:.0} KiB each); one server process {} KiB", m.serve_hwm.0, m.serve_hwm.1, m.server_rss);
        }
        "serve" => {
            for r in serve::run(&env)?.report().0 {
                eprintln!("{}: relay {} / serve {} {} {}", r.what, r.floor, r.serve, r.ratio, r.target);
            }
        }
        _ => return Err(format!("unknown profile kind {kind:?}").into()),
    }
    eprintln!("total {:.2} s", t.elapsed().as_secs_f64());
    Ok(())
}

// ----- report ----------------------------------------------------------------------

struct Table {
    rows: Vec<[String; 4]>,
    /// The targets, for the JSON: name, measured value, limit, pass.
    goals: Vec<Value>,
}

impl Table {
    fn goal(&mut self, name: &str, value: f64, target: &str, pass: bool) {
        self.goals.push(json!({"name": name, "value": r2(value), "target": target, "pass": pass}));
    }

    fn row(&mut self, what: &str, value: String, target: &str, ok: Option<bool>) {
        let status = match ok {
            Some(true) => "pass",
            Some(false) => "**miss**",
            None => "",
        };
        self.rows.push([what.into(), value, target.into(), status.into()]);
    }

    fn print(&self) -> String {
        let mut s = String::from("| benchmark | result | target | |\n|---|---|---|---|\n");
        for r in &self.rows {
            let _ = writeln!(s, "| {} | {} | {} | {} |", r[0], r[1], r[2], r[3]);
        }
        s
    }
}

fn run() -> Res<()> {
    let env = Env::new()?;
    let t0 = Instant::now();
    eprintln!("bench: latency (floor and host interleaved, {ROUNDS} rounds)...");
    let lat = latency(&env)?;
    eprintln!("bench: throughput ({THREADS} callers x {WINDOW} in flight, {LOAD_REPS} reps)...");
    let thr = throughput(&env)?;
    eprintln!("bench: start-up and shutdown...");
    let st = startup(&env)?;
    eprintln!("bench: memory of `zot serve`...");
    let mem = memory(&env)?;
    eprintln!("bench: 8 MiB tool results...");
    let bg = big(&env)?;
    eprintln!("bench: the trust check of five extensions of 2,000 files, warm...");
    let tr = trust::run(&env.zot, &env.tmp)?;
    eprintln!("bench: the serve path against a relay floor (interleaved)...");
    let sv = serve::run(&env)?;
    eprintln!("bench: the MCP path (an MCP echo server against the same echo as a zot extension)...");
    let mc = mcp::run(&env)?;
    eprintln!("bench: confinement (ten echo extensions confined and not, interleaved)...");
    let cf = confine::run(&env)?;
    let bin = fs::metadata(&env.zot)?.len();
    let total = t0.elapsed();

    let mut t = Table { rows: Vec::new(), goals: Vec::new() };
    let mut j = Map::new();

    // Latency.
    let ratio = |h: &Dist, f: &Dist| h.p50() / f.p50();
    let lt = |d: &Dist| format!("{:.1} / {:.1} µs", d.p50(), d.p99());
    t.row("floor: tool_call ↔ tool_result, raw pipes, p50 / p99", lt(&lat.floor_tool), "", None);
    let rt = ratio(&lat.host_tool, &lat.floor_tool);
    t.row(
        "host: tool call round trip, p50 / p99",
        format!("{} ({rt:.2}× floor)", lt(&lat.host_tool)),
        "p50 ≤ 2× floor",
        Some(rt <= 2.0),
    );
    // Issue 16: in process within 2× of the pipe floor; the serve path
    // (below) is held to 1.25× of its relay floor.
    t.goal("tool_round_trip_p50_ratio_to_floor", rt, "<= 2", rt <= 2.0);
    t.row(
        "context switches per tool call (caller, host threads, echo process)",
        format!("floor {:.1}, host {:.1}; one thread hand-off here: p50 {:.1} µs", lat.switches.0, lat.switches.1, lat.hop.p50()),
        "",
        None,
    );
    t.row("floor: command_invoked ↔ command_response, p50 / p99", lt(&lat.floor_cmd), "", None);
    let rc = ratio(&lat.host_cmd, &lat.floor_cmd);
    t.row("host: command `/echo` round trip, p50 / p99", format!("{} ({rc:.2}× floor)", lt(&lat.host_cmd)), "", None);
    t.row("floor: 2 × event_intercept in turn, p50 / p99", lt(&lat.floor_chain), "", None);
    let ri = ratio(&lat.host_chain, &lat.floor_chain);
    t.row(
        "host: `tool_call` intercept chain of 2, p50 / p99",
        format!("{} ({ri:.2}× floor)", lt(&lat.host_chain)),
        "",
        None,
    );
    j.insert(
        "latency".into(),
        json!({
            "floor_tool": lat.floor_tool.json(), "host_tool": lat.host_tool.json(), "tool_ratio_p50": r2(rt),
            "floor_command": lat.floor_cmd.json(), "host_command": lat.host_cmd.json(), "command_ratio_p50": r2(rc),
            "floor_intercept_chain2": lat.floor_chain.json(), "host_intercept_chain2": lat.host_chain.json(),
            "intercept_ratio_p50": r2(ri), "rounds": ROUNDS, "per_round": PER_ROUND,
            "switches_per_tool_call": {"floor": r2(lat.switches.0), "host": r2(lat.switches.1)},
            "thread_handoff": lat.hop.json(),
        }),
    );

    // Throughput.
    let (f, one, four) = (summarize(&thr.floor), summarize(&thr.one), summarize(&thr.four));
    t.row(
        "floor: pipelined tool calls, one writer + one reader",
        format!("{:.0} calls/s; ext CPU {:.3} s/10k", f.rate, f.ext),
        "",
        None,
    );
    for (label, l, target) in [("1 echo", &one, Some(20_000.0)), ("4 echo", &four, None)] {
        t.row(
            &format!("host: pipelined tool calls, {label}, {THREADS} threads × {WINDOW} in flight"),
            format!(
                "{:.0} calls/s; CPU s/10k: host threads {:.3}, whole process {:.3}, extensions {:.3}",
                l.rate, l.host, l.process, l.ext
            ),
            if target.is_some() { "≥ 20,000 calls/s" } else { "" },
            target.map(|x| l.rate >= x),
        );
        if let Some(x) = target {
            t.goal("pipelined_calls_per_s_1_ext", l.rate, ">= 20000", l.rate >= x);
        }
    }
    let r3 = |x: f64| (x * 1000.0).round() / 1000.0;
    let lj = |l: &LoadSummary| {
        json!({
            "calls_per_s": l.rate.round(),
            "host_threads_cpu_s_per_10k": r3(l.host),
            "process_cpu_s_per_10k": r3(l.process),
            "ext_cpu_s_per_10k": r3(l.ext),
            "runs_calls_per_s": l.runs,
        })
    };
    j.insert(
        "throughput".into(),
        json!({"floor": lj(&f), "host_1_ext": lj(&one), "host_4_ext": lj(&four),
               "threads": THREADS, "window": WINDOW, "seconds_per_run": LOAD_TIME.as_secs_f64(), "floor_calls_per_run": FLOOR_CALLS}),
    );

    // Start-up.
    let mut sj = Map::new();
    for (kind, n, d, f) in &st.ready {
        let (ms, fms) = (d.p50() / 1000.0, f.p50() / 1000.0);
        let target = (kind == "echo" && *n == 50).then_some(150.0);
        t.row(
            &format!("start-up: Host::start → wait_ready, {n} {kind} extension{}", if *n == 1 { "" } else { "s" }),
            format!("{ms:.1} ms (floor: spawn + handshakes by hand {fms:.1} ms, {:.2}×)", ms / fms),
            if target.is_some() { "< 150 ms" } else { "" },
            target.map(|x| ms < x),
        );
        if let Some(x) = target {
            t.goal("startup_50_echo_ms", ms, "< 150", ms < x);
        }
        sj.insert(format!("{kind}_{n}_ms"), json!(r2(ms)));
        sj.insert(format!("floor_{kind}_{n}_ms"), json!(r2(fms)));
    }
    let (sd, fsd) = (st.shutdown50.p50() / 1000.0, st.floor_shutdown50.p50() / 1000.0);
    t.row(
        "shutdown: Host::shutdown, 50 echo extensions",
        format!("{sd:.1} ms (floor: shutdown frames + wait by hand {fsd:.1} ms)"),
        "",
        None,
    );
    sj.insert("shutdown_echo_50_ms".into(), json!(r2(sd)));
    sj.insert("floor_shutdown_echo_50_ms".into(), json!(r2(fsd)));
    sj.insert("python".into(), json!(st.python));
    j.insert("startup".into(), Value::Object(sj));

    // Memory.
    let kib = |k: u64| k as f64 / 1024.0;
    let (m0, m50) = (mem.rows[0], mem.rows[2]);
    let slope = (m50.1 as f64 - m0.1 as f64) / 50.0;
    for &(n, hwm, rss, th, ready) in &mem.rows {
        let target = (n == 50).then_some(8.0);
        t.row(
            &format!("memory: `zot serve`, {n} extensions, peak RSS (VmHWM) / RSS / threads / start → ready"),
            format!("{:.2} / {:.2} MiB / {th} / {:.0} ms", kib(hwm), kib(rss), ready / 1000.0),
            if target.is_some() { "≤ 8 MiB" } else { "" },
            target.map(|x| kib(hwm) <= x),
        );
        if let Some(x) = target {
            t.goal("rss_50_ext_mib", kib(hwm), "<= 8", kib(hwm) <= x);
        }
    }
    t.row(
        "memory: per extension (peak RSS slope, 0 → 50)",
        format!("{slope:.0} KiB; per-child thread stacks {} KiB × 2 (r, w), one reaper for all", zot_host::host::THREAD_STACK / 1024),
        "",
        None,
    );
    j.insert(
        "memory".into(),
        json!({
            "rows": mem.rows.iter().map(|&(n, hwm, rss, th, ready)| json!({"extensions": n, "vm_hwm_kib": hwm, "vm_rss_kib": rss, "threads": th, "ready_ms": r2(ready / 1000.0)})).collect::<Vec<_>>(),
            "per_extension_kib": r2(slope),
            "child_thread_stack_kib": zot_host::host::THREAD_STACK / 1024,
        }),
    );

    // Big frames.
    let (bf, bh) = (median(&bg.floor), median(&bg.host));
    t.row("floor: 8 MiB tool_result, raw pipes", format!("{bf:.0} MB/s"), "", None);
    t.row("host: 8 MiB tool result", format!("{bh:.0} MB/s ({:.2}× floor)", bh / bf), "", None);
    j.insert("big_frame".into(), json!({"bytes": BIG, "floor_mib_per_s": bf.round(), "host_mib_per_s": bh.round(), "ratio": r2(bh / bf)}));

    // Trust.
    t.row(&format!("floor: lstat walk of the same {} entries, in-process", tr.files), format!("{:.1} ms", tr.floor_ms), "", None);
    t.row(
        "trust check, 5 extensions × 2,000 files, warm (zot trust --list less an empty project)",
        format!("{:.1} ms ({:.2}× floor)", tr.check_ms, tr.check_ms / tr.floor_ms.max(1e-9)),
        "≤ 30 ms",
        Some(tr.check_ms <= 30.0),
    );
    t.goal("trust_check_warm_ms", tr.check_ms, "<= 30", tr.check_ms <= 30.0);
    j.insert("trust".into(), json!({"check_ms": r2(tr.check_ms), "floor_ms": r2(tr.floor_ms), "entries": tr.files}));

    // Confinement.
    let per = (cf.ready10.1 - cf.ready10.0) / 10.0 / 1000.0;
    t.row(
        "start to ready, 10 echo extensions, unconfined / confined (median)",
        format!("{:.1} / {:.1} ms: {per:+.2} ms per extension", cf.ready10.0 / 1000.0, cf.ready10.1 / 1000.0),
        "≤ +1 ms per extension",
        Some(per <= 1.0),
    );
    t.goal("confine_start_ms_per_extension", per, "<= 1", per <= 1.0);
    let (ro, rb) = &cf.round_trip;
    t.row("tool round trip, unconfined / confined echo, p50 / p99", format!("{:.1} / {:.1} µs; {:.1} / {:.1} µs", ro.p50(), ro.p99(), rb.p50(), rb.p99()), "the same, within noise", None);
    j.insert(
        "confine".into(),
        json!({"ready10_us": {"unconfined": r2(cf.ready10.0), "confined": r2(cf.ready10.1)}, "per_extension_ms": r2(per),
               "round_trip": {"unconfined": ro.json(), "confined": rb.json()}, "rounds": cf.rounds}),
    );

    // Binary.
    let mib = bin as f64 / MIB as f64;
    t.row("binary: target/release/zot (stripped)", format!("{mib:.2} MiB ({bin} bytes)"), "≤ 2 MiB", Some(mib <= 2.0));
    t.goal("binary_mib", mib, "<= 2", mib <= 2.0);
    j.insert("binary".into(), json!({"bytes": bin}));

    // The serve path.
    let (rows, sj, goals) = sv.report();
    for r in rows {
        let ratio = if r.ratio.is_empty() { String::new() } else { format!(" ({})", r.ratio) };
        t.row(&format!("serve: {}", r.what), format!("relay {} / serve {}{ratio}", r.floor, r.serve), r.target, r.pass);
    }
    for (name, value, target, pass) in goals {
        t.goal(&name, value, target, pass);
    }
    j.insert("serve".into(), sj);

    // The MCP path.
    let lt2 = |d: &Dist| format!("{:.1} / {:.1} µs", d.p50(), d.p99());
    let rm = mc.mcp_tool.p50() / mc.ext_tool.p50();
    t.row("mcp: tool round trip, the echo as a zot extension, p50 / p99", lt2(&mc.ext_tool), "", None);
    t.row(
        "mcp: tool round trip, the same echo as an MCP server, p50 / p99",
        format!("{} ({rm:.2}× the extension)", lt2(&mc.mcp_tool)),
        "p50 ≤ 1.1× the extension",
        Some(rm <= 1.1),
    );
    t.goal("mcp_tool_round_trip_p50_ratio_to_extension", rm, "<= 1.1", rm <= 1.1);
    let (hs, ms) = (mc.host_start.p50() / 1000.0, mc.hand_start.p50() / 1000.0);
    let rs = hs / ms;
    t.row(
        "mcp: 20 servers, Host::start → wait_ready",
        format!("{hs:.1} ms (by hand: spawn all, then each initialize + tools/list {ms:.1} ms, {rs:.2}×)"),
        "≤ 1.2× by hand",
        Some(rs <= 1.2),
    );
    t.goal("mcp_start_20_ratio_to_by_hand", rs, "<= 1.2", rs <= 1.2);
    let per = (mc.serve_hwm.1 as f64 - mc.serve_hwm.0 as f64) / 20.0;
    t.row(
        "mcp: memory per server (`zot serve` peak RSS, 0 → 20 servers; one server process's own RSS)",
        format!("{per:.0} KiB in zot; {} KiB the server process", mc.server_rss),
        "",
        None,
    );
    j.insert(
        "mcp".into(),
        json!({
            "ext_tool": mc.ext_tool.json(), "mcp_tool": mc.mcp_tool.json(), "tool_ratio_p50": r2(rm),
            "start_20_ms": r2(hs), "by_hand_20_ms": r2(ms), "start_ratio": r2(rs),
            "serve_vm_hwm_kib": {"servers_0": mc.serve_hwm.0, "servers_20": mc.serve_hwm.1},
            "per_server_kib": r2(per), "server_process_rss_kib": mc.server_rss,
        }),
    );

    let table = t.print();
    println!("{table}");
    println!(
        "{} round trips per side; MB = MiB; stacks: dispatcher thread Rust default (2 MiB reserved), per-child threads {} KiB; \
         total bench time {:.1} s.",
        ROUNDS * PER_ROUND,
        zot_host::host::THREAD_STACK / 1024,
        total.as_secs_f64()
    );
    j.insert("targets".into(), Value::Array(std::mem::take(&mut t.goals)));
    j.insert("total_seconds".into(), json!(r2(total.as_secs_f64())));
    let path = env.target.join("bench.json");
    fs::write(&path, serde_json::to_vec_pretty(&Value::Object(j))?)?;
    eprintln!("bench: wrote {}", path.display());
    Ok(())
}
