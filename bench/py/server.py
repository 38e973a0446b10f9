"""The benchmark's server on the Python SDK (`mcp`, pinned by `cargo xtask bench`).

Usage: server.py stdio|http [--port P] [--tools N]

The SDK's low-level `Server` with `on_list_tools` and `on_call_tool`, as its documentation
shows: `echo` answers its text, `big` answers 1 MiB of text, and N generated tools follow,
listed 500 to a page (the same tools, in the same order, as every other implementation).
Over HTTP it serves the SDK's own Streamable HTTP app with uvicorn at /mcp.
"""

import sys

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

PAGE_SIZE = 500
BIG = "x" * (1 << 20)


def tools(generated: int) -> list[types.Tool]:
    out = [
        types.Tool(
            name="echo",
            description="Returns its text.",
            input_schema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        ),
        types.Tool(name="big", description="Returns 1 MiB of text.", input_schema={"type": "object"}),
    ]
    for i in range(generated):
        out.append(
            types.Tool(
                name=f"tool_{i:05}",
                description=f"Generated tool number {i} of the tools/list benchmark.",
                input_schema={"type": "object", "properties": {"value": {"type": "string"}}},
            )
        )
    return out


def make_server(generated: int) -> Server:
    all_tools = tools(generated)

    async def list_tools(ctx, params):
        cursor = getattr(params, "cursor", None) if params is not None else None
        start = min(int(cursor or 0), len(all_tools))
        end = min(start + PAGE_SIZE, len(all_tools))
        next_cursor = str(end) if end < len(all_tools) else None
        return types.ListToolsResult(tools=all_tools[start:end], next_cursor=next_cursor)

    async def call_tool(ctx, params):
        if params.name == "echo":
            text = (params.arguments or {}).get("text", "")
        elif params.name == "big":
            text = BIG
        else:
            raise ValueError(f"unknown tool {params.name}")
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    return Server("mcp-bench-py", version="0.0.0", on_list_tools=list_tools, on_call_tool=call_tool)


def main() -> None:
    args = sys.argv[1:]
    transport = args[0]
    port, generated = 0, 0
    for flag, value in zip(args[1::2], args[2::2]):
        if flag == "--port":
            port = int(value)
        elif flag == "--tools":
            generated = int(value)
    server = make_server(generated)
    if transport == "stdio":

        async def run() -> None:
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())

        anyio.run(run)
    else:
        import uvicorn

        app = server.streamable_http_app(host="127.0.0.1")
        uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main()
