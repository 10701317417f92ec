//! What extensions ask of the host through `zot serve`
//! (docs/protocol.md §4, §6): `tool_call` to other extensions and to the
//! agent's own tools, the chain depth limit, the envelope of every event
//! and intercept frame, `before_agent_start` chaining the system prompt,
//! the current revision's richer tools and command actions, command names
//! matched without case, a caller's calls cancelled when it exits, and the
//! frame size limit towards an extension.

mod common;
#[path = "common/serve_proc.rs"]
mod serve_proc;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use common::TempDir;
use serde_json::{json, Value};
use serve_proc::*;
use std::collections::HashMap;
use std::path::PathBuf;

/// What the fixture's `call` tool got back from the host, as a JSON frame.
fn call_result(r: &Value) -> Value {
    let text = r["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text: {r}"));
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

#[test]
fn extensions_call_tools_through_the_host() {
    // docs/protocol.md §6.1 and §6.5, with frames as the current Go SDK writes them.
    let t = TempDir::new("serve-call-tool");
    let a = ext(&t, "a", &["--call-tool", "--tools", "call,call@again", "--echo-ack"]);
    let b = ext(&t, "b", &["--tools", "echo,events@b,call@b,hold", "--intercepts", "tool_call", "--events", "tool_call"]);
    let c = ext(&t, "c", &["--tools", "call@c"]);
    let mut s = Serve::start(&t, &[a, b, c], &[]);
    s.ready_all();
    let ack = s.wait_or_find(|f| f["type"] == "notify" && f["extension"] == "a");
    let ack: Value = serde_json::from_str(s.frames[ack]["message"].as_str().unwrap().trim_start_matches("ack:")).unwrap();
    assert!(ack["capabilities"].as_array().unwrap().contains(&json!("call_tool")), "{ack}");

    // A routed call: the answer names the tool, and B's interceptor and
    // subscriber saw `origin_extension`.
    let r = s.request(json!({"id": 1, "type": "tool", "name": "call", "args": {"to": "echo", "args": {"city": "Oslo"}}}));
    let got = call_result(&r);
    assert_eq!(got["type"], "tool_result", "{got}");
    assert_eq!(got["id"], "sdk-1");
    assert_eq!(got["name"], "echo");
    assert_eq!(got["is_error"], false, "{got}");
    assert_eq!(echoed(&got)["args"], json!({"city": "Oslo"}));
    let seen = s.ok(json!({"id": 2, "type": "tool", "name": "events@b"}));
    let seen: Value = serde_json::from_str(seen["content"][0]["text"].as_str().unwrap()).unwrap();
    let seen = seen.as_array().unwrap();
    assert!(seen.iter().any(|e| e["intercept"] == "tool_call" && e["origin_extension"] == "a" && e["tool_name"] == "echo"), "{seen:?}");
    assert!(seen.iter().any(|e| e["event"] == "tool_call" && e["origin_extension"] == "a"), "{seen:?}");

    // Every refusal text of §6.1.
    let refusal = |s: &mut Serve, id: i64, args: Value, tool: &str| {
        let r = s.request(json!({"id": id, "type": "tool", "name": tool, "args": args}));
        let got = call_result(&r);
        assert_eq!(got["is_error"], true, "{got}");
        got["content"][0]["text"].as_str().unwrap().to_string()
    };
    assert_eq!(refusal(&mut s, 3, json!({"to": "echo"}), "call@b"), "extension did not opt in to call_tool");
    assert_eq!(refusal(&mut s, 4, json!({"to": "echo", "parent": "999999"}), "call"), "unknown or expired parent tool call");
    assert_eq!(refusal(&mut s, 5, json!({"to": "echo", "no_parent": true}), "call"), "parent_id is required while an extension tool is active");
    assert_eq!(refusal(&mut s, 6, json!({"to": "call", "args": {"to": "echo"}}), "call"), "tool call cycle detected");
    assert_eq!(refusal(&mut s, 7, json!({"to": "nope"}), "call"), "unknown tool \"nope\"");
    assert_eq!(refusal(&mut s, 8, json!({"to": "echo", "args": [1]}), "call"), "call_tool requires a name and JSON object args");
    // Cancelled: the host still answers, saying so. The callee holds the
    // call, so its answer cannot overtake the cancel.
    let text = refusal(&mut s, 9, json!({"to": "hold", "cancel": true}), "call");
    assert!(text.contains("cancelled"), "{text}");
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
}

#[test]
fn richer_tools_and_command_actions_of_the_current_revision() {
    let t = TempDir::new("serve-rich");
    let a = ext(&t, "a", &["--rich-tools", "--tools", "echo", "--commands", "tool_prompt,slash,bad_tool_prompt,nameless_tool_prompt"]);
    let mut s = Serve::start(&t, &[a], &[]);
    s.ready_all();
    let l = s.ok(json!({"id": 1, "type": "list"}));
    let tools: HashMap<&str, &Value> = l["tools"].as_array().unwrap().iter().map(|t| (t["name"].as_str().unwrap(), t)).collect();
    assert!(!tools.contains_key("nonsense"), "an unknown exposure is refused: {tools:?}");
    assert!(log_contains_text(&t, "a", "tool \"nonsense\" has unknown exposure \"nonsense\", skipped"));
    assert_eq!(tools["structured"]["output_schema"]["properties"]["ok"]["type"], "boolean");
    assert_eq!(tools["structured"]["replay"], "safe");
    assert_eq!(tools["structured"]["exposure"], "direct");
    assert_eq!(tools["structured"]["active"], true);
    assert_eq!(tools["later"]["active"], false, "deferred until activated");
    assert_eq!(tools["asks"]["interactive"], true);
    assert_eq!(tools["empty"]["replay"], "never", "an unknown replay counts as never");
    assert_eq!(tools["activate"]["namespace"], "ns");
    let caps = &l["extensions"][0]["capabilities"];
    assert!(caps.as_array().unwrap().contains(&json!("tool_cancel")), "{caps}");

    let r = s.ok(json!({"id": 2, "type": "tool", "name": "structured"}));
    assert_eq!(r["structured_content"], json!({"ok": true}));
    assert_eq!(r["content"][0]["format"], "markdown");
    s.send(&json!({"id": 3, "type": "tool", "name": "activate"}));
    let answered = s.response_index(&json!(3));
    assert_eq!(s.frames[answered]["result"]["activate_tools"], json!(["later"]));
    let changed = s.wait_or_find(|f| f["type"] == "tools_changed");
    assert!(answered < changed, "the answer, then what it changed: {:?}", s.frames);
    assert_eq!(s.frames[changed], json!({"type": "tools_changed", "extension": "a", "reason": "activated", "tools": ["later"]}));
    let l = s.ok(json!({"id": 4, "type": "list"}));
    assert!(l["tools"].as_array().unwrap().iter().any(|t| t["name"] == "later" && t["active"] == true));
    let r = s.ok(json!({"id": 5, "type": "tool", "name": "empty"}));
    assert_eq!(r["content"], json!([{"type": "text", "text": "(extension returned no content)"}]));
    // No interactive support without --interactive-tools: refused at once.
    let r = s.ok(json!({"id": 6, "type": "tool", "name": "asks"}));
    assert_eq!(r["is_error"], true);
    assert_eq!(r["content"][0]["text"], "interactive extension tools require an interactive host");

    let r = s.ok(json!({"id": 7, "type": "command", "name": "tool_prompt", "args": "x"}));
    assert_eq!(r, json!({"extension": "a", "action": "tool_prompt", "prompt": "now x", "tool_name": "echo", "tool_args": {"q": "x"}}));
    // tool_args that are not an object: the reply is an error, nothing runs.
    let r = s.ok(json!({"id": "7b", "type": "command", "name": "bad_tool_prompt"}));
    assert_eq!(r["action"], "noop", "{r}");
    assert_eq!(r["error"], "extension answered tool_prompt with tool_args that are not a JSON object", "{r}");
    assert!(r.get("tool_args").is_none(), "{r}");
    let r = s.ok(json!({"id": "7c", "type": "command", "name": "nameless_tool_prompt"}));
    assert_eq!((&r["action"], &r["error"]), (&json!("noop"), &json!("extension answered tool_prompt without a tool_name")), "{r}");
    s.ok(json!({"id": 8, "type": "command", "name": "slash", "args": "weather oslo"}));
    let slash = s.wait_or_find(|f| f["type"] == "submit_slash");
    assert_eq!(s.frames[slash], json!({"type": "submit_slash", "extension": "a", "text": "/weather oslo"}));
    assert!(log_contains_text(&t, "a", "refused submit_slash \"no slash\""));
    // operation_key and reconcile reach the extension as given.
    let r = s.ok(json!({"id": 9, "type": "tool", "name": "echo", "args": {}, "operation_key": "op-1", "reconcile": true}));
    assert_eq!(echoed(&r)["args"], json!({}));
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
    assert_eq!(s.notes("submit_slash").len(), 1);
}

#[test]
fn a_chain_of_four_tool_calls_goes_no_deeper() {
    let t = TempDir::new("serve-depth");
    let exts: Vec<PathBuf> = ["a", "b", "c", "d"]
        .iter()
        .map(|n| ext(&t, n, &["--call-tool", "--tools", &format!("call@{n}")]))
        .chain([ext(&t, "e", &["--tools", "echo"])])
        .collect();
    let mut s = Serve::start(&t, &exts, &[]);
    s.ready_all();
    // call@a → call@b → call@c → call@d: the fourth may not call again.
    let args = json!({"to": "call@b", "args": {"to": "call@c", "args": {"to": "call@d", "args": {"to": "echo"}}}});
    let r = s.request(json!({"id": 1, "type": "tool", "name": "call@a", "args": args}));
    let mut frame = call_result(&r);
    for _ in 0..3 {
        assert_eq!(frame["is_error"], false, "{frame}");
        frame = serde_json::from_str(frame["content"][0]["text"].as_str().unwrap()).unwrap();
    }
    assert_eq!(frame["is_error"], true, "{frame}");
    assert_eq!(frame["content"][0]["text"], "tool call depth limit reached");
    // One level less is fine.
    let args = json!({"to": "call@c", "args": {"to": "call@d", "args": {"to": "echo"}}});
    let r = s.request(json!({"id": 2, "type": "tool", "name": "call@b", "args": args}));
    let mut frame = call_result(&r);
    for _ in 0..2 {
        frame = serde_json::from_str(frame["content"][0]["text"].as_str().unwrap()).unwrap();
    }
    assert_eq!(frame["is_error"], false, "{frame}");
    assert_eq!(frame["name"], "echo");
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
}

/// What the fixture's `events@NAME` tool says it saw.
fn seen_by(s: &mut Serve, name: &str, id: i64) -> Vec<Value> {
    let r = s.ok(json!({"id": id, "type": "tool", "name": format!("events@{name}")}));
    serde_json::from_str::<Value>(r["content"][0]["text"].as_str().unwrap()).unwrap().as_array().unwrap().clone()
}

#[test]
fn every_event_and_intercept_frame_carries_the_envelope() {
    // docs/protocol.md §6.4: the 14 events, routed with their payloads; the
    // envelope on every event and event_intercept frame; one host-wide
    // strictly increasing sequence; one session id per run unless the
    // agent gives one.
    let events = [
        "session_start", "session_end", "user_prompt_submit", "turn_start", "turn_end", "tool_call",
        "tool_confirmation_requested", "permission_decision", "tool_result", "assistant_message",
        "pre_compact", "post_compact", "subagent_start", "subagent_stop",
    ];
    let t = TempDir::new("serve-envelope");
    let a = ext(&t, "a", &["--keep-envelope", "--tools", "events@a", "--events", &events.join(","), "--intercepts", "tool_call,before_agent_start"]);
    let b = ext(&t, "b", &["--keep-envelope", "--tools", "events@b", "--events", "turn_start"]);
    let mut s = Serve::start(&t, &[a, b], &["--provider", "prov", "--model", "mod"]);
    s.ready_all();
    for (i, e) in events.iter().enumerate() {
        let r = s.ok(json!({"id": i, "type": "event", "event": e, "n": i}));
        let expect = if *e == "turn_start" { 2 } else { 1 };
        assert_eq!(r, json!({"delivered": expect}), "{e}");
    }
    s.ok(json!({"id": 100, "type": "intercept", "event": "tool_call", "tool_name": "x", "tool_args": {}}));
    s.ok(json!({"id": 101, "type": "event", "event": "turn_start", "session_id": "agent-s", "cwd": "/elsewhere"}));
    let big = "r".repeat(300 * 1024);
    s.ok(json!({"id": 102, "type": "event", "event": "tool_result", "tool_id": "t", "tool_name": "x", "tool_args": {},
        "status": "completed", "executed": true, "result": {"content": [{"type": "text", "text": big}], "is_error": false}}));
    let seen = seen_by(&mut s, "a", 200);
    assert_eq!(seen.len(), events.len() + 3, "{seen:?}");
    let cwd = t.path().join("cwd").display().to_string();
    let mut last = 0;
    let session = seen[0]["session_id"].as_str().unwrap().to_string();
    for (i, f) in seen.iter().enumerate() {
        let seq = f["sequence"].as_u64().unwrap_or_else(|| panic!("no sequence: {f}"));
        assert!(seq > last, "sequence not increasing at {i}: {seq} after {last}");
        last = seq;
        if i < events.len() + 1 {
            assert_eq!(f["session_id"], session.as_str(), "{f}");
            assert_eq!(f["cwd"], cwd.as_str(), "{f}");
        }
    }
    for (i, e) in events.iter().enumerate() {
        assert_eq!(seen[i]["event"], *e);
        assert_eq!(seen[i]["n"], i, "the payload is routed as given: {}", seen[i]);
    }
    assert_eq!(seen[events.len()]["intercept"], "tool_call");
    assert_eq!(seen[events.len() + 1]["session_id"], "agent-s", "the agent's own session id wins");
    assert_eq!(seen[events.len() + 1]["cwd"], "/elsewhere");
    let result = &seen[events.len() + 2]["result"];
    assert_eq!(result["truncated"], true, "a tool_result over 256 KiB is cut");
    assert_eq!(result["content"][0]["text"].as_str().unwrap().len(), 256 * 1024);
    // b's turn_start frames sit in the same host-wide order: the counter is
    // over frames, so b's frame for an event comes right after a's.
    let seen_b = seen_by(&mut s, "b", 201);
    assert_eq!(seen_b.len(), 2);
    let seq = |f: &Value| f["sequence"].as_u64().unwrap_or(0);
    assert_eq!(seq(&seen_b[0]), seq(&seen[3]) + 1, "a frame of its own, after a's: {seen_b:?}");
    assert_eq!(seq(&seen_b[1]), seq(&seen[events.len() + 1]) + 1, "{seen_b:?}");
    let mut all: Vec<u64> = seen.iter().chain(&seen_b).map(seq).collect();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), seen.len() + seen_b.len(), "no two frames share a sequence");
    // before_agent_start: the host's provider and model unless the agent
    // gives its own.
    s.ok(json!({"id": 103, "type": "intercept", "event": "before_agent_start", "system_prompt": "p", "agent_run_id": "r"}));
    s.ok(json!({"id": 104, "type": "intercept", "event": "before_agent_start", "system_prompt": "p", "provider": "x", "model": "y"}));
    // Neither a prompt nor a run id: the interceptor still gets both.
    let r = s.ok(json!({"id": 105, "type": "intercept", "event": "before_agent_start"}));
    assert_eq!(r["system_prompt"], "+a", "{r}");
    let seen = seen_by(&mut s, "a", 202);
    let bas: Vec<&Value> = seen.iter().filter(|f| f["intercept"] == "before_agent_start").collect();
    assert_eq!(bas[2]["system_prompt"], "", "{bas:?}");
    let run = bas[2]["agent_run_id"].as_str().unwrap_or("");
    assert!(run.starts_with(&format!("{session}-run-")), "{run}");
    assert_eq!((&bas[0]["provider"], &bas[0]["model"], &bas[0]["agent_run_id"]), (&json!("prov"), &json!("mod"), &json!("r")), "{bas:?}");
    assert_eq!((&bas[1]["provider"], &bas[1]["model"]), (&json!("x"), &json!("y")), "{bas:?}");
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
}

#[test]
fn before_agent_start_chains_the_system_prompt() {
    let t = TempDir::new("serve-bas");
    let mk = |name: &str, mode: &str| ext(&t, name, &["--intercepts", "before_agent_start", "--bas-mode", mode]);
    let exts = vec![mk("a1", "append"), mk("a2", "number"), mk("a3", "huge"), mk("a4", "block"), mk("a5", "slow"), mk("a6", "append")];
    // Long enough for every Python interceptor but a5 to answer in time on
    // a loaded machine; a5 never does.
    let mut s = Serve::start(&t, &exts, &["--fail-closed", "--intercept-timeout", "5"]);
    s.ready_all();
    let payload = json!({"id": 1, "type": "intercept", "event": "before_agent_start", "agent_run_id": "r1",
        "provider": "p", "model": "m", "system_prompt": "base"});
    let r = s.ok(payload);
    // a2, a3 and a4 are ignored with a warning each; a5 times out, which
    // keeps the prompt even fail-closed.
    assert_eq!(r, json!({"block": false, "system_prompt": "base+a1+a6"}));
    for (name, why) in [("a2", "not a string"), ("a3", "bytes (limit"), ("a4", "block without a system_prompt")] {
        let n = s.wait_or_find(|f| f["type"] == "notify" && f["extension"] == name);
        let msg = s.frames[n]["message"].as_str().unwrap();
        assert!(msg.contains(why) && s.frames[n]["level"] == "warn", "{name}: {msg}");
    }
    let t2 = TempDir::new("serve-bas-empty");
    let mut s2 = Serve::start(&t2, &[ext(&t2, "e", &["--intercepts", "before_agent_start", "--bas-mode", "empty"])], &[]);
    s2.ready_all();
    let r = s2.ok(json!({"id": 1, "type": "intercept", "event": "before_agent_start", "system_prompt": "base"}));
    assert_eq!(r["system_prompt"], "", "\"\" empties the prompt");
    let (code, msg) = s2.err(json!({"id": 2, "type": "intercept", "event": "before_agent_start", "system_prompt": 5}));
    assert_eq!((code.as_str(), msg.as_str()), ("bad_request", "param `system_prompt` must be a string"));
    s2.z.close_stdin();
    assert_eq!(s2.finish(), 0);
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
}

#[test]
fn extensions_reach_the_agents_own_tools() {
    // docs/protocol.md §4 agent_tools / call_tool / call_tool_result, §6.1.
    let t = TempDir::new("serve-agent-tools");
    let a = ext(&t, "a", &["--call-tool", "--tools", "call"]);
    let mut s = Serve::start(&t, &[a], &[]);
    s.ready_all();
    assert_eq!(s.ok(json!({"id": 1, "type": "agent_tools", "tools": [{"name": "bash", "description": "run"}]})), json!({}));
    s.send(&json!({"id": 2, "type": "tool", "name": "call", "tool_id": "model-7", "args": {"to": "bash", "args": {"cmd": "ls"}}}));
    let asked = s.wait_or_find(|f| f["type"] == "call_tool");
    let asked = s.frames[asked].clone();
    assert_eq!(asked["extension"], "a");
    assert_eq!(asked["name"], "bash");
    assert_eq!(asked["args"], json!({"cmd": "ls"}));
    assert_eq!(asked["parent_tool_id"], "model-7");
    let call_id = asked["call_id"].as_str().unwrap().to_string();
    // `content` is required (docs/protocol.md §4); the call still waits.
    let (code, msg) = s.err(json!({"id": "r0", "type": "call_tool_result", "call_id": call_id}));
    assert_eq!((code.as_str(), msg.as_str()), ("bad_request", "missing param `content`"));
    let r = s.ok(json!({"id": 3, "type": "call_tool_result", "call_id": call_id, "content": [{"type": "text", "text": "a b"}], "structured_content": {"n": 2}}));
    assert_eq!(r, json!({}));
    let got = call_result(&s.response(&json!(2)));
    assert_eq!(got["name"], "bash");
    assert_eq!(got["content"], json!([{"type": "text", "text": "a b"}]));
    assert_eq!(got["structured_content"], json!({"n": 2}));
    assert_eq!(got["is_error"], false);
    // That call no longer waits.
    let (code, _) = s.err(json!({"id": 4, "type": "call_tool_result", "call_id": call_id, "content": []}));
    assert_eq!(code, "unknown_call");
    // Cancelled by the extension: the agent is told.
    s.send(&json!({"id": 5, "type": "tool", "name": "call", "args": {"to": "bash", "args": {}, "cancel": true}}));
    let got = call_result(&s.response(&json!(5)));
    assert!(got["content"][0]["text"].as_str().unwrap().contains("cancelled"), "{got}");
    assert_eq!((&got["name"], &got["is_error"]), (&json!("bash"), &json!(true)), "the answer names the tool: {got}");
    let cancel = s.wait_or_find(|f| f["type"] == "call_tool_cancel");
    assert!(s.frames[cancel]["call_id"].is_string());
    // Made in a call the agent gave no tool_id: no parent_tool_id (the
    // host's own ids are never shown).
    let second: Vec<Value> = s.notes("call_tool");
    assert_eq!(second.len(), 2, "{second:?}");
    assert!(second[1].get("parent_tool_id").is_none(), "{}", second[1]);
    // A set replaced: bash is gone.
    s.ok(json!({"id": 6, "type": "agent_tools", "tools": []}));
    let got = call_result(&s.request(json!({"id": 7, "type": "tool", "name": "call", "args": {"to": "bash"}})));
    assert_eq!(got["content"][0]["text"], "unknown tool \"bash\"");
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
}

#[test]
fn command_names_are_matched_without_case() {
    // docs/protocol.md §6.3: first in load order wins; command_invoked.name
    // carries the spelling registered first.
    let t = TempDir::new("serve-case");
    let a = ext(&t, "a", &["--commands", "Weather"]);
    let b = ext(&t, "b", &["--commands", "weather"]);
    // Within one extension too: its second spelling is shadowed.
    let c = ext(&t, "c", &["--commands", "Tide,tide"]);
    let mut s = Serve::start(&t, &[a, b, c], &[]);
    s.ready_all();
    let r = s.ok(json!({"id": 1, "type": "command", "name": "TIDE"}));
    assert_eq!(r["display"], "c:Tide:");
    let r = s.ok(json!({"id": 1, "type": "command", "name": "WEATHER", "args": "oslo"}));
    assert_eq!(r["display"], "a:Weather:oslo");
    let l = s.ok(json!({"id": 2, "type": "list"}));
    assert_eq!(
        l["commands"],
        json!([{"name": "Weather", "description": "Weather from a", "extension": "a"}, {"name": "Tide", "description": "Tide from c", "extension": "c"}])
    );
    assert_eq!(l["extensions"][1]["shadowed_commands"], json!(["weather"]));
    assert_eq!(l["extensions"][2]["shadowed_commands"], json!(["tide"]));
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
    assert!(read_log(&t, "b").contains("command /weather is shadowed by extension \"a\""), "{}", read_log(&t, "b"));
    assert!(read_log(&t, "c").contains("command /tide is shadowed by /Tide, registered first by the same extension"), "{}", read_log(&t, "c"));
}

#[test]
fn a_callers_calls_are_cancelled_when_it_exits() {
    // docs/protocol.md §6.1: when the caller exits, its calls in flight are
    // cancelled the same way (the target gets tool_cancel).
    let t = TempDir::new("serve-caller-exit");
    let a = ext(&t, "a", &["--call-tool", "--tools", "call,crash"]);
    let b = ext(&t, "b", &["--tools", "hold@b,cancelled"]);
    let mut s = Serve::start(&t, &[a, b], &[]);
    s.ready_all();
    s.send(&json!({"id": "outer", "type": "tool", "name": "call", "args": {"to": "hold@b"}}));
    let r = s.request(json!({"id": "bang", "type": "tool", "name": "crash"}));
    assert_eq!(r["error"]["code"], "extension_exited", "{r}");
    assert_eq!(s.response(&json!("outer"))["error"]["code"], "extension_exited");
    let got = s.ok(json!({"id": "c", "type": "tool", "name": "cancelled"}));
    let cancelled: Vec<Value> = serde_json::from_str(got["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(cancelled.len(), 1, "b was told to stop the call made for a: {got}");
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
    assert!(read_log(&t, "b").contains("cancelled by its caller"), "{}", read_log(&t, "b"));
}

#[test]
fn frames_to_an_extension_are_at_most_four_mib() {
    // docs/protocol.md §3 rule 9: a call whose frame would be larger fails at
    // once with too_large; an event that large is not delivered (logged).
    let t = TempDir::new("serve-4mib");
    let a = ext(&t, "a", &["--tools", "echo", "--events", "big", "--commands", "panel,display"]);
    // A 4 MiB echo through Python (parse, dump, write) took more than the
    // 3 s of FAST on a loaded machine: what this test is about is the size.
    let mut s = Serve::start(&t, &[a], &["--tool-timeout", "60", "--command-timeout", "60"]);
    s.ready_all();
    let big = "b".repeat(4 * 1024 * 1024);
    // Every call frame: a command's and a panel key's too.
    let (code, msg) = s.err(json!({"id": "c", "type": "command", "name": "display", "args": big}));
    assert_eq!(code, "too_large", "{msg}");
    assert!(msg.contains("a command_invoked frame of ") && msg.contains("over the limit of 4194304 bytes"), "{msg}");
    assert_eq!(s.ok(json!({"id": "p", "type": "command", "name": "panel"}))["action"], "open_panel");
    let (code, msg) = s.err(json!({"id": "k", "type": "panel_key", "extension": "a", "panel_id": "p1", "key": "rune", "text": big}));
    assert_eq!(code, "too_large", "{msg}");
    assert!(msg.contains("a panel_key frame of "), "{msg}");
    // Nothing of them reached the extension: it answers at once.
    assert_eq!(s.ok(json!({"id": "d", "type": "command", "name": "display", "args": "small"}))["display"], "display:small");
    let (code, msg) = s.err(json!({"id": 1, "type": "tool", "name": "echo", "args": {"x": big}}));
    assert_eq!(code, "too_large", "{msg}");
    assert!(msg.contains("over the limit of 4194304 bytes"), "{msg}");
    assert_eq!(s.ok(json!({"id": 2, "type": "event", "event": "big", "x": big})), json!({"delivered": 0}));
    // Just under the cap goes through.
    let fits = "f".repeat(4 * 1024 * 1024 - 200);
    let r = s.ok(json!({"id": 3, "type": "tool", "name": "echo", "args": {"x": fits}}));
    assert_eq!(echoed(&r)["args"]["x"].as_str().map(str::len), Some(4 * 1024 * 1024 - 200));
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
    assert!(read_log(&t, "a").contains("event big not delivered"), "{}", read_log(&t, "a"));
}
