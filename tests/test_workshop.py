"""Every command in docs/workshop.md runs as the doc says.

The ```sh blocks are the commands; a line ending in ``# exits N`` must exit N, every other
command exits 0. A block starting with ``# interactive`` is a session typed by hand: it is
started, initialised, pinged and quit. A block starting with ``# after you write
my_weather.py`` runs with the solution (examples/weather.py) as my_weather.py. Commands run
with ``sh -c`` in a scratch copy of mcp_min.py and examples/, so the file they create
(my_weather.py) lands there, with ``python3`` on PATH being this interpreter. They run a few
at a time; each test checks one command's result."""

import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import ROOT

DOC = ROOT / "docs" / "workshop.md"
TEXT = DOC.read_text(encoding="utf-8")
INTERACTIVE_INPUT = "init\nping\nquit\n"

# Commands whose documented behaviour waits on a change in mcp_min.py (see tests/test_cli.py).
class Command:
    def __init__(self, section, number, line, code, interactive, solution):
        self.section, self.number, self.line = section, number, line
        self.code, self.interactive, self.solution = code, interactive, solution

    @property
    def id(self):
        slug = re.sub(r"[^a-z0-9]+", "-", self.section.lower()).strip("-")[:24]
        return f"{slug}-{self.number}"


def parse(text):
    """The commands of every ```sh block, with the section they are in."""
    commands, section = [], "intro"
    fence = re.compile(r"^ *```sh\n(.*?)^ *```", re.S | re.M)      # also inside list items
    headings = [(m.start(), m.group(1)) for m in re.finditer(r"^## (.+)$", text, re.M)]
    for block in fence.finditer(text):
        section = ([h for pos, h in headings if pos < block.start()] or ["intro"])[-1]
        lines = block.group(1).replace("\\\n", " ").splitlines()
        lines = [line.strip() for line in lines]
        interactive = lines[0].strip() == "# interactive"
        solution = lines[0].strip() == "# after you write my_weather.py"
        for line in lines:
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            match = re.search(r"\s+#\s*exits (\d+)\s*$", line)
            code = int(match.group(1)) if match else 0
            number = sum(c.section == section for c in commands) + 1
            commands.append(Command(section, number, line.strip(), code, interactive, solution))
    return commands


COMMANDS = parse(TEXT)


def _param(command):
    return pytest.param(command, id=command.id)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Run every command once, a few at a time, each in a scratch copy of the repository."""
    base = tmp_path_factory.mktemp("workshop")
    bin_dir = base / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    dirs = {}
    for name in ("plain", "solved"):
        work = dirs[name] = base / name
        work.mkdir()
        shutil.copy(ROOT / "mcp_min.py", work)
        shutil.copytree(ROOT / "examples", work / "examples",
                        ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "examples" / "weather.py", dirs["solved"] / "my_weather.py")
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    for name in ("MCP_MIN_TRACE", "NO_COLOR"):
        env.pop(name, None)

    def run(command):
        return subprocess.run(["sh", "-c", command.line], cwd=dirs["solved" if command.solution else "plain"],
                              input=INTERACTIVE_INPUT if command.interactive else "",
                              capture_output=True, text=True, timeout=60, env=env)

    # repl sessions one at a time: their output is read line by line
    repls = [c for c in COMMANDS if "mcp_min.py repl" in c.line]
    others = [c for c in COMMANDS if c not in repls]
    done = {c.id: run(c) for c in repls}
    with ThreadPoolExecutor(max_workers=4) as pool:
        done.update(zip([c.id for c in others], pool.map(run, others)))
    return done


def check_handshake_first(command, result):
    """A piped repl session sends its next line only after `init` finished the handshake."""
    if "mcp_min.py repl" not in command.line or command.interactive:
        return
    sent = [line.split(":")[0] for line in result.stdout.splitlines() if line.startswith("C->S ")]
    if sent[:1] == ["C->S request 1 initialize"]:
        assert sent[1:2] == ["C->S notification notifications/initialized"], result.stdout


@pytest.mark.parametrize("command", [_param(c) for c in COMMANDS])
def test_command_exits_as_the_doc_says(command, results):
    result = results[command.id]
    check_handshake_first(command, result)
    assert result.returncode == command.code, (
        f"{command.line}\nexit {result.returncode}, expected {command.code}\n"
        f"stdout:\n{result.stdout[-2000:]}\nstderr:\n{result.stderr[-2000:]}")
    assert "Traceback" not in result.stderr, result.stderr
    if command.interactive:                # started, initialised, pinged and quit
        assert re.search(r"^S->C response 1[ :]", result.stdout, re.M)
        assert re.search(r"^S->C response 2[ :]", result.stdout, re.M)      # the ping
        assert result.stderr == ""
    elif "mcp_min.py" in command.line and command.code == 0:
        assert result.stdout.strip(), f"{command.line} printed nothing"


def test_the_doc_has_the_expected_commands():
    assert len(COMMANDS) >= 40
    lines = [c.line for c in COMMANDS]
    for needle in ("mcp_min.py demo", "mcp_min.py inspect --", "mcp_min.py call --",
                   "mcp_min.py repl --", "mcp_min.py explain", "mcp_min.py serve --trace",
                   "examples/naive_server.py", "examples/print_server.py",
                   "examples/slow_server.py", "my_weather.py", "cancel"):
        assert any(needle in line for line in lines), needle
    assert sum(c.interactive for c in COMMANDS) == 3
    assert sum(c.code == 1 for c in COMMANDS) >= 10
    assert not any(re.search(r"\b(node|npx|npm|pip|uv|curl|wget)\b", line) for line in lines)


def test_agenda_is_a_hundred_minutes_without_gaps():
    slots = re.findall(r"^\| (\d):(\d\d)–(\d):(\d\d) \|", TEXT, re.M)
    minutes = [(int(a) * 60 + int(b), int(c) * 60 + int(d)) for a, b, c, d in slots]
    assert minutes[0][0] == 0 and minutes[-1][1] == 100
    assert all(end == start for (_, end), (start, _) in zip(minutes, minutes[1:]))
    # each agenda row's duration matches its section heading, e.g. "(10 min)"
    headings = re.findall(r"^## .*\((\d+) min\)$", TEXT, re.M)
    assert [int(h) for h in headings] == [end - start for start, end in minutes]


def test_every_exercise_has_a_question_and_a_folded_answer():
    sections = re.split(r"^## ", TEXT, flags=re.M)[1:]
    exercises = [s for s in sections if re.match(r"(\d\.|Wrap-up)", s)]
    assert len(exercises) == 11
    for section in exercises:
        title = section.splitlines()[0]
        assert "```sh" in section, title
        assert re.search(r"\*\*Questions?:\*\*", section), title
        assert section.count("<details><summary>Answer</summary>") == 1, title
        assert section.count("</details>") == 1, title


# ============================================================================================
# What the answers say the commands print
# ============================================================================================

def _frame_lines(out):
    return [line for line in out.splitlines() if line.startswith(("C->S ", "S->C "))]


def _out_of_order(r):
    lines = _frame_lines(r.stdout)
    sent = [i for i, line in enumerate(lines) if line.startswith("C->S request") and '"name":"wait"' in line]
    slow, fast = (re.match(r"C->S request (\d+)", lines[i])[1] for i in sent)
    assert '"label":"slow"' in lines[sent[0]] and '"label":"fast"' in lines[sent[1]]
    got = [re.match(r"S->C response (\d+)", line)[1] for line in lines
           if re.match(r"S->C response (\d+)", line) and "done after" in line]
    assert got == [fast, slow]                  # the fast reply overtakes the slow one


def _server_calls_client(r):
    lines = _frame_lines(r.stdout)
    asked = [re.match(r"S->C request (\d+) (\S+):", line).groups() for line in lines
             if line.startswith("S->C request")]
    assert asked == [("1", "roots/list"), ("2", "elicitation/create"), ("3", "sampling/createMessage")]
    answered = [re.match(r"C->S response (\d+)[ :]", line)[1] for line in lines
                if line.startswith("C->S response")]
    assert answered == ["1", "2", "3"]
    assert '"action":"decline"' in r.stdout and "(a sampled reply)" in r.stdout


def _cancelled(r):
    assert 'C->S notification notifications/cancelled: {"jsonrpc":"2.0","method":"notifications/cancelled",' \
           '"params":{"requestId":"slow-1"}}' in r.stdout
    assert 'S->C response "slow-1"' not in r.stdout
    assert '"progressToken":"p1"' in r.stdout
    tail = r.stdout[r.stdout.index("notifications/cancelled"):]
    assert re.search(r"^S->C response 2[ :]", tail, re.M)   # the ping after the cancel
    assert tail.count("notifications/progress") <= 2     # at most what was already in flight
    assert r.stdout.count('"progressToken":"p1","progress":') < 20   # it never finished


def _demo_shape(r):
    lines = r.stdout.splitlines()
    assert lines and all(line.startswith(("C->S ", "S->C ")) for line in lines)
    kinds = [" ".join(line.split(" ")[:2]) for line in lines]
    assert kinds.count("C->S request") == 9 and kinds.count("C->S notification") == 1
    assert kinds.count("S->C response") == 7 and kinds.count("S->C error") == 2


def _no_handshake(r):
    replies = {reply["id"]: reply for reply in map(json.loads, r.stdout.splitlines())}
    assert "send initialize first" in replies[1]["error"]["message"]
    assert replies[2]["result"]["resultType"] == "complete"
    assert replies[2]["result"]["structuredContent"]["budget"] == 50


def _input_required_round_trip(r):
    frames = [line for line in r.stdout.splitlines() if line.startswith(("C->S", "S->C"))]
    assert [line.split(":")[0] for line in frames] == [
        "C->S request 1 server/discover", "S->C response 1 server/discover",
        "C->S request 2 tools/call", "S->C response 2 tools/call",
        "C->S request 3 tools/call", "S->C response 3 tools/call"]
    assert '"resultType":"input_required"' in frames[3] and '"elicitation-1"' in frames[3]
    assert '"inputResponses":{"elicitation-1":{"action":"decline"}}' in frames[4]
    assert '"resultType":"complete"' in frames[5]


CLAIMS = [
    ("mcp_min.py --version", lambda r: bool(re.fullmatch(r"mcp_min \d+\.\d+\.\d+\n", r.stdout))),
    ("demo --era handshake | grep", _demo_shape),
    ("serve examples/gift_server.py", _no_handshake),
    ("discover 'call pick_gift", _input_required_round_trip),
    ("explain '{\"jsonrpc\":\"2.0\",\"id\":99,", lambda r: r.stdout.startswith("error 99 -32601 (a protocol error)\n")),
    ("gift_server.py tools/col", lambda r: r.stderr.startswith("error -32601: Method not found: tools/col")),
    ("suggest_gift '", lambda r: "did you mean 'suggest_gifts'?" in r.stderr),
    ('"occasion": "funeral"', lambda r: 'budget: expected number, got string \\"a hundred bucks\\"' in r.stdout),
    ("'call wait", _out_of_order),
    ("plan_party", _server_calls_client),
    ('cancel "slow-1"', _cancelled),
    ("my_weather.py get_weather '{\"town\"", lambda r: "Missing required property 'city'" in r.stdout
     and "Unexpected property 'town'" in r.stdout and '"isError": true' in r.stdout),
    ('"budget":100}}}\' | python3 mcp_min.py repl', lambda r: "S->C error 3 -32602" in r.stdout
     and 'did you mean \\"name\\"?' in r.stdout),
    ("repl -- python3 examples/naive_server.py", lambda r: "S->C unparsable: DEBUG looking up Lisbon\n" in r.stdout
     and "C->S error" not in r.stdout),
    ("print_server.py get_weather '{\"city\": \"Lisbon\"}' 2>/dev/null",
     lambda r: '"text": "Sunny, 22°C"' in r.stdout and "DEBUG" not in r.stdout),
    ("serve --trace examples/weather.py", lambda r: r.stdout == '{"jsonrpc":"2.0","id":1,"result":{}}\n'
     and "C->S request 1 ping: " in r.stderr and "S->C response 1 ping: " in r.stderr),
]


@pytest.mark.parametrize("needle, check", [c for c in CLAIMS if c[1]], ids=[c[0][:40] for c in CLAIMS if c[1]])
def test_answers_match_what_the_commands_print(needle, check, results):
    matching = [c for c in COMMANDS if needle in c.line]
    assert len(matching) == 1, f"{needle!r} matches {len(matching)} commands"
    result = results[matching[0].id]
    check_handshake_first(matching[0], result)
    outcome = check(result)             # a bool, or None from a check made of asserts
    assert outcome is None or outcome is True, f"{matching[0].line}\nstdout:\n{result.stdout[-3000:]}\nstderr:\n{result.stderr[-2000:]}"


def test_print_server_debug_line_is_on_stderr(results):
    (command,) = [c for c in COMMANDS if "print_server.py" in c.line and "2>/dev/null" not in c.line]
    result = results[command.id]
    assert "DEBUG looking up Lisbon" in result.stderr and "DEBUG" not in result.stdout
