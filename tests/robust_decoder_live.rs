//! The line decoder under fire through a live pipe (issue 5,
//! reliability): thousands of generated junk lines (tests/common/junk.rs)
//! go through a real extension's stdout (tests/fixtures/spew.py) while
//! tools of that extension and of a healthy one keep being called: every
//! call is answered, none stalls, and each junk line is logged as skipped,
//! exactly once.
//!
//! Environment: `ZOT_FUZZ_SEED` (default fixed), `ZOT_FUZZ_LIVE_LINES`
//! (default 8000).

mod common;
#[path = "common/junk.rs"]
mod junk;

use common::*;
use junk::*;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use zot_host::protocol::{decode_repaired, DecodeError, ExtFrame};

/// Lines for the live run: every generated case split where the host's
/// reader splits it, minus lines that would answer a real call (a reply
/// frame, or a malformed reply with an id), which would race the test's
/// own calls. Returns the lines and how many of them the host must skip.
fn live_lines(seed: u64, n: u64) -> (Vec<Vec<u8>>, usize) {
    let mut raw: Vec<Vec<u8>> = Vec::new();
    // Deep nesting first and last: the reader thread's stack must take it.
    let deep = |r: &mut Vec<Vec<u8>>| {
        r.push("[".repeat(10_000).into_bytes());
        r.push("{\"a\":".repeat(10_000).into_bytes());
        r.push(format!("{{\"type\":\"notify\",\"message\":{}", "[".repeat(10_000)).into_bytes());
        for depth in [126usize, 127, 128, 129] {
            for objects in [false, true] {
                let n = nested(depth, objects, "1");
                r.push(format!("{{\"type\":\"notify\",\"level\":\"info\",\"message\":{n}}}").into_bytes());
                r.push(format!("{{\"type\":\"register_tool\",\"name\":\"deep\",\"schema\":{{\"x\":{n}}}}}").into_bytes());
                r.push(format!("{{\"type\":\"open_panel\",\"panel\":{{\"id\":\"p\",\"lines\":{n}}}}}").into_bytes());
            }
        }
    };
    deep(&mut raw);
    for i in 0..n {
        raw.push(generated_case(seed ^ 0x11fe, i));
    }
    deep(&mut raw);
    let mut lines = Vec::new();
    let mut skipped = 0;
    for case in raw {
        for line in case.split(|&b| b == b'\n') {
            // As the host reads it: repaired when only its text is invalid.
            match decode_repaired::<ExtFrame>(line).0 {
                Ok(ExtFrame::ToolResult(_) | ExtFrame::CommandResponse(_) | ExtFrame::EventInterceptResponse(_)) => continue,
                Err(DecodeError::BadFields { ref ty, id: Some(_), .. })
                    if matches!(ty.as_str(), "command_response" | "tool_result" | "event_intercept_response") =>
                {
                    continue
                }
                Err(_) => skipped += 1,
                Ok(_) => {}
            }
            lines.push(line.to_vec());
        }
    }
    (lines, skipped)
}

#[test]
fn junk_through_a_live_pipe_never_stalls_the_host() {
    let seed = env_u64("ZOT_FUZZ_SEED", DEFAULT_SEED);
    let n = env_u64("ZOT_FUZZ_LIVE_LINES", 8000);
    let t = TempDir::new("fuzz-live");
    let (lines, expect_skipped) = live_lines(seed, n);
    let junk = t.path().join("junk.txt");
    let mut data = Vec::new();
    for l in &lines {
        data.extend_from_slice(l);
        data.push(b'\n');
    }
    std::fs::write(&junk, &data).expect("write junk");
    assert!(expect_skipped > lines.len() / 2, "{expect_skipped} of {}", lines.len());

    // The healthy extension is first in load order, so nothing the junk
    // registers can take its tool.
    let healthy = py_ext(t.path(), "a-healthy", "healthy", &["--tools", "hecho"]);
    let spew = write_manifest(
        t.path(),
        "b-spew",
        json!({"name": "spew", "exec": "python3", "args": [fixture("spew.py").display().to_string(), junk.display().to_string(), "150"]}),
    );
    let (host, _events) = start_host(host_config(t.path(), vec![healthy, spew]));
    let report = host.wait_ready().expect("ready");
    assert_eq!(report.ready, vec!["healthy".to_string(), "spew".to_string()], "{report:?}");
    let host = Arc::new(host);

    let done = Arc::new(AtomicBool::new(false));
    let max_ms = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let limit = Duration::from_secs(120);

    // The healthy extension is called from another thread the whole time.
    let side = {
        let (host, done, max_ms) = (host.clone(), done.clone(), max_ms.clone());
        std::thread::spawn(move || -> Result<u64, String> {
            let mut calls = 0u64;
            while !done.load(Ordering::SeqCst) || calls < 20 {
                let t0 = Instant::now();
                let r = host.tool("hecho", Some(json!({"n": calls}))).map_err(|e| format!("healthy call {calls}: {e}"))?;
                max_ms.fetch_max(t0.elapsed().as_millis() as u64, Ordering::SeqCst);
                let v = echo_of(&r.content);
                if r.is_error || v["args"]["n"] != json!(calls) || v["from"] != "healthy" {
                    return Err(format!("healthy call {calls} got {r:?}"));
                }
                calls += 1;
                if start.elapsed() > limit {
                    return Err("the healthy loop ran out of time".into());
                }
            }
            Ok(calls)
        })
    };

    let mut calls = 0u64;
    let mut progress = Vec::new();
    let outcome = (|| -> Result<(), String> {
        loop {
            let t0 = Instant::now();
            let r = host.tool("spew_echo", Some(json!({"n": calls}))).map_err(|e| format!("spew call {calls}: {e}"))?;
            max_ms.fetch_max(t0.elapsed().as_millis() as u64, Ordering::SeqCst);
            let v: Value = serde_json::from_str(&text_of(&r.content)).map_err(|e| format!("spew call {calls}: {e}: {r:?}"))?;
            if r.is_error || v["args"]["n"] != json!(calls) {
                return Err(format!("spew call {calls} got {r:?}"));
            }
            calls += 1;
            let (written, total) = (v["written"].as_u64().unwrap_or(0), v["total"].as_u64().unwrap_or(u64::MAX));
            progress.push(written);
            if written == total && calls >= 20 {
                return Ok(());
            }
            if start.elapsed() > limit {
                return Err(format!("the junk was not all written within {limit:?} ({written} of {total})"));
            }
        }
    })();
    done.store(true, Ordering::SeqCst);
    let side_calls = side.join().expect("healthy thread");
    let elapsed = start.elapsed();
    let log = read_log(t.path(), "spew");
    let context = || format!("log tail:\n{}", log.lines().rev().take(30).collect::<Vec<_>>().join("\n"));
    outcome.unwrap_or_else(|e| panic!("{e}\n{}", context()));
    let side_calls = side_calls.unwrap_or_else(|e| panic!("{e}\n{}", context()));
    // The junk was written while calls were going on, not all before them.
    let mid = progress.iter().filter(|&&w| w > 0 && w < lines.len() as u64).count();
    assert!(mid >= 10, "junk and results were not interleaved: {progress:?}");
    let max_ms = max_ms.load(Ordering::SeqCst);
    eprintln!(
        "live junk: {} lines ({} to skip, {:.1} MB) in {:.2}s; calls: {calls} to spew ({mid} mid-stream), {side_calls} to healthy; slowest call {max_ms} ms",
        lines.len(),
        expect_skipped,
        data.len() as f64 / 1e6,
        elapsed.as_secs_f64()
    );
    // Each spew call carries 150 junk lines, which a loaded machine may take
    // seconds to write and read; a host that stalled on the junk would hold
    // a call for much of the file's 8000 lines, or time it out (15 s).
    assert!(max_ms < 10_000, "a call took {max_ms} ms: the host stalled\n{}", context());

    // Every junk line was logged as skipped, exactly once, each on one line.
    let count = || read_log(t.path(), "spew").lines().filter(|l| l.starts_with("[zot] skipped a stdout line")).count();
    wait_until(Duration::from_secs(30), || count() >= expect_skipped);
    let got = count();
    assert_eq!(got, expect_skipped, "skipped lines logged\n{}", context());

    // Both extensions are still up and answering.
    let l = host.list().expect("list");
    for e in &l.extensions {
        assert_eq!(e.state, zot_host::host::State::Ready, "{e:?}");
    }
    assert!(!host.tool("hecho", None).expect("healthy after").is_error);
    assert!(!host.tool("spew_echo", None).expect("spew after").is_error);
    host.shutdown();
}

#[test]
fn live_lines_filter_is_exact() {
    // The live test's expected count relies on this split: every kept line
    // is either skipped by the host or a frame that answers no call.
    let (lines, skipped) = live_lines(DEFAULT_SEED, 2000);
    let errs = lines.iter().filter(|l| decode_repaired::<ExtFrame>(l).0.is_err()).count();
    assert_eq!(errs, skipped);
    assert!(lines.iter().all(|l| !l.contains(&b'\n')));
    assert!(fixture("spew.py").is_file());
}
