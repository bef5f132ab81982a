#!/usr/bin/env python3
"""Count the machine instructions a server spends on one `tools/call add`.

    python3 bench/instructions.py          # needs valgrind; about 2 minutes

Wall-clock figures on a shared machine move by tens of percent from run to run;
instruction counts do not. Each peer here serves a stream of pipelined `add`
calls read from a file, replies going to /dev/null, under valgrind's cachegrind.
Two runs differ only in how many calls they serve, so their difference divided
by the extra calls is the cost of one call, with start-up, imports and the
handshake cancelled out:

- floor: `peers/floor_server.py`'s own loop (json.loads, dispatch, json.dumps,
  write, flush);
- mcp_min: `peers/mcp_min_server.py`'s Server, its real reader loop, worker pool
  and writer, on every thread;
- modern: the same, with protocol 2026-07-28 requests (no handshake; every request
  carries the envelope in params._meta, every result says resultType and serverInfo);
- json: the JSON work alone that mcp_min must do for such a call: decode the
  request, encode the reply it actually sends;
- ts: `peers/ts_server.cjs` on node, if `bench/setup.sh` installed the SDK;
  differenced over 8,000 → 16,000 calls, after its JIT compiler has warmed up.

Counts are of user-space instructions in every thread; the kernel's share
(pipes, wake-ups) is not in them. Standard library only; Linux with valgrind.
"""

import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
CACHE = os.path.expanduser(os.environ.get("MCP_MIN_BENCH_CACHE") or "~/.cache/mcp-min-bench")
CALLS = {"floor": (2000, 4000), "mcp_min": (2000, 4000), "modern": (2000, 4000),
         "json": (2000, 4000), "ts": (8000, 16000)}
ENVELOPE = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "instructions", "version": "1"}}


def requests(count, modern=False):
    """Two opening lines (the handshake; for 2026-07-28, server/discover twice), then
    `count` pipelined calls, as one block of newline-delimited JSON."""
    head = [{"jsonrpc": "2.0", "id": 0, "method": "initialize",
             "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                        "clientInfo": {"name": "instructions", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    calls = [{"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
              "params": {"name": "add", "arguments": {"a": i, "b": 2 * i}}} for i in range(count)]
    if modern:
        head = [{"jsonrpc": "2.0", "id": f"d{i}", "method": "server/discover",
                 "params": {"_meta": ENVELOPE}} for i in range(2)]
        for call in calls:
            call["params"]["_meta"] = ENVELOPE
    return b"".join(json.dumps(m, separators=(",", ":")).encode() + b"\n" for m in head + calls)


def serve(kind, count, replies=os.devnull):
    """Run one Python peer over `count` calls (the child process valgrind watches)."""
    blob = requests(max(CALLS[kind]), modern=kind == "modern")   # the same work every run
    lines = blob.splitlines(keepends=True)[:2 + count]
    sys.path[:0] = [os.path.join(BENCH_DIR, "peers"), os.path.dirname(BENCH_DIR)]
    if kind == "floor":
        sys.stdin = io.TextIOWrapper(io.BytesIO(b"".join(lines)))
        sys.stdout = open(replies, "w")
        import floor_server
        floor_server.main()
    elif kind in ("mcp_min", "modern"):
        import mcp_min_server
        mcp_min_server.server.grace_period = 3600     # slow under valgrind: never cut a call short
        with tempfile.TemporaryFile() as requests_file:
            requests_file.write(b"".join(lines))
            requests_file.seek(0)                    # returns once every call is answered:
            mcp_min_server.server.serve_connection(requests_file.fileno(), os.open(replies, os.O_WRONLY | os.O_CREAT | os.O_TRUNC))
    else:
        import mcp_min
        reply = {"jsonrpc": "2.0", "id": 0, "result": {
            "content": [{"type": "text", "text": "0"}], "structuredContent": {"result": 0},
            "isError": False}}
        for line in lines[2:]:
            message = mcp_min.decode_message(line)
            total = message["params"]["arguments"]["a"] + message["params"]["arguments"]["b"]
            reply["id"], reply["result"]["structuredContent"]["result"] = message["id"], total
            reply["result"]["content"][0]["text"] = str(total)
            mcp_min.encode_message(reply)


def node_peer():
    """(node, NODE_PATH) for the TypeScript SDK peer, or None if it is not installed."""
    node, modules = shutil.which("node"), os.path.join(CACHE, "ts", "node_modules")
    if node and os.path.isdir(os.path.join(modules, "@modelcontextprotocol", "sdk")):
        return node, modules
    return None


def instructions(kind, count):
    """Instructions valgrind counted for one run of a peer over `count` calls."""
    valgrind = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    with tempfile.TemporaryFile() as stdin:
        if kind == "ts":
            node, env["NODE_PATH"] = node_peer()
            command = [node, os.path.join(BENCH_DIR, "peers", "ts_server.cjs")]
            stdin.write(requests(count))
            stdin.seek(0)
        else:
            command = [sys.executable, os.path.abspath(__file__), "--child", kind, str(count)]
        done = subprocess.run(valgrind + command, stdin=stdin, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, env=env)
    match = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if done.returncode or not match:
        raise SystemExit(f"{kind}: no instruction count (exit {done.returncode}):\n{done.stderr[-2000:]}")
    return int(match.group(1).replace(",", ""))


def main():
    if sys.argv[1:2] == ["--child"]:
        return serve(*sys.argv[2:3], int(sys.argv[3]), *sys.argv[4:5])   # kind, calls[, replies]
    if not shutil.which("valgrind"):
        raise SystemExit("valgrind is needed: apt-get install valgrind")
    kinds = ["floor", "mcp_min", "modern", "json"] + (["ts"] if node_peer() else [])
    kinds = [k for k in kinds if k in (sys.argv[1:] or kinds)]    # e.g. `mcp_min modern`
    if "ts" not in kinds:
        print(f"ts: skipped, the TypeScript SDK is not in {CACHE} (bash bench/setup.sh)")
    per_call = {}
    for kind in kinds:
        low, high = CALLS[kind]
        per_call[kind] = (instructions(kind, high) - instructions(kind, low)) // (high - low)
        print(f"{kind:8} {per_call[kind]:>9,} instructions per call", flush=True)
    ours = per_call.get("mcp_min")
    if ours and "floor" in per_call and "json" in per_call:
        floor, json_part = per_call["floor"], per_call["json"]
        print(f"\nmcp_min / floor: {ours / floor:.2f}x; of mcp_min's, JSON {json_part:,} "
              f"({json_part / ours:.0%}), the rest {ours - json_part:,}")
    if ours and "modern" in per_call:
        print(f"2026-07-28 / handshake era: {per_call['modern'] / ours:.2f}x")
    if ours and "ts" in per_call:
        print(f"ts / mcp_min: {per_call['ts'] / ours:.2f}x")


if __name__ == "__main__":
    main()
