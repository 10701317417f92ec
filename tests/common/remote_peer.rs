//! Real remote MCP servers on 127.0.0.1 for tests/remote_*.rs: the Python
//! SDK fixture (tests/fixtures/remote_server.py, from target/mcp-venv or
//! `$ZOT_MCP_PYTHON`) and npm's `@modelcontextprotocol/server-everything`
//! (from target/mcp-node), each on a port it bound itself (port 0) or on a
//! port given again to a restarted server. Included with `#[path]` beside
//! `mod common`.
#![allow(dead_code)]

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The Python with the `mcp` package, or why there is none.
pub fn sdk_python() -> Result<PathBuf, String> {
    let py = std::env::var_os("ZOT_MCP_PYTHON").map(PathBuf::from).unwrap_or_else(|| root().join("target/mcp-venv/bin/python"));
    let ok = Command::new(&py).args(["-c", "import mcp, uvicorn"]).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
    if ok {
        Ok(py)
    } else {
        Err(format!("no Python with the mcp package at {} (python3 -m venv target/mcp-venv && target/mcp-venv/bin/pip install 'mcp>=2.3,<3')", py.display()))
    }
}

/// A server process; killed when dropped.
pub struct Peer {
    child: Child,
    pub port: u16,
    /// Where the fixture writes what reached it (one JSON line a request).
    pub seen: PathBuf,
}

impl Peer {
    /// The Python fixture in `mode` (`http` or `sse`) on `port` (0: any).
    pub fn python(mode: &str, port: u16, seen: &Path) -> Result<Peer, String> {
        Peer::python_env(mode, port, seen, &[])
    }

    /// [`Peer::python`] with more environment (REMOTE_TLS_CERT, REMOTE_TLS_KEY).
    pub fn python_env(mode: &str, port: u16, seen: &Path, env: &[(&str, &Path)]) -> Result<Peer, String> {
        let py = sdk_python()?;
        let mut cmd = Command::new(py);
        cmd.arg(root().join("tests/fixtures/remote_server.py")).arg(mode).arg(port.to_string()).env("REMOTE_SEEN", seen);
        for (k, v) in env {
            cmd.env(k, v);
        }
        Peer::start(cmd, seen, |line| line.trim().parse().ok())
    }

    /// The OAuth fixture (tests/fixtures/oauth_server.py): the SDK's server
    /// behind a bearer check, beside its own authorization server; access
    /// tokens live `ttl` seconds.
    pub fn oauth(seen: &Path, ttl: u64) -> Result<Peer, String> {
        let py = sdk_python()?;
        let mut cmd = Command::new(py);
        cmd.arg(root().join("tests/fixtures/oauth_server.py")).env("REMOTE_SEEN", seen).env("TOKEN_TTL", ttl.to_string());
        Peer::start(cmd, seen, |line| line.trim().parse().ok())
    }

    /// The proxy of tests/fixtures/http_proxy.py: each connection's first
    /// request line appended to `seen`.
    pub fn proxy(seen: &Path) -> Result<Peer, String> {
        let mut cmd = Command::new(sdk_python()?);
        cmd.arg(root().join("tests/fixtures/http_proxy.py")).arg(seen);
        Peer::start(cmd, seen, |line| line.trim().parse().ok())
    }

    pub fn https_url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }

    /// `server-everything` in `mode` (`streamableHttp` or `sse`), on a port
    /// the test bound and let go (it takes `PORT` and prints where it listens).
    pub fn everything(mode: &str) -> Result<Peer, String> {
        let bin = root().join("target/mcp-node/node_modules/.bin/mcp-server-everything");
        if !bin.exists() {
            return Err(format!("{} is missing (npm install --prefix target/mcp-node @modelcontextprotocol/server-everything)", bin.display()));
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?.local_addr().map_err(|e| e.to_string())?.port();
        let mut cmd = Command::new(bin);
        cmd.arg(mode).env("PORT", port.to_string());
        let seen = std::env::temp_dir().join("unused");
        Peer::start(cmd, &seen, move |line| line.contains(&port.to_string()).then_some(port))
    }

    fn start(mut cmd: Command, seen: &Path, port_of: impl Fn(&str) -> Option<u16> + Send + 'static) -> Result<Peer, String> {
        let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().map_err(|e| e.to_string())?;
        let (tx, rx) = crossbeam_channel::unbounded();
        for out in [Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>, Box::new(child.stderr.take().unwrap())] {
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines().map_while(Result::ok) {
                    let _ = tx.send(line);
                }
            });
        }
        let mut said = Vec::new();
        loop {
            match rx.recv_timeout(Duration::from_secs(60)) {
                Ok(line) => {
                    if let Some(port) = port_of(&line) {
                        return Ok(Peer { child, port, seen: seen.to_path_buf() });
                    }
                    said.push(line);
                }
                Err(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!("the server never said its port: {}", said.join(" | ")));
                }
            }
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Ends the server (SIGKILL) and waits for it.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// What reached the fixture so far.
    pub fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.seen).unwrap_or_default().lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.kill();
    }
}
