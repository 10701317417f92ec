//! The open panels: who owns each, what it shows, and on a terminal the
//! one drawn in place. The newest open panel is drawn at the bottom of the
//! screen, above the prompt row, and drawn again there at each
//! `panel_render` (never appended as a new block); opening it gives it the
//! keys, closing it (by the extension or by the user) gives them back to
//! the prompt, and Ctrl-O moves them between the two. Piped, every panel is
//! printed as a block where it happens, as before.

use crate::host::{Host, HostEvent};
use crate::lineedit::{term_size, Screen};
use crate::protocol::Panel;
use crate::text::one_line;

use std::sync::Mutex;

use super::render::{frame, Style};

/// The widest a panel is drawn when printed as a block.
pub(super) const BLOCK_WIDTH: usize = 200;

/// The cursor row while an open panel has the keys.
pub(super) const HINT: &str = "(keys go to the panel; Ctrl-O: the prompt, Ctrl-C: close it)";

/// The row below an open panel while the prompt has the keys.
pub(super) const BACK: &str = "(Ctrl-O: back to the panel)";

struct Open {
    extension: String,
    panel: Panel,
}

/// The panels open now, in the order they were opened.
#[derive(Default)]
pub(super) struct PanelMap(Mutex<Vec<Open>>);

impl PanelMap {
    fn with<R>(&self, f: impl FnOnce(&mut Vec<Open>) -> R) -> R {
        let mut m = self.0.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut m)
    }
    pub(super) fn open(&self, extension: &str, panel: &Panel) {
        self.with(|m| {
            m.retain(|o| o.panel.id != panel.id);
            m.push(Open { extension: extension.to_string(), panel: panel.clone() });
        });
    }
    /// Closes panel `id`; whether it was the newest.
    pub(super) fn close(&self, id: &str) -> bool {
        self.with(|m| {
            let newest = m.last().is_some_and(|o| o.panel.id == id);
            m.retain(|o| o.panel.id != id);
            newest
        })
    }
    /// Closes the panels of `extension`; whether one was the newest, or
    /// none when it had none open.
    fn close_all_of(&self, extension: &str) -> Option<bool> {
        self.with(|m| {
            let newest = m.last().is_some_and(|o| o.extension == extension);
            let before = m.len();
            m.retain(|o| o.extension != extension);
            (m.len() < before).then_some(newest)
        })
    }
    /// Keeps what panel `id` now shows; whether it is open and the newest,
    /// or none when it is not open.
    fn render(&self, panel: &Panel) -> Option<bool> {
        self.with(|m| {
            let newest = m.last().is_some_and(|o| o.panel.id == panel.id);
            let open = m.iter_mut().find(|o| o.panel.id == panel.id)?;
            open.panel = panel.clone();
            Some(newest)
        })
    }
    /// The extension that owns panel `id`.
    pub(super) fn owner(&self, id: &str) -> Option<String> {
        self.with(|m| m.iter().find(|o| o.panel.id == id).map(|o| o.extension.clone()))
    }
    /// The panel `extension` opened last and has open.
    pub(super) fn last_of(&self, extension: &str) -> Option<String> {
        self.with(|m| m.iter().rev().find(|o| o.extension == extension).map(|o| o.panel.id.clone()))
    }
    /// The newest open panel and its extension.
    pub(super) fn newest(&self) -> Option<(String, String)> {
        self.with(|m| m.last().map(|o| (o.panel.id.clone(), o.extension.clone())))
    }
    /// The newest open panel's rows as drawn in place, fitted to the
    /// terminal: the framed block, its extension's tag and title in the
    /// top border (the id is the extension's own business).
    fn newest_rows(&self) -> Vec<String> {
        let (cols, rows) = term_size();
        self.with(|m| {
            let Some(o) = m.last() else { return Vec::new() };
            let mut p = o.panel.clone();
            // The frame (three rows, five with a footer), the row under
            // it, the prompt row and one more must fit the terminal: rows
            // that scrolled away could not be drawn again in place.
            let rims = if one_line(&p.footer).is_empty() { 3 } else { 5 };
            p.lines.truncate(rows.saturating_sub(rims + 3).max(1));
            let title = format!("[{}] {}", one_line(&o.extension), one_line(&p.title));
            let block = frame(title.trim_end(), &p.lines, &p.footer, cols.saturating_sub(5).clamp(1, BLOCK_WIDTH));
            block.lines().map(str::to_string).collect()
        })
    }
}

pub(super) type Panels = std::sync::Arc<PanelMap>;

/// Draws the newest open panel in place (none: the panel area goes away);
/// `focus`, when given, says whether the keys go to it. After a resize
/// it is drawn again at the new width.
pub(super) fn show_newest(panels: &PanelMap, screen: &Screen, style: Style, focus: Option<bool>) {
    screen.show_panel(panels.newest_rows(), focus, &style.dim(HINT), &style.dim(BACK));
}

/// Shows a panel event in place on the terminal; gives back any other
/// event, and a redraw of a panel that is not open, to be printed. The
/// panels of an extension that exited go with it.
pub(super) fn in_place(ev: HostEvent, panels: &PanelMap, screen: &Screen, style: Style) -> Option<HostEvent> {
    match ev {
        HostEvent::OpenPanel { extension, panel } => {
            panels.open(&extension, &panel);
            show_newest(panels, screen, style, Some(true));
            None
        }
        HostEvent::PanelRender { extension, panel_id, title, lines, footer } => {
            let panel = Panel { id: panel_id, title, lines, footer };
            match panels.render(&panel) {
                Some(true) => show_newest(panels, screen, style, None),
                Some(false) => {}
                None => {
                    let Panel { id, title, lines, footer } = panel;
                    return Some(HostEvent::PanelRender { extension, panel_id: id, title, lines, footer });
                }
            }
            None
        }
        HostEvent::PanelClose { extension, panel_id } => {
            closed(panels, screen, style, &extension, &panel_id);
            None
        }
        HostEvent::Exited { ref extension, .. } => {
            if let Some(newest) = panels.close_all_of(extension) {
                show_newest(panels, screen, style, newest.then_some(false));
            }
            Some(ev)
        }
        other => Some(other),
    }
}

/// Takes panel `id` off the screen and says so; when it was the newest,
/// the prompt has the keys again (and the next newest is drawn in place).
pub(super) fn closed(panels: &PanelMap, screen: &Screen, style: Style, extension: &str, id: &str) {
    let newest = panels.close(id);
    screen.print(&format!("{} {}", style.dim(&format!("[{}]", one_line(extension))), style.dim(&format!("(panel {} closed)", one_line(id)))));
    if newest {
        show_newest(panels, screen, style, Some(false));
    }
}

/// Sends a key to panel `id` of `extension`; an error is printed.
pub(super) fn press(host: &Host, screen: &Screen, style: Style, extension: &str, id: &str, key: &str, text: Option<String>) {
    if let Err(e) = host.panel_key(extension, id, key, text) {
        screen.print(&style.red(&format!("error: {}", one_line(&e.to_string()))));
    }
}
