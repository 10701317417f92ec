#!/usr/bin/env python3
"""notes: /note TEXT keeps a note in memory, the read_notes tool returns them."""
import json
import sys

notes = []


def emit(frame):
    sys.stdout.write(json.dumps(frame) + "\n")
    sys.stdout.flush()


def log(msg):
    sys.stderr.write(f"[notes] {msg}\n")


emit({"type": "hello", "name": "notes", "version": "1.0.0", "capabilities": ["commands", "tools"]})
for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        log(f"skipping a bad line: {line!r}")
        continue
    kind = msg.get("type")
    if kind == "hello_ack":
        # Modern order: register only once the host has answered.
        emit({"type": "register_command", "name": "note", "description": "append a note"})
        emit({"type": "register_tool", "name": "read_notes", "description": "Read the user's notes.",
              "schema": {"type": "object", "properties": {}}})
        emit({"type": "ready"})
    elif kind == "command_invoked" and msg.get("name") == "note":
        text = msg.get("args", "")
        if text:
            notes.append(text)
            emit({"type": "notify", "level": "success", "message": f"{len(notes)} note(s) kept"})
            emit({"type": "command_response", "id": msg["id"], "action": "display", "display": f"noted: {text}"})
        else:
            emit({"type": "command_response", "id": msg["id"], "error": "usage: /note TEXT"})
    elif kind == "command_invoked":
        emit({"type": "command_response", "id": msg["id"], "error": f"unknown command {msg.get('name')}"})
    elif kind == "tool_call":
        if msg.get("name") == "read_notes":
            text = "\n".join(notes) or "(no notes yet)"
            emit({"type": "tool_result", "id": msg["id"], "content": [{"type": "text", "text": text}]})
        else:
            emit({"type": "tool_result", "id": msg["id"], "is_error": True,
                  "content": [{"type": "text", "text": f"unknown tool {msg.get('name')}"}]})
    elif kind == "event_intercept":
        emit({"type": "event_intercept_response", "id": msg["id"]})
    elif kind == "shutdown":
        emit({"type": "shutdown_ack"})
        break
