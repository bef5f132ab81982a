"""A server whose tools misbehave in every way the reliability tests need (tests/test_attacks.py):
results JSON cannot encode, SystemExit / KeyboardInterrupt / RecursionError, writes to fd 1 and
children that print, a tool that never returns, multi-MiB replies written while signals keep
interrupting the writer.

Settings come from the environment and default to Server's own defaults: FAULTS_WORKERS,
FAULTS_QUEUE, FAULTS_MAX_LINE, FAULTS_GRACE. FAULTS_WRITE_CAP=N makes every os.write() take at
most a random 1..N bytes (os.writev likewise: a pipe that keeps accepting short writes).

os.write and os.writev are wrapped to count writes that returned short; SIGWINCH gets a Python handler (so
a delivered SIGWINCH interrupts blocking system calls instead of being ignored). The tool
`write_stats` reports both counters."""

import os
import random
import signal
import subprocess
import sys
import threading
import time

STATS = {"writes": 0, "short": 0, "signals": 0, "pest_kills": 0}
_real_write, _real_writev = os.write, getattr(os, "writev", None)
_CAP = int(os.environ.get("FAULTS_WRITE_CAP", "0"))


def _counting_write(fd, data):
    size = len(data)
    if _CAP and size > 1:
        data = memoryview(data)[:random.randint(1, _CAP)]
    written = _real_write(fd, data)
    STATS["writes"] += 1
    if written < size:
        STATS["short"] += 1
    return written


def _counting_writev(fd, buffers):
    buffers = [memoryview(b) for b in buffers]
    size = sum(len(b) for b in buffers)
    if _CAP and size > 1:
        room, capped = random.randint(1, _CAP), []
        for b in buffers:
            if room <= 0:
                break
            capped.append(b[:room])
            room -= len(capped[-1])
        buffers = capped
    written = _real_writev(fd, buffers)
    STATS["writes"] += 1
    if written < size:
        STATS["short"] += 1
    return written


# Wrapped before mcp_min is imported, so whichever it uses (and however it binds it) is counted.
os.write = _counting_write
if _real_writev is not None:
    os.writev = _counting_writev

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from mcp_min import Context, JSONRPCError, Server  # noqa: E402


def _on_sigwinch(signum, frame):
    STATS["signals"] += 1


signal.signal(signal.SIGWINCH, _on_sigwinch)

settings = {}
for env, key, kind in (("FAULTS_WORKERS", "max_workers", int), ("FAULTS_QUEUE", "max_queue", int),
                       ("FAULTS_MAX_LINE", "max_line_bytes", int), ("FAULTS_GRACE", "grace_period", float),
                       ("FAULTS_CANCEL_TIMEOUT", "cancel_timeout", float)):
    if os.environ.get(env):
        settings[key] = kind(os.environ[env])

server = Server("faults", "1.0.0", **settings)


@server.tool
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@server.tool
def add(a: int, b: int) -> int:
    """Add two integers (no limit on their size)."""
    return a + b


@server.tool
def sleep(ms: float, ctx: Context) -> str:
    """Sleep for ms milliseconds, checking for cancellation every 5 ms."""
    deadline = time.monotonic() + ms / 1000
    while time.monotonic() < deadline:
        ctx.check_cancelled()
        time.sleep(min(0.005, max(0.0, deadline - time.monotonic())))
    return "slept"


@server.tool
def block(ms: float) -> str:
    """Sleep without looking at cancellation."""
    time.sleep(ms / 1000)
    return "woke"


@server.tool
def hang() -> str:
    """Never return, and ignore cancellation."""
    while True:
        time.sleep(0.05)


@server.tool
def unencodable(kind: str):
    """Return something JSON cannot encode: an object(), NaN, infinity, a dict holding NaN,
    or an int too long for str()."""
    if kind == "object":
        return object()
    if kind == "nan":
        return float("nan")
    if kind == "inf":
        return float("-inf")
    if kind == "dict_nan":
        return {"x": float("nan")}
    if kind == "list_object":
        return [1, object()]
    if kind == "huge_int":
        return 10 ** 5000
    raise ValueError(kind)


@server.tool
def unencodable_float() -> float:
    """A NaN through a declared return type (checked against the output schema)."""
    return float("nan")


def raw_unencodable(ctx, params):
    """A raw handler (no Tool wrapper) whose result cannot be encoded."""
    return {"value": object()}


def raw_not_an_object(ctx, params):
    """A raw handler whose result is params["value"]: null, a list, a string..."""
    return params.get("value")


def raw_error_with_bad_data(ctx, params):
    raise JSONRPCError(-32603, "a handler error whose data cannot be encoded",
                       {"bad": object()})


def raw_system_exit(ctx, params):
    raise SystemExit(4)


def raw_keyboard_interrupt(ctx, params):
    raise KeyboardInterrupt


server.handlers["faults/unencodable"] = raw_unencodable
server.handlers["faults/bad_error_data"] = raw_error_with_bad_data
server.handlers["faults/not_an_object"] = raw_not_an_object
server.handlers["faults/exit"] = raw_system_exit
server.handlers["faults/interrupt"] = raw_keyboard_interrupt


@server.tool
def die(kind: str) -> str:
    """Raise SystemExit, KeyboardInterrupt or GeneratorExit, or recurse until RecursionError."""
    if kind == "exit":
        raise SystemExit(2)
    if kind == "exit0":
        sys.exit(0)
    if kind == "interrupt":
        raise KeyboardInterrupt
    if kind == "generator_exit":
        raise GeneratorExit
    if kind == "recursion":
        def down(n):
            return down(n + 1) + 1
        return down(0)
    raise ValueError(kind)


@server.tool
def write_fd1(size: int) -> str:
    """Write to fd 1 with os.write (size bytes, in one call), print() and sys.__stdout__."""
    data = (b"fd1-noise:" + b"#" * max(0, size - 11) + b"\n")[:max(size, 11)]
    view = memoryview(data)
    while view:
        view = view[_real_write(1, view):]
    print("print-noise")
    sys.__stdout__.write("dunder-stdout-noise\n")
    sys.__stdout__.flush()
    return "wrote"


@server.tool
def child_prints(linger_ms: int = 0) -> str:
    """Start children that print to their inherited stdout: one we wait for, a shell, and one
    that keeps printing for ``linger_ms`` after this tool has returned."""
    subprocess.run([sys.executable, "-c", "print('child-noise ' * 1000)"], check=True)
    os.system("echo shell-noise")
    if linger_ms:
        subprocess.Popen([sys.executable, "-c",
                          "import time\nfor i in range(20):\n"
                          f"    print('late-child-noise', i, flush=True); time.sleep({linger_ms / 20000})"])
    return "children started"


@server.tool
def big(size: int) -> str:
    """A string of ``size`` characters (the reply is about that many bytes)."""
    return "x" * size


@server.tool
def big_pestered(size: int, seconds: float) -> str:
    """A ``size``-character reply while another thread sends SIGWINCH to this worker thread
    every ~0.5 ms for ``seconds``: the reply is written while the writer keeps getting
    interrupted (short writes, EINTR)."""
    target = threading.get_ident()
    stop = time.monotonic() + seconds

    def pest():
        while time.monotonic() < stop:
            try:
                signal.pthread_kill(target, signal.SIGWINCH)
            except (ProcessLookupError, OSError):
                return
            STATS["pest_kills"] += 1
            time.sleep(0.0005)
    threading.Thread(target=pest, daemon=True).start()
    return "y" * size


@server.tool
def spin(seconds: float) -> str:
    """Keep the interpreter busy (holding the GIL in turns with the other threads)."""
    stop = time.monotonic() + seconds
    n = 0
    while time.monotonic() < stop:
        n += 1
    return f"spun {n}"


@server.tool
def write_stats() -> dict:
    """Counters: os.write calls, short writes, SIGWINCH handled, SIGWINCH sent by big_pestered."""
    return dict(STATS)


@server.tool
def pid() -> int:
    return os.getpid()


if __name__ == "__main__":
    server.run()
