//! docs/protocol.md §2: a member of an extension's frame that no frame
//! reads is ignored unread: a string there that is not valid UTF-8, or
//! holds a lone surrogate escape (as JavaScript's `JSON.stringify` writes a
//! cut emoji), does not cost the frame. A raw extension writes the frames.

mod common;
#[path = "common/serve_proc.rs"]
mod serve_proc;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use common::TempDir;
use serde_json::json;
use serve_proc::*;

/// Answers `/c N` with reply N of `REPLIES`, `@ID@` its request's id.
const EXT: &str = r#"
import sys, json
out = sys.stdout.buffer
def w(b):
    out.write(b); out.flush()
REPLIES = [
    b'{"type":"command_response","id":"@ID@","action":"display","display":"one","meta":"\\ud800"}\n',
    b'{"type":"command_response","id":"@ID@","action":"display","display":"two","meta":{"raw":"\xff\xfe"}}\n',
    b'{"type":"command_response","id":"@ID@","action":"open_panel","open_panel":{"id":"p","title":"three","x":"\\udc00"}}\n',
    b'{"type":"tool_result","id":"@ID@","content":[{"type":"text","text":"four"}],"meta":"\\ud83d"}\n',
]
w(b'{"type":"hello","name":"raw","version":"1"}\n')
w(b'{"type":"register_command","name":"c","description":"c"}\n')
w(b'{"type":"register_tool","name":"t","description":"t","schema":{"type":"object"}}\n')
w(b'{"type":"notify","level":"info","message":"noted","meta":"\\udfff"}\n')
w(b'{"type":"ready"}\n')
for line in sys.stdin.buffer:
    m = json.loads(line)
    if m.get("type") == "command_invoked":
        w(REPLIES[int(m["args"])].replace(b"@ID@", m["id"].encode()))
    elif m.get("type") == "tool_call":
        w(REPLIES[3].replace(b"@ID@", m["id"].encode()))
"#;

#[test]
fn members_no_frame_reads_are_ignored_however_encoded() {
    let t = TempDir::new("frame-leniency");
    let dir = t.path().join("exts").join("raw");
    std::fs::create_dir_all(&dir).expect("ext dir");
    std::fs::write(dir.join("ext.py"), EXT).expect("ext.py");
    common::write_manifest(&t.path().join("exts"), "raw", json!({"name": "raw", "exec": "python3", "args": ["ext.py"]}));
    let mut s = Serve::start(&t, &[dir], &[]);
    s.ready_all();
    let r = s.ok(json!({"id": 1, "type": "command", "name": "c", "args": "0"}));
    assert_eq!((&r["action"], &r["display"]), (&json!("display"), &json!("one")), "{r}");
    let r = s.ok(json!({"id": 2, "type": "command", "name": "c", "args": "1"}));
    assert_eq!(r["display"], "two", "{r}");
    let r = s.ok(json!({"id": 3, "type": "command", "name": "c", "args": "2"}));
    assert_eq!(r["open_panel"]["title"], "three", "{r}");
    let r = s.ok(json!({"id": 4, "type": "tool", "name": "t"}));
    assert_eq!(r["content"][0]["text"], "four", "{r}");
    let noted = s.wait_or_find(|f| f["type"] == "notify" && f["extension"] == "raw");
    assert_eq!(s.frames[noted]["message"], "noted");
    assert!(!read_log(&t, "raw").contains("skipped"), "{}", read_log(&t, "raw"));
    s.z.close_stdin();
    assert_eq!(s.finish(), 0);
}
