//! One resolution of every path a confined process is granted
//! (docs/protocol.md §9.1-9.3), with real processes: a grant through a link
//! or `..` into `$ZOT_HOME` is an invalid manifest; derived grants follow
//! `execve` and `env` and are shown; `/etc`'s secrets, the terminals and a
//! repository's `.git/config` and `.git/hooks` stay out of reach; and the
//! trust line says exactly what the kernel lets the code touch. Each
//! refusal has its control.

mod common;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use common::{fixture, host_config, probe_ext, start_host, write_exec, write_manifest, TempDir};
use serde_json::{json, Value};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use zot_host::host::{ConfineMode, Host, Request, Response};
use zot_proc::{strings, Zot, BIN, FAST, LINE_WAIT};

/// Runs `op` with `arg` in extension `name`: `ok ...`, `errno N` or `error ...`.
fn run(host: &Host, name: &str, op: &str, arg: impl Into<Value>) -> String {
    let req = Request::Tool { name: format!("{name}_probe"), args: Some(json!({"op": op, "arg": arg.into()})), tool_id: None };
    match host.call(req) {
        Ok(Response::Tool(r)) => common::text_of(&r.content),
        other => panic!("{name} {op}: {other:?}; {:?}", common::ext_info(host, name)),
    }
}

/// A host for `exts` (its `ZOT_HOME` is `<t>/home`) with its project at `project`.
fn host(t: &TempDir, project: &Path, exts: Vec<PathBuf>) -> Host {
    let mut cfg = host_config(t.path(), exts);
    cfg.cwd = project.to_path_buf();
    cfg.confine = ConfineMode::Declared;
    let (host, _rx) = start_host(cfg);
    host.call(Request::WaitReady).expect("ready");
    host
}

fn mkdir(p: &Path) -> PathBuf {
    std::fs::create_dir_all(p).expect("mkdir");
    p.to_path_buf()
}

fn zot_home_error(field: &str, written: &str, target: &Path) -> String {
    format!("{field}: {written:?} resolves to {}, inside zot's home, which no extension may be granted", target.display())
}

#[test]
fn a_grant_through_a_link_or_dot_dot_into_zot_home_is_an_invalid_manifest() {
    need_landlock!();
    let t = TempDir::new("paths-zot-home");
    let home = t.path().join("home");
    let installed = mkdir(&home.join("extensions"));
    let elsewhere = mkdir(&t.path().join("elsewhere"));
    let exts = mkdir(&t.path().join("exts"));
    // `state` is a link into $ZOT_HOME/extensions: written, it would let the
    // extension install a new, unconfined one there.
    let linky = probe_ext(&exts, "linky", Some(json!({"read": ["${PROJECT}"], "write": ["state"]})));
    symlink(&installed, linky.join("state")).expect("symlink");
    let dotdot = probe_ext(&exts, "dotdot", Some(json!({"write": ["${DATA}/../.."]})));
    // The control: a link to an ordinary folder is granted, at its target.
    let work = probe_ext(&exts, "work", Some(json!({"write": ["out"]})));
    symlink(&elsewhere, work.join("out")).expect("symlink");
    let h = host(&t, t.path(), vec![linky.clone(), dotdot, work.clone()]);
    let error = |name: &str| common::ext_info(&h, name).error.unwrap_or_default();
    let want = zot_home_error("confine.write[0]", "state", &installed.canonicalize().expect("real"));
    assert!(error("linky").ends_with(&want), "{:?}\nwanted: {want}", error("linky"));
    let want = zot_home_error("confine.write[0]", "${DATA}/../..", &home.canonicalize().expect("real"));
    assert!(error("dotdot").ends_with(&want), "{:?}\nwanted: {want}", error("dotdot"));
    let planted = installed.join("evil/extension.json");
    assert!(!planted.exists());
    assert_eq!(run(&h, "work", "write", elsewhere.join("x").display().to_string()), format!("ok {}", elsewhere.join("x").display()));
    assert!(run(&h, "work", "write", installed.join("x").display().to_string()).starts_with("errno 13"));
    h.shutdown();
    // `zot ext list` says the same of project extensions, and shows the
    // control's grant with its target.
    let project = mkdir(&t.path().join("project"));
    let pexts = project.join(".zot/extensions");
    let plinky = probe_ext(&pexts, "linky", Some(json!({"write": ["state"]})));
    symlink(&installed, plinky.join("state")).expect("symlink");
    let pwork = probe_ext(&pexts, "work", Some(json!({"write": ["out"]})));
    symlink(&elsewhere, pwork.join("out")).expect("symlink");
    let out = common::run_zot(BIN, &project, Some(&home), &["ext", "list", "--json"], &[]);
    let rows: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}{}", out.stdout, out.stderr));
    let row = |n: &str| rows.as_array().and_then(|a| a.iter().find(|r| r["name"] == n && r["scope"] == "project").cloned()).unwrap_or(Value::Null);
    let shown = format!("out (-> {})", elsewhere.canonicalize().expect("real").display());
    assert_eq!(row("work")["confinement"]["writes"], json!([shown]), "{rows}");
    assert_eq!(row("linky")["state"], "broken", "{rows}");
    let want = zot_home_error("confine.write[0]", "state", &installed.canonicalize().expect("real"));
    assert!(row("linky")["error"].as_str().unwrap_or("").ends_with(&want), "{rows}");
    // And `zot trust` shows the control's target before recording anything.
    let out = common::run_zot(BIN, t.path(), Some(&home), &["trust", project.to_str().expect("utf-8")], &[]);
    assert!(out.stdout.lines().any(|l| l.starts_with("  work: reads ") && l.contains(&format!("; writes {shown}; network: none"))), "{}", out.stdout);
    assert!(out.stdout.lines().any(|l| l == format!("  linky: invalid: {want}")), "{}", out.stdout);
}

/// `zot serve` in `cwd` with `args` and `env` (HOME among them).
struct Serve {
    z: Zot,
    next: u64,
}

impl Serve {
    fn start(t: &TempDir, cwd: &Path, exts: &[&PathBuf], env: &[(&str, &str)]) -> Serve {
        let mut all = strings(&["serve", "--no-ext", "--cwd"]);
        all.push(cwd.display().to_string());
        all.extend(strings(&FAST));
        all.extend(strings(&["--tool-timeout", "60"]));
        for e in exts {
            all.push("--ext".into());
            all.push(e.display().to_string());
        }
        let mut s = Serve { z: Zot::spawn(t.path(), &all, env), next: 0 };
        s.req("list", json!({}));
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
                assert_eq!(f["ok"], true, "{ty}: {f}\n{}", self.z.context());
                return f["result"].clone();
            }
        }
    }

    fn probe(&mut self, name: &str, op: &str, arg: &Path) -> String {
        let r = self.req("tool", json!({"name": format!("{name}_probe"), "args": {"op": op, "arg": arg}}));
        r["content"].as_array().map(|c| c.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join("")).unwrap_or_default()
    }

    fn wait_started(&mut self, names: &[&str]) -> Value {
        let end = Instant::now() + LINE_WAIT * 2;
        loop {
            let l = self.req("list", json!({}));
            let states: Vec<Value> = names.iter().map(|n| l["extensions"].as_array().and_then(|a| a.iter().find(|e| e["name"] == *n)).map_or(Value::Null, |e| e["state"].clone())).collect();
            if states.iter().all(|s| s != "starting") || Instant::now() > end {
                return l;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn stop(mut self) {
        self.z.close_stdin();
        self.z.wait_exit(LINE_WAIT);
    }
}

/// The probe as Python code whose first line is `first` (a `#!` line).
fn probe_with(path: &Path, first: &str) {
    let code = std::fs::read_to_string(fixture("probe.py")).expect("probe.py");
    let rest = code.split_once('\n').map_or(code.as_str(), |(_, r)| r);
    write_exec(path, &format!("{first}\n{rest}"));
}

/// The world of the derived-grant tests: a user home with `~/.ssh`, an
/// extension whose first argument is `~/.ssh/config` (handed to a
/// `#!/bin/sh` wrapper, which is itself the script: nothing derived), one whose `#!/usr/bin/env probeinterp`
/// meets a plain file `~/.ssh/probeinterp` first on its `PATH`, and the
/// control, a real script in `~/code/tool` with a helper beside it.
struct Derived {
    user: PathBuf,
    exts: Vec<PathBuf>,
}

fn derived_world(t: &TempDir, parent: &Path) -> Derived {
    let user = mkdir(&t.path().join("user"));
    let ssh = mkdir(&user.join(".ssh"));
    std::fs::write(ssh.join("id_test"), "secret").expect("plant");
    std::fs::write(ssh.join("config"), "Host x\n").expect("plant");
    std::fs::write(ssh.join("probeinterp"), "not a program\n").expect("plant");
    let bin = mkdir(&user.join("bin"));
    write_exec(&bin.join("probeinterp"), "#!/bin/sh\nexec /usr/bin/python3 \"$@\"\n");
    // The wrapper runs the probe from its own folder whatever it is handed.
    let scripted = write_manifest(parent, "scripted", json!({"name": "scripted", "exec": "./run", "args": [ssh.join("config")], "confine": {}}));
    std::fs::copy(fixture("probe.py"), scripted.join("probe.py")).expect("copy");
    write_exec(&scripted.join("run"), "#!/bin/sh\nexec /usr/bin/python3 \"$(dirname \"$0\")/probe.py\" scripted\n");
    let path = format!("{}:{}:/usr/bin:/bin", ssh.display(), bin.display());
    let envname = write_manifest(parent, "envname", json!({"name": "envname", "exec": "./run", "args": ["envname"], "env": {"PATH": path}, "confine": {}}));
    probe_with(&envname.join("run"), "#!/usr/bin/env probeinterp");
    let tool = mkdir(&user.join("code/tool"));
    std::fs::copy(fixture("probe.py"), tool.join("probe.py")).expect("copy");
    std::fs::write(tool.join("helper.txt"), "help").expect("write");
    let real = write_manifest(parent, "real", json!({"name": "real", "exec": "/usr/bin/python3", "args": [tool.join("probe.py"), "real"], "confine": {}}));
    Derived { user, exts: vec![scripted, envname, real] }
}

#[test]
fn derived_grants_follow_execve_and_env_and_never_open_ssh() {
    need_landlock!();
    if !Path::new("/usr/bin/python3").exists() {
        return common::skip("no /usr/bin/python3");
    }
    let t = TempDir::new("paths-derived");
    let w = derived_world(&t, &mkdir(&t.path().join("exts")));
    let user = w.user.display().to_string();
    let mut s = Serve::start(&t, t.path(), &w.exts.iter().collect::<Vec<_>>(), &[("HOME", &user)]);
    let l = s.wait_started(&["scripted", "envname", "real"]);
    let (ssh, tool) = (w.user.join(".ssh"), w.user.join("code/tool"));
    // A `#!` wrapper is the script: what it is handed is not one.
    assert_eq!(s.probe("scripted", "read", &ssh.join("config")), "errno 13", "{l}");
    assert_eq!(s.probe("scripted", "read", &ssh.join("id_test")), "errno 13");
    // env passes over the plain file: the interpreter is ~/bin/probeinterp, alone.
    assert_eq!(s.probe("envname", "read", &ssh.join("id_test")), "errno 13", "{l}");
    assert_eq!(s.probe("envname", "read", &ssh.join("probeinterp")), "errno 13");
    // The control: a real script's folder is readable as a tree.
    assert_eq!(s.probe("real", "read", &tool.join("helper.txt")), "ok 4", "{l}");
    assert_eq!(s.probe("real", "read", &ssh.join("id_test")), "errno 13");
    // Listings show each derived grant, marked.
    let reads = |n: &str| l["extensions"].as_array().and_then(|a| a.iter().find(|e| e["name"] == n)).map_or(Value::Null, |e| e["confinement"]["reads"].clone());
    assert_eq!(reads("scripted"), json!([]), "{l}");
    assert_eq!(reads("envname"), json!(["~/bin/probeinterp (its interpreter)"]), "{l}");
    assert_eq!(reads("real"), json!(["~/code/tool (the script it runs)"]), "{l}");
    s.stop();
}

#[test]
fn the_script_is_the_first_argument_that_names_a_regular_file() {
    need_landlock!();
    if !Path::new("/usr/bin/python3").exists() {
        return common::skip("no /usr/bin/python3");
    }
    let t = TempDir::new("paths-script-arg");
    let user = mkdir(&t.path().join("user"));
    let ssh = mkdir(&user.join(".ssh"));
    std::fs::write(ssh.join("config"), "Host x\n").expect("plant");
    let tool = mkdir(&user.join("code/flagged"));
    std::fs::copy(fixture("probe.py"), tool.join("probe.py")).expect("copy");
    std::fs::write(tool.join("helper.txt"), "help").expect("write");
    // `ignore`, the value of -W, names a folder beside the manifest: not a
    // regular file, so not the script; the file after the script grants nothing.
    let args = json!(["-W", "ignore", tool.join("probe.py"), "flagged", ssh.join("config")]);
    let ext = write_manifest(&mkdir(&t.path().join("exts")), "flagged", json!({"name": "flagged", "exec": "/usr/bin/python3", "args": args, "confine": {}}));
    mkdir(&ext.join("ignore"));
    let home = user.display().to_string();
    let mut s = Serve::start(&t, t.path(), &[&ext], &[("HOME", &home)]);
    let l = s.wait_started(&["flagged"]);
    assert_eq!(s.probe("flagged", "read", &tool.join("helper.txt")), "ok 4", "{l}");
    assert_eq!(s.probe("flagged", "read", &ssh.join("config")), "errno 13");
    let e = l["extensions"].as_array().and_then(|a| a.iter().find(|e| e["name"] == "flagged")).cloned().unwrap_or_default();
    assert_eq!(e["confinement"]["reads"], json!(["~/code/flagged (the script it runs)"]), "{l}");
    s.stop();
}

#[test]
fn the_trust_line_shows_exactly_the_derived_grants() {
    let t = TempDir::new("paths-derived-trust");
    let project = mkdir(&t.path().join("project"));
    let w = derived_world(&t, &mkdir(&project.join(".zot/extensions")));
    let user = w.user.display().to_string();
    let out = common::run_zot(BIN, t.path(), Some(&t.path().join("zot-home")), &["trust", project.to_str().expect("utf-8")], &[("HOME", &user)]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let lines: Vec<&str> = out.stdout.lines().take(3).collect();
    assert_eq!(
        lines,
        [
            "  envname: reads ~/bin/probeinterp (its interpreter); writes nothing; network: none",
            "  real: reads ~/code/tool (the script it runs); writes nothing; network: none",
            "  scripted: reads nothing; writes nothing; network: none",
        ],
        "{}",
        out.stdout
    );
}

#[test]
fn etc_secrets_stay_out_of_a_root_hosts_confined_children() {
    need_landlock!();
    // SAFETY: reads our own id.
    if unsafe { libc::geteuid() } != 0 {
        return common::skip("not root: the secrets of /etc are unreadable anyway");
    }
    let t = TempDir::new("paths-etc");
    let (open, jailed) = (probe_ext(t.path(), "open", None), probe_ext(t.path(), "jailed", Some(json!({}))));
    let h = host(&t, t.path(), vec![open, jailed]);
    // The control: unconfined, a root child reads /etc/shadow.
    assert!(run(&h, "open", "read", "/etc/shadow").starts_with("ok "));
    assert_eq!(run(&h, "jailed", "read", "/etc/shadow"), "errno 13");
    assert_eq!(run(&h, "jailed", "read", "/etc/gshadow"), if Path::new("/etc/gshadow").exists() { "errno 13" } else { "errno 2" });
    assert!(run(&h, "jailed", "read", "/etc/passwd").starts_with("ok "));
    assert!(run(&h, "jailed", "read", "/etc/resolv.conf").starts_with("ok "));
    let cert = std::fs::read_dir("/etc/ssl/certs").ok().and_then(|mut d| d.find_map(|e| e.ok().map(|e| e.path()).filter(|p| p.is_file())));
    if let Some(cert) = cert {
        assert!(run(&h, "jailed", "read", cert.display().to_string()).starts_with("ok "), "{}", cert.display());
    }
    h.shutdown();
}

#[test]
fn the_terminals_are_carved_out_of_a_read_of_the_root() {
    need_landlock!();
    let t = TempDir::new("paths-pts");
    let (open, jailed) = (probe_ext(t.path(), "open", None), probe_ext(t.path(), "jailed", Some(json!({"read": ["/"]}))));
    let h = host(&t, t.path(), vec![open, jailed]);
    assert_eq!(run(&h, "open", "open", "/dev/pts"), "ok /dev/pts");
    assert_eq!(run(&h, "jailed", "open", "/dev/pts"), "errno 13");
    if Path::new("/dev/tty1").exists() {
        assert_eq!(run(&h, "jailed", "open", "/dev/tty1"), "errno 13");
    }
    // The control: the rest of / is read, /dev/null among it.
    assert_eq!(run(&h, "jailed", "open", "/dev/null"), "ok /dev/null");
    assert_eq!(run(&h, "jailed", "open", "/usr"), "ok /usr");
    h.shutdown();
}

#[test]
fn a_write_grant_over_a_repository_leaves_git_config_and_hooks_read_only() {
    need_landlock!();
    let t = TempDir::new("paths-git");
    let project = mkdir(&t.path().join("project"));
    let git = mkdir(&project.join(".git"));
    mkdir(&git.join("hooks"));
    mkdir(&project.join("src"));
    std::fs::write(git.join("config"), "[core]\n").expect("write");
    std::fs::write(git.join("description"), "repo\n").expect("write");
    std::fs::write(project.join("src/a.txt"), "a").expect("write");
    let exts = mkdir(&t.path().join("exts"));
    let (open, jailed) = (probe_ext(&exts, "open", None), probe_ext(&exts, "jailed", Some(json!({"write": ["${PROJECT}"]}))));
    let named = probe_ext(&exts, "named", Some(json!({"write": ["${PROJECT}", "${PROJECT}/.git/config", "${PROJECT}/.git/hooks"]})));
    let h = host(&t, &project, vec![open, jailed, named]);
    let p = |rel: &str| project.join(rel).display().to_string();
    assert_eq!(run(&h, "jailed", "write", p(".git/config")), "errno 13");
    assert_eq!(run(&h, "jailed", "write", p(".git/hooks/pre-commit")), "errno 13");
    assert!(run(&h, "jailed", "read", p(".git/config")).starts_with("ok "));
    // The controls: a file beside it and the rest of the project are written.
    assert_eq!(run(&h, "jailed", "write", p(".git/description")), format!("ok {}", p(".git/description")));
    assert_eq!(run(&h, "jailed", "write", p("src/new.txt")), format!("ok {}", p("src/new.txt")));
    assert_eq!(run(&h, "open", "write", p(".git/config")), format!("ok {}", p(".git/config")));
    // Named in `write` themselves, they are written.
    assert_eq!(run(&h, "named", "write", p(".git/hooks/pre-commit")), format!("ok {}", p(".git/hooks/pre-commit")));
    assert_eq!(run(&h, "named", "write", p(".git/config")), format!("ok {}", p(".git/config")));
    h.shutdown();
}

#[test]
fn a_write_grant_keeps_config_and_hooks_read_only_in_every_repository_it_holds() {
    need_landlock!();
    let t = TempDir::new("paths-git-deep");
    let code = mkdir(&t.path().join("code"));
    let file = |p: &Path, text: &str| {
        mkdir(p.parent().expect("parent"));
        std::fs::write(p, text).expect("write");
    };
    let git_dir = |g: &Path| {
        mkdir(&g.join("hooks"));
        mkdir(&g.join("objects"));
        mkdir(&g.join("refs/heads"));
        file(&g.join("HEAD"), "ref: refs/heads/main\n");
        file(&g.join("config"), "[core]\n");
        file(&g.join("description"), "repo\n");
    };
    // A repository two folders below the grant.
    git_dir(&code.join("org/deep/.git"));
    file(&code.join("org/deep/src/a.txt"), "a");
    // A repository with a submodule (its git dir in `.git/modules/sub`,
    // with one of its own), and a worktree whose `.git` is a file.
    let app = code.join("app/.git");
    git_dir(&app);
    git_dir(&app.join("modules/sub"));
    git_dir(&app.join("modules/sub/modules/inner"));
    file(&code.join("app/sub/.git"), "gitdir: ../.git/modules/sub\n");
    let wt = app.join("worktrees/wt");
    file(&wt.join("HEAD"), "ref: refs/heads/wt\n");
    file(&wt.join("commondir"), "../..\n");
    file(&wt.join("config.worktree"), "[core]\n");
    file(&code.join("app-wt/.git"), &format!("gitdir: {}\n", wt.display()));
    file(&code.join("app-wt/src/a.txt"), "a");
    // A bare repository, which a push runs the hooks of.
    git_dir(&code.join("srv/bare.git"));
    let exts = mkdir(&t.path().join("exts"));
    let (open, jailed) = (probe_ext(&exts, "open", None), probe_ext(&exts, "jailed", Some(json!({"write": [code.display().to_string()]}))));
    let h = host(&t, &code, vec![open, jailed]);
    let p = |rel: &str| code.join(rel).display().to_string();
    for kept in [
        "org/deep/.git/hooks/pre-commit",
        "org/deep/.git/config",
        "app/.git/modules/sub/config",
        "app/.git/modules/sub/hooks/pre-commit",
        "app/.git/modules/sub/modules/inner/config",
        "app/.git/worktrees/wt/config.worktree",
        "app/.git/worktrees/wt/commondir",
        "app/sub/.git",
        "app-wt/.git",
        "srv/bare.git/hooks/post-receive",
        "srv/bare.git/config",
    ] {
        assert_eq!(run(&h, "jailed", "write", p(kept)), "errno 13", "{kept}");
        if code.join(kept).is_file() {
            assert!(run(&h, "jailed", "read", p(kept)).starts_with("ok "), "{kept} stays readable");
        }
    }
    assert_eq!(std::fs::read_to_string(code.join("app-wt/.git")).expect("read"), format!("gitdir: {}\n", wt.display()));
    // The controls: the rest of each repository is written, and unconfined
    // the same paths are.
    for free in ["org/deep/src/new.txt", "org/deep/.git/description", "app/.git/modules/sub/description", "app-wt/src/new.txt", "srv/bare.git/description"] {
        assert_eq!(run(&h, "jailed", "write", p(free)), format!("ok {}", p(free)));
    }
    for kept in ["org/deep/.git/hooks/pre-commit", "app/.git/modules/sub/config", "app-wt/.git", "srv/bare.git/hooks/post-receive"] {
        assert_eq!(run(&h, "open", "write", p(kept)), format!("ok {}", p(kept)));
    }
    h.shutdown();
}

#[test]
fn a_write_grant_too_big_to_look_through_for_repositories_fails_its_start_naming_it() {
    need_landlock!();
    let t = TempDir::new("paths-git-budget");
    let big = mkdir(&t.path().join("big"));
    // One entry more than a start looks through (100,000).
    for i in 0..100 {
        let d = mkdir(&big.join(format!("d{i}")));
        for j in 0..999 {
            std::fs::File::create(d.join(format!("f{j}"))).expect("create");
        }
    }
    std::fs::File::create(big.join("last")).expect("create");
    let small = mkdir(&t.path().join("small"));
    let exts = mkdir(&t.path().join("exts"));
    let (wide, narrow) = (
        probe_ext(&exts, "wide", Some(json!({"write": [big.display().to_string()]}))),
        probe_ext(&exts, "narrow", Some(json!({"write": [small.display().to_string()]}))),
    );
    let h = host(&t, t.path(), vec![wide, narrow]);
    let error = common::ext_info(&h, "wide").error.unwrap_or_default();
    let want = format!("confine.write: {:?} ({}) holds more than 100000 entries to look through for git repositories", big.display().to_string(), big.display());
    assert!(error.contains(&want), "{error:?}\nwanted: {want}");
    // The control: a grant within the budget starts, and writes.
    let f = small.join("x").display().to_string();
    assert_eq!(run(&h, "narrow", "write", f.clone()), format!("ok {f}"));
    // One entry fewer, the same grant starts too.
    std::fs::remove_file(big.join("last")).expect("rm");
    h.shutdown();
    let h = host(&t, t.path(), vec![exts.join("wide")]);
    let f = big.join("d0/f0").display().to_string();
    assert_eq!(run(&h, "wide", "write", f.clone()), format!("ok {f}"));
    h.shutdown();
}

#[test]
fn the_trust_line_has_every_clause_in_its_grammar_under_the_mode_in_force() {
    let t = TempDir::new("paths-line");
    let project = mkdir(&t.path().join("project"));
    mkdir(&project.join(".git/hooks"));
    std::fs::write(project.join(".git/config"), "").expect("write");
    let elsewhere = mkdir(&t.path().join("elsewhere"));
    let exts = project.join(".zot/extensions");
    let ext = |name: &str, confine: Option<Value>| {
        let mut m = json!({"name": name, "exec": "./run"});
        if let Some(c) = confine {
            m["confine"] = c;
        }
        let d = write_manifest(&exts, name, m);
        write_exec(&d.join("run"), "#!/bin/sh\n");
        d
    };
    let every = ext(
        "every",
        Some(json!({"read": ["/opt", "out"], "write": ["${PROJECT}"], "net": {"connect": [443, 80]}, "unix": true,
            "call": ["weather", "mcp__github__*"], "env": ["API_KEY", "REGION"], "watch": true, "prompt": true, "namespaces": true})),
    );
    symlink(&elsewhere, every.join("out")).expect("symlink");
    ext("plain", Some(json!({"net": true})));
    ext("legacy", None);
    let dir = project.to_str().expect("utf-8");
    let zh = t.path().join("zot-home");
    let trust = |args: &[&str], env: &[(&str, &str)]| {
        let mut a = vec!["trust"];
        a.extend_from_slice(args);
        a.push(dir);
        common::run_zot(BIN, t.path(), Some(&zh), &a, env)
    };
    let out = trust(&[], &[]);
    let target = elsewhere.canonicalize().expect("real");
    let lines: Vec<String> = out.stdout.lines().take(3).map(str::to_string).collect();
    assert_eq!(
        lines,
        [
            format!("  every: reads /opt, out (-> {}); writes ${{PROJECT}} (.git/config and .git/hooks read-only); network: TCP ports 443, 80; UDP: any; unix sockets: any; calls: weather, mcp__github__*; env: API_KEY, REGION; watches folders; steers the model; user namespaces", target.display()),
            "  legacy: full access to your files and network".to_string(),
            "  plain: reads nothing; writes nothing; network: any".to_string(),
        ],
        "{}",
        out.stdout
    );
    // What of its rules the kernel does not enforce is said (§9.3), once,
    // after the lines: `unix: true` here; `plain` has nothing to say.
    let loose = out.stdout.lines().find(|l| l.starts_with("not enforced here: ")).unwrap_or_else(|| panic!("{}", out.stdout));
    assert!(loose.contains("every (unix") && !loose.contains("plain") && !loose.contains("legacy"), "{loose}");
    // `--confine all`: one that declares nothing gets the project to read
    // and its data to write; the flag wins over ZOT_CONFINE.
    let out = trust(&["--confine", "all"], &[("ZOT_CONFINE", "off")]);
    assert!(out.stdout.lines().any(|l| l == "  legacy: reads ${PROJECT}; writes ${DATA}; network: none"), "{}", out.stdout);
    let out = trust(&[], &[("ZOT_CONFINE", "off")]);
    assert!(out.stdout.lines().take(3).all(|l| l.ends_with(": full access to your files and network")), "{}", out.stdout);
    // Under `off` every rule declared is not enforced, and said so.
    let loose = out.stdout.lines().find(|l| l.starts_with("not enforced here: ")).unwrap_or_else(|| panic!("{}", out.stdout));
    assert!(loose.contains("every (files, ") && loose.contains("plain (files, ") && !loose.contains("legacy"), "{loose}");
    let out = trust(&["--confine", "some"], &[]);
    assert_eq!((out.code, out.stderr.trim()), (2, "zot: --confine: unknown mode \"some\" (declared, all, off)"), "{}", out.stdout);
}

/// `zot serve` of `exts` run as the unprivileged uid 65534 by `setpriv`,
/// its probe tools called one at a time.
struct Nobody {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: std::io::BufReader<std::process::ChildStdout>,
    next: u64,
}

impl Nobody {
    fn start(t: &TempDir, exts: &[&PathBuf], home: &Path) -> Option<Nobody> {
        use std::process::{Command, Stdio};
        let setpriv = ["/usr/bin/setpriv", "/bin/setpriv"].into_iter().find(|p| Path::new(p).exists())?;
        let mut args = strings(&["--reuid=65534", "--regid=65534", "--clear-groups", BIN, "serve", "--no-ext", "--cwd"]);
        args.push(t.path().display().to_string());
        args.extend(strings(&FAST));
        for e in exts {
            args.push("--ext".into());
            args.push(e.display().to_string());
        }
        let mut child = Command::new(setpriv)
            .args(&args)
            .env("ZOT_HOME", t.path().join("zot-home"))
            .env("HOME", home)
            .env("PATH", "/usr/bin:/bin")
            .current_dir(t.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let stdin = child.stdin.take()?;
        let stdout = std::io::BufReader::new(child.stdout.take()?);
        Some(Nobody { child, stdin, stdout, next: 0 })
    }

    fn probe(&mut self, name: &str, op: &str, arg: &Path) -> String {
        use std::io::{BufRead, Write};
        self.next += 1;
        let id = self.next;
        let req = json!({"id": id, "type": "tool", "name": format!("{name}_probe"), "args": {"op": op, "arg": arg}});
        writeln!(self.stdin, "{req}").expect("write");
        let mut line = String::new();
        loop {
            line.clear();
            assert!(self.stdout.read_line(&mut line).expect("read") > 0, "zot serve ended before answering {id}");
            let f: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            if f["type"] == "response" && f["id"] == id {
                return f["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("{f}")).to_string();
            }
        }
    }

    fn finish(self) {
        let Nobody { mut child, stdin, .. } = self;
        drop(stdin);
        let _ = child.wait();
    }
}

/// The same derived grants for a host run by an ordinary user, whose
/// own `~/.ssh` an unconfined extension reads (the control).
#[test]
fn derived_grants_hold_for_an_unprivileged_host() {
    need_landlock!();
    // SAFETY: reads our own id.
    if unsafe { libc::geteuid() } != 0 || !Path::new("/usr/bin/python3").exists() {
        return common::skip("not root (cannot become uid 65534), or no /usr/bin/python3");
    }
    let t = TempDir::new("paths-nobody");
    let exts = mkdir(&t.path().join("exts"));
    let w = derived_world(&t, &exts);
    // Unconfined, from its own folder (uid 65534 cannot reach this test's).
    let open = mkdir(&exts.join("open"));
    std::fs::copy(fixture("probe.py"), open.join("probe.py")).expect("copy");
    write_manifest(&exts, "open", json!({"name": "open", "exec": "/usr/bin/python3", "args": [open.join("probe.py"), "open"]}));
    let chown = std::process::Command::new("chown").args(["-R", "65534:65534"]).arg(t.path()).status().expect("chown");
    assert!(chown.success());
    let mut all: Vec<&PathBuf> = w.exts.iter().collect();
    all.push(&open);
    let Some(mut z) = Nobody::start(&t, &all, &w.user) else { return common::skip("no setpriv (util-linux)") };
    let ssh = w.user.join(".ssh");
    assert_eq!(z.probe("open", "status", Path::new("Uid")), "ok Uid:\t65534\t65534\t65534\t65534");
    assert_eq!(z.probe("open", "read", &ssh.join("id_test")), "ok 6");
    assert_eq!(z.probe("scripted", "read", &ssh.join("config")), "errno 13");
    assert_eq!(z.probe("scripted", "read", &ssh.join("id_test")), "errno 13");
    assert_eq!(z.probe("envname", "read", &ssh.join("id_test")), "errno 13");
    assert_eq!(z.probe("real", "read", &w.user.join("code/tool/helper.txt")), "ok 4");
    assert_eq!(z.probe("real", "read", &ssh.join("id_test")), "errno 13");
    z.finish();
}

/// A grant of `${DATA}` declared read-only does not take away the write
/// every confined process has there: one resolution, the wider access kept.
#[test]
fn a_declared_read_of_data_keeps_its_write() {
    need_landlock!();
    let t = TempDir::new("paths-data-read");
    let ext = probe_ext(t.path(), "keeper", Some(json!({"read": ["${DATA}"]})));
    let h = host(&t, t.path(), vec![ext]);
    let data = run(&h, "keeper", "data_dir", Value::Null);
    let data = data.strip_prefix("ok ").unwrap_or_else(|| panic!("{data}"));
    let file = Path::new(data).join("state.json").display().to_string();
    assert_eq!(run(&h, "keeper", "write", file.as_str()), format!("ok {file}"));
    h.shutdown();
}

/// What a start derives from its arguments never reaches into `$ZOT_HOME`
/// (zot's own auth files, another extension's data) and is never hidden
/// behind a declared grant whose carve-out holds it.
#[test]
fn derived_grants_never_reach_into_zot_home_nor_hide_behind_a_carve_out() {
    need_landlock!();
    if !Path::new("/usr/bin/python3").exists() {
        return common::skip("no /usr/bin/python3");
    }
    let t = TempDir::new("paths-derived-zot");
    let user = mkdir(&t.path().join("user"));
    let zot = mkdir(&user.join(".local/state/zot"));
    let auth = mkdir(&zot.join("auth")).join("anthropic.json");
    std::fs::write(&auth, "sk-secret").expect("plant");
    let other = mkdir(&zot.join("data/other"));
    std::fs::copy(fixture("probe.py"), other.join("state.py")).expect("copy");
    let ssh = mkdir(&user.join(".ssh"));
    std::fs::write(ssh.join("id_test"), "secret").expect("plant");
    std::fs::copy(fixture("probe.py"), ssh.join("probe.py")).expect("copy");
    let exts = mkdir(&t.path().join("exts"));
    // A `#!` wrapper handed zot's auth file: the wrapper is the script.
    let wrapper = |name: &str, confine: Value| {
        let e = write_manifest(&exts, name, json!({"name": name, "exec": "./run", "args": [auth], "confine": confine}));
        std::fs::copy(fixture("probe.py"), e.join("probe.py")).expect("copy");
        write_exec(&e.join("run"), &format!("#!/bin/sh\nexec /usr/bin/python3 \"$(dirname \"$0\")/probe.py\" {name}\n"));
        e
    };
    let wrapped = wrapper("wrapped", json!({"read": [], "write": []}));
    let homed = wrapper("homed", json!({"read": ["~"]}));
    // An interpreter handed a script in another extension's data.
    let handed = write_manifest(&exts, "handed", json!({"name": "handed", "exec": "/usr/bin/python3", "args": [other.join("state.py"), "handed"], "confine": {}}));
    // An interpreter handed a script inside a declared grant's carve-out.
    let denied = write_manifest(&exts, "denied", json!({"name": "denied", "exec": "/usr/bin/python3", "args": [ssh.join("probe.py"), "denied"], "confine": {"read": ["~"], "deny": ["~/.ssh"]}}));
    let open = probe_ext(&exts, "open", None);
    let env = [("HOME", user.to_str().expect("utf-8")), ("ZOT_HOME", zot.to_str().expect("utf-8"))];
    let mut s = Serve::start(&t, t.path(), &[&wrapped, &homed, &handed, &denied, &open], &env);
    let l = s.wait_started(&["wrapped", "homed", "handed", "denied", "open"]);
    let ext = |n: &str| l["extensions"].as_array().and_then(|a| a.iter().find(|e| e["name"] == n)).cloned().unwrap_or(Value::Null);
    // The control: unconfined, the file is there to read.
    assert_eq!(s.probe("open", "read", &auth), "ok 9", "{l}");
    assert_eq!(s.probe("wrapped", "read", &auth), "errno 13", "{l}");
    assert_eq!(ext("wrapped")["confinement"]["reads"], json!([]), "{l}");
    assert_eq!(s.probe("homed", "read", &auth), "errno 13", "{l}");
    assert_eq!(ext("homed")["confinement"]["reads"], json!(["~"]), "{l}");
    // Its script is not granted: it cannot even start, and says nothing of it.
    assert_ne!(ext("handed")["state"], "ready", "{l}");
    assert_eq!(ext("handed")["confinement"]["reads"], json!([]), "{l}");
    // Derived inside ~/.ssh, which `deny` carves out of `~`: shown apart.
    assert_eq!(ext("denied")["confinement"]["reads"], json!(["~", "~/.ssh/probe.py (the script it runs)"]), "{l}");
    assert_eq!(s.probe("denied", "read", &ssh.join("id_test")), "errno 13", "{l}");
    assert!(s.probe("denied", "read", &ssh.join("probe.py")).starts_with("ok "), "{l}");
    s.stop();
}

/// The cgroup file systems, from this process's mountinfo: `(mount point,
/// its cgroup.procs)` for those that have one.
fn cgroup_procs() -> Vec<(PathBuf, PathBuf)> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    info.lines()
        .filter_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            let point = PathBuf::from(left.split_whitespace().nth(4)?);
            let procs = point.join("cgroup.procs");
            (matches!(right.split_whitespace().next(), Some("cgroup" | "cgroup2")) && procs.exists()).then_some((point, procs))
        })
        .collect()
}

/// A root host's child granted `write` on a cgroup file system (or the
/// folder above them) cannot move itself out of its cgroup: every cgroup
/// mount is carved out of every grant.
#[test]
fn a_write_grant_never_reaches_a_cgroup_file_system() {
    need_landlock!();
    // SAFETY: reads our own id.
    if unsafe { libc::geteuid() } != 0 {
        return common::skip("not root: the cgroup files are the kernel's to refuse");
    }
    let Some((mount, procs)) = cgroup_procs().into_iter().next() else { return common::skip("no cgroup file system mounted") };
    let above = mount.parent().unwrap_or(Path::new("/")).to_path_buf();
    let t = TempDir::new("paths-cgroup");
    let open = probe_ext(t.path(), "open", None);
    let whole = probe_ext(t.path(), "whole", Some(json!({"write": [above], "limits": {"procs": 16}})));
    let named = probe_ext(t.path(), "named", Some(json!({"write": [mount], "limits": {"procs": 16}})));
    let h = host(&t, t.path(), vec![open, whole, named]);
    let procs = procs.display().to_string();
    // The control: unconfined, it is opened for writing (and "x" is no pid).
    assert_eq!(run(&h, "open", "write", procs.as_str()), "errno 22");
    assert_eq!(run(&h, "whole", "write", procs.as_str()), "errno 13");
    assert_eq!(run(&h, "named", "write", procs.as_str()), "errno 13");
    h.shutdown();
}

/// Through a grant of `/` (VS Code's sandbox maps to one), only an
/// allow-list of `/dev` stays reachable: no serial line, no console's
/// screen. Each device is tried only where the unconfined control opens it.
#[test]
fn a_read_of_the_root_reaches_only_the_allowed_devices() {
    need_landlock!();
    let t = TempDir::new("paths-dev");
    let (open, jailed) = (probe_ext(t.path(), "open", None), probe_ext(t.path(), "jailed", Some(json!({"read": ["/"]}))));
    let h = host(&t, t.path(), vec![open, jailed]);
    let mut tried = 0;
    for dev in ["/dev/ttyS0", "/dev/vcs", "/dev/vcs1", "/dev/vcsa", "/dev/vcsa1", "/dev/mem", "/dev/kmsg"] {
        if run(&h, "open", "open", dev) == format!("ok {dev}") {
            assert_eq!(run(&h, "jailed", "open", dev), "errno 13", "{dev}");
            tried += 1;
        }
    }
    // The control: the allow-list is read through the same grant.
    for dev in ["/dev/null", "/dev/full", "/dev/urandom"] {
        assert_eq!(run(&h, "jailed", "open", dev), format!("ok {dev}"));
    }
    assert!(run(&h, "jailed", "read", "/etc/hostname").starts_with("ok ") || !Path::new("/etc/hostname").exists());
    h.shutdown();
    if tried == 0 {
        common::skip("no device beyond the allow-list opens here");
    }
}

/// A folder planted in `/etc` for one test, removed after it.
struct Planted(PathBuf);

impl Drop for Planted {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A root host's confined child reads no secret of `/etc`, however deep.
#[test]
fn etc_secrets_deeper_than_four_levels_stay_out_of_reach() {
    need_landlock!();
    // SAFETY: reads our own id.
    if unsafe { libc::geteuid() } != 0 {
        return common::skip("not root: the secrets of /etc are unreadable anyway");
    }
    let planted = Planted(PathBuf::from(format!("/etc/zot-test-deep-{}", std::process::id())));
    let deep = mkdir(&planted.0.join("a/b/c/d"));
    let (key, open_file) = (deep.join("key"), deep.join("open.conf"));
    std::fs::write(&key, "SECRET5").expect("plant");
    std::fs::write(&open_file, "shared").expect("plant");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    std::fs::set_permissions(&open_file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let t = TempDir::new("paths-etc-deep");
    let (open, jailed) = (probe_ext(t.path(), "open", None), probe_ext(t.path(), "jailed", Some(json!({}))));
    // A host of its own: /etc is looked through once per host.
    let mut s = Serve::start(&t, t.path(), &[&open, &jailed], &[]);
    s.wait_started(&["open", "jailed"]);
    // The control: unconfined, the key is read; confined, the open file beside it.
    assert_eq!(s.probe("open", "read", &key), "ok 7");
    assert_eq!(s.probe("jailed", "read", &key), "errno 13");
    assert_eq!(s.probe("jailed", "read", &open_file), "ok 6");
    s.stop();
}

#[test]
fn a_running_start_is_listed_as_its_enforcement_resolved_it_until_it_starts_again() {
    need_landlock!();
    let t = TempDir::new("paths-once");
    let (old, new) = (mkdir(&t.path().join("old")), mkdir(&t.path().join("new")));
    std::fs::write(old.join("f"), "old").expect("write");
    std::fs::write(new.join("f"), "new").expect("write");
    let (old, new) = (old.canonicalize().expect("real"), new.canonicalize().expect("real"));
    let exts = mkdir(&t.path().join("exts"));
    let linked = probe_ext(&exts, "linked", Some(json!({"read": ["look"]})));
    symlink(&old, linked.join("look")).expect("symlink");
    let h = host(&t, t.path(), vec![linked.clone()]);
    // Its declared read comes first; the derived ones (python, the probe) follow.
    let reads = |h: &Host| common::ext_info(h, "linked").confinement["reads"][0].clone();
    let read = |h: &Host, p: &Path| run(h, "linked", "read", p.display().to_string());
    assert_eq!(reads(&h), json!(format!("look (-> {})", old.display())));
    assert_eq!(read(&h, &old.join("f")), "ok 3");
    assert!(read(&h, &new.join("f")).starts_with("errno 13"));

    // The link now leads elsewhere: the running start still reaches the
    // old target alone, and is listed so.
    std::fs::remove_file(linked.join("look")).expect("rm");
    symlink(&new, linked.join("look")).expect("symlink");
    assert_eq!(reads(&h), json!(format!("look (-> {})", old.display())));
    assert_eq!(read(&h, &old.join("f")), "ok 3");
    assert!(read(&h, &new.join("f")).starts_with("errno 13"));
    assert!(read(&h, &linked.join("look/f")).starts_with("errno 13"));

    // The control: its next start resolves the link again, and both the
    // listing and the kernel follow it there.
    match h.call(Request::Restart { name: "linked".into() }) {
        Ok(Response::Restarted { .. }) => {}
        other => panic!("restart: {other:?}"),
    }
    assert_eq!(reads(&h), json!(format!("look (-> {})", new.display())));
    assert_eq!(read(&h, &new.join("f")), "ok 3");
    assert_eq!(read(&h, &linked.join("look/f")), "ok 3");
    assert!(read(&h, &old.join("f")).starts_with("errno 13"));
    h.shutdown();
}

/// The cgroup file systems are found again at each start without reading
/// every mount each time: one mounted while the host runs is carved out of
/// the next start all the same.
#[test]
fn a_cgroup_file_system_mounted_while_the_host_runs_is_carved_out_of_the_next_start() {
    need_landlock!();
    // SAFETY: reads our own id.
    if unsafe { libc::geteuid() } != 0 {
        return common::skip("not root: cannot mount a cgroup file system");
    }
    let t = TempDir::new("paths-cgroup-late");
    let area = mkdir(&t.path().join("area"));
    let open = probe_ext(t.path(), "open", None);
    let late = probe_ext(t.path(), "late", Some(json!({"write": [area], "limits": {"procs": 16}})));
    let h = host(&t, t.path(), vec![open, late]);
    let cg = mkdir(&area.join("cg"));
    // The grant is split around the mount from then on: an entry already
    // there stays writable.
    std::fs::write(area.join("x"), "").expect("write");
    let c = |p: &Path| std::ffi::CString::new(p.display().to_string()).expect("path");
    let (none, fstype, at) = (c(Path::new("none")), c(Path::new("cgroup2")), c(&cg));
    // SAFETY: NUL-terminated strings; no data.
    if unsafe { libc::mount(none.as_ptr(), at.as_ptr(), fstype.as_ptr(), 0, std::ptr::null()) } != 0 {
        h.shutdown();
        return common::skip(&format!("cannot mount cgroup2: {}", std::io::Error::last_os_error()));
    }
    let procs = cg.join("cgroup.procs").display().to_string();
    match h.call(Request::Restart { name: "late".into() }) {
        Ok(Response::Restarted { .. }) => {}
        other => panic!("restart: {other:?}"),
    }
    let (refused, control) = (run(&h, "late", "write", procs.as_str()), run(&h, "open", "write", procs.as_str()));
    // The control still reaches its grant beside it.
    let beside = area.join("x").display().to_string();
    let beside_ok = run(&h, "late", "write", beside.as_str());
    h.shutdown();
    // SAFETY: a NUL-terminated path we mounted.
    unsafe { libc::umount2(at.as_ptr(), libc::MNT_DETACH) };
    assert_eq!(control, "errno 22");
    assert_eq!(refused, "errno 13");
    assert_eq!(beside_ok, format!("ok {beside}"));
}

/// A grant split around a denied path keeps its entries' descriptors from
/// one start to the next only while no folder on the way changes: an
/// entry replaced while the host runs is granted as it is now at the next
/// start (the old file's descriptor would grant nothing reachable).
#[test]
fn a_split_grant_follows_an_entry_replaced_while_the_host_runs() {
    need_landlock!();
    let t = TempDir::new("paths-split-kept");
    let area = mkdir(&t.path().join("area"));
    std::fs::write(area.join("f"), "old").expect("write");
    std::fs::write(area.join("secret"), "s").expect("write");
    let area = area.canonicalize().expect("real");
    // The descriptors are kept only for folders that last changed more
    // than 3 s before (file times can be as coarse as a clock tick).
    std::thread::sleep(Duration::from_secs(4));
    let exts = mkdir(&t.path().join("exts"));
    let split = probe_ext(&exts, "split", Some(json!({"read": [area], "deny": [area.join("secret")]})));
    let h = host(&t, t.path(), vec![split]);
    let read = |p: &Path| run(&h, "split", "read", p.display().to_string());
    let restart = || match h.call(Request::Restart { name: "split".into() }) {
        Ok(Response::Restarted { .. }) => {}
        other => panic!("restart: {other:?}"),
    };
    assert_eq!(read(&area.join("f")), "ok 3");
    assert!(read(&area.join("secret")).starts_with("errno 13"));
    // Unchanged: the next start grants the same entries, the secret still out.
    restart();
    assert_eq!(read(&area.join("f")), "ok 3");
    assert!(read(&area.join("secret")).starts_with("errno 13"));
    // Replaced by a rename, as editors and package managers do.
    std::fs::write(area.join("f.new"), "newer").expect("write");
    std::fs::rename(area.join("f.new"), area.join("f")).expect("rename");
    restart();
    assert_eq!(read(&area.join("f")), "ok 5");
    assert!(read(&area.join("secret")).starts_with("errno 13"));
    h.shutdown();
}

/// What a repository's config names for git to run or read (`core.hooksPath`,
/// `include.path`, `includeIf.*.path`, through the files included) stays
/// read-only inside a `write` grant like `.git/hooks`, and a hooks folder
/// named there that does not exist yet cannot be made; the same paths in a
/// repository whose config names nothing are written.
#[test]
fn a_write_grant_leaves_the_hooks_and_includes_a_repository_names_read_only() {
    need_landlock!();
    let t = TempDir::new("paths-git-named");
    let repo = |root: &Path, config: &str| {
        mkdir(&root.join(".git/hooks"));
        std::fs::write(root.join(".git/config"), config).expect("write");
        for d in [".husky", "tools"] {
            mkdir(&root.join(d));
            std::fs::write(root.join(d).join("pre-commit"), "#!/bin/sh\n").expect("write");
        }
        for f in ["shared.inc", "more.inc"] {
            std::fs::write(root.join(f), "").expect("write");
        }
        root.canonicalize().expect("real")
    };
    let project = repo(&mkdir(&t.path().join("project")), "[core]\n\thooksPath = \".husky\" ; husky's\n[include]\n\tpath = ../shared.inc\n[other]\n\tpath = tools\n");
    std::fs::write(project.join("shared.inc"), "[includeIf \"gitdir:/\"]\n\tpath = more.inc\n[core \"x\"]\n\thooksPath = tools\n[Core]\n\tHooksPath = tools/hooks\n").expect("write");
    let plain = repo(&mkdir(&t.path().join("plain")), "[core]\n\tbare = false\n");
    let exts = mkdir(&t.path().join("exts"));
    let open = probe_ext(&exts, "open", None);
    let jailed = probe_ext(&exts, "jailed", Some(json!({"write": ["${PROJECT}", plain.display().to_string()]})));
    let h = host(&t, &project, vec![open, jailed]);
    let w = |name: &str, p: PathBuf| run(&h, name, "write", p.display().to_string());
    let ok = |p: &Path| format!("ok {}", p.display());
    for rel in [".husky/pre-commit", ".husky/post-merge", "shared.inc", "more.inc", "tools/hooks"] {
        assert_eq!(w("jailed", project.join(rel)), "errno 13", "{rel}");
    }
    // The controls: unconfined, the same paths are written; confined, what
    // the config names under another key, and the same paths of a
    // repository whose config names nothing.
    assert_eq!(w("open", project.join("more.inc")), ok(&project.join("more.inc")));
    assert_eq!(w("jailed", project.join("tools/pre-commit")), ok(&project.join("tools/pre-commit")));
    for rel in [".husky/pre-commit", ".husky/post-merge", "shared.inc", "more.inc", "tools/hooks"] {
        assert_eq!(w("jailed", plain.join(rel)), ok(&plain.join(rel)), "{rel}");
    }
    h.shutdown();
}

#[test]
fn a_script_run_as_the_program_is_marked_as_the_script_it_runs() {
    let t = TempDir::new("paths-script-exec");
    let project = mkdir(&t.path().join("project"));
    let srv = mkdir(&t.path().join("srv/mcp"));
    write_exec(&srv.join("server.sh"), "#!/bin/sh\n");
    let srv = srv.canonicalize().expect("real");
    write_manifest(&project.join(".zot/extensions"), "outside", json!({"name": "outside", "exec": srv.join("server.sh").display().to_string(), "confine": {}}));
    let out = common::run_zot(BIN, t.path(), Some(&t.path().join("zot-home")), &["trust", project.to_str().expect("utf-8")], &[]);
    let line = out.stdout.lines().next().unwrap_or_default().to_string();
    // Its folder is the script's, not an interpreter's (§9.3's marks).
    assert_eq!(line, format!("  outside: reads {} (the script it runs); writes nothing; network: none", srv.display()), "{}", out.stdout);
}
