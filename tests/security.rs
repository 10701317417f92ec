//! The host's own safety rules through the real binary (PROTOCOL §1):
//! bare `exec` names looked up only in absolute `$PATH` entries, the modes
//! of everything zot creates under any umask, and what `zot ext install`
//! copies. Every test has its own `ZOT_HOME` and directories.

mod common;

use common::TempDir;
use serde_json::json;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_zot");

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs `zot args...` in `cwd` with `ZOT_HOME=home` and the extra `env`.
fn zot(cwd: &Path, home: &Path, args: &[&str], env: &[(&str, &str)]) -> Out {
    let mut c = Command::new(BIN);
    c.args(args)
        .current_dir(cwd)
        .env("ZOT_HOME", home)
        .env_remove("XDG_STATE_HOME")
        .stdin(Stdio::null());
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().expect("run zot");
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

fn write_exec(p: &Path, text: &str) {
    fs::write(p, text).expect("write");
    fs::set_permissions(p, fs::Permissions::from_mode(0o755)).expect("chmod");
}

// ---------------------------------------------------------------------------
// $PATH

#[test]
fn a_bare_exec_is_never_found_through_a_relative_or_empty_path_entry() {
    let t = TempDir::new("sec-path");
    let cwd = t.path().join("cwd");
    fs::create_dir_all(&cwd).expect("mkdir");
    let marker = t.path().join("ran");
    write_exec(&cwd.join("thing"), &format!("#!/bin/sh\ntouch '{}'\nexit 0\n", s(&marker)));
    let ext = common::write_manifest(t.path(), "ext", json!({"name": "thing", "exec": "thing"}));
    let home = t.path().join("home");
    let sys_path = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
    for path in [format!(".:{sys_path}"), format!(":{sys_path}"), format!("{sys_path}:"), format!("cwd/..:{sys_path}")] {
        let env = [("PATH", path.as_str())];
        let check = zot(&cwd, &home, &["ext", "check", s(&ext)], &env);
        assert_ne!(check.code, 0, "PATH={path}: {}{}", check.stdout, check.stderr);
        assert!(check.stdout.contains("not found on PATH"), "PATH={path}: {}", check.stdout);
        let doctor = zot(&cwd, &home, &["ext", "doctor", "--no-ext", "--ext", s(&ext)], &env);
        assert_eq!(doctor.code, 1, "PATH={path}: {}{}", doctor.stdout, doctor.stderr);
        assert!(doctor.stdout.contains("not found on PATH"), "PATH={path}: {}", doctor.stdout);
        assert!(!marker.exists(), "PATH={path}: ./thing of the host's directory ran");
    }
    // An absolute entry holding it is used.
    let path = format!("{}:{sys_path}", s(&cwd));
    let check = zot(t.path(), &home, &["ext", "check", s(&ext)], &[("PATH", path.as_str())]);
    assert!(!check.stdout.contains("not found on PATH"), "{}", check.stdout);
    assert!(marker.exists(), "the absolute PATH entry was not used");
}
