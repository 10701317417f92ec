//! OAuth 2.1 for remote MCP servers (docs/protocol.md §8.5 rules 10-12),
//! against a real server on 127.0.0.1 (tests/fixtures/oauth_server.py:
//! the Python SDK's Streamable HTTP server behind a bearer check, beside a
//! small authorization server with dynamic registration). The test is the
//! browser: it follows the address `zot mcp login` prints, approves, and
//! follows the redirect to zot's loopback listener. Skipped, saying so,
//! only when the SDK cannot be run (.ci/run installs it).
#![cfg(feature = "remote")]

mod common;
#[path = "common/browser.rs"]
mod browser;
#[path = "common/mcp_raw.rs"]
mod mcp_raw;
#[path = "common/mcp_serve.rs"]
mod mcp_serve;
#[path = "common/remote_peer.rs"]
mod remote_peer;
#[path = "common/term.rs"]
mod term;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use browser::{header, http};
use common::TempDir;
use mcp_serve::*;
use remote_peer::Peer;
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use zot_proc::{strings, Zot, LINE_WAIT};

fn peer(t: &TempDir, ttl: u64) -> Option<Peer> {
    match Peer::oauth(&t.path().join("seen.jsonl"), ttl) {
        Ok(p) => Some(p),
        Err(why) => {
            common::skip(&why);
            None
        }
    }
}

/// `zot mcp login web` with the test as the browser; zot's stdout.
fn login(t: &TempDir, cfg: &Path, base: &str) -> Vec<String> {
    login_with(t, &["--no-ext", "--mcp-config", cfg.to_str().unwrap()], base)
}

fn login_with(t: &TempDir, opts: &[&str], base: &str) -> Vec<String> {
    let mut args = strings(&["mcp", "login", "web"]);
    args.extend(strings(opts));
    let mut z = Zot::spawn(t.path(), &args, &[("DISPLAY", ""), ("WAYLAND_DISPLAY", "")]);
    let line = z.wait_line("the authorization address", |l| l.contains("/authorize?"));
    let address = line.trim().to_string();
    assert!(address.starts_with(&format!("{base}/authorize?")), "{address}");
    for part in ["code_challenge_method=S256", "response_type=code", "state=", "resource=", "redirect_uri=http%3A%2F%2Flocalhost%3A", "scope=mcp"] {
        assert!(address.contains(part), "{part} is missing from {address}");
    }
    let (status, _, page) = http("GET", &address);
    assert_eq!(status, 200, "{page}");
    let approve = page.split("href=\"").nth(1).and_then(|s| s.split('"').next()).unwrap();
    let (status, head, _) = http("GET", &format!("{base}{approve}"));
    assert_eq!(status, 302, "{head}");
    let back = header(&head, "location").to_string();
    assert!(back.starts_with("http://localhost:") && back.contains("/callback?code="), "{back}");
    let (status, _, page) = http("GET", &back);
    assert_eq!((status, page.contains("Logged in to web")), (200, true), "{page}");
    let rest = z.read_to_end(LINE_WAIT);
    assert_eq!(z.exit_code(LINE_WAIT), 0, "{}", z.context());
    let all: Vec<String> = z.seen.iter().chain(&rest).cloned().collect();
    assert!(all.iter().any(|l| l == "logged in to web"), "{all:?}\n{}", z.context());
    all
}

fn auth_files(t: &TempDir) -> Vec<PathBuf> {
    let dir = t.path().join("zot-home/auth");
    std::fs::read_dir(dir).map(|d| d.flatten().map(|e| e.path()).collect()).unwrap_or_default()
}

/// The access and refresh tokens kept on disk.
fn kept_tokens(t: &TempDir) -> Vec<String> {
    let files = auth_files(t);
    assert_eq!(files.len(), 1, "{files:?}");
    let v: Value = serde_json::from_slice(&std::fs::read(&files[0]).unwrap()).unwrap();
    ["access_token", "refresh_token"].iter().filter_map(|k| v[k].as_str().filter(|s| !s.is_empty()).map(str::to_string)).collect()
}

fn no_token(what: &str, text: &str, tokens: &[String]) {
    for tok in tokens {
        assert!(!text.contains(tok.as_str()), "a token is in {what}:\n{text}");
    }
}

fn needs(t: &TempDir, cfg: &Path) -> Serve {
    let mut s = Serve::start(t, &[cfg.to_path_buf()], &["--no-ext"]);
    s.note("ready");
    s
}

#[test]
fn a_person_logs_in_then_calls_go_through_and_the_tokens_stay_in_their_file() {
    let t = TempDir::new("oauth-login");
    let Some(peer) = peer(&t, 3600) else { return };
    let url = peer.url("/mcp");
    let cfg = write_config(t.path(), "mcp.json", json!({"web": {"url": url, "oauth": {}}}));

    // Before any login: the server waits for a person, and says how.
    let mut s = needs(&t, &cfg);
    let e = s.ext("web");
    assert_eq!((&e["auth"], &e["transport"], &e["state"], &e["login"]), (&json!("oauth"), &json!("http"), &json!("needs_login"), &json!("needs_login")), "{e}");
    assert_eq!(e["error"], "web needs you to log in: zot mcp login web", "{e}");
    assert!(s.z.seen.iter().any(|l| l.contains("extension_error") && l.contains("web needs you to log in: zot mcp login web")), "{:?}", s.z.seen);
    assert!(s.req("tool", json!({"name": "mcp__web__echo", "args": {"text": "x"}}))["ok"] == json!(false));
    s.shutdown();
    let (_, out, err) = zot(&t, &["ext", "doctor", "--no-ext", "--mcp-config", cfg.to_str().unwrap()]);
    assert!(out.contains("web needs you to log in: zot mcp login web") && out.contains("auth oauth, not logged in"), "{out}{err}");
    let mut z = Zot::spawn(t.path(), &strings(&["mcp", "--no-ext", "--mcp-config", cfg.to_str().unwrap()]), &[]);
    mcp_raw::initialize(&mut z);
    z.close_stdin();
    assert_eq!(z.exit_code(LINE_WAIT), 0, "{}", z.context());
    assert!(z.stderr_text().contains("web needs you to log in: zot mcp login web"), "{}", z.stderr_text());

    let out = login(&t, &cfg, &peer.url(""));
    let files = auth_files(&t);
    assert_eq!(files.len(), 1, "{files:?}");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!((mode(&t.path().join("zot-home/auth")), mode(&files[0])), (0o700, 0o600));
    let tokens = kept_tokens(&t);
    assert_eq!(tokens.len(), 2);
    no_token("zot mcp login's output", &out.join("\n"), &tokens);

    // A session now uses the kept login.
    let mut s = needs(&t, &cfg);
    let r = s.tool("mcp__web__echo", json!({"text": "hi"}));
    assert_eq!(text(&r), "echo: hi", "{r}");
    let e = s.ext("web");
    assert_eq!((&e["state"], &e["auth"], &e["login"]), (&json!("ready"), &json!("oauth"), &json!("logged_in")), "{e}");
    no_token("serve's list", &s.ok("list", json!({})).to_string(), &tokens);
    s.shutdown();
    no_token("the log", &s.log("web"), &tokens);
    no_token("serve's output", &s.z.seen.join("\n"), &tokens);
    no_token("serve's stderr", &s.z.stderr_text(), &tokens);
    // What reached the server: the token on the MCP requests, nothing else.
    let seen = peer.requests();
    let mcp: Vec<&Value> = seen.iter().filter(|r| r["path"] == "/mcp").collect();
    assert!(mcp.iter().any(|r| r["authorization"] == json!(format!("Bearer {}", tokens[0]))), "{seen:?}");
    assert!(seen.iter().filter(|r| r["path"] != "/mcp").all(|r| r["authorization"].is_null()), "{seen:?}");

    let (code, out, err) = zot(&t, &["ext", "doctor", "--no-ext", "--mcp-config", cfg.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains(&format!("  remote {url} (http, auth oauth, logged in, expires in 60 min)")), "{out}{err}");
    no_token("doctor", &format!("{out}{err}"), &tokens);
    let (code, out, err) = zot(&t, &["ext", "list", "--json", "--mcp-config", cfg.to_str().unwrap()]);
    no_token("zot ext list", &format!("{code}{out}{err}"), &tokens);

    // Logging out forgets the tokens; the server needs a login again.
    let (code, out, _) = zot(&t, &["mcp", "logout", "web", "--no-ext", "--mcp-config", cfg.to_str().unwrap()]);
    assert_eq!((code, out.trim()), (0, "logged out of web"));
    // The client registered dynamically is kept (§8.5 rule 10), its tokens not.
    let files = auth_files(&t);
    assert_eq!(files.len(), 1, "{files:?}");
    let kept: Value = serde_json::from_slice(&std::fs::read(&files[0]).unwrap()).unwrap();
    assert!(kept["client_id"].as_str().is_some_and(|c| !c.is_empty()) && kept["registered"] == true, "{kept}");
    no_token("the kept registration", &kept.to_string(), &tokens);
    let mut s = needs(&t, &cfg);
    assert_eq!(s.ext("web")["state"], "needs_login");
    s.shutdown();
}

#[test]
fn the_consoles_login_prints_the_address_waits_for_the_browser_and_the_servers_tools_arrive() {
    let t = TempDir::new("oauth-console");
    let Some(peer) = peer(&t, 3600) else { return };
    let base = peer.url("");
    let cfg = write_config(t.path(), "mcp.json", json!({"web": {"url": peer.url("/mcp"), "oauth": {}}}));
    let args = zot_proc::session_args(t.path(), None, &[], &["--mcp-config", cfg.to_str().unwrap()]);
    let empty = Path::new("");
    let mut z = term::Term::spawn_in(&t, t.path(), &args, &[("DISPLAY", empty), ("WAYLAND_DISPLAY", empty)]);
    let mut at = z.wait_for("web needs you to log in: zot mcp login web", 0);
    at = z.wait_for("zot> ", at);
    z.typed("/tool mcp__web__echo {\"text\":\"before\"}\r");
    // Its tools are not offered until a person logs in.
    at = z.wait_for("error: unknown tool \"mcp__web__echo\"", at);
    at = z.wait_for("zot> ", at);

    z.typed("/login web\r");
    let start = z.wait_for("open this address in a browser:", at);
    at = z.wait_for("Waiting for the browser", start);
    let shown = &z.text()[start..at];
    let from = shown.find("http://").expect("an address");
    let address: String = shown[from..].chars().take_while(|c| !c.is_whitespace()).collect();
    assert!(address.starts_with(&format!("{base}/authorize?")) && address.contains("code_challenge_method=S256"), "{address}");
    // The test is the browser.
    let (status, _, page) = http("GET", &address);
    assert_eq!(status, 200, "{page}");
    let approve = page.split("href=\"").nth(1).and_then(|s| s.split('"').next()).unwrap();
    let (status, head, _) = http("GET", &format!("{base}{approve}"));
    assert_eq!(status, 302, "{head}");
    let (status, _, page) = http("GET", header(&head, "location"));
    assert_eq!((status, page.contains("Logged in to web")), (200, true), "{page}");
    at = z.wait_for("logged in to web", at);
    at = z.wait_for("restarted web", at);
    at = z.wait_for("zot> ", at);

    // The same session now has the server's tools.
    z.typed("/tool mcp__web__echo {\"text\":\"after\"}\r");
    at = z.wait_for("echo: after", at);
    z.wait_for("zot> ", at);
    no_token("the console", &z.text(), &kept_tokens(&t));
    z.typed("\x04");
    assert_eq!(z.exit_code(), 0, "{:?}", z.text());
}

#[test]
fn a_token_about_to_expire_or_refused_is_refreshed_and_a_refused_refresh_needs_login() {
    let t = TempDir::new("oauth-refresh");
    // Tokens that live 30 s: always within a minute of their end.
    let Some(peer) = peer(&t, 30) else { return };
    let cfg = write_config(t.path(), "mcp.json", json!({"web": {"url": peer.url("/mcp"), "oauth": {}}}));
    login(&t, &cfg, &peer.url(""));
    let first = kept_tokens(&t);
    let mut s = needs(&t, &cfg);
    assert_eq!(text(&s.tool("mcp__web__echo", json!({"text": "a"}))), "echo: a");
    let refreshes = || peer.requests().iter().filter(|r| r["path"] == "/token" && r["body"].as_str().unwrap_or("").contains("grant_type=refresh_token")).count();
    assert!(refreshes() >= 1, "no refresh before expiry");
    let second = kept_tokens(&t);
    assert_ne!(first[0], second[0], "the kept access token was not replaced");

    // Every token invalid now: a 401 refreshes once and the call goes through.
    assert_eq!(http("POST", &peer.url("/control/expire")).0, 200);
    let before = refreshes();
    assert_eq!(text(&s.tool("mcp__web__echo", json!({"text": "b"}))), "echo: b");
    assert!(refreshes() > before);

    // A refused refresh: the call fails needs_login, naming the login to run.
    assert_eq!(http("POST", &peer.url("/control/refuse-refresh")).0, 200);
    assert_eq!(http("POST", &peer.url("/control/expire")).0, 200);
    let r = s.req("tool", json!({"name": "mcp__web__echo", "args": {"text": "c"}}));
    assert_eq!((&r["ok"], &r["error"]["code"], &r["error"]["message"]), (&json!(false), &json!("needs_login"), &json!("web needs you to log in: zot mcp login web")), "{r}");
    // The session ends; started again, the server waits for a person.
    let e = s.wait_state("web", "needs_login");
    assert_eq!((&e["error"], &e["login"]), (&json!("web needs you to log in: zot mcp login web"), &json!("needs_login")), "{e}");
    s.shutdown();
    let tokens: Vec<String> = first.into_iter().chain(kept_tokens(&t)).collect();
    no_token("the log", &s.log("web"), &tokens);
    // The next session lists it as needing a login.
    let mut s = needs(&t, &cfg);
    let e = s.ext("web");
    assert_eq!((&e["state"], &e["error"]), (&json!("needs_login"), &json!("web needs you to log in: zot mcp login web")), "{e}");
    s.shutdown();
}

#[test]
fn logging_in_to_a_projects_server_leaves_the_project_trusted() {
    let t = TempDir::new("oauth-trust");
    let Some(peer) = peer(&t, 3600) else { return };
    let project = cwd_of(&t);
    write_config(&project.join(".zot"), "mcp.json", json!({"web": {"url": peer.url("/mcp"), "oauth": {}}}));
    let dir = project.to_str().unwrap();
    // Not trusted: no login to a server the project names.
    let (code, _, err) = zot(&t, &["mcp", "login", "web", "--cwd", dir]);
    assert_eq!(code, 1);
    assert!(err.contains("web is a server of a project you have not trusted"), "{err}");
    let (code, out, err) = zot(&t, &["trust", dir]);
    assert_eq!(code, 0, "{out}{err}");
    login_with(&t, &["--cwd", dir], &peer.url(""));
    // The tokens live in $ZOT_HOME, not the project: it is still trusted.
    let mut s = Serve::start(&t, &[], &[]);
    s.note("ready");
    let e = s.ext("web");
    assert_eq!((&e["state"], &e["source"], &e["login"]), (&json!("ready"), &json!("project"), &json!("logged_in")), "{e}");
    assert_eq!(text(&s.tool("mcp__web__echo", json!({"text": "p"}))), "echo: p");
    s.shutdown();
}

#[test]
fn a_server_that_asks_for_oauth_is_listed_oauth_and_a_login_lost_later_is_no_exit() {
    let t = TempDir::new("oauth-found");
    let Some(peer) = peer(&t, 3600) else { return };
    // No `oauth` in the entry: the server's 401 is what asks for a login.
    let cfg = write_config(t.path(), "mcp.json", json!({"web": {"url": peer.url("/mcp")}}));
    let mut s = needs(&t, &cfg);
    let e = s.ext("web");
    assert_eq!((&e["auth"], &e["state"], &e["login"], &e["error"]), (&json!("oauth"), &json!("needs_login"), &json!("needs_login"), &json!("web needs you to log in: zot mcp login web")), "{e}");
    let said: Vec<Value> = s.z.seen.iter().filter_map(|l| serde_json::from_str::<Value>(l).ok()).filter(|f| f["type"] == "extension_error").collect();
    assert_eq!(said.len(), 1, "{said:?}");
    assert_eq!(said[0]["message"], "web needs you to log in: zot mcp login web", "the message whole, nothing before it");
    s.shutdown();
    // Control: the server was asked; it refused without a token.
    assert!(peer.requests().iter().any(|r| r["path"] == "/mcp"), "{:?}", peer.requests());

    login(&t, &cfg, &peer.url(""));
    let mut s = needs(&t, &cfg);
    assert_eq!(text(&s.tool("mcp__web__echo", json!({"text": "a"}))), "echo: a");
    let e = s.ext("web");
    assert_eq!((&e["auth"], &e["login"]), (&json!("oauth"), &json!("logged_in")), "{e}");
    let (_, out, err) = zot(&t, &["ext", "doctor", "--json", "--no-ext", "--mcp-config", cfg.to_str().unwrap()]);
    let flat = out.replace(' ', "");
    assert!(flat.contains("\"auth\":\"oauth\"") && flat.contains("\"login\":\"logged_in\""), "{out}{err}");

    // A refresh refused mid-session: needs_login at once, not an exit and
    // a restart.
    assert_eq!(http("POST", &peer.url("/control/refuse-refresh")).0, 200);
    assert_eq!(http("POST", &peer.url("/control/expire")).0, 200);
    let r = s.req("tool", json!({"name": "mcp__web__echo", "args": {"text": "b"}}));
    assert_eq!((&r["error"]["code"], &r["error"]["message"]), (&json!("needs_login"), &json!("web needs you to log in: zot mcp login web")), "{r}");
    let e = s.wait_state("web", "needs_login");
    assert_eq!((&e["restarts"], &e["auth"], &e["tools"]), (&json!(0), &json!("oauth"), &json!([])), "{e}");
    let r = s.req("tool", json!({"name": "mcp__web__echo", "args": {"text": "c"}}));
    assert_eq!(r["ok"], false, "{r}");
    s.shutdown();
    let frames = s.z.seen.join("\n");
    assert!(!frames.contains("extension_exited") && !frames.contains("extension_restarting"), "{frames}");
    assert!(frames.contains("\"message\":\"web needs you to log in: zot mcp login web\""), "{frames}");
}
