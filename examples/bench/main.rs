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
//! The in-process host's rows are in [`host`] (against the raw-pipe floor
//! of [`peer`]) and [`startup`]; the figures become a table and JSON in
//! [`report`].
//!
//! `bench --profile KIND [N]` runs one workload alone, for `perf` or
//! `valgrind --tool=callgrind`: `floor`, `tool`, `command`, `chain` (N
//! sequential calls), `load`, `load4` (a pipelined run), `start50` (N
//! start-ups and shutdowns of 50 extensions), `serve` (the serve path
//! against its relay floor, alone), `mcp` (the MCP path alone), `remote`
//! (a remote MCP server through `zot serve` against the Python SDK's
//! client, [`remote`]).
use host::{big, host_load, latency, throughput};
use peer::{intercept_payload, tool_frame, Peer};
use serde_json::json;
use startup::{memory, startup};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use zot_host::discovery::Sources;
use zot_host::home::Home;
use zot_host::host::{Config, Host};

mod confine;
mod host;
mod mcp;
mod peer;
mod remote;
mod report;
mod serve;
mod startup;
mod stats;
mod text;
mod trust;

use startup::serve_until_ready;
use stats::{median, r2, stat_cpu, switches_in, switches_of_process, thread_cpu, us, Dist};

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
        "remote" => match remote::run(&env)? {
            Ok(r) => {
                eprintln!("per call p50 / p99: SDK client {:.1} / {:.1} µs, through zot {:.1} / {:.1} µs ({:.2}×)", r.sdk.p50(), r.sdk.p99(), r.zot.p50(), r.zot.p99(), r.zot.p50() / r.sdk.p50());
                eprintln!("zot serve threads / fds at rest: after {} calls {:?}, after {} calls {:?}", r.few, r.after_few, r.many, r.after_many);
            }
            Err(why) => eprintln!("remote: skipped: {why}"),
        },
        _ => return Err(format!("unknown profile kind {kind:?}").into()),
    }
    eprintln!("total {:.2} s", t.elapsed().as_secs_f64());
    Ok(())
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
    eprintln!("bench: a remote MCP server through zot against the Python SDK's client (interleaved)...");
    let rm = remote::run(&env)?;
    let bin = fs::metadata(&env.zot)?.len();
    let total = t0.elapsed();

    report::write(&env, report::Runs { lat, thr, st, mem, bg, tr, sv, mc, cf, rm, bin, total })
}
