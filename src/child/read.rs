//! The reader thread's work: stdout split into lines of at most
//! [`MAX_LINE`] bytes, handed over as frames (the host) or as they are
//! (`zot ext check`), each recorded for `--trace`.

use super::msg::{ChildMsg, Dialect, Reading};
use super::{Log, MAX_LINE};
use crate::lines::{Line, LineBuf};
use crate::protocol::{decode_repaired, repair_note, DecodeError, ExtFrame};
use crate::trace::Tap;
use super::stdout::CancellableRead;

/// Splits `reader`'s input into lines of at most [`MAX_LINE`] bytes, records each
/// in `tap` (`--trace`) and hands it to `emit`: decoded into frames, junk
/// logged and skipped ([`Reading::Frames`]), or as it is
/// ([`Reading::Lines`]), or to the child's [`Dialect`] (`dialect`),
/// which hands on what it makes of them; over-long lines are discarded whole without being
/// kept (and logged when decoding). Returns at EOF, after emitting `Eof`,
/// when `emit` returns false, or, without a word, when the read was
/// cancelled because the process is gone.
/// `emit` is told whether another whole line is read already (`more`): the
/// dispatcher need only be woken for the last of them. `wake` is called
/// before waiting for input after an `emit` told of more lines, in case
/// those were junk that emitted nothing.
pub(super) fn read_loop(
    mut reader: CancellableRead,
    log: &Log,
    tap: Option<&Tap>,
    reading: Reading,
    dialect: Option<&dyn Dialect>,
    mut emit: impl FnMut(ChildMsg, bool) -> bool,
    mut wake: impl FnMut(),
) {
    let mut lines = LineBuf::new(MAX_LINE);
    let more = |r: &CancellableRead| r.buffer().contains(&b'\n');
    let mut owed = false;
    loop {
        if owed && !more(&reader) {
            wake();
            owed = false;
        }
        match lines.next(&mut reader) {
            Ok(None) => break,
            // The process is gone and its output over: nothing more to say.
            Err(e) if super::cancel::is_cancelled(&e) => return,
            Err(e) => {
                if reading == Reading::Frames {
                    log.line(&format!("reading stdout failed: {e}"));
                }
                break;
            }
            Ok(Some(Line::TooLong(len))) => {
                if let Some(tap) = tap {
                    tap.discarded_in(lines.text(), len);
                }
                let id = crate::protocol::head_id(lines.text());
                match (&id, reading) {
                    (_, Reading::Lines) => {}
                    (Some(id), _) => log.line(&format!("discarded a line of {len} bytes from stdout (limit {MAX_LINE} bytes), for request {id}")),
                    (None, _) => log.line(&format!("discarded a line of {len} bytes from stdout (limit {MAX_LINE} bytes)")),
                }
                owed |= more(&reader);
                // A dialect's ids are its own: it says what the line answered.
                if let Some(d) = dialect {
                    d.too_long(id.as_deref(), len);
                } else if !emit(ChildMsg::TooLong { id, len }, more(&reader)) {
                    return;
                }
            }
            Ok(Some(Line::Text(line))) => {
                if let Some(tap) = tap {
                    tap.line_in(line);
                }
                let more = more(&reader);
                owed |= more;
                let go = match (reading, dialect) {
                    (_, Some(d)) => {
                        d.incoming(line);
                        true
                    }
                    (Reading::Frames, None) => handle_line(line, log, &mut |m| emit(m, more)),
                    (Reading::Lines, None) => emit(ChildMsg::Line(line.to_vec()), more),
                };
                if !go {
                    return;
                }
            }
        }
    }
    emit(ChildMsg::Eof, false);
}

fn handle_line(line: &[u8], log: &Log, emit: &mut impl FnMut(ChildMsg) -> bool) -> bool {
    match decode_logged(line, log) {
        Ok(frame) => emit(ChildMsg::Frame(frame)),
        Err(DecodeError::BadFields { ty, id: Some(id), msg })
            if matches!(ty.as_str(), "command_response" | "tool_result" | "event_intercept_response") =>
        {
            log.line(&format!("malformed {ty} for request {id}: {msg}"));
            emit(ChildMsg::BadReply { id, error: DecodeError::BadFields { ty, id: None, msg } })
        }
        Err(e) => {
            log.line(&format!("skipped a stdout line: {e}: {}", preview(line)));
            true
        }
    }
}

/// A line decoded, repaired first when it is not JSON only because of
/// its text (docs/protocol.md §2), which is logged.
fn decode_logged(line: &[u8], log: &Log) -> Result<ExtFrame, DecodeError> {
    let (r, fixed) = decode_repaired::<ExtFrame>(line);
    if let Some((fixed, n)) = fixed {
        log.line(&repair_note(&fixed, n, "frame"));
    }
    r
}

/// The start of a line, for logs: at most 200 bytes, lossily decoded.
pub fn preview(line: &[u8]) -> String {
    let cut = &line[..line.len().min(200)];
    let mut s = String::from_utf8_lossy(cut).into_owned();
    if line.len() > cut.len() {
        s.push_str(&format!("… ({} bytes)", line.len()));
    }
    s
}
