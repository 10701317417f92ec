//! The words of every listing for a project's own extension when the
//! project changed since it was trusted (§7.3): the console's
//! `/extensions` rows, `zot serve`'s `list` and `zot ext doctor` say the
//! same as the header line, not "not trusted".

use serde_json::Value;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

mod common;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use common::TempDir;
use zot_proc::BIN;

/// `zot args...` in `cwd` with `ZOT_HOME=home`, `input` on stdin.
fn zot(home: &Path, cwd: &Path, args: &[&str], input: &str) -> (i32, String, String) {
    let mut child = Command::new(BIN)
        .args(args)
        .current_dir(cwd)
        .env("ZOT_HOME", home)
        .env("NO_COLOR", "1")
        .env_remove("XDG_STATE_HOME")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("zot");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(input.as_bytes()).expect("write");
    drop(stdin);
    let out = child.wait_with_output().expect("zot");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn a_project_changed_since_trusted_is_called_that_in_every_row() {
    let t = TempDir::new("edges-trust-changed");
    let home = t.path().join("home");
    let proj = t.path().join("proj");
    let ext = proj.join(".zot/extensions/lint");
    std::fs::create_dir_all(&ext).expect("ext");
    std::fs::write(ext.join("extension.json"), r#"{"name":"lint","exec":"sh"}"#).expect("manifest");
    assert_eq!(zot(&home, &proj, &["trust"], "").0, 0);
    std::fs::write(ext.join("helper.sh"), "exit 0\n").expect("change");

    // The console: the header line and the row agree.
    let (_, out, err) = zot(&home, &proj, &[], "/extensions\n");
    assert!(out.contains("changed since trusted (run 'zot trust"), "{out}{err}");
    let row = out.lines().find(|l| l.trim_start().starts_with("lint ")).unwrap_or_default();
    assert!(row.contains("untrusted") && row.contains("the project changed since trusted"), "{out}");
    assert!(!row.contains("not trusted"), "{out}");

    // zot serve's list: the same error.
    let (_, out, _) = zot(&home, &proj, &["serve"], "{\"id\":1,\"type\":\"list\"}\n");
    let list = out.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).find(|v| v["id"] == 1).expect("list answer");
    let lint = &list["result"]["extensions"][0];
    assert_eq!(lint["state"], "untrusted", "{list}");
    assert!(lint["error"].as_str().unwrap_or_default().contains("changed since trusted"), "{list}");

    // zot ext doctor: its finding and its header.
    let (_, out, _) = zot(&home, &proj, &["ext", "doctor", "--json"], "");
    let d: Value = serde_json::from_str(&out).expect("json");
    let e = &d["extensions"][0];
    assert_eq!(e["findings"][0]["message"], "not loaded: the project changed since trusted", "{d:#}");

    // The control: a project never trusted is still "not trusted".
    std::fs::remove_file(home.join("trust.json")).expect("untrust");
    let (_, out, _) = zot(&home, &proj, &[], "/extensions\n");
    let row = out.lines().find(|l| l.trim_start().starts_with("lint ")).unwrap_or_default();
    assert!(row.contains("the project is not trusted"), "{out}");
}
