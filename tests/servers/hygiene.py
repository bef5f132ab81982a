"""A server for the stdio hygiene tests (tests/test_stdio_hygiene.py): tools that try to read
the protocol's stdin (themselves or through a child process) and that write to stdout in the
ways the everything server's `noisy` does not."""

import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from mcp_min import Server  # noqa: E402

server = Server("hygiene", "1.0.0")

CHILD_READS_STDIN = "import sys; print(len(sys.stdin.buffer.read()))"


@server.tool
def child_stdin() -> str:
    """A child process reads all of its inherited stdin and reports how many bytes it got."""
    done = subprocess.run([sys.executable, "-c", CHILD_READS_STDIN], stdout=subprocess.PIPE,
                          timeout=20, check=True)
    return done.stdout.decode().strip()


@server.tool
def own_stdin() -> dict:
    """What this process sees on fd 0, sys.stdin and input()."""
    try:
        input()
        got_input = "a line"
    except EOFError:
        got_input = "EOF"
    return {"fd0": len(os.read(0, 65536)), "sys_stdin": len(sys.stdin.read()), "input": got_input}


@server.tool
def more_noise() -> str:
    """Write to stdout through sys.__stdout__, a shell and an inherited fd 1."""
    sys.__stdout__.write("sys.__stdout__ from a tool\n")
    sys.__stdout__.flush()
    sys.stdout.write("sys.stdout.write from a tool\n")
    sys.stdout.flush()
    os.system("echo from a shell")
    with os.fdopen(os.dup(1), "w") as out:
        out.write("a dup of fd 1\n")
    return "still quiet"


if __name__ == "__main__":
    server.run()
