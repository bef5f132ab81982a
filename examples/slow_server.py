"""Tools that take their time and talk during a call: for the workshop's concurrency,
cancellation and "the server can call you" exercises.

    python3 mcp_min.py repl -- python3 examples/slow_server.py

Tool  wait(seconds, label)     sleep, then answer with the label: start a slow call and a fast
                               one, and the fast one's reply overtakes the slow one's
Tool  countdown(steps, delay)  a progress notification and a log message every step; checks
                               for cancellation between steps, so `cancel ID` stops it
Tool  plan_party(guest)        asks the client three things while it runs: its roots
                               (roots/list), the user (elicitation/create) and the model
                               (sampling/createMessage)
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from mcp_min import Context, Server  # noqa: E402

server = Server("slow-server", "1.0.0", title="Slow server",
                instructions="Tools that take a while. Give wait a short and a long time and "
                             "watch the replies arrive out of order.")


@server.tool(annotations={"readOnlyHint": True})
def wait(seconds: float, label: str, ctx: Context) -> str:
    """Sleep for a while, then answer with the label.

    Args:
        seconds: how long to sleep (at most 30)
        label: what to answer with
    """
    deadline = time.monotonic() + min(seconds, 30)
    while time.monotonic() < deadline:
        ctx.check_cancelled()
        time.sleep(0.02)
    return f"{label}: done after {seconds:g} s"


@server.tool(annotations={"readOnlyHint": True})
def countdown(ctx: Context, steps: int = 10, delay: float = 0.5) -> str:
    """Count down, reporting progress and logging every step; stops when cancelled.

    Args:
        steps: how many steps
        delay: seconds per step
    """
    for step in range(1, steps + 1):
        ctx.check_cancelled()                  # raises Cancelled: no reply is sent (§9)
        ctx.report_progress(step, total=steps, message=f"{steps - step} to go")
        ctx.info(f"countdown: step {step} of {steps}")
        end = time.monotonic() + delay
        while time.monotonic() < end:
            ctx.check_cancelled()
            time.sleep(0.02)
    return f"lift-off after {steps} steps"


@server.tool
def plan_party(guest: str, ctx: Context) -> str:
    """Plan a party, asking the client for its roots, the user and its model on the way.

    Args:
        guest: who the party is for
    """
    roots = ctx.list_roots()
    answer = ctx.elicit(f"How many people are coming to {guest}'s party?",
                        {"type": "object", "properties": {"people": {"type": "integer"}}})
    idea = ctx.sample(f"One party theme for {guest}, in five words.", max_tokens=30)
    people = (answer.get("content") or {}).get("people", "an unknown number of")
    return (f"Party for {guest}: {people} people, theme {idea['content']['text']!r}, "
            f"files under {roots[0]['uri'] if roots else 'nowhere'} "
            f"(the user chose to {answer['action']})")


if __name__ == "__main__":
    server.run()
