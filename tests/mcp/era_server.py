#!/usr/bin/env python3
"""An MCP server built on the official Python SDK (2.3), which serves both
eras on stdio; with --modern-only a middleware refuses `initialize`, which
makes it a server of 2026-07-28 alone. Tools: `hi` (text), `oops` (a tool
error). Each start appends a line to $ERA_STARTS when set, and the SDK's
own log goes to stderr (the host's log of it).

    era_server.py [--modern-only]
"""
import os
import sys
import warnings

warnings.filterwarnings("ignore")
try:
    from mcp.server.mcpserver import MCPServer
    from mcp.shared.exceptions import MCPError
except Exception as e:  # noqa: BLE001
    print(f"cannot import the mcp package: {e!r}", file=sys.stderr)
    sys.exit(3)

if os.environ.get("ERA_STARTS"):
    with open(os.environ["ERA_STARTS"], "a") as f:
        f.write(f"{os.getpid()}\n")

server = MCPServer("era-fixture")


@server.tool()
def hi(name: str = "you") -> str:
    """Says hello."""
    return f"hi {name}"


@server.tool()
def oops() -> str:
    """Fails."""
    raise ValueError("it broke")


if "--modern-only" in sys.argv:
    async def refuse_initialize(ctx, call_next):
        if ctx.method == "initialize":
            sys.stderr.write("era_server: refused initialize\n")
            sys.stderr.flush()
            raise MCPError(code=-32022, message="this server speaks 2026-07-28 only",
                           data={"supported": ["2026-07-28"]})
        return await call_next(ctx)

    server.middleware.append(refuse_initialize)

server.run("stdio")
