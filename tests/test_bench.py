"""The benchmark drivers run: smoke tests of bench/bench.py --quick against the two peers
that need no setup, and of bench/http_bench.py --quick on the embedded server and its floor.
Speed is never asserted here (the machines are shared and noisy); the figures live in
bench/results/ and README.md."""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import threading
import time
import types
from pathlib import Path

import pytest

from conftest import ROOT, require_tool


def test_bench_quick_runs_floor_and_mcp_min_and_checks_every_reply(tmp_path):
    out = tmp_path / "quick.json"
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "bench.py"), "--quick",
                             "--peers", "floor,mcp_min", "--out", str(out)],
                            capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["command"] and report["machine"] and set(report["peers"]) == {"floor", "mcp_min"}
    for name, peer in report["peers"].items():
        assert peer["errors"] == {}, (name, peer["errors"])
        assert peer["peer"] == name and peer["pinned"] is False
        assert peer["pipelined"]["all_answered_once"] is True, name
        assert peer["pipelined"]["cpu_us_per_call"] >= 0
        assert peer["sequential"]["calls_per_s"] > 0 and peer["cold_start"]["median_ms"] > 0
        assert set(peer["concurrency"]) == {"8", "64"}
        cancelled = peer["cancellation"]        # exact, or it would be an error
        assert cancelled["exact"] is True and cancelled["calls"] == 200
        assert 0 < cancelled["cancelled"] < 200
    # mcp_min never answers a call cancelled in time; the floor ignores cancellations
    assert report["peers"]["mcp_min"]["cancellation"]["cancelled_unanswered"] > 0
    assert report["peers"]["floor"]["cancellation"]["cancelled_unanswered"] == 0
    # mcp_min also ran the calls in 2026-07-28 (no initialize, the envelope on every request);
    # with no error, every reply had the right sum and said resultType and serverInfo
    modern = report["peers"]["mcp_min"]
    assert modern["modern_pipelined"]["all_answered_once"] is True
    assert modern["modern_sequential"]["calls"] == modern["sequential"]["calls"] > 0
    assert "modern_sequential" not in report["peers"]["floor"]       # one era only
    table = out.with_suffix(".md").read_text()
    assert "| metric |" in table and "mcp_min" in table and "Targets" in table
    assert "| pipelined add, 2026-07-28: calls/s | — |" in table
    assert "| 2026-07-28 calls/s | ≥ 0.9 × handshake era, sequential and pipelined | " in table
    assert "| server CPU per pipelined call (µs) |" in table
    assert "| random cancellations | exact: every call answered at most once, " in table
    assert "| 200 calls cancelled at random: cancelled, not answered | 0 |" in table


@pytest.mark.skipif(not {0, 1} <= getattr(os, "sched_getaffinity", lambda pid: set())(0),
                    reason="pinning needs CPUs 0 and 1")
def test_pin_both_measures_every_peer_pinned_and_unpinned_side_by_side(tmp_path):
    out = tmp_path / "both.json"
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "bench.py"), "--quick",
                             "--peers", "floor,mcp_min", "--pin", "both", "--phases", "pipelined",
                             "--out", str(out)], capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["pinning"] == "both"
    assert list(report["peers"]) == ["floor (pinned)", "floor (unpinned)",
                                     "mcp_min (pinned)", "mcp_min (unpinned)"]
    for label, peer in report["peers"].items():
        assert peer["errors"] == {} and peer["pipelined"]["all_answered_once"] is True, label
        assert peer["pinned"] is label.endswith("(pinned)") and label.startswith(peer["peer"])
    table = out.with_suffix(".md").read_text()
    header = "| floor (pinned) | floor (unpinned) | mcp_min (pinned) | mcp_min (unpinned) |"
    assert "| metric " + header in table
    assert "| metric | target | mcp_min (pinned) | mcp_min (unpinned) |" in table


def test_the_modern_driver_sends_no_initialize_and_tells_the_eras_apart(tmp_path, monkeypatch):
    """The 2026-07-28 figures must come from that era: requests carry the envelope from the
    first line on, and a handshake-era reply (no resultType, no serverInfo) would fail the run."""
    bench = load_bench()
    server = ROOT / "bench" / "peers" / "mcp_min_server.py"
    peer = bench.Peer("mcp_min", [sys.executable, str(server)])
    driver = bench.Bench(peer, bench.Settings(calls=40, pipelined=300, rounds=2), tmp_path)
    monkeypatch.setattr(bench.Session, "handshake", lambda self: pytest.fail("initialize sent"))
    with driver.started_session(modern=True) as session:
        _, line = session.encode(*bench.tool_call("add", {"a": 1, "b": 2}))
        assert json.loads(line)["params"]["_meta"] == {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}
        session.envelope = None                     # a bare request: the server was never
        bare = session.request("tools/list", {})    # initialized, so it refuses it
        assert bare["error"]["code"] == -32600 and "initialize" in bare["error"]["message"]
    assert driver.sequential(modern=True)["calls"] == 80                # every sum checked
    assert driver.pipelined(modern=True)["all_answered_once"] is True
    monkeypatch.undo()
    with driver.started_session() as session:                          # the handshake era
        reply = session.request(*bench.tool_call("add", {"a": 2, "b": 2}))
        bench.check_call_result(reply, 4, modern=False)
        with pytest.raises(bench.BenchError, match="not a 2026-07-28 result"):
            bench.check_call_result(reply, 4, modern=True)


def test_lone_calls_wait_before_each_call_and_check_every_sum(tmp_path, monkeypatch):
    """The lone run pauses before every call (so each finds the server idle), and checks
    every reply, as the other runs do."""
    bench = load_bench()
    server = ROOT / "bench" / "peers" / "mcp_min_server.py"
    peer = bench.Peer("mcp_min", [sys.executable, str(server)])
    driver = bench.Bench(peer, bench.Settings(lone_calls=5, lone_gap_ms=30), tmp_path)
    started = time.monotonic()
    result = driver.lone()
    assert time.monotonic() - started >= 5 * 0.030
    assert result["calls"] == 5 and 0 < result["p50_us"] <= result["p90_us"]
    checked, original = [], bench.check_call_result
    monkeypatch.setattr(bench, "check_call_result", lambda reply, expected, modern: (
        checked.append(expected), original(reply, expected, modern)))
    driver.lone()
    assert checked[-5:] == [1, 2, 3, 4, 5]              # every reply's sum, after the warm-up


@pytest.mark.parametrize("kind", ["floor", "mcp_min"])
def test_instruction_count_children_serve_every_call(tmp_path, kind):
    """bench/instructions.py counts what these runs do (under valgrind, not here): each must
    answer the handshake and every call, with the right sum."""
    replies = tmp_path / "replies.jsonl"
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "instructions.py"), "--child",
                             kind, "50", str(replies)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-2000:]
    answers = [json.loads(line) for line in replies.read_text().splitlines()]
    assert sorted(a["id"] for a in answers) == list(range(51))        # each exactly once
    for answer in answers:
        if answer["id"]:                                              # id 0: initialize
            assert answer["result"]["content"][0]["text"] == str(3 * (answer["id"] - 1)), answer


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_driver", ROOT / "bench" / "bench.py")
    module = sys.modules["bench_driver"] = importlib.util.module_from_spec(spec)   # dataclasses look here
    spec.loader.exec_module(module)
    return module


def test_repeats_combine_as_medians_and_ratios_pair_repeat_by_repeat():
    bench = load_bench()
    runs = [{"errors": {}, "pipelined": {"calls_per_s": v, "all_answered_once": True}} for v in (10, 40, 20)]
    floors = [{"errors": {}, "pipelined": {"calls_per_s": v}} for v in (5, 40, 30)]
    peer, floor = bench.combine(runs), bench.combine(floors)
    assert peer["pipelined"] == {"calls_per_s": 20, "all_answered_once": True} and peer["repeats"] == runs
    assert floor["pipelined"]["calls_per_s"] == 30
    path = ("pipelined", "calls_per_s")
    assert bench.ratios(peer, floor, path) == [2.0, 1.0, 20 / 30]   # each repeat against its own floor
    assert bench.ratio(peer, floor, path) == 1.0                    # the median of those, not 20 / 30
    assert bench.spread(peer, floor, path) == "; 0.67–2.00× in 3 repeats"
    assert bench.ratio(runs[0], floors[0], path) == 2.0 and bench.spread(runs[0], floors[0], path) == ""


def test_the_era_target_pairs_each_repeat_with_its_own_handshake_run():
    bench = load_bench()
    runs = [{"errors": {}, "sequential": {"calls_per_s": s}, "pipelined": {"calls_per_s": p},
             "modern_sequential": {"calls_per_s": m}, "modern_pipelined": {"calls_per_s": q}}
            for s, m, p, q in ((100, 95, 200, 190), (50, 45, 300, 270), (80, 40, 100, 95))]
    peer = bench.combine(runs)
    era = next(t for t in bench.TARGETS if t.metric == "2026-07-28 calls/s")
    # sequential: 0.95, 0.90, 0.50 -> median 0.90, where the medians' ratio is 45 / 80 = 0.56
    assert era.judge(peer, None, None) == ("met (sequential 0.90×; 0.50–0.95× in 3 repeats, "
                                           "pipelined 0.95×; 0.90–0.95× in 3 repeats)")
    assert era.judge(runs[2], None, None) == "MISSED (sequential 0.50×, pipelined 0.95×)"
    assert era.judge({"errors": {}, "sequential": {"calls_per_s": 1}}, None, None) == "n/a"


def test_an_outcome_that_failed_in_one_repeat_is_reported_as_failed():
    bench = load_bench()
    ok = {"status": "ok", "time_ms": 10.0, "rss_kib": 1000}
    refused = {"status": "refused", "error": "line too long", "alive_after": True}
    runs = [{"errors": {}, "payload": {"10MiB": dict(ok)}},
            {"errors": {"pipelined": "timeout"}, "payload": {"10MiB": refused}},
            {"errors": {}, "payload": {"10MiB": dict(ok)}}]
    floors = [{"errors": {}, "payload": {"10MiB": dict(ok)}} for _ in range(3)]
    peer, floor = bench.combine(runs), bench.combine(floors)
    assert peer["payload"]["10MiB"] == {**refused, "statuses": ["ok", "refused", "ok"]}
    assert peer["errors"] == {"pipelined": "repeat 2 of 3: timeout"}
    assert floor["payload"]["10MiB"] == {"status": "ok", "time_ms": 10.0, "rss_kib": 1000}
    echo = next(t for t in bench.TARGETS if t.metric == "10 MiB echo")
    assert echo.judge(peer, floor, None) == "MISSED (refused)"
    assert echo.judge(floor, floor, None).startswith("met")


def test_each_column_is_compared_with_the_floor_measured_the_same_way():
    """--pin both: a pinned peer's ratios are to the pinned floor, an unpinned one's to the
    unpinned floor, and so are the targets'."""
    bench = load_bench()

    def run(name, pinned, calls_per_s, cpu):
        return {"peer": name, "pinned": pinned, "errors": {}, "command": name, "interpreter": "",
                "pipelined": {"calls_per_s": calls_per_s, "cpu_us_per_call": cpu}}
    report = {"date": "today", "command": "bench.py --pin both", "duration_s": 1.0, "skipped": {},
              "pinning": "both",
              "machine": {"nproc": 2, "cpu": "cpu", "kernel": "k", "python": "3",
                          "busy_before_run": 0},
              "peers": {"floor (pinned)": run("floor", True, 40_000, 20),
                        "floor (unpinned)": run("floor", False, 50_000, 20),
                        "mcp_min (pinned)": run("mcp_min", True, 20_000, 50),
                        "mcp_min (unpinned)": run("mcp_min", False, 30_000, 30)}}
    table = bench.markdown(report, bench.Settings(phases=("pipelined",)))
    assert "| pipelined add: calls/s | 40,000 | 50,000 | 20,000 (0.50×) | 30,000 (0.60×) |" in table
    assert "| server CPU per pipelined call (µs) | 20 | 20 | 50 (2.50×) | 30 (1.50×) |" in table
    assert ("| server CPU per pipelined call | ≤ 2 × floor | MISSED (2.50×) | met (1.50×) |"
            in table)
    assert "pinned: both, side by side" in table
    assert table.count("- mcp_min: ") == 1          # each peer's command once


def test_the_cancellation_target_is_missed_if_any_repeat_was_not_exact():
    bench = load_bench()
    exact = {"calls": 1000, "cancelled": 700, "cancelled_unanswered": 650, "exact": True}
    runs = [{"errors": {}, "cancellation": dict(exact)},
            {"errors": {"cancellation": "not exact: 1 calls answered more than once"}},
            {"errors": {}, "cancellation": dict(exact)}]
    target = next(t for t in bench.TARGETS if t.metric == "random cancellations")
    assert target.judge(bench.combine(runs), None, None).startswith(
        "MISSED (repeat 2 of 3: not exact: 1 calls answered more than once")
    assert target.judge(bench.combine([runs[0], runs[2]]), None, None) == \
        "met (exact; 650 of 700 cancelled calls not answered)"


# -------------------------------------------------------------- --baseline REF

def marked_baseline(tmp_path):
    """The repository's mcp_min.py, plus a line that writes where it was imported from
    (its __file__, and __name__: mcp_min, or __main__ when run as `mcp_min.py serve`) to
    the file $BENCH_TEST_MARKER names, before the script's own main part."""
    source = (ROOT / "mcp_min.py").read_text()
    before, main_part, after = source.rpartition('\nif __name__ == "__main__":\n')
    assert main_part, "mcp_min.py has no main part to put the marker before"
    marker = ('\nwith open(os.environ["BENCH_TEST_MARKER"], "a") as _marker:\n'
              '    _marker.write(f"{__file__} {__name__}\\n")\n')
    baseline = tmp_path / "old.py"
    baseline.write_text(before + marker + main_part + after)
    return baseline


def test_bench_baseline_runs_every_phase_of_mcp_min_beside_it(tmp_path):
    """--baseline HEAD: a peer mcp_min@HEAD serving the commit's mcp_min.py, in every phase
    mcp_min runs (both eras), with its own column, its ratios and its targets."""
    out = tmp_path / "quick.json"
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "bench.py"), "--quick",
                             "--peers", "floor,mcp_min", "--baseline", "HEAD",
                             "--out", str(out)], capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(out.read_text())
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    assert report["baseline"]["commit"] == head and report["baseline"]["peer"] == "mcp_min@HEAD"
    assert list(report["peers"]) == ["floor", "mcp_min", "mcp_min@HEAD"]   # beside mcp_min
    old, new = report["peers"]["mcp_min@HEAD"], report["peers"]["mcp_min"]
    assert old["errors"] == {} and old["peer"] == "mcp_min@HEAD"
    assert set(old) == set(new)                     # every phase mcp_min ran, and only those
    assert old["modern_pipelined"]["all_answered_once"] is True
    assert old["cancellation"]["exact"] is True and old["cancellation"]["cancelled_unanswered"] > 0
    assert old["command"].startswith("MCP_MIN_BENCH_MODULE_DIR=")
    assert old["command"].endswith("bench/peers/mcp_min_server.py")
    table = out.with_suffix(".md").read_text()
    assert "| metric | floor | mcp_min | mcp_min@HEAD |" in table
    assert "| metric | target | mcp_min | mcp_min@HEAD |" in table
    share = old["pipelined"]["calls_per_s"] / report["peers"]["floor"]["pipelined"]["calls_per_s"]
    assert f"| {old['pipelined']['calls_per_s']:,.0f} ({share:.2f}×) |" in table
    assert f"serving mcp_min.py of commit {head}" in table
    assert "### mcp_min against mcp_min@HEAD" in table
    times = new["pipelined"]["calls_per_s"] / old["pipelined"]["calls_per_s"]
    assert f"| pipelined add: calls/s | {times:.2f}× |" in table


def test_bench_baseline_imports_the_file_it_was_given_not_the_repositorys(tmp_path):
    """The baseline's servers import a copy of the file (in the scratch directory, named
    mcp_min.py), not the repository's mcp_min.py: only the marked copy writes its marker."""
    marker = tmp_path / "imported.txt"
    baseline = marked_baseline(tmp_path)
    out = tmp_path / "quick.json"
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "bench.py"), "--quick",
                             "--peers", "floor,mcp_min", "--baseline", str(baseline),
                             "--phases", "cold_start,modern_pipelined", "--out", str(out)],
                            capture_output=True, text=True, timeout=120,
                            env={**os.environ, "BENCH_TEST_MARKER": str(marker)})
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(out.read_text())
    label = f"mcp_min@{baseline}"
    assert list(report["peers"]) == ["floor", "mcp_min", label]
    assert report["peers"][label]["errors"] == {}
    assert "modern_pipelined" in report["peers"][label]
    assert report["baseline"]["origin"] == f"the file {baseline}"
    imported = marker.read_text().splitlines()
    # one server per cold start (5, and an untimed one), one for the pipelined calls
    assert len(imported) == 5 + 1 + 1
    paths = {line.split()[0] for line in imported}
    assert len(paths) == 1 and {line.split()[1] for line in imported} == {"mcp_min"}
    copy = Path(paths.pop())
    assert copy.name == "mcp_min.py" and copy.parent.name == "baseline"
    assert copy != ROOT / "mcp_min.py" and not copy.exists()     # the scratch directory is gone
    assert report["peers"][label]["command"].startswith(f"MCP_MIN_BENCH_MODULE_DIR={copy.parent} ")


def test_bench_refuses_a_baseline_that_names_nothing(capsys):
    bench = load_bench()
    with pytest.raises(SystemExit):
        bench.parse_args(["--baseline", "no-such-ref-or-file"])
    assert "--baseline no-such-ref-or-file: neither a file nor a commit, tag or branch" in \
        capsys.readouterr().err
    args, _ = bench.parse_args(["--peers", "mcp_min,floor", "--baseline", "HEAD"])
    assert args.peer_names == ["mcp_min", "mcp_min@HEAD", "floor"]
    assert args.baseline_file.source == (subprocess.run(
        ["git", "-C", str(ROOT), "show", "HEAD:mcp_min.py"], capture_output=True).stdout)


# -------------------------------------------------------------- bench/http_bench.py

def load_http_bench():
    sys.path.insert(0, str(ROOT / "bench"))     # it imports bench.py by that name
    try:
        spec = importlib.util.spec_from_file_location("http_bench_driver",
                                                      ROOT / "bench" / "http_bench.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["http_bench_driver"] = module       # dataclasses look here
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(ROOT / "bench"))


LOADS = ["python", pytest.param("wrk", marks=pytest.mark.skipif(
    shutil.which("wrk") is None, reason="wrk is not on PATH"))]


@pytest.mark.parametrize("load", LOADS)
def test_http_bench_quick_measures_mcp_min_and_its_floor_on_wsgiref(tmp_path, load):
    out = tmp_path / "http.json"
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "http_bench.py"),
                             "--quick", "--servers", "wsgiref,floor-wsgiref",
                             "--connections", "4", "--load", load, "--out", str(out)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(out.read_text())
    # every reply of both was checked: status 200, its id, the sum, a 2026-07-28 result
    assert list(report["summary"]) == ["wsgiref", "floor-wsgiref"]
    for name, figures in report["summary"].items():
        assert figures["errors"] == [], (name, figures["errors"])
        assert figures["requests_per_s"] > 0
        assert figures["reconnects"] == 0, name         # both keep connections alive
        assert figures["vs_sdk"] is None                # no sdk in this run
        # a server's threads wait for the sockets, so they switch at least that often
        assert figures["server_switches_per_request"] > 0, name
    mcp_min, floor = report["summary"]["wsgiref"], report["summary"]["floor-wsgiref"]
    share = mcp_min["requests_per_s"] / floor["requests_per_s"]
    assert mcp_min["vs_floor_by_round"] == [share] and mcp_min["vs_floor"] == share
    assert floor["vs_floor"] is None
    table = out.with_suffix(".md").read_text()
    assert "| server | requests/s | × floor | × sdk | p50 ms |" in table
    assert "| server context switches/request |" in table
    row = f"| wsgiref | {mcp_min['requests_per_s']:,.0f} | {share:.2f} | — |"
    assert row in table
    assert "floor_wsgi.py" in report["servers"]["floor-wsgiref"]["command"]
    sender = "wrk (one thread)" if load == "wrk" else "the Python driver"
    assert f"sent by {sender}" in table and report["settings"]["load"] == load


@pytest.mark.skipif(shutil.which("wrk") is None, reason="wrk is not on PATH")
def test_http_bench_under_wrk_fails_a_window_with_a_wrong_reply(tmp_path):
    """wrk's script checks every reply as the Python driver does: a wrong sum fails
    the window, naming the first bad reply."""
    from wsgiref.simple_server import WSGIRequestHandler, make_server
    http_bench = load_http_bench()

    def wrong(environ, start_response):
        environ["wsgi.input"].read(int(environ["CONTENT_LENGTH"]))
        body = (b'{"jsonrpc":"2.0","id":0,"result":{"structuredContent":{"result":2},'
                b'"resultType":"complete","_meta":{"serverInfo":{}}}}')
        start_response("200 OK", [("Content-Length", str(len(body)))])
        return [body]

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args):
            pass
    httpd = make_server("127.0.0.1", 0, wrong, handler_class=Quiet)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    server = types.SimpleNamespace(port=httpd.server_port, cpu_seconds=lambda: 0.0,
                                   context_switches=dict,
                                   spec=types.SimpleNamespace(workers=0))
    try:
        with pytest.raises(http_bench.BenchError, match=r'bad replies.*"result":2'):
            http_bench.load_wrk(server, 2, 1, tmp_path)
    finally:
        httpd.shutdown()
        httpd.server_close()


def http_round(requests_per_s):
    """One round's figures for one server, as http_bench's load() reports them."""
    return {"requests_per_s": requests_per_s, "p50_ms": 1.0, "p99_ms": 2.0,
            "server_cpu_us_per_request": 100.0, "server_switches_per_request": 1.5,
            "driver_cpu_share": 0.2,
            "reconnects": 0, "connections_per_worker": [], "connection_openings": 1,
            "sequential": {"p50_ms": 0.5, "requests_per_s": 1000.0}}


def test_http_bench_rows_are_compared_with_their_own_floor_and_the_sdk_round_by_round():
    http_bench = load_http_bench()
    rounds = {"granian-1w8t": [http_round(v) for v in (100, 300, 200)],
              "floor-granian-1w8t": [http_round(v) for v in (400, 300, 1000)],
              "sdk": [http_round(50), http_round(100), {"error": "a failed round"}]}
    summary = http_bench.summarise(rounds)
    row = summary["granian-1w8t"]
    assert row["requests_per_s"] == 200
    assert row["vs_floor_by_round"] == [0.25, 1.0, 0.2]   # each round, its own floor
    assert row["vs_floor"] == 0.25                        # their median, not 200 / 400
    assert row["vs_sdk_by_round"] == [2.0, 3.0]           # none for the failed round
    assert row["vs_sdk"] == 2.5
    assert summary["floor-granian-1w8t"]["vs_floor"] is None     # a floor has none
    assert summary["sdk"]["vs_sdk"] is None and summary["sdk"]["vs_floor"] is None
    assert summary["sdk"]["errors"] == ["a failed round"]


def test_http_bench_takes_any_engine_configuration_and_refuses_unknown_names():
    http_bench = load_http_bench()
    args, _ = http_bench.parse_args(["--servers", "granian-3w4t,floor-gunicorn-3,sdk"])
    assert args.server_names == ["granian-3w4t", "floor-gunicorn-3", "sdk"]
    assert http_bench.NAME_PATTERN.match("floor-granian-3w4t").groups() == \
        ("floor-", "granian-3w4t", None, "3", "4")
    for bad in ("granian-0w1t", "gunicorn", "floor-sdk", "uvicorn"):
        with pytest.raises(SystemExit):
            http_bench.parse_args(["--servers", bad])
    default, _ = http_bench.parse_args([])
    assert default.server_names[:2] == ["wsgiref", "floor-wsgiref"]
    assert default.server_names[-1] == "sdk"
    floors = [f"floor-{name}" for name in http_bench.ENGINE_ROWS]
    assert set(floors) <= set(default.server_names)


def test_http_bench_puts_the_documented_haproxy_in_front_of_n_granian_backends():
    """haproxy-granian-NxWwTt: docs/http.md's HAProxy configuration, its ports replaced
    and a server line for each of the N backends; its floor is the floor behind the
    same proxy."""
    http_bench = load_http_bench()
    names = "haproxy-granian-3x1w8t,floor-haproxy-granian-3x1w8t"
    args, _ = http_bench.parse_args(["--servers", names])
    assert args.server_names == names.split(",")
    assert http_bench.PROXY_PATTERN.match("floor-haproxy-granian-3x1w8t").groups() == \
        ("floor-", "3", "1", "8")
    assert http_bench.floor_of("haproxy-granian-3x1w8t") == "floor-haproxy-granian-3x1w8t"
    for bad in ("haproxy-granian-0x1w8t", "haproxy-gunicorn-2", "haproxy-granian-1w8t"):
        with pytest.raises(SystemExit):
            http_bench.parse_args(["--servers", bad])
    config = http_bench.haproxy_config(9000, [9001, 9002, 9003])
    assert [line.split() for line in config.splitlines() if "server app" in line] == [
        ["server", f"app{n}", f"127.0.0.1:{9000 + n}", "check"] for n in (1, 2, 3)]
    assert "bind 127.0.0.1:9000" in config and ":800" not in config
    assert "stick on req.hdr(mcp-session-id)" in config


def test_http_bench_quick_measures_mcp_min_behind_haproxy(tmp_path):
    # granian first: the other CPythons' runs in CI have none, and may start before
    # .ci/run installs haproxy
    if importlib.util.find_spec("granian") is None:
        pytest.skip("granian is not installed (tests/requirements.txt)")
    require_tool("haproxy", "http_bench.py's haproxy-granian rows run it")
    out = tmp_path / "http.json"
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "http_bench.py"),
                             "--quick", "--servers", "haproxy-granian-2x1w2t",
                             "--connections", "4", "--load", "python", "--out", str(out),
                             "--cache", str(tmp_path / "no-cache")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(out.read_text())
    # every reply was checked: status 200, its id, the sum, a 2026-07-28 result
    figures = report["summary"]["haproxy-granian-2x1w2t"]
    assert figures["errors"] == [] and figures["requests_per_s"] > 0
    command = report["servers"]["haproxy-granian-2x1w2t"]["command"]
    assert "haproxy -db -f" in command and "in front of 2 × " in command
    assert "--workers 1 --blocking-threads 2" in command


def test_http_bench_counts_context_switches_of_the_threads_alive_at_the_end():
    """A thread that ends within the window takes its count with it: the sum never goes
    below zero, as a difference of totals does when a pool's thread exits."""
    http_bench = load_http_bench()
    before = {(1, "1"): 100, (1, "2"): 5000}        # thread 2 ends in the window
    after = {(1, "1"): 130, (1, "3"): 7}             # thread 3 starts in it
    assert http_bench.switches_since(before, after) == 37
    assert http_bench.switches_since(before, {}) == 0


def test_http_bench_baseline_runs_a_twin_of_each_mcp_min_server_on_the_given_file(tmp_path):
    """--baseline: each mcp_min server is followed by its twin on the baseline's file,
    compared with the same floor, and the row says how many times the twin's requests/s
    it served. The twins import the copy (the marker says so), on wsgiref and granian."""
    marker = tmp_path / "imported.txt"
    baseline = marked_baseline(tmp_path)
    servers = "wsgiref,floor-wsgiref"
    if importlib.util.find_spec("granian") is not None:
        servers += ",granian-1w2t"
    out = tmp_path / "http.json"
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "http_bench.py"), "--quick",
                             "--servers", servers, "--connections", "4", "--load", "python",
                             "--baseline", str(baseline), "--out", str(out)],
                            capture_output=True, text=True, timeout=120,
                            env={**os.environ, "BENCH_TEST_MARKER": str(marker)})
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(out.read_text())
    twin = f"wsgiref@{baseline}"
    expected = ["wsgiref", twin, "floor-wsgiref"]
    if "granian" in servers:
        expected += ["granian-1w2t", f"granian-1w2t@{baseline}"]
    assert list(report["summary"]) == expected
    summary = report["summary"]
    for name in expected:
        assert summary[name]["errors"] == [], (name, summary[name]["errors"])
    new, old, floor = (summary[name]["requests_per_s"] for name in expected[:3])
    assert summary[twin]["vs_floor"] == old / floor                # the same floor
    assert summary["wsgiref"]["vs_baseline"] == new / old
    assert summary[twin]["vs_baseline"] is None
    table = out.with_suffix(".md").read_text()
    assert "| server | requests/s | × floor | × sdk | × baseline | p50 ms |" in table
    assert f"| wsgiref | {new:,.0f} | {new / floor:.2f} | — | {new / old:.2f} |" in table
    assert f"| {twin} | {old:,.0f} | {old / floor:.2f} | — | — |" in table
    assert f"| wsgiref vs {twin} | {new / old:.2f} | {new / old:.2f} | — |" in table
    imported = {tuple(line.split()) for line in marker.read_text().splitlines()}
    copies = {Path(path) for path, _ in imported}
    assert len(copies) == 1 and copies.pop().parent.name == "baseline"
    names = {name for _, name in imported}
    # wsgiref runs the copy as the script (__main__); granian's worker imports it
    assert names == ({"__main__", "mcp_min"} if "granian" in servers else {"__main__"})
