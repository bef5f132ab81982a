"""README.md tells the truth: its transcript is what the demo prints, its quick start and
API examples run as written, and the two commands it promises exist."""

import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, free_port

README = (ROOT / "README.md").read_text()
# The examples that show the API in depth live in docs/: they are run here all the same.
DOCS = README + "".join(path.read_text() for path in sorted((ROOT / "docs").glob("*.md")))


def code_blocks(lang, text=README):
    return re.findall(rf"```{lang}\n(.*?)```", text, re.S)


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
    (block,) = [block for block in code_blocks("python") if "with Client(server)" in block]
    exec(compile(block, "README.md", "exec"), {"server": calculator.server})


def example(marker):
    """The README's Python block containing ``marker``, run; returns its namespace."""
    (block,) = [block for block in code_blocks("python", DOCS) if marker in block]
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
    (block,) = [block for block in code_blocks("python", DOCS) if "async def fetch(" in block]
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


# ============================================================================================
# Every command the README shows is run
# ============================================================================================

# The command that serves in production, as the README shows it (on two lines).
PRODUCTION = ("MCP_MIN_STATE_KEY=$(openssl rand -hex 32) granian --interface wsgi "
              "--workers 2 --blocking-threads 32 --workers-kill-timeout 10 server:server")
# What the commands below run, as the README writes them (its sh blocks, comments cut off).
RUN_HERE = {
    "python3 mcp_min.py demo": "test_the_transcript_is_what_the_demo_prints",
    "python3 mcp_min.py inspect -- python3 server.py": "test_the_quick_start_commands_run",
    "python3 mcp_min.py call -- python3 server.py add '{\"a\": 2, \"b\": 3}'":
        "test_the_quick_start_commands_run",
    "python3 mcp_min.py repl -- python3 server.py": "test_the_quick_start_commands_run",
    "python3 mcp_min.py serve --http 8000 server.py": "test_serve_http_and_the_sdk_client_snippet",
    PRODUCTION: "test_the_production_command_serves_the_quick_start_server",
    "python3 bench/bench.py --quick --peers floor,mcp_min":
        "tests/test_bench.py::test_bench_quick_runs_floor_and_mcp_min_and_checks_every_reply",
}
# Commands no test here can run, and why.
NOT_RUN_HERE = {
    "bash tests/run.sh": "it runs this test suite: CI runs it (checked below)",
    "pip install granian": "tests/requirements.txt installs it, pinned",
    "claude mcp add calculator -- python3 /absolute/path/to/server.py":
        "Claude Code is not installed where the tests run",
}


def shown_commands():
    commands = []
    for block in code_blocks("sh"):
        for line in block.replace("\\\n    ", "").splitlines():   # a command on two lines
            command = re.sub(r"\s+#.*$", "", line).strip()
            if command:
                commands.append(command)
    return commands


def test_every_command_the_readme_shows_is_run_by_a_test():
    commands = shown_commands()
    assert len(commands) >= 8
    for command in commands:
        assert command in RUN_HERE or command in NOT_RUN_HERE, f"no test runs: {command}"
    for test in RUN_HERE.values():
        file, _, name = test.rpartition("::")
        source = (ROOT / file).read_text() if file else (ROOT / "tests/test_readme.py").read_text()
        assert f"def {name}(" in source, test
    assert "bash tests/run.sh" in (ROOT / ".ci" / "run").read_text()


def quick_start(tmp_path):
    server = next(block for block in code_blocks("python") if "server.run()" in block)
    (tmp_path / "server.py").write_text(server)
    shutil.copy(ROOT / "mcp_min.py", tmp_path)


def run_shown(command, tmp_path, **options):
    """A command as the README shows it, with python3 as this interpreter."""
    import shlex
    words = [sys.executable if word == "python3" else word for word in shlex.split(command)]
    return subprocess.run(words, cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          **options)


def test_the_quick_start_commands_run(tmp_path):
    quick_start(tmp_path)
    inspected = run_shown("python3 mcp_min.py inspect -- python3 server.py", tmp_path)
    assert inspected.returncode == 0, inspected.stderr
    assert [tool["name"] for tool in json.loads(inspected.stdout)["tools"]] == ["add"]
    called = run_shown("python3 mcp_min.py call -- python3 server.py add "
                       "'{\"a\": 2, \"b\": 3}'", tmp_path)
    assert called.returncode == 0 and json.loads(called.stdout)["structuredContent"] == {
        "result": 5.0}
    typed = run_shown("python3 mcp_min.py repl -- python3 server.py", tmp_path,
                      input="init\ntools\nquit\n")
    assert typed.returncode == 0 and "S->C response 1 initialize" in typed.stdout
    assert '"name":"add"' in typed.stdout


def test_the_production_command_serves_the_quick_start_server(tmp_path):
    """The granian command as shown (on a free port rather than 8000, with granian from
    tests/requirements.txt): its two workers answer a 2026-07-28 call, and SIGTERM stops
    them."""
    pytest.importorskip("granian")
    quick_start(tmp_path)
    port = free_port()
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    # (bash runs it as written, then becomes granian: the signal reaches granian itself)
    command = PRODUCTION.replace(" granian ", " exec granian ")
    process = subprocess.Popen(["bash", "-c", f"{command} --port {port}"],
                               cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    try:
        for _ in range(100):
            try:
                status, body = modern_call(port, "add", {"a": 2, "b": 3})
                break
            except OSError:                   # not listening yet
                time.sleep(0.1)
        else:
            raise AssertionError("granian never answered")
        assert status == 200 and body["result"]["structuredContent"] == {"result": 5}
    finally:
        process.terminate()
        assert process.wait(20) == 0
        log = process.stdout.read()
        process.stdout.close()
    assert log.count("Started worker-") == 2 and "Traceback" not in log, log


def modern_call(port, name, arguments):
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": name, "arguments": arguments, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}}
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("POST", "/mcp", json.dumps(message), {
            "Content-Type": "application/json", "Accept": "application/json",
            "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call",
            "Mcp-Name": name})
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def test_serve_http_and_the_sdk_client_snippet(tmp_path):
    """`serve --http` as shown (on a free port rather than 8000), and the README's Python SDK
    client, as written, against it; then the same with a bearer token, from docs/http.md."""
    pytest.importorskip("mcp")
    quick_start(tmp_path)
    (tmp_path / "token_server.py").write_text(
        (tmp_path / "server.py").read_text().replace(
            'Server("calculator")', 'Server("calculator", auth=lambda t: t == "my-token")'))
    for script, marker in (("server.py", "async def main(token=None)"),
                           ("token_server.py", 'asyncio.run(main("my-token"))')):
        process = subprocess.Popen([sys.executable, "mcp_min.py", "serve", "--http",
                                    "127.0.0.1:0", script], cwd=tmp_path,
                                   stderr=subprocess.PIPE, text=True)
        try:
            port = re.search(r"127\.0\.0\.1:(\d+)/mcp", process.stderr.readline())[1]
            (block,) = [b for b in code_blocks("python", DOCS) if marker in b]
            (tmp_path / "client.py").write_text(block.replace("127.0.0.1:8000",
                                                              f"127.0.0.1:{port}"))
            client = subprocess.run([sys.executable, "client.py"], cwd=tmp_path,
                                    capture_output=True, text=True, timeout=60)
            assert client.returncode == 0, client.stderr[-2000:]
            assert client.stdout.strip() == "5.0"
        finally:
            process.terminate()
            process.wait(10)
            process.stderr.close()


def test_the_claude_desktop_config_names_its_interpreter_by_path():
    """A bare python3 may be macOS's own 3.9, too old for mcp_min: the config names a
    Python 3.10+ by its path, and the text says how to find it."""
    config = json.loads(next(b for b in code_blocks("json") if '"mcpServers"' in b))
    (server,) = config["mcpServers"].values()
    assert os.path.isabs(server["command"]) and re.search(r"python3\.1\d$", server["command"])
    assert "Apple's 3.9" in README and "command -v python3.12" in README


def test_the_readme_stays_a_newcomers_path_of_450_lines_at_most():
    """The README is the way in; the details live in docs/ and bench/README.md."""
    assert len(README.splitlines()) <= 450
