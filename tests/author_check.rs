//! `zot ext check` end to end through the `zot` binary against
//! deliberately broken fixtures (tests/fixtures/check/broken.py, one flag
//! per defect): manifest, handshake, stdout, schema, reply and shutdown
//! problems, the current upstream frames, the text report, what was
//! written before the exit, and the manifest's `env`.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
#[path = "common/author.rs"]
mod author;
use author::*;
use common::TempDir;

/// A fixture folder, its flags, the exit code, and the finding expected:
/// code, severity, a part of its message.
type Case = (&'static str, &'static [&'static str], i32, &'static str, &'static str, &'static str);

#[test]
fn check_manifest_problems() {
    let t = TempDir::new("manifest");
    let (code, r) = check(&t, &t.path().join("missing"), &[]);
    assert_eq!(code, 1);
    expect(&r, "manifest", "error", "cannot read");
    assert_eq!(r["extension"], Value::Null);

    let bad = t.path().join("badname");
    std::fs::create_dir_all(&bad).expect("mkdir");
    std::fs::write(bad.join("extension.json"), r#"{"name":"../x","exec":"sh"}"#).expect("write");
    let (code, r) = check(&t, &bad, &[]);
    assert_eq!(code, 1);
    expect(&r, "manifest", "error", "invalid name");

    let noexec = t.path().join("noexec");
    std::fs::create_dir_all(&noexec).expect("mkdir");
    std::fs::write(noexec.join("extension.json"), r#"{"name":"x","exec":"./run.sh"}"#).expect("write");
    let (code, r) = check(&t, &noexec, &[]);
    assert_eq!(code, 1);
    expect(&r, "exec", "error", "no such file");
    std::fs::write(noexec.join("run.sh"), "#!/bin/sh\n").expect("write");
    let (code, r) = check(&t, &noexec, &[]);
    assert_eq!(code, 1);
    expect(&r, "exec", "error", "not executable");
}

#[test]
fn check_handshake_problems() {
    let t = TempDir::new("handshake");
    let cases: Vec<Case> = vec![
        ("early", &["--exit-early"], 1, "exited", "error", "before hello (exit code 3)"),
        ("silent", &["--silent"], 1, "no_hello", "error", "no hello within 5s"),
        ("first", &["--ready-first"], 1, "hello_not_first", "error", "\"ready\", not hello"),
        ("legacy", &["--legacy"], 0, "early_registration", "info", "register_command, register_tool, ready before hello_ack"),
        ("noready", &["--no-ready"], 0, "auto_ready", "warning", "no ready frame"),
    ];
    par(cases, |(dir, flags, want, code, sev, needle)| {
        let ext = broken_ext(t.path(), dir, flags);
        let (rc, r) = check(&t, &ext, &[]);
        assert_eq!(rc, want, "{dir}: {r:#}");
        expect(&r, code, sev, needle);
        match dir {
            "early" => expect(&r, "stderr", "info", "boom: missing config"),
            "legacy" => assert_eq!(r["timings"]["ready_by"], "frame"),
            "noready" => {
                assert_eq!(r["timings"]["ready_by"], "auto");
                let (hello, ready) = (r["timings"]["hello_ms"].as_f64().unwrap_or(0.0), r["timings"]["ready_ms"].as_f64().unwrap_or(0.0));
                assert!(ready + 1.0 >= hello + 250.0, "{r:#}");
            }
            _ => {}
        }
    });
}

#[test]
fn check_stdout_and_schemas() {
    let t = TempDir::new("frames");
    let junk = broken_ext(t.path(), "junk", &["--junk"]);
    let schemas = broken_ext(t.path(), "schemas", &["--bad-schemas"]);
    par(vec![junk, schemas], |ext| {
        let (rc, r) = check(&t, &ext, &[]);
        assert_eq!(rc, 1, "{r:#}");
        if ext.ends_with("junk") {
            expect(&r, "not_a_frame", "warning", "debug: starting up");
            expect(&r, "unknown_frame", "warning", "\"frobnicate\"");
            expect(&r, "bad_frame", "error", "missing field `name`");
            expect(&r, "mistyped_field", "warning", "notify.level");
        } else {
            expect(&r, "schema_not_object", "error", "tool not_object");
            expect(&r, "schema_required", "error", "names \"b\", which is not in its properties");
            expect(&r, "schema_type", "error", "properties.a.type is \"text\"");
            // The good tool is still called; the refused one is not.
            let names: Vec<&str> = r["calls"].as_array().expect("calls").iter().filter_map(|c| c["name"].as_str()).collect();
            assert!(names.contains(&"echo") && !names.contains(&"not_object"), "{names:?}");
        }
    });
}

#[test]
fn check_reply_problems() {
    let t = TempDir::new("replies");
    let cases: Vec<(&str, &[&str], &str, &str, &str)> = vec![
        ("ignore", &["--ignore-commands"], "no_reply", "error", "/ping: no command_response within 10s"),
        ("wrongid", &["--wrong-id"], "stray_reply", "error", "\"not-zot-check-1\""),
        ("malformed", &["--malformed-reply"], "bad_reply", "error", "malformed tool_result"),
        ("content", &["--bad-content"], "bad_content", "warning", "a text block without a string \"text\""),
        ("crash", &["--crash-on-command"], "exited", "error", "while answering /ping (exit code 5)"),
        // The answer counts even when the exit is seen first; the exit is
        // reported either way (before shutdown, or while answering the tool).
        ("answered", &["--exit-after-answer"], "exited", "error", "(exit code 4)"),
        ("intercept", &["--ignore-intercept"], "no_reply", "error", "intercept tool_call: no event_intercept_response"),
    ];
    par(cases, |(dir, flags, code, sev, needle)| {
        let ext = broken_ext(t.path(), dir, flags);
        // Every call that is answered (or ends in an exit) must be judged
        // so before this runs out, on a loaded machine too; only the ones
        // never answered wait for it.
        let (rc, r) = check(&t, &ext, &["--timeout", "10"]);
        assert_eq!(rc, if sev == "error" { 1 } else { 0 }, "{dir}: {r:#}");
        expect(&r, code, sev, needle);
        if dir == "malformed" {
            // Answered (badly) at once: not also a timeout.
            assert!(findings(&r, "no_reply").is_empty(), "{r:#}");
        }
        if dir == "answered" {
            let ping = r["calls"].as_array().expect("calls").iter().find(|c| c["name"] == "ping").cloned();
            assert_eq!(ping.map(|c| c["ok"].clone()), Some(json!(true)), "{r:#}");
        }
        if dir == "intercept" {
            let c = r["calls"].as_array().expect("calls").iter().find(|c| c["kind"] == "intercept").cloned();
            assert_eq!(c.map(|c| c["ok"].clone()), Some(json!(false)), "{r:#}");
        }
    });
}

/// An extension folder running tests/fixtures/check/upstream.py with `flags`.
fn upstream_ext(parent: &Path, dir: &str, flags: &[&str]) -> PathBuf {
    let d = parent.join(dir);
    std::fs::create_dir_all(&d).expect("mkdir");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/check/upstream.py");
    let mut args = vec![script.display().to_string()];
    args.extend(flags.iter().map(|s| s.to_string()));
    let m = json!({"name": "upstream", "version": "2.0.0", "exec": "python3", "args": args});
    std::fs::write(d.join("extension.json"), m.to_string()).expect("write manifest");
    d
}

#[test]
fn check_knows_the_current_upstream_frames() {
    let t = TempDir::new("upstream");
    let ext = upstream_ext(t.path(), "clean", &[]);
    // Every call is answered: a busy machine must not make one late.
    let (rc, r) = check(&t, &ext, &["--timeout", "10"]);
    assert_eq!(rc, 0, "{r:#}");
    assert_eq!(counted(&r), (0, 0), "{r:#}");
    for code in ["unknown_frame", "mistyped_field", "bad_action", "unknown_event", "bad_intercept", "bad_content"] {
        assert!(findings(&r, code).is_empty(), "{code}: {r:#}");
    }
    // call_tool was answered (the extension answered its own tool_call
    // only after that), and the interactive tool was left alone.
    expect(&r, "call_tool", "info", "\"weather\"");
    expect(&r, "not_all_called", "info", "tool pick is interactive");
    let calls: Vec<(&str, bool)> = r["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .map(|c| (c["name"].as_str().unwrap_or(""), c["ok"] == true))
        .collect();
    assert_eq!(
        calls,
        [("weather", true), ("outer", true), ("later", true), ("coded", true), ("before_agent_start", true)],
        "{r:#}"
    );
}

#[test]
fn check_flags_misuse_of_the_current_upstream_frames() {
    let t = TempDir::new("upstream-bad");
    let cases: Vec<(&str, &[&str], &str, &str, &str)> = vec![
        ("exposure", &["--bad-exposure"], "unknown_exposure", "error", "tool coded has unknown exposure \"nonsense\""),
        ("replay", &["--bad-replay"], "unknown_replay", "warning", "tool coded has unknown replay \"sometimes\""),
        ("cap", &["--no-call-tool-cap"], "call_tool_capability", "error", "without \"call_tool\" in hello's capabilities"),
        ("parent", &["--no-parent"], "bad_parent_id", "error", "parent_id is required while an extension tool is active"),
        ("slow", &["--slow-tool"], "no_tool_cancel", "warning", "tool coded took"),
        ("prompt", &["--tool-prompt-no-name"], "tool_prompt_no_tool", "error", "tool_prompt without a tool_name"),
        ("slash", &["--bad-slash"], "bad_submit_slash", "warning", "\"not a slash command\" does not start with '/'"),
    ];
    par(cases, |(dir, flags, code, sev, needle)| {
        let ext = upstream_ext(t.path(), dir, flags);
        let (rc, r) = check(&t, &ext, &[]);
        assert_eq!(rc, if sev == "error" { 1 } else { 0 }, "{dir}: {r:#}");
        expect(&r, code, sev, needle);
        let (errors, warnings) = counted(&r);
        assert_eq!(errors + warnings, 1, "only {code}: {r:#}");
        if dir == "exposure" {
            // The host refuses that tool, so the check does not call it.
            assert!(!r["calls"].as_array().expect("calls").iter().any(|c| c["name"] == "coded"), "{r:#}");
        }
    });
}

#[test]
fn check_shutdown_problems() {
    let t = TempDir::new("shutdown");
    let cases: Vec<Case> = vec![
        ("hang", &["--hang-on-shutdown"], 1, "shutdown_timeout", "error", "still running 2s after shutdown"),
        ("noack", &["--no-ack"], 0, "no_shutdown_ack", "warning", "without a shutdown_ack"),
        ("grandchild", &["--grandchild"], 1, "leftover_processes", "error", "sleep"),
        ("stderr", &["--stderr", "--show-home"], 0, "stderr", "info", "debug line 1 | debug line 2 | debug line 3 (+1 more)"),
    ];
    par(cases, |(dir, flags, want, code, sev, needle)| {
        let ext = broken_ext(t.path(), dir, flags);
        let (rc, r) = check(&t, &ext, &[]);
        assert_eq!(rc, want, "{dir}: {r:#}");
        expect(&r, code, sev, needle);
    });
}

#[test]
fn check_text_output() {
    let t = TempDir::new("text");
    let ext = broken_ext(t.path(), "sandbox", &["--show-home", "--no-ready", "--ignore-commands"]);
    // The tool call must be answered before this runs out, on a loaded
    // machine too; only the ignored command waits for it.
    let r = run(zot_cmd(t.path(), &["ext", "check", &ext.display().to_string(), "--timeout", "10"]));
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert!(lines[0].starts_with("zot ext check: broken ("), "{}", r.stdout);
    let find = |code: &str| lines.iter().find(|l| l.split_whitespace().nth(1) == Some(code)).copied();
    let no_reply = find("no_reply").unwrap_or_else(|| panic!("{}", r.stdout));
    assert!(no_reply.starts_with("error ") && no_reply.contains("(fix: answer every command_invoked"), "{no_reply}");
    assert!(find("auto_ready").is_some_and(|l| l.starts_with("warning ")), "{}", r.stdout);
    // The extension saw a ZOT_HOME inside the check's temporary directory,
    // which is gone afterwards.
    let stderr = find("stderr").unwrap_or_else(|| panic!("{}", r.stdout));
    let tmp = t.path().join("tmp").join("zot-check-").display().to_string();
    assert!(stderr.contains(&format!("home={tmp}")), "{stderr}");
    assert!(lines.iter().any(|l| l.starts_with("calls:  /ping FAILED")), "{}", r.stdout);
    // (A loaded machine may add a slow_hello warning.)
    assert!(lines.last().is_some_and(|l| l.starts_with("FAILED: 1 error, ") && l.ends_with(", 1 info")), "{}", r.stdout);
    assert!(std::fs::read_dir(t.path().join("tmp")).expect("tmp").next().is_none());
}

/// An extension folder whose manifest runs `sh -c script`.
fn sh_ext(parent: &Path, dir: &str, script: &str) -> PathBuf {
    let d = parent.join(dir);
    std::fs::create_dir_all(&d).expect("mkdir");
    let m = json!({"name": "racer", "version": "1.0.0", "exec": "sh", "args": ["-c", script]});
    std::fs::write(d.join("extension.json"), m.to_string()).expect("write manifest");
    d
}

/// The exit and the last stdout lines reach the check on different
/// threads, and the exit often comes first: what was written before it
/// must still be judged (docs/protocol.md §3 rule 8), every time.
#[test]
fn check_judges_what_was_written_before_the_exit() {
    let t = TempDir::new("exit-race");
    let junk = sh_ext(t.path(), "junk", "echo 'debug: junk line'; exit 3");
    let frame = sh_ext(t.path(), "frame", r#"echo '{"type":"hello","name":"racer","version":"1.0.0"}'; exit 3"#);
    for run in 0..20 {
        let (rc, r) = check(&t, &junk, &[]);
        assert_eq!(rc, 1, "run {run}: {r:#}");
        expect(&r, "not_a_frame", "warning", "debug: junk line");
        expect(&r, "exited", "error", "exited before hello (exit code 3)");
        assert_eq!(counted(&r), (1, 1), "run {run}: {r:#}");

        let (rc, r) = check(&t, &frame, &[]);
        assert_eq!(rc, 1, "run {run}: {r:#}");
        expect(&r, "exited", "error", "exited right after hello (exit code 3)");
        assert!(r["timings"]["hello_ms"].is_number(), "run {run}: {r:#}");
        assert_eq!(counted(&r), (1, 0), "run {run}: {r:#}");
    }
}

/// A broken-fixture folder whose flags come from its manifest's `env`.
fn env_ext(parent: &Path, dir: &str, env: Value) -> PathBuf {
    let d = broken_ext(parent, dir, &[]);
    let path = d.join("extension.json");
    let mut m: Value = serde_json::from_slice(&std::fs::read(&path).expect("read manifest")).expect("json");
    m["env"] = env;
    std::fs::write(&path, m.to_string()).expect("write manifest");
    d
}

/// `zot ext check` gives the extension its manifest's `env` (docs/protocol.md
/// §7.2) as the host does; an unset variable is one error in the host's
/// words, and nothing is started; values never show.
#[test]
fn check_applies_the_manifest_env() {
    const SECRET: &str = "hunter2-not-for-reports";
    let t = TempDir::new("env");
    let ext = env_ext(
        t.path(),
        "env",
        json!({
            "BROKEN_FLAGS": "${ZOT_CHECK_TEST_FLAG} ${ZOT_CHECK_TEST_NONE:---no-ready}",
            "BROKEN_TOKEN": "${ZOT_CHECK_TEST_SECRET}",
        }),
    );
    let d = ext.display().to_string();
    let with = |c: &mut Command, secret: bool| {
        c.env("ZOT_CHECK_TEST_FLAG", "--no-ack").env_remove("ZOT_CHECK_TEST_NONE");
        if secret {
            c.env("ZOT_CHECK_TEST_SECRET", SECRET);
        } else {
            c.env_remove("ZOT_CHECK_TEST_SECRET");
        }
    };

    // Every variable set: the flags reached the extension (a value, and a
    // default), which behaves accordingly.
    for json in [true, false] {
        let home = TempDir::new("env-run");
        let mut c = zot_cmd(home.path(), &["ext", "check", &d]);
        if json {
            c.arg("--json");
        }
        with(&mut c, true);
        let r = run(c);
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
        assert!(!r.stdout.contains(SECRET) && !r.stderr.contains(SECRET), "{}{}", r.stdout, r.stderr);
        if json {
            let v: Value = serde_json::from_str(&r.stdout).expect("json");
            expect(&v, "no_shutdown_ack", "warning", "without a shutdown_ack");
            expect(&v, "auto_ready", "warning", "no ready frame");
            assert_eq!(counted(&v), (0, 2), "{v:#}");
        } else {
            assert!(r.stdout.contains("no_shutdown_ack") && r.stdout.contains("auto_ready"), "{}", r.stdout);
        }
    }

    // The secret unset: one error naming the entry and the variable, in
    // the host's words; the extension never ran.
    let home = TempDir::new("env-unset");
    let mut c = zot_cmd(home.path(), &["ext", "check", &d, "--json"]);
    with(&mut c, false);
    let r = run(c);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).expect("json");
    let want = "env BROKEN_TOKEN: variable ZOT_CHECK_TEST_SECRET is not set";
    let all = v["findings"].as_array().expect("findings");
    assert_eq!(all.len(), 1, "{v:#}");
    assert_eq!((&all[0]["severity"], &all[0]["code"], &all[0]["message"]), (&json!("error"), &json!("env"), &json!(want)), "{v:#}");
    assert!(all[0]["hint"].as_str().is_some_and(|h| h.contains("ZOT_CHECK_TEST_SECRET")), "{v:#}");
    assert_eq!((&v["timings"]["hello_ms"], &v["calls"]), (&Value::Null, &json!([])), "{v:#}");
    // The host says the same when it loads it.
    let mut c = zot_cmd(home.path(), &["ext", "doctor", "--no-ext", "--ext", &d, "--json"]);
    c.current_dir(home.path());
    with(&mut c, false);
    let r = run(c);
    let doc: Value = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("doctor --json ({e}): {}{}", r.stdout, r.stderr));
    assert_eq!(doc["extensions"][0]["reason"], want, "{doc:#}");
}

#[test]
fn a_crash_at_start_shows_the_last_lines_of_its_stderr() {
    // As a person reads a traceback: the line that says what went wrong
    // comes last, after the frames.
    let t = TempDir::new("check-traceback");
    let dir = t.path().join("crashy");
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(dir.join("main.py"), "import sys\ndef f():\n    import zot_missing_module\ndef g():\n    f()\ng()\n").expect("main.py");
    std::fs::write(dir.join("extension.json"), r#"{"name": "crashy", "exec": "python3", "args": ["main.py"]}"#).expect("manifest");
    let (code, report) = check(&t, &dir, &[]);
    assert_eq!(code, 1, "{report:#}");
    expect(&report, "stderr", "info", "ModuleNotFoundError: No module named 'zot_missing_module'");
    expect(&report, "stderr", "info", "(+");
}
