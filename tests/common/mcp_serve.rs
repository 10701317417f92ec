//! What the MCP server tests share (tests/mcp_servers.rs, mcp_config.rs,
//! mcp_gateway.rs): the fixture server's entries, configuration files,
//! `zot serve` driven frame by frame, and the CLI run once.
#![allow(dead_code)]

use super::common::{fixture, TempDir};
use super::zot_proc::{self, strings, Zot, FAST, LINE_WAIT};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};


/// A call that wakes an idle server, or waits for one that restarts, waits
/// for a Python start-up and the MCP handshake, bounded by the call's own
/// timeout: on a loaded machine that can take seconds, and a Python
/// interceptor's answer can take more than a second. The tests that are
/// about a deadline set the server's own `requestTimeout`.
pub const SLOW_START: [&str; 8] = ["--ready-grace", "60", "--tool-timeout", "60", "--command-timeout", "60", "--intercept-timeout", "10"];

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A server entry running the fixture with `flags`, plus `more` fields.
pub fn fx(flags: &[&str], more: Value) -> Value {
    let mut args = vec![fixture("mcp_server.py").display().to_string()];
    args.extend(flags.iter().map(|s| s.to_string()));
    let mut e = json!({"command": "python3", "args": args});
    if let Value::Object(m) = more {
        for (k, v) in m {
            e[k] = v;
        }
    }
    e
}

/// Writes `{"mcpServers": servers}` to `<dir>/<file>`; returns its path.
pub fn write_config(dir: &Path, file: &str, servers: Value) -> PathBuf {
    let p = dir.join(file);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, serde_json::to_vec_pretty(&json!({"mcpServers": servers})).unwrap()).unwrap();
    p
}

/// `zot serve` (or another front end) with a `--cwd` of its own.
pub struct Serve {
    pub z: Zot,
    pub frames: Vec<Value>,
    pub next: u64,
}

pub fn cwd_of(t: &TempDir) -> PathBuf {
    let c = t.path().join("cwd");
    std::fs::create_dir_all(&c).unwrap();
    c
}

impl Serve {
    /// `zot serve --no-ext --cwd <t>/cwd FAST SLOW_START --mcp-config C... extra`.
    pub fn start(t: &TempDir, configs: &[PathBuf], extra: &[&str]) -> Serve {
        Serve::start_env(t, configs, extra, &[])
    }

    pub fn start_env(t: &TempDir, configs: &[PathBuf], extra: &[&str], env: &[(&str, &str)]) -> Serve {
        let mut args = strings(&["serve", "--cwd"]);
        args.push(cwd_of(t).display().to_string());
        args.extend(strings(&FAST));
        args.extend(strings(&SLOW_START));
        for c in configs {
            args.push("--mcp-config".into());
            args.push(c.display().to_string());
        }
        args.extend(strings(extra));
        Serve { z: Zot::spawn(t.path(), &args, env), frames: Vec::new(), next: 100 }
    }

    pub fn read(&mut self, limit: Duration) -> Option<Value> {
        let line = self.z.next_line(limit)?;
        let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        self.frames.push(v.clone());
        Some(v)
    }

    /// The first frame (read already or to come) that `pred` picks.
    pub fn wait(&mut self, what: &str, mut pred: impl FnMut(&Value) -> bool) -> Value {
        if let Some(f) = self.frames.iter().find(|f| pred(f)) {
            return f.clone();
        }
        let end = Instant::now() + LINE_WAIT * 2;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.read(left) {
                Some(f) if pred(&f) => return f,
                Some(_) => {}
                None => panic!("no frame {what}\n{}", self.z.context()),
            }
        }
    }

    pub fn note(&mut self, ty: &str) -> Value {
        self.wait(ty, |f| f["type"] == ty)
    }

    /// Sends a request of `ty` with `params`; its response.
    pub fn req(&mut self, ty: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        let mut v = params;
        v["id"] = json!(id);
        v["type"] = json!(ty);
        self.z.send(&v.to_string());
        self.wait(&format!("response {id}"), |f| f["type"] == "response" && f["id"] == id)
    }

    pub fn ok(&mut self, ty: &str, params: Value) -> Value {
        let r = self.req(ty, params.clone());
        assert_eq!(r["ok"], true, "{ty} {params} failed: {r}\n{}", self.z.context());
        r["result"].clone()
    }

    pub fn tool(&mut self, name: &str, args: Value) -> Value {
        self.ok("tool", json!({"name": name, "args": args}))
    }

    pub fn ext(&mut self, name: &str) -> Value {
        let l = self.ok("list", json!({}));
        l["extensions"].as_array().unwrap().iter().find(|e| e["name"] == name).cloned().unwrap_or(Value::Null)
    }

    /// Polls the listing until extension `name` is in `state`.
    pub fn wait_state(&mut self, name: &str, state: &str) -> Value {
        let end = Instant::now() + LINE_WAIT * 2;
        loop {
            let e = self.ext(name);
            if e["state"] == state {
                return e;
            }
            assert!(Instant::now() < end, "{name} never {state}: {e}\n{}", self.z.context());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.z.zot_home.join("logs").join(format!("mcp-{name}.log"))).unwrap_or_default()
    }

    pub fn wait_log(&self, name: &str, needle: &str) -> String {
        let ok = super::common::wait_until(LINE_WAIT, || self.log(name).contains(needle));
        let log = self.log(name);
        assert!(ok, "log of {name} never had {needle:?}:\n{log}");
        log
    }

    pub fn shutdown(&mut self) {
        self.ok("shutdown", json!({}));
        assert_eq!(self.z.exit_code(LINE_WAIT), 0, "{}", self.z.context());
    }
}

pub fn text(r: &Value) -> String {
    r["content"][0]["text"].as_str().unwrap_or("").to_string()
}

pub fn tool_names(list: &Value) -> Vec<String> {
    list["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
}


/// `zot ARGS` with `ZOT_HOME` and the working folder of `t`: exit code, stdout, stderr.
pub fn zot(t: &TempDir, args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(zot_proc::BIN)
        .args(args)
        .env("ZOT_HOME", t.path().join("zot-home"))
        .current_dir(cwd_of(t))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

