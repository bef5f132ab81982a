#!/usr/bin/env python3
"""Drive an MCP server over Streamable HTTP with the official Python SDK client (``mcp`` 2.3.x).

    python tests/clients/http_py_client.py [OPTIONS] SCENARIO -- URL

The server is already running (e.g. ``python3 mcp_min.py serve --http 127.0.0.1:0 SCRIPT``)
and URL is its endpoint. SCENARIO, the options and the records are those of py_client.py (see
README.md beside this file), which runs the steps; only the connection differs:

* without --trace the client is built exactly as a user of the SDK builds it,
  ``Client(URL, mode=...)``: the SDK makes its own Streamable HTTP transport;
* with --trace it gets ``streamable_http_client(URL, http_client=...)`` with an HTTP client of
  ours, so that besides the JSON-RPC messages ("wire" records) every HTTP exchange is printed
  when its response headers arrive:

      {"event": "http", "method": "POST", "rpc": "tools/call", "id": 7, "status": 200,
       "request": {header: value}, "response": {header: value}}

  ("rpc" and "id": the method and id of the message POSTed, "rpc" "response" for an answer to
  the server; both null for GET and DELETE) with the MCP headers of each side (names in lower
  case): accept, content-type, mcp-session-id, mcp-protocol-version, mcp-method, mcp-name,
  last-event-id, allow.

--env and --cwd have no server to act on here and are ignored.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

import py_client  # noqa: E402  (the step runner, records and options: shared, not copied)
from mcp import Client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402
from mcp.shared._httpx_utils import create_mcp_http_client  # noqa: E402

HEADERS = ("accept", "content-type", "mcp-session-id", "mcp-protocol-version", "mcp-method",
           "mcp-name", "last-event-id", "allow")


def mcp_headers(headers: Any) -> dict[str, str]:
    return {name: headers[name] for name in HEADERS if name in headers}


async def report_exchange(response: Any) -> None:
    """An httpx response hook: the exchange, once the response's headers are in (a stream's
    body is still to come)."""
    request = response.request
    rpc = rpc_id = None
    if request.method == "POST":
        try:
            body = json.loads(request.content)
            rpc, rpc_id = body.get("method") or "response", body.get("id")
        except (ValueError, AttributeError):
            pass
    py_client.emit({"event": "http", "method": request.method, "rpc": rpc, "id": rpc_id,
                    "status": response.status_code, "request": mcp_headers(request.headers),
                    "response": mcp_headers(response.headers)})


@asynccontextmanager
async def traced_http(url: str):
    http = create_mcp_http_client()
    http.event_hooks = {"request": [], "response": [report_exchange]}
    async with http, streamable_http_client(url, http_client=http) as (read_stream, write_stream):
        yield py_client._TappedReceive(read_stream), py_client._TappedSend(write_stream)


class HttpDriver(py_client.Driver):
    def build_client(self) -> Client:
        # py_client's client, with every option the command line set, aimed at the URL
        # (config.command: what follows "--") instead of a server process.
        url = self.config.command
        return dataclasses.replace(super().build_client(),
                                   server=traced_http(url) if self.config.trace else url)


if __name__ == "__main__":
    py_client.Driver = HttpDriver             # py_client.main builds the driver by this name
    sys.exit(anyio.run(py_client.main, sys.argv[1:]))
