"""A hand-rolled stdio server that breaks the protocol in one way, named by argv[1]; for the
client and the command line. Otherwise (e.g. as "plain") it answers as a 2025-11-25 server
with one tool.

same_cursor      tools/list sends the same nextCursor for ever
tools_str        tools/list answers "tools": "abc"
tools_null       tools/list answers "tools": null
caps_null        initialize answers "capabilities": null
init_list        initialize answers a list
old_version      initialize counter-offers 2024-10-07, a pre-release no client need speak
discover_list    server/discover answers a list
discover_null_caps  server/discover offers 2026-07-28 with "capabilities": null
ir_list          tools/call answers input_required with inputRequests a list
ir_bad_q         tools/call answers input_required with a question that is not an object
unsupported      a stateless-era server of another version: server/discover gets -32022
later_version    the same, but server/discover answers with its supportedVersions
bye              prints "bye" to stdout as it exits
listen_ended     2026-07-28: a ping ends the open listen with its response (gracefully)
listen_cancelled 2026-07-28: a ping ends the open listen with notifications/cancelled
asks_2026        2026-07-28: before its tools/list result it writes what a client must not
                 answer there: a request, an invalid one, a batch, JSON that is no message
result_task      2026-07-28: tools/list answers with resultType "task", a type the client
                 did not ask for
batch            2025-03-26: during tools/call it sends a batch (a log message and a ping),
                 and answers the call once the batch of replies has come back
"""
import json
import sys

MODE = sys.argv[1]


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(request):
    method = request.get("method")
    if method == "server/discover":
        if MODE == "discover_list":
            return []
        if MODE in ("listen_ended", "listen_cancelled", "asks_2026", "result_task"):
            return {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}
        if MODE == "discover_null_caps":
            return {"supportedVersions": ["2026-07-28"], "capabilities": None}
        if MODE in ("unsupported", "later_version"):
            if MODE == "later_version":
                return {"resultType": "complete", "supportedVersions": ["2027-01-01"],
                        "capabilities": {}}
            return {"error": {"code": -32022, "message": "Unsupported protocol version",
                              "data": {"supported": ["2027-01-01"]}}}
        return {"error": {"code": -32601, "message": "Method not found: server/discover"}}
    if method == "initialize":
        if MODE in ("unsupported", "later_version"):    # no handshake in that era
            return {"error": {"code": -32601, "message": "Method not found: initialize"}}
        if MODE == "init_list":
            return [1]
        version = {"batch": "2025-03-26", "old_version": "2024-10-07"}.get(MODE, "2025-11-25")
        return {"protocolVersion": version, "serverInfo": {"name": MODE, "version": "1"},
                "capabilities": None if MODE == "caps_null" else {"tools": {}}}
    if method == "tools/list":
        if MODE == "same_cursor":
            return {"tools": [{"name": "t", "inputSchema": {"type": "object"}}],
                    "nextCursor": "again"}
        if MODE == "result_task":
            return {"resultType": "task", "task": {"taskId": "1", "status": "working"}}
        if MODE in ("tools_str", "tools_null"):
            return {"tools": "abc" if MODE == "tools_str" else None}
        return {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}
    if method == "tools/call":
        if MODE in ("ir_list", "ir_bad_q"):
            asked = ["roots/list"] if MODE == "ir_list" else {"q": "roots/list"}
            return {"resultType": "input_required", "inputRequests": asked}
        return {"content": [{"type": "text", "text": "done"}]}
    return {}


call_id = listen_id = None
for line in sys.stdin:
    message = json.loads(line)
    if isinstance(message, list):                 # the client's replies to our batch
        assert [m.get("id") for m in message] == ["s1"], message
        send({"jsonrpc": "2.0", "id": call_id, "result": {"content": [
            {"type": "text", "text": f"the batch was answered: {json.dumps(message)}"}]}})
        continue
    if "method" not in message or "id" not in message:
        continue
    if MODE == "batch" and message["method"] == "tools/call":
        call_id = message["id"]
        send([{"jsonrpc": "2.0", "method": "notifications/message",
               "params": {"level": "info", "data": "hello"}},
              {"jsonrpc": "2.0", "id": "s1", "method": "ping"}])
        continue
    if message["method"] == "subscriptions/listen":
        listen_id = message["id"]
        send({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": {
            "_meta": {"io.modelcontextprotocol/subscriptionId": listen_id}, "notifications": {}}})
        continue
    if MODE == "asks_2026" and message["method"] == "tools/list":
        for junk in ({"jsonrpc": "2.0", "id": "s1", "method": "roots/list"},
                     {"jsonrpc": "2.0", "id": None, "method": "ping"}, [1], {"level": "info"}):
            send(junk)
    if message["method"] == "ping" and listen_id is not None:
        if MODE == "listen_ended":
            send({"jsonrpc": "2.0", "id": listen_id, "result": {"resultType": "complete"}})
        else:
            send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                  "params": {"requestId": listen_id}})
    reply = answer(message)
    if isinstance(reply, dict) and "error" in reply:
        send({"jsonrpc": "2.0", "id": message["id"], **reply})
    else:
        send({"jsonrpc": "2.0", "id": message["id"], "result": reply})
if MODE == "bye":
    print("bye", flush=True)
