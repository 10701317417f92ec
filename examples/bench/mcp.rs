//! The MCP path of `make bench`: a tool round trip through an MCP server
//! against the same echo as a zot extension (both single-threaded Rust
//! processes, this binary in `--mcp-echo` and `--echo` mode, one host,
//! interleaved rounds); 20 MCP servers started by the host in parallel
//! against starting them by hand (spawn all, then each handshake:
//! `initialize`, `notifications/initialized`, `tools/list`); and the memory
//! `zot serve` takes per server.

use super::{us, Dist, Env, Res};
use serde_json::{json, Value};
use std::fs;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;
use zot_host::home::Home;
use zot_host::host::{Config, Host, Request, Response};

const ROUNDS: usize = 20;
const PER_ROUND: usize = 150;
const SERVERS: usize = 20;
const START_ROUNDS: usize = 5;

/// `--mcp-echo`: this binary as an MCP server over stdio.
pub fn mode(args: &[String]) -> Option<Res<()>> {
    (args.first()? == "--mcp-echo").then(echo_main)
}

/// A single-threaded MCP server with one tool, `echo`, that answers its
/// arguments as JSON text; each line written and flushed as it is made.
fn echo_main() -> Res<()> {
    let mut r = BufReader::with_capacity(64 * 1024, io::stdin().lock());
    let mut w = BufWriter::with_capacity(64 * 1024, io::stdout().lock());
    let mut line = Vec::new();
    loop {
        line.clear();
        if r.read_until(b'\n', &mut line)? == 0 {
            return Ok(());
        }
        let Ok(v) = serde_json::from_slice::<Value>(&line) else { continue };
        let id = &v["id"];
        if v["method"] == "tools/call" {
            // Made as the zot echo (`--echo`) makes its answer.
            let text = Value::String(v["params"]["arguments"].to_string());
            writeln!(w, "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":{text}}}]}}}}")?;
            w.flush()?;
            continue;
        }
        let result = match v["method"].as_str() {
            Some("initialize") => json!({"protocolVersion": v["params"]["protocolVersion"], "capabilities": {"tools": {}},
                "serverInfo": {"name": "echo", "version": "1"}}),
            Some("tools/list") => json!({"tools": [{"name": "echo", "description": "echo", "inputSchema": {"type": "object"}}]}),
            Some("tools/call") => json!({"content": [{"type": "text", "text": v["params"]["arguments"].to_string()}]}),
            Some("ping") => json!({}),
            _ => continue,
        };
        if id.is_null() {
            continue;
        }
        writeln!(w, "{}", json!({"jsonrpc": "2.0", "id": id, "result": result}))?;
        w.flush()?;
    }
}

pub struct McpBench {
    /// Tool round trips through the host: the zot extension, the MCP server.
    pub ext_tool: Dist,
    pub mcp_tool: Dist,
    /// 20 servers: the host's start to ready, and by hand.
    pub host_start: Dist,
    pub hand_start: Dist,
    /// `zot serve` peak RSS (KiB) with no server and with 20, and the RSS
    /// of one server process.
    pub serve_hwm: (u64, u64),
    pub server_rss: u64,
}

fn bench_exe() -> Res<PathBuf> {
    Ok(std::env::current_exe()?)
}

/// A configuration file of `n` echo servers `s01`, `s02`, ...
fn config_file(env: &Env, n: usize) -> Res<PathBuf> {
    let exe = bench_exe()?.display().to_string();
    let servers: serde_json::Map<String, Value> =
        (1..=n).map(|i| (format!("s{i:02}"), json!({"command": exe, "args": ["--mcp-echo"]}))).collect();
    let p = env.tmp.join(format!("mcp-{n}.json"));
    fs::write(&p, serde_json::to_vec_pretty(&json!({"mcpServers": servers}))?)?;
    Ok(p)
}

fn host_with(env: &Env, exts: &[PathBuf], mcp: &[PathBuf]) -> Res<Host> {
    let mut cfg = Config::new(Home::at(&env.home), env.tmp.clone());
    cfg.sources.ext_paths = exts.to_vec();
    cfg.sources.no_ext = true;
    cfg.mcp_configs = mcp.to_vec();
    let (host, _events) = Host::start(cfg)?;
    let report = host.wait_ready()?;
    if report.ready.len() != report.loaded {
        return Err(format!("only {} of {} ready: {:?}", report.ready.len(), report.loaded, report.errors).into());
    }
    Ok(host)
}

fn call(host: &Host, name: &str, i: usize) -> Res<f64> {
    let t = Instant::now();
    let r = host.call(Request::Tool { name: name.into(), args: Some(json!({"i": i})), tool_id: None })?;
    let d = us(t.elapsed());
    match r {
        Response::Tool(t) if !t.is_error => Ok(d),
        other => Err(format!("{name}: unexpected answer {other:?}").into()),
    }
}

/// One server started by hand: spawned, its handshake not yet done.
struct Hand {
    child: Child,
    w: ChildStdin,
    r: BufReader<ChildStdout>,
}

impl Hand {
    fn spawn(exe: &Path) -> Res<Hand> {
        let mut child = Command::new(exe).arg("--mcp-echo").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn()?;
        let w = child.stdin.take().ok_or("no stdin")?;
        let r = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        Ok(Hand { child, w, r })
    }

    fn ask(&mut self, id: u64, method: &str, params: Value) -> Res<()> {
        writeln!(self.w, "{}", json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        self.w.flush()?;
        Ok(())
    }

    fn answer(&mut self) -> Res<()> {
        let mut line = String::new();
        if self.r.read_line(&mut line)? == 0 {
            return Err("the server closed its stdout".into());
        }
        Ok(())
    }

    fn handshake(&mut self) -> Res<()> {
        self.answer()?;
        writeln!(self.w, "{}", json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        self.ask(2, "tools/list", json!({}))?;
        self.answer()
    }

    fn stop(self) {
        let Hand { mut child, w, .. } = self;
        drop(w);
        let _ = child.wait();
    }
}

fn by_hand(exe: &Path, n: usize) -> Res<Vec<Hand>> {
    let mut all: Vec<Hand> = (0..n).map(|_| Hand::spawn(exe)).collect::<Res<_>>()?;
    let init = json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}});
    for h in &mut all {
        h.ask(1, "initialize", init.clone())?;
    }
    for h in &mut all {
        h.handshake()?;
    }
    Ok(all)
}

/// `zot serve` with `args`: its VmHWM (KiB) once `ready`, and the RSS
/// (KiB) of its first child.
fn serve_hwm(env: &Env, args: &[&str]) -> Res<(u64, u64)> {
    let mut cmd = Command::new(&env.zot);
    cmd.arg("serve").args(["--no-ext", "--cwd"]).arg(&env.tmp).args(args);
    let (mut child, mut out) = super::serve_until_ready(cmd, env)?;
    let mut line = String::new();
    let field = |pid: u32, k: &str| {
        fs::read_to_string(format!("/proc/{pid}/status"))
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix(k).and_then(|v| v.split_whitespace().next()).and_then(|v| v.parse::<u64>().ok()))
            .unwrap_or(0)
    };
    let hwm = field(child.id(), "VmHWM:");
    // The servers are children of the dispatcher thread, not of the main one.
    let first = fs::read_dir(format!("/proc/{}/task", child.id()))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|t| fs::read_to_string(t.path().join("children")).ok())
        .find_map(|k| k.split_whitespace().next().and_then(|p| p.parse::<u32>().ok()));
    let rss = first.map_or(0, |p| field(p, "VmRSS:"));
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    stdin.write_all(b"{\"id\":1,\"type\":\"shutdown\"}\n")?;
    drop(stdin);
    while out.read_line(&mut line)? > 0 {}
    child.wait()?;
    Ok((hwm, rss))
}

pub fn run(env: &Env) -> Res<McpBench> {
    let exe = bench_exe()?;
    // The same echo as a zot extension.
    let ext = env.manifest("mcp-bench", "zecho", &exe.display().to_string(), &["--echo"])?;
    let one = config_file(env, 1)?;
    let host = host_with(env, &[ext], std::slice::from_ref(&one))?;
    let (mut e, mut m) = (Vec::new(), Vec::new());
    for i in 0..PER_ROUND {
        call(&host, "echo", i)?;
        call(&host, "mcp__s01__echo", i)?;
    }
    for round in 0..ROUNDS {
        for first_ext in [round % 2 == 0, round % 2 == 1] {
            for i in 0..PER_ROUND {
                if first_ext {
                    e.push(call(&host, "echo", i)?);
                } else {
                    m.push(call(&host, "mcp__s01__echo", i)?);
                }
            }
        }
    }
    host.shutdown();

    let twenty = config_file(env, SERVERS)?;
    let (mut hs, mut ms) = (Vec::new(), Vec::new());
    host_with(env, &[], std::slice::from_ref(&twenty))?.shutdown();
    for round in 0..START_ROUNDS {
        for hand in [round % 2 == 0, round % 2 == 1] {
            let t = Instant::now();
            if hand {
                let all = by_hand(&exe, SERVERS)?;
                ms.push(us(t.elapsed()));
                all.into_iter().for_each(Hand::stop);
            } else {
                let host = host_with(env, &[], std::slice::from_ref(&twenty))?;
                hs.push(us(t.elapsed()));
                host.shutdown();
            }
        }
    }
    let (base, _) = serve_hwm(env, &[])?;
    let path = twenty.display().to_string();
    let (with, server_rss) = serve_hwm(env, &["--mcp-config", &path])?;
    Ok(McpBench {
        ext_tool: Dist::new(e),
        mcp_tool: Dist::new(m),
        host_start: Dist::new(hs),
        hand_start: Dist::new(ms),
        serve_hwm: (base, with),
        server_rss,
    })
}
