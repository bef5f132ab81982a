"""Named attacks and faults, one test each (the promise: whatever arrives, the process stays up,
stdout carries only valid JSON-RPC lines, every request gets exactly one reply with its own id,
no notification is answered, and memory stays bounded).

Hostile input: 100,000 nested '[' (and '{'), a 200 MiB line, a last line without its newline,
huge numbers, an id reused while its first request runs, over-long lines whose id cannot be
read back. Misbehaving tools (tests/servers/faults.py): results JSON cannot encode, SystemExit,
KeyboardInterrupt, RecursionError, os.write to fd 1, children that print, a tool that never
returns. Load: 10,000 pipelined calls, 1,000 calls cancelled at random moments, a flood of slow
calls far past the pool and its queue. Writing: multi-MiB replies with PYTHONUNBUFFERED=1 while
signals interrupt the writer and writes return short. Shutdown: EOF, SIGTERM and a closed stdout
in the middle of calls.

Memory figures come from /proc/PID/status (VmHWM, the peak resident set). Tests marked slow
run only with MCP_MIN_SLOW=1."""

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

import pytest

import mcp_min
from conftest import INIT_PARAMS, SERVERS

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals, pipes and /proc")

SLOW = os.environ.get("MCP_MIN_SLOW") == "1"
slow = pytest.mark.skipif(not SLOW, reason="long stress run: set MCP_MIN_SLOW=1")
HAS_PROC = os.path.exists("/proc/self/status")
MIB = 1 << 20


# ============================================================================================
# Helpers
# ============================================================================================

def call(request_id, name, arguments=None):
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments or {}}}


def ping(request_id):
    return {"jsonrpc": "2.0", "id": request_id, "method": "ping"}


def cancel(request_id):
    return {"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": request_id, "reason": "test"}}


def line(message):
    return (json.dumps(message, separators=(",", ":")) + "\n").encode()


def text_of(reply):
    assert "result" in reply, reply
    return reply["result"]["content"][0]["text"]


def tool_error_text(reply):
    assert "result" in reply and reply["result"]["isError"] is True, reply
    return reply["result"]["content"][0]["text"]


def assert_id_less_error(reply, code):
    assert isinstance(reply, dict) and "id" not in reply and "result" not in reply, reply
    assert reply["error"]["code"] == code, reply


def memory_kib(pid, field="VmHWM"):
    with open(f"/proc/{pid}/status") as f:
        for row in f:
            if row.startswith(field + ":"):
                return int(row.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def faults(spawn, version=mcp_min.LATEST_PROTOCOL_VERSION, **settings):
    """The faults server, initialized; settings as FAULTS_<NAME>=value."""
    env = {f"FAULTS_{k.upper()}": str(v) for k, v in settings.items()}
    wire = spawn("faults.py", env=env)
    wire.initialize(version)
    return wire


def send_in_background(wire, data):
    """Write ``data`` from a thread: the server's replies must be read meanwhile, or both
    sides block on full pipes."""
    errors = []

    def run():
        try:
            wire.send(data)
        except (BrokenPipeError, OSError) as e:      # reported by the test's own asserts
            errors.append(e)
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, errors


def settled_stderr(wire, timeout=5):
    """The server's stderr once the process has exited and the pipe has gone quiet."""
    wire.wait(timeout)
    last, stable_since = None, time.monotonic()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        now = wire.stderr
        if now != last:
            last, stable_since = now, time.monotonic()
        elif time.monotonic() - stable_since > 0.15:
            break
        time.sleep(0.02)
    return last


def assert_no_traceback(stderr):
    for needle in ("Traceback", "Exception ignored", "BrokenPipeError", "Fatal Python error"):
        assert needle not in stderr, f"{needle!r} on stderr:\n{stderr[-3000:]}"


def assert_alive(wire, tag="alive"):
    assert wire.proc.poll() is None, f"the server died:\n{wire.stderr[-3000:]}"
    assert wire.request("ping", request_id=f"{tag}-{time.monotonic_ns()}")["result"] == {}


def start_raw(script="faults.py", env=None):
    """A server on raw pipes (no reader thread): for tests that read slowly or close stdout."""
    full_env = dict(os.environ, **(env or {}))
    proc = subprocess.Popen([sys.executable, str(SERVERS / script)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=full_env)
    proc.stdin.write(line({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT_PARAMS}))
    proc.stdin.write(line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 0
    return proc


def cleanup(proc):
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        try:
            stream.close()
        except OSError:
            pass


# ============================================================================================
# Hostile input
# ============================================================================================

@pytest.mark.parametrize("version", [mcp_min.LATEST_PROTOCOL_VERSION, "2025-03-26"])
@pytest.mark.parametrize("payload", [
    b"[" * 100_000,
    b"[" * 100_000 + b"]" * 100_000,                       # valid JSON, too deep to parse
    b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
    b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":' + b"[" * 100_000 + b"]" * 100_000 + b"}}",
], ids=["open-brackets", "balanced-brackets", "nested-objects", "inside-a-request"])
def test_100k_nested_brackets_is_a_parse_error_not_a_crash(spawn, version, payload):
    wire = spawn("faults.py")
    wire.initialize(version)
    wire.send(payload + b"\n")
    assert_id_less_error(wire.recv(), -32700)
    assert_alive(wire)
    wire.close_stdin()
    assert wire.wait(10) == 0
    stderr = settled_stderr(wire)
    assert "RecursionError" not in stderr and "Traceback" not in stderr, stderr[-2000:]


def test_deep_but_parseable_nesting_is_answered(spawn):
    """Nesting the parser accepts (a few hundred levels) reaches the handlers, whose own
    recursion (validation messages, encoding) must not cost the reply."""
    wire = faults(spawn)
    for depth in (100, 400, 800):
        deep = "[" * depth + "]" * depth
        wire.send(b'{"jsonrpc":"2.0","id":"d%d","method":"tools/call","params":{"name":"echo",'
                  b'"arguments":{"text":%s}}}\n' % (depth, deep.encode()))
        wire.send(b'{"jsonrpc":"2.0","id":"p%d","method":"ping","params":{"x":%s}}\n' % (depth, deep.encode()))
        replies = {wire.recv()["id"], wire.recv()["id"]}
        assert replies == {f"d{depth}", f"p{depth}"}, replies
    assert_alive(wire)


@pytest.mark.skipif(not HAS_PROC, reason="needs /proc (Linux)")
@pytest.mark.parametrize("size_mib", [200, pytest.param(1024, marks=slow)])
def test_200_mib_line_gets_an_error_reply_with_bounded_memory(spawn, size_mib):
    """A 200 MiB request (the default 32 MiB cap): an error reply carrying the request's id, the
    next line is served, and the server never holds the whole line."""
    wire = faults(spawn)
    start = time.monotonic()
    head = b'{"jsonrpc":"2.0","id":"huge","method":"tools/call","params":{"name":"echo","arguments":{"text":"'
    chunk = b"x" * MIB

    def write():
        wire.send(head)
        for _ in range(size_mib):
            wire.proc.stdin.write(chunk)
        wire.send(b'"}}}\n' + line(ping("after")))
    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    reply = wire.recv(timeout=120)
    assert reply["id"] == "huge" and reply["error"]["code"] == -32600, reply
    assert "too large" in reply["error"]["message"].lower(), reply
    assert wire.recv(timeout=30) == {"jsonrpc": "2.0", "id": "after", "result": {}}
    thread.join(30)
    elapsed = time.monotonic() - start
    peak = memory_kib(wire.proc.pid)
    print(f"\n[figure] {size_mib} MiB line: peak RSS {peak / 1024:.1f} MiB, {elapsed:.2f} s")
    assert peak < 128 * 1024, f"peak RSS {peak} KiB while skipping a {size_mib} MiB line"
    wire.expect_silence(0.2)
    assert_alive(wire)


@pytest.mark.parametrize("hostile", [
    pytest.param(b'{"jsonrpc":"2.0","id":"\xff\xfe",' + b'"method":"ping","params":{"p":"' + b"q" * 3000 + b'"}}',
                 id="leading-id-invalid-utf8"),
    pytest.param(b'{"jsonrpc":"2.0","id":"a\tb",' + b'"method":"ping","params":{"p":"' + b"q" * 3000 + b'"}}',
                 id="leading-id-raw-control-char"),
    pytest.param(b'{"jsonrpc":"2.0","id":007,' + b'"method":"ping","params":{"p":"' + b"q" * 3000 + b'"}}',
                 id="leading-id-leading-zeros"),
    pytest.param(b'{"method":"ping","params":{"p":"' + b"q" * 3000 + b'"},"id":"\xc0\xaf"}',
                 id="trailing-id-overlong-utf8"),
    pytest.param(b'{"method":"ping","params":{"p":"' + b"q" * 3000 + b'"},"id":-0012}',
                 id="trailing-id-leading-zeros"),
])
def test_over_long_line_with_an_unreadable_id_is_refused_without_crashing(spawn, hostile):
    """The id-recovery of an over-long line meets bytes that look like an id but are not JSON
    (invalid UTF-8, a raw control character, leading zeros): no id, and no crash. (These
    killed the server until LineTooLong.request_id() caught the decoding error.)"""
    wire = spawn("faults.py", env={"FAULTS_MAX_LINE": "1000"})
    wire.initialize()
    wire.send(hostile + b"\n" + line(ping("next")))
    reply = wire.recv()
    assert reply["error"]["code"] == -32600 and "id" not in reply, reply
    assert wire.recv() == {"jsonrpc": "2.0", "id": "next", "result": {}}


@pytest.mark.parametrize("last_line, expect", [
    (line(ping("last"))[:-1], {"id": "last", "result": {}}),
    (line(call("last", "echo", {"text": "eof"}))[:-1], {"id": "last", "text": "eof"}),
    (line(call("last", "sleep", {"ms": 200}))[:-1], {"id": "last", "text": "slept"}),
    (line(ping("last"))[:-1] + b"\r", {"id": "last", "result": {}}),
    (b'{"jsonrpc":"2.0","id":"last","meth', {"code": -32700}),
], ids=["inline", "worker", "slow-worker", "trailing-cr", "truncated-json"])
def test_last_line_without_a_newline_is_still_handled_at_eof(spawn, last_line, expect):
    wire = faults(spawn)
    wire.send(last_line)
    wire.close_stdin()
    messages = wire.rest_of_stdout()
    assert wire.wait(10) == 0
    assert len(messages) == 1, messages
    reply = messages[0]
    if "code" in expect:
        assert_id_less_error(reply, expect["code"])
    elif "text" in expect:
        assert reply["id"] == expect["id"] and text_of(reply) == expect["text"], reply
    else:
        assert reply == {"jsonrpc": "2.0", **expect}
    assert_no_traceback(settled_stderr(wire))


def test_huge_and_odd_numbers(spawn):
    """Ids at and past 64 bits come back exactly; ints past Python's str() limit are a parse
    error; a result too big to print is an isError result; float and 1e400 ids are refused."""
    wire = faults(spawn)
    for rid in (2 ** 63, -(2 ** 63) - 1, 10 ** 30, -1, 0, int("9" * 4300)):
        assert wire.request("ping", request_id=rid) == {"jsonrpc": "2.0", "id": rid, "result": {}}
    nines = "9" * 4300
    wire.send(b'{"jsonrpc":"2.0","id":"sum","method":"tools/call","params":{"name":"add",'
              b'"arguments":{"a":%s,"b":%s}}}\n' % (nines.encode(), nines.encode()))
    assert "(4300" in tool_error_text(wire.response("sum"))
    wire.send(b'{"jsonrpc":"2.0","id":' + b"1" * 5000 + b',"method":"ping"}\n')
    assert_id_less_error(wire.recv(), -32700)
    for raw_id in (b"1.0", b"1e400", b"-0.0", b"true", b"null"):
        wire.send(b'{"jsonrpc":"2.0","id":' + raw_id + b',"method":"ping"}\n')
        assert_id_less_error(wire.recv(), -32600)
    for constant in (b"NaN", b"Infinity", b"-Infinity"):
        wire.send(b'{"jsonrpc":"2.0","id":"c","method":"ping","params":{"x":' + constant + b"}}\n")
        assert_id_less_error(wire.recv(), -32700)
    wire.expect_silence(0.2)
    assert_alive(wire)


def test_id_reused_while_the_first_request_runs(spawn):
    """The second request with a running id is refused at once with -32600 and that id; the
    first still gets its own result; ids of other types are other requests; once the first is
    answered the id is free again. No reply goes to the wrong request."""
    wire = faults(spawn)
    wire.send(call(7, "block", {"ms": 400}))
    wire.send(call(7, "echo", {"text": "second"}))
    wire.send(call("7", "echo", {"text": "string seven"}))
    first = wire.recv()
    assert first["id"] == 7 and first["error"]["code"] == -32600, first
    assert "in use" in first["error"]["message"] or "already" in first["error"]["message"], first
    second = wire.recv()
    assert second["id"] == "7" and text_of(second) == "string seven", second
    last = wire.recv(timeout=5)
    assert last["id"] == 7 and text_of(last) == "woke", last
    assert text_of(reuse_when_free(wire, 7, "free")) == "free"
    # the same with a cancellable call that gets cancelled: the id is free again once it stops
    wire.send(call("c", "sleep", {"ms": 5000}))
    wire.send(call("c", "echo", {"text": "dup"}))
    assert wire.recv()["error"]["code"] == -32600
    wire.send(cancel("c"))
    assert text_of(reuse_when_free(wire, "c", "reused")) == "reused"
    wire.expect_silence(0.3)


def reuse_when_free(wire, rid, text, attempts=100):
    """Call echo with ``rid`` until it is accepted (-32600 "in use" meanwhile): once a request is
    answered or cancelled, its id becomes free within moments."""
    for _ in range(attempts):
        reply = wire.request("tools/call", {"name": "echo", "arguments": {"text": text}}, request_id=rid)
        if "result" in reply:
            return reply
        assert reply["error"]["code"] == -32600 and "in use" in reply["error"]["message"], reply
        time.sleep(0.01)
    return reply


def test_id_is_free_as_soon_as_its_reply_has_arrived(spawn):
    """README: an id is refused only "while the first request with it is still running". Once
    the client holds the reply, the request is over: reusing the id at once must work. A
    CPU-bound tool runs meanwhile (it keeps the GIL busy, so the worker that wrote a reply
    waits a moment before it can mark the id free: freed only then, 235 of these 800 reuses
    were refused in one run)."""
    wire = faults(spawn)
    wire.send(call("cpu", "spin", {"seconds": 60}))
    refused = 0
    for i in range(400):
        for text in ("first", "again"):
            reply = wire.request("tools/call", {"name": "echo", "arguments": {"text": text}},
                                 request_id=7)
            if "error" in reply:
                assert "in use" in reply["error"]["message"], reply
                refused += 1
            else:
                assert text_of(reply) == text
    assert refused == 0, f"{refused} of 800 immediate reuses refused as 'in use'"


# ============================================================================================
# Misbehaving tools
# ============================================================================================

@pytest.mark.parametrize("kind, needle", [
    ("object", "result: a value of type"), ("nan", "result: nan has no JSON form"),
    ("inf", "inf has no JSON form"), ("dict_nan", "result.x: nan has no JSON form"),
    ("list_object", "result[1]: a value of type"), ("huge_int", "(4300"),
])
def test_unencodable_tool_results_become_is_error_results(spawn, kind, needle):
    wire = faults(spawn)
    reply = wire.request("tools/call", {"name": "unencodable", "arguments": {"kind": kind}})
    assert needle in tool_error_text(reply)
    assert_alive(wire)


def test_unencodable_value_through_a_declared_return_type(spawn):
    wire = faults(spawn)
    reply = wire.request("tools/call", {"name": "unencodable_float"})
    assert "result: expected number, got NaN (JSON has no such number)" in tool_error_text(reply)
    assert_alive(wire)


def test_unencodable_raw_handler_result_and_error_data(spawn):
    wire = faults(spawn)
    reply = wire.request("faults/unencodable")
    assert reply["error"]["code"] == -32603 and "serializable" in reply["error"]["message"], reply
    reply = wire.request("faults/bad_error_data")
    assert reply["error"] == {"code": -32603, "message": "a handler error whose data cannot be encoded"}
    assert_alive(wire)


@pytest.mark.parametrize("value", [None, [1, 2], "text", 3])
def test_raw_handler_result_that_is_not_an_object_is_an_internal_error(spawn, value):
    """A response's result is a JSON object: a handler returning anything else gets -32603
    naming what it returned, in both eras, never {"result": null} on the wire."""
    wire = faults(spawn)
    envelope = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}}
    for params in ({"value": value}, {"value": value, "_meta": envelope}):
        reply = wire.request("faults/not_an_object", params)
        assert reply["error"]["code"] == -32603, reply
        assert f"faults/not_an_object returned {json.dumps(value)}" in reply["error"]["message"]
    assert_alive(wire)


@pytest.mark.parametrize("how", [
    ("die", "exit", "SystemExit"), ("die", "exit0", "SystemExit"),
    ("die", "interrupt", "KeyboardInterrupt"), ("die", "generator_exit", "GeneratorExit"),
    ("die", "recursion", "RecursionError"),
    ("faults/exit", None, "SystemExit"), ("faults/interrupt", None, "KeyboardInterrupt"),
], ids=lambda h: f"{h[0]}-{h[1]}")
def test_system_exit_keyboard_interrupt_and_recursion_in_handlers_do_not_stop_the_server(spawn, how):
    name, kind, exc = how
    wire = faults(spawn)
    for attempt in range(3):
        if kind is None:
            reply = wire.request(name)
            assert reply["error"]["code"] == -32603 and exc in reply["error"]["message"], reply
        else:
            assert exc in tool_error_text(wire.request("tools/call", {"name": name, "arguments": {"kind": kind}}))
        assert_alive(wire, f"after-{attempt}")
    assert text_of(wire.request("tools/call", {"name": "echo", "arguments": {"text": "ok"}})) == "ok"
    wire.close_stdin()
    assert wire.wait(10) == 0


def test_os_write_to_fd1_never_reaches_the_wire(spawn):
    """200 KB written with os.write(1, ...) (more than a pipe holds), print() and
    sys.__stdout__: all of it on stderr, none on stdout."""
    wire = faults(spawn)
    for _ in range(3):
        assert text_of(wire.request("tools/call", {"name": "write_fd1", "arguments": {"size": 200_000}})) == "wrote"
        assert_alive(wire)
    wire.close_stdin()
    assert wire.rest_of_stdout() == []
    assert wire.wait(10) == 0
    stderr = settled_stderr(wire)
    assert stderr.count("fd1-noise:") == 3 and stderr.count("print-noise") == 3, stderr[-500:]
    assert stderr.count("dunder-stdout-noise") == 3


def test_child_processes_that_print_never_reach_the_wire(spawn):
    """Children print while the tool runs and (one of them) after it has returned."""
    wire = faults(spawn)
    reply = wire.request("tools/call", {"name": "child_prints", "arguments": {"linger_ms": 400}})
    assert text_of(reply) == "children started"
    deadline = time.monotonic() + 0.6              # ping while the late child keeps printing
    while time.monotonic() < deadline:
        assert_alive(wire)
        time.sleep(0.02)
    wire.close_stdin()
    assert wire.rest_of_stdout() == []
    assert wire.wait(10) == 0
    stderr = settled_stderr(wire)
    assert "child-noise" in stderr and "shell-noise" in stderr and "late-child-noise 19" in stderr


def test_a_tool_that_never_returns(spawn):
    """It holds one worker; the reader still answers at once; cancelling it sends no reply; at
    end of input the server waits grace_period and exits 0 without it."""
    wire = faults(spawn, grace=0.5)
    wire.send(call("forever", "hang"))
    wire.send(call("forever-2", "hang"))
    start = time.monotonic()
    assert_alive(wire)
    assert text_of(wire.request("tools/call", {"name": "echo", "arguments": {"text": "meanwhile"}})) == "meanwhile"
    assert time.monotonic() - start < 3.0
    wire.send(cancel("forever"))
    assert_alive(wire)
    wire.close_stdin()
    start = time.monotonic()
    assert wire.rest_of_stdout() == []          # neither hung call is ever answered
    assert wire.wait(10) == 0
    assert time.monotonic() - start < 4.5
    stderr = settled_stderr(wire)
    assert "unfinished" in stderr and "Traceback" not in stderr, stderr[-2000:]


# ============================================================================================
# Load
# ============================================================================================

def pipelined(spawn, count, **settings):
    wire = faults(spawn, **settings)
    data = b"".join(line(call(i, "echo", {"text": f"n{i}"})) for i in range(count))
    start = time.monotonic()
    thread, errors = send_in_background(wire, data)
    seen, busy = {}, 0
    for _ in range(count):
        reply = wire.recv(timeout=60)
        rid = reply["id"]
        seen[rid] = seen.get(rid, 0) + 1
        if "error" in reply:
            assert reply["error"]["code"] == -32000, reply
            busy += 1
        else:
            assert text_of(reply) == f"n{rid}", reply
    elapsed = time.monotonic() - start
    thread.join(10)
    assert not errors
    assert set(seen) == set(range(count)) and set(seen.values()) == {1}
    wire.expect_silence(0.3)
    assert_alive(wire)
    return elapsed, busy, wire


def test_10000_pipelined_calls_all_answered_exactly_once(spawn):
    elapsed, busy, wire = pipelined(spawn, 10_000)
    peak = f", peak RSS {memory_kib(wire.proc.pid) / 1024:.1f} MiB" if HAS_PROC else ""
    print(f"\n[figure] 10,000 pipelined calls: {elapsed:.2f} s, {busy} busy{peak}")
    assert busy == 0, f"{busy} of 10,000 calls refused with the default queue of 10,000"
    assert elapsed < 60


@slow
def test_100000_pipelined_calls_all_answered_exactly_once(spawn):
    elapsed, busy, wire = pipelined(spawn, 100_000)
    print(f"\n[figure] 100,000 pipelined calls: {elapsed:.2f} s, {busy} busy")


@pytest.mark.parametrize("count, seed", [(1000, 1), pytest.param(10_000, 2, marks=slow)])
def test_calls_cancelled_at_random_moments(spawn, count, seed):
    """``count`` cancellable calls, most cancelled at a random moment: before they are sent,
    right after, a few lines later, or much later. Every call gets at most one reply; calls never
    cancelled (or cancelled before they were sent) get exactly one; long calls cancelled early get
    none; the pool is not left clogged and every id can be used again."""
    rng = random.Random(seed)
    wire = faults(spawn)
    ops, due = [], []                         # due: (position, id) of cancels to send later
    must, may, never = set(), set(), set()
    for i in range(count):
        rid = f"c{i}"
        long_call = rng.random() < 0.05
        ms = 3000 if long_call else rng.choice([0, 0, 1, 2, 5, 10, 20])
        moment = rng.random()
        if moment < 0.1:                      # cancelled before it exists: ignored
            ops.append(line(cancel(rid)))
            must.add(rid)
        elif moment < 0.3 and not long_call:  # never cancelled
            must.add(rid)
        else:
            (never if long_call else may).add(rid)
            due.append((len(ops) + rng.choice([0, 0, 1, 3, 10, 50]), rid))
        ops.append(line(call(rid, "sleep", {"ms": ms})))
        for entry in [d for d in due if d[0] <= len(ops)]:
            due.remove(entry)
            ops.append(line(cancel(entry[1])))
    ops += [line(cancel(rid)) for _, rid in due]

    def write():
        for start in range(0, len(ops), 37):
            wire.send(b"".join(ops[start:start + 37]))
            if rng.random() < 0.3:
                time.sleep(rng.random() * 0.003)
    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    seen = {}
    began = time.monotonic()
    while not must <= set(seen):
        reply = wire.recv(timeout=30)
        seen[reply["id"]] = seen.get(reply["id"], 0) + 1
        assert text_of(reply) == "slept", reply
    thread.join(30)
    # a long call whose cancel failed would answer ~3 s after it started: wait that long
    deadline = began + 3.5
    while time.monotonic() < deadline:
        try:
            reply = wire.recv(timeout=max(0.01, deadline - time.monotonic()))
        except AssertionError:
            break
        seen[reply["id"]] = seen.get(reply["id"], 0) + 1
    assert set(seen) <= must | may | never
    assert not set(seen) & never, sorted(set(seen) & never)
    assert all(n == 1 for n in seen.values()), {k: n for k, n in seen.items() if n > 1}
    cancelled_in_time = len(may - set(seen))
    print(f"\n[figure] {count} calls, {len(may) + len(never)} cancelled: "
          f"{cancelled_in_time + len(never)} never answered, {len(may) - cancelled_in_time} answered first")
    # nothing clogged: 200 fresh calls reusing cancelled ids all get exactly one result
    reuse = sorted(may | never)[:200]
    wire.send(b"".join(line(call(rid, "echo", {"text": rid})) for rid in reuse))
    again = [wire.recv(timeout=10) for _ in reuse]
    assert sorted(r["id"] for r in again) == reuse and all(text_of(r) == r["id"] for r in again)
    wire.expect_silence(0.3)
    assert_alive(wire)


@pytest.mark.skipif(not HAS_PROC, reason="needs /proc (Linux)")
@pytest.mark.parametrize("flood", [20_000, pytest.param(200_000, marks=slow)])
def test_flood_past_the_pool_and_queue_is_refused_at_once_with_bounded_memory(spawn, flood):
    """4 workers, a queue of 16: of ``flood`` slow calls 20 are accepted and the rest refused
    at once with -32000 "Server busy" and their own ids (never dropped, never buffered); a
    ping and a cancellation sent behind the flood take effect at once; memory stays flat."""
    wire = faults(spawn, workers=4, queue=16)
    base = memory_kib(wire.proc.pid, "VmRSS")
    data = b"".join(line(call(i, "sleep", {"ms": 20_000})) for i in range(flood))
    start = time.monotonic()
    thread, errors = send_in_background(wire, data + line(ping("behind")) + line(cancel(0)))
    refused, accepted, ping_at = set(), set(range(flood)), None
    while len(refused) < flood - 20 or ping_at is None:
        reply = wire.recv(timeout=30)
        if reply["id"] == "behind":
            ping_at = time.monotonic()
            continue
        assert reply["error"]["code"] == -32000 and "busy" in reply["error"]["message"].lower(), reply
        assert reply["id"] not in refused
        refused.add(reply["id"])
    refused_in = time.monotonic() - start
    thread.join(10)
    assert not errors
    accepted -= refused
    assert len(accepted) == 20 and 0 in accepted, sorted(accepted)[:30]
    # the queue is still full of 20-second sleeps, yet a ping is answered at once...
    t = time.monotonic()
    assert_alive(wire)
    ping_latency = time.monotonic() - t
    assert ping_latency < 1.0
    # ...and cancelling the rest frees the pool within moments (no replies for them)
    wire.send(b"".join(line(cancel(i)) for i in sorted(accepted)))
    for attempt in range(200):
        reply = wire.request("tools/call", {"name": "echo", "arguments": {"text": "room"}})
        if "result" in reply:
            break
        time.sleep(0.01)
    assert text_of(reply) == "room"
    wire.expect_silence(0.3)
    peak = memory_kib(wire.proc.pid)
    print(f"\n[figure] flood of {flood} slow calls: {len(refused)} refused in {refused_in:.2f} s, "
          f"ping behind the flood after {ping_at - start:.2f} s, ping latency {ping_latency * 1000:.1f} ms, "
          f"RSS {base / 1024:.1f} MiB before, peak {peak / 1024:.1f} MiB")
    assert peak - base < 40 * 1024, f"RSS grew from {base} KiB to a peak of {peak} KiB"


# ============================================================================================
# Writing big replies under signals and short writes
# ============================================================================================

def read_slowly(proc, want_lines, pause=0.001, chunk=65536, timeout=60):
    """Read stdout in small pieces with pauses (so the server's writes block on a full pipe)."""
    fd = proc.stdout.fileno()
    buf = bytearray()
    deadline = time.monotonic() + timeout
    while buf.count(b"\n") < want_lines:
        assert time.monotonic() < deadline, f"only {len(buf)} bytes in {timeout} s"
        piece = os.read(fd, chunk)
        assert piece, f"stdout closed after {len(buf)} bytes"
        buf += piece
        time.sleep(pause)
    return bytes(buf)


@pytest.mark.parametrize("env, tool, args", [
    ({}, "big_pestered", {"size": 20 * MIB, "seconds": 2.0}),
    ({"FAULTS_WRITE_CAP": "65536"}, "big", {"size": 8 * MIB}),
    ({"FAULTS_WRITE_CAP": "4096"}, "big_pestered", {"size": 4 * MIB, "seconds": 2.0}),
], ids=["signals-20MiB", "short-writes-8MiB", "both-4MiB"])
def test_multi_mib_reply_is_written_whole_despite_signals_and_short_writes(env, tool, args):
    """PYTHONUNBUFFERED=1; the client reads slowly, so the writer blocks on a full pipe while
    SIGWINCH keeps interrupting it (a write cut short returns the bytes written so far) or
    os.write takes only a random few bytes each time. The reply must arrive whole and valid."""
    proc = start_raw(env=dict(env, PYTHONUNBUFFERED="1"))
    try:
        proc.stdin.write(line(call("big", tool, args)))
        proc.stdin.flush()
        out = read_slowly(proc, 1)
        assert out.endswith(b"\n") and out.count(b"\n") == 1, len(out)
        reply = json.loads(out.decode("utf-8"))
        assert reply["id"] == "big"
        proc.stdin.write(line(call("stats", "write_stats")))
        proc.stdin.flush()
        stats_reply = json.loads(proc.stdout.readline())
        assert stats_reply["id"] == "stats"
        body = text_of(reply)
        assert len(body) == args["size"] and body == body[0] * args["size"]
        stats = stats_reply["result"]["structuredContent"]
        print(f"\n[figure] {args['size'] // MIB} MiB reply: {stats}")
        assert stats["short"] > 0, f"no write returned short: the test did not exercise it ({stats})"
        if tool == "big_pestered":
            assert stats["pest_kills"] > 0, stats
            # The main thread runs the handlers; it waits for the end of input in slices of
            # half a second, so the count may come after the reply.
            deadline = time.monotonic() + 3
            while stats["signals"] == 0 and time.monotonic() < deadline:
                time.sleep(0.1)
                proc.stdin.write(line(call("stats", "write_stats")))
                proc.stdin.flush()
                stats = json.loads(proc.stdout.readline())["result"]["structuredContent"]
            assert stats["signals"] > 0, stats
        proc.stdin.close()
        assert proc.wait(10) == 0
        assert_no_traceback(proc.stderr.read().decode("utf-8", "replace"))
    finally:
        cleanup(proc)


# ============================================================================================
# Shutdown in the middle of calls
# ============================================================================================

def test_eof_mid_call_writes_the_in_flight_replies_and_exits_0(spawn):
    wire = faults(spawn)
    wire.send(call("a", "block", {"ms": 300}))
    wire.send(call("b", "sleep", {"ms": 150}))
    wire.send(call("c", "big", {"size": 3 * MIB}))
    wire.send(ping("p"))
    assert wire.recv()["id"] == "p"
    wire.close_stdin()
    messages = wire.rest_of_stdout()
    assert wire.wait(10) == 0
    assert sorted(m["id"] for m in messages) == ["a", "b", "c"]
    assert len(text_of([m for m in messages if m["id"] == "c"][0])) == 3 * MIB
    assert_no_traceback(settled_stderr(wire))


def test_sigterm_mid_call_writes_the_in_flight_replies_and_exits_0(spawn):
    wire = faults(spawn)
    wire.send(call("a", "block", {"ms": 300}))
    wire.send(call("b", "big", {"size": 3 * MIB}))
    wire.send(ping("p"))
    assert wire.recv()["id"] == "p"
    wire.proc.send_signal(signal.SIGTERM)
    messages = wire.rest_of_stdout()
    assert wire.wait(10) == 0
    assert sorted(m["id"] for m in messages) == ["a", "b"]
    assert_no_traceback(settled_stderr(wire))


@pytest.mark.parametrize("in_flight", ["big-reply", "never-returns", "many-writers"])
def test_client_closes_stdout_mid_call_the_server_exits_quietly(in_flight):
    """Broken pipe: the client stops reading (closes its end) while replies are being written or
    calls are running: the server exits 0 promptly, with no traceback."""
    proc = start_raw(env={"FAULTS_GRACE": "10"})
    try:
        if in_flight == "big-reply":
            proc.stdin.write(line(call("big", "big", {"size": 16 * MIB})))
        elif in_flight == "never-returns":
            proc.stdin.write(line(call("h", "hang")) + line(ping("p")))
        else:
            proc.stdin.write(b"".join(line(call(i, "big", {"size": 256 * 1024})) for i in range(64)))
        proc.stdin.flush()
        os.read(proc.stdout.fileno(), 4096)        # some bytes have gone out
        proc.stdout.close()
        if in_flight == "never-returns":            # the server notices on its next write
            proc.stdin.write(line(ping("into-the-void")))
            proc.stdin.flush()
        start = time.monotonic()
        code = proc.wait(10)
        assert time.monotonic() - start < 5, "waited for the grace period on a dead pipe"
        stderr = proc.stderr.read().decode("utf-8", "replace")
        assert code == 0, stderr[-2000:]
        assert_no_traceback(stderr)
    finally:
        cleanup(proc)


@pytest.mark.parametrize("size, ending", [(257, b"\n"), (258, b"\n"), (300, b"\r\n"),
                                          (5000, b"\n"), (300, b"")])
def test_a_line_over_the_limit_is_measured_without_its_line_ending(size, ending):
    """The size "Message too large" gives is the message's, whatever the line ending and
    however far past the limit it goes."""
    import io
    seen = []

    class Reader(mcp_min.Peer):
        def handle_too_long(self, line):
            seen.append(line)
    Reader().read_loop(io.BytesIO(b"x" * size + ending), 256)
    [line] = seen
    assert isinstance(line, mcp_min.LineTooLong) and line.size == size
