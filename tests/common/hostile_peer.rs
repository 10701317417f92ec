//! The hostile servers of tests/remote_hostile.rs and
//! tests/remote_oauth_hostile.rs (tests/fixtures/remote_hostile.py and
//! oauth_hostile.py: Python's standard library only), each on a port it
//! bound itself; killed when dropped. Included with `#[path]` beside `mod
//! common`.
#![allow(dead_code)]

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub struct Hostile {
    child: Child,
    pub port: u16,
    /// The fixture's other lines after the port (`thief http://...`).
    pub said: Vec<String>,
    pub seen: PathBuf,
}

impl Hostile {
    /// `fixture` (a file of tests/fixtures) with `args` and `env`; its
    /// requests are kept in `seen`. Err: why it cannot run (no python3).
    pub fn start(fixture: &str, args: &[&str], seen: &Path, env: &[(&str, &str)], lines: usize) -> Result<Hostile, String> {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(fixture);
        let mut cmd = Command::new("python3");
        cmd.arg(script).args(args).env("REMOTE_SEEN", seen).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::inherit());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().map_err(|e| format!("cannot run python3: {e}"))?;
        let (tx, rx) = crossbeam_channel::unbounded();
        let out = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let mut said = Vec::new();
        while said.len() < lines {
            match rx.recv_timeout(Duration::from_secs(60)) {
                Ok(l) => said.push(l),
                Err(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!("{fixture} never said its port"));
                }
            }
        }
        let port = said.remove(0).trim().parse().map_err(|_| format!("{fixture} said no port"))?;
        Ok(Hostile { child, port, said, seen: seen.to_path_buf() })
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// What reached it so far (`suffix`: `.thief` for the other listener).
    pub fn requests(&self, suffix: &str) -> Vec<Value> {
        let p = PathBuf::from(format!("{}{suffix}", self.seen.display()));
        std::fs::read_to_string(p).unwrap_or_default().lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
