"""docs/reference.md stays complete: every export, every public member of Server, Context and
Client, every Server setting, every command-line command and option appears in it, and its
runnable examples run as written."""

import argparse
import inspect
import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT))
import mcp_min  # noqa: E402

REFERENCE = (ROOT / "docs" / "reference.md").read_text(encoding="utf-8")


def public(cls):
    """The names dir() gives a class, inherited ones too, without a leading underscore."""
    return sorted(name for name in dir(cls) if not name.startswith("_"))


def headings():
    """(line number, level, line) of each Markdown heading, code blocks left out."""
    found, fenced = [], False
    for number, line in enumerate(REFERENCE.splitlines()):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#+ ", line):
            found.append((number, len(line.split(" ")[0]), line))
    return found


def section(heading):
    """The text under a heading (the line as written, e.g. "## `Server`") up to the next
    heading of the same or a higher level."""
    lines, found = REFERENCE.splitlines(), headings()
    (start, level), = [(number, depth) for number, depth, line in found if line == heading]
    end = next((number for number, depth, _ in found if number > start and depth <= level),
               len(lines))
    return "\n".join(lines[start:end])


def mentioned(text, name):
    """Whether ``name`` starts a code span in ``text``, perhaps after a dotted prefix:
    `name`, `name(...)`, `name=...`, `ctx.name`, `Server.name`."""
    return re.search(r"`(?:[\w.]+\.)?" + re.escape(name) + r"(?=[`(=\s\[,])", text) is not None


def missing(text, names):
    return [name for name in names if not mentioned(text, name)]


def test_every_export_is_documented():
    assert missing(REFERENCE, mcp_min.__all__) == []


@pytest.mark.parametrize("cls, heading", [
    (mcp_min.Server, "## `Server`"), (mcp_min.Context, "## `Context`"),
    (mcp_min.Client, "## `Client`"), (mcp_min.Subscription, "### `Subscription`")])
def test_every_public_member_is_documented_in_its_section(cls, heading):
    names = public(cls)
    assert names, cls                     # dir() found something to check
    assert missing(section(heading), names) == []


def test_every_server_setting_is_documented():
    settings = list(mcp_min.SETTINGS)
    assert len(settings) > 30
    assert missing(section("### Settings"), ["name", "version", *settings]) == []


def test_every_client_option_is_documented():
    parameters = inspect.signature(mcp_min.Client.__init__).parameters
    assert missing(section("## `Client`"), [name for name in parameters if name != "self"]) == []


class _Parsed(Exception):
    """Raised instead of parsing: carries the parser main() built."""


def command_line():
    """The argparse parser main() builds, caught as it is about to parse."""
    def capture(self, args=None, namespace=None):
        raise _Parsed(self)
    original = argparse.ArgumentParser.parse_args
    argparse.ArgumentParser.parse_args = capture
    try:
        mcp_min.main([])
    except _Parsed as parsed:
        return parsed.args[0]
    finally:
        argparse.ArgumentParser.parse_args = original
    raise AssertionError("main() parsed no arguments")


def options(parser):
    return [option for action in parser._actions for option in action.option_strings
            if option not in ("-h", "--help")]


def subcommands(parser):
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return action.choices


def test_the_command_line_parser_is_found():
    commands = subcommands(command_line())
    assert {"serve", "demo", "inspect", "call", "repl", "explain"} <= set(commands)
    assert "--tool" in options(commands["call"])


def test_every_command_and_option_is_documented_in_its_section():
    parser = command_line()
    problems = missing(section("## Command line"), options(parser))
    for name, command in subcommands(parser).items():
        if "\n### `" + name + "`\n" not in REFERENCE:
            problems.append(name)
            continue
        problems += [f"{name} {option}" for option in missing(section(f"### `{name}`"),
                                                               options(command))]
    assert problems == []


def test_every_repl_command_is_documented():
    source = inspect.getsource(mcp_min.repl)
    table = re.search(r"commands = \{(.*?)\}\n", source, re.S)[1]
    commands = re.findall(r'"(\w+)":', table) + ["help", "quit", "exit"]
    assert len(commands) > 10
    assert missing(section("### `repl`"), commands) == []


RUNNABLE = re.findall(r"```python\n(# runs\n.*?)```", REFERENCE, re.S)


def test_there_are_runnable_examples():
    assert len(RUNNABLE) >= 10


@pytest.mark.parametrize("number", range(len(RUNNABLE)))
def test_the_runnable_examples_run(number, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    run = subprocess.run([sys.executable, "-c", RUNNABLE[number]], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, f"example {number}:\n{RUNNABLE[number]}\n{run.stderr}"
