//! Confinement (docs/protocol.md §9) through the real binary: `--confine` and
//! `ZOT_CONFINE`, an invalid `confine`, the listings' `confinement`, `zot
//! trust`'s lines, real MCP servers confined through their `mcp.json`
//! entry (and VS Code's `sandbox` form), and a Python project extension
//! that keeps its own project trusted.

mod common;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use common::{fixture, probe_ext, write_manifest, TempDir};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use zot_proc::{strings, Zot, BIN, FAST, LINE_WAIT};

/// `zot serve` in `cwd` with `args`.
struct Serve {
    z: Zot,
    next: u64,
}

impl Serve {
    fn start(t: &TempDir, cwd: &Path, args: &[String], env: &[(&str, &str)]) -> Serve {
        let mut all = strings(&["serve", "--cwd"]);
        all.push(cwd.display().to_string());
        all.extend(strings(&FAST));
        all.extend(strings(&["--tool-timeout", "60"]));
        all.extend(args.iter().cloned());
        let mut s = Serve { z: Zot::spawn(t.path(), &all, env), next: 0 };
        s.ok("list", json!({}));
        s
    }

    fn req(&mut self, ty: &str, mut v: Value) -> Value {
        self.next += 1;
        let id = self.next;
        v["id"] = json!(id);
        v["type"] = json!(ty);
        self.z.send(&v.to_string());
        let end = Instant::now() + LINE_WAIT * 2;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            let line = self.z.next_line(left).unwrap_or_else(|| panic!("no response {id}\n{}", self.z.context()));
            let f: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            if f["type"] == "response" && f["id"] == id {
                return f;
            }
        }
    }

    fn ok(&mut self, ty: &str, v: Value) -> Value {
        let r = self.req(ty, v.clone());
        assert_eq!(r["ok"], true, "{ty} {v}: {r}\n{}", self.z.context());
        r["result"].clone()
    }

    /// The text of a tool's result.
    fn tool(&mut self, name: &str, args: Value) -> String {
        let r = self.ok("tool", json!({"name": name, "args": args}));
        r["content"].as_array().map(|c| c.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join("")).unwrap_or_default()
    }

    fn probe(&mut self, name: &str, op: &str, arg: &str) -> String {
        self.tool(&format!("{name}_probe"), json!({"op": op, "arg": arg}))
    }

    /// The listing entry of `name`, once it is no longer starting.
    fn ext(&mut self, name: &str) -> Value {
        let end = Instant::now() + LINE_WAIT * 2;
        loop {
            let l = self.ok("list", json!({}));
            let e = l["extensions"].as_array().and_then(|a| a.iter().find(|e| e["name"] == name).cloned()).unwrap_or(Value::Null);
            if e["state"] != "starting" || Instant::now() > end {
                return e;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn stop(mut self) -> String {
        self.z.close_stdin();
        self.z.wait_exit(LINE_WAIT);
        self.z.stderr_text()
    }
}

fn ext_args(exts: &[&PathBuf]) -> Vec<String> {
    let mut a = strings(&["--no-ext"]);
    for e in exts {
        a.push("--ext".into());
        a.push(e.display().to_string());
    }
    a
}

fn kinds(c: &Value, list: &str) -> Vec<String> {
    c[list].as_array().map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect()).unwrap_or_default()
}

#[test]
fn confine_off_and_all_and_their_environment_variable() {
    need_landlock!();
    let t = TempDir::new("confine-modes");
    let cwd = t.path().join("project");
    std::fs::create_dir_all(&cwd).expect("mkdir");
    std::fs::write(cwd.join("readme.txt"), "r").expect("write");
    let outside = t.path().join("outside.txt");
    std::fs::write(&outside, "o").expect("write");
    let (o, r) = (outside.display().to_string(), cwd.join("readme.txt").display().to_string());
    let declared = probe_ext(t.path(), "declared", Some(json!({"net": {"connect": [443]}})));
    let plain = probe_ext(t.path(), "plain", None);
    let args = ext_args(&[&declared, &plain]);

    // declared (the default): only the one that declares is confined.
    let mut s = Serve::start(&t, &cwd, &args, &[]);
    assert_eq!(s.probe("declared", "read", &o), "errno 13");
    assert!(s.probe("plain", "read", &o).starts_with("ok"));
    assert_eq!(s.ext("plain")["confinement"], Value::Null);
    let c = s.ext("declared")["confinement"].clone();
    assert!(kinds(&c, "enforced").contains(&"tcp".to_string()), "{c}");
    let err = s.stop();
    assert!(!err.contains("confinement is off"), "{err}");

    // off: nothing confined, said on stderr, every declared rule not enforced.
    for (extra, env) in [(vec!["--confine", "off"], vec![]), (vec![], vec![("ZOT_CONFINE", "off")])] {
        let mut a = args.clone();
        a.extend(strings(&extra));
        let mut s = Serve::start(&t, &cwd, &a, &env);
        assert!(s.probe("declared", "read", &o).starts_with("ok"));
        let c = s.ext("declared")["confinement"].clone();
        assert_eq!(kinds(&c, "enforced"), Vec::<String>::new(), "{c}");
        assert!(kinds(&c, "not_enforced").contains(&"files".to_string()) && kinds(&c, "not_enforced").contains(&"tcp".to_string()), "{c}");
        assert_eq!(s.ext("plain")["confinement"], Value::Null);
        let err = s.stop();
        assert!(err.lines().any(|l| l == "zot: confinement is off (--confine off)"), "{err}");
    }

    // all: the one that declares nothing gets the base set, the project to read, no network.
    for (extra, env) in [(vec!["--confine", "all"], vec![]), (vec![], vec![("ZOT_CONFINE", "all")])] {
        let mut a = args.clone();
        a.extend(strings(&extra));
        let mut s = Serve::start(&t, &cwd, &a, &env);
        assert_eq!(s.probe("plain", "read", &o), "errno 13");
        assert!(s.probe("plain", "read", &r).starts_with("ok"));
        assert_eq!(s.probe("plain", "connect", "443"), "errno 13");
        let c = s.ext("plain")["confinement"].clone();
        assert!(kinds(&c, "enforced").contains(&"net_off".to_string()), "{c}");
        s.stop();
    }
}

#[test]
fn under_confine_off_one_that_declares_confine_keeps_its_data_folder() {
    let t = TempDir::new("confine-off-data");
    let declared = probe_ext(t.path(), "declared", Some(json!({})));
    let plain = probe_ext(t.path(), "plain", None);
    let mut args = ext_args(&[&declared, &plain]);
    args.extend(strings(&["--confine", "off"]));
    let mut s = Serve::start(&t, t.path(), &args, &[]);
    // ${DATA}, $ZOT_HOME/data/<name>, 0700, in every mode; the one that
    // declares nothing keeps its own folder, as upstream.
    let data = t.path().join("zot-home/data/declared");
    assert_eq!(s.probe("declared", "data_dir", ""), format!("ok {}", data.display()));
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&data).expect("data").permissions().mode() & 0o777, 0o700);
    assert_eq!(s.probe("plain", "data_dir", ""), format!("ok {}", plain.display()));
    s.stop();
}

#[test]
fn under_confine_off_a_required_extension_does_not_start() {
    let t = TempDir::new("confine-off-required");
    let strict = probe_ext(t.path(), "strict", Some(json!({"required": true})));
    let loose = probe_ext(t.path(), "loose", Some(json!({})));
    let mut args = ext_args(&[&strict, &loose]);
    args.extend(strings(&["--confine", "off"]));
    let mut s = Serve::start(&t, t.path(), &args, &[]);
    let e = s.ext("strict");
    assert_eq!((&e["state"], &e["pid"]), (&json!("failed"), &Value::Null), "{e}");
    let not_enforced = kinds(&e["confinement"], "not_enforced").into_iter().filter(|k| k != "metadata").collect::<Vec<_>>().join(", ");
    let err = e["error"].as_str().unwrap_or_default();
    assert_eq!(err, format!("its confinement is required but this kernel does not enforce: {not_enforced}"), "{e}");
    assert!(not_enforced.starts_with("files, no_new_privs"), "{e}");
    // The control: one that does not require it starts, unconfined.
    assert!(s.probe("loose", "status", "").starts_with("ok"));
    s.stop();
}

#[test]
fn a_limits_object_that_declares_only_procs_is_listed_as_limits() {
    let t = TempDir::new("confine-limits-kind");
    let procs = probe_ext(t.path(), "procs", Some(json!({"limits": {"procs": 8}})));
    let none = probe_ext(t.path(), "none", Some(json!({"limits": {}})));
    let mut s = Serve::start(&t, t.path(), &ext_args(&[&procs, &none]), &[]);
    let c = s.ext("procs")["confinement"].clone();
    assert!(kinds(&c, "enforced").contains(&"limits".to_string()), "{c}");
    // The control: a limits object that declares nothing adds no kind.
    let c = s.ext("none")["confinement"].clone();
    assert!(!kinds(&c, "enforced").contains(&"limits".to_string()) && !kinds(&c, "not_enforced").contains(&"limits".to_string()), "{c}");
    s.stop();
}

#[test]
fn an_unknown_mode_is_one_usage_error_in_every_command_that_reads_it() {
    let t = TempDir::new("confine-unknown-mode");
    let home = t.path().join("home");
    let run = |args: &[&str], env: &[(&str, &str)]| common::run_zot(BIN, t.path(), Some(&home), args, env);
    let flag = "zot: --confine: unknown mode \"bogus\" (declared, all, off)";
    let var = "zot: ZOT_CONFINE: unknown mode \"bogus\" (declared, all, off)";
    for cmd in [&[][..], &["serve"], &["mcp"], &["ext", "doctor"], &["trust"]] {
        let mut args = cmd.to_vec();
        args.extend(["--confine", "bogus"]);
        let out = run(&args, &[]);
        assert_eq!((out.code, out.stderr.trim()), (2, flag), "{args:?}");
    }
    for cmd in [&[][..], &["serve"], &["mcp"], &["ext", "doctor"], &["ext", "list"], &["trust"]] {
        let out = run(cmd, &[("ZOT_CONFINE", "bogus")]);
        assert_eq!((out.code, out.stderr.trim()), (2, var), "{cmd:?}");
    }
    // The flag wins over the variable.
    let out = run(&["ext", "doctor", "--no-ext", "--confine", "all"], &[("ZOT_CONFINE", "bogus")]);
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[test]
fn an_invalid_confine_fails_only_that_extension_naming_the_field() {
    let t = TempDir::new("confine-invalid");
    let good = probe_ext(t.path(), "good", Some(json!({})));
    let bad = probe_ext(t.path(), "bad", Some(json!({"net": {"connect": [443, 70000]}})));
    let typo = probe_ext(t.path(), "typo", Some(json!({"reed": ["/"]})));
    let cfg = t.path().join("mcp.json");
    std::fs::write(&cfg, json!({"mcpServers": {"srv": {"command": "python3", "args": ["x.py"], "confine": {"limits": {"memory_mb": "lots"}}}}}).to_string()).expect("write");
    let mut args = ext_args(&[&good, &bad, &typo]);
    args.extend(strings(&["--mcp-config", cfg.to_str().expect("utf-8")]));
    let mut s = Serve::start(&t, t.path(), &args, &[]);
    let by_dir = |s: &mut Serve, dir: &Path| {
        let l = s.ok("list", json!({}));
        l["extensions"].as_array().and_then(|a| a.iter().find(|e| e["dir"] == dir.display().to_string() || e["name"] == "srv" && dir == cfg.as_path()).cloned()).unwrap_or(Value::Null)
    };
    let b = by_dir(&mut s, &bad);
    assert_eq!(b["state"], "failed", "{b}");
    assert!(b["error"].as_str().unwrap_or("").contains("confine.net.connect: port 70000 is outside 1-65535"), "{b}");
    let b = by_dir(&mut s, &typo);
    assert!(b["error"].as_str().unwrap_or("").contains("confine.reed: unknown field"), "{b}");
    let b = by_dir(&mut s, &cfg);
    assert_eq!(b["state"], "failed", "{b}");
    assert!(b["error"].as_str().unwrap_or("").contains("confine.limits.memory_mb:"), "{b}");
    assert_eq!(s.ext("good")["state"], "ready");
    assert!(s.probe("good", "status", "").contains("NoNewPrivs:\t1"));
    s.stop();
}

#[test]
fn zot_ext_list_json_and_doctor_carry_confinement() {
    let t = TempDir::new("confine-list");
    let home = t.path().join("zot-home");
    let exts = home.join("extensions");
    probe_ext(&exts, "boxed", Some(json!({"limits": {"open_files": 64}})));
    probe_ext(&exts, "free", None);
    let out = common::run_zot(BIN, t.path(), Some(&home), &["ext", "list", "--json"], &[]);
    let rows: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}{}", out.stdout, out.stderr));
    let row = |n: &str| rows.as_array().and_then(|a| a.iter().find(|r| r["name"] == n).cloned()).unwrap_or(Value::Null);
    assert_eq!(row("free")["confinement"], Value::Null, "{rows}");
    let c = row("boxed")["confinement"].clone();
    let all: Vec<String> = kinds(&c, "enforced").into_iter().chain(kinds(&c, "not_enforced")).collect();
    for k in ["files", "no_new_privs", "metadata", "unix", "syscalls", "scopes", "net_off", "limits", "procs"] {
        assert_eq!(all.iter().filter(|x| *x == k).count(), 1, "{k} in exactly one list: {c}");
    }
    if common::landlock() {
        assert_eq!(kinds(&c, "not_enforced"), ["metadata"], "{c}");
    }
    assert!(c["landlock_abi"].is_u64(), "{c}");
    let doctor = common::run_zot(BIN, t.path(), Some(&home), &["ext", "doctor", "--json"], &[]);
    let d: Value = serde_json::from_str(&doctor.stdout).unwrap_or_else(|e| panic!("{e}: {}{}", doctor.stdout, doctor.stderr));
    assert!(d["kernel"].as_str().unwrap_or("").starts_with("confinement: Landlock ABI"), "{d}");
    let e = d["extensions"].as_array().and_then(|a| a.iter().find(|e| e["name"] == "boxed").cloned()).unwrap_or(Value::Null);
    assert_eq!(e["confinement"], c, "{d}");
    let text = common::run_zot(BIN, t.path(), Some(&home), &["ext", "doctor"], &[]);
    assert_eq!(text.stdout.matches("confinement: Landlock ABI").count(), 1, "{}", text.stdout);
}

#[test]
fn zot_trust_shows_what_each_may_read_write_and_reach_before_recording() {
    let t = TempDir::new("confine-trust");
    let home = t.path().join("zot-home");
    let project = t.path().join("project");
    let exts = project.join(".zot/extensions");
    probe_ext(&exts, "weather", Some(json!({"read": ["${PROJECT}", "~/.config/weather"], "write": ["${DATA}"], "net": {"connect": [443, 80]}})));
    probe_ext(&exts, "legacy", None);
    probe_ext(&exts, "quiet", Some(json!({"read": ["${PROJECT}"]})));
    std::fs::write(project.join(".zot/mcp.json"), json!({"mcpServers": {"srv": {"command": "python3", "args": ["s.py"], "confine": {"net": true}}}}).to_string()).expect("write");
    let out = common::run_zot(BIN, t.path(), Some(&home), &["trust", project.to_str().expect("utf-8")], &[]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let lines: Vec<&str> = out.stdout.lines().collect();
    // Each line: what it declares, then what it gets derived from the
    // program that runs (python3 wherever this machine has it, and the
    // probe's script folder), then what it writes and reaches.
    let at = |head: &str, tail: &str| {
        lines.iter().position(|l| l.starts_with(head) && l.ends_with(tail)).unwrap_or_else(|| panic!("no line {head:?}...{tail:?} in:\n{}", out.stdout))
    };
    let recorded = lines.iter().position(|l| l.starts_with("trusted ")).expect("trusted line");
    let fixtures = common::fixture("probe.py").parent().expect("fixtures").display().to_string();
    for (head, tail) in [
        ("  weather: reads ${PROJECT}, ~/.config/weather", "; writes ${DATA}; network: TCP ports 443, 80; UDP: any"),
        ("  legacy: full access to your files and network", ""),
        ("  quiet: reads ${PROJECT}", "; writes nothing; network: none"),
        ("  srv: reads ", "; writes nothing; network: any"),
    ] {
        let i = at(head, tail);
        assert!(i < recorded, "{head:?} after the record:\n{}", out.stdout);
        if head.contains("reads ${PROJECT}") {
            assert!(lines[i].contains(&format!(", {fixtures} (the script it runs);")), "the probe's folder, derived:\n{}", lines[i]);
        }
    }
}

/// Where the real servers are (tests/mcp_servers.rs installs them the same way).
fn real(rel: &str) -> Option<PathBuf> {
    Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)).filter(|p| p.exists())
}

#[test]
fn real_mcp_servers_confined_through_their_entry() {
    need_landlock!();
    let t = TempDir::new("confine-mcp");
    let mut servers = serde_json::Map::new();
    let (data, other) = (t.path().join("data"), t.path().join("other"));
    std::fs::create_dir_all(&data).expect("mkdir");
    std::fs::create_dir_all(&other).expect("mkdir");
    std::fs::write(data.join("hello.txt"), "hello from data").expect("write");
    std::fs::write(other.join("secret.txt"), "the secret").expect("write");
    let fs = real("target/mcp-node/node_modules/.bin/mcp-server-filesystem");
    let time = real("target/mcp-venv/bin/mcp-server-time");
    if let Some(fs) = &fs {
        let args = json!([data, other]);
        servers.insert("fsbox".into(), json!({"command": fs, "args": args, "confine": {"read": [data]}}));
        servers.insert("fsopen".into(), json!({"command": fs, "args": args}));
        servers.insert("fsvs".into(), json!({"command": fs, "args": args, "sandboxEnabled": true,
            "sandbox": {"filesystem": {"denyRead": [other]}, "network": {"allowedDomains": ["registry.npmjs.org"]}}}));
    } else {
        common::skip("@modelcontextprotocol/server-filesystem is not installed in target/mcp-node");
    }
    if let Some(time) = &time {
        servers.insert("time".into(), json!({"command": time, "args": ["--local-timezone", "UTC"], "confine": {"net": false}}));
    } else {
        common::skip("mcp-server-time is not installed in target/mcp-venv");
    }
    if servers.is_empty() {
        return;
    }
    let cfg = t.path().join("mcp.json");
    std::fs::write(&cfg, json!({"mcpServers": servers}).to_string()).expect("write");
    let mut s = Serve::start(&t, t.path(), &strings(&["--no-ext", "--ready-grace", "60", "--mcp-config", cfg.to_str().expect("utf-8")]), &[]);
    let (hello, secret) = (data.join("hello.txt").display().to_string(), other.join("secret.txt").display().to_string());
    if fs.is_some() {
        for name in ["fsbox", "fsopen", "fsvs"] {
            assert_eq!(s.ext(name)["state"], "ready", "{name}: {}", s.ext(name));
            let read = format!("mcp__{name}__read_text_file");
            assert!(s.tool(&read, json!({"path": hello})).contains("hello from data"), "{name}");
        }
        assert!(s.tool("mcp__fsopen__read_text_file", json!({"path": secret})).contains("the secret"));
        for name in ["fsbox", "fsvs"] {
            let r = s.tool(&format!("mcp__{name}__read_text_file"), json!({"path": secret}));
            assert!(!r.contains("the secret") && (r.contains("EACCES") || r.contains("permission denied")), "{name}: {r}");
        }
        let c = s.ext("fsvs")["confinement"].clone();
        assert!(kinds(&c, "not_enforced").contains(&"domains".to_string()), "{c}");
    }
    if time.is_some() {
        assert_eq!(s.ext("time")["state"], "ready", "{}", s.ext("time"));
        let r = s.tool("mcp__time__get_current_time", json!({"timezone": "UTC"}));
        assert!(r.contains("\"timezone\"") && r.contains("UTC"), "{r}");
        let c = s.ext("time")["confinement"].clone();
        assert!(kinds(&c, "enforced").contains(&"net_off".to_string()), "{c}");
    }
    s.stop();
}

#[test]
fn a_python_project_extension_run_twice_keeps_its_project_trusted() {
    let t = TempDir::new("confine-pycache");
    let home = t.path().join("zot-home");
    let project = t.path().join("project");
    let dir = project.join(".zot/extensions/py");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let probe = std::fs::read_to_string(fixture("probe.py")).expect("probe.py");
    std::fs::write(dir.join("main.py"), format!("import helper\n{probe}")).expect("write");
    std::fs::write(dir.join("helper.py"), "X = 1\n").expect("write");
    std::fs::write(dir.join("extension.json"), json!({"name": "py", "exec": "python3", "args": ["main.py", "py"]}).to_string()).expect("write");
    let out = common::run_zot(BIN, t.path(), Some(&home), &["trust", project.to_str().expect("utf-8")], &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for run in 0..2 {
        let mut s = Serve::start(&t, &project, &[], &[]);
        let e = s.ext("py");
        assert_eq!(e["state"], "ready", "run {run}: {e}");
        assert_eq!(s.probe("py", "env", "PYTHONDONTWRITEBYTECODE"), "ok 1");
        let data = home.join("data/project").join(common::project_id(&project)).join("py");
        assert_eq!(s.probe("py", "data_dir", ""), format!("ok {}", data.display()));
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&data).expect("data").permissions().mode() & 0o777, 0o700);
        s.stop();
        assert!(!dir.join("__pycache__").exists(), "run {run} wrote __pycache__ into .zot");
    }
}

#[test]
fn the_console_marks_each_extension_confined_partly_or_full_access() {
    need_landlock!();
    let t = TempDir::new("confine-console");
    let exts = [
        probe_ext(t.path(), "boxed", Some(json!({}))),
        probe_ext(t.path(), "leaky", Some(json!({"unix": true}))),
        probe_ext(t.path(), "free", None),
    ];
    let mut cmd = std::process::Command::new(BIN);
    cmd.args(ext_args(&exts.iter().collect::<Vec<_>>())).args(["--ready-grace", "60", "--hello-timeout", "60"]);
    cmd.current_dir(t.path()).env("ZOT_HOME", t.path().join("zot-home")).env("NO_COLOR", "1");
    cmd.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().expect("zot");
    use std::io::Write;
    child.stdin.take().expect("stdin").write_all(b"/extensions\n").expect("write");
    let out = child.wait_with_output().expect("zot");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = |name: &str| text.lines().find(|l| l.starts_with(&format!("  {name} "))).unwrap_or_else(|| panic!("no {name} in:\n{text}")).to_string();
    assert!(line("boxed").contains(" confined ") && !line("boxed").contains("partly"), "{text}");
    assert!(line("leaky").contains(" partly confined "), "{text}");
    assert!(line("free").contains(" full access "), "{text}");
}

/// `zot serve` run from a terminal: a session of its own whose controlling
/// terminal is a pty this test holds (its slave side, returned), stdin and
/// stdout piped. A confined extension pushing bytes into that terminal's
/// input (`TIOCSTI`) would have the user's shell run them, unconfined.
/// `zot serve` of `exts`, started by `cmd` (which may set up the process
/// first), its probe tools called one at a time.
struct ProbeServe {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: std::io::BufReader<std::process::ChildStdout>,
}

impl ProbeServe {
    fn start(mut cmd: std::process::Command, t: &TempDir, exts: &[&PathBuf]) -> ProbeServe {
        use std::process::Stdio;
        let mut args = strings(&["serve", "--cwd"]);
        args.push(t.path().display().to_string());
        args.extend(strings(&FAST));
        args.extend(ext_args(exts));
        let mut child = cmd
            .args(&args)
            .env("ZOT_HOME", t.path().join("zot-home"))
            .current_dir(t.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn zot");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
        ProbeServe { child, stdin, stdout }
    }

    /// The text of `{name}_probe`'s answer to `op` with `arg`.
    fn call(&mut self, id: u64, name: &str, op: &str, arg: &str) -> String {
        use std::io::{BufRead, Write};
        let req = json!({"id": id, "type": "tool", "name": format!("{name}_probe"), "args": {"op": op, "arg": arg}});
        writeln!(self.stdin, "{req}").expect("write");
        let mut line = String::new();
        loop {
            line.clear();
            assert!(self.stdout.read_line(&mut line).expect("read") > 0, "zot serve ended before answering {id}");
            let f: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            if f["type"] == "response" && f["id"] == id {
                return f["result"]["content"][0]["text"].as_str().unwrap_or_default().to_string();
            }
        }
    }

    fn finish(self) {
        let ProbeServe { mut child, stdin, .. } = self;
        drop(stdin);
        let _ = child.wait();
    }
}

#[test]
fn a_confined_extension_cannot_type_into_the_terminal() {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::process::CommandExt;
    use std::process::Command;
    need_landlock!();
    let t = TempDir::new("confine-tiocsti");
    let (open, jailed) = (probe_ext(t.path(), "open", None), probe_ext(t.path(), "jailed", Some(json!({}))));
    let (mut m, mut s) = (0, 0);
    // SAFETY: openpty fills two descriptors.
    let r = unsafe { libc::openpty(&mut m, &mut s, std::ptr::null_mut(), std::ptr::null(), std::ptr::null()) };
    assert_eq!(r, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: fresh descriptors, owned from here on.
    let (_master, slave) = unsafe { (OwnedFd::from_raw_fd(m), OwnedFd::from_raw_fd(s)) };
    let tty = slave.as_raw_fd();
    let mut cmd = Command::new(BIN);
    // SAFETY: setsid and ioctl are async-signal-safe.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setsid() < 0 || libc::ioctl(tty, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut z = ProbeServe::start(cmd, &t, &[&open, &jailed]);
    let mut call = |id: u64, name: &str| z.call(id, name, "tiocsti", "echo typed\n");
    // What reached the terminal's input: what the shell would read next.
    // SAFETY: a non-blocking read of our own descriptor into our buffer.
    unsafe { libc::fcntl(tty, libc::F_SETFL, libc::fcntl(tty, libc::F_GETFL) | libc::O_NONBLOCK) };
    let typed = || {
        let mut buf = [0u8; 256];
        // SAFETY: reads at most the buffer's length.
        let n = unsafe { libc::read(tty, buf.as_mut_ptr().cast(), buf.len()) };
        String::from_utf8_lossy(&buf[..n.max(0) as usize]).into_owned()
    };
    // The control: unconfined, the bytes reach the shell's input.
    assert_eq!(call(1, "open"), "ok 11");
    assert_eq!(typed(), "echo typed\n");
    // Confined: in a session of its own, it has no terminal to type into
    // (`/dev/tty` answers ENXIO; TIOCSTI on a terminal it got hold of
    // another way is refused by its seccomp filter), and nothing is typed.
    assert_eq!(call(2, "jailed"), "errno 6");
    assert_eq!(typed(), "");
    z.finish();
}

/// The probe (tests/fixtures/probe.py) as a `#!` script at `path`, run as
/// the extension `name` in `<parent>/<name>`.
fn probe_script(parent: &Path, name: &str, path: &Path, confine: Option<Value>, env: Value) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    if !path.exists() {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::copy(fixture("probe.py"), path).expect("copy");
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let mut m = json!({"name": name, "exec": path, "args": [name], "env": env});
    if let Some(c) = confine {
        m["confine"] = c;
    }
    write_manifest(parent, name, m)
}

#[test]
fn a_script_in_home_bin_never_gets_the_home_through_a_link_or_another_home() {
    need_landlock!();
    let t = TempDir::new("confine-home-link");
    // $HOME is a link to the real folder (as /home -> /var/home), and the
    // program is a `#!` script in ~/bin: its real path names the home by
    // its target, which must be guarded as $HOME is.
    let (real_home, home) = (t.path().join("real-home"), t.path().join("home"));
    std::fs::create_dir_all(real_home.join(".ssh")).expect("mkdir");
    std::fs::write(real_home.join(".ssh/id_test"), "secret").expect("plant");
    std::os::unix::fs::symlink(&real_home, &home).expect("link");
    let tool = real_home.join("bin/probe-tool");
    let exts = t.path().join("exts");
    let open = probe_script(&exts, "open", &tool, None, json!({}));
    let linked = probe_script(&exts, "linked", &tool, Some(json!({})), json!({}));
    // A manifest that names another $HOME does not unguard the user's.
    let moved = probe_script(&exts, "moved", &tool, Some(json!({})), json!({"HOME": t.path().join("elsewhere")}));
    let home_s = home.display().to_string();
    let mut s = Serve::start(&t, t.path(), &ext_args(&[&open, &linked, &moved]), &[("HOME", home_s.as_str())]);
    let secret = home.join(".ssh/id_test").display().to_string();
    assert_eq!(s.probe("open", "read", &secret), "ok 6");
    assert_eq!(s.probe("linked", "read", &secret), "errno 13");
    assert_eq!(s.probe("moved", "read", &secret), "errno 13");
    // ~/bin alone stays granted: the script reads its own folder.
    assert!(s.probe("linked", "read", &tool.display().to_string()).starts_with("ok"));
    s.stop();
}

#[test]
fn a_root_host_without_cap_setpcap_still_passes_no_capability_on() {
    use std::os::unix::process::CommandExt;
    use std::process::Command;
    need_landlock!();
    // SAFETY: reads our own ids.
    if unsafe { libc::geteuid() } != 0 {
        common::skip("not root: the capabilities of a root host cannot be tried");
        return;
    }
    let t = TempDir::new("confine-setpcap");
    let (open, jailed) = (probe_ext(t.path(), "open", None), probe_ext(t.path(), "jailed", Some(json!({}))));
    let mut cmd = Command::new(BIN);
    // As a container that took CAP_SETPCAP away runs it: root, every other
    // capability, and no right to empty the bounding set of its children.
    // SAFETY: prctl is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_CAPBSET_DROP, 8 /* CAP_SETPCAP */, 0, 0, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut z = ProbeServe::start(cmd, &t, &[&open, &jailed]);
    let mut call = |id: u64, name: &str, what: &str| z.call(id, name, "status", what);
    // The control: unconfined, a root extension has the host's capabilities.
    let open_caps = call(1, "open", "CapEff");
    assert!(open_caps.starts_with("ok CapEff:") && !open_caps.ends_with("0000000000000000"), "{open_caps}");
    // Confined: none, effective or permitted.
    assert_eq!(call(2, "jailed", "CapEff"), "ok CapEff:\t0000000000000000");
    assert_eq!(call(3, "jailed", "CapPrm"), "ok CapPrm:\t0000000000000000");
    z.finish();
}
