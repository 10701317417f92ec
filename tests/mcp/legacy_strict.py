#!/usr/bin/env python3
"""A raw legacy MCP server that exits at once when its first frame is
anything but `initialize` (as servers on rmcp do). Each start appends a
line to $ERA_STARTS when set; every method it reads goes to stderr."""
import json
import os
import sys

if os.environ.get("ERA_STARTS"):
    with open(os.environ["ERA_STARTS"], "a") as f:
        f.write(f"{os.getpid()}\n")
first = True
for line in sys.stdin:
    if not line.strip():
        continue
    msg = json.loads(line)
    method, rid = msg.get("method"), msg.get("id")
    sys.stderr.write(f"strict: got {method}\n")
    sys.stderr.flush()
    if first and method != "initialize":
        sys.stderr.write("strict: first frame was not initialize; exiting\n")
        sys.exit(1)
    first = False
    out = None
    if method == "initialize":
        out = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "strict", "version": "1"}}
    elif method == "tools/list":
        out = {"tools": [{"name": "ping_me", "description": "answers", "inputSchema": {"type": "object"}}]}
    elif method == "tools/call":
        out = {"content": [{"type": "text", "text": "pong"}]}
    if rid is not None:
        reply = {"jsonrpc": "2.0", "id": rid}
        reply.update({"result": out} if out is not None else {"error": {"code": -32601, "message": "nope"}})
        print(json.dumps(reply), flush=True)
