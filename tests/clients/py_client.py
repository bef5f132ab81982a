#!/usr/bin/env python3
"""Drive an MCP stdio server with the official Python SDK client (``mcp`` 2.3.x).

    python tests/clients/py_client.py [OPTIONS] SCENARIO -- SERVER_CMD [ARG...]

SCENARIO is the name of a scenario in scenarios.json, ``-`` (steps on stdin),
an inline JSON array of steps, or the path of a JSON file holding one.  The
step language and the output (one JSON object per line on stdout) are shared
with ts_client.mjs and described in README.md beside this file.

Options:
  --mode MODE         ``auto`` (the SDK's default) first probes
                      ``server/discover`` and adopts 2026-07-28 if the server
                      offers it, else falls back to ``initialize``;
                      ``legacy`` sends ``initialize`` at once; ``2026-07-28``
                      sends no probe: every request carries the 2026-07-28
                      ``_meta`` envelope from the first one on
  --log-level LEVEL   2026-07-28: the ``logLevel`` every request opts in to
                      (the SDK's ``Client(log_level=...)``; a step's "meta"
                      may override it); no effect on a handshake connection
  --no-cache          turn off the SDK's response cache (on by default, as for
                      any user of the SDK: it keeps 2026-07-28 list and read
                      results for the ``ttlMs`` the server allows)
  --timeout MS        per-request timeout (default 30000); a step's
                      "timeoutMs" overrides it for callTool and request
  --env NAME=VALUE    extra environment for the server (repeatable); the SDK
                      passes only HOME, LOGNAME, PATH, SHELL, TERM and USER
  --cwd DIR           working directory of the server
  --capabilities L    comma list of client capabilities to declare, each
                      answered by a callback: sampling, elicitation, roots
                      (default: all three; "none" declares none)
  --trace             also print every JSON-RPC message sent and received

Exit status: 0 when every step ran (whatever each returned), 1 when the
connection could not be set up or its shutdown failed, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from importlib.metadata import version
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ConfigDict, TypeAdapter

from mcp import Client, StdioServerParameters
from mcp.client.caching import CacheConfig
from mcp.client.stdio import stdio_client
from mcp.client.subscriptions import SubscriptionLost
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

# Ping, logging/setLevel, resources/subscribe and roots are deprecated by 2026-07-28; the steps
# still use them, on a handshake connection and to see how a 2026-07-28 server refuses them.
warnings.simplefilter("ignore", MCPDeprecationWarning)

HERE = Path(__file__).resolve().parent
CLIENT_INFO = types.Implementation(name="mcp-min-py-driver", version="1.0.0")
ALL_CAPABILITIES = ("sampling", "elicitation", "roots")
CANCEL_REASON = "cancelled by test driver"
MAX_PAGES = 1000
MODES = ("auto", "legacy", "2026-07-28")
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")

# What the client answers to server-initiated requests unless a step
# ("onSampling", "onElicit", "onRoots") configures something else.
DEFAULT_SAMPLING_RESULT = {
    "role": "assistant",
    "content": {"type": "text", "text": "mock reply"},
    "model": "mock-model",
    "stopReason": "endTurn",
}
DEFAULT_ROOTS_RESULT = {"roots": [{"uri": "file:///tmp/mcp-min-root", "name": "test root"}]}

# Listing ops: the result key holding the items, and the Client method fetching one page.
LISTS = {
    "listTools": ("tools", "list_tools"),
    "listResources": ("resources", "list_resources"),
    "listResourceTemplates": ("resourceTemplates", "list_resource_templates"),
    "listPrompts": ("prompts", "list_prompts"),
}

CompletionRef = TypeAdapter(types.PromptReference | types.ResourceTemplateReference)
SamplingResult = TypeAdapter(types.CreateMessageResult | types.CreateMessageResultWithTools)


class UsageError(Exception):
    pass


class StepCancelled(Exception):
    """The driver itself cancelled the step's request (cancelAfterMs / cancelOnProgress)."""


class AnyResult(BaseModel):
    """The result of a raw ``request`` step: any JSON object, kept as sent."""

    model_config = ConfigDict(extra="allow")


RawRequest = types.Request[dict[str, Any] | None, str]
RawNotification = types.Notification[dict[str, Any] | None, str]


def emit(record: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()


def dump(model: BaseModel | None) -> Any:
    """A model as it came over the wire: by alias, without fields the peer did not send."""
    if model is None:
        return None
    return model.model_dump(by_alias=True, mode="json", exclude_unset=True)


# ---------------------------------------------------------------- arguments


def parse_command_line(argv: list[str]) -> argparse.Namespace:
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        raise UsageError('missing "-- SERVER_CMD [ARG...]"')
    split = argv.index("--")
    parser = argparse.ArgumentParser(prog="py_client.py", add_help=False, exit_on_error=False)
    parser.add_argument("scenario")
    parser.add_argument("--mode", choices=MODES, default="auto")
    parser.add_argument("--log-level", choices=LOG_LEVELS)
    parser.add_argument("--no-cache", action="store_true")
    parser.add_argument("--timeout", type=float, default=30000)
    parser.add_argument("--env", action="append", default=[])
    parser.add_argument("--cwd")
    parser.add_argument("--capabilities", default=",".join(ALL_CAPABILITIES))
    parser.add_argument("--trace", action="store_true")
    try:
        config = parser.parse_args(argv[:split])
    except argparse.ArgumentError as exc:
        raise UsageError(str(exc)) from None
    if config.timeout <= 0:
        raise UsageError(f"--timeout {config.timeout}: not a positive number of milliseconds")
    config.env_vars = {}
    for pair in config.env:
        name, eq, value = pair.partition("=")
        if not name or not eq:
            raise UsageError(f"--env {pair}: expected NAME=VALUE")
        config.env_vars[name] = value
    names = [] if config.capabilities == "none" else config.capabilities.split(",")
    config.capability_set = {name for name in names if name}
    if unknown := config.capability_set - set(ALL_CAPABILITIES):
        raise UsageError(f"unknown capability {', '.join(sorted(unknown))}")
    config.steps = load_steps(config.scenario)
    config.command, config.args = argv[split + 1], argv[split + 2 :]
    return config


def load_steps(scenario: str) -> list[dict[str, Any]]:
    built_in = json.loads((HERE / "scenarios.json").read_text(encoding="utf-8"))
    if scenario in built_in:
        steps = built_in[scenario]
    elif scenario == "-":
        steps = json.load(sys.stdin)
    elif scenario.lstrip().startswith("["):
        steps = json.loads(scenario)
    else:
        steps = json.loads(Path(scenario).read_text(encoding="utf-8"))
    if not isinstance(steps, list) or not all(
        isinstance(step, dict) and isinstance(step.get("op"), str) for step in steps
    ):
        raise UsageError('SCENARIO must be a JSON array of objects that each have an "op"')
    return steps


# ------------------------------------------------------------------ errors


def describe_error(exc: BaseException) -> dict[str, Any]:
    # anyio task groups wrap what went wrong (e.g. the connection closing) in an exception group.
    while len(getattr(exc, "exceptions", ())) == 1:
        exc = exc.exceptions[0]
    if isinstance(exc, MCPError):
        described = {"code": exc.code, "message": exc.error.message, "type": "MCPError"}
        if exc.error.data is not None:
            described["data"] = exc.error.data
        return described
    return {"code": None, "message": str(exc), "type": type(exc).__name__}


# ------------------------------------------------------------- wire trace


class _TappedReceive:
    """A transport read stream that reports each message before the session sees it."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    async def receive(self) -> Any:
        return self._report(await self._stream.receive())

    def __aiter__(self) -> _TappedReceive:
        return self

    async def __anext__(self) -> Any:
        return self._report(await self._stream.__anext__())

    def _report(self, item: Any) -> Any:
        if not isinstance(item, Exception):  # unparseable lines reach the message handler
            emit({"event": "wire", "dir": "recv", "message": dump(item.message)})
        return item

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> _TappedReceive:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class _TappedSend:
    """A transport write stream that reports each message as it is sent."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    async def send(self, item: Any) -> None:
        emit({"event": "wire", "dir": "send", "message": dump(item.message)})
        await self._stream.send(item)

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> _TappedSend:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


@asynccontextmanager
async def traced_stdio(params: StdioServerParameters):
    async with stdio_client(params) as (read_stream, write_stream):
        yield _TappedReceive(read_stream), _TappedSend(write_stream)


# ------------------------------------------------------------ elicitation


def sample_value(schema: dict[str, Any]) -> Any:
    """A value that satisfies a (flat, primitive) elicitation property schema."""
    if schema.get("enum"):
        return schema["enum"][0]
    if schema.get("oneOf") and "const" in schema["oneOf"][0]:
        return schema["oneOf"][0]["const"]
    if "default" in schema:
        return schema["default"]
    kind = schema.get("type")
    if kind == "boolean":
        return True
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    if kind == "array":
        return []
    if kind == "string":
        return {
            "email": "test@example.com",
            "uri": "https://example.com/",
            "date": "2025-01-01",
            "date-time": "2025-01-01T00:00:00Z",
        }.get(schema.get("format"), "test")
    return None


def default_elicit_result(params: dict[str, Any]) -> dict[str, Any]:
    properties = (params.get("requestedSchema") or {}).get("properties") or {}
    return {"action": "accept", "content": {key: sample_value(schema) for key, schema in properties.items()}}


# ------------------------------------------------------------- listening


class Listening:
    """An open ``subscriptions/listen`` stream (2026-07-28): the SDK's ``Client.listen``
    context manager, entered by a "listen" step and left by a "stopListen" step, and the
    events a background task collected from it meanwhile."""

    def __init__(self, name: str, manager: Any, subscription: Any) -> None:
        self.name, self.manager, self.subscription = name, manager, subscription
        self.events: list[dict[str, Any]] = []
        self.end: str | None = None  # "stopped" (by a step), "closed" (by the server), "lost"
        self.finished = anyio.Event()


def describe_event(event: Any) -> dict[str, Any]:
    """A typed listen event (ToolsListChanged(), ResourceUpdated(uri=...), ...) as JSON."""
    record: dict[str, Any] = {"type": type(event).__name__}
    if hasattr(event, "uri"):
        record["uri"] = event.uri
    return record


# ------------------------------------------------------------------ driver


class Driver:
    def __init__(self, config: argparse.Namespace) -> None:
        self.config = config
        self.timeout = config.timeout / 1000
        self.responders: dict[str, dict[str, Any]] = {"sampling": {}, "elicitation": {}, "roots": {}}
        self.notifications: dict[str, list[Any]] = {}
        self.notification_arrived = anyio.Event()
        self.listens: dict[str, Listening] = {}
        self.tasks: anyio.abc.TaskGroup | None = None  # where listen events are collected
        self.client = self.build_client()

    def build_client(self) -> Client:
        params = StdioServerParameters(
            command=self.config.command,
            args=self.config.args,
            env=self.config.env_vars or None,
            cwd=self.config.cwd,
        )
        declared = self.config.capability_set
        # A capability is declared exactly when its callback is passed.
        return Client(
            traced_stdio(params) if self.config.trace else params,
            mode=self.config.mode,
            log_level=self.config.log_level,
            read_timeout_seconds=self.timeout,
            cache=None if self.config.no_cache else CacheConfig(),
            client_info=CLIENT_INFO,
            sampling_callback=self.on_sampling if "sampling" in declared else None,
            elicitation_callback=self.on_elicit if "elicitation" in declared else None,
            list_roots_callback=self.on_roots if "roots" in declared else None,
            message_handler=self.on_message,
        )

    # -- server-initiated requests and notifications

    async def on_sampling(self, context: Any, params: types.CreateMessageRequestParams) -> Any:
        self.report_request("sampling/createMessage", params)
        answer = await self.answer("sampling", lambda: DEFAULT_SAMPLING_RESULT)
        return answer if isinstance(answer, types.ErrorData) else SamplingResult.validate_python(answer)

    async def on_elicit(self, context: Any, params: types.ElicitRequestParams) -> Any:
        wire = self.report_request("elicitation/create", params)
        answer = await self.answer("elicitation", lambda: default_elicit_result(wire))
        return answer if isinstance(answer, types.ErrorData) else types.ElicitResult.model_validate(answer)

    async def on_roots(self, context: Any) -> Any:
        self.report_request("roots/list", None)
        answer = await self.answer("roots", lambda: DEFAULT_ROOTS_RESULT)
        return answer if isinstance(answer, types.ErrorData) else types.ListRootsResult.model_validate(answer)

    def report_request(self, method: str, params: BaseModel | None) -> dict[str, Any]:
        wire = dump(params) or {}
        emit({"event": "request", "method": method, "params": wire})
        return wire

    async def answer(
        self, kind: str, fallback: Callable[[], dict[str, Any]]
    ) -> dict[str, Any] | types.ErrorData:
        responder = self.responders[kind]
        if responder.get("delayMs"):
            await anyio.sleep(responder["delayMs"] / 1000)
        if responder.get("error") is not None:
            return types.ErrorData.model_validate(responder["error"])
        return responder["result"] if responder.get("result") is not None else fallback()

    async def on_message(self, message: Any) -> None:
        if isinstance(message, Exception):
            emit({"event": "transportError", "message": str(message)})
            return
        wire = message.model_dump(by_alias=True, mode="json", exclude_unset=True)
        if wire["method"] == "notifications/progress":
            return  # reported per step through the progress callback, as the TypeScript SDK does
        emit({"event": "notification", "method": wire["method"], "params": wire.get("params")})
        self.notifications.setdefault(wire["method"], []).append(wire.get("params"))
        self.notification_arrived.set()

    # -- connection

    def connected_record(self) -> dict[str, Any]:
        client = self.client
        session = client.session
        if session.discover_result is None:
            handshake = "initialize"
        else:  # a pinned version adopts a DiscoverResult the SDK made up: nothing was sent
            handshake = "none" if self.config.mode in MODERN_PROTOCOL_VERSIONS else "discover"
        return {
            "event": "connected",
            "client": "py",
            "sdkVersion": version("mcp"),
            "mode": self.config.mode,
            "handshake": handshake,
            "protocolVersion": client.protocol_version,  # the one negotiated, or pinned
            "serverInfo": dump(client.server_info),
            "capabilities": dump(client.server_capabilities),
            "instructions": client.instructions,
        }

    # -- steps

    async def run(self, steps: list[dict[str, Any]]) -> None:
        for index, step in enumerate(steps):
            record: dict[str, Any] = {"event": "step", "index": index, "op": step["op"]}
            if "label" in step:
                record["label"] = step["label"]
            needed = step.get("ifCapability")
            if needed and not getattr(self.client.server_capabilities, needed, None):
                emit({**record, "ok": None, "skipped": f"server lacks capability {needed}"})
                continue
            try:
                result = await self.perform(step, index)
            except UsageError:
                raise
            except StepCancelled:
                error = {"code": None, "message": CANCEL_REASON}
                emit({**record, "ok": False, "error": error, "cancelled": True})
            except Exception as exc:  # every failure is a result to report, not a crash
                emit({**record, "ok": False, "error": describe_error(exc)})
            else:
                emit({**record, "ok": True, "result": result})

    async def perform(self, step: dict[str, Any], index: int) -> Any:
        client = self.client
        op = step["op"]
        if op in LISTS:
            key, method = LISTS[op]
            return await self.list(step, key, getattr(client, method))
        if op == "ping":
            return dump(await client.send_ping())
        if op == "callTool":
            return await self.cancellable(
                step,
                index,
                lambda on_progress: client.call_tool(
                    step["name"],
                    step.get("arguments"),
                    read_timeout_seconds=self.step_timeout(step),
                    progress_callback=on_progress,
                    meta=step.get("meta"),
                ),
            )
        if op == "readResource":
            return await self.cancellable(
                step, index, lambda _: client.read_resource(step["uri"], meta=step.get("meta"))
            )
        if op == "subscribeResource":
            return dump(await client.subscribe_resource(step["uri"]))
        if op == "unsubscribeResource":
            return dump(await client.unsubscribe_resource(step["uri"]))
        if op == "getPrompt":
            return await self.cancellable(
                step,
                index,
                lambda _: client.get_prompt(step["name"], step.get("arguments"), meta=step.get("meta")),
            )
        if op == "complete":
            context = (step.get("context") or {}).get("arguments")
            ref = CompletionRef.validate_python(step["ref"])
            return dump(await client.complete(ref, step["argument"], context_arguments=context))
        if op == "setLoggingLevel":
            return dump(await client.set_logging_level(step["level"]))
        if op == "request":
            return await self.cancellable(
                step,
                index,
                lambda on_progress: client.session.send_request(
                    RawRequest(method=step["method"], params=step.get("params")),
                    AnyResult,
                    request_read_timeout_seconds=self.step_timeout(step),
                    progress_callback=on_progress,
                ),
            )
        if op == "notify":
            notification = RawNotification(method=step["method"], params=step.get("params"))
            await client.session.send_notification(notification)
            return None
        if op == "sendRootsListChanged":
            await client.send_roots_list_changed()
            return None
        if op in ("onSampling", "onElicit", "onRoots"):
            kind = {"onSampling": "sampling", "onElicit": "elicitation", "onRoots": "roots"}[op]
            self.responders[kind] = {key: step.get(key) for key in ("result", "error", "delayMs")}
            return None
        if op == "listen":
            return await self.listen(step)
        if op == "stopListen":
            return await self.stop_listen(step["listen"])
        if op == "waitFor":
            return await self.wait_for(step)
        if op == "sleep":
            await anyio.sleep(step.get("ms", 0) / 1000)
            return None
        raise UsageError(f"unknown op {op!r}")

    def step_timeout(self, step: dict[str, Any]) -> float | None:
        return step["timeoutMs"] / 1000 if "timeoutMs" in step else None

    async def cancellable(
        self, step: dict[str, Any], index: int, send: Callable[[Any], Awaitable[BaseModel]]
    ) -> Any:
        """Send a request, reporting progress and cancelling it when the step says so.

        Cancelling the waiting task is how this SDK cancels a request: its
        dispatcher then sends notifications/cancelled for it.
        """
        cancel_on_progress = 1 if step.get("cancelOnProgress") is True else step.get("cancelOnProgress")
        seen = 0
        with anyio.CancelScope() as scope:
            if step.get("cancelAfterMs") is not None:
                scope.deadline = anyio.current_time() + step["cancelAfterMs"] / 1000

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                nonlocal seen
                report = {"event": "progress", "index": index, "progress": progress}
                if total is not None:
                    report["total"] = total
                if message is not None:
                    report["message"] = message
                emit(report)
                seen += 1
                if cancel_on_progress and seen >= cancel_on_progress:
                    scope.cancel()

            wants_progress = step.get("progress") or cancel_on_progress
            return dump(await send(on_progress if wants_progress else None))
        raise StepCancelled

    async def list(self, step: dict[str, Any], key: str, fetch_page: Callable[..., Awaitable[Any]]) -> Any:
        """One page when the step names a cursor or sets "all": false; else every page, merged."""
        if step.get("all") is False or "cursor" in step:
            return dump(await fetch_page(cursor=step.get("cursor")))
        items: list[Any] = []
        cursor = None
        for pages in range(1, MAX_PAGES + 1):
            page = dump(await fetch_page(cursor=cursor))
            items.extend(page[key])
            cursor = page.get("nextCursor")
            if cursor is None:
                return {key: items, "pages": pages}
        raise RuntimeError(f"{step['op']}: still a nextCursor after {MAX_PAGES} pages")

    async def wait_for(self, step: dict[str, Any]) -> dict[str, Any]:
        """Wait until `count` (default 1) notifications of `method` have arrived since the start,
        or, with "listen", until that listen stream has delivered `count` events."""
        count = step.get("count", 1)
        seen: Callable[[], list[Any]]
        if "listen" in step:
            listening = self.listens.get(step["listen"])
            if listening is None:
                raise UsageError(f"waitFor: no open listen {step['listen']!r}")
            what, seen = f"events on listen {step['listen']}", lambda: listening.events
        else:
            what, seen = step["method"], lambda: self.notifications.get(step["method"], [])
        timeout_ms = step.get("timeoutMs", self.config.timeout)
        with anyio.move_on_after(timeout_ms / 1000):
            while len(seen()) < count:
                self.notification_arrived = anyio.Event()
                await self.notification_arrived.wait()
        if len(seen()) < count:
            raise TimeoutError(f"waited {timeout_ms:g} ms for {count} x {what}, got {len(seen())}")
        if "listen" in step:
            return {"listen": step["listen"], "count": len(seen()), "events": list(seen())}
        return {"method": what, "count": len(seen()), "params": seen()}

    # -- subscriptions/listen (2026-07-28)

    async def listen(self, step: dict[str, Any]) -> dict[str, Any]:
        """Open a listen stream; later steps name it by its "name" (default: its label)."""
        name = step.get("name") or step.get("label")
        if not name or name in self.listens:
            raise UsageError("listen: needs a \"name\" (or \"label\") no open listen uses")
        assert self.tasks is not None
        manager = self.client.listen(
            tools_list_changed=step.get("toolsListChanged", False),
            prompts_list_changed=step.get("promptsListChanged", False),
            resources_list_changed=step.get("resourcesListChanged", False),
            resource_subscriptions=step.get("resourceSubscriptions", ()),
        )
        subscription = await manager.__aenter__()  # returns once the server acknowledged it
        listening = self.listens[name] = Listening(name, manager, subscription)
        self.tasks.start_soon(self.collect_events, listening)
        honored = dump(subscription.honored)
        return {"subscriptionId": subscription.subscription_id, "honored": honored}

    async def collect_events(self, listening: Listening) -> None:
        try:
            async for event in listening.subscription:
                record = describe_event(event)
                listening.events.append(record)
                emit({"event": "listenEvent", "listen": listening.name, **record})
                self.notification_arrived.set()
            listening.end = listening.end or "closed"
        except SubscriptionLost:
            listening.end = "lost"
        finally:
            listening.finished.set()

    async def stop_listen(self, name: str) -> dict[str, Any]:
        """Leave the listen's context manager (the SDK cancels the stream): its events so far."""
        if name not in self.listens:
            raise UsageError(f"stopListen: no open listen {name!r}")
        listening = self.listens.pop(name)
        await anyio.sleep(0.05)  # let the collector take events that are already in
        if listening.end is None:
            listening.end = "stopped"
        await listening.manager.__aexit__(None, None, None)
        await listening.finished.wait()
        return {"events": listening.events, "end": listening.end}

    async def stop_all_listens(self) -> None:
        for name in list(self.listens):
            await self.stop_listen(name)


# -------------------------------------------------------------------- main


async def main(argv: list[str]) -> int:
    try:
        config = parse_command_line(argv)
    except (UsageError, OSError, ValueError) as exc:
        print(f"py_client.py: {exc}", file=sys.stderr)
        return 2
    driver = Driver(config)
    status = 0
    try:
        async with AsyncExitStack() as stack:
            try:
                await stack.enter_async_context(driver.client)
            except Exception as exc:  # the handshake failed, or the server could not be spawned
                emit({"event": "connectFailed", "error": describe_error(exc)})
                return 1
            emit(driver.connected_record())
            async with anyio.create_task_group() as driver.tasks:
                try:
                    await driver.run(config.steps)
                except UsageError as exc:
                    print(f"py_client.py: {exc}", file=sys.stderr)
                    status = 2
                finally:  # a listen left open by the steps ends before the connection
                    await driver.stop_all_listens()
    except Exception as exc:  # the transport died (e.g. undecodable output) and shutdown re-raised it
        emit({"event": "closeFailed", "error": describe_error(exc)})
        return 1
    emit({"event": "closed"})
    return status


if __name__ == "__main__":
    sys.exit(anyio.run(main, sys.argv[1:]))
