//! The floor: JSON lines to an extension over its pipes, no host; the
//! handshake by hand and the frames the floor and the host both send.

use super::Res;
use serde_json::{json, Map, Value};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

pub struct Peer {
    pub child: Child,
    pub w: BufWriter<ChildStdin>,
    pub r: BufReader<ChildStdout>,
    pub line: Vec<u8>,
}

impl Peer {
    /// Spawns `exe` and does the handshake by hand, up to its `ready`.
    pub fn spawn(exe: &Path, args: &[&str], dir: &Path) -> Res<Peer> {
        Peer::start(exe, args, dir)?.handshake(dir)
    }

    /// Spawns `exe`, without waiting for anything.
    pub fn start(exe: &Path, args: &[&str], dir: &Path) -> Res<Peer> {
        let mut child = Command::new(exe)
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let w = BufWriter::with_capacity(64 * 1024, child.stdin.take().ok_or("no stdin")?);
        let r = BufReader::with_capacity(64 * 1024, child.stdout.take().ok_or("no stdout")?);
        Ok(Peer { child, w, r, line: Vec::new() })
    }

    /// `hello`, `hello_ack`, then frames up to `ready`.
    pub fn handshake(mut self, dir: &Path) -> Res<Peer> {
        let p = &mut self;
        p.read()?;
        if !p.line.starts_with(br#"{"type":"hello""#) && !p.line.starts_with(br#"{"type": "hello""#) {
            return Err(format!("{}: expected hello, got {}", dir.display(), String::from_utf8_lossy(&p.line)).into());
        }
        let d = dir.display().to_string();
        let ack = json!({"type": "hello_ack", "protocol_version": 1, "zot_version": "bench", "provider": "",
            "model": "", "cwd": d, "extension_dir": d, "data_dir": d});
        p.send(format!("{ack}\n").as_bytes())?;
        loop {
            p.read()?;
            if p.line.starts_with(br#"{"type":"ready""#) || p.line.starts_with(br#"{"type": "ready""#) {
                return Ok(self);
            }
        }
    }

    pub fn send(&mut self, frame: &[u8]) -> Res<()> {
        self.w.write_all(frame)?;
        self.w.flush()?;
        Ok(())
    }

    pub fn read(&mut self) -> Res<usize> {
        self.line.clear();
        let n = self.r.read_until(b'\n', &mut self.line)?;
        if n == 0 {
            return Err("the extension closed its stdout".into());
        }
        Ok(n)
    }

    /// One request, one reply line; returns the reply's length.
    pub fn call(&mut self, frame: &[u8]) -> Res<usize> {
        self.send(frame)?;
        self.read()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn close(mut self) {
        let _ = self.send(b"{\"type\":\"shutdown\"}\n");
        drop(self.w);
        let _ = self.child.wait();
    }
}

pub fn tool_frame(id: u64, name: &str) -> Vec<u8> {
    format!("{{\"type\":\"tool_call\",\"id\":\"{id}\",\"name\":\"{name}\",\"args\":{{\"i\":{id}}}}}\n").into_bytes()
}

pub fn command_frame(id: u64) -> Vec<u8> {
    format!("{{\"type\":\"command_invoked\",\"id\":\"{id}\",\"name\":\"echo\",\"args\":\"hello\"}}\n").into_bytes()
}

pub fn intercept_frame(id: u64) -> Vec<u8> {
    format!(
        "{{\"type\":\"event_intercept\",\"id\":\"{id}\",\"event\":\"tool_call\",\"tool_id\":\"t1\",\"tool_name\":\"bash\",\"tool_args\":{{\"command\":\"ls\"}}}}\n"
    )
    .into_bytes()
}

pub fn intercept_payload() -> Map<String, Value> {
    let Value::Object(m) = json!({"tool_id": "t1", "tool_name": "bash", "tool_args": {"command": "ls"}}) else {
        unreachable!()
    };
    m
}
