//! The servers where people already keep them (docs/protocol.md §8.6,
//! §8.1): a repository's Claude Code `.mcp.json`, VS Code
//! `.vscode/mcp.json` and Cursor `.cursor/mcp.json` run after one
//! `zot trust`, each read as its client reads it, each listed with its
//! file; editing any of them untrusts; every project file runs its servers
//! in the project root, the global file in the session's directory; and
//! `zot mcp import` copies a client's user-level file into
//! `$ZOT_HOME/mcp.json`.
//!
//! Where a server runs is seen through the fixture's `--tools-file F`: a
//! relative `F` is read in the server's working folder, and the tool it
//! adds is listed only when the server runs where `F` is.

mod common;
#[path = "common/zot_proc.rs"]
mod zot_proc;
#[path = "common/mcp_serve.rs"]
mod mcp_serve;
#[path = "common/trust_world.rs"]
mod trust_world;

use common::{fixture, TempDir};
use mcp_serve::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// A tools file adding the tool `name` to the fixture that reads it.
fn probe(dir: &Path, file: &str, name: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(file), json!({"add": [name]}).to_string()).unwrap();
}

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn fs_server() -> Option<PathBuf> {
    Some(root().join("target/mcp-node/node_modules/.bin/mcp-server-filesystem")).filter(|p| p.exists())
}

/// The fixture as a JSON string, for files written as text.
fn fixture_json() -> String {
    json!(fixture("mcp_server.py").display().to_string()).to_string()
}

/// The three clients' files of one repository: Claude Code's runs `cc`,
/// VS Code's (comments, trailing commas, `servers`, `${workspaceFolder}`)
/// runs `vs`, Cursor's runs `cu`; `.mcp.json` and `.cursor/mcp.json` both
/// name `same`.
fn repository(cwd: &Path) {
    probe(cwd, "probe.json", "in_root");
    write_config(cwd, ".mcp.json", json!({"cc": fx(&["--tools-file", "probe.json"], json!({})), "same": fx(&[], json!({}))}));
    let vs = format!(
        r#"{{
  // VS Code keeps its servers under "servers"
  "servers": {{
    "vs": {{
      "type": "stdio",
      "command": "python3",
      /* the file through the workspace's variable */
      "args": [{fx}, "--tools-file", "${{workspaceFolder}}/probe.json",],
    }},
  }},
  "inputs": [],
}}
"#,
        fx = fixture_json()
    );
    write(&cwd.join(".vscode/mcp.json"), &vs);
    write_config(cwd, ".cursor/mcp.json", json!({"cu": fx(&["--tools-file", "probe.json"], json!({})), "same": fx(&[], json!({}))}));
}

#[test]
fn a_repository_s_three_client_files_run_after_one_trust_each_listed_with_its_file() {
    let t = TempDir::new("mcp-files-repo");
    let cwd = cwd_of(&t);
    repository(&cwd);
    let canon = std::fs::canonicalize(&cwd).unwrap();
    let d = canon.display().to_string();

    // Untrusted: listed, never started.
    let mut s = Serve::start(&t, &[], &[]);
    let n = s.note("untrusted_project");
    assert_eq!(n["extensions"], json!(["cc", "same", "vs", "cu"]), "{n}");
    s.note("ready");
    assert_eq!(s.ext("vs")["state"], "untrusted");
    s.shutdown();

    // One `zot trust` names them all.
    let (code, out, err) = zot(&t, &["trust", &d]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&format!("trusted {d} (4 MCP server(s): cc, same, vs, cu)")), "{out}");

    let mut s = Serve::start(&t, &[], &[]);
    s.note("ready");
    for name in ["cc", "vs", "cu"] {
        let e = s.wait_state(name, "ready");
        // Each runs in the project root (its relative `--tools-file`
        // found there), VS Code's through `${workspaceFolder}`.
        assert!(e["tools"].as_array().unwrap().contains(&json!(format!("mcp__{name}__in_root"))), "{e}");
    }
    assert_eq!(text(&s.tool("mcp__vs__echo", json!({"text": "through VS Code's file"}))), r#"{"text": "through VS Code's file"}"#);
    s.shutdown();
    // Nothing was copied anywhere.
    assert!(!cwd.join(".zot").exists() && !t.path().join("zot-home/mcp.json").exists());

    // Each listed with its file; the second `same` shadowed by the first's file.
    let (code, out, err) = zot(&t, &["ext", "list", "--json"]);
    assert_eq!(code, 0, "{err}");
    let rows: Vec<Value> = serde_json::from_str(&out).unwrap();
    let row = |name: &str, file: &str| {
        rows.iter()
            .find(|r| r["name"] == name && r["file"].as_str().is_some_and(|f| f.ends_with(file)))
            .cloned()
            .unwrap_or_else(|| panic!("no {name} from {file} in {out}"))
    };
    for (name, file) in [("cc", "/.mcp.json"), ("vs", "/.vscode/mcp.json"), ("cu", "/.cursor/mcp.json")] {
        assert_eq!(row(name, file)["state"], "enabled");
    }
    assert_eq!(row("same", "/.mcp.json")["state"], "enabled");
    let lost = row("same", "/.cursor/mcp.json");
    assert_eq!(lost["state"], "shadowed");
    assert_eq!(lost["shadowed_by"], format!("{}/.mcp.json", cwd.display()), "{lost}");
    let (_, out, _) = zot(&t, &["ext", "doctor", "--json"]);
    let report: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let lost = report["extensions"].as_array().unwrap().iter().find(|e| e["state"] == "shadowed").cloned().unwrap_or(Value::Null);
    assert_eq!((lost["name"].as_str(), lost["kind"].as_str()), (Some("same"), Some("mcp")), "{report}");
    assert!(lost["shadowed_by"].as_str().unwrap_or("").ends_with("/.mcp.json"), "{lost}");
    assert!(lost["config"].as_str().unwrap_or("").ends_with("/.cursor/mcp.json"), "{lost}");
    // Every server carries its transport (§8.5), a shadowed one too.
    assert_eq!(lost["transport"], "stdio", "{lost}");
}

#[test]
fn adding_or_editing_any_client_file_untrusts_the_project() {
    let fx_entry = |extra: &str| format!(r#"{{"command": "python3", "args": [{}{extra}]}}"#, fixture_json());
    for (file, top) in [(".mcp.json", "mcpServers"), (".vscode/mcp.json", "servers"), (".cursor/mcp.json", "mcpServers")] {
        let w = trust_world::World::new("mcp-files-edit");
        let p = w.proj().join(file);
        let body = |extra: &str| format!("{{\"{top}\": {{\"a\": {}}}}}\n", fx_entry(extra));
        w.edit_after_trust(&format!("adding {file}"), true, || write(&p, &body("")));
        w.edit_after_trust(&format!("editing {file}"), true, || write(&p, &body(", \"--dupes\"")));
        // Only a comment changes: still a change to the file.
        w.edit_after_trust(&format!("a comment in {file}"), true, || write(&p, &format!("// note\n{}", body(", \"--dupes\""))));
        w.edit_after_trust(&format!("removing {file}"), true, || std::fs::remove_file(&p).unwrap());
        // Control: a file the servers do not run, in the root they run in.
        write(&p, &body(""));
        w.edit_after_trust(&format!("a README beside {file}"), false, || write(&w.proj().join("README.md"), "hello\n"));
    }
}

#[test]
fn a_dot_argument_is_the_project_root() {
    let Some(bin) = fs_server() else {
        return common::skip("@modelcontextprotocol/server-filesystem is not installed (npm install --prefix target/mcp-node @modelcontextprotocol/server-filesystem)");
    };
    let t = TempDir::new("mcp-files-dot");
    let cwd = cwd_of(&t);
    write(&cwd.join("notes/hello.txt"), "hello from the project\n");
    write(&t.path().join("outside.txt"), "not the project's\n");
    write_config(&cwd, ".cursor/mcp.json", json!({"fs": {"command": bin.display().to_string(), "args": ["."]}}));
    let mut s = Serve::start(&t, &[], &["--trust-project", "--ready-grace", "20"]);
    s.note("ready");
    s.wait_state("fs", "ready");
    let inside = cwd.join("notes/hello.txt").display().to_string();
    let r = s.tool("mcp__fs__read_text_file", json!({"path": inside}));
    assert!(text(&r).contains("hello from the project"), "{r}");
    // Control: the session's parent is no part of it.
    let r = s.tool("mcp__fs__read_text_file", json!({"path": t.path().join("outside.txt").display().to_string()}));
    assert!(!text(&r).contains("not the project's"), "{r}");
    assert_eq!(r["is_error"], true, "{r}");
    s.shutdown();
}

#[test]
fn the_global_file_runs_its_servers_in_the_session_s_directory_not_zot_home() {
    let t = TempDir::new("mcp-files-global");
    let cwd = cwd_of(&t);
    let home = t.path().join("zot-home");
    probe(&cwd, "probe.json", "in_session");
    probe(&home, "probe.json", "in_zot_home");
    let other = t.path().join("elsewhere");
    probe(&other, "probe.json", "in_file_folder");
    write_config(
        &home,
        "mcp.json",
        json!({
            "g": fx(&["--tools-file", "probe.json"], json!({})),
            // Never zot's own home, even when written.
            "here": fx(&["--tools-file", "probe.json"], json!({"cwd": "."})),
        }),
    );
    let given = write_config(
        &other,
        "given.json",
        json!({
            "m": fx(&["--tools-file", "probe.json"], json!({})),
            // Control: an explicit cwd, against the file's folder.
            "there": fx(&["--tools-file", "probe.json"], json!({"cwd": "."})),
        }),
    );
    let mut s = Serve::start(&t, &[given], &[]);
    s.note("ready");
    let tools = |e: &Value| e["tools"].as_array().unwrap().iter().filter_map(Value::as_str).filter(|n| n.contains("__in_")).map(String::from).collect::<Vec<_>>();
    assert_eq!(tools(&s.wait_state("g", "ready")), ["mcp__g__in_session"]);
    assert_eq!(tools(&s.wait_state("m", "ready")), ["mcp__m__in_session"]);
    assert_eq!(tools(&s.wait_state("there", "ready")), ["mcp__there__in_file_folder"]);
    let here = s.wait_state("here", "failed");
    assert!(here["error"].as_str().unwrap_or("").ends_with("is inside $ZOT_HOME: a server never runs in zot's own folder; give it a `cwd` elsewhere"), "{here}");
    s.shutdown();
}

#[test]
fn an_input_variable_fails_its_entry_with_the_message_of_the_protocol() {
    let t = TempDir::new("mcp-files-input");
    let cwd = cwd_of(&t);
    let text_ = format!(
        r#"{{"servers": {{
  "keyed": {{"command": "python3", "args": [{fx}], "env": {{"API_KEY": "${{input:api-key}}"}}}},
  "plain": {{"command": "python3", "args": [{fx}], "env": {{"GREETING": "${{env:ZOT_TEST_WORD}}"}}}}, // the variable VS Code reads
}}}}"#,
        fx = fixture_json()
    );
    write(&cwd.join(".vscode/mcp.json"), &text_);
    let mut s = Serve::start_env(&t, &[], &["--trust-project"], &[("ZOT_TEST_WORD", "hello")]);
    s.note("ready");
    let e = s.wait_state("keyed", "failed");
    // §8.6's message whole; `zot ext list` names the file.
    assert_eq!(e["error"], "uses ${input:api-key}, which only VS Code can ask for: set it in the environment and write ${env:VAR}", "{e}");
    let (_, listed, _) = zot(&t, &["ext", "list", "--json"]);
    let rows: Value = serde_json::from_str(&listed).unwrap_or_default();
    let row = rows.as_array().and_then(|r| r.iter().find(|r| r["name"] == "keyed")).cloned().unwrap_or_default();
    assert_eq!(row["file"], cwd.join(".vscode/mcp.json").display().to_string(), "{listed}");
    // Control: `${env:VAR}` of the same file is read.
    s.wait_state("plain", "ready");
    assert_eq!(text(&s.tool("mcp__plain__env", json!({"name": "GREETING"}))), "hello");
    s.shutdown();

    // A broken file is named with the line and column of the text as written.
    write(&cwd.join(".cursor/mcp.json"), "{\n  // fine\n  \"mcpServers\": {,}\n}\n");
    let (_, out, _) = zot(&t, &["ext", "list"]);
    let cursor = cwd.join(".cursor/mcp.json").display().to_string();
    assert!(out.contains(&format!("error: project {cursor}: broken MCP config file: invalid JSON: ")), "{out}");
    assert!(out.contains("at line 3 column 18"), "{out}");
}

/// `HOME` with Claude Desktop's file where Linux keeps it.
fn desktop_home(t: &TempDir) -> PathBuf {
    let h = t.path().join("user");
    let servers = json!({"mcpServers": {
        "notes": fx(&[], json!({})),
        "remote": {"url": "https://mcp.example.test/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
    }});
    write(&h.join(".config/Claude/claude_desktop_config.json"), &serde_json::to_string_pretty(&servers).unwrap());
    h
}

fn import(t: &TempDir, home: &Path, args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(zot_proc::BIN)
        .arg("mcp")
        .arg("import")
        .args(args)
        .env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .env("ZOT_HOME", t.path().join("zot-home"))
        .current_dir(cwd_of(t))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn mcp_import_copies_claude_desktop_s_servers_in_one_command() {
    let t = TempDir::new("mcp-files-import");
    let home = desktop_home(&t);
    let global = t.path().join("zot-home/mcp.json");
    let source = home.join(".config/Claude/claude_desktop_config.json").display().to_string();
    let fx_line = format!("python3 {}", fixture("mcp_server.py").display());

    // --dry-run prints what it would write, and writes nothing.
    let (code, out, err) = import(&t, &home, &["--dry-run"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with(&format!("would import notes: {fx_line}\nwould import remote: https://mcp.example.test/mcp\nwould write {}:\n", global.display())), "{out}");
    let shown: Value = serde_json::from_str(out.split_once(":\n{").map(|(_, r)| format!("{{{r}")).unwrap().as_str()).unwrap();
    assert_eq!(shown["mcpServers"]["remote"], json!({"url": "https://mcp.example.test/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}));
    assert!(!global.exists(), "a dry run wrote {}", global.display());

    let (code, out, err) = import(&t, &home, &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, format!("imported notes: {fx_line}\nimported remote: https://mcp.example.test/mcp\n2 server(s) from {source} written to {}\n", global.display()));
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&global).unwrap().permissions().mode() & 0o777, 0o600);
    let written: Value = serde_json::from_slice(&std::fs::read(&global).unwrap()).unwrap();
    assert_eq!(written["mcpServers"]["notes"], fx(&[], json!({})), "copied as it was");

    // The imported server runs from the global file.
    let mut s = Serve::start(&t, &[], &[]);
    s.note("ready");
    s.wait_state("notes", "ready");
    assert_eq!(text(&s.tool("mcp__notes__echo", json!({"text": "imported"}))), r#"{"text": "imported"}"#);
    s.shutdown();

    // Again: a name already there is refused (§8.6), saying it is the
    // same entry, and the file is left as it is.
    let before = std::fs::read(&global).unwrap();
    let (code, out, err) = import(&t, &home, &["--from", "claude-desktop"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains(&format!("zot: notes is already in {} (the same entry): not imported (--force replaces it)", global.display())), "{err}");
    assert!(out.ends_with(&format!("nothing imported from {source}\n")), "{out}");
    assert_eq!(std::fs::read(&global).unwrap(), before);
    // A different entry under a name already there is refused, and the file left as it is.
    let mut changed: Value = serde_json::from_slice(&std::fs::read(&source).unwrap()).unwrap();
    changed["mcpServers"]["notes"]["args"] = json!(["/elsewhere/notes.py"]);
    write(Path::new(&source), &changed.to_string());
    let (code, _, err) = import(&t, &home, &["--from", "claude-desktop"]);
    assert_eq!(code, 1);
    assert!(err.contains(&format!("zot: notes is already in {} (a different entry): not imported (--force replaces it)", global.display())), "{err}");
    assert_eq!(std::fs::read(&global).unwrap(), before);
    let (code, out, err) = import(&t, &home, &["--from", &source, "--force"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("imported notes: ") && out.contains("(replacing the one there)"), "{out}");
}

#[test]
fn mcp_import_again_after_adding_a_server_imports_it_and_refuses_the_others_as_the_same_entries() {
    let t = TempDir::new("mcp-files-import-again");
    let home = desktop_home(&t);
    let global = t.path().join("zot-home/mcp.json");
    let source = home.join(".config/Claude/claude_desktop_config.json");
    let (code, _, err) = import(&t, &home, &[]);
    assert_eq!(code, 0, "{err}");
    let mut more: Value = serde_json::from_slice(&std::fs::read(&source).unwrap()).unwrap();
    more["mcpServers"]["third"] = json!({"url": "https://third.example.test/mcp"});
    write(&source, &more.to_string());
    let (code, out, err) = import(&t, &home, &[]);
    assert_eq!(code, 1, "{out}{err}");
    let g = global.display();
    let want = format!("imported third: https://third.example.test/mcp\n1 server(s) from {} written to {g}\n", source.display());
    assert_eq!(out, want);
    for name in ["notes", "remote"] {
        assert!(err.contains(&format!("zot: {name} is already in {g} (the same entry): not imported (--force replaces it)")), "{err}");
    }
    let written: Value = serde_json::from_slice(&std::fs::read(&global).unwrap()).unwrap();
    assert_eq!(written["mcpServers"], more["mcpServers"]);
}

#[test]
fn mcp_import_reads_vs_code_s_file_as_vs_code_does_and_asks_which_file_when_several() {
    let t = TempDir::new("mcp-files-import-vscode");
    let home = desktop_home(&t);
    let vscode = home.join(".config/Code/User/mcp.json");
    let text_ = format!(
        r#"{{
  // VS Code's user file
  "servers": {{
    "code": {{"type": "stdio", "command": "python3", "args": [{fx}], "env": {{"GREETING": "${{env:ZOT_TEST_WORD}}", "HOME_IS": "${{userHome}}"}}}},
    "asks": {{"command": "python3", "args": [{fx}], "env": {{"KEY": "${{input:key}}"}}}},
  }},
}}"#,
        fx = fixture_json()
    );
    write(&vscode, &text_);
    // Two clients' files: zot asks which.
    let (code, out, err) = import(&t, &home, &[]);
    assert_eq!((code, out.as_str()), (1, ""), "{err}");
    assert!(err.contains("several MCP clients' files found: claude-desktop (") && err.contains("vscode (") && err.contains("choose one with --from"), "{err}");
    assert!(!t.path().join("zot-home/mcp.json").exists());

    let (code, out, err) = import(&t, &home, &["--from", "vscode"]);
    assert_eq!(code, 1, "the ${{input}} entry is refused: {out}{err}");
    assert!(err.contains(&format!("zot: {}: server \"asks\" not imported: uses ${{input:key}}, which only VS Code can ask for", vscode.display())), "{err}");
    assert!(out.starts_with("imported code: python3 "), "{out}");
    let written: Value = serde_json::from_slice(&std::fs::read(t.path().join("zot-home/mcp.json")).unwrap()).unwrap();
    let env = &written["mcpServers"]["code"]["env"];
    assert_eq!((env["GREETING"].as_str(), env["HOME_IS"].as_str()), (Some("${ZOT_TEST_WORD}"), home.to_str()), "{written}");
    assert_eq!(written["mcpServers"].get("asks"), None);

    // What was written runs, its variable expanded at start.
    let mut s = Serve::start_env(&t, &[], &[], &[("ZOT_TEST_WORD", "hello")]);
    s.note("ready");
    s.wait_state("code", "ready");
    assert_eq!(text(&s.tool("mcp__code__env", json!({"name": "GREETING"}))), "hello");
    s.shutdown();
}

/// A client file's `args` are expanded when the file is read (Claude
/// Code's `${VAR}`, an editor's `${env:VAR}`): a confined server whose
/// `confine.env` does not pass the variable on does not start, naming it
/// and not its value, as its `env` would not expand it; named in
/// `confine.env`, or unconfined, it starts.
#[test]
fn a_confined_servers_args_do_not_hand_over_a_withheld_variable() {
    let t = TempDir::new("mcp-files-args-secret");
    let cwd = cwd_of(&t);
    let fx = fixture("mcp_server.py").display().to_string();
    let entry = |var: &str, confine: Option<Value>| {
        let mut e = json!({"command": "python3", "args": [fx, "--label", var]});
        if let Some(c) = confine {
            e["confine"] = c;
        }
        e
    };
    let claude = json!({"mcpServers": {
        "cc_jailed": entry("${ZOT_TEST_SECRET}", Some(json!({}))),
        "cc_named": entry("${ZOT_TEST_SECRET}", Some(json!({"env": ["ZOT_TEST_SECRET"]}))),
        "cc_open": entry("${ZOT_TEST_SECRET}", None),
    }});
    write(&cwd.join(".mcp.json"), &claude.to_string());
    let vscode = json!({"servers": {
        "vs_jailed": entry("${env:ZOT_TEST_SECRET}", Some(json!({}))),
        "vs_open": entry("${env:ZOT_TEST_SECRET}", None),
    }});
    write(&cwd.join(".vscode/mcp.json"), &vscode.to_string());
    let mut s = Serve::start_env(&t, &[], &["--trust-project"], &[("ZOT_TEST_SECRET", "hunter2")]);
    s.note("ready");
    for name in ["cc_jailed", "vs_jailed"] {
        let e = s.wait_state(name, "failed");
        let msg = e["error"].as_str().unwrap_or_default();
        assert!(
            msg.contains("${ZOT_TEST_SECRET} in its args, command or cwd is a variable of your environment that its confine.env does not pass on (name \"ZOT_TEST_SECRET\" in confine.env to hand it over)"),
            "{e}"
        );
        assert!(!msg.contains("hunter2"), "{e}");
    }
    for name in ["cc_named", "cc_open", "vs_open"] {
        s.wait_state(name, "ready");
    }
    s.shutdown();
    for name in ["cc_jailed", "vs_jailed"] {
        assert!(!s.log(name).contains("fixture:"), "{name} never ran: {}", s.log(name));
    }
}
