//! A slip in a name the user wrote is named with the field or option meant:
//! an unknown manifest field in `zot ext check` and `zot ext doctor` (a
//! warning: upstream's manifests may carry fields zot does not read), an
//! unknown field of an `mcp.json` entry in its log and in doctor, and an
//! unknown `confine` field in the error that fails the manifest. Each with a
//! control: the same file without the slip has no such finding.

use serde_json::{json, Value};
use std::process::{Command, Stdio};

mod common;
#[path = "common/author.rs"]
mod author;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use author::{check, expect, findings};
use common::{fixture, write_manifest, TempDir};
use zot_proc::BIN;

fn ext_manifest(extra: Value) -> Value {
    let name = extra["name"].as_str().unwrap_or("slip").to_string();
    let mut m = json!({"name": "slip", "exec": "python3", "args": [fixture("ext.py").display().to_string(), "--name", name]});
    if let (Some(m), Some(extra)) = (m.as_object_mut(), extra.as_object()) {
        m.extend(extra.clone());
    }
    m
}

fn doctor(t: &TempDir, args: &[&str]) -> Value {
    let out = Command::new(BIN)
        .args(["ext", "doctor", "--no-ext", "--json", "--ready-grace", "60"])
        .args(args)
        .current_dir(t.path())
        .env("ZOT_HOME", t.path().join("home"))
        .env_remove("XDG_STATE_HOME")
        .stdin(Stdio::null())
        .output()
        .expect("run zot ext doctor");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("doctor JSON ({e}): {}", String::from_utf8_lossy(&out.stderr)))
}

fn entry<'a>(d: &'a Value, name: &str) -> &'a Value {
    d["extensions"].as_array().and_then(|a| a.iter().find(|e| e["name"] == name)).unwrap_or_else(|| panic!("{name} in {d:#}"))
}

fn has_finding(e: &Value, code: &str, needle: &str) -> bool {
    e["findings"].as_array().is_some_and(|fs| fs.iter().any(|f| f["code"] == code && f["message"].as_str().is_some_and(|m| m.contains(needle))))
}

#[test]
fn an_unknown_manifest_field_is_a_warning_naming_the_field_meant() {
    let t = TempDir::new("slip-manifest");
    let slip = write_manifest(t.path(), "slip", ext_manifest(json!({"restrat": "on-failure"})));
    let (code, report) = check(&t, &slip, &[]);
    assert_eq!(code, 0, "a warning, not an error: {report:#}");
    expect(&report, "unknown_field", "warning", r#""restrat" (did you mean "restart"?)"#);
    let d = doctor(&t, &["--ext", &slip.display().to_string()]);
    assert!(has_finding(entry(&d, "slip"), "unknown_field", r#""restrat" (did you mean "restart"?)"#), "{d:#}");
    // The control: spelled right, no such finding.
    let good = write_manifest(t.path(), "good", ext_manifest(json!({"name": "good", "restart": "on-failure"})));
    let (_, report) = check(&t, &good, &[]);
    assert!(findings(&report, "unknown_field").is_empty(), "{report:#}");
    let d = doctor(&t, &["--ext", &good.display().to_string()]);
    assert!(!has_finding(entry(&d, "good"), "unknown_field", ""), "{d:#}");
}

#[test]
fn an_unknown_server_field_is_named_with_the_field_meant() {
    let t = TempDir::new("slip-mcp");
    let server = |extra: Value| {
        let mut e = json!({"command": "python3", "args": [fixture("mcp_server.py").display().to_string()]});
        e.as_object_mut().expect("entry").extend(extra.as_object().cloned().unwrap_or_default());
        e
    };
    let cfg = t.path().join("mcp.json");
    let servers = json!({"mcpServers": {"slipped": server(json!({"requestTimout": 5})), "fine": server(json!({"requestTimeout": 5}))}});
    std::fs::write(&cfg, servers.to_string()).expect("config");
    let d = doctor(&t, &["--mcp-config", &cfg.display().to_string()]);
    assert!(has_finding(entry(&d, "slipped"), "mcp_unknown_field", r#""requestTimout" (did you mean "requestTimeout"?)"#), "{d:#}");
    assert!(!has_finding(entry(&d, "fine"), "mcp_unknown_field", ""), "{d:#}");
    let log = std::fs::read_to_string(t.path().join("home/logs/mcp-slipped.log")).unwrap_or_default();
    assert!(log.contains(r#"ignored unknown fields of its entry in"#) && log.contains(r#"(did you mean "requestTimeout"?)"#), "{log}");
}

#[test]
fn an_unknown_confine_field_fails_the_manifest_naming_the_field_meant() {
    let t = TempDir::new("slip-confine");
    let slip = write_manifest(t.path(), "slip", ext_manifest(json!({"confine": {"raed": ["${EXT}"]}})));
    let (code, report) = check(&t, &slip, &[]);
    assert_eq!(code, 1, "{report:#}");
    expect(&report, "manifest", "error", r#"confine.raed: unknown field (did you mean "read"?)"#);
    let good = write_manifest(t.path(), "good", ext_manifest(json!({"name": "good", "confine": {"read": ["${EXT}"]}})));
    let (code, report) = check(&t, &good, &[]);
    assert_eq!(code, 0, "{report:#}");
}

#[test]
fn a_manifest_error_names_the_field_and_what_it_takes() {
    let t = TempDir::new("slip-fix");
    let fix_of = |extra: Value| {
        let dir = write_manifest(t.path(), "bad", ext_manifest(extra));
        let (code, report) = check(&t, &dir, &[]);
        assert_eq!(code, 1, "{report:#}");
        let f = findings(&report, "manifest");
        assert_eq!(f.len(), 1, "{report:#}");
        f[0]["hint"].as_str().unwrap_or_default().to_string()
    };
    assert_eq!(fix_of(json!({"restart": "sometimes"})), r#"fix "restart" in extension.json: it takes one of "never", "on-failure", "always""#);
    assert_eq!(fix_of(json!({"enabled": "yes"})), r#"fix "enabled" in extension.json: it takes true or false"#);
    assert!(fix_of(json!({"args": "-v"})).starts_with(r#"fix "args" in extension.json: it takes an array of strings"#));
    // Doctor says "invalid manifest" once for a manifest that is not JSON.
    let broken = t.path().join("broken");
    std::fs::create_dir_all(&broken).expect("dir");
    std::fs::write(broken.join("extension.json"), "{ nope").expect("manifest");
    let d = doctor(&t, &["--ext", &broken.display().to_string()]);
    let message = entry(&d, "broken")["findings"][0]["message"].as_str().unwrap_or_default().to_string();
    assert_eq!(message.matches("invalid manifest").count(), 1, "{message}");
}
