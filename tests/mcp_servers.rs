//! MCP servers as extensions (docs/protocol.md §8), end to end through the
//! real binary: the handshake and its failures, tools and prompts with
//! their names, results, progress, live tool lists, cancellation, crashes,
//! restarts and idling (configuration files, management and doctor are in
//! tests/mcp_config.rs; `zot mcp` in front of servers in
//! tests/mcp_gateway.rs). The servers are a raw JSON-RPC
//! fixture (tests/fixtures/mcp_server.py) for precise behaviour, and real
//! ones nobody here wrote (`@modelcontextprotocol/server-filesystem`,
//! `mcp-server-time`) where they are installed.

mod common;
#[path = "common/zot_proc.rs"]
mod zot_proc;
#[path = "common/mcp_serve.rs"]
mod mcp_serve;

use common::{process_alive, TempDir};
use mcp_serve::*;
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use zot_proc::{assert_gone_within, strings, Zot, FAST, LINE_WAIT};

#[test]
fn a_server_is_listed_with_its_kind_version_info_and_tools_across_pages() {
    let t = TempDir::new("mcp-list");
    let cfg = write_config(t.path(), "conf/mcp.json", json!({"fx": fx(&["--page", "3", "--prompts"], json!({}))}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    let l = s.ok("list", json!({}));
    let e = &l["extensions"][0];
    assert_eq!((e["name"].as_str(), e["kind"].as_str(), e["state"].as_str()), (Some("fx"), Some("mcp"), Some("ready")), "{l}");
    assert_eq!(e["protocol_version"], "2025-11-25");
    assert_eq!(e["server_info"], json!({"name": "fixture", "version": "9.9"}));
    assert_eq!(e["source"], "ext");
    let names = tool_names(&l);
    assert_eq!(names.len(), 11, "every page of tools/list is followed: {names:?}");
    let echo = l["tools"].as_array().unwrap().iter().find(|t| t["name"] == "mcp__fx__echo").unwrap();
    assert_eq!(echo["extension"], "fx");
    assert_eq!(echo["title"], "Echo");
    assert_eq!(echo["annotations"], json!({"readOnlyHint": true}));
    assert_eq!(echo["schema"]["properties"]["text"]["type"], "string");
    let st = l["tools"].as_array().unwrap().iter().find(|t| t["name"] == "mcp__fx__structured").unwrap();
    assert_eq!(st["output_schema"]["properties"]["n"]["type"], "number");
    assert_eq!(l["commands"][0]["name"], "mcp__fx__greet");
    let log = s.log("fx");
    assert!(log.contains(r#"got tools/list {"cursor": "9"}"#), "{log}");
    assert!(log.contains(r#""clientInfo": {"name": "zot""#) && log.contains(r#""capabilities": {}"#), "{log}");
    s.shutdown();
}

#[test]
fn without_the_prompts_capability_no_prompts_list_is_sent() {
    let t = TempDir::new("mcp-noprompts");
    let cfg = write_config(t.path(), "mcp.json", json!({"fx": fx(&[], json!({}))}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    let l = s.ok("list", json!({}));
    assert_eq!(l["commands"], json!([]));
    s.shutdown();
    let log = s.log("fx");
    assert!(log.contains("got tools/list") && !log.contains("prompts/list"), "{log}");
}

#[test]
fn results_map_content_structured_content_and_errors() {
    let t = TempDir::new("mcp-results");
    let cfg = write_config(t.path(), "mcp.json", json!({"fx": fx(&["--junk"], json!({}))}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    let r = s.tool("mcp__fx__echo", json!({"text": "hi"}));
    assert_eq!((text(&r), r["is_error"].clone(), r["extension"].clone()), (r#"{"text": "hi"}"#.to_string(), json!(false), json!("fx")));
    let r = s.tool("mcp__fx__structured", json!({}));
    assert_eq!(r["structured_content"], json!({"n": 7}));
    let r = s.tool("mcp__fx__fail", json!({}));
    assert_eq!((text(&r), r["is_error"].clone()), ("it went wrong".to_string(), json!(true)));
    let r = s.tool("mcp__fx__bad", json!({}));
    assert_eq!(r["is_error"], true);
    assert!(text(&r).contains("malformed"), "{r}");
    let (code, _) = {
        let r = s.req("tool", json!({"name": "mcp__fx__nope"}));
        (r["error"]["code"].clone(), r)
    };
    assert_eq!(code, "unknown_tool");
    s.shutdown();
    let log = s.log("fx");
    assert!(log.contains("skipped a stdout line (not JSON): this is not JSON"), "junk is logged: {log}");
    assert!(log.contains("more junk"), "{log}");
}

#[test]
fn prompts_are_commands_with_arguments_in_declared_order() {
    let t = TempDir::new("mcp-prompts");
    let cfg = write_config(t.path(), "mcp.json", json!({"fx": fx(&["--prompts"], json!({}))}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    let r = s.ok("command", json!({"name": "mcp__fx__greet", "args": "bob very  loudly"}));
    assert_eq!((r["action"].as_str(), r["prompt"].as_str()), (Some("prompt"), Some("greet bob very  loudly")), "{r}");
    let r = s.ok("command", json!({"name": "mcp__fx__greet", "args": ""}));
    assert_eq!(r["error"], "missing required argument \"who\"", "{r}");
    s.shutdown();
}

#[test]
fn progress_is_passed_on_with_the_request_id() {
    let t = TempDir::new("mcp-progress");
    let cfg = write_config(t.path(), "mcp.json", json!({"fx": fx(&[], json!({}))}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    s.z.send(r#"{"id":"p1","type":"tool","name":"mcp__fx__progress","tool_id":"T9"}"#);
    let resp = s.wait("the answer", |f| f["type"] == "response" && f["id"] == "p1");
    assert_eq!(text(&resp["result"]), "done");
    let notes: Vec<Value> = s.frames.iter().filter(|f| f["type"] == "tool_progress").cloned().collect();
    assert_eq!(notes.len(), 3, "{:?}", s.frames);
    // Exactly the fields docs/protocol.md §4 lists for it.
    assert_eq!(notes[0], json!({"type": "tool_progress", "id": "p1", "tool_id": "T9", "progress": 1, "total": 3, "message": "step 1"}));
    assert_eq!((notes[2]["progress"].clone(), notes[2]["total"].clone(), notes[2]["message"].clone()), (json!(3), json!(3), json!("step 3")));
    let log = s.log("fx");
    assert!(log.contains("progressToken"), "{log}");
    s.shutdown();
}

#[test]
fn list_changed_adds_and_removes_tools_live() {
    let t = TempDir::new("mcp-listchanged");
    let cfg = write_config(t.path(), "mcp.json", json!({"fx": fx(&["--page", "4"], json!({}))}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    s.tool("mcp__fx__add", json!({"name": "newt"}));
    let n = s.wait("tools_changed", |f| f["type"] == "tools_changed" && f["reason"] == "listed");
    assert_eq!(n["tools"], json!(["mcp__fx__newt"]));
    assert_eq!(n["extension"], "fx");
    assert_eq!(text(&s.tool("mcp__fx__newt", json!({}))), "ran newt");
    s.tool("mcp__fx__remove", json!({"name": "echo"}));
    let n = s.wait("a second tools_changed", |f| f["type"] == "tools_changed" && f["tools"] == json!(["mcp__fx__echo"]));
    assert_eq!(n["reason"], "listed");
    let l = s.ok("list", json!({}));
    assert!(!tool_names(&l).contains(&"mcp__fx__echo".to_string()) && tool_names(&l).contains(&"mcp__fx__newt".to_string()));
    let r = s.req("tool", json!({"name": "mcp__fx__echo"}));
    assert_eq!(r["error"]["code"], "unknown_tool");
    s.shutdown();
}

#[test]
fn prompts_list_changed_updates_the_commands_live() {
    // docs/protocol.md §8.3: prompts are commands; a server's new prompt list
    // is in force at once, as its tools' is (no event names commands).
    let t = TempDir::new("mcp-prompts-changed");
    let cfg = write_config(t.path(), "mcp.json", json!({"fx": fx(&["--prompts"], json!({}))}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    let commands = |s: &mut Serve| -> Vec<String> {
        let l = s.ok("list", json!({}));
        l["commands"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(commands(&mut s), ["mcp__fx__greet"]);
    s.tool("mcp__fx__add", json!({"prompt": "wave"}));
    s.wait_log("fx", "prompts listed again; changed commands: mcp__fx__wave");
    let r = s.ok("command", json!({"name": "mcp__fx__wave"}));
    assert_eq!((r["action"].as_str(), r["prompt"].as_str()), (Some("prompt"), Some("prompt wave")), "{r}");
    assert_eq!(s.ext("fx")["commands"], json!(["mcp__fx__greet", "mcp__fx__wave"]));
    s.tool("mcp__fx__remove", json!({"prompt": "greet"}));
    s.wait_log("fx", "prompts listed again; changed commands: mcp__fx__greet");
    assert_eq!(commands(&mut s), ["mcp__fx__wave"]);
    let r = s.req("command", json!({"name": "mcp__fx__greet", "args": "ann"}));
    assert_eq!(r["error"]["code"], "unknown_command", "{r}");
    s.shutdown();
}

#[test]
fn a_call_past_its_request_timeout_is_cancelled_at_the_server() {
    let t = TempDir::new("mcp-cancel");
    let cfg = write_config(t.path(), "mcp.json", json!({"fx": fx(&[], json!({"requestTimeout": 0.5}))}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    let r = s.req("tool", json!({"name": "mcp__fx__slow", "args": {"secs": 30}}));
    assert_eq!(r["error"]["code"], "timeout", "{r}");
    // The message names the server's deadline, not the host's tool timeout.
    assert!(r["error"]["message"].as_str().unwrap_or("").ends_with("within 500ms"), "{r}");
    let log = s.wait_log("fx", "fixture: cancelled");
    assert!(log.contains("notifications/cancelled"), "{log}");
    // Still serving.
    assert_eq!(text(&s.tool("mcp__fx__echo", json!({}))), "{}");
    s.shutdown();
}

#[test]
fn a_crash_mid_call_fails_it_at_once_and_the_server_restarts() {
    let t = TempDir::new("mcp-crash");
    let cfg = write_config(t.path(), "mcp.json", json!({"fx": fx(&[], json!({}))}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext", "--tool-timeout", "60"]);
    s.note("ready");
    let pid = s.ext("fx")["pid"].as_u64().unwrap();
    let started = Instant::now();
    let r = s.req("tool", json!({"name": "mcp__fx__crash"}));
    assert_eq!(r["error"]["code"], "extension_exited", "{r}");
    assert!(started.elapsed() < Duration::from_secs(30), "failed at the exit, not the 60 s deadline");
    s.note("extension_restarting");
    let e = s.wait_state("fx", "ready");
    assert_ne!(e["pid"].as_u64().unwrap(), pid);
    assert_eq!(e["restarts"], 1);
    assert_eq!(text(&s.tool("mcp__fx__echo", json!({"a": 1}))), r#"{"a": 1}"#);
    s.shutdown();
}

#[test]
fn a_crash_looped_server_is_listed_as_a_crash_looped_extension_is() {
    // docs/protocol.md §7.1 and §8.2: a server is supervised as an extension
    // is; crash-looped, it gives its names up for good (none in force, a
    // call is unknown_tool), and its own entry reads as an extension's.
    let t = TempDir::new("mcp-crashloop");
    let cfg = write_config(t.path(), "mcp.json", json!({"fx": fx(&["--exit-after-list", "3"], json!({}))}));
    let ext = common::py_ext(t.path(), "exts/a", "a", &["--tools", "echo", "--exit-after-ready", "4"]);
    let mut s = Serve::start(&t, &[cfg], &["--no-ext", "--ext", ext.to_str().unwrap(), "--restart", "always"]);
    for name in ["fx", "a"] {
        let end = Instant::now() + Duration::from_secs(90);
        while !s.frames.iter().any(|f| f["type"] == "extension_crash_loop" && f["extension"] == name) {
            assert!(s.read(end.saturating_duration_since(Instant::now())).is_some(), "{name} never crash-looped\n{}", s.z.context());
        }
    }
    let l = s.ok("list", json!({}));
    assert!(tool_names(&l).is_empty(), "no name is in force for either: {l}");
    let (fx, a) = (s.ext("fx"), s.ext("a"));
    for e in [&fx, &a] {
        assert_eq!((e["state"].as_str(), e["restarts"].as_u64(), e["pid"].as_u64()), (Some("crash_loop"), Some(5), None), "{e}");
    }
    assert_eq!(a["tools"], json!(["echo"]), "an extension's entry names what it last registered: {a}");
    assert!(fx["tools"].as_array().unwrap().contains(&json!("mcp__fx__echo")), "and so does a server's: {fx}");
    let gone = s.wait("fx's tools gone", |f| f["type"] == "tools_changed" && f["extension"] == "fx" && f["reason"] == "exited");
    assert!(gone["tools"].as_array().unwrap().contains(&json!("mcp__fx__echo")), "{gone}");
    let r = s.req("tool", json!({"name": "mcp__fx__echo"}));
    assert_eq!(r["error"]["code"], "unknown_tool", "{r}");
    s.shutdown();
}

#[test]
fn handshake_failures_fail_that_server_only() {
    let t = TempDir::new("mcp-handshake");
    let cfg = write_config(
        t.path(),
        "mcp.json",
        json!({
            "mute": fx(&["--never-init"], json!({"connectTimeout": 0.5, "restart": "never"})),
            "old": fx(&["--version", "1999-01-01"], json!({"restart": "never"})),
            "web": {"type": "ws", "url": "https://example.com/mcp"},
            "sse": {"transport": "sse", "command": "x"},
            "ok": fx(&[], json!({})),
            "gone": {"command": "python3", "args": ["-c", "import sys; sys.exit(4)"], "restart": "never"},
        }),
    );
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    // A server is named by what it failed to do: answer initialize.
    // Under auto (docs/protocol.md §8.4.3 rule 12b) server/discover follows.
    let gone = s.wait_state("gone", "failed");
    let want = "initialize: exited before answering initialize (exit code 4); server/discover: exited before answering server/discover (exit code 4)";
    assert!(gone["error"].as_str().unwrap_or("").starts_with(want), "{gone}");
    let mute = s.wait_state("mute", "failed");
    // What the server wrote on stderr may follow, as for any failed start.
    assert!(mute["error"].as_str().unwrap_or("").starts_with("no answer to initialize within 500ms (connectTimeout)"), "{mute}");
    let old = s.wait_state("old", "failed");
    assert!(old["error"].as_str().unwrap().contains("\"1999-01-01\""), "the version is named: {old}");
    assert_eq!(s.ext("web")["error"], "type \"ws\" is not supported (stdio, http, streamable-http, sse)");
    assert_eq!(s.ext("sse")["error"], "field `url` is missing: the server's address");
    assert_eq!(s.ext("sse")["state"], "failed");
    assert_eq!(s.ext("ok")["state"], "ready");
    s.shutdown();
}

#[test]
fn requests_from_the_server_are_answered_or_refused_at_once() {
    let t = TempDir::new("mcp-requests");
    let roots = t.path().join("r1");
    std::fs::create_dir_all(&roots).unwrap();
    let cfg = write_config(
        t.path(),
        "mcp.json",
        json!({"fx": fx(&[], json!({})), "rooted": fx(&[], json!({"roots": ["r1"]})), "proj": fx(&[], json!({"roots": true}))}),
    );
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    let r = s.tool("mcp__fx__ask", json!({"method": "sampling/createMessage"}));
    let a: Value = serde_json::from_str(&text(&r)).unwrap();
    assert_eq!(a["error"], json!({"code": -32601, "message": "not supported by this host"}));
    let a: Value = serde_json::from_str(&text(&s.tool("mcp__fx__ask", json!({"method": "elicitation/create"})))).unwrap();
    assert_eq!(a["error"]["code"], -32601);
    let a: Value = serde_json::from_str(&text(&s.tool("mcp__fx__ask", json!({"method": "roots/list"})))).unwrap();
    assert_eq!(a["error"]["code"], -32601, "no roots unless the entry asks: {a}");
    let a: Value = serde_json::from_str(&text(&s.tool("mcp__fx__ask", json!({"method": "ping"})))).unwrap();
    assert_eq!(a["result"], json!({}));
    let a: Value = serde_json::from_str(&text(&s.tool("mcp__rooted__ask", json!({"method": "roots/list"})))).unwrap();
    assert_eq!(a["result"]["roots"], json!([{"uri": format!("file://{}", roots.display())}]));
    let a: Value = serde_json::from_str(&text(&s.tool("mcp__proj__ask", json!({"method": "roots/list"})))).unwrap();
    assert_eq!(a["result"]["roots"], json!([{"uri": format!("file://{}", cwd_of(&t).display())}]));
    s.shutdown();
    assert!(s.log("rooted").contains(r#""capabilities": {"roots": {"listChanged": false}}"#), "{}", s.log("rooted"));
    assert!(s.log("fx").contains(r#""capabilities": {}"#));
}

#[test]
fn enabled_and_disabled_tools_filter_what_is_offered() {
    let t = TempDir::new("mcp-filter");
    let cfg = write_config(
        t.path(),
        "mcp.json",
        json!({
            "only": fx(&[], json!({"enabledTools": ["echo", "env"], "alwaysAllow": ["echo"]})),
            "but": fx(&[], json!({"disabledTools": ["crash"]})),
            "off": fx(&[], json!({"disabled": true})),
        }),
    );
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    let only = s.ext("only");
    assert_eq!(only["tools"], json!(["mcp__only__echo", "mcp__only__env"]));
    let but = s.ext("but");
    let tools: Vec<&str> = but["tools"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert!(tools.contains(&"mcp__but__echo") && !tools.contains(&"mcp__but__crash"), "{tools:?}");
    assert_eq!(s.ext("off"), Value::Null, "a disabled server is not started");
    s.shutdown();
    let log = s.log("only");
    assert_eq!(log.matches("ignored unknown fields of its entry").count(), 1, "{log}");
    assert!(log.contains(r#"mcp.json: "alwaysAllow""#), "{log}");
}

#[test]
fn an_idle_server_is_stopped_keeps_its_tools_and_wakes_on_the_next_call() {
    let t = TempDir::new("mcp-idle");
    // Long enough that the listing right after the call that woke it still
    // finds it awake, on a loaded machine too.
    let cfg = write_config(t.path(), "mcp.json", json!({"fx": fx(&["--prompts"], json!({"idleTimeout": 3, "autoApprove": []}))}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    let pid = s.ext("fx")["pid"].as_u64().unwrap() as u32;
    let idle = s.wait_state("fx", "idle");
    assert_eq!(idle["pid"], Value::Null);
    assert_gone_within(&[pid], LINE_WAIT, &s.z.context());
    let l = s.ok("list", json!({}));
    assert!(tool_names(&l).contains(&"mcp__fx__echo".to_string()), "its tools stay offered while idle: {l}");
    assert_eq!(text(&s.tool("mcp__fx__echo", json!({"w": 1}))), r#"{"w": 1}"#, "the call wakes it");
    // Announced before the answer, had the listing changed.
    assert!(!s.frames.iter().any(|f| f["type"] == "tools_changed"), "the same tools listed again change nothing: {:?}", s.frames);
    let e = s.ext("fx");
    assert_eq!(e["state"], "ready");
    assert_ne!(e["pid"].as_u64().unwrap() as u32, pid);
    assert_eq!(e["restarts"], 0, "a wake is not a restart");
    s.wait_state("fx", "idle");
    let r = s.ok("command", json!({"name": "mcp__fx__greet", "args": "ann"}));
    assert_eq!(r["prompt"], "greet ann -", "a command wakes it too");
    s.shutdown();
    let log = s.log("fx");
    assert!(log.contains("(idleTimeout): stopping") && log.contains("called while idle"), "{log}");
    assert_eq!(log.matches("ignored unknown fields of its entry").count(), 1, "logged once, not at each wake: {log}");
}

#[test]
fn a_woken_server_offers_what_it_lists_then() {
    // docs/protocol.md §8.1 idleTimeout: a call starts the server again as a
    // restart would; what it lists then replaces what it offered asleep,
    // the difference announced as for a list_changed (§8.3).
    let t = TempDir::new("mcp-idle-relist");
    let change = t.path().join("change.json");
    let flags = ["--tools-file", change.to_str().unwrap()];
    let cfg = write_config(t.path(), "mcp.json", json!({"fx": fx(&flags, json!({"idleTimeout": 0.5}))}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    s.wait_state("fx", "idle");
    let gate = t.path().join("gate");
    std::fs::write(&change, json!({"drop": ["slow"], "add": ["newt"], "wait_for": gate}).to_string()).unwrap();
    s.z.send(r#"{"id":"wake","type":"tool","name":"mcp__fx__echo","args":{"w":1}}"#);
    // While it starts, what it offered asleep stays offered.
    let l = s.ok("list", json!({}));
    let e = l["extensions"].as_array().unwrap().iter().find(|e| e["name"] == "fx").unwrap();
    assert_eq!(e["state"], "starting", "{e}");
    assert!(tool_names(&l).contains(&"mcp__fx__slow".to_string()) && e["tools"].as_array().unwrap().contains(&json!("mcp__fx__slow")), "{l}");
    std::fs::write(&gate, "").unwrap();
    let r = s.wait("the call that woke it", |f| f["type"] == "response" && f["id"] == "wake");
    assert_eq!(text(&r["result"]), r#"{"w": 1}"#, "{r}");
    let answered = s.frames.iter().position(|f| f["id"] == "wake").unwrap();
    let n = s.note("tools_changed");
    assert_eq!((n["reason"].clone(), n["tools"].clone()), (json!("listed"), json!(["mcp__fx__newt", "mcp__fx__slow"])), "{n}");
    let at = s.frames.iter().position(|f| f["type"] == "tools_changed");
    assert!(at < Some(answered), "announced before the answer to the call that woke it");
    let l = s.ok("list", json!({}));
    assert!(tool_names(&l).contains(&"mcp__fx__newt".to_string()) && !tool_names(&l).contains(&"mcp__fx__slow".to_string()), "{l}");
    let r = s.req("tool", json!({"name": "mcp__fx__slow"}));
    assert_eq!(r["error"]["code"], "unknown_tool", "a tool it no longer lists is gone: {r}");
    assert_eq!(text(&s.tool("mcp__fx__newt", json!({}))), "ran newt");
    s.shutdown();
    assert!(s.log("fx").contains("tools listed on waking; changed: mcp__fx__newt, mcp__fx__slow"), "{}", s.log("fx"));
}

#[test]
fn restarting_an_idle_server_is_announced_as_a_restart() {
    // docs/protocol.md §4 `restart` of a server that sleeps: its tools were
    // offered all along, so its return is a restart, not a new listing.
    let t = TempDir::new("mcp-idle-restart");
    let cfg = write_config(t.path(), "mcp.json", json!({"fx": fx(&[], json!({"idleTimeout": 0.5}))}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    s.wait_state("fx", "idle");
    let r = s.ok("restart", json!({"name": "fx"}));
    assert_eq!(r["extension"], "fx", "{r}");
    let n = s.note("tools_changed");
    assert_eq!(n["reason"], "restarted", "{n}");
    assert!(n["tools"].as_array().is_some_and(|a| a.contains(&json!("mcp__fx__echo"))), "{n}");
    assert_eq!(text(&s.tool("mcp__fx__echo", json!({"w": 2}))), r#"{"w": 2}"#);
    s.shutdown();
}

#[test]
fn tool_names_are_sanitised_bounded_and_duplicates_shadowed() {
    let t = TempDir::new("mcp-dupes");
    let cfg = write_config(t.path(), "mcp.json", json!({"fx": fx(&["--dupes"], json!({}))}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    let e = s.ext("fx");
    let tools: Vec<String> = e["tools"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect();
    assert_eq!(tools.iter().filter(|n| *n == "mcp__fx__a_b").count(), 1, "{tools:?}");
    let long = tools.iter().find(|n| n.starts_with("mcp__fx__xxx")).unwrap();
    assert_eq!(long.len(), 64);
    assert!(long[55..].starts_with('_') && long[56..].chars().all(|c| c.is_ascii_hexdigit()), "{long}");
    // The first in the server's order wins (tools/list order: a.b, then a_b).
    assert_eq!(text(&s.tool("mcp__fx__a_b", json!({}))), "ran a.b");
    assert_eq!(text(&s.tool(long, json!({}))), format!("ran {}", "x".repeat(70)));
    s.shutdown();
    assert!(s.log("fx").contains(r#"tool "a_b" is shadowed by tool "a.b" of the same server"#), "{}", s.log("fx"));
}

#[test]
fn a_server_that_stays_up_after_stdin_closes_is_terminated() {
    let t = TempDir::new("mcp-stop");
    let cfg = write_config(t.path(), "mcp.json", json!({"fx": fx(&["--ignore-eof"], json!({}))}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    let pid = s.ext("fx")["pid"].as_u64().unwrap() as u32;
    s.shutdown();
    assert_gone_within(&[pid], LINE_WAIT, &s.z.context());
    let log = s.log("fx");
    assert!(log.contains("stdin closed; staying up") && log.contains("sending SIGTERM"), "{log}");
}

#[test]
fn shutdown_leaves_no_server_process() {
    let t = TempDir::new("mcp-shutdown");
    let cfg = write_config(t.path(), "mcp.json", json!({"a": fx(&[], json!({})), "b": fx(&[], json!({}))}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    let pids: Vec<u32> = ["a", "b"].iter().map(|n| s.ext(n)["pid"].as_u64().unwrap() as u32).collect();
    assert!(pids.iter().all(|&p| process_alive(p)));
    s.shutdown();
    assert_gone_within(&pids, LINE_WAIT, &s.z.context());
}

#[test]
fn the_console_lists_servers_and_shows_progress_as_status_lines() {
    let t = TempDir::new("mcp-console");
    let cfg = write_config(t.path(), "mcp.json", json!({"fx": fx(&[], json!({}))}));
    let mut args = strings(&["--no-ext", "--cwd"]);
    args.push(cwd_of(&t).display().to_string());
    args.extend(strings(&FAST));
    args.extend(["--mcp-config".to_string(), cfg.display().to_string()]);
    let mut z = Zot::spawn(t.path(), &args, &[]);
    z.send("/extensions");
    z.send("/tools");
    z.send("/tool mcp__fx__progress {}");
    z.close_stdin();
    let out = z.read_to_end(LINE_WAIT * 2).join("\n");
    assert_eq!(z.exit_code(LINE_WAIT), 0, "{}", z.context());
    assert!(out.lines().any(|l| l.contains("fx") && l.contains("ready") && l.contains("(MCP server 2025-11-25)")), "{out}");
    assert!(out.contains("mcp__fx__echo") && out.contains("echoes text [fx]"), "{out}");
    assert!(out.contains("[fx] progress 1/3: step 1") && out.contains("[fx] progress 3/3: step 3"), "{out}");
    assert!(out.contains("[fx] done"), "{out}");
}

#[test]
fn the_console_waits_for_a_server_still_starting_and_says_when_it_is_ready() {
    // docs/protocol.md §8.2: the load ends (ready grace) while the server waits
    // at a gate the test opens once the console has listed it starting.
    let t = TempDir::new("mcp-console-starting");
    let gate = t.path().join("gate");
    let cfg = write_config(t.path(), "mcp.json", json!({"slowfx": fx(&["--init-gate", gate.to_str().unwrap()], json!({}))}));
    let mut args = strings(&["--no-ext", "--cwd"]);
    args.push(cwd_of(&t).display().to_string());
    args.extend(strings(&FAST));
    args.extend(strings(&["--ready-grace", "0.2", "--tool-timeout", "60", "--mcp-config"]));
    args.push(cfg.display().to_string());
    let mut z = Zot::spawn(t.path(), &args, &[]);
    z.send("/extensions");
    z.send(r#"/tool mcp__slowfx__echo {"text":"hi"}"#);
    z.send("/tool mcp__slowfx__nothing {}");
    z.close_stdin();
    z.wait_line("slowfx listed starting", |l| l.contains("slowfx") && l.contains("starting"));
    std::fs::write(&gate, "").unwrap();
    let out = z.read_to_end(LINE_WAIT * 2).join("\n");
    assert_eq!(z.exit_code(LINE_WAIT), 0, "{}", z.context());
    let lines: Vec<&str> = out.lines().collect();
    let ready = lines.iter().position(|l| *l == "slowfx ready: 11 tools").unwrap_or_else(|| panic!("{out}"));
    let answer = lines.iter().position(|l| *l == r#"[slowfx] {"text": "hi"}"#).unwrap_or_else(|| panic!("{out}"));
    assert!(ready < answer, "{out}");
    assert!(lines.contains(&r#"error: unknown tool "mcp__slowfx__nothing""#), "{out}");
}
