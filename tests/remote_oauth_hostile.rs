//! OAuth for remote MCP servers against a hostile authorization server
//! (docs/protocol.md §8.5 rules 10-12; tests/fixtures/oauth_hostile.py,
//! which approves every login at once, beside a listener on 127.0.0.2 that
//! records what reaches it). The test is the browser. Endpoints are read
//! as the HTTP client reads them, server text reaches no terminal with its
//! control characters, any `expires_in` is taken without a panic, a token
//! the server refuses makes the server `needs_login`, the callback is
//! never left to another process on ::1, and the requests to an
//! authorization server on another origin take that origin's proxy.
#![cfg(feature = "remote")]

mod common;
#[path = "common/browser.rs"]
mod browser;
#[path = "common/hostile_peer.rs"]
mod hostile_peer;
#[path = "common/mcp_serve.rs"]
mod mcp_serve;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use browser::{header, http};
use common::TempDir;
use hostile_peer::Hostile;
use mcp_serve::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use zot_proc::{strings, Zot, LINE_WAIT};

fn peer(t: &TempDir, env: &[(&str, &str)]) -> Option<(Hostile, PathBuf)> {
    match Hostile::start("oauth_hostile.py", &[], &t.path().join("seen.jsonl"), env, 2) {
        Ok(h) => {
            let cfg = write_config(t.path(), "mcp.json", json!({"o": {"url": h.url("/mcp"), "oauth": {}}}));
            Some((h, cfg))
        }
        Err(why) => {
            common::skip(&why);
            None
        }
    }
}

/// `zot mcp login o`, the test as the browser when an address is printed:
/// (exit code, stdout, stderr).
fn login(t: &TempDir, cfg: &Path) -> (i32, String, String) {
    login_env(t, cfg, &[])
}

fn login_env(t: &TempDir, cfg: &Path, env: &[(&str, &str)]) -> (i32, String, String) {
    let args = strings(&["mcp", "login", "o", "--no-ext", "--mcp-config", cfg.to_str().unwrap()]);
    let mut env = env.to_vec();
    env.extend([("DISPLAY", ""), ("WAYLAND_DISPLAY", "")]);
    let mut z = Zot::spawn(t.path(), &args, &env);
    z.close_stdin();
    let mut out = Vec::new();
    while let Some(line) = z.next_line(LINE_WAIT) {
        out.push(line.clone());
        if line.contains("/authorize") {
            let (status, head, _) = http("GET", line.trim());
            assert_eq!(status, 302, "{head}");
            let (status, _, page) = http("GET", header(&head, "location"));
            assert_eq!(status, 200, "{page}");
        }
    }
    let code = z.exit_code(LINE_WAIT);
    (code, out.join("\n"), z.stderr_text())
}

fn no_controls(what: &str, text: &str) {
    assert!(!text.contains(['\x1b', '\x07', '\u{9b}', '\u{9d}']), "a control character reached the terminal in {what}: {text:?}");
}

#[test]
fn an_endpoint_is_judged_by_the_host_the_client_would_connect_to() {
    let t = TempDir::new("oauth-hash");
    // `#@127.0.0.1` makes the text look loopback; the client connects to 127.0.0.2.
    let Some((peer, cfg)) = peer(&t, &[("TOKEN_EP", "@T@#@127.0.0.1/token")]) else { return };
    let (code, out, err) = login(&t, &cfg);
    assert_ne!(code, 0, "{out}{err}");
    let thief = peer.said[0].trim_start_matches("thief ").to_string();
    assert!(err.contains(&format!("OAuth over plain http:// is only for a loopback host, not {thief}")), "{err}");
    assert!(peer.requests(".thief").is_empty(), "{:?}", peer.requests(".thief"));
    assert!(!out.contains("/authorize"), "no login was begun: {out}");
    // Control: a loopback token endpoint logs in.
    drop(peer);
    let t2 = TempDir::new("oauth-hash-control");
    let Some((_peer, cfg)) = self::peer(&t2, &[]) else { return };
    let (code, out, err) = login(&t2, &cfg);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("logged in to o"), "{out}");
}

#[test]
fn server_text_reaches_the_terminal_without_its_control_characters() {
    let t = TempDir::new("oauth-esc");
    let Some((peer, cfg)) = peer(&t, &[("PRM_RES", "<ESC>]0;TITLE<BEL><ESC>[2J<ESC>[31mfake")]) else { return };
    let (code, out, err) = login(&t, &cfg);
    assert_ne!(code, 0);
    assert!(err.contains("the protected resource metadata names another resource"), "{err}");
    no_controls("the error", &format!("{out}{err}"));
    // Control: the server did send them.
    let (_, _, body) = http("GET", &peer.url("/.well-known/oauth-protected-resource/mcp"));
    assert!(body.contains("\\u001b]0;TITLE\\u0007"), "{body}");
    drop(peer);

    let t = TempDir::new("oauth-osc8");
    let ep = "@B@/authorize?x=<ESC>]8;;https://evil.example<BEL>https://accounts.example<ESC>]8;;<BEL>";
    let Some((peer, cfg)) = self::peer(&t, &[("AUTH_EP", ep)]) else { return };
    // An endpoint the HTTP client could not read is refused, its text
    // shown without the controls (nor the query they hid in).
    let (code, out, err) = login(&t, &cfg);
    assert_ne!(code, 0, "{out}{err}");
    assert!(err.contains(&format!("its authorization_endpoint: {}/authorize is not an http:// or https:// url", peer.url(""))), "{err}");
    no_controls("the error", &format!("{out}{err}"));
    assert!(!format!("{out}{err}").contains("evil.example"), "{out}{err}");
    let (_, _, body) = http("GET", &peer.url("/.well-known/oauth-authorization-server"));
    assert!(body.contains("\\u001b]8;;https://evil.example"), "{body}");
}

fn kept(t: &TempDir) -> Value {
    let dir = t.path().join("zot-home/auth");
    let file = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.path()).find(|p| p.extension().is_some_and(|e| e == "json")).unwrap();
    serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap()
}

#[test]
fn an_expires_in_past_the_end_of_time_is_taken_at_login_and_at_a_refresh() {
    let t = TempDir::new("oauth-expires");
    let Some((_peer, cfg)) = peer(&t, &[("EXPIRES", "big")]) else { return };
    let (code, out, err) = login(&t, &cfg);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!err.contains("panicked"), "{err}");
    // Control: the lifetime was the largest number there is, saturated.
    assert_eq!(kept(&t)["expires_at"], json!(u64::MAX));
    let mut s = Serve::start(&t, std::slice::from_ref(&cfg), &["--no-ext"]);
    s.note("ready");
    assert_eq!(text(&s.tool("mcp__o__echo", json!({}))), "ok");
    s.shutdown();

    // A token that ends within the minute is refreshed before the first
    // request; the refresh's lifetime is the largest number.
    let t = TempDir::new("oauth-refresh-expires");
    let Some((peer, cfg)) = self::peer(&t, &[("EXPIRES", "30"), ("REFRESH_EXPIRES", "big")]) else { return };
    let (code, out, err) = login(&t, &cfg);
    assert_eq!(code, 0, "{out}{err}");
    let mut s = Serve::start(&t, &[cfg], &["--no-ext"]);
    s.note("ready");
    let r = s.req("tool", json!({"name": "mcp__o__echo", "args": {}}));
    assert_eq!(r["ok"], true, "the call was answered: {r}\n{}", s.z.context());
    s.shutdown();
    assert!(peer.requests("").iter().any(|r| r["body"].as_str().unwrap_or("").contains("grant_type=refresh_token")));
    assert_eq!(kept(&t)["expires_at"], json!(u64::MAX));
    assert!(!s.z.stderr_text().contains("panicked"), "{}", s.z.stderr_text());
}

/// Logged in, then the server refuses the token on every call.
fn refused_token(tag: &str, env: &[(&str, &str)]) {
    let t = TempDir::new(tag);
    let mut env = env.to_vec();
    env.push(("MODE", "later401"));
    let Some((peer, cfg)) = peer(&t, &env) else { return };
    let (code, out, err) = login(&t, &cfg);
    assert_eq!(code, 0, "{out}{err}");
    let mut s = Serve::start(&t, std::slice::from_ref(&cfg), &["--no-ext"]);
    s.note("ready");
    assert!(tool_names(&s.ok("list", json!({}))).contains(&"mcp__o__echo".to_string()));
    let r = s.req("tool", json!({"name": "mcp__o__echo", "args": {}}));
    assert_eq!((&r["ok"], &r["error"]["code"], &r["error"]["message"]), (&json!(false), &json!("needs_login"), &json!("o needs you to log in: zot mcp login o")), "{r}");
    let e = s.wait_state("o", "needs_login");
    assert_eq!((&e["error"], &e["login"]), (&json!("o needs you to log in: zot mcp login o"), &json!("needs_login")), "{e}");
    s.wait("o's tools withdrawn", |f| f["type"] == "tools_changed" && f["extension"] == "o" && f["reason"] == "exited" && f["tools"] == json!(["mcp__o__echo"]));
    assert!(!tool_names(&s.ok("list", json!({}))).contains(&"mcp__o__echo".to_string()));
    s.shutdown();
    let log = s.log("o");
    assert!(log.contains("the server refused the access token"), "{log}");
    assert!(!log.contains("expired"), "the token had not expired: {log}");
    let (_, out, err) = zot(&t, &["ext", "doctor", "--no-ext", "--mcp-config", cfg.to_str().unwrap()]);
    assert!(out.contains("o needs you to log in: zot mcp login o") && out.contains("auth oauth, not logged in"), "{out}{err}");
    // Control: the token was sent and refused.
    assert!(peer.requests("").iter().any(|r| r["path"] == "/mcp" && r["body"].as_str().unwrap_or("").contains("tools/call") && r["auth"].as_str().unwrap_or("").starts_with("Bearer AT-")));
}

#[test]
fn a_refused_token_with_no_refresh_token_makes_the_server_need_a_login() {
    refused_token("oauth-revoked", &[("NO_RT", "1")]);
}

#[test]
fn a_refreshed_token_refused_too_makes_the_server_need_a_login() {
    refused_token("oauth-revoked-rt", &[]);
}

#[test]
fn a_login_fails_naming_the_port_when_another_process_holds_it_on_either_loopback() {
    let t = TempDir::new("oauth-squat");
    let Some((_peer, _)) = peer(&t, &[]) else { return };
    let squatter = match std::net::TcpListener::bind("[::1]:0") {
        Ok(l) => l,
        Err(e) => return common::skip(&format!("no IPv6 loopback here: {e}")),
    };
    let port = squatter.local_addr().unwrap().port();
    let cfg = write_config(t.path(), "mcp.json", json!({"o": {"url": _peer.url("/mcp"), "oauth": {"callbackPort": port}}}));
    let (code, out, err) = login(&t, &cfg);
    assert_ne!(code, 0, "{out}{err}");
    assert!(err.contains(&format!("cannot listen on [::1]:{port}")), "{err}");
    assert!(!out.contains("/authorize"), "no address was printed: {out}");
    squatter.set_nonblocking(true).unwrap();
    assert!(squatter.accept().is_err(), "the squatter got a connection");
    // Control: the port free again, the same login goes through on it.
    drop(squatter);
    let (code, out, err) = login(&t, &cfg);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains(&format!("localhost%3A{port}%2Fcallback")), "{out}");
}

#[test]
fn the_requests_to_an_authorization_server_on_another_origin_take_its_own_proxy() {
    let t = TempDir::new("oauth-proxy");
    // The server at 127.0.0.1, its authorization server at localhost (the
    // same process, another origin); the login's token ends within the
    // minute, so the session refreshes it first.
    let Some((peer, cfg)) = peer(&t, &[("AS_HOST", "localhost"), ("EXPIRES", "30")]) else { return };
    let through = t.path().join("proxied.txt");
    let proxy = match Hostile::start("http_proxy.py", &[through.to_str().unwrap()], &t.path().join("proxy-unused"), &[], 1) {
        Ok(p) => p,
        Err(why) => return common::skip(&why),
    };
    let at = format!("http://127.0.0.1:{}", proxy.port);
    let vars = |no_proxy: &'static str| -> Vec<(&'static str, String)> {
        let mut env: Vec<(&str, String)> = ["http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy"].iter().map(|k| (*k, String::new())).collect();
        env.extend([("HTTP_PROXY", at.clone()), ("NO_PROXY", no_proxy.to_string())]);
        env
    };
    let proxied = || std::fs::read_to_string(&through).unwrap_or_default();
    let server = format!("127.0.0.1:{}", peer.port);
    let authz = format!("localhost:{}", peer.port);

    let env = vars("localhost");
    let (code, out, err) = login_env(&t, &cfg, &borrow(&env));
    assert_eq!(code, 0, "{out}{err}");
    let mut s = Serve::start_env(&t, std::slice::from_ref(&cfg), &["--no-ext"], &borrow(&env));
    s.note("ready");
    assert_eq!(text(&s.tool("mcp__o__echo", json!({}))), "ok");
    s.shutdown();
    let seen = proxied();
    assert!(!seen.contains(&authz), "the proxy carried requests to the authorization server NO_PROXY names:\n{seen}");
    // Control: the server's own requests went through the proxy, and the
    // authorization server was asked (registration, token, refresh).
    assert!(seen.lines().any(|l| l.contains(&server)), "{seen}");
    let to_authz = |path: &str| peer.requests("").iter().any(|r| r["host"] == authz.as_str() && r["path"] == path);
    assert!(to_authz("/register") && to_authz("/token"), "{:?}", peer.requests(""));
    assert!(peer.requests("").iter().any(|r| r["body"].as_str().unwrap_or("").contains("grant_type=refresh_token")));

    // Control: without NO_PROXY, the same login goes through the proxy.
    let env = vars("");
    let (code, out, err) = login_env(&t, &cfg, &borrow(&env));
    assert_eq!(code, 0, "{out}{err}");
    let seen = proxied();
    assert!(seen.contains(&authz), "{seen}");
}

fn borrow<'a>(v: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    v.iter().map(|(k, v)| (*k, v.as_str())).collect()
}
