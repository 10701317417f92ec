//! A person's login (docs/protocol.md §8.5 rule 11): discovery, the
//! client (configured or registered, RFC 7591), the authorization URL with
//! PKCE `S256`, `state` and `resource`, printed (and opened where a
//! display is set), the browser's redirect taken on 127.0.0.1 and ::1 at
//! `http://localhost:PORT/callback`, and the code exchanged for tokens.

use super::super::address::Secrets;
use super::discover::{self, dec, form, Found};
use super::store::{self, Saved};
use super::grant::{b64url, pkce, random, take_tokens, LOGIN_WAIT};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::time::Instant;

/// What a login of one server is given.
pub struct Options {
    pub name: String,
    /// The server's url, expanded.
    pub url: String,
    /// The entry's headers, expanded (sent with the first request only).
    pub headers: Vec<(String, String)>,
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    pub scopes: Option<String>,
    pub callback_port: Option<u16>,
    pub as_metadata: Option<String>,
    /// What no message may show of the url, its variables and headers.
    pub secrets: Secrets,
}

/// Logs in to the server of `opts`, saying what to open on `out`; the
/// tokens are saved under `home`. An error holds no secret and none of
/// the control characters a server could have put in what it supplied.
pub fn login(home: &Path, opts: &Options, agent: &ureq::Agent, out: &mut dyn Write) -> Result<(), String> {
    log_in(home, opts, agent, out).map_err(|e| crate::text::one_line(&opts.secrets.scrub(&e)))
}

fn log_in(home: &Path, opts: &Options, agent: &ureq::Agent, out: &mut dyn Write) -> Result<(), String> {
    let name = &opts.name;
    discover::allowed(&opts.url).map_err(|e| format!("{name}: {e}"))?;
    let challenge = discover::ask(agent, &opts.url, &opts.headers).map_err(|e| format!("{name}: {e}"))?;
    let found = discover::discover(agent, &opts.url, &challenge, opts.as_metadata.as_deref()).map_err(|e| format!("{name}: {e}"))?;
    let (v4, v6, port) = listen(opts.callback_port)?;
    let redirect = format!("http://localhost:{port}/callback");
    let mut saved = client(home, opts, &found, &redirect, agent)?;
    let state = b64url(&random(16)?);
    let (verifier, challenge_s256) = pkce()?;
    let scope = opts.scopes.clone().or(found.scope.clone());
    let mut q = vec![
        ("response_type", "code"),
        ("client_id", saved.client_id.as_str()),
        ("redirect_uri", redirect.as_str()),
        ("code_challenge", challenge_s256.as_str()),
        ("code_challenge_method", "S256"),
        ("state", state.as_str()),
        ("resource", opts.url.as_str()),
    ];
    if let Some(s) = scope.as_deref().filter(|s| !s.is_empty()) {
        q.push(("scope", s));
    }
    let sep = if found.authorization_endpoint.contains('?') { '&' } else { '?' };
    // What is printed is what is opened: the endpoint is the server's text.
    let address = crate::text::one_line(&format!("{}{sep}{}", found.authorization_endpoint, form(&q)));
    let _ = writeln!(out, "To log in to {name}, open this address in a browser:\n\n  {address}\n\nWaiting for the browser (at most {} minutes)...", LOGIN_WAIT.as_secs() / 60);
    let _ = out.flush();
    open_browser(&address);
    let code = wait(&[Some(v4), v6].into_iter().flatten().collect::<Vec<_>>(), &state, name)?;
    let mut pairs = vec![
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", redirect.as_str()),
        ("client_id", saved.client_id.as_str()),
        ("code_verifier", verifier.as_str()),
        ("resource", opts.url.as_str()),
    ];
    let secret = saved.client_secret.clone();
    if let Some(s) = &secret {
        pairs.push(("client_secret", s.as_str()));
    }
    let (status, v) = discover::post(agent, &found.token_endpoint, "application/x-www-form-urlencoded", form(&pairs).into_bytes(), None).map_err(|e| format!("{name}: {e}"))?;
    take_tokens(&mut saved, status, &v).map_err(|e| format!("{name}: the authorization server refused the code: {e}"))?;
    store::save(home, &saved)?;
    let _ = writeln!(out, "logged in to {name}");
    Ok(())
}

/// The client: `oauth.clientId`, else a registration kept for this
/// issuer and `redirect`, else a new one (RFC 7591).
fn client(home: &Path, opts: &Options, found: &Found, redirect: &str, agent: &ureq::Agent) -> Result<Saved, String> {
    let mut saved = Saved {
        resource: opts.url.clone(),
        issuer: found.issuer.clone(),
        token_endpoint: found.token_endpoint.clone(),
        redirect_uri: redirect.to_string(),
        ..Saved::default()
    };
    if let Some(id) = &opts.client_id {
        saved.client_id = id.clone();
        saved.client_secret = opts.client_secret.clone();
        return Ok(saved);
    }
    if let Some(kept) = store::load(home, &opts.url).filter(|k| k.registered && k.issuer == found.issuer && k.redirect_uri == redirect) {
        saved.client_id = kept.client_id;
        saved.client_secret = kept.client_secret;
        saved.registered = true;
        return Ok(saved);
    }
    let Some(endpoint) = &found.registration_endpoint else {
        return Err(format!("{}: the authorization server offers no client registration; set oauth.clientId", opts.name));
    };
    let body = json!({
        "client_name": "zot",
        "redirect_uris": [redirect],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    });
    let (status, v) = discover::post(agent, endpoint, "application/json", body.to_string().into_bytes(), None).map_err(|e| format!("{}: client registration: {e}", opts.name))?;
    let id = v.get("client_id").and_then(Value::as_str).filter(|_| (200..300).contains(&status));
    let Some(id) = id else { return Err(format!("{}: client registration was refused (HTTP {status})", opts.name)) };
    saved.client_id = id.to_string();
    saved.client_secret = v.get("client_secret").and_then(Value::as_str).map(str::to_string);
    saved.registered = true;
    Ok(saved)
}

/// Listeners on 127.0.0.1 and ::1 at `port` (or one free port for both):
/// the browser may take `localhost` to either, so the login fails when
/// another process holds either one, naming it. Only a machine with no
/// IPv6 loopback at all (where nothing else can hold ::1 either) listens
/// on 127.0.0.1 alone.
fn listen(port: Option<u16>) -> Result<(TcpListener, Option<TcpListener>, u16), String> {
    let mut tries = if port.is_some() { 1 } else { 20 };
    loop {
        tries -= 1;
        let v4 = TcpListener::bind(("127.0.0.1", port.unwrap_or(0))).map_err(|e| format!("cannot listen on 127.0.0.1:{}: {e}", port.unwrap_or(0)))?;
        let at = v4.local_addr().map_err(|e| e.to_string())?.port();
        let v6 = match TcpListener::bind(("::1", at)) {
            Ok(l) => Some(l),
            Err(e) if matches!(e.raw_os_error(), Some(libc::EADDRNOTAVAIL | libc::EAFNOSUPPORT)) => None,
            // Another process took ::1 at the port just found free on 127.0.0.1.
            Err(_) if tries > 0 => continue,
            Err(e) => {
                return Err(format!(
                    "cannot listen on [::1]:{at}: {e}; another program holds the port the browser may take localhost:{at} to, so the login would go to it (free it or set another oauth.callbackPort)"
                ))
            }
        };
        for l in std::iter::once(&v4).chain(v6.as_ref()) {
            l.set_nonblocking(true).map_err(|e| e.to_string())?;
        }
        return Ok((v4, v6, at));
    }
}

/// `xdg-open` (or `open`) where a display is set; a failure is not one:
/// the address is printed.
fn open_browser(address: &str) {
    let graphical = cfg!(target_os = "macos") || std::env::var_os("DISPLAY").is_some_and(|d| !d.is_empty()) || std::env::var_os("WAYLAND_DISPLAY").is_some_and(|d| !d.is_empty());
    if !graphical {
        return;
    }
    let opener = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
    let _ = std::process::Command::new(opener)
        .arg(address)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
}

/// The browser's redirect to `/callback`: its `code` once `state` matches.
fn wait(listeners: &[TcpListener], state: &str, name: &str) -> Result<String, String> {
    let deadline = Instant::now() + LOGIN_WAIT;
    while Instant::now() < deadline {
        let mut any = false;
        for l in listeners {
            let Ok((conn, _)) = l.accept() else { continue };
            any = true;
            if let Some(done) = callback(conn, state, name) {
                return done;
            }
        }
        if !any {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
    Err(format!("{name}: no answer from the browser within {} minutes", LOGIN_WAIT.as_secs() / 60))
}

/// One request to the listener: none when it is not the callback.
fn callback(mut conn: TcpStream, state: &str, name: &str) -> Option<Result<String, String>> {
    let _ = conn.set_nonblocking(false);
    let _ = conn.set_read_timeout(Some(std::time::Duration::from_secs(10)));
    let mut head = Vec::new();
    let mut buf = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let head = String::from_utf8_lossy(&head);
    let target = head.lines().next().and_then(|l| l.strip_prefix("GET ")).and_then(|l| l.split(' ').next()).unwrap_or("");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let reply = |conn: &mut TcpStream, status: &str, text: &str| {
        let body = format!("<!doctype html><title>zot</title><p>{text}</p>\n");
        let _ = write!(conn, "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
    };
    if path != "/callback" {
        reply(&mut conn, "404 Not Found", "Not here.");
        return None;
    }
    let get = |k: &str| query.split('&').filter_map(|p| p.split_once('=')).find(|(key, _)| *key == k).map(|(_, v)| dec(v));
    if get("state").as_deref() != Some(state) {
        reply(&mut conn, "400 Bad Request", "This answer is not for the login zot is waiting for.");
        return None;
    }
    if let Some(e) = get("error") {
        reply(&mut conn, "200 OK", &format!("Logging in to {name} failed: {}.", html(&e)));
        let detail = get("error_description").map(|d| format!(": {d}")).unwrap_or_default();
        return Some(Err(format!("{name}: the authorization server said {e}{detail}")));
    }
    let Some(code) = get("code").filter(|c| !c.is_empty()) else {
        reply(&mut conn, "400 Bad Request", "No code in this answer.");
        return Some(Err(format!("{name}: the browser came back with no code")));
    };
    reply(&mut conn, "200 OK", &format!("Logged in to {}. You can close this page.", html(name)));
    Some(Ok(code))
}

fn html(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}
