#!/usr/bin/env python3
"""Reads hosted servers' resources through `zot mcp` with the official MCP
Python SDK's `Client`, in one connect mode (`legacy` or `2026-07-28`):

    resources_client.py MODE FX_LOG -- COMMAND [ARGS...]

The server is expected to host `sdk` (tests/fixtures/sdk_resources.py) and
`fx` (tests/fixtures/mcp_server.py --resources fx, whose log is FX_LOG).
It lists resources and templates, reads text, a blob and a template's URI,
an unknown URI, adds a resource and waits for the list change (a pushed
notification, or a `subscriptions/listen` in the modern era), lists
again, and cancels a read that only ends when cancelled. Prints one JSON
object: {"mode", "protocol_version", "steps": [...]}. Exit code 3 when the
`mcp` package cannot be imported.
"""
import os

from sdk_steps import Client, StdioServerParameters, STEP_TIMEOUT, dump, main, step, wait_file
import anyio  # after sdk_steps, which exits 3 without the SDK


async def run(mode, fx_log, command, args):
    out = {"mode": mode, "steps": []}
    changed = anyio.Event()

    async def on_message(m):
        inner = getattr(m, "root", m)
        if type(inner).__name__ == "ResourceListChangedNotification":
            changed.set()

    params = StdioServerParameters(command=command, args=args, env={"ZOT_HOME": os.environ.get("ZOT_HOME", "")})
    async with Client(params, mode=mode, cache=None, message_handler=on_message) as c:
        out["protocol_version"] = c.protocol_version
        await step(out, "list_resources", c.list_resources())
        await step(out, "list_resource_templates", c.list_resource_templates())
        await step(out, "read text", c.read_resource("sdk://static/hello"))
        await step(out, "read blob", c.read_resource("sdk://static/bytes"))
        await step(out, "read template", c.read_resource("sdk://item/7"))
        await step(out, "read unknown", c.read_resource("nowhere://x"))

        if mode == "legacy":
            await step(out, "add", c.call_tool("mcp__sdk__add_resource", {"name": "legacy"}))

            async def seen():
                await changed.wait()
                return True
            await step(out, "list_changed", seen())
        else:
            async def listen_for_change():
                async with c.listen(resources_list_changed=True) as sub:
                    honoured = dump(sub.honored)
                    await c.call_tool("mcp__sdk__add_resource", {"name": "modern"})
                    with anyio.fail_after(STEP_TIMEOUT):
                        async for event in sub:
                            return {"honoured": honoured, "event": type(event).__name__}
            await step(out, "listen", listen_for_change())
        await step(out, "list_resources after change", c.list_resources())

        box = {}

        async def slow_read():
            with anyio.CancelScope() as scope:
                box["scope"] = scope
                box["result"] = dump(await c.read_resource("fx://slow"))
            box["cancelled"] = scope.cancelled_caught

        async with anyio.create_task_group() as tg:
            tg.start_soon(slow_read)
            await wait_file(fx_log, "got resources/read")
            box["scope"].cancel()
        await wait_file(fx_log, "fixture: cancelled read")
        out["steps"].append({"step": "slow read cancelled", "result": {"cancelled": box.get("cancelled"), "answer": box.get("result")}})
        await step(out, "read after cancel", c.read_resource("fx://any/3"))
    return out


if __name__ == "__main__":
    main(run, __doc__)
