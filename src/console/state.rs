//! What every room of the console shares: the built-in commands, the
//! session's state ([`Console`], whose rooms add their own `impl` blocks)
//! and its most basic sayings, a piped input line, and a tool call in
//! flight.

use crate::host::{Config, Host};
use crate::lineedit::Editor;
use crate::text::one_line;
use crossbeam_channel::{bounded, Receiver, Sender};
use std::collections::VecDeque;
use std::sync::Arc;

use super::panels::Panels;
use super::print::{Job, Printed, Submitted};
use super::render::Style;

/// Commands the console answers itself; extensions cannot take them.
pub const BUILTINS: [(&str, &str); 15] = [
    ("help", "show this help"),
    ("system", "show the system prompt after the before_agent_start chain"),
    ("commands", "list extension commands"),
    ("tools", "list extension tools"),
    ("tool", "NAME JSON: call a tool as the model would (intercepts, event, call)"),
    ("resources", "list the resources and templates of MCP servers"),
    ("read", "URI: read a resource of an MCP server"),
    ("event", "NAME [JSON]: send an event to its subscribers"),
    ("intercept", "EVENT JSON: run an intercept chain and show the verdict"),
    ("key", "PANEL KEY [TEXT]: press a key in an extension's panel"),
    ("reload-ext", "stop, rediscover and restart every extension"),
    ("restart", "NAME: stop one extension and start it anew"),
    ("login", "NAME: log in to a remote MCP server through the browser, then connect it again"),
    ("extensions", "list extensions and their state"),
    ("exit", "shut extensions down and leave"),
];

/// What `before_agent_start` tells extensions about the session.
pub(super) struct SessionInfo {
    pub(super) cwd: String,
    pub(super) provider: String,
    pub(super) model: String,
}

/// One item of piped input.
pub(super) enum Input {
    Line(String),
    /// A line that is not UTF-8.
    NotUtf8,
    End,
}

/// The tool call in flight: its id, and for an interactive tool the
/// extension whose panel answers it.
pub(super) struct InFlight<'a> {
    pub(super) tool_id: &'a str,
    pub(super) interactive: Option<&'a str>,
}

pub(super) struct Console {
    pub(super) host: Arc<Host>,
    pub(super) out: Sender<Job>,
    /// Where a reply marks its place among the host's events.
    pub(super) holds: Sender<Printed>,
    pub(super) held: u64,
    /// What extensions asked to run as if typed (`submit_slash`,
    /// `submit`), as it was printed.
    pub(super) submitted: Receiver<Submitted>,
    /// Submitted commands that may still run before the next input line.
    pub(super) budget: usize,
    /// Piped input, read on a thread of its own (none with the editor).
    pub(super) lines: Option<Receiver<Input>>,
    /// Lines read while a call was in flight, waiting their turn.
    pub(super) backlog: VecDeque<Input>,
    /// A panel was opened (the printer showed it).
    pub(super) panel_opened: Receiver<()>,
    /// A prompt is printed before each read (stdin a terminal, stdout not).
    pub(super) prompting: bool,
    pub(super) style: Style,
    pub(super) panels: Panels,
    pub(super) step: u64,
    pub(super) tool_seq: u64,
    pub(super) session: SessionInfo,
    /// The system prompt after the last `before_agent_start` chain.
    pub(super) system_prompt: String,
    /// The chain must run (again) before the next prompt: at the start and
    /// after each `/reload-ext`.
    pub(super) system_stale: bool,
    pub(super) agent_runs: u64,
    /// The line editor, on a terminal.
    pub(super) editor: Option<Editor>,
    /// Where extensions are discovered, to name a disabled one.
    pub(super) discovery: Config,
    /// A person typing was told there is no model here.
    pub(super) told_no_model: bool,
}

impl Console {
    /// Prints `text` after every host event already received.
    pub(super) fn say(&self, text: String) {
        let (tx, rx) = bounded(1);
        let _ = self.out.send(Job { text, ack: Some(tx), release: None, panel: None });
        let _ = rx.recv();
    }

    pub(super) fn sync(&self) {
        self.say(String::new());
    }

    pub(super) fn error(&self, msg: &str) {
        self.say(self.error_line(msg));
    }

    /// `error: MSG`, in red. The message may quote what an extension (or a
    /// slash command it submitted) said: it is made safe for the terminal.
    pub(super) fn error_line(&self, msg: &str) -> String {
        self.style.red(&format!("error: {}", one_line(msg)))
    }
}
