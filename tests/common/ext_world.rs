//! One `zot ext` test's world, for tests/cli_ext_*.rs: its own
//! `ZOT_HOME`, project directory and scratch directory under the system
//! temp dir, the binary run in it, and small file helpers. Included with
//! `#[path]` beside `mod common`.
#![allow(dead_code)]

pub use super::common::Out;
use super::common::TempDir;
use serde_json::Value;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub const BIN: &str = env!("CARGO_BIN_EXE_zot");

/// One test's world: a zot home, a project directory, a scratch directory.
pub struct World {
    pub home: TempDir,
    pub cwd: TempDir,
    pub scratch: TempDir,
}

impl World {
    pub fn new() -> World {
        World { home: TempDir::new("home"), cwd: TempDir::new("cwd"), scratch: TempDir::new("src") }
    }

    pub fn ext_root(&self) -> PathBuf {
        self.home.path().join("extensions")
    }

    pub fn project_root(&self) -> PathBuf {
        self.cwd.path().join(".zot").join("extensions")
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.args(args)
            .env("ZOT_HOME", self.home.path())
            .env_remove("XDG_STATE_HOME")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .current_dir(self.cwd.path())
            .stdin(Stdio::null());
        c
    }

    pub fn zot(&self, args: &[&str]) -> Out {
        let out = self.command(args).output().expect("run zot");
        Out::of(out)
    }

    /// Runs and expects success.
    pub fn ok(&self, args: &[&str]) -> String {
        let r = self.zot(args);
        assert_eq!(r.code, 0, "{args:?} failed: {}", r.stderr);
        r.stdout
    }

    /// Runs and expects a runtime error: exit 1, one line on stderr.
    pub fn fails(&self, args: &[&str]) -> String {
        let r = self.zot(args);
        assert_eq!(r.code, 1, "{args:?}: stdout {:?} stderr {:?}", r.stdout, r.stderr);
        assert_eq!(r.stderr.lines().count(), 1, "{args:?}: {:?}", r.stderr);
        assert!(r.stderr.starts_with("zot: "), "{:?}", r.stderr);
        r.stderr.trim_end().to_string()
    }

    /// Names in `$ZOT_HOME/extensions` (hidden ones too), sorted.
    pub fn installed(&self) -> Vec<String> {
        let mut v: Vec<String> = match fs::read_dir(self.ext_root()) {
            Ok(rd) => {
                rd.map(|e| e.expect("entry").file_name().to_string_lossy().into_owned()).collect()
            }
            Err(_) => Vec::new(),
        };
        v.sort();
        v
    }
}

pub fn write(path: &Path, text: &str) {
    if let Some(p) = path.parent() {
        fs::create_dir_all(p).expect("mkdir");
    }
    fs::write(path, text).expect("write");
}

pub fn mode(path: &Path) -> u32 {
    fs::symlink_metadata(path).expect("stat").permissions().mode() & 0o7777
}

pub fn chmod(path: &Path, mode: u32) {
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).expect("chmod");
}

/// An extension folder at `dir` with a manifest called `name`.
pub fn make_ext(dir: &Path, name: &str, extra: &str) {
    write(
        &dir.join("extension.json"),
        &format!(
            "{{\"name\":{},\"version\":\"1.0.0\",\"exec\":\"./run.sh\"{extra}}}",
            Value::from(name)
        ),
    );
    write(&dir.join("run.sh"), "#!/bin/sh\nexit 0\n");
    chmod(&dir.join("run.sh"), 0o755);
}

pub fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}
