//! `zot ext logs` end to end through the real binary, including
//! `--follow` (lines appended later, and a log that does not exist yet).

use crossbeam_channel::Receiver;
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

mod common;
#[path = "common/ext_world.rs"]
mod ext_world;
use ext_world::*;

#[test]
fn logs() {
    let w = World::new();
    make_ext(&w.ext_root().join("weather"), "weather", "");
    let log = w.home.path().join("logs/ext-weather.log");

    let out = w.ok(&["ext", "logs", "weather"]);
    assert_eq!(out, format!("no log for weather yet ({})\n", log.display()));

    write(&log, "line one\n[zot] exited with status 1\n");
    assert_eq!(w.ok(&["ext", "logs", "weather"]), "line one\n[zot] exited with status 1\n");

    // A log without an extension (removed since) is still shown.
    write(&w.home.path().join("logs/ext-old.log"), "old\n");
    assert_eq!(w.ok(&["ext", "logs", "old"]), "old\n");

    let e = w.fails(&["ext", "logs", "nothing"]);
    assert_eq!(e, "zot: no extension named nothing (see 'zot ext list')");
}

/// Kills the child on drop, so a failed assertion leaves no process behind.
struct Killer(Child);

impl Drop for Killer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Lines from a pipe, through a reader thread.
fn lines_of(r: impl std::io::Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = crossbeam_channel::unbounded();
    std::thread::spawn(move || {
        for line in BufReader::new(r).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// Waits (with a deadline) for a line equal to / containing `want`.
fn expect_line(rx: &Receiver<String>, want: &str, exact: bool) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(l) if (exact && l == want) || (!exact && l.contains(want)) => return,
            Ok(_) => continue,
            Err(e) => panic!("no line {want:?} in time: {e}"),
        }
    }
}

/// `zot args` running on: its stdout and stderr lines, and the guard that
/// kills it.
fn follow(w: &World, args: &[&str]) -> (Receiver<String>, Receiver<String>, Killer) {
    let mut child = w.command(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn");
    let out = lines_of(child.stdout.take().expect("stdout"));
    let err = lines_of(child.stderr.take().expect("stderr"));
    (out, err, Killer(child))
}

fn append(path: &Path, text: &str) {
    let mut f = fs::OpenOptions::new().append(true).create(true).open(path).expect("open log");
    f.write_all(text.as_bytes()).expect("append");
}

#[test]
fn logs_follow() {
    let w = World::new();
    make_ext(&w.ext_root().join("tail"), "tail", "");
    let log = w.home.path().join("logs/ext-tail.log");
    write(&log, "first\n");

    let (out, err, _guard) = follow(&w, &["ext", "logs", "tail", "-f"]);

    expect_line(&out, "first", true);
    append(&log, "second\n");
    expect_line(&out, "second", true);

    // Truncation: start again from the beginning.
    fs::OpenOptions::new().write(true).open(&log).expect("open").set_len(0).expect("truncate");
    expect_line(&err, "truncated", false);
    append(&log, "third, after truncation\n");
    expect_line(&out, "third, after truncation", true);

    // Rotation: the path now names a new file. A line written just before
    // is printed too, before the new file's.
    let fresh = log.with_extension("new");
    write(&fresh, "fourth, new file\n");
    append(&log, "late line in the old file\n");
    fs::rename(&log, log.with_extension("log.1")).expect("rotate");
    fs::rename(&fresh, &log).expect("rotate");
    expect_line(&out, "late line in the old file", true);
    expect_line(&out, "fourth, new file", true);
    append(&log, "fifth\n");
    expect_line(&out, "fifth", true);
}

#[test]
fn logs_follow_waits_for_the_log() {
    let w = World::new();
    make_ext(&w.ext_root().join("later"), "later", "");
    let log = w.home.path().join("logs/ext-later.log");
    let (out, err, _guard) = follow(&w, &["ext", "logs", "later", "--follow"]);
    expect_line(&err, "waiting for", false);
    write(&log, "hello\n");
    expect_line(&out, "hello", true);
}
