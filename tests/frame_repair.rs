//! docs/protocol.md §2: a line that is not JSON only because of invalid
//! text in its strings (invalid UTF-8, a surrogate escape that is not half
//! of a pair) is repaired once, each such character replaced by U+FFFD,
//! and read, as Go's encoding/json reads it; the extension's or server's
//! log says so. A line broken otherwise stays skipped. The requests `zot
//! serve` and `zot mcp` read from their clients are never repaired.

mod common;
#[path = "common/author.rs"]
mod author;
#[path = "common/mcp_serve.rs"]
mod mcp_serve;
#[path = "common/serve_proc.rs"]
mod serve_proc;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use common::TempDir;
use serde_json::{json, Value};
use serve_proc::{read_log, Serve};

const NOTE: &str = "replaced by U+FFFD";

/// Answers tool `t` with the reply its `mode` names, `@ID@` the call's id.
const EXT: &str = r#"
import sys, json
out = sys.stdout.buffer
def w(b):
    out.write(b); out.flush()
REPLIES = {
    "valid": b'{"type":"tool_result","id":"@ID@","content":[{"type":"text","text":"ok \\ud83d\\ude00"}]}\n',
    "surrogate": b'{"type":"tool_result","id":"@ID@","content":[{"type":"text","text":"cut \\ud83d"}]}\n',
    "bytes": b'{"type":"tool_result","id":"@ID@","content":[{"type":"text","text":"bad \xff\xfe!"}]}\n',
    "broken": b'{"type":"tool_result","id":"@ID@","content":[{"type":"text","text":"cut \\ud83d"}]\n',
}
w(b'{"type":"hello","name":"raw","version":"1"}\n')
w(b'{"type":"register_tool","name":"t","description":"t","schema":{"type":"object"}}\n')
w(b'{"type":"ready"}\n')
for line in sys.stdin.buffer:
    m = json.loads(line)
    if m.get("type") == "tool_call":
        w(REPLIES[m["args"]["mode"]].replace(b"@ID@", m["id"].encode()))
"#;

fn raw_ext(t: &TempDir) -> std::path::PathBuf {
    let dir = t.path().join("exts").join("raw");
    std::fs::create_dir_all(&dir).expect("ext dir");
    std::fs::write(dir.join("ext.py"), EXT).expect("ext.py");
    common::write_manifest(&t.path().join("exts"), "raw", json!({"name": "raw", "exec": "python3", "args": ["ext.py"]}));
    dir
}

#[test]
fn invalid_text_in_an_extensions_frame_is_replaced_and_logged() {
    let t = TempDir::new("frame-repair");
    let mut s = Serve::start(&t, &[raw_ext(&t)], &[]);
    s.ready_all();
    // The control: valid text (a surrogate pair) is read as it is, unlogged.
    let r = s.ok(json!({"id": 1, "type": "tool", "name": "t", "args": {"mode": "valid"}}));
    assert_eq!(r["content"][0]["text"], "ok \u{1F600}", "{r}");
    assert!(!read_log(&t, "raw").contains(NOTE), "{}", read_log(&t, "raw"));
    let r = s.ok(json!({"id": 2, "type": "tool", "name": "t", "args": {"mode": "surrogate"}}));
    assert_eq!(r["content"][0]["text"], "cut \u{FFFD}", "{r}");
    let r = s.ok(json!({"id": 3, "type": "tool", "name": "t", "args": {"mode": "bytes"}}));
    assert_eq!(r["content"][0]["text"], "bad \u{FFFD}\u{FFFD}!", "{r}");
    // The log is written behind the answers: two notes, for the valid
    // reply none.
    let count = || read_log(&t, "raw").lines().filter(|l| l.contains(NOTE)).count();
    common::wait_until(zot_proc::LINE_WAIT, || count() >= 2);
    let log = read_log(&t, "raw");
    let notes: Vec<&str> = log.lines().filter(|l| l.contains(NOTE)).collect();
    assert_eq!(notes.len(), 2, "{log}");
    assert!(notes[0].starts_with("[zot] the text of a tool_result frame for request "), "{log}");
    assert!(notes[0].ends_with(" held 1 invalid character, replaced by U+FFFD"), "{log}");
    assert!(notes[1].ends_with(" held 2 invalid characters, replaced by U+FFFD"), "{log}");
    // Broken apart from its text, the line stays skipped: the call times out.
    let r = s.request(json!({"id": 4, "type": "tool", "name": "t", "args": {"mode": "broken"}}));
    assert_eq!(r["ok"], false, "{r}");
    assert_eq!(r["error"]["code"], "timeout", "{r}");
    assert!(serve_proc::log_contains_text(&t, "raw", "skipped a stdout line: not JSON"), "{}", read_log(&t, "raw"));
    assert_eq!(count(), 2, "{}", read_log(&t, "raw"));
    // A client's request with invalid text is not repaired: it is not
    // JSON, and the tool never sees it.
    s.z.write(b"{\"id\":5,\"type\":\"tool\",\"name\":\"t\",\"args\":{\"mode\":\"valid\",\"x\":\"\\udc00\xff\"}}\n");
    let r = s.response(&Value::Null);
    assert_eq!(r["error"]["code"], "bad_request", "{r}");
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
}

/// A raw JSON-RPC server with one tool whose result's text holds a lone
/// surrogate escape, or not (`mode`).
const SERVER: &str = r#"
import sys, json
def w(b):
    sys.stdout.buffer.write(b + b"\n"); sys.stdout.buffer.flush()
for line in sys.stdin.buffer:
    m = json.loads(line)
    i = json.dumps(m.get("id")).encode()
    meth = m.get("method")
    if meth == "initialize":
        w(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": {"name": "raw", "version": "1"}}}).encode())
    elif meth == "tools/list":
        w(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}}).encode())
    elif meth == "tools/call":
        text = b"ok \\ud83d\\ude00" if m["params"]["arguments"].get("mode") == "valid" else b"cut \\ud83d"
        w(b'{"jsonrpc":"2.0","id":' + i + b',"result":{"content":[{"type":"text","text":"' + text + b'"}]}}')
    elif "id" in m:
        w(json.dumps({"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "no"}}).encode())
"#;

#[test]
fn invalid_text_in_a_hosted_servers_answer_is_replaced_and_logged() {
    let t = TempDir::new("frame-repair-mcp");
    let script = t.path().join("server.py");
    std::fs::write(&script, SERVER).expect("server.py");
    let cfg = mcp_serve::write_config(t.path(), "mcp.json", json!({"raw": {"command": "python3", "args": [script.display().to_string()]}}));
    let mut s = mcp_serve::Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    let r = s.tool("mcp__raw__t", json!({"mode": "valid"}));
    assert_eq!(mcp_serve::text(&r), "ok \u{1F600}", "{r}");
    assert!(!s.log("raw").contains(NOTE), "{}", s.log("raw"));
    let r = s.tool("mcp__raw__t", json!({"mode": "cut"}));
    assert_eq!(mcp_serve::text(&r), "cut \u{FFFD}", "{r}");
    let log = s.wait_log("raw", NOTE);
    assert!(log.contains("[zot] the text of a message for request "), "{log}");
    assert!(log.contains(" held 1 invalid character, replaced by U+FFFD"), "{log}");
    // One note, for the cut text; the log is in order, so none for the valid one.
    assert_eq!(log.lines().filter(|l| l.contains(NOTE)).count(), 1, "{log}");
    s.shutdown();
}

#[test]
fn zot_mcp_refuses_a_clients_request_with_invalid_text() {
    let t = TempDir::new("frame-repair-gw");
    let mut z = zot_proc::spawn_mcp(t.path(), &[], &[]);
    // Invalid text only: still a parse error, never read with U+FFFD.
    z.write(b"{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"method\":\"ping\",\"params\":{\"x\":\"\\ud800\xc0\x80\"}}\n");
    let line = z.wait_line("the parse error", |l| l.contains("-32700"));
    let v: Value = serde_json::from_str(&line).expect("JSON");
    assert_eq!(v["id"], Value::Null, "{v}");
    // Control: the same request with valid text is answered.
    z.write(b"{\"jsonrpc\":\"2.0\",\"id\":\"ok\",\"method\":\"ping\",\"params\":{\"x\":\"\\ud83d\\ude00\"}}\n");
    let line = z.wait_line("the ping's answer", |l| l.contains("\"ok\""));
    let v: Value = serde_json::from_str(&line).expect("JSON");
    assert_eq!(v, json!({"jsonrpc": "2.0", "id": "ok", "result": {}}));
    z.close_stdin();
    assert_eq!(z.exit_code(zot_proc::LINE_WAIT), 0, "{}", z.context());
}

#[test]
fn zot_ext_check_reads_invalid_text_as_the_host_does_and_warns() {
    let t = TempDir::new("frame-repair-check");
    let dir = t.path().join("cut");
    std::fs::create_dir_all(&dir).expect("ext dir");
    let ext = r#"
import sys, json
out = sys.stdout.buffer
def w(b):
    out.write(b); out.flush()
w(b'{"type":"hello","name":"cut","version":"1"}\n')
w(b'{"type":"register_tool","name":"t","description":"t","schema":{"type":"object"}}\n')
w(b'{"type":"ready"}\n')
for line in sys.stdin.buffer:
    m = json.loads(line)
    if m.get("type") == "tool_call":
        w(b'{"type":"tool_result","id":"' + m["id"].encode() + b'","content":[{"type":"text","text":"cut \\ud83d"}]}\n')
    elif m.get("type") == "shutdown":
        w(b'{"type":"shutdown_ack"}\n')
        break
"#;
    std::fs::write(dir.join("ext.py"), ext).expect("ext.py");
    common::write_manifest(t.path(), "cut", json!({"name": "cut", "exec": "python3", "args": ["ext.py"]}));
    let (rc, r) = author::check(&t, &dir, &[]);
    assert_eq!(rc, 0, "{r:#}");
    author::expect(&r, "invalid_text", "warning", "the text of a tool_result frame for request ");
    author::expect(&r, "invalid_text", "warning", " held 1 invalid character, replaced by U+FFFD");
    // The reply counted: no other finding about it.
    assert!(author::findings(&r, "not_a_frame").is_empty() && author::findings(&r, "no_reply").is_empty(), "{r:#}");
}
