"""The file as its readers meet it: the map at the top of mcp_min.py names every stop of a
request on its way through the file, in call order, and every name it gives exists; no line
is wider than 88 characters.

The map is checked against the code itself: a real server, in a subprocess, serves a
handshake-era ``tools/call`` and a 2026-07-28 one over stdio, and one over HTTP (its WSGI
application, called as an engine would), while a profile hook records every function of
mcp_min.py that is entered, on every thread, and when. Each of the map's lists must name
every function the traced request entered, none it did not, and on each thread in the
order that thread entered them.
"""

import json
import re
import subprocess
import sys
import time

import pytest

from conftest import ROOT

import mcp_min

SOURCE = ROOT / "mcp_min.py"
WIDTH = 88

#: The heading of the map in the module docstring, and the column of each way a request
#: takes in it: over stdio in the handshake era, over stdio in 2026-07-28, over HTTP.
HEADING = "That request's way through this file"
COLUMNS = {"stdio": 0, "modern": 1, "http": 2}

STOP = re.compile(r"^    ([H ]) ([S ]) ([P ])  ([A-Za-z_][\w.]*)(?: {2,}\S| *$)")


def stops(which):
    """The names the map marks in the column of ``which``, in the map's order: lines
    indented four spaces, the three columns' marks, two spaces, a name, then two or
    more spaces and what happens there (deeper-indented lines continue it)."""
    lines = mcp_min.__doc__.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(HEADING))
    names, begun = [], False
    for line in lines[start + 1:]:
        match = STOP.match(line)
        if match:
            begun = True
            if match[COLUMNS[which] + 1] != " ":
                names.append(match[4])
        elif begun and line.strip() and not line.startswith("     "):
            break
    return names


def resolve(name):
    target = mcp_min
    for part in name.split("."):
        target = getattr(target, part)
    return target


@pytest.mark.parametrize("which", sorted(COLUMNS))
def test_every_stop_in_the_map_exists(which):
    names = stops(which)
    assert len(names) >= 5, f"the {which} list was not found in the map"
    for name in names:
        target = resolve(name)
        assert callable(target), f"{name} is not a function or method"


# The server the trace runs: every function entered in mcp_min.py, on every thread (those
# _thread starts too), is recorded with the time and the thread; the record is written
# out as JSON when the server is done.
TRACED = r"""
import _thread, atexit, io, json, os, sys, threading, time
sys.path.insert(0, {root!r})
import mcp_min

events = []
where = mcp_min.__file__

def profile(frame, event, arg):
    if event == "call" and frame.f_code.co_filename == where:
        events.append((time.monotonic(), _thread.get_ident(), frame.f_code.co_qualname))

start_new_thread = _thread.start_new_thread
def traced_thread(fn, args, kwargs={{}}):
    def run(*a, **k):
        sys.setprofile(profile)
        return fn(*a, **k)
    return start_new_thread(run, args, kwargs)
_thread.start_new_thread = traced_thread
threading.setprofile(profile)

def dump():
    with open({out!r}, "w") as f:
        json.dump(events, f)
atexit.register(dump)

server = mcp_min.Server("map")

@server.tool
def add(a: int, b: int) -> int:
    return a + b

sys.setprofile(profile)
if sys.argv[1] == "http":
    body = sys.stdin.buffer.read()
    def environ():
        return {{"REQUEST_METHOD": "POST", "PATH_INFO": "/mcp", "HTTP_HOST": "127.0.0.1",
                "CONTENT_TYPE": "application/json", "CONTENT_LENGTH": str(len(body)),
                "HTTP_ACCEPT": "application/json, text/event-stream",
                "HTTP_MCP_PROTOCOL_VERSION": "2026-07-28", "HTTP_MCP_METHOD": "tools/call",
                "HTTP_MCP_NAME": "add", "wsgi.input": io.BytesIO(body)}}
    def post():
        return b"".join(server.wsgi(environ(), lambda status, headers: None))
    # the first calls start what a server starts once: the endpoint, the pool
    post(); post()
    time.sleep(0.2)
    events.append((time.monotonic(), 0, "<begin>"))
    print(post().decode(), flush=True)
    events.append((time.monotonic(), 0, "<end>"))
    time.sleep(0.2)
    dump()
    os._exit(0)
server.run()
"""

ENVELOPE = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}


def call(rid, meta=None):
    params = {"name": "add", "arguments": {"a": 2, "b": 3}}
    if meta:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def traced(tmp_path, mode, opening=(), meta=None):
    """The functions one tools/call enters, in the order each first does, on each
    thread: {thread: [qualified names]}. Over stdio the server gets ``opening``, a
    first call (one-time work is not counted), then the call traced; over HTTP its
    WSGI application is called three times, the last one traced."""
    out = tmp_path / f"{mode}.json"
    script = tmp_path / "traced.py"
    script.write_text(TRACED.format(root=str(ROOT), out=str(out)))
    server = subprocess.Popen([sys.executable, str(script), mode], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        if mode == "http":
            output, errors = server.communicate(json.dumps(call(1, meta)).encode(), 60)
            assert b'"text":"5"' in output, errors.decode()[-2000:]
            events = json.loads(out.read_text())
            begin = next(t for t, _, name in events if name == "<begin>")
            end = next(t for t, _, name in events if name == "<end>")
        else:
            for message in (*opening, call(1, meta)):
                server.stdin.write((json.dumps(message) + "\n").encode())
                server.stdin.flush()
                if "id" in message:
                    assert b'"result"' in server.stdout.readline()
            time.sleep(0.3)
            begin = time.monotonic()
            server.stdin.write((json.dumps(call(2, meta)) + "\n").encode())
            server.stdin.flush()
            assert b'"text":"5"' in server.stdout.readline()
            end = time.monotonic()
            time.sleep(0.3)
            server.stdin.close()
            assert server.wait(30) == 0, server.stderr.read().decode()[-2000:]
            events = json.loads(out.read_text())
    finally:
        if server.poll() is None:
            server.kill()
        server.wait()
        for pipe in (server.stdin, server.stdout, server.stderr):
            pipe.close()
    threads = {}
    for when, thread, name in events:
        # a closure (the validator's checks) stands for the function that makes it
        name = name.split(".<locals>")[0]
        if begin <= when <= end and not name.startswith("<"):
            path = threads.setdefault(thread, [])
            if name not in path:
                path.append(name)
    return threads


def check_the_map(which, threads):
    """The map's list of ``which`` names every function the request entered, and on
    each thread in the order that thread entered them."""
    names = stops(which)
    entered = [name for path in threads.values() for name in path]
    assert sorted(set(names)) == sorted(set(entered)), (
        f"the {which} list leaves out {sorted(set(entered) - set(names))}, and names "
        f"{sorted(set(names) - set(entered))} that the request did not enter")
    for path in threads.values():
        listed = [name for name in names if name in path]
        assert listed == path, f"the {which} list's order is not the code's: {path}"


INITIALIZE = {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "map", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}

needs_qualname = pytest.mark.skipif(sys.version_info < (3, 11),
                                      reason="co_qualname names the methods (Python 3.11+)")


@needs_qualname
def test_the_stdio_lists_name_every_stop_in_call_order(tmp_path):
    check_the_map("stdio", traced(tmp_path, "stdio", (INITIALIZE, INITIALIZED)))
    check_the_map("modern", traced(tmp_path, "modern", meta=ENVELOPE))


@needs_qualname
def test_the_http_list_names_every_stop_in_call_order(tmp_path):
    check_the_map("http", traced(tmp_path, "http", meta=ENVELOPE))


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
