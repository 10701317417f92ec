//! A trust test's world, for tests/trust.rs and tests/trust_reach.rs:
//! `<t>/home` as `ZOT_HOME` and `<t>/proj` as a project with an empty
//! `.zot/extensions`, the binary run there, and the project's trust state
//! as `zot trust --list` shows it. Included with `#[path]` beside
//! `mod common`.
#![allow(dead_code)]

use super::common::{Out, TempDir};
use std::fs;
use std::path::{Path, PathBuf};

const BIN: &str = env!("CARGO_BIN_EXE_zot");

/// One test's world: `<t>/home` as `ZOT_HOME`, `<t>/proj` as the project.
pub struct World {
    pub t: TempDir,
}

impl World {
    pub fn new(tag: &str) -> World {
        let t = TempDir::new(tag);
        fs::create_dir_all(t.path().join("proj/.zot/extensions")).expect("mkdir");
        World { t }
    }
    pub fn home(&self) -> PathBuf {
        self.t.path().join("home")
    }
    pub fn proj(&self) -> PathBuf {
        self.t.path().join("proj")
    }
    pub fn exts(&self) -> PathBuf {
        self.proj().join(".zot/extensions")
    }
    pub fn zot(&self, args: &[&str]) -> Out {
        self.zot_env(args, &[])
    }
    pub fn zot_env(&self, args: &[&str], env: &[(&str, &str)]) -> Out {
        super::common::run_zot(BIN, &self.proj(), Some(&self.home()), args, env)
    }
    pub fn trust(&self) -> Out {
        let r = self.zot(&["trust"]);
        assert_eq!(r.code, 0, "zot trust: {}{}", r.stdout, r.stderr);
        r
    }
    /// `trusted` or `changed`, as `zot trust --list` shows the project.
    pub fn state(&self) -> String {
        let r = self.zot(&["trust", "--list"]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let line = r.stdout.lines().find(|l| l.starts_with(s(&self.proj()))).unwrap_or("").to_string();
        if line.ends_with("  trusted") {
            "trusted".into()
        } else if line.contains("changed since trusted") {
            "changed".into()
        } else {
            format!("other: {}", r.stdout)
        }
    }
    /// Expects the project to ask again, then trusts it anew.
    pub fn assert_asks_again(&self, what: &str) {
        assert_eq!(self.state(), "changed", "{what}: still trusted");
        self.trust();
        assert_eq!(self.state(), "trusted", "{what}: trusting anew");
    }
    /// Trusts the project, makes `edit`, and expects the project to ask
    /// again (or, for a control, to stay trusted).
    pub fn edit_after_trust(&self, what: &str, counts: bool, edit: impl FnOnce()) {
        self.trust();
        assert_eq!(self.state(), "trusted", "{what}: just trusted");
        edit();
        let want = if counts { "changed" } else { "trusted" };
        assert_eq!(self.state(), want, "{what}");
    }
}

pub fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}
