//! Shared helpers for the integration tests: temporary directories,
//! extension folders built around the fixtures, and host configs with
//! short timeouts.
#![allow(dead_code)]

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use zot_host::discovery::Sources;
use zot_host::home::Home;
use zot_host::host::{Config, Timeouts};

/// A directory removed when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!(
            "zot-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("create temp dir");
        TempDir(std::fs::canonicalize(&p).expect("canonicalize temp dir"))
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

mod skip;

/// Says that the calling test skips, and why (tests/common/skip.rs): it
/// is then counted skipped by `make test`. Call it once, then return.
pub fn skip(why: &str) {
    skip::skip(why)
}

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

/// Writes `<parent>/<dir>/extension.json` running the Python fixture with
/// `--name <name>` and `flags`. Returns the directory.
pub fn py_ext(parent: &Path, dir: &str, name: &str, flags: &[&str]) -> PathBuf {
    let mut args = vec![fixture("ext.py").display().to_string(), "--name".into(), name.into()];
    args.extend(flags.iter().map(|s| s.to_string()));
    write_manifest(parent, dir, json!({"name": name, "version": "1.0.0", "exec": "python3", "args": args}))
}

/// An extension under `<t>/exts/<name>` running tests/fixtures/calls.py
/// with `cfg` (its `name` and `log` filled in: what reaches it is noted in
/// `<t>/<name>.seen`), with `restart` in its manifest when given.
pub fn calls_ext(t: &TempDir, name: &str, mut cfg: Value, restart: Option<&str>) -> PathBuf {
    cfg["name"] = json!(name);
    cfg["log"] = json!(t.path().join(format!("{name}.seen")).display().to_string());
    let mut m = json!({"name": name, "version": "1.0.0", "exec": "python3",
        "args": [fixture("calls.py").display().to_string(), cfg.to_string()]});
    if let Some(r) = restart {
        m["restart"] = json!(r);
    }
    write_manifest(&t.path().join("exts"), name, m)
}

/// Writes a manifest into `<parent>/<dir>/`.
pub fn write_manifest(parent: &Path, dir: &str, manifest: Value) -> PathBuf {
    let d = parent.join(dir);
    std::fs::create_dir_all(&d).expect("create ext dir");
    std::fs::write(d.join("extension.json"), serde_json::to_vec_pretty(&manifest).expect("json"))
        .expect("write manifest");
    d
}

/// Short timeouts so the suite stays fast.
pub fn fast_timeouts() -> Timeouts {
    Timeouts {
        hello: Duration::from_secs(3),
        ready_idle: Duration::from_millis(250),
        ready_grace: Duration::from_secs(3),
        command: Duration::from_secs(5),
        tool: Duration::from_secs(5),
        intercept: Duration::from_secs(2),
        shutdown_grace: Duration::from_millis(500),
        term_grace: Duration::from_millis(300),
    }
}

/// A config with its own home and project dir, loading only `ext_paths`.
pub fn config(home: &Path, ext_paths: Vec<PathBuf>) -> Config {
    let mut c = Config::new(Home::at(home.join("home")), home.to_path_buf());
    c.sources = Sources { ext_paths, no_ext: true };
    c.timeouts = fast_timeouts();
    c
}

/// Polls `f` until it returns true or `limit` passes.
pub fn wait_until(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    f()
}

/// True while a process with this pid exists (and is not a zombie).
pub fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !s.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'),
        Err(_) => false,
    }
}

/// Pids of every live process in process group `pgid`.
pub fn group_members(pgid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir("/proc") else { return out };
    for e in rd.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { continue };
        let rest = stat.rsplit(')').next().unwrap_or("");
        let fields: Vec<&str> = rest.split_whitespace().collect();
        // state ppid pgrp ...
        if fields.len() > 2 && fields[0] != "Z" && fields[2].parse::<u32>().ok() == Some(pgid) {
            out.push(pid);
        }
    }
    out
}

/// The text of the first content block of a tool reply.
pub fn text_of(content: &[Value]) -> String {
    content.first().and_then(|b| b["text"].as_str()).unwrap_or("").to_string()
}

/// Reads an extension's log under `home`.
pub fn read_log(home: &Path, name: &str) -> String {
    // Host lines are written by the logger thread of this process.
    zot_host::host::flush_logs();
    std::fs::read_to_string(home.join("home/logs").join(format!("ext-{name}.log"))).unwrap_or_default()
}

// ----- host test helpers (host_*.rs) -----------------------------------------

/// Starts a host, panicking if it cannot start.
pub fn start_host(cfg: Config) -> (zot_host::host::Host, crossbeam_channel::Receiver<zot_host::host::HostEvent>) {
    zot_host::host::Host::start(cfg).expect("host starts")
}

/// Receives host events until one matches `pred` or `limit` passes.
pub fn wait_event(
    rx: &crossbeam_channel::Receiver<zot_host::host::HostEvent>,
    limit: Duration,
    mut pred: impl FnMut(&zot_host::host::HostEvent) -> bool,
) -> Option<zot_host::host::HostEvent> {
    let end = Instant::now() + limit;
    loop {
        match rx.recv_deadline(end) {
            Ok(e) if pred(&e) => return Some(e),
            Ok(_) => continue,
            Err(_) => return None,
        }
    }
}

/// The listing entry of extension `name`.
pub fn ext_info(host: &zot_host::host::Host, name: &str) -> zot_host::host::ExtInfo {
    let l = host.list().expect("list");
    l.extensions
        .into_iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("extension {name:?} not in the listing"))
}

/// Polls the log of `name` under `home` until it contains `needle`.
pub fn log_contains(home: &Path, name: &str, needle: &str, limit: Duration) -> bool {
    wait_until(limit, || read_log(home, name).contains(needle))
}

/// The process group of `pid`, from /proc.
pub fn pgid_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit(')').next()?;
    rest.split_whitespace().nth(2)?.parse().ok()
}

/// Writes a manifest running a POSIX sh fixture (`sh <fixture> args...`).
pub fn sh_ext(parent: &Path, dir: &str, name: &str, script: &str, args: &[&str]) -> PathBuf {
    let mut argv = vec![fixture(script).display().to_string()];
    argv.extend(args.iter().map(|s| s.to_string()));
    write_manifest(parent, dir, json!({"name": name, "exec": "sh", "args": argv}))
}

/// The JSON object a fixture's echoing tool answered with.
pub fn echo_of(content: &[Value]) -> Value {
    serde_json::from_str(&text_of(content)).unwrap_or(Value::Null)
}

/// Like [`config`], with generous hello, ready and call timeouts: they cost
/// nothing when all goes well (the host moves on as soon as it can) and keep
/// tests that are not about them steady on a loaded machine, where a Python
/// start alone has taken over 4 s. Shutdown and intercept timeouts stay
/// short.
pub fn host_config(home: &Path, ext_paths: Vec<PathBuf>) -> Config {
    let mut c = config(home, ext_paths);
    c.timeouts.hello = Duration::from_secs(60);
    c.timeouts.ready_grace = Duration::from_secs(60);
    c.timeouts.command = Duration::from_secs(15);
    c.timeouts.tool = Duration::from_secs(15);
    c
}

// ----- process resources (soak.rs, lifetime.rs) ------------------------------

/// Threads of this process (`Threads:` in /proc/self/status).
pub fn thread_count() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|n| n.trim().parse().ok())
        .expect("Threads: in /proc/self/status")
}

/// Open file descriptors of this process (entries of /proc/self/fd, less
/// the one the listing itself holds).
pub fn open_fd_count() -> usize {
    let n = std::fs::read_dir("/proc/self/fd").expect("read /proc/self/fd").count();
    n.saturating_sub(1)
}

/// State letter and parent pid of `pid`, from /proc (None once it is gone).
pub fn proc_state(pid: u32) -> Option<(char, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit(')').next()?;
    let mut f = rest.split_whitespace();
    let state = f.next()?.chars().next()?;
    let ppid = f.next()?.parse().ok()?;
    Some((state, ppid))
}

/// Zombie processes whose parent is `pid`.
pub fn zombie_children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir("/proc") else { return out };
    for e in rd.flatten() {
        let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        if proc_state(p) == Some(('Z', pid)) {
            out.push(p);
        }
    }
    out
}

/// Start time of `pid` (clock ticks since boot, /proc/<pid>/stat field 22):
/// with the pid, it names one process even when pids are reused.
pub fn proc_start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit(')').next()?.split_whitespace().nth(19)?.parse().ok()
}

/// What a finished `zot` process left: its exit code and its output.
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    /// The exit code (-1 for a signal) and the output, as text.
    pub fn of(out: std::process::Output) -> Out {
        Out {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// Runs the `zot` binary `bin` with `args` in `cwd`, stdin closed, with no
/// `XDG_STATE_HOME`, `ZOT_HOME` set to `home` (or removed when `None`), and
/// the extra `env`, and waits for it.
pub fn run_zot(bin: &str, cwd: &Path, home: Option<&Path>, args: &[&str], env: &[(&str, &str)]) -> Out {
    let mut c = std::process::Command::new(bin);
    c.args(args).current_dir(cwd).env_remove("XDG_STATE_HOME").stdin(std::process::Stdio::null());
    match home {
        Some(h) => c.env("ZOT_HOME", h),
        None => c.env_remove("ZOT_HOME").env_remove("LOCALAPPDATA"),
    };
    for (k, v) in env {
        c.env(k, v);
    }
    Out::of(c.output().expect("run zot"))
}

/// Writes an executable file (mode `0755`) at `p`.
pub fn write_exec(p: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(p, text).expect("write");
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

// ----- confinement (confine.rs, confine_cli.rs, confine_base.rs) -------------

/// True when this kernel has Landlock (its ABI version query answers).
pub fn landlock() -> bool {
    // SAFETY: the version query reads no memory.
    unsafe { libc::syscall(444, std::ptr::null::<u8>(), 0usize, 1u32) >= 1 }
}

/// Skips the calling test (and says so) where the kernel has no Landlock.
#[macro_export]
macro_rules! need_landlock {
    () => {
        if !$crate::common::landlock() {
            $crate::common::skip("this kernel has no Landlock");
            return;
        }
    };
}

/// A probe extension (tests/fixtures/probe.py) named `name` in
/// `<parent>/<name>`, with `confine` when given.
pub fn probe_ext(parent: &Path, name: &str, confine: Option<Value>) -> PathBuf {
    let mut m = json!({"name": name, "exec": "python3", "args": [fixture("probe.py").display().to_string(), name]});
    if let Some(c) = confine {
        m["confine"] = c;
    }
    write_manifest(parent, name, m)
}

/// `<id>` of docs/protocol.md §2.2 for `dir`, computed apart from zot.
pub fn project_id(dir: &Path) -> String {
    let canonical = dir.canonicalize().expect("canonical");
    let out = std::process::Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().expect("stdin").write_all(canonical.as_os_str().as_encoded_bytes())?;
            c.wait_with_output()
        })
        .expect("sha256sum");
    String::from_utf8_lossy(&out.stdout)[..16].to_string()
}
