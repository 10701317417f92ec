//! MCP configuration files as a user meets them (docs/protocol.md §8.1, §8.3):
//! `env` expansion, a project's file and trust, a missing file, names,
//! management commands and `zot ext doctor` on servers, and every message
//! about a file naming the file and the field.

mod common;
#[path = "common/zot_proc.rs"]
mod zot_proc;
#[path = "common/mcp_serve.rs"]
mod mcp_serve;

use common::TempDir;
use mcp_serve::*;
use serde_json::{json, Value};

#[test]
fn env_is_expanded_and_an_unset_variable_fails_that_server() {
    let t = TempDir::new("mcp-env");
    let cfg = write_config(
        t.path(),
        "mcp.json",
        json!({
            "fx": fx(&[], json!({"env": {"GREETING": "${ZOT_TEST_WORD}-${ZOT_TEST_UNSET:-dflt}-$$"}})),
            "bad": fx(&[], json!({"env": {"X": "${ZOT_TEST_UNSET}"}})),
        }),
    );
    let mut s = Serve::start_env(&t, &[cfg], &["--no-ext"], &[("ZOT_TEST_WORD", "hello")]);
    s.note("ready");
    assert_eq!(text(&s.tool("mcp__fx__env", json!({"name": "GREETING"}))), "hello-dflt-$");
    assert_eq!(text(&s.tool("mcp__fx__env", json!({"name": "ZOT_AGENT"}))), "1");
    let bad = s.wait_state("bad", "failed");
    assert!(bad["error"].as_str().unwrap().contains("ZOT_TEST_UNSET"), "{bad}");
    s.shutdown();
    assert!(!s.log("fx").contains("hello-dflt"), "values never reach the log");
}

#[test]
fn a_project_mcp_json_runs_only_in_a_trusted_project() {
    let t = TempDir::new("mcp-trust");
    let cwd = cwd_of(&t);
    write_config(&cwd, ".zot/mcp.json", json!({"proj": fx(&[], json!({}))}));
    let mut s = Serve::start(&t, &[], &[]);
    let n = s.note("untrusted_project");
    assert_eq!(n["extensions"], json!(["proj"]));
    s.note("ready");
    let e = s.ext("proj");
    assert_eq!((e["state"].as_str(), e["kind"].as_str(), e["pid"].clone()), (Some("untrusted"), Some("mcp"), Value::Null), "{e}");
    s.shutdown();
    assert!(s.log("proj").is_empty(), "never started");

    let mut s = Serve::start(&t, &[], &["--trust-project"]);
    s.note("ready");
    assert_eq!(s.ext("proj")["state"], "ready");
    s.shutdown();

    let trust = std::process::Command::new(zot_proc::BIN)
        .args(["trust", &cwd.display().to_string()])
        .env("ZOT_HOME", t.path().join("zot-home"))
        .output()
        .unwrap();
    assert!(trust.status.success(), "{}", String::from_utf8_lossy(&trust.stderr));
    let mut s = Serve::start(&t, &[], &[]);
    s.note("ready");
    assert_eq!(s.ext("proj")["state"], "ready", "trusted now");
    // --no-ext skips the project and global files.
    s.shutdown();
    let mut s = Serve::start(&t, &[], &["--no-ext"]);
    s.note("ready");
    assert_eq!(s.ext("proj"), Value::Null);
    s.shutdown();
}

#[test]
fn a_missing_mcp_config_is_an_error_at_start_in_every_front_end() {
    let t = TempDir::new("mcp-missing");
    let bad = t.path().join("broken.json");
    std::fs::write(&bad, "{nope").unwrap();
    for sub in [&["serve"][..], &["mcp"], &["ext", "doctor"], &[]] {
        for (file, why) in [("/nonexistent/mcp.json", "no such file or directory"), (bad.to_str().unwrap(), "invalid JSON")] {
            let mut args: Vec<&str> = sub.to_vec();
            args.extend(["--no-ext", "--mcp-config", file]);
            let out = std::process::Command::new(zot_proc::BIN)
                .args(&args)
                .env("ZOT_HOME", t.path().join("zot-home"))
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
            assert!(err.starts_with(&format!("zot: --mcp-config {file}: {why}")), "{args:?}: {err}");
        }
    }
}

#[test]
fn names_follow_the_rule_and_an_extension_of_the_same_name_wins() {
    let t = TempDir::new("mcp-names");
    let ext = common::py_ext(t.path(), "exts/fx", "fx", &[]);
    let cfg = write_config(t.path(), "mcp.json", json!({"fx": fx(&[], json!({})), "b c": fx(&[], json!({})), "srv.2": fx(&[], json!({}))}));
    let mut args = vec!["--no-ext".to_string(), "--ext".into(), ext.display().to_string()];
    args.push("--restart".into());
    args.push("never".into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut s = Serve::start(&t, &[cfg], &args);
    s.note("ready");
    let l = s.ok("list", json!({}));
    let fxs: Vec<&Value> = l["extensions"].as_array().unwrap().iter().filter(|e| e["name"] == "fx").collect();
    assert_eq!(fxs.len(), 1, "{l}");
    assert_eq!(fxs[0]["kind"], "extension", "the extension comes first in load order");
    let srv = s.ext("srv.2");
    assert!(srv["tools"].as_array().unwrap().contains(&json!("mcp__srv_2__echo")), "{srv}");
    let broken = l["extensions"].as_array().unwrap().iter().find(|e| e["error"].as_str().is_some_and(|m| m.contains("\"b c\""))).cloned();
    assert!(broken.is_some_and(|b| b["state"] == "failed"), "{l}");
    s.shutdown();
}

#[test]
fn management_commands_show_servers_and_refuse_to_edit_them() {
    let t = TempDir::new("mcp-manage");
    let global = write_config(&t.path().join("zot-home"), "mcp.json", json!({"gsrv": fx(&[], json!({}))}));
    let (code, out, err) = zot(&t, &["ext", "list", "--json"]);
    assert_eq!(code, 0, "{err}");
    let rows: Value = serde_json::from_str(&out).unwrap();
    let row = rows.as_array().unwrap().iter().find(|r| r["name"] == "gsrv").cloned().unwrap();
    assert_eq!((row["kind"].as_str(), row["scope"].as_str(), row["state"].as_str()), (Some("mcp"), Some("global"), Some("enabled")), "{row}");
    let (_, table, _) = zot(&t, &["ext", "list"]);
    let line = table.lines().find(|l| l.contains("gsrv")).unwrap_or_else(|| panic!("{table}"));
    assert_eq!(line.split_whitespace().nth(4), Some("mcp"), "the language column names the kind: {table}");
    for verb in ["enable", "disable"] {
        let (code, _, err) = zot(&t, &["ext", verb, "gsrv"]);
        assert_eq!(code, 1);
        // The field that does it, in the file it is in.
        let how = match verb {
            "disable" => "set \"disabled\": true in its entry \"gsrv\"",
            _ => "set \"disabled\": false (or remove it) in its entry \"gsrv\"",
        };
        let want = format!("zot: gsrv is an MCP server, not an extension: {how} in {} ('zot ext {verb}' changes extensions only)", global.display());
        assert_eq!(err.trim_end(), want);
    }
    let (code, _, err) = zot(&t, &["ext", "remove", "--yes", "gsrv"]);
    assert_eq!(code, 1);
    assert!(err.contains(&format!("edit its entry \"gsrv\" in {} to remove it", global.display())), "{err}");
    let (code, _, err) = zot(&t, &["ext", "install", global.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("holds MCP servers, not an extension"), "{err}");
    assert!(global.exists(), "nothing was changed");

    // A load writes its log, which `zot ext logs` shows by the server's name.
    let (code, out, err) = zot(&t, &["ext", "doctor", "--json", "--ready-grace", "60"]);
    let report: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    assert_eq!(code, 0, "{report}");
    let e = report["extensions"].as_array().unwrap().iter().find(|e| e["name"] == "gsrv").cloned().unwrap();
    assert_eq!((e["kind"].as_str(), e["state"].as_str(), e["protocol_version"].as_str()), (Some("mcp"), Some("ready"), Some("2025-11-25")), "{e}");
    assert!(e["log"].as_str().unwrap().ends_with("logs/mcp-gsrv.log"));
    let (code, out, _) = zot(&t, &["ext", "logs", "gsrv"]);
    assert_eq!(code, 0);
    assert!(out.contains("initialized: protocol 2025-11-25"), "{out}");
}

#[test]
fn ext_logs_finds_the_log_of_a_server_given_with_mcp_config() {
    // Every error's hint says `see 'zot ext logs NAME'` (docs/protocol.md §8.3).
    let t = TempDir::new("mcp-logs-given");
    let cfg = write_config(t.path(), "given.json", json!({"gfx": fx(&[], json!({})), "quiet": fx(&[], json!({"disabled": true}))}));
    let c = cfg.display().to_string();
    let (code, out, err) = zot(&t, &["ext", "doctor", "--no-ext", "--ready-grace", "60", "--mcp-config", &c]);
    assert_eq!(code, 0, "{out}{err}");
    for args in [&["ext", "logs", "gfx"][..], &["ext", "logs", "gfx", "--mcp-config", &c], &["--mcp-config", &c, "ext", "logs", "gfx"]] {
        let (code, out, err) = zot(&t, args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(out.contains("initialized: protocol 2025-11-25"), "{args:?}: {out}");
    }
    // A given server that never ran: its log is named, not "no extension".
    let (code, out, err) = zot(&t, &["ext", "logs", "quiet", "--mcp-config", &c]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("no log for quiet yet (") && out.trim_end().ends_with("logs/mcp-quiet.log)"), "{out}");
    let (code, _, err) = zot(&t, &["ext", "logs", "quiet"]);
    assert_eq!((code, err.trim()), (1, "zot: no extension named quiet (see 'zot ext list')"));
    // The other session options still do not apply.
    let (code, _, err) = zot(&t, &["ext", "logs", "gfx", "--no-ext"]);
    assert_eq!(code, 2, "{err}");
    let (_, help, _) = zot(&t, &["ext", "logs", "--help"]);
    assert!(help.contains("logs/ext-<name>.log") && help.contains("logs/mcp-<name>.log") && help.contains("--mcp-config FILE"), "{help}");
}

#[test]
fn doctor_checks_a_servers_handshake_with_a_fix() {
    let t = TempDir::new("mcp-doctor");
    let cfg = write_config(
        t.path(),
        "mcp.json",
        json!({"mute": fx(&["--never-init"], json!({"connectTimeout": 0.3, "restart": "never"})), "web": {"type": "ws", "url": "https://x/mcp"}}),
    );
    let (code, out, err) = zot(&t, &["ext", "doctor", "--json", "--no-ext", "--mcp-config", cfg.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    let f: Vec<&Value> = report["findings"].as_array().unwrap().iter().filter(|f| f["code"] == "mcp_handshake").collect();
    assert_eq!(f.len(), 2, "{report}");
    let mute = f.iter().find(|f| f["extension"] == "mute").unwrap();
    assert!(mute["hint"].as_str().unwrap().contains("connectTimeout") && mute["hint"].as_str().unwrap().contains("mcp_server.py --never-init"), "{mute}");
    let web = f.iter().find(|f| f["extension"] == "web").unwrap();
    assert!(web["message"].as_str().unwrap().contains("type \"ws\" is not supported (stdio, http, streamable-http, sse)"), "{web}");
    assert!(web["hint"].as_str().unwrap().contains("set \"type\" to stdio, http or sse"), "{web}");
    // Each entry is shown with its own error, not as an exec not found.
    let cfg = write_config(t.path(), "alone.json", json!({"nocmd": {}, "web": {"type": "ws", "url": "https://x/mcp"}}));
    let (_, out, err) = zot(&t, &["ext", "doctor", "--no-ext", "--mcp-config", cfg.to_str().unwrap()]);
    assert!(out.contains("web (MCP server) [failed: type \"ws\" is not supported (stdio, http, streamable-http, sse)]"), "{out}{err}");
    let want = format!("nocmd (MCP server) [failed: {}: field `command` is missing: the program that runs the server]", cfg.display());
    assert!(out.contains(&want), "{out}{err}");
    assert!(!out.contains("(no command)"), "{out}");
}

#[test]
fn doctor_flags_a_cut_tool_name_and_unknown_fields_of_a_server_that_never_started() {
    // docs/protocol.md §8.3: doctor checks a server's names; §8.1: unknown
    // fields are logged, also for an entry that fails before it runs.
    let t = TempDir::new("mcp-doctor-names");
    let cfg = write_config(
        t.path(),
        "mcp.json",
        json!({
            "fx": fx(&["--dupes"], json!({})),
            "gone": {"command": "./no-such-server", "enviroment": {"A": "1"}, "timeout": 3},
        }),
    );
    let (code, out, err) = zot(&t, &["ext", "doctor", "--json", "--no-ext", "--mcp-config", cfg.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}{err}");
    let report: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    let findings = |ext: &str, code: &str| -> Vec<Value> {
        report["findings"].as_array().unwrap().iter().filter(|f| f["extension"] == ext && f["code"] == code).cloned().collect()
    };
    let long = "x".repeat(70);
    let cut = findings("fx", "mcp_name");
    let cut: Vec<&Value> = cut.iter().filter(|f| f["message"].as_str().unwrap().contains("cut the name of tool")).collect();
    assert_eq!(cut.len(), 1, "{report}");
    let msg = cut[0]["message"].as_str().unwrap();
    assert!(msg.contains(&format!("mcp__fx__{long} is offered as mcp__fx__xxx")), "the full name and the one used: {msg}");
    let used = msg.rsplit(' ').next().unwrap();
    assert_eq!(used.len(), 64, "{msg}");
    let fx = report["extensions"].as_array().unwrap().iter().find(|e| e["name"] == "fx").unwrap();
    assert!(fx["tools"].as_array().unwrap().iter().any(|n| n["name"] == used), "the name used is the one offered: {fx}");
    let unknown = findings("gone", "mcp_unknown_field");
    assert_eq!(unknown.len(), 1, "{report}");
    assert!(unknown[0]["message"].as_str().unwrap().ends_with(r#""enviroment", "timeout""#), "{}", unknown[0]);
    // A program that is not there is not a handshake that failed.
    assert_eq!(findings("gone", "mcp_handshake").len(), 0, "{report}");
    assert_eq!(findings("gone", "mcp_command").len(), 1, "it failed before it was spawned: {report}");
    let log = std::fs::read_to_string(t.path().join("zot-home/logs/mcp-gone.log")).unwrap();
    assert!(log.contains("ignored unknown fields of its entry in") && log.contains("failed to load"), "{log}");
}

#[test]
fn doctor_flags_a_server_tool_refused_for_its_schema() {
    // docs/protocol.md §8.3: doctor checks a server's schemas as an extension's;
    // a tool refused at registration is not listed, so the log says which.
    let t = TempDir::new("mcp-doctor-schema");
    let cfg = write_config(t.path(), "mcp.json", json!({"fx": fx(&["--bad-schema"], json!({}))}));
    // The server has to be listed to be checked: the default 3 s grace is
    // not what this is about.
    let (_, out, err) = zot(&t, &["ext", "doctor", "--json", "--no-ext", "--ready-grace", "60", "--mcp-config", cfg.to_str().unwrap()]);
    let report: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    let f: Vec<&Value> = report["findings"].as_array().unwrap().iter().filter(|f| f["code"] == "mcp_schema").collect();
    assert_eq!(f.len(), 1, "{report}");
    assert!(f[0]["message"].as_str().unwrap().contains("mcp__fx__shapeless"), "{}", f[0]);
    assert_eq!(f[0]["extension"], "fx", "{}", f[0]);
}


#[test]
fn messages_about_a_server_entry_name_the_file_and_the_field() {
    let t = TempDir::new("mcp-messages");
    let home = t.path().join("zot-home");
    let cfg = write_config(
        &home,
        "mcp.json",
        json!({
            "envy": fx(&[], json!({"env": {"TOKEN": "${ZOT_TEST_NEVER_SET}"}})),
            "nocmd": {"args": ["x"]},
            "rel": {"command": "bin/server"},
            "tilde": {"command": "~/bin/server"},
            "wrong": {"command": "/no/such/server"},
        }),
    );
    let f = cfg.display().to_string();
    let dir = home.display().to_string();
    let (code, out, err) = zot_piped(&t, &["--ready-grace", "60"], "/exit\n");
    assert_eq!(code, 0, "{out}{err}");
    let user_home = std::env::var("HOME").unwrap_or_default();
    let tilde_full = if user_home.starts_with('/') { format!(" ({}/bin/server)", user_home.trim_end_matches('/')) } else { String::new() };
    let want = [
        format!("[envy] failed to load: {f}: field `env`: TOKEN: variable ZOT_TEST_NEVER_SET is not set (see 'zot ext logs envy')"),
        format!("[nocmd] failed to load: {f}: field `command` is missing: the program that runs the server (see 'zot ext logs nocmd')"),
        format!("[rel] failed to load: {f}: field `command` \"bin/server\": {dir}/bin/server: no such file (see 'zot ext logs rel')"),
        format!("[tilde] failed to load: {f}: field `command` \"~/bin/server\": `~` is not expanded: write the absolute path{tilde_full} (see 'zot ext logs tilde')"),
        // The path once: it is the command as written.
        format!("[wrong] failed to load: {f}: field `command`: /no/such/server: no such file (see 'zot ext logs wrong')"),
    ];
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines, want, "{out}{err}");

    // Doctor: what is wrong in an entry is not a handshake, and the fix
    // says what to do.
    let (_, out, err) = zot(&t, &["ext", "doctor", "--json", "--ready-grace", "60"]);
    let report: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    let finding = |ext: &str| report["findings"].as_array().unwrap().iter().find(|x| x["extension"] == ext).cloned().unwrap_or_else(|| panic!("{report}"));
    let fixes = [
        ("envy", "mcp_config", format!("export ZOT_TEST_NEVER_SET before zot starts, or give it a default in \"env\" of \"envy\" in {f}: ${{ZOT_TEST_NEVER_SET:-value}}")),
        ("nocmd", "mcp_config", format!("add \"command\" to the entry \"nocmd\" in {f}: the program that runs the server (\"npx\", \"uvx\", or an absolute path), its arguments in \"args\"")),
        ("rel", "mcp_command", format!("install the program, or correct \"command\" of \"rel\" in {f} (an absolute path, or a program on PATH)")),
        ("tilde", "mcp_config", format!("write \"command\" of \"tilde\" in {f} as an absolute path: nothing expands ~ there")),
        ("wrong", "mcp_command", format!("install the program, or correct \"command\" of \"wrong\" in {f} (an absolute path, or a program on PATH)")),
    ];
    for (ext, code, hint) in fixes {
        let x = finding(ext);
        assert_eq!((x["code"].as_str(), x["hint"].as_str()), (Some(code), Some(hint.as_str())), "{x}");
    }
    let (_, out, _) = zot(&t, &["ext", "doctor", "--ready-grace", "60"]);
    assert!(out.starts_with("zot ext doctor: 0 extension(s), 5 MCP server(s), load "), "{out}");
}

/// `zot ARGS` with `input` on stdin, as [`zot`] runs it otherwise.
fn zot_piped(t: &TempDir, args: &[&str], input: &str) -> (i32, String, String) {
    use std::io::Write;
    let mut child = std::process::Command::new(zot_proc::BIN)
        .args(args)
        .env("ZOT_HOME", t.path().join("zot-home"))
        .env_remove("ZOT_TEST_NEVER_SET")
        .current_dir(cwd_of(t))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn a_broken_config_file_is_a_file_not_a_server() {
    let t = TempDir::new("mcp-broken-file");
    let home = t.path().join("zot-home");
    std::fs::create_dir_all(&home).unwrap();
    let file = home.join("mcp.json");
    std::fs::write(&file, "{\"mcpServers\": {\n").unwrap();
    let f = file.display().to_string();
    let why = "invalid JSON: EOF while parsing an object at line 2 column 0";
    let (code, out, err) = zot_piped(&t, &[], "/extensions\n");
    assert_eq!(code, 0, "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], format!("error: {f}: broken MCP config file: {why}; none of its servers is loaded"), "{out}");
    assert!(lines[1].contains("(MCP config file)") && !lines[1].contains("(MCP server"), "{out}");
    assert!(!out.contains("manifest") && !out.contains("[mcp.json]"), "{out}");
    let (_, out, _) = zot(&t, &["ext", "list"]);
    assert!(out.contains("(broken config file, see below)"), "{out}");
    assert!(out.contains(&format!("error: global {f}: broken MCP config file: {why}\n")), "{out}");
    let (_, out, _) = zot(&t, &["ext", "doctor"]);
    assert!(out.starts_with("zot ext doctor: 0 extension(s), 1 broken config file(s), load "), "{out}");
    assert!(out.contains(&format!("{f} (MCP config file) [failed: broken MCP config file: {why}]")), "{out}");

    // A project's broken file is no project extension to `zot trust`.
    let cwd = cwd_of(&t);
    std::fs::create_dir_all(cwd.join(".zot")).unwrap();
    std::fs::write(cwd.join(".zot/mcp.json"), "{").unwrap();
    let (code, out, err) = zot(&t, &["trust"]);
    assert_eq!(code, 0, "{err}");
    let canon = std::fs::canonicalize(&cwd).unwrap();
    assert_eq!(out, format!("trusted {} (no project extensions yet)\n", canon.display()));
}

#[test]
fn a_project_changed_since_trusted_says_so_in_the_session() {
    let t = TempDir::new("mcp-changed");
    let cwd = cwd_of(&t);
    write_config(&cwd, ".zot/mcp.json", json!({"proj": fx(&[], json!({}))}));
    let (code, out, err) = zot(&t, &["trust"]);
    assert_eq!(code, 0, "{err}");
    let canon = std::fs::canonicalize(&cwd).unwrap();
    let d = canon.display().to_string();
    // Servers are named as servers.
    assert!(out.contains(&format!("\ntrusted {d} (1 MCP server(s): proj)\n")), "{out}");
    // It runs in the project root (its default folder), which is named,
    // not walked.
    assert!(out.ends_with(&format!("\nnot covered: {d} (found by the interpreter, not fingerprinted)\n")), "{out}");
    write_config(&cwd, ".zot/mcp.json", json!({"proj": fx(&["--dupes"], json!({}))}));
    let (_, list, _) = zot(&t, &["trust", "--list"]);
    assert_eq!(list, format!("{d}  changed since trusted (run 'zot trust {d}' to allow it again)\n"));
    let (code, out, err) = zot_piped(&t, &["--cwd", &d], "/exit\n");
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(out, format!("project MCP server proj not loaded: the project {d} changed since trusted (run 'zot trust {d}' to allow it again)\n"), "{err}");
}

#[test]
fn an_unset_variable_or_an_input_in_a_client_file_is_an_entry_error_and_lists_broken() {
    // A project's .mcp.json with a stdio server whose args use an unset
    // variable and a remote one whose header does, and a .vscode/mcp.json
    // entry with VS Code's ${input:ID}: doctor says mcp_config with the
    // fix, and `zot ext list` lists each broken with its reason.
    let t = TempDir::new("mcp-unset-input");
    let cwd = cwd_of(&t);
    let fx_path = common::fixture("mcp_server.py").display().to_string();
    let project = json!({"mcpServers": {
        "unset": {"command": "python3", "args": [fx_path, "${ZOT_TEST_NEVER_SET}"]},
        "web": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer ${ZOT_TEST_NEVER_SET}"}},
    }});
    std::fs::write(cwd.join(".mcp.json"), project.to_string()).unwrap();
    std::fs::create_dir_all(cwd.join(".vscode")).unwrap();
    let vscode = json!({"inputs": [{"type": "promptString", "id": "key", "password": true}],
        "servers": {"asks": {"command": "python3", "args": [fx_path], "env": {"KEY": "${input:key}"}}}});
    std::fs::write(cwd.join(".vscode/mcp.json"), vscode.to_string()).unwrap();
    let (mcp, vsc) = (cwd.join(".mcp.json").display().to_string(), cwd.join(".vscode/mcp.json").display().to_string());

    let (_, out, err) = zot(&t, &["ext", "doctor", "--json", "--trust-project", "--ready-grace", "60"]);
    let report: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    let finding = |ext: &str| report["findings"].as_array().unwrap().iter().find(|x| x["extension"] == ext).cloned().unwrap_or_else(|| panic!("{report}"));
    let fixes = [
        ("unset", format!("export ZOT_TEST_NEVER_SET before zot starts, or write ${{ZOT_TEST_NEVER_SET:-DEFAULT}} in \"args\" of \"unset\" in {mcp} for a default")),
        ("asks", format!("set the value in the environment zot runs in and write ${{env:VAR}} for ${{input:key}} in the entry \"asks\" in {vsc}")),
        ("web", format!("export ZOT_TEST_NEVER_SET before zot starts: the entry \"web\" in {mcp} sends it")),
    ];
    for (ext, hint) in fixes {
        let x = finding(ext);
        assert_eq!((x["code"].as_str(), x["hint"].as_str()), (Some("mcp_config"), Some(hint.as_str())), "{x}");
    }

    let (code, _, err) = zot(&t, &["trust"]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = zot(&t, &["ext", "list", "--json"]);
    assert_eq!(code, 0, "{err}");
    let rows: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let row = |name: &str| rows.as_array().unwrap().iter().find(|r| r["name"] == name).cloned().unwrap_or_else(|| panic!("{rows}"));
    let (unset, web) = (row("unset"), row("web"));
    assert_eq!(unset["state"], "broken", "{unset}");
    assert!(unset["error"].as_str().unwrap_or("").contains("${ZOT_TEST_NEVER_SET} is not set"), "{unset}");
    assert_eq!(web["state"], "broken", "{web}");
    assert_eq!(web["exec_error"], "header Authorization: variable ZOT_TEST_NEVER_SET is not set", "{web}");
    let (_, table, _) = zot(&t, &["ext", "list"]);
    assert!(table.contains("error: project web cannot start: header Authorization: variable ZOT_TEST_NEVER_SET is not set"), "{table}");
}

/// A server never runs in `$ZOT_HOME` (docs/protocol.md §8.1): a `cwd` of
/// `$ZOT_HOME/mcp.json` that is its folder, one that reaches into it
/// through `..`, and one through a link are each an error of that entry,
/// named with where it leads, and nothing runs there; the control, a
/// `cwd` beside `$ZOT_HOME`, starts.
#[test]
fn a_server_cwd_inside_zot_home_is_an_entry_error() {
    let t = TempDir::new("mcp-cwd-home");
    let home = t.path().join("zot-home");
    std::fs::create_dir_all(home.join("data")).unwrap();
    std::fs::create_dir_all(t.path().join("elsewhere")).unwrap();
    std::os::unix::fs::symlink(home.join("data"), t.path().join("link")).unwrap();
    let cfg = write_config(
        &home,
        "mcp.json",
        json!({
            "dot": fx(&[], json!({"cwd": "."})),
            "dots": fx(&[], json!({"cwd": "../elsewhere/../zot-home/data"})),
            "linked": fx(&[], json!({"cwd": "../link"})),
            "fine": fx(&[], json!({"cwd": "../elsewhere"})),
        }),
    );
    let f = cfg.display().to_string();
    let real = |p: &std::path::Path| std::fs::canonicalize(p).unwrap().display().to_string();
    let mut s = Serve::start(&t, &[], &[]);
    s.note("ready");
    assert_eq!(s.ext("fine")["state"], "ready", "the control starts");
    let want = [
        ("dot", format!("{f}: field `cwd` {:?} is inside $ZOT_HOME: a server never runs in zot's own folder; give it a `cwd` elsewhere", home.display().to_string())),
        ("dots", format!("{f}: field `cwd` {:?} is inside $ZOT_HOME: a server never runs in zot's own folder; give it a `cwd` elsewhere", home.join("data").display().to_string())),
        (
            "linked",
            format!(
                "{f}: field `cwd` {:?} (-> {}) is inside $ZOT_HOME: a server never runs in zot's own folder; give it a `cwd` elsewhere",
                t.path().join("link").display().to_string(),
                real(&home.join("data"))
            ),
        ),
    ];
    for (name, error) in want {
        let e = s.wait_state(name, "failed");
        assert_eq!((e["error"].as_str(), e["pid"].clone()), (Some(error.as_str()), Value::Null), "{e}");
    }
    s.shutdown();
    for name in ["dot", "dots", "linked"] {
        assert!(!s.log(name).contains("fixture:"), "{name} never ran: {}", s.log(name));
    }
    assert!(s.log("fine").contains("fixture:"), "the control ran: {}", s.log("fine"));
}
