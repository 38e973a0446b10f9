"""A server on the Python SDK (`mcp`, pinned by `cargo xtask interop`), which speaks MCP
2026-07-28 as well as the handshake era: our client must pick the stateless era by itself.

Usage: stateless-server.py stdio | stateless-server.py http <port>

`echo` answers its text; `confirm` asks the user first through the SDK's resolver, which in
the 2026-07-28 era is a multi round-trip: an `input_required` result with an elicitation, then
the client's retry carrying the answer and the server's sealed `requestState`.
"""

import sys
from typing import Annotated

from pydantic import BaseModel

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve

server = MCPServer("mcp-host-interop-py")


class Confirmation(BaseModel):
    confirmed: bool


def ask(action: str) -> Elicit[Confirmation]:
    return Elicit(f"Really {action}?", Confirmation)


@server.tool()
def echo(text: str) -> str:
    """Returns its text."""
    return text


@server.tool()
def confirm(action: str, answer: Annotated[Confirmation, Resolve(ask)]) -> str:
    """Does `action` once the user confirms it."""
    return f"{action}: {'confirmed' if answer.confirmed else 'refused'}"


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
