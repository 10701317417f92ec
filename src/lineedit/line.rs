//! The line being edited and the panel drawn in place below the output:
//! the state the buffer's edits and the screen's drawing share.

#[derive(Default)]
pub(super) struct Line {
    /// A prompt is showing and keys edit `buf`.
    pub(super) active: bool,
    pub(super) prompt: String,
    pub(super) buf: Vec<char>,
    pub(super) cursor: usize,
    /// The first character in view when the line is wider than the room.
    pub(super) offset: usize,
    /// Columns drawn right of the cursor, for [`Editor::finish`](super::Editor::finish).
    pub(super) after: usize,
    /// The panel shown in place below the output, above the cursor row.
    pub(super) panel: Live,
    /// The widths of the rows drawn above the cursor row (the panel's).
    pub(super) drawn: Vec<usize>,
    /// The cursor's column as drawn, from the start of the cursor row.
    pub(super) cursor_col: usize,
    /// The view shows part of the line only.
    pub(super) clipped: bool,
}

/// A panel drawn in place: its rows stay at the bottom of the screen,
/// above the cursor row, and are drawn again (not appended) when they
/// change; what is printed meanwhile goes above them.
#[derive(Default)]
pub(super) struct Live {
    pub(super) rows: Vec<String>,
    /// The keys go to the panel, not the prompt; the cursor row shows `hint`.
    pub(super) focus: bool,
    pub(super) hint: String,
    /// The row below the panel while the prompt has the keys.
    pub(super) back: String,
}
