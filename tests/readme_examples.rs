//! The command examples of the README and of docs/, run as they show them
//! (from the checkout, with the bundled examples) and compared with what
//! they say they print. Timings, absolute paths and ids that differ from
//! run to run are the only things not compared. A page marks each example
//! with the test that runs it, or says why it cannot run here (a demo on a
//! terminal, folders of the reader's own); tests/docs.rs checks the marks.

use serde_json::Value;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

mod common;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use common::TempDir;
use zot_proc::BIN;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The README and every page of docs/, each as (name, text).
fn pages() -> Vec<(String, String)> {
    let mut v = vec![("README.md".to_string(), std::fs::read_to_string(Path::new(ROOT).join("README.md")).expect("README.md"))];
    let mut docs: Vec<_> = std::fs::read_dir(Path::new(ROOT).join("docs")).expect("docs/").filter_map(|e| e.ok()).map(|e| e.path()).collect();
    docs.sort();
    for d in docs.into_iter().filter(|d| d.extension().is_some_and(|x| x == "md")) {
        v.push((format!("docs/{}", d.file_name().unwrap_or_default().to_string_lossy()), std::fs::read_to_string(&d).expect("a docs page")));
    }
    v
}

/// The one fenced block, in the README or docs/, whose first line starts
/// with `first`, without the fences.
fn block(first: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (name, text) in pages() {
        let mut rest = text.as_str();
        while let Some(i) = rest.find("```") {
            let body = &rest[i + 3..];
            let body = &body[body.find('\n').map_or(body.len(), |n| n + 1)..];
            let end = body.find("```").unwrap_or(body.len());
            if body.starts_with(first) {
                found.push((name.clone(), body[..end].lines().map(str::to_string).collect::<Vec<_>>()));
            }
            rest = &body[(end + 3).min(body.len())..];
        }
    }
    assert_eq!(found.len(), 1, "blocks starting {first:?}: {:?}", found.iter().map(|(n, _)| n).collect::<Vec<_>>());
    found.remove(0).1
}

/// `zot args` in the checkout with a scratch home, `input` on stdin.
fn zot(t: &TempDir, args: &[&str], input: &str) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .current_dir(ROOT)
        .env("ZOT_HOME", t.path().join("home"))
        .env("NO_COLOR", "1")
        .env_remove("XDG_STATE_HOME")
        .env_remove("ZOT_TRACE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn zot");
    let mut stdin = child.stdin.take().expect("stdin");
    let input = input.to_string();
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let out = child.wait_with_output().expect("zot output");
    let _ = feeder.join();
    out
}

/// The words of a `$ zot ...` line, after `zot`.
fn argv(line: &str) -> Vec<String> {
    let cmd = line.strip_prefix("$ zot ").unwrap_or_else(|| panic!("not a zot command: {line}"));
    cmd.split_whitespace().map(str::to_string).collect()
}

/// `want` as JSON equals `got`, where the string `"..."` in `want` stands
/// for any value, a string ending in `...` for any rest of a string, and an
/// array ending in `"..."` for any further elements.
fn json_matches(want: &Value, got: &Value) -> bool {
    match (want, got) {
        (Value::String(w), _) if w == "..." => true,
        (Value::Array(w), Value::Array(g)) if w.last().is_some_and(|l| l == "...") => {
            g.len() >= w.len() - 1 && w[..w.len() - 1].iter().zip(g).all(|(a, b)| json_matches(a, b))
        }
        (Value::String(w), Value::String(g)) if w.ends_with("...") => g.starts_with(w.trim_end_matches("...")),
        (Value::Object(w), Value::Object(g)) => w.len() == g.len() && w.iter().all(|(k, v)| g.get(k).is_some_and(|gv| json_matches(v, gv))),
        (Value::Array(w), Value::Array(g)) => w.len() == g.len() && w.iter().zip(g).all(|(a, b)| json_matches(a, b)),
        _ => want == got,
    }
}

/// Runs a transcript as a person would: each `→` line written after the
/// lines above it were read, and each printed line compared as JSON.
/// Relative `--ext` paths are the checkout's.
fn run_transcript(t: &TempDir, first: &str) -> zot_proc::Zot {
    run_transcript_with(t, first, &[])
}

/// [`run_transcript`], with each `(from, to)` replaced in the command and
/// in the lines written and read (paths of the reader's own).
fn run_transcript_with(t: &TempDir, first: &str, subst: &[(&str, String)]) -> zot_proc::Zot {
    let sub = |l: &str| subst.iter().fold(l.to_string(), |l, (from, to)| l.replace(from, to));
    run_lines(t, &block(first).iter().map(|l| sub(l)).collect::<Vec<_>>())
}

/// A transcript's lines: the `$ zot` command, then `→ ` lines written and
/// the others read, in order.
fn run_lines(t: &TempDir, lines: &[String]) -> zot_proc::Zot {
    let mut args = argv(&lines[0]);
    for i in 1..args.len() {
        if args[i - 1] == "--ext" {
            args[i] = format!("{ROOT}/{}", args[i]);
        }
    }
    let mut z = zot_proc::Zot::spawn(t.path(), &args, &[("NO_COLOR", "1")]);
    for l in &lines[1..] {
        match l.strip_prefix("→ ") {
            Some(input) => z.send(input),
            None => {
                let got = z.next_line(zot_proc::LINE_WAIT).unwrap_or_else(|| panic!("no line for {l}\n{}", z.context()));
                let (w, g): (Value, Value) = (serde_json::from_str(l).expect("README line is JSON"), serde_json::from_str(&got).expect("JSON"));
                assert!(json_matches(&w, &g), "want {l}\n got {got}");
            }
        }
    }
    z
}

#[test]
fn a_piped_session() {
    let t = TempDir::new("readme-piped");
    let line = &block("printf '/weather berlin\\n' | zot")[0];
    let (input, args) = line.split_once(" | zot ").expect("a pipe into zot");
    assert_eq!(input, "printf '/weather berlin\\n'");
    let args: Vec<&str> = args.split_whitespace().collect();
    let out = zot(&t, &args, "/weather berlin\n");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "[weather] → submit: Tell me the weather for berlin\n→ model: Tell me the weather for berlin\n");
}

#[test]
fn zot_serve_by_example() {
    let t = TempDir::new("readme-serve");
    let mut z = run_transcript(&t, "$ zot serve --no-ext --ext examples/rust/weather");
    assert_eq!(z.exit_code(zot_proc::LINE_WAIT), 0);
}

#[test]
fn zot_mcp_by_hand() {
    let t = TempDir::new("readme-mcp");
    let mut z = run_transcript(&t, "$ zot mcp --no-ext");
    z.close_stdin();
    assert_eq!(z.exit_code(zot_proc::LINE_WAIT), 0);
    assert_eq!(
        z.stderr_text(),
        "zot mcp: 2 extensions ready: weather, notes\nzot mcp: initialize from demo (asked 2025-06-18, speaking 2025-06-18)\n"
    );
}

#[test]
fn zot_ext_check_of_the_notes_example() {
    let t = TempDir::new("readme-check");
    let lines = block("$ zot ext check examples/python/notes");
    let end = lines.iter().position(|l| l.is_empty()).unwrap_or(lines.len());
    let want = &lines[1..end];
    let out = zot(&t, &["ext", "check", "examples/python/notes"], "");
    assert_eq!(out.status.code(), Some(0));
    let got = String::from_utf8_lossy(&out.stdout).replace(ROOT, "/src/zot-rs");
    // Times differ from run to run: the lines are compared up to them, and
    // a loaded machine may add a slow_hello warning (and count it).
    let slow = got.lines().any(|l| l.starts_with("warning slow_hello "));
    let got = if slow { got.replace("ok: 0 errors, 1 warning,", "ok: 0 errors, 0 warnings,") } else { got };
    let got: Vec<&str> = got.lines().filter(|l| !l.starts_with("warning slow_hello ")).collect();
    assert_eq!(got.len(), want.len(), "{got:#?}");
    for (w, g) in want.iter().zip(&got) {
        match w.split_once(':').filter(|(k, _)| *k == "times" || *k == "calls") {
            Some((k, _)) => assert!(g.starts_with(&format!("{k}:")), "{g}"),
            None => assert_eq!(g, w),
        }
    }
}

#[test]
fn a_trace_of_zot_serve() {
    let t = TempDir::new("readme-trace");
    let lines = block("$ printf '{\"id\":1,\"type\":\"command\"");
    let input = lines[0].strip_prefix("$ printf '").and_then(|l| l.split_once("\\n'")).map(|(i, _)| format!("{i}\n")).expect("printf");
    let args: Vec<String> = lines[1].split_whitespace().skip(1).map(|w| w.replace("t.jsonl", &t.path().join("t.jsonl").display().to_string())).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = zot(&t, &args, &input);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let trace = std::fs::read_to_string(t.path().join("t.jsonl")).expect("the trace file");
    let frames: Vec<Value> = trace.lines().map(|l| serde_json::from_str(l).expect("JSON")).collect();
    // Each line of the excerpt is in the trace, with its extension,
    // direction and frame type; `t`, ids and paths differ between runs.
    let key = |v: &Value| (v["ext"].clone(), v["dir"].clone(), v["frame"]["type"].clone(), v["frame"]["name"].clone());
    let mut at = 0;
    for l in lines.iter().skip(3) {
        let want: Value = serde_json::from_str(l).expect("README line is JSON");
        let found = frames[at..].iter().position(|f| key(f) == key(&want));
        let i = found.unwrap_or_else(|| panic!("{l} not in the trace after line {at}:\n{trace}"));
        at += i + 1;
    }
}

/// Runs a shell session as a reader would type it, in `cwd`: each `$ `
/// line through `sh` (with this build's `zot` first on `PATH`), its
/// output (stdout and stderr, as a terminal shows them) compared with the
/// lines below it up to the next `$ `, where `cwd` is written `alias`. A
/// line ending in `...` stands for any rest of that line.
fn run_session(t: &TempDir, first: &str, cwd: &Path, alias: &str) {
    let lines = block(first);
    let bin_dir = Path::new(BIN).parent().expect("the binary's folder");
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let real = std::fs::canonicalize(cwd).expect("cwd").display().to_string();
    let mut i = 0;
    while i < lines.len() {
        let cmd = lines[i].strip_prefix("$ ").unwrap_or_else(|| panic!("not a command: {}", lines[i]));
        let end = lines[i + 1..].iter().position(|l| l.starts_with("$ ")).map_or(lines.len(), |n| i + 1 + n);
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!("{{ {cmd}\n}} 2>&1"))
            .current_dir(cwd)
            .env("PATH", &path)
            .env("ZOT_HOME", t.path().join("home"))
            .env("NO_COLOR", "1")
            .env_remove("XDG_STATE_HOME")
            .env_remove("ZOT_TRACE")
            .stdin(Stdio::null())
            .output()
            .expect("sh");
        let got = String::from_utf8_lossy(&out.stdout).replace(&real, alias);
        assert_eq!(out.status.code(), Some(0), "{cmd}\n{got}");
        let got: Vec<&str> = got.lines().collect();
        let want = &lines[i + 1..end];
        assert_eq!(got.len(), want.len(), "{cmd}: want {want:#?}\n got {got:#?}");
        for (w, g) in want.iter().zip(&got) {
            match w.strip_suffix("...") {
                Some(head) => assert!(g.starts_with(head), "{cmd}: want {w}\n got {g}"),
                None => assert_eq!(g, w, "{cmd}"),
            }
        }
        i = end;
    }
}

#[test]
fn a_first_extension_in_python() {
    let t = TempDir::new("readme-first");
    let work = t.path().join("work");
    std::fs::create_dir_all(&work).expect("mkdir");
    run_session(&t, "$ zot ext new hello\n", &work, "/home/me");
}

#[test]
fn a_confined_extension() {
    let t = TempDir::new("readme-confined");
    let work = t.path().join("work");
    std::fs::create_dir_all(&work).expect("mkdir");
    run_session(&t, "$ zot ext new jail --lang shell", &work, "/home/me");
}

#[test]
fn a_first_extension_in_shell() {
    let t = TempDir::new("docs-first");
    let work = t.path().join("work");
    std::fs::create_dir_all(&work).expect("mkdir");
    run_session(&t, "$ zot ext new hello --lang shell", &work, "/home/me");
}

#[test]
fn trusting_a_project() {
    let t = TempDir::new("docs-trust");
    let app = t.path().join("app");
    std::fs::create_dir_all(&app).expect("mkdir");
    run_session(&t, "$ mkdir -p .zot/extensions", &app, "/home/me/app");
}

#[test]
fn the_readmes_zot_serve() {
    let t = TempDir::new("readme-serve-notes");
    let mut z = run_transcript(&t, "$ zot serve --no-ext --ext examples/python/notes");
    z.close_stdin();
    assert_eq!(z.exit_code(zot_proc::LINE_WAIT), 0);
}

#[test]
fn every_request_gets_one_answer() {
    let t = TempDir::new("docs-one-answer");
    let mut z = run_transcript(&t, "$ zot serve --no-ext --ext examples/shell/greet");
    assert_eq!(z.exit_code(zot_proc::LINE_WAIT), 0);
}

/// The Rust SDK example of docs/writing-extensions.md is examples/weather.rs,
/// which the tests build and run (tests/sdk.rs, and the weather example
/// behind most examples of these pages).
#[test]
fn the_rust_sdk_example_is_the_weather_example() {
    let want = block("use serde_json::json;\nuse zot_host::ext::{self, Extension, ToolResult};");
    let source = std::fs::read_to_string(Path::new(ROOT).join("examples/weather.rs")).expect("examples/weather.rs");
    let got: Vec<&str> = source.lines().filter(|l| !l.starts_with("//!")).collect();
    assert_eq!(want.iter().map(String::as_str).collect::<Vec<_>>(), got);
}

/// docs/mcp.md's worked example with the real filesystem server from npm,
/// as CI installs it into target/mcp-node: the file its heredoc writes,
/// the note, and the transcript, with the reader's paths made the test's.
#[test]
fn an_mcp_json_served_by_example() {
    let server = Path::new(ROOT).join("target/mcp-node/node_modules/.bin/mcp-server-filesystem");
    if !server.exists() {
        return common::skip("@modelcontextprotocol/server-filesystem is not installed (npm install --prefix target/mcp-node @modelcontextprotocol/server-filesystem)");
    }
    let t = TempDir::new("docs-mcp-json");
    let setup = block("npm install --prefix ~/mcp @modelcontextprotocol/server-filesystem").join("\n");
    assert!(setup.contains("echo \"buy milk\" > /tmp/notes/todo.txt"), "{setup}");
    let notes = t.path().join("notes");
    std::fs::create_dir_all(&notes).expect("mkdir");
    std::fs::write(notes.join("todo.txt"), "buy milk\n").expect("the note");
    let json = setup.split("<<JSON\n").nth(1).and_then(|j| j.split("\nJSON").next()).expect("a heredoc");
    let json = json.replace("$HOME/mcp/node_modules/.bin/mcp-server-filesystem", &server.display().to_string()).replace("/tmp/notes", &notes.display().to_string());
    let config = t.path().join("mcp.json");
    std::fs::write(&config, json).expect("mcp.json");
    let subst = [("/tmp/mcp.json", config.display().to_string()), ("/tmp/notes", notes.display().to_string())];
    let mut z = run_transcript_with(&t, "$ zot serve --no-ext --mcp-config /tmp/mcp.json", &subst);
    assert_eq!(z.exit_code(zot_proc::LINE_WAIT), 0);
}

/// The example of `zot help serve` is what `zot serve` answers.
#[test]
fn the_example_of_zot_help_serve_is_what_serve_answers() {
    let t = TempDir::new("help-serve");
    let out = zot(&t, &["help", "serve"], "");
    let help = String::from_utf8_lossy(&out.stdout);
    let example = help.split("\n  $ zot serve").nth(1).expect("an example in zot help serve");
    let example = format!("$ zot serve{}", example.split("\n\n").next().unwrap_or(""));
    let lines: Vec<String> = example.lines().map(|l| l.trim_start().replacen("> ", "→ ", 1)).collect();
    assert!(lines.iter().any(|l| l.starts_with("→ ")), "{example}");
    let mut z = run_lines(&t, &lines);
    z.close_stdin();
    assert_eq!(z.exit_code(zot_proc::LINE_WAIT), 0);
}

/// The Python SDK client of docs/mcp.md, run as written (with this build
/// as `zot`), prints what the page says it prints.
#[test]
fn a_python_sdk_client_of_zot_mcp() {
    let python = std::env::var_os("ZOT_MCP_PYTHON").map(std::path::PathBuf::from).unwrap_or_else(|| Path::new(ROOT).join("target/mcp-venv/bin/python"));
    let has_sdk = Command::new(&python).args(["-c", "import mcp"]).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
    if !has_sdk {
        common::skip("the Python SDK client of docs/mcp.md: no MCP SDK (python3 -m venv target/mcp-venv && target/mcp-venv/bin/pip install mcp)");
        return;
    }
    let t = TempDir::new("readme-sdk");
    let script = block("import asyncio").join("\n").replace("\"target/debug/zot\"", &format!("{BIN:?}"));
    let file = t.path().join("client.py");
    std::fs::write(&file, script).expect("client.py");
    // The SDK starts the server with HOME and PATH of its own environment:
    // zot's home goes under this HOME.
    let out = Command::new(&python).arg(&file).current_dir(ROOT).env("HOME", t.path()).stdin(Stdio::null()).output().expect("python");
    let printed = String::from_utf8_lossy(&out.stdout);
    let want = block("['weather']").join("\n") + "\n";
    assert_eq!(printed, want, "{}", String::from_utf8_lossy(&out.stderr));
}

/// The resource read of docs/mcp.md, with server-everything from
/// target/mcp-node: listed, read as text and as a blob, and unknown.
#[test]
fn a_resource_read_by_example() {
    let server = Path::new(ROOT).join("target/mcp-node/node_modules/.bin/mcp-server-everything");
    if !server.exists() {
        return common::skip("@modelcontextprotocol/server-everything is not installed (npm install --prefix target/mcp-node @modelcontextprotocol/server-everything)");
    }
    let t = TempDir::new("docs-resources");
    let setup = block("npm install --prefix ~/mcp @modelcontextprotocol/server-everything").join("\n");
    let json = setup.split("<<JSON\n").nth(1).and_then(|j| j.split("\nJSON").next()).expect("a heredoc");
    let json = json.replace("$HOME/mcp/node_modules/.bin/mcp-server-everything", &server.display().to_string());
    let config = t.path().join("everything.json");
    std::fs::write(&config, json).expect("everything.json");
    let mut z = run_transcript_with(&t, "$ zot serve --no-ext --mcp-config /tmp/everything.json", &[("/tmp/everything.json", config.display().to_string())]);
    assert_eq!(z.exit_code(zot_proc::LINE_WAIT), 0);
}
