//! Remote MCP servers over Streamable HTTP (docs/protocol.md §8.5), against
//! real servers on 127.0.0.1: the Python SDK fixture
//! (tests/fixtures/remote_server.py) and npm's server-everything. Their
//! tools are called through `zot serve` and `zot mcp`; headers from the
//! environment reach the server and nothing else (log, listings, doctor);
//! a server restarted under zot loses its session and is initialized
//! again without a restart. Skipped, saying so, only when the servers
//! cannot be run (.ci/run installs them).
#![cfg(feature = "remote")]

mod common;
#[path = "common/mcp_raw.rs"]
mod mcp_raw;
#[path = "common/mcp_serve.rs"]
mod mcp_serve;
#[path = "common/remote_peer.rs"]
mod remote_peer;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use common::TempDir;
use mcp_serve::*;
use remote_peer::Peer;
use serde_json::{json, Value};
use zot_proc::{strings, Zot, LINE_WAIT};

const PROBE: &str = "probe-7f3a9c-not-for-logs";
const TOKEN: &str = "token-55e1b0-not-for-logs";

fn python_peer(t: &TempDir, mode: &str) -> Option<Peer> {
    match Peer::python(mode, 0, &t.path().join("seen.jsonl")) {
        Ok(p) => Some(p),
        Err(why) => {
            common::skip(&why);
            None
        }
    }
}

/// `zot serve` with the fixture's Streamable HTTP server as `web` (its
/// ready frame read), and the server.
fn serving_web(t: &TempDir) -> Option<(Peer, Serve)> {
    let peer = python_peer(t, "http")?;
    let cfg = write_config(t.path(), "mcp.json", json!({"web": {"url": peer.url("/mcp")}}));
    let mut s = Serve::start(t, &[cfg], &["--no-ext"]);
    s.note("ready");
    Some((peer, s))
}

/// `zot ARGS` with the test's home and environment: (code, stdout, stderr).
fn zot_env(t: &TempDir, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut c = std::process::Command::new(zot_proc::BIN);
    c.args(args).env("ZOT_HOME", t.path().join("zot-home")).current_dir(cwd_of(t)).stdin(std::process::Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn no_secret(what: &str, text: &str) {
    assert!(!text.contains(PROBE) && !text.contains(TOKEN), "a header value is in {what}:\n{text}");
}

#[test]
fn a_remote_servers_tools_answer_in_serve_and_mcp_and_its_headers_stay_secret() {
    let t = TempDir::new("remote-http");
    let Some(peer) = python_peer(&t, "http") else { return };
    let url = peer.url("/mcp");
    let entry = json!({"web": {"url": url, "headers": {"X-Probe": "${REMOTE_PROBE}"}, "bearerTokenEnvVar": "REMOTE_TOKEN"}});
    let cfg = write_config(&t.path().join("zot-home"), "mcp.json", entry);
    let env = [("REMOTE_PROBE", PROBE), ("REMOTE_TOKEN", TOKEN)];
    let mut s = Serve::start_env(&t, &[], &[], &env);
    s.note("ready");
    let r = s.tool("mcp__web__echo", json!({"text": "hi"}));
    assert_eq!((text(&r).as_str(), &r["is_error"]), ("echo: hi", &json!(false)), "{r}");
    // A 400 whose body is the JSON-RPC error of that request is its answer.
    let r = s.tool("mcp__web__refuse", json!({}));
    assert_eq!((text(&r).as_str(), &r["is_error"]), ("refused by the fixture", &json!(true)), "{r}");
    let e = s.ext("web");
    assert_eq!((&e["state"], &e["kind"], &e["transport"], &e["url"], &e["auth"]), (&json!("ready"), &json!("mcp"), &json!("http"), &json!(url), &json!("headers")), "{e}");
    assert_eq!((&e["pid"], &e["restarts"], &e["protocol_version"]), (&Value::Null, &json!(0), &json!("2025-11-25")), "{e}");
    let listing = s.ok("list", json!({})).to_string();
    no_secret("serve's list", &listing);
    s.shutdown();

    // What reached the server: the headers, the session, and a DELETE at the stop.
    let seen = peer.requests();
    let posts: Vec<&Value> = seen.iter().filter(|r| r["method"] == "POST").collect();
    assert!(posts.len() >= 4, "{seen:?}");
    for r in &seen {
        assert_eq!((&r["x-probe"], &r["authorization"]), (&json!(PROBE), &json!(format!("Bearer {TOKEN}"))), "{r}");
    }
    assert!(posts[1..].iter().all(|r| r["session"].is_string() && r["version"] == "2025-11-25"), "{posts:?}");
    assert!(seen.iter().any(|r| r["method"] == "GET"), "no GET stream was opened: {seen:?}");
    let last = seen.last().unwrap();
    assert_eq!((&last["method"], &last["session"]), (&json!("DELETE"), &posts[1]["session"]), "{seen:?}");

    let log = s.log("web");
    assert!(log.contains("session ended (DELETE: HTTP 200)"), "{log}");
    no_secret("the log", &log);

    // zot mcp: the same tool, through the MCP front end.
    let mut z = Zot::spawn(t.path(), &strings(&["mcp", "--mcp-config", cfg.to_str().unwrap()]), &env);
    mcp_raw::initialize(&mut z);
    let r = mcp_raw::rpc(&mut z, json!(1), "tools/call", json!({"name": "mcp__web__echo", "arguments": {"text": "via mcp"}}));
    assert_eq!(r["result"]["content"][0]["text"], "echo: via mcp", "{r}\n{}", z.context());
    z.close_stdin();
    assert_eq!(z.exit_code(LINE_WAIT), 0, "{}", z.context());
    no_secret("zot mcp's output", &z.seen.join("\n"));
    no_secret("zot mcp's stderr", &z.stderr_text());

    // Listings and doctor name the url, the transport and the kind of auth only.
    let (code, out, err) = zot_env(&t, &["ext", "list", "--json"], &env);
    assert_eq!(code, 0, "{err}");
    let rows: Value = serde_json::from_str(&out).unwrap();
    let row = rows.as_array().unwrap().iter().find(|r| r["name"] == "web").cloned().unwrap();
    assert_eq!((&row["transport"], &row["url"], &row["auth"]), (&json!("http"), &json!(url), &json!("headers")), "{row}");
    no_secret("zot ext list --json", &out);
    let (_, out, err) = zot_env(&t, &["ext", "doctor", "--cwd", cwd_of(&t).to_str().unwrap()], &env);
    assert!(out.contains(&format!("  remote {url} (http, auth headers)")), "{out}\n{err}");
    no_secret("zot ext doctor", &format!("{out}{err}"));
    no_secret("the log after all", &std::fs::read_to_string(t.path().join("zot-home/logs/mcp-web.log")).unwrap());
}

#[test]
fn a_server_restarted_under_zot_loses_its_session_and_is_initialized_again() {
    let t = TempDir::new("remote-renew");
    let Some((mut peer, mut s)) = serving_web(&t) else { return };
    assert_eq!(text(&s.tool("mcp__web__echo", json!({"text": "before"}))), "echo: before");
    let port = peer.port;
    peer.kill();
    // While it is gone a call fails alone, naming the network error; the
    // server stays ready.
    let r = s.req("tool", json!({"name": "mcp__web__echo", "args": {"text": "gone"}}));
    assert_eq!((&r["ok"], &r["error"]["code"]), (&json!(false), &json!("extension_exited")), "{r}");
    assert!(r["error"]["message"].as_str().unwrap().contains("network error"), "{r}");
    assert_eq!(s.ext("web")["state"], "ready");
    let peer = Peer::python("http", port, &t.path().join("seen.jsonl")).expect("the server starts again on its port");
    let r = s.tool("mcp__web__echo", json!({"text": "after"}));
    assert_eq!(text(&r), "echo: after", "{r}");
    let log = s.wait_log("web", "the session is gone (HTTP 404): initializing again");
    assert!(log.contains("initialized again (not a restart)"), "{log}");
    let e = s.ext("web");
    assert_eq!((&e["state"], &e["restarts"]), (&json!("ready"), &json!(0)), "{e}");
    // The new server's first request was a fresh initialize.
    let inits = peer.requests().iter().filter(|r| r["body"].as_str().is_some_and(|b| b.contains("\"initialize\""))).count();
    assert!(inits >= 2, "{:?}", peer.requests());
    s.shutdown();
}

#[test]
fn an_unset_variable_fails_the_server_naming_the_header_and_the_variable() {
    let t = TempDir::new("remote-unset");
    let servers = json!({
        "a": {"url": "http://127.0.0.1:9/mcp", "headers": {"X-Key": "${REMOTE_UNSET_7Q}"}},
        "b": {"url": "http://127.0.0.1:9/mcp", "bearerTokenEnvVar": "REMOTE_UNSET_8Q"},
        "c": {"url": "http://${REMOTE_UNSET_9Q}/mcp"},
    });
    let cfg = write_config(t.path(), "mcp.json", servers);
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    for (name, why) in [
        ("a", "header X-Key: variable REMOTE_UNSET_7Q is not set"),
        ("b", "bearerTokenEnvVar: variable REMOTE_UNSET_8Q is not set"),
        ("c", "url: variable REMOTE_UNSET_9Q is not set"),
    ] {
        let e = s.ext(name);
        assert_eq!((&e["state"], &e["error"]), (&json!("failed"), &json!(why)), "{e}");
    }
    s.shutdown();
}

#[test]
fn a_refused_connection_fails_the_load_naming_it() {
    let t = TempDir::new("remote-refused");
    // A port that was free a moment ago: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let cfg = write_config(t.path(), "mcp.json", json!({"gone": {"type": "http", "url": format!("http://127.0.0.1:{port}/mcp")}}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    let e = s.ext("gone");
    assert_eq!(e["state"], "failed", "{e}");
    let why = e["error"].as_str().unwrap();
    assert!(why.starts_with("initialize: network error: ") && why.contains("refused"), "{e}");
    s.shutdown();
}

#[test]
fn server_everything_over_streamable_http() {
    let t = TempDir::new("remote-everything");
    let peer = match Peer::everything("streamableHttp") {
        Ok(p) => p,
        Err(why) => return common::skip(&why),
    };
    let cfg = write_config(t.path(), "mcp.json", json!({"every": {"type": "http", "url": peer.url("/mcp")}}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    let r = s.tool("mcp__every__echo", json!({"message": "hello"}));
    assert!(text(&r).contains("hello"), "{r}");
    let r = s.tool("mcp__every__get-sum", json!({"a": 2, "b": 3}));
    assert!(text(&r).contains('5'), "{r}");
    // Its resources come through the same edge (docs/protocol.md §8.6).
    let l = s.ok("resources", json!({}));
    assert!(l["resources"].as_array().unwrap().iter().any(|r| r["uri"] == "demo://resource/static/document/architecture.md" && r["server"] == "every"), "{l}");
    let r = s.ok("read_resource", json!({"uri": "demo://resource/dynamic/text/4"}));
    assert!(r["contents"][0]["text"].as_str().unwrap_or("").starts_with("Resource 4:"), "{r}");
    s.shutdown();
    let log = s.log("every");
    assert!(log.contains("session ended (DELETE: HTTP"), "{log}");
}

#[test]
fn a_modern_server_over_http_gets_the_method_headers_and_no_session() {
    let t = TempDir::new("remote-modern");
    let Some(peer) = python_peer(&t, "http") else { return };
    let cfg = write_config(t.path(), "mcp.json", json!({"m": {"url": peer.url("/mcp"), "protocol": "2026-07-28"}}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    assert_eq!(text(&s.tool("mcp__m__echo", json!({"text": "modern"}))), "echo: modern");
    // A name that is not ASCII (offered as mcp__m__gr__e): its Mcp-Name is base64, which the server
    // decodes and checks against the body (a missing one is refused).
    let r = s.tool("mcp__m__gr__e", json!({"text": "x"}));
    assert_eq!(text(&r), "grüße: x", "{r}");
    assert_eq!(s.ext("m")["protocol_version"], "2026-07-28");
    s.shutdown();
    let seen = peer.requests();
    assert!(seen.iter().all(|r| r["method"] == "POST" && r["session"].is_null() && r["version"] == "2026-07-28"), "no GET, DELETE or session: {seen:?}");
    let call = seen.iter().find(|r| r["body"].as_str().unwrap().contains("\"tools/call\"")).expect("the call");
    assert_eq!((&call["mcp-method"], &call["mcp-name"]), (&json!("tools/call"), &json!("echo")), "{call}");
    let other = seen.iter().find(|r| r["body"].as_str().unwrap().contains("\"grüße\"")).expect("the call of grüße");
    assert_eq!(other["mcp-name"], json!("=?base64?Z3LDvMOfZQ==?="), "{other}");
    let first = &seen[0];
    assert_eq!((&first["mcp-method"], &first["mcp-name"]), (&json!("server/discover"), &Value::Null), "{first}");
}

/// The ids of zot's threads whose name starts with `prefix` (the kernel
/// keeps 15 bytes of a name).
fn threads(pid: u32, prefix: &str) -> Vec<String> {
    let dir = format!("/proc/{pid}/task");
    let mut out = Vec::new();
    for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
        if comm.trim_end().starts_with(prefix) {
            out.push(e.file_name().to_string_lossy().into_owned());
        }
    }
    out
}

#[test]
fn request_threads_end_when_idle_and_a_stop_leaves_none_behind() {
    let t = TempDir::new("remote-threads");
    let Some((peer, mut s)) = serving_web(&t) else { return };
    for i in 0..4 {
        assert_eq!(text(&s.tool("mcp__web__echo", json!({"text": i.to_string()}))), format!("echo: {i}"));
    }
    let pid = s.z.pid;
    // Idle request threads end; the GET stream's thread stays.
    let idle = common::wait_until(LINE_WAIT, || threads(pid, "zot-ext-web-").len() == 1);
    assert!(idle, "{:?}", threads(pid, "zot-ext-web-"));
    assert_eq!(threads(pid, "zot-ext-web-get").len(), 1);
    let before = threads(pid, "zot-ext-web-");
    assert_eq!(text(&s.tool("mcp__web__echo", json!({"text": "busy"}))), "echo: busy");
    let busy = threads(pid, "zot-ext-web-");
    // A restart stops the connection first: every thread of it is joined.
    s.ok("restart", json!({"name": "web"}));
    s.wait_state("web", "ready");
    let now = threads(pid, "zot-ext-web-");
    let left: Vec<&String> = before.iter().chain(&busy).filter(|t| now.contains(t)).collect();
    assert!(left.is_empty(), "threads of the stopped connection are still there: {left:?} (now {now:?})");
    assert_eq!(text(&s.tool("mcp__web__echo", json!({"text": "again"}))), "echo: again");
    s.shutdown();
    let deletes = peer.requests().iter().filter(|r| r["method"] == "DELETE").count();
    assert_eq!(deletes, 2, "one DELETE per stop");
}

/// Threads and open file descriptors of a process.
fn threads_fds(pid: u32) -> (usize, usize) {
    let count = |d: &str| std::fs::read_dir(format!("/proc/{pid}/{d}")).map(|r| r.count()).unwrap_or(0);
    (count("task"), count("fd"))
}

#[test]
fn many_sequential_calls_leave_no_thread_or_descriptor_behind() {
    let t = TempDir::new("remote-many");
    let Some((_peer, mut s)) = serving_web(&t) else { return };
    let pid = s.z.pid;
    let call = |s: &mut Serve, i: usize| assert_eq!(text(&s.tool("mcp__web__echo", json!({"text": i.to_string()}))), format!("echo: {i}"));
    // How many request threads (at most 8) and kept-alive connections a run
    // of calls uses depends on timing; at rest they are gone: the threads
    // end after 5 s idle and the connections unused as long are dropped by
    // the next request, which one thread and one new connection carry.
    let at_rest = |s: &mut Serve| {
        assert!(common::wait_until(LINE_WAIT, || threads(pid, "zot-ext-web-pos").is_empty()), "{:?}", threads(pid, "zot-ext-web-"));
        call(s, 0);
        threads_fds(pid)
    };
    for i in 0..100 {
        call(&mut s, i);
    }
    let few = at_rest(&mut s);
    for i in 100..1100 {
        call(&mut s, i);
    }
    let many = at_rest(&mut s);
    assert_eq!(few, many, "(threads, fds) of zot serve after 100 calls, then after 1,100");
    s.shutdown();
}

#[test]
fn the_proxy_of_the_urls_scheme_carries_its_requests_unless_no_proxy_names_the_host() {
    let t = TempDir::new("remote-proxy");
    let Some(peer) = python_peer(&t, "http") else { return };
    let through = t.path().join("proxied.txt");
    let proxy = match Peer::proxy(&through) {
        Ok(p) => p,
        Err(why) => return common::skip(&why),
    };
    let cfg = write_config(t.path(), "mcp.json", json!({"web": {"url": peer.url("/mcp")}}));
    let at = format!("http://127.0.0.1:{}", proxy.port);
    let proxied = || std::fs::read_to_string(&through).unwrap_or_default().lines().count();
    // Each case sets every variable, so that the test's own environment does not count.
    let case = |vars: &[(&str, &str)]| {
        let mut env: Vec<(&str, &str)> = ["http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"].iter().map(|k| (*k, "")).collect();
        env.extend_from_slice(vars);
        let mut s = Serve::start_env(&t, std::slice::from_ref(&cfg), &["--no-ext"], &env);
        s.note("ready");
        assert_eq!(text(&s.tool("mcp__web__echo", json!({"text": "p"}))), "echo: p", "{vars:?}");
        s.shutdown();
    };
    case(&[("HTTP_PROXY", at.as_str())]);
    let lines = std::fs::read_to_string(&through).unwrap_or_default();
    let target = format!("127.0.0.1:{}", peer.port);
    assert!(lines.lines().count() >= 1 && lines.lines().all(|l| l.contains(&target)), "{lines}");
    let before = proxied();
    // Controls: NO_PROXY naming the host, and a proxy for the other scheme only.
    case(&[("HTTP_PROXY", at.as_str()), ("NO_PROXY", "localhost,127.0.0.1")]);
    case(&[("HTTPS_PROXY", at.as_str())]);
    assert_eq!(proxied(), before, "{}", std::fs::read_to_string(&through).unwrap_or_default());
    // ALL_PROXY when the scheme's own is not set.
    case(&[("ALL_PROXY", at.as_str())]);
    assert!(proxied() > before);
}

#[test]
fn zot_trust_names_where_a_projects_remote_server_connects_and_what_it_sends() {
    let t = TempDir::new("remote-trust");
    let project = t.path().join("project");
    let entry = json!({"web": {"url": "https://user:pw@mcp.example.test/v1?key=${QKEY}", "headers": {"X-Team": "${TEAM}"}, "bearerTokenEnvVar": "API_TOKEN"},
        "open": {"type": "sse", "url": "http://127.0.0.1:9/sse"}});
    write_config(&project.join(".zot"), "mcp.json", entry);
    let (code, out, err) = zot_env(&t, &["trust", project.to_str().unwrap()], &[("API_TOKEN", TOKEN)]);
    assert_eq!(code, 0, "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    let recorded = lines.iter().position(|l| l.starts_with("trusted ")).expect("trusted line");
    for want in ["  web: remote https://mcp.example.test/v1; sends $QKEY, $TEAM, $API_TOKEN", "  open: remote http://127.0.0.1:9/sse"] {
        let at = lines.iter().position(|l| *l == want).unwrap_or_else(|| panic!("no line {want:?} in:\n{out}"));
        assert!(at < recorded, "{want:?} after the record:\n{out}");
    }
    no_secret("zot trust", &out);
}

#[test]
fn a_get_stream_that_cannot_be_opened_again_is_the_servers_exit() {
    let t = TempDir::new("remote-lost");
    let Some(mut peer) = python_peer(&t, "http") else { return };
    let cfg = write_config(t.path(), "mcp.json", json!({"web": {"url": peer.url("/mcp"), "restart": "never"}}));
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    assert_eq!(text(&s.tool("mcp__web__echo", json!({"text": "x"}))), "echo: x");
    peer.kill();
    // 5 tries, 1 s doubling: about half a minute.
    s.wait("extension_exited", |f| f["type"] == "extension_exited" && f["extension"] == "web");
    s.wait_log("web", "its GET stream could not be opened again in 5 tries; counted as the server's exit");
    s.wait_log("web", "exited (connection closed)");
    let e = s.ext("web");
    assert_ne!(e["state"], "ready", "{e}");
    let r = s.req("tool", json!({"name": "mcp__web__echo", "args": {"text": "y"}}));
    assert_eq!(r["ok"], false, "{r}");
    s.shutdown();
}

#[test]
fn a_call_piped_before_shutdown_gets_its_real_answer() {
    let t = TempDir::new("remote-http-piped");
    let Some((peer, mut s)) = serving_web(&t) else { return };
    s.wait_state("web", "ready");
    // As a script piping its requests and then `shutdown` (§4): the call
    // already sent to the server is answered before the session ends.
    for i in 0..3 {
        s.z.send(&json!({"id": format!("t{i}"), "type": "tool", "name": "mcp__web__echo", "args": {"text": format!("piped {i}")}}).to_string());
    }
    s.z.send(&json!({"id": "bye", "type": "shutdown"}).to_string());
    let rest = s.z.read_to_end(LINE_WAIT);
    assert_eq!(s.z.exit_code(LINE_WAIT), 0, "{}", s.z.context());
    let frames: Vec<Value> = s.z.seen.iter().chain(&rest).filter_map(|l| serde_json::from_str(l).ok()).collect();
    for i in 0..3 {
        let id = format!("t{i}");
        let r = frames.iter().find(|f| f["id"] == id.as_str() && f["type"] == "response").unwrap_or_else(|| panic!("no answer to {id}: {frames:?}"));
        assert_eq!((&r["ok"], text(&r["result"])), (&json!(true), format!("echo: piped {i}")), "{r}");
    }
    // Control: the session was still ended, after the calls.
    let seen = peer.requests();
    let last_call = seen.iter().rposition(|r| r["body"].as_str().unwrap_or("").contains("tools/call"));
    let delete = seen.iter().position(|r| r["method"] == "DELETE");
    assert!(matches!((last_call, delete), (Some(c), Some(d)) if c < d), "{seen:?}");
}
