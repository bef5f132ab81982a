"""The HTTP floor: the least work a WSGI application can do to answer http_bench.py.

It reads the body by CONTENT_LENGTH, json.loads it, adds the two arguments, builds the
2026-07-28 result mcp_min returns for `add` (the same keys, the same compact JSON) and
json.dumps it: no headers checked, no envelope read, no schema, no error path. Served by
the same engine and configuration as mcp_min, it shows what the engine alone costs, and the
gap to mcp_min is mcp_min's.

    python3 floor_wsgi.py    # on the standard library's threading WSGI server, a free port

Run directly, it serves on wsgiref as `mcp_min.py serve --http` does: a thread per
connection, HTTP/1.1 keep-alive, TCP_NODELAY. Standard library only.
"""

import http.server
import json
import socket
import socketserver
import sys
from wsgiref import simple_server

SERVER_INFO = {"io.modelcontextprotocol/serverInfo": {"name": "floor", "version": "1"}}


def app(environ, start_response):
    length = int(environ.get("CONTENT_LENGTH") or 0)
    message = json.loads(environ["wsgi.input"].read(length))
    arguments = message["params"]["arguments"]
    total = arguments["a"] + arguments["b"]
    result = {"content": [{"type": "text", "text": str(total)}],
              "structuredContent": {"result": total}, "isError": False,
              "resultType": "complete", "_meta": SERVER_INFO}
    body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result},
                      separators=(",", ":")).encode()
    start_response("200 OK", [("Content-Type", "application/json"),
                              ("Content-Length", str(len(body)))])
    return [body]


class KeepAliveHandler(simple_server.WSGIRequestHandler):
    """wsgiref's handler serves one request and closes: this one serves requests on the
    connection until the client closes it, as mcp_min's embedded server does."""
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True    # else the body waits for the client's delayed ACK

    def handle(self):
        http.server.BaseHTTPRequestHandler.handle(self)     # handle_one_request in a loop

    def handle_one_request(self):
        self.raw_requestline = self.rfile.readline(65537)
        if not self.raw_requestline or not self.parse_request():
            self.close_connection = True
            return
        handler = simple_server.ServerHandler(self.rfile, self.wfile, self.get_stderr(),
                                              self.get_environ(), multithread=True)
        handler.http_version = "1.1"
        handler.request_handler = self
        handler.run(self.server.get_app())

    def log_request(self, code="-", size="-"):
        pass                          # no access log, as on every server benchmarked


class ThreadingWSGIServer(socketserver.ThreadingMixIn, simple_server.WSGIServer):
    daemon_threads = True
    request_queue_size = socket.SOMAXCONN


def main():
    server = ThreadingWSGIServer(("127.0.0.1", 0), KeepAliveHandler)
    server.set_app(app)
    print(f"floor: serving on http://127.0.0.1:{server.server_port}/mcp", file=sys.stderr,
          flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
