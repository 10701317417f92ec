//! The in-process host's rows against the raw-pipe floor, measured in
//! interleaved rounds: latency of tool calls, commands and an intercept
//! chain, pipelined throughput, and 8 MiB tool results.

use super::peer::{command_frame, intercept_frame, intercept_payload, tool_frame, Peer};
use super::stats::{ext_pids, hop_costs, host_threads_cpu, median, pid_cpu, self_cpu, switches_of_process, switches_of_threads, us, Dist};
use super::{Env, Res, BIG, MIB, BIG_REPS, FLOOR_CALLS, LOAD_REPS, LOAD_TIME, PER_ROUND, ROUNDS, THREADS, WINDOW};
use serde_json::json;
use std::io::{BufRead, Write};
use std::sync::mpsc;
use std::time::Instant;
use zot_host::host::{Host, Request, Response};

pub struct Latency {
    /// Context switches per tool call: (floor, host), counted over the
    /// bench's calling thread, the host's threads and the echo process.
    pub switches: (f64, f64),
    /// One hand-off between two threads (half a crossbeam ping-pong).
    pub hop: Dist,
    pub floor_tool: Dist,
    pub host_tool: Dist,
    pub floor_cmd: Dist,
    pub host_cmd: Dist,
    pub floor_chain: Dist,
    pub host_chain: Dist,
}

pub fn latency(env: &Env) -> Res<Latency> {
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
pub struct Load {
    pub calls: u64,
    pub secs: f64,
    /// Whole bench process (host threads and callers) CPU seconds.
    pub proc_cpu: f64,
    /// Dispatcher and per-extension host threads only.
    pub host_cpu: f64,
    pub ext_cpu: f64,
}

impl Load {
    pub fn rate(&self) -> f64 {
        self.calls as f64 / self.secs
    }
    pub fn per10k(&self, cpu: f64) -> f64 {
        cpu / self.calls as f64 * 10_000.0
    }
}

/// `THREADS` callers, each keeping `WINDOW` tool calls in flight through
/// `Host::submit`, spread over `tools`, for `LOAD_TIME`.
pub fn host_load(host: &Host, tools: &[String]) -> Res<Load> {
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
pub fn floor_load(peer: &mut Peer) -> Res<Load> {
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

pub struct Throughput {
    pub floor: Vec<Load>,
    pub one: Vec<Load>,
    pub four: Vec<Load>,
}

pub fn throughput(env: &Env) -> Res<Throughput> {
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

pub fn host_load_short(host: &Host) -> Res<()> {
    for i in 0..500 {
        host.tool("echo", Some(json!({"i": i})))?;
    }
    Ok(())
}

/// Medians over the runs of one kind.
pub struct LoadSummary {
    pub rate: f64,
    pub host: f64,
    pub process: f64,
    pub ext: f64,
    pub runs: Vec<f64>,
}

pub fn summarize(v: &[Load]) -> LoadSummary {
    let m = |f: &dyn Fn(&Load) -> f64| median(&v.iter().map(f).collect::<Vec<_>>());
    LoadSummary {
        rate: m(&|l| l.rate()),
        host: m(&|l| l.per10k(l.host_cpu)),
        process: m(&|l| l.per10k(l.proc_cpu)),
        ext: m(&|l| l.per10k(l.ext_cpu)),
        runs: v.iter().map(|l| l.rate().round()).collect(),
    }
}


pub struct Big {
    pub floor: Vec<f64>,
    pub host: Vec<f64>,
}

pub fn big(env: &Env) -> Res<Big> {
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
