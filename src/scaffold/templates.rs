//! The source templates of `zot ext new`, one per language (and the
//! Cargo and Go module files); `@NAME@` and `@TOOL@` are filled in by
//! the scaffold.

pub(super) const PYTHON: &str = r#"#!/usr/bin/env python3
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

pub(super) const NODE: &str = r#"// @NAME@: a zot extension (plain JavaScript, Node's standard library only).
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

pub(super) const TYPESCRIPT: &str = r#"// @NAME@: a zot extension in TypeScript, run with tsx (no dependencies).
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

pub(super) const SHELL: &str = r#"#!/bin/sh
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

pub(super) const CARGO_TOML: &str = r#"[package]
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

pub(super) const RUST: &str = r#"//! @NAME@: a zot extension in Rust, speaking the protocol with serde_json
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

pub(super) const GO_MOD: &str = "module zot-extension\n\ngo 1.21\n";

pub(super) const GO: &str = r#"// @NAME@: a zot extension in Go, speaking the protocol with the standard
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
