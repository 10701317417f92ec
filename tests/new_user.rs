//! What a new user trips on, through the binary: a typo in `--ext` in every
//! front end, the same folder given twice, broken execs shown as broken,
//! the stderr of an extension that fails to start, the help words and the
//! unknown command, and messages that say what is true.

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};

mod common;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use common::{sh_ext, Out, TempDir};
use zot_proc::{strings, BIN, FAST};

/// `zot args...` in `dir` with `ZOT_HOME=<t>/home` and stdin empty.
fn zot_in(t: &TempDir, dir: &Path, args: &[String]) -> Out {
    let out = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env("ZOT_HOME", t.path().join("home"))
        .env_remove("XDG_STATE_HOME")
        .env_remove("ZOT_TRACE")
        .stdin(Stdio::null())
        .output()
        .expect("run zot");
    Out::of(out)
}

fn zot(t: &TempDir, args: &[&str]) -> Out {
    zot_in(t, t.path(), &strings(args))
}

/// The front ends that load extensions, as argument prefixes.
const FRONT_ENDS: [&[&str]; 4] = [&[], &["serve"], &["mcp"], &["ext", "doctor"]];

#[test]
fn a_wrong_ext_path_is_an_error_at_start_in_every_front_end() {
    let t = TempDir::new("nu-ext-path");
    std::fs::create_dir_all(t.path().join("some")).expect("some/");
    std::fs::write(t.path().join("some/file.sh"), "#!/bin/sh\n").expect("file.sh");
    std::fs::create_dir_all(t.path().join("empty")).expect("empty/");
    // A good extension given first must not be started.
    let marker = t.path().join("started");
    let good = sh_ext(t.path(), "good", "good", "sh_ext.sh", &["good", &marker.display().to_string()]);
    let cases = [
        ("nope", "no such file or directory"),
        ("some/file.sh", "not an extension: give its folder (holding extension.json) or its extension.json"),
        ("empty", "the folder holds no extension.json"),
    ];
    for front in FRONT_ENDS {
        for (path, why) in cases {
            let mut args = strings(front);
            args.extend(strings(&["--no-ext", "--ext", &good.display().to_string(), "--ext", path]));
            let r = zot_in(&t, t.path(), &args);
            assert_eq!(r.code, 1, "{front:?} {path}: {}", r.stderr);
            assert_eq!(r.stderr, format!("zot: --ext {path}: {why}\n"), "{front:?}");
            assert_eq!(r.stdout, "", "{front:?} {path}");
            assert!(!marker.exists(), "{front:?} {path}: an extension was started");
        }
    }
}

#[test]
fn the_same_folder_twice_is_one_extension() {
    let t = TempDir::new("nu-twice");
    let x = sh_ext(t.path(), "x", "x", "sh_ext.sh", &["x"]);
    let spelled_twice = format!("{}/../x", x.display());
    let mut args = strings(&["ext", "doctor", "--no-ext", "--json"]);
    args.extend(strings(&FAST));
    args.extend(strings(&["--ext", &x.display().to_string(), "--ext", &spelled_twice, "--ext", "x/extension.json"]));
    let r = zot_in(&t, t.path(), &args);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let report: Value = serde_json::from_str(&r.stdout).expect("json");
    let exts = report["extensions"].as_array().expect("extensions");
    assert_eq!(exts.len(), 1, "{report:#}");
    assert_eq!(exts[0]["state"], "auto_ready", "{report:#}");
    assert_eq!(report["conflicts"], serde_json::json!([]), "{report:#}");

    // The same in a session: one tool, no shadowing.
    let mut args = strings(&["serve", "--no-ext"]);
    args.extend(strings(&FAST));
    args.extend(strings(&["--ext", &x.display().to_string(), "--ext", &spelled_twice]));
    let mut z = zot_proc::Zot::spawn(t.path(), &args, &[]);
    z.send(r#"{"id":1,"type":"list"}"#);
    z.wait_line("ready", |l| l.contains(r#""type":"ready""#));
    z.send(r#"{"id":2,"type":"list"}"#);
    let line = z.wait_line("list", |l| l.contains(r#""id":2"#));
    let v: Value = serde_json::from_str(&line).expect("json");
    assert_eq!(v["result"]["extensions"].as_array().map(Vec::len), Some(1), "{v:#}");
    z.close_stdin();
    assert_eq!(z.exit_code(std::time::Duration::from_secs(20)), 0);
}

#[test]
fn zot_mcp_refuses_interactive_tools_and_its_completions_agree() {
    let t = TempDir::new("nu-mcp-interactive");
    let want = "zot mcp: option '--interactive-tools' does not apply to 'zot mcp': an MCP client has no one to answer an interactive tool's panel (see 'zot mcp --help')\n";
    for args in [&["mcp", "--interactive-tools"][..], &["--interactive-tools", "mcp"]] {
        let r = zot(&t, args);
        assert_eq!((r.code, r.stderr.as_str(), r.stdout.as_str()), (2, want, ""), "{args:?}");
    }
    let help = zot(&t, &["mcp", "--help"]);
    assert!(!help.stdout.contains("--interactive-tools"), "{}", help.stdout);
    assert!(zot(&t, &["serve", "--help"]).stdout.contains("--interactive-tools"));
    // Every shell's completions offer it to serve and not to mcp.
    let bash = zot(&t, &["completions", "bash"]).stdout;
    let line = |cmd: &str| bash.lines().find(|l| l.trim_start().starts_with(&format!("\"{cmd}\")"))).unwrap_or("").to_string();
    assert!(line("serve").contains("--interactive-tools"), "{bash}");
    assert!(line("mcp").contains("--trace") && !line("mcp").contains("--interactive-tools"), "{}", line("mcp"));
    let fish = zot(&t, &["completions", "fish"]).stdout;
    assert!(fish.contains("__zot_is \\'serve\\'' -l interactive-tools"), "{fish}");
    assert!(!fish.contains("__zot_is \\'mcp\\'' -l interactive-tools"), "{fish}");
    let zsh = zot(&t, &["completions", "zsh"]).stdout;
    let mcp_part: String = zsh.split("(\"mcp\")").nth(1).unwrap_or("").split(";;").next().unwrap_or("").to_string();
    assert!(mcp_part.contains("--trace") && !mcp_part.contains("interactive-tools"), "{mcp_part}\n{zsh}");
}

#[test]
fn help_words_version_after_a_command_and_the_nearest_command() {
    let t = TempDir::new("nu-help");
    let same = |a: &[&str], b: &[&str]| {
        let (x, y) = (zot(&t, a), zot(&t, b));
        assert_eq!((x.code, &x.stdout), (0, &y.stdout), "{a:?} vs {b:?}: {}", x.stderr);
        assert!(!x.stdout.is_empty());
    };
    same(&["help"], &["--help"]);
    same(&["help", "ext"], &["ext", "--help"]);
    same(&["ext", "help"], &["ext", "--help"]);
    same(&["help", "ext", "install"], &["ext", "install", "--help"]);
    same(&["ext", "help", "new"], &["ext", "new", "--help"]);
    same(&["help", "serve"], &["serve", "--help"]);
    for args in [&["serve", "-V"][..], &["mcp", "--version"], &["ext", "-V"], &["-V"]] {
        let r = zot(&t, args);
        assert_eq!((r.code, r.stdout.as_str()), (0, concat!("zot ", env!("CARGO_PKG_VERSION"), "\n")), "{args:?}");
    }
    let cases: [(&[&str], &str); 5] = [
        (&["exx", "list"], "zot: unknown command 'exx'; did you mean 'ext'? (see 'zot --help')\n"),
        (&["srve"], "zot: unknown command 'srve'; did you mean 'serve'? (see 'zot --help')\n"),
        (&["frobnicate"], "zot: unknown command 'frobnicate' (see 'zot --help')\n"),
        (&["ext", "lst"], "zot ext: unknown subcommand 'lst'; did you mean 'list'? (see 'zot ext --help')\n"),
        (&["help", "exx"], "zot help: unknown command 'exx'; did you mean 'ext'? (see 'zot help --help')\n"),
    ];
    for (args, want) in cases {
        let r = zot(&t, args);
        assert_eq!((r.code, r.stderr.as_str()), (2, want), "{args:?}");
    }
}

#[test]
fn the_usage_block_of_docs_cli_is_what_zot_help_prints() {
    let t = TempDir::new("nu-readme-usage");
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/cli.md")).expect("docs/cli.md");
    let block = page.split("::the_usage_block_of_docs_cli_is_what_zot_help_prints -->\n```\n").nth(1).and_then(|r| r.split("```").next()).expect("usage block");
    let help = zot(&t, &["--help"]).stdout;
    let usage: String = help
        .split("Usage:\n")
        .nth(1)
        .and_then(|u| u.split("\n\n").next())
        .expect("usage")
        .lines()
        .map(|l| format!("{}\n", l.strip_prefix("  ").unwrap_or(l)))
        .collect();
    assert_eq!(block, usage);
}

#[test]
fn the_man_page_lists_each_flag_once_and_untrust_has_its_own_text() {
    let t = TempDir::new("nu-man");
    let man = zot(&t, &["man"]).stdout;
    let section = |name: &str| -> String {
        man.split(&format!(".SS \"zot {name}")).nth(1).map(|s| s.split(".SS ").next().unwrap_or("").to_string()).unwrap_or_default()
    };
    assert_eq!(section("ext doctor").matches("\\-\\-json").count(), 2, "{}", section("ext doctor"));
    let (trust, untrust) = (section("trust"), section("untrust"));
    assert!(untrust.contains("Forgets the project DIR"), "{untrust}");
    assert!(!untrust.contains("records the\nproject's canonical path"), "{untrust}");
    assert!(trust.contains("records the"), "{trust}");
    let new = zot(&t, &["ext", "new", "--help"]).stdout;
    assert!(new.starts_with("Usage: zot ext new <name> [--lang LANG] [--dir DIR]\n"), "{new}");
    assert!(!new.contains("PATH"), "{new}");
}

#[test]
fn an_exec_that_cannot_start_is_shown_broken_with_why() {
    let t = TempDir::new("nu-broken-exec");
    // The weather example's exec points into this checkout's target/,
    // outside the folder an install copies.
    let weather = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/rust/weather");
    let r = zot(&t, &["ext", "install", weather]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let gone = t.path().join("target/debug/examples/weather");
    let why = format!("exec not found: {} (outside the extension's folder)", gone.display());
    let dest = t.path().join("home/extensions/weather");
    assert_eq!(
        r.stdout,
        format!(
            "installed weather 1.0.0 to {}\nbroken: weather cannot start: {why}\nto install it: put the built program in the extension's folder, set \"exec\" to it (\"./NAME\"), and install that folder; for a Rust example: cargo build --release --example weather, copy target/release/examples/weather into a copy of its folder (zot ext remove weather first)\n",
            dest.display()
        )
    );
    // An exec that is there but not executable.
    let noexec = t.path().join("home/extensions/noexec");
    std::fs::create_dir_all(&noexec).expect("noexec");
    std::fs::write(noexec.join("extension.json"), r#"{"name":"noexec","exec":"./run.sh"}"#).expect("manifest");
    std::fs::write(noexec.join("run.sh"), "#!/bin/sh\n").expect("run.sh");
    let nx = format!("exec not executable: {}/run.sh (chmod +x it)", noexec.display());

    let list = zot(&t, &["ext", "list"]);
    let state = |name: &str| {
        list.stdout.lines().find(|l| l.starts_with(&format!("global  {name} "))).map(|l| l.split_whitespace().nth(3).unwrap_or("").to_string())
    };
    assert_eq!(state("weather").as_deref(), Some("broken"), "{}", list.stdout);
    assert_eq!(state("noexec").as_deref(), Some("broken"), "{}", list.stdout);
    assert!(list.stdout.contains(&format!("error: global weather cannot start: {why}\n")), "{}", list.stdout);
    assert!(list.stdout.contains(&format!("error: global noexec cannot start: {nx}\n")), "{}", list.stdout);
    let json: Value = serde_json::from_str(&zot(&t, &["ext", "list", "--json"]).stdout).expect("json");
    let row = |n: &str| json.as_array().and_then(|a| a.iter().find(|r| r["name"] == n)).cloned().unwrap_or_default();
    assert_eq!((row("weather")["state"].clone(), row("weather")["exec_error"].clone()), (Value::from("broken"), Value::from(why.clone())));

    let mut args = strings(&["ext", "doctor", "--json"]);
    args.extend(strings(&FAST));
    let d = zot_in(&t, t.path(), &args);
    assert_eq!(d.code, 1);
    let report: Value = serde_json::from_str(&d.stdout).expect("json");
    let ext = |n: &str| report["extensions"].as_array().and_then(|a| a.iter().find(|e| e["name"] == n)).cloned().unwrap_or_default();
    assert_eq!((ext("weather")["state"].clone(), ext("weather")["reason"].clone()), (Value::from("broken"), Value::from(why)), "{report:#}");
    assert_eq!((ext("noexec")["state"].clone(), ext("noexec")["reason"].clone()), (Value::from("broken"), Value::from(nx)), "{report:#}");
}

/// An extension that writes `stderr` (shell `printf` text) and exits 3
/// before saying hello.
fn failing_ext(parent: &Path, name: &str, stderr: &str) -> std::path::PathBuf {
    let dir = parent.join(name);
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(dir.join("run.sh"), format!("#!/bin/sh\nprintf '{stderr}' >&2\nexit 3\n")).expect("run.sh");
    std::process::Command::new("chmod").args(["+x"]).arg(dir.join("run.sh")).status().expect("chmod");
    std::fs::write(dir.join("extension.json"), format!(r#"{{"name":"{name}","exec":"./run.sh"}}"#)).expect("manifest");
    dir
}

#[test]
fn a_failed_start_shows_the_end_of_the_extensions_stderr() {
    let t = TempDir::new("nu-stderr-tail");
    let noise: String = (1..=6).map(|i| format!("noise {i}\\n")).collect();
    let boom = failing_ext(t.path(), "boom", &format!("{noise}red \\033[31mtext\\033[0m\\007\\nboom: cannot open config\\n"));
    let why = "exited before saying hello (exit code 3); its stderr: noise 4 | noise 5 | noise 6 | red text | boom: cannot open config";
    // A long line is cut to the last KiB.
    let long = failing_ext(t.path(), "long", &format!("{}\\n", "y".repeat(3000)));

    // zot serve: the extension_error message.
    let mut args = strings(&["serve", "--no-ext"]);
    args.extend(strings(&FAST));
    args.extend(strings(&["--ext", &boom.display().to_string(), "--ext", &long.display().to_string()]));
    let mut z = zot_proc::Zot::spawn(t.path(), &args, &[]);
    z.wait_line("ready", |l| l.contains(r#""type":"ready""#));
    let error_of = |name: &str| -> Value {
        let needle = format!(r#""extension_error","extension":"{name}""#);
        let line = z.seen.iter().find(|l| l.contains(&needle)).unwrap_or_else(|| panic!("no error for {name}: {:?}", z.seen));
        serde_json::from_str(line).expect("json")
    };
    assert_eq!(error_of("boom")["message"], why);
    let v = error_of("long");
    let msg = v["message"].as_str().unwrap_or("");
    let tail = msg.split_once("; its stderr: ").map(|(_, t)| t).unwrap_or("");
    assert!(tail.len() <= 1024 && tail.len() > 1000 && tail.chars().all(|c| c == 'y'), "{msg}");
    z.close_stdin();
    assert_eq!(z.exit_code(std::time::Duration::from_secs(20)), 0);

    // The console's failure line (input piped).
    let out = Command::new(BIN)
        .args(["--no-ext", "--ext", &boom.display().to_string()])
        .env("ZOT_HOME", t.path().join("home"))
        .env("NO_COLOR", "1")
        .current_dir(t.path())
        .stdin(Stdio::null())
        .output()
        .expect("console");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.lines().any(|l| l == format!("[boom] failed to load: {why} (see 'zot ext logs boom')")), "{text}");

    // zot ext doctor: the reason.
    let mut args = strings(&["ext", "doctor", "--no-ext", "--json"]);
    args.extend(strings(&FAST));
    args.extend(strings(&["--ext", &boom.display().to_string()]));
    let d = zot_in(&t, t.path(), &args);
    let report: Value = serde_json::from_str(&d.stdout).expect("json");
    assert_eq!(report["extensions"][0]["reason"], why, "{report:#}");
}

#[test]
fn messages_say_what_is_true() {
    let t = TempDir::new("nu-messages");
    std::fs::write(t.path().join("afile"), "x").expect("afile");
    let afile = t.path().join("afile").display().to_string();
    // zot trust FILE: a file, not a missing folder.
    let r = zot(&t, &["trust", &afile]);
    assert_eq!((r.code, r.stderr), (1, format!("zot: {afile}: not a directory (zot trust takes the project's folder)\n")));
    // zot ext check FILE: not a folder that cannot be read.
    let r = zot(&t, &["ext", "check", &afile]);
    assert_eq!(r.code, 1);
    assert!(r.stdout.contains(&format!("error   manifest             {afile}: not an extension: give its folder (holding extension.json) or its extension.json (fix: point at a folder holding extension.json, or create one with 'zot ext new NAME')\n")), "{}", r.stdout);
    assert!(!r.stdout.contains("Not a directory"), "{}", r.stdout);
    // ZOT_HOME naming a plain file is an error, not an empty home.
    let out = Command::new(BIN).args(["ext", "list"]).env("ZOT_HOME", &afile).output().expect("zot");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stderr), format!("zot: ZOT_HOME {afile}: not a directory\n"));
    // zot ext doctor --ext /nonexistent: an error at start, no fix for a
    // file that does not exist.
    let r = zot(&t, &["ext", "doctor", "--ext", "/nonexistent"]);
    assert_eq!((r.code, r.stderr.as_str(), r.stdout.as_str()), (1, "zot: --ext /nonexistent: no such file or directory\n", ""));
    // A folder in the home without a manifest: said so, with a fix that applies.
    std::fs::create_dir_all(t.path().join("home/extensions/empty")).expect("empty");
    let mut args = strings(&["ext", "doctor", "--json"]);
    args.extend(strings(&FAST));
    let d: Value = serde_json::from_str(&zot_in(&t, t.path(), &args).stdout).expect("json");
    let f = &d["findings"][0];
    assert_eq!(f["message"], format!("no extension.json in {}/home/extensions/empty", t.path().display()), "{d:#}");
    assert_eq!(f["hint"], "add one (zot ext new NAME writes a working extension), or remove the folder");
    std::fs::remove_dir(t.path().join("home/extensions/empty")).expect("rmdir");

    // A missing tsx: install it, not "use ./main.py".
    let ts = t.path().join("ts");
    std::fs::create_dir_all(&ts).expect("ts");
    std::fs::write(ts.join("extension.json"), r#"{"name":"ts","exec":"tsx","args":["main.ts"]}"#).expect("manifest");
    let out = Command::new(BIN).args(["ext", "check", &ts.display().to_string()]).env("PATH", "/nonexistent-bin").output().expect("zot");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("(fix: install tsx (npm install -g tsx) so that it is on PATH, or set \"exec\" to the program's path relative to the manifest)"), "{text}");

    // Doctor's fix for two --ext extensions in conflict: not zot ext disable.
    let a = common::py_ext(t.path(), "a", "a", &["--tools", "same"]);
    let b = common::py_ext(t.path(), "b", "b", &["--tools", "same"]);
    let mut args = strings(&["ext", "doctor", "--no-ext", "--json"]);
    args.extend(strings(&FAST));
    args.extend(strings(&["--ext", &a.display().to_string(), "--ext", &b.display().to_string()]));
    let d: Value = serde_json::from_str(&zot_in(&t, t.path(), &args).stdout).expect("json");
    let f = d["findings"].as_array().and_then(|f| f.iter().find(|f| f["code"] == "name_conflict")).cloned().unwrap_or_default();
    assert_eq!(f["hint"], "rename the tool in one of them, or leave one of their --ext paths out", "{d:#}");
    // ...and for a disabled --ext extension: not zot ext enable.
    let off = t.path().join("off");
    std::fs::create_dir_all(&off).expect("off");
    std::fs::write(off.join("extension.json"), r#"{"name":"off","exec":"sh","enabled":false}"#).expect("manifest");
    let mut args = strings(&["ext", "doctor", "--no-ext", "--json"]);
    args.extend(strings(&FAST));
    args.extend(strings(&["--ext", &off.display().to_string()]));
    let d: Value = serde_json::from_str(&zot_in(&t, t.path(), &args).stdout).expect("json");
    assert_eq!(d["findings"][0]["hint"], format!("set \"enabled\": true in {}/extension.json", off.display()), "{d:#}");

    // The trust wording of zot ext list.
    let proj = t.path().join("proj");
    std::fs::create_dir_all(proj.join(".zot/extensions/lint")).expect("proj");
    std::fs::write(proj.join(".zot/extensions/lint/extension.json"), r#"{"name":"lint","exec":"sh"}"#).expect("manifest");
    let proj_s = proj.display().to_string();
    let list = zot(&t, &["ext", "list", "--cwd", &proj_s]);
    assert!(list.stdout.contains(&format!("note: project {proj_s} is not trusted: its extensions do not run")), "{}", list.stdout);
    assert_eq!(zot(&t, &["trust", &proj_s]).code, 0);
    std::fs::write(proj.join(".zot/extensions/lint/extension.json"), r#"{"name":"lint","exec":"sh","args":[]}"#).expect("manifest");
    let list = zot(&t, &["ext", "list", "--cwd", &proj_s]);
    assert!(list.stdout.contains(&format!("note: project {proj_s} has changed since it was trusted: its extensions do not run")), "{}", list.stdout);
    // ...and of the session's line for an untrusted project's extensions.
    let out = Command::new(BIN)
        .args(["--cwd", &proj_s])
        .env("ZOT_HOME", t.path().join("home"))
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("console");
    let text = String::from_utf8_lossy(&out.stdout);
    // It changed since it was trusted: said so, with the fix `zot trust --list` gives.
    let want = format!("project extension lint not loaded: the project {proj_s} changed since trusted (run 'zot trust {proj_s}' to allow it again)");
    assert!(text.lines().any(|l| l == want), "{text}");
}

#[test]
fn a_project_folder_that_is_the_homes_own_holds_global_extensions() {
    // ZOT_HOME=<proj>/.zot, run in <proj>: the one folder is listed and
    // loaded once, as global (no trust asked, nothing shadowed).
    let t = TempDir::new("nu-home-is-project");
    let proj = t.path().join("proj");
    let exts = proj.join(".zot/extensions");
    std::fs::create_dir_all(&exts).expect("exts");
    sh_ext(&exts, "x", "x", "sh_ext.sh", &["x"]);
    let mut args = strings(&["ext", "doctor", "--json", "--cwd", &proj.display().to_string()]);
    args.extend(strings(&FAST));
    let out = Command::new(BIN).args(&args).env("ZOT_HOME", proj.join(".zot")).stdin(Stdio::null()).output().expect("zot");
    let report: Value = serde_json::from_str(&String::from_utf8_lossy(&out.stdout)).expect("json");
    let list = report["extensions"].as_array().cloned().unwrap_or_default();
    assert_eq!(list.len(), 1, "{report:#}");
    assert_eq!((list[0]["source"].as_str(), list[0]["state"].as_str()), (Some("global"), Some("auto_ready")), "{report:#}");
    assert_eq!(out.status.code(), Some(0), "{report:#}");
}
