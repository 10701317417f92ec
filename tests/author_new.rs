//! `zot ext new` end to end through the `zot` binary, in every language
//! whose toolchain is present: each scaffold must pass `zot ext check` and
//! answer its command and tool through `zot serve`; the defaults and the
//! refusals. Every run gets a temporary `ZOT_HOME` and `TMPDIR`; waits are
//! deadlines, never sleeps.

use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

mod common;
#[path = "common/author.rs"]
mod author;
use author::*;
use common::TempDir;

/// Creates `name` in `lang`, checks it passes `zot ext check` cleanly (no
/// errors; warnings only about slowness on a loaded machine), and runs its
/// command and tool through `zot serve`.
fn scaffold_works(lang: &str, needs: &str) {
    if !on_path(needs) {
        common::skip(&format!("the {lang} scaffold: {needs} is not on PATH"));
        return;
    }
    let t = TempDir::new(lang);
    let name = format!("my-{lang}.ext");
    let dir = t.path().display().to_string();
    let r = run(zot_cmd(t.path(), &["ext", "new", &name, "--lang", lang, "--dir", &dir]));
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let ext = t.path().join(&name);
    assert!(r.stdout.contains(&format!("zot --ext {}", ext.display())), "{}", r.stdout);
    assert!(r.stdout.contains("extension.json"), "{}", r.stdout);
    let readme = std::fs::read_to_string(ext.join("README.md")).expect("README.md");
    assert_eq!(readme.lines().count(), 3, "{readme}");
    if lang == "go" {
        let built = Command::new("go").args(["build", "-o", &name]).current_dir(&ext).status().expect("go build");
        assert!(built.success());
    }
    if lang == "rust" && !cargo_build(&ext) {
        return;
    }

    // The host's 250 ms rule (ready after that much quiet once hello_ack
    // is sent) can be met by a process the loaded machine starved, not by
    // the scaffold: those findings ask for another run, up to three; a
    // scaffold that never sends ready has them every time.
    let starved = |r: &Value| {
        r["findings"].as_array().is_some_and(|fs| fs.iter().any(|f| ["auto_ready", "late_registration"].contains(&f["code"].as_str().unwrap_or_default())))
    };
    let (mut code, mut report) = check(&t, &ext, &[]);
    for _ in 0..2 {
        if !starved(&report) {
            break;
        }
        (code, report) = check(&t, &ext, &[]);
    }
    assert_eq!(code, 0, "{report:#}");
    for f in report["findings"].as_array().expect("findings") {
        let code = f["code"].as_str().unwrap_or_default();
        assert!(f["severity"] == "info" || code.starts_with("slow_"), "unexpected finding {f} in {report:#}");
    }
    assert_eq!(report["extension"], name.as_str());
    assert_eq!(report["timings"]["ready_by"], "frame", "{report:#}");
    assert!(report["timings"]["shutdown_ms"].is_number(), "{report:#}");
    let calls = report["calls"].as_array().expect("calls");
    assert_eq!(calls.len(), 2, "{report:#}");
    assert!(calls.iter().all(|c| c["ok"] == true), "{report:#}");

    let tool = format!("my_{lang}_ext_echo");
    let mut s = Serve::start(&t, &ext, &[], &[]);
    let r = s.request(json!({"id": 1, "type": "command", "name": name, "args": "hi there"}));
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["result"]["action"], "display", "{r}");
    assert_eq!(r["result"]["display"], format!("hello from {name}: hi there"), "{r}");
    let r = s.request(json!({"id": 2, "type": "tool", "name": tool, "args": {"text": "echo me"}}));
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["result"]["content"], json!([{"type": "text", "text": "echo me"}]), "{r}");
    assert_eq!(r["result"]["is_error"], false, "{r}");
    // It declares `"restart": "on-failure"`: killed, it comes back by
    // itself and answers again.
    let manifest: Value = serde_json::from_str(&std::fs::read_to_string(ext.join("extension.json")).expect("manifest")).expect("json");
    assert_eq!(manifest["restart"], "on-failure", "{manifest:#}");
    let l = s.request(json!({"id": 3, "type": "list"}));
    let pid = l["result"]["extensions"][0]["pid"].as_i64().expect("pid") as i32;
    // SAFETY: a plain kill of the extension's process.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    s.until(|f| f["type"] == "extension_ready" && f["extension"] == name.as_str());
    let r = s.request(json!({"id": 4, "type": "tool", "name": tool, "args": {"text": "back"}}));
    assert_eq!(r["result"]["content"], json!([{"type": "text", "text": "back"}]), "{r}");
    s.shutdown();
}

#[test]
fn new_python() {
    scaffold_works("python", "python3");
}

#[test]
fn new_node() {
    scaffold_works("node", "node");
}

#[test]
fn new_shell() {
    scaffold_works("shell", "sh");
}

#[test]
fn new_typescript() {
    scaffold_works("typescript", "tsx");
}

#[test]
fn new_go() {
    scaffold_works("go", "go");
}

/// `cargo build --release` in a Rust scaffold: offline first (the registry
/// cache of this checkout's own build has serde_json), then online. False,
/// with a message, when neither can fetch serde_json; a compile error fails.
fn cargo_build(ext: &Path) -> bool {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut last = String::new();
    for offline in [true, false] {
        let mut c = Command::new(&cargo);
        c.args(["build", "--release", "--quiet"]).current_dir(ext).env_remove("CARGO_TARGET_DIR");
        if offline {
            c.arg("--offline");
        }
        let out = c.output().expect("run cargo");
        if out.status.success() {
            return true;
        }
        last = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!last.contains("error[E") && !last.contains("could not compile"), "the Rust scaffold does not compile:\n{last}");
    }
    common::skip(&format!("the Rust scaffold build: cargo cannot get serde_json here: {}", last.trim().replace('\n', " ")));
    false
}

#[test]
fn new_rust() {
    scaffold_works("rust", "cargo");
}

#[test]
fn new_rust_writes_a_cargo_project() {
    let t = TempDir::new("rust");
    let dir = t.path().display().to_string();
    let r = run(zot_cmd(t.path(), &["ext", "new", "weather.v2", "--lang", "rust", "--dir", &dir]));
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("cargo build --release"), "{}", r.stdout);
    let ext = t.path().join("weather.v2");
    let m: Value = serde_json::from_slice(&std::fs::read(ext.join("extension.json")).expect("manifest")).expect("json");
    assert_eq!(m["name"], "weather.v2");
    assert_eq!(m["exec"], "./target/release/weather_v2");
    assert_eq!(m["language"], "rust");
    let toml = std::fs::read_to_string(ext.join("Cargo.toml")).expect("Cargo.toml");
    // serde_json is the one dependency: nothing else to find or publish.
    let deps = toml.split("[dependencies]").nth(1).expect("[dependencies]").split("\n[").next().unwrap_or("");
    let deps: Vec<&str> = deps.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('#')).collect();
    assert_eq!(deps, ["serde_json = \"1\""], "{toml}");
    assert!(toml.contains("name = \"weather_v2\"") && toml.contains("[workspace]"), "{toml}");
    let main = std::fs::read_to_string(ext.join("src/main.rs")).expect("main.rs");
    for needle in ["const NAME: &str = \"weather.v2\"", "const TOOL: &str = \"weather_v2_echo\"", "\"hello_ack\"", "\"shutdown_ack\""] {
        assert!(main.contains(needle), "{needle} in {main}");
    }
    let readme = std::fs::read_to_string(ext.join("README.md")).expect("README.md");
    assert_eq!(readme.lines().count(), 3, "{readme}");
}

#[test]
fn new_defaults_and_refusals() {
    let t = TempDir::new("new");
    // Default: python, in the current directory.
    let mut c = zot_cmd(t.path(), &["ext", "new", "plain"]);
    c.current_dir(t.path());
    let r = run(c);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("zot --ext plain"), "{}", r.stdout);
    let m: Value = serde_json::from_slice(&std::fs::read(t.path().join("plain/extension.json")).expect("manifest")).expect("json");
    assert_eq!((m["exec"].as_str(), m["language"].as_str()), (Some("./main.py"), Some("python")));
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(t.path().join("plain/main.py")).expect("main.py").permissions().mode();
        assert_eq!(mode & 0o111, 0o111);
        let first = std::fs::read_to_string(t.path().join("plain/main.py")).expect("main.py");
        assert!(first.starts_with("#!/usr/bin/env python3\n"));
    }

    let dir = t.path().display().to_string();
    // An existing folder is never overwritten.
    std::fs::write(t.path().join("plain/main.py"), "mine").expect("write");
    let r = run(zot_cmd(t.path(), &["ext", "new", "plain", "--dir", &dir, "--lang", "shell"]));
    assert_eq!(r.code, 1);
    assert!(r.stderr.starts_with("zot: ") && r.stderr.contains("already exists"), "{}", r.stderr);
    assert_eq!(std::fs::read_to_string(t.path().join("plain/main.py")).expect("read"), "mine");
    // Names must be safe file-name components.
    for bad in ["../evil", "a b", ".."] {
        let r = run(zot_cmd(t.path(), &["ext", "new", bad, "--dir", &dir]));
        assert_eq!(r.code, 1, "{bad}");
        assert!(r.stderr.starts_with("zot: invalid extension name"), "{}", r.stderr);
        assert_eq!(r.stderr.lines().count(), 1);
    }
    // A missing --dir.
    let r = run(zot_cmd(t.path(), &["ext", "new", "x", "--dir", &format!("{dir}/nope")]));
    assert_eq!(r.code, 1, "{}", r.stderr);
    // Usage errors: one line, exit 2.
    for args in [&["ext", "new"][..], &["ext", "new", "x", "--lang", "cobol"], &["ext", "new", "x", "y"], &["ext", "check"], &["ext", "check", ".", "--timeout", "-1"], &["--cwd", ".", "ext", "new", "x"]] {
        let r = run(zot_cmd(t.path(), args));
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    }
    // Nothing half-written is left behind.
    let names: Vec<String> = std::fs::read_dir(t.path()).expect("ls").flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    assert!(names.iter().all(|n| !n.contains("zot-new")), "{names:?}");
    // Help texts.
    for (args, needle) in [(&["ext", "new", "--help"][..], "--lang LANG"), (&["ext", "check", "--help"], "--json"), (&["--help"], "--trace FILE"), (&["serve", "--help"], "ZOT_TRACE"), (&["ext", "--help"], "check <path>")] {
        let r = run(zot_cmd(t.path(), args));
        assert_eq!(r.code, 0);
        assert!(r.stdout.contains(needle), "{needle} in {}", r.stdout);
    }
}
