//! Start-up and shutdown of the in-process host against spawning and
//! handshaking by hand, and the memory of `zot serve` by extension count.

use super::peer::Peer;
use super::stats::{us, Dist};
use super::{Env, Res};
use serde_json::Value;
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

pub struct Startup {
    /// (kind, count, host start → ready, floor spawn → every ready)
    pub ready: Vec<(String, usize, Dist, Dist)>,
    pub shutdown50: Dist,
    pub floor_shutdown50: Dist,
    pub python: Option<String>,
}

/// The floor for start-up: spawn every extension, then do each handshake
/// by hand (they start in parallel), up to the last `ready`.
pub fn floor_start(exe_of: &dyn Fn(&Path) -> (PathBuf, Vec<String>), dirs: &[PathBuf]) -> Res<Vec<Peer>> {
    let started: Vec<Peer> = dirs
        .iter()
        .map(|d| {
            let (exe, args) = exe_of(d);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            Peer::start(&exe, &args, d)
        })
        .collect::<Res<_>>()?;
    started.into_iter().zip(dirs).map(|(p, d)| p.handshake(d)).collect()
}

pub fn floor_stop(peers: Vec<Peer>) {
    // Everyone gets `shutdown` and end of input first, as the host does.
    let children: Vec<Child> = peers
        .into_iter()
        .map(|mut p| {
            let _ = p.send(b"{\"type\":\"shutdown\"}\n");
            let Peer { child, .. } = p;
            child
        })
        .collect();
    for mut c in children {
        let _ = c.wait();
    }
}

pub fn startup(env: &Env) -> Res<Startup> {
    let e50 = env.echoes(50)?;
    let python = env.python();
    let mut sets: Vec<(String, Vec<PathBuf>, usize)> = vec![
        ("echo".into(), e50[..1].to_vec(), 7),
        ("echo".into(), e50[..10].to_vec(), 5),
        ("echo".into(), e50.clone(), 5),
    ];
    if let Some(py) = &python {
        sets.push(("python".into(), env.pythons(py, 10)?, 3));
    }
    // How each extension is run, for the floor: as its manifest says.
    let exe_of = |d: &Path| -> (PathBuf, Vec<String>) {
        let m: Value = fs::read(d.join("extension.json")).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default();
        let exe = PathBuf::from(m["exec"].as_str().unwrap_or_default());
        let args = m["args"].as_array().map(|a| a.iter().filter_map(|x| x.as_str().map(String::from)).collect()).unwrap_or_default();
        (exe, args)
    };
    let mut host_t: Vec<Vec<f64>> = vec![Vec::new(); sets.len()];
    let mut floor_t: Vec<Vec<f64>> = vec![Vec::new(); sets.len()];
    let (mut shut, mut fshut) = (Vec::new(), Vec::new());
    // Warm the page cache and the dynamic loader.
    env.start(&e50[..10])?.shutdown();
    for round in 0..7 {
        for (k, (_, dirs, reps)) in sets.iter().enumerate() {
            if round >= *reps {
                continue;
            }
            for floor_now in [round % 2 == 0, round % 2 == 1] {
                if floor_now {
                    let t = Instant::now();
                    let peers = floor_start(&exe_of, dirs)?;
                    floor_t[k].push(us(t.elapsed()));
                    let t = Instant::now();
                    floor_stop(peers);
                    if dirs.len() == 50 {
                        fshut.push(us(t.elapsed()));
                    }
                } else {
                    let t = Instant::now();
                    let host = env.start(dirs)?;
                    host_t[k].push(us(t.elapsed()));
                    let t = Instant::now();
                    host.shutdown();
                    if dirs.len() == 50 {
                        shut.push(us(t.elapsed()));
                    }
                }
            }
        }
    }
    let ready = sets
        .into_iter()
        .zip(host_t.into_iter().zip(floor_t))
        .map(|((kind, dirs, _), (h, f))| (kind, dirs.len(), Dist::new(h), Dist::new(f)))
        .collect();
    Ok(Startup { ready, shutdown50: Dist::new(shut), floor_shutdown50: Dist::new(fshut), python })
}

pub struct Mem {
    /// (extensions, VmHWM KiB, VmRSS KiB, threads, start → `ready` µs)
    pub rows: Vec<(usize, u64, u64, u64, f64)>,
}

/// Starts `cmd` (a `zot serve`) in the bench's home and reads its output
/// up to the `ready` notification.
pub fn serve_until_ready(mut cmd: Command, env: &Env) -> Res<(std::process::Child, BufReader<std::process::ChildStdout>)> {
    let mut child = cmd.env("ZOT_HOME", &env.home).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn()?;
    let mut out = BufReader::new(child.stdout.take().ok_or("no stdout")?);
    let mut line = String::new();
    loop {
        line.clear();
        if out.read_line(&mut line)? == 0 {
            return Err("zot serve ended before ready".into());
        }
        if line.starts_with(r#"{"type":"ready""#) {
            return Ok((child, out));
        }
    }
}

/// Runs `zot serve` with `dirs`, waits for `ready`, reads its memory, stops it.
pub fn serve_memory(env: &Env, dirs: &[PathBuf]) -> Res<(u64, u64, u64, f64)> {
    let mut cmd = Command::new(&env.zot);
    cmd.arg("serve").arg("--no-ext").arg("--cwd").arg(&env.tmp);
    for d in dirs {
        cmd.arg("--ext").arg(d);
    }
    let started = Instant::now();
    let (mut child, mut out) = serve_until_ready(cmd, env)?;
    let ready = us(started.elapsed());
    let mut line = String::new();
    let status = fs::read_to_string(format!("/proc/{}/status", child.id()))?;
    let field = |k: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(k))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let r = (field("VmHWM:"), field("VmRSS:"), field("Threads:"), ready);
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    stdin.write_all(b"{\"id\":1,\"type\":\"shutdown\"}\n")?;
    drop(stdin);
    while out.read_line(&mut line)? > 0 {}
    child.wait()?;
    Ok(r)
}

pub fn memory(env: &Env) -> Res<Mem> {
    let e200 = env.echoes(200)?;
    let counts = [0usize, 10, 50, 200];
    let mut samples: Vec<Vec<(u64, u64, u64, f64)>> = vec![Vec::new(); counts.len()];
    for _ in 0..3 {
        for (k, &n) in counts.iter().enumerate() {
            samples[k].push(serve_memory(env, &e200[..n])?);
        }
    }
    let rows = counts
        .iter()
        .zip(samples)
        .map(|(&n, mut s)| {
            s.sort_by_key(|x| x.0);
            let (hwm, rss, th, _) = s[s.len() / 2];
            let mut ready: Vec<f64> = s.iter().map(|x| x.3).collect();
            ready.sort_by(f64::total_cmp);
            (n, hwm, rss, th, ready[ready.len() / 2])
        })
        .collect();
    Ok(Mem { rows })
}
