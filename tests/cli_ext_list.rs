//! `zot ext list` end to end through the real binary: empty, the table
//! and `--json`, states that follow discovery, static extensions' files,
//! the project's trust and an exec that cannot run.

use serde_json::Value;
use std::fs;

mod common;
#[path = "common/ext_world.rs"]
mod ext_world;
use common::TempDir;
use ext_world::*;

#[test]
fn list_empty() {
    let w = World::new();
    let out = w.ok(&["ext", "list"]);
    assert_eq!(out, "no extensions installed\ninstall one with: zot ext install <path|git-url>\n");
    let json: Value = serde_json::from_str(&w.ok(&["ext", "list", "--json"])).expect("json");
    assert_eq!(json, Value::Array(vec![]));
}

#[test]
fn list_table_and_json() {
    let w = World::new();
    let p = w.project_root();
    let g = w.ext_root();
    make_ext(&p.join("folder-b"), "beta", ",\"language\":\"go\",\"description\":\"second\"");
    make_ext(
        &p.join("folder-z"),
        "alpha",
        ",\"language\":\"python\",\"description\":\"project alpha\"",
    );
    make_ext(&g.join("zeta"), "zeta", ",\"enabled\":false");
    make_ext(&g.join("alpha"), "alpha", ",\"description\":\"global alpha\"");
    make_ext(
        &g.join("evil"),
        "evil",
        ",\"description\":\"\\u001b[31mRED\\u0007\\u009b2J\\u007f\\u202eok\",\"version\":\"\\u001b]0;t\\u0007\"",
    );
    write(&g.join("broken/extension.json"), "{ nope");
    fs::create_dir_all(g.join(".zot-install-1-0")).expect("hidden staging dir is not listed");

    let out = w.ok(&["ext", "list"]);
    assert!(
        !out.chars().any(|c| c.is_control() && c != '\n'),
        "control characters reached the terminal: {out:?}"
    );
    let lines: Vec<&str> = out.lines().collect();
    let cols = |l: &str| l.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    assert_eq!(
        cols(lines[0]),
        ["SCOPE", "NAME", "VERSION", "STATE", "LANGUAGE", "DESCRIPTION", "DIRECTORY"]
    );
    let order: Vec<(String, String)> = lines[1..7]
        .iter()
        .map(|l| {
            let c = cols(l);
            (c[0].clone(), c[1].clone())
        })
        .collect();
    let want = [
        ("project", "alpha"),
        ("project", "beta"),
        ("global", "alpha"),
        ("global", "broken"),
        ("global", "evil"),
        ("global", "zeta"),
    ];
    assert_eq!(order, want.map(|(a, b)| (a.to_string(), b.to_string())), "{out}");
    // One column for one fact: no ENABLED beside STATE.
    assert_eq!(cols(lines[1])[3], "untrusted", "the project is not trusted: {out}");
    assert_eq!(cols(lines[1])[4], "python");
    assert_eq!(cols(lines[3])[3], "enabled", "global alpha loads, the project's does not: {out}");
    assert_eq!(cols(lines[4])[3], "broken");
    assert_eq!(cols(lines[6])[3], "disabled");
    assert!(lines[1].contains("project alpha"));
    assert!(lines[1].ends_with(s(&p.join("folder-z"))), "{}", lines[1]);
    assert!(lines[5].contains(" REDok "), "escape sequences removed whole: {}", lines[5]);
    assert!(lines[4].contains("broken manifest"), "{}", lines[4]);
    assert!(out.contains("error: global broken:"), "{out}");
    assert!(out.contains("invalid manifest"), "the error is shown: {out}");
    assert!(!out.contains("shadowed"), "an untrusted extension hides nothing: {out}");

    // JSON.
    let text = w.ok(&["ext", "list", "--json"]);
    assert!(!text.contains('\u{9b}') && !text.contains('\u{1b}') && !text.contains('\u{7f}'));
    let json: Value = serde_json::from_str(&text).expect("json");
    let arr = json.as_array().expect("array");
    assert_eq!(arr.len(), 6);
    let names: Vec<(&str, &str)> = arr
        .iter()
        .map(|o| (o["scope"].as_str().expect("scope"), o["name"].as_str().expect("name")))
        .collect();
    assert_eq!(names, want.to_vec());
    let first = &arr[0];
    for key in ["scope", "name", "version", "enabled", "language", "description", "dir"] {
        assert!(first.get(key).is_some(), "missing {key}: {first}");
    }
    assert!(first.get("error").is_none());
    assert_eq!(first["version"], "1.0.0");
    assert_eq!(first["enabled"], true);
    assert_eq!(first["language"], "python");
    assert_eq!(first["dir"], s(&p.join("folder-z")));
    assert_eq!(arr[5]["enabled"], false);
    assert!(arr[3]["error"].as_str().expect("error").contains("invalid manifest"));
    assert_eq!(arr[3]["enabled"], false);
    // The JSON keeps the real description, escaped.
    assert_eq!(arr[4]["description"], "\u{1b}[31mRED\u{7}\u{9b}2J\u{7f}\u{202e}ok");
    let states: Vec<&str> = arr.iter().map(|o| o["state"].as_str().expect("state")).collect();
    assert_eq!(states, ["untrusted", "untrusted", "enabled", "broken", "enabled", "disabled"]);
    assert!(arr.iter().all(|o| o["source"] == o["scope"]), "{json}");
    assert!(arr[2].get("shadowed_by").is_none(), "{}", arr[2]);

    // Trusted, the project's alpha loads and hides the global one.
    w.ok(&["trust"]);
    let out = w.ok(&["ext", "list"]);
    assert!(out.contains(&format!("note: global alpha ({}) is shadowed by {} and not loaded", s(&g.join("alpha")), s(&p.join("folder-z")))), "{out}");
    let json: Value = serde_json::from_str(&w.ok(&["ext", "list", "--json"])).expect("json");
    let arr = json.as_array().expect("array");
    assert_eq!(arr[0]["state"], "enabled");
    assert_eq!(arr[2]["state"], "shadowed");
    assert_eq!(arr[2]["shadowed_by"], s(&p.join("folder-z")));

    // `--cwd` chooses the project.
    let other = TempDir::new("othercwd");
    let json: Value =
        serde_json::from_str(&w.ok(&["ext", "list", "--json", "--cwd", s(other.path())]))
            .expect("json");
    assert!(json.as_array().expect("array").iter().all(|o| o["scope"] == "global"));
}

#[test]
fn list_states_follow_discovery_and_static_extensions_show_their_files() {
    let w = World::new();
    let (p, g) = (w.project_root(), w.ext_root());
    // A disabled project-local extension hides nothing, even trusted.
    make_ext(&p.join("dup"), "dup", ",\"enabled\":false");
    make_ext(&g.join("dup"), "dup", "");
    write(&g.join("look/extension.json"), r#"{"name":"look","skills":["skills/a"],"theme":"theme.json"}"#);
    write(&g.join("look/skills/a/SKILL.md"), "# a\n");
    write(&g.join("look/theme.json"), "{}");
    w.ok(&["trust"]);
    let json: Value = serde_json::from_str(&w.ok(&["ext", "list", "--json"])).expect("json");
    let row = |scope: &str, name: &str| {
        json.as_array().expect("array").iter().find(|r| r["scope"] == scope && r["name"] == name).cloned().expect("row")
    };
    assert_eq!(row("project", "dup")["state"], "disabled");
    assert_eq!(row("global", "dup")["state"], "enabled");
    assert!(row("global", "dup").get("shadowed_by").is_none());
    let look = row("global", "look");
    let dir = std::fs::canonicalize(g.join("look")).expect("canonical");
    assert_eq!(look["static"], true);
    assert_eq!(look["state"], "enabled");
    assert_eq!(look["skills"], serde_json::json!([s(&dir.join("skills/a"))]));
    assert_eq!(look["theme"], s(&dir.join("theme.json")));
    let out = w.ok(&["ext", "list"]);
    assert!(!out.contains("shadowed"), "{out}");
    let line = out.lines().find(|l| l.contains(" look ")).expect("look row");
    assert_eq!(line.split_whitespace().nth(3), Some("static"), "{out}");
}

#[test]
fn list_shows_the_projects_trust_and_an_exec_that_cannot_run() {
    let w = World::new();
    make_ext(&w.project_root().join("local"), "local", "");
    make_ext(&w.ext_root().join("noexec"), "noexec", "");
    chmod(&w.ext_root().join("noexec/run.sh"), 0o644);
    write(&w.ext_root().join("skills-only/extension.json"), r#"{"name":"skills-only","skills":["s"]}"#);

    let out = w.ok(&["ext", "list"]);
    let note = format!(
        "note: project {} is not trusted: its extensions do not run (run 'zot trust' in it, or pass --trust-project)",
        w.cwd.path().display()
    );
    assert!(out.lines().any(|l| l == note), "{out}");
    assert!(
        out.lines().any(|l| l.starts_with("error: global noexec cannot start: exec not executable: ")),
        "{out}"
    );
    assert!(!out.contains("warning: global skills-only"), "a static extension runs nothing: {out}");
    let json: Value = serde_json::from_str(&w.ok(&["ext", "list", "--json"])).expect("json");
    let row = |n: &str| json.as_array().expect("array").iter().find(|r| r["name"] == n).expect("row").clone();
    assert_eq!(row("local")["trusted"], false);
    assert!(row("noexec").get("trusted").is_none(), "only project rows: {}", row("noexec"));
    assert!(row("noexec")["exec_error"].as_str().expect("exec_error").contains("not executable"));
    assert!(row("local").get("exec_error").is_none());
    assert_eq!(row("skills-only")["static"], true);

    w.ok(&["trust"]);
    let out = w.ok(&["ext", "list"]);
    assert!(out.contains(&format!("note: project {} is trusted: its extensions run", w.cwd.path().display())), "{out}");
    let json: Value = serde_json::from_str(&w.ok(&["ext", "list", "--json"])).expect("json");
    assert_eq!(json.as_array().expect("array").iter().find(|r| r["name"] == "local").expect("row")["trusted"], true);
}
