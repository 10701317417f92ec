//! The Rust SDK (`zot_host::ext`) at the current upstream revision (docs/protocol.md
//! §6): capabilities, `call_tool`, richer tools, command replies, typed
//! events, `before_agent_start`, and the ordering of events before calls.
//! Each test drives a real example extension over pipes, playing the host.

mod sdk_host;

use sdk_host::*;
use serde_json::json;
use std::time::{Duration, Instant};
use zot_host::ext::EVENTS;

/// Not a check: prints how fast the SDK answers, one call at a time and
/// pipelined (`cargo test --test sdk_revision measure -- --nocapture`);
/// `ZOT_SDK_MEASURE=path/to/echo` measures another build of the echo example.
#[test]
fn measure_round_trips_and_throughput() {
    let mut e = match std::env::var_os("ZOT_SDK_MEASURE") {
        Some(bin) => Ext::spawn(std::path::Path::new(&bin), &[], root()),
        None => Ext::start("rust/echo"),
    };
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

const CAPABILITIES: [&str; 6] = ["commands", "tools", "events", "panels", "tool_cancel", "call_tool"];

fn toolbox() -> Ext {
    let mut e = Ext::start("rust/toolbox");
    e.handshake("/proj");
    e
}

/// Nothing more arrives for a moment (what was read meanwhile is kept).
fn assert_quiet(e: &mut Ext, what: &str) {
    if let Some(f) = e.next_fresh(Duration::from_millis(200)) {
        panic!("{what}: got {f}");
    }
}

#[test]
fn hello_declares_upstreams_capabilities_and_tools_their_new_fields() {
    let mut e = Ext::start("rust/toolbox");
    let (hello, frames) = e.handshake("/proj");
    assert_eq!(hello, json!({"type": "hello", "name": "toolbox", "version": "1.0.0", "capabilities": CAPABILITIES}));
    let tool = |name: &str| frames.iter().find(|f| f["type"] == "register_tool" && f["name"] == name).cloned().unwrap_or_else(|| panic!("no {name}"));
    assert_eq!(
        tool("relay"),
        json!({"type": "register_tool", "name": "relay", "description": "Run the tool args.name with args.args through the host.", "schema": {"type": "object"}}),
        "no optional field appears unless set"
    );
    assert_eq!(tool("stats")["output_schema"]["properties"]["words"], json!({"type": "integer"}));
    let vault = tool("vault");
    assert_eq!((&vault["deferred"], &vault["namespace"]), (&json!(true), &json!("vault")));
    assert_eq!(vault["namespace_description"], "secrets kept by the toolbox");
    assert_eq!(tool("confirm")["interactive"], true);
    assert_eq!(tool("send_note")["replay"], "reconcile", "a reconcile handler declares replay");
    assert_eq!(tool("send_note")["exposure"], "model-only");
    let sub = frames.iter().find(|f| f["type"] == "subscribe").expect("a subscribe frame");
    assert_eq!(sub["events"], json!(EVENTS));
    assert_eq!(sub["intercept"], json!(["before_agent_start"]));
    assert!(e.shutdown().success());
}

#[test]
fn call_tool_names_its_parent_and_the_answer_reaches_the_waiting_handler() {
    let mut e = toolbox();
    e.send(json!({"type": "tool_call", "id": "7", "name": "relay", "args": {"name": "weather", "args": {"city": "Oslo"}}}));
    let call = e.wait_for("call_tool", |f| f["type"] == "call_tool");
    assert_eq!(call, json!({"type": "call_tool", "id": "sdk-1", "name": "weather", "args": {"city": "Oslo"}, "parent_id": "7"}));
    assert_quiet(&mut e, "the relay waits for the host's answer");
    e.send(json!({"type": "tool_result", "id": "sdk-1", "name": "weather", "content": [{"type": "text", "text": "Oslo: rain"}],
                  "is_error": false, "truncated": true, "structured_content": {"mm": 3}}));
    let r = e.reply("tool_result", "7");
    assert_eq!(text(&r), "weather: Oslo: rain");
    assert_eq!(r["structured_content"], json!({"truncated": true, "inner": {"mm": 3}}));
    assert!(!is_error(&r));

    // Two at once, answered in the other order: each gets its own.
    e.send(json!({"type": "tool_call", "id": "a", "name": "relay", "args": {"name": "x", "args": {"n": 1}}}));
    e.send(json!({"type": "tool_call", "id": "b", "name": "relay", "args": {"name": "y", "args": {"n": 2}}}));
    let c1 = e.wait_for("call_tool", |f| f["type"] == "call_tool");
    let c2 = e.wait_for("call_tool", |f| f["type"] == "call_tool");
    for c in [&c2, &c1] {
        let answer = format!("answer for {}", c["parent_id"].as_str().unwrap_or("?"));
        e.send(json!({"type": "tool_result", "id": c["id"], "name": c["name"], "content": [{"type": "text", "text": answer}], "is_error": true}));
    }
    let (ra, rb) = (e.reply("tool_result", "a"), e.reply("tool_result", "b"));
    assert_eq!((text(&ra), text(&rb)), ("x: answer for a", "y: answer for b"));
    assert!(is_error(&ra) && is_error(&rb), "the nested error is the relay's");
    assert!(e.shutdown().success());
}

/// The host routes a nested call back to the caller's own extension: it
/// runs while its parent waits.
#[test]
fn a_nested_call_to_the_same_extension_runs_while_its_parent_waits() {
    let mut e = toolbox();
    e.send(json!({"type": "tool_call", "id": "outer", "name": "relay", "args": {"name": "stats", "args": {"text": "a b"}}}));
    let call = e.wait_for("call_tool", |f| f["type"] == "call_tool");
    assert_eq!(call["parent_id"], "outer");
    let inner = e.tool("inner", "stats", call["args"].clone());
    assert_eq!(text(&inner), "3 chars, 2 words");
    e.send(json!({"type": "tool_result", "id": call["id"], "name": "stats", "content": inner["content"], "structured_content": inner["structured_content"]}));
    let r = e.reply("tool_result", "outer");
    assert_eq!(text(&r), "stats: 3 chars, 2 words");
    assert_eq!(r["structured_content"]["inner"], json!({"chars": 3, "words": 2}));
    assert!(e.shutdown().success());
}

#[test]
fn cancelling_the_parent_or_a_timeout_sends_call_tool_cancel() {
    let mut e = toolbox();
    e.send(json!({"type": "tool_call", "id": "8", "name": "relay", "args": {"name": "weather", "args": {}}}));
    let call = e.wait_for("call_tool", |f| f["type"] == "call_tool");
    e.send(json!({"type": "tool_cancel", "id": "8"}));
    let cancel = e.wait_for("call_tool_cancel", |f| f["type"] == "call_tool_cancel");
    assert_eq!(cancel, json!({"type": "call_tool_cancel", "id": call["id"]}));
    let r = e.reply("tool_result", "8");
    assert_eq!((is_error(&r), text(&r)), (true, "relay: call_tool cancelled"));
    // The host still answers the cancelled call: dropped, nothing breaks.
    e.send(json!({"type": "tool_result", "id": call["id"], "content": [{"type": "text", "text": "cancelled"}], "is_error": true}));

    e.send(json!({"type": "tool_call", "id": "9", "name": "relay", "args": {"name": "weather", "args": {}, "timeout_ms": 50}}));
    let call = e.wait_for("call_tool", |f| f["type"] == "call_tool");
    assert_eq!(call["id"], "sdk-2");
    let cancel = e.wait_for("call_tool_cancel", |f| f["type"] == "call_tool_cancel");
    assert_eq!(cancel["id"], "sdk-2");
    let r = e.reply("tool_result", "9");
    assert_eq!(text(&r), "relay: call_tool timed out");
    let r = e.tool("s", "stats", json!({"text": "still up"}));
    assert_eq!(text(&r), "8 chars, 2 words");
    assert!(e.shutdown().success());
}

#[test]
fn no_call_tool_is_sent_to_a_host_without_the_capability() {
    let mut e = Ext::start("rust/toolbox");
    e.handshake_with(old_hello_ack("/proj"));
    let r = e.tool("1", "relay", json!({"name": "weather", "args": {"city": "Oslo"}}));
    assert_eq!((is_error(&r), text(&r)), (true, "relay: host does not support call_tool"));
    let r = e.command("2", "host-tool", "weather");
    assert_eq!(r["error"], "host does not support call_tool");
    assert_quiet(&mut e, "no call_tool frame");
    assert!(e.shutdown().success());
}

#[test]
fn call_tool_through_the_handle_on_a_tool_handlers_thread_names_that_call() {
    let mut e = toolbox();
    e.send(json!({"type": "tool_call", "id": "h1", "name": "ask_host", "args": {"name": "weather"}}));
    let call = e.wait_for("call_tool", |f| f["type"] == "call_tool");
    assert_eq!(call, json!({"type": "call_tool", "id": "sdk-1", "name": "weather", "args": {}, "parent_id": "h1"}));
    e.send(json!({"type": "tool_call", "id": "h2", "name": "ask_host", "args": {"name": "weather"}}));
    let second = e.wait_for("call_tool", |f| f["type"] == "call_tool");
    assert_eq!(second["parent_id"], "h2", "each handler thread names its own call");
    e.send(json!({"type": "tool_cancel", "id": "h1"}));
    assert_eq!(e.wait_for("call_tool_cancel", |f| f["type"] == "call_tool_cancel")["id"], "sdk-1");
    assert_eq!(text(&e.reply("tool_result", "h1")), "call_tool cancelled");
    e.send(json!({"type": "tool_result", "id": second["id"], "content": [{"type": "text", "text": "fog"}]}));
    assert_eq!(text(&e.reply("tool_result", "h2")), "fog");
    assert!(e.shutdown().success());
}

#[test]
fn call_tool_outside_a_tool_handler_has_no_parent() {
    let mut e = toolbox();
    e.send(json!({"type": "command_invoked", "id": "c", "name": "host-tool", "args": "weather"}));
    let call = e.wait_for("call_tool", |f| f["type"] == "call_tool");
    assert_eq!(call, json!({"type": "call_tool", "id": "sdk-1", "name": "weather", "args": {}}));
    e.send(json!({"type": "tool_result", "id": "sdk-1", "name": "weather", "content": [{"type": "text", "text": "sunny"}]}));
    let r = e.reply("command_response", "c");
    assert_eq!(r, json!({"type": "command_response", "id": "c", "action": "display", "display": "sunny"}));
    assert!(e.shutdown().success());
}

#[test]
fn markdown_activate_tools_and_structured_content_frames() {
    let mut e = toolbox();
    let r = e.tool("u", "unlock", json!({}));
    assert_eq!(
        r,
        json!({"type": "tool_result", "id": "u", "content": [{"type": "text", "text": "**vault** unlocked", "format": "markdown"}],
               "is_error": false, "activate_tools": ["vault"]})
    );
    let r = e.tool("v", "vault", json!({}));
    assert_eq!(r, json!({"type": "tool_result", "id": "v", "content": [{"type": "text", "text": "the vault is empty"}], "is_error": false}));
    let r = e.tool("s", "stats", json!({"text": "a bc déf"}));
    assert_eq!(r["structured_content"], json!({"chars": 8, "words": 3}));
    assert_eq!(text(&r), "8 chars, 3 words");
    assert!(e.shutdown().success());
}

#[test]
fn tool_prompt_and_submit_slash_frames() {
    let mut e = toolbox();
    let r = e.command("c1", "weather-now", "Oslo");
    assert_eq!(
        r,
        json!({"type": "command_response", "id": "c1", "action": "tool_prompt", "prompt": "Summarize the weather in Oslo.",
               "tool_name": "weather", "tool_args": {"city": "Oslo"}})
    );
    e.send(json!({"type": "command_invoked", "id": "c2", "name": "reload", "args": ""}));
    let slash = e.wait_for("submit_slash", |f| f["type"] == "submit_slash");
    assert_eq!(slash, json!({"type": "submit_slash", "text": "/reload-ext"}));
    let r = e.reply("command_response", "c2");
    assert_eq!(r, json!({"type": "command_response", "id": "c2", "action": "noop"}));
    assert!(e.shutdown().success());
}

#[test]
fn operation_key_reaches_the_handler_and_reconcile_its_handler() {
    let mut e = toolbox();
    e.send(json!({"type": "tool_call", "id": "1", "name": "send_note", "args": {"text": "hi"}, "operation_key": "op-1"}));
    assert_eq!(text(&e.reply("tool_result", "1")), "sent: hi");
    let ask = |e: &mut Ext, id: &str, key: Option<&str>| {
        let mut f = json!({"type": "tool_call", "id": id, "name": "send_note", "args": {"text": "hi"}, "reconcile": true});
        if let Some(k) = key {
            f["operation_key"] = json!(k);
        }
        e.send(f);
        e.reply("tool_result", id)
    };
    let r = ask(&mut e, "2", Some("op-1"));
    assert_eq!((r["structured_content"].clone(), text(&r)), (json!({"state": "completed"}), "already sent"));
    assert_eq!(ask(&mut e, "3", Some("op-2"))["structured_content"], json!({"state": "not_started"}));
    assert_eq!(ask(&mut e, "4", None)["structured_content"], json!({"state": "unknown"}));
    assert!(e.shutdown().success());
}

#[test]
fn an_interactive_tool_waits_for_its_panel_or_its_cancel() {
    let mut e = toolbox();
    e.send(json!({"type": "tool_call", "id": "q1", "name": "confirm", "args": {"question": "ship it?"}}));
    let open = e.wait_for("open_panel", |f| f["type"] == "open_panel");
    assert_eq!(open["panel"]["lines"], json!(["ship it?"]));
    e.send(json!({"type": "panel_key", "panel_id": "confirm", "key": "enter"}));
    assert_eq!(text(&e.reply("tool_result", "q1")), "confirmed");
    e.wait_for("panel_close", |f| f["type"] == "panel_close");

    e.send(json!({"type": "tool_call", "id": "q2", "name": "confirm", "args": {}}));
    e.wait_for("open_panel", |f| f["type"] == "open_panel");
    e.send(json!({"type": "tool_cancel", "id": "q2"}));
    let r = e.reply("tool_result", "q2");
    assert_eq!((is_error(&r), text(&r)), (true, "cancelled"));
    assert!(e.shutdown().success());
}

#[test]
fn typed_events_carry_the_envelope_and_their_fields() {
    let mut e = toolbox();
    let env = json!({"session_id": "s-1", "cwd": "/proj"});
    let result = json!({"content": [{"type": "text", "text": "ok"}], "is_error": false, "truncated": true});
    let payloads = [
        json!({}),
        json!({"reason": "shutdown"}),
        json!({"text": "hi", "queued": true, "image_count": 2}),
        json!({"step": 3}),
        json!({"stop": "end_turn", "error": "overloaded"}),
        json!({"tool_id": "t1", "tool_name": "bash", "tool_args": {"command": "ls"}, "origin_extension": "other"}),
        json!({"tool_id": "t1", "tool_name": "bash", "tool_preview": "ls"}),
        json!({"tool_id": "t1", "tool_name": "bash", "decision": "approved", "source": "user", "stage": "pre_execution", "reason": "ok"}),
        json!({"tool_id": "t1", "tool_name": "bash", "tool_args": {"command": "ls"}, "status": "completed", "executed": true, "result": result}),
        json!({"text": "done"}),
        json!({"compaction_id": "k1", "message_count": 40, "token_estimate": 9000}),
        json!({"compaction_id": "k1", "message_count": 40, "token_estimate": 9000, "status": "failed", "error": "x"}),
        json!({"agent_id": "a1", "agent_run_id": "r1", "name": "scout"}),
        json!({"agent_id": "a1", "agent_run_id": "r1", "name": "scout", "status": "completed"}),
    ];
    let mut expected = Vec::new();
    for (n, (name, p)) in EVENTS.iter().zip(&payloads).enumerate() {
        let mut frame = json!({"type": "event", "event": name, "sequence": n + 1});
        let mut want = json!({"name": name, "sequence": n + 1});
        for src in [&env, p] {
            for (k, v) in src.as_object().into_iter().flatten() {
                frame[k] = v.clone();
                want[if k == "name" { "agent_name" } else { k }] = v.clone();
            }
        }
        e.send(frame);
        expected.push(want);
    }
    let r = e.tool("ev", "events", json!({}));
    assert_eq!(text(&r), "14 events");
    let got = r["structured_content"].as_array().expect("a list").clone();
    for (g, w) in got.iter().zip(&expected) {
        assert_eq!(g, w);
    }
    assert_eq!(got.len(), 14);
    assert!(e.shutdown().success());
}

#[test]
fn before_agent_start_replies_with_the_system_prompt() {
    let mut e = toolbox();
    let payload = json!({"session_id": "s", "agent_run_id": "r", "cwd": "/proj", "provider": "p1", "model": "m1", "system_prompt": "Be brief."});
    let r = e.intercept("b1", "before_agent_start", payload.clone());
    assert_eq!(
        r,
        json!({"type": "event_intercept_response", "id": "b1", "block": false, "system_prompt": "Be brief.\nAnswer in haiku. (model m1 in /proj)"})
    );
    let mut kept = payload.clone();
    kept["system_prompt"] = json!("Answer in haiku.");
    let r = e.intercept("b2", "before_agent_start", kept);
    assert_eq!(r, json!({"type": "event_intercept_response", "id": "b2", "block": false}), "None keeps the prompt");
    let r = e.intercept("b3", "before_agent_start", json!({"session_id": "s"}));
    assert_eq!(r, json!({"type": "event_intercept_response", "id": "b3", "block": false}), "no prompt to change");
    assert!(e.shutdown().success());
}

/// Issue 12: an `event` then a `tool_call` written together; the tool
/// must see the event, every time.
#[test]
fn a_call_sees_every_event_received_before_it() {
    let mut e = Ext::start("rust/guard");
    e.handshake("/p");
    for n in 0..300 {
        let event = json!({"type": "event", "event": "session_start", "n": n});
        let call = json!({"type": "tool_call", "id": format!("a{n}"), "name": "audit_log", "args": {}});
        e.send_raw(&format!("{event}\n{call}"));
        let r = e.reply("tool_result", &format!("a{n}"));
        let last = text(&r).lines().last().unwrap_or_default().to_string();
        assert_eq!(last, format!("event session_start {{\"n\":{n}}}"), "iteration {n}");
    }
    // And across kinds of frames: an intercept after events sees them too.
    let mut e = toolbox();
    let mut batch = String::new();
    for n in 0..50 {
        batch.push_str(&json!({"type": "event", "event": "turn_start", "step": n}).to_string());
        batch.push('\n');
    }
    batch.push_str(&json!({"type": "tool_call", "id": "all", "name": "events", "args": {}}).to_string());
    e.send_raw(&batch);
    assert_eq!(text(&e.reply("tool_result", "all")), "50 events");
    assert!(e.shutdown().success());
}

/// Issue 12 as the user met it: pipelined `zot serve` requests, an `event`
/// then a `tool` call to the guard's `audit_log`; the log has the event.
#[test]
fn through_serve_a_pipelined_tool_call_sees_the_event_before_it() {
    build_examples();
    let home = std::env::temp_dir().join(format!("zot-sdk-order-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&home);
    let mut serve = std::process::Command::new(env!("CARGO_BIN_EXE_zot"))
        .args(["serve", "--no-ext", "--ext"])
        .arg(root().join("examples/rust/guard"))
        .env("ZOT_HOME", &home)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn zot serve");
    const N: usize = 100;
    let mut batch = String::new();
    for n in 0..N {
        batch.push_str(&json!({"id": format!("e{n}"), "type": "event", "event": "session_start", "n": n}).to_string());
        batch.push('\n');
        batch.push_str(&json!({"id": format!("t{n}"), "type": "tool", "name": "audit_log", "args": {}}).to_string());
        batch.push('\n');
    }
    let mut stdin = serve.stdin.take().expect("piped stdin");
    std::thread::spawn(move || {
        use std::io::Write;
        // Then the end of input: serve answers what it accepted and exits.
        let _ = stdin.write_all(batch.as_bytes());
    });
    let stdout = serve.stdout.take().expect("piped stdout");
    let mut checked = 0;
    for line in std::io::BufRead::lines(std::io::BufReader::new(stdout)) {
        let Ok(line) = line else { break };
        let r: serde_json::Value = serde_json::from_str(&line).expect("serve writes JSON lines");
        let Some(id) = r["id"].as_str() else { continue };
        if let Some(n) = id.strip_prefix('t') {
            let log = r["result"]["content"][0]["text"].as_str().unwrap_or_default();
            // The payload as sent, inside the host's envelope.
            let saw = log.lines().filter_map(|l| l.strip_prefix("event session_start ")).any(|p| {
                serde_json::from_str::<serde_json::Value>(p).is_ok_and(|v| v["n"].as_u64().map(|x| x.to_string()).as_deref() == Some(n) && v["sequence"].is_u64())
            });
            assert!(saw, "tool call {n} did not see its event: {r}");
            checked += 1;
        }
    }
    assert_eq!(checked, N);
    let _ = serve.wait();
    let _ = std::fs::remove_dir_all(&home);
}
