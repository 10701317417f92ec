//! How the console shows things: the terminal style, host events as
//! lines attributed to their extension, and panels as framed blocks.

use crate::host::HostEvent;
use crate::protocol::Panel;
use crate::text::{one_line, strip_controls};

use std::sync::Mutex;

/// The panels open now, in the order they were opened, each with the
/// extension that owns it.
#[derive(Default)]
pub(super) struct PanelMap(Mutex<Vec<(String, String)>>);

impl PanelMap {
    fn with<R>(&self, f: impl FnOnce(&mut Vec<(String, String)>) -> R) -> R {
        let mut m = self.0.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut m)
    }
    pub(super) fn open(&self, id: &str, extension: &str) {
        self.with(|m| {
            m.retain(|(i, _)| i != id);
            m.push((id.to_string(), extension.to_string()));
        });
    }
    fn close(&self, id: &str) {
        self.with(|m| m.retain(|(i, _)| i != id));
    }
    /// The extension that owns panel `id`.
    pub(super) fn owner(&self, id: &str) -> Option<String> {
        self.with(|m| m.iter().find(|(i, _)| i == id).map(|(_, e)| e.clone()))
    }
    /// The panel `extension` opened last and has open.
    pub(super) fn last_of(&self, extension: &str) -> Option<String> {
        self.with(|m| m.iter().rev().find(|(_, e)| e == extension).map(|(i, _)| i.clone()))
    }
}

pub(super) type Panels = std::sync::Arc<PanelMap>;

#[derive(Clone, Copy)]
pub(super) struct Style {
    pub(super) color: bool,
}

impl Style {
    fn paint(&self, code: &str, s: &str) -> String {
        if self.color {
            format!("\u{1b}[{code}m{s}\u{1b}[0m")
        } else {
            s.to_string()
        }
    }
    pub(super) fn red(&self, s: &str) -> String {
        self.paint("31", s)
    }
    pub(super) fn dim(&self, s: &str) -> String {
        self.paint("2", s)
    }
    pub(super) fn bold(&self, s: &str) -> String {
        self.paint("1", s)
    }
    pub(super) fn level(&self, level: &str, s: &str) -> String {
        match level {
            "error" => self.paint("31", s),
            "warn" => self.paint("33", s),
            "success" => self.paint("32", s),
            _ => self.paint("36", s),
        }
    }
}

/// A panel as a framed block.
pub(super) fn draw_panel(title: &str, lines: &[String], footer: &str, id: &str) -> String {
    let title = format!("{} ({})", one_line(title), one_line(id));
    let lines: Vec<String> = lines.iter().map(|l| one_line(l)).collect();
    let footer = one_line(footer);
    let width = lines
        .iter()
        .map(|l| l.chars().count())
        .chain([title.chars().count() + 2, footer.chars().count()])
        .max()
        .unwrap_or(0)
        .min(200);
    let pad = |s: &str| {
        let s: String = s.chars().take(width).collect();
        let n = width - s.chars().count();
        format!("│ {s}{} │", " ".repeat(n))
    };
    let mut out = format!("┌─ {title} {}┐\n", "─".repeat(width.saturating_sub(title.chars().count() + 1)));
    for l in &lines {
        out.push_str(&pad(l));
        out.push('\n');
    }
    if !footer.is_empty() {
        out.push_str(&format!("├{}┤\n", "─".repeat(width + 2)));
        out.push_str(&pad(&footer));
        out.push('\n');
    }
    out.push_str(&format!("└{}┘", "─".repeat(width + 2)));
    out
}

pub(super) fn render_event(ev: HostEvent, st: Style, panels: &Panels) -> String {
    let tag = |n: &str| st.dim(&format!("[{}]", one_line(n)));
    match ev {
        HostEvent::Ready { .. }
        | HostEvent::ExtensionReady { .. }
        | HostEvent::ToolsChanged { .. }
        | HostEvent::CallTool { .. }
        | HostEvent::CallToolCancel { .. } => String::new(),
        HostEvent::ExtensionRestarting { extension, attempt, delay_ms, code, signal } => {
            let how = match (code, signal) {
                (_, Some(s)) => format!("signal {s}"),
                (Some(c), None) => format!("exit code {c}"),
                (None, None) => "failed to start".into(),
            };
            format!("{} {}", tag(&extension), st.dim(&format!("exited ({how}); restart {attempt} in {delay_ms} ms")))
        }
        HostEvent::ExtensionCrashLoop { extension, restarts } => format!(
            "{} {}",
            tag(&extension),
            st.red(&format!("gave up after {restarts} restarts (crash loop); see 'zot ext logs {}'", one_line(&extension)))
        ),
        HostEvent::SubmitSlash { extension, text } => {
            format!("{} {} {}", tag(&extension), st.dim("→ run:"), strip_controls(&text))
        }
        HostEvent::Notify { extension, level, message } => {
            format!("{} {}", tag(&extension), st.level(&level, &strip_controls(&message)))
        }
        HostEvent::ClearNotes { extension } => format!("{} {}", tag(&extension), st.dim("(notes cleared)")),
        HostEvent::Submit { extension, text } => {
            format!("{} {} {}", tag(&extension), st.dim("→ submit:"), strip_controls(&text))
        }
        HostEvent::OpenPanel { extension, panel } => {
            let Panel { id, title, lines, footer } = panel;
            panels.open(&id, &extension);
            format!("{}\n{}", tag(&extension), draw_panel(&title, &lines, &footer, &id))
        }
        HostEvent::PanelRender { extension, panel_id, title, lines, footer } => {
            format!("{}\n{}", tag(&extension), draw_panel(&title, &lines, &footer, &panel_id))
        }
        HostEvent::PanelClose { extension, panel_id } => {
            panels.close(&panel_id);
            format!("{} {}", tag(&extension), st.dim(&format!("(panel {} closed)", one_line(&panel_id))))
        }
        // The restart's line says it exited: one line per restart.
        HostEvent::Exited { restart_follows: true, .. } => String::new(),
        HostEvent::Exited { extension, code, signal, .. } => {
            let how = match (code, signal) {
                (Some(c), _) => format!("exit code {c}"),
                (None, Some(s)) => format!("signal {s}"),
                _ => "unknown status".into(),
            };
            format!("{} {}", tag(&extension), st.red(&format!("exited ({how})")))
        }
        HostEvent::LoadFailed { extension, message, log } => {
            let mut s = format!("{} {}", tag(&extension), st.red(&format!("failed to load: {}", one_line(&message))));
            if log.is_some() {
                s.push_str(&st.dim(&format!(" (see 'zot ext logs {}')", one_line(&extension))));
            }
            s
        }
        HostEvent::UntrustedProject { dir, extensions, error } => {
            let line = crate::trust::not_loaded_line(&dir, &extensions, error.as_deref());
            if error.is_some() { st.red(&line) } else { st.dim(&line) }
        }
        HostEvent::ToolProgress { extension, progress, total, message, .. } => {
            let mut s = format!("progress {progress}");
            if let Some(t) = total {
                s.push_str(&format!("/{t}"));
            }
            if let Some(m) = message {
                s.push_str(&format!(": {}", strip_controls(&m)));
            }
            format!("{} {}", tag(&extension), st.dim(&s))
        }
    }
}
