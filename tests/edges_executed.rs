//! `executed` in the `tool_result` event (docs/protocol.md §6.4) says
//! whether the tool ran: a call cancelled while parked for its restarting
//! extension (§6.1, §7.1) never reached it, so it was not executed, though
//! its `tool_call` chain had let it through. Real extensions
//! (tests/fixtures/calls.py notes every frame and event it gets).

mod common;

use common::{host_config, start_host, TempDir};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Duration;
use zot_host::host::{HostError, HostEvent, Request, ToolCall};

const WAIT: Duration = Duration::from_secs(60);

fn calls_ext(t: &TempDir, name: &str, mut cfg: Value, restart: Option<&str>) -> PathBuf {
    cfg["name"] = json!(name);
    cfg["log"] = json!(t.path().join(format!("{name}.seen")).display().to_string());
    let mut m = json!({"name": name, "version": "1.0.0", "exec": "python3",
        "args": [common::fixture("calls.py").display().to_string(), cfg.to_string()]});
    if let Some(r) = restart {
        m["restart"] = json!(r);
    }
    common::write_manifest(&t.path().join("exts"), name, m)
}

fn seen(t: &TempDir, name: &str) -> Vec<String> {
    std::fs::read_to_string(t.path().join(format!("{name}.seen"))).unwrap_or_default().lines().map(str::to_string).collect()
}

/// A call run as the model's (it has a chain and a `tool_result` event).
fn as_model(name: &str, tool_id: &str) -> Request {
    Request::ToolCall(ToolCall { name: name.into(), tool_id: Some(tool_id.into()), as_model: true, ..Default::default() })
}

#[test]
fn a_call_cancelled_while_parked_was_not_executed() {
    // The chain of `shared` waits at i's gate; r is killed meanwhile, so
    // the call the chain lets through is parked for r (whose new process
    // waits at its own gate), and cancelled there.
    let t = TempDir::new("edges-executed-parked");
    let (once, gate, chain_gate) = (t.path().join("once"), t.path().join("gate"), t.path().join("chain-gate"));
    let cfg = json!({"tools": ["shared", "hold"], "once": once, "hello_gate": gate});
    let r = calls_ext(&t, "r", cfg, Some("on-failure"));
    let i = calls_ext(&t, "i", json!({"intercepts": ["tool_call"], "intercept_gate": chain_gate}), None);
    let w = calls_ext(&t, "w", json!({"events": ["tool_call", "tool_result"]}), None);
    let mut config = host_config(t.path(), vec![r, i, w]);
    config.timeouts.intercept = WAIT;
    let (host, events) = start_host(config);
    host.wait_ready().expect("ready");

    let (tx, rx) = crossbeam_channel::unbounded();
    host.submit(as_model("shared", "parked"), move |r| {
        let _ = tx.send(r);
    });
    let asked = common::wait_until(WAIT, || seen(&t, "i").iter().any(|l| l == "intercept tool_call \"shared\""));
    assert!(asked, "{:#?}", seen(&t, "i"));
    let pid = common::ext_info(&host, "r").pid.expect("r runs");
    // SAFETY: a plain kill(2) of r's process, a signal the host did not send.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    let restarting = common::wait_event(&events, WAIT, |e| matches!(e, HostEvent::ExtensionRestarting { extension, .. } if extension == "r"));
    assert!(restarting.is_some(), "r restarts");
    std::fs::write(&chain_gate, "").expect("let the chain end");
    // The tool_call event goes out as the chain lets the call through, just
    // before it is parked.
    let through = common::wait_until(WAIT, || seen(&t, "w").iter().any(|l| l == "event tool_call \"shared\""));
    assert!(through, "{:#?} {:?}", seen(&t, "w"), rx.try_recv());
    host.cancel_tool("parked").expect("cancel");
    match rx.recv_timeout(WAIT).expect("an answer") {
        Err(HostError::Cancelled { .. }) => {}
        other => panic!("expected cancelled, got {other:?}"),
    }
    let want = "result shared cancelled executed=false from=None";
    assert!(common::wait_until(WAIT, || seen(&t, "w").iter().any(|l| l == want)), "{:#?}", seen(&t, "w"));

    // The control: once r is back, a call that reaches it and is then
    // cancelled was executed.
    std::fs::write(&gate, "").expect("open the gate");
    let back = common::wait_event(&events, WAIT, |e| matches!(e, HostEvent::ExtensionReady { extension, .. } if extension == "r"));
    assert!(back.is_some(), "r is back");
    assert!(!seen(&t, "r").iter().any(|l| l == "tool_call shared"), "the parked call never reached r: {:#?}", seen(&t, "r"));
    let (tx, rx) = crossbeam_channel::unbounded();
    host.submit(as_model("hold", "held"), move |r| {
        let _ = tx.send(r);
    });
    assert!(common::wait_until(WAIT, || seen(&t, "r").iter().any(|l| l == "tool_call hold")), "{:#?}", seen(&t, "r"));
    host.cancel_tool("held").expect("cancel");
    assert!(matches!(rx.recv_timeout(WAIT).expect("an answer"), Err(HostError::Cancelled { .. })));
    let want = "result hold cancelled executed=true from=None";
    assert!(common::wait_until(WAIT, || seen(&t, "w").iter().any(|l| l == want)), "{:#?}", seen(&t, "w"));
    assert_eq!(seen(&t, "w").iter().filter(|l| l.starts_with("result shared ")).count(), 1, "{:#?}", seen(&t, "w"));
    host.shutdown();
}

#[test]
fn an_agent_tool_asked_then_cancelled_was_executed() {
    // §6.1: an agent tool is reached when the agent is sent `call_tool`;
    // cancelled after that, it ran (the agent was told to stop), whereas a
    // call cancelled before it reached its tool was not (the test above).
    let t = TempDir::new("edges-executed-agent");
    let a = calls_ext(&t, "a", json!({"tools": ["call"]}), None);
    let w = calls_ext(&t, "w", json!({"events": ["tool_result"]}), None);
    let (host, events) = start_host(host_config(t.path(), vec![a, w]));
    host.wait_ready().expect("ready");
    let tool = zot_host::host::AgentTool { name: "bash".into(), description: "run".into(), schema: json!({"type": "object"}) };
    host.call(Request::AgentTools(vec![tool])).expect("agent tools");

    let (tx, rx) = crossbeam_channel::unbounded();
    let call = ToolCall { name: "call".into(), args: Some(json!({"to": "bash", "cancel_ms": 50})), ..Default::default() };
    host.submit(Request::ToolCall(call), move |r| {
        let _ = tx.send(r);
    });
    // The agent is asked (the frame `call_tool` comes before its cancel on
    // a's stdout), then the cancel ends the call.
    let asked = common::wait_event(&events, WAIT, |e| matches!(e, HostEvent::CallTool { name, .. } if name == "bash"));
    assert!(asked.is_some(), "the agent was asked");
    let want = "result bash cancelled executed=true from=a";
    assert!(common::wait_until(WAIT, || seen(&t, "w").iter().any(|l| l == want)), "{:#?}", seen(&t, "w"));
    assert!(rx.recv_timeout(WAIT).is_ok(), "the outer call is answered");
    host.shutdown();
}
