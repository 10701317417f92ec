//! The printer thread: everything the console prints goes out through it,
//! and a reply keeps its place among the host's events (`Printed::Hold`
//! marks it, a `Held` releases it once printed). What extensions submit
//! (`submit_slash`, `submit`) and each panel opened are passed on to the
//! session once shown. On a terminal it alone draws the panel in place
//! (`panels`), so that a panel opened by a reply, its redraws and its
//! close keep the host's order; and after a terminal resize it draws the
//! panel and the prompt row again.

use crate::host::{HostEvent, LoadReport};
use crate::lineedit::Screen;
use crossbeam_channel::{bounded, never, select, Receiver, Sender};
use std::sync::Arc;

use crate::protocol::Panel;
use crate::text::{one_line, strip_controls};

use super::panels::{self, Panels, BLOCK_WIDTH};
use super::render::{draw_panel, Style};

/// What an extension asked the console to run as if typed.
pub(super) enum Submitted {
    /// `submit_slash`: a slash command.
    Slash(String),
    /// `submit`: a user prompt.
    Prompt(String),
}

/// A block of text for the printer; `ack` is signalled once it is out.
pub(super) struct Job {
    pub(super) text: String,
    pub(super) ack: Option<Sender<()>>,
    /// The reply whose place in the host's order [`Printed::Hold`] marked.
    pub(super) release: Option<u64>,
    /// What it does to the panels once printed.
    pub(super) panel: Option<PanelOp>,
}

/// A change to the panels that the session makes (on a terminal).
pub(super) enum PanelOp {
    /// A command's `open_panel` reply: shown in place with the keys.
    Open(String, crate::protocol::Panel),
    /// The user closed the panel: `(extension, panel_id)`.
    Close(String, String),
}

/// What the host hands the printer, on its dispatcher thread and so in the
/// order things happened there.
pub(super) enum Printed {
    Event(HostEvent),
    /// A reply the console will print arrived here: later events wait
    /// until it is printed.
    Hold(u64),
    /// The load is over: the banner (on a terminal), and the servers still
    /// starting, each to get a line once ready (named when `say`).
    Start { banner: Option<String>, starting: Vec<String>, say: bool },
}

/// A reply's place in the printed order; printing it (or dropping it)
/// lets the events after it through.
pub(super) struct Held {
    pub(super) n: u64,
    pub(super) out: Sender<Job>,
    pub(super) done: bool,
}

impl Held {
    pub(super) fn say(mut self, text: String) {
        let (tx, rx) = bounded(1);
        self.done = true;
        let _ = self.out.send(Job { text, ack: Some(tx), release: Some(self.n), panel: None });
        let _ = rx.recv();
    }

    /// As [`Held::say`], then opens `panel` in place.
    pub(super) fn open_panel(mut self, text: String, extension: &str, panel: crate::protocol::Panel) {
        let (tx, rx) = bounded(1);
        self.done = true;
        let op = Some(PanelOp::Open(extension.to_string(), panel));
        let _ = self.out.send(Job { text, ack: Some(tx), release: Some(self.n), panel: op });
        let _ = rx.recv();
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if !self.done {
            let _ = self.out.send(Job { text: String::new(), ack: None, release: Some(self.n), panel: None });
        }
    }
}

/// Where what the session runs or waits for is passed on once shown: what
/// extensions submit, and a note for each panel an extension opened.
pub(super) struct PassedOn {
    pub(super) submitted: Sender<Submitted>,
    pub(super) opened: Sender<()>,
    /// The servers still starting when the load ended: each gets a line
    /// when it is ready (docs/protocol.md §8.2; a failure has its own line).
    pub(super) awaited: Awaited,
}

/// The names of the servers the console says a line for once ready.
pub(super) type Awaited = Arc<std::sync::Mutex<Vec<String>>>;

/// Takes `name` out of `awaited`; whether it was there.
fn was_awaited(awaited: &Awaited, name: &str) -> bool {
    let mut a = awaited.lock().unwrap_or_else(|p| p.into_inner());
    let before = a.len();
    a.retain(|n| n != name);
    a.len() < before
}

pub(super) fn print_loop(
    events: Receiver<Printed>,
    jobs: Receiver<Job>,
    style: Style,
    panels: Panels,
    screen: Arc<Screen>,
    passed_on: PassedOn,
    in_place: bool,
) {
    let PassedOn { submitted, opened, awaited } = passed_on;
    let print = |s: &str| {
        if !s.is_empty() {
            screen.print(s);
        }
    };
    // What the console runs or waits for is passed on once it is shown.
    let show = |ev: HostEvent| {
        let then = match &ev {
            HostEvent::SubmitSlash { text, .. } => Some(Submitted::Slash(text.clone())),
            HostEvent::Submit { text, .. } => Some(Submitted::Prompt(text.clone())),
            _ => None,
        };
        let panel = matches!(ev, HostEvent::OpenPanel { .. });
        match &ev {
            HostEvent::ExtensionReady { extension, tools, .. } if was_awaited(&awaited, extension) => {
                let n = tools.len();
                print(&style.dim(&format!("{} ready: {n} tool{}", crate::text::one_line(extension), if n == 1 { "" } else { "s" })));
            }
            HostEvent::LoadFailed { extension, .. } => {
                was_awaited(&awaited, extension);
            }
            _ => {}
        }
        let rest = if in_place { panels::in_place(ev, &panels, &screen, style) } else { Some(ev) };
        if let Some(ev) = rest {
            print(&render_event(ev, style, &panels));
        }
        if let Some(s) = then {
            let _ = submitted.send(s);
        }
        if panel {
            let _ = opened.send(());
        }
    };
    let start = |banner: Option<String>, starting: Vec<String>, say: bool| {
        if let Some(b) = banner {
            print(&b);
        }
        if let Some(line) = LoadReport::starting_line(&starting).filter(|_| say) {
            print(&style.dim(&crate::text::one_line(&line)));
        }
        *awaited.lock().unwrap_or_else(|p| p.into_inner()) = starting;
    };
    // A reply whose place is marked and not printed yet: the events after
    // it wait in the channel.
    let mut holding: Option<u64> = None;
    let finish = |job: Job| {
        print(&job.text);
        match job.panel {
            Some(PanelOp::Open(ext, p)) => {
                panels.open(&ext, &p);
                panels::show_newest(&panels, &screen, style, Some(true));
            }
            Some(PanelOp::Close(ext, id)) => panels::closed(&panels, &screen, style, &ext, &id),
            None => {}
        }
        if let Some(a) = job.ack {
            let _ = a.send(());
        }
    };
    // A resize draws the prompt row and the panel in place again at once.
    let resized = if in_place { crate::lineedit::resizes().unwrap_or_else(|_| never()) } else { never() };
    // While a reply's place is held, the events wait in their channel.
    let held = never();
    loop {
        let events_now = if holding.is_some() { &held } else { &events };
        let job = select! {
            recv(events_now) -> p => {
                match p {
                    Ok(Printed::Event(ev)) => show(ev),
                    Ok(Printed::Start { banner, starting, say }) => start(banner, starting, say),
                    Ok(Printed::Hold(n)) => holding = Some(n),
                    Err(_) => {
                        // The host is gone; finish the remaining jobs.
                        for job in jobs.iter() {
                            finish(job);
                        }
                        return;
                    }
                }
                continue;
            }
            recv(jobs) -> job => match job {
                Ok(job) => job,
                Err(_) => return,
            },
            recv(resized) -> _ => {
                panels::show_newest(&panels, &screen, style, None);
                continue;
            }
        };
        match job.release {
            // Everything before the reply's mark is printed first.
            Some(n) => {
                while holding != Some(n) {
                    match events.recv() {
                        Ok(Printed::Event(ev)) => show(ev),
                        Ok(Printed::Start { banner, starting, say }) => start(banner, starting, say),
                        Ok(Printed::Hold(m)) => holding = Some(m),
                        Err(_) => break,
                    }
                }
                holding = None;
            }
            None if holding.is_none() => {
                while let Ok(p) = events.try_recv() {
                    match p {
                        Printed::Event(ev) => show(ev),
                        Printed::Start { banner, starting, say } => start(banner, starting, say),
                        Printed::Hold(m) => {
                            holding = Some(m);
                            break;
                        }
                    }
                }
            }
            None => {}
        }
        finish(job);
    }
}

/// How an event the host sent looks in the session.
fn render_event(ev: HostEvent, st: Style, panels: &Panels) -> String {
    let tag = |n: &str| st.dim(&format!("[{}]", one_line(n)));
    match ev {
        HostEvent::Ready { .. }
        | HostEvent::ExtensionReady { .. }
        | HostEvent::ToolsChanged { .. }
        | HostEvent::CommandsListed { .. }
        | HostEvent::ResourcesChanged { .. }
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
            panels.open(&extension, &panel);
            let Panel { id, title, lines, footer } = panel;
            format!("{}\n{}", tag(&extension), draw_panel(&title, &lines, &footer, &id, BLOCK_WIDTH))
        }
        HostEvent::PanelRender { extension, panel_id, title, lines, footer } => {
            format!("{}\n{}", tag(&extension), draw_panel(&title, &lines, &footer, &panel_id, BLOCK_WIDTH))
        }
        HostEvent::PanelClose { extension, panel_id } => {
            panels.close(&panel_id);
            format!("{} {}", tag(&extension), st.dim(&format!("(panel {} closed)", one_line(&panel_id))))
        }
        // The restart's line says it exited: one line per restart.
        HostEvent::Exited { restart_follows: true, .. } => String::new(),
        HostEvent::Exited { extension, code, signal, not_by_policy, .. } => {
            let how = match (code, signal) {
                (Some(c), _) => format!("exit code {c}"),
                (None, Some(s)) => format!("signal {s}"),
                _ => "unknown status".into(),
            };
            let mut line = format!("{} {}", tag(&extension), st.red(&format!("exited ({how})")));
            // Said only where the policy keeps it down: a crash loop's
            // gave-up line follows on its own.
            if not_by_policy {
                let policy = if code == Some(0) { "always" } else { "on-failure" };
                let name = one_line(&extension);
                line.push_str(&st.dim(&format!(
                    "; not restarted: /restart {name} starts it again, and \"restart\": \"{policy}\" in its manifest brings it back by itself"
                )));
            }
            line
        }
        // An MCP configuration file that cannot be used: no server's line.
        HostEvent::LoadFailed { message, log: None, .. } if message.contains(crate::manifest::BROKEN_CONFIG) => {
            st.red(&format!("error: {}; none of its servers is loaded", one_line(&message)))
        }
        // A server waiting for a person's login (docs/protocol.md §8.5 rule 11).
        HostEvent::LoadFailed { extension, message, .. } if crate::mcpserver::login::is_login_of(&extension, &message) => {
            format!("{} {}", tag(&extension), one_line(&message))
        }
        HostEvent::LoadFailed { extension, message, log } => {
            let mut s = format!("{} {}", tag(&extension), st.red(&format!("failed to load: {}", one_line(&message))));
            if log.is_some() {
                s.push_str(&st.dim(&format!(" (see 'zot ext logs {}')", one_line(&extension))));
            }
            s
        }
        HostEvent::UntrustedProject { dir, extensions, error, changed } => {
            let line = crate::discovery::not_loaded_line(&dir, &extensions, error.as_deref(), changed);
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
