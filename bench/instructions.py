#!/usr/bin/env python3
"""Count the machine instructions a server spends on one `tools/call add`.

    python3 bench/instructions.py          # needs valgrind; about a minute

Wall-clock figures on a shared machine move by tens of percent from run to run;
instruction counts do not. Each peer here serves a stream of pipelined `add`
calls from memory (no pipes, no client), replies going to /dev/null, under
valgrind's cachegrind. Two runs differ only in how many calls they serve, so
their difference divided by the extra calls is the cost of one call, with start-up,
imports and the handshake cancelled out:

- floor: `peers/floor_server.py`'s own loop (json.loads, dispatch, json.dumps,
  write, flush);
- mcp_min: `peers/mcp_min_server.py`'s Server, its real reader loop, worker pool
  and writer, on every thread;
- json: the JSON work alone that mcp_min must do for such a call: decode the
  request, encode the reply it actually sends.

Standard library only; Linux with valgrind.
"""

import io
import json
import os
import re
import shutil
import subprocess
import sys

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
CALLS = (2000, 4000)
KINDS = ("floor", "mcp_min", "json")


def requests(count):
    """The handshake, then `count` pipelined calls, as one block of newline-delimited JSON."""
    head = [{"jsonrpc": "2.0", "id": 0, "method": "initialize",
             "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                        "clientInfo": {"name": "instructions", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    calls = [{"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
              "params": {"name": "add", "arguments": {"a": i, "b": 2 * i}}} for i in range(count)]
    return b"".join(json.dumps(m, separators=(",", ":")).encode() + b"\n" for m in head + calls)


def serve(kind, count, replies=os.devnull):
    """Run one peer over `count` calls (the child process valgrind watches)."""
    blob = requests(max(CALLS))                      # the same work before serving, every run
    lines = blob.splitlines(keepends=True)[:2 + count]
    sys.path[:0] = [os.path.join(BENCH_DIR, "peers"), os.path.dirname(BENCH_DIR)]
    if kind == "floor":
        sys.stdin = io.TextIOWrapper(io.BytesIO(b"".join(lines)))
        sys.stdout = open(replies, "w")
        import floor_server
        floor_server.main()
    elif kind == "mcp_min":
        import tempfile
        import mcp_min_server
        with tempfile.TemporaryFile() as requests_file:
            requests_file.write(b"".join(lines))
            requests_file.seek(0)                    # returns once every call is answered:
            mcp_min_server.server.serve(requests_file.fileno(), os.open(replies, os.O_WRONLY | os.O_CREAT))
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


def instructions(kind, count):
    """Instructions valgrind counted for one child run."""
    command = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
               sys.executable, os.path.abspath(__file__), "--child", kind, str(count)]
    done = subprocess.run(command, capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONHASHSEED": "0"})
    match = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if not match:
        raise SystemExit(f"no instruction count from valgrind:\n{done.stderr[-2000:]}")
    return int(match.group(1).replace(",", ""))


def main():
    if sys.argv[1:2] == ["--child"]:
        return serve(*sys.argv[2:3], int(sys.argv[3]), *sys.argv[4:5])   # kind, calls[, replies]
    if not shutil.which("valgrind"):
        raise SystemExit("valgrind is needed: apt-get install valgrind")
    low, high = CALLS
    per_call = {}
    for kind in KINDS:
        per_call[kind] = (instructions(kind, high) - instructions(kind, low)) // (high - low)
        print(f"{kind:8} {per_call[kind]:>9,} instructions per call", flush=True)
    floor, ours, json_part = per_call["floor"], per_call["mcp_min"], per_call["json"]
    print(f"\nmcp_min / floor: {ours / floor:.2f}x; of mcp_min's, JSON {json_part:,} "
          f"({json_part / ours:.0%}), the rest {ours - json_part:,}")


if __name__ == "__main__":
    main()
