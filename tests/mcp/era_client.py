#!/usr/bin/env python3
"""Drives `zot mcp` with the official MCP Python SDK's `Client` in one of
its connect modes (`auto`, `2026-07-28`, `legacy`):

    era_client.py MODE FX_LOG -- COMMAND [ARGS...]

runs COMMAND as an MCP server over stdio, and prints one JSON object:
{"mode", "protocol_version", "steps": [{"step", "result"|"error"|"exception"}]}.
The server is expected to offer the Rust example `echo` (echo, slow),
a hosted MCP server `fx` (tests/fixtures/mcp_server.py: mcp__fx__fail,
mcp__fx__progress, mcp__fx__slow) whose log is FX_LOG, and an extension
`crashy` whose tool `crash` makes it exit (and restart). Every wait has a
deadline; a failed step is recorded, not raised. Exit code 0 when the
script ran to its end, 3 when the `mcp` package cannot be imported.
"""
import os

from sdk_steps import Client, StdioServerParameters, STEP_TIMEOUT, dump, main, step, wait_file
import anyio  # after sdk_steps, which exits 3 without the SDK


async def run(mode, fx_log, command, args):
    out = {"mode": mode, "steps": []}
    params = StdioServerParameters(command=command, args=args, env={"ZOT_HOME": os.environ.get("ZOT_HOME", "")})
    async with Client(params, mode=mode, cache=None) as c:
        out["protocol_version"] = c.protocol_version
        await step(out, "list_tools", c.list_tools())
        await step(out, "call echo", c.call_tool("echo", {"a": 1}))
        await step(out, "call fail", c.call_tool("mcp__fx__fail", {}))
        seen = []

        async def on_progress(progress, total, message):
            seen.append({"progress": progress, "total": total, "message": message})

        await step(out, "call progress", c.call_tool("mcp__fx__progress", {}, progress_callback=on_progress))
        out["steps"].append({"step": "progress seen", "result": seen})

        box = {}

        async def slow_call():
            with anyio.CancelScope() as scope:
                box["scope"] = scope
                box["result"] = dump(await c.call_tool("mcp__fx__slow", {"secs": 60}))
            box["cancelled"] = scope.cancelled_caught

        async with anyio.create_task_group() as tg:
            tg.start_soon(slow_call)
            await wait_file(fx_log, '"name": "slow"')
            box["scope"].cancel()
        out["steps"].append({"step": "slow cancelled", "result": {"cancelled": box.get("cancelled"), "answer": box.get("result")}})
        await wait_file(fx_log, "fixture: cancelled")
        await step(out, "call echo after cancel", c.call_tool("echo", {"after": "cancel"}))

        if mode != "legacy":
            async def listen_for_restart():
                async with c.listen(tools_list_changed=True) as sub:
                    honoured = dump(sub.honored)
                    await step(out, "call crash", c.call_tool("crash", {}))
                    with anyio.fail_after(STEP_TIMEOUT):
                        async for event in sub:
                            return {"honoured": honoured, "event": type(event).__name__}
            await step(out, "listen", listen_for_restart())
            await step(out, "list_tools after change", c.list_tools())
            await step(out, "discover at 2099-01-01", c.session.send_discover("2099-01-01"))
    return out


if __name__ == "__main__":
    main(run, __doc__)
