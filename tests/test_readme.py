"""README.md tells the truth: its transcript is what the demo prints, its quick start runs
as written, and the two commands it promises exist."""

import re
import shutil
import subprocess
import sys

from conftest import ROOT

README = (ROOT / "README.md").read_text()


def code_blocks(lang):
    return re.findall(rf"```{lang}\n(.*?)```", README, re.S)


def test_the_two_commands_are_the_ones_ci_runs():
    first = code_blocks("sh")[0]
    assert "python3 mcp_min.py demo" in first and "bash tests/run.sh" in first
    assert "bash tests/run.sh" in (ROOT / ".ci" / "run").read_text()


def test_the_transcript_is_what_the_demo_prints():
    demo = subprocess.run([sys.executable, str(ROOT / "mcp_min.py"), "demo"], capture_output=True,
                          text=True, timeout=60, env={"PATH": "/usr/bin:/bin", "NO_COLOR": "1"})
    assert demo.returncode == 0, demo.stderr
    handshake, stateless = code_blocks("text")[:2]     # one excerpt of each session
    printed = demo.stdout.splitlines()
    for excerpt, minimum, era in ((handshake, 8, "initialize"), (stateless, 4, "2026-07-28")):
        transcript = [line for line in excerpt.splitlines() if line.strip()]
        assert len(transcript) >= minimum and era in excerpt
        for line in transcript:
            assert line in printed, line[:120]


def test_the_quick_start_server_runs_as_written(tmp_path):
    server = next(block for block in code_blocks("python") if "server.run()" in block)
    (tmp_path / "server.py").write_text(server)
    shutil.copy(ROOT / "mcp_min.py", tmp_path)
    call = subprocess.run([sys.executable, "mcp_min.py", "call", "--", sys.executable, "server.py",
                           "add", '{"a": 2, "b": 3}'], cwd=tmp_path, capture_output=True, text=True,
                          timeout=30)
    assert call.returncode == 0, call.stderr
    assert '"structuredContent": {\n    "result": 5' in call.stdout


def test_the_client_snippet_works():
    sys.path.insert(0, str(ROOT / "examples"))
    import calculator
    from mcp_min import Client
    with Client(calculator.server) as client:
        assert client.call_tool("add", {"a": 2, "b": 3})["content"][0]["text"] == "5"
