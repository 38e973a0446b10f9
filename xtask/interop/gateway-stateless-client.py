"""The Python SDK's client in its default era (2026-07-28) in front of `mcp-host serve
--gateway --http` in passthrough mode, with the TypeScript "everything" server (handshake era,
stdio) upstream (issue 22 §5):

- `subscriptions/listen` for one resource URI gets that resource's `resources/updated` events
  (the gateway subscribes upstream as the stream opens; the server sends updates every 5 s
  once `toggle-subscriber-updates` is called);
- the upstream's mid-call `sampling/createMessage` reaches this client as `input_required`
  (the gateway suspends the upstream call), and the SDK's retry with the answer resumes it.

Usage: gateway-stateless-client.py <url>
"""

import sys

import anyio
from mcp import types
from mcp.client.client import Client

URI = "demo://resource/static/document/architecture.md"


async def main(url: str) -> None:
    asked = []

    async def sampling(context, params):
        asked.append(params)
        return types.CreateMessageResult(
            role="assistant",
            model="python-peer",
            content=types.TextContent(type="text", text="sampled by the Python client"),
        )

    async with Client(url, sampling_callback=sampling) as client:
        events = []
        async with client.listen(resource_subscriptions=[URI]) as sub:
            assert list(sub.honored.resource_subscriptions or []) == [URI], sub.honored
            await client.call_tool("toggle-subscriber-updates", {})
            with anyio.move_on_after(12):
                async for event in sub:
                    events.append(event)
                    if len(events) == 2:
                        break
        assert len(events) == 2, f"{len(events)} resources/updated on the listen stream"
        assert all(getattr(e, "uri", None) == URI for e in events), events
        print(f"listen: {len(events)} resources/updated for {URI}")

        result = await client.call_tool(
            "trigger-sampling-request", {"prompt": "hello", "maxTokens": 20}
        )
        text = result.content[0].text
        assert len(asked) == 1, f"asked {len(asked)} times"
        assert "sampled by the Python client" in text, text
        print("sampling mid-call: asked once through input_required, the answer reached the upstream")


anyio.run(main, sys.argv[1])
