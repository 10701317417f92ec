//! The current protocol revision in one extension: `relay` runs another
//! tool through the host (`call_tool`, with itself as parent; `ask_host`
//! does the same through the extension's `Handle`); `unlock`
//! activates the deferred tool `vault`; `stats` has an output schema;
//! `send_note` (model-only) is replayed by reconciling on its
//! `operation_key`; `confirm` is interactive (a panel, answered with enter
//! or esc);
//! `/weather-now CITY` is a `tool_prompt`, `/reload` a `submit_slash`,
//! `/host-tool NAME` a `call_tool` from a command. Every lifecycle event
//! is kept (typed) for the `events` tool, and `before_agent_start` adds a
//! line to the system prompt.
use crossbeam_channel::{bounded, Sender};
use serde_json::{json, Value};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use zot_host::ext::{self, CallOptions, Event, Exposure, Extension, Panel, Reconciled, ToolOptions, ToolResult, EVENTS};

const HAIKU: &str = "Answer in haiku.";

fn main() {
    let mut e = Extension::new("toolbox", "1.0.0");
    let any = json!({"type": "object"});

    e.tool_with("relay", "Run the tool args.name with args.args through the host.", any.clone(), ToolOptions::default(), |call| {
        let name = call.args["name"].as_str().unwrap_or_default();
        let args = call.args.get("args").cloned().unwrap_or_else(|| json!({}));
        let timeout = call.args["timeout_ms"].as_u64().map(Duration::from_millis);
        match call.call_tool_with(name, args, CallOptions { timeout, ..Default::default() }) {
            Ok(r) => {
                let mut out = ToolResult::text(format!("{name}: {}", r.text()));
                out.is_error = r.is_error;
                out.structured_content = Some(json!({"truncated": r.truncated, "inner": r.structured_content}));
                out
            }
            Err(err) => ToolResult::error_text(format!("relay: {err}")),
        }
    });

    let host = e.handle();
    e.tool("ask_host", "Run the tool args.name through the host, without arguments.", any.clone(), move |args| {
        let name = args["name"].as_str().unwrap_or_default();
        match host.call_tool(name, json!({})) {
            Ok(r) => ToolResult::text(r.text()),
            Err(err) => ToolResult::error_text(err.to_string()),
        }
    });

    e.tool("unlock", "Offer the vault tool from now on.", any.clone(), |_| {
        ToolResult::markdown("**vault** unlocked").activate(["vault"])
    });
    let vault = ToolOptions {
        deferred: true,
        namespace: Some("vault".into()),
        namespace_description: Some("secrets kept by the toolbox".into()),
        ..Default::default()
    };
    e.tool_with("vault", "Read the vault (deferred until unlock).", any.clone(), vault, |_| ToolResult::text("the vault is empty"));

    let stats_schema = json!({"type": "object", "properties": {"chars": {"type": "integer"}, "words": {"type": "integer"}}});
    e.structured_tool("stats", "Count the characters and words of args.text.", any.clone(), stats_schema, |call| {
        let text = call.args["text"].as_str().unwrap_or_default();
        let (chars, words) = (text.chars().count(), text.split_whitespace().count());
        ToolResult::text(format!("{chars} chars, {words} words")).with_structured(json!({"chars": chars, "words": words}))
    });

    let sent = Arc::new(Mutex::new(HashSet::<String>::new()));
    let s = Arc::clone(&sent);
    let model_only = ToolOptions { exposure: Some(Exposure::ModelOnly), ..Default::default() };
    e.tool_with("send_note", "Send args.text once per operation.", any.clone(), model_only, move |call| {
        if let (Some(key), Ok(mut sent)) = (&call.operation_key, s.lock()) {
            sent.insert(key.clone());
        }
        ToolResult::text(format!("sent: {}", call.args["text"].as_str().unwrap_or_default()))
    });
    e.reconcile("send_note", move |call| match (&call.operation_key, sent.lock()) {
        (Some(key), Ok(sent)) if sent.contains(key) => Reconciled::Completed(ToolResult::text("already sent")),
        (Some(_), Ok(_)) => Reconciled::NotStarted,
        _ => Reconciled::Unknown,
    });

    let answer: Arc<Mutex<Option<Sender<bool>>>> = Arc::default();
    let (a, host) = (Arc::clone(&answer), e.handle());
    e.interactive_tool("confirm", "Ask the user to confirm args.question.", any, move |call| {
        let (tx, rx) = bounded(1);
        if let Ok(mut slot) = a.lock() {
            *slot = Some(tx);
        }
        let question = call.args["question"].as_str().unwrap_or("continue?").to_string();
        host.open_panel(Panel { id: "confirm".into(), title: "confirm".into(), lines: vec![question], footer: "enter: yes, esc: no".into() });
        let answer = call.cancel.recv(&rx);
        host.close_panel("confirm");
        match answer {
            Some(true) => ToolResult::text("confirmed"),
            Some(false) => ToolResult::text("declined"),
            None => ToolResult::error_text("cancelled"),
        }
    });
    e.on_panel_key(move |key| {
        let yes = match key.key.as_str() {
            "enter" => true,
            "esc" => false,
            _ => return,
        };
        if let Some(tx) = answer.lock().ok().and_then(|mut slot| slot.take()) {
            let _ = tx.try_send(yes);
        }
    });

    e.command("weather-now", "ask about the weather, with the weather tool's answer", |city| {
        ext::tool_prompt("weather", json!({"city": city}), format!("Summarize the weather in {city}."))
    });
    let host = e.handle();
    e.command("reload", "reload the extensions", move |_| {
        host.submit_slash("/reload-ext");
        ext::noop()
    });
    let host = e.handle();
    e.command("host-tool", "run a tool through the host and show its text", move |name| match host.call_tool(name, json!({})) {
        Ok(r) => ext::display(r.text()),
        Err(err) => ext::Response::error(err.to_string()),
    });

    let seen = Arc::new(Mutex::new(Vec::<Value>::new()));
    for name in EVENTS {
        let seen = Arc::clone(&seen);
        e.on_event(name, move |ev: &Event| {
            if let Ok(mut seen) = seen.lock() {
                seen.push(summary(ev));
            }
        });
    }
    e.tool("events", "The lifecycle events seen so far, oldest first, typed.", json!({"type": "object"}), move |_| {
        let seen = seen.lock().map(|s| s.clone()).unwrap_or_default();
        ToolResult::text(format!("{} events", seen.len())).with_structured(Value::Array(seen))
    });

    e.intercept_before_agent_start(|ev| {
        if ev.system_prompt.contains(HAIKU) {
            return None;
        }
        Some(format!("{}\n{HAIKU} (model {} in {})", ev.system_prompt, ev.model, ev.cwd))
    });

    if let Err(err) = e.run() {
        zot_host::logf!("fatal: {err}");
    }
}

/// The typed fields an event carries, beside its envelope.
fn summary(ev: &Event) -> Value {
    let mut v = json!({"name": ev.name, "session_id": ev.session_id, "cwd": ev.cwd, "sequence": ev.sequence});
    let fields = [
        ("reason", json!(ev.reason)),
        ("text", json!(ev.text)),
        ("step", json!(ev.step)),
        ("stop", json!(ev.stop)),
        ("error", json!(ev.error)),
        ("tool_id", json!(ev.tool_id)),
        ("tool_name", json!(ev.tool_name)),
        ("tool_preview", json!(ev.tool_preview)),
        ("origin_extension", json!(ev.origin_extension)),
        ("decision", json!(ev.decision)),
        ("source", json!(ev.source)),
        ("stage", json!(ev.stage)),
        ("status", json!(ev.status)),
        ("compaction_id", json!(ev.compaction_id)),
        ("agent_id", json!(ev.agent_id)),
        ("agent_run_id", json!(ev.agent_run_id)),
        ("agent_name", json!(ev.agent_name)),
    ];
    for (k, val) in fields {
        if val != json!("") && val != json!(0) {
            v[k] = val;
        }
    }
    if ev.queued {
        v["queued"] = json!(true);
    }
    for (k, val) in [("image_count", ev.image_count), ("message_count", ev.message_count), ("token_estimate", ev.token_estimate)] {
        if let Some(n) = val {
            v[k] = json!(n);
        }
    }
    if let Some(x) = ev.executed {
        v["executed"] = json!(x);
    }
    if !ev.tool_args.is_null() {
        v["tool_args"] = ev.tool_args.clone();
    }
    if let Some(r) = &ev.result {
        v["result"] = json!({"content": r.content, "is_error": r.is_error, "truncated": r.truncated});
    }
    v
}
