//! The host alone writes an extension's log (docs/protocol.md §1): its
//! stderr is a pipe the host reads and appends line by line, so the
//! extension cannot truncate, rewrite or seek in the log, nor fill the
//! disk through it (rotated past 8 MiB). Real extensions
//! (tests/fixtures/stderr_ext.py), confined and not, and the files they
//! leave on disk.

mod common;
#[path = "common/zot_proc.rs"]
mod zot_proc;
#[path = "common/term.rs"]
mod term;

use common::{fixture, host_config, landlock, read_log, start_host, text_of, wait_event, write_manifest, TempDir};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;
use zot_host::host::{Host, HostEvent};

const MIB: u64 = 1024 * 1024;
/// The rotation bound of docs/protocol.md §1.
const LOG_MAX: u64 = 8 * MIB;
/// What may come on top of the bound: the host writes whole batches of
/// lines (at most 64 KiB read at a time, lines cut at 64 KiB) and its own
/// lines.
const SLACK: u64 = 256 * 1024;

/// An extension `name` running the stderr fixture, with `confine` when given.
fn err_ext(parent: &Path, name: &str, confine: Option<Value>) -> PathBuf {
    let mut m = json!({"name": name, "exec": "python3", "args": [fixture("stderr_ext.py").display().to_string(), name]});
    if let Some(c) = confine {
        m["confine"] = c;
    }
    write_manifest(parent, name, m)
}

/// Runs `op` in extension `name`; its answer, decoded.
fn op(host: &Host, name: &str, args: Value) -> Value {
    let r = host.tool(&format!("{name}_err"), Some(args)).unwrap_or_else(|e| panic!("{name}: {e}"));
    serde_json::from_str(&text_of(&r.content)).unwrap_or(Value::Null)
}

fn log_path(t: &TempDir, name: &str) -> PathBuf {
    t.path().join("home/logs").join(format!("ext-{name}.log"))
}

fn read_bytes(t: &TempDir, name: &str) -> Vec<u8> {
    zot_host::host::flush_logs();
    std::fs::read(log_path(t, name)).unwrap_or_default()
}

#[test]
fn an_extension_cannot_truncate_rewrite_or_forge_its_log() {
    let t = TempDir::new("logs-tamper");
    let mut names = vec!["plain"];
    if landlock() {
        names.push("jailed");
    } else {
        eprintln!("this kernel has no Landlock: only the unconfined extension is tried");
    }
    let exts = names.iter().map(|n| err_ext(t.path(), n, (*n == "jailed").then(|| json!({})))).collect();
    let (host, _ev) = start_host(host_config(t.path(), exts));
    host.wait_ready().expect("ready");
    // The control: the same steps on a file it holds open for appending
    // (as its stderr was the log before) rewrite it from the start.
    let file = t.path().join("a-file.log");
    std::fs::write(&file, "the host's line\n").expect("write");
    let got = op(&host, "plain", json!({"op": "tamper", "path": file.display().to_string(), "text": "forged"}));
    assert_eq!(got, json!({"truncate": "ok", "append": "ok", "seek": "ok", "write": "ok"}));
    assert_eq!(std::fs::read_to_string(&file).expect("read"), "forged\n", "the control rewrote its file");
    for name in &names {
        op(&host, name, json!({"op": "write", "text": format!("{name} before")}));
        let before = read_bytes(&t, name);
        let text = String::from_utf8_lossy(&before).into_owned();
        assert!(text.starts_with(&format!("[zot] starting {name} ")), "{name}: {text}");
        assert!(text.ends_with(&format!("\n{name} before\n")), "{name}: {text}");

        let got = op(&host, name, json!({"op": "tamper", "text": format!("{name} after tampering")}));
        // A pipe can be neither truncated nor sought; clearing O_APPEND on
        // it changes nothing.
        assert_eq!(got["truncate"], "errno 22", "{name}: {got}");
        assert_eq!(got["seek"], "errno 29", "{name}: {got}");
        assert_eq!(got["write"], "ok", "{name}: {got}");
        op(&host, name, json!({"op": "write", "text": "[zot] exited (exit code 0)"}));
        // What a terminal would show as a host line: a carriage return, an
        // escape sequence, a byte-order mark before it.
        op(&host, name, json!({"op": "write", "text": " \r[zot] forged b"}));
        op(&host, name, json!({"op": "write", "text": "x\u{1b}[2K\r[zot] forged c"}));
        op(&host, name, json!({"op": "write", "text": "\u{feff}[zot] forged d"}));
        op(&host, name, json!({"op": "write", "text": "it says [zot] in its text"}));
        op(&host, name, json!({"op": "write", "text": format!("{name} last")}));

        let after = read_bytes(&t, name);
        assert!(after.starts_with(&before), "{name}: the host's earlier lines are in place:\n{}", String::from_utf8_lossy(&after));
        let rest = String::from_utf8_lossy(&after[before.len()..]).into_owned();
        assert_eq!(
            rest,
            format!(
                "{name} after tampering\n[stderr] [zot] exited (exit code 0)\n[stderr]  \r[zot] forged b\n[stderr] x\u{1b}[2K\r[zot] forged c\n[stderr] \u{feff}[zot] forged d\nit says [zot] in its text\n{name} last\n"
            ),
            "{name}: its text arrives after, and a line of its own never passes for the host's"
        );
    }
    host.shutdown();
}

#[test]
fn a_log_past_8_mib_is_rotated_and_calls_still_answer() {
    let t = TempDir::new("logs-rotate");
    let (host, _ev) = start_host(host_config(t.path(), vec![err_ext(t.path(), "loud", None)]));
    host.wait_ready().expect("ready");
    let path = log_path(&t, "loud");
    let old = PathBuf::from(format!("{}.1", path.display()));
    // 20 MiB in 2 MiB calls: two rotations, each call answered.
    let mut sizes = Vec::new();
    for i in 0..10 {
        let got = op(&host, "loud", json!({"op": "spew", "bytes": 2 * MIB, "tag": format!("s{i}")}));
        assert!(got["bytes"].as_u64().unwrap_or(0) >= 2 * MIB, "call {i} answered: {got}");
        zot_host::host::flush_logs();
        let live = std::fs::metadata(&path).map_or(0, |m| m.len());
        let kept = std::fs::metadata(&old).map_or(0, |m| m.len());
        sizes.push((live, kept));
        assert!(live <= LOG_MAX + SLACK && kept <= LOG_MAX + SLACK, "bounded on disk after call {i}: {sizes:?}");
    }
    assert!(old.exists(), "rotated to {}: {sizes:?}", old.display());
    let logs: Vec<String> = std::fs::read_dir(path.parent().unwrap())
        .expect("logs dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert!(logs.iter().all(|n| n == "ext-loud.log" || n == "ext-loud.log.1"), "one earlier log is kept, no more: {logs:?}");
    let live = read_log(t.path(), "loud");
    assert!(live.starts_with("[zot] log rotated\n"), "the new log says why it begins: {}", &live[..live.len().min(200)]);
    assert!(live.ends_with("s9 done\n"), "the newest lines are kept: {}", &live[live.len().saturating_sub(200)..]);
    // Nothing in between was lost: the lines of the last call before the
    // newest rotation run on into the live log.
    let earlier = std::fs::read(&old).expect("old log");
    assert!(earlier.len() as u64 >= LOG_MAX, "the old log was full: {}", earlier.len());
    let last_old = String::from_utf8_lossy(&earlier).lines().last().unwrap_or("").to_string();
    let next_live = live.lines().nth(1).unwrap_or("");
    let num = |l: &str| -> Option<(String, u64)> {
        let mut w = l.split(' ');
        Some((w.next()?.to_string(), w.next()?.parse().ok()?))
    };
    match (num(&last_old), num(next_live)) {
        (Some((ta, a)), Some((tb, b))) if ta == tb => assert_eq!(b, a + 1, "{last_old:.20} → {next_live:.20}"),
        // The rotation fell between two calls.
        (_, b) => assert!(next_live.is_empty() || b.is_some_and(|(_, n)| n == 0) || last_old.ends_with("done"), "{last_old:.20} → {next_live:.20}"),
    }
    op(&host, "loud", json!({"op": "write", "text": "still here"}));
    assert!(read_log(t.path(), "loud").ends_with("still here\n"));
    host.shutdown();
}

/// Calls `exit` in `name` and waits until the host reported the exit.
fn exit_with(host: &Host, events: &crossbeam_channel::Receiver<HostEvent>, name: &str, args: Value) {
    let r = host.tool(&format!("{name}_err"), Some(args));
    assert!(r.is_err(), "{name} exited without answering: {r:?}");
    let ev = wait_event(events, Duration::from_secs(60), |e| matches!(e, HostEvent::Exited { extension, .. } if extension == name));
    assert!(ev.is_some(), "{name}'s exit is reported");
}

#[test]
fn stderr_written_before_the_exit_is_in_the_log_before_the_exit_line() {
    let t = TempDir::new("logs-exit");
    let exts = vec![err_ext(t.path(), "bye", None), err_ext(t.path(), "half", None)];
    let (host, events) = start_host(host_config(t.path(), exts));
    host.wait_ready().expect("ready");
    exit_with(&host, &events, "bye", json!({"op": "exit", "lines": 2000, "tag": "n", "text": "last words", "code": 3}));
    exit_with(&host, &events, "half", json!({"op": "exit", "text": "no newline at the end", "newline": false, "code": 4}));

    let log = read_log(t.path(), "bye");
    let lines: Vec<&str> = log.lines().collect();
    let numbered: Vec<&str> = lines.iter().copied().filter(|l| l.starts_with("n ")).collect();
    let want: Vec<String> = (0..2000).map(|i| format!("n {i}")).collect();
    assert_eq!(numbered, want, "every line, in order");
    let at = |needle: &str| lines.iter().position(|l| *l == needle).unwrap_or_else(|| panic!("no {needle:?} in:\n{log}"));
    assert!(at("n 1999") < at("last words") && at("last words") < at("[zot] exited (exit code 3)"), "{log}");

    let log = read_log(t.path(), "half");
    let lines: Vec<&str> = log.lines().collect();
    let at = |needle: &str| lines.iter().position(|l| *l == needle).unwrap_or_else(|| panic!("no {needle:?} in:\n{log}"));
    assert!(at("no newline at the end") < at("[zot] exited (exit code 4)"), "the unfinished line is kept, before the exit line: {log}");
    host.shutdown();
}

#[test]
fn an_over_long_stderr_line_is_cut_and_invalid_utf8_is_kept() {
    let t = TempDir::new("logs-long");
    let (host, _ev) = start_host(host_config(t.path(), vec![err_ext(t.path(), "wide", None)]));
    host.wait_ready().expect("ready");
    let long = "y".repeat(200 * 1024);
    op(&host, "wide", json!({"op": "write", "text": long}));
    op(&host, "wide", json!({"op": "write", "text": "short one"}));
    op(&host, "wide", json!({"op": "write", "hex": "fffe206261640d"}));
    let log = read_bytes(&t, "wide");
    assert!(log.ends_with(b"short one\n\xff\xfe bad\r\n"), "bytes kept as they are");
    let text = String::from_utf8_lossy(&log);
    let lines: Vec<&str> = text.lines().collect();
    let cut = lines.iter().position(|l| l.starts_with('y')).expect("the cut line");
    assert_eq!(lines[cut].len(), 64 * 1024, "cut at 64 KiB");
    assert_eq!(lines[cut + 1], format!("[zot] the stderr line above was {} bytes long, cut to its first 65536", 200 * 1024));
    assert_eq!(lines[cut + 2], "short one");
    host.shutdown();
}

#[test]
fn zot_ext_logs_follow_goes_on_across_a_rotation_and_loses_nothing() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let t = TempDir::new("logs-follow");
    let (host, _ev) = start_host(host_config(t.path(), vec![err_ext(t.path(), "told", None)]));
    host.wait_ready().expect("ready");
    zot_host::host::flush_logs();
    let mut follow = Command::new(env!("CARGO_BIN_EXE_zot"))
        .args(["ext", "logs", "told", "--follow"])
        .env("ZOT_HOME", t.path().join("home"))
        .current_dir(t.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("zot ext logs -f");
    let out = follow.stdout.take().expect("stdout");
    let (tx, rx) = crossbeam_channel::unbounded();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // 10 MiB: one rotation, while it follows.
    let counts: Vec<u64> = (0..5)
        .map(|i| op(&host, "told", json!({"op": "spew", "bytes": 2 * MIB, "tag": format!("f{i}")}))["lines"].as_u64().expect("lines"))
        .collect();
    op(&host, "told", json!({"op": "write", "text": "after the rotation"}));
    assert!(log_path(&t, "told").with_extension("log.1").exists(), "rotated");
    let mut seen = Vec::new();
    let end = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        match rx.recv_deadline(end) {
            Ok(l) if l == "after the rotation" => break,
            Ok(l) => seen.push(l),
            Err(e) => {
                let _ = follow.kill();
                panic!("no end line ({e}); {} lines, last {:?}", seen.len(), seen.last());
            }
        }
    }
    let _ = follow.kill();
    let _ = follow.wait();
    let rotated = seen.iter().filter(|l| *l == "[zot] log rotated").count();
    assert_eq!(rotated, 1, "it saw the new log begin");
    // Every line of every call, once, in order, across the rotation.
    let mut want = Vec::new();
    for (i, n) in counts.iter().enumerate() {
        want.extend((0..*n).map(|j| format!("f{i} {j} ")));
        want.push(format!("f{i} done"));
    }
    let got: Vec<&String> = seen.iter().filter(|l| l.starts_with('f')).collect();
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert!(g.starts_with(w.as_str()), "{g:.30} where {w} was due");
    }
    host.shutdown();
}

#[test]
fn an_mcp_servers_stderr_before_its_exit_is_in_its_log_before_the_exit_line() {
    let t = TempDir::new("logs-mcp");
    let server = json!({"command": "python3", "args": [fixture("mcp_server.py").display().to_string(), "--exit-after-list", "7"]});
    let conf = t.path().join("mcp.json");
    std::fs::write(&conf, json!({"mcpServers": {"gone": server}}).to_string()).expect("config");
    let mut cfg = host_config(t.path(), Vec::new());
    cfg.mcp_configs = vec![conf];
    let (host, events) = start_host(cfg);
    let ev = wait_event(&events, Duration::from_secs(60), |e| match e {
        HostEvent::Exited { extension, .. } => extension == "gone",
        HostEvent::LoadFailed { extension, .. } => extension == "gone",
        _ => false,
    });
    assert!(ev.is_some(), "its exit is reported");
    zot_host::host::flush_logs();
    let log = std::fs::read_to_string(t.path().join("home/logs/mcp-gone.log")).expect("its log");
    let lines: Vec<&str> = log.lines().collect();
    let said = lines.iter().position(|l| *l == "fixture: exiting after the listing").unwrap_or_else(|| panic!("{log}"));
    let exit = lines.iter().position(|l| l.starts_with("[zot] ") && l.contains("exit code 7")).unwrap_or_else(|| panic!("{log}"));
    assert!(said < exit, "{log}");
    host.shutdown();
}

/// On a terminal, `zot ext logs` leaves out the control characters of the
/// extension's text: a carriage return or an escape sequence in it neither
/// hides what came before nor drives the terminal. To a pipe the log is
/// copied as it is (the control).
#[test]
fn zot_ext_logs_on_a_terminal_leaves_out_the_extensions_control_characters() {
    let t = TempDir::new("logs-terminal");
    let logs = t.path().join("zot-home/logs");
    std::fs::create_dir_all(&logs).expect("mkdir");
    std::fs::write(logs.join("ext-x.log"), "a\x1b[31mred\r[zot] forged\u{9d}52;c;eA==\u{9c}\u{9b}2K!\n").expect("log");
    let args: Vec<String> = ["ext", "logs", "x"].map(String::from).to_vec();
    let mut z = term::Term::spawn_args(&t, &args, 120);
    z.wait_for("forged", 0);
    assert_eq!(z.exit_code(), 0);
    let shown = z.text();
    assert!(shown.contains("a[31mred[zot] forged52;c;eA==2K!"), "{shown:?}");
    assert!(!shown.contains('\x1b') && !shown.contains("red\r"), "{shown:?}");
    assert!(!shown.contains(['\u{9b}', '\u{9c}', '\u{9d}']), "{shown:?}");
    let piped = std::process::Command::new(env!("CARGO_BIN_EXE_zot"))
        .args(["ext", "logs", "x"])
        .env("ZOT_HOME", t.path().join("zot-home"))
        .output()
        .expect("zot ext logs");
    assert_eq!(piped.stdout, "a\x1b[31mred\r[zot] forged\u{9d}52;c;eA==\u{9c}\u{9b}2K!\n".as_bytes());
}
