//! `zot` started in a subfolder of a project finds the project as git finds
//! its repository: the nearest folder at or above holding `.zot`, never
//! above `$HOME`. `zot trust` from the subfolder trusts the root, a session
//! there loads the project's extensions, `list` and the console's banner
//! name the project; a folder with no `.zot` above is its own project.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod common;
#[path = "common/zot_proc.rs"]
mod zot_proc;
#[path = "common/term.rs"]
mod term;
use common::{fixture, run_zot, write_manifest, TempDir};
use term::Term;

const BIN: &str = env!("CARGO_BIN_EXE_zot");

/// `<t>/u` as `$HOME`, `<t>/u/app` a project with extension `lint`, its
/// subfolder `src/deep`, and `<t>/u/plain/x` with no project above.
fn world(tag: &str) -> (TempDir, PathBuf, PathBuf) {
    let t = TempDir::new(tag);
    let app = t.path().join("u/app");
    std::fs::create_dir_all(app.join("src/deep")).expect("mkdir");
    std::fs::create_dir_all(t.path().join("u/plain/x")).expect("mkdir");
    write_manifest(&app.join(".zot/extensions"), "lint", json!({"name": "lint", "exec": "python3", "args": [fixture("ext.py"), "--name", "lint", "--commands", "lint"]}));
    let app = app.canonicalize().expect("canonical");
    (t, app.clone(), app.join("src/deep"))
}

fn env(t: &TempDir) -> [(&'static str, String); 1] {
    [("HOME", t.path().join("u").display().to_string())]
}

fn zot_in(t: &TempDir, dir: &Path, args: &[&str]) -> common::Out {
    let e = env(t);
    run_zot(BIN, dir, Some(&t.path().join("zot-home")), args, &[(e[0].0, e[0].1.as_str())])
}

/// `list` of a `zot serve` started in `dir` with no `--cwd`.
fn listed_from(t: &TempDir, dir: &Path) -> Value {
    let mut c = Command::new(BIN);
    c.args(["serve", "--hello-timeout", "30"])
        .current_dir(dir)
        .env("ZOT_HOME", t.path().join("zot-home"))
        .env("HOME", t.path().join("u"))
        .env_remove("XDG_STATE_HOME")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = c.spawn().expect("zot serve");
    let mut stdin = child.stdin.take().expect("stdin");
    use std::io::{BufRead, Write};
    let mut lines = std::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
    for line in lines.by_ref() {
        let v: Value = serde_json::from_str(&line.expect("line")).expect("json");
        if v["type"] == "ready" {
            break;
        }
    }
    writeln!(stdin, "{}", json!({"id": 1, "type": "list"})).expect("send");
    let mut out = Value::Null;
    for line in lines.by_ref() {
        let v: Value = serde_json::from_str(&line.expect("line")).expect("json");
        if v["type"] == "response" && v["id"] == 1 {
            out = v["result"].clone();
            break;
        }
    }
    writeln!(stdin, "{}", json!({"id": 2, "type": "shutdown"})).expect("send");
    drop(stdin);
    let _ = child.wait();
    out
}

fn names(list: &Value) -> Vec<(String, String)> {
    let exts = list["extensions"].as_array().cloned().unwrap_or_default();
    exts.iter().map(|e| (e["name"].as_str().unwrap_or("").to_string(), e["state"].as_str().unwrap_or("").to_string())).collect()
}

#[test]
fn a_session_in_a_subfolder_finds_the_project_above_it() {
    let (t, app, deep) = world("project-root");
    // Not trusted yet: found, and listed as untrusted.
    let list = listed_from(&t, &deep);
    assert_eq!(names(&list), [("lint".to_string(), "untrusted".to_string())], "{list:#}");
    let lint_dir = app.join(".zot/extensions/lint").display().to_string();
    assert_eq!(list["extensions"][0]["dir"], json!(lint_dir), "{list:#}");
    // `zot trust` from the subfolder trusts the root.
    let r = zot_in(&t, &deep, &["trust"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains(&format!("trusted {} (1 project extension(s): lint)", app.display())), "{}", r.stdout);
    let list = listed_from(&t, &deep);
    assert_eq!(names(&list), [("lint".to_string(), "ready".to_string())], "{list:#}");
    // `zot ext list` from the subfolder names the project found.
    let r = zot_in(&t, &deep, &["ext", "list"]);
    assert!(r.stdout.contains(&format!("note: project {} is trusted: its extensions run", app.display())), "{}", r.stdout);
    // The control: a folder with no `.zot` above is its own project.
    let plain = t.path().join("u/plain/x").canonicalize().expect("plain");
    let list = listed_from(&t, &plain);
    assert!(names(&list).is_empty(), "{list:#}");
}

#[test]
fn no_project_is_found_above_home() {
    let (t, _, _) = world("project-above-home");
    // A `.zot` above $HOME marks nothing for a start inside $HOME: its
    // extension is not even listed as untrusted.
    write_manifest(&t.path().join(".zot/extensions"), "above", json!({"name": "above", "exec": "sh"}));
    let plain = t.path().join("u/plain/x").canonicalize().expect("plain");
    assert!(names(&listed_from(&t, &plain)).is_empty());
    // The control: started above $HOME, in that folder, it is the project.
    assert_eq!(names(&listed_from(&t, t.path())), [("above".to_string(), "untrusted".to_string())]);
}

#[test]
fn the_console_banner_names_the_project_found_above() {
    let (t, app, deep) = world("project-banner");
    let r = zot_in(&t, &deep, &["trust"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let args: Vec<String> = ["--hello-timeout", "30"].map(String::from).to_vec();
    let mut z = Term::spawn_in(&t, &deep, &args, &[("HOME", &t.path().join("u"))]);
    let at = z.wait_for("1 extension ready: lint\r\n", 0);
    let at = z.wait_for(&format!("project: {}\r\n", app.display()), at);
    let at = z.wait_for("zot> ", at);
    z.typed("\x04");
    assert_eq!(z.exit_code(), 0, "{:?}", &z.text()[at..]);
}

#[test]
fn a_client_server_file_marks_the_project_from_a_subfolder() {
    let t = TempDir::new("project-client-file");
    let repo = t.path().join("u/repo");
    std::fs::create_dir_all(repo.join("src/deep")).expect("mkdir");
    std::fs::create_dir_all(t.path().join("u/.cursor")).expect("mkdir");
    let server = json!({"mcpServers": {"fx": {"command": "python3", "args": [fixture("mcp_server.py").display().to_string()]}}});
    std::fs::write(repo.join(".mcp.json"), server.to_string()).expect("write");
    // Cursor's user-level file in $HOME marks no project.
    std::fs::write(t.path().join("u/.cursor/mcp.json"), server.to_string()).expect("write");
    let repo = repo.canonicalize().expect("canonical");
    let deep = repo.join("src/deep");
    assert_eq!(names(&listed_from(&t, &deep)), [("fx".to_string(), "untrusted".to_string())]);
    let r = zot_in(&t, &deep, &["trust"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains(&format!("trusted {}", repo.display())), "{}", r.stdout);
    assert_eq!(names(&listed_from(&t, &deep)), [("fx".to_string(), "ready".to_string())]);
    // The control: with the file gone, the subfolder is its own project,
    // and the user file in $HOME does not make $HOME one.
    std::fs::remove_file(repo.join(".mcp.json")).expect("rm");
    assert!(names(&listed_from(&t, &deep)).is_empty());
}
