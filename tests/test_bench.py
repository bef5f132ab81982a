"""The benchmark driver runs: a smoke test of bench/bench.py --quick against the two peers
that need no setup. Speed is never asserted here (the machines are shared and noisy); the
figures live in bench/results/ and README.md."""

import json
import subprocess
import sys

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
