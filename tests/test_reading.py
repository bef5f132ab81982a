"""The file as its readers meet it: the map at the top of mcp_min.py names every stop of a
request on its way through the file, in call order, and every name it gives exists; no line
is wider than 88 characters.

The order is checked against the code itself: a real server, in a subprocess, serves a
handshake-era ``tools/call`` and a 2026-07-28 one over stdio, and one over HTTP (its WSGI
application, called as an engine would), while a profile hook records every function of
mcp_min.py that is entered, on every thread. Each of the map's lists must appear in that
record in its own order (other calls may come between its stops).
"""

import json
import re
import subprocess
import sys

import pytest

from conftest import ROOT

import mcp_min

SOURCE = ROOT / "mcp_min.py"
WIDTH = 88

#: The headings in the module docstring that open each list of stops.
LISTS = {
    "stdio": "That request's way through this file",
    "modern": "A 2026-07-28 request",
    "http": "Over HTTP, a POST",
}

STOP = re.compile(r"^    ([A-Za-z_][\w.]*)(?: {2,}\S| *$)")


def stops(heading):
    """The names listed under ``heading``: lines indented four spaces, a name, then two or
    more spaces and what happens there (deeper-indented lines continue it)."""
    lines = mcp_min.__doc__.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(heading))
    names, begun = [], False
    for line in lines[start + 1:]:
        match = STOP.match(line)
        if match:
            names.append(match[1])
            begun = True
        elif begun and not line.startswith("     "):   # the first line after the list
            break
    return names


def resolve(name):
    target = mcp_min
    for part in name.split("."):
        target = getattr(target, part)
    return target


@pytest.mark.parametrize("which", sorted(LISTS))
def test_every_stop_in_the_map_exists(which):
    names = stops(LISTS[which])
    assert len(names) >= 5, f"the {which} list was not found in the map"
    for name in names:
        target = resolve(name)
        assert callable(target), f"{name} is not a function or method"


# The server the trace runs: every function entered in mcp_min.py, on every thread (those
# _thread starts too), is written to a file as its qualified name.
TRACED = r"""
import _thread, json, sys, threading
sys.path.insert(0, {root!r})
import mcp_min

record = open({out!r}, "w", buffering=1)
where = mcp_min.__file__

def profile(frame, event, arg):
    if event == "call" and frame.f_code.co_filename == where:
        record.write(frame.f_code.co_qualname + "\n")

start_new_thread = _thread.start_new_thread
def traced_thread(fn, args, kwargs={{}}):
    def run(*a, **k):
        sys.setprofile(profile)
        return fn(*a, **k)
    return start_new_thread(run, args, kwargs)
_thread.start_new_thread = traced_thread
threading.setprofile(profile)

server = mcp_min.Server("map")

@server.tool
def add(a: int, b: int) -> int:
    return a + b

sys.setprofile(profile)
if sys.argv[1] == "http":
    import io
    body = sys.stdin.buffer.read()
    environ = {{"REQUEST_METHOD": "POST", "PATH_INFO": "/mcp", "HTTP_HOST": "127.0.0.1",
               "CONTENT_TYPE": "application/json", "CONTENT_LENGTH": str(len(body)),
               "HTTP_ACCEPT": "application/json, text/event-stream",
               "HTTP_MCP_PROTOCOL_VERSION": "2026-07-28", "HTTP_MCP_METHOD": "tools/call",
               "HTTP_MCP_NAME": "add", "wsgi.input": io.BytesIO(body)}}
    print(b"".join(server.wsgi(environ, lambda status, headers: None)).decode())
else:
    server.run()
"""

ENVELOPE = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}


def call(rid, meta=None):
    params = {"name": "add", "arguments": {"a": 2, "b": 3}}
    if meta:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def trace(tmp_path, mode, messages):
    out = tmp_path / f"{mode}.calls"
    script = tmp_path / "traced.py"
    script.write_text(TRACED.format(root=str(ROOT), out=str(out)))
    feed = "".join(json.dumps(message) + "\n" for message in messages)
    done = subprocess.run([sys.executable, str(script), mode], input=feed.encode(),
                          capture_output=True, timeout=60)
    assert b'"text":"5"' in done.stdout, done.stderr.decode()[-2000:]
    return out.read_text().split()


def in_order(names, record):
    """How far ``names`` get through ``record`` in order: all of them, or the first that
    does not come after the one before it."""
    position = 0
    for name in names:
        try:
            position = record.index(name, position) + 1
        except ValueError:
            return name
    return None


needs_qualname = pytest.mark.skipif(sys.version_info < (3, 11),
                                      reason="co_qualname names the methods (Python 3.11+)")


@needs_qualname
def test_the_stdio_lists_are_in_call_order(tmp_path):
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "map", "version": "1"}}}
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    handshake = trace(tmp_path, "stdio", [initialize, initialized, call(2)])
    names = stops(LISTS["stdio"])
    missing = in_order(names, handshake)
    assert missing is None, f"{missing} is not where the map puts it (stdio list)"
    modern = trace(tmp_path, "modern", [call(1, ENVELOPE)])
    missing = in_order(stops(LISTS["modern"]), modern)
    assert missing is None, f"{missing} is not where the map puts it (2026-07-28 list)"


@needs_qualname
def test_the_http_list_is_in_call_order(tmp_path):
    record = trace(tmp_path, "http", [call(1, ENVELOPE)])
    missing = in_order(stops(LISTS["http"]), record)
    assert missing is None, f"{missing} is not where the map puts it (HTTP list)"


def test_no_line_is_wider_than_88_characters():
    lines = SOURCE.read_text(encoding="utf-8").splitlines()
    wide = [f"{number}: {len(line)}" for number, line in enumerate(lines, 1)
            if len(line) > WIDTH]
    assert not wide, f"{len(wide)} lines are over {WIDTH} characters: {wide[:10]}"


def banners():
    """The section titles of mcp_min.py's banners, in file order."""
    lines = SOURCE.read_text().splitlines()
    bar = re.compile(r"^# ={20,}$")
    return [lines[i + 1][2:] for i in range(len(lines) - 2)
            if bar.match(lines[i]) and bar.match(lines[i + 2])]


def test_the_map_lists_the_sections_in_file_order_and_which_to_skip():
    """The docstring's list of sections names each banner, in order, and marks with * the
    sections whose banner says a first reading can skip them."""
    doc = mcp_min.__doc__
    listed = re.findall(r"^    (\S.*?)( \*)?(?: {2,}|$)", doc[doc.index("The sections"):],
                        re.M)
    found = []
    for title in banners():
        skip = title.endswith("(a first reading can skip this)")
        name = re.split(r":| \(", title)[0]
        found.append((name, " *" if skip else ""))
    assert len(found) >= 12
    assert found == listed
