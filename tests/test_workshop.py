"""Every command in docs/workshop.md runs as the doc says, from a folder that holds a copy of
mcp_min.py alone (the workshop's other servers are written there by the doc's own blocks).

The ```sh blocks are the commands; a line ending in ``# exits N`` must exit N, every other
command exits 0. A command that starts ``cat > NAME <<'EOF'`` runs to its ``EOF`` line: it
writes a file, and runs before the others. A block starting with ``# interactive`` is a
session typed by hand: it is started, initialised, pinged and quit. A block starting with
``# after you write my_weather.py`` runs with the doc's solution (weather.py) as
my_weather.py. A block starting with ``# two terminals`` runs its first command in the
background (on a free port rather than the one written) while its second runs. Commands run
with ``sh -c`` with ``python3`` on PATH being this interpreter. They run a few at a time;
each test checks one command's result."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import ROOT, free_port

DOC = ROOT / "docs" / "workshop.md"
TEXT = DOC.read_text(encoding="utf-8")
INTERACTIVE_INPUT = "init\nping\nquit\n"


class Command:
    def __init__(self, section, number, line, code, block):
        self.section, self.number, self.line, self.code = section, number, line, code
        self.interactive = block == "# interactive"
        self.solution = block == "# after you write my_weather.py"
        self.background = block == "# two terminals"
        self.writes = re.match(r"cat > (\S+) <<'EOF'\n", line)

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
        indent = len(block.group(0)) - len(block.group(0).lstrip(" "))
        lines = [line[indent:] for line in block.group(1).splitlines()]
        first = lines[0].strip()
        while lines:
            line = lines.pop(0)
            if re.search(r"<<'EOF'$", line):           # a file, to its EOF line
                body = []
                while (more := lines.pop(0)) != "EOF":
                    body.append(more)
                line = "\n".join([line, *body, "EOF"])
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            match = re.search(r"\s+#\s*exits (\d+)\s*$", line)
            code = int(match.group(1)) if match else 0
            number = sum(c.section == section for c in commands) + 1
            commands.append(Command(section, number, line.strip(), code, first))
    return commands


COMMANDS = parse(TEXT)


def _param(command):
    return pytest.param(command, id=command.id)


def run_in_two_terminals(commands, work, env):
    """The first command in the background (on a free port), the second in the foreground;
    then the first is stopped (SIGTERM), and both results are kept."""
    port = str(free_port())
    server, client = (c.line.replace("8765", port) for c in commands)
    proc = subprocess.Popen(["sh", "-c", "exec " + server], cwd=work, env=env, text=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        seen = ""
        while "mcp_min: serving" not in seen and time.monotonic() < deadline:
            seen += proc.stderr.readline()
        ran = subprocess.run(["sh", "-c", client], cwd=work, env=env, capture_output=True,
                             text=True, timeout=60)
        time.sleep(0.3)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    served = subprocess.CompletedProcess(server, proc.returncode, out, seen + err)
    return {commands[0].id: served, commands[1].id: ran}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Run every command once, a few at a time, in a folder holding mcp_min.py alone: first
    the files the doc writes, then the rest."""
    base = tmp_path_factory.mktemp("workshop")
    bin_dir = base / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    work = base / "work"
    work.mkdir()
    shutil.copy(ROOT / "mcp_min.py", work)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    for name in ("MCP_MIN_TRACE", "NO_COLOR"):
        env.pop(name, None)

    def run(command):
        return subprocess.run(["sh", "-c", command.line], cwd=work,
                              input=INTERACTIVE_INPUT if command.interactive else "",
                              capture_output=True, text=True, timeout=60, env=env)

    files = [c for c in COMMANDS if c.writes]
    done = {c.id: run(c) for c in files}
    # the participant's own server: the doc's solution
    shutil.copy(work / "weather.py", work / "my_weather.py")
    done.update(run_in_two_terminals([c for c in COMMANDS if c.background], work, env))
    # repl sessions one at a time: their output is read line by line
    repls = [c for c in COMMANDS if "mcp_min.py repl" in c.line and c.id not in done]
    others = [c for c in COMMANDS if c not in repls and c.id not in done]
    done.update({c.id: run(c) for c in repls})
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
    elif command.writes:
        assert result.stdout == "" and result.stderr == ""
    elif "mcp_min.py" in command.line and command.code == 0 and not command.background:
        assert result.stdout.strip(), f"{command.line} printed nothing"


def test_the_doc_has_the_expected_commands():
    assert len(COMMANDS) >= 40
    lines = [c.line for c in COMMANDS]
    for needle in ("mcp_min.py demo", "mcp_min.py inspect --", "mcp_min.py call --",
                   "mcp_min.py repl --", "mcp_min.py explain", "mcp_min.py serve --trace",
                   "explain -", "serve --http", "call http://", "naive.py", "print_weather.py",
                   "slow.py", "my_weather.py", "cancel", "accept {"):
        assert any(needle in line for line in lines), needle
    assert sum(c.interactive for c in COMMANDS) == 3
    assert sum(c.code == 1 for c in COMMANDS) >= 10
    assert sum(c.background for c in COMMANDS) == 2
    # the servers the workshop needs are written from the doc itself
    assert sorted(c.writes[1] for c in COMMANDS if c.writes) == [
        "naive.py", "print_weather.py", "slow.py", "weather.py"]
    assert not any(re.search(r"\b(node|npx|npm|pip|uv|curl|wget)\b", line) for line in lines)


def test_the_doc_names_no_file_but_mcp_min_py_and_its_own():
    """A lone copy runs the workshop: no examples/ (or tests/) file, no repository."""
    assert "examples/" not in TEXT
    assert "tests/" not in TEXT.replace("tests/test_workshop.py", "")
    written = {c.writes[1] for c in COMMANDS if c.writes} | {"my_weather.py", "mcp_min.py"}
    for command in COMMANDS:
        if command.writes:
            continue
        for name in re.findall(r"\b[\w./-]+\.py\b", command.line):
            assert name in written, (name, command.line)


def test_each_server_to_type_is_short(results):
    for command in COMMANDS:
        if command.writes:
            assert command.line.count("\n") <= 45, command.writes[1]


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
    assert '"result":{"action":"accept","content":{"people":12}}' in r.stdout
    assert "(a sampled reply)" in r.stdout and "Party for Sam: 12 people" in r.stdout
    assert "? How many people are coming to Sam's party?" in r.stdout


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
    assert ('"inputResponses":{"elicitation-1":{"action":"accept","content":{"recipient":'
            '"a friend who loves cooking"}}}') in frames[4]
    assert '"resultType":"complete"' in frames[5] and "Cast-iron skillet" in frames[5]
    assert "? Who is the gift for? (accept {...}, decline or cancel)" in r.stdout


def _handshake_result_lacks_the_new_fields(r):
    result = json.loads(r.stdout)
    assert "resultType" not in result and "_meta" not in result
    assert result["structuredContent"]["gifts"]


def _traced_over_http(r):
    trace = [line.split(":")[0] for line in r.stderr.splitlines()
             if line.startswith(("C->S", "S->C"))]
    assert trace == ["C->S request 1 server/discover", "S->C response 1 server/discover",
                     "C->S request 2 tools/call", "S->C response 2 tools/call"], r.stderr


CLAIMS = [
    ("mcp_min.py --version", lambda r: bool(re.fullmatch(r"mcp_min \d+\.\d+\.\d+\n", r.stdout))),
    ("demo --era handshake | grep", _demo_shape),
    ('"budget":50},"_meta"', _no_handshake),
    ("discover 'call pick_gift", _input_required_round_trip),
    ("call --era handshake", _handshake_result_lacks_the_new_fields),
    ("explain '{\"jsonrpc\":\"2.0\",\"id\":99,", lambda r: r.stdout.startswith("error 99 -32601 (a protocol error)\n")),
    ("| python3 mcp_min.py explain -", lambda r: r.stdout == "request 43 ping\n  no problems found\n"),
    ("serve tools/col", lambda r: r.stderr.startswith("error -32601: Method not found: tools/col")),
    ("suggest_gift '", lambda r: "did you mean 'suggest_gifts'?" in r.stderr),
    ('"occasion": "funeral"', lambda r: 'budget: expected number, got string \\"a hundred bucks\\"' in r.stdout),
    ("'call wait", _out_of_order),
    ("call plan_party", _server_calls_client),
    ('cancel "slow-1"', _cancelled),
    ("my_weather.py get_weather '{\"town\"", lambda r: "Missing required property 'city'" in r.stdout
     and "Unexpected property 'town'" in r.stdout and '"isError": true' in r.stdout),
    ("weather.py get_weather '{\"city\": \"Atlantis\"}'", lambda r: '"isError": true' in r.stdout
     and "No weather for 'Atlantis'" in r.stderr),
    ('"budget":100}}}\' | python3 mcp_min.py repl', lambda r: "S->C error 3 -32602" in r.stdout
     and 'did you mean \\"name\\"?' in r.stdout),
    ("repl -- python3 naive.py", lambda r: "S->C unparsable: DEBUG looking up Lisbon\n" in r.stdout
     and "C->S error" not in r.stdout),
    ("call -- python3 naive.py", lambda r: "not JSON-RPC: DEBUG looking up Lisbon" in r.stderr),
    ("print_weather.py get_weather '{\"city\": \"Lisbon\"}' 2>/dev/null",
     lambda r: '"text": "Sunny, 22°C"' in r.stdout and "DEBUG" not in r.stdout),
    ("serve --trace weather.py", lambda r: r.stdout == '{"jsonrpc":"2.0","id":1,"result":{}}\n'
     and "C->S request 1 ping: " in r.stderr and "S->C response 1 ping: " in r.stderr),
    ("serve --http 8765 --trace", _traced_over_http),
    ("call http://127.0.0.1:8765/mcp", lambda r: '"text": "Sunny, 22°C"' in r.stdout),
    ('"result":"Sunny, 22°C"}\'', lambda r: "result must be an object" in r.stdout),
    ('"content":"Sunny, 22°C"}', lambda r: "result.content must be a list" in r.stdout),
    ('"type":"txt"', lambda r: "(did you mean 'text'?)" in r.stdout),
    ('"method":"tools/call","result"', lambda r: "never both" in r.stdout),
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
    (command,) = [c for c in COMMANDS if "print_weather.py get_weather" in c.line
                  and "2>/dev/null" not in c.line]
    result = results[command.id]
    assert "DEBUG looking up Lisbon" in result.stderr and "DEBUG" not in result.stdout


def test_starting_my_weather_py_again_keeps_what_was_written(tmp_path):
    """The command that starts exercise 6 makes the file, and leaves it as it is when run
    again: a participant who runs it twice keeps their server."""
    (command,) = [c for c in COMMANDS if "open('my_weather.py'" in c.line]
    line = command.line.replace("python3", sys.executable, 1)
    subprocess.run(["sh", "-c", line], cwd=tmp_path, check=True, timeout=30)
    assert (tmp_path / "my_weather.py").read_text() == ""
    (tmp_path / "my_weather.py").write_text("from mcp_min import Server\n")
    subprocess.run(["sh", "-c", line], cwd=tmp_path, check=True, timeout=30)
    assert (tmp_path / "my_weather.py").read_text() == "from mcp_min import Server\n"
