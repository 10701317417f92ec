//! The host's events as MCP notifications (`notifications/message`, the
//! `list_changed` ones) and the levels of zot's `notify`.

use crate::host::HostEvent;
use crate::text::strip_controls;
use serde_json::json;
use std::sync::atomic::Ordering;

use super::reply::{changed, resources_changed, Shared};
#[cfg(test)]
use super::wire::{level_index, LEVELS};
use super::wire::{encode, log_message, notification, Gate, DEBUG, ERROR, INFO, MODERN_ERA, NOTICE, WARNING};

/// The MCP level of a zot `notify` level: info→info, success→notice,
/// warn→warning, error→error; anything else is info.
#[cfg(test)]
pub fn notify_level(level: &str) -> &'static str {
    LEVELS[usize::from(zot_level(level))]
}

fn zot_level(level: &str) -> u8 {
    match level {
        "success" => NOTICE,
        "warn" | "warning" => WARNING,
        "error" => ERROR,
        _ => INFO,
    }
}

/// A host event as MCP notifications, sent: on a legacy connection none
/// while the gate is closed or below the level; on a modern one list
/// changes only to subscriptions and notes only inside a request that
/// asked for them (docs/protocol.md §8.4.2 rules 6 and 9). Load failures and
/// exits also go to stderr.
pub(super) fn event(ev: HostEvent, shared: &Shared) {
    if shared.modern() {
        return modern_event(ev, shared);
    }
    for line in event_lines(ev, &shared.gate) {
        shared.send(line);
    }
}

/// A host event on a modern connection.
fn modern_event(ev: HostEvent, shared: &Shared) {
    match ev {
        HostEvent::Notify { extension, level, message } => {
            if !shared.note(&extension, zot_level(&level), &message) {
                eprintln!("zot mcp: {}: {}", strip_controls(&extension), strip_controls(&message));
            }
        }
        HostEvent::Exited { .. } => {
            // The stderr line is the legacy one's.
            let _ = event_lines(ev, &shared.gate);
            changed(shared, true, true);
            resources_changed(shared);
        }
        HostEvent::ToolsChanged { reason, .. } if reason == "exited" || reason == "reloaded" => {}
        HostEvent::ToolsChanged { reason, .. } => changed(shared, true, reason == "restarted"),
        HostEvent::ExtensionReady { .. } => changed(shared, false, true),
        HostEvent::CommandsListed { .. } => changed(shared, false, true),
        HostEvent::ResourcesChanged { .. } => resources_changed(shared),
        HostEvent::Submit { extension, text } => {
            eprintln!("zot mcp: {}: asked to submit a prompt (not supported over MCP): {}", strip_controls(&extension), strip_controls(&text));
        }
        HostEvent::ToolProgress { .. } => {
            for line in event_lines(ev, &shared.gate) {
                shared.send(line);
            }
        }
        other => drop(event_lines(other, &shared.gate)),
    }
}

/// The stderr line of a load failure, naming the server as the console's
/// does; a configuration file that cannot be used names no server.
fn load_failed_line(extension: &str, message: &str, has_log: bool) -> String {
    if !has_log && message.contains(crate::manifest::BROKEN_CONFIG) {
        return format!("error: {message}; none of its servers is loaded");
    }
    if crate::mcpserver::login::is_login_of(extension, message) {
        return message.to_string();
    }
    let mut line = format!("{extension}: failed to load: {message}");
    if has_log {
        line.push_str(&format!(" (see 'zot ext logs {extension}')"));
    }
    line
}

/// A host event as legacy MCP notifications.
fn event_lines(ev: HostEvent, gate: &Gate) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut log = |level: u8, logger: &str, data: String| {
        if gate.allows(level) {
            out.push(encode(&log_message(level, logger, json!(data))));
        }
    };
    match ev {
        HostEvent::Notify { extension, level, message } => {
            if !gate.open.load(Ordering::SeqCst) {
                eprintln!("zot mcp: [{}] {level}: {}", strip_controls(&extension), strip_controls(&message));
            }
            log(zot_level(&level), &extension, message);
        }
        HostEvent::LoadFailed { extension, message, log: file } => {
            eprintln!("zot mcp: {}", strip_controls(&load_failed_line(&extension, &message, file.is_some())));
            log(ERROR, &extension, message);
        }
        HostEvent::Exited { extension, code, signal, restart_follows, .. } => {
            let how = match (code, signal) {
                (_, Some(s)) => format!("killed by signal {s}"),
                (Some(c), None) => format!("exit code {c}"),
                (None, None) => "exit status unknown".into(),
            };
            // Its restart policy brings it back: gone only until then (a
            // restart that gives up says so when it does).
            let msg = if restart_follows {
                format!("extension {extension} exited ({how}); restarting it, its tools and prompts are back when it is ready")
            } else {
                format!("extension {extension} exited ({how}); its tools and prompts are gone")
            };
            eprintln!("zot mcp: {}", strip_controls(&msg));
            log(WARNING, &extension, msg);
            if gate.open.load(Ordering::SeqCst) {
                out.push(encode(&notification("notifications/tools/list_changed", json!({}))));
                out.push(encode(&notification("notifications/prompts/list_changed", json!({}))));
                out.push(encode(&notification("notifications/resources/list_changed", json!({}))));
            }
        }
        HostEvent::Submit { extension, text } => {
            log(DEBUG, &extension, format!("asked to submit a prompt (not supported over MCP): {text}"));
        }
        HostEvent::ExtensionRestarting { extension, attempt, delay_ms, .. } => {
            log(WARNING, &extension, format!("extension {extension} exited; restart {attempt} in {delay_ms} ms"));
        }
        HostEvent::ExtensionCrashLoop { extension, restarts } => {
            let msg = format!("extension {extension} gave up after {restarts} restarts (crash loop); see 'zot ext logs {extension}'");
            eprintln!("zot mcp: {}", strip_controls(&msg));
            log(ERROR, &extension, msg);
        }
        // An exit and a reload are announced already (above, and with
        // `zot/reload`'s answer).
        HostEvent::ToolsChanged { reason, .. } if reason == "exited" || reason == "reloaded" => {}
        HostEvent::ToolsChanged { .. } => {
            if gate.open.load(Ordering::SeqCst) {
                out.push(encode(&notification("notifications/tools/list_changed", json!({}))));
            }
        }
        HostEvent::CommandsListed { .. } => {
            if gate.open.load(Ordering::SeqCst) {
                out.push(encode(&notification("notifications/prompts/list_changed", json!({}))));
            }
        }
        HostEvent::ResourcesChanged { .. } => {
            if gate.open.load(Ordering::SeqCst) {
                out.push(encode(&notification("notifications/resources/list_changed", json!({}))));
            }
        }
        HostEvent::UntrustedProject { dir, extensions, error, changed } => {
            eprintln!("zot mcp: {}", strip_controls(&crate::discovery::not_loaded_line(&dir, &extensions, error.as_deref(), changed)));
        }
        // A progress notification is a notification: none before the
        // `initialize` answer of a legacy connection.
        HostEvent::ToolProgress { .. } if gate.era.load(Ordering::SeqCst) != MODERN_ERA && !gate.open.load(Ordering::SeqCst) => {}
        HostEvent::ToolProgress { id, progress, total, message, .. } => {
            let mut params = json!({"progressToken": id.to_value(), "progress": progress});
            if let Some(t) = total {
                params["total"] = t;
            }
            if let Some(m) = message {
                params["message"] = json!(m);
            }
            out.push(encode(&notification("notifications/progress", params)));
        }
        HostEvent::Ready { .. }
        | HostEvent::ExtensionReady { .. }
        | HostEvent::SubmitSlash { .. }
        | HostEvent::CallTool { .. }
        | HostEvent::CallToolCancel { .. }
        | HostEvent::ClearNotes { .. }
        | HostEvent::OpenPanel { .. }
        | HostEvent::PanelRender { .. }
        | HostEvent::PanelClose { .. } => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels() {
        assert_eq!(notify_level("info"), "info");
        assert_eq!(notify_level("success"), "notice");
        assert_eq!(notify_level("warn"), "warning");
        assert_eq!(notify_level("error"), "error");
        assert_eq!(notify_level("???"), "info");
        assert_eq!(level_index("debug"), Some(0));
        assert_eq!(level_index("emergency"), Some(7));
        assert_eq!(level_index("loud"), None);
    }
}
