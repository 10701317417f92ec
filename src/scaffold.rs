//! `zot ext new <name> [--lang L] [--dir PATH]`: writes a working extension
//! folder `<dir>/<name>/` (manifest, source, a three-line README) in one of
//! six languages. Every template speaks the modern handshake (send `hello`,
//! wait for `hello_ack`, then register, then `ready`), registers one command
//! (`/<name>`, which displays its arguments) and one tool
//! (`<name>_echo`, which echoes its optional `text` argument), answers
//! `shutdown` with `shutdown_ack`, and logs to stderr only.
//!
//! The folder is written under a temporary sibling name and renamed into
//! place, so a failure leaves nothing behind; an existing folder is never
//! overwritten.
//!
//! Decisions:
//! - The tool's name is `<name>_echo` with `.` and `-` turned into `_`
//!   (model APIs accept `[A-Za-z0-9_-]` tool names at most).
//! - Rust: a standalone Cargo project (an empty `[workspace]`, so it builds
//!   even inside another workspace) that speaks the protocol with
//!   `serde_json` alone, like the Go one with its standard library: it
//!   builds anywhere the registry is reachable, with no SDK crate to find
//!   or keep in step; the package and binary name is `<name>` with `.`
//!   turned into `_`.
//! - Go: standard library only, `go build -o <name>`.

use crate::home::validate_name;
use crate::manage::sanitize;
use serde_json::json;
use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The languages `zot ext new` writes.
pub const LANGS: [&str; 6] = ["python", "node", "typescript", "shell", "rust", "go"];

/// What `zot ext new` was asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewOptions {
    pub name: String,
    /// One of [`LANGS`].
    pub lang: String,
    /// Where to create the folder; `None`: the current directory.
    pub dir: Option<PathBuf>,
}

/// `zot ext new --help`.
pub const HELP: &str = "Usage: zot ext new <name> [--lang LANG] [--dir PATH]

Writes a working extension into <PATH>/<name>/ (default: ./<name>/): the
manifest extension.json, the source and a short README.md. It registers the
command /<name> and the tool <name>_echo (. and - made _), follows the
handshake (hello, wait for hello_ack, register, ready) and answers shutdown. An existing folder is
never overwritten; <name> must be [A-Za-z0-9._-], at most 64 bytes.

Options:
  --lang LANG   python (default; stdlib only), node (plain JS), typescript
                (run with tsx), shell (POSIX sh and sed), rust (a Cargo
                project using serde_json only), go (standard library only)
  --dir PATH    the existing directory to create <name>/ in

Then: zot ext check <PATH>/<name>   and   zot --ext <PATH>/<name>
";

/// One file of a scaffold.
struct File {
    path: &'static str,
    text: String,
    executable: bool,
}

/// Runs `zot ext new`; returns the exit code.
pub fn run(opts: &NewOptions) -> i32 {
    match create(opts) {
        Ok(report) => {
            print!("{report}");
            0
        }
        Err(e) => {
            eprintln!("zot: {}", sanitize(&e));
            1
        }
    }
}

/// Writes the extension; returns what to print (the files and how to run it).
pub fn create(opts: &NewOptions) -> Result<String, String> {
    let name = opts.name.as_str();
    validate_name(name).map_err(|e| format!("invalid extension name {name:?}: {e}"))?;
    // Every command printed afterwards would read it as an option.
    if name.starts_with('-') {
        return Err(format!("invalid extension name {name:?}: must not start with '-'"));
    }
    if !LANGS.contains(&opts.lang.as_str()) {
        return Err(format!("unknown language {:?} (one of: {})", opts.lang, LANGS.join(", ")));
    }
    let parent = match &opts.dir {
        Some(d) => d.clone(),
        None => std::env::current_dir()
            .map_err(|e| format!("cannot determine the current directory: {e}"))?,
    };
    match fs::metadata(&parent) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(format!("{}: not a directory", parent.display())),
        Err(e) => return Err(format!("{}: {}", parent.display(), io_msg(&e))),
    }
    let dest = parent.join(name);
    if fs::symlink_metadata(&dest).is_ok() {
        return Err(format!("{} already exists; not overwriting it", dest.display()));
    }
    let files = files(name, &opts.lang);
    let tmp = parent.join(format!(".{name}.zot-new-{}", std::process::id()));
    let written = write_all(&tmp, &files).and_then(|()| {
        if fs::symlink_metadata(&dest).is_ok() {
            return Err(io::Error::new(io::ErrorKind::AlreadyExists, "appeared meanwhile"));
        }
        fs::rename(&tmp, &dest)
    });
    if let Err(e) = written {
        let _ = fs::remove_dir_all(&tmp);
        return Err(format!("cannot write {}: {}", dest.display(), io_msg(&e)));
    }
    Ok(report(name, &opts.lang, &dest, opts.dir.is_some(), &files))
}

fn io_msg(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::NotFound => "no such directory".into(),
        _ => e.to_string(),
    }
}

fn write_all(dir: &Path, files: &[File]) -> io::Result<()> {
    fs::create_dir(dir)?;
    for f in files {
        let p = dir.join(f.path);
        if let Some(parent) = p.parent() {
            fs::create_dir_all(parent)?;
        }
        fs::write(&p, &f.text)?;
        if f.executable {
            fs::set_permissions(&p, fs::Permissions::from_mode(0o755))?;
        }
    }
    Ok(())
}

fn report(name: &str, lang: &str, dest: &Path, explicit_dir: bool, files: &[File]) -> String {
    // Shown relative to the current directory when created there.
    let shown = if explicit_dir { dest.display().to_string() } else { name.to_string() };
    let mut s = format!("created {shown}/ ({lang}):\n");
    for f in files {
        s.push_str(&format!("  {shown}/{}\n", f.path));
    }
    match lang {
        "rust" => s.push_str(&format!(
            "build it:  (cd {shown} && cargo build --release)\n"
        )),
        "go" => s.push_str(&format!("build it:  (cd {shown} && go build -o {name})\n")),
        "typescript" => s.push_str("needs:     tsx on PATH (npm install -g tsx)\n"),
        _ => {}
    }
    s.push_str(&format!("check it:  zot ext check {shown}\n"));
    s.push_str(&format!("run it:    zot --ext {shown}\n"));
    s.push_str(&format!("           then /{name} hi, or /tool {} {{\"text\":\"hi\"}}\n", tool_name(name)));
    s
}

/// The tool every scaffold registers.
pub fn tool_name(name: &str) -> String {
    format!("{}_echo", name.replace(['.', '-'], "_"))
}

/// The Rust package and binary name: `name` with `.` turned into `_`, and
/// prefixed `ext_` where Cargo would refuse it (a leading digit or `-`, a
/// reserved name).
fn bin_name(name: &str) -> String {
    const RESERVED: [&str; 12] =
        ["test", "deps", "examples", "build", "incremental", "core", "std", "alloc", "proc_macro", "self", "super", "crate"];
    let n = name.replace('.', "_");
    let ok_start = n.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
    if ok_start && !RESERVED.contains(&n.as_str()) {
        n
    } else {
        format!("ext_{n}")
    }
}

fn manifest(name: &str, lang: &str, exec: &str, args: &[&str]) -> String {
    let m = json!({
        "name": name,
        "version": "0.1.0",
        "exec": exec,
        "args": args,
        "language": lang,
        "description": format!("/{name} and the {} tool", tool_name(name)),
        "enabled": true,
    });
    // Serializing a Value cannot fail.
    let mut s = serde_json::to_string_pretty(&m).unwrap_or_default();
    s.push('\n');
    s
}

fn readme(name: &str, lang: &str, build: Option<&str>) -> String {
    let tool = tool_name(name);
    let first = format!("# {name}\n");
    let second = match build {
        Some(b) => format!("A zot extension in {lang} with the command `/{name}` and the tool `{tool}`. {b}\n"),
        None => format!("A zot extension in {lang} with the command `/{name}` and the tool `{tool}`.\n"),
    };
    let third = "Run it with `zot --ext .`, check it with `zot ext check .`, install it with `zot ext install .`.\n";
    format!("{first}{second}{third}")
}

/// Replaces `@NAME@`, `@TOOL@`, `@BIN@` and `@VERSION@` in a template.
fn fill(template: &str, name: &str) -> String {
    template
        .replace("@NAME@", name)
        .replace("@TOOL@", &tool_name(name))
        .replace("@BIN@", &bin_name(name))
        .replace("@VERSION@", env!("CARGO_PKG_VERSION"))
}

fn files(name: &str, lang: &str) -> Vec<File> {
    let f = |path, template: &str, executable| File { path, text: fill(template, name), executable };
    let plain = |path, text: String| File { path, text, executable: false };
    match lang {
        "python" => vec![
            plain("extension.json", manifest(name, "python", "./main.py", &[])),
            f("main.py", PYTHON, true),
            plain("README.md", readme(name, "Python (stdlib only)", None)),
        ],
        "node" => vec![
            plain("extension.json", manifest(name, "node", "node", &["index.js"])),
            f("index.js", NODE, false),
            plain("README.md", readme(name, "JavaScript (Node, no dependencies)", None)),
        ],
        "typescript" => vec![
            plain("extension.json", manifest(name, "typescript", "tsx", &["index.ts"])),
            f("index.ts", TYPESCRIPT, false),
            plain("README.md", readme(name, "TypeScript", Some("It runs with `tsx` (`npm install -g tsx`)."))),
        ],
        "shell" => vec![
            plain("extension.json", manifest(name, "shell", "./main.sh", &[])),
            f("main.sh", SHELL, true),
            plain("README.md", readme(name, "POSIX sh (sed only, no jq)", None)),
        ],
        "rust" => {
            let exec = format!("./target/release/{}", bin_name(name));
            let build = "Build it with `cargo build --release` (it needs serde_json only).";
            vec![
                plain("extension.json", manifest(name, "rust", &exec, &[])),
                f("Cargo.toml", CARGO_TOML, false),
                f("src/main.rs", RUST, false),
                plain("README.md", readme(name, "Rust (serde_json only)", Some(build))),
                plain(".gitignore", "/target\n".into()),
            ]
        }
        _ => {
            let build = format!("Build it with `go build -o {name}` (standard library only).");
            vec![
                plain("extension.json", manifest(name, "go", &format!("./{name}"), &[])),
                f("go.mod", GO_MOD, false),
                f("main.go", GO, false),
                plain("README.md", readme(name, "Go", Some(&build))),
                plain(".gitignore", format!("/{name}\n")),
            ]
        }
    }
}

const PYTHON: &str = r#"#!/usr/bin/env python3
"""@NAME@: a zot extension (Python, standard library only).

Stdout carries protocol frames only, one JSON object per line; log to
stderr (`zot ext logs @NAME@`).
"""
import json
import sys

NAME = "@NAME@"
VERSION = "0.1.0"


def send(frame):
    sys.stdout.write(json.dumps(frame) + "\n")
    sys.stdout.flush()


def log(msg):
    sys.stderr.write(f"[{NAME}] {msg}\n")
    sys.stderr.flush()


def on_command(args):
    """`/@NAME@ ARGS`: return the command_response fields."""
    return {"action": "display", "display": f"hello from {NAME}" + (f": {args}" if args else "")}


def on_tool(args):
    """The @TOOL@ tool: return the tool_result fields."""
    text = args.get("text", "") if isinstance(args, dict) else ""
    if not isinstance(text, str):
        return {"content": [{"type": "text", "text": "`text` must be a string"}], "is_error": True}
    return {"content": [{"type": "text", "text": text or "(nothing to echo)"}]}


send({"type": "hello", "name": NAME, "version": VERSION, "capabilities": ["commands", "tools"]})
for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        log(f"skipping a line that is not JSON: {line!r}")
        continue
    kind = msg.get("type")
    if kind == "hello_ack":
        # Register once the host has answered; msg["cwd"] is the user's project.
        send({"type": "register_command", "name": NAME, "description": "say hello"})
        send({"type": "register_tool", "name": "@TOOL@", "description": "Echo the given text.",
              "schema": {"type": "object", "properties": {"text": {"type": "string", "description": "what to echo"}}}})
        send({"type": "ready"})
    elif kind == "command_invoked":
        reply = on_command(msg.get("args", "")) if msg.get("name") == NAME else {"error": f"unknown command {msg.get('name')}"}
        send({"type": "command_response", "id": msg["id"], **reply})
    elif kind == "tool_call":
        if msg.get("name") == "@TOOL@":
            reply = on_tool(msg.get("args", {}))
        else:
            reply = {"content": [{"type": "text", "text": f"unknown tool {msg.get('name')}"}], "is_error": True}
        send({"type": "tool_result", "id": msg["id"], **reply})
    elif kind == "event_intercept":
        send({"type": "event_intercept_response", "id": msg["id"]})
    elif kind == "shutdown":
        send({"type": "shutdown_ack"})
        break
"#;

const NODE: &str = r#"// @NAME@: a zot extension (plain JavaScript, Node's standard library only).
// Stdout carries protocol frames only, one JSON object per line; log to
// stderr (`zot ext logs @NAME@`).
"use strict";
const { createInterface } = require("node:readline");

const NAME = "@NAME@";
const VERSION = "0.1.0";

function send(frame) { process.stdout.write(JSON.stringify(frame) + "\n"); }
function log(msg) { process.stderr.write(`[${NAME}] ${msg}\n`); }

// `/@NAME@ ARGS`: the command_response fields.
function onCommand(args) {
  return { action: "display", display: `hello from ${NAME}` + (args ? `: ${args}` : "") };
}

// The @TOOL@ tool: the tool_result fields.
function onTool(args) {
  const text = args && typeof args === "object" ? args.text ?? "" : "";
  if (typeof text !== "string") {
    return { content: [{ type: "text", text: "`text` must be a string" }], is_error: true };
  }
  return { content: [{ type: "text", text: text || "(nothing to echo)" }] };
}

send({ type: "hello", name: NAME, version: VERSION, capabilities: ["commands", "tools"] });
const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on("line", (line) => {
  let msg;
  try { msg = JSON.parse(line); } catch { return log(`skipping a line that is not JSON: ${line}`); }
  switch (msg.type) {
    case "hello_ack":
      // Register once the host has answered; msg.cwd is the user's project.
      send({ type: "register_command", name: NAME, description: "say hello" });
      send({ type: "register_tool", name: "@TOOL@", description: "Echo the given text.",
             schema: { type: "object", properties: { text: { type: "string", description: "what to echo" } } } });
      send({ type: "ready" });
      break;
    case "command_invoked": {
      const reply = msg.name === NAME ? onCommand(msg.args || "") : { error: `unknown command ${msg.name}` };
      send({ type: "command_response", id: msg.id, ...reply });
      break;
    }
    case "tool_call": {
      const reply = msg.name === "@TOOL@" ? onTool(msg.args || {})
        : { content: [{ type: "text", text: `unknown tool ${msg.name}` }], is_error: true };
      send({ type: "tool_result", id: msg.id, ...reply });
      break;
    }
    case "event_intercept":
      send({ type: "event_intercept_response", id: msg.id });
      break;
    case "shutdown":
      send({ type: "shutdown_ack" });
      rl.close();
      break;
  }
});
rl.on("close", () => process.exit(0));
"#;

const TYPESCRIPT: &str = r#"// @NAME@: a zot extension in TypeScript, run with tsx (no dependencies).
// Stdout carries protocol frames only, one JSON object per line; log to
// stderr (`zot ext logs @NAME@`).
import { createInterface } from "node:readline";

const NAME = "@NAME@";
const VERSION = "0.1.0";

type Frame = { type: string; id?: string; name?: string; args?: unknown; [key: string]: unknown };
type ToolReply = { content: { type: "text"; text: string }[]; is_error?: boolean };

function send(frame: object): void { process.stdout.write(JSON.stringify(frame) + "\n"); }
function log(msg: string): void { process.stderr.write(`[${NAME}] ${msg}\n`); }

// `/@NAME@ ARGS`: the command_response fields.
function onCommand(args: string): object {
  return { action: "display", display: `hello from ${NAME}` + (args ? `: ${args}` : "") };
}

// The @TOOL@ tool: the tool_result fields.
function onTool(args: unknown): ToolReply {
  const text = args && typeof args === "object" ? (args as { text?: unknown }).text ?? "" : "";
  if (typeof text !== "string") {
    return { content: [{ type: "text", text: "`text` must be a string" }], is_error: true };
  }
  return { content: [{ type: "text", text: text || "(nothing to echo)" }] };
}

send({ type: "hello", name: NAME, version: VERSION, capabilities: ["commands", "tools"] });
const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
rl.on("line", (line: string) => {
  let msg: Frame;
  try { msg = JSON.parse(line); } catch { return log(`skipping a line that is not JSON: ${line}`); }
  switch (msg.type) {
    case "hello_ack":
      // Register once the host has answered; msg.cwd is the user's project.
      send({ type: "register_command", name: NAME, description: "say hello" });
      send({ type: "register_tool", name: "@TOOL@", description: "Echo the given text.",
             schema: { type: "object", properties: { text: { type: "string", description: "what to echo" } } } });
      send({ type: "ready" });
      break;
    case "command_invoked": {
      const reply = msg.name === NAME ? onCommand(typeof msg.args === "string" ? msg.args : "")
        : { error: `unknown command ${msg.name}` };
      send({ type: "command_response", id: msg.id, ...reply });
      break;
    }
    case "tool_call": {
      const reply = msg.name === "@TOOL@" ? onTool(msg.args ?? {})
        : { content: [{ type: "text", text: `unknown tool ${msg.name}` }], is_error: true };
      send({ type: "tool_result", id: msg.id, ...reply });
      break;
    }
    case "event_intercept":
      send({ type: "event_intercept_response", id: msg.id });
      break;
    case "shutdown":
      send({ type: "shutdown_ack" });
      rl.close();
      break;
  }
});
rl.on("close", () => process.exit(0));
"#;

const SHELL: &str = r#"#!/bin/sh
# @NAME@: a zot extension in POSIX sh; JSON is read with sed (no jq).
# Stdout carries protocol frames only, one JSON object per line; log to
# stderr (`zot ext logs @NAME@`).

NAME='@NAME@'

send() { printf '%s\n' "$1"; }
log() { printf '[%s] %s\n' "$NAME" "$1" >&2; }

# str KEY: the (still JSON-escaped) string value of the first "KEY":"..." in
# $line. zot writes `type`, `id` and `name` before the arguments, so the
# first match of those is the frame's own.
str() {
    case $line in *\"$1\":\"*) ;; *) return ;; esac
    printf '%s\n' "${line#*\"$1\":\"}" | sed -E 's/^(([^"\\]|\\.)*)".*/\1/'
}

# The values are inserted back into JSON strings still escaped, so they
# stay valid JSON.
send '{"type":"hello","name":"@NAME@","version":"0.1.0","capabilities":["commands","tools"]}'
while IFS= read -r line; do
    type=$(str type)
    id=$(str id)
    case $type in
    hello_ack)
        # Register once the host has answered.
        send '{"type":"register_command","name":"@NAME@","description":"say hello"}'
        send '{"type":"register_tool","name":"@TOOL@","description":"Echo the given text.","schema":{"type":"object","properties":{"text":{"type":"string","description":"what to echo"}}}}'
        send '{"type":"ready"}' ;;
    command_invoked)
        args=$(str args)
        send "{\"type\":\"command_response\",\"id\":\"$id\",\"action\":\"display\",\"display\":\"hello from $NAME${args:+: $args}\"}" ;;
    tool_call)
        if [ "$(str name)" = '@TOOL@' ]; then
            text=$(str text)
            send "{\"type\":\"tool_result\",\"id\":\"$id\",\"content\":[{\"type\":\"text\",\"text\":\"${text:-(nothing to echo)}\"}]}"
        else
            send "{\"type\":\"tool_result\",\"id\":\"$id\",\"is_error\":true,\"content\":[{\"type\":\"text\",\"text\":\"unknown tool\"}]}"
        fi ;;
    event_intercept)
        send "{\"type\":\"event_intercept_response\",\"id\":\"$id\"}" ;;
    shutdown)
        send '{"type":"shutdown_ack"}'
        exit 0 ;;
    '')
        log "skipping a line without a type: $line" ;;
    esac
done
"#;

const CARGO_TOML: &str = r#"[package]
name = "@BIN@"
version = "0.1.0"
edition = "2021"
publish = false

[[bin]]
name = "@BIN@"
path = "src/main.rs"

[dependencies]
serde_json = "1"

# A project of its own, even when created inside another Cargo workspace.
[workspace]
"#;

const RUST: &str = r#"//! @NAME@: a zot extension in Rust, speaking the protocol with serde_json
//! alone (no SDK crate to find). Stdout carries protocol frames only, one
//! JSON object per line; log to stderr (`zot ext logs @NAME@`).
use serde_json::{json, Value};
use std::io::{self, BufRead, Write};

const NAME: &str = "@NAME@";
const VERSION: &str = "0.1.0";
const TOOL: &str = "@TOOL@";

fn send(out: &mut impl Write, frame: Value) {
    if writeln!(out, "{frame}").and_then(|()| out.flush()).is_err() {
        eprintln!("[{NAME}] cannot write to stdout");
        std::process::exit(1);
    }
}

/// `/@NAME@ ARGS`: the command_response fields.
fn on_command(args: &str) -> Value {
    let text = if args.is_empty() { format!("hello from {NAME}") } else { format!("hello from {NAME}: {args}") };
    json!({"action": "display", "display": text})
}

/// The @TOOL@ tool: the tool_result fields.
fn on_tool(args: &Value) -> Value {
    let text = |t: &str| json!([{"type": "text", "text": t}]);
    match args.get("text") {
        None => json!({"content": text("(nothing to echo)")}),
        Some(Value::String(s)) if s.is_empty() => json!({"content": text("(nothing to echo)")}),
        Some(Value::String(s)) => json!({"content": text(s)}),
        Some(_) => json!({"content": text("`text` must be a string"), "is_error": true}),
    }
}

/// `fields` with the frame's `type` and `id` added.
fn reply(kind: &str, id: &Value, mut fields: Value) -> Value {
    if let Some(m) = fields.as_object_mut() {
        m.insert("type".into(), json!(kind));
        m.insert("id".into(), id.clone());
    }
    fields
}

fn main() {
    let mut out = io::stdout().lock();
    send(&mut out, json!({"type": "hello", "name": NAME, "version": VERSION, "capabilities": ["commands", "tools"]}));
    for line in io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let msg: Value = match serde_json::from_str(&line) {
            Ok(v) => v,
            Err(e) => {
                eprintln!("[{NAME}] skipping a line that is not a frame: {e}");
                continue;
            }
        };
        let id = msg.get("id").cloned().unwrap_or(Value::Null);
        let name = msg.get("name").and_then(Value::as_str).unwrap_or("");
        match msg.get("type").and_then(Value::as_str).unwrap_or("") {
            // Register once the host has answered.
            "hello_ack" => {
                send(&mut out, json!({"type": "register_command", "name": NAME, "description": "say hello"}));
                send(&mut out, json!({"type": "register_tool", "name": TOOL, "description": "Echo the given text.",
                    "schema": {"type": "object", "properties": {"text": {"type": "string", "description": "what to echo"}}}}));
                send(&mut out, json!({"type": "ready"}));
            }
            "command_invoked" if name == NAME => {
                let args = msg.get("args").and_then(Value::as_str).unwrap_or("");
                send(&mut out, reply("command_response", &id, on_command(args)));
            }
            "command_invoked" => {
                send(&mut out, reply("command_response", &id, json!({"error": format!("unknown command {name}")})));
            }
            "tool_call" if name == TOOL => {
                let args = msg.get("args").cloned().unwrap_or_else(|| json!({}));
                send(&mut out, reply("tool_result", &id, on_tool(&args)));
            }
            "tool_call" => {
                let content = json!([{"type": "text", "text": format!("unknown tool {name}")}]);
                send(&mut out, reply("tool_result", &id, json!({"content": content, "is_error": true})));
            }
            "event_intercept" => send(&mut out, reply("event_intercept_response", &id, json!({}))),
            "shutdown" => {
                send(&mut out, json!({"type": "shutdown_ack"}));
                return;
            }
            _ => {}
        }
    }
}
"#;

const GO_MOD: &str = "module zot-extension\n\ngo 1.21\n";

const GO: &str = r#"// @NAME@: a zot extension in Go, speaking the protocol with the standard
// library only. Stdout carries protocol frames only, one JSON object per
// line; log to stderr (`zot ext logs @NAME@`).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
)

const (
	name    = "@NAME@"
	version = "0.1.0"
	tool    = "@TOOL@"
)

// frame is what the host sends; only the fields used here.
type frame struct {
	Type string          `json:"type"`
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type block struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

var out = json.NewEncoder(os.Stdout) // one value and a newline per Encode

func send(v any) {
	if err := out.Encode(v); err != nil {
		logf("cannot write to stdout: %v", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "["+name+"] "+format+"\n", args...)
}

// onCommand handles `/@NAME@ ARGS`: the command_response fields.
func onCommand(args string) map[string]any {
	text := "hello from " + name
	if args != "" {
		text += ": " + args
	}
	return map[string]any{"action": "display", "display": text}
}

// onTool handles the @TOOL@ tool: the tool_result fields.
func onTool(raw json.RawMessage) map[string]any {
	var args struct {
		Text *string `json:"text"`
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &args); err != nil {
			return map[string]any{"content": []block{{"text", "invalid arguments: " + err.Error()}}, "is_error": true}
		}
	}
	text := "(nothing to echo)"
	if args.Text != nil && *args.Text != "" {
		text = *args.Text
	}
	return map[string]any{"content": []block{{"text", text}}}
}

func reply(typ, id string, fields map[string]any) {
	fields["type"] = typ
	fields["id"] = id
	send(fields)
}

func main() {
	send(map[string]any{"type": "hello", "name": name, "version": version, "capabilities": []string{"commands", "tools"}})
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for in.Scan() {
		var msg frame
		if err := json.Unmarshal(in.Bytes(), &msg); err != nil {
			logf("skipping a line that is not a frame: %v", err)
			continue
		}
		switch msg.Type {
		case "hello_ack":
			// Register once the host has answered.
			send(map[string]any{"type": "register_command", "name": name, "description": "say hello"})
			send(map[string]any{"type": "register_tool", "name": tool, "description": "Echo the given text.",
				"schema": map[string]any{"type": "object", "properties": map[string]any{
					"text": map[string]any{"type": "string", "description": "what to echo"}}}})
			send(map[string]any{"type": "ready"})
		case "command_invoked":
			var args string
			_ = json.Unmarshal(msg.Args, &args)
			if msg.Name == name {
				reply("command_response", msg.ID, onCommand(args))
			} else {
				reply("command_response", msg.ID, map[string]any{"error": "unknown command " + msg.Name})
			}
		case "tool_call":
			if msg.Name == tool {
				reply("tool_result", msg.ID, onTool(msg.Args))
			} else {
				reply("tool_result", msg.ID, map[string]any{"content": []block{{"text", "unknown tool " + msg.Name}}, "is_error": true})
			}
		case "event_intercept":
			reply("event_intercept_response", msg.ID, map[string]any{})
		case "shutdown":
			send(map[string]any{"type": "shutdown_ack"})
			return
		}
	}
}
"#;
