#!/usr/bin/env python3
"""See a server's widgets in a browser: its MCP endpoint and an MCP Apps host page,
served together on one origin by mcp_min's embedded HTTP server.

    (cd tests/clients/apps && npm ci)          # once (bash tests/run.sh does it too)
    python3 tests/clients/apps/viewer.py examples/gift_server.py
    # then open the address it prints, e.g.
    # http://127.0.0.1:8765/?args={"occasion":"birthday","budget":25,"recipient":"board games"}

The page (host.html, host.mjs bundled with esbuild at start) is the official AppBridge of
@modelcontextprotocol/ext-apps beside the official MCP client: it calls the tool the query
string names (``tool``, default suggest_gifts; ``args``, JSON; ``era``, "handshake" or
"stateless") and renders the widget its _meta names. Every tools/call the server takes,
a widget's button's too, is printed on stderr. tests/test_apps_browser.py drives it.
One origin: the page needs no allowed_origins (CORS, docs/http.md) to read the responses.
"""

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

import mcp_min  # noqa: E402

TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8"}


def bundle(out):
    """host.mjs and what it imports, as one script for the page."""
    esbuild = HERE / "node_modules" / ".bin" / "esbuild"
    if not esbuild.exists():
        raise SystemExit("viewer: esbuild is not installed: run `npm ci` in "
                         "tests/clients/apps (bash tests/run.sh does)")
    subprocess.run([str(esbuild), str(HERE / "host.mjs"), "--bundle", "--format=iife",
                    "--platform=browser", "--log-level=warning", f"--outfile={out}"],
                   check=True)


def application(server, files):
    """The WSGI application: the server at its http_path, the page's files elsewhere."""
    def serve(environ, start_response):
        path = environ.get("PATH_INFO") or "/"
        if path.rstrip("/") == server.http_path.rstrip("/"):
            return server.wsgi(environ, start_response)
        file = files.get(path)
        if file is None:
            start_response("404 Not Found", [("Content-Type", "text/plain"),
                                             ("Content-Length", "10")])
            return [b"Not Found\n"]
        body = file.read_bytes()
        start_response("200 OK", [("Content-Type", TYPES[file.suffix]),
                                  ("Content-Length", str(len(body))),
                                  ("Cache-Control", "no-store")])
        return [body]
    return serve


def log_calls(server):
    """Print each tools/call the server takes, by wrapping its handler."""
    call_tool = server.handlers["tools/call"]

    def logged(ctx, params):
        shown = {"name": params.get("name"), "arguments": params.get("arguments")}
        print(f"viewer: tools/call {json.dumps(shown)}", file=sys.stderr, flush=True)
        return call_tool(ctx, params)
    server.handlers["tools/call"] = logged


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("target", help="the server: FILE.py or FILE.py:NAME")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765, help="0: any free port")
    args = parser.parse_args(argv)
    server = mcp_min.load_server(args.target)
    log_calls(server)
    with tempfile.TemporaryDirectory() as scratch:
        script = Path(scratch) / "host.js"
        bundle(script)
        files = {"/": HERE / "host.html", "/host.js": script}
        httpd = mcp_min.make_http_server(application(server, files), args.host, args.port,
                                         server.idle_timeout, server.max_connections,
                                         server.max_body_bytes)
        server.start_http()
        print(f"viewer: open http://{args.host}:{httpd.server_port}/", file=sys.stderr,
              flush=True)
        try:
            httpd.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            httpd.server_close()
            server.stop_http(httpd)


if __name__ == "__main__":
    main()
