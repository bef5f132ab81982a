"""``server.wsgi`` on real gunicorn: two gthread worker processes behind one port, as in
production. Sharing the requestState key (MCP_MIN_STATE_KEY) and ``http_sessions=False`` are
what let any request land on any worker; the tools of tests/servers/workers.py say which
process answered, so the tests can make sure that both workers took part. Skipped without
gunicorn (tests/requirements.txt pins it)."""

import http.client
import importlib.util
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time

import pytest

from conftest import (ACCEPT, SERVERS, TRIES, call, exchange, logged_pid, messages_of,
                      mrtr_rounds, retry_on_the_other_worker, send, value)

import mcp_min

pytestmark = pytest.mark.skipif(importlib.util.find_spec("gunicorn") is None,
                                reason="gunicorn is not installed (tests/requirements.txt)")

V = mcp_min.V2026_07
STATE_KEY = "test-gunicorn-shared-state-key"


class Gunicorn:
    """gunicorn serving tests/servers/workers.py on a free port of 127.0.0.1. Its log (stderr)
    is read on a thread: it gives the port and the workers' pids, and never fills the pipe."""

    def __init__(self, workers=2, threads=4, state_key=STATE_KEY):
        env = {k: v for k, v in os.environ.items() if k != "MCP_MIN_STATE_KEY"}
        if state_key is not None:
            env["MCP_MIN_STATE_KEY"] = state_key
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "--workers", str(workers), "--worker-class",
             "gthread", "--threads", str(threads), "--bind", "127.0.0.1:0",
             "--no-control-socket", "--graceful-timeout", "5", "--chdir", str(SERVERS),
             "workers:server"], stderr=subprocess.PIPE, env=env)
        self.log, self.lines = [], queue.Queue()
        self.reader = threading.Thread(target=self._read_log, daemon=True)
        self.reader.start()
        self.port, self.worker_pids = None, set()
        deadline = time.monotonic() + 20
        while self.port is None or len(self.worker_pids) < workers:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                line = None
            if line is None:
                self.close()
                raise AssertionError("gunicorn did not start:\n" + "".join(self.log))
            listening = re.search(r"Listening at: http://127\.0\.0\.1:(\d+)", line)
            booting = re.search(r"Booting worker with pid: (\d+)", line)
            if listening:
                self.port = int(listening.group(1))
            elif booting:
                self.worker_pids.add(int(booting.group(1)))

    def _read_log(self):
        for raw in self.proc.stderr:
            line = raw.decode("utf-8", "replace")
            self.log.append(line)
            self.lines.put(line)
        self.lines.put(None)

    def connection(self):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=15)

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        self.reader.join(5)
        self.proc.stderr.close()


@pytest.fixture(scope="module")
def farm():
    server = Gunicorn()
    yield server
    server.close()
    log = "".join(server.log)
    # no worker died or was restarted while the tests ran
    assert "Traceback" not in log and "WORKER TIMEOUT" not in log, log


# -- requests ---------------------------------------------------------------------------------
def parent_pid(pid):
    with open(f"/proc/{pid}/stat") as stat:
        return int(stat.read().rpartition(")")[2].split()[1])


# -- tests ------------------------------------------------------------------------------------
def test_both_workers_answer_and_they_are_the_masters_children(farm):
    seen = set()

    def ask(rid):
        status, (reply,) = exchange(farm, call("pid", rid=rid))
        assert status == 200 and reply["id"] == rid
        seen.add(value(reply["result"]))
    for attempt in range(TRIES):             # connections opened together reach both workers
        askers = [threading.Thread(target=ask, args=(attempt * 10 + i,)) for i in range(4)]
        for asker in askers:                 # sooner than one at a time on a busy machine
            asker.start()
        for asker in askers:
            asker.join(10)
        if len(seen) == 2:
            break
    assert seen == farm.worker_pids
    assert {parent_pid(pid) for pid in seen} == {farm.proc.pid}


def test_concurrent_calls_from_many_threads_are_all_answered_correctly(farm):
    clients, calls = 8, 25
    start = threading.Barrier(clients)
    answers, failures, pids = [], [], set()

    def client(number):
        connection = farm.connection()               # one keep-alive connection per client
        try:
            start.wait(10)
            for i in range(calls):
                rid = number * 1000 + i
                response = send(connection, call("add", {"a": number, "b": i}, rid=rid))
                (reply,) = messages_of(response)
                if response.status != 200 or reply.get("id") != rid or \
                        value(reply["result"]) != number + i:
                    failures.append((number, i, response.status, reply))
                answers.append(rid)
            (reply,) = messages_of(send(connection, call("pid", rid=-1)))
            pids.add(value(reply["result"]))
        except Exception as e:                       # reported below, with the others
            failures.append((number, repr(e)))
        finally:
            connection.close()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not failures, failures[:5]
    assert sorted(answers) == sorted(n * 1000 + i for n in range(clients) for i in range(calls))
    assert pids <= farm.worker_pids


def test_an_mrtr_retry_is_answered_by_the_other_worker(farm):
    assert set(retry_on_the_other_worker(farm)) == farm.worker_pids


def test_without_a_shared_key_the_other_worker_refuses_the_retry():
    """The control for the test above: each worker signs with a key of its own, so a retry
    is answered by the worker that asked, and refused by the other one."""
    farm = Gunicorn(state_key=None)
    try:
        for _ in range(TRIES):
            asked_by, retried_on, status, messages = mrtr_rounds(farm)
            if status != 200:
                break
            assert retried_on == asked_by and messages[-1]["result"]["resultType"] == "complete"
        assert status == 400, f"no retry reached another worker in {TRIES} tries"
        assert retried_on is None                     # refused before the tool ran again
        error = messages[-1]["error"]
        assert error["code"] == -32602 and error["data"] == {"reason": "invalid_request_state"}
    finally:
        farm.close()


def start_slow(connection, ms, rid):
    """Start `slow`: its response, and the pid it logs as it starts (the stream shows that
    line at once, long before the result)."""
    response = send(connection, call("slow", {"ms": ms}, rid=rid,
                                     **{"io.modelcontextprotocol/logLevel": "info"}))
    assert response.status == 200
    assert response.getheader("Content-Type") == "text/event-stream"
    while True:
        line = response.readline()
        assert line, "the stream ended before the log line"
        if line.startswith(b"data: "):
            return response, logged_pid([json.loads(line[6:])])


def test_slow_calls_do_not_hold_up_other_calls_on_the_same_worker(farm):
    """Two slow calls in flight; meanwhile quick calls, on fresh connections until both
    workers have answered, so at least one comes from a worker that is running a slow call
    (each worker has four threads, and mcp_min its own pool behind them)."""
    slow_ms = 3000
    slow_calls = []                    # (connection, response, pid): each call in flight
    try:
        for rid in range(2):
            connection = farm.connection()
            slow_calls.append((connection, *start_slow(connection, slow_ms, rid)))
        last_started = time.monotonic()
        busy = {pid for _, _, pid in slow_calls}
        answered_by = set()
        for rid in range(TRIES):
            before = time.monotonic()
            status, (reply,) = exchange(farm, call("pid", rid=rid))
            assert status == 200 and reply["id"] == rid
            assert time.monotonic() - before < 1.0
            answered_by.add(value(reply["result"]))
            if answered_by == farm.worker_pids:
                break
        assert answered_by == farm.worker_pids and busy & answered_by
        assert time.monotonic() - last_started < slow_ms / 1000, "the slow calls ended first"
        for _, response, pid in slow_calls:
            (reply,) = messages_of(response)
            assert value(reply["result"]) == pid
        assert time.monotonic() - last_started >= slow_ms / 1000 * 0.9
    finally:
        for connection, _, _ in slow_calls:
            connection.close()


@pytest.mark.parametrize("coding", ["chunked", "Chunked"])   # a coding's name: any case
def test_a_chunked_body_is_read(farm, coding):
    message = call("add", {"a": 2, "b": 3})
    connection = farm.connection()
    try:
        connection.request("POST", "/mcp", iter([json.dumps(message).encode()]), {
            "Content-Type": "application/json", "Accept": ACCEPT, "MCP-Protocol-Version": V,
            "Mcp-Method": "tools/call", "Mcp-Name": "add", "Transfer-Encoding": coding},
            encode_chunked=True)
        response = connection.getresponse()
        (reply,) = messages_of(response)
        assert response.status == 200 and value(reply["result"]) == 5
    finally:
        connection.close()


def test_handshake_era_without_sessions_works_on_either_worker(farm):
    """http_sessions=False: initialize gets no Mcp-Session-Id, and later requests, carrying
    only MCP-Protocol-Version, are served by whichever worker takes them."""
    version = "2025-11-25"
    connection = farm.connection()
    try:
        response = send(connection, {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                     "params": {"protocolVersion": version, "capabilities": {},
                                                "clientInfo": {"name": "t", "version": "1"}}})
        (reply,) = messages_of(response)
        assert response.status == 200 and response.getheader("Mcp-Session-Id") is None
        assert reply["result"]["protocolVersion"] == version
        assert reply["result"]["serverInfo"]["name"] == "workers"
        connection.request("GET", "/mcp", headers={"Accept": "text/event-stream"})
        response = connection.getresponse()
        response.read()
        assert response.status == 405 and response.getheader("Allow") == "POST"
    finally:
        connection.close()
    header = {"MCP-Protocol-Version": version}
    status, messages = exchange(farm, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                                header)
    assert status == 202 and messages == []
    answered_by = set()
    for rid in range(1, TRIES):
        status, (reply,) = exchange(farm, {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                                           "params": {"name": "add",
                                                      "arguments": {"a": rid, "b": 2}}}, header)
        assert status == 200 and reply["result"]["structuredContent"] == {"result": rid + 2}
        assert "resultType" not in reply["result"]           # a handshake-era result
        status, (reply,) = exchange(farm, {"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                                           "params": {"name": "pid", "arguments": {}}}, header)
        assert status == 200
        answered_by.add(value(reply["result"]))
        if answered_by == farm.worker_pids:
            break
    assert answered_by == farm.worker_pids
