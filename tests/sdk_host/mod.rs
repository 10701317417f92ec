//! The host's side of the pipes for the SDK tests: spawns an example
//! extension from its folder's `extension.json` and drives it frame by
//! frame, as the host would.
#![allow(dead_code)]

use crossbeam_channel::{unbounded, Receiver, RecvTimeoutError};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::Once;
use std::time::{Duration, Instant};

/// The longest a test waits for any one frame.
pub const WAIT: Duration = Duration::from_secs(30);

pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Builds the Rust examples once per test binary (cheap when up to date).
pub fn build_examples() {
    static BUILD: Once = Once::new();
    BUILD.call_once(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "--examples", "--quiet"])
            .current_dir(root())
            .status()
            .expect("run cargo build --examples");
        assert!(status.success(), "cargo build --examples failed");
    });
}

/// A running extension, driven like the host drives it.
pub struct Ext {
    child: Child,
    stdin: Option<ChildStdin>,
    frames: Receiver<Value>,
    /// Frames read while waiting for another one.
    stash: VecDeque<Value>,
}

impl Ext {
    /// Starts the extension in `examples/<folder>` the way the host would:
    /// `exec` and `args` from its manifest, cwd = the folder.
    pub fn start(folder: &str) -> Ext {
        let dir = root().join("examples").join(folder);
        let text = std::fs::read_to_string(dir.join("extension.json")).expect("read extension.json");
        let manifest: Value = serde_json::from_str(&text).expect("extension.json is JSON");
        let exec = manifest["exec"].as_str().expect("exec is a string");
        if exec.contains("target/debug/examples") {
            build_examples();
        }
        let program: PathBuf = if exec.contains('/') { dir.join(exec) } else { PathBuf::from(exec) };
        let args: Vec<String> = match manifest.get("args") {
            Some(a) => serde_json::from_value(a.clone()).expect("args is an array of strings"),
            None => Vec::new(),
        };
        Ext::spawn(&program, &args, &dir)
    }

    /// Starts `program` with `args` in `dir`.
    pub fn spawn(program: &Path, args: &[String], dir: &Path) -> Ext {
        let mut child = Command::new(program)
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {}: {e}", program.display()));
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, frames) = unbounded();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let frame = match serde_json::from_str::<Value>(&line) {
                    Ok(v) if v["type"].is_string() => v,
                    _ => json!({"type": "NOT A FRAME", "line": line}),
                };
                if tx.send(frame).is_err() {
                    break;
                }
            }
        });
        Ext { stdin: child.stdin.take(), child, frames, stash: VecDeque::new() }
    }

    /// Sends a frame with `type` first, as the host's encoder writes it.
    pub fn send(&mut self, mut frame: Value) {
        let ty = frame.as_object_mut().and_then(|o| o.remove("type")).expect("a frame with a type");
        let rest = frame.to_string();
        let sep = if rest == "{}" { "" } else { "," };
        self.send_raw(&format!("{{\"type\":{ty}{sep}{}", &rest[1..]));
    }

    pub fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).and_then(|_| stdin.write_all(b"\n")).expect("write to extension");
        stdin.flush().expect("flush");
    }

    /// The next frame, stashed ones first.
    pub fn next(&mut self) -> Value {
        if let Some(f) = self.stash.pop_front() {
            return f;
        }
        self.next_fresh(WAIT).unwrap_or_else(|| panic!("no frame within {WAIT:?}"))
    }

    pub fn next_fresh(&mut self, wait: Duration) -> Option<Value> {
        match self.frames.recv_timeout(wait) {
            Ok(f) => {
                assert_ne!(f["type"], "NOT A FRAME", "stdout carried a non-frame line: {f}");
                Some(f)
            }
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => panic!("extension closed stdout"),
        }
    }

    /// The first frame matching `pred`; others are stashed in order.
    pub fn wait_for(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.stash.iter().position(&pred) {
            return self.stash.remove(i).expect("index in range");
        }
        let end = Instant::now() + WAIT;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.next_fresh(left) {
                Some(f) if pred(&f) => return f,
                Some(f) => self.stash.push_back(f),
                None => panic!("no {what} within {WAIT:?}; got {:?}", self.stash),
            }
        }
    }

    pub fn reply(&mut self, ty: &str, id: &str) -> Value {
        self.wait_for(&format!("{ty} {id}"), |f| f["type"] == ty && f["id"] == id)
    }

    /// Sends `hello_ack` after `hello` and returns the frames up to and
    /// including `ready`.
    pub fn handshake(&mut self, cwd: &str) -> (Value, Vec<Value>) {
        self.handshake_with(hello_ack(cwd))
    }

    /// [`handshake`](Self::handshake) answering `hello` with `ack`.
    pub fn handshake_with(&mut self, ack: Value) -> (Value, Vec<Value>) {
        let hello = self.next();
        assert_eq!(hello["type"], "hello", "first frame: {hello}");
        self.send(ack);
        let mut frames = Vec::new();
        loop {
            let f = self.next();
            let done = f["type"] == "ready";
            frames.push(f);
            if done {
                return (hello, frames);
            }
        }
    }

    pub fn command(&mut self, id: &str, name: &str, args: &str) -> Value {
        self.send(json!({"type": "command_invoked", "id": id, "name": name, "args": args}));
        self.reply("command_response", id)
    }

    pub fn tool(&mut self, id: &str, name: &str, args: Value) -> Value {
        self.send(json!({"type": "tool_call", "id": id, "name": name, "args": args}));
        self.reply("tool_result", id)
    }

    pub fn intercept(&mut self, id: &str, event: &str, payload: Value) -> Value {
        let mut frame = json!({"type": "event_intercept", "id": id, "event": event});
        if let (Some(f), Some(p)) = (frame.as_object_mut(), payload.as_object()) {
            f.extend(p.clone());
        }
        self.send(frame);
        self.reply("event_intercept_response", id)
    }

    /// Sends `shutdown`, expects `shutdown_ack`, and the exit status.
    pub fn shutdown(mut self) -> ExitStatus {
        self.send(json!({"type": "shutdown"}));
        self.wait_for("shutdown_ack", |f| f["type"] == "shutdown_ack");
        self.exit_status()
    }

    pub fn exit_status(&mut self) -> ExitStatus {
        self.stdin = None;
        let end = Instant::now() + WAIT;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status;
            }
            assert!(Instant::now() < end, "extension did not exit within {WAIT:?}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Ext {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `hello_ack` from a host of the current revision (`call_tool` supported).
pub fn hello_ack(cwd: &str) -> Value {
    json!({"type": "hello_ack", "protocol_version": 1, "zot_version": "test", "provider": "p", "model": "m",
           "cwd": cwd, "extension_dir": "/ext", "data_dir": "/ext", "capabilities": ["call_tool"]})
}

/// A `hello_ack` from a host of the seed's revision: no capabilities.
pub fn old_hello_ack(cwd: &str) -> Value {
    json!({"type": "hello_ack", "protocol_version": 1, "zot_version": "test", "provider": "p", "model": "m",
           "cwd": cwd, "extension_dir": "/ext", "data_dir": "/ext"})
}

pub fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text block in {result}"))
}

pub fn is_error(result: &Value) -> bool {
    result["is_error"].as_bool().unwrap_or(false)
}

pub fn types(frames: &[Value]) -> Vec<&str> {
    frames.iter().map(|f| f["type"].as_str().unwrap_or("?")).collect()
}

