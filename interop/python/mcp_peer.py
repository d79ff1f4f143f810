"""Python's official MCP SDK (`mcp` 1.x or 2.x) facing conduit, for jsonrpc/mcp_python_test.ts.

    python mcp_peer.py server
        A stdio MCP server (FastMCP in 1.x, MCPServer in 2.x) with two tools: `add` and
        `slow`, which reports progress every 20 ms and prints "slow: cancelled" to stderr
        when the client cancels it.

    python mcp_peer.py client ERRFILE COMMAND ARGS...
        Spawns COMMAND ARGS... (conduit's MCP server) with its stderr written to ERRFILE;
        initializes, lists the tools, calls `add`, cancels a `count` of 1000 after its first
        progress, pings (1.x), calls `add` again, and prints what it saw as one JSON object.
"""

import json
import sys
from importlib.metadata import version

import anyio

MAJOR = int(version("mcp").split(".")[0])


def serve() -> None:
    if MAJOR >= 2:
        from mcp.server.mcpserver import Context, MCPServer as Server
    else:
        from mcp.server.fastmcp import Context, FastMCP as Server

    server = Server("python-mcp-peer")

    @server.tool()
    def add(a: int, b: int) -> str:
        """Adds two numbers."""
        return str(a + b)

    @server.tool()
    async def slow(steps: int, ctx: Context) -> str:
        """Reports progress every 20 ms for `steps` steps."""
        try:
            for i in range(1, steps + 1):
                await anyio.sleep(0.02)
                await ctx.report_progress(i, steps)
        except BaseException:
            print("slow: cancelled", file=sys.stderr, flush=True)
            raise
        return f"slow: {steps} steps"

    server.run("stdio")


async def drive(errfile: str, command: list[str]) -> dict:
    from mcp import StdioServerParameters

    # conduit's stderr goes to ERRFILE alone, so the test sees exactly what conduit printed.
    params = StdioServerParameters(
        command="sh",
        args=["-c", 'f=$1; shift; exec "$@" 2>"$f"', "sh", errfile, *command],
    )
    if MAJOR >= 2:
        from mcp import Client

        async with Client(params) as client:
            return await exercise(client, client.server_info.name, None)
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            return await exercise(session, init.serverInfo.name, session)


async def exercise(client, server_name: str, v1_session) -> dict:
    seen: dict = {"mcp": version("mcp"), "server": server_name}
    tools = await client.list_tools()
    seen["tools"] = sorted(tool.name for tool in tools.tools)
    seen["add"] = (await client.call_tool("add", {"a": 2, "b": 40})).content[0].text

    progress: list[float] = []
    first = anyio.Event()

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)
        first.set()

    # 1.x sends no cancel of its own: the request's id is the session's next one.
    request_id = getattr(v1_session, "_request_id", None)
    async with anyio.create_task_group() as group:

        async def count() -> None:
            await client.call_tool("count", {"to": 1000}, progress_callback=on_progress)
            seen["count"] = "finished, not cancelled"

        group.start_soon(count)
        with anyio.fail_after(10):
            await first.wait()
        if v1_session is not None:
            from mcp import types

            await v1_session.send_notification(
                types.ClientNotification(
                    types.CancelledNotification(
                        params=types.CancelledNotificationParams(
                            requestId=request_id, reason="the test gave up"
                        )
                    )
                )
            )
        # 2.x sends notifications/cancelled itself when the call's scope is cancelled.
        group.cancel_scope.cancel()
    seen["count_progress_before_cancel"] = len(progress)
    await anyio.sleep(0.3)
    if v1_session is not None:
        # 2.x deprecates ping (MCP 2026-07-28 drops it): the call after the cancel shows enough.
        await v1_session.send_ping()
    seen["add_after_cancel"] = (await client.call_tool("add", {"a": 1, "b": 1})).content[0].text
    return seen


def main() -> None:
    if sys.argv[1] == "server":
        serve()
    else:
        print(json.dumps(anyio.run(drive, sys.argv[2], sys.argv[3:])), flush=True)


if __name__ == "__main__":
    main()
