//! The remote path of `make bench`: sequential tool calls to a local
//! Streamable HTTP server (the Python SDK's `MCPServer` on 127.0.0.1, one
//! `echo` tool) through `zot serve`, against the Python SDK's own client
//! calling the same server directly, in interleaved rounds; then the
//! threads and file descriptors of the `zot serve` process after 100 calls
//! and after 10,000, which must be equal (nothing left behind per call).
//! Each count is taken at rest: how many request threads (at most 8) and
//! kept-alive connections a run uses depends on timing, so the bench waits
//! for the request threads to end (5 s idle), makes one call (which drops
//! the connections unused as long and opens one), and counts.
//!
//! The Python is `$ZOT_MCP_PYTHON`, else `target/mcp-venv/bin/python` (what
//! `.ci/run` installs); without the `mcp` package there the row is skipped,
//! saying so.

use super::{us, Dist, Env, Res};
use serde_json::json;
use std::fs;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

const ROUNDS: usize = 10;
const PER_ROUND: usize = 200;
const WARM_CALLS: usize = 200;
const FEW: usize = 100;
const MANY: usize = 10_000;

pub struct RemoteBench {
    /// Per call, µs: through `zot serve`, and the SDK client directly.
    pub zot: Dist,
    pub sdk: Dist,
    /// (threads, fds) of `zot serve` after [`FEW`] and after [`MANY`] calls.
    pub after_few: (usize, usize),
    pub after_many: (usize, usize),
    pub few: usize,
    pub many: usize,
}

const SERVER_PY: &str = r#"import socket, uvicorn
from mcp.server.mcpserver import MCPServer
server = MCPServer("bench")
@server.tool()
def echo(text: str) -> str:
    """Answers with its text."""
    return text
sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
# Inherited by every accepted connection: without it uvicorn's last chunk of
# an event-stream answer waits for the client's delayed ACK (about 40 ms a
# call, for any client).
sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
sock.bind(("127.0.0.1", 0))
sock.listen(128)
print(sock.getsockname()[1], flush=True)
uvicorn.Server(uvicorn.Config(server.streamable_http_app(), log_level="warning", lifespan="on")).run(sockets=[sock])
"#;

/// The SDK client: connects, prints `ready`, then for each line N on stdin
/// makes N sequential calls and prints their times in µs, one line.
const CLIENT_PY: &str = r#"import sys, time, anyio
from mcp import Client
async def main():
    async with Client(sys.argv[1]) as c:
        await c.call_tool("echo", {"text": "warm"})
        print("ready", flush=True)
        while True:
            line = await anyio.to_thread.run_sync(sys.stdin.readline)
            if not line.strip():
                return
            times = []
            for i in range(int(line)):
                t = time.perf_counter_ns()
                r = await c.call_tool("echo", {"text": str(i)})
                times.append((time.perf_counter_ns() - t) / 1000)
                if r.is_error:
                    print("error", r, flush=True)
                    return
            print(" ".join(f"{x:.1f}" for x in times), flush=True)
anyio.run(main)
"#;

/// The Python with the SDK, or why there is none.
fn sdk_python(env: &Env) -> Result<PathBuf, String> {
    let py = std::env::var_os("ZOT_MCP_PYTHON").map(PathBuf::from).unwrap_or_else(|| env.target.join("mcp-venv/bin/python"));
    let ok = Command::new(&py).args(["-c", "import mcp, uvicorn"]).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
    if ok {
        Ok(py)
    } else {
        Err(format!("no Python with the mcp SDK at {} (set ZOT_MCP_PYTHON, or see .ci/run)", py.display()))
    }
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_server(env: &Env, py: &PathBuf) -> Res<(Server, u16)> {
    let script = env.tmp.join("remote_server.py");
    fs::write(&script, SERVER_PY)?;
    let mut child = Command::new(py).arg(&script).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn()?;
    let mut line = String::new();
    BufReader::new(child.stdout.take().ok_or("no stdout")?).read_line(&mut line)?;
    let server = Server(child);
    let port = line.trim().parse().map_err(|_| format!("the bench's MCP server printed no port: {line:?}"))?;
    Ok((server, port))
}

/// A line-oriented child: the SDK client or `zot serve`.
struct Lines {
    child: Child,
    w: BufWriter<ChildStdin>,
    r: BufReader<ChildStdout>,
    line: String,
}

impl Lines {
    fn spawn(mut cmd: Command) -> Res<Lines> {
        let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn()?;
        let w = BufWriter::new(child.stdin.take().ok_or("no stdin")?);
        let r = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        Ok(Lines { child, w, r, line: String::new() })
    }

    fn read(&mut self) -> Res<&str> {
        self.line.clear();
        if self.r.read_line(&mut self.line)? == 0 {
            return Err("a bench process closed its stdout".into());
        }
        Ok(&self.line)
    }

    fn until(&mut self, prefix: &str) -> Res<()> {
        while !self.read()?.starts_with(prefix) {}
        Ok(())
    }

    fn send(&mut self, s: &str) -> Res<()> {
        self.w.write_all(s.as_bytes())?;
        self.w.flush()?;
        Ok(())
    }

    fn stop(mut self, last: &str) {
        let _ = self.send(last);
        drop(self.w);
        let _ = self.child.wait();
    }
}

fn start_zot(env: &Env, port: u16) -> Res<Lines> {
    let cfg = env.tmp.join("mcp-remote.json");
    fs::write(&cfg, serde_json::to_vec(&json!({"mcpServers": {"web": {"url": format!("http://127.0.0.1:{port}/mcp")}}}))?)?;
    let mut cmd = Command::new(&env.zot);
    cmd.arg("serve").arg("--no-ext").arg("--cwd").arg(&env.tmp).arg("--mcp-config").arg(&cfg).env("ZOT_HOME", &env.home).current_dir(&env.tmp);
    let mut z = Lines::spawn(cmd)?;
    z.until(r#"{"type":"ready""#)?;
    Ok(z)
}

/// One call through `zot serve`, µs.
fn zot_call(z: &mut Lines, id: usize) -> Res<f64> {
    let req = format!("{{\"id\":{id},\"type\":\"tool\",\"name\":\"mcp__web__echo\",\"args\":{{\"text\":\"{id}\"}}}}\n");
    let t = Instant::now();
    z.send(&req)?;
    z.until(r#"{"type":"response""#)?;
    let d = us(t.elapsed());
    if z.line.contains(r#""ok":false"#) || z.line.contains(r#""is_error":true"#) {
        return Err(format!("a remote call through zot failed: {}", z.line.trim()).into());
    }
    Ok(d)
}

fn sdk_calls(c: &mut Lines, n: usize) -> Res<Vec<f64>> {
    c.send(&format!("{n}\n"))?;
    let line = c.read()?;
    let v: Vec<f64> = line.split_whitespace().filter_map(|x| x.parse().ok()).collect();
    if v.len() != n {
        return Err(format!("the SDK client answered {:?}", line.trim()).into());
    }
    Ok(v)
}

/// Whether `pid` has a thread whose name starts with `prefix`.
fn has_thread(pid: u32, prefix: &str) -> bool {
    fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
        .any(|t| fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.starts_with(prefix)))
}

/// The counts of `zot serve` at rest (see the module's header); `id` is the
/// id of the one call made.
fn at_rest(z: &mut Lines, id: usize) -> Res<(usize, usize)> {
    let pid = z.child.id();
    let deadline = Instant::now() + std::time::Duration::from_secs(30);
    while has_thread(pid, "zot-ext-web-pos") {
        if Instant::now() > deadline {
            return Err("the request threads of zot serve did not end within 30 s of idleness".into());
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    zot_call(z, id)?;
    Ok(threads_fds(pid))
}

/// Threads and open file descriptors of a process.
pub fn threads_fds(pid: u32) -> (usize, usize) {
    let count = |d: &str| fs::read_dir(format!("/proc/{pid}/{d}")).map_or(0, |r| r.count());
    (count("task"), count("fd"))
}

/// The row, or why it is skipped.
pub fn run(env: &Env) -> Res<Result<RemoteBench, String>> {
    let py = match sdk_python(env) {
        Ok(p) => p,
        Err(why) => return Ok(Err(why)),
    };
    let (_server, port) = start_server(env, &py)?;
    let url = format!("http://127.0.0.1:{port}/mcp");
    let script = env.tmp.join("remote_client.py");
    fs::write(&script, CLIENT_PY)?;
    let mut cmd = Command::new(&py);
    cmd.arg(&script).arg(&url);
    let mut sdk = Lines::spawn(cmd)?;
    sdk.until("ready")?;
    let mut z = start_zot(env, port)?;
    let mut id = 0;
    for _ in 0..WARM_CALLS {
        id += 1;
        zot_call(&mut z, id)?;
    }
    sdk_calls(&mut sdk, WARM_CALLS)?;
    let (mut zt, mut st) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        for zot_now in [round % 2 == 0, round % 2 == 1] {
            if zot_now {
                for _ in 0..PER_ROUND {
                    id += 1;
                    zt.push(zot_call(&mut z, id)?);
                }
            } else {
                st.extend(sdk_calls(&mut sdk, PER_ROUND)?);
            }
        }
    }
    z.stop("{\"id\":0,\"type\":\"shutdown\"}\n");
    sdk.stop("\n");

    // A fresh `zot serve`: its counts after FEW calls, then after MANY.
    let mut z = start_zot(env, port)?;
    for id in 1..=FEW {
        zot_call(&mut z, id)?;
    }
    let after_few = at_rest(&mut z, FEW + 1)?;
    for id in FEW + 2..=MANY {
        zot_call(&mut z, id)?;
    }
    let after_many = at_rest(&mut z, MANY + 1)?;
    z.stop("{\"id\":0,\"type\":\"shutdown\"}\n");
    Ok(Ok(RemoteBench { zot: Dist::new(zt), sdk: Dist::new(st), after_few, after_many, few: FEW, many: MANY }))
}
