//! What ends up on disk and in an extension's process, through the real
//! binary: the `ZOT_HOME` order (PROTOCOL §1), static extensions, the
//! environment of extensions and manifest `env` (§7.2), and trusted
//! projects with `zot trust` / `zot untrust` (§7.3). Every run has its own
//! `ZOT_HOME`, project directory and extension folders.

mod common;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use common::{fixture, write_manifest, Out, TempDir};
use serde_json::{json, Value};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use zot_proc::{strings, Zot, BIN, FAST, LINE_WAIT};

/// Runs `zot args...` in `cwd` with exactly the given zot-related variables.
fn zot(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Out {
    common::run_zot(BIN, cwd, None, args, env)
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// A shell extension folder `<parent>/<dir>` named `name` that exits at once
/// (enough to be installed and listed).
fn sh_folder(parent: &Path, dir: &str, name: &str) -> PathBuf {
    let d = write_manifest(parent, dir, json!({"name": name, "exec": "./run.sh"}));
    fs::write(d.join("run.sh"), "#!/bin/sh\nexit 0\n").expect("write");
    chmod_x(&d.join("run.sh"));
    d
}

fn chmod_x(p: &Path) {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(p, fs::Permissions::from_mode(0o755)).expect("chmod");
}

// ---------------------------------------------------------------------------
// ZOT_HOME

#[test]
fn zot_home_order_zot_home_then_xdg_state_home_then_home() {
    let t = TempDir::new("home-order");
    let src = sh_folder(t.path(), "src", "where");
    let installed = |root: &Path| root.join("extensions/where/extension.json").is_file();
    let user_home = t.path().join("user");
    fs::create_dir_all(&user_home).expect("mkdir");
    let xdg = t.path().join("xdg");
    let home = s(&user_home);

    // A relative ZOT_HOME is made absolute against the working directory,
    // and wins over XDG_STATE_HOME.
    let r = zot(t.path(), &["ext", "install", s(&src)], &[("ZOT_HOME", "rel/zh"), ("XDG_STATE_HOME", s(&xdg)), ("HOME", home)]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(installed(&t.path().join("rel/zh")), "{}", r.stdout);
    assert!(r.stdout.contains(s(&t.path().join("rel/zh/extensions/where"))), "absolute in messages: {}", r.stdout);
    assert!(!xdg.exists());

    // An empty ZOT_HOME counts as unset: XDG_STATE_HOME/zot.
    let r = zot(t.path(), &["ext", "install", s(&src)], &[("ZOT_HOME", ""), ("XDG_STATE_HOME", s(&xdg)), ("HOME", home)]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(installed(&xdg.join("zot")));

    // Neither: ~/.local/state/zot (this is not macOS or Windows).
    let r = zot(t.path(), &["ext", "install", s(&src)], &[("HOME", home)]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(installed(&user_home.join(".local/state/zot")));

    // `zot --help` names the home it resolved.
    let r = zot(t.path(), &["--help"], &[("XDG_STATE_HOME", s(&xdg)), ("HOME", home)]);
    assert!(r.stdout.contains(&format!("(now: {})", xdg.join("zot").display())), "{}", r.stdout);
    // A relative XDG_STATE_HOME is made absolute as ZOT_HOME is.
    let r = zot(t.path(), &["--help"], &[("XDG_STATE_HOME", "relx"), ("HOME", home)]);
    assert!(r.stdout.contains(&format!("(now: {})", t.path().join("relx/zot").display())), "{}", r.stdout);
}

// ---------------------------------------------------------------------------
// serve helpers

/// Starts `zot serve` with its own ZOT_HOME (`<t>/zot-home`), `--cwd cwd`,
/// project and global discovery on, and `extra` options.
fn serve(t: &Path, cwd: &Path, extra: &[&str], env: &[(&str, &str)]) -> Zot {
    let mut args = strings(&["serve", "--cwd", s(cwd)]);
    args.extend(strings(&FAST));
    args.extend(strings(extra));
    Zot::spawn(t, &args, env)
}

fn json_line(l: &str) -> Value {
    serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"))
}

fn ready(z: &mut Zot) -> Value {
    let l = z.wait_line("ready", |l| json_line(l)["type"] == "ready");
    json_line(&l)
}

fn request(z: &mut Zot, id: &str, mut req: Value) -> Value {
    req["id"] = json!(id);
    z.send(&req.to_string());
    let l = z.wait_line(&format!("response {id}"), |l| {
        let v = json_line(l);
        v["type"] == "response" && v["id"] == id
    });
    json_line(&l)
}

fn list(z: &mut Zot) -> Vec<Value> {
    let r = request(z, "list", json!({"type": "list"}));
    assert_eq!(r["ok"], true, "{r}");
    r["result"]["extensions"].as_array().expect("extensions").clone()
}

fn entry<'a>(exts: &'a [Value], name: &str) -> &'a Value {
    exts.iter().find(|e| e["name"] == name).unwrap_or_else(|| panic!("{name} not listed: {exts:?}"))
}

fn stop(z: &mut Zot) {
    let r = request(z, "bye", json!({"type": "shutdown"}));
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(z.exit_code(LINE_WAIT), 0);
}

fn names(v: &Value) -> Vec<String> {
    v.as_array().expect("array").iter().map(|n| n.as_str().expect("name").to_string()).collect()
}

// ---------------------------------------------------------------------------
// Static extensions

#[test]
fn static_extensions_are_ready_without_a_process_and_listed_with_absolute_paths() {
    let t = TempDir::new("static");
    let cwd = t.path().join("cwd");
    fs::create_dir_all(&cwd).expect("mkdir");
    let exts = t.path().join("exts");
    let skills = write_manifest(&exts, "skills", json!({"name": "skilled", "skills": ["skills/a", "./b/SKILL.md"]}));
    fs::create_dir_all(skills.join("skills/a")).expect("mkdir");
    fs::write(skills.join("skills/a/SKILL.md"), "# a\n").expect("write");
    fs::create_dir_all(skills.join("b")).expect("mkdir");
    fs::write(skills.join("b/SKILL.md"), "# b\n").expect("write");
    let themed = write_manifest(&exts, "themed", json!({"name": "themed"}));
    fs::create_dir_all(themed.join("themes")).expect("mkdir");
    fs::write(themed.join("themes/theme.json"), "{}").expect("write");
    let escaping = write_manifest(&exts, "escaping", json!({"name": "escaping", "skills": ["../skills"]}));
    let empty = write_manifest(&exts, "empty", json!({"name": "empty"}));
    let running = common::py_ext(&exts, "running", "running", &[]);

    let mut extra = Vec::new();
    for d in [&skills, &themed, &escaping, &empty, &running] {
        extra.push("--ext".to_string());
        extra.push(d.display().to_string());
    }
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let mut z = serve(t.path(), &cwd, &[&["--no-ext"][..], &extra].concat(), &[]);
    let r = ready(&mut z);
    assert_eq!(names(&r["extensions"]), ["skilled", "themed", "running"], "{r}");
    let announced: Vec<Value> =
        z.seen.iter().map(|l| json_line(l)).filter(|v| v["type"] == "extension_ready" && v["extension"] == "skilled").collect();
    assert_eq!(announced, [json!({"type": "extension_ready", "extension": "skilled", "commands": [], "tools": []})]);
    let errors: Vec<Value> =
        z.seen.iter().map(|l| json_line(l)).filter(|v| v["type"] == "extension_error").collect();
    assert_eq!(errors.len(), 2, "{errors:?}");
    let msg = |n: &str| {
        errors.iter().find(|e| e["extension"] == n).map(|e| e["message"].as_str().unwrap_or("").to_string()).unwrap_or_default()
    };
    assert!(msg("escaping").contains("resolves outside the extension's directory"), "{errors:?}");
    assert!(msg("empty").ends_with("exec, theme, or skills is required"), "{errors:?}");

    let l = list(&mut z);
    let sk = entry(&l, "skilled");
    assert_eq!(sk["state"], "ready");
    assert_eq!(sk["static"], true);
    assert_eq!(sk["pid"], Value::Null);
    assert_eq!(
        names(&sk["skills"]),
        [s(&skills.join("skills/a")), s(&skills.join("b/SKILL.md"))],
        "absolute paths"
    );
    let th = entry(&l, "themed");
    assert_eq!((th["static"].clone(), th["state"].clone()), (json!(true), json!("ready")));
    assert_eq!(th["theme"], s(&themed.join("themes/theme.json")));
    assert!(th.get("skills").is_none(), "{th}");
    let run = entry(&l, "running");
    assert!(run.get("static").is_none() && run.get("skills").is_none(), "fields only when static: {run}");
    assert!(run["pid"].is_number());
    stop(&mut z);
    // Nothing was started for them: no log.
    assert!(!z.zot_home.join("logs/ext-skilled.log").exists());
}

// ---------------------------------------------------------------------------
// Environment

/// A manifest that dumps its environment to `env.txt` in its folder, then
/// runs the Python fixture.
fn env_ext(parent: &Path, name: &str, env: Value) -> PathBuf {
    let script = format!("env > env.txt; exec python3 {} --name {name}", fixture("ext.py").display());
    write_manifest(parent, name, json!({"name": name, "exec": "sh", "args": ["-c", script], "env": env}))
}

#[test]
fn extensions_get_the_host_env_the_agent_markers_and_their_expanded_env_with_values_never_shown() {
    let t = TempDir::new("env");
    let cwd = t.path().join("cwd");
    fs::create_dir_all(&cwd).expect("mkdir");
    let exts = t.path().join("exts");
    let good = env_ext(
        &exts,
        "good",
        json!({
            "GREETING": "hi ${ZOT_TEST_USER}!",
            "WITH_DEFAULT": "${ZOT_TEST_UNSET:-fallback}",
            "DOLLAR": "a$$b$${ZOT_TEST_USER}",
            "TOKEN": "${ZOT_TEST_SECRET}",
            "AI_AGENT": "custom",
        }),
    );
    let bad = env_ext(&exts, "bad", json!({"FOO": "x ${ZOT_TEST_MISSING} y"}));
    let trace = t.path().join("trace.jsonl");
    let extra = ["--no-ext", "--trace", s(&trace), "--ext", s(&good), "--ext", s(&bad)];
    let secret = "s3cr3t-Value-42";
    let mut z = serve(t.path(), &cwd, &extra, &[("ZOT_TEST_USER", "ann"), ("ZOT_TEST_SECRET", secret)]);
    let r = ready(&mut z);
    assert_eq!(names(&r["extensions"]), ["good"], "{r}");
    let err = z
        .seen
        .iter()
        .map(|l| json_line(l))
        .find(|v| v["type"] == "extension_error" && v["extension"] == "bad")
        .unwrap_or_else(|| panic!("no extension_error for bad\n{}", z.context()));
    assert_eq!(err["message"], "env FOO: variable ZOT_TEST_MISSING is not set");
    assert!(!bad.join("env.txt").exists(), "the failed extension was never started");

    let dump = fs::read_to_string(good.join("env.txt")).expect("env dump");
    let vars: Vec<&str> = dump.lines().collect();
    for want in [
        "ZOT_AGENT=1",
        "GREETING=hi ann!",
        "WITH_DEFAULT=fallback",
        "DOLLAR=a$b${ZOT_TEST_USER}",
        &format!("TOKEN={secret}"),
        "ZOT_TEST_USER=ann",
        // The manifest's own value wins over the host's marker.
        "AI_AGENT=custom",
    ] {
        assert!(vars.contains(&want), "{want} missing from\n{dump}");
    }
    let l = list(&mut z);
    assert_eq!(entry(&l, "bad")["state"], "failed");
    assert_eq!(entry(&l, "bad")["error"], "env FOO: variable ZOT_TEST_MISSING is not set");
    stop(&mut z);
    let out = String::from_utf8_lossy(&z.raw_stdout()).into_owned();
    let logs = fs::read_to_string(z.zot_home.join("logs/ext-good.log")).unwrap_or_default()
        + &fs::read_to_string(z.zot_home.join("logs/ext-bad.log")).unwrap_or_default();
    let traced = fs::read_to_string(&trace).expect("trace");
    assert!(logs.contains("variable ZOT_TEST_MISSING is not set"), "{logs}");
    for (what, text) in [("serve output", &out), ("logs", &logs), ("trace", &traced), ("stderr", &z.stderr_text())] {
        assert!(!text.contains(secret), "the secret value leaked into the {what}");
        assert!(!text.contains("hi ann!"), "an env value leaked into the {what}");
    }
}

#[test]
fn without_a_manifest_env_the_agent_markers_are_still_set() {
    let t = TempDir::new("env-plain");
    let cwd = t.path().join("cwd");
    fs::create_dir_all(&cwd).expect("mkdir");
    let plain = env_ext(&t.path().join("exts"), "plain", Value::Null);
    let mut z = serve(t.path(), &cwd, &["--no-ext", "--ext", s(&plain)], &[("AI_AGENT", "someone-else")]);
    ready(&mut z);
    let dump = fs::read_to_string(plain.join("env.txt")).expect("env dump");
    assert!(dump.lines().any(|l| l == "ZOT_AGENT=1"), "{dump}");
    assert!(dump.lines().any(|l| l == "AI_AGENT=zot"), "the host's marker replaces an inherited one: {dump}");
    stop(&mut z);
}

/// docs/protocol.md §1's order: the host's environment, then zot's own
/// variables (the instance marker among them), then the manifest's `env`,
/// which wins over both.
#[test]
fn the_manifest_env_wins_over_zots_own_variables_which_win_over_the_hosts() {
    let t = TempDir::new("env-order");
    let cwd = t.path().join("cwd");
    fs::create_dir_all(&cwd).expect("mkdir");
    let exts = t.path().join("exts");
    let own = env_ext(&exts, "own", json!({"ZOT_EXT_INSTANCE": "the-manifests", "ZOT_AGENT": "0"}));
    let plain = env_ext(&exts, "plain", Value::Null);
    let host = [("ZOT_EXT_INSTANCE", "the-hosts"), ("ZOT_AGENT", "host")];
    let mut z = serve(t.path(), &cwd, &["--no-ext", "--ext", s(&own), "--ext", s(&plain)], &host);
    ready(&mut z);
    let var = |dir: &Path, name: &str| {
        let dump = fs::read_to_string(dir.join("env.txt")).expect("env dump");
        let prefix = format!("{name}=");
        dump.lines().find_map(|l| l.strip_prefix(&prefix).map(str::to_string)).unwrap_or_default()
    };
    assert_eq!((var(&own, "ZOT_EXT_INSTANCE"), var(&own, "ZOT_AGENT")), ("the-manifests".into(), "0".into()));
    let marker = var(&plain, "ZOT_EXT_INSTANCE");
    assert!(marker.starts_with(&format!("{}.", z.pid)), "zot's marker replaces the host's: {marker}");
    assert_eq!(var(&plain, "ZOT_AGENT"), "1");
    stop(&mut z);
}

// ---------------------------------------------------------------------------
// Trust

/// A project whose `.zot/extensions/local` runs a copy of the Python
/// fixture inside the project and touches `<t>/started-local` when started.
fn project(t: &Path) -> (PathBuf, PathBuf) {
    let proj = t.join("proj");
    let dir = proj.join(".zot/extensions/local");
    fs::create_dir_all(&dir).expect("mkdir");
    fs::copy(fixture("ext.py"), dir.join("ext.py")).expect("copy fixture");
    let marker = t.join("started-local");
    write_manifest(
        &proj.join(".zot/extensions"),
        "local",
        json!({"name": "local", "exec": "python3", "args": ["ext.py", "--name", "local", "--touch", s(&marker)]}),
    );
    (proj, marker)
}

fn trust_cmd(t: &Path, args: &[&str]) -> Out {
    zot(t, args, &[("ZOT_HOME", s(&t.join("zot-home")))])
}

/// Runs serve in `proj` and returns (ready names, untrusted_project
/// notifications, the listing entry of `local`).
fn session(t: &Path, proj: &Path, extra: &[&str]) -> (Vec<String>, Vec<Value>, Value) {
    let mut z = serve(t, proj, extra, &[]);
    let r = ready(&mut z);
    let untrusted: Vec<Value> =
        z.seen.iter().map(|l| json_line(l)).filter(|v| v["type"] == "untrusted_project").collect();
    let l = list(&mut z);
    let local = entry(&l, "local").clone();
    stop(&mut z);
    (names(&r["extensions"]), untrusted, local)
}

#[test]
fn project_extensions_run_only_in_a_trusted_project_and_a_changed_exec_voids_trust() {
    let t = TempDir::new("trust");
    let (proj, marker) = project(t.path());
    // A global extension loads whatever the project's trust.
    common::py_ext(&t.path().join("zot-home/extensions"), "global", "global", &[]);
    let canon = fs::canonicalize(&proj).expect("canonical");

    // Untrusted: listed as such, announced once, never started.
    let (ready_names, untrusted, local) = session(t.path(), &proj, &[]);
    assert_eq!(ready_names, ["global"]);
    assert_eq!(untrusted, [json!({"type": "untrusted_project", "dir": s(&proj), "extensions": ["local"]})]);
    assert_eq!(local["state"], "untrusted");
    assert_eq!(local["source"], "project");
    assert_eq!(local["pid"], Value::Null);
    assert!(!marker.exists(), "an untrusted project's extension was started");
    assert!(!t.path().join("zot-home/trust.json").exists(), "nothing recorded by a session");

    // --trust-project: loaded for one run, nothing recorded.
    let (ready_names, untrusted, _) = session(t.path(), &proj, &["--trust-project"]);
    assert_eq!(ready_names, ["local", "global"]);
    assert!(untrusted.is_empty());
    assert!(marker.exists());
    fs::remove_file(&marker).expect("rm marker");
    assert!(!t.path().join("zot-home/trust.json").exists());

    // zot trust DIR: recorded by canonical path; then it runs.
    let r = trust_cmd(t.path(), &["trust", s(&proj)]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // What it may do is shown first (docs/protocol.md §9.3): it declares nothing.
    assert_eq!(r.stdout, format!("  local: full access to your files and network\ntrusted {} (1 project extension(s): local)\n", canon.display()));
    let file: Value = serde_json::from_slice(&fs::read(t.path().join("zot-home/trust.json")).expect("trust.json")).expect("json");
    assert_eq!(file["projects"][0]["dir"], s(&canon));
    assert!(file["projects"][0]["fingerprint"].as_str().expect("fp").starts_with("sha256:"));
    let (ready_names, untrusted, local) = session(t.path(), &proj, &[]);
    assert_eq!(ready_names, ["local", "global"]);
    assert!(untrusted.is_empty());
    assert_eq!(local["state"], "ready");
    assert!(marker.exists());
    fs::remove_file(&marker).expect("rm marker");
    let r = trust_cmd(t.path(), &["trust", "--list"]);
    assert_eq!(r.stdout, format!("{}  trusted\n", canon.display()));

    // The file the extension runs changes: untrusted again.
    let script = proj.join(".zot/extensions/local/ext.py");
    let mut text = fs::read_to_string(&script).expect("read");
    text.push_str("\n# changed\n");
    fs::write(&script, text).expect("write");
    let (ready_names, untrusted, local) = session(t.path(), &proj, &[]);
    assert_eq!(ready_names, ["global"]);
    assert_eq!(untrusted.len(), 1);
    assert_eq!(local["state"], "untrusted");
    assert!(!marker.exists());
    let r = trust_cmd(t.path(), &["trust", "--list"]);
    assert!(r.stdout.starts_with(&format!("{}  changed since trusted", canon.display())), "{}", r.stdout);

    // Trusted anew, then a new manifest appears: untrusted again.
    assert_eq!(trust_cmd(t.path(), &["trust", s(&proj)]).code, 0);
    assert_eq!(session(t.path(), &proj, &[]).2["state"], "ready");
    fs::remove_file(&marker).expect("rm marker");
    common::py_ext(&proj.join(".zot/extensions"), "second", "second", &[]);
    let (ready_names, untrusted, _) = session(t.path(), &proj, &[]);
    assert_eq!(ready_names, ["global"]);
    assert_eq!(untrusted[0]["extensions"], json!(["local", "second"]));

    // zot untrust (default: the current directory) forgets it.
    assert_eq!(trust_cmd(t.path(), &["trust", s(&proj)]).code, 0);
    let r = zot(&proj, &["untrust"], &[("ZOT_HOME", s(&t.path().join("zot-home")))]);
    assert_eq!((r.code, r.stdout.clone()), (0, format!("untrusted {}\n", canon.display())), "{}", r.stderr);
    assert_eq!(session(t.path(), &proj, &[]).2["state"], "untrusted");
    let r = trust_cmd(t.path(), &["untrust", s(&proj)]);
    assert_eq!(r.stdout, format!("{} was not trusted; nothing changed\n", canon.display()));
    let r = trust_cmd(t.path(), &["trust", "--list"]);
    assert_eq!(r.stdout, "no trusted projects (trust one with: zot trust [DIR])\n");
}

#[test]
fn every_file_of_an_extension_folder_and_its_manifest_json_are_fingerprinted() {
    let t = TempDir::new("trust-bare");
    let (proj, _) = project(t.path());
    assert_eq!(trust_cmd(t.path(), &["trust", s(&proj)]).code, 0);
    // A file in the extension folder that nothing names: fingerprinted too.
    fs::write(proj.join(".zot/extensions/local/notes.txt"), "x").expect("write");
    let r = trust_cmd(t.path(), &["trust", "--list"]);
    assert!(r.stdout.contains("changed since trusted"), "{}", r.stdout);
    assert_eq!(trust_cmd(t.path(), &["trust", s(&proj)]).code, 0);
    // The manifest by its JSON: layout alone changes nothing, a field does.
    let m = proj.join(".zot/extensions/local/extension.json");
    let mut text = fs::read_to_string(&m).expect("read");
    text.push('\n');
    fs::write(&m, &text).expect("write");
    let r = trust_cmd(t.path(), &["trust", "--list"]);
    assert!(r.stdout.ends_with("  trusted\n"), "{}", r.stdout);
    fs::write(&m, text.replacen("\"local\"", "\"local\", \"version\": \"2\"", 1)).expect("write");
    let r = trust_cmd(t.path(), &["trust", "--list"]);
    assert!(r.stdout.contains("changed since trusted"), "{}", r.stdout);
}

#[test]
fn trust_json_is_replaced_whole_and_a_broken_one_is_never_overwritten() {
    let t = TempDir::new("trust-atomic");
    let home = t.path().join("zot-home");
    let a = t.path().join("a");
    let b = t.path().join("b");
    fs::create_dir_all(&a).expect("mkdir");
    fs::create_dir_all(&b).expect("mkdir");
    assert_eq!(trust_cmd(t.path(), &["trust", s(&a)]).code, 0);
    let before = fs::read(home.join("trust.json")).expect("trust.json");

    // What a crash mid-write leaves: a partial temporary file beside the
    // real one. Readers ignore it, the next write does not trip over it.
    let stale = home.join(format!(".trust.json.{}.0.tmp", std::process::id()));
    fs::write(&stale, "{\"version\":1,\"projects\":[{\"dir\":").expect("write");
    let r = trust_cmd(t.path(), &["trust", "--list"]);
    assert_eq!(r.stdout, format!("{}  trusted\n", a.display()), "{}", r.stderr);
    assert_eq!(fs::read(home.join("trust.json")).expect("read"), before, "reading changes nothing");
    let r = trust_cmd(t.path(), &["trust", s(&b)]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let file: Value = serde_json::from_slice(&fs::read(home.join("trust.json")).expect("read")).expect("whole JSON");
    let dirs: Vec<&str> = file["projects"].as_array().expect("projects").iter().map(|p| p["dir"].as_str().expect("dir")).collect();
    assert_eq!(dirs, [s(&a), s(&b)]);
    let leftovers: Vec<String> = fs::read_dir(&home)
        .expect("ls")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert_eq!(leftovers, [stale.file_name().expect("name").to_string_lossy().into_owned()], "only the stale one");

    // A trust.json that is not valid: trusts nothing, and is left as is.
    fs::write(home.join("trust.json"), "{ not json").expect("write");
    let r = trust_cmd(t.path(), &["trust", s(&a)]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.starts_with("zot: ") && r.stderr.contains("trust.json: not a valid trust file"), "{}", r.stderr);
    assert_eq!(fs::read_to_string(home.join("trust.json")).expect("read"), "{ not json");
    let (proj, marker) = project(t.path());
    let (_, untrusted, _) = session(t.path(), &proj, &[]);
    assert_eq!(untrusted.len(), 1);
    assert!(!marker.exists());
}

/// All a console session in `proj` with no input prints (stdout, then
/// stderr); it must exit 0.
fn console_output(t: &Path, proj: &Path) -> String {
    let mut args = strings(&["--cwd", s(proj)]);
    args.extend(strings(&FAST));
    let mut z = Zot::spawn(t, &args, &[]);
    z.close_stdin();
    let out = z.read_to_end(LINE_WAIT);
    assert_eq!(z.exit_code(LINE_WAIT), 0);
    format!("{}\n{}", out.join("\n"), z.stderr_text())
}

#[test]
fn the_console_names_the_extensions_it_did_not_load_and_how_to_allow_them() {
    let t = TempDir::new("trust-console");
    let (proj, marker) = project(t.path());
    let all = console_output(t.path(), &proj);
    let want = format!("project extension local not loaded: the project {0} is not trusted (zot trust {0} allows it)", proj.display());
    assert_eq!(all.matches(&want).count(), 1, "{all}");
    assert!(!marker.exists());
}

#[test]
fn trust_and_restart_usage_errors() {
    let t = TempDir::new("trust-usage");
    for (args, want) in [
        (&["--restart", "sometimes"][..], "zot: invalid value 'sometimes' for '--restart': expected never, on-failure or always (see 'zot --help')"),
        (&["serve", "--restart"], "zot serve: missing value for '--restart' (see 'zot serve --help')"),
        (&["trust", "--list", "x"], "zot trust: '--list' takes no DIR (see 'zot trust --help')"),
        (&["untrust", "--list"], "zot untrust: unexpected argument '--list' (see 'zot untrust --help')"),
        (&["trust", "a", "b"], "zot trust: unexpected argument 'b' (see 'zot trust --help')"),
    ] {
        let r = trust_cmd(t.path(), args);
        assert_eq!((r.code, r.stderr.trim_end()), (2, want), "{args:?}");
    }
    let r = trust_cmd(t.path(), &["trust", s(&t.path().join("nope"))]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("no such directory"), "{}", r.stderr);
    let r = trust_cmd(t.path(), &["trust", "--help"]);
    assert!(r.code == 0 && r.stdout.starts_with("Usage: zot trust [DIR]"), "{}", r.stdout);
    // Every restart policy is accepted.
    for p in ["never", "on-failure", "always"] {
        let mut z = Zot::spawn(t.path(), &strings(&["serve", "--no-ext", "--restart", p]), &[]);
        let r = ready(&mut z);
        assert_eq!(r["extensions"], json!([]));
        stop(&mut z);
    }
}

#[test]
fn zot_mcp_says_on_stderr_which_project_extensions_it_did_not_load() {
    let t = TempDir::new("trust-mcp");
    let (proj, marker) = project(t.path());
    let mut args = strings(&["mcp", "--cwd", s(&proj)]);
    args.extend(strings(&FAST));
    let mut z = Zot::spawn(t.path(), &args, &[]);
    z.close_stdin();
    let out = z.read_to_end(LINE_WAIT);
    assert_eq!(z.exit_code(LINE_WAIT), 0);
    assert!(out.is_empty(), "nothing on stdout without a client: {out:?}");
    let want = format!("zot mcp: project extension local not loaded: the project {0} is not trusted (zot trust {0} allows it)", proj.display());
    assert_eq!(z.stderr_text().matches(&want).count(), 1, "{}", z.stderr_text());
    assert!(!marker.exists());
}

#[test]
fn concurrent_trusts_lose_nothing() {
    let t = TempDir::new("trust-race");
    let dirs: Vec<PathBuf> = (0..8).map(|i| t.path().join(format!("p{i}"))).collect();
    let kids: Vec<std::process::Child> = dirs
        .iter()
        .map(|d| {
            fs::create_dir_all(d).expect("mkdir");
            Command::new(BIN)
                .args(["trust", s(d)])
                .env("ZOT_HOME", t.path().join("zot-home"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .spawn()
                .expect("spawn zot trust")
        })
        .collect();
    for mut k in kids {
        assert!(k.wait().expect("wait").success());
    }
    let r = trust_cmd(t.path(), &["trust", "--list"]);
    let want: String = dirs.iter().map(|d| format!("{}  trusted\n", d.display())).collect();
    assert_eq!(r.stdout, want);
}

#[test]
fn an_untrusted_project_extension_claims_no_name_and_static_ones_are_untrusted_too() {
    let t = TempDir::new("trust-shadow");
    let proj = t.path().join("proj");
    let local = proj.join(".zot/extensions");
    let m = |n: &str| t.path().join(format!("started-{n}"));
    common::py_ext(&local, "dup", "dup", &["--touch", s(&m("project"))]);
    write_manifest(&local, "skills", json!({"name": "project-skills", "skills": ["s"]}));
    common::py_ext(&t.path().join("home/extensions"), "dup", "dup", &["--touch", s(&m("global"))]);
    let mut cfg = common::host_config(t.path(), vec![]);
    cfg.cwd = proj.clone();
    cfg.sources.no_ext = false;
    let (host, events) = common::start_host(cfg.clone());
    let report = host.wait_ready().expect("load");
    assert_eq!(report.ready, ["dup"]);
    let l = host.list().expect("list");
    let got: Vec<(&str, &str, &str)> =
        l.extensions.iter().map(|e| (e.name.as_str(), e.source, e.state.as_str())).collect();
    assert_eq!(got, [("dup", "global", "ready"), ("dup", "project", "untrusted"), ("project-skills", "project", "untrusted")]);
    host.shutdown();
    assert!(m("global").exists() && !m("project").exists());
    let ev = common::wait_event(&events, Duration::ZERO, |e| matches!(e, zot_host::host::HostEvent::UntrustedProject { .. }));
    assert_eq!(
        ev,
        Some(zot_host::host::HostEvent::UntrustedProject {
            dir: proj.display().to_string(),
            extensions: vec!["dup".into(), "project-skills".into()],
            error: None,
            changed: false,
        })
    );

    // Trusted for the run: the project's wins, as precedence says.
    cfg.trust_project = true;
    let (host, _events) = common::start_host(cfg);
    let report = host.wait_ready().expect("load");
    assert_eq!(report.ready, ["dup", "project-skills"]);
    assert_eq!(host.list().expect("list").extensions[0].source, "project");
    host.shutdown();
    assert!(m("project").exists());
}

#[test]
fn projects_are_recorded_by_canonical_path() {
    let t = TempDir::new("trust-canon");
    let (proj, marker) = project(t.path());
    let link = t.path().join("link-to-proj");
    std::os::unix::fs::symlink(&proj, &link).expect("symlink");
    let r = trust_cmd(t.path(), &["trust", s(&link.join("."))]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let file: Value = serde_json::from_slice(&fs::read(t.path().join("zot-home/trust.json")).expect("read")).expect("json");
    assert_eq!(file["projects"][0]["dir"], s(&proj));
    // Reached through the link or directly: the same trusted project.
    assert_eq!(session(t.path(), &link, &[]).2["state"], "ready");
    assert!(marker.exists());
    let r = trust_cmd(t.path(), &["untrust", s(&link)]);
    assert_eq!(r.stdout, format!("untrusted {}\n", proj.display()));
    assert_eq!(session(t.path(), &proj, &[]).2["state"], "untrusted");
}

#[test]
fn a_broken_trust_json_is_named_with_its_fix_by_every_front_end() {
    let t = TempDir::new("trust-broken");
    let (proj, marker) = project(t.path());
    let home = t.path().join("zot-home");
    fs::create_dir_all(&home).expect("mkdir");
    let file = home.join("trust.json");
    fs::write(&file, "{ not json").expect("write");
    let named = |text: &str, what: &str| {
        assert!(text.contains(&format!("{}: not a valid trust file", file.display())), "{what}: {text}");
        assert!(text.contains(&format!("remove it (rm {})", file.display())), "{what}: {text}");
        assert!(!text.contains("run 'zot trust'") && !text.contains("zot trust (or"), "{what} advises zot trust: {text}");
    };
    // The console.
    let all = console_output(t.path(), &proj);
    named(&all, "console");
    assert!(all.contains("project extension local not loaded: trust cannot be checked"), "{all}");
    // serve's untrusted_project.
    let (_, untrusted, local) = session(t.path(), &proj, &[]);
    assert_eq!(local["state"], "untrusted");
    assert_eq!(untrusted.len(), 1, "{untrusted:?}");
    named(untrusted[0]["error"].as_str().unwrap_or(""), "serve");
    // zot ext list, zot ext doctor, zot trust.
    let env = [("ZOT_HOME", s(&home))];
    let r = zot(&proj, &["ext", "list"], &env);
    named(&r.stdout, "ext list");
    let r = zot(&proj, &["ext", "doctor", "--ready-grace", "2"], &env);
    assert_eq!(r.code, 1);
    named(&r.stdout, "doctor");
    let r = zot(&proj, &["trust"], &env);
    assert_eq!(r.code, 1);
    named(&r.stderr, "zot trust");
    assert!(!marker.exists(), "an extension ran");
    assert_eq!(fs::read_to_string(&file).expect("read"), "{ not json", "rewritten");
}
