//! Where a call is when it ends (docs/protocol.md §4, §6.1, §6.2, §7.1), through
//! the real `zot serve` binary with small Python extensions
//! (tests/fixtures/calls.py): serve's `cancel` at every stage of a call,
//! cancels while a `tool_call` chain waits, the interactive refusal and
//! the end of input, the requests piped before `shutdown`, and the names
//! of an extension that restarts.

mod common;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use common::{fixture, write_manifest, TempDir};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use zot_proc::{session_args, Zot};

/// `zot serve` and every frame it wrote so far.
struct Serve {
    z: Zot,
    frames: Vec<Value>,
    /// The responses claimed so far: an id used again means a new answer.
    claimed: Vec<usize>,
    exts: usize,
}

/// The longest wait for anything observable: generous, for a loaded
/// machine.
const WAIT: Duration = Duration::from_secs(60);

/// Python can take seconds to start on a loaded machine: the load is not
/// what these tests are about. Nor are the call timeouts: a call these
/// tests hold in flight (to cancel it, or to see where it is) must not
/// time out meanwhile, however long the test takes to get there.
const SLOW_START: [&str; 10] = [
    "--hello-timeout",
    "60",
    "--ready-grace",
    "60",
    "--tool-timeout",
    "60",
    "--command-timeout",
    "60",
    "--intercept-timeout",
    "60",
];

impl Serve {
    fn start(t: &TempDir, exts: &[PathBuf], extra: &[&str]) -> Serve {
        let extra: Vec<&str> = SLOW_START.iter().copied().chain(extra.iter().copied()).collect();
        let args = session_args(t.path(), Some("serve"), exts, &extra);
        Serve { z: Zot::spawn(t.path(), &args, &[]), frames: Vec::new(), claimed: Vec::new(), exts: exts.len() }
    }

    fn read(&mut self, limit: Duration) -> Option<usize> {
        let line = self.z.next_line(limit)?;
        let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        self.frames.push(v);
        Some(self.frames.len() - 1)
    }

    /// The index of the first frame `pred` holds for, read or to come.
    fn find(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> usize {
        self.find_at(what, |_, f| pred(f))
    }

    /// [`Serve::find`], with the frame's index given to `pred` too.
    fn find_at(&mut self, what: &str, pred: impl Fn(usize, &Value) -> bool) -> usize {
        if let Some(i) = (0..self.frames.len()).find(|&i| pred(i, &self.frames[i])) {
            return i;
        }
        let end = Instant::now() + WAIT;
        loop {
            match self.read(end.saturating_duration_since(Instant::now())) {
                Some(i) if pred(i, &self.frames[i]) => return i,
                Some(_) => {}
                None => panic!("no frame {what} within {WAIT:?}\n{}", self.z.context()),
            }
        }
    }

    /// The index of the first response to `id` not claimed by a
    /// [`Serve::request`] before.
    fn at(&mut self, id: &str) -> usize {
        let claimed = std::mem::take(&mut self.claimed);
        let i = self.find_at(&format!("response {id}"), |i, f| !claimed.contains(&i) && f["type"] == "response" && f["id"] == id);
        self.claimed = claimed;
        i
    }

    fn response(&mut self, id: &str) -> Value {
        let i = self.at(id);
        self.frames[i].clone()
    }

    fn send(&mut self, v: Value) {
        self.z.send(&v.to_string());
    }

    /// Sends `v` and claims its answer, so an id used again waits for a
    /// new one.
    fn request(&mut self, v: Value) -> Value {
        let id = v["id"].as_str().expect("string id").to_string();
        self.send(v);
        let i = self.at(&id);
        self.claimed.push(i);
        self.frames[i].clone()
    }

    /// Waits for `ready`, with every extension in it.
    fn ready(&mut self) {
        let i = self.find("ready", |f| f["type"] == "ready");
        let n = self.frames[i]["extensions"].as_array().map_or(0, Vec::len);
        assert_eq!(n, self.exts, "not every extension is ready\n{}", self.z.context());
    }

    fn finish(&mut self) -> i32 {
        self.z.close_stdin();
        for line in self.z.read_to_end(WAIT) {
            self.frames.push(serde_json::from_str(&line).unwrap_or(Value::Null));
        }
        self.z.exit_code(WAIT)
    }
}

/// An extension running tests/fixtures/calls.py with `cfg` (its `name`
/// and `log` filled in), under `t/exts/<name>`.
fn ext(t: &TempDir, name: &str, mut cfg: Value) -> PathBuf {
    cfg["name"] = json!(name);
    cfg["log"] = json!(log_path(t, name).display().to_string());
    let restart = cfg.get("restart").cloned();
    let mut m = json!({"name": name, "version": "1.0.0", "exec": "python3",
        "args": [fixture("calls.py").display().to_string(), cfg.to_string()]});
    if let Some(r) = restart {
        m["restart"] = r;
    }
    write_manifest(&t.path().join("exts"), name, m)
}

fn log_path(t: &TempDir, name: &str) -> PathBuf {
    t.path().join(format!("{name}.seen"))
}

/// What extension `name` noted so far, one line per frame.
fn seen(t: &TempDir, name: &str) -> Vec<String> {
    read_lines(&log_path(t, name))
}

fn read_lines(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p).unwrap_or_default().lines().map(str::to_string).collect()
}

/// Polls until extension `name` noted `line`.
fn wait_seen(t: &TempDir, name: &str, line: &str) {
    let ok = common::wait_until(WAIT, || seen(t, name).iter().any(|l| l == line));
    assert!(ok, "{name} never noted {line:?}: {:?}", seen(t, name));
}

fn code(r: &Value) -> &str {
    r["error"]["code"].as_str().unwrap_or("")
}

#[test]
fn cancel_answers_a_tool_a_command_and_an_intercept_wherever_they_are() {
    // docs/protocol.md §4 `cancel`: the target is answered `cancelled` before
    // the `cancel` response; `false` for one answered or never made.
    let t = TempDir::new("calls-cancel");
    let a = ext(&t, "a", json!({"tools": ["hold", "echo"], "commands": ["hold"]}));
    let b = ext(&t, "b", json!({"intercepts": ["turn_start"], "intercept_ms": 60000}));
    let mut s = Serve::start(&t, &[a, b], &[]);
    s.ready();
    s.send(json!({"id": "t", "type": "tool", "name": "hold"}));
    s.send(json!({"id": "c", "type": "command", "name": "hold"}));
    s.send(json!({"id": "i", "type": "intercept", "event": "turn_start", "step": 1}));
    wait_seen(&t, "a", "tool_call hold");
    wait_seen(&t, "a", "command hold");
    wait_seen(&t, "b", "intercept turn_start null");
    for target in ["t", "c", "i"] {
        let id = format!("x-{target}");
        s.send(json!({"id": id, "type": "cancel", "target": target}));
        let cancel = s.at(&id);
        assert_eq!(s.frames[cancel]["result"], json!({"cancelled": true}), "{}", s.frames[cancel]);
        let answer = s.at(target);
        assert!(answer < cancel, "the target's answer comes first");
        assert_eq!(code(&s.frames[answer]), "cancelled", "{}", s.frames[answer]);
    }
    // The tool's extension was told.
    wait_seen(&t, "a", "tool_cancel");
    // Answered already, or never made: nothing to cancel.
    let e = s.request(json!({"id": "e", "type": "tool", "name": "echo"}));
    assert_eq!(e["ok"], true, "{e}");
    for target in [json!("e"), json!("t"), json!("nope"), json!(42)] {
        let r = s.request(json!({"id": "again", "type": "cancel", "target": target}));
        assert_eq!(r["result"], json!({"cancelled": false}), "{r}");
    }
    let r = s.request(json!({"id": "bad", "type": "cancel"}));
    assert_eq!(code(&r), "bad_request", "{r}");
    assert_eq!(s.finish(), 0);
}

#[test]
fn a_call_waiting_for_the_load_or_a_restart_is_cancelled_there_and_never_runs() {
    // docs/protocol.md §6.1: cancellable wherever it is; one cancelled before it
    // reached its tool never reaches it.
    let t = TempDir::new("calls-cancel-parked");
    let once = t.path().join("once");
    let a = ext(&t, "a", json!({"tools": ["crash", "late"], "restart": "on-failure", "once": once.display().to_string()}));
    let mut s = Serve::start(&t, &[a], &["--tool-timeout", "60"]);
    s.ready();
    let r = s.request(json!({"id": "boom", "type": "tool", "name": "crash"}));
    assert_eq!(code(&r), "extension_exited", "{r}");
    // Parked for the restart, then cancelled before it is over.
    s.send(json!({"id": "p", "type": "tool", "name": "late"}));
    let r = s.request(json!({"id": "x", "type": "cancel", "target": "p"}));
    assert_eq!(r["result"], json!({"cancelled": true}), "{r}");
    assert_eq!(code(&s.response("p")), "cancelled");
    s.find("the restart", |f| f["type"] == "extension_ready" && s_count_ready(f));
    let r = s.request(json!({"id": "after", "type": "tool", "name": "late"}));
    assert_eq!(r["ok"], true, "{r}");
    let calls: Vec<String> = seen(&t, "a").into_iter().filter(|l| l.starts_with("tool_call late")).collect();
    assert_eq!(calls.len(), 1, "the cancelled call never reached the new process: {:?}", seen(&t, "a"));
    assert_eq!(s.finish(), 0);
}

fn s_count_ready(f: &Value) -> bool {
    f["extension"] == "a"
}

/// Three extensions for a cancel while the `tool_call` chain waits: `a`
/// calls `target` of `b`, `g` intercepts every tool call and answers after
/// 4 s, so that the cancel (or exit) `a` makes 100 ms after its call comes
/// while the chain waits, however loaded the machine.
fn chain_setup(t: &TempDir) -> Vec<PathBuf> {
    vec![
        ext(t, "a", json!({"tools": ["call"]})),
        ext(t, "b", json!({"tools": ["target", "echo"], "events": ["tool_call"]})),
        ext(t, "g", json!({"intercepts": ["tool_call"], "intercept_ms": 4000})),
    ]
}

/// Once `g` answered its late intercept, and the host read that answer (an
/// intercept of serve's own, answered after it, in `g`'s order), a call to
/// `b` shows whether the cancelled call ever reached `b`.
fn assert_target_never_ran(s: &mut Serve, t: &TempDir) {
    wait_seen(t, "g", "intercept replied");
    let r = s.request(json!({"id": "after-g", "type": "intercept", "event": "tool_call", "tool_id": "z", "tool_name": "z", "tool_args": {}}));
    assert_eq!(r["result"]["block"], false, "{r}");
    let r = s.request(json!({"id": "after-b", "type": "tool", "name": "echo"}));
    assert_eq!(r["ok"], true, "{r}");
    let b = seen(t, "b");
    assert!(!b.iter().any(|l| l.contains("target")), "the cancelled call reached b: {b:?}");
}

#[test]
fn call_tool_cancel_while_the_chain_waits_means_the_target_never_runs() {
    let t = TempDir::new("calls-chain-cancel");
    let mut s = Serve::start(&t, &chain_setup(&t), &[]);
    s.ready();
    let r = s.request(json!({"id": "o", "type": "tool", "name": "call", "args": {"to": "target", "cancel_ms": 100}}));
    let text = r["result"]["content"][0]["text"].as_str().unwrap_or_default().to_string();
    assert!(text.contains("cancelled"), "a got its cancelled answer: {r}");
    assert_target_never_ran(&mut s, &t);
    assert_eq!(s.finish(), 0);
}

#[test]
fn a_callers_exit_while_the_chain_waits_means_the_target_never_runs() {
    let t = TempDir::new("calls-chain-exit");
    let mut s = Serve::start(&t, &chain_setup(&t), &[]);
    s.ready();
    let r = s.request(json!({"id": "o", "type": "tool", "name": "call", "args": {"to": "target", "exit_ms": 100}}));
    assert_eq!(code(&r), "extension_exited", "{r}");
    assert_target_never_ran(&mut s, &t);
    assert_eq!(s.finish(), 0);
}

#[test]
fn an_agent_tool_id_like_the_hosts_own_is_another_call() {
    // docs/protocol.md §6.1: separate namespaces. The agent makes a call with
    // the very tool_id the host made for `a`'s call; `a` cancelling its
    // own call does not cancel the agent's.
    let t = TempDir::new("calls-namespaces");
    let a = ext(&t, "a", json!({"tools": ["call"]}));
    let b = ext(&t, "b", json!({"tools": ["hold", "hold2"]}));
    let g = ext(&t, "g", json!({"events": ["tool_call"]}));
    let mut s = Serve::start(&t, &[a, b, g], &[]);
    s.ready();
    // `a` cancels its call 5 s after making it: by then the agent's call
    // with the same tool_id is in flight, however loaded the machine, so
    // the cancel has something to get wrong.
    s.send(json!({"id": "o", "type": "tool", "name": "call", "args": {"to": "hold", "cancel_ms": 5000}}));
    let host_id = || seen(&t, "g").iter().find_map(|l| l.strip_prefix("tool_id ").map(str::to_string));
    assert!(common::wait_until(WAIT, || host_id().is_some()), "g never saw the host's tool_id: {:?}", seen(&t, "g"));
    let host_made = host_id().unwrap_or_default();
    wait_seen(&t, "b", "tool_call hold");
    assert!(host_made.starts_with("ext-call-"), "{host_made}");
    s.send(json!({"id": "mine", "type": "tool", "name": "hold2", "tool_id": host_made}));
    wait_seen(&t, "b", "tool_call hold2");
    let r = s.response("o");
    assert!(r["result"]["content"][0]["text"].as_str().unwrap_or_default().contains("cancelled"), "{r}");
    // The agent's call is still in flight: only it is cancelled by its key.
    let r = s.request(json!({"id": "x", "type": "cancel", "target": "mine"}));
    assert_eq!(r["result"], json!({"cancelled": true}), "{r}");
    assert_eq!(code(&s.response("mine")), "cancelled");
    assert_eq!(s.finish(), 0);
}

#[test]
fn an_interactive_tool_is_refused_before_any_interceptor_sees_it() {
    // docs/protocol.md §6.2: without --interactive-tools, answered at once,
    // before any interceptor or event sees the call.
    let t = TempDir::new("calls-interactive-refused");
    let a = ext(&t, "a", json!({"tools": ["call"]}));
    let b = ext(&t, "b", json!({"tools": ["ask", "echo"], "interactive": ["ask"]}));
    let g = ext(&t, "g", json!({"intercepts": ["tool_call"], "events": ["tool_call"]}));
    let mut s = Serve::start(&t, &[a, b, g], &[]);
    s.ready();
    let r = s.request(json!({"id": "o", "type": "tool", "name": "call", "args": {"to": "ask"}}));
    let text = r["result"]["content"][0]["text"].as_str().unwrap_or_default().to_string();
    assert!(text.contains("interactive extension tools require an interactive host"), "{r}");
    let r = s.request(json!({"id": "d", "type": "tool", "name": "ask"}));
    assert_eq!(r["result"]["is_error"], true, "{r}");
    // g sees the next call, through the chain and the event; never `ask`.
    let r = s.request(json!({"id": "o2", "type": "tool", "name": "call", "args": {"to": "echo", "id": "c2"}}));
    assert_eq!(r["ok"], true, "{r}");
    wait_seen(&t, "g", "event tool_call \"echo\"");
    let g = seen(&t, "g");
    assert!(!g.iter().any(|l| l.contains("ask")), "g saw the refused call: {g:?}");
    assert!(!seen(&t, "b").iter().any(|l| l.contains("ask")), "{:?}", seen(&t, "b"));
    assert_eq!(s.finish(), 0);
}

#[test]
fn interactive_calls_in_flight_are_cancelled_at_the_end_of_input() {
    // docs/protocol.md §6.2: serve --interactive-tools still exits.
    let t = TempDir::new("calls-interactive-eof");
    let b = ext(&t, "b", json!({"tools": ["hold_ask"], "interactive": ["hold_ask"]}));
    let mut s = Serve::start(&t, &[b], &["--interactive-tools"]);
    s.ready();
    s.send(json!({"id": "q", "type": "tool", "name": "hold_ask"}));
    wait_seen(&t, "b", "tool_call hold_ask");
    s.z.close_stdin();
    let started = Instant::now();
    assert_eq!(s.z.exit_code(WAIT), 0);
    eprintln!("exited {:?} after the end of input", started.elapsed());
    for line in s.z.read_to_end(WAIT) {
        s.frames.push(serde_json::from_str(&line).unwrap_or(Value::Null));
    }
    let r = s.response("q");
    assert_eq!(code(&r), "cancelled", "{r}");
    wait_seen(&t, "b", "tool_cancel");
}

#[test]
fn requests_piped_before_shutdown_get_real_answers() {
    // docs/protocol.md §4: requests before `shutdown` are dispatched first, in
    // order, those waiting for the initial load when it ends.
    let t = TempDir::new("calls-piped-shutdown");
    let a = ext(&t, "a", json!({"tools": ["echo"], "commands": ["hi"]}));
    let mut s = Serve::start(&t, &[a], &[]);
    let piped = [
        json!({"id": 1, "type": "tool", "name": "echo", "args": {"n": 1}}),
        json!({"id": 2, "type": "command", "name": "hi"}),
        json!({"id": 3, "type": "intercept", "event": "tool_call", "tool_id": "t1", "tool_name": "bash", "tool_args": {}}),
        json!({"id": 4, "type": "shutdown"}),
        json!({"id": 5, "type": "ping"}),
    ];
    let all: String = piped.iter().map(|v| format!("{v}\n")).collect();
    s.z.write(all.as_bytes());
    assert_eq!(s.finish(), 0);
    let resp = |s: &Serve, id: i64| s.frames.iter().find(|f| f["type"] == "response" && f["id"] == id).cloned().unwrap_or(Value::Null);
    assert_eq!(resp(&s, 1)["ok"], true, "{}", resp(&s, 1));
    assert_eq!(resp(&s, 2)["result"]["display"], "a", "{}", resp(&s, 2));
    assert_eq!(resp(&s, 3)["result"]["block"], false, "{}", resp(&s, 3));
    assert_eq!(code(&resp(&s, 5)), "shutting_down");
    let last = s.frames.iter().rev().find(|f| f["type"] == "response").cloned();
    assert_eq!(last.map(|f| f["id"].clone()), Some(json!(4)), "the shutdown response is last");
}

#[test]
fn an_intercept_its_interceptors_never_answered_before_shutdown_is_answered_shutting_down() {
    // docs/protocol.md §4 Shutdown: a request still in flight is answered with
    // the extension's answer if it came before its exit, else
    // `shutting_down`; never with a verdict nobody gave (an allow, or a
    // fail-closed block, for an interceptor that only exited).
    // The intercept timeout is longer than the stop: the interceptor's end
    // comes first.
    let long = ["--intercept-timeout", "60"];
    for extra in [&long[..], &["--intercept-timeout", "60", "--fail-closed"][..]] {
        let t = TempDir::new("calls-intercept-shutdown");
        let i = ext(&t, "i", json!({"intercepts": ["turn_start"], "intercept_ms": 60000}));
        let mut s = Serve::start(&t, &[i], extra);
        s.ready();
        s.send(json!({"id": "i", "type": "intercept", "event": "turn_start", "step": 1}));
        wait_seen(&t, "i", "intercept turn_start null");
        s.send(json!({"id": "sd", "type": "shutdown"}));
        let r = s.response("i");
        assert_eq!(code(&r), "shutting_down", "{extra:?}: {r}");
        assert!(s.at("i") < s.at("sd"), "the shutdown response is last");
        assert_eq!(s.finish(), 0);
    }
    // The first interceptor answers after the shutdown began; the second,
    // stopped by then, is never asked: its verdict is nobody's.
    let t = TempDir::new("calls-intercept-shutdown-next");
    let i1 = ext(&t, "i1", json!({"intercepts": ["turn_start"], "intercept_ms": 1500}));
    let i2 = ext(&t, "i2", json!({"intercepts": ["turn_start"]}));
    let mut s = Serve::start(&t, &[i1, i2], &long);
    s.ready();
    s.send(json!({"id": "i", "type": "intercept", "event": "turn_start", "step": 1}));
    wait_seen(&t, "i1", "intercept turn_start null");
    s.send(json!({"id": "sd", "type": "shutdown"}));
    let r = s.response("i");
    assert_eq!(code(&r), "shutting_down", "{r}");
    assert!(!seen(&t, "i2").iter().any(|l| l.starts_with("intercept")), "{:?}", seen(&t, "i2"));
    assert_eq!(s.finish(), 0);
}

#[test]
fn the_readmes_serve_example_piped_in_one_go_gives_its_answers() {
    // The `zot serve` example of docs/serve.md, its `→` lines written at
    // once (`shutdown` included), answers as the page shows: every request
    // before `shutdown` gets a real answer (docs/protocol.md §4).
    let page = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/serve.md")).expect("docs/serve.md");
    let section = page.split("::zot_serve_by_example -->").nth(1).expect("the serve example");
    let block = section.split("```").nth(1).expect("its example block");
    let mut lines = block.lines().filter(|l| !l.trim().is_empty());
    let command = lines.next().expect("the command line");
    assert_eq!(command, "$ zot serve --no-ext --ext examples/rust/weather");
    let (mut input, mut expected) = (String::new(), Vec::new());
    for l in lines {
        match l.strip_prefix("→ ") {
            Some(req) => {
                input.push_str(req);
                input.push('\n');
            }
            None => expected.push(serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("{e}: {l}"))),
        }
    }
    let t = TempDir::new("calls-readme");
    let weather = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/rust/weather");
    let mut args = ["serve", "--no-ext", "--ext", &weather.display().to_string()].map(str::to_string).to_vec();
    args.extend(SLOW_START.map(str::to_string));
    let mut z = Zot::spawn(t.path(), &args, &[]);
    z.write(input.as_bytes());
    z.close_stdin();
    let got: Vec<Value> = z.read_to_end(WAIT).iter().map(|l| serde_json::from_str(l).unwrap_or(Value::Null)).collect();
    assert_eq!(z.exit_code(WAIT), 0);
    // Responses may come in any order; the shutdown response is last.
    let sorted = |v: &[Value]| {
        let mut s: Vec<String> = v.iter().map(Value::to_string).collect();
        s.sort();
        s
    };
    assert_eq!(sorted(&got), sorted(&expected), "\n{}", z.context());
    assert_eq!(got.last(), expected.last(), "the shutdown response is last");
}

/// The JSON the fixture's tool answered with.
fn answer_of(r: &Value) -> Value {
    let text = r["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text: {r}"));
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn list_entry(s: &mut Serve, name: &str) -> Value {
    // An id of its own each time: `request` finds the first response to it.
    let id = format!("list-{}", s.frames.len());
    let l = s.request(json!({"id": id, "type": "list"}));
    let exts = l["result"]["extensions"].as_array().cloned().unwrap_or_default();
    exts.into_iter().find(|e| e["extension"] == name || e["name"] == name).unwrap_or(Value::Null)
}

#[test]
fn stdout_closed_before_the_exit_still_restarts() {
    // docs/protocol.md §7.1: the restart is decided at the real exit, however
    // the end began.
    let t = TempDir::new("calls-close-then-exit");
    let once = t.path().join("once");
    let a = ext(&t, "a", json!({"tools": ["echo"], "close_stdout_then_exit": true, "restart": "always", "once": once.display().to_string()}));
    let mut s = Serve::start(&t, &[a], &["--tool-timeout", "60"]);
    s.ready();
    let exited = s.find("extension_exited", |f| f["type"] == "extension_exited");
    assert_eq!(s.frames[exited]["code"], 1, "{}", s.frames[exited]);
    s.find("extension_restarting", |f| f["type"] == "extension_restarting");
    let r = s.request(json!({"id": "e", "type": "tool", "name": "echo"}));
    assert_eq!(r["ok"], true, "{r}");
    let e = list_entry(&mut s, "a");
    assert_eq!((e["state"].as_str(), e["restarts"].as_u64()), (Some("ready"), Some(1)), "{e}");
    assert_eq!(s.finish(), 0);
}

#[test]
fn a_restarting_extensions_names_are_not_taken_by_a_shadowed_one() {
    // docs/protocol.md §7.1: reserved while it restarts; the call made meanwhile
    // waits for it (the tool timeout is long: the wait is for the restart,
    // however slow Python starts here).
    let t = TempDir::new("calls-reserved");
    let once = t.path().join("once");
    let r0 = ext(&t, "r0", json!({"tools": ["shared", "crash"], "restart": "on-failure", "once": once.display().to_string()}));
    let r1 = ext(&t, "r1", json!({"tools": ["shared"]}));
    let mut s = Serve::start(&t, &[r0, r1], &["--tool-timeout", "60"]);
    s.ready();
    let r = s.request(json!({"id": "crash", "type": "tool", "name": "crash"}));
    assert_eq!(code(&r), "extension_exited", "{r}");
    let r = s.request(json!({"id": "during", "type": "tool", "name": "shared"}));
    assert_eq!(answer_of(&r)["by"], "r0", "answered by the restarted owner: {r}");
    let changed: Vec<Value> = s.frames.iter().filter(|f| f["type"] == "tools_changed").cloned().collect();
    assert!(changed.iter().all(|f| f["extension"] == "r0"), "{changed:?}");
    assert!(!seen(&t, "r1").iter().any(|l| l.starts_with("tool_call")), "{:?}", seen(&t, "r1"));
    assert_eq!(s.finish(), 0);
}

#[test]
fn an_extensions_call_tool_to_a_restarting_extension_waits_for_it() {
    // docs/protocol.md §6.1 and §7.1: a `call_tool` is routed like a model's
    // call, so while its target restarts it waits for it (not
    // `unknown tool`), and the restarted process answers.
    let t = TempDir::new("calls-call-tool-restart");
    let once = t.path().join("once");
    let a = ext(&t, "a", json!({"tools": ["call"]}));
    let r0 = ext(&t, "r0", json!({"tools": ["shared", "crash"], "restart": "on-failure", "once": once.display().to_string()}));
    let mut s = Serve::start(&t, &[a, r0], &["--tool-timeout", "60"]);
    s.ready();
    let r = s.request(json!({"id": "crash", "type": "tool", "name": "crash"}));
    assert_eq!(code(&r), "extension_exited", "{r}");
    let r = s.request(json!({"id": "o", "type": "tool", "name": "call", "args": {"to": "shared"}}));
    let by = answer_of(&r);
    assert_eq!(by["by"], "r0", "answered through a by the restarted r0: {r}");
    let ready = s.frames.iter().filter(|f| f["type"] == "extension_ready" && f["extension"] == "r0").count();
    assert_eq!(ready, 2, "r0 was ready again before it answered");
    assert_eq!(s.finish(), 0);
}

#[test]
fn a_name_given_up_for_good_goes_to_the_next_in_load_order() {
    // Not registered again after the restart: r1 takes `shared` then; and
    // with policy `never`, at once.
    let t = TempDir::new("calls-given-up");
    let once = t.path().join("once");
    let r0 = ext(&t, "r0", json!({"tools": ["shared", "crash"], "tools_later": ["crash"], "restart": "on-failure", "once": once.display().to_string()}));
    let r1 = ext(&t, "r1", json!({"tools": ["shared"]}));
    let mut s = Serve::start(&t, &[r0, r1], &["--tool-timeout", "60"]);
    s.ready();
    let r = s.request(json!({"id": "crash", "type": "tool", "name": "crash"}));
    assert_eq!(code(&r), "extension_exited", "{r}");
    // A request parked meanwhile fails as unknown (docs/protocol.md §7.1:
    // `call_lifecycle::a_request_parked_for_a_name_its_owner_gives_up_never_runs_on_the_next_owner`);
    // once the restart gave the name up, requests go to r1.
    let changed = s.find("tools_changed", |f| f["type"] == "tools_changed");
    assert_eq!(s.frames[changed]["reason"], "restarted");
    assert!(s.frames[changed]["tools"].as_array().is_some_and(|t| t.contains(&json!("shared"))), "{}", s.frames[changed]);
    let r = s.request(json!({"id": "after", "type": "tool", "name": "shared"}));
    assert_eq!(answer_of(&r)["by"], "r1", "{r}");
    assert_eq!(s.finish(), 0);

    let t = TempDir::new("calls-given-up-never");
    let r0 = ext(&t, "r0", json!({"tools": ["shared", "crash"]}));
    let r1 = ext(&t, "r1", json!({"tools": ["shared"]}));
    let mut s = Serve::start(&t, &[r0, r1], &[]);
    s.ready();
    let r = s.request(json!({"id": "crash", "type": "tool", "name": "crash"}));
    assert_eq!(code(&r), "extension_exited", "{r}");
    let r = s.request(json!({"id": "after", "type": "tool", "name": "shared"}));
    assert_eq!(answer_of(&r)["by"], "r1", "{r}");
    assert_eq!(s.finish(), 0);
}

#[test]
fn serve_restart_starts_one_extension_anew_and_calls_wait_for_it() {
    // docs/protocol.md §4 `restart`.
    let t = TempDir::new("calls-restart-request");
    let a = ext(&t, "a", json!({"tools": ["echo", "hold"]}));
    let b = ext(&t, "b", json!({"tools": ["other"]}));
    let mut s = Serve::start(&t, &[a, b], &["--tool-timeout", "60"]);
    s.ready();
    let before = list_entry(&mut s, "a")["pid"].clone();
    let other_before = list_entry(&mut s, "b")["pid"].clone();
    s.send(json!({"id": "held", "type": "tool", "name": "hold"}));
    assert!(common::wait_until(WAIT, || seen(&t, "a").iter().any(|l| l == "tool_call hold")), "{:?}", seen(&t, "a"));
    s.send(json!({"id": "r", "type": "restart", "name": "a"}));
    s.send(json!({"id": "during", "type": "tool", "name": "echo"}));
    // The call in flight to the old process fails, saying why.
    let held = s.response("held");
    assert_eq!(code(&held), "extension_exited", "{held}");
    assert!(held["error"]["message"].as_str().unwrap_or("").contains("stopped for restart"), "{held}");
    let r = s.response("r");
    assert_eq!(r["result"]["extension"], "a", "{r}");
    assert!(r["result"]["pid"].is_u64() && r["result"]["pid"] != before, "a new process: {r}");
    let during = s.response("during");
    assert_eq!(json!(answer_of(&during)["pid"]), r["result"]["pid"], "answered by the new process: {during}");
    assert_eq!(seen(&t, "a").iter().filter(|l| *l == "shutdown").count(), 1, "stopped as at shutdown: {:?}", seen(&t, "a"));
    let e = list_entry(&mut s, "a");
    assert_eq!((e["state"].as_str(), e["restarts"].as_u64()), (Some("ready"), Some(0)), "{e}");
    assert_eq!(list_entry(&mut s, "b")["pid"], other_before, "the others are untouched");
    let r = s.request(json!({"id": "u", "type": "restart", "name": "nope"}));
    assert_eq!(code(&r), "unknown_extension", "{r}");
    let r = s.request(json!({"id": "m", "type": "restart"}));
    assert_eq!(code(&r), "bad_request", "{r}");
    assert_eq!(s.finish(), 0);
}

#[test]
fn an_extension_stopped_by_a_restart_request_is_listed_restarting() {
    // docs/protocol.md §4 `restart`, §7.1: coming back, it is `restarting`
    // while its old process stops, not `exited`.
    let t = TempDir::new("calls-restart-state");
    let go = t.path().join("go");
    let once = t.path().join("once");
    let a = ext(&t, "a", json!({"tools": ["echo"], "hold_shutdown": go.display().to_string(), "once": once.display().to_string()}));
    let mut s = Serve::start(&t, &[a], &[]);
    s.ready();
    s.send(json!({"id": "r", "type": "restart", "name": "a"}));
    wait_seen(&t, "a", "shutdown");
    let e = list_entry(&mut s, "a");
    assert_eq!(e["state"], "restarting", "{e}");
    std::fs::write(&go, "").expect("let it go");
    let r = s.response("r");
    assert_eq!(r["result"]["extension"], "a", "{r}");
    assert_eq!(list_entry(&mut s, "a")["state"], "ready");
    assert_eq!(s.finish(), 0);
}

#[test]
fn twenty_restarts_leave_no_zombie() {
    let t = TempDir::new("calls-zombies");
    let a = ext(&t, "a", json!({"tools": ["echo"]}));
    let mut s = Serve::start(&t, &[a], &[]);
    s.ready();
    for i in 0..20 {
        let r = s.request(json!({"id": format!("r{i}"), "type": "restart", "name": "a"}));
        assert_eq!(r["ok"], true, "{r}");
    }
    let pid = s.z.pid;
    let clean = common::wait_until(WAIT, || common::zombie_children(pid).is_empty());
    assert!(clean, "zombies of zot: {:?}", common::zombie_children(pid));
    assert_eq!(s.finish(), 0);
}

#[test]
fn a_null_system_prompt_reaches_interceptors_as_empty() {
    // docs/protocol.md §6.4: `system_prompt` is a string; none (or null) is "".
    let t = TempDir::new("calls-null-prompt");
    let g = ext(&t, "g", json!({"intercepts": ["before_agent_start"]}));
    let mut s = Serve::start(&t, &[g], &[]);
    s.ready();
    let r = s.request(json!({"id": "b", "type": "intercept", "event": "before_agent_start", "system_prompt": null}));
    assert_eq!(r["result"]["system_prompt"], "", "{r}");
    wait_seen(&t, "g", "intercept before_agent_start \"\"");
    assert_eq!(s.finish(), 0);
}

#[test]
fn an_mcp_cancel_while_the_chain_waits_means_the_target_never_runs() {
    // docs/protocol.md §6.1 through `zot mcp`: `notifications/cancelled` for a
    // call still in its `tool_call` intercept chain.
    let t = TempDir::new("calls-mcp-chain");
    let b = ext(&t, "b", json!({"tools": ["target", "echo"], "events": ["tool_call"]}));
    // g answers 4 s after it is asked: the cancel, sent once the test saw
    // it asked, comes first however loaded the machine.
    let g = ext(&t, "g", json!({"intercepts": ["tool_call"], "intercept_ms": 4000}));
    let mut args: Vec<String> = ["mcp", "--no-ext"].iter().chain(SLOW_START.iter()).map(|s| s.to_string()).collect();
    for e in [&b, &g] {
        args.push("--ext".into());
        args.push(e.display().to_string());
    }
    let mut z = Zot::spawn(t.path(), &args, &[]);
    let rpc = |z: &mut Zot, v: Value| {
        let id = v["id"].clone();
        z.send(&v.to_string());
        let line = z.wait_line_within(WAIT, &format!("the answer to {id}"), |l| {
            serde_json::from_str::<Value>(l).is_ok_and(|v| v["id"] == id && v.get("method").is_none())
        });
        serde_json::from_str::<Value>(&line).unwrap_or(Value::Null)
    };
    let init = json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}});
    rpc(&mut z, json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}));
    z.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string());
    z.send(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "target", "arguments": {}}}).to_string());
    wait_seen(&t, "g", "intercept tool_call \"target\"");
    z.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}).to_string());
    wait_seen(&t, "g", "intercept replied");
    // g answers this one after the late reply: once it is answered, the
    // host has read that reply, and b has read anything sent before it.
    let r = rpc(&mut z, json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "echo", "arguments": {}}}));
    assert!(r["result"]["content"][0]["text"].as_str().unwrap_or_default().contains("\"by\": \"b\""), "{r}");
    let seen_b = seen(&t, "b");
    assert!(!seen_b.iter().any(|l| l.contains("target")), "the cancelled call reached b: {seen_b:?}");
    z.close_stdin();
    z.read_to_end(WAIT);
    assert_eq!(z.exit_code(WAIT), 0);
}
