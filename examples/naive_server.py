"""A hand-rolled MCP server, WITHOUT mcp_min, with the classic bug: print() for debugging.

    python3 mcp_min.py call -- python3 examples/naive_server.py get_weather '{"city": "Lisbon"}'

stdout is the wire: every line on it must be one JSON-RPC message. The print() in
get_weather writes a line that is not one, and the client reads garbage between its replies.
examples/print_server.py is the same tool with the same print() in mcp_min, which points
stdout at stderr while it serves. (Do not copy this file: it is wrong on purpose.)
"""

import json
import sys

WEATHER = {"lisbon": "Sunny, 22°C", "london": "Drizzle, 13°C", "tokyo": "Clear, 19°C"}
TOOL = {"name": "get_weather", "description": "Current weather for a city.",
        "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}},
                        "required": ["city"]}}


def get_weather(city):
    print(f"DEBUG looking up {city}")            # the bug: stdout is the wire
    return WEATHER.get(city.lower(), "no idea")


def handle(method, params):
    if method == "initialize":
        return {"protocolVersion": params["protocolVersion"], "capabilities": {"tools": {}},
                "serverInfo": {"name": "naive-weather", "version": "0.0.1"}}
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": [TOOL]}
    if method == "tools/call":
        return {"content": [{"type": "text", "text": get_weather(params["arguments"]["city"])}]}
    raise LookupError(method)


for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message or "method" not in message:
        continue                                   # notifications and replies: no answer
    try:
        reply = {"result": handle(message["method"], message.get("params") or {})}
    except LookupError:
        reply = {"error": {"code": -32601, "message": f"Method not found: {message['method']}"}}
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], **reply}), flush=True)
