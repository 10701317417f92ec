//! Soak (issue 5, reliability): mixed calls — tools, slow tools, commands,
//! intercept chains, events, listings — from several threads across five
//! extensions, while extensions are crashed on purpose (tool `crash`) and
//! the host is reloaded in between. At the end:
//!
//! - every request got exactly one answer (each responder counts its own
//!   call; none may be 0 or above 1), and each answer matches its call;
//! - no process any extension ever ran is left, nor anything in its
//!   process group (every fixture writes its pid at start-up);
//! - no zombie child is left, and this process's thread and fd counts are
//!   back to the baseline measured after a warm-up host start + shutdown.
//!
//! Short by default (a few thousand calls). `ZOT_SOAK_CALLS=N` sets the
//! number of calls, `ZOT_SOAK_SECS=S` runs for S seconds instead (`make
//! soak` runs 100000 calls in release). Figures are printed to stderr
//! (`-- --nocapture`). `ZOT_SOAK_SEED` picks another mix.

mod common;

use common::*;
use crossbeam_channel::{unbounded, Receiver, RecvTimeoutError};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};
use zot_host::host::{HostError, Request, Response};
use zot_host::protocol::Payload;

const EXTS: usize = 5;
const WORKERS: usize = 4;
/// Requests in flight per worker.
const WINDOW: usize = 16;
/// A crash is injected every CRASH_EVERY calls, a reload every RELOAD_EVERY.
const CRASH_EVERY: u64 = 250;
const RELOAD_EVERY: u64 = 700;
/// The longest any one answer may take.
const ANSWER_WAIT: Duration = Duration::from_secs(60);

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|v| v.trim().parse().unwrap_or_else(|_| panic!("{name}={v:?} is not a number")))
}

/// splitmix64, so a run's mix of calls can be replayed.
fn mix(seed: u64, i: u64) -> u64 {
    let mut z = seed ^ i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// What call `i` does.
#[derive(Debug, Clone)]
enum Op {
    Echo(usize),
    Sleep(usize, u64),
    Command(usize),
    Intercept,
    Event,
    List,
    Crash(usize),
    Reload,
}

fn op_for(seed: u64, i: u64) -> Op {
    let r = mix(seed, i);
    let ext = (r >> 32) as usize % EXTS;
    if i % RELOAD_EVERY == RELOAD_EVERY - 1 {
        return Op::Reload;
    }
    if i % CRASH_EVERY == CRASH_EVERY / 2 {
        return Op::Crash(ext);
    }
    match r % 100 {
        0..=54 => Op::Echo(ext),
        55..=64 => Op::Sleep(ext, (r >> 40) % 30),
        65..=76 => Op::Command(ext),
        77..=86 => Op::Intercept,
        87..=94 => Op::Event,
        _ => Op::List,
    }
}

fn request_for(op: &Op, i: u64) -> Request {
    match *op {
        Op::Echo(e) => Request::Tool { name: format!("echo@s{e}"), args: Some(json!({"i": i})), tool_id: None },
        Op::Sleep(e, ms) => Request::Tool { name: format!("sleep@s{e}"), args: Some(json!({"ms": ms})), tool_id: None },
        Op::Command(e) => Request::Command { name: format!("cmd_s{e}"), args: format!(" {i} ") },
        Op::Intercept => {
            let mut p = Payload::new();
            p.insert("tool_id".into(), json!(format!("t{i}")));
            p.insert("tool_name".into(), json!("bash"));
            p.insert("tool_args".into(), json!({"i": i}));
            Request::Intercept { event: "tool_call".into(), payload: p }
        }
        Op::Event => {
            let mut p = Payload::new();
            p.insert("step".into(), json!(i));
            Request::Event { event: "turn_start".into(), payload: p }
        }
        Op::List => Request::List,
        Op::Crash(e) => Request::Tool { name: format!("crash@s{e}"), args: None, tool_id: None },
        Op::Reload => Request::Reload,
    }
}

/// Outcome counters, shared by every responder.
#[derive(Default)]
struct Stats {
    ok: AtomicU64,
    unknown: AtomicU64,
    exited: AtomicU64,
    busy: AtomicU64,
    crashes: AtomicU64,
    reloads: AtomicU64,
    intercepts_ok: AtomicU64,
    events_delivered: AtomicU64,
}

/// Checks one answer against its call: Ok(true) when it is a success.
/// Errors that crashes and reloads explain are fine; anything else, or a
/// success that answers another call, is not.
fn judge(op: &Op, i: u64, r: &Result<Response, HostError>, stats: &Stats) -> Result<(), String> {
    let bad = || format!("call {i} {op:?} got {r:?}");
    match (op, r) {
        (Op::Echo(e), Ok(Response::Tool(t))) => {
            let v: Value = serde_json::from_str(&text_of(&t.content)).map_err(|_| bad())?;
            if t.is_error || t.extension != format!("s{e}") || v["args"]["i"] != json!(i) || v["from"] != format!("s{e}") {
                return Err(bad());
            }
        }
        (Op::Sleep(e, _), Ok(Response::Tool(t))) => {
            if t.is_error || t.extension != format!("s{e}") {
                return Err(bad());
            }
        }
        (Op::Command(e), Ok(Response::Command(c))) => {
            if c.display.as_deref() != Some(&format!("s{e}:cmd_s{e}:{i}")) || c.error.is_some() {
                return Err(bad());
            }
        }
        (Op::Intercept, Ok(Response::Intercept(o))) => {
            // Every interceptor allows; a crashed one counts as allow (fail-open).
            if o.block || o.modified_args.is_some() || o.replace_text.is_some() {
                return Err(bad());
            }
            stats.intercepts_ok.fetch_add(1, Ordering::Relaxed);
        }
        (Op::Event, Ok(Response::Delivered(n))) => {
            if *n > EXTS {
                return Err(bad());
            }
            stats.events_delivered.fetch_add(*n as u64, Ordering::Relaxed);
        }
        (Op::List, Ok(Response::List(l))) => {
            if l.extensions.len() > EXTS {
                return Err(bad());
            }
        }
        (Op::Crash(_), Err(HostError::Exited { detail, .. })) => {
            // It crashed (exit code 3, or its stdout closed first), unless a
            // reload stopped it before the call got there.
            match detail.as_str() {
                "exit code 3" | "closed its stdout" => {
                    stats.crashes.fetch_add(1, Ordering::Relaxed);
                }
                "stopped for reload" => {}
                _ => return Err(bad()),
            }
            stats.exited.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        (Op::Crash(_), Ok(_)) => return Err(bad()),
        (Op::Reload, Ok(Response::Reload(rep))) => {
            if rep.loaded != EXTS || !rep.errors.is_empty() {
                return Err(bad());
            }
            stats.reloads.fetch_add(1, Ordering::Relaxed);
        }
        (_, Ok(_)) => return Err(bad()),
        // An extension that crashed is unregistered until the next reload;
        // during a reload nothing is registered.
        (_, Err(HostError::UnknownTool(_) | HostError::UnknownCommand(_))) => {
            stats.unknown.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        // It crashed, or was stopped for a reload, with the call in flight.
        (_, Err(HostError::Exited { .. })) => {
            stats.exited.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        (_, Err(HostError::Busy { .. })) => {
            stats.busy.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        (_, Err(_)) => return Err(bad()),
    }
    stats.ok.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

/// The extension folders: s0..s4, each with its own tools and command;
/// s0 and s2 intercept tool calls; s1 and s3 hold a grandchild in their
/// process group.
fn soak_exts(t: &TempDir, pid_dir: &std::path::Path) -> Vec<PathBuf> {
    (0..EXTS)
        .map(|e| {
            let tools = format!("echo@s{e},sleep@s{e},crash@s{e}");
            let cmd = format!("cmd_s{e}");
            let pd = pid_dir.display().to_string();
            let mut flags = vec!["--tools", &tools, "--commands", &cmd, "--events", "turn_start", "--pid-dir", &pd];
            if e % 2 == 0 {
                flags.extend(["--intercepts", "tool_call"]);
            }
            if e % 2 == 1 {
                flags.push("--grandchild");
            }
            py_ext(&t.path().join("exts"), &format!("s{e}"), &format!("s{e}"), &flags)
        })
        .collect()
}

/// One extension process, from the file it wrote at start-up
/// (`<pid>-<start time>`, holding `<pid>-<start time>` of its grandchild).
struct Started {
    pid: u32,
    start: u64,
    grandchildren: Vec<(u32, u64)>,
}

fn parse_pid_start(s: &str) -> Option<(u32, u64)> {
    let (p, t) = s.trim().split_once('-')?;
    Some((p.parse().ok()?, t.parse().ok()?))
}

fn started_processes(dir: &std::path::Path) -> Vec<Started> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).expect("pid dir").flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let (pid, start) = parse_pid_start(&name).unwrap_or_else(|| panic!("bad pid file {name}"));
        let body = std::fs::read_to_string(e.path()).unwrap_or_default();
        let grandchildren = body.lines().filter_map(parse_pid_start).collect();
        out.push(Started { pid, start, grandchildren });
    }
    out
}

/// True while that very process (same pid, same start time) is alive.
fn same_alive(pid: u32, start: u64) -> bool {
    process_alive(pid) && proc_start_time(pid) == Some(start)
}

impl Started {
    /// What is left of it: itself, its grandchild, members of its group.
    fn leftovers(&self) -> Vec<u32> {
        let mut v: Vec<u32> = std::iter::once((self.pid, self.start))
            .chain(self.grandchildren.iter().copied())
            .filter(|&(p, s)| same_alive(p, s))
            .map(|(p, _)| p)
            .collect();
        // A pid is not reused while its process group exists: if another
        // process has the pid now, the group is not this one's.
        let reused = proc_start_time(self.pid).is_some_and(|s| s != self.start);
        if !reused {
            for p in group_members(self.pid) {
                if !v.contains(&p) {
                    v.push(p);
                }
            }
        }
        v
    }
}

/// Waits until `f` holds, up to `limit`; returns whether it did.
fn settle(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    wait_until(limit, &mut f)
}

#[test]
fn soak_mixed_calls_crashes_and_reloads() {
    let seed = env_u64("ZOT_SOAK_SEED").unwrap_or(0x50a_c0de);
    let secs = env_u64("ZOT_SOAK_SECS");
    let calls = env_u64("ZOT_SOAK_CALLS").unwrap_or(if secs.is_some() { u64::MAX / 2 } else { 4000 });
    let run_until = secs.map(|s| Instant::now() + Duration::from_secs(s));
    let wall = Instant::now();

    // Baseline: after one host has started and stopped, so that anything
    // made once per process (lazy statics, the allocator's arenas) exists.
    let (threads0, fds0) = (thread_count(), open_fd_count());
    {
        let t = TempDir::new("soak-warmup");
        let d = py_ext(t.path(), "w", "w", &["--tools", "echo"]);
        let (host, events) = start_host(host_config(t.path(), vec![d]));
        host.wait_ready().expect("warm-up ready");
        assert!(!host.tool("echo", None).expect("warm-up call").is_error);
        host.shutdown();
        drop(host);
        drop(events);
    }
    settle(Duration::from_secs(10), || thread_count() <= threads0 && open_fd_count() <= fds0);
    let (threads_base, fds_base) = (thread_count(), open_fd_count());

    let t = TempDir::new("soak");
    let pid_dir = t.path().join("pids");
    std::fs::create_dir_all(&pid_dir).expect("pid dir");
    let exts = soak_exts(&t, &pid_dir);
    let (host, events) = start_host(host_config(t.path(), exts));
    let load = host.wait_ready().expect("ready");
    assert_eq!(load.ready.len(), EXTS, "{load:?}");
    let host = Arc::new(host);
    // Host events pile up unread otherwise; count the exits.
    let exits = Arc::new(AtomicU64::new(0));
    let drain = {
        let exits = exits.clone();
        std::thread::spawn(move || {
            for e in events.iter() {
                if matches!(e, zot_host::host::HostEvent::Exited { .. }) {
                    exits.fetch_add(1, Ordering::Relaxed);
                }
            }
        })
    };

    // One slot per call: its responder adds one. Grown in chunks for
    // time-based runs.
    let answers: Arc<Mutex<Vec<Arc<Vec<AtomicU8>>>>> = Arc::default();
    const CHUNK: u64 = 1 << 16;
    let slot = {
        let answers = answers.clone();
        move |i: u64| -> Arc<Vec<AtomicU8>> {
            let mut a = answers.lock().unwrap();
            let c = (i / CHUNK) as usize;
            while a.len() <= c {
                a.push(Arc::new((0..CHUNK).map(|_| AtomicU8::new(0)).collect()));
            }
            a[c].clone()
        }
    };
    let stats = Arc::new(Stats::default());
    let failures: Arc<Mutex<Vec<String>>> = Arc::default();
    let next = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let max_wait_ms = Arc::new(AtomicU64::new(0));
    let submitted = Arc::new(AtomicUsize::new(0));
    // A reload holds this exclusively: calls already in flight race it,
    // new ones wait for it instead of all failing at once.
    let reloading = Arc::new(RwLock::new(()));

    let workers: Vec<_> = (0..WORKERS)
        .map(|w| {
            let reloading = reloading.clone();
            let (host, stats, failures, next, stop, slot, max_wait_ms, submitted) = (
                host.clone(),
                stats.clone(),
                failures.clone(),
                next.clone(),
                stop.clone(),
                slot.clone(),
                max_wait_ms.clone(),
                submitted.clone(),
            );
            std::thread::Builder::new()
                .name(format!("soak-{w}"))
                .spawn(move || {
                    let (tx, rx) = unbounded::<()>();
                    let mut outstanding = 0usize;
                    let wait_one = |rx: &Receiver<()>, outstanding: &mut usize| -> bool {
                        let t0 = Instant::now();
                        match rx.recv_timeout(ANSWER_WAIT) {
                            Ok(()) => {
                                *outstanding -= 1;
                                max_wait_ms.fetch_max(t0.elapsed().as_millis() as u64, Ordering::Relaxed);
                                true
                            }
                            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => false,
                        }
                    };
                    loop {
                        if stop.load(Ordering::Relaxed) || run_until.is_some_and(|u| Instant::now() >= u) {
                            break;
                        }
                        let i = next.fetch_add(1, Ordering::SeqCst);
                        if i >= calls {
                            break;
                        }
                        let op = op_for(seed, i);
                        let is_reload = matches!(op, Op::Reload);
                        // A reload waits for the calls this worker has out,
                        // then for itself; the others' calls in flight race
                        // it, their next ones wait for it.
                        while outstanding >= WINDOW || (is_reload && outstanding > 0) {
                            if !wait_one(&rx, &mut outstanding) {
                                failures.lock().unwrap().push(format!("worker {w}: no answer within {ANSWER_WAIT:?}"));
                                stop.store(true, Ordering::SeqCst);
                                return;
                            }
                        }
                        let _guard = if is_reload {
                            (None, Some(reloading.write().unwrap()))
                        } else {
                            (Some(reloading.read().unwrap()), None)
                        };
                        let cell = slot(i);
                        let (stats2, failures2, tx2, op2) = (stats.clone(), failures.clone(), tx.clone(), op.clone());
                        outstanding += 1;
                        submitted.fetch_add(1, Ordering::Relaxed);
                        host.submit(
                            request_for(&op, i),
                            move |r| {
                                let prev = cell[(i % CHUNK) as usize].fetch_add(1, Ordering::SeqCst);
                                if prev != 0 {
                                    failures2.lock().unwrap().push(format!("call {i} answered {} times", prev + 1));
                                }
                                if let Err(e) = judge(&op2, i, &r, &stats2) {
                                    failures2.lock().unwrap().push(e);
                                }
                                let _ = tx2.send(());
                            },
                        );
                        if is_reload && !wait_one(&rx, &mut outstanding) {
                            failures.lock().unwrap().push(format!("worker {w}: reload not answered within {ANSWER_WAIT:?}"));
                            stop.store(true, Ordering::SeqCst);
                            return;
                        }
                    }
                    while outstanding > 0 {
                        if !wait_one(&rx, &mut outstanding) {
                            failures.lock().unwrap().push(format!("worker {w}: {outstanding} calls unanswered after {ANSWER_WAIT:?}"));
                            return;
                        }
                    }
                })
                .expect("spawn worker")
        })
        .collect();
    for w in workers {
        w.join().expect("worker");
    }
    let total = next.load(Ordering::SeqCst).min(calls);
    let run_secs = wall.elapsed().as_secs_f64();

    // Every call counted exactly once (before shutdown, so that a late
    // answer to an abandoned call would still show as a double).
    let answers = answers.lock().unwrap().clone();
    let mut missing = Vec::new();
    for i in 0..total {
        let n = answers[(i / CHUNK) as usize][(i % CHUNK) as usize].load(Ordering::SeqCst);
        if n != 1 {
            missing.push((i, n));
        }
    }
    host.shutdown();
    let answered_after: u64 = (0..total).map(|i| answers[(i / CHUNK) as usize][(i % CHUNK) as usize].load(Ordering::SeqCst) as u64).sum();
    drop(host);
    drain.join().expect("event drain");

    let failures = failures.lock().unwrap().clone();
    // What the host logged for each extension, to tell a failure's cause.
    let host_lines = || -> String {
        (0..EXTS)
            .map(|e| {
                let log = read_log(t.path(), &format!("s{e}"));
                let lines: Vec<&str> = log.lines().filter(|l| l.starts_with("[zot] ")).collect();
                format!("--- s{e}, last host lines ---\n{}", lines[lines.len().saturating_sub(40)..].join("\n"))
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(
        failures.is_empty(),
        "{} failures, first ones:\n{}\n{}",
        failures.len(),
        failures.iter().take(20).cloned().collect::<Vec<_>>().join("\n"),
        host_lines()
    );
    assert!(missing.is_empty(), "calls not answered exactly once (index, count): {:?}", &missing[..missing.len().min(20)]);
    assert_eq!(answered_after, total, "answers arrived after shutdown");
    assert_eq!(submitted.load(Ordering::SeqCst) as u64, total);

    // No process any extension ran is left, nor its grandchild, nor
    // anything in its group. Each is named by pid and start time, so a pid
    // reused by another process meanwhile is told apart.
    let started_procs = started_processes(&pid_dir);
    let pids: Vec<u32> = started_procs.iter().map(|p| p.pid).collect();
    let reloads = stats.reloads.load(Ordering::SeqCst);
    let started: usize = (0..EXTS).map(|e| read_log(t.path(), &format!("s{e}")).matches("[zot] starting ").count()).sum();
    assert_eq!(started_procs.len(), started, "every process started left its pid");
    assert_eq!(started_procs.len() as u64, EXTS as u64 * (reloads + 1), "{} processes for {reloads} reloads", started_procs.len());
    let grandchildren: usize = started_procs.iter().map(|p| p.grandchildren.len()).sum();
    assert!(grandchildren > 0, "no grandchild was started");
    let gone = settle(Duration::from_secs(10), || started_procs.iter().all(|p| p.leftovers().is_empty()));
    let left: Vec<(u32, Vec<u32>)> =
        started_procs.iter().map(|p| (p.pid, p.leftovers())).filter(|(_, l)| !l.is_empty()).collect();
    assert!(gone, "extension processes left after shutdown (extension, left): {left:?}");
    let me = std::process::id();
    assert!(settle(Duration::from_secs(5), || zombie_children(me).is_empty()), "zombies: {:?}", zombie_children(me));

    // Threads and fds back to the baseline; threads end asynchronously.
    const TOLERANCE: usize = 2;
    let (threads_peak, fds_peak) = (thread_count(), open_fd_count());
    let settled = settle(Duration::from_secs(15), || {
        thread_count() <= threads_base + TOLERANCE && open_fd_count() <= fds_base + TOLERANCE
    });
    let (threads_end, fds_end) = (thread_count(), open_fd_count());

    let s = |a: &AtomicU64| a.load(Ordering::SeqCst);
    eprintln!(
        "soak: {total} calls in {run_secs:.1}s ({:.0}/s), seed {seed:#x}, {EXTS} extensions, {WORKERS} threads × {WINDOW} in flight\n\
         soak: answers ok {}, unknown (down or reloading) {}, exited in flight {}, busy {}; crashes injected {}, reloads {}, exit events {}; \
         intercept chains ok {}, events delivered {}; slowest answer {} ms\n\
         soak: processes started {} (and {grandchildren} grandchildren), all gone; threads {threads0} at start, {threads_base} baseline, {threads_peak} right after shutdown, {threads_end} at end; \
         fds {fds0} at start, {fds_base} baseline, {fds_peak} right after shutdown, {fds_end} at end",
        total as f64 / run_secs,
        s(&stats.ok),
        s(&stats.unknown),
        s(&stats.exited),
        s(&stats.busy),
        s(&stats.crashes),
        reloads,
        exits.load(Ordering::SeqCst),
        s(&stats.intercepts_ok),
        s(&stats.events_delivered),
        max_wait_ms.load(Ordering::SeqCst),
        pids.len(),
    );
    assert!(settled, "threads {threads_end} (baseline {threads_base}) or fds {fds_end} (baseline {fds_base}) did not come back");

    // The run did what it says: crashes and reloads happened, and most
    // calls were real successes.
    let scheduled_crashes = (0..total).filter(|&i| matches!(op_for(seed, i), Op::Crash(_))).count() as u64;
    let scheduled_reloads = (0..total).filter(|&i| matches!(op_for(seed, i), Op::Reload)).count() as u64;
    assert_eq!(reloads, scheduled_reloads);
    if scheduled_crashes > 0 {
        assert!(s(&stats.crashes) >= 1, "no crash took effect out of {scheduled_crashes}");
        assert!(exits.load(Ordering::SeqCst) >= 1, "crashes were not announced");
    }
    assert!(s(&stats.ok) * 2 >= total, "only {} of {total} calls succeeded", s(&stats.ok));
}
