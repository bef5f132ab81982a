#!/usr/bin/env python3
"""Benchmark MCP over Streamable HTTP: requests/s and latency of `tools/call add`.

    bash bench/setup.sh            # once: venvs for the SDK and the engines, in a cache
    python3 bench/http_bench.py    # every server found, 3 interleaved rounds
    python3 bench/http_bench.py --quick --servers wsgiref   # smoke test, needs no setup

The servers, all serving bench/peers' tools on 127.0.0.1 in 2026-07-28 (stateless: every
request carries the envelope in params._meta and the MCP-Protocol-Version, Mcp-Method and
Mcp-Name headers; no initialize, no session):

    wsgiref       mcp_min.py serve --http (one process, a thread per connection)
    gunicorn-W    server.wsgi on gunicorn: W gthread workers, sharing MCP_MIN_STATE_KEY
    granian-WwTt  server.wsgi on granian: W workers of T blocking threads, sharing it
    haproxy-granian-NxWwTt
                  HAProxy running docs/http.md's configuration (but for its ports) in
                  front of N granian-WwTt backends, as docs/http.md scales out ("Several
                  processes and machines"): the proxy's cost on every request
    floor-ENGINE  bench/peers/floor_wsgi.py, a bare WSGI app, on the same engine and
                  configuration: what the engine alone costs (floor-wsgiref: on the
                  stdlib's threading WSGI server; floor-haproxy-...: behind the proxy)
    ENGINE@REF    with --baseline REF: the same server on the mcp_min.py of REF, a
                  commit, tag or branch (or a file), one for each mcp_min row
    sdk           the official Python SDK (MCPServer.streamable_http_app with
                  stateless_http and json_response) on uvicorn

By default: wsgiref, gunicorn-1 and -2, granian with 1 and 2 workers of 1, 2 and 8
threads, each followed by its floor, and sdk. Each row's requests/s are also given as a
ratio to its floor's and to the SDK's.

The load comes from wrk when it is on PATH (--load wrk): C, one thread for all N
keep-alive connections, so that it leaves the servers as much CPU as it can; its Lua script
checks every reply (status 200, the sum, a 2026-07-28 result). Without wrk (--load python)
the driver holds the N connections itself, a thread each, on raw sockets with every request
encoded before the clock starts, and checks every reply afterwards. Each window counts the
replies that arrived before it closed. The Python driver needs about as much CPU as a fast
server: on two cores it caps what a floor can show, and its ratios read high.
Rounds are interleaved (every server once, then again) and each figure is the median over
rounds, each ratio the median of the per-round ratios. See bench/README.md.

Standard library only; Python 3.10+; Linux (reads /proc).
"""

from __future__ import annotations

import argparse
import datetime
import functools
import importlib.util
import json
import os
import re
import resource
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402  (the stdio benchmark: shared helpers and conventions)
from bench import (BUSY_WARNING, DEFAULT_CACHE, ENVELOPE, MODERN_VERSION,  # noqa: E402
                   MODULE_DIR_VARIABLE, PEERS_DIR, REPO_ROOT, BenchError, file_name,
                   machine_info, percentile, progress, warn)

# A server's name: an engine serving mcp_min (with floor- before it, the bare WSGI
# floor), or sdk. The groups: floor-, engine, gunicorn's workers, granian's workers and
# threads.
NAME_PATTERN = re.compile(
    r"(floor-)?(wsgiref|gunicorn-([1-9]\d*)|granian-([1-9]\d*)w([1-9]\d*)t)$")
# HAProxy in front of granian backends: the groups are floor-, the backends, and each
# one's workers and threads.
PROXY_PATTERN = re.compile(r"(floor-)?haproxy-granian-([1-9]\d*)x([1-9]\d*)w([1-9]\d*)t$")
ENGINE_ROWS = ("wsgiref", "gunicorn-1", "gunicorn-2", "granian-1w1t", "granian-1w2t",
               "granian-1w8t", "granian-2w1t", "granian-2w2t", "granian-2w8t")
# Each floor right after its engine's row, so that drift on the machine hits both alike.
SERVER_NAMES = (*(name for row in ENGINE_ROWS for name in (row, f"floor-{row}")), "sdk")
# Shared by an engine's workers, as in any multi-worker setup.
STATE_KEY = "http-bench-state-key"
START_TIMEOUT = 30.0
REPLY_TIMEOUT = 10.0
# A server that fails a window (an error status, a wrong or unparsable reply, a closed or
# stuck connection) costs that window, never the run.
FAILURES = (BenchError, OSError, ValueError, AttributeError, KeyError, TypeError)

# Tiny modules written into the run's scratch directory: gunicorn, granian and uvicorn
# import an attribute of a module, and the peers' files name theirs `server` or `app`.
WSGI_APP = """import sys
sys.path.insert(0, {peers!r})
from {module} import {attribute} as app
"""
WSGI_APPS = {"mcp_min": ("mcp_min_server", "server"), "floor": ("floor_wsgi", "app")}
SDK_APP = """import sys
sys.path.insert(0, {peers!r})
from sdk_server import server
app = server.streamable_http_app(stateless_http=True, json_response=True)
"""


@dataclass
class Settings:
    # keep-alive connections in the throughput windows: an engine's workers take
    # connections as they race to accept them, so with few, one worker may get none (see
    # the README)
    connections: int = 16
    seconds: float = 3.0        # length of each throughput window
    sequential_seconds: float = 1.5   # length of each one-connection latency window
    warmup_seconds: float = 1.0
    rounds: int = 3
    threads: int = 4            # gunicorn --threads per worker
    pin: bool = False
    load: str = "python"        # what sends the requests: "wrk" or "python" (this driver)


QUICK = dict(seconds=0.5, sequential_seconds=0.3, warmup_seconds=0.3, rounds=1)


@dataclass
class ServerSpec:
    name: str                   # with @REF: the baseline's twin of an mcp_min row
    argv: list[str] = field(default_factory=list)
    port_pattern: str = ""      # the line of its log that gives the port
    ready_pattern: str = ""     # a line its log has once per worker ready to serve
    workers: int = 0            # worker processes to wait for (gunicorn, granian)
    env: dict | None = None
    interpreter: str = ""
    missing: str = ""
    shown_env: dict = field(default_factory=dict)   # what the command line shows of env
    backends: list = field(default_factory=list)    # behind HAProxy: each one's spec

    def command(self) -> str:
        shown = shlex.join([f"{key}={value}" for key, value in self.shown_env.items()]
                           + self.argv)
        if self.backends:
            shown += (f" (docs/http.md's configuration) in front of {len(self.backends)} "
                      f"× {self.backends[0].command()} (each on its own port)")
        return shown


# --------------------------------------------------------------------------- the servers

def engine_python(cache: Path, module: str) -> tuple[str | None, str]:
    """The interpreter that has the engine (gunicorn, granian): setup.sh's venv, else
    the one running the driver."""
    venv = cache / "venv-engines" / "bin" / "python"
    if venv.exists():
        return str(venv), f"venv {venv.parent.parent}"
    if importlib.util.find_spec(module) is not None:
        return sys.executable, "the driver's interpreter"
    return None, (f"no venv at {venv.parent.parent} (run bench/setup.sh) and no "
                  f"{module} here")


def installed_version(python: str, package: str) -> str:
    code = f"import importlib.metadata as m; print(m.version({package!r}))"
    out = subprocess.run([python, "-I", "-c", code], capture_output=True, text=True, timeout=60)
    return out.stdout.strip() or "?"


def free_port() -> int:
    """A port free now, for granian: it logs the port it was given, not the bound
    one."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def find_servers(names: list[str], cache: Path, workdir: Path, settings: Settings,
                 baseline: bench.Baseline | None = None):
    """Each server's command, or why it cannot run. A name with @REF serves the
    baseline's mcp_min.py, written into the scratch directory: mcp_min's peer script
    imports it from the directory the environment names."""
    specs, bare_python = [], None
    for app, (module, attribute) in WSGI_APPS.items():
        (workdir / f"{app}_app.py").write_text(
            WSGI_APP.format(peers=str(PEERS_DIR), module=module, attribute=attribute))
    baseline_dir = baseline.write(workdir) if baseline is not None else None
    for name in names:
        spec = ServerSpec(name)
        specs.append(spec)
        if name == "sdk":
            sdk_spec(spec, cache, workdir)
            continue
        row, _, ref = name.partition("@")
        module_dir = REPO_ROOT
        if ref:
            module_dir = baseline_dir
            spec.shown_env = {MODULE_DIR_VARIABLE: str(module_dir)}
        # set either way, so that a value in the driver's environment changes nothing
        env = {**os.environ, MODULE_DIR_VARIABLE: str(module_dir)}
        if PROXY_PATTERN.match(row):
            proxy_spec(spec, PROXY_PATTERN.match(row).groups(), env, cache, workdir)
            continue
        floor, engine, gunicorn_workers, granian_workers, threads = \
            NAME_PATTERN.match(row).groups()
        if engine == "wsgiref":
            if bare_python is None:
                bare_python = bench.make_bare_venv(workdir / "venv")
            wsgiref_spec(spec, bare_python, bool(floor), workdir, module_dir)
            spec.env = env
            continue
        module = "gunicorn" if gunicorn_workers else "granian"
        python, how = engine_python(cache, module)
        if python is None:
            spec.missing = how
            continue
        target = f"{'floor' if floor else 'mcp_min'}_app:app"
        command = isolated(python, workdir)
        if gunicorn_workers:
            gunicorn_spec(spec, command, int(gunicorn_workers), settings.threads,
                          target, workdir)
        else:
            granian_spec(spec, command, granian_workers, threads, target, workdir,
                         free_port())
        spec.env = {**env, "MCP_MIN_STATE_KEY": STATE_KEY}
        spec.interpreter = (f"Python {bench.python_version(python)} ({how}), {module} "
                            f"{installed_version(python, module)}")
    return specs


def granian_spec(spec: ServerSpec, command: list[str], workers: str, threads: str,
                 target: str, workdir: Path, port: int) -> None:
    spec.workers = int(workers)
    spec.argv = [*command, "-m", "granian", "--interface", "wsgi",
                 "--workers", workers, "--blocking-threads", threads,
                 "--host", "127.0.0.1", "--port", str(port),
                 "--working-dir", str(workdir), "--log-level", "info", target]
    spec.port_pattern = r"Listening at: http://127\.0\.0\.1:(\d+)"
    spec.ready_pattern = r"Started worker-"


def proxy_spec(spec: ServerSpec, groups: tuple, env: dict, cache: Path,
               workdir: Path) -> None:
    """HAProxy in front of N granian backends of W workers and T threads each, all
    sharing MCP_MIN_STATE_KEY (each a server with sessions, as docs/http.md deploys
    them); the workers are the backends' (spec.workers stays 0: the driver's
    connections are HAProxy's)."""
    floor, backends, workers, threads = groups
    haproxy = shutil.which("haproxy") or shutil.which("haproxy",
                                                      path="/usr/sbin:/usr/local/sbin")
    python, how = engine_python(cache, "granian")
    if haproxy is None:
        spec.missing = "haproxy is not installed (Debian: apt install haproxy)"
        return
    if python is None:
        spec.missing = how
        return
    target = f"{'floor' if floor else 'mcp_min'}_app:app"
    ports = set()
    while len(ports) < int(backends):     # granian is given its port: distinct ones
        ports.add(free_port())
    for number, port in enumerate(sorted(ports), 1):
        backend = ServerSpec(f"{spec.name}-backend{number}")
        granian_spec(backend, isolated(python, workdir), workers, threads, target,
                     workdir, port)
        backend.env = {**env, "MCP_MIN_STATE_KEY": STATE_KEY}
        spec.backends.append(backend)
    spec.argv = [haproxy, "-db", "-f", str(workdir / f"{file_name(spec.name)}.cfg")]
    version = subprocess.run([haproxy, "-v"], capture_output=True, text=True,
                             timeout=60).stdout.split(" - ")[0].strip()
    spec.interpreter = (f"{version}; backends: Python {bench.python_version(python)} "
                        f"({how}), granian {installed_version(python, 'granian')}")


def haproxy_config(port: int, backend_ports: list[int]) -> str:
    """docs/http.md's HAProxy configuration as written but for its ports: the bind's
    on `port`, and a server line of the same options for each backend in place of its
    two."""
    text = (REPO_ROOT / "docs" / "http.md").read_text(encoding="utf-8")
    (config,) = re.findall(r"```haproxy\n(.*?)```", text, re.S)
    config, bound = re.subn(r"(?<=bind 127\.0\.0\.1:)8000\b", str(port), config)
    servers = re.findall(r"^ *server app1 127\.0\.0\.1:8001\b.*\n *server app2 .*\n",
                         config, re.M)
    if bound != 1 or len(servers) != 1:
        raise BenchError("docs/http.md's HAProxy configuration no longer binds "
                         "127.0.0.1:8000 and names app1 and app2 on :8001 and :8002")
    first = servers[0].splitlines(keepends=True)[0]
    lines = "".join(first.replace("app1 127.0.0.1:8001", f"app{n} 127.0.0.1:{p}")
                    for n, p in enumerate(backend_ports, 1))
    return config.replace(servers[0], lines)


def isolated(python: str, workdir: Path) -> list[str]:
    """The interpreter with -I, and its bytecode in the scratch directory, not beside
    the peers: -X, since -I ignores PYTHONPYCACHEPREFIX. Workers forked or spawned by
    the engine inherit both."""
    return [python, "-I", "-X", f"pycache_prefix={workdir / 'pycache'}"]


def wsgiref_spec(spec: ServerSpec, bare_python: tuple, floor: bool,
                 workdir: Path, module_dir: Path = REPO_ROOT) -> None:
    """As in bench.py: a venv without packages, -I, bytecode in the scratch folder.
    mcp_min serves from `module_dir`'s mcp_min.py, which the peer script then imports."""
    python, how = bare_python
    served = ([str(PEERS_DIR / "floor_wsgi.py")] if floor else
              [str(module_dir / "mcp_min.py"), "serve", "--http", "127.0.0.1:0",
               str(PEERS_DIR / "mcp_min_server.py")])
    spec.argv = [*python, "-X", f"pycache_prefix={workdir / 'pycache'}", *served]
    spec.port_pattern = r"http://127\.0\.0\.1:(\d+)/mcp"
    spec.interpreter = f"Python {bench.python_version(python[0])} ({how})"


def gunicorn_spec(spec: ServerSpec, command: list[str], workers: int, threads: int,
                  target: str, workdir: Path) -> None:
    spec.workers = workers
    spec.argv = [*command, "-m", "gunicorn", "--workers", str(workers),
                 "--worker-class", "gthread", "--threads", str(threads),
                 "--bind", "127.0.0.1:0", "--chdir", str(workdir)]
    help_text = subprocess.run([*command, "-m", "gunicorn", "--help"],
                               capture_output=True, text=True, timeout=60).stdout
    if "--no-control-socket" in help_text:    # else one socket shared by every run
        spec.argv.append("--no-control-socket")
    spec.argv.append(target)
    spec.port_pattern = r"Listening at: http://127\.0\.0\.1:(\d+)"
    spec.ready_pattern = r"Booting worker with pid"


def sdk_spec(spec: ServerSpec, cache: Path, workdir: Path) -> None:
    python = cache / "venv-sdk" / "bin" / "python"
    if not python.exists():
        spec.missing = f"no venv at {python.parent.parent} (run bench/setup.sh)"
        return
    (workdir / "sdk_http.py").write_text(SDK_APP.format(peers=str(PEERS_DIR)))
    spec.argv = [*isolated(str(python), workdir), "-m", "uvicorn",
                 "--app-dir", str(workdir), "sdk_http:app", "--host", "127.0.0.1",
                 "--port", "0", "--no-access-log"]
    spec.port_pattern = r"Uvicorn running on http://127\.0\.0\.1:(\d+)"
    spec.interpreter = (f"Python {bench.python_version(str(python))} (venv "
                        f"{python.parent.parent}, -I), uvicorn "
                        f"{installed_version(str(python), 'uvicorn')}, mcp "
                        f"{installed_version(str(python), 'mcp')}")


class RunningServer:
    """A server process (for gunicorn and granian, their master) and the port its log
    names. It leads a process group of its own: should the master not stop, its workers
    are killed with it."""

    def __init__(self, spec: ServerSpec, workdir: Path):
        self.spec = spec
        self.log_path = workdir / f"{file_name(spec.name)}.log"
        self.log = open(self.log_path, "wb")
        # granian logs to stdout, the others to stderr
        self.proc = subprocess.Popen(spec.argv, stdin=subprocess.DEVNULL,
                                     stdout=self.log, stderr=subprocess.STDOUT,
                                     env=spec.env, cwd=workdir, start_new_session=True)
        try:
            self.port = self._wait_until_ready(time.monotonic() + START_TIMEOUT)
        except BaseException:         # not started, or Ctrl+C: no server left behind
            self.close()
            raise

    def _wait_until_ready(self, deadline: float) -> int:
        """The port, once the log names it and every worker is up."""
        while True:
            text = self.log_path.read_text(errors="replace")
            found = re.search(self.spec.port_pattern, text)
            ready = (len(re.findall(self.spec.ready_pattern, text)) if self.spec.workers
                     else 0)
            if found and ready >= self.spec.workers:
                return int(found.group(1))
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise BenchError(f"{self.spec.name} did not start: {text[-600:]}")
            time.sleep(0.05)

    def pids(self) -> list[int]:
        """The process and its children (the engine's workers), whichever of its threads
        started them."""
        pids = [self.proc.pid]
        try:
            for thread in os.listdir(f"/proc/{self.proc.pid}/task"):
                with open(f"/proc/{self.proc.pid}/task/{thread}/children") as children:
                    pids += [int(pid) for pid in children.read().split()]
        except OSError:
            pass
        return pids

    def cpu_seconds(self) -> float:
        total = 0.0
        for pid in self.pids():
            try:
                with open(f"/proc/{pid}/stat") as stat:
                    fields = stat.read().rpartition(")")[2].split()
                total += (int(fields[11]) + int(fields[12])) / bench.CLOCK_TICKS
            except (OSError, ValueError, IndexError):
                pass                  # a worker that just exited
        return total

    def context_switches(self) -> dict:
        """Each live thread's context switches so far, voluntary (it waits: for the GIL,
        a lock, a socket) and not (the kernel takes its CPU). Per request, they show how
        a round's threads took turns, which decides much of it on few CPUs."""
        counts = {}
        for pid in self.pids():
            try:
                for thread in os.listdir(f"/proc/{pid}/task"):
                    with open(f"/proc/{pid}/task/{thread}/status") as status:
                        counts[pid, thread] = sum(int(line.split()[1]) for line in status
                                                  if "ctxt_switches:" in line)
            except (OSError, ValueError, IndexError):
                pass                  # a thread or worker that just exited
        return counts

    def connections_per_worker(self) -> list[int]:
        """Established connections on the port held by each worker (gunicorn, granian):
        whether the kernel spread the driver's connections evenly."""
        inodes = set()
        try:
            with open("/proc/net/tcp") as table:
                for line in table.readlines()[1:]:
                    fields = line.split()
                    if fields[1].endswith(f":{self.port:04X}") and fields[3] == "01":
                        inodes.add(fields[9])
        except OSError:
            return []
        counts = []
        for pid in self.pids()[1:]:
            try:
                links = [os.readlink(f"/proc/{pid}/fd/{fd}")
                         for fd in os.listdir(f"/proc/{pid}/fd")]
            except OSError:
                continue
            counts.append(sum(link.startswith("socket:[") and link[8:-1] in inodes
                              for link in links))
        return counts

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            pass
        try:                          # a master that hung, or a worker that outlived it
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(5)
        self.log.close()


class ProxiedServer(RunningServer):
    """HAProxy in front of a RunningServer per backend. The port is HAProxy's; the CPU
    time and the context switches are HAProxy's and every backend's."""

    def __init__(self, spec: ServerSpec, workdir: Path):
        self.spec, self.backends, self.proc = spec, [], None
        self.log_path = workdir / f"{file_name(spec.name)}.log"
        self.log = open(self.log_path, "wb")
        try:
            for backend in spec.backends:
                self.backends.append(RunningServer(backend, workdir))
            self.port = free_port()
            Path(spec.argv[-1]).write_text(
                haproxy_config(self.port, [backend.port for backend in self.backends]))
            self.proc = subprocess.Popen(spec.argv, stdin=subprocess.DEVNULL,
                                         stdout=self.log, stderr=subprocess.STDOUT,
                                         cwd=workdir, start_new_session=True)
            deadline = time.monotonic() + START_TIMEOUT
            while not self.listening():
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise BenchError(f"{spec.name}: haproxy did not start: "
                                     f"{self.log_path.read_text(errors='replace')[-600:]}")
                time.sleep(0.05)
        except BaseException:
            self.close()
            raise

    def listening(self) -> bool:
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
            return True
        except OSError:
            return False

    def pids(self) -> list[int]:
        own = [self.proc.pid] if self.proc is not None else []
        return own + [pid for backend in self.backends for pid in backend.pids()]

    def connections_per_worker(self) -> list[int]:
        return []                     # the driver's connections are all HAProxy's

    def close(self) -> None:
        if self.proc is not None:
            super().close()
        else:
            self.log.close()
        for backend in self.backends:
            backend.close()


# --------------------------------------------------------------------------- the driver

def encode_requests(port: int, connection: int, count: int = 500) -> list[tuple[bytes, int]]:
    """`count` HTTP requests for one connection, each with the sum it must get back."""
    requests = []
    for i in range(count):
        message = {"jsonrpc": "2.0", "id": i, "method": "tools/call",
                   "params": {"name": "add", "arguments": {"a": i, "b": connection},
                              "_meta": ENVELOPE}}
        body = json.dumps(message, separators=(",", ":")).encode()
        head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                f"Content-Type: application/json\r\nAccept: application/json, text/event-stream"
                f"\r\nMCP-Protocol-Version: {MODERN_VERSION}\r\nMcp-Method: tools/call\r\n"
                f"Mcp-Name: add\r\nContent-Length: {len(body)}\r\n\r\n")
        requests.append((head.encode() + body, i + connection))
    return requests


class Connection:
    """One keep-alive connection on a raw socket: send a request, read one response."""

    def __init__(self, port: int):
        self.port = port
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=REPLY_TIMEOUT)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = b""
        self.reconnects = 0

    def _fill(self) -> None:
        data = self.sock.recv(65536)
        if not data:
            raise ConnectionError("the server closed the connection")
        self.buffer += data

    def exchange(self, request: bytes) -> tuple[int, bytes]:
        self.sock.sendall(request)
        while (end := self.buffer.find(b"\r\n\r\n")) < 0:
            self._fill()
        head, self.buffer = self.buffer[:end].lower(), self.buffer[end + 4:]
        status = int(head[9:12])
        if b"transfer-encoding: chunked" in head:
            body = self._read_chunked()
        else:
            found = re.search(rb"content-length: *(\d+)", head)
            if found is None:
                raise BenchError(f"a response with neither length nor chunks: {head[:200]!r}")
            length = int(found.group(1))
            while len(self.buffer) < length:
                self._fill()
            body, self.buffer = self.buffer[:length], self.buffer[length:]
        if b"connection: close" in head:          # the server will not take another request
            self.close()
            self.__init__(self.port)
            self.reconnects += 1
        return status, body

    def _read_chunked(self) -> bytes:
        body = b""
        while True:
            while (end := self.buffer.find(b"\r\n")) < 0:
                self._fill()
            size = int(self.buffer[:end].split(b";")[0], 16)
            while len(self.buffer) < end + 2 + size + 2:
                self._fill()
            body += self.buffer[end + 2:end + 2 + size]
            self.buffer = self.buffer[end + 2 + size + 2:]
            if size == 0:
                return body

    def close(self) -> None:
        self.sock.close()


def load_python(server: RunningServer, connections: int, seconds: float) -> dict:
    """`connections` clients, each sending `add` back to back on its own connection for
    `seconds`: requests/s (replies that arrived within the window), the latency of each, the
    server's and the driver's CPU time per request. Every reply is checked afterwards."""
    port = server.port
    plans = [encode_requests(port, c) for c in range(connections)]
    sockets, spread, opened = open_connections(server, plans)
    results = [[] for _ in range(connections)]        # (slot, sent, answered, status, body)
    failures = []
    start = threading.Barrier(connections + 1)
    window = {}

    def client(number):
        plan, sock, out = plans[number], sockets[number], results[number]
        try:
            start.wait(30)
            end, k = window["end"], 0
            while True:
                sent = time.perf_counter()
                if sent >= end:
                    return
                request, _ = plan[k % len(plan)]
                status, body = sock.exchange(request)
                out.append((k % len(plan), sent, time.perf_counter(), status, body))
                k += 1
        except Exception as error:                      # reported with the window's results
            failures.append(f"connection {number}: {error!r}")

    threads = [threading.Thread(target=client, args=(n,), daemon=True)
               for n in range(connections)]
    for thread in threads:
        thread.start()
    cpu_before, driver_before = server.cpu_seconds(), driver_cpu_seconds()
    switches_before = server.context_switches()
    window["start"] = time.perf_counter()
    window["end"] = window["start"] + seconds
    start.wait(30)
    for thread in threads:
        thread.join(seconds + REPLY_TIMEOUT + 5)
    cpu_used = server.cpu_seconds() - cpu_before
    switches = switches_since(switches_before, server.context_switches())
    driver_used = driver_cpu_seconds() - driver_before
    for sock in sockets:
        sock.close()
    if failures:
        raise BenchError("; ".join(failures[:3]))
    latencies, answered = [], 0
    for number, out in enumerate(results):
        for slot, sent, done, status, body in out:
            check_reply(status, body, plans[number][slot][1], slot)
            if done <= window["end"]:
                answered += 1
                latencies.append(done - sent)
    if not answered:
        raise BenchError("no reply within the window")
    return {"requests": answered, "requests_per_s": answered / seconds,
            "p50_ms": percentile(latencies, 0.5) * 1000,
            "p99_ms": percentile(latencies, 0.99) * 1000,
            "server_cpu_us_per_request": cpu_used / answered * 1e6,
            "server_switches_per_request": switches / answered,
            "driver_cpu_share": driver_used / seconds,
            "reconnects": sum(sock.reconnects for sock in sockets),
            "connections_per_worker": spread, "connection_openings": opened}


# The request is the Python driver's first (id 0, 0 + 1); a reply passes if it is a 200
# holding the sum and a 2026-07-28 result.
WRK_SCRIPT = """-- Written by http_bench.py: one tools/call add, every reply checked.
wrk.method = "POST"
wrk.path = "/mcp"
wrk.body = [[BODY]]
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "VERSION"
wrk.headers["Mcp-Method"] = "tools/call"
wrk.headers["Mcp-Name"] = "add"
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) bad = 0; first_bad = "" end
function response(status, headers, body)
  if status ~= 200 or not string.find(body, '"result":1}', 1, true)
      or not string.find(body, '"resultType":"complete"', 1, true)
      or not string.find(body, 'serverInfo', 1, true) then
    bad = bad + 1
    if first_bad == "" then first_bad = status .. " " .. string.sub(body, 1, 200) end
  end
end
function done(summary, latency, requests)
  local bad, first = 0, ""
  for _, thread in ipairs(threads) do
    bad = bad + thread:get("bad")
    if first == "" then first = thread:get("first_bad") end
  end
  local e = summary.errors
  io.write(string.format(
    "WRK %d %d %d %d %d %d\\n", summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99), bad,
    e.connect + e.read + e.write + e.status + e.timeout))
  io.write("WRK-FIRST-BAD " .. first .. "\\n")
end
"""


def load_wrk(server: RunningServer, connections: int, seconds: float,
             workdir: Path) -> dict:
    """load_python()'s figures, with wrk sending the requests: one wrk thread for all
    the connections (a second would take a core from the servers). wrk counts whole
    seconds: parse_args rounds the windows."""
    script = workdir / "add.lua"
    if not script.exists():
        body = encode_requests(server.port, 1, 1)[0][0].partition(b"\r\n\r\n")[2]
        script.write_text(WRK_SCRIPT.replace("BODY", body.decode())
                          .replace("VERSION", MODERN_VERSION))
    command = ["wrk", "-t1", f"-c{connections}", f"-d{seconds:g}s", "-s", str(script),
               f"http://127.0.0.1:{server.port}/mcp"]
    spread = []
    if server.spec.workers:           # once wrk has opened its connections
        probe = threading.Timer(min(0.5, seconds / 2),
                                lambda: spread.extend(server.connections_per_worker()))
        probe.start()
    wrk_cpu = functools.partial(driver_cpu_seconds, resource.RUSAGE_CHILDREN)
    cpu_before, driver_before = server.cpu_seconds(), wrk_cpu()
    switches_before = server.context_switches()
    out = subprocess.run(command, capture_output=True, text=True,
                         timeout=seconds + REPLY_TIMEOUT + 10)
    cpu_used = server.cpu_seconds() - cpu_before
    switches = switches_since(switches_before, server.context_switches())
    driver_used = wrk_cpu() - driver_before
    found = re.search(r"^WRK (\d+) (\d+) (\d+) (\d+) (\d+) (\d+)$", out.stdout, re.M)
    if out.returncode or not found:
        raise BenchError(f"wrk failed: {(out.stderr or out.stdout)[-300:]}")
    requests, duration_us, p50_us, p99_us, bad, errors = map(int, found.groups())
    if bad or errors:
        first = re.search(r"^WRK-FIRST-BAD (.*)$", out.stdout, re.M)
        raise BenchError(f"{bad} bad replies and {errors} socket errors or timeouts; "
                         f"the first bad one: {first.group(1) if first else '?'}")
    if not requests:
        raise BenchError("no reply within the window")
    return {"requests": requests, "requests_per_s": requests / (duration_us / 1e6),
            "p50_ms": p50_us / 1000, "p99_ms": p99_us / 1000,
            "server_cpu_us_per_request": cpu_used / requests * 1e6,
            "server_switches_per_request": switches / requests,
            "driver_cpu_share": driver_used / (duration_us / 1e6), "reconnects": 0,
            "connections_per_worker": spread, "connection_openings": 1}


def open_connections(server: RunningServer, plans: list) -> tuple[list, list, int]:
    """One connection per plan, opened one after the other, each sending its first request
    (untimed) before the next opens. An engine's workers race to accept connections,
    and with a few long-lived ones a worker may get none, which would measure one worker
    fewer: then all are closed and opened again (up to 5 times). Returns the
    connections, how many each worker holds, and how many openings that took."""
    for opening in range(1, 6):
        sockets = []
        for number, plan in enumerate(plans):
            sockets.append(Connection(server.port))
            request, expected = plan[-1]
            check_reply(*sockets[-1].exchange(request), expected, len(plan) - 1)
        spread = server.connections_per_worker() if server.spec.workers else []
        if 0 not in spread or len(plans) < server.spec.workers or opening == 5:
            return sockets, spread, opening
        for sock in sockets:
            sock.close()


def check_reply(status: int, body: bytes, expected: int, request_id: int) -> None:
    if status != 200:
        raise BenchError(f"HTTP {status}: {body[:200]!r}")
    message = json.loads(body)
    if message.get("id") != request_id:
        raise BenchError(f"reply to id {message.get('id')}, expected {request_id}")
    bench.check_call_result(message, expected, modern=True)


def switches_since(before: dict, after: dict) -> int:
    """Context switches between two context_switches() readings, in the threads alive at
    the second: a thread that ended in between takes its own with it."""
    return sum(count - before.get(thread, 0) for thread, count in after.items())


def driver_cpu_seconds(who: int = resource.RUSAGE_SELF) -> float:
    """The driver's CPU time; with RUSAGE_CHILDREN, its finished children's (wrk's)."""
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


# --------------------------------------------------------------------------- the run

def measure(servers: dict, settings: Settings, workdir: Path) -> dict:
    """Warm every server up, then the rounds: in each, every server's throughput window and
    its one-connection window, one server after the other."""
    rounds, ready = {}, {}
    load = (functools.partial(load_wrk, workdir=workdir) if settings.load == "wrk"
            else load_python)
    for name, server in servers.items():
        progress(f"{name}: warming up")
        rounds[name] = []
        try:
            load(server, settings.connections, settings.warmup_seconds)
            ready[name] = server
        except FAILURES as error:      # a server that fails this is left out of the rounds
            rounds[name].append({"error": f"warm-up: {str(error)[:500]}"})
    for number in range(settings.rounds):
        for name, server in ready.items():
            progress(f"{name}: round {number + 1} of {settings.rounds}")
            try:
                figures = load(server, settings.connections, settings.seconds)
                figures["sequential"] = load(server, 1, settings.sequential_seconds)
            except FAILURES as error:
                figures = {"error": str(error)[:500]}
            rounds[name].append(figures)
    return rounds


def summarise(rounds: dict) -> dict:
    summary = {}
    for name, runs in rounds.items():
        good = [run for run in runs if "error" not in run]
        errors = [run["error"] for run in runs if "error" in run]
        if not good:
            summary[name] = {"errors": errors}
            continue
        median = lambda key, runs=good: statistics.median(run[key] for run in runs)  # noqa: E731
        summary[name] = {
            "requests_per_s": median("requests_per_s"), "p50_ms": median("p50_ms"),
            "p99_ms": median("p99_ms"),
            "server_cpu_us_per_request": median("server_cpu_us_per_request"),
            "server_switches_per_request": median("server_switches_per_request"),
            "driver_cpu_share": median("driver_cpu_share"),
            "sequential_p50_ms": statistics.median(run["sequential"]["p50_ms"] for run in good),
            "sequential_requests_per_s": statistics.median(
                run["sequential"]["requests_per_s"] for run in good),
            "reconnects": sum(run["reconnects"] for run in good),
            "connections_per_worker": [run["connections_per_worker"] for run in good],
            "reopened": sum(run["connection_openings"] - 1 for run in good),
            "errors": errors}
        twin = next((other for other in rounds if other.startswith(f"{name}@")), None)
        for key, reference in (("floor", floor_of(name)), ("sdk", "sdk"),
                               ("baseline", twin)):
            by_round = ([] if reference == name else
                        ratio_figures(rounds, name, reference))
            middle = statistics.median(by_round) if by_round else None
            summary[name][f"vs_{key}"] = middle
            summary[name][f"vs_{key}_by_round"] = by_round
    return summary


def floor_of(name: str) -> str | None:
    """The floor on the same engine and configuration as the row (the baseline's twin of
    a row has the row's), if the row has one."""
    if name == "sdk" or name.startswith("floor-"):
        return None
    return f"floor-{name.partition('@')[0]}"


# (label, server, reference, target or None); a reference other than the SDK is the same
# engine with one worker: a scaling ratio, meaningless when pinned.
RATIOS = (
    ("mcp_min 1 worker (gunicorn) vs the SDK", "gunicorn-1", "sdk", 2.0),
    ("mcp_min 1 worker (granian, 8 threads) vs the SDK", "granian-1w8t", "sdk", 2.0),
    ("mcp_min on wsgiref vs the SDK", "wsgiref", "sdk", None),
    ("mcp_min 2 workers vs 1 worker (gunicorn)", "gunicorn-2", "gunicorn-1", 1.6),
    ("mcp_min 2 workers vs 1 worker (granian, 8 threads)", "granian-2w8t",
     "granian-1w8t", 1.6),
)


def ratio_figures(rounds: dict, server: str, reference: str | None) -> list[float]:
    """requests/s ratios, one per round in which both ran."""
    pairs = zip(rounds.get(server, []), rounds.get(reference, []))
    return [a["requests_per_s"] / b["requests_per_s"] for a, b in pairs
            if "error" not in a and "error" not in b]


def markdown(report: dict, settings: Settings) -> str:
    summary, machine = report["summary"], report["machine"]
    lines = [f"## HTTP benchmark {report['date']}", "",
             f"Machine: {machine['nproc']} × {machine['cpu']}, Linux {machine['kernel']}, driver "
             f"Python {machine['python']}; pinned: {'yes' if settings.pin else 'no'}; "
             f"the run took {report['duration_s']:.0f} s.",
             f"Command: `{report['command']}`", ""]
    busy = machine["busy_before_run"]
    if busy is not None and busy > BUSY_WARNING:
        lines += [f"**Warning: the CPUs were {busy:.0%} busy with other work just before the "
                  "run; expect noisy figures.**", ""]
    load = ("wrk (one thread)" if settings.load == "wrk" else
            "the Python driver (a thread per connection)")
    baseline = report.get("baseline")
    compared = ("vs_floor", "vs_sdk", "vs_baseline") if baseline else ("vs_floor", "vs_sdk")
    lines += [f"`tools/call add`, {MODERN_VERSION}, over keep-alive HTTP/1.1, sent by "
              f"{load}: {settings.connections} connections for {settings.seconds:g} s, "
              "then one "
              f"connection for {settings.sequential_seconds:g} s, per server and round; medians "
              f"of {settings.rounds} interleaved rounds. × floor: requests/s as a "
              "share of the bare WSGI floor's on the same engine and configuration; "
              "× sdk: as a multiple of the SDK's"
              + ("; × baseline: an mcp_min row's as a multiple of its twin's, ROW@"
                 f"{baseline['ref']}, the same server on {baseline['origin']}"
                 if baseline else "")
              + " (each the median of the per-round ratios).", "",
              "| server | requests/s | × floor | × sdk | "
              + ("× baseline | " if baseline else "") + "p50 ms | p99 ms | "
              "1 connection: p50 ms | server CPU µs/request | server context switches/request "
              "| driver CPU | connections per worker |",
              "|---|" + "---:|" * (len(compared) + 7) + "---|"]
    for name, figures in summary.items():
        if "requests_per_s" not in figures:
            lines.append(f"| {name} | failed |" + " |" * (len(compared) + 7))
            continue
        spread = ", ".join("+".join(map(str, counts))
                           for counts in figures["connections_per_worker"] if counts)
        ratios = [f"{figures[key]:.2f}" if figures.get(key) is not None else "—"
                  for key in compared]
        lines.append(f"| {name} | {figures['requests_per_s']:,.0f} | "
                     f"{' | '.join(ratios)} | "
                     f"{figures['p50_ms']:.2f} | {figures['p99_ms']:.2f} | "
                     f"{figures['sequential_p50_ms']:.2f} | "
                     f"{figures['server_cpu_us_per_request']:,.0f} | "
                     f"{figures['server_switches_per_request']:.2f} | "
                     f"{figures['driver_cpu_share']:.0%} | {spread or '—'} |")
    ratio_rows = []
    # each mcp_min row against its twin on the baseline
    twins = [(f"{name} vs {other}", name, other, None) for name in summary
             for other in summary if other.startswith(f"{name}@")]
    for label, server, reference, goal in (*RATIOS, *twins):
        figures = ratio_figures(report["rounds"], server, reference)
        if not figures:
            continue
        middle = statistics.median(figures)
        verdict = "—"
        scaling = reference != "sdk" and "@" not in reference
        if scaling and len(report.get("server_cpus", [0, 1])) < 2:
            verdict = "— (pinned: both workers on one CPU, so no scaling to see)"
        elif goal is not None:
            verdict = f"≥ {goal:g}: {'met' if middle >= goal else 'missed'}"
        ratio_rows.append(f"| {label} | {middle:.2f} | "
                          f"{', '.join(f'{r:.2f}' for r in figures)} | {verdict} |")
    if ratio_rows:
        lines += ["", "| ratio of requests/s | median | by round | target |",
                  "|---|---:|---|---|", *ratio_rows]
    notes = [f"- {name}: skipped: {reason}" for name, reason in report["skipped"].items()]
    for name, figures in summary.items():
        notes += [f"- {name}: a round failed: {error}" for error in figures["errors"]]
        idle = sum(0 in counts for counts in figures.get("connections_per_worker", []))
        if idle:
            notes.append(f"- {name}: in {idle} round(s) a worker got none of the connections")
        if figures.get("reopened"):
            notes.append(f"- {name}: connections opened again {figures['reopened']} time(s) "
                         "until every worker held one")
        if figures.get("reconnects"):
            notes.append(f"- {name}: the server closed keep-alive connections "
                         f"{figures['reconnects']} times")
    if notes:
        lines += ["", "Notes:", ""] + notes
    lines += ["", "Servers:", ""] + [f"- {name}: {info['interpreter']}: `{info['command']}`"
                                     for name, info in report["servers"].items()]
    return "\n".join(lines) + "\n"


def parse_args(argv: list[str]) -> tuple[argparse.Namespace, Settings]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--servers", default=",".join(SERVER_NAMES),
                        help="comma-separated servers to run, in that order (default: "
                             "%(default)s); any engine configuration may be named: "
                             "gunicorn-W (W workers), granian-WwTt (W workers, T "
                             "blocking threads each), haproxy-granian-NxWwTt (HAProxy "
                             "in front of N such granian backends), and floor- before "
                             "an engine's name")
    parser.add_argument("--baseline", metavar="REF",
                        help="also run, after each mcp_min server, its twin ENGINE@REF on the "
                             "mcp_min.py of REF: a commit, tag or branch of this repository "
                             "(git show REF:mcp_min.py) or a path to a file")
    parser.add_argument("--quick", action="store_true", help="short windows, one round")
    parser.add_argument("--pin", action="store_true",
                        help="the driver on CPU 0, the servers on the other CPUs (on two cores "
                             "an engine's two workers then share CPU 1)")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE,
                        help="where bench/setup.sh installed the peers (default: %(default)s)")
    parser.add_argument("--out", type=Path,
                        help="also write a JSON report there, and the table beside it as .md")
    defaults = Settings()
    parser.add_argument("--connections", type=int,
                        help=f"keep-alive connections (default {defaults.connections})")
    parser.add_argument("--seconds", type=float, help="throughput window per server and round "
                                                      f"(default {defaults.seconds:g})")
    parser.add_argument("--rounds", type=int,
                        help=f"interleaved rounds (default {defaults.rounds})")
    parser.add_argument("--threads", type=int,
                        help=f"gunicorn --threads per worker (default {defaults.threads})")
    parser.add_argument("--load", choices=("auto", "wrk", "python"), default="auto",
                        help="what sends the requests: wrk, or this driver's threads "
                             "(default auto: wrk if it is on PATH)")
    args = parser.parse_args(argv)
    settings = Settings(**QUICK) if args.quick else Settings()
    for name in ("connections", "seconds", "rounds", "threads"):
        value = getattr(args, name)
        if value is not None:
            if value <= 0:
                parser.error(f"--{name} must be positive")
            setattr(settings, name, value)
    settings.pin = args.pin
    settings.load = args.load
    if args.load == "auto":
        settings.load = "wrk" if shutil.which("wrk") else "python"
    elif args.load == "wrk" and not shutil.which("wrk"):
        parser.error("--load wrk: wrk is not on PATH (Debian: apt install wrk)")
    if settings.load == "wrk":        # wrk counts whole seconds
        for name in ("seconds", "sequential_seconds", "warmup_seconds"):
            setattr(settings, name, max(1, round(getattr(settings, name))))
    named = (name.strip() for name in args.servers.split(","))
    args.server_names = list(dict.fromkeys(name for name in named if name))
    unknown = [name for name in args.server_names if name != "sdk"
               and not NAME_PATTERN.match(name) and not PROXY_PATTERN.match(name)]
    if unknown:
        parser.error(f"unknown server(s) {', '.join(unknown)}; choose from sdk, "
                     "wsgiref, gunicorn-W, granian-WwTt, haproxy-granian-NxWwTt (N "
                     "backends), and an engine's name with floor- before it (default "
                     f"{','.join(SERVER_NAMES)})")
    args.baseline_file = None
    if args.baseline is not None:
        try:
            args.baseline_file = bench.resolve_baseline(args.baseline)
        except ValueError as error:
            parser.error(str(error))
        # each twin right after its row, so that drift on the machine hits both alike
        names = []
        for name in args.server_names:
            names.append(name)
            if name != "sdk" and not name.startswith("floor-"):
                names.append(f"{name}@{args.baseline}")
        if len(names) == len(args.server_names):
            warn("--baseline: no mcp_min server among --servers, nothing to compare")
        args.server_names = names
    return args, settings


def main(argv: list[str] | None = None) -> int:
    args, settings = parse_args(sys.argv[1:] if argv is None else argv)
    if not sys.platform.startswith("linux"):
        progress("http_bench.py reads /proc: it runs on Linux only")
        return 2
    cpus = sorted(os.sched_getaffinity(0))
    if settings.pin and len(cpus) < 2:
        warn("--pin needs two CPUs; running unpinned")
        settings.pin = False
    began = time.perf_counter()
    report = {"command": shlex.join([Path(sys.executable).name, *sys.argv]) if argv is None
              else shlex.join(["http_bench.py", *argv]),
              "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
              "machine": machine_info(),
              "settings": {key: getattr(settings, key) for key in Settings.__dataclass_fields__},
              "baseline": args.baseline_file.describe() if args.baseline_file else None,
              "skipped": {}, "servers": {}}
    servers = {}
    with tempfile.TemporaryDirectory(prefix="mcp-min-http-bench-") as tmp:
        workdir = Path(tmp)
        if settings.pin:              # the servers inherit these CPUs; the driver then moves
            os.sched_setaffinity(0, cpus[1:])
            report["server_cpus"] = cpus[1:]
        try:
            for spec in find_servers(args.server_names, args.cache, workdir, settings,
                                     args.baseline_file):
                if spec.missing:
                    progress(f"skipping {spec.name}: {spec.missing}")
                    report["skipped"][spec.name] = spec.missing
                    continue
                progress(f"{spec.name}: {spec.command()}")
                try:
                    kind = ProxiedServer if spec.backends else RunningServer
                    servers[spec.name] = kind(spec, workdir)
                except BenchError as error:
                    report["skipped"][spec.name] = str(error)
                    continue
                report["servers"][spec.name] = {"command": spec.command(),
                                                "interpreter": spec.interpreter}
            if settings.pin:
                os.sched_setaffinity(0, cpus[:1])
            report["rounds"] = measure(servers, settings, workdir) if servers else {}
        finally:
            for server in servers.values():   # all at once: each takes a moment to stop
                server.proc.terminate()
            for server in servers.values():
                server.close()
    report["summary"] = summarise(report["rounds"])
    report["duration_s"] = time.perf_counter() - began
    table = markdown(report, settings)
    report["markdown"] = table
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n")
        args.out.with_suffix(".md").write_text(table)
        progress(f"report: {args.out} and {args.out.with_suffix('.md')}")
    print(table)
    return 0 if any("requests_per_s" in s for s in report["summary"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
