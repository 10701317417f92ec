//! docs/protocol.md §8.4.2 rule 9 with §7.1: a modern `tools/call` with a
//! `logLevel` made while its extension restarts waits for it, runs on the
//! new process, and that process's notes come back inside the request,
//! as they do for a call made while it runs; so does one made while a
//! `zot/reload` is under way. Raw JSON-RPC to `zot mcp`.

mod common;
#[path = "common/mcp_raw.rs"]
mod mcp_raw;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use common::TempDir;
use mcp_raw::{answer, rpc, send};
use serde_json::{json, Value};
use zot_proc::{spawn_mcp, LINE_WAIT};

/// Its first process exits on a `crash` call; the next one says hello once
/// the `gate` file exists. Each call notes, then answers.
const EXT: &str = r#"
import sys, json, os, time
first = not os.path.exists("once")
open("once", "a").close()
while not first and not os.path.exists("gate"):
    time.sleep(0.02)
def w(o):
    sys.stdout.write(json.dumps(o) + "\n"); sys.stdout.flush()
w({"type": "hello", "name": "r", "version": "1"})
w({"type": "register_tool", "name": "t", "description": "t", "schema": {"type": "object"}})
w({"type": "ready"})
for line in sys.stdin:
    m = json.loads(line)
    if m.get("type") == "tool_call":
        if (m.get("args") or {}).get("crash"):
            os._exit(1)
        w({"type": "notify", "level": "info", "message": "ran in %s" % ("first" if first else "second")})
        w({"type": "tool_result", "id": m["id"], "content": [{"type": "text", "text": "done"}]})
"#;

fn call(id: i64, args: Value, log: bool) -> Value {
    let mut meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
    if log {
        meta["io.modelcontextprotocol/logLevel"] = json!("debug");
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "t", "arguments": args, "_meta": meta}})
}

/// The `notifications/message` texts written before the answer to `id`
/// (the last line read), since line `from`.
fn notes_before_answer(z: &zot_proc::Zot, from: usize) -> Vec<String> {
    z.seen[from..z.seen.len() - 1]
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["method"] == "notifications/message")
        .map(|v| v["params"]["data"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn ext(t: &TempDir) -> std::path::PathBuf {
    let dir = t.path().join("exts").join("r");
    std::fs::create_dir_all(&dir).expect("ext dir");
    std::fs::write(dir.join("ext.py"), EXT).expect("ext.py");
    common::write_manifest(&t.path().join("exts"), "r", json!({"name": "r", "exec": "python3", "args": ["ext.py"], "restart": "always"}))
}

#[test]
fn a_call_parked_for_a_restart_gets_the_new_process_notes() {
    let t = TempDir::new("mcp-notes-restart");
    let dir = ext(&t);
    let mut z = spawn_mcp(t.path(), &[dir.display().to_string()], &[]);

    // The control: a call made while it runs gets its notes.
    let from = z.seen.len();
    let r = rpc(&mut z, json!(1), "tools/call", call(1, json!({}), true)["params"].clone());
    assert_eq!(r["result"]["content"][0]["text"], "done", "{r}");
    assert_eq!(notes_before_answer(&z, from), ["ran in first"], "{}", z.context());

    let r = rpc(&mut z, json!(2), "tools/call", call(2, json!({"crash": true}), false)["params"].clone());
    assert_eq!(r["result"]["isError"], true, "{r}");
    // Made while r restarts (its new process waits at the gate): the call
    // waits. The tools/list after it is answered once the call is parked.
    let from = z.seen.len();
    send(&mut z, call(3, json!({}), true));
    let l = rpc(&mut z, json!(4), "tools/list", json!({"_meta": call(0, json!({}), false)["params"]["_meta"].clone()}));
    assert!(!l.to_string().contains("\"name\":\"t\""), "t is gone while r restarts: {l}");
    std::fs::write(dir.join("gate"), "").expect("open the gate");
    let r = answer(&mut z, &json!(3));
    assert_eq!(r["result"]["content"][0]["text"], "done", "{r}");
    assert_eq!(notes_before_answer(&z, from), ["ran in second"], "{}", z.context());
    z.close_stdin();
    assert_eq!(z.exit_code(LINE_WAIT), 0);
    assert!(!z.stderr_text().contains("zot mcp: r: ran in"), "{}", z.stderr_text());
}

#[test]
fn a_call_made_during_a_reload_gets_the_new_process_notes() {
    let t = TempDir::new("mcp-notes-reload");
    let dir = ext(&t);
    std::fs::write(dir.join("gate"), "").expect("no wait at the gate");
    let mut z = spawn_mcp(t.path(), &[dir.display().to_string()], &[]);
    let meta = call(0, json!({}), false)["params"]["_meta"].clone();
    // Both read at once: the call waits for the reload, then runs on the
    // new process.
    let from = z.seen.len();
    send(&mut z, json!({"jsonrpc": "2.0", "id": 1, "method": "zot/reload", "params": {"_meta": meta}}));
    send(&mut z, call(2, json!({}), true));
    let r = answer(&mut z, &json!(2));
    assert_eq!(r["result"]["content"][0]["text"], "done", "{r}");
    assert_eq!(notes_before_answer(&z, from), ["ran in second"], "{}", z.context());
    z.close_stdin();
    assert_eq!(z.exit_code(LINE_WAIT), 0);
    assert!(!z.stderr_text().contains("zot mcp: r: ran in"), "{}", z.stderr_text());
}
