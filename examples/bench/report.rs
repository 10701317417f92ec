//! The markdown table `make bench` prints and the JSON it writes to
//! `target/bench.json`, from every run's figures.

use super::confine::Confine;
use super::host::{summarize, Big, LoadSummary, Latency, Throughput};
use super::mcp::McpBench;
use super::remote::RemoteBench;
use super::serve::ServeBench;
use super::startup::{Mem, Startup};
use super::stats::{median, r2, Dist};
use super::trust::Trust;
use super::{Env, Res, BIG, FLOOR_CALLS, LOAD_TIME, MIB, PER_ROUND, ROUNDS, THREADS, WINDOW};
use serde_json::{json, Map, Value};
use std::fmt::Write as _;
use std::fs;
use std::time::Duration;

pub struct Table {
    pub rows: Vec<[String; 4]>,
    /// The targets, for the JSON: name, measured value, limit, pass.
    pub goals: Vec<Value>,
}

impl Table {
    pub fn goal(&mut self, name: &str, value: f64, target: &str, pass: bool) {
        self.goals.push(json!({"name": name, "value": r2(value), "target": target, "pass": pass}));
    }

    pub fn row(&mut self, what: &str, value: String, target: &str, ok: Option<bool>) {
        let status = match ok {
            Some(true) => "pass",
            Some(false) => "**miss**",
            None => "",
        };
        self.rows.push([what.into(), value, target.into(), status.into()]);
    }

    pub fn print(&self) -> String {
        let mut s = String::from("| benchmark | result | target | |\n|---|---|---|---|\n");
        for r in &self.rows {
            let _ = writeln!(s, "| {} | {} | {} | {} |", r[0], r[1], r[2], r[3]);
        }
        s
    }
}


/// Every run's figures.
pub struct Runs {
    pub lat: Latency,
    pub thr: Throughput,
    pub st: Startup,
    pub mem: Mem,
    pub bg: Big,
    pub tr: Trust,
    pub sv: ServeBench,
    pub mc: McpBench,
    pub cf: Confine,
    /// The remote row, or why it was skipped.
    pub rm: Result<RemoteBench, String>,
    pub bin: u64,
    pub total: Duration,
}

/// Prints the table and writes `target/bench.json`.
pub fn write(env: &Env, runs: Runs) -> Res<()> {
    let Runs { lat, thr, st, mem, bg, tr, sv, mc, cf, rm: remote, bin, total } = runs;
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
    // The default build (remote servers in): 4 MiB, counted in bytes so that
    // 4.004 MiB is no pass. The build without the default features has its
    // own bound, 2.5 MiB (docs/benchmarks.md, "Binary size").
    let fits = bin as usize <= 4 * MIB;
    t.row("binary: target/release/zot (stripped, default features)", format!("{mib:.2} MiB ({bin} bytes)"), "≤ 4 MiB", Some(fits));
    t.goal("binary_mib", mib, "<= 4", fits);
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

    // The remote path.
    match &remote {
        Ok(r) => {
            let ratio = r.zot.p50() / r.sdk.p50();
            t.row("remote: tool call to a local Streamable HTTP server, the Python SDK's client directly, p50 / p99", lt2(&r.sdk), "", None);
            t.row(
                "remote: the same call through `zot serve`, p50 / p99",
                format!("{} ({ratio:.2}× the SDK client)", lt2(&r.zot)),
                "p50 ≤ 1.2× the SDK client",
                Some(ratio <= 1.2),
            );
            t.goal("remote_call_p50_ratio_to_sdk_client", ratio, "<= 1.2", ratio <= 1.2);
            let same = r.after_few == r.after_many;
            t.row(
                &format!("remote: `zot serve` threads / fds at rest after {} calls, after {}", r.few, r.many),
                format!("{} / {}, {} / {}", r.after_few.0, r.after_few.1, r.after_many.0, r.after_many.1),
                "equal",
                Some(same),
            );
            t.goal("remote_threads_fds_unchanged", if same { 1.0 } else { 0.0 }, "== 1", same);
            j.insert(
                "remote".into(),
                json!({"sdk_client": r.sdk.json(), "through_zot": r.zot.json(), "ratio_p50": r2(ratio),
                       "threads_fds": {"calls": [r.few, r.many], "threads": [r.after_few.0, r.after_many.0], "fds": [r.after_few.1, r.after_many.1]}}),
            );
        }
        Err(why) => {
            println!("remote: skipped: {why}");
            t.row("remote: tool call through `zot serve` against the Python SDK's client", format!("skipped: {why}"), "", None);
            j.insert("remote".into(), json!({"skipped": why}));
        }
    }

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
