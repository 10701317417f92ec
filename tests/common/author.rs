//! What the tests of the tools for extension authors share
//! (tests/author_*.rs): `zot` run with a temporary `ZOT_HOME` and `TMPDIR`
//! and the real python3 first on PATH, `zot ext check` on the broken
//! fixture (tests/fixtures/check/broken.py) and its report, and
//! `zot serve` driven as a client. Included with `#[path]` beside
//! `mod common`.
#![allow(dead_code)]

pub use super::common::Out;
use super::common::TempDir;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_zot");

/// The directory of the real `python3` when `python3` on PATH is a
/// wrapper (pyenv's shims start several times slower, which matters on a
/// loaded machine).
pub fn python_dir() -> Option<&'static Path> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        let out = Command::new("python3").args(["-c", "import sys; print(sys.executable)"]).output().ok()?;
        let exe = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        exe.parent().map(Path::to_path_buf)
    })
    .as_deref()
}

/// `zot` with a temporary ZOT_HOME and TMPDIR, no trace from the caller's
/// environment, the real python3 first on PATH.
pub fn zot_cmd(home: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    if let Some(dir) = python_dir() {
        let mut path = vec![dir.to_path_buf()];
        path.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()));
        if let Ok(joined) = std::env::join_paths(path) {
            c.env("PATH", joined);
        }
    }
    c.args(args)
        .env("ZOT_HOME", home.join("home"))
        .env("TMPDIR", home.join("tmp"))
        .env_remove("ZOT_TRACE")
        .env_remove("XDG_STATE_HOME")
        .stdin(Stdio::null());
    let _ = std::fs::create_dir_all(home.join("tmp"));
    c
}

pub fn run(mut c: Command) -> Out {
    let out: Output = c.output().expect("run zot");
    Out::of(out)
}

/// True when `prog` is an executable file on PATH.
pub fn on_path(prog: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).any(|d| {
        std::fs::metadata(d.join(prog)).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

pub fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/check/broken.py")
}

/// An extension folder running the broken fixture with `flags`.
pub fn broken_ext(parent: &Path, dir: &str, flags: &[&str]) -> PathBuf {
    let d = parent.join(dir);
    std::fs::create_dir_all(&d).expect("mkdir");
    let mut args = vec![fixture().display().to_string()];
    args.extend(flags.iter().map(|s| s.to_string()));
    let m = json!({"name": "broken", "version": "1.0.0", "exec": "python3", "args": args});
    std::fs::write(d.join("extension.json"), m.to_string()).expect("write manifest");
    d
}

/// `zot ext check <dir> --json [extra]`: the exit code and the report. Also
/// asserts that the check left nothing in its TMPDIR (the sandbox is gone).
pub fn check(_t: &TempDir, dir: &Path, extra: &[&str]) -> (i32, Value) {
    // A TMPDIR of its own: checks run in parallel.
    let t = TempDir::new("check");
    let d = dir.display().to_string();
    let mut args = vec!["ext", "check", d.as_str(), "--json"];
    args.extend_from_slice(extra);
    let r = run(zot_cmd(t.path(), &args));
    let report: Value = serde_json::from_str(&r.stdout)
        .unwrap_or_else(|e| panic!("check --json printed no JSON ({e}): {}\n{}", r.stdout, r.stderr));
    // tsx keeps its compile cache in TMPDIR/tsx-<uid>: the extension's, not the sandbox.
    let left: Vec<_> = std::fs::read_dir(t.path().join("tmp"))
        .map(|rd| rd.flatten().map(|e| e.file_name()).filter(|n| !n.to_string_lossy().starts_with("tsx-")).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "the check left {left:?} behind");
    assert_eq!(report["ok"], json!(r.code == 0), "{report:#}");
    (r.code, report)
}

/// The findings of `report` with `code`.
pub fn findings<'a>(report: &'a Value, code: &str) -> Vec<&'a Value> {
    report["findings"].as_array().map(|a| a.iter().filter(|f| f["code"] == code).collect()).unwrap_or_default()
}

/// Asserts one finding `code` of `severity` whose message contains `needle`.
pub fn expect(report: &Value, code: &str, severity: &str, needle: &str) {
    let found = findings(report, code);
    assert!(
        found.iter().any(|f| f["severity"] == severity && f["message"].as_str().is_some_and(|m| m.contains(needle))),
        "expected {severity} {code} containing {needle:?} in {report:#}"
    );
    for f in found {
        assert!(f["hint"].is_string(), "{f}");
    }
}

/// Errors and warnings of a report, besides a `slow_hello` or `slow_ready`
/// warning (which only says the machine was busy when the extension started).
pub fn counted(report: &Value) -> (u64, u64) {
    let slow = (findings(report, "slow_hello").len() + findings(report, "slow_ready").len()) as u64;
    (report["errors"].as_u64().unwrap_or(0), report["warnings"].as_u64().unwrap_or(0).saturating_sub(slow))
}

/// Runs `f` for every case in parallel (each check is a process of its own).
pub fn par<T: Send>(cases: Vec<T>, f: impl Fn(T) + Sync) {
    std::thread::scope(|s| {
        let f = &f;
        let handles: Vec<_> = cases.into_iter().map(|c| s.spawn(move || f(c))).collect();
        for h in handles {
            if let Err(e) = h.join() {
                std::panic::resume_unwind(e);
            }
        }
    });
}

pub struct Serve {
    pub child: Child,
    pub stdin: Option<ChildStdin>,
    pub lines: Receiver<String>,
}

impl Serve {
    pub fn start(t: &TempDir, ext: &Path, extra: &[&str], env: &[(&str, &Path)]) -> Serve {
        let e = ext.display().to_string();
        // A scaffold's interpreter (tsx, node) can take seconds to say hello
        // on a loaded machine: the hello deadline is not what these tests are about.
        let mut args = vec!["serve", "--no-ext", "--ext", e.as_str(), "--hello-timeout", "60"];
        args.extend_from_slice(extra);
        let mut c = zot_cmd(t.path(), &args);
        for (k, v) in env {
            c.env(k, v);
        }
        let mut child = c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().expect("spawn zot serve");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        let mut s = Serve { child, stdin, lines: rx };
        let ready = s.until(|v| v["type"] == "ready");
        assert!(ready["extensions"].as_array().is_some_and(|a| a.len() == 1), "{ready}");
        s
    }

    pub fn send(&mut self, v: Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{v}").expect("write request");
        stdin.flush().expect("flush");
    }

    /// The first line matching `pred`, within 20 s.
    pub fn until(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.lines.recv_timeout(left).expect("zot serve answered in time");
            let v: Value = serde_json::from_str(&line).expect("a JSON line");
            if pred(&v) {
                return v;
            }
        }
    }

    pub fn request(&mut self, v: Value) -> Value {
        let id = v["id"].clone();
        self.send(v);
        self.until(|r| r["type"] == "response" && r["id"] == id)
    }

    /// `shutdown`, then the process's exit within 10 s.
    pub fn shutdown(mut self) {
        let r = self.request(json!({"id": "bye", "type": "shutdown"}));
        assert_eq!(r["ok"], true, "{r}");
        self.stdin = None;
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                assert!(status.success(), "{status}");
                return;
            }
            assert!(Instant::now() < deadline, "zot serve did not exit");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
