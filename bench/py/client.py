"""The benchmark's client on the Python SDK (`mcp`, pinned by `cargo xtask bench`).

Usage: client.py <spec json>

The same workloads as `bench/src/workload.rs`, with the SDK's high-level `Client`: it
connects as the spec says (a stdio command or a Streamable HTTP URL), runs one workload and
prints one JSON line. The client speaks the initialize handshake (`mode="legacy"`), as every
other client here does, and its response cache is off so that each `tools/list` is sent.
"""

import asyncio
import json
import sys
import time

from mcp import Client, StdioServerParameters

BIG_BYTES = 1 << 20
ECHO_TEXT = "hello"


def connect(spec: dict) -> Client:
    if spec["transport"] == "stdio":
        command, *args = spec["server"]
        target = StdioServerParameters(command=command, args=args)
    else:
        target = spec["url"]
    return Client(target, mode="legacy", cache=None)


async def call(client: Client, big: bool) -> int:
    if big:
        result = await client.call_tool("big", {})
    else:
        result = await client.call_tool("echo", {"text": ECHO_TEXT})
    return len(result.content[0].text)


async def list_all(client: Client) -> int:
    n, cursor = 0, None
    while True:
        page = await client.list_tools(cursor=cursor)
        n += len(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            return n


def pct(sorted_ns: list[int], p: int) -> float:
    if not sorted_ns:
        return 0.0
    i = -(-((len(sorted_ns) - 1) * p) // 100)
    return sorted_ns[i] / 1000.0


async def phase(client: Client, c: int, length: float) -> tuple[list[int], float]:
    start = time.perf_counter_ns()
    deadline = start + int(length * 1e9)

    async def worker() -> tuple[list[int], int]:
        lat = []
        while time.perf_counter_ns() < deadline:
            t = time.perf_counter_ns()
            n = await call(client, False)
            lat.append(time.perf_counter_ns() - t)
            if n != len(ECHO_TEXT):
                raise RuntimeError(f"echo answered {n} bytes")
        return lat, time.perf_counter_ns()

    done = await asyncio.gather(*(worker() for _ in range(c)))
    lat = [x for d in done for x in d[0]]
    end = max(d[1] for d in done)
    return lat, (end - start) / 1e9


def status_kib(field: str = "VmRSS") -> int:
    """VmRSS (resident now) or VmHWM (the peak) of this process, in KiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field}")


async def main() -> None:
    spec = json.loads(sys.argv[1])
    workload = spec["workload"]
    warmup, measure = spec.get("warmup_ms", 0) / 1000, spec.get("measure_ms", 0) / 1000
    if workload == "call":
        async with connect(spec) as client:
            phases = []
            for c in spec["concurrency"]:
                await phase(client, c, warmup)
                lat, secs = await phase(client, c, measure)
                lat.sort()
                phases.append({"c": c, "calls": len(lat), "secs": secs, "p50_us": pct(lat, 50), "p99_us": pct(lat, 99)})
        out = {"phases": phases}
    elif workload in ("big", "list"):
        big = workload == "big"
        want = BIG_BYTES if big else spec["tools"] + 2
        async with connect(spec) as client:
            connected = status_kib("VmRSS")
            lat = []
            start = time.perf_counter()
            while len(lat) < 3 or time.perf_counter() - start < measure:
                t = time.perf_counter_ns()
                n = await call(client, True) if big else await list_all(client)
                lat.append(time.perf_counter_ns() - t)
                if n != want:
                    raise RuntimeError(f"got {n}, expected {want}")
            peak = status_kib("VmHWM")
        runs = len(lat)
        lat.sort()
        out = {"runs": runs, "p50_us": pct(lat, 50), "connected_kib": connected, "peak_kib": peak}
    elif workload in ("connect", "idle"):
        # Each connection lives in a task of its own (anyio's scopes end in the task that
        # opened them): it connects, lists the tools, reports, and waits to be let go.
        release = asyncio.Event()
        listed: asyncio.Queue = asyncio.Queue()

        async def hold() -> None:
            try:
                async with connect(spec) as client:
                    listed.put_nowait(await list_all(client))
                    await release.wait()
            except BaseException as e:
                listed.put_nowait(e)
                raise

        start = time.perf_counter_ns()
        tasks = [asyncio.create_task(hold()) for _ in range(spec["count"])]
        tools = 0
        for _ in tasks:
            got = await listed.get()
            if isinstance(got, BaseException):
                raise got
            tools += got
        wall = time.perf_counter_ns() - start
        if tools != spec["count"] * 2:
            raise RuntimeError(f"listed {tools} tools in all")
        if workload == "connect":
            out = {"wall_us": wall // 1000}
        else:
            await asyncio.sleep(0.5)
            out = {"rss_kib": status_kib("VmRSS")}
        release.set()
        await asyncio.gather(*tasks)
    else:
        raise SystemExit(f"unknown workload {workload}")
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
