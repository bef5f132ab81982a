"""The floor: the least work a stdio MCP server can do, with no framework.

Readline on stdin, json.loads, dispatch on the method, json.dumps, write and
flush.  It answers exactly what the benchmark sends (initialize, ping,
tools/list, tools/call for add/echo/sleep) and nothing more: no validation,
no schemas beyond the tool list, no error paths worth the name.  Every other
peer is measured against it.

`sleep` runs in a thread of its own so that it does not hold up the requests
behind it; a lock keeps the replies from interleaving on stdout.  The thread
comes from `_thread.start_new_thread`, the cheapest the standard library has:
unlike `threading.Thread.start` it does not wait for the new thread to run.
"""

import _thread
import json
import sys
import time

TOOLS = [
    {
        "name": "add",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    },
    {
        "name": "echo",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
    },
    {
        "name": "sleep",
        "inputSchema": {
            "type": "object",
            "properties": {"ms": {"type": "number"}},
            "required": ["ms"],
        },
    },
]

out = sys.stdout.buffer
write_lock = _thread.allocate_lock()


def send(message):
    data = json.dumps(message).encode() + b"\n"
    with write_lock:
        out.write(data)
        out.flush()


def reply(request_id, result):
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


def text_result(text):
    return {"content": [{"type": "text", "text": text}], "isError": False}


def sleep_then_reply(request_id, ms):
    time.sleep(ms / 1000)
    reply(request_id, text_result("slept"))


def call_tool(request_id, name, args):
    if name == "add":
        reply(request_id, text_result(str(args["a"] + args["b"])))
    elif name == "echo":
        reply(request_id, text_result(args["text"]))
    elif name == "sleep":
        _thread.start_new_thread(sleep_then_reply, (request_id, args["ms"]))
    else:
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32602, "message": f"unknown tool {name}"}})


def main():
    for line in iter(sys.stdin.buffer.readline, b""):
        message = json.loads(line)
        method = message.get("method")
        request_id = message.get("id")
        if request_id is None:  # a notification: nothing to answer
            continue
        if method == "tools/call":
            params = message["params"]
            call_tool(request_id, params["name"], params.get("arguments", {}))
        elif method == "ping":
            reply(request_id, {})
        elif method == "initialize":
            reply(request_id, {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "floor", "version": "1"},
            })
        elif method == "tools/list":
            reply(request_id, {"tools": TOOLS})
        else:
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "method not found"}})


if __name__ == "__main__":
    main()
