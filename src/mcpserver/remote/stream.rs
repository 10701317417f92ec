//! The server's own streams (docs/protocol.md §8.5 rules 3 and 6): the GET
//! stream of Streamable HTTP for what the server sends unasked, resumed
//! with `Last-Event-ID` when it drops; the answer stream of a POST resumed
//! the same way; and the event stream of the 2024-11-05 `sse` transport,
//! whose first `endpoint` event names where to post.

use super::address::{origin, resolve};
use super::message::{describe, failed, incoming, with_headers, Peek};
use super::shared::{spawn, Shared, MAX_MESSAGE};
use super::sse;
use crate::child::Dialect;
use std::io::BufReader;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Tries in a row after which a GET stream counts as lost.
const TRIES: u32 = 5;
/// The longest wait between two tries.
const MAX_WAIT: Duration = Duration::from_secs(30);

/// A GET with `Accept: text/event-stream` and the session's headers.
fn get(sh: &Shared, url: &str, last_id: Option<&str>, timeout: Option<Duration>) -> Result<(ureq::http::Response<ureq::Body>, bool), String> {
    let (session, version) = {
        let st = sh.state();
        (st.session.clone(), st.version.clone())
    };
    let b = ureq::http::Request::builder().method("GET").uri(url).header("Accept", "text/event-stream");
    let mut b = with_headers(sh, b)?;
    if let Some(v) = &version {
        b = b.header("MCP-Protocol-Version", v.as_str());
    }
    let with_session = session.is_some();
    if let Some(s) = &session {
        b = b.header("Mcp-Session-Id", s.as_str());
    }
    if let Some(id) = last_id {
        b = b.header("Last-Event-ID", id);
    }
    let req = b.body(()).map_err(|e| format!("cannot make the request: {e}"))?;
    let req = sh.agent.configure_request(req).timeout_global(timeout).build();
    sh.agent.run(req).map(|r| (r, with_session)).map_err(|e| describe(sh, &e))
}

/// The wait before the next try: the server's `retry`, else 1 s doubling
/// to 30 s.
fn next_wait(retry: Option<Duration>, backoff: &mut Duration) -> Duration {
    let wait = retry.unwrap_or(*backoff);
    *backoff = (*backoff * 2).min(MAX_WAIT);
    wait
}

/// Opens the GET stream once the session is initialized (a thread of its
/// own, unless one runs).
pub(super) fn open_get(sh: &Arc<Shared>) {
    {
        let mut st = sh.state();
        if st.closed || st.streaming || st.sse {
            return;
        }
        st.streaming = true;
    }
    let s = Arc::clone(sh);
    spawn(sh, "get", move || {
        get_loop(&s);
        s.state().streaming = false;
    });
}

fn get_loop(sh: &Arc<Shared>) {
    let mut last_id: Option<String> = None;
    let mut retry = None;
    let mut backoff = Duration::from_secs(1);
    let mut fails = 0;
    let mut opened_before = false;
    while !sh.closed() {
        let generation = sh.state().generation;
        match get(sh, &sh.url, last_id.as_deref(), None) {
            Err(why) => {
                fails += 1;
                sh.log.line(&format!("GET stream: {why}"));
            }
            Ok((resp, with_session)) => match resp.status().as_u16() {
                405 => return sh.log.line("the server offers no GET stream (HTTP 405)"),
                404 if with_session => {
                    if !(sh.renew)(sh, generation) {
                        return;
                    }
                    last_id = None;
                    continue;
                }
                200..=299 => {
                    fails = 0;
                    if std::mem::replace(&mut opened_before, true) {
                        // What changed while it was away is not known: list again.
                        sh.log.line("GET stream reopened; listing the tools again");
                        sh.edge.incoming(br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#);
                    }
                    let mut events = sse::Reader::new(BufReader::new(resp.into_body().into_reader()), MAX_MESSAGE);
                    loop {
                        let event = events.next_event();
                        if matches!(event, Ok(Some(_))) {
                            // A stream that carried something: the next
                            // drop waits from 1 s again (one that ends at
                            // once keeps doubling its wait).
                            backoff = Duration::from_secs(1);
                        }
                        match event {
                            Ok(Some(ev)) if !ev.data.is_empty() => incoming(sh, &ev.data),
                            Ok(Some(_)) => {}
                            Ok(None) => break,
                            Err(e) => {
                                if !sh.closed() {
                                    sh.log.line(&format!("GET stream: {e}"));
                                }
                                break;
                            }
                        }
                    }
                    last_id = events.last_id.or(last_id);
                    retry = events.retry.or(retry);
                    if !sh.closed() {
                        sh.log.line("GET stream ended; opening it again");
                    }
                }
                status => {
                    fails += 1;
                    sh.log.line(&format!("GET stream: HTTP {status}"));
                }
            },
        }
        if fails >= TRIES {
            return sh.lost(&format!("its GET stream could not be opened again in {TRIES} tries"));
        }
        if !sh.pause(next_wait(retry, &mut backoff)) {
            return;
        }
    }
}

/// A POST's answer stream ended before the answer: GET with
/// `Last-Event-ID` until the answer comes, within the request's deadline.
pub(super) fn resume(sh: &Arc<Shared>, peek: &Peek, mut last_id: String, mut retry: Option<Duration>) {
    let deadline = Instant::now() + sh.request_timeout;
    let mut backoff = Duration::from_secs(1);
    let mut why = String::from("its event stream ended before the answer");
    for _ in 0..TRIES {
        let wait = next_wait(retry, &mut backoff);
        if Instant::now() + wait >= deadline || !sh.pause(wait) {
            break;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        match get(sh, &sh.url, Some(&last_id), Some(left)) {
            Err(e) => why = e,
            Ok((resp, _)) if (200..300).contains(&resp.status().as_u16()) => {
                let mut events = sse::Reader::new(BufReader::new(resp.into_body().into_reader()), MAX_MESSAGE);
                while let Ok(Some(ev)) = events.next_event() {
                    if ev.data.is_empty() {
                        continue;
                    }
                    let done = peek.answered_by(&ev.data);
                    incoming(sh, &ev.data);
                    if done {
                        return;
                    }
                }
                last_id = events.last_id.unwrap_or(last_id);
                retry = events.retry.or(retry);
            }
            Ok((resp, _)) => why = format!("resuming its event stream: HTTP {}", resp.status().as_u16()),
        }
    }
    failed(sh, peek, &why);
}

/// The 2024-11-05 transport: the event stream is opened at once; its
/// `endpoint` event names where to post, every answer comes on it, and
/// its end is the server's.
pub(super) fn open_sse(sh: &Arc<Shared>) {
    {
        let mut st = sh.state();
        if st.closed || st.streaming {
            return;
        }
        st.streaming = true;
    }
    let s = Arc::clone(sh);
    spawn(sh, "sse", move || {
        let why = sse_loop(&s);
        let mut st = s.state();
        st.streaming = false;
        if st.endpoint.is_none() {
            st.endpoint_error = Some(why.clone());
            drop(st);
            s.endpoint_known.notify_all();
            return s.log.line(&format!("sse stream: {why}"));
        }
        drop(st);
        if !s.closed() {
            s.lost(&format!("its sse stream ended: {why}"));
        }
    });
}

/// Reads the `sse` stream to its end; why it ended.
fn sse_loop(sh: &Arc<Shared>) -> String {
    let resp = match get(sh, &sh.url, None, None) {
        Ok((r, _)) => r,
        Err(why) => return why,
    };
    let status = resp.status().as_u16();
    if !(200..300).contains(&status) {
        return format!("HTTP {status}");
    }
    let mut events = sse::Reader::new(BufReader::new(resp.into_body().into_reader()), MAX_MESSAGE);
    loop {
        match events.next_event() {
            Ok(Some(ev)) if ev.kind == "endpoint" => {
                let text = String::from_utf8_lossy(&ev.data).trim().to_string();
                let url = resolve(&sh.url, &text);
                if origin(&url).as_deref() != Some(sh.origin.as_str()) {
                    return "endpoint on another origin".into();
                }
                sh.log.line("sse stream: endpoint known");
                sh.state().endpoint = Some(url);
                sh.endpoint_known.notify_all();
            }
            Ok(Some(ev)) if !ev.data.is_empty() => incoming(sh, &ev.data),
            Ok(Some(_)) => {}
            Ok(None) => return "the server closed it".into(),
            Err(e) => return e.to_string(),
        }
    }
}
