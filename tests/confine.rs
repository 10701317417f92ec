//! Confinement (docs/protocol.md §9) with real processes: a probe extension
//! (tests/fixtures/probe.py) tries what a confined process must not do and
//! reports the kernel's answer; each refusal has its control, the same
//! probe from an unconfined extension succeeding.

mod common;

use common::{host_config, probe_ext, start_host, write_manifest, TempDir};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use zot_host::host::{ConfineMode, Host, Request, Response};

/// Runs `op` with `arg` in extension `name`: `ok ...`, `errno N` or `error ...`.
fn run(host: &Host, name: &str, op: &str, arg: impl Into<Value>) -> String {
    let req = Request::Tool { name: format!("{name}_probe"), args: Some(json!({"op": op, "arg": arg.into()})), tool_id: None };
    match host.call(req) {
        Ok(Response::Tool(r)) => common::text_of(&r.content),
        other => panic!("{name} {op}: {other:?}; {:?}", common::ext_info(host, name)),
    }
}

/// A host for `exts` with its project at `project`, `HOME` as the host has it.
fn host(t: &TempDir, project: &Path, exts: Vec<PathBuf>, mode: ConfineMode) -> Host {
    let mut cfg = host_config(t.path(), exts);
    cfg.cwd = project.to_path_buf();
    cfg.confine = mode;
    let (host, _rx) = start_host(cfg);
    host.call(Request::WaitReady).expect("ready");
    host
}

#[test]
fn reads_outside_the_grants_are_refused_and_declared_reads_work() {
    need_landlock!();
    let t = TempDir::new("confine-read");
    let home = std::env::var("HOME").expect("HOME");
    let secret = PathBuf::from(&home).join(format!(".zot-confine-test-{}", std::process::id()));
    std::fs::write(&secret, "secret").expect("plant");
    let project = t.path().join("project");
    std::fs::create_dir_all(&project).expect("mkdir");
    std::fs::write(project.join("notes.txt"), "notes").expect("write");
    let exts = vec![
        probe_ext(t.path(), "open", None),
        probe_ext(t.path(), "reader", Some(json!({"read": ["${PROJECT}"]}))),
        probe_ext(t.path(), "blind", Some(json!({}))),
    ];
    let h = host(&t, &project, exts, ConfineMode::Declared);
    let (s, notes) = (secret.display().to_string(), project.join("notes.txt").display().to_string());
    assert!(run(&h, "open", "read", s.as_str()).starts_with("ok"));
    assert_eq!(run(&h, "reader", "read", s.as_str()), "errno 13");
    assert!(run(&h, "reader", "read", notes.as_str()).starts_with("ok"));
    assert_eq!(run(&h, "blind", "read", notes.as_str()), "errno 13");
    assert!(run(&h, "open", "read", notes.as_str()).starts_with("ok"));
    let _ = std::fs::remove_file(&secret);
}

#[test]
fn writes_outside_the_grants_are_refused_and_data_and_tmp_are_writable() {
    need_landlock!();
    let t = TempDir::new("confine-write");
    let project = t.path().join("project");
    std::fs::create_dir_all(project.join("out")).expect("mkdir");
    let w = probe_ext(t.path(), "w", Some(json!({"read": ["${PROJECT}"], "write": ["${PROJECT}/out"]})));
    // The placeholders expand in its args too.
    let mut m: Value = serde_json::from_slice(&std::fs::read(w.join("extension.json")).expect("manifest")).expect("json");
    m["args"].as_array_mut().expect("args").push(json!("${DATA}/state"));
    std::fs::write(w.join("extension.json"), m.to_string()).expect("write");
    let exts = vec![probe_ext(t.path(), "open", None), w];
    let h = host(&t, &project, exts, ConfineMode::Declared);
    let outside = project.join("x.txt").display().to_string();
    assert!(run(&h, "open", "write", outside.as_str()).starts_with("ok"));
    std::fs::remove_file(&outside).expect("the control wrote it");
    assert_eq!(run(&h, "w", "write", outside.as_str()), "errno 13");
    assert!(!Path::new(&outside).exists());
    assert!(run(&h, "w", "write", project.join("out/y.txt").display().to_string()).starts_with("ok"));
    // Its data folder, $ZOT_HOME/data/<name>/, 0700 and named by hello_ack.
    let data = t.path().join("home/data/w");
    assert_eq!(run(&h, "w", "data_dir", ""), format!("ok {}", data.display()));
    assert!(run(&h, "w", "data", "state.json").starts_with("ok"));
    assert_eq!(run(&h, "w", "argv", 2), format!("ok {}/state", data.display()));
    assert!(data.join("state.json").is_file());
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&data).expect("data").permissions().mode() & 0o777, 0o700);
    // ${TMP}: $ZOT_HOME/tmp/<name>.<instance>/, <instance> the value of its
    // ZOT_EXT_INSTANCE, named by TMPDIR, gone at stop.
    let tmp = run(&h, "w", "env", "TMPDIR");
    let tmp = PathBuf::from(tmp.strip_prefix("ok ").expect("TMPDIR"));
    let instance = run(&h, "w", "env", "ZOT_EXT_INSTANCE");
    let instance = instance.strip_prefix("ok ").expect("ZOT_EXT_INSTANCE");
    assert_eq!(tmp, t.path().join("home/tmp").join(format!("w.{instance}")));
    assert!(run(&h, "w", "tmp", "scratch").starts_with("ok"));
    assert!(tmp.join("scratch").is_file());
    // Nothing of $ZOT_HOME else: not even its own log.
    let log = t.path().join("home/logs/ext-w.log").display().to_string();
    assert!(run(&h, "open", "read", log.as_str()).starts_with("ok"));
    assert_eq!(run(&h, "w", "read", log.as_str()), "errno 13");
    h.shutdown();
    assert!(!tmp.exists(), "its ${{TMP}} outlived its stop");
    assert!(data.join("state.json").is_file(), "its data folder is kept");
}

#[test]
fn network_off_refuses_tcp_and_declared_ports_are_the_only_ones_reached() {
    need_landlock!();
    let t = TempDir::new("confine-net");
    let a = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
    let b = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
    let (pa, pb) = (a.local_addr().unwrap().port(), b.local_addr().unwrap().port());
    let exts = vec![
        probe_ext(t.path(), "open", None),
        probe_ext(t.path(), "off", Some(json!({"net": false}))),
        probe_ext(t.path(), "ports", Some(json!({"net": {"connect": [pa]}}))),
    ];
    let h = host(&t, t.path(), exts, ConfineMode::Declared);
    assert_eq!(run(&h, "open", "connect", pb), format!("ok {pb}"));
    assert_eq!(run(&h, "off", "connect", pa), "errno 13");
    assert_eq!(run(&h, "ports", "connect", pa), format!("ok {pa}"));
    assert_eq!(run(&h, "ports", "connect", pb), "errno 13");
    // Landlock confines TCP ports only: Multipath TCP, which a plain TCP
    // listener answers as TCP, must not reach an undeclared port either.
    if std::fs::read_to_string("/proc/sys/net/mptcp/enabled").is_ok_and(|v| v.trim() == "1") {
        assert_eq!(run(&h, "open", "connect_mptcp", pb), format!("ok {pb}"));
        assert_eq!(run(&h, "ports", "connect_mptcp", pb), "errno 13");
    } else {
        common::skip("Multipath TCP is not enabled on this kernel");
    }
    // Unix sockets: refused unless declared; socketpair stays.
    assert!(run(&h, "open", "unix", "").starts_with("ok"));
    assert_eq!(run(&h, "off", "unix", ""), "errno 13");
    assert!(run(&h, "off", "socketpair", "").starts_with("ok"));
}

#[test]
fn it_cannot_signal_the_host_gain_privileges_or_escape_through_setsid() {
    need_landlock!();
    let t = TempDir::new("confine-proc");
    let home = std::env::var("HOME").expect("HOME");
    let secret = PathBuf::from(&home).join(format!(".zot-confine-setsid-{}", std::process::id()));
    std::fs::write(&secret, "secret").expect("plant");
    let exts = vec![probe_ext(t.path(), "open", None), probe_ext(t.path(), "jailed", Some(json!({})))];
    let h = host(&t, t.path(), exts, ConfineMode::Declared);
    let me = std::process::id();
    assert_eq!(run(&h, "open", "kill", me), "ok None");
    assert_eq!(run(&h, "jailed", "kill", me), "errno 1");
    assert_eq!(run(&h, "open", "status", ""), "ok NoNewPrivs:\t0");
    assert_eq!(run(&h, "jailed", "status", ""), "ok NoNewPrivs:\t1");
    let s = secret.display().to_string();
    assert_eq!(run(&h, "open", "setsid_read", s.as_str()), "ok ok");
    assert_eq!(run(&h, "jailed", "setsid_read", s.as_str()), "errno 13");
    let _ = std::fs::remove_file(&secret);
}

#[test]
fn a_memory_limit_is_hit_while_the_host_and_the_others_keep_answering() {
    need_landlock!();
    let t = TempDir::new("confine-mem");
    let exts = vec![probe_ext(t.path(), "open", None), probe_ext(t.path(), "small", Some(json!({"limits": {"memory_mb": 200}})))];
    let h = host(&t, t.path(), exts, ConfineMode::Declared);
    assert_eq!(run(&h, "open", "alloc", 400), format!("ok {}", 400 << 20));
    assert_eq!(run(&h, "small", "alloc", 400), "error MemoryError");
    assert_eq!(run(&h, "small", "alloc", 1), format!("ok {}", 1 << 20));
    assert_eq!(run(&h, "open", "alloc", 1), format!("ok {}", 1 << 20));
    let info = common::ext_info(&h, "small");
    assert_eq!(info.confinement["enforced"].as_array().unwrap().iter().filter(|k| *k == "limits").count(), 1);
}

#[test]
fn deny_inside_a_read_folder_is_out_of_reach_and_the_rest_is_not() {
    need_landlock!();
    let t = TempDir::new("confine-deny");
    let project = t.path().join("project");
    std::fs::create_dir_all(project.join("keys/inner")).expect("mkdir");
    std::fs::create_dir_all(project.join("src")).expect("mkdir");
    std::fs::write(project.join("keys/inner/id"), "k").expect("write");
    std::fs::write(project.join("src/a.txt"), "a").expect("write");
    std::fs::write(project.join("top.txt"), "t").expect("write");
    let c = json!({"read": ["${PROJECT}"], "deny": ["${PROJECT}/keys", "${PROJECT}/later/secret"]});
    let exts = vec![probe_ext(t.path(), "open", None), probe_ext(t.path(), "d", Some(c))];
    let h = host(&t, &project, exts, ConfineMode::Declared);
    let p = |rel: &str| project.join(rel).display().to_string();
    assert!(run(&h, "open", "read", p("keys/inner/id")).starts_with("ok"));
    assert_eq!(run(&h, "d", "read", p("keys/inner/id")), "errno 13");
    assert!(run(&h, "d", "read", p("src/a.txt")).starts_with("ok"));
    assert!(run(&h, "d", "read", p("top.txt")).starts_with("ok"));
    // A file created after the start in a folder on the way is out of reach.
    std::fs::write(project.join("new.txt"), "n").expect("write");
    assert_eq!(run(&h, "d", "read", p("new.txt")), "errno 13");
    assert!(run(&h, "open", "read", p("new.txt")).starts_with("ok"));
}

#[test]
fn required_refuses_to_start_when_a_declared_rule_is_not_enforced() {
    need_landlock!();
    let t = TempDir::new("confine-required");
    // unix: true reaches every socket file: this kernel confines no socket path.
    let exts = vec![probe_ext(t.path(), "strict", Some(json!({"required": true}))), probe_ext(t.path(), "leaky", Some(json!({"unix": true, "required": true})))];
    let h = host(&t, t.path(), exts, ConfineMode::Declared);
    assert_eq!(run(&h, "strict", "status", ""), "ok NoNewPrivs:\t1");
    let info = common::ext_info(&h, "leaky");
    assert_eq!(info.state, zot_host::host::State::Failed, "{info:?}");
    let err = info.error.unwrap_or_default();
    assert!(err.contains("its confinement is required but this kernel does not enforce: unix"), "{err}");
    assert_eq!(info.pid, None);
}

#[test]
fn a_tmp_folder_left_by_a_host_that_is_gone_is_removed() {
    need_landlock!();
    let t = TempDir::new("confine-sweep");
    // A pid that no process has: past pid_max.
    let stale = t.path().join("home/tmp/old.4194305.1");
    std::fs::create_dir_all(stale.join("inner")).expect("mkdir");
    // As hosts before the instance's own name left them.
    let earlier = t.path().join("home/tmp/old-form.4194305-1");
    std::fs::create_dir_all(&earlier).expect("mkdir");
    let live = t.path().join(format!("home/tmp/other.{}.1", std::process::id()));
    let live_earlier = t.path().join(format!("home/tmp/other.{}-2", std::process::id()));
    std::fs::create_dir_all(&live).expect("mkdir");
    std::fs::create_dir_all(&live_earlier).expect("mkdir");
    let h = host(&t, t.path(), vec![probe_ext(t.path(), "p", Some(json!({})))], ConfineMode::Declared);
    assert_eq!(run(&h, "p", "status", ""), "ok NoNewPrivs:\t1");
    assert!(!stale.exists() && !earlier.exists(), "the folder of a gone host is still there");
    assert!(live.exists() && live_earlier.exists(), "the folder of a live process was removed");
}

#[test]
fn an_extension_folder_named_bin_does_not_open_the_folder_of_the_others() {
    need_landlock!();
    let t = TempDir::new("confine-bin");
    // Installed side by side: `wallet` keeps a token in its own folder
    // (its data_dir when unconfined); `bin` runs its `#!` script from its
    // folder, whose name must not make the folder above a "prefix".
    let exts = t.path().join("extensions");
    std::fs::create_dir_all(exts.join("wallet")).expect("mkdir");
    let token = exts.join("wallet/token.json");
    std::fs::write(&token, "token").expect("plant");
    let script = |name: &str| {
        let dir = exts.join(name);
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::copy(common::fixture("probe.py"), dir.join("probe.py")).expect("copy");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.join("probe.py"), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    };
    script("bin");
    script("shims");
    let bin = write_manifest(&exts, "bin", json!({"name": "bin", "exec": "./probe.py", "args": ["bin"], "confine": {}}));
    let shims = write_manifest(&exts, "shims", json!({"name": "shims", "exec": "./probe.py", "args": ["shims"]}));
    let h = host(&t, t.path(), vec![bin, shims], ConfineMode::Declared);
    let token = token.display().to_string();
    assert_eq!(run(&h, "shims", "read", token.as_str()), "ok 5");
    assert_eq!(run(&h, "bin", "read", token.as_str()), "errno 13");
    // Its own folder is still its own.
    assert!(run(&h, "bin", "read", exts.join("bin/extension.json").display().to_string()).starts_with("ok"));
    h.shutdown();
}

#[test]
fn a_deny_written_with_dot_dot_through_a_missing_folder_still_denies() {
    need_landlock!();
    let t = TempDir::new("confine-deny-dotdot");
    let project = t.path().join("project");
    std::fs::create_dir_all(project.join("keys")).expect("mkdir");
    std::fs::write(project.join("keys/id"), "k").expect("write");
    std::fs::write(project.join("top.txt"), "t").expect("write");
    // `gone` does not exist: the kernel resolves the path to nothing, and
    // the deny must not then deny nothing.
    let c = json!({"read": ["${PROJECT}"], "deny": ["${PROJECT}/gone/../keys", "${PROJECT}/./src/../keys/"]});
    let exts = vec![probe_ext(t.path(), "open", None), probe_ext(t.path(), "d", Some(c))];
    let h = host(&t, &project, exts, ConfineMode::Declared);
    let p = |rel: &str| project.join(rel).display().to_string();
    assert_eq!(run(&h, "open", "read", p("keys/id")), "ok 1");
    assert_eq!(run(&h, "d", "read", p("keys/id")), "errno 13");
    assert_eq!(run(&h, "d", "read", p("top.txt")), "ok 1");
    h.shutdown();
}

#[test]
fn zot_home_stays_out_of_reach_under_a_declared_ancestor() {
    need_landlock!();
    let t = TempDir::new("confine-zot-home");
    // $ZOT_HOME is t/home: a grant of t (as `~` or VS Code's `/` would be)
    // holds it. Another extension's data folder and the host's logs there
    // must stay out of reach; its own data folder and the rest of t not.
    std::fs::write(t.path().join("notes.txt"), "notes").expect("write");
    let exts = vec![
        probe_ext(t.path(), "open", None),
        probe_ext(t.path(), "keeper", Some(json!({}))),
        probe_ext(t.path(), "wide", Some(json!({"read": [t.path()]}))),
    ];
    let h = host(&t, t.path(), exts, ConfineMode::Declared);
    assert!(run(&h, "keeper", "data", "token").starts_with("ok"));
    let token = t.path().join("home/data/keeper/token").display().to_string();
    let log = t.path().join("home/logs/ext-keeper.log").display().to_string();
    assert_eq!(run(&h, "open", "read", token.as_str()), "ok 1");
    assert!(run(&h, "open", "read", log.as_str()).starts_with("ok"));
    assert_eq!(run(&h, "wide", "read", token.as_str()), "errno 13");
    assert_eq!(run(&h, "wide", "read", log.as_str()), "errno 13");
    assert_eq!(run(&h, "wide", "read", t.path().join("notes.txt").display().to_string()), "ok 5");
    assert!(run(&h, "wide", "data", "own").starts_with("ok"));
    assert!(run(&h, "wide", "read", t.path().join("home/data/wide/own").display().to_string()).starts_with("ok"));
    h.shutdown();
}

#[test]
fn an_unconfined_extension_gets_data_and_tmp_when_its_args_or_env_name_them() {
    let t = TempDir::new("confine-unconfined-placeholders");
    let dir = probe_ext(t.path(), "u", None);
    let mut m: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("extension.json")).expect("manifest")).expect("json");
    m["args"].as_array_mut().expect("args").extend([json!("${DATA}/state.json"), json!("${TMP}")]);
    m["env"] = json!({"U_DATA": "${DATA}"});
    std::fs::write(dir.join("extension.json"), m.to_string()).expect("write");
    let h = host(&t, t.path(), vec![dir.clone()], ConfineMode::Declared);
    let get = |op: &str, arg: &str| {
        let r = run(&h, "u", op, arg);
        r.strip_prefix("ok ").unwrap_or_else(|| panic!("{op} {arg}: {r}")).to_string()
    };
    let data = get("env", "U_DATA");
    let tmp = get("argv", "3");
    assert_eq!(get("argv", "2"), format!("{data}/state.json"));
    // §9.1's folders, made for it though nothing is confined.
    assert!(data.ends_with("/data/u") && std::path::Path::new(&data).is_dir(), "{data}");
    assert!(std::path::Path::new(&tmp).is_dir() && tmp.contains("/tmp/u."), "{tmp}");
    // Unconfined: its TMPDIR is its own, and its data_dir its folder, as upstream.
    assert_ne!(run(&h, "u", "env", "TMPDIR"), format!("ok {tmp}"));
    h.call(Request::Shutdown).ok();
    drop(h);
    assert!(common::wait_until(std::time::Duration::from_secs(10), || !std::path::Path::new(&tmp).exists()), "{tmp} outlived the start");
    assert!(std::path::Path::new(&data).is_dir(), "the data folder is kept");
}
