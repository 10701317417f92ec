#!/usr/bin/env python3
"""A raw MCP server of 2026-07-28 alone: refuses initialize; answers
server/discover (the first one with -32022 naming 2026-07-28 when
--retry), lists tools, ends every subscriptions/listen at once; its tools
show the input_required rounds and an unknown resultType. Every request
it reads goes to stderr as JSON."""
import json, os, sys
args = sys.argv[1:]
if os.environ.get("ERA_STARTS"):
    with open(os.environ["ERA_STARTS"], "a") as f:
        f.write(f"{os.getpid()}\n")
discovers = 0
nostate = 0
def send(o):
    print(json.dumps(o), flush=True)
for line in sys.stdin:
    if not line.strip():
        continue
    msg = json.loads(line)
    method, rid, p = msg.get("method"), msg.get("id"), msg.get("params") or {}
    sys.stderr.write("got " + json.dumps(msg) + "\n"); sys.stderr.flush()
    if rid is None:
        continue
    def ok(r): send({"jsonrpc": "2.0", "id": rid, "result": r})
    def err(c, m, d=None):
        e = {"code": c, "message": m}
        if d is not None: e["data"] = d
        send({"jsonrpc": "2.0", "id": rid, "error": e})
    if method == "initialize":
        err(-32022, "initialize is not supported", {"supported": ["2026-07-28"], "requested": p.get("protocolVersion")})
    elif method == "server/discover":
        discovers += 1
        if "--retry" in args and discovers == 1:
            err(-32022, "try again", {"supported": ["2026-07-28"], "requested": "2026-07-28"})
        else:
            ok({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {"listChanged": True}}, "resultType": "complete",
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "raw-modern", "version": "9"}}})
    elif method == "tools/list":
        ok({"tools": [{"name": n, "inputSchema": {"type": "object"}} for n in ("rounds", "forever", "odd", "nostate")], "resultType": "complete"})
    elif method == "subscriptions/listen":
        send({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": rid}, "notifications": p.get("notifications")}})
        ok({"resultType": "complete", "_meta": {"io.modelcontextprotocol/subscriptionId": rid}})
    elif method == "tools/call":
        name, st = p.get("name"), p.get("requestState")
        if name == "odd":
            ok({"resultType": "weird", "content": []})
        elif name == "forever":
            ok({"resultType": "input_required", "inputRequests": {"r": {"method": "roots/list", "params": {}}}, "requestState": "again"})
        elif name == "rounds" and st is None:
            ok({"resultType": "input_required", "inputRequests": {"r1": {"method": "roots/list", "params": {}}}, "requestState": "s1"})
        elif name == "nostate" and nostate < 2:
            # Round 1 asks for roots with a state; round 2 asks nothing and
            # keeps no state; the third request is answered with what it carried.
            nostate += 1
            if nostate == 1:
                ok({"resultType": "input_required", "inputRequests": {"r1": {"method": "roots/list", "params": {}}}, "requestState": "s1"})
            else:
                ok({"resultType": "input_required"})
        else:
            ok({"resultType": "complete", "content": [{"type": "text", "text": json.dumps({"requestState": st, "inputResponses": p.get("inputResponses")})}]})
    else:
        err(-32601, "nope")
