//! One message to a remote server and its answer (docs/protocol.md §8.5
//! rules 1, 2, 4, 6, 7 and 8): the POST with the transport's headers, the
//! answer read as JSON or as an event stream and handed to the edge, a
//! lost session initialized again, the `sse` fallback of a bare `url`, and
//! the `DELETE` that ends a session.

use super::super::config::Transport;
use super::address::{origin, resolve, shown};
use super::message::{describe, failed, incoming, what, with_headers};
use super::peek::Peek;
use super::proxy;
use super::resolve::Resolve;
use super::shared::{Shared, IDLE, MAX_MESSAGE, MAX_WORKERS};
use super::{cancel, oauth, params, sse, stream};
use crate::child::Dialect;
use serde_json::Value;
use std::io::BufReader;
use std::sync::Arc;
use std::time::Duration;
use ureq::http::Response;
use ureq::Body;

/// Why a cancelled request got no answer.
const CANCELLED: &str = "cancelled; its stream was dropped";

/// A refusal's body is read up to this much.
const MAX_REFUSAL: u64 = 1024 * 1024;

/// An HTTP client: statuses are answers (never errors), redirects are
/// followed here (same origin only), certificates are checked against the
/// system's store; no proxy of its own: each request is given the one for
/// its url ([`proxy::configure`]). A `cuttable` one's connections are
/// dropped when the call using them is cancelled ([`cancel::Cutting`]): the
/// server's own; OAuth's are not (a refresh cut halfway would lose a
/// rotated refresh token).
pub(super) fn agent(connect: Duration, cuttable: bool) -> ureq::Agent {
    #[cfg(feature = "rustls")]
    let provider = ureq::tls::TlsProvider::Rustls;
    #[cfg(all(feature = "native-tls", not(feature = "rustls")))]
    let provider = ureq::tls::TlsProvider::NativeTls;
    #[cfg(not(any(feature = "rustls", feature = "native-tls")))]
    compile_error!("the `remote` feature needs a TLS backend: `rustls` or `native-tls`");
    let tls = ureq::tls::TlsConfig::builder().provider(provider).root_certs(ureq::tls::RootCerts::PlatformVerifier).build();
    let config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .max_redirects_will_error(false)
        .timeout_connect(Some(connect))
        .user_agent(format!("zot/{}", env!("CARGO_PKG_VERSION")))
        .max_idle_connections_per_host(MAX_WORKERS)
        .max_idle_age(IDLE)
        .proxy(None)
        .tls_config(tls)
        .build();
    let connector = ureq::unversioned::transport::DefaultConnector::default();
    if cuttable {
        ureq::Agent::with_parts(config, cancel::Cutting(connector), Resolve::default())
    } else {
        ureq::Agent::with_parts(config, connector, Resolve::default())
    }
}

/// Posts `msg` and hands its answer to the edge.
pub(super) fn deliver(sh: &Arc<Shared>, msg: &[u8], peek: &Peek) {
    if peek.is("initialize") {
        let mut st = sh.state();
        st.init = Some(msg.to_vec());
        st.init_id = peek.id.as_ref().and_then(Value::as_u64);
    }
    if sh.state().sse {
        return post_sse(sh, msg, peek);
    }
    let mut renewed = false;
    let mut refreshed = false;
    let mut url = sh.url.clone();
    let mut hops = 0;
    loop {
        if sh.closed() {
            return;
        }
        if cancel::cancelled() {
            return failed(sh, peek, CANCELLED);
        }
        let generation = sh.state().generation;
        let sent = sh.tokens.as_ref().map(|t| t.current());
        let (resp, with_session) = match post(sh, &url, msg, peek) {
            Ok(r) => r,
            Err(_) if cancel::cancelled() => return failed(sh, peek, CANCELLED),
            Err(why) => {
                failed(sh, peek, &why);
                return end_if_refused(sh, peek, &why, false);
            }
        };
        let status = resp.status().as_u16();
        match status {
            300..=399 => match redirect(sh, &resp, &url, &mut hops) {
                Ok(next) => url = next,
                Err(why) => return failed(sh, peek, &why),
            },
            404 if with_session => {
                if renewed {
                    return sh.lost(&format!("{} got HTTP 404 again after the session was renewed", what(peek)));
                }
                if !renew(sh, generation, false) {
                    return;
                }
                renewed = true;
            }
            200..=299 => {
                if with_session {
                    let mut st = sh.state();
                    if st.generation == generation {
                        st.untried_post = false;
                    }
                }
                return answered(sh, resp, peek);
            }
            401 | 403 => match unauthorized(sh, &resp, sent.as_deref(), refreshed) {
                Ok(()) => refreshed = true,
                Err(why) => {
                    failed(sh, peek, &why);
                    return end_if_refused(sh, peek, &why, status == 403);
                }
            },
            _ => return refused(sh, resp, msg, peek, status),
        }
    }
}

/// A 401 or 403: a 401 to a request that carried a token refreshes it
/// once (Ok: send again); otherwise the server needs a person's login,
/// which the error says (a 403 `insufficient_scope` names the scope).
fn unauthorized(sh: &Shared, resp: &Response<Body>, sent: Option<&str>, refreshed: bool) -> Result<(), String> {
    let status = resp.status().as_u16();
    let header = resp.headers().get("www-authenticate").and_then(|v| v.to_str().ok()).unwrap_or("");
    let challenge = oauth::discover::challenge(header);
    let needs = crate::mcpserver::login::message(&sh.name);
    if status == 403 {
        return match challenge.filter(|c| c.error.as_deref() == Some("insufficient_scope")) {
            Some(c) => {
                let scope = crate::mcpserver::login::scope_suffix(c.scope.as_deref().unwrap_or_default());
                sh.say(&format!("HTTP 403: insufficient_scope{scope}"));
                Err(if sh.may_log_in { format!("{needs}{scope}") } else { format!("HTTP 403: insufficient_scope{scope}") })
            }
            None => Err("HTTP 403".into()),
        };
    }
    match (&sh.tokens, sent) {
        (Some(tokens), Some(sent)) if !refreshed => match tokens.refresh(&sh.oauth_agent, sent) {
            Ok(_) => {
                sh.say("HTTP 401: the server refused the access token; it was refreshed, sending again");
                Ok(())
            }
            Err(why) => {
                sh.say(&format!("HTTP 401: the server refused the access token and it cannot be refreshed ({why}); the login is forgotten"));
                Err(needs)
            }
        },
        (Some(tokens), Some(_)) => {
            tokens.refuse();
            sh.say("HTTP 401 again: the server refused the refreshed access token too; the login is forgotten");
            Err(needs)
        }
        _ if sh.may_log_in && (challenge.is_some() || sh.wants_login) => {
            sh.say("HTTP 401 asking for OAuth and no usable login");
            Err(needs)
        }
        _ => Err("HTTP 401".into()),
    }
}

/// A login no longer accepted after the handshake (its refresh refused,
/// or a 403 asking for a scope: `why` the message of a login to run)
/// makes the server `needs_login` until a person logs in; the host ends
/// the session, without counting it as an exit.
fn end_if_refused(sh: &Arc<Shared>, peek: &Peek, why: &str, forbidden: bool) {
    let handshake = peek.is("initialize") || peek.is("server/discover");
    let dead = forbidden || sh.tokens.as_ref().is_some_and(|t| t.dead());
    if dead && !handshake && crate::mcpserver::login::is_login_to_run(why) && !std::mem::replace(&mut sh.state().login_lost, true) {
        sh.edge.login_lost(&sh.scrub(why));
    }
}

/// The POST of one message to `url`; whether it carried the session id.
fn post(sh: &Shared, url: &str, msg: &[u8], peek: &Peek) -> Result<(Response<Body>, bool), String> {
    let (session, version) = {
        let st = sh.state();
        (st.session.clone(), st.version.clone())
    };
    let mut b = ureq::http::Request::builder()
        .method("POST")
        .uri(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream");
    b = with_headers(sh, b)?;
    let mut with_session = false;
    if let Some(pv) = &peek.pv {
        sh.state().modern = true;
        b = b.header("MCP-Protocol-Version", pv.as_str());
        if let Some(m) = &peek.method {
            b = b.header("Mcp-Method", m.as_str());
        }
        let named = matches!(peek.method.as_deref(), Some("tools/call" | "resources/read" | "prompts/get"));
        if let Some(n) = peek.name.as_ref().filter(|_| named) {
            b = b.header("Mcp-Name", params::encode(n));
        }
        if let (Some("tools/call"), Some(tool)) = (peek.method.as_deref(), &peek.name) {
            for (k, v) in sh.marks.lock().unwrap_or_else(|e| e.into_inner()).headers(tool, peek.arguments.as_ref()) {
                b = b.header(k, v);
            }
        }
    } else {
        if let Some(v) = &version {
            b = b.header("MCP-Protocol-Version", v.as_str());
        }
        if let Some(s) = &session {
            b = b.header("Mcp-Session-Id", s.as_str());
            with_session = true;
        }
    }
    let req = b.body(msg.to_vec()).map_err(|e| format!("cannot make the request: {e}"))?;
    let timeout = match peek.method.as_deref() {
        Some("subscriptions/listen") => None,
        Some("initialize" | "server/discover") => Some(sh.connect_timeout),
        Some(_) if peek.id.is_some() => Some(cancel::current().map_or(sh.request_timeout, |c| c.deadline.saturating_duration_since(std::time::Instant::now()))),
        _ => Some(sh.connect_timeout),
    };
    let req = proxy::configure(&sh.agent, req, timeout);
    sh.agent.run(req).map(|r| (r, with_session)).map_err(|e| describe(sh, &e))
}

/// The next url of a 307 or 308 to the same origin (at most 5); any other
/// redirect fails the request, naming where it pointed as the server said
/// it (never resolved against the expanded url, without user information
/// or query).
fn redirect(sh: &Shared, resp: &Response<Body>, url: &str, hops: &mut u32) -> Result<String, String> {
    let status = resp.status().as_u16();
    let location = resp.headers().get("location").and_then(|v| v.to_str().ok()).unwrap_or("");
    let next = resolve(url, location);
    let shown = match shown(location) {
        s if s.is_empty() => "nowhere (no Location)".to_string(),
        s => s,
    };
    if !matches!(status, 307 | 308) {
        return Err(format!("HTTP {status} redirect to {shown} (only a 307 or 308 to the same origin is followed)"));
    }
    if origin(&next).as_deref() != Some(sh.origin.as_str()) {
        return Err(format!("HTTP {status} redirect to {shown}, another origin"));
    }
    *hops += 1;
    if *hops > 5 {
        return Err(format!("more than 5 redirects (the last to {shown})"));
    }
    Ok(next)
}

/// A 2xx: the session id of an `initialize` answer, then the body as JSON
/// or as an event stream; after `notifications/initialized` the GET stream
/// opens.
fn answered(sh: &Arc<Shared>, resp: Response<Body>, peek: &Peek) {
    if peek.is("initialize") {
        if let Some(sid) = resp.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()) {
            sh.state().session = Some(sid.to_string());
        }
    }
    let ctype = resp.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_ascii_lowercase();
    if ctype.starts_with("text/event-stream") {
        read_events(sh, resp, peek);
    } else if ctype.starts_with("application/json") {
        match resp.into_body().into_with_config().limit(MAX_MESSAGE as u64).read_to_vec() {
            Ok(body) => json_body(sh, &body, peek),
            Err(ureq::Error::BodyExceedsLimit(_)) => failed(sh, peek, &format!("its answer is over the limit of {MAX_MESSAGE} bytes")),
            Err(e) => failed(sh, peek, &describe(sh, &e)),
        }
    } else if peek.request() && resp.status().as_u16() != 202 {
        failed(sh, peek, &format!("HTTP {} with no JSON-RPC answer (content type {ctype:?})", resp.status().as_u16()));
    }
    if peek.is("notifications/initialized") && peek.pv.is_none() {
        stream::open_get(sh);
    }
}

/// A JSON body: one message, or a batch of them.
fn json_body(sh: &Shared, body: &[u8], peek: &Peek) {
    if body.iter().all(u8::is_ascii_whitespace) && !peek.request() {
        return;
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Array(items)) => {
            for item in items {
                incoming(sh, &serde_json::to_vec(&item).unwrap_or_default());
            }
        }
        Ok(_) => incoming(sh, body),
        Err(_) if peek.request() => failed(sh, peek, "its answer is not JSON"),
        Err(_) => sh.say(&format!("{}: the server's body is not JSON", what(peek))),
    }
}

/// An event-stream answer: every message to the edge as it comes; a stream
/// that ends before the answer is resumed when its events had ids. The
/// stream is read to its end (it ends with the answer), so that its
/// connection can be used again; one kept open longer holds its thread
/// until the request's deadline at most.
fn read_events(sh: &Arc<Shared>, resp: Response<Body>, peek: &Peek) {
    let mut events = sse::Reader::new(BufReader::new(resp.into_body().into_reader()), MAX_MESSAGE);
    let mut done = !peek.request();
    loop {
        match events.next_event() {
            Ok(Some(ev)) if ev.data.is_empty() => {}
            Ok(Some(ev)) => {
                done |= peek.answered_by(&ev.data);
                incoming(sh, &ev.data);
            }
            Ok(None) => break,
            Err(sse::Error::TooLong(n)) => return failed(sh, peek, &format!("a message of its answer is over the limit of {n} bytes")),
            Err(sse::Error::Io(e)) => {
                if sh.closed() {
                    return;
                }
                if cancel::cancelled() {
                    return failed(sh, peek, CANCELLED);
                }
                sh.say(&format!("{}: its event stream broke: {e}", what(peek)));
                break;
            }
        }
    }
    if done || sh.closed() {
        return;
    }
    if cancel::cancelled() {
        return failed(sh, peek, CANCELLED);
    }
    match events.last_id.clone() {
        Some(last) => stream::resume(sh, peek, last, events.retry),
        None => failed(sh, peek, "its event stream ended before the answer"),
    }
}

/// A status other than 2xx and 3xx: a JSON-RPC error in the body for this
/// request is its answer; a bare `url` whose `initialize` is refused as a
/// 2024-11-05 server refuses it tries the `sse` transport; anything else
/// fails the request, naming the status.
fn refused(sh: &Arc<Shared>, resp: Response<Body>, msg: &[u8], peek: &Peek, status: u16) {
    let body = resp.into_body().into_with_config().limit(MAX_REFUSAL).read_to_vec().unwrap_or_default();
    let parsed: Option<Value> = serde_json::from_slice(&body).ok();
    let rpc_error = parsed.as_ref().is_some_and(|v| v.get("error").is_some_and(Value::is_object));
    if rpc_error && peek.request() && parsed.as_ref().and_then(|v| v.get("id")) == peek.id.as_ref() {
        sh.say(&format!("{}: HTTP {status} with a JSON-RPC error", what(peek)));
        return incoming(sh, &body);
    }
    let fallback = sh.transport == Transport::Auto && peek.is("initialize") && matches!(status, 400 | 404 | 405) && !rpc_error;
    if fallback && !sh.state().sse {
        sh.say(&format!("initialize: HTTP {status} to Streamable HTTP; trying the sse transport (2024-11-05)"));
        sh.state().sse = true;
        stream::open_sse(sh);
        return post_sse(sh, msg, peek);
    }
    let detail = parsed.as_ref().and_then(|v| v.pointer("/error/message")).and_then(Value::as_str).map(|m| format!(": {m}")).unwrap_or_default();
    failed(sh, peek, &format!("HTTP {status}{detail}"));
}

/// A message over the `sse` transport: posted to the endpoint its stream
/// named (waiting for it within `connectTimeout`); the answer comes on
/// the stream.
fn post_sse(sh: &Arc<Shared>, msg: &[u8], peek: &Peek) {
    let url = {
        let deadline = std::time::Instant::now() + sh.connect_timeout;
        let mut st = sh.state();
        loop {
            if st.closed {
                return;
            }
            if let Some(u) = &st.endpoint {
                break u.clone();
            }
            if let Some(why) = st.endpoint_error.clone() {
                drop(st);
                return failed(sh, peek, &why);
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                drop(st);
                return failed(sh, peek, "its sse stream named no endpoint within connectTimeout");
            }
            st = sh.endpoint_known.wait_timeout(st, left).map(|(g, _)| g).unwrap_or_else(|e| e.into_inner().0);
        }
    };
    let quiet = Peek { method: peek.method.clone(), id: peek.id.clone(), answer: peek.answer, ..Peek::default() };
    match post(sh, &url, msg, &quiet) {
        Err(why) => failed(sh, peek, &why),
        Ok((resp, _)) => {
            let status = resp.status().as_u16();
            if !(200..300).contains(&status) {
                refused(sh, resp, msg, peek, status);
            }
        }
    }
}

/// The session is gone (a 404 to a request that carried its id): one
/// fresh `initialize` and `notifications/initialized`, not counted as a
/// restart, then the tools are listed again. False when that failed too,
/// or when the 404 answered a session renewed for an earlier 404 before
/// that channel (`get`: the GET stream, else a POST) got a 2xx from it: a
/// second 404 in a row, the server's exit. `generation`: the session the
/// 404 was for (another thread may have renewed it meanwhile).
pub(super) fn renew(sh: &Arc<Shared>, generation: u64, get: bool) -> bool {
    let _for_the_link = cancel::aside();
    let _one = sh.renewing.lock().unwrap_or_else(|e| e.into_inner());
    let init = {
        let st = sh.state();
        if st.closed {
            return false;
        }
        if st.generation != generation {
            return true;
        }
        if (get && st.untried_get) || (!get && st.untried_post) {
            let what = if get { "the GET stream" } else { "a request" };
            drop(st);
            sh.lost(&format!("{what} got HTTP 404 again after the session was renewed"));
            return false;
        }
        st.init.clone()
    };
    let Some(init) = init.and_then(|i| serde_json::from_slice::<Value>(&i).ok()) else {
        sh.lost("HTTP 404 before the session was initialized");
        return false;
    };
    sh.say("the session is gone (HTTP 404): initializing again");
    {
        let mut st = sh.state();
        st.session = None;
        st.version = None;
    }
    let mut init = init;
    let id = Value::from(format!("zot-renew-{}", generation + 1));
    init["id"] = id.clone();
    let bytes = serde_json::to_vec(&init).unwrap_or_default();
    let peek = Peek::of(&bytes);
    let (resp, _) = match post(sh, &sh.url, &bytes, &peek) {
        Ok(r) => r,
        Err(why) => {
            sh.lost(&format!("initializing again failed: {why}"));
            return false;
        }
    };
    let status = resp.status().as_u16();
    if !(200..300).contains(&status) {
        sh.lost(&format!("initializing again got HTTP {status}"));
        return false;
    }
    let session = resp.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_string);
    let Some(answer) = own_answer(resp, &id) else {
        sh.lost("initializing again got no answer");
        return false;
    };
    if answer.get("error").is_some() {
        sh.lost("initializing again was refused");
        return false;
    }
    {
        let mut st = sh.state();
        st.session = session;
        st.version = answer.pointer("/result/protocolVersion").and_then(Value::as_str).map(str::to_string);
    }
    let note = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    match post(sh, &sh.url, note, &Peek::of(note)) {
        Ok((r, _)) if (200..300).contains(&r.status().as_u16()) => {}
        Ok((r, _)) => sh.say(&format!("notifications/initialized after initializing again: HTTP {}", r.status().as_u16())),
        Err(why) => sh.say(&format!("notifications/initialized after initializing again: {why}")),
    }
    {
        let mut st = sh.state();
        st.generation += 1;
        st.untried_get = true;
        st.untried_post = true;
    }
    sh.say("initialized again (not a restart); listing the tools again");
    sh.edge.incoming(br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#);
    stream::open_get(sh);
    true
}

/// The answer with id `id` in a JSON or event-stream body, for the link's
/// own requests (other messages in the stream are handed to the edge).
fn own_answer(resp: Response<Body>, id: &Value) -> Option<Value> {
    let ctype = resp.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_ascii_lowercase();
    if ctype.starts_with("text/event-stream") {
        let mut events = sse::Reader::new(BufReader::new(resp.into_body().into_reader()), MAX_MESSAGE);
        while let Ok(Some(ev)) = events.next_event() {
            if let Ok(v) = serde_json::from_slice::<Value>(&ev.data) {
                if v.get("id") == Some(id) {
                    return Some(v);
                }
            }
        }
        return None;
    }
    let body = resp.into_body().into_with_config().limit(MAX_MESSAGE as u64).read_to_vec().ok()?;
    serde_json::from_slice::<Value>(&body).ok().filter(|v| v.get("id") == Some(id))
}

/// A stop's `DELETE` of the session (405: the server keeps none to end).
pub(super) fn end_session(sh: &Shared) {
    let (session, version, sse) = {
        let st = sh.state();
        (st.session.clone(), st.version.clone(), st.sse)
    };
    let Some(session) = session.filter(|_| !sse) else { return };
    let b = ureq::http::Request::builder().method("DELETE").uri(sh.url.as_str()).header("Mcp-Session-Id", session.as_str());
    let Ok(mut b) = with_headers(sh, b) else { return };
    if let Some(v) = &version {
        b = b.header("MCP-Protocol-Version", v.as_str());
    }
    let Ok(req) = b.body(()) else { return };
    let req = proxy::configure(&sh.agent, req, Some(Duration::from_secs(1)));
    match sh.agent.run(req) {
        Ok(r) => sh.say(&format!("session ended (DELETE: HTTP {})", r.status().as_u16())),
        Err(e) => sh.say(&format!("session end (DELETE): {}", describe(sh, &e))),
    }
}
