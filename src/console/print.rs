//! The printer thread: everything the console prints goes out through it,
//! and a reply keeps its place among the host's events (`Printed::Hold`
//! marks it, a `Held` releases it once printed). What extensions submit
//! (`submit_slash`, `submit`) and each panel opened are passed on to the
//! session once shown.

use crate::host::HostEvent;
use crate::lineedit::Screen;
use crossbeam_channel::{bounded, select, Receiver, Sender};
use std::sync::Arc;

use super::input::Submitted;
use super::render::{render_event, Panels, Style};

/// A block of text for the printer; `ack` is signalled once it is out.
pub(super) struct Job {
    pub(super) text: String,
    pub(super) ack: Option<Sender<()>>,
    /// The reply whose place in the host's order [`Printed::Hold`] marked.
    pub(super) release: Option<u64>,
}

/// What the host hands the printer, on its dispatcher thread and so in the
/// order things happened there.
pub(super) enum Printed {
    Event(HostEvent),
    /// A reply the console will print arrived here: later events wait
    /// until it is printed.
    Hold(u64),
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
        let _ = self.out.send(Job { text, ack: Some(tx), release: Some(self.n) });
        let _ = rx.recv();
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if !self.done {
            let _ = self.out.send(Job { text: String::new(), ack: None, release: Some(self.n) });
        }
    }
}

pub(super) fn print_loop(
    events: Receiver<Printed>,
    jobs: Receiver<Job>,
    style: Style,
    panels: Panels,
    screen: Arc<Screen>,
    submitted: Sender<Submitted>,
    opened: Sender<()>,
) {
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
        print(&render_event(ev, style, &panels));
        if let Some(s) = then {
            let _ = submitted.send(s);
        }
        if panel {
            let _ = opened.send(());
        }
    };
    // A reply whose place is marked and not printed yet: the events after
    // it wait in the channel.
    let mut holding: Option<u64> = None;
    let finish = |job: Job| {
        print(&job.text);
        if let Some(a) = job.ack {
            let _ = a.send(());
        }
    };
    loop {
        let job = if holding.is_some() {
            match jobs.recv() {
                Ok(job) => job,
                Err(_) => return,
            }
        } else {
            select! {
                recv(events) -> p => {
                    match p {
                        Ok(Printed::Event(ev)) => show(ev),
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
            }
        };
        match job.release {
            // Everything before the reply's mark is printed first.
            Some(n) => {
                while holding != Some(n) {
                    match events.recv() {
                        Ok(Printed::Event(ev)) => show(ev),
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
