"""mcp_min inside another application: a host program that imports it, runs a Client, serves
a Server on its own pipes, or calls run() and carries on afterwards. The host must find its
process as it left it: its loggers, its signal handlers, its allocator, and one server's
signal handling must not reach another. Each test runs a host program in a subprocess."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import INIT_PARAMS, ROOT

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and pipes")

HOST_PRELUDE = f"""
import json, logging, os, signal, sys, threading, time
sys.path.insert(0, {str(ROOT)!r})
from mcp_min import Client, Server


def report(**values):                     # to stderr: run() takes stdout for the protocol
    print("REPORT " + json.dumps(values, default=repr), file=sys.stderr, flush=True)
"""


def write_host(tmp_path, body):
    path = tmp_path / "host.py"
    path.write_text(HOST_PRELUDE + textwrap.dedent(body))
    return path


def reports(stderr):
    return [json.loads(line[len("REPORT "):]) for line in stderr.splitlines()
            if line.startswith("REPORT ")]


def run_host(tmp_path, body, input="", timeout=30):
    result = subprocess.run([sys.executable, str(write_host(tmp_path, body))], input=input,
                            capture_output=True, text=True, timeout=timeout)
    return result, reports(result.stderr)


def line(message):
    return json.dumps(message) + "\n"


INITIALIZE = line({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT_PARAMS})
INITIALIZED = line({"jsonrpc": "2.0", "method": "notifications/initialized"})


class Host:
    """A host program serving the test over its stdio with run(), driven line by line."""

    def __init__(self, tmp_path, body):
        self.stderr_file = open(tmp_path / "stderr", "w+")
        self.proc = subprocess.Popen([sys.executable, str(write_host(tmp_path, body))],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stderr_file)
        self.send(INITIALIZE)
        assert json.loads(self.proc.stdout.readline())["id"] == 1
        self.send(INITIALIZED)
        # Let the reader block in read() again: a signal that lands before it does is only
        # seen at the next line (Python runs handlers between bytecodes; read() is not cut).
        time.sleep(0.2)

    def send(self, text):
        self.proc.stdin.write(text.encode())
        self.proc.stdin.flush()

    def call(self, rid, name, arguments=None):
        self.send(line({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                        "params": {"name": name, "arguments": arguments or {}}}))
        reply = json.loads(self.proc.stdout.readline())
        assert reply["id"] == rid, reply
        return reply["result"]

    def finish(self, timeout=15):
        code = self.proc.wait(timeout)
        self.stderr_file.seek(0)
        self.stderr = self.stderr_file.read()
        return code, reports(self.stderr)

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.stderr_file):
            stream.close()


@pytest.fixture
def host(tmp_path):
    hosts = []

    def start(body):
        hosts.append(Host(tmp_path, body))
        return hosts[-1]
    yield start
    for started in hosts:
        started.close()


# ============================================================================================
# Logging: forward_logging leaves the application's loggers alone
# ============================================================================================

FORWARDING = """
root, app = logging.getLogger(), logging.getLogger("app")
before = {"root": list(root.handlers), "app": list(app.handlers),
          "factory": logging.getLogRecordFactory()}


def make(name, forward):
    server = Server(name, forward_logging=forward)

    @server.tool
    def speak() -> str:
        logging.getLogger("app.part").warning("from %s", name)
        logging.getLogger("other").warning("other from %s", name)
        return "ok"
    return server


def forwarded(client):
    return [(n["params"]["logger"], n["params"]["data"]) for n in client.notifications
            if n["method"] == "notifications/message"]


one, two, quiet = make("one", True), make("two", "app"), make("quiet", False)
with Client(one) as first, Client(two) as second, Client(quiet) as third:
    during = {"root": root.handlers == before["root"], "app": app.handlers == before["app"]}
    for client in (first, second, third):
        client.call_tool("speak")
    time.sleep(0.1)
    got = [forwarded(client) for client in (first, second, third)]
report(during=during, got=got,
       after={"root": root.handlers == before["root"], "app": app.handlers == before["app"],
              "factory": logging.getLogRecordFactory() is before["factory"]})
"""


def test_logging_configured_after_mcp_min_logged_shows_each_record_once():
    """mcp_min's own stderr handler, set up when it first logs, steps aside once the
    application configures logging: a record is shown by the application's handler alone."""
    script = ("import logging, mcp_min\n"
              "mcp_min.log.warning('before')\n"
              "logging.basicConfig(format='APP %(name)s: %(message)s')\n"
              "mcp_min.log.warning('after')\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=ROOT, timeout=30)
    assert proc.stderr.splitlines() == ["mcp_min WARNING: before", "APP mcp_min: after"]


def test_forward_logging_leaves_the_root_logger_alone_and_forwards_each_record_once(tmp_path):
    """Two servers forwarding (all loggers, and "app") and one not, served at once: no handler
    is added to the root logger or to "app", each record reaches the client of the server
    whose handler made it once, and after serving the logging setup is as it was."""
    result, [report] = run_host(tmp_path, FORWARDING)
    assert result.returncode == 0, result.stderr
    assert report["during"] == {"root": True, "app": True}
    assert report["after"] == {"root": True, "app": True, "factory": True}
    one, two, quiet = report["got"]
    assert one == [["app.part", "from one"], ["other", "other from one"]]
    assert two == [["app.part", "from two"]]
    assert quiet == []
    # the records still reach stderr as Python's last resort handler prints them
    assert "from one" in result.stderr and "other from quiet" in result.stderr


WRAPPED_WHILE_SERVING = """
def tagging(*args, **kwargs):
    record = library(*args, **kwargs)
    record.tagged = True
    return record


def serve_once(label, meanwhile=None):
    server = Server(label, forward_logging=True)

    @server.tool
    def speak() -> str:
        logging.getLogger("app").warning("from %s", label)
        return "ok"
    with Client(server) as client:
        if meanwhile:
            meanwhile()
        client.call_tool("speak")
        time.sleep(0.1)
        return [n["params"]["data"] for n in client.notifications
                if n["method"] == "notifications/message"]


def wrap():                     # another library wraps the factory while a server serves
    global library
    library = logging.getLogRecordFactory()
    logging.setLogRecordFactory(tagging)


first = serve_once("first", wrap)
second = serve_once("second")                    # serving again, with the wrapper around ours
record = logging.getLogger("app").makeRecord("app", logging.INFO, "f", 1, "after", (), None)
report(first=first, second=second, tagged=getattr(record, "tagged", False),
       kept=logging.getLogRecordFactory() is tagging)
"""


def test_forward_logging_serves_again_after_another_library_wrapped_the_factory(tmp_path):
    """The wrapper stays where the library put it: serving again must neither wrap it a
    second time (every record would then recurse without end) nor forward a record twice."""
    result, [report] = run_host(tmp_path, WRAPPED_WHILE_SERVING)
    assert result.returncode == 0, result.stderr
    assert report == {"first": ["from first"], "second": ["from second"], "tagged": True,
                      "kept": True}


# ============================================================================================
# Signals: run() gives the application its handlers back
# ============================================================================================

RUN_THEN_REPORT = """
def mine(signum, frame):
    pass
signal.signal(signal.SIGTERM, mine)
before = [signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)]
server = Server("host")

@server.tool
def during() -> str:
    return repr(signal.getsignal(signal.SIGTERM).__qualname__)
try:
    server.run()
except SystemExit as e:
    code = e.code
after = [signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)]
try:
    signal.raise_signal(signal.SIGINT)        # Ctrl+C works again
    time.sleep(0.1)
    interrupted = False
except KeyboardInterrupt:
    interrupted = True
report(code=code, restored=after == before, interrupted=interrupted)
"""


def test_run_gives_the_signal_handlers_back_when_input_ends(host):
    served = host(RUN_THEN_REPORT)
    assert served.call(2, "during")["content"][0]["text"] == "'_StopSignals.on_signal'"
    served.proc.stdin.close()
    code, [report] = served.finish()
    assert code == 0, served.stderr
    assert report == {"code": 0, "restored": True, "interrupted": True}


@pytest.mark.parametrize("signum, exit_code", [(signal.SIGTERM, 0), (signal.SIGINT, 130)])
def test_run_gives_the_signal_handlers_back_after_a_signal(host, signum, exit_code):
    served = host(RUN_THEN_REPORT)
    served.proc.send_signal(signum)
    code, [report] = served.finish()
    assert code == 0, served.stderr
    assert report == {"code": exit_code, "restored": True, "interrupted": True}


# ============================================================================================
# Signal state: one server's does not reach another
# ============================================================================================

SERVE_AFTER_RUN = """
try:
    Server("first").run()
except SystemExit:
    pass
second = Server("second")

@second.tool
def hello() -> str:
    return "hello"
requests, replies = os.pipe(), os.pipe()
lines = [{"jsonrpc": "2.0", "id": 1, "method": "ping"},
         {"jsonrpc": "2.0", "id": 2, "method": "ping"}]
os.write(requests[1], "".join(json.dumps(m) + "\\n" for m in lines).encode())
os.close(requests[1])
try:
    second.serve_connection(requests[0], replies[1])   # on the main thread, as run() was
    outcome = "served"
except BaseException as e:
    outcome = type(e).__name__
os.close(replies[1])
answered = [json.loads(l)["id"] for l in os.fdopen(replies[0]).read().splitlines()]
report(outcome=outcome, answered=answered)
"""


def test_a_serve_after_a_run_stopped_by_sigterm_serves_normally(host):
    """run() stopped by SIGTERM, then the application serves another server on its own pipes
    on the main thread: the first server's stop must not stop the second."""
    served = host(SERVE_AFTER_RUN)
    served.proc.send_signal(signal.SIGTERM)
    code, [report] = served.finish()
    assert code == 0, served.stderr
    assert report == {"outcome": "served", "answered": [1, 2]}


BROKEN_NEIGHBOUR = """
server = Server("main")
neighbour = Server("neighbour")                    # served on a thread, on pipes of its own
requests, replies = os.pipe(), os.pipe()
threading.Thread(target=neighbour.serve_connection, args=(requests[0], replies[1]), daemon=True).start()

@server.tool
def break_the_neighbour() -> str:
    os.close(replies[0])                           # its client goes away...
    os.write(requests[1], b'{"jsonrpc":"2.0","id":1,"method":"ping"}\\n')   # ...it answers
    time.sleep(0.3)
    return "done"
try:
    server.run()
except SystemExit as e:
    report(code=e.code)
"""


def test_a_neighbour_server_losing_its_client_does_not_stop_run(host):
    """Another server in the process whose client closed its pipe: its wire breaks, and
    that must not stop the server run() serves on stdio (it used to be sent SIGTERM)."""
    served = host(BROKEN_NEIGHBOUR)
    assert served.call(2, "break_the_neighbour")["content"][0]["text"] == "done"
    served.send(line({"jsonrpc": "2.0", "id": 3, "method": "ping"}))
    assert json.loads(served.proc.stdout.readline()) == {"jsonrpc": "2.0", "id": 3, "result": {}}
    served.proc.stdin.close()
    code, [report] = served.finish()
    assert code == 0 and report == {"code": 0}, served.stderr


# ============================================================================================
# The allocator: a process that only runs a Client keeps its own
# ============================================================================================

def test_a_client_process_keeps_its_allocator_settings(tmp_path):
    """The client reads a 3 MiB reply: the allocator tuning (mallopt) is for processes that
    serve stdio, not for an application that uses Client."""
    (tmp_path / "big.py").write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from mcp_min import Server
        server = Server("big")

        @server.tool
        def big() -> str:
            return "x" * (3 << 20)
        server.run()
        """))
    result, [report] = run_host(tmp_path, f"""
        import ctypes
        calls = []
        ctypes.CDLL = lambda name: type("libc", (), {{"mallopt": lambda *a: calls.append(a)}})
        with Client([sys.executable, {str(tmp_path / "big.py")!r}]) as client:
            size = len(client.call_tool("big")["content"][0]["text"])
        report(size=size, calls=calls)
        """)
    assert result.returncode == 0, result.stderr
    assert report == {"size": 3 << 20, "calls": []}
