//! `zot ext doctor` end to end through the binary, with real extension
//! processes (tests/fixtures/ext.py): a clean load (every state named, the
//! log lines of the load, exit 0, valid JSON), a mute extension and a name
//! conflict (exit 1, named, with the reason and a fix), and no extension
//! process left once it has exited.

use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

mod common;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use common::{py_ext, write_manifest, Out, TempDir};
use zot_proc::{assert_gone_within, strings, BIN, FAST};

/// `zot ext doctor --cwd <t>/cwd FAST args...` with `ZOT_HOME=<t>/home`.
fn doctor(t: &TempDir, args: &[String]) -> Out {
    let cwd = t.path().join("cwd");
    std::fs::create_dir_all(&cwd).expect("cwd");
    let mut argv = strings(&["ext", "doctor", "--cwd"]);
    argv.push(cwd.display().to_string());
    argv.extend(strings(&FAST));
    argv.extend(args.iter().cloned());
    let out = Command::new(BIN)
        .args(&argv)
        .env("ZOT_HOME", t.path().join("home"))
        .env_remove("XDG_STATE_HOME")
        .env_remove("ZOT_TRACE")
        .stdin(Stdio::null())
        .output()
        .expect("run zot ext doctor");
    Out::of(out)
}

fn json_of(r: &Out) -> Value {
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("no JSON ({e}):\n{}\n{}", r.stdout, r.stderr))
}

fn ext_args(dirs: &[&Path]) -> Vec<String> {
    dirs.iter().flat_map(|d| ["--ext".to_string(), d.display().to_string()]).collect()
}

/// The report's entry for `name` (the first one with that name).
fn entry<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["extensions"]
        .as_array()
        .and_then(|a| a.iter().find(|e| e["name"] == name))
        .unwrap_or_else(|| panic!("{name} not in {report:#}"))
}

/// Every extension pid the report names is gone, with its process group.
fn assert_none_left(report: &Value) {
    let pids: Vec<u32> = report["extensions"]
        .as_array()
        .map(|a| a.iter().filter_map(|e| e["pid"].as_u64()).map(|p| p as u32).collect())
        .unwrap_or_default();
    assert!(!pids.is_empty(), "no pids in {report:#}");
    assert_gone_within(&pids, Duration::from_secs(30), &report.to_string());
}

#[test]
fn clean_load_names_every_extension_and_its_state() {
    let t = TempDir::new("doctor-clean");
    let a = py_ext(t.path(), "a", "alpha", &["--commands", "hi", "--tools", "echo"]);
    let b = py_ext(t.path(), "b", "beta", &["--tools", "other", "--no-ready"]);
    let global = t.path().join("home/extensions");
    // Installed: one shadowed by the --ext of the same name, one disabled.
    py_ext(&global, "alpha-old", "alpha", &[]);
    let off = write_manifest(&global, "off", json!({"name": "off", "exec": "python3", "enabled": false}));
    let mut args = ext_args(&[&a, &b]);
    args.push("--json".into());
    let r = doctor(&t, &args);
    let report = json_of(&r);
    // The shadowed copy is an enabled extension that did not load, and a
    // name conflict: the one error, exit 1 (docs/protocol.md §5).
    assert_eq!(r.code, 1, "{report:#}\n{}", r.stderr);
    assert_eq!((&report["ok"], &report["errors"]), (&json!(false), &json!(1)), "{report:#}");
    let errors: Vec<&Value> = report["findings"].as_array().expect("findings").iter().filter(|f| f["severity"] == "error").collect();
    assert_eq!((&errors[0]["code"], &errors[0]["extension"]), (&json!("shadowed_extension"), &json!("alpha")), "{report:#}");

    let alpha = entry(&report, "alpha");
    assert_eq!(alpha["state"], "ready", "{alpha:#}");
    assert_eq!(alpha["source"], "ext");
    assert_eq!(alpha["dir"], a.display().to_string());
    assert!(alpha["log"].as_str().is_some_and(|l| l.ends_with("logs/ext-alpha.log")), "{alpha}");
    assert_eq!(alpha["commands"], json!([{"name": "hi", "in_force": true}]));
    assert_eq!(alpha["tools"], json!([{"name": "echo", "in_force": true}]));
    let lines: Vec<&str> = alpha["log_lines"].as_array().expect("log_lines").iter().filter_map(Value::as_str).collect();
    assert!(lines.iter().any(|l| l.starts_with("starting alpha")), "{lines:?}");
    assert!(lines.contains(&"ready (ready frame)"), "{lines:?}");
    assert!(!lines.iter().any(|l| l.starts_with("stopped")), "only the load's lines: {lines:?}");

    let beta = entry(&report, "beta");
    assert_eq!(beta["state"], "auto_ready", "{beta:#}");
    let warn = &beta["findings"][0];
    assert_eq!((&warn["severity"], &warn["code"]), (&json!("warning"), &json!("auto_ready")), "{beta:#}");
    assert!(warn["hint"].as_str().is_some_and(|h| h.contains("ready")), "{warn}");

    let shadowed: Vec<&Value> =
        report["extensions"].as_array().expect("extensions").iter().filter(|e| e["state"] == "shadowed").collect();
    assert_eq!(shadowed.len(), 1, "{report:#}");
    assert_eq!(shadowed[0]["name"], "alpha");
    assert_eq!(shadowed[0]["source"], "global");
    assert!(shadowed[0]["reason"].as_str().is_some_and(|r| r.contains(&a.display().to_string())), "{report:#}");
    assert!(
        report["conflicts"].as_array().expect("conflicts").iter().any(|c| c["kind"] == "extension" && c["name"] == "alpha"),
        "{report:#}"
    );

    let off_entry = entry(&report, "off");
    assert_eq!(off_entry["state"], "disabled");
    assert_eq!(off_entry["dir"], off.display().to_string());
    assert!(off_entry["findings"][0]["hint"].as_str().is_some_and(|h| h.contains("zot ext enable off")), "{off_entry}");
    assert_none_left(&report);

    // Without the copy: every enabled extension loads, a disabled one does
    // not fail, exit 0.
    std::fs::remove_dir_all(global.join("alpha-old")).expect("remove");
    let r = doctor(&t, &args);
    let report = json_of(&r);
    assert_eq!(r.code, 0, "{report:#}\n{}", r.stderr);
    assert_eq!((&report["ok"], &report["errors"]), (&json!(true), &json!(0)), "{report:#}");
    assert_eq!(entry(&report, "off")["state"], "disabled");
    assert_none_left(&report);
}

#[test]
fn a_mute_extension_fails_named_with_its_reason() {
    let t = TempDir::new("doctor-mute");
    let good = py_ext(t.path(), "good", "good", &["--tools", "echo"]);
    let mute = py_ext(t.path(), "mute", "mute", &["--no-hello"]);
    let mut args = ext_args(&[&good, &mute]);
    // Every extension's: long enough for the good one's Python start on a
    // loaded machine (one took over 4 s), short for the test.
    args.extend(strings(&["--hello-timeout", "10"]));
    let mut json_args = args.clone();
    json_args.push("--json".into());
    let r = doctor(&t, &json_args);
    let report = json_of(&r);
    assert_eq!(r.code, 1, "{report:#}");
    assert_eq!(report["ok"], false);
    assert_eq!(entry(&report, "good")["state"], "ready");
    let m = entry(&report, "mute");
    assert_eq!(m["state"], "failed", "{m:#}");
    assert!(m["reason"].as_str().is_some_and(|r| r.contains("no hello within 10s")), "{m:#}");
    let f = report["findings"].as_array().expect("findings").iter().find(|f| f["extension"] == "mute").expect("a finding");
    assert_eq!(f["severity"], "error");
    assert!(f["message"].as_str().is_some_and(|s| s.contains("no hello")), "{f}");
    assert!(f["hint"].as_str().is_some_and(|h| h.contains("hello")), "{f}");
    assert!(
        m["log_lines"].as_array().expect("log_lines").iter().any(|l| l.as_str().is_some_and(|l| l.contains("failed to load: no hello"))),
        "{m:#}"
    );
    assert_none_left(&report);

    // The text report names it with the reason and the fix on one line.
    let r = doctor(&t, &args);
    assert_eq!(r.code, 1, "{}", r.stdout);
    let line = r.stdout.lines().find(|l| l.starts_with("error") && l.contains("mute")).unwrap_or_else(|| panic!("{}", r.stdout));
    assert!(line.contains("no hello within 10s") && line.contains("(fix: "), "{line}");
    // With what the extension wrote to its stderr meanwhile.
    assert!(r.stdout.contains("mute 1.0.0 [failed: no hello within 10s; its stderr: [mute] not saying hello]"), "{}", r.stdout);
    assert!(r.stdout.trim_end().ends_with("FAILED: 1 error, 0 warnings, 0 infos"), "{}", r.stdout);
}

#[test]
fn a_name_conflict_fails_and_says_who_wins() {
    let t = TempDir::new("doctor-conflict");
    let first = py_ext(t.path(), "first", "first", &["--commands", "same", "--tools", "same,own"]);
    let second = py_ext(t.path(), "second", "second", &["--commands", "same,help", "--tools", "same"]);
    let mut args = ext_args(&[&first, &second]);
    args.push("--json".into());
    let r = doctor(&t, &args);
    let report = json_of(&r);
    assert_eq!(r.code, 1, "{report:#}");
    assert_eq!(entry(&report, "first")["state"], "ready");
    assert_eq!(
        entry(&report, "first")["tools"],
        json!([{"name": "same", "in_force": true}, {"name": "own", "in_force": true}])
    );
    let s = entry(&report, "second");
    assert_eq!(s["state"], "ready", "a conflict is not a failed load: {s:#}");
    assert_eq!(
        s["commands"],
        json!([
            {"name": "same", "in_force": false, "shadowed_by": "first"},
            {"name": "help", "in_force": false, "shadowed_by": "the host"}
        ])
    );
    assert_eq!(s["tools"], json!([{"name": "same", "in_force": false, "shadowed_by": "first"}]));
    let conflicts = report["conflicts"].as_array().expect("conflicts");
    for (kind, name, winner) in [("command", "same", "first"), ("command", "help", "the host"), ("tool", "same", "first")] {
        assert!(
            conflicts.iter().any(|c| c["kind"] == kind && c["name"] == name && c["winner"] == winner && c["shadowed"] == json!(["second"])),
            "{kind} {name}: {report:#}"
        );
    }
    let errors: Vec<&Value> = report["findings"].as_array().expect("findings").iter().filter(|f| f["code"] == "name_conflict").collect();
    assert_eq!(errors.len(), 3, "{report:#}");
    assert!(errors.iter().all(|f| f["extension"] == "second" && f["hint"].as_str().is_some_and(|h| h.starts_with("rename"))), "{report:#}");
    assert!(
        s["log_lines"].as_array().expect("log_lines").iter().any(|l| l == "tool same is shadowed by extension \"first\" (earlier in load order)"),
        "{s:#}"
    );
    assert_none_left(&report);
}

#[test]
fn a_broken_manifest_and_a_missing_exec_fail() {
    let t = TempDir::new("doctor-broken");
    let bad = t.path().join("bad");
    std::fs::create_dir_all(&bad).expect("mkdir");
    std::fs::write(bad.join("extension.json"), "{\"name\": 3}").expect("write");
    let gone = write_manifest(t.path(), "gone", json!({"name": "gone", "exec": "./no-such-program"}));
    let mut args = ext_args(&[&bad, &gone]);
    args.push("--json".into());
    let r = doctor(&t, &args);
    let report = json_of(&r);
    assert_eq!(r.code, 1, "{report:#}");
    let b = entry(&report, "bad");
    assert_eq!((&b["state"], &b["findings"][0]["code"]), (&json!("failed"), &json!("manifest")), "{b:#}");
    let g = entry(&report, "gone");
    assert_eq!(g["state"], "broken", "{g:#}");
    assert_eq!(g["reason"], format!("exec not found: {}/no-such-program", gone.display()), "{g:#}");
    assert!(g["findings"][0]["hint"].as_str().is_some_and(|h| h.contains("exec")), "{g:#}");
}

#[test]
fn usage() {
    let t = TempDir::new("doctor-usage");
    let r = doctor(&t, &strings(&["--bogus"]));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("zot ext doctor: unexpected argument '--bogus'"), "{}", r.stderr);
    let r = doctor(&t, &strings(&["--help"]));
    assert_eq!(r.code, 0);
    assert!(r.stdout.starts_with("Usage: zot ext doctor"), "{}", r.stdout);
    // Nothing to load is a clean load.
    let r = doctor(&t, &strings(&["--no-ext", "--json"]));
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(json_of(&r)["extensions"], json!([]));
}

#[test]
fn an_extension_not_ready_when_the_grace_runs_out_fails() {
    let t = TempDir::new("doctor-grace");
    let slow = py_ext(t.path(), "slow", "slow", &["--no-hello"]);
    let mut args = ext_args(&[&slow]);
    args.extend(strings(&["--hello-timeout", "30", "--ready-grace", "0.5", "--json"]));
    let r = doctor(&t, &args);
    let report = json_of(&r);
    assert_eq!(r.code, 1, "{report:#}");
    let e = entry(&report, "slow");
    assert_eq!(e["state"], "ready_grace_exceeded", "{e:#}");
    assert!(e["reason"].as_str().is_some_and(|s| s.contains("ready grace (500ms)")), "{e:#}");
    assert!(e["findings"][0]["hint"].as_str().is_some_and(|h| h.contains("--ready-grace")), "{e:#}");
    assert_none_left(&report);
}

#[test]
fn problems_the_host_logged_during_the_load_are_findings() {
    let t = TempDir::new("doctor-logged");
    let e = py_ext(t.path(), "e", "named", &["--hello-name", "other", "--bad-schema", "--tools", "ok"]);
    let r = doctor(&t, &[ext_args(&[&e]), strings(&["--json"])].concat());
    let report = json_of(&r);
    assert_eq!(r.code, 0, "warnings do not fail: {report:#}");
    let n = entry(&report, "named");
    let codes: Vec<&str> = n["findings"].as_array().expect("findings").iter().filter_map(|f| f["code"].as_str()).collect();
    assert!(codes.contains(&"hello_name") && codes.contains(&"refused"), "{n:#}");
    assert!(n["findings"].as_array().expect("findings").iter().all(|f| f["severity"] == "warning" && f["hint"].is_string()), "{n:#}");
}

#[test]
fn untrusted_project_and_static_extensions_are_named() {
    let t = TempDir::new("doctor-trust");
    let project = t.path().join("cwd/.zot/extensions");
    py_ext(&project, "p", "local", &["--tools", "echo"]);
    let skills = write_manifest(t.path(), "skills", json!({"name": "skilled", "skills": ["s"]}));
    std::fs::create_dir_all(skills.join("s")).expect("mkdir");
    std::fs::write(skills.join("s/SKILL.md"), "---\nname: s\ndescription: d\n---\nbody\n").expect("write");
    let r = doctor(&t, &[ext_args(&[&skills]), strings(&["--json"])].concat());
    let report = json_of(&r);
    // docs/protocol.md §5: exit 0 only when every enabled extension loaded; an
    // untrusted one did not. Static ones count as loaded.
    assert_eq!(r.code, 1, "an untrusted extension did not load: {report:#}");
    assert_eq!(report["errors"], 1, "{report:#}");
    assert_eq!(entry(&report, "skilled")["state"], "static", "{report:#}");
    let local = entry(&report, "local");
    assert_eq!((&local["state"], &local["source"]), (&json!("untrusted"), &json!("project")), "{local:#}");
    assert!(local["findings"][0]["hint"].as_str().is_some_and(|h| h.contains("zot trust")), "{local:#}");

    let r = doctor(&t, &strings(&["--trust-project", "--json"]));
    let report = json_of(&r);
    assert_eq!(r.code, 0, "{report:#}");
    assert_eq!(entry(&report, "local")["state"], "ready", "{report:#}");
    assert_none_left(&report);
}
