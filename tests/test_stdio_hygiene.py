"""stdout is for protocol bytes only, stdin is for the protocol only (spec checklist T1, T4,
T5; pain points 1, 6, 7): what tools and their children write goes to stderr, children
cannot swallow protocol input, the module is stdlib-only, quiet on import, leaves the root
logger alone, and can trace every frame to stderr."""

import ast
import json
import os
import subprocess
import sys
import time

import pytest

import mcp_min
from conftest import INIT_PARAMS, ROOT, SERVERS

MODULE = ROOT / "mcp_min.py"


def run_python(code, timeout=20, env=None):
    full_env = dict(os.environ, **(env or {}))
    full_env.pop("MCP_MIN_TRACE", None)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=timeout,
                          cwd=ROOT, env=full_env)


def all_stdout(wire, timeout=10):
    """Close stdin, wait for exit, and return every stdout line, each checked as JSON-RPC."""
    wire.close_stdin()
    messages = []
    while True:
        try:
            messages.append(wire.recv(timeout))
        except AssertionError as e:
            if "closed stdout" in str(e):
                return messages
            raise


def stderr_when(wire, needle, timeout=5):
    deadline = time.monotonic() + timeout
    while needle not in wire.stderr:
        if time.monotonic() > deadline:
            raise AssertionError(f"{needle!r} never appeared on stderr:\n{wire.stderr}")
        time.sleep(0.01)
    return wire.stderr


# ============================================================================================
# What tools write goes to stderr (T4, T5; pain point 1)
# ============================================================================================

def test_T4_print_os_write_and_child_output_go_to_stderr(wire):
    assert wire.result("tools/call", {"name": "noisy", "arguments": {}})["content"][0]["text"] == \
        "quiet wire"
    assert wire.result("ping") == {}                 # the next stdout line is the ping reply
    stderr = stderr_when(wire, "a child process")
    for needle in ("print() from a tool", "os.write(1) from a tool", "a child process"):
        assert needle in stderr
    assert all_stdout(wire) == []
    assert wire.wait(10) == 0


def test_T4_more_ways_to_write_to_stdout_go_to_stderr(spawn):
    wire = spawn("hygiene.py")
    wire.initialize()
    result = wire.result("tools/call", {"name": "more_noise", "arguments": {}})
    assert result["content"][0]["text"] == "still quiet"
    stderr = stderr_when(wire, "a dup of fd 1")
    for needle in ("sys.__stdout__ from a tool", "sys.stdout.write from a tool", "from a shell"):
        assert needle in stderr
    assert all_stdout(wire) == []


def test_T4_nothing_on_stdout_before_initialize_or_at_exit(spawn):
    wire = spawn("everything.py")
    assert all_stdout(wire) == []                    # no banner, nothing at all
    assert wire.wait(10) == 0


BANNER_THEN_RUN = """
print("Starting the server...")
print("half a line, ", end="")
import mcp_min
mcp_min.Server("banner").run()
"""


def test_T4_a_banner_printed_before_run_goes_to_stderr():
    # A client's pipe makes stdout block-buffered: the banner is still in sys.stdout's buffer
    # when run() takes fd 1, and must not reach the wire (half a line would glue itself to
    # the initialize response).
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONUNBUFFERED", "MCP_MIN_TRACE")}
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT_PARAMS}
    done = subprocess.run([sys.executable, "-c", BANNER_THEN_RUN], input=json.dumps(request) + "\n",
                          capture_output=True, text=True, timeout=20, cwd=ROOT, env=env)
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["id"] for line in done.stdout.splitlines()] == [1]
    assert "Starting the server...\nhalf a line, " in done.stderr


# ============================================================================================
# stdin is the protocol's only (T1)
# ============================================================================================

def test_T1_child_process_cannot_read_the_protocol_stdin(spawn):
    wire = spawn("hygiene.py")
    wire.initialize()
    wire.send({"jsonrpc": "2.0", "id": "child", "method": "tools/call",
               "params": {"name": "child_stdin", "arguments": {}}})
    for i in range(5):                               # protocol bytes a child could steal
        wire.send({"jsonrpc": "2.0", "id": f"p{i}", "method": "ping"})
    replies = {}
    for _ in range(6):
        message = wire.recv(timeout=25)
        replies[message["id"]] = message
    assert replies["child"]["result"]["content"][0]["text"] == "0"
    assert all(replies[f"p{i}"] == {"jsonrpc": "2.0", "id": f"p{i}", "result": {}} for i in range(5))


def test_T1_tool_sees_an_empty_stdin(spawn):
    wire = spawn("hygiene.py")
    wire.initialize()
    result = wire.result("tools/call", {"name": "own_stdin", "arguments": {}})
    assert json.loads(result["content"][0]["text"]) == {"fd0": 0, "sys_stdin": 0, "input": "EOF"}
    assert wire.result("ping") == {}


# ============================================================================================
# The module itself (pain points 6, 7)
# ============================================================================================

def test_version_flag_prints_the_version_on_stdout():
    done = subprocess.run([sys.executable, str(MODULE), "--version"], capture_output=True, timeout=20)
    assert done.returncode == 0
    assert done.stdout.decode().strip() == f"mcp_min {mcp_min.__version__}"


def test_no_arguments_prints_help_to_stderr_not_stdout():
    done = subprocess.run([sys.executable, str(MODULE)], capture_output=True, timeout=20,
                          stdin=subprocess.DEVNULL)
    assert done.stdout == b""
    assert done.returncode != 0 and b"usage" in done.stderr.lower()


def test_import_writes_nothing():
    done = run_python("import mcp_min")
    assert done.returncode == 0, done.stderr
    assert done.stdout == b""
    assert done.stderr == b""


def imported_modules(tree):
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            raise AssertionError(f"relative import in a one-file module: line {node.lineno}")
    return names


def test_imports_only_the_standard_library():
    tree = ast.parse(MODULE.read_text(encoding="utf-8"))
    names = imported_modules(tree)
    assert {"json", "os", "sys", "threading"} <= names             # the walk works
    foreign = sorted(n for n in names if n not in sys.stdlib_module_names)
    assert foreign == [], f"non-stdlib imports: {foreign}"
    dynamic = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Call)
               and getattr(node.func, "attr", getattr(node.func, "id", None)) in ("import_module", "__import__")]
    assert dynamic == [], f"dynamic imports at lines {dynamic}"


def test_pyproject_declares_no_dependencies():
    text = (ROOT / "pyproject.toml").read_text()
    assert "dependencies = []" in text


LOGGING_PROBE = r"""
import logging, sys
import mcp_min
root = logging.getLogger()
print("import", len(root.handlers), root.level)
server = mcp_min.Server("probe")

@server.tool
def boom() -> str:
    raise RuntimeError("logged by mcp_min")

with mcp_min.Client(server) as client:
    client.call_tool("boom")
print("served", len(root.handlers), root.level)
"""


def test_importing_and_serving_does_not_configure_the_root_logger():
    done = run_python(LOGGING_PROBE)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().split("\n")[:2] == ["import 0 30", "served 0 30"]
    assert b"logged by mcp_min" in done.stderr                  # it did log, to stderr


APP_CONFIGURED = r"""
import logging, sys
logging.basicConfig(stream=sys.stdout, format="APP %(name)s %(message)s", level=logging.INFO)
import mcp_min
server = mcp_min.Server("probe")

@server.tool
def boom() -> str:
    raise RuntimeError("logged by mcp_min")

with mcp_min.Client(server) as client:
    client.call_tool("boom")
"""


def test_an_application_logging_setup_is_used_not_doubled():
    done = run_python(APP_CONFIGURED)
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode()
    assert "APP mcp_min " in out and "logged by mcp_min" in out, out    # through the app's handler
    assert out.count("APP mcp_min ") == 1, out                          # one record, not two
    assert b"logged by mcp_min" not in done.stderr, done.stderr         # no handler of its own


# ============================================================================================
# The trace switch: every frame, both directions, on stderr
# ============================================================================================

def exchange(wire):
    """Send a few frames (one unparsable) and return (sent lines, received lines)."""
    sent = [json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT_PARAMS},
                       separators=(",", ":")),
            '{"jsonrpc":"2.0","method":"notifications/initialized"}',
            "this is {not json \u00e9",
            '{"jsonrpc":"2.0","id":"t","method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}}',
            '{"jsonrpc":"2.0","id":2,"method":"ping"}']
    for line in sent:
        wire.send((line + "\n").encode())
    # initialize, -32700, tools/call, ping: read them all before closing stdin
    received = [wire.recv_raw(10).decode().rstrip("\n") for _ in range(4)]
    wire.close_stdin()
    assert wire.wait(10) == 0
    stderr_when(wire, "lifespan: stop")
    return sent, received


def assert_traced(stderr, sent, received):
    lines = stderr.splitlines()
    inbound = [line for line in lines if line.startswith("C->S")]
    outbound = [line for line in lines if line.startswith("S->C")]
    for frame in sent:
        assert any(line.endswith(frame) for line in inbound), (frame, inbound)
    for frame in received:
        assert any(line.endswith(frame) for line in outbound), (frame, outbound)
    assert any("unparsable" in line and line.endswith("this is {not json \u00e9") for line in inbound)


def test_trace_env_var_logs_every_frame_both_ways(spawn):
    wire = spawn("everything.py", env={"MCP_MIN_TRACE": "1"})
    sent, received = exchange(wire)
    assert_traced(wire.stderr, sent, received)


def test_trace_command_line_flag_logs_every_frame_both_ways(spawn):
    wire = spawn(str(MODULE), "serve", "--trace", str(SERVERS / "everything.py"),
                 env={"MCP_MIN_TRACE": ""})
    sent, received = exchange(wire)
    assert_traced(wire.stderr, sent, received)


def test_trace_command_line_flag_with_a_named_server(spawn):
    wire = spawn(str(MODULE), "serve", "--trace", f"{SERVERS / 'everything.py'}:server",
                 env={"MCP_MIN_TRACE": ""})
    sent, received = exchange(wire)
    assert_traced(wire.stderr, sent, received)


def test_trace_flag_through_the_installed_entry_point(spawn):
    """``mcp-min serve --trace FILE`` (pyproject's console script calls mcp_min.main)."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import mcp_min; "
            "sys.exit(mcp_min.main(sys.argv[2:]))")
    wire = spawn("-c", code, str(ROOT), "serve", "--trace", str(SERVERS / "everything.py"),
                 env={"MCP_MIN_TRACE": ""})
    sent, received = exchange(wire)
    assert_traced(wire.stderr, sent, received)


@pytest.mark.parametrize("value", [None, "0", ""], ids=["unset", "zero", "empty"])
def test_no_trace_by_default(spawn, value):
    if value is None and os.environ.get("MCP_MIN_TRACE") not in (None, "", "0"):
        pytest.skip("MCP_MIN_TRACE is set in the test environment")
    wire = spawn("everything.py", env={} if value is None else {"MCP_MIN_TRACE": value})
    exchange(wire)
    assert '"method":"ping"' not in wire.stderr
    assert not any(line.startswith(("<-", "->")) for line in wire.stderr.splitlines())
