#!/usr/bin/env python3
"""Drives `zot mcp` in front of MCP servers with the official MCP Python SDK.

    gateway_client.py -- COMMAND [ARGS...]

lists the tools, calls mcp__fx__echo, mcp__fx__structured and
mcp__fx__progress (with a progress callback) and prints one JSON object:
{"tools": [...], "echo": ..., "structured": ..., "progress": ..., "updates": [...]}.
Exit code 3 when the `mcp` package cannot be imported.
"""
import json
import os
import sys
import warnings

warnings.filterwarnings("ignore")
try:
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
except Exception as e:  # noqa: BLE001 - any import failure means "no SDK"
    print(f"cannot import the mcp package: {e!r}", file=sys.stderr)
    sys.exit(3)


def dump(obj):
    return obj.model_dump(by_alias=True, mode="json", exclude_none=True)


async def main(command, args):
    params = StdioServerParameters(command=command, args=args, env={"ZOT_HOME": os.environ.get("ZOT_HOME", ""), "PATH": os.environ.get("PATH", "")})
    out = {"updates": []}

    async def on_progress(progress, total, message):
        out["updates"].append({"progress": progress, "total": total, "message": message})

    with anyio.fail_after(60):
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                out["tools"] = dump(await s.list_tools())["tools"]
                out["echo"] = dump(await s.call_tool("mcp__fx__echo", {"text": "via the gateway"}))
                out["structured"] = dump(await s.call_tool("mcp__fx__structured", {}))
                out["progress"] = dump(await s.call_tool("mcp__fx__progress", {}, progress_callback=on_progress))
    return out


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] != "--":
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    print(json.dumps(anyio.run(main, sys.argv[2], sys.argv[3:])))
