"""The benchmark driver runs: a smoke test of bench/bench.py --quick against the two peers
that need no setup. Speed is never asserted here (the machines are shared and noisy); the
figures live in bench/results/ and README.md."""

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
