//! Keeping what one extension sends within the limits of [`Limits`]: the
//! token bucket for spontaneous frames, and cutting text and panels to
//! size.

use super::super::Limits;
use crate::protocol::Panel;
use std::time::Instant;

/// A token bucket: `burst` at once, then `rate` per second.
pub(super) struct Bucket {
    tokens: f64,
    at: Instant,
    /// Frames dropped since the last one let through.
    pub dropped: u64,
}

impl Bucket {
    pub fn new(burst: u32) -> Bucket {
        Bucket { tokens: f64::from(burst), at: Instant::now(), dropped: 0 }
    }

    pub fn take(&mut self, limits: &Limits) -> bool {
        let now = Instant::now();
        let refill = now.duration_since(self.at).as_secs_f64() * f64::from(limits.notes_per_sec);
        self.tokens = (self.tokens + refill).min(f64::from(limits.notes_burst));
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            self.dropped += 1;
            false
        }
    }
}

/// `s` cut to at most `max` bytes, at a character boundary, with an
/// ellipsis when something was cut.
pub(super) fn cut(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut end = max.saturating_sub(3);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push('…');
    }
    s
}

/// A panel within the limits: at most `panel_lines` lines, each text cut.
pub(super) fn trim_panel(p: Panel, limits: &Limits) -> Panel {
    let t = limits.text_bytes;
    Panel {
        id: cut(p.id, t),
        title: cut(p.title, t),
        lines: p.lines.into_iter().take(limits.panel_lines).map(|l| cut(l, t)).collect(),
        footer: cut(p.footer, t),
    }
}
