//! The Rust SDK (`zot::ext`) at the current upstream revision (PROTOCOL.md
//! §6): capabilities, `call_tool`, richer tools, command replies, typed
//! events, `before_agent_start`, and the ordering of events before calls.
//! Each test drives a real example extension over pipes, playing the host.

mod sdk_host;

use sdk_host::*;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// Not a check: prints how fast the SDK answers, one call at a time and
/// pipelined (`cargo test --test sdk_revision measure -- --nocapture`).
#[test]
fn measure_round_trips_and_throughput() {
    let mut e = Ext::start("rust/echo");
    e.handshake("/p");
    const ONE_BY_ONE: usize = 2000;
    let t = Instant::now();
    for n in 0..ONE_BY_ONE {
        let r = e.tool(&format!("s{n}"), "echo", json!({"n": n}));
        assert_eq!(text(&r), format!("{{\"n\":{n}}}"));
    }
    let per_call = t.elapsed() / ONE_BY_ONE as u32;
    const PIPELINED: usize = 20_000;
    let mut batch = String::new();
    for n in 0..PIPELINED {
        batch.push_str(&json!({"type": "tool_call", "id": format!("p{n}"), "name": "echo", "args": {"n": n}}).to_string());
        batch.push('\n');
    }
    let t = Instant::now();
    e.send_raw(batch.trim_end());
    for _ in 0..PIPELINED {
        assert_eq!(e.next()["type"], "tool_result");
    }
    let rate = PIPELINED as f64 / t.elapsed().as_secs_f64();
    eprintln!("sdk measure: round trip {per_call:?} per call; pipelined {rate:.0} calls/s");
    assert!(e.shutdown().success());
}
