//! A safety guard: blocks `bash` tool calls whose command matches a danger
//! pattern, and audits every lifecycle event (stderr, and the `audit_log`
//! tool, which returns the events seen so far in order).
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use zot_host::ext::{Extension, ToolResult, Verdict};

const DANGER: &[&str] = &["rm -rf", "mkfs", "dd if=", ":(){", "> /dev/sd"];
const EVENTS: &[&str] = &["session_start", "turn_start", "turn_end", "tool_call", "assistant_message"];

fn main() {
    let mut e = Extension::new("guard", "1.0.0");

    e.intercept_tool_call(|tool, args| {
        let command = args.get("command").and_then(Value::as_str).unwrap_or("");
        match DANGER.iter().find(|p| tool == "bash" && command.contains(*p)) {
            Some(p) => Verdict::block(format!("refused: command matches the danger pattern \"{p}\"")),
            None => Verdict::Allow,
        }
    });

    let audit = Arc::new(Mutex::new(Vec::<String>::new()));
    for event in EVENTS {
        let audit = Arc::clone(&audit);
        e.on(event, move |event, payload| {
            let line = format!("event {event} {}", Value::Object(payload.clone()));
            zot_host::logf!("{line}");
            if let Ok(mut a) = audit.lock() {
                a.push(line);
            }
        });
    }

    e.tool("audit_log", "Events the guard has seen, oldest first, one per line.", json!({"type": "object", "properties": {}}), move |_| {
        match audit.lock() {
            Ok(a) => ToolResult::text(a.join("\n")),
            Err(_) => ToolResult::error_text("audit log unavailable"),
        }
    });

    if let Err(err) = e.run() {
        zot_host::logf!("fatal: {err}");
    }
}
