//! Statistics (sorted samples in µs), CPU seconds and context switches read
//! from `/proc`, and the cost of one thread hand-off.

use serde_json::{json, Value};
use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};
use zot_host::host::Host;

/// Sorted durations in µs.
pub struct Dist(pub Vec<f64>);

impl Dist {
    pub fn new(mut v: Vec<f64>) -> Dist {
        v.sort_by(f64::total_cmp);
        Dist(v)
    }
    pub fn q(&self, q: f64) -> f64 {
        if self.0.is_empty() {
            return f64::NAN;
        }
        let i = ((self.0.len() - 1) as f64 * q).round() as usize;
        self.0[i]
    }
    pub fn p50(&self) -> f64 {
        self.q(0.5)
    }
    pub fn p99(&self) -> f64 {
        self.q(0.99)
    }
    pub fn json(&self) -> Value {
        json!({"p50_us": r2(self.p50()), "p99_us": r2(self.p99()), "samples": self.0.len()})
    }
}

pub fn median(v: &[f64]) -> f64 {
    Dist::new(v.to_vec()).p50()
}

pub fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

pub fn r2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// User + system CPU seconds of this process.
pub fn self_cpu() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// utime + stime of a `/proc/.../stat` file, in seconds.
pub fn stat_cpu(path: &Path) -> f64 {
    let Ok(s) = fs::read_to_string(path) else { return 0.0 };
    let Some(rest) = s.rfind(')').map(|i| &s[i + 2..]) else { return 0.0 };
    let f: Vec<&str> = rest.split(' ').collect();
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let t = |i: usize| f.get(i).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    (t(11) + t(12)) / hz
}

pub fn pid_cpu(pid: u32) -> f64 {
    stat_cpu(Path::new(&format!("/proc/{pid}/stat")))
}

/// CPU seconds of this process's host threads (the dispatcher and the
/// per-extension threads), leaving out the calling threads.
pub fn host_threads_cpu() -> f64 {
    let Ok(rd) = fs::read_dir("/proc/self/task") else { return 0.0 };
    rd.flatten()
        .filter(|t| {
            fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.starts_with("zot-dispatcher") || c.starts_with("zot-ext-"))
        })
        .map(|t| thread_cpu(&t.path()))
        .sum()
}

/// CPU seconds of one thread: `schedstat` (nanoseconds) when the kernel
/// keeps it, else `stat` (clock ticks).
pub fn thread_cpu(task: &Path) -> f64 {
    let ns = fs::read_to_string(task.join("schedstat")).ok().and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok());
    match ns {
        Some(ns) if ns > 0 => ns as f64 / 1e9,
        _ => stat_cpu(&task.join("stat")),
    }
}

pub fn ext_pids(host: &Host) -> Vec<u32> {
    match host.list() {
        Ok(l) => l.extensions.iter().filter_map(|e| e.pid).collect(),
        Err(_) => Vec::new(),
    }
}

// ----- the runs --------------------------------------------------------------------

/// Voluntary and involuntary context switches of this process's threads
/// that `pick(tid, name)`.
pub fn switches_of_threads(pick: impl Fn(u32, &str) -> bool) -> u64 {
    let Ok(rd) = fs::read_dir("/proc/self/task") else { return 0 };
    rd.flatten()
        .filter(|t| {
            let tid = t.file_name().to_str().and_then(|n| n.parse().ok()).unwrap_or(0);
            let name = fs::read_to_string(t.path().join("comm")).unwrap_or_default();
            pick(tid, name.trim_end())
        })
        .map(|t| switches_in(&t.path().join("status")))
        .sum()
}

/// Context switches of every thread of process `pid`.
pub fn switches_of_process(pid: u32) -> u64 {
    let Ok(rd) = fs::read_dir(format!("/proc/{pid}/task")) else { return 0 };
    rd.flatten().map(|t| switches_in(&t.path().join("status"))).sum()
}

pub fn switches_in(status: &Path) -> u64 {
    let s = fs::read_to_string(status).unwrap_or_default();
    s.lines()
        .filter(|l| l.starts_with("voluntary_ctxt_switches:") || l.starts_with("nonvoluntary_ctxt_switches:"))
        .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum()
}

/// What one hand-off between two threads costs here: `n` round trips of a
/// crossbeam ping-pong (the channels the host uses), halved, in µs.
pub fn hop_costs(n: usize) -> Vec<f64> {
    let (atx, arx) = crossbeam_channel::bounded::<u64>(1);
    let (btx, brx) = crossbeam_channel::bounded::<u64>(1);
    let echo = std::thread::spawn(move || {
        while let Ok(x) = arx.recv() {
            if btx.send(x).is_err() {
                break;
            }
        }
    });
    let mut out = Vec::with_capacity(n);
    for i in 0..n as u64 {
        let t = Instant::now();
        if atx.send(i).is_err() || brx.recv().is_err() {
            break;
        }
        out.push(us(t.elapsed()) / 2.0);
    }
    drop(atx);
    let _ = echo.join();
    out
}
