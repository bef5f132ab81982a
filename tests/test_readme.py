"""README.md tells the truth: its transcript is what the demo prints, its quick start and
API examples run as written, and the two commands it promises exist."""

import re
import shutil
import subprocess
import sys

import pytest

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
        assert client.call_tool("add", {"a": 2, "b": 3})["content"][0]["text"] == "5.0"


def example(marker):
    """The README's Python block containing ``marker``, run; returns its namespace."""
    (block,) = [block for block in code_blocks("python") if marker in block]
    namespace = {"__name__": "readme_example"}
    exec(compile(block, "README.md", "exec"), namespace)
    return namespace


def test_the_annotated_parameters_example_is_enforced():
    pytest.importorskip("pydantic")
    pytest.importorskip("annotated_types")
    from mcp_min import Client
    server = example("def search(")["server"]
    with Client(server, timeout=5) as client:
        properties = client.list_tools()[0]["inputSchema"]["properties"]
        assert properties["query"]["description"] == "what to look for"
        assert properties["page"] == {"type": "integer", "description": "the page, from 1",
                                      "minimum": 1, "default": 1}
        assert properties["tags"]["maxItems"] == 3
        assert properties["lang"] == {"type": "string", "default": "en", "pattern": "^[a-z]{2}$"}
        refused = client.call_tool("search", {"query": "owls", "limit": 99, "page": 0,
                                              "tags": ["a", "b", "c", "d"], "lang": "eng"})
        assert refused["isError"] and [line.split(":")[0] for line in
                                       refused["content"][0]["text"].splitlines()[1:]] == \
            ["- limit", "- page", "- tags", "- lang"]
        answer = client.call_tool("search", {"query": "owls"})
        assert answer["structuredContent"] == {"result": ["owls in en, page 1"]}


def test_the_content_blocks_example_runs(tmp_path, monkeypatch):
    from mcp_min import Client
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rain.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(16))
    server = example("def rainfall(")["server"]
    with Client(server, timeout=5) as client:
        assert [t.get("outputSchema") for t in client.list_tools()] == [None, None, None]
        blocks = client.call_tool("rainfall", {"city": "Porto"})["content"]
        assert [b["type"] for b in blocks] == ["text", "image", "resource_link"]
        assert blocks[1]["mimeType"] == "image/png" and blocks[2]["mimeType"] == "text/csv"
        averages = client.call_tool("averages", {"city": "Porto"})
        assert averages["structuredContent"] == {"rain_mm": 61.5, "sun_hours": 5.1}
        station = client.call_tool("station", {"city": "Porto"})
        assert station["content"] == [{"type": "text", "text": "Porto: station 42"}]
        assert station["structuredContent"] == {"id": 42}


def test_the_async_context_example_runs():
    from mcp_min import Client, Context, Server
    namespace = {"server": Server("readme-async"), "Context": Context}
    (block,) = [block for block in code_blocks("python") if "async def fetch(" in block]
    exec(compile(block, "README.md", "exec"), namespace)
    with Client(namespace["server"], timeout=5,
                elicitation=lambda params: {"action": "accept", "content": {"ok": True}}) as client:
        progress = []
        result = client.call_tool("fetch", {"url": "https://example.com"},
                                  progress=progress.append)
        assert result["content"][0]["text"] == "fetched"
        assert [p["progress"] for p in progress] == [1]
        assert any(n["method"] == "notifications/message" and
                   n["params"]["data"] == "fetching https://example.com"
                   for n in client.notifications)
