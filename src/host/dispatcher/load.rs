//! The load: everything about starting, reloading and the initial report.
//! [`Load`] knows the host's phase, which load is the current one (its
//! generation, for the timers a load sets), the errors the load collected,
//! the report of the last one, who waits for a load to end (`wait_ready`
//! and reload requests, reloads asked for while a load was under way), how
//! many processes a reload stopped, the tools before a reload (to announce
//! what changed), the shutdown's waiters, and what the last discovery left
//! out (untrusted and broken extensions, a trust problem). The dispatcher
//! starts and stops the processes; this type says what a load's end and a
//! stop's end answer, and when another load follows.

use crate::discovery::Found;
use crate::host::{HostError, LoadReport, ReloadReport, Responder, Response};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    Loading,
    Running,
    Stopping { exit: bool },
    Done,
}

enum Waiter {
    Ready(Responder),
    Reload(Responder),
}

/// An extension whose manifest could not be loaded: listed as failed.
pub(super) struct Broken {
    /// Its folder's name.
    pub name: String,
    pub dir: String,
    pub source: &'static str,
    pub error: String,
}

pub(super) struct Load {
    pub(super) phase: Phase,
    gen: u64,
    errors: Vec<String>,
    last: Option<LoadReport>,
    /// Each running extension's tools when a reload began.
    tools_before: Vec<(String, Vec<String>)>,
    waiters: Vec<Waiter>,
    /// Processes the current reload stopped.
    stopped: usize,
    exit_waiters: Vec<Responder>,
    /// Reloads asked for while a load was under way: its discovery is
    /// older than the request, so another reload follows it.
    reload_after: Vec<Responder>,
    /// Project-local extensions of an untrusted project: listed, never started.
    pub(super) untrusted: Vec<Found>,
    /// Why the project's trust could not be checked, if so (with the fix).
    pub(super) trust_problem: Option<String>,
    /// The project was trusted and changed since.
    pub(super) trust_changed: bool,
    pub(super) broken: Vec<Broken>,
}

impl Load {
    pub(super) fn new() -> Load {
        Load {
            phase: Phase::Loading,
            gen: 0,
            errors: Vec::new(),
            last: None,
            tools_before: Vec::new(),
            waiters: Vec::new(),
            stopped: 0,
            exit_waiters: Vec::new(),
            reload_after: Vec::new(),
            untrusted: Vec::new(),
            trust_problem: None,
            trust_changed: false,
            broken: Vec::new(),
        }
    }

    /// A load begins; its generation.
    pub(super) fn begin(&mut self) -> u64 {
        self.phase = Phase::Loading;
        self.gen += 1;
        self.errors.clear();
        self.gen
    }

    /// Whether a timer set by load `gen` is still of the current load.
    pub(super) fn is_current(&self, gen: u64) -> bool {
        gen == self.gen
    }

    pub(super) fn error(&mut self, msg: String) {
        self.errors.push(msg);
    }

    pub(super) fn loading(&self) -> bool {
        self.phase == Phase::Loading
    }

    /// The host stops for good (`shutdown`), or has stopped.
    pub(super) fn exiting(&self) -> bool {
        matches!(self.phase, Phase::Stopping { exit: true } | Phase::Done)
    }

    /// Whether a request that needs extensions waits for the load to end:
    /// during a reload (or a first load with `hold_until_loaded`) the names
    /// are about to be there.
    pub(super) fn holds(&self, hold_until_loaded: bool) -> bool {
        match self.phase {
            Phase::Loading => self.last.is_some() || hold_until_loaded,
            Phase::Stopping { exit } => !exit,
            _ => false,
        }
    }

    /// `wait_ready`: the last report at once while running, else at the
    /// end of the load.
    pub(super) fn wait_ready(&mut self, done: Responder) {
        match (&self.phase, &self.last) {
            (Phase::Running, Some(r)) => done.answer(Ok(Response::Load(r.clone()))),
            _ => self.waiters.push(Waiter::Ready(done)),
        }
    }

    /// A reload request; true when the stop of everything begins now.
    pub(super) fn ask_reload(&mut self, done: Responder) -> bool {
        if self.phase == Phase::Loading {
            self.reload_after.push(done);
            return false;
        }
        self.waiters.push(Waiter::Reload(done));
        self.phase == Phase::Running
    }

    /// A shutdown request: it is answered when everything has stopped;
    /// every other waiter now, with `shutting_down`.
    pub(super) fn ask_exit(&mut self, done: Responder) {
        self.exit_waiters.push(done);
        for w in std::mem::take(&mut self.waiters) {
            let (Waiter::Ready(d) | Waiter::Reload(d)) = w;
            d.answer(Err(HostError::ShuttingDown));
        }
        for d in std::mem::take(&mut self.reload_after) {
            d.answer(Err(HostError::ShuttingDown));
        }
    }

    /// Everything stops, for good or for a reload (with the running
    /// extensions' tools, to announce what changed after it).
    pub(super) fn begin_stop(&mut self, exit: bool, tools: impl FnOnce() -> Vec<(String, Vec<String>)>) {
        if !exit {
            self.tools_before = tools();
        }
        self.phase = Phase::Stopping { exit };
        self.stopped = 0;
    }

    /// One process more that this stop ends.
    pub(super) fn count_stopped(&mut self) {
        self.stopped += 1;
    }

    /// Everything has stopped: a shutdown is over (its waiters answered),
    /// a reload loads again (true).
    pub(super) fn all_stopped(&mut self) -> bool {
        let Phase::Stopping { exit } = self.phase else { return false };
        if !exit {
            return true;
        }
        self.phase = Phase::Done;
        for done in std::mem::take(&mut self.exit_waiters) {
            done.answer(Ok(Response::Done));
        }
        false
    }

    /// The load is over, with `loaded` extensions of which `ready` are
    /// ready: the report is kept; true for the host's first load.
    pub(super) fn end(&mut self, loaded: usize, ready: Vec<String>) -> bool {
        self.phase = Phase::Running;
        let first = self.last.is_none();
        self.last = Some(LoadReport { loaded, ready, errors: self.errors.clone() });
        first
    }

    /// After [`Load::end`]: its waiters get the report.
    pub(super) fn answer_waiters(&mut self) {
        let Some(report) = &self.last else { return };
        for w in std::mem::take(&mut self.waiters) {
            match w {
                Waiter::Ready(done) => done.answer(Ok(Response::Load(report.clone()))),
                Waiter::Reload(done) => done.answer(Ok(Response::Reload(ReloadReport {
                    stopped: self.stopped,
                    loaded: report.loaded,
                    ready: report.ready.len(),
                    errors: report.errors.clone(),
                }))),
            }
        }
    }

    /// After the requests that waited for the load: true when a reload
    /// asked for during it must now begin (its requests wait for that
    /// reload's end).
    pub(super) fn reload_again(&mut self) -> bool {
        if self.reload_after.is_empty() {
            return false;
        }
        self.waiters.extend(std::mem::take(&mut self.reload_after).into_iter().map(Waiter::Reload));
        true
    }

    /// After a reload, each extension's tools are announced anew: those it
    /// has now (`now`) and those it had before and lost, also for an
    /// extension that did not come back. Extensions without any are left
    /// out.
    pub(super) fn reloaded_tools(&mut self, now: Vec<(String, Vec<String>)>) -> Vec<(String, Vec<String>)> {
        let mut before = std::mem::take(&mut self.tools_before);
        let mut news = Vec::new();
        for (name, mut tools) in now {
            if let Some(i) = before.iter().position(|(n, _)| *n == name) {
                let (_, old) = before.remove(i);
                let lost: Vec<String> = old.into_iter().filter(|t| !tools.contains(t)).collect();
                tools.extend(lost);
            }
            news.push((name, tools));
        }
        news.extend(before);
        news.retain(|(_, t)| !t.is_empty());
        news
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossbeam_channel::{unbounded, Receiver};

    fn responder() -> (Responder, Receiver<Result<Response, HostError>>) {
        let (tx, rx) = unbounded();
        (Responder::new(move |r| drop(tx.send(r))), rx)
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_load_answers_its_waiters_with_its_report() {
        let mut l = Load::new();
        let gen = l.begin();
        let (ready, ready_rx) = responder();
        l.wait_ready(ready);
        assert!(ready_rx.try_recv().is_err(), "waits for the load");
        l.error("a broke".into());
        assert!(l.end(2, names(&["b"])), "the first load");
        l.answer_waiters();
        assert!(!l.reload_again());
        match ready_rx.try_recv() {
            Ok(Ok(Response::Load(r))) => {
                assert_eq!((r.loaded, r.ready, r.errors), (2, names(&["b"]), names(&["a broke"])));
            }
            _ => panic!("no load report"),
        }
        // Running: answered at once; a new load ends the old generation.
        let (now, now_rx) = responder();
        l.wait_ready(now);
        assert!(matches!(now_rx.try_recv(), Ok(Ok(Response::Load(_)))));
        assert!(l.is_current(gen));
        let next = l.begin();
        assert!(!l.is_current(gen) && l.is_current(next));
        assert!(!l.end(1, Vec::new()), "not the first load");
        assert!(l.last.as_ref().is_some_and(|r| r.errors.is_empty()), "errors are per load");
    }

    #[test]
    fn a_reload_counts_what_it_stopped_and_one_asked_during_a_load_follows_it() {
        let mut l = Load::new();
        l.begin();
        let (early, early_rx) = responder();
        assert!(!l.ask_reload(early), "during a load it waits");
        l.end(0, Vec::new());
        l.answer_waiters();
        assert!(l.reload_again(), "another reload follows");
        assert!(early_rx.try_recv().is_err(), "answered by the reload that follows");
        l.begin_stop(false, || vec![("a".into(), names(&["t"]))]);
        l.count_stopped();
        l.count_stopped();
        assert!(l.holds(false), "requests wait during a reload");
        assert!(l.all_stopped(), "a reload loads again");
        l.begin();
        assert!(l.holds(false), "and while it loads");
        l.end(1, names(&["a"]));
        l.answer_waiters();
        assert!(!l.reload_again());
        match early_rx.try_recv() {
            Ok(Ok(Response::Reload(r))) => assert_eq!((r.stopped, r.loaded, r.ready), (2, 1, 1)),
            _ => panic!("no reload report"),
        }
        let (running, _rx) = responder();
        assert!(l.ask_reload(running), "while running it begins at once");
    }

    #[test]
    fn a_shutdown_answers_every_other_waiter_and_its_own_at_the_end() {
        let mut l = Load::new();
        assert!(!l.holds(false) && l.holds(true), "the first load holds requests only when asked to");
        l.begin();
        let (ready, ready_rx) = responder();
        let (reload, reload_rx) = responder();
        let (exit, exit_rx) = responder();
        l.wait_ready(ready);
        l.ask_reload(reload);
        l.ask_exit(exit);
        for rx in [&ready_rx, &reload_rx] {
            assert!(matches!(rx.try_recv(), Ok(Err(HostError::ShuttingDown))));
        }
        l.begin_stop(true, || panic!("no tools are kept for a shutdown"));
        assert!(l.exiting() && !l.holds(true));
        assert!(exit_rx.try_recv().is_err(), "answered when everything has stopped");
        assert!(!l.all_stopped());
        assert_eq!(l.phase, Phase::Done);
        assert!(matches!(exit_rx.try_recv(), Ok(Ok(Response::Done))));
    }

    #[test]
    fn after_a_reload_the_tools_each_extension_had_or_has_are_announced() {
        let mut l = Load::new();
        let before = vec![
            ("kept".to_string(), names(&["a", "b"])),
            ("gone".to_string(), names(&["g"])),
            ("none".to_string(), Vec::new()),
        ];
        l.begin_stop(false, || before);
        let now = vec![("kept".to_string(), names(&["a", "c"])), ("new".to_string(), names(&["n"])), ("empty".into(), Vec::new())];
        let news = l.reloaded_tools(now);
        assert_eq!(
            news,
            vec![
                ("kept".to_string(), names(&["a", "c", "b"])),
                ("new".to_string(), names(&["n"])),
                ("gone".to_string(), names(&["g"])),
            ]
        );
        assert!(l.reloaded_tools(Vec::new()).is_empty(), "announced once");
    }
}
