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
