//! Request ids are their JSON text (docs/protocol.md §4): echoed digit for
//! digit and escape for escape by `zot serve` and `zot mcp`, compared as
//! text (a `cancel` naming 2^64+1 does not cancel request 2^64), and a
//! request reusing the id of one still in flight is refused, not run.
//! The lines are checked as the bytes zot wrote: a JSON parser on this
//! side would round the ids the way the bug did.

mod common;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use common::{py_ext, TempDir};
use zot_proc::{session_args, strings, Zot, FAST};

/// The stdout line answering the request whose id is the text `id`.
fn answer(z: &mut Zot, id: &str) -> String {
    let needle = format!("\"type\":\"response\",\"id\":{id},");
    z.wait_line(&format!("answering {id}"), |l| l.contains(&needle))
}

#[test]
fn serve_echoes_ids_as_their_text_and_compares_them_as_text() {
    let t = TempDir::new("ids-serve");
    let a = py_ext(t.path(), "a", "a", &["--tools", "sleep"]);
    let args = session_args(t.path(), Some("serve"), &[a], &["--tool-timeout", "120"]);
    let mut z = Zot::spawn(t.path(), &args, &[]);
    z.wait_line("ready", |l| l.contains("\"type\":\"ready\""));

    for id in ["123456789012345678901234567890", "-0.50", "1e400", r#""a\u0041\/""#, "18446744073709551616"] {
        z.send(&format!(r#"{{"id":{id},"type":"ping"}}"#));
        let l = answer(&mut z, id);
        assert!(l.contains(r#""ok":true,"result":{"pong":true}"#), "{l}");
    }
    // 2^64 is in flight; 2^64+1 is another id, never sent.
    let big = "18446744073709551616";
    z.send(&format!(r#"{{"id":{big},"type":"tool","name":"sleep","args":{{"ms":100000}}}}"#));
    z.send(r#"{"id":"c1","type":"cancel","target":18446744073709551617}"#);
    let l = answer(&mut z, r#""c1""#);
    assert!(l.contains(r#""result":{"cancelled":false}"#), "2^64+1 cancelled 2^64: {l}");
    // The same id again while 2^64 is in flight: refused, and not run.
    z.send(&format!(r#"{{"id":{big},"type":"tool","name":"sleep","args":{{"ms":1}}}}"#));
    let l = answer(&mut z, big);
    assert!(l.contains(r#""ok":false,"error":{"code":"bad_request""#) && l.contains("still in flight"), "{l}");
    // `1` and `"1"`, `1` and `1.0`: different ids, each its own.
    z.send(&format!(r#"{{"id":"{big}","type":"ping"}}"#));
    assert!(answer(&mut z, &format!("\"{big}\"")).contains("pong"));
    z.send(&format!(r#"{{"id":{big}.0,"type":"ping"}}"#));
    assert!(answer(&mut z, &format!("{big}.0")).contains("pong"));
    // Its own id cancels it, and its answer carries that id exactly.
    z.send(&format!(r#"{{"id":"c2","type":"cancel","target":{big}}}"#));
    let l = answer(&mut z, r#""c2""#);
    assert!(l.contains(r#""result":{"cancelled":true}"#), "{l}\n{}", z.context());
    let cancelled: Vec<&String> = z.seen.iter().filter(|l| l.contains(&format!("\"id\":{big},"))).collect();
    assert_eq!(cancelled.len(), 3, "ping, the refusal, the cancelled call: {cancelled:?}");
    assert!(cancelled[2].contains(r#""code":"cancelled""#), "{}", cancelled[2]);
    // Answered: the id is free again.
    z.send(&format!(r#"{{"id":{big},"type":"ping"}}"#));
    assert!(answer(&mut z, big).contains("pong"));
    z.send(r#"{"id":"end","type":"shutdown"}"#);
    answer(&mut z, r#""end""#);
    assert_eq!(z.exit_code(zot_proc::LINE_WAIT), 0);
}

#[test]
fn zot_mcp_echoes_json_rpc_ids_as_their_text() {
    let t = TempDir::new("ids-mcp");
    let mut z = zot_proc::spawn_mcp(t.path(), &[], &[]);
    let init = r#"{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}"#;
    let big = "123456789012345678901234567890";
    z.send(&format!(r#"{{"jsonrpc":"2.0","id":{big},"method":"initialize","params":{init}}}"#));
    let needle = format!(r#""id":{big},"result""#);
    z.wait_line("the initialize answer", |l| l.contains(&needle));
    z.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    // In a batch too, and an error answer keeps its id as well.
    z.send(r#"[{"jsonrpc":"2.0","id":-1.250,"method":"ping"},{"jsonrpc":"2.0","id":"x\u0041","method":"no/such"}]"#);
    let l = z.wait_line("the batch's answer", |l| l.starts_with('['));
    assert!(l.contains(r#"{"jsonrpc":"2.0","id":-1.250,"result":{}}"#), "{l}");
    assert!(l.contains(r#""id":"x\u0041","error""#), "{l}");
    z.close_stdin();
    assert_eq!(z.exit_code(zot_proc::LINE_WAIT), 0, "{}", z.context());
}

/// JSON-RPC's `notifications/cancelled` names its request by the same
/// text: 2^64+1 does not cancel request 2^64, which is answered; 2^64
/// itself does, and that request is never answered.
#[test]
fn zot_mcp_compares_a_cancels_request_id_as_text() {
    let t = TempDir::new("ids-mcp-cancel");
    let echo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/rust/echo");
    let mut args = strings(&["mcp", "--no-ext", "--tool-timeout", "120", "--ext"]);
    args.push(echo.display().to_string());
    args.extend(strings(&FAST[..4]));
    let mut z = Zot::spawn(t.path(), &args, &[]);
    let init = r#"{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}"#;
    z.send(&format!(r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{init}}}"#));
    z.wait_line("the initialize answer", |l| l.contains(r#""id":0,"result""#));
    z.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let call = |id: &str, ms: u32| format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"slow","arguments":{{"ms":{ms}}}}}}}"#);
    let cancel = |id: &str| format!(r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id}}}}}"#);
    z.send(&call("18446744073709551616", 1500));
    z.send(&cancel("18446744073709551617"));
    let l = z.wait_line("the call's answer", |l| l.contains(r#""id":18446744073709551616,"result""#));
    assert!(l.contains("slept 1500 ms"), "{l}");
    z.send(&call("18446744073709551616", 100_000));
    z.send(&cancel("18446744073709551616"));
    z.send(r#"{"jsonrpc":"2.0","id":"after","method":"ping"}"#);
    z.wait_line("the ping after the cancel", |l| l.contains(r#""id":"after""#));
    z.close_stdin();
    assert_eq!(z.exit_code(zot_proc::LINE_WAIT), 0, "{}", z.context());
    let answers = z.seen.iter().filter(|l| l.contains(r#""id":18446744073709551616,"#)).count();
    assert_eq!(answers, 1, "the cancelled call was answered\n{}", z.context());
}
