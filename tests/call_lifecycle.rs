//! The lifecycle of a call whoever makes it (docs/protocol.md §6.1, §6.4,
//! §8.3): an extension's `call_tool` ends with the `tool_result` event as
//! a model's call does, for an extension's tool and an MCP server's; and
//! a request parked for a restarting extension runs on that extension or
//! nowhere (§7.1); a call for a name nobody has waits for the MCP servers
//! still starting (§8.2). Real extensions (tests/fixtures/calls.py, which notes
//! every frame it gets) and a real MCP server (tests/fixtures/mcp_server.py).

mod common;

use common::{calls_ext, host_config, start_host, TempDir};
use serde_json::json;
use std::time::Duration;
use zot_host::host::{HostError, HostEvent, Response};

const WAIT: Duration = Duration::from_secs(60);

fn seen(t: &TempDir, name: &str) -> Vec<String> {
    std::fs::read_to_string(t.path().join(format!("{name}.seen"))).unwrap_or_default().lines().map(str::to_string).collect()
}

#[test]
fn an_extensions_call_tool_ends_with_the_tool_result_event() {
    let t = TempDir::new("lifecycle-call-tool");
    let cfg = t.path().join("mcp.json");
    let server = json!({"command": "python3", "args": [common::fixture("mcp_server.py").display().to_string()]});
    std::fs::write(&cfg, json!({"mcpServers": {"fx": server}}).to_string()).unwrap();
    let c = calls_ext(&t, "c", json!({"tools": ["call"]}), None);
    let t1 = calls_ext(&t, "t1", json!({"tools": ["target", "hold"]}), None);
    let w = calls_ext(&t, "w", json!({"events": ["tool_call", "tool_result"]}), None);
    let mut config = host_config(t.path(), vec![c, t1, w]);
    config.mcp_configs = vec![cfg];
    let (host, _events) = start_host(config);
    host.wait_ready().expect("ready");

    // An extension's tool and an MCP server's, each through c's call_tool.
    for (to, want) in [("target", "result target completed executed=true from=c"), ("mcp__fx__echo", "result mcp__fx__echo completed executed=true from=c")] {
        let r = host.tool("call", Some(json!({"to": to}))).expect("the call through c");
        assert!(!r.is_error, "{to}: {r:?}");
        let noted = common::wait_until(WAIT, || seen(&t, "w").iter().any(|l| l == want));
        let w = seen(&t, "w");
        assert!(noted, "{to}: {w:#?}");
        // The event of the call, then the result's.
        let call = w.iter().position(|l| *l == format!("event tool_call \"{to}\"")).unwrap_or_else(|| panic!("{w:#?}"));
        let result = w.iter().position(|l| *l == format!("event tool_result \"{to}\"")).unwrap_or_else(|| panic!("{w:#?}"));
        assert!(call < result, "{w:#?}");
    }
    // A call c cancels: its result says so.
    let r = host.tool("call", Some(json!({"to": "hold", "cancel_ms": 100}))).expect("the call through c");
    assert!(common::text_of(&r.content).contains("cancelled"), "{r:?}");
    let want = "result hold cancelled executed=true from=c";
    assert!(common::wait_until(WAIT, || seen(&t, "w").iter().any(|l| l == want)), "{:#?}", seen(&t, "w"));
    // One event per call.
    assert_eq!(seen(&t, "w").iter().filter(|l| l.starts_with("result ")).count(), 3, "{:#?}", seen(&t, "w"));
    host.shutdown();
}

#[test]
fn a_request_parked_for_a_name_its_owner_gives_up_never_runs_on_the_next_owner() {
    // docs/protocol.md §7.1: `a` owns `t`, `b` has it shadowed; `a` crashes and
    // comes back without `t`. Its new process waits at a gate the test
    // opens once the request is parked, so the outcome does not hang on
    // timing.
    let t = TempDir::new("lifecycle-parked-owner");
    let (once, gate) = (t.path().join("once"), t.path().join("gate"));
    let cfg = json!({"tools": ["t", "crash"], "tools_later": ["crash"], "commands": ["c"], "once": once, "hello_gate": gate});
    let a = calls_ext(&t, "a", cfg, Some("on-failure"));
    let b = calls_ext(&t, "b", json!({"tools": ["t"], "commands": ["c"]}), None);
    let (host, events) = start_host(host_config(t.path(), vec![a, b]));
    host.wait_ready().expect("ready");
    assert!(host.tool("crash", None).is_err(), "a crashed");
    let restarting = common::wait_event(&events, WAIT, |e| matches!(e, HostEvent::ExtensionRestarting { extension, .. } if extension == "a"));
    assert!(restarting.is_some(), "a restarts");

    let (tx, rx) = crossbeam_channel::unbounded();
    host.submit_tool("t", None, "during", move |r| {
        let _ = tx.send(r);
    });
    // Handled after the request: it is parked for `a` by now (whose new
    // process waits at the gate, before its hello).
    host.list().expect("a round trip after the request");
    std::fs::write(&gate, "").expect("open the gate");
    match rx.recv_timeout(WAIT).expect("an answer") {
        Err(HostError::UnknownTool(name)) => assert_eq!(name, "t"),
        other => panic!("expected unknown_tool, got {other:?}"),
    }
    assert!(!seen(&t, "b").iter().any(|l| l == "tool_call t"), "b never got it: {:?}", seen(&t, "b"));
    // Requests made after the name was given up go to its next owner.
    match host.tool("t", None) {
        Ok(r) => assert_eq!(common::echo_of(&r.content)["by"], "b", "{r:?}"),
        other => panic!("expected b's answer, got {other:?}"),
    }
    // `a` registered its command again: a command parked meanwhile would
    // have gone to it; a request now does too.
    match host.call(zot_host::host::Request::Command { name: "c".into(), args: String::new() }) {
        Ok(Response::Command(r)) => assert_eq!(r.extension, "a", "{r:?}"),
        other => panic!("expected a's answer, got {other:?}"),
    }
    host.shutdown();
}

#[test]
fn calls_for_a_name_nobody_has_wait_for_the_servers_still_starting() {
    // docs/protocol.md §8.2. The server waits at a gate the test opens once the
    // calls are made; the load ends (ready grace) before it.
    let t = TempDir::new("lifecycle-starting");
    let gate = t.path().join("gate");
    let cfg = t.path().join("mcp.json");
    let args = [common::fixture("mcp_server.py").display().to_string(), "--init-gate".into(), gate.display().to_string()];
    std::fs::write(&cfg, json!({"mcpServers": {"slowfx": {"command": "python3", "args": args}}}).to_string()).unwrap();
    let mut config = host_config(t.path(), Vec::new());
    config.mcp_configs = vec![cfg];
    config.timeouts.ready_grace = Duration::from_millis(200);
    let (host, _events) = start_host(config);
    let report = host.wait_ready().expect("the load ends");
    assert!(report.ready.is_empty(), "{report:?}");

    let (tx, rx) = crossbeam_channel::unbounded();
    for (name, key) in [("mcp__slowfx__echo", "echo"), ("nobody", "nobody")] {
        let tx = tx.clone();
        host.submit_tool(name, Some(json!({"text": "hi"})), key, move |r| {
            let _ = tx.send((key, r));
        });
    }
    let command_tx = tx.clone();
    host.submit(zot_host::host::Request::Command { name: "nocommand".into(), args: String::new() }, move |r| {
        let _ = command_tx.send(("nocommand", r));
    });
    // Handled after the calls: they wait by now.
    assert_eq!(common::ext_info(&host, "slowfx").state, zot_host::host::State::Starting);
    assert!(rx.is_empty(), "answered before the server was ready");
    std::fs::write(&gate, "").expect("open the gate");
    let mut answers: Vec<_> = (0..3).map(|_| rx.recv_timeout(WAIT).expect("an answer")).collect();
    answers.sort_by_key(|(k, _)| *k);
    match &answers[0].1 {
        Ok(Response::Tool(r)) => assert_eq!(common::echo_of(&r.content), json!({"text": "hi"}), "{r:?}"),
        other => panic!("expected the server's answer, got {other:?}"),
    }
    for (i, (name, code)) in [(1, ("nobody", "unknown_tool")), (2, ("nocommand", "unknown_command"))] {
        let e = answers[i].1.as_ref().expect_err("unknown");
        assert_eq!(e.code(), code, "{e}");
        assert!(e.to_string().contains("still starting: slowfx"), "{name}: {e}");
    }
    // Once nothing is starting, a name nobody has is unknown at once.
    assert_eq!(host.tool("nobody", None).map_err(|e| e.code()).err(), Some("unknown_tool"));
    host.shutdown();
}
