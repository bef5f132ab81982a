"""The benchmark driver runs: a smoke test of bench/bench.py --quick against the two peers
that need no setup. Speed is never asserted here (the machines are shared and noisy); the
figures live in bench/results/ and README.md."""

import importlib.util
import json
import subprocess
import sys

import pytest

from conftest import ROOT


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
        assert peer["pipelined"]["all_answered_once"] is True, name
        assert peer["sequential"]["calls_per_s"] > 0 and peer["cold_start"]["median_ms"] > 0
        assert set(peer["concurrency"]) == {"8", "64"}
    table = out.with_suffix(".md").read_text()
    assert "| metric |" in table and "mcp_min" in table and "Targets" in table


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
