"""`kvplan mcp`: a Model Context Protocol server over stdio (the official `mcp` SDK: pip install 'kvplan[mcp]').

It serves the tools of kvplan.cli.mcp_tools: each answer is the payload the matching command prints with --json
(as structured content, and as its JSON text); a KvplanError is a tool error whose text is kvplan's one-line
message. The SDK is imported only when the server starts: no other command loads it.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from kvplan.cli.expand import command
from kvplan.errors import InputError, KvplanError


@command
def mcp() -> None:
    """Serve size, capacity, fit, reconcile, models and engines to an MCP client (an agent) over stdio, with the
    JSON Schemas of their arguments and answers (docs/howto/mcp.md shows a client's configuration)."""
    try:
        import anyio
        from mcp.server.lowlevel import Server
        from mcp.server.stdio import stdio_server
    except ImportError:
        raise InputError("kvplan mcp needs the MCP SDK: pip install 'kvplan[mcp]'") from None
    server = Server("kvplan", version=_version(), on_list_tools=_list_tools, on_call_tool=_call_tool)

    async def serve() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(serve)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kvplan")
    except PackageNotFoundError:
        return ""


async def _list_tools(ctx: Any, params: Any) -> Any:
    from mcp import types

    from kvplan.cli.mcp_tools import tools

    return types.ListToolsResult(tools=[
        types.Tool(name=t.name, description=t.description, input_schema=t.input_schema,
                   output_schema=t.output_schema) for t in tools()])


async def _call_tool(ctx: Any, params: Any) -> Any:
    """The tool's answer, or kvplan's one-line message as a tool error."""
    from mcp import types

    from kvplan.cli.mcp_tools import tools

    found = {t.name: t for t in tools()}.get(params.name)
    try:
        if found is None:
            raise InputError(f"unknown tool {params.name!r}; kvplan's tools: {', '.join(t.name for t in tools())}")
        data = found.answer(dict(params.arguments or {}))
    except KvplanError as exc:
        message = " ".join(str(exc).splitlines())
        return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)
    except Exception as exc:  # a bug: the client still gets one line, and stderr the traceback
        import traceback

        traceback.print_exc(file=sys.stderr)
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"internal error: {exc}")],
                                    is_error=True)
    return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(data))],
                                structured_content=data)
