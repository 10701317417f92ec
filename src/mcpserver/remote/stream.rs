//! The server's own streams (docs/protocol.md §8.5 rules 3 and 6): the GET
//! stream of Streamable HTTP for what the server sends unasked, resumed
//! with `Last-Event-ID` when it drops; the answer stream of a POST resumed
//! the same way; and the event stream of the 2024-11-05 `sse` transport,
//! whose first `endpoint` event names where to post.

use super::address::{origin, resolve};
use super::message::{describe, failed, incoming, with_headers};
use super::peek::Peek;
use super::{cancel, proxy};
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
/// The shortest: a server's `retry` below it (`retry: 0`) waits this long.
const MIN_WAIT: Duration = Duration::from_secs(1);

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
    let req = proxy::configure(&sh.agent, req, timeout);
    sh.agent.run(req).map(|r| (r, with_session)).map_err(|e| describe(sh, &e))
}

/// The wait before the next try: the server's `retry` (at least
/// [`MIN_WAIT`]), else 1 s; doubling to 30 s while the tries make no
/// `progress`, back to the first wait when one does.
fn next_wait(retry: Option<Duration>, backoff: &mut Duration, progress: bool) -> Duration {
    let first = retry.unwrap_or(MIN_WAIT).max(MIN_WAIT);
    if progress {
        *backoff = first;
    }
    let wait = (*backoff).max(first);
    *backoff = (wait * 2).min(MAX_WAIT).max(first);
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

/// The GET stream, opened again as long as the session lasts. A reopened
/// stream makes progress when it brings an event not seen before (a new
/// id, or a message on a stream without ids); one that brings nothing new
/// waits twice as long each time. A reopening of the same session lists
/// the tools again (§8.5 rule 3: what changed while it was away is not
/// known); a new session was listed by its renewal.
fn get_loop(sh: &Arc<Shared>) {
    let mut last_id: Option<String> = None;
    let mut retry = None;
    let mut backoff = MIN_WAIT;
    let mut fails = 0;
    let mut opened_in = None;
    while !sh.closed() {
        let generation = sh.state().generation;
        let mut progress = false;
        let opened = Instant::now();
        match get(sh, &sh.url, last_id.as_deref(), None) {
            Err(why) => {
                fails += 1;
                sh.say(&format!("GET stream: {why}"));
            }
            Ok((resp, with_session)) => match resp.status().as_u16() {
                405 => return sh.say("the server offers no GET stream (HTTP 405)"),
                404 if with_session => {
                    if !(sh.renew)(sh, generation, true) {
                        return;
                    }
                    last_id = None;
                    continue;
                }
                200..=299 => {
                    fails = 0;
                    {
                        let mut st = sh.state();
                        if st.generation == generation {
                            st.untried_get = false;
                        }
                    }
                    if opened_in.replace(generation) == Some(generation) {
                        sh.log.line("GET stream reopened; listing the tools again");
                        sh.edge.incoming(br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#);
                    }
                    let mut events = sse::Reader::new(BufReader::new(resp.into_body().into_reader()), MAX_MESSAGE);
                    loop {
                        match events.next_event() {
                            Ok(Some(ev)) => {
                                let new = match (&ev.id, &last_id) {
                                    (Some(id), Some(last)) => id != last,
                                    (Some(_), None) => true,
                                    (None, _) => !ev.data.is_empty(),
                                };
                                if new && ev.id.is_some() {
                                    last_id = ev.id.clone();
                                }
                                progress |= new;
                                if !ev.data.is_empty() && new {
                                    sh.wait_for_room();
                                    incoming(sh, &ev.data);
                                }
                            }
                            Ok(None) => break,
                            Err(e) => {
                                if !sh.closed() {
                                    sh.say(&format!("GET stream: {e}"));
                                }
                                break;
                            }
                        }
                    }
                    retry = events.retry.or(retry);
                    // A stream that stayed open this long was no storm.
                    progress |= opened.elapsed() >= MAX_WAIT;
                    if !sh.closed() {
                        sh.say("GET stream ended; opening it again");
                    }
                }
                status => {
                    fails += 1;
                    sh.say(&format!("GET stream: HTTP {status}"));
                }
            },
        }
        if fails >= TRIES {
            return sh.lost(&format!("its GET stream could not be opened again in {TRIES} tries"));
        }
        if !sh.pause(next_wait(retry, &mut backoff, progress)) {
            return;
        }
    }
}

/// A POST's answer stream ended before the answer: GET with
/// `Last-Event-ID` until the answer comes, within the request's own
/// deadline (set when it was queued: [`cancel::Call`]); a cancel ends the
/// wait between two tries and drops the resumed stream.
pub(super) fn resume(sh: &Arc<Shared>, peek: &Peek, mut last_id: String, mut retry: Option<Duration>) {
    let call = cancel::current();
    let deadline = call.as_ref().map_or_else(|| Instant::now() + sh.request_timeout, |c| c.deadline);
    let mut backoff = MIN_WAIT;
    let mut why = String::from("its event stream ended before the answer");
    let mut progress = false;
    for _ in 0..TRIES {
        let wait = next_wait(retry, &mut backoff, std::mem::take(&mut progress));
        if Instant::now() + wait >= deadline || !pause(sh, call.as_deref(), wait) {
            break;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        match get(sh, &sh.url, Some(&last_id), Some(left)) {
            Err(e) => why = e,
            Ok((resp, _)) if (200..300).contains(&resp.status().as_u16()) => {
                let mut events = sse::Reader::new(BufReader::new(resp.into_body().into_reader()), MAX_MESSAGE);
                while let Ok(Some(ev)) = events.next_event() {
                    progress = true;
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
    if call.as_ref().is_some_and(|c| c.cancelled()) {
        why = "cancelled; its stream was dropped".into();
    }
    failed(sh, peek, &why);
}

/// Waits `d` between two tries of a call's stream; false when the link
/// ended or the call was cancelled meanwhile.
fn pause(sh: &Shared, call: Option<&cancel::Call>, d: Duration) -> bool {
    let Some(call) = call else { return sh.pause(d) };
    crossbeam_channel::select! {
        recv(sh.stopped) -> _ => {},
        recv(call.woken) -> _ => {},
        default(d) => {},
    }
    !sh.closed() && !call.cancelled()
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
            return s.say(&format!("sse stream: {why}"));
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
                sh.say("sse stream: endpoint known");
                sh.state().endpoint = Some(url);
                sh.endpoint_known.notify_all();
            }
            Ok(Some(ev)) if !ev.data.is_empty() => {
                sh.wait_for_room();
                incoming(sh, &ev.data);
            }
            Ok(Some(_)) => {}
            Ok(None) => return "the server closed it".into(),
            Err(e) => return e.to_string(),
        }
    }
}
