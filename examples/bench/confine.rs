//! Confinement's cost (docs/protocol.md §9.4): start to `ready` of ten echo
//! extensions declaring `"confine": {}` against the same ten declaring
//! nothing, interleaved, and the tool round trip through a confined echo
//! against an unconfined one. The difference per start is the ruleset, the
//! seccomp filter and the folders, built before each fork.

use super::{median, us, Dist, Env, Res};
use serde_json::json;
use std::fs;
use std::path::PathBuf;
use std::time::Instant;
use zot_host::host::{Request, Response};

pub struct Confine {
    /// Start to `ready` of ten, medians in µs: (unconfined, confined).
    pub ready10: (f64, f64),
    /// Tool round trip: (unconfined, confined).
    pub round_trip: (Dist, Dist),
    pub rounds: usize,
}

const ROUNDS: usize = 9;
const CALLS: usize = 2_000;

fn echoes(env: &Env, group: &str, confined: bool) -> Res<Vec<PathBuf>> {
    let dirs = env.echoes_in(group, 10)?;
    if confined {
        for d in &dirs {
            let p = d.join("extension.json");
            let mut m: serde_json::Value = serde_json::from_slice(&fs::read(&p)?)?;
            m["confine"] = json!({});
            fs::write(&p, serde_json::to_vec_pretty(&m)?)?;
        }
    }
    Ok(dirs)
}

fn calls(host: &zot_host::host::Host, n: usize, out: &mut Vec<f64>) -> Res<()> {
    for i in 0..n {
        let t = Instant::now();
        match host.call(Request::Tool { name: "echo".into(), args: Some(json!({"i": i})), tool_id: None })? {
            Response::Tool(_) => out.push(us(t.elapsed())),
            other => return Err(format!("echo answered {other:?}").into()),
        }
    }
    Ok(())
}

pub fn run(env: &Env) -> Res<Confine> {
    let open = echoes(env, "open10", false)?;
    let boxed = echoes(env, "boxed10", true)?;
    env.start(&open)?.shutdown();
    env.start(&boxed)?.shutdown();
    let (mut ro, mut rb) = (Vec::new(), Vec::new());
    let (mut to, mut tb) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        for confined in [round % 2 == 0, round % 2 == 1] {
            let dirs = if confined { &boxed } else { &open };
            let t = Instant::now();
            let host = env.start(dirs)?;
            let took = us(t.elapsed());
            let (ready, trips) = if confined { (&mut rb, &mut tb) } else { (&mut ro, &mut to) };
            ready.push(took);
            calls(&host, CALLS / ROUNDS, trips)?;
            host.shutdown();
        }
    }
    Ok(Confine { ready10: (median(&ro), median(&rb)), round_trip: (Dist::new(to), Dist::new(tb)), rounds: ROUNDS })
}
