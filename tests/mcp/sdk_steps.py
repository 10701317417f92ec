"""What the SDK-driven `zot mcp` clients (era_client.py, resources_client.py)
share: the `mcp` import (exit code 3 when it cannot be imported), a step
run under a deadline and recorded (never raised), a wait for a line in a
server's log, and the command line `MODE FX_LOG -- COMMAND [ARGS...]`
that runs `run(mode, fx_log, command, args)` and prints its JSON.
"""
import json
import sys
import traceback
import warnings

warnings.filterwarnings("ignore")
try:
    import anyio
    from mcp import Client, StdioServerParameters  # noqa: F401 - for the clients
    from mcp.shared.exceptions import MCPError
except Exception as e:  # noqa: BLE001 - any import failure means "no SDK"
    print(f"cannot import the mcp package: {e!r}", file=sys.stderr)
    sys.exit(3)

STEP_TIMEOUT = 30.0


def dump(obj):
    if hasattr(obj, "model_dump"):
        return obj.model_dump(by_alias=True, mode="json", exclude_none=True)
    return obj


async def step(out, name, coro):
    rec = {"step": name}
    try:
        with anyio.fail_after(STEP_TIMEOUT):
            rec["result"] = dump(await coro)
    except MCPError as e:
        rec["error"] = {"code": e.code, "message": e.message, "data": dump(e.error.data)}
    except Exception as e:  # noqa: BLE001 - recorded for the test to see
        rec["exception"] = f"{type(e).__name__}: {e}"
    out["steps"].append(rec)
    return rec


async def wait_file(path, needle):
    with anyio.fail_after(STEP_TIMEOUT):
        while True:
            try:
                with open(path) as f:
                    if needle in f.read():
                        return
            except OSError:
                pass
            await anyio.sleep(0.02)


def main(run, usage):
    if len(sys.argv) < 5 or sys.argv[3] != "--":
        print(usage, file=sys.stderr)
        sys.exit(2)
    try:
        result = anyio.run(run, sys.argv[1], sys.argv[2], sys.argv[4], sys.argv[5:])
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        sys.exit(1)
    print(json.dumps(result, indent=1))
