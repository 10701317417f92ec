//! The README's command examples, run as the README shows them (from the
//! checkout, with the bundled examples) and compared with what it says
//! they print. Timings, absolute paths and ids that differ from run to run
//! are the only things not compared. The README marks the examples that
//! cannot run here (a demo on a terminal, folders of the reader's own).

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

/// The fenced block of the README that starts with `first` (its first
/// line), without the fences.
fn block(first: &str) -> Vec<String> {
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).expect("README.md");
    let start = readme.find(&format!("```\n{first}")).or_else(|| readme.find(&format!("```sh\n{first}")));
    let start = start.unwrap_or_else(|| panic!("no README block starting {first:?}"));
    let body = &readme[start..];
    let body = &body[body.find('\n').map_or(0, |i| i + 1)..];
    body[..body.find("```").unwrap_or(body.len())].lines().map(str::to_string).collect()
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

/// `want` as JSON equals `got`, where a string `...` in `want` (or a
/// string ending in ` ...`) stands for any rest.
fn json_matches(want: &Value, got: &Value) -> bool {
    match (want, got) {
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
    let lines = block(first);
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
    let mut z = run_transcript(&t, "$ zot serve ");
    assert_eq!(z.exit_code(zot_proc::LINE_WAIT), 0);
}

#[test]
fn zot_mcp_by_hand() {
    let t = TempDir::new("readme-mcp");
    let mut z = run_transcript(&t, "$ zot mcp ");
    z.close_stdin();
    assert_eq!(z.exit_code(zot_proc::LINE_WAIT), 0);
    assert_eq!(
        z.stderr_text(),
        "zot mcp: 2 extension(s) ready: weather, notes\nzot mcp: initialize from demo (asked 2025-06-18, speaking 2025-06-18)\n"
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
