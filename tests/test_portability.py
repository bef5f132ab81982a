"""mcp_min on setups other than the one it is developed on: Windows-like platforms (the
POSIX-only functions removed in a test, as no Windows machine is at hand), future Pythons
that change CPython internals the file uses for speed, Python 3.14's lazily evaluated
annotations, and free-threaded builds (lazily initialised globals hammered from threads)."""

import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import mcp_min
from conftest import INIT_PARAMS, ROOT
from mcp_min import SchemaError, Server, Signature


def run_python(*code, cwd=None, timeout=30):
    """Run the pieces of ``code`` in a fresh interpreter that imports mcp_min from here."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-c", "".join(map(textwrap.dedent, code))],
                          capture_output=True, text=True, timeout=timeout, cwd=cwd or ROOT,
                          env=env)


ROUND_TRIP = """
    import json
    message = {"jsonrpc": "2.0", "id": 1, "result": {"text": "é\\n\\u2028", "n": [1, 2.5, None]}}
    frame = mcp_min.encode_message(message)
    assert frame == json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode(), frame
    assert mcp_min.encode_message({"s": "\\ud800"}) == b'{"s":"\\\\ud800"}'   # lone surrogate
    assert mcp_min.decode_message(frame + b"\\n") == message
    assert mcp_min.to_json({"a": [1]}) == '{"a": [1]}'
    for bad in (b'{"a": NaN}', b'{"a": 1} x', b"[1,"):
        try:
            mcp_min.decode_message(bad)
        except mcp_min.JSONRPCError as e:
            assert e.code == -32700, e.code
        else:
            raise AssertionError(bad)
    try:
        mcp_min.encode_message({"x": float("nan")})
    except ValueError:
        pass
    else:
        raise AssertionError("NaN encoded")
    print("ok")
"""


# ============================================================================================
# CPython internals used for speed: a changed one never breaks `import mcp_min`
# ============================================================================================

@pytest.mark.parametrize("change", ["raises", "misbehaves", "absent"])
def test_import_survives_a_changed_c_make_encoder(change):
    """json.encoder.c_make_encoder is called at import with positional arguments. If a future
    Python changes it, mcp_min falls back to json's public encoder (which that Python keeps
    working: here the original is put back once mcp_min is imported)."""
    fake = {"raises": "def changed(*args): raise TypeError('takes 10 positional arguments')",
            "misbehaves": "changed = lambda *args: (lambda value, level: ['changed'])",
            "absent": "changed = None"}[change]
    result = run_python(f"""
        import json.encoder
        original = json.encoder.c_make_encoder
        {fake}
        json.encoder.c_make_encoder = changed
        import mcp_min
        if "{change}" != "absent":
            json.encoder.c_make_encoder = original
        """, ROUND_TRIP)
    assert result.returncode == 0 and result.stdout == "ok\n", result.stderr


SCANNER = """
import json, json.decoder

def raw_decode(self, s, idx=0):             # as json's, with the scanner of its own name
    try:
        return self.scanner(s, idx)
    except StopIteration as e:
        raise json.JSONDecodeError("Expecting value", s, e.value) from None
"""


@pytest.mark.parametrize("change", ["renamed", "called differently"])
def test_import_survives_a_changed_scanner(change):
    """JSONDecoder.scan_once (the scanner, used directly for speed) is not public: a Python
    that renames it, or calls it differently, must still import mcp_min, which then decodes
    with the public raw_decode."""
    result = run_python(SCANNER, f"""
        class Changed(json.decoder.JSONDecoder):
            raw_decode = raw_decode

            def __init__(self, *args, **kwargs):
                super().__init__(*args, **kwargs)
                self.scanner = self.__dict__.pop("scan_once")
                if "{change}" == "called differently":
                    self.scan_once = lambda s, idx, strict: self.scanner(s, idx)
        json.JSONDecoder = json.decoder.JSONDecoder = Changed
        import mcp_min
        """, ROUND_TRIP)
    assert result.returncode == 0 and result.stdout == "ok\n", result.stderr


def test_parameters_fall_back_to_inspect_when_code_objects_change(monkeypatch):
    """Plain functions are read from their code object (inspect is slow to import); if that
    fails on some Python, inspect.signature reads them instead, with the same result."""
    def tool(a: int, b: str = "x", *, c: bool = False) -> int:
        return a

    fast = Signature(tool)

    def changed(fn):
        raise AttributeError("'code' object has no attribute 'co_posonlyargcount'")
    monkeypatch.setattr(mcp_min, "_code_parameters", changed)
    slow = Signature(tool)
    assert slow.input_schema == fast.input_schema and slow.output_schema == fast.output_schema
    assert slow.bind({"a": 1, "c": True}) == ({"a": 1, "c": True}, [])


# ============================================================================================
# Python 3.14: annotations evaluated lazily, when first read
# ============================================================================================

class LazyAnnotations(dict):
    """What Python 3.14 does on reading a function's annotations when one names a class that
    is not defined yet: NameError."""

    def get(self, *args):
        raise NameError("name 'Later' is not defined", name="Later")

    __getitem__ = items = get


def test_a_lazy_annotation_naming_a_later_class_is_a_schema_error_naming_it():
    server = Server("lazy")

    def plan(when: int) -> int:
        return when
    plan.__annotations__ = LazyAnnotations()
    with pytest.raises(SchemaError) as caught:
        server.tool(plan)
    assert "plan" in str(caught.value) and "'Later'" in str(caught.value)
    assert "not defined" in str(caught.value)


def test_a_lazy_signature_naming_a_later_class_is_a_schema_error_naming_it():
    """A callable that is not a plain function goes through inspect.signature, which in 3.14
    evaluates the annotations too."""
    class Planner:
        @property
        def __signature__(self):
            raise NameError("name 'Later' is not defined", name="Later")

        def __call__(self, when):
            return when

    with pytest.raises(SchemaError) as caught:
        Server("lazy").tool(Planner(), name="plan")
    assert "'Later'" in str(caught.value) and "Planner" in str(caught.value)


def test_a_postponed_annotation_naming_an_undefined_class_is_a_schema_error_naming_it(tmp_path):
    (tmp_path / "postponed.py").write_text(textwrap.dedent("""
        from __future__ import annotations
        from mcp_min import Server
        server = Server("postponed")

        @server.tool
        def plan(when: Later) -> int:
            return 1
        """))
    result = run_python("import postponed", cwd=tmp_path)
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("mcp_min.SchemaError: plan: ") and "'Later'" in last, result.stderr


@pytest.mark.skipif(sys.version_info < (3, 14), reason="annotations are lazy from Python 3.14")
def test_python_3_14_forward_references(tmp_path):
    """Registered before the class exists: a SchemaError naming both. Registered after it:
    a working schema."""
    (tmp_path / "forward.py").write_text(textwrap.dedent("""
        from typing import TypedDict
        from mcp_min import SchemaError, Server
        server = Server("forward")

        def later(when: Later) -> int:
            return 1
        try:
            server.tool(later)
        except SchemaError as e:
            print(e)

        class Later(TypedDict):
            day: int

        server.tool(later)
        print(server.tools["later"].signature.input_schema["$defs"]["Later"]["required"])
        """))
    result = run_python("import forward", cwd=tmp_path)
    first, second = result.stdout.splitlines()
    assert "later" in first and "'Later'" in first
    assert second == "['day']"


# ============================================================================================
# Free-threaded builds: lazily initialised globals
# ============================================================================================

def test_the_logger_is_set_up_once_when_threads_race_for_it():
    """The "mcp_min" logger is set up on first use; threads that all log first at once must
    not each add a stderr handler (a slow handler constructor widens the window, as a free-
    threaded build would without one)."""
    result = run_python("""
        import logging, threading, time
        import mcp_min
        made = logging.StreamHandler.__init__
        def slowly(self, *args):
            time.sleep(0.05)
            made(self, *args)
        logging.StreamHandler.__init__ = slowly
        start = threading.Barrier(8)
        def first_use():
            lazy = mcp_min.log                 # what every function sees before it is set up
            start.wait()
            lazy.debug("hello")
        threads = [threading.Thread(target=first_use) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        print(len(logging.getLogger("mcp_min").handlers))
        """)
    assert result.returncode == 0 and result.stdout == "1\n", result.stdout + result.stderr


def test_the_allocator_is_set_once_when_threads_race_for_it():
    result = run_python("""
        import ctypes, threading, time, types
        import mcp_min
        calls = []
        def library(name):
            def mallopt(*args):
                time.sleep(0.02)
                calls.append(args)
            return types.SimpleNamespace(mallopt=mallopt)
        ctypes.CDLL = library
        mcp_min.claim_stdio()                # a server process: the allocator is its own
        start = threading.Barrier(8)
        def first_big_message():
            start.wait()
            mcp_min._keep_big_blocks_apart()
        threads = [threading.Thread(target=first_big_message) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        print(calls, file=__import__("sys").stderr)
        """)
    expected = "[(-3, 1048576)]" if sys.platform.startswith("linux") else "[]"
    assert result.returncode == 0 and result.stderr.strip() == expected, result.stderr


# ============================================================================================
# Windows and other non-POSIX platforms: the POSIX-only functions taken away
# ============================================================================================

NO_PTHREAD_KILL = """
import signal, sys
sys.path.insert(0, {root!r})
del signal.pthread_kill                  # as on Windows
"""


def test_a_closed_stdout_without_pthread_kill_stops_cleanly(tmp_path):
    """The client closes our stdout while the reply is written: without pthread_kill the
    main thread is told by interrupt_main, and its wait for the end of input (slices of half
    a second) sees it; nothing fails, and the server stops with no further line."""
    script = tmp_path / "server.py"
    script.write_text(NO_PTHREAD_KILL.format(root=str(ROOT)) + textwrap.dedent("""
        import time
        from mcp_min import Server
        server = Server("no-pthread-kill")

        @server.tool
        def slow() -> str:
            time.sleep(0.3)
            return "x" * 100_000
        server.run()
        """))
    with open(tmp_path / "stderr", "w+") as stderr:
        proc = subprocess.Popen([sys.executable, str(script)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=stderr)
        try:
            initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                          "params": dict(INIT_PARAMS)}
            call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "slow", "arguments": {}}}
            proc.stdin.write((json.dumps(initialize) + "\n").encode())
            proc.stdin.flush()
            assert json.loads(proc.stdout.readline())["id"] == 1
            proc.stdin.write((json.dumps(call) + "\n").encode())
            proc.stdin.flush()
            proc.stdout.close()                   # the reply cannot be written
            assert proc.wait(10) == 0
        finally:
            proc.kill()
            proc.wait()
            proc.stdin.close()
        stderr.seek(0)
        text = stderr.read()
    assert "Traceback" not in text and "AttributeError" not in text, text


def test_a_stuck_shutdown_is_cut_short_without_pthread_kill(tmp_path, spawn):
    """A lifespan whose shutdown hangs, and a second SIGTERM: a grace period later the
    watchdog interrupts the main thread another way, instead of dying with an AttributeError
    and leaving the server hanging."""
    script = tmp_path / "server.py"
    script.write_text(NO_PTHREAD_KILL.format(root=str(ROOT)) + textwrap.dedent("""
        import contextlib, time
        from mcp_min import Server

        @contextlib.contextmanager
        def lifespan(server):
            yield
            print("lifespan: stopping", file=sys.stderr, flush=True)
            while True:                   # a shutdown that never ends
                time.sleep(0.01)
        server = Server("stuck", lifespan=lifespan, grace_period=0.5)
        server.run()
        """))
    wire = spawn(str(script))
    wire.initialize()
    time.sleep(0.2)                           # the reader waits in read(): the signal cuts it
    wire.proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 5
    while "lifespan: stopping" not in wire.stderr and time.monotonic() < deadline:
        time.sleep(0.02)
    wire.proc.send_signal(signal.SIGTERM)
    assert wire.wait(10) == 0
    assert "AttributeError" not in wire.stderr, wire.stderr


def test_the_repl_offers_its_directory_as_a_valid_file_uri(tmp_path):
    """The repl's roots/list answer: the working directory as a file URI, escaped (a space is
    %20), as pathlib writes it on every platform ("file://" + a Windows path is no URI)."""
    here = tmp_path / "my project"
    here.mkdir()
    (here / "server.py").write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from mcp_min import Context, Server
        server = Server("roots")

        @server.tool
        def where(ctx: Context) -> str:
            return ctx.list_roots()[0]["uri"]
        server.run()
        """))
    result = subprocess.run([sys.executable, str(ROOT / "mcp_min.py"), "repl", "--",
                             sys.executable, "server.py"], input="init\ncall where\nquit\n",
                            capture_output=True, text=True, timeout=30, cwd=here,
                            env=dict(os.environ, NO_COLOR="1"))
    assert result.returncode == 0, result.stderr
    assert f'"text":"{here.as_uri()}"' in result.stdout, result.stdout
    assert "my%20project" in here.as_uri()


@pytest.mark.parametrize("platform, env, expected", [
    ("linux", {}, True), ("linux", {"NO_COLOR": "1"}, False),
    ("win32", {}, False), ("win32", {"WT_SESSION": "1"}, True)])
def test_colour_only_where_the_terminal_shows_it(monkeypatch, platform, env, expected):
    """ANSI colours on a terminal, unless NO_COLOR; on Windows only in a terminal known to
    read them (Windows Terminal sets WT_SESSION), as the classic console prints them raw."""
    class Terminal:
        def isatty(self):
            return True
    for name in ("NO_COLOR", "WT_SESSION", "TERM", "ANSICON"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(sys, "platform", platform)
    assert mcp_min.FramePrinter({"in": "<", "out": ">"}, Terminal()).colour is expected


def test_no_colour_and_no_error_for_a_stream_that_is_no_terminal():
    """pythonw on Windows has no stdout (None); other streams may lack isatty."""
    assert mcp_min.FramePrinter({"in": "<", "out": ">"}, object()).colour is False


def test_writes_go_out_whole_without_writev(monkeypatch):
    """os.writev does not exist on Windows: the frame and its newline go out with write."""
    monkeypatch.setattr(mcp_min, "_writev", None)
    read, write = os.pipe()
    try:
        mcp_min.write_all(write, b'{"x":1}')
        assert os.read(read, 100) == b'{"x":1}\n'
    finally:
        os.close(read)
        os.close(write)


def test_the_allocator_is_left_alone_off_linux(monkeypatch):
    """mallopt's parameter numbers are glibc's: elsewhere it is not called."""
    import ctypes
    calls = []
    monkeypatch.setattr(ctypes, "CDLL", lambda name: calls.append(name))
    monkeypatch.setattr(sys, "platform", "darwin")
    monkeypatch.setattr(mcp_min, "_tune_allocator", True)
    mcp_min._keep_big_blocks_apart()
    assert calls == []


def test_the_package_claims_only_what_ci_runs():
    """pyproject's classifiers: no "OS Independent" (only Linux is tested), and the Python
    versions named are the ones .ci/run tests: 3.11 (tests/requirements.txt's), and those of
    its list of the other CPythons."""
    text = (ROOT / "pyproject.toml").read_text()
    assert "OS Independent" not in text and "Operating System :: POSIX :: Linux" in text
    claimed = set(re.findall(r'"Programming Language :: Python :: (3\.\d+)"', text))
    [others] = re.findall(r"^versions=\(([\d. ]+)\)$", (ROOT / ".ci" / "run").read_text(),
                          re.MULTILINE)
    assert claimed == {"3.11", *others.split()}


def older_python():
    """A CPython 3.8 or 3.9 through pyenv, if this machine has one (older ones cannot even
    compile the file: it uses :=)."""
    root = pathlib.Path(os.environ.get("PYENV_ROOT", pathlib.Path.home() / ".pyenv"))
    found = sorted(root.glob("versions/3.[89].*/bin/python3"))
    return found[-1] if found else None


@pytest.mark.skipif(older_python() is None, reason="no CPython older than 3.10 through pyenv")
def test_an_older_python_is_told_plainly_that_it_is_too_old(tmp_path):
    """macOS's python3 is 3.9: `python3 mcp_min.py demo` there must say what is wrong."""
    shutil.copy(ROOT / "mcp_min.py", tmp_path)
    for command in (["mcp_min.py", "demo"], ["-c", "import mcp_min"]):
        proc = subprocess.run([str(older_python()), *command], cwd=tmp_path, capture_output=True,
                              text=True, timeout=60)
        assert proc.returncode == 1
        assert proc.stderr.startswith("mcp_min needs Python 3.10 or newer; this is 3."), proc.stderr
        assert "Traceback" not in proc.stderr
