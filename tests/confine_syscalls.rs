//! The seccomp filter and the session of a confined process
//! (docs/protocol.md §9.2, §9.3, §3 rule 1) with real processes: the probe
//! extension (tests/fixtures/probe.py) makes each refused system call and
//! reports the kernel's answer; each refusal has its control, the same
//! call succeeding unconfined or where the rule that allows it is declared.

mod common;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use common::{probe_ext, start_host, TempDir};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;
use zot_host::host::{ConfineMode, Host, Request, Response};

/// Runs `op` with `arg` in extension `name`: `ok ...`, `errno N` or `error ...`.
fn run(host: &Host, name: &str, op: &str, arg: impl Into<Value>) -> String {
    let req = Request::Tool { name: format!("{name}_probe"), args: Some(json!({"op": op, "arg": arg.into()})), tool_id: None };
    match host.call(req) {
        Ok(Response::Tool(r)) => common::text_of(&r.content),
        other => panic!("{name} {op}: {other:?}; {:?}", common::ext_info(host, name)),
    }
}

/// A host for `exts` with its project at `project`.
fn host(t: &TempDir, project: &Path, exts: Vec<PathBuf>) -> Host {
    let mut cfg = common::host_config(t.path(), exts);
    cfg.cwd = project.to_path_buf();
    cfg.confine = ConfineMode::Declared;
    let (host, _rx) = start_host(cfg);
    host.call(Request::WaitReady).expect("ready");
    host
}

fn syscall(nr: libc::c_long, args: [libc::c_long; 5]) -> libc::c_long {
    // SAFETY: the calls made here read only the buffers passed to them.
    unsafe { libc::syscall(nr, args[0], args[1], args[2], args[3], args[4]) }
}

#[test]
fn the_keyring_of_the_user_is_out_of_reach() {
    need_landlock!();
    let t = TempDir::new("confine-keyring");
    // A key the user keeps in their keyring (KEY_SPEC_USER_KEYRING), as
    // `keyctl add user NAME DATA @u` puts it there.
    let desc = std::ffi::CString::new(format!("zot-test-{}", std::process::id())).unwrap();
    let payload = b"the user's token";
    let key = syscall(libc::SYS_add_key, [c"user".as_ptr() as _, desc.as_ptr() as _, payload.as_ptr() as _, payload.len() as _, -4]);
    if key < 0 {
        common::skip(&format!("this kernel keeps no keyring for the user: {}", std::io::Error::last_os_error()));
        return;
    }
    let exts = vec![probe_ext(t.path(), "open", None), probe_ext(t.path(), "jailed", Some(json!({})))];
    let h = host(&t, t.path(), exts);
    let read = (run(&h, "open", "read_key", key), run(&h, "jailed", "read_key", key));
    let add = (run(&h, "open", "add_key", "probe"), run(&h, "jailed", "add_key", "probe"));
    syscall(libc::SYS_keyctl, [libc::KEYCTL_REVOKE as _, key, 0, 0, 0]);
    assert_eq!(read, ("ok the user's token".into(), "errno 1".into()));
    assert!(add.0.starts_with("ok ") && add.1 == "errno 1", "{add:?}");
}

/// System V shared memory and queues are shared by id with every process
/// of the user, out of reach of any path rule: a segment the user's other
/// program keeps a secret in is read by the unconfined control and
/// refused to the confined one, which cannot make a queue either.
#[test]
fn system_v_shared_memory_and_queues_are_out_of_reach() {
    need_landlock!();
    let t = TempDir::new("confine-sysv");
    // SAFETY: a private segment of 4 KiB, attached, written, detached.
    let id = unsafe { libc::shmget(libc::IPC_PRIVATE, 4096, libc::IPC_CREAT | 0o600) };
    if id < 0 {
        common::skip(&format!("no System V shared memory here: {}", std::io::Error::last_os_error()));
        return;
    }
    unsafe {
        let at = libc::shmat(id, std::ptr::null(), 0);
        assert_ne!(at as isize, -1, "shmat: {}", std::io::Error::last_os_error());
        std::ptr::copy_nonoverlapping(b"secret".as_ptr(), at.cast::<u8>(), 6);
        libc::shmdt(at);
    }
    let exts = vec![probe_ext(t.path(), "open", None), probe_ext(t.path(), "jailed", Some(json!({})))];
    let h = host(&t, t.path(), exts);
    let shm = (run(&h, "open", "shm_read", id), run(&h, "jailed", "shm_read", id));
    let queue = (run(&h, "open", "msg_queue", ""), run(&h, "jailed", "msg_queue", ""));
    // SAFETY: removes the segment made above.
    unsafe { libc::shmctl(id, libc::IPC_RMID, std::ptr::null_mut()) };
    assert_eq!(shm, ("ok secret".into(), "errno 1".into()));
    assert_eq!(queue, ("ok queue".into(), "errno 1".into()));
}

#[test]
fn extended_attributes_cannot_be_set_or_removed() {
    need_landlock!();
    let t = TempDir::new("confine-xattr");
    let project = t.path().join("project");
    std::fs::create_dir_all(&project).expect("mkdir");
    let file = project.join("notes.txt");
    std::fs::write(&file, "n").expect("write");
    let f = file.display().to_string();
    // Writable to it: Landlock has no say on attributes, the filter has.
    let exts = vec![probe_ext(t.path(), "open", None), probe_ext(t.path(), "jailed", Some(json!({"write": ["${PROJECT}"]})))];
    let h = host(&t, &project, exts);
    let control = run(&h, "open", "setxattr", f.as_str());
    if control == "errno 95" {
        common::skip("this file system keeps no user extended attributes");
        return;
    }
    assert_eq!(control, "ok None");
    assert_eq!(run(&h, "jailed", "setxattr", f.as_str()), "errno 1");
    assert_eq!(run(&h, "jailed", "removexattr", f.as_str()), "errno 1");
    assert_eq!(run(&h, "open", "removexattr", f.as_str()), "ok None");
    // What it may write, it still writes.
    assert!(run(&h, "jailed", "write", f.as_str()).starts_with("ok"));
}

/// No set-ID program: what it may write it may chmod, but not to 4755, and
/// a file it makes cannot be born set-ID either (on a root host that would
/// be a root shell for every local user).
#[test]
fn no_set_user_id_program_is_made() {
    need_landlock!();
    let t = TempDir::new("confine-setid");
    let project = t.path().join("project");
    std::fs::create_dir_all(&project).expect("mkdir");
    let (mine, theirs) = (project.join("mine"), project.join("theirs"));
    std::fs::write(&mine, "#!/bin/sh\n").expect("write");
    std::fs::write(&theirs, "#!/bin/sh\n").expect("write");
    let p = |f: &Path| f.display().to_string();
    let exts = vec![probe_ext(t.path(), "open", None), probe_ext(t.path(), "jailed", Some(json!({"write": ["${PROJECT}"]})))];
    let h = host(&t, &project, exts);
    assert_eq!(run(&h, "jailed", "chmod_setuid", p(&mine)), "errno 1");
    assert_eq!(run(&h, "jailed", "create_setuid", p(&project.join("born"))), "errno 1");
    assert!(!project.join("born").exists());
    // The control: unconfined, both are made.
    assert_eq!(run(&h, "open", "chmod_setuid", p(&theirs)), "ok 0o4755");
    assert_eq!(run(&h, "open", "create_setuid", p(&project.join("born2"))), "ok 0o4755");
    // A plain mode it still sets, on what it may write.
    assert!(run(&h, "jailed", "write", p(&mine)).starts_with("ok"));
}

#[test]
fn a_folder_is_watched_only_with_watch() {
    need_landlock!();
    let t = TempDir::new("confine-watch");
    // A folder granted to none of them: a watch would tell the names created there.
    let secret = t.path().join("secret");
    std::fs::create_dir_all(&secret).expect("mkdir");
    std::fs::write(secret.join("x"), "x").expect("write");
    let s = secret.display().to_string();
    let exts = vec![
        probe_ext(t.path(), "open", None),
        probe_ext(t.path(), "jailed", Some(json!({}))),
        probe_ext(t.path(), "watcher", Some(json!({"watch": true}))),
    ];
    let h = host(&t, t.path(), exts);
    assert!(run(&h, "open", "watch", s.as_str()).starts_with("ok "));
    assert_eq!(run(&h, "jailed", "watch", s.as_str()), "errno 1");
    assert!(run(&h, "watcher", "watch", s.as_str()).starts_with("ok "), "watch: true");
    assert_eq!(run(&h, "watcher", "read", secret.join("x").display().to_string()), "errno 13", "watching is not reading");
}

#[test]
fn a_folder_it_may_read_is_not_watched_through_dnotify_without_watch() {
    need_landlock!();
    let t = TempDir::new("confine-dnotify");
    let shared = t.path().join("shared");
    std::fs::create_dir_all(&shared).expect("mkdir");
    let s = shared.display().to_string();
    let exts = vec![
        probe_ext(t.path(), "open", None),
        probe_ext(t.path(), "jailed", Some(json!({"read": [s.clone()]}))),
        probe_ext(t.path(), "watcher", Some(json!({"read": [s.clone()], "watch": true}))),
    ];
    let h = host(&t, t.path(), exts);
    assert!(run(&h, "open", "dnotify", s.as_str()).starts_with("ok "));
    assert_eq!(run(&h, "jailed", "dnotify", s.as_str()), "errno 1", "fcntl(F_NOTIFY) without watch");
    assert!(run(&h, "watcher", "dnotify", s.as_str()).starts_with("ok "), "watch: true");
}

#[test]
fn listen_without_a_bind_port_is_refused_under_ports() {
    need_landlock!();
    let t = TempDir::new("confine-listen");
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
        l.local_addr().expect("addr").port()
    };
    let exts = vec![
        probe_ext(t.path(), "open", None),
        probe_ext(t.path(), "client", Some(json!({"net": {"connect": [443]}}))),
        probe_ext(t.path(), "server", Some(json!({"net": {"connect": [443], "bind": [port]}}))),
    ];
    let h = host(&t, t.path(), exts);
    assert!(run(&h, "open", "listen", "").starts_with("ok "));
    // listen() on an unbound socket binds it to a port Landlock never sees.
    assert_eq!(run(&h, "client", "listen", ""), "errno 13");
    assert_eq!(run(&h, "client", "listen", port), "errno 13");
    assert_eq!(run(&h, "server", "listen", port), format!("ok {port}"));
}

#[test]
fn a_datagram_socketpair_cannot_reach_a_socket_file_without_unix() {
    need_landlock!();
    let t = TempDir::new("confine-dgram");
    let path = t.path().join("service.sock");
    let service = std::os::unix::net::UnixDatagram::bind(&path).expect("bind");
    service.set_read_timeout(Some(zot_proc::LINE_WAIT)).expect("timeout");
    let p = path.display().to_string();
    let exts = vec![probe_ext(t.path(), "open", None), probe_ext(t.path(), "jailed", Some(json!({})))];
    let h = host(&t, t.path(), exts);
    assert_eq!(run(&h, "open", "dgram_sendto", p.as_str()), "ok 13");
    let mut buf = [0u8; 64];
    let n = service.recv(&mut buf).expect("the control's datagram");
    assert_eq!(&buf[..n], b"from the pair");
    assert_eq!(run(&h, "jailed", "dgram_sendto", p.as_str()), "errno 13");
    // A stream pair, a runtime's own pipe, still works.
    assert_eq!(run(&h, "jailed", "socketpair", ""), "ok pair");
    service.set_nonblocking(true).expect("nonblocking");
    assert!(service.recv(&mut buf).is_err(), "a datagram from the confined one arrived");
}

#[test]
fn another_process_limits_and_group_are_out_of_reach() {
    need_landlock!();
    let t = TempDir::new("confine-prlimit");
    let exts = vec![probe_ext(t.path(), "open", None), probe_ext(t.path(), "jailed", Some(json!({})))];
    let h = host(&t, t.path(), exts);
    let me = std::process::id();
    assert!(run(&h, "open", "prlimit", me).starts_with("ok "));
    assert_eq!(run(&h, "jailed", "prlimit", me), "errno 1");
    assert!(run(&h, "jailed", "prlimit", 0).starts_with("ok "), "its own limits");
    // A grandchild joining the host's process group (to outlive it, as the
    // host's own command's) is refused: it is in another session.
    // SAFETY: reads our own process group.
    let group = unsafe { libc::getpgrp() };
    assert_eq!(run(&h, "open", "join_group", group), "ok ok");
    assert_eq!(run(&h, "jailed", "join_group", group), "errno 1");
}

#[test]
fn user_namespaces_only_with_namespaces() {
    need_landlock!();
    let t = TempDir::new("confine-userns");
    let exts = vec![
        probe_ext(t.path(), "open", None),
        probe_ext(t.path(), "jailed", Some(json!({}))),
        probe_ext(t.path(), "sandboxer", Some(json!({"namespaces": true}))),
    ];
    let h = host(&t, t.path(), exts);
    let control = run(&h, "open", "userns", "");
    if control != "ok child" {
        common::skip(&format!("this kernel gives this user no user namespace: {control}"));
        return;
    }
    assert_eq!(run(&h, "jailed", "userns", ""), "errno 1");
    assert_eq!(run(&h, "sandboxer", "userns", ""), "ok child");
}

#[test]
fn threads_and_subprocesses_work_confined() {
    need_landlock!();
    let t = TempDir::new("confine-threads");
    // glibc starts threads and processes with clone3, answered ENOSYS: it falls back to clone.
    let exts = vec![probe_ext(t.path(), "jailed", Some(json!({}))), probe_ext(t.path(), "sandboxer", Some(json!({"namespaces": true})))];
    let h = host(&t, t.path(), exts);
    assert_eq!(run(&h, "jailed", "threads", ""), "ok thread child");
    assert_eq!(run(&h, "sandboxer", "threads", ""), "ok thread child");
}

/// `(session, process group, controlling terminal)` of `pid`.
fn session_of(pid: u32) -> (u32, u32, u32) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let f: Vec<u32> = stat.rsplit(')').next().unwrap_or("").split_whitespace().skip(2).take(4).map(|v| v.parse().unwrap_or(u32::MAX)).collect();
    (f[1], f[0], f[2])
}

#[test]
fn a_confined_process_leads_its_own_session_and_its_descendants_end_with_it() {
    need_landlock!();
    let t = TempDir::new("confine-session");
    let exts = vec![probe_ext(t.path(), "open", None), probe_ext(t.path(), "jailed", Some(json!({})))];
    let h = host(&t, t.path(), exts);
    let (open, jailed) = (common::ext_info(&h, "open").pid.expect("pid"), common::ext_info(&h, "jailed").pid.expect("pid"));
    // SAFETY: reads our own session.
    let ours = unsafe { libc::getsid(0) } as u32;
    assert_eq!(session_of(jailed), (jailed, jailed, 0), "its own session and group, no terminal");
    assert_eq!(session_of(open).0, ours, "an unconfined one stays in the host's session");
    assert_eq!(session_of(open).1, open);
    let pid = |r: String| -> u32 { r.strip_prefix("ok ").and_then(|p| p.parse().ok()).unwrap_or_else(|| panic!("{r}")) };
    let sleeper = pid(run(&h, "jailed", "sleeper", ""));
    let daemon = pid(run(&h, "jailed", "daemon", ""));
    assert_eq!(session_of(sleeper).0, jailed);
    assert_ne!(session_of(daemon).0, jailed, "the daemon left its session");
    h.shutdown();
    let gone = common::wait_until(Duration::from_secs(30), || ![jailed, sleeper, daemon].iter().any(|&p| common::process_alive(p)));
    assert!(gone, "still running: {:?}", [jailed, sleeper, daemon].map(|p| (p, common::process_alive(p))));
}

#[test]
fn a_confined_extension_that_crashes_restarts_in_a_new_session_and_its_descendants_end() {
    need_landlock!();
    let t = TempDir::new("confine-restart");
    let dir = probe_ext(t.path(), "jailed", Some(json!({})));
    let mut m: Value = serde_json::from_slice(&std::fs::read(dir.join("extension.json")).expect("manifest")).expect("json");
    m["restart"] = json!("on-failure");
    std::fs::write(dir.join("extension.json"), m.to_string()).expect("write");
    let h = host(&t, t.path(), vec![dir]);
    let first = common::ext_info(&h, "jailed").pid.expect("pid");
    let pid = |r: String| -> u32 { r.strip_prefix("ok ").and_then(|p| p.parse().ok()).unwrap_or_else(|| panic!("{r}")) };
    let (sleeper, daemon) = (pid(run(&h, "jailed", "sleeper", "")), pid(run(&h, "jailed", "daemon", "")));
    // SAFETY: signals the extension's own process, alive (its child is).
    unsafe { libc::kill(first as i32, libc::SIGKILL) };
    let back = common::wait_until(Duration::from_secs(30), || {
        let i = common::ext_info(&h, "jailed");
        i.state == zot_host::host::State::Ready && i.pid.is_some_and(|p| p != first)
    });
    assert!(back, "not restarted: {:?}", common::ext_info(&h, "jailed"));
    let gone = common::wait_until(Duration::from_secs(30), || ![sleeper, daemon].iter().any(|&p| common::process_alive(p)));
    assert!(gone, "the first start's descendants outlived it: {:?}", [sleeper, daemon].map(|p| (p, common::process_alive(p))));
    let second = common::ext_info(&h, "jailed").pid.expect("pid");
    assert_eq!(session_of(second), (second, second, 0));
    assert_eq!(run(&h, "jailed", "status", ""), "ok NoNewPrivs:\t1");
    h.shutdown();
}

/// `zot serve` with `exts`, run by `cmd` (the `zot` binary, or `setpriv`
/// running it), its probe tools called one at a time; on a terminal, a
/// session leader whose controlling terminal is a fresh pty (as a shell
/// starts it), whose master side the test holds.
struct Serve {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: std::io::BufReader<std::process::ChildStdout>,
    master: Option<std::fs::File>,
    next: u64,
}

impl Serve {
    fn start(mut cmd: std::process::Command, home: &Path, exts: &[&PathBuf], on_terminal: bool) -> Serve {
        use std::os::fd::{FromRawFd, OwnedFd};
        use std::os::unix::process::CommandExt;
        use std::process::Stdio;
        let mut args = zot_proc::strings(&["serve", "--cwd"]);
        args.push(home.display().to_string());
        args.extend(zot_proc::strings(&zot_proc::FAST));
        args.extend(zot_proc::strings(&["--tool-timeout", "60", "--no-ext"]));
        for e in exts {
            args.extend(["--ext".to_string(), e.display().to_string()]);
        }
        let (mut master, mut slave) = (None, None);
        if on_terminal {
            let (mut m, mut s) = (0, 0);
            // SAFETY: openpty fills two descriptors.
            let r = unsafe { libc::openpty(&mut m, &mut s, std::ptr::null_mut(), std::ptr::null(), std::ptr::null()) };
            assert_eq!(r, 0, "openpty: {}", std::io::Error::last_os_error());
            // SAFETY: fresh descriptors, owned from here on; the master
            // stays ours alone.
            unsafe {
                libc::fcntl(m, libc::F_SETFD, libc::FD_CLOEXEC);
                (master, slave) = (Some(std::fs::File::from_raw_fd(m)), Some(OwnedFd::from_raw_fd(s)));
            }
            let tty = s;
            // SAFETY: setsid and ioctl are async-signal-safe.
            unsafe {
                cmd.pre_exec(move || {
                    if libc::setsid() < 0 || libc::ioctl(tty, libc::TIOCSCTTY, 0) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let mut child = cmd
            .args(&args)
            .env("HOME", home)
            .env("ZOT_HOME", home.join("zot-home"))
            .current_dir(home)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn zot");
        // Only zot (and what it starts) holds the terminal now.
        drop(slave);
        let stdin = child.stdin.take().expect("stdin");
        let stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
        Serve { child, stdin, stdout, master, next: 0 }
    }

    /// The text of `{name}_probe`'s answer to `op` with `arg`.
    fn probe(&mut self, name: &str, op: &str, arg: impl Into<Value>) -> String {
        use std::io::{BufRead, Write};
        self.next += 1;
        let req = json!({"id": self.next, "type": "tool", "name": format!("{name}_probe"), "args": {"op": op, "arg": arg.into()}});
        writeln!(self.stdin, "{req}").expect("write");
        let mut line = String::new();
        loop {
            line.clear();
            assert!(self.stdout.read_line(&mut line).expect("read") > 0, "zot serve ended before answering {op}");
            let f: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            if f["type"] == "response" && f["id"] == self.next {
                return f["result"]["content"][0]["text"].as_str().unwrap_or_default().to_string();
            }
        }
    }

    /// Types `text` on the terminal, as the user would.
    fn type_in(&mut self, text: &str) {
        use std::io::Write;
        self.master.as_mut().expect("on a terminal").write_all(text.as_bytes()).expect("type");
    }

    fn finish(self) {
        let Serve { mut child, stdin, master, .. } = self;
        drop(stdin);
        let _ = child.wait();
        drop(master);
    }
}

#[test]
fn a_confined_extension_has_no_terminal_to_take_or_read() {
    need_landlock!();
    let t = TempDir::new("confine-tty");
    let (open, jailed) = (probe_ext(t.path(), "open", None), probe_ext(t.path(), "jailed", Some(json!({}))));
    let mut z = Serve::start(std::process::Command::new(zot_proc::BIN), t.path(), &[&open, &jailed], true);
    // What the user types next, meant for their shell.
    z.type_in("my password\n");
    assert_eq!(z.probe("jailed", "tty", ""), "errno 6", "/dev/tty answers ENXIO");
    assert_eq!(z.probe("jailed", "take_tty", ""), "errno 6");
    // The control, in the host's session: it opens the terminal, takes
    // its foreground (TIOCSPGRP) and reads what the user typed.
    assert_eq!(z.probe("open", "tty", ""), "ok None");
    assert_eq!(z.probe("open", "take_tty", ""), "ok my password");
    z.finish();
}

#[test]
fn as_an_ordinary_user_it_creates_no_user_namespace_and_sets_no_limit_of_the_host() {
    need_landlock!();
    if !Path::new("/usr/bin/setpriv").exists() {
        common::skip("setpriv (util-linux) is not installed: no way to run zot as another user");
        return;
    }
    // SAFETY: reads our own ids.
    let root = unsafe { libc::geteuid() } == 0;
    let t = TempDir::new("confine-user");
    let home = t.path().join("u");
    std::fs::create_dir_all(&home).expect("mkdir");
    let exts = [
        probe_ext(t.path(), "open", None),
        probe_ext(t.path(), "jailed", Some(json!({}))),
        probe_ext(t.path(), "sandboxer", Some(json!({"namespaces": true}))),
    ];
    let cmd = if root {
        // Its home, and so its $ZOT_HOME, is its own.
        std::os::unix::fs::chown(&home, Some(65534), Some(65534)).expect("chown");
        let mut c = std::process::Command::new("/usr/bin/setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", zot_proc::BIN]);
        c
    } else {
        std::process::Command::new(zot_proc::BIN)
    };
    let mut z = Serve::start(cmd, &home, &exts.iter().collect::<Vec<_>>(), false);
    let uid = z.probe("open", "status", "Uid");
    assert!(!uid.starts_with("ok Uid:\t0\t"), "the extension runs as root: {uid}");
    let host = z.child.id();
    assert!(z.probe("open", "prlimit", host).starts_with("ok "));
    assert_eq!(z.probe("jailed", "prlimit", host), "errno 1");
    let control = z.probe("open", "userns", "");
    if control == "ok child" {
        assert_eq!(z.probe("jailed", "userns", ""), "errno 1");
        assert_eq!(z.probe("sandboxer", "userns", ""), "ok child");
    } else {
        common::skip(&format!("this kernel gives an ordinary user no user namespace: {control}"));
    }
    z.finish();
}
