#!/usr/bin/env python3
"""Benchmark stdio MCP servers: mcp_min against a bare floor and other SDKs.

    bash bench/setup.sh                  # once: installs sdk, fastmcp, ts in a cache
    python3 bench/bench.py               # full run, all peers found
    python3 bench/bench.py --quick --peers floor,mcp_min   # smoke test, no setup
    python3 bench/bench.py --baseline f19a278   # and mcp_min@f19a278: that commit's mcp_min.py

Every peer serves the same three tools over stdio -- add(a, b), echo(text),
sleep(ms) -- and is measured the same way, after the handshake: cold start,
peak memory, sequential and pipelined calls, lone calls (each after a pause),
concurrent sleeps, ping latency while slow calls are in flight, calls
cancelled at random moments, large payloads and server CPU per call, pinned
to CPUs or not (or both, side by side: --pin both).  The peers that also serve MCP 2026-07-28 (mcp_min, the Python SDK) run the
sequential and pipelined calls a second time in that era: no initialize, the
envelope in every request.  The results go to a JSON report and a Markdown
table of medians with each peer's ratio to the floor (see bench/README.md for
what each figure means).

Standard library only; Python 3.10+.  Linux only (/proc is read for memory
and CPU time).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import gc
import json
import os
import platform
import random
import re
import select
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
PEERS_DIR = BENCH_DIR / "peers"
RESULTS_DIR = BENCH_DIR / "results"
DEFAULT_CACHE = Path(os.environ.get("MCP_MIN_BENCH_CACHE") or "~/.cache/mcp-min-bench").expanduser()

PEER_NAMES = ("floor", "mcp_min", "sdk", "fastmcp", "ts")
PROTOCOL_VERSION = "2025-11-25"
# MCP 2026-07-28 has no initialize: every request carries this envelope in params._meta.
# Built once; the driver pre-encodes each request line with it, as it does without it.
MODERN_VERSION = "2026-07-28"
ENVELOPE = {"io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
            "io.modelcontextprotocol/clientCapabilities": {}}
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
MODERN_PEERS = ("mcp_min", "sdk")  # the peers that serve 2026-07-28 beside the handshake era
# The directory whose mcp_min.py bench/peers/mcp_min_server.py imports (default: the
# repository root); --baseline points it at an earlier mcp_min.py in the scratch directory.
MODULE_DIR_VARIABLE = "MCP_MIN_BENCH_MODULE_DIR"
# In the order they run; each modern_ phase follows its handshake-era twin at once, so that
# drift on the machine between the two (whose ratio is a target) is as small as it can be.
PHASE_NAMES = ("cold_start", "sequential", "modern_sequential", "pipelined", "modern_pipelined",
               "lone", "concurrency", "head_of_line", "cancellation", "payload")
PINNINGS = ("no", "yes", "both")  # --pin: unpinned, pinned, or each peer both ways
MIB = 1024 * 1024
HANDSHAKE_TIMEOUT = 30.0  # seconds; fastmcp alone needs over a second to start
CALL_TIMEOUT = 10.0
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
BUSY_WARNING = 0.1  # other load before a run, as a fraction of all CPUs, that makes the report warn


@dataclass
class Settings:
    """How much of each measurement to do."""

    spawns: int = 20  # cold starts timed (after one untimed warm-up)
    calls: int = 3000  # sequential calls per round
    pipelined: int = 5000  # requests written back to back per round
    lone_calls: int = 200  # calls made one at a time, each after a pause
    lone_gap_ms: float = 10.0  # the pause before each of them
    rounds: int = 3  # rounds of the sequential, pipelined and concurrency runs
    sleep_ms: float = 200.0  # S in the concurrency runs
    slow_ms: float = 1000.0  # length of the slow calls in the head-of-line runs
    pings: int = 25  # pings sent during each head-of-line run
    cancellations: int = 1000  # calls in the random-cancellation run
    payload_mib: tuple[int, ...] = (1, 10, 100)
    echoes: int = 5  # echoes per size up to 10 MiB (bigger ones: one)
    pin: bool = False  # this run's servers (and the driver) are pinned to CPUs
    repeat: int = 1  # the whole run per peer, interleaved across peers
    phases: tuple[str, ...] = PHASE_NAMES  # which measurements to make


QUICK = dict(spawns=5, calls=300, pipelined=1000, lone_calls=20, rounds=1, sleep_ms=100.0, slow_ms=300.0,
             pings=10, cancellations=200, payload_mib=(1, 10), echoes=2)
CONCURRENCY = (8, 64)
HEAD_OF_LINE = (8, 48)


class BenchError(Exception):
    """A peer failed one measurement: recorded in the report, never fatal."""


class ServerGone(BenchError):
    """The server closed its stdout (usually: it exited)."""


class TimedOut(BenchError):
    """No reply before the deadline."""


class Refused(BenchError):
    """The server answered with a JSON-RPC error."""


# --------------------------------------------------------------------------- peers

@dataclass
class Peer:
    name: str  # one of PEER_NAMES, or mcp_min@REF: the baseline
    argv: list[str] = field(default_factory=list)
    env: dict[str, str] | None = None
    interpreter: str = ""
    missing: str = ""  # why it cannot run; empty when it can
    shown_env: dict[str, str] = field(default_factory=dict)  # what the command line shows of env

    @property
    def kind(self) -> str:
        """Which of PEER_NAMES it is: the baseline is an mcp_min."""
        return self.name.partition("@")[0]

    def command(self) -> str:
        return shlex.join([f"{key}={value}" for key, value in self.shown_env.items()]
                          + self.argv)


@dataclass
class Baseline:
    """An earlier mcp_min.py, measured beside the repository's in the same run (--baseline):
    the file of a commit, tag or branch (`git show REF:mcp_min.py`), or a file named by
    its path. Read when the run starts, so that it cannot change under a long run."""

    ref: str  # as given
    origin: str  # where the file came from, for the report
    source: bytes
    commit: str = ""  # the full hash, when REF names a commit

    @property
    def label(self) -> str:
        return f"mcp_min@{self.ref}"

    def write(self, workdir: Path) -> Path:
        """The file as mcp_min.py in the run's scratch directory (never in the repository);
        returns its directory."""
        directory = workdir / "baseline"
        directory.mkdir(exist_ok=True)
        (directory / "mcp_min.py").write_bytes(self.source)
        return directory

    def describe(self) -> dict:
        return {"peer": self.label, "ref": self.ref, "commit": self.commit,
                "origin": self.origin, "bytes": len(self.source)}


def resolve_baseline(ref: str) -> Baseline:
    """--baseline REF: an existing file's path, else a commit, tag or branch of this
    repository. Raises ValueError saying what was tried."""
    path = Path(ref).expanduser()
    if path.is_file():
        return Baseline(ref, f"the file {path.resolve()}", path.read_bytes())

    def git(*words: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "-C", str(REPO_ROOT), *words], capture_output=True,
                              timeout=60)
    try:
        found = git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    except (OSError, subprocess.SubprocessError) as error:
        raise ValueError(f"--baseline {ref}: no such file, and git cannot be run ({error})")
    if found.returncode or not found.stdout.strip():
        raise ValueError(f"--baseline {ref}: neither a file nor a commit, tag or branch of "
                         f"{REPO_ROOT}")
    commit = found.stdout.decode().strip()
    shown = git("show", f"{commit}:mcp_min.py")
    if shown.returncode:
        raise ValueError(f"--baseline {ref}: commit {commit[:12]} has no mcp_min.py")
    return Baseline(ref, f"mcp_min.py of commit {commit}", shown.stdout, commit)


def file_name(name: str) -> str:
    """A peer's or server's name made fit for a file name (mcp_min@../old.py)."""
    return re.sub(r"[^\w.@-]+", "_", name)


def make_bare_venv(directory: Path) -> tuple[list[str], str]:
    """The interpreter command for the stdlib-only peers, and a description of it.

    A venv without packages, so that floor and mcp_min start the same way as
    the peers living in the venvs of bench/setup.sh: a venv interpreter with
    -I, and no .pth hook of the system site-packages.
    """
    base = getattr(sys, "_base_executable", None) or sys.executable
    try:
        subprocess.run([base, "-m", "venv", "--without-pip", str(directory)],
                       check=True, capture_output=True, timeout=60)
        return [str(directory / "bin" / "python"), "-I"], f"package-less venv of {base}, -I"
    except (OSError, subprocess.SubprocessError) as error:
        warn(f"could not create a venv ({error}); floor and mcp_min run with -I -S instead")
        return [base, "-I", "-S"], f"{base} -I -S (venv failed)"


def python_version(python: str) -> str:
    try:
        out = subprocess.run([python, "-I", "-S", "-c", "import sys; print(sys.version.split()[0])"],
                             capture_output=True, text=True, timeout=30)
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "?"


def find_peers(names: list[str], cache: Path, workdir: Path,
               baseline: Baseline | None = None) -> list[Peer]:
    """Build the command of each requested peer, or say why it is missing. The baseline
    (named mcp_min@REF among `names`) runs mcp_min's script on the baseline's file."""
    peers = []
    stdlib_python = None
    for name in names:
        peer = Peer(name)
        if peer.kind in ("floor", "mcp_min"):
            if stdlib_python is None:
                stdlib_python = make_bare_venv(workdir / "venv")
            python, how = stdlib_python
            script = PEERS_DIR / ("floor_server.py" if name == "floor" else "mcp_min_server.py")
            # Bytecode goes to the run's scratch directory, not into the repository.
            peer.argv = [*python, "-X", f"pycache_prefix={workdir / 'pycache'}", str(script)]
            peer.interpreter = f"Python {python_version(python[0])} ({how})"
            if name == "mcp_min" and not (REPO_ROOT / "mcp_min.py").exists():
                peer.missing = f"{REPO_ROOT / 'mcp_min.py'} does not exist yet"
            if peer.kind == "mcp_min":
                # set either way, so that a value in the driver's environment changes nothing
                directory = REPO_ROOT
                if baseline is not None and name == baseline.label:
                    directory = baseline.write(workdir)
                    peer.shown_env = {MODULE_DIR_VARIABLE: str(directory)}
                peer.env = {**os.environ, MODULE_DIR_VARIABLE: str(directory)}
        elif name in ("sdk", "fastmcp"):
            python = cache / f"venv-{name}" / "bin" / "python"
            peer.argv = [str(python), "-I", str(PEERS_DIR / f"{name}_server.py")]
            if not python.exists():
                peer.missing = f"no venv at {python.parent.parent} (run bench/setup.sh)"
            else:
                peer.interpreter = f"Python {python_version(str(python))} (venv {python.parent.parent}, -I)"
        elif name == "ts":
            modules = cache / "ts" / "node_modules"
            node = shutil.which("node")
            peer.argv = [node or "node", str(PEERS_DIR / "ts_server.cjs")]
            peer.env = {**os.environ, "NODE_PATH": str(modules)}
            if node is None:
                peer.missing = "node is not on PATH"
            elif not (modules / "@modelcontextprotocol" / "sdk").is_dir():
                peer.missing = f"no @modelcontextprotocol/sdk under {modules} (run bench/setup.sh)"
            else:
                version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout
                peer.interpreter = f"node {version.strip()}"
        peers.append(peer)
    return peers


# --------------------------------------------------------------------------- one server process

class Session:
    """One server process, spoken to in newline-delimited JSON-RPC.

    Reading is done on the raw pipe with select(), so every wait has a
    deadline: a server that hangs costs a timeout, never the whole run.
    With an `envelope`, every request carries it as params._meta (MCP 2026-07-28).
    """

    def __init__(self, peer: Peer, stderr_path: Path, pin: bool, envelope: dict | None = None):
        self.peer = peer
        self.envelope = envelope
        self.stderr_path = stderr_path
        self._stderr = open(stderr_path, "wb")
        self.started = time.perf_counter()
        try:
            self.proc = subprocess.Popen(
                peer.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
                env=peer.env, bufsize=0, cwd=REPO_ROOT,
                preexec_fn=(lambda: os.sched_setaffinity(0, {1})) if pin else None,
            )
        except OSError as error:
            self._stderr.close()
            raise BenchError(f"cannot start {peer.argv[0]}: {error}") from None
        self.pid = self.proc.pid
        self._in = self.proc.stdin.fileno()
        self._out = self.proc.stdout.fileno()
        self._buffer = bytearray()
        self._scanned = 0  # bytes of _buffer known to hold no newline
        self._next_id = 0
        self._writers: list[threading.Thread] = []
        self.line_time = 0.0  # perf_counter() when the last line read was complete

    # ----- writing

    def encode(self, method: str, params: dict | None = None) -> tuple[int, bytes]:
        """A request as one line of bytes, and its id."""
        self._next_id += 1
        message = {"jsonrpc": "2.0", "id": self._next_id, "method": method}
        if self.envelope is not None:
            params = {**(params or {}), "_meta": self.envelope}
        if params is not None:
            message["params"] = params
        return self._next_id, json.dumps(message).encode() + b"\n"

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._in, view):]
        except (BrokenPipeError, OSError) as error:
            raise ServerGone(f"writing to the server failed: {error}") from None

    def write_in_background(self, *chunks: bytes, pause=None) -> dict:
        """Write from a thread, so that a big write cannot deadlock with the server's replies;
        `pause()`, if given, says how long to wait (s) after each chunk."""
        outcome: dict = {}

        def run():
            try:
                for chunk in chunks:
                    self.write(chunk)
                    if pause is not None:
                        time.sleep(pause())
            except BenchError as error:
                outcome["error"] = str(error)

        thread = threading.Thread(target=run, daemon=True)
        self._writers.append(thread)
        thread.start()
        return outcome

    def notify(self, method: str) -> None:
        self.write(self.encode_notification(method))

    def encode_notification(self, method: str, params: dict | None = None) -> bytes:
        message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        return json.dumps(message).encode() + b"\n"

    # ----- reading

    def read_line(self, deadline: float) -> bytes:
        while True:
            end = self._buffer.find(b"\n", self._scanned)
            if end >= 0:
                self.line_time = time.perf_counter()
                line = bytes(self._buffer[:end])
                del self._buffer[:end + 1]
                self._scanned = 0
                return line
            self._scanned = len(self._buffer)
            remaining = deadline - time.perf_counter()
            if remaining <= 0 or not select.select([self._out], [], [], remaining)[0]:
                raise TimedOut(f"timed out waiting for a reply{self._describe_exit()}")
            chunk = os.read(self._out, 1 << 16)
            if not chunk:
                try:
                    self.proc.wait(1.0)  # usually it is exiting: wait to report its status
                except subprocess.TimeoutExpired:
                    pass
                raise ServerGone(f"the server closed its output{self._describe_exit()}")
            self._buffer += chunk

    def read_reply_line(self, deadline: float) -> bytes:
        """The next line that is not a notification or a request, unparsed.

        For the timed loops: parsing costs the driver about as much as a fast
        server spends on a whole call, so it is done after the clock stops.
        Only good where no reply can contain the text "method" (add, ping).
        """
        while True:
            line = self.read_line(deadline)
            if line.strip() and b'"method"' not in line:
                return line

    def read_response(self, deadline: float) -> dict:
        """The next response, skipping notifications and requests from the server."""
        while True:
            message = parse_response(self.read_line(deadline))
            if message is not None:
                return message

    def wait_for(self, request_id: int, deadline: float, others: dict | None = None) -> dict:
        """Read until the response to `request_id`; other responses go to `others`."""
        while True:
            message = self.read_response(deadline)
            if message["id"] == request_id:
                return message
            if others is None:
                raise BenchError(f"reply to id {message['id']} while waiting for id {request_id}")
            others[message["id"]] = message

    def request(self, method: str, params: dict | None = None, timeout: float = CALL_TIMEOUT) -> dict:
        request_id, data = self.encode(method, params)
        self.write(data)
        return self.wait_for(request_id, time.perf_counter() + timeout)

    def handshake(self) -> dict:
        """initialize, then notifications/initialized; returns the initialize result."""
        response = self.request("initialize", {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"},
        }, HANDSHAKE_TIMEOUT)
        if "result" not in response:
            raise Refused(f"initialize failed: {error_text(response)}")
        self.notify("notifications/initialized")
        return response["result"]

    # ----- the process seen from /proc

    def peak_rss_kib(self) -> int:
        """VmHWM: the most resident memory the process has had so far."""
        for line in self._proc_file("status").splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
        raise ServerGone(f"no VmHWM for pid {self.pid}{self._describe_exit()}")

    def cpu_seconds(self) -> float:
        """utime + stime of the whole process (all its threads), in clock ticks' resolution."""
        fields = self._proc_file("stat").rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS

    def _proc_file(self, name: str) -> str:
        try:
            with open(f"/proc/{self.pid}/{name}") as file:
                return file.read()
        except OSError:
            raise ServerGone(f"pid {self.pid} is gone{self._describe_exit()}") from None

    def _describe_exit(self) -> str:
        code = self.proc.poll()
        if code is None:
            return ""
        return f" (server exited with code {code}{stderr_tail(self.stderr_path)})"

    def close(self) -> None:
        """EOF on stdin, then a few seconds' grace, then SIGTERM, then SIGKILL."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        for stop, grace in ((None, 3.0), (self.proc.terminate, 2.0), (self.proc.kill, None)):
            if stop:
                stop()
            try:
                self.proc.wait(grace)
                break
            except subprocess.TimeoutExpired:
                continue
        for thread in self._writers:
            thread.join(5)
        self.proc.stdout.close()
        self._stderr.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def parse_reply(line: bytes) -> dict:
    """Parse a line from read_reply_line(), which must be a response."""
    message = parse_response(line)
    if message is None:
        raise BenchError(f"expected a response, got {line[:200]!r}")
    return message


def parse_response(line: bytes) -> dict | None:
    """A response as a dict; None for a blank line, a notification or a request."""
    if not line.strip():
        return None
    try:
        message = json.loads(line)
    except ValueError:
        raise BenchError(f"the server wrote a line that is not JSON: {line[:200]!r}") from None
    if not isinstance(message, dict) or "id" not in message or "method" in message:
        return None
    if message["id"] is None and "error" in message:
        raise Refused(error_text(message))
    return message


def error_text(message: dict) -> str:
    error = message.get("error") or {}
    return f"JSON-RPC error {error.get('code')}: {error.get('message')}"


def stderr_tail(path: Path, limit: int = 300) -> str:
    try:
        text = path.read_bytes()[-limit:].decode(errors="replace").strip()
    except OSError:
        return ""
    return f"; stderr ends: {' | '.join(text.splitlines()[-4:])}" if text else ""


def tool_call(name: str, arguments: dict) -> tuple[str, dict]:
    return "tools/call", {"name": name, "arguments": arguments}


def check_tool_result(message: dict, expected) -> None:
    """Accept the value as a text block, as structuredContent, or as structuredContent.result."""
    if "result" not in message:
        raise Refused(error_text(message))
    result = message["result"]
    texts = [block.get("text") for block in result.get("content", []) if block.get("type") == "text"]
    if result.get("isError"):
        raise Refused(f"tool error: {' '.join(map(str, texts))[:300]}")
    structured = result.get("structuredContent")
    if str(expected) in texts or structured == expected or (
            isinstance(structured, dict) and structured.get("result") == expected):
        return
    shown = repr(texts)[:100]
    raise BenchError(f"wrong result: expected {str(expected)[:40]!r}, got text {shown}")


def check_modern_result(message: dict) -> None:
    """A 2026-07-28 result says what it is and who sent it; one without resultType and
    serverInfo was served in the handshake era, and would make the comparison meaningless."""
    result = message.get("result")
    if not isinstance(result, dict):
        raise Refused(error_text(message))
    meta = result.get("_meta")
    if result.get("resultType") != "complete" or not (isinstance(meta, dict)
                                                     and SERVER_INFO_KEY in meta):
        raise BenchError(f"not a {MODERN_VERSION} result (resultType, _meta serverInfo): "
                         f"{json.dumps(result)[:200]}")


def check_call_result(message: dict, expected, modern: bool) -> None:
    check_tool_result(message, expected)
    if modern:
        check_modern_result(message)


# --------------------------------------------------------------------------- measurements

def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * len(ordered)) - 1))]


class Bench:
    """Runs every measurement on one peer; each group gets fresh server processes."""

    def __init__(self, peer: Peer, settings: Settings, workdir: Path):
        self.peer = peer
        self.settings = settings
        self.workdir = workdir
        self._sessions = 0

    def session(self, modern: bool = False) -> Session:
        """A fresh server; `modern`: every request will carry the 2026-07-28 envelope."""
        self._sessions += 1
        stderr = self.workdir / f"{file_name(self.peer.name)}-{self._sessions}.stderr"
        return Session(self.peer, stderr, self.settings.pin, ENVELOPE if modern else None)

    def started_session(self, modern: bool = False) -> Session:
        """A server past the handshake and one call of each tool used, so nothing is cold.

        `modern`: no handshake, and server/discover in place of ping (a handshake-era method).
        """
        session = self.session(modern)
        try:
            if not modern:
                session.handshake()
            check_call_result(session.request(*tool_call("add", {"a": 1, "b": 2})), 3, modern)
            check_call_result(session.request(*tool_call("sleep", {"ms": 1})), "slept", modern)
            if modern:
                discovered = session.request("server/discover", {})
                check_modern_result(discovered)
                if MODERN_VERSION not in discovered["result"].get("supportedVersions", []):
                    raise BenchError(f"server/discover does not list {MODERN_VERSION}")
            else:
                session.request("ping", {})
        except BaseException:
            session.close()
            raise
        return session

    # ----- cold start

    def cold_start(self) -> dict:
        """Spawn -> initialize result, over many spawns; the first one only warms caches."""
        samples = []
        for attempt in range(self.settings.spawns + 1):
            with self.session() as session:
                session.handshake()
                if attempt:
                    samples.append((session.line_time - session.started) * 1000)
        return {"median_ms": statistics.median(samples), "min_ms": min(samples),
                "max_ms": max(samples), "samples_ms": samples}

    def warm_up(self) -> None:
        """One untimed spawn, as cold_start makes first: it compiles floor's and mcp_min's
        bytecode into the scratch directory, so that no measured server pays for that."""
        with self.session() as session:
            session.handshake()

    # ----- sequential calls, one outstanding

    def sequential(self, modern: bool = False) -> dict:
        """`modern`: the same calls with no initialize and the envelope in every request."""
        with self.session(modern) as session:
            if not modern:
                session.handshake()
            check_call_result(session.request(*tool_call("add", {"a": 1, "b": 2})), 3, modern)
            rss_kib = session.peak_rss_kib()
            self._check_tool_list(session, modern)
            for i in range(min(200, self.settings.calls)):  # warm-up
                session.request(*tool_call("add", {"a": i, "b": 1}))

            latencies_us: list[float] = []
            rates = []
            cpu = 0.0
            for _ in range(self.settings.rounds):
                requests = [session.encode(*tool_call("add", {"a": i, "b": 1})) for i in range(self.settings.calls)]
                lines = []
                cpu_before = session.cpu_seconds()
                with gc_paused():
                    start = time.perf_counter()
                    for _, data in requests:
                        sent = time.perf_counter()
                        session.write(data)
                        lines.append(session.read_reply_line(sent + CALL_TIMEOUT))
                        latencies_us.append((session.line_time - sent) * 1e6)
                    elapsed = session.line_time - start
                cpu += session.cpu_seconds() - cpu_before
                rates.append(len(requests) / elapsed)
                for i, ((request_id, _), line) in enumerate(zip(requests, lines, strict=True)):
                    reply = parse_reply(line)
                    if reply["id"] != request_id:
                        raise BenchError(f"reply to id {reply['id']} while waiting for id {request_id}")
                    check_call_result(reply, i + 1, modern)
        calls = self.settings.calls * self.settings.rounds
        return {
            "rss_after_call_kib": rss_kib,
            "calls": calls,
            "p50_us": percentile(latencies_us, 0.50),
            "p99_us": percentile(latencies_us, 0.99),
            "calls_per_s": statistics.median(rates),
            "calls_per_s_rounds": rates,
            "cpu_us_per_call": cpu / calls * 1e6,
            "cpu_resolution_us_per_call": 1e6 / CLOCK_TICKS / calls,
        }

    def _check_tool_list(self, session: Session, modern: bool = False) -> None:
        reply = session.request("tools/list", {})
        names = {tool.get("name") for tool in reply.get("result", {}).get("tools", [])}
        if not {"add", "echo", "sleep"} <= names:
            raise BenchError(f"tools/list lacks add/echo/sleep: {sorted(names)}")
        if modern:
            check_modern_result(reply)

    # ----- lone calls

    def lone(self) -> dict:
        """Calls one at a time, each after a pause, as a client that thinks between calls
        makes them: each call finds the server idle, where a sequential one finds it just
        back from the previous call. The server's CPU time includes what it spends idle."""
        count, gap = self.settings.lone_calls, self.settings.lone_gap_ms / 1000
        latencies_us: list[float] = []
        with self.started_session() as session:
            cpu_before = session.cpu_seconds()
            for i in range(count):
                request_id, data = session.encode(*tool_call("add", {"a": i, "b": 1}))
                time.sleep(gap)
                sent = time.perf_counter()
                session.write(data)
                line = session.read_reply_line(sent + CALL_TIMEOUT)
                latencies_us.append((session.line_time - sent) * 1e6)
                reply = parse_reply(line)
                if reply["id"] != request_id:
                    raise BenchError(f"reply to id {reply['id']} while waiting for id {request_id}")
                check_call_result(reply, i + 1, False)
            cpu = session.cpu_seconds() - cpu_before
        return {"calls": count, "gap_ms": self.settings.lone_gap_ms,
                "p50_us": percentile(latencies_us, 0.50), "p90_us": percentile(latencies_us, 0.90),
                "cpu_us_per_call": cpu / count * 1e6}

    # ----- pipelined calls

    def pipelined(self, modern: bool = False) -> dict:
        """`modern`: the same calls with no initialize and the envelope in every request."""
        count = self.settings.pipelined
        rates = []
        cpu = 0.0
        with self.started_session(modern) as session:
            for _ in range(self.settings.rounds):
                requests = [session.encode(*tool_call("add", {"a": i, "b": 2 * i})) for i in range(count)]
                expected = {request_id: 3 * i for i, (request_id, _) in enumerate(requests)}
                blob = b"".join(data for _, data in requests)
                cpu_before = session.cpu_seconds()
                with gc_paused():
                    start = time.perf_counter()
                    writer = session.write_in_background(blob)
                    deadline = start + 60.0
                    lines = [session.read_reply_line(deadline) for _ in range(count)]
                    elapsed = session.line_time - start
                cpu += session.cpu_seconds() - cpu_before
                if "error" in writer:
                    raise BenchError(writer["error"])
                replies = [parse_reply(line) for line in lines]
                answers: dict[int, int] = {}
                problems: list[str] = []
                for reply in replies:
                    request_id = reply["id"]
                    answers[request_id] = answers.get(request_id, 0) + 1
                    if request_id not in expected:
                        problems.append(f"reply to unknown id {request_id}")
                        continue
                    try:
                        check_call_result(reply, expected[request_id], modern)
                    except BenchError as error:
                        problems.append(f"id {request_id}: {error}")
                missing = [i for i in expected if i not in answers]
                repeated = [i for i, n in answers.items() if n > 1]
                if missing or repeated or problems:
                    raise BenchError(f"{len(missing)} ids unanswered, {len(repeated)} answered twice, "
                                     f"{len(problems)} wrong: {problems[:3]}")
                rates.append(count / elapsed)
        calls = count * self.settings.rounds
        return {"requests": count, "calls_per_s": statistics.median(rates), "calls_per_s_rounds": rates,
                "all_answered_once": True, "cpu_us_per_call": cpu / calls * 1e6,
                "cpu_resolution_us_per_call": 1e6 / CLOCK_TICKS / calls}

    # ----- concurrent sync sleeps

    def concurrency(self) -> dict:
        ideal_ms = self.settings.sleep_ms
        results = {}
        with self.started_session() as session:
            for count in CONCURRENCY:
                makespans = []
                for _ in range(self.settings.rounds):
                    requests = [session.encode(*tool_call("sleep", {"ms": ideal_ms})) for _ in range(count)]
                    start = time.perf_counter()
                    session.write(b"".join(data for _, data in requests))
                    replies: dict[int, dict] = {}
                    deadline = start + count * ideal_ms / 1000 + CALL_TIMEOUT
                    while len(replies) < count:
                        reply = session.read_response(deadline)
                        replies[reply["id"]] = reply
                    makespans.append((session.line_time - start) * 1000)
                    for request_id, _ in requests:
                        if request_id not in replies:
                            raise BenchError(f"no reply to sleep call {request_id}")
                        check_tool_result(replies[request_id], "slept")
                makespan = statistics.median(makespans)
                results[str(count)] = {"calls": count, "sleep_ms": ideal_ms, "makespan_ms": makespan,
                                       "ratio_to_ideal": makespan / ideal_ms, "makespans_ms": makespans}
        return results

    # ----- head-of-line blocking

    def head_of_line(self) -> dict:
        """Ping round trips while N slow calls are in flight."""
        slow_ms = self.settings.slow_ms
        results = {}
        with self.started_session() as session:
            for count in HEAD_OF_LINE:
                requests = [session.encode(*tool_call("sleep", {"ms": slow_ms})) for _ in range(count)]
                start = time.perf_counter()
                session.write(b"".join(data for _, data in requests))
                window_end = start + slow_ms / 1000 * 0.8
                deadline = start + count * slow_ms / 1000 + CALL_TIMEOUT
                slow_replies: dict[int, dict] = {}
                time.sleep(slow_ms / 1000 * 0.05)  # let the slow calls reach the server
                pings_ms = []
                while len(pings_ms) < self.settings.pings and time.perf_counter() < window_end:
                    ping_id, data = session.encode("ping", {})
                    sent = time.perf_counter()
                    session.write(data)
                    session.wait_for(ping_id, deadline, slow_replies)
                    pings_ms.append((session.line_time - sent) * 1000)
                    time.sleep(0.002)
                while len(slow_replies) < count:
                    reply = session.read_response(deadline)
                    slow_replies[reply["id"]] = reply
                for request_id, _ in requests:
                    check_tool_result(slow_replies[request_id], "slept")
                results[str(count)] = {"slow_calls": count, "slow_ms": slow_ms, "pings": len(pings_ms),
                                       "ping_p50_ms": statistics.median(pings_ms),
                                       "ping_max_ms": max(pings_ms), "pings_ms": pings_ms}
        return results

    # ----- cancellations at random moments

    def cancellation(self) -> dict:
        """`cancellations` sleep calls, most of them cancelled at a random moment: before they
        are sent (the cancel is then ignored), right after, a few lines later or much later,
        written in bursts with random pauses. The outcome must be exact: every call answered
        at most once and with the right text, every call not cancelled answered exactly once,
        and the server still answers a ping. A cancelled call may have been answered anyway
        (the two crossed, or the server ignores cancellations): those are counted. The same
        sequence for every peer."""
        rng = random.Random(1000)
        long_ms = self.settings.slow_ms  # 5 % of the calls; the rest take 0 to 20 ms
        with self.started_session() as session:
            lines, due = [], []  # due: (line position, id) of cancellations to write later
            must, cancelled = set(), set()
            for _ in range(self.settings.cancellations):
                long_call = rng.random() < 0.05
                ms = long_ms if long_call else rng.choice([0, 0, 1, 2, 5, 10, 20])
                request_id, data = session.encode(*tool_call("sleep", {"ms": ms}))
                moment = rng.random()
                if moment < 0.1:  # cancelled before it exists: ignored, so it must be answered
                    lines.append(cancel_line(session, request_id))
                    must.add(request_id)
                elif moment < 0.3 and not long_call:
                    must.add(request_id)
                else:
                    cancelled.add(request_id)
                    due.append((len(lines) + rng.choice([0, 0, 1, 3, 10, 50]), request_id))
                lines.append(data)
                for entry in [entry for entry in due if entry[0] <= len(lines)]:
                    due.remove(entry)
                    lines.append(cancel_line(session, entry[1]))
            lines += [cancel_line(session, request_id) for _, request_id in due]
            bursts = [b"".join(lines[i:i + 37]) for i in range(0, len(lines), 37)]
            start = time.perf_counter()
            writer = session.write_in_background(
                *bursts, pause=lambda: rng.random() * 0.003 if rng.random() < 0.3 else 0)
            answers: dict[int, int] = {}
            problems: list[str] = []
            deadline = start + 60.0
            while not must <= answers.keys():
                reply = session.read_response(deadline)
                self._count_answer(reply, must, cancelled, answers, problems)
            answered_ms = (session.line_time - start) * 1000
            # a long call whose cancellation did not stop it answers a long call's time later
            late = time.perf_counter() + long_ms / 1000 + 0.5
            with contextlib.suppress(TimedOut):
                while True:
                    reply = session.read_response(late)
                    self._count_answer(reply, must, cancelled, answers, problems)
            if "error" in writer:
                raise BenchError(writer["error"])
            twice = [request_id for request_id, times in answers.items() if times > 1]
            if twice or problems or not self._still_alive(session):
                raise BenchError(f"not exact: {len(twice)} calls answered more than once, "
                                 f"{len(problems)} wrong replies {problems[:3]}, or no ping after")
        answered_anyway = len(cancelled & answers.keys())
        return {"calls": self.settings.cancellations, "cancelled": len(cancelled),
                "cancelled_answered": answered_anyway,
                "cancelled_unanswered": len(cancelled) - answered_anyway,
                "all_answered_ms": answered_ms, "exact": True}

    @staticmethod
    def _count_answer(reply: dict, must: set, cancelled: set, answers: dict,
                      problems: list) -> None:
        """Count a reply; one to a call not cancelled must be its result, one to a cancelled
        call may be anything (an error saying it was cancelled, say)."""
        request_id = reply["id"]
        answers[request_id] = answers.get(request_id, 0) + 1
        if request_id not in must and request_id not in cancelled:
            problems.append(f"a reply to id {request_id!r}, never sent")
        elif request_id in must:
            try:
                check_tool_result(reply, "slept")
            except BenchError as error:
                problems.append(f"id {request_id}: {error}")

    # ----- large payloads

    def payload(self, mib: int) -> dict:
        """Echo a string of `mib` MiB: time per echo and peak RSS of a fresh server."""
        text = make_text(mib * MIB)
        repeats = self.settings.echoes if mib <= 10 else 1
        timeout = 10.0 + mib * 0.5
        with self.started_session() as session:
            times_ms = []
            for _ in range(repeats):
                request_id, data = session.encode(*tool_call("echo", {"text": text}))
                start = time.perf_counter()
                writer = session.write_in_background(data)
                try:
                    reply = session.wait_for(request_id, start + timeout)
                    check_tool_result(reply, text)
                except Refused as error:
                    alive = self._still_alive(session)
                    return {"status": "refused", "error": str(error), "alive_after": alive,
                            "rss_kib": session.peak_rss_kib() if alive else None}
                except ServerGone as error:
                    return {"status": "died", "error": str(error)}
                except TimedOut:
                    return {"status": "timeout", "error": f"no reply within {timeout:g} s",
                            "alive_after": self._still_alive(session)}
                except BenchError as error:
                    return {"status": "failed", "error": str(error)}
                times_ms.append((session.line_time - start) * 1000)
                if "error" in writer:
                    raise BenchError(writer["error"])
            return {"status": "ok", "time_ms": statistics.median(times_ms), "times_ms": times_ms,
                    "rss_kib": session.peak_rss_kib()}

    @staticmethod
    def _still_alive(session: Session) -> bool:
        try:
            return "result" in session.request("ping", {}, timeout=5.0)
        except BenchError:
            return False


@contextlib.contextmanager
def gc_paused():
    """No garbage collection in the driver while a timed loop runs."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def cancel_line(session: Session, request_id: int) -> bytes:
    return session.encode_notification("notifications/cancelled",
                                       {"requestId": request_id, "reason": "bench"})


def make_text(size: int) -> str:
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,;:-_"
    return (alphabet * (size // len(alphabet) + 1))[:size]


def describe(error: Exception) -> str:
    """A BenchError speaks for itself; anything else is named, as it may be the driver's fault."""
    return str(error) if isinstance(error, BenchError) else f"{type(error).__name__}: {error}"


def run_peer(peer: Peer, settings: Settings, workdir: Path) -> dict:
    """All measurements of one peer; a failed one is recorded and the rest go on."""
    bench = Bench(peer, settings, workdir)
    report: dict = {"peer": peer.name, "pinned": settings.pin, "command": peer.command(),
                    "interpreter": peer.interpreter, "errors": {}}

    def measure(key: str, function, *args):
        progress(f"  {peer.name}: {key} ...")
        started = time.perf_counter()
        try:
            result = function(*args)
            if result is not None:           # warm_up measures nothing
                report[key] = result
        except Exception as error:  # noqa: BLE001 -- a peer's failure must not end the run
            report["errors"][key] = describe(error)
            progress(f"  {peer.name}: {key} FAILED: {describe(error)}")
        progress(f"  {peer.name}: {key} done in {time.perf_counter() - started:.1f} s")

    phases = settings.phases
    first = "cold_start" if "cold_start" in phases else "warm_up"
    measure(first, bench.cold_start if first == "cold_start" else bench.warm_up)
    if first in report["errors"]:
        report["errors"]["all"] = "the server did not complete the handshake; nothing else measured"
        return report
    steps = {
        "sequential": bench.sequential,
        "modern_sequential": lambda: bench.sequential(modern=True),
        "pipelined": bench.pipelined,
        "modern_pipelined": lambda: bench.pipelined(modern=True),
        "lone": bench.lone,
        "concurrency": bench.concurrency,
        "head_of_line": bench.head_of_line,
        "cancellation": bench.cancellation,
    }
    for key, step in steps.items():     # in PHASE_NAMES order
        if key in phases and (not key.startswith("modern_") or peer.kind in MODERN_PEERS):
            measure(key, step)
    if "payload" not in phases:
        return report
    report["payload"] = {}
    for mib in settings.payload_mib:
        progress(f"  {peer.name}: echo {mib} MiB ...")
        try:
            report["payload"][f"{mib}MiB"] = bench.payload(mib)
        except Exception as error:  # noqa: BLE001
            report["payload"][f"{mib}MiB"] = {"status": "failed", "error": describe(error)}
        outcome = report["payload"][f"{mib}MiB"]
        progress(f"  {peer.name}: echo {mib} MiB: {outcome['status']}"
                 + (f": {outcome['error']}" if "error" in outcome else ""))
    return report


def combine(reports: list[dict]) -> dict:
    """Interleaved repeats of one peer as one report: each number is the median of its
    repeats, anything else is as the first repeat that has it. An outcome whose status
    differed between repeats (an echo refused once) is the first one that was not "ok",
    whole; each error says which repeat it happened in; the repeats are kept too."""
    def merge(values):
        present = [value for value in values if value is not None]
        if present and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
            return statistics.median(present)
        if present and all(isinstance(v, dict) for v in present):
            statuses = [value.get("status") for value in present]
            if len(set(statuses)) > 1:
                worst = next(value for value in present if value.get("status") != "ok")
                return {**worst, "statuses": statuses}
            keys = dict.fromkeys(key for value in present for key in value)
            return {key: merge([value.get(key) for value in present]) for key in keys}
        return present[0] if present else None

    errors = {key: f"repeat {number} of {len(reports)}: {error}"
              for number, report in enumerate(reports, 1) for key, error in report["errors"].items()}
    return {**merge(reports), "errors": errors, "repeats": reports}


# --------------------------------------------------------------------------- report

@dataclass
class Metric:
    label: str
    path: tuple  # keys into a peer's report
    unit_scale: float = 1.0
    digits: int = 1
    relative: bool = True  # show the ratio to the floor
    floor_path: tuple | None = None  # the floor's figure to compare with, if not at `path`


def metrics(settings: Settings) -> list[Metric]:
    rows = [
        Metric("spawn → initialize, median (ms)", ("cold_start", "median_ms")),
        Metric("peak RSS after 1 call (MiB)", ("sequential", "rss_after_call_kib"), 1 / 1024),
        Metric("sequential add: p50 (µs)", ("sequential", "p50_us"), digits=0),
        Metric("sequential add: p99 (µs)", ("sequential", "p99_us"), digits=0),
        Metric("sequential add: calls/s", ("sequential", "calls_per_s"), digits=0),
        Metric("server CPU per sequential call (µs)", ("sequential", "cpu_us_per_call"), digits=0),
        Metric("pipelined add: calls/s", ("pipelined", "calls_per_s"), digits=0),
        Metric("server CPU per pipelined call (µs)", ("pipelined", "cpu_us_per_call"), digits=0),
        # The floor speaks one era: the 2026-07-28 rows compare with its only figure.
        Metric(f"sequential add, {MODERN_VERSION}: p50 (µs)", ("modern_sequential", "p50_us"),
               digits=0, floor_path=("sequential", "p50_us")),
        Metric(f"sequential add, {MODERN_VERSION}: calls/s", ("modern_sequential", "calls_per_s"),
               digits=0, floor_path=("sequential", "calls_per_s")),
        Metric(f"server CPU per call, {MODERN_VERSION} (µs)",
               ("modern_sequential", "cpu_us_per_call"), digits=0,
               floor_path=("sequential", "cpu_us_per_call")),
        Metric(f"pipelined add, {MODERN_VERSION}: calls/s", ("modern_pipelined", "calls_per_s"),
               digits=0, floor_path=("pipelined", "calls_per_s")),
        Metric(f"lone add, {settings.lone_gap_ms:g} ms apart: p50 (µs)", ("lone", "p50_us"),
               digits=0),
        Metric(f"lone add, {settings.lone_gap_ms:g} ms apart: p90 (µs)", ("lone", "p90_us"),
               digits=0),
        Metric("server CPU per lone call, idle time included (µs)", ("lone", "cpu_us_per_call"),
               digits=0),
    ]
    for count in CONCURRENCY:
        rows.append(Metric(f"{count} × sleep({settings.sleep_ms:g} ms): makespan / ideal",
                           ("concurrency", str(count), "ratio_to_ideal"), digits=2, relative=False))
    for count in HEAD_OF_LINE:
        rows.append(Metric(f"ping p50 during {count} slow calls (ms)",
                           ("head_of_line", str(count), "ping_p50_ms"), digits=2, relative=False))
    calls = f"{settings.cancellations:,} calls cancelled at random"
    rows.append(Metric(f"{calls}: cancelled, not answered",
                       ("cancellation", "cancelled_unanswered"), digits=0, relative=False))
    rows.append(Metric(f"{calls}: the others answered (ms)", ("cancellation", "all_answered_ms")))
    for mib in settings.payload_mib:
        rows.append(Metric(f"echo {mib} MiB: time (ms)", ("payload", f"{mib}MiB", "time_ms")))
        rows.append(Metric(f"echo {mib} MiB: peak RSS (MiB)", ("payload", f"{mib}MiB", "rss_kib"), 1 / 1024))
    return [row for row in rows if row.path[0] in settings.phases]   # only what was measured


def dig(report: dict | None, path: tuple):
    for key in path:
        if not isinstance(report, dict) or key not in report:
            return None
        report = report[key]
    return report


def cell(metric: Metric, report: dict, floor: dict | None) -> str:
    value = dig(report, metric.path)
    status = dig(report, metric.path[:2] + ("status",)) if metric.path[0] == "payload" else None
    relative = ratio(report, floor, metric.path, metric.floor_path)
    if value is None:
        if status:
            return status
        return "failed" if report["errors"].get(metric.path[0]) or report["errors"].get("all") else "—"
    text = f"{value * metric.unit_scale:,.{metric.digits}f}"
    if status not in (None, "ok"):
        text += f" ({status})"
    elif metric.relative and relative is not None and report is not floor:
        text += f" ({relative:.2f}×)"
    return text


@dataclass
class Target:
    metric: str
    goal: str
    phases = ()  # the measurements it judges (set by each kind): shown if any ran

    def judge(self, peer: dict, floor: dict | None, ts: dict | None) -> str:
        raise NotImplementedError


def ratios(report, reference, path, reference_path=None) -> list:
    """value / reference's value (at reference_path, else at path too), for each repeat
    (paired in the order they ran; a report against itself pairs each repeat with itself)."""
    if not report or not reference:
        return []
    base = reference_path or path
    pairs = zip(report.get("repeats", [report]), reference.get("repeats", [reference]))
    return [dig(r, path) / dig(f, base) for r, f in pairs
            if dig(r, path) is not None and dig(f, base)]


def ratio(report, reference, path, reference_path=None):
    """The median ratio over the repeats (with one run: the ratio), or None."""
    values = ratios(report, reference, path, reference_path)
    return statistics.median(values) if values else None


def spread(report, reference, path, reference_path=None) -> str:
    """With repeats, the range of their ratios: "; 0.71-1.02× in 5 repeats"."""
    values = ratios(report, reference, path, reference_path)
    return f"; {min(values):.2f}–{max(values):.2f}× in {len(values)} repeats" if len(values) > 1 else ""


class RatioTarget(Target):
    def __init__(self, metric, goal, path, limit, at_most=True):
        super().__init__(metric, goal)
        self.path, self.limit, self.at_most = path, limit, at_most
        self.phases = (path[0],)

    def judge(self, peer, floor, ts):
        value = ratio(peer, floor, self.path)
        if value is None:
            return "n/a"
        met = value <= self.limit if self.at_most else value >= self.limit
        return f"{'met' if met else 'MISSED'} ({value:.2f}×{spread(peer, floor, self.path)})"


class AbsoluteTarget(Target):
    def __init__(self, metric, goal, path, limit, unit):
        super().__init__(metric, goal)
        self.path, self.limit, self.unit = path, limit, unit
        self.phases = (path[0],)

    def judge(self, peer, floor, ts):
        value = dig(peer, self.path)
        if value is None:
            return "n/a"
        return f"{'met' if value <= self.limit else 'MISSED'} ({value:.2f}{self.unit})"


class PipelinedTarget(Target):
    phases = ("pipelined",)

    def judge(self, peer, floor, ts):
        path = ("pipelined", "calls_per_s")
        to_floor, to_ts = ratio(peer, floor, path), ratio(peer, ts, path)
        if to_floor is None:
            return "n/a"
        met = to_floor >= 0.5 and (to_ts is None or to_ts >= 2)
        detail = (f"{to_floor:.2f}× floor{spread(peer, floor, path)}, "
                  + (f"{to_ts:.2f}× ts{spread(peer, ts, path)}" if to_ts is not None else "ts not measured"))
        return f"{'met' if met else 'MISSED'} ({detail})"


class EraTarget(Target):
    """A peer's 2026-07-28 calls/s against its own handshake-era calls/s, repeat by repeat."""
    phases = ("modern_sequential", "modern_pipelined")

    def judge(self, peer, floor, ts):
        parts, met = [], True
        for phase in ("sequential", "pipelined"):
            path, base = (f"modern_{phase}", "calls_per_s"), (phase, "calls_per_s")
            value = ratio(peer, peer, path, base)
            if value is not None:
                met = met and value >= 0.9
                parts.append(f"{phase} {value:.2f}×{spread(peer, peer, path, base)}")
        if not parts:
            return "n/a"
        return f"{'met' if met else 'MISSED'} ({', '.join(parts)})"


class EchoTarget(Target):
    phases = ("payload",)

    def judge(self, peer, floor, ts):
        time_ratio = ratio(peer, floor, ("payload", "10MiB", "time_ms"))
        rss_ratio = ratio(peer, floor, ("payload", "10MiB", "rss_kib"))
        status = dig(peer, ("payload", "10MiB", "status"))
        if status not in (None, "ok"):       # in any repeat
            return f"MISSED ({status})"
        if time_ratio is None or rss_ratio is None:
            return "n/a"
        met = time_ratio <= 1.5 and rss_ratio <= 1.5
        return f"{'met' if met else 'MISSED'} (time {time_ratio:.2f}×, RSS {rss_ratio:.2f}×)"


class CancellationTarget(Target):
    """Exact in every repeat: a repeat that was not is an error of the cancellation phase."""
    phases = ("cancellation",)

    def judge(self, peer, floor, ts):
        error = peer["errors"].get("cancellation") or peer["errors"].get("all")
        if error:
            return f"MISSED ({error[:120]})"
        outcome = peer.get("cancellation")
        if outcome is None:
            return "n/a"
        return (f"met (exact; {outcome['cancelled_unanswered']:.0f} of {outcome['cancelled']:.0f} "
                "cancelled calls not answered)")


class HugeEchoTarget(Target):
    phases = ("payload",)

    def judge(self, peer, floor, ts):
        outcome = dig(peer, ("payload", "100MiB"))
        if outcome is None:
            return "n/a"
        if outcome["status"] == "ok":
            return "met (echoed)"
        if outcome["status"] == "refused":
            return "met (refused" + (", still serving)" if outcome.get("alive_after") else ", then gone)")
        return f"MISSED ({outcome['status']})"


TARGETS = [
    RatioTarget("spawn → initialize", "≤ 1.5 × floor", ("cold_start", "median_ms"), 1.5),
    RatioTarget("sequential calls/s", "≥ 0.6 × floor", ("sequential", "calls_per_s"), 0.6, at_most=False),
    PipelinedTarget("pipelined calls/s", "≥ 0.5 × floor and ≥ 2 × ts"),
    RatioTarget("server CPU per pipelined call", "≤ 2 × floor",
                ("pipelined", "cpu_us_per_call"), 2),
    EraTarget(f"{MODERN_VERSION} calls/s", "≥ 0.9 × handshake era, sequential and pipelined"),
    RatioTarget("peak RSS after one call", "≤ 1.5 × floor", ("sequential", "rss_after_call_kib"), 1.5),
    AbsoluteTarget("64 concurrent sync sleeps", "makespan ≤ 1.15 × ideal",
                   ("concurrency", "64", "ratio_to_ideal"), 1.15, "×"),
    AbsoluteTarget("ping during 8 slow calls", "p50 ≤ 2 ms", ("head_of_line", "8", "ping_p50_ms"), 2, " ms"),
    AbsoluteTarget("ping during 48 slow calls", "p50 ≤ 10 ms", ("head_of_line", "48", "ping_p50_ms"), 10, " ms"),
    CancellationTarget("random cancellations", "exact: every call answered at most once, "
                       "every call not cancelled once, a ping after"),
    EchoTarget("10 MiB echo", "time and peak RSS ≤ 1.5 × floor"),
    HugeEchoTarget("100 MiB echo", "echoed, or refused with a clear error"),
]


def same_run(peers: dict, report: dict, name: str) -> dict | None:
    """The report of peer `name` measured as `report` was: pinned, or not."""
    for label, other in peers.items():
        if other.get("peer", label) == name and other.get("pinned") == report.get("pinned"):
            return other
    return None


PINNING_TEXT = {
    "no": "no",
    "yes": "yes (driver on CPU 0, each server on CPU 1)",
    "both": "both, side by side: every peer pinned (driver on CPU 0, server on CPU 1) and "
            "unpinned, interleaved; each ratio is to the floor measured the same way",
}


def markdown(report: dict, settings: Settings) -> str:
    peers = report["peers"]
    names = list(peers)
    machine = report["machine"]
    pinning = report.get("pinning", "yes" if settings.pin else "no")
    lines = [
        f"## Benchmark {report['date']}",
        "",
        f"Machine: {machine['nproc']} × {machine['cpu']}, Linux {machine['kernel']}, "
        f"driver Python {machine['python']}; pinned: {PINNING_TEXT[pinning]}; "
        f"the run took {report['duration_s']:.0f} s.",
        f"Command: `{report['command']}`",
        "",
    ]
    baseline = report.get("baseline")
    if baseline:
        lines += [f"Baseline: `{baseline['peer']}` is the same peer script serving "
                  f"{baseline['origin']}; `mcp_min`, the repository's mcp_min.py as it is on disk.", ""]
    busy = machine["busy_before_run"]
    if busy is not None and busy > BUSY_WARNING:
        lines += [f"**Warning: the CPUs were {busy:.0%} busy with other work just before the run; "
                  "expect noisy figures.**", ""]
    order = "every peer pinned, then every peer unpinned, then again" if pinning == "both" \
        else "every peer once, then again"
    lines += [
        "Medians; in brackets the ratio to the floor." if settings.repeat == 1 else
        f"Medians of {settings.repeat} interleaved repeats ({order}); in brackets the "
        "median of the per-repeat ratios to the floor, and in the targets the range of those ratios.",
        "",
    ]
    if any(key in settings.phases for key in ("modern_sequential", "modern_pipelined")):
        lines += [f"The {MODERN_VERSION} rows: the same calls to a server that never saw "
                  "initialize, every request carrying the envelope (peers that serve that era "
                  "only); the floor has one era, so their brackets compare with its one figure.",
                  ""]
    lines += [
        "| metric | " + " | ".join(names) + " |",
        "|---|" + "---:|" * len(names),
    ]
    floors = {n: same_run(peers, peers[n], "floor") for n in names}
    for metric in metrics(settings):
        lines.append(f"| {metric.label} | "
                     + " | ".join(cell(metric, peers[n], floors[n]) for n in names) + " |")
    if baseline:
        lines += against_baseline(peers, baseline["peer"], settings)
    judged = [n for n in names if peers[n].get("peer", n) != "floor"]
    if judged:
        lines += ["", "### Targets", "", "| metric | target | " + " | ".join(judged) + " |",
                  "|---|---|" + "---|" * len(judged)]
        for target in (t for t in TARGETS if set(t.phases) & set(settings.phases)):
            verdicts = [target.judge(peers[n], floors[n], same_run(peers, peers[n], "ts"))
                        for n in judged]
            lines.append(f"| {target.metric} | {target.goal} | " + " | ".join(verdicts) + " |")
    notes = []
    for name, reason in report["skipped"].items():
        notes.append(f"- {name}: skipped: {reason}")
    for name, peer in peers.items():
        for key, error in peer["errors"].items():
            notes.append(f"- {name}: {key} failed: {error}")
        for size, outcome in peer.get("payload", {}).items():
            if outcome["status"] != "ok":
                after = {True: "; still answers ping", False: "; no longer answers ping"}.get(
                    outcome.get("alive_after"), "")
                repeats = f" (by repeat: {', '.join(outcome['statuses'])})" if "statuses" in outcome else ""
                notes.append(f"- {name}: echo {size}: {outcome['status']}: {outcome.get('error', '')}{after}{repeats}")
    if notes:
        lines += ["", "### Notes", ""] + notes
    commands = {peers[n].get("peer", n): peers[n] for n in names}   # the same pinned or not
    lines += ["", "Peers:", ""] + [f"- {name}: {peer['interpreter']}: `{peer['command']}`"
                                   for name, peer in commands.items()]
    return "\n".join(lines) + "\n"


def against_baseline(peers: dict, label: str, settings: Settings) -> list[str]:
    """mcp_min's figures as multiples of the baseline's measured the same way (pinned or
    not): the median of the per-repeat ratios, and their range."""
    pairs = [(name, other) for name in peers for other in peers
             if peers[name].get("peer") == "mcp_min" and peers[other].get("peer") == label
             and peers[name].get("pinned") == peers[other].get("pinned")]
    if not pairs:
        return []
    lines = ["", f"### mcp_min against {label}", "",
             f"mcp_min's figure ÷ {label}'s: above 1 is more calls/s, or more time, memory or "
             "CPU.", "",
             "| metric | " + " | ".join(f"{name} ÷ {other}" for name, other in pairs) + " |",
             "|---|" + "---:|" * len(pairs)]
    for metric in metrics(settings):
        if not metric.relative:
            continue
        cells = []
        for name, other in pairs:
            new, old = peers[name], peers[other]
            value = ratio(new, old, metric.path)
            cells.append("—" if value is None else f"{value:.2f}×{spread(new, old, metric.path)}")
        lines.append(f"| {metric.label} | " + " | ".join(cells) + " |")
    return lines


def busy_fraction(seconds: float = 1.0) -> float | None:
    """How busy the CPUs are (0..1, from /proc/stat) while the driver itself sleeps."""
    def sample():
        with open("/proc/stat") as stat:
            ticks = [int(value) for value in stat.readline().split()[1:]]
        idle = ticks[3] + ticks[4]  # idle + iowait
        return sum(ticks) - idle, sum(ticks)

    try:
        busy_before, total_before = sample()
        time.sleep(seconds)
        busy_after, total_after = sample()
    except (OSError, ValueError, IndexError):
        return None
    return (busy_after - busy_before) / max(1, total_after - total_before)


def machine_info() -> dict:
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"nproc": os.cpu_count(), "cpu": cpu, "kernel": platform.release(),
            "python": platform.python_version(), "python_executable": sys.executable,
            "busy_before_run": busy_fraction()}


# --------------------------------------------------------------------------- command line

def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def warn(message: str) -> None:
    progress(f"warning: {message}")


def parse_args(argv: list[str]) -> tuple[argparse.Namespace, Settings]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--peers", default=",".join(PEER_NAMES),
                        help=f"comma-separated peers to run (default: {','.join(PEER_NAMES)})")
    parser.add_argument("--baseline", metavar="REF",
                        help="also run mcp_min@REF: the same tools served by the mcp_min.py of "
                             "REF, a commit, tag or branch of this repository (git show "
                             "REF:mcp_min.py) or a path to a file; beside mcp_min, every phase "
                             "mcp_min runs")
    parser.add_argument("--phases", default=",".join(PHASE_NAMES),
                        help="comma-separated measurements to make (default: all, in the order "
                             "they always run: %(default)s); the modern_ ones "
                             f"({MODERN_VERSION}, no initialize) run on {', '.join(MODERN_PEERS)} "
                             "only")
    parser.add_argument("--quick", action="store_true",
                        help="few iterations and no 100 MiB echo: a smoke test, seconds per peer")
    parser.add_argument("--pin", nargs="?", const="yes", default="no", choices=PINNINGS,
                        help="pin the driver to CPU 0 and each server to CPU 1; --pin both: "
                             "measure every peer pinned and unpinned, side by side")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE,
                        help="where bench/setup.sh installed the peers (default: %(default)s, "
                             "or $MCP_MIN_BENCH_CACHE)")
    parser.add_argument("--out", type=Path,
                        help="JSON report path (default: bench/results/latest.json, quick.json with --quick); "
                             "the Markdown table goes beside it with .md")
    defaults = Settings()
    parser.add_argument("--spawns", type=int, help=f"cold starts to time (default {defaults.spawns})")
    parser.add_argument("--calls", type=int, help=f"sequential calls per round (default {defaults.calls})")
    parser.add_argument("--pipelined", type=int, help=f"pipelined requests per round (default {defaults.pipelined})")
    parser.add_argument("--lone-calls", type=int,
                        help=f"calls made one at a time, each after a pause (default {defaults.lone_calls})")
    parser.add_argument("--lone-gap-ms", type=float,
                        help=f"the pause before each lone call (default {defaults.lone_gap_ms:g})")
    parser.add_argument("--rounds", type=int, help=f"rounds of each throughput run (default {defaults.rounds})")
    parser.add_argument("--sleep-ms", type=float, help=f"S of the concurrency runs (default {defaults.sleep_ms:g})")
    parser.add_argument("--slow-ms", type=float,
                        help=f"slow call length in the ping runs and the long calls of the "
                             f"cancellation run (default {defaults.slow_ms:g})")
    parser.add_argument("--cancellations", type=int,
                        help="calls in the random-cancellation run "
                             f"(default {defaults.cancellations})")
    parser.add_argument("--payload-mib", help="echo sizes in MiB, comma-separated (default 1,10,100)")
    parser.add_argument("--repeat", type=int, help="run every peer this many times, interleaved; report "
                                                  "medians, and the range of the ratios (default 1)")
    args = parser.parse_args(argv)

    settings = Settings(**QUICK) if args.quick else Settings()
    for name in ("spawns", "calls", "pipelined", "lone_calls", "lone_gap_ms", "rounds", "sleep_ms",
                 "slow_ms", "cancellations", "repeat"):
        value = getattr(args, name)
        if value is not None:
            if value <= 0:
                parser.error(f"--{name.replace('_', '-')} must be positive")
            setattr(settings, name, value)
    if args.payload_mib is not None:
        settings.payload_mib = tuple(int(size) for size in args.payload_mib.split(",") if size.strip())
    settings.pin = args.pin == "yes"
    args.peer_names = [name.strip() for name in args.peers.split(",") if name.strip()]
    unknown = [name for name in args.peer_names if name not in PEER_NAMES]
    if unknown:
        parser.error(f"unknown peer(s) {', '.join(unknown)}; choose from {', '.join(PEER_NAMES)}")
    args.baseline_file = None
    if args.baseline is not None:
        try:
            args.baseline_file = resolve_baseline(args.baseline)
        except ValueError as error:
            parser.error(str(error))
        # right after mcp_min, so that the two run one after the other in every repeat
        names = args.peer_names
        at = names.index("mcp_min") + 1 if "mcp_min" in names else len(names)
        names.insert(at, args.baseline_file.label)
    phases = {name.strip() for name in args.phases.split(",") if name.strip()}
    if not phases or phases - set(PHASE_NAMES):
        parser.error(f"unknown or no phase(s) {', '.join(sorted(phases - set(PHASE_NAMES)))}; "
                     f"choose from {', '.join(PHASE_NAMES)}")
    settings.phases = tuple(name for name in PHASE_NAMES if name in phases)
    if args.out is None:
        args.out = RESULTS_DIR / ("quick.json" if args.quick else "latest.json")
    return args, settings


def column(name: str, pinned: bool, pinning: str) -> str:
    """A peer's column in the report: its name, and how it ran when there are both ways."""
    if pinning != "both":
        return name
    return f"{name} ({'pinned' if pinned else 'unpinned'})"


def main(argv: list[str] | None = None) -> int:
    args, settings = parse_args(sys.argv[1:] if argv is None else argv)
    if not sys.platform.startswith("linux"):
        progress("bench.py reads /proc: it runs on Linux only")
        return 2
    cpus = os.sched_getaffinity(0)
    if args.pin != "no" and not {0, 1} <= cpus:
        warn(f"--pin {args.pin} needs CPUs 0 and 1; running unpinned only")
        args.pin = "no"
    pinnings = {"no": (False,), "yes": (True,), "both": (True, False)}[args.pin]

    began = time.perf_counter()
    report = {
        "command": shlex.join([Path(sys.executable).name, *sys.argv]) if argv is None
        else shlex.join(["bench.py", *argv]),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine_info(),
        "settings": {key: getattr(settings, key) for key in Settings.__dataclass_fields__},
        "pinning": args.pin,
        "baseline": args.baseline_file.describe() if args.baseline_file else None,
        "skipped": {},
        "peers": {},
    }
    with tempfile.TemporaryDirectory(prefix="mcp-min-bench-") as tmp:
        workdir = Path(tmp)
        peers = []
        for peer in find_peers(args.peer_names, args.cache, workdir, args.baseline_file):
            if peer.missing:
                progress(f"skipping {peer.name}: {peer.missing}")
                report["skipped"][peer.name] = peer.missing
            else:
                peers.append(peer)
        # one column per peer and pinning, each peer's pinned and unpinned side by side
        runs: dict[tuple, list] = {(peer.name, pinned): [] for peer in peers for pinned in pinnings}
        try:
            for repeat in range(settings.repeat):    # interleaved: drift on the machine hits all
                for pinned in pinnings:
                    os.sched_setaffinity(0, {0} if pinned else cpus)
                    for peer in peers:
                        which = f" (repeat {repeat + 1} of {settings.repeat})" \
                            if settings.repeat > 1 else ""
                        progress(f"{column(peer.name, pinned, args.pin)}{which}: "
                                 f"{peer.command()}")
                        runs[peer.name, pinned].append(
                            run_peer(peer, replace(settings, pin=pinned), workdir))
        finally:
            os.sched_setaffinity(0, cpus)
        report["peers"] = {column(name, pinned, args.pin): reports[0] if len(reports) == 1
                           else combine(reports) for (name, pinned), reports in runs.items()}
    report["duration_s"] = time.perf_counter() - began
    if not any(peer["peer"] == "floor" for peer in report["peers"].values()):
        warn("the floor was not run: no ratios")

    table = markdown(report, settings)
    report["markdown"] = table
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    args.out.with_suffix(".md").write_text(table)
    print(table)
    progress(f"report: {args.out} and {args.out.with_suffix('.md')}")
    return 0 if report["peers"] else 1


if __name__ == "__main__":
    sys.exit(main())
