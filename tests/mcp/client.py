#!/usr/bin/env python3
"""Drives `zot mcp` with the official MCP Python SDK (`mcp` on PyPI).

    client.py SCENARIO -- COMMAND [ARGS...]

runs COMMAND as an MCP server over stdio (stdio_client + ClientSession),
plays SCENARIO (`tour` or `cancel`) and prints one JSON object on stdout:

    {"scenario", "sdk_version", "init": {...}, "steps": [{"step", ...}],
     "wire": [{"dir": "in"|"out", "msg": {...}}, ...]}

`wire` is every JSON-RPC message as it crossed the transport, in order
(a tap between the transport and the session). Every wait has a deadline;
a failed step is recorded (`error`), not raised, so the Rust test sees the
whole transcript. Exit code 0 when the script ran to its end, 3 when the
`mcp` package cannot be imported.
"""
import json
import os
import sys
import traceback
import warnings

# The SDK marks logging as deprecated for its 2026 era; this server speaks
# the handshake era, where it is current.
warnings.filterwarnings("ignore", category=DeprecationWarning)
warnings.filterwarnings("ignore", message=".*deprecated.*")
try:
    import anyio
    import mcp
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.shared.exceptions import MCPError
    from importlib.metadata import version as _pkg_version
except Exception as e:  # noqa: BLE001 - any import failure means "no SDK"
    print(f"cannot import the mcp package: {e!r}", file=sys.stderr)
    sys.exit(3)

STEP_TIMEOUT = 20.0


def dump(obj):
    """A pydantic model (or anything) as plain JSON data, wire spelling."""
    if hasattr(obj, "model_dump"):
        return obj.model_dump(by_alias=True, mode="json", exclude_none=True)
    return obj


class Transcript:
    def __init__(self, scenario):
        self.data = {"scenario": scenario, "sdk_version": _pkg_version("mcp"), "steps": [], "wire": []}
        self.logs = []  # LoggingMessageNotificationParams as dicts, in arrival order
        self.log_event = anyio.Event()
        self.list_changed = anyio.Event()

    def wire(self, direction, message):
        try:
            msg = message.message.model_dump(by_alias=True, mode="json", exclude_none=True)
        except Exception:  # noqa: BLE001 - an Exception item from the transport
            msg = {"unparsed": repr(message)}
        self.data["wire"].append({"dir": direction, "msg": msg})
        if direction == "in" and msg.get("method") == "notifications/tools/list_changed":
            self.list_changed.set()

    async def step(self, name, coro):
        rec = {"step": name}
        try:
            with anyio.fail_after(STEP_TIMEOUT):
                rec["result"] = dump(await coro)
        except MCPError as e:
            rec["error"] = {"code": e.code, "message": e.message}
        except Exception as e:  # noqa: BLE001 - recorded for the test to see
            rec["exception"] = f"{type(e).__name__}: {e}"
        self.data["steps"].append(rec)
        return rec


async def tap(source, sink, record, direction):
    """Copies messages from `source` to `sink`, recording each."""
    async with sink:
        async for m in source:
            record(direction, m)
            await sink.send(m)


async def wait_log(t, pred, what):
    """Waits (with a deadline) for a log notification matching `pred`."""
    with anyio.fail_after(STEP_TIMEOUT):
        while True:
            for entry in t.logs:
                if pred(entry):
                    return entry
            t.log_event = anyio.Event()
            await t.log_event.wait()


async def tour(s, t):
    await t.step("list_tools", s.list_tools())
    await t.step("call weather", s.call_tool("weather", {"city": "Oslo"}))
    await t.step("call echo", s.call_tool("echo", {"a": 1, "b": "two"}))
    await t.step("call read_notes (python)", s.call_tool("read_notes", {}))
    await t.step("call uptime (shell)", s.call_tool("uptime", {}))
    await t.step("call bash rm (guard)", s.call_tool("bash", {"command": "rm -rf /"}))
    await t.step("call bash ls (guard)", s.call_tool("bash", {"command": "ls"}))
    await t.step("call image", s.call_tool("image", {}))
    await t.step("call unknown tool", s.call_tool("no_such_tool", {}))
    await t.step("list_prompts", s.list_prompts())
    await t.step("get prompt weather", s.get_prompt("weather", {"args": "berlin"}))
    await t.step("get prompt greet", s.get_prompt("greet", {"args": "you"}))
    await t.step("get prompt note", s.get_prompt("note", {"args": "buy milk"}))
    await wait_log(t, lambda e: e.get("logger") == "notes", "the note's log message")
    await t.step("get prompt note without args", s.get_prompt("note", {}))
    await t.step("get unknown prompt", s.get_prompt("no_such_prompt", {}))
    await t.step("set level warning", s.set_logging_level("warning"))
    await t.step("get prompt note while warning", s.get_prompt("note", {"args": "quiet one"}))
    await t.step("set level info", s.set_logging_level("info"))
    await t.step("get prompt note again", s.get_prompt("note", {"args": "loud one"}))
    await wait_log(t, lambda e: "2 note" in json.dumps(e.get("data")) or "3 note" in json.dumps(e.get("data")),
                   "the second note's log message")
    await t.step("read_notes after notes", s.call_tool("read_notes", {}))
    await t.step("ping", s.send_ping())
    # An extension exits: its tool fails, and the lists change.
    await t.step("call crash", s.call_tool("crash", {}))
    with anyio.fail_after(STEP_TIMEOUT):
        await t.list_changed.wait()
    t.data["steps"].append({"step": "tools list_changed received"})
    await t.step("list_tools after crash", s.list_tools())


async def cancel(s, t):
    await t.step("set level debug", s.set_logging_level("debug"))
    box = {}

    async def slow_call():
        # The SDK's own cancellation: cancelling the awaiting task makes it
        # send notifications/cancelled for the request.
        with anyio.CancelScope() as scope:
            box["scope"] = scope
            box["result"] = dump(await s.call_tool("slow", {"ms": 60000}))
        box["cancelled"] = scope.cancelled_caught

    async with anyio.create_task_group() as tg:
        tg.start_soon(slow_call)
        # The server says (debug log, logger zot) once the tool call is with
        # the extension; cancel only then, so tool_cancel is exercised.
        entry = await wait_log(t, lambda e: e.get("logger") == "zot" and "calling the tool" in str(e.get("data"))
                               and "slow" in str(e.get("data")), "the slow call to start")
        t.data["steps"].append({"step": "slow call started", "log": entry})
        box["scope"].cancel()
    t.data["steps"].append({"step": "slow call cancelled", "cancelled": box.get("cancelled"),
                            "result": box.get("result")})
    # The server keeps answering.
    await t.step("call echo after cancel", s.call_tool("echo", {"after": "cancel"}))
    await t.step("ping after cancel", s.send_ping())
    await t.step("call slow short", s.call_tool("slow", {"ms": 10}))


async def main(scenario, command, args):
    t = Transcript(scenario)
    params = StdioServerParameters(command=command, args=args, env={"ZOT_HOME": os.environ.get("ZOT_HOME", "")})

    async def on_log(p):
        t.logs.append(dump(p))
        t.log_event.set()

    async with stdio_client(params) as (read, write):
        tap_in_send, tap_in_recv = anyio.create_memory_object_stream(100)
        tap_out_send, tap_out_recv = anyio.create_memory_object_stream(100)
        async with anyio.create_task_group() as tg:
            tg.start_soon(tap, read, tap_in_send, t.wire, "in")
            tg.start_soon(tap, tap_out_recv, write, t.wire, "out")
            async with ClientSession(tap_in_recv, tap_out_send, logging_callback=on_log) as s:
                rec = await t.step("initialize", s.initialize())
                t.data["init"] = rec.get("result")
                if "result" in rec:
                    await {"tour": tour, "cancel": cancel}[scenario](s, t)
            await tap_out_send.aclose()
            tg.cancel_scope.cancel()
    t.data["logs"] = t.logs
    return t.data


if __name__ == "__main__":
    if len(sys.argv) < 4 or sys.argv[2] != "--" or sys.argv[1] not in ("tour", "cancel"):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    try:
        out = anyio.run(main, sys.argv[1], sys.argv[3], sys.argv[4:])
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        sys.exit(1)
    print(json.dumps(out, indent=1))
