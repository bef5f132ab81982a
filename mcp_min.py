#!/usr/bin/env python3
"""mcp_min: a Model Context Protocol server in one file, standard library only.

A client (Claude Desktop, Claude Code, an IDE, an agent) starts an MCP server as a
subprocess and talks JSON-RPC 2.0 with it over stdin and stdout, one message a line each
way. This module is such a server, and a small client too. Copy it next to your code:

    from mcp_min import Server

    server = Server("calculator")

    @server.tool
    def add(a: int, b: int) -> int:
        '''Add two integers.'''
        return a + b

    if __name__ == "__main__":
        server.run()

After the handshake (initialize, notifications/initialized), the client calls the tool:

    C->S {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add",...}}
    S->C {"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"5"}],...}}

The server is one sentence: a loop reads newline-delimited JSON from stdin, routes each
message by its method through a dict of handlers, and writes the responses to stdout
(logs go to stderr), with a pool of threads running the tool calls beside the loop and a
writer lock keeping each response one whole line.

That request's way through this file, every function it enters, in order, is the
first column (H); a 2026-07-28 request over stdio takes the second (S): it carries its
protocol version and the client's capabilities (its envelope) in params._meta, and needs
no handshake; and the third (P) is a 2026-07-28 POST to the HTTP endpoint:

        P  Server.wsgi             the WSGI application: an HttpExchange per request
        P  HttpExchange.__init__   the request, and the stream its response is made of
        P  HttpExchange.serve      the checks every request passes, then its method
        P  HttpExchange.check_host  the Host must name this server (421, 400)
        P  HttpExchange.post       Accept, Content-Type, the body and its era
        P  HttpExchange.read_body  within max_body_bytes; reserved in max_inflight_bytes
        P  _is_length              Content-Length: digits only
    H S P  decode_message          the bytes -> a message, or a parse error (-32700)
    H S    Peer.dispatch           a request, a notification, a response, a batch?
    H S P  classify                ... or an invalid message (-32600)
        P  HttpExchange.check_headers  2026-07-28: the headers agree with the body
        P  HttpExchange.deliver    a session for the request; the request to it
        P  Session.__init__        (made for this request alone)
        P  Peer.__init__           (its requests to the client: none in 2026-07-28)
    H S P  Session.handle_request  admit it, then run it: here, or on the pool
    H S P  Session.admit           the rules of its era and its method (METHODS)
    H S    is_stateless            which era? (HTTP's header has said)
      S P  Envelope.__init__       the envelope checked: -32602, or -32022 (version)
    H S P  Context.__init__        the request as its handler sees it
      S P  Server.offered          does the server offer the method's capability?
    H S P  Server.schedule         a tool call runs user code: to the pool...
    H S P  WorkerPool.submit       ...a thread takes it; the reader reads on
        P  HttpExchange.next_item  the HTTP thread waits for what the stream brings
    H S P  Session.run             on that thread: the response, sent on its stream
    H S P  Session.response        the handler run, its result (or error) encoded
      S P  Server.run_stateless    requestState's answers in; resultType, serverInfo out
    H S P  Server.call_handler     server.handlers["tools/call"](ctx, params)
    H S P  Server.call_tool        that handler
    H S P  _named                  the tool params.name names, and its arguments
    H S P  Tool.call               checks the arguments, calls the function
    H S P  Signature.bind          the arguments checked against the input schema...
    H S P  _Compiler._object       ...by its compiled check of an object's properties
    H S P  Entry.invoke            add(a=2, b=3)
    H S P  Tool.result             its return value -> content and structuredContent
    H      _shape_result           the result as the session's protocol version has it
    H S P  encode_message          the response -> one compact line
    H S    Writer.respond          the stream of a request over stdio: its Writer
    H S    Writer.send             the writer lock: responses of threads never mix
    H S    write_all               every byte, and the newline
        P  HttpExchange.respond    the response queued on the stream for the HTTP thread
        P  HttpExchange.release    the body's bytes are free again
        P  _http_response          the response came first: one JSON body (else SSE)

Words, one for each thing: a *session* is what the server knows of one client; a
*stream* is where one request's messages go (the stdio connection's Writer, a Batch,
an HttpExchange); to *send* is to write any frame (an encoded message), to *respond*
to send the response a request is owed; the *handshake era* is the protocols that open
with initialize, the *stateless era* 2026-07-28, whose requests carry their envelope.

What a user may override or replace, as socketserver's docstring lists its hooks:

    server.handlers[METHOD]   a handler(ctx, params) -> result, for any method
    server.methods[METHOD]    a row of METHODS: the rules of a method (era, capability,
                              on the pool or not)
    Server.schedule(fn, *args)  where a call runs (the worker pool by default)
    Server.call_tool, ...     each built-in handler; roots_changed, may_subscribe
    Session.handle_request, handle_notification, handle_response, handle_batch
    Stream.send, Stream.respond  a stream of one's own (a Stream subclass)

The sections, lower layers first; a first reading can skip those marked *:

    Logging failures *  a failure as one line and a short traceback, for the log
    JSON-RPC            errors, lines, messages, and the streams they go out on
    Schemas             Python type hints -> JSON Schema, and a validator
    Content             the blocks tools and prompts return
    Registry            tools, resources, prompts
    Server              settings, registration, the handlers dict and its handlers
    Context             one request, as its handler sees it: progress, logs,
                        cancellation, asking the client (sampling, elicitation, roots)
    The eras            the method table; the 2026-07-28 envelope and requestState
    Scheduling          the worker pool
    The core            Peer.dispatch, and the Session that serves one client
    stdio               a loop reading lines, a pool running calls, a writer lock
    Streamable HTTP     the same sessions behind a WSGI application
    Signals and shutdown *  stop signals, the lifespan, async handlers' event loop
    The embedded HTTP server *  wsgiref, hardened against slow and hostile clients
    Client              the same core as a client, for tests, tools and workshops
    Command line *      `python3 mcp_min.py --help`
"""

from __future__ import annotations

import _thread
import binascii
import contextvars
import enum
import functools
import json
import operator
import os
import re
import sys
import threading
import time
import types
import weakref
from collections import namedtuple
from itertools import count
from queue import Empty, SimpleQueue

# Said plainly, rather than as a traceback from deep inside.
if sys.version_info < (3, 10):
    raise SystemExit("mcp_min needs Python 3.10 or newer; "
                     f"this is {sys.version.split()[0]}")

# Startup time matters (clients spawn servers often), so modules that take milliseconds
# to import (logging, typing, inspect, dataclasses, signal, asyncio, ...) are imported
# where they are first needed.

__version__ = "0.1.0"
__all__ = [
    "Server", "Context", "Client", "Session", "Peer", "Stream", "Outlet", "WorkerPool",
    "FramePrinter", "METHODS", "SETTINGS", "ToolError", "JSONRPCError", "Cancelled",
    "CapabilityError", "SchemaError", "ToolResult", "ResourceNotFound", "ProtocolError",
    "Content", "text", "image", "audio", "resource_link", "embedded_resource",
    "Signature", "compile_schema", "type_schema", "parse_docstring",
    "PROTOCOL_VERSIONS", "LATEST_PROTOCOL_VERSION", "LOG_LEVELS", "explain", "main"]


class _Log:
    """The "mcp_min" logger, set up on first use (logging is slow to import)."""

    def __getattr__(self, name):
        global log
        import logging
        with _first_use:            # threads that log first at once set it up once
            logger = logging.getLogger("mcp_min")
            if not logging.getLogger().handlers and not logger.handlers:
                handler = logging.StreamHandler(sys.stderr)
                handler.setFormatter(
                    logging.Formatter("mcp_min %(levelname)s: %(message)s"))
                # Silent once the application configures logging: its handlers then show
                # the record, which would otherwise appear twice.
                handler.addFilter(lambda record: not logging.getLogger().handlers)
                logger.addHandler(handler)
                logger.setLevel(logging.INFO)
            log = logger
        return getattr(logger, name)


# Guards what is set up on first use, as above: no GIL does on a free-threaded build.
_first_use = threading.Lock()
log = _Log()

# No value, where None is one: no default, no annotation, not JSON.
_NOTHING = object()

V2025_03 = "2025-03-26"
V2025_06 = "2025-06-18"
V2025_11 = "2025-11-25"
#: Handshake-era revisions this server speaks, oldest first.
PROTOCOL_VERSIONS = ("2024-11-05", V2025_03, V2025_06, V2025_11)
LATEST_PROTOCOL_VERSION = PROTOCOL_VERSIONS[-1]
#: Revisions of the stateless era: no initialize; every request carries its version
#: in params._meta. (MODERN_PROTOCOL_VERSIONS is its former name.)
STATELESS_PROTOCOL_VERSIONS = MODERN_PROTOCOL_VERSIONS = ("2026-07-28",)
V2026_07 = STATELESS_PROTOCOL_VERSIONS[0]
#: Widgets (docs/widgets.md): MCP Apps' id, MIME type; option -> (ui key, ChatGPT's)
UI_EXTENSION, UI_MIME = "io.modelcontextprotocol/ui", "text/html;profile=mcp-app"
_WIDGET_META = {"csp": ("csp", "openai/widgetCSP"), "permissions": ("permissions", ""),
                "domain": ("domain", "openai/widgetDomain"),
                "prefers_border": ("prefersBorder", "openai/widgetPrefersBorder")}


# ======================================================================================
# Logging failures (a first reading can skip this)
# ======================================================================================

# A failure is logged once, bounded: a handler a client makes fail deep in a recursion
# must not write a hundred KiB per request.
_LOGGED_CHARS = 4096


def _escaped(text, limit=None, keep=""):
    """Text from the other end, cut to ``limit`` characters, what a log or terminal
    would act on (a line break, an ANSI escape) escaped as repr() does, but ``keep``."""
    text = str(text)
    if limit is not None and len(text) > limit:
        text = f"{text[:limit]}[... {len(text) - limit} characters left out]"
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c in keep else repr(c)[1:-1] for c in text)


def _log_failure(what, error, with_traceback=True):
    import traceback
    text = _exception_line(error, traceback, 200)
    if isinstance(error, RecursionError):
        text = _recursion_line(error, traceback)
    elif with_traceback:
        text += "\n" + _traceback_chain(error, traceback)
    if len(text) > _LOGGED_CHARS:
        cut, keep = len(text) - _LOGGED_CHARS, _LOGGED_CHARS // 2
        text = f"{text[:keep]}\n[... {cut} characters left out ...]\n{text[-keep:]}"
    log.error("%s failed: %s", _escaped(what, 200), text)


def _traceback_chain(error, traceback):
    """The tracebacks of ``error`` and of its causes (five at most), oldest first."""
    text = ""
    seen = set()
    while error is not None and id(error) not in seen and len(seen) < 5:
        seen.add(id(error))
        text = _short_traceback(error, traceback) + text
        if error.__cause__ is not None:
            error = error.__cause__
            text = "\nThe above exception caused the next:\n\n" + text
        elif not error.__suppress_context__ and error.__context__ is not None:
            error = error.__context__
            text = "\nThe next exception came while handling the above:\n\n" + text
        else:
            error = None
    return text.rstrip()


def _exception_line(error, traceback, limit=500):
    """"Type: message" in one line, cut short and escaped: it may quote a client."""
    line = "".join(traceback.format_exception_only(type(error), error)).rstrip()
    return _escaped(line, limit)


def _short_traceback(error, traceback):
    """``error``'s traceback: its first and last frames."""
    if isinstance(error, RecursionError):
        return _recursion_line(error, traceback) + "\n"
    frames = list(traceback.walk_tb(error.__traceback__))
    head, tail = 4, 8
    left_out = len(frames) - head - tail
    if left_out > 0:
        frames = frames[:head] + frames[-tail:]
    lines = traceback.StackSummary.extract(iter(frames)).format()
    if left_out > 0:
        lines.insert(head, f"  [... {left_out} frames left out ...]\n")
    return "".join(["Traceback (most recent call last):\n", *lines,
                    _exception_line(error, traceback), "\n"])


def _recursion_line(error, traceback):
    """A RecursionError in one line: where the recursion began, and where it ended."""
    import collections
    frames = list(traceback.walk_tb(error.__traceback__))
    if not frames:
        return _exception_line(error, traceback)
    places = [f"{frame.f_code.co_name} ({frame.f_code.co_filename}, line {lineno})"
              for frame, lineno in frames]
    calls = collections.Counter(frame.f_code for frame, _ in frames)
    place = f"{len(frames)} frames deep, ending in {places[-1]}"
    for i, (frame, _) in enumerate(frames):
        if calls[frame.f_code] > 1:
            place = f"{places[i]} calls itself, {place}"
            if i > 0:
                place = f"called from {places[i - 1]}: {place}"
            break
    return f"{_exception_line(error, traceback)} ({place})"


# ======================================================================================
# JSON-RPC: errors, lines, messages and streams
# ======================================================================================

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
# MCP, handshake era
RESOURCE_NOT_FOUND = -32002
# MCP 2026-07-28: the only codes of -32020...-32099 a server may send.
HEADER_MISMATCH = -32020
MISSING_CAPABILITY = -32021
UNSUPPORTED_VERSION = -32022
# Of the implementation-defined range: work refused past the queue limit.
SERVER_BUSY = -32000


def _busy_code(stateless):
    """The code of work refused past a limit: 2026-07-28 has no -32000...-32019."""
    if stateless:
        return INTERNAL_ERROR
    return SERVER_BUSY


class JSONRPCError(Exception):
    """A JSON-RPC error response (from a tool, an ``isError`` result); also raised by a
    request the other side refuses."""

    def __init__(self, code, message, data=None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


class ToolError(Exception):
    """Raise in a tool for a failure the model should see (an ``isError`` result)."""


class ResourceNotFound(LookupError):
    """Raise (as FileNotFoundError) in a resource for a URI it does not serve."""


class Cancelled(Exception):
    """The client cancelled the request; raised by ``Context.check_cancelled()``."""


class CapabilityError(Exception):
    """The client did not declare what a request to it needs: ``required`` is the
    capability it lacks, e.g. ``{"sampling": {}}`` (2026-07-28 error -32021)."""

    def __init__(self, message, required=None):
        super().__init__(message)
        self.required = required or {}


class InvalidAnswer(JSONRPCError):
    """The client's answer to a question does not fit it (-32602)."""

    def __init__(self, message):
        super().__init__(INVALID_PARAMS, message)


class InputRequired(BaseException):
    """Questions (``ctx.elicit()``, ...) a 2026-07-28 client has not answered yet: the
    call ends ``input_required``. A BaseException: ``except Exception`` lets it by."""

    def __init__(self, questions):
        super().__init__(f"waiting for the client to answer {', '.join(questions)}")
        # key -> (the input request, its digest)
        self.questions = questions


# --- lines -----------------------------------------------------------------
# Over stdio a message is one line of UTF-8 JSON. A line over the size limit is never
# held whole: only its first and last bytes are kept, which may still tell its id.

def read_past(readline, line, max_bytes):
    """Read the rest of the over-long line ``line`` began, in pieces: a LineTooLong."""
    head = line[:512]
    tail = line[-512:]
    size = len(line.rstrip(b"\r\n"))
    # More follows, unless the line or the input ended within what was read
    more = line[-1:] != b"\n" and len(line) == max_bytes + 2
    while more:
        piece = readline(1 << 20)
        tail = (tail + piece)[-512:]
        more = piece and piece[-1:] != b"\n"
        if not more:
            piece = piece.rstrip(b"\r\n")
        size += len(piece)
    return LineTooLong(size, head, tail.rstrip(b"\r\n"))


# What the first and last bytes of an over-long line tell. _FIRST_KEY: the first key
# after any "jsonrpc" and "id".
_FIRST_KEY = (rb'\s*\{(?:\s*"(?:jsonrpc|id)"\s*:\s*(?:-?\d+|"[^"\\]*")\s*,)*'
              rb'\s*"(\w+)"\s*:')
_AN_ID = rb'(-?\d{1,18}|"[^"\\]{0,200}")'
_LEADING_ID = rb'\s*\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*' + _AN_ID + rb'\s*,'
_TRAILING_ID = rb',\s*"id"\s*:\s*' + _AN_ID + rb'\s*\}\s*$'


class LineTooLong(namedtuple("LineTooLong", "size head tail")):
    """A line over the size limit, skipped: its size, first and last bytes."""

    def kind(self):
        """Best effort: "request", "notification" or "response", from the bytes kept."""
        ends = self.head + b" " + self.tail
        first = re.match(_FIRST_KEY, self.head)
        if first and first[1] in (b"result", b"error"):
            return "response"
        if not re.search(rb'"method"\s*:', ends):
            if re.search(rb'"(result|error)"\s*:', self.head):
                return "response"
            return "request"
        if re.search(rb'"id"\s*:', ends):
            return "request"
        return "notification"

    def request_id(self):
        """Best effort: the id, if the line starts or ends with it (SDK clients do)."""
        match = re.match(_LEADING_ID, self.head) or re.search(_TRAILING_ID, self.tail)
        if match is None:
            return None
        try:
            return json.loads(match[1])
        except ValueError:
            return None


# --- messages --------------------------------------------------------------

def _reject_constant(name):
    raise ValueError(f"{name} is not valid JSON")


_decoder = json.JSONDecoder(parse_constant=_reject_constant)
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"),
                           allow_nan=False).encode


def decode_message(line):
    """A line of bytes -> a message, or JSONRPCError(PARSE_ERROR) saying why not."""
    try:
        return _decoder.decode(line.decode("utf-8"))
    except UnicodeDecodeError as e:
        why = f"not valid UTF-8 (byte {e.start})"
    except RecursionError:
        why = "JSON nested too deeply"
    except ValueError as e:
        why = e
        if line.startswith(b"\xef\xbb\xbf"):
            why = ("the line starts with a byte-order mark (EF BB BF): "
                   "send UTF-8 without one")
    raise JSONRPCError(PARSE_ERROR, f"Parse error: {why}")


def encode_message(message):
    """One message -> compact UTF-8 with no raw newline; a lone surrogate (a file name
    read with surrogateescape) as JSON's \\udcxx escape, never as bad UTF-8."""
    return _encode(message).encode("utf-8", "backslashreplace")


def b64encode(data):
    return binascii.b2a_base64(data, newline=False).decode("ascii")


b64decode = binascii.a2b_base64


def error_frame(request_id, code, message, data=None):
    """An error response, encoded; without ``data`` if that is not JSON, without an
    unreadable id (as 2025-11-25 allows: some SDK clients reject ``"id": null``)."""
    error = {"code": code, "message": message}
    response = {"jsonrpc": "2.0", "id": request_id, "error": error}
    if request_id is None:
        del response["id"]
    if data is not None:
        error["data"] = data
        try:
            return encode_message(response)
        except (TypeError, ValueError):
            del error["data"]
    return encode_message(response)


# --- streams ---------------------------------------------------------------

class Stream:
    """Where the messages about one request go: the Writer over stdio, a Batch, the
    POST's HttpExchange. ``events``: does more than the response reach the client?"""

    events = True

    def send(self, frame):
        """Send a frame that comes before the response (progress, a log message, a
        question to the client) now; False if it cannot reach the client."""
        raise NotImplementedError

    def respond(self, frame, before=None):
        """Send the response (None: none is due), calling ``before()`` just before it
        goes out (initialize's: no notification may come ahead of it)."""
        raise NotImplementedError

    def notify(self, method, params=None):
        message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        return self.send(encode_message(message))


# The name Stream had before
Outlet = Stream


class Batch(Stream):
    """The stream of a batch's members (2025-03-26 only): their responses go out as one
    array (if any) once all are done; frames before a response go out at once."""

    def __init__(self, stream, size):
        self.stream = stream
        self.remaining = size
        self.frames = []
        self.lock = threading.Lock()
        self.events = stream.events
        self.send = stream.send

    def respond(self, frame, before=None):
        with self.lock:
            if frame is not None:
                self.frames.append(frame)
            self.remaining -= 1
            if self.remaining:
                return
        if self.frames:
            self.stream.respond(b"[" + b",".join(self.frames) + b"]")
        else:
            self.stream.respond(None)


class Writer(Stream):
    """The writing end of a pipe (stdout; a server's stdin for the Client), the stream
    of every request on it: each frame one whole line, under the lock."""

    closed = False
    # The end of the grace period, once the input ended (drain)
    deadline = None

    def __init__(self, write_fd, trace=None, on_closed=None):
        self.write_fd = write_fd
        self.trace = trace
        # Called once, if writing fails: the other side has gone
        self.on_closed = on_closed
        self.lock = threading.Lock()

    def respond(self, frame, before=None):
        if frame is not None:
            self.send(frame, before)

    def send(self, frame, before=None):
        """Write one frame and its newline (after ``before()``, under the lock); False
        if the other side has gone."""
        # (not waiting for a write stuck on a closed pipe)
        if self.closed:
            return False
        with self.lock:
            if self.closed or self.write_fd is None:
                return False
            if before is not None:
                before()
            if self.trace:
                self.trace("out", frame)
            try:
                write_all(self.write_fd, frame)
            except (OSError, ValueError) as e:
                # a broken pipe, a reset, a closed descriptor
                self.closed = True
                log.debug("the connection closed while writing: %s", e)
                if self.on_closed is not None:
                    self.on_closed()
                return False
        return True

    def close(self, timeout=None):
        """Stop writing between frames: one being written is finished first (within
        ``timeout``, else the rest of the grace period, else 5 s)."""
        if timeout is None:
            timeout = 5.0
            if self.deadline is not None:
                timeout = self.deadline - time.monotonic()
        got = self.lock.acquire(timeout=max(0.0, timeout))
        self.closed = True
        if got:
            self.lock.release()


def write_all(fd, frame):
    """Write a frame and its newline, every byte: pipes take large writes in pieces, and
    a signal can cut one short. writev adds the newline without copying the frame."""
    parts = [frame, b"\n"]
    while parts:
        if _writev is not None:
            written = _writev(fd, parts)
        else:
            written = os.write(fd, parts[0])
        while parts and written >= len(parts[0]):
            written -= len(parts.pop(0))
        if parts:
            parts[0] = memoryview(parts[0])[written:]


# not on Windows
_writev = getattr(os, "writev", None)

# Set by claim_stdio(), run_http and gunicorn (Server.wsgi): the process is the
# server's, its allocator ours to tune (not that of an application that mounts it).
_tune_allocator = False


def _keep_big_blocks_apart():
    """Pin glibc's mmap threshold at 1 MiB on the first large message: glibc raises it
    once a large block is freed, and then each such message grows a heap for good."""
    global _tune_allocator
    with _first_use:
        tune = _tune_allocator
        _tune_allocator = False
    if not tune or not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        # M_MMAP_THRESHOLD
        ctypes.CDLL(None).mallopt(-3, 1 << 20)
    except (OSError, AttributeError, TypeError):
        pass


# ======================================================================================
# Schemas
# ======================================================================================

# Python annotations -> JSON Schema 2020-12, and a validator for it, all worked out at
# registration: a call costs one validation walk plus its conversions. Classes go into
# "$defs" by name, which terminates on recursion.

class SchemaError(TypeError):
    """Annotations or a schema that can't become a usable JSON Schema."""


def _blamed(label, make, *args, **kwargs):
    """make(...), a SchemaError it raises prefixed: "f: parameter 'x': ..."."""
    try:
        return make(*args, **kwargs)
    except SchemaError as e:
        raise SchemaError(f"{label}: {e}") from None


class _Typing:
    """The typing module's names and groups of them, imported on first use."""

    def __getattr__(self, name):
        import collections.abc as abc
        import typing
        required = {getattr(typing, "Required", 1): True,
                    getattr(typing, "NotRequired", 2): False}
        self.__dict__.update(
            vars(typing), UNIONS=(typing.Union, types.UnionType),
            OBJECTS=(dict, abc.Mapping), ARRAYS=(list, abc.Sequence, set, frozenset),
            REQUIRED=required)
        return object.__getattribute__(self, name)


_typing = _Typing()
_JSON_TYPES = {type(None): "null", bool: "boolean", int: "integer", float: "number",
               str: "string", list: "array", dict: "object"}
_SCALAR_TYPES = frozenset((type(None), bool, int, float, str))
# Classes JSON carries as strings, as the official SDK does
_AS_STRINGS = {
    ("uuid", "UUID"): {"type": "string", "format": "uuid"},
    ("decimal", "Decimal"): {"type": ["string", "number"]},
    ("pathlib", "Path"): {"type": "string"},
    ("pathlib", "PurePath"): {"type": "string"},
    ("datetime", "datetime"): {"type": "string", "format": "date-time"},
    ("datetime", "date"): {"type": "string", "format": "date"}}

# Annotated metadata (pydantic, annotated_types): attribute name -> JSON Schema keyword
_BOUND_KEYWORDS = {"gt": "exclusiveMinimum", "ge": "minimum", "lt": "exclusiveMaximum",
                   "le": "maximum", "multiple_of": "multipleOf"}
_LENGTH_KEYWORDS = {
    "min_length": {"string": "minLength", "array": "minItems",
                   "object": "minProperties"},
    "max_length": {"string": "maxLength", "array": "maxItems",
                   "object": "maxProperties"}}
_METADATA_NAMES = {*_BOUND_KEYWORDS, *_LENGTH_KEYWORDS, "pattern", "description",
                   "title", "examples", "documentation", "strict", "allow_inf_nan"}

# --- docstrings ------------------------------------------------------------

# Sections ("Args:"), and those naming parameters (a dataclass's Attributes)
_SECTION = re.compile(r"[A-Z][A-Za-z ]*:")
_PARAM_SECTIONS = {"Args", "Arguments", "Parameters", "Params", "Keyword Args",
                   "Keyword Arguments", "Other Parameters", "Attributes"}
# "name (type): text"
_GOOGLE_ITEM = re.compile(r"\**(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)")
# ":param type name: text"
_SPHINX_ITEM = re.compile(
    r":(?:param|parameter|arg|argument|key|keyword)\s+(?:[^:]*\s)?\**(\w+)\s*:\s*(.*)")


def _ends_summary(i, line):
    """The summary ends at a blank line, a field or a section ("Look up the weather
    for:" on the first line is no section)."""
    if not line or line.startswith(":"):
        return True
    return bool(_SECTION.fullmatch(line)) and (i > 0 or line[:-1] in _PARAM_SECTIONS)


def parse_docstring(doc):
    """Docstring -> (summary, {parameter: description}): Google or Sphinx style."""
    first, *rest = (doc or "").expandtabs().strip().splitlines() or [""]
    margin = min((len(line) - len(line.lstrip()) for line in rest if line.strip()),
                 default=0)
    lines = [first.rstrip()] + [line[margin:].rstrip() for line in rest]
    ends = (i for i, line in enumerate(lines) if _ends_summary(i, line))
    end = next(ends, len(lines))
    summary = " ".join(" ".join(lines[:end]).split()) or None
    return summary, _parameter_docs(lines[end:])


def _parameter_docs(lines):
    """{parameter: description} from the lines after a docstring's summary."""
    params = {}
    # The item more indented lines continue
    current = None
    indent = 0
    section = None
    for line in lines:
        text = line.strip()
        depth = len(line) - len(line.lstrip())
        if current and text and depth > indent:
            params[current] += " " + text
            continue
        current = None
        if depth == 0 and _SECTION.fullmatch(text):
            section = text[:-1]
        elif item := _SPHINX_ITEM.match(text) or (
                section in _PARAM_SECTIONS and _GOOGLE_ITEM.fullmatch(text)):
            current, indent = item[1], depth
            params[current] = item[2]
    return {name: " ".join(words.split()) for name, words in params.items()}


# --- JSON values -----------------------------------------------------------

def _is_json_number(v):
    """An int (not a bool) or a finite float: json reads 1e400 as inf."""
    if isinstance(v, float):
        return v - v == 0
    return isinstance(v, int) and not isinstance(v, bool)


def _is_json_integer(v):
    """1.0 is an integer too."""
    return _is_json_number(v) and (not isinstance(v, float) or v.is_integer())


_TYPE_TESTS = {
    "null": lambda v: v is None, "boolean": lambda v: isinstance(v, bool),
    "integer": _is_json_integer, "number": _is_json_number,
    "string": lambda v: isinstance(v, str), "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict)}


def _json_type(value):
    return _JSON_TYPES.get(type(value)) or type(value).__name__


def _json_key(value):
    """A hashable stand-in with JSON's equality: 1 == 1.0, True != 1, [1] == [1.0]."""
    if isinstance(value, (list, tuple)):
        return (list, tuple(map(_json_key, value)))
    if isinstance(value, dict):
        return (dict, frozenset((k, _json_key(x)) for k, x in value.items()))
    return (float if _is_json_number(value) else type(value), value)


def _preview(value):
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= 60 else text[:59] + "…"


def _short_repr(text):
    return repr(text) if len(text) <= 60 else repr(text[:59]) + "…"


def _typed_preview(value):
    """'null', 'integer 5', 'string "x"': what a problem says it got."""
    if value is None:
        return "null"
    if isinstance(value, float) and not _is_json_number(value):
        return f"{_preview(value)} (JSON has no such number)"
    return f"{_json_type(value)} {_preview(value)}"


def _dump(value):
    """Python value -> JSON value (dataclasses, Enums, sets, dates, ...)."""
    if isinstance(value, enum.Enum):
        return _dump(value.value)
    if value is None or isinstance(value, (str, int, float)):
        return value
    if isinstance(value, dict):
        return {k.value if isinstance(k, enum.Enum) else k: _dump(v)
                for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_dump(v) for v in value]
    if hasattr(type(value), "__dataclass_fields__"):
        import dataclasses
        return {f.name: _dump(getattr(value, f.name))
                for f in dataclasses.fields(value)}
    if getattr(value, "tzinfo", False) is None and hasattr(value, "astimezone"):
        # A naive datetime is local time: RFC 3339 wants the offset.
        value = value.astimezone()
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    # (a value of one means its module is loaded)
    for module, name in (("uuid", "UUID"), ("decimal", "Decimal")):
        cls = getattr(sys.modules.get(module), name, None)
        if cls is not None and isinstance(value, cls):
            return str(value)
    return value


# --- annotations -> schemas and converters ---------------------------------

def _type_name(tp):
    return tp.__qualname__ if isinstance(tp, type) else repr(tp).replace("typing.", "")


def _is_subclass(tp, classes):
    """issubclass() for any annotation (in 3.10 list[int] is a type, yet no class)."""
    return (isinstance(tp, type) and not isinstance(tp, types.GenericAlias)
            and issubclass(tp, classes))


def _from_string(cls, schema):
    """The converter to a class of _AS_STRINGS. A Decimal must meet the number bounds
    of ``schema`` too: the validator checks those on numbers, not on "19.99"."""
    is_date = cls.__module__ == "datetime"
    expected = (f"an ISO 8601 {schema['format']} string" if is_date
                else f"a {cls.__name__}")

    def convert(v):
        # (3.10's fromisoformat reads no "Z"; Decimal raises an ArithmeticError)
        try:
            if is_date:
                return cls.fromisoformat(v[:-1] + "+00:00" if v[-1:] == "Z" else v)
            value = cls(str(v))
        except (ValueError, ArithmeticError):
            raise ValueError(f"expected {expected}, got {_preview(v)}") from None
        if cls.__module__ != "decimal":
            return value
        if not value.is_finite():
            raise ValueError(f"expected a finite number, got {_preview(v)}")
        for keyword, _, passes, text in _NUMBER_BOUNDS:
            if keyword not in schema:
                continue
            # As written: 0.1, not 0.1000000000000000055
            bound = cls(str(schema[keyword]))
            # (1e30000000 % 0.01 is an ArithmeticError)
            try:
                ok = (value % bound == 0 if keyword == "multipleOf"
                      else passes(value, bound))
            except ArithmeticError:
                ok = False
            if not ok:
                bound = text.format(_preview(schema[keyword]))
                raise ValueError(f"{bound}, got {_preview(v)}")
        return value
    return convert


def _float(value):
    """A JSON number as a float (2 -> 2.0, as pydantic does)."""
    try:
        return float(value)
    except OverflowError:
        raise ValueError(f"{_preview(value)} is too large for a float") from None


# A JSON integer as an int (1.0 is one)
_NUMBER_CONVERTERS = {int: int, float: _float}


class _Types:
    """Annotations -> schemas and converters, sharing one `defs` dict; ``where`` is
    what a warning names ("f: parameter 'n'")."""

    def __init__(self, defs, where):
        self.defs = defs
        self.where = where
        # A name in defs -> its class; a class in defs -> its converter
        self.owners = {}
        self.converters = {}
        # (checks, arms) of the unions: finish()
        self.unions = []

    def translate(self, tp):
        """Annotation -> (a fresh schema, a converter of a *validated* JSON value to
        what `tp` asks for, or None if the value will do)."""
        # The usual annotation, by exact class (a bool is no int), needs no typing
        if tp is None:
            tp = type(None)
        if isinstance(tp, type) and tp in _JSON_TYPES:
            return {"type": _JSON_TYPES[tp]}, _NUMBER_CONVERTERS.get(tp)
        t = _typing
        origin = t.get_origin(tp) or tp
        args = t.get_args(tp)
        if origin is t.Annotated:
            return self._annotated(args)
        if origin is t.Literal:
            return self._literal(args)
        # Any and object: any JSON value, as it is
        if origin is t.Any or origin is object:
            return {}, None
        if origin in t.UNIONS:
            return self._union(args)
        if origin is tuple and args and args[-1] is not ...:
            return self._tuple(args)
        if origin is tuple or origin in t.ARRAYS:
            return self._array(origin, args)
        if origin in t.OBJECTS:
            return self._mapping(tp, args)
        return self._class(tp)

    def _annotated(self, args):
        """Annotated[T, "description"], [T, {keywords}] or [T, pydantic metadata]."""
        schema, convert = self.translate(args[0])
        for extra in args[1:]:
            if isinstance(extra, str):
                schema["description"] = extra
            elif isinstance(extra, dict):
                schema.update(extra)
            else:
                self.metadata(schema, extra)
        return schema, convert

    def _literal(self, args):
        """Literal[...], converted to the literal itself: "red" -> Colour.RED."""
        table = {_json_key(_dump(v)): v for v in args}
        return self.choices([_dump(v) for v in args]), lambda v: table[_json_key(v)]

    def _union(self, args):
        """X | Y: converted by the first alternative that the value fits and that
        converts it ("now" fits a str, not a datetime)."""
        arms = [self.translate(arg) for arg in args]
        schema = {"anyOf": [schema for schema, _ in arms]}
        if not any(convert for _, convert in arms):
            return schema, None
        checks = []
        self.unions.append((checks, arms))

        def convert(v):
            first_error = None
            for check, (_, arm) in zip(checks, arms):
                if _problems(check, v):
                    continue
                if arm is None:
                    return v
                try:
                    return arm(v)
                except (ValueError, TypeError) as e:
                    first_error = first_error or e
            raise first_error
        return schema, convert

    def _tuple(self, args):
        """tuple[X, Y]: an array of that length (maxItems: draft-07 misreads items)."""
        arms = [self.translate(arg) for arg in args]
        schema = {"type": "array", "prefixItems": [schema for schema, _ in arms],
                  "minItems": len(args), "maxItems": len(args)}

        def convert(v):
            return tuple(c(x) if c else x for (_, c), x in zip(arms, v))
        return schema, convert

    def _array(self, origin, args):
        """list, Sequence, set, frozenset, tuple[X, ...]."""
        schema = {"type": "array"}
        item = None
        if args:
            schema["items"], item = self.translate(args[0])
        if origin in (set, frozenset):
            schema["uniqueItems"] = True
        if origin not in (tuple, set, frozenset):
            return schema, item and (lambda v: [item(x) for x in v])
        if item is None:
            return schema, origin
        return schema, lambda v: origin(map(item, v))

    def _mapping(self, tp, args):
        """dict[str, X] and Mapping[str, X]."""
        if not args:
            return {"type": "object"}, None
        if args[0] not in (str, _typing.Any):
            raise SchemaError(f"{_type_name(tp)} is not supported: JSON object keys "
                              "are strings")
        schema, item = self.translate(args[1])
        convert = item and (lambda v: {k: item(x) for k, x in v.items()})
        return {"type": "object", "additionalProperties": schema}, convert

    def _class(self, tp):
        """A NewType, a class of _AS_STRINGS, or an Enum, TypedDict or dataclass."""
        if hasattr(tp, "__supertype__"):
            return self.translate(tp.__supertype__)
        # By package: Python 3.13 defines pathlib's classes in pathlib._local.
        named = isinstance(tp, type) and (tp.__module__.partition(".")[0], tp.__name__)
        if named in _AS_STRINGS:
            schema = dict(_AS_STRINGS[named])
            return schema, _from_string(tp, schema)
        if (_is_subclass(tp, enum.Enum) or _typing.is_typeddict(tp)
                or (isinstance(tp, type) and hasattr(tp, "__dataclass_fields__"))):
            return self._named(tp)
        if tp in (bytes, bytearray):
            raise SchemaError("bytes is not supported: JSON has no binary type; take a "
                              "base64 str")
        raise SchemaError(f"the annotation {_type_name(tp)} is not supported")

    def metadata(self, schema, extra):
        """Annotated metadata of pydantic (``Field(le=10)``) or annotated_types
        (``Ge(0)``) into ``schema``, read by attribute name; the rest warned about."""
        # (pydantic's conint(ge=0) leaves None placeholders)
        if extra is None:
            return
        if _is_field_info(extra):
            return self.field_info(schema, extra)
        # annotated_types' and Strict are dataclasses; pydantic's other metadata not
        if hasattr(type(extra), "__dataclass_fields__"):
            names = type(extra).__dataclass_fields__
            fields = {name: getattr(extra, name) for name in names}
        else:
            fields = dict(getattr(extra, "__dict__", None) or {})
        if not fields or not fields.keys() <= _METADATA_NAMES:
            return self.unused(repr(extra), "JSON Schema has no keyword for it")
        for name, value in fields.items():
            if value is not None:
                self.keyword(schema, name, value)

    def keyword(self, schema, name, value):
        """``le``, ``min_length``, ... -> a keyword."""
        kinds = _types_of(schema, {"$defs": self.defs}) or []
        if name in _BOUND_KEYWORDS:
            if (not _is_json_number(value) or (name == "multiple_of" and value <= 0)
                    or (kinds and not {"integer", "number"} & set(kinds))):
                why = "JSON Schema bounds are numbers, and bound numbers only"
                return self.unused(f"{name}={value!r}", why)
            schema[_BOUND_KEYWORDS[name]] = value
        elif name in _LENGTH_KEYWORDS:
            # (Len(max_length=5) says min_length=0 too)
            if name == "min_length" and value == 0:
                return
            kinds = [kind for kind in kinds if kind in _LENGTH_KEYWORDS[name]]
            if type(value) is not int or value < 0 or not kinds:
                why = "only strings, arrays and objects have a length in JSON"
                return self.unused(f"{name}={value!r}", why)
            schema.update((_LENGTH_KEYWORDS[name][kind], value) for kind in kinds)
        elif name == "pattern":
            if not isinstance(value, str):
                return self.unused(f"pattern={value!r}",
                                   "a JSON Schema pattern is a string")
            schema["pattern"] = value
        elif name in ("description", "documentation", "title", "examples"):
            schema["description" if name == "documentation" else name] = value
        # else strict and allow_inf_nan: JSON arguments are checked strictly, are finite

    def field_info(self, schema, info, is_default=False):
        """pydantic's FieldInfo, maybe the parameter's default (``is_default``)."""
        for name in ("description", "title", "examples"):
            if getattr(info, name, None) is not None:
                self.keyword(schema, name, getattr(info, name))
        if getattr(info, "deprecated", None):
            schema["deprecated"] = True
        extra = info.json_schema_extra
        if isinstance(extra, dict):
            schema.update(extra)
        elif extra is not None:
            self.unused("Field(json_schema_extra=<a function>)", "give it a dict")
        for item in info.metadata:
            self.metadata(schema, item)
        if not is_default and _pydantic_default(info)[1] is not None:
            self.unused("Field(default=...)",
                        "give the parameter its default in the signature")
        for name in ("alias", "discriminator"):
            if getattr(info, name, None) is not None:
                self.unused(f"Field({name}=...)",
                            "arguments are named as the parameters are")

    def unused(self, what, why):
        import warnings
        # The warning points at the caller's line, outside this file.
        frame = sys._getframe(1)
        level = 2
        while frame is not None and frame.f_code.co_filename == __file__:
            frame, level = frame.f_back, level + 1
        warnings.warn(f"{self.where}: Annotated metadata {what} is not used by mcp_min "
                      f"({why}); it is neither in the schema nor checked",
                      stacklevel=level)

    def choices(self, values):
        """Schema for a fixed set of JSON scalars (Literal, Enum)."""
        kinds = list(dict.fromkeys(map(_json_type, values)))
        if not set(kinds) <= {"null", "boolean", "integer", "number", "string"}:
            raise SchemaError(f"the values {values!r} are not all JSON strings, "
                              "numbers, booleans or null")
        if len(values) == 1:
            return {"type": kinds[0], "const": values[0]}
        return {"type": kinds[0] if len(kinds) == 1 else kinds, "enum": values}

    def fields(self, cls):
        """[(name, annotation, required, default, init)] of a dataclass or TypedDict."""
        try:
            hints = _typing.get_type_hints(cls, include_extras=True)
        except Exception as e:
            raise SchemaError(
                f"cannot resolve the annotations of {cls.__name__}: {e}") from None
        if hasattr(cls, "__dataclass_fields__"):
            import dataclasses
            missing = dataclasses.MISSING
            return [(f.name, hints[f.name],
                     f.init and f.default is missing and f.default_factory is missing,
                     _NOTHING if f.default is missing else f.default, f.init)
                    for f in dataclasses.fields(cls)]
        fields = []
        for name, hint in hints.items():
            required = name in cls.__required_keys__
            mark = _typing.get_origin(hint)
            # Required[...] or NotRequired[...]: Python 3.11 misses them in a string
            if mark in _typing.REQUIRED:
                hint = _typing.get_args(hint)[0]
                required = _typing.REQUIRED[mark]
            fields.append((name, hint, required, _NOTHING, True))
        return fields

    def _named(self, cls):
        """A $ref to `cls`, and its converter."""
        name = cls.__name__
        if self.owners.setdefault(name, cls) is not cls:
            raise SchemaError(f"two classes are named {name!r}: "
                              f"{_type_name(self.owners[name])} and {_type_name(cls)}")
        if name not in self.defs:
            self._define(cls, name)
        return {"$ref": f"#/$defs/{name}"}, self.converters.get(cls)

    def _define(self, cls, name):
        doc = cls.__dict__.get("__doc__") or ""
        # Not one dataclass ("Point(x: int)") or Enum made up
        if doc.startswith(name + "(") or doc == "An enumeration.":
            doc = ""
        description, docs = parse_docstring(doc)
        # The entry goes in first, so that a class containing itself terminates.
        self.defs[name] = schema = {"description": description} if description else {}
        if issubclass(cls, enum.Enum):
            self.converters[cls] = cls
            schema.update(self.choices([_dump(member.value) for member in cls]))
            return
        fields = self.fields(cls)
        converters = {}
        accepted = {field for field, *_, init in fields if init}

        def convert(v):
            return cls(**{k: converters[k](x) if converters[k] else x
                          for k, x in v.items() if k in accepted})
        self.converters[cls] = convert
        schema.update(self.object(fields, docs,
                                  lambda field: f"field {field!r} of {name}",
                                  converters))

    def object(self, fields, docs, where, converters):
        """Object schema for [(name, annotation, required, default, ...)], filling
        `converters`; where(name) names a field."""
        props = {}
        outer = self.where
        for name, hint, _, default, *_ in fields:
            self.where = where(name)
            prop, converters[name] = {}, None
            if hint is not _NOTHING:
                prop, converters[name] = _blamed(self.where, self.translate, hint)
            # (a description from Annotated wins)
            if docs.get(name):
                prop.setdefault("description", docs[name])
            # A default with no JSON form (say object()) is just not advertised.
            if default is not _NOTHING:
                try:
                    prop["default"] = json.loads(
                        json.dumps(_dump(default), allow_nan=False))
                except (TypeError, ValueError):
                    pass
            props[name] = prop
        self.where = outer
        schema = {"type": "object", "properties": props}
        required = [field[0] for field in fields if field[2]]
        if required:
            schema["required"] = required
        schema["additionalProperties"] = False
        return schema

    def finish(self, compiler):
        """Compile the unions' alternatives, once the whole schema is known."""
        for checks, arms in self.unions:
            checks.extend(compiler.compile(schema) for schema, _ in arms)


def _is_field_info(value):
    """Is it pydantic's FieldInfo (what ``Field(...)`` returns)?"""
    return (hasattr(value, "json_schema_extra")
            and isinstance(getattr(value, "metadata", None), list))


def _pydantic_default(info):
    """(the default a schema shows or _NOTHING, a function making it or None)."""
    if getattr(info, "default_factory", None) is not None:
        return _NOTHING, info.default_factory
    default = getattr(info, "default", None)
    # (what Field() and Field(...) hold)
    if type(default).__name__ == "PydanticUndefinedType":
        return _NOTHING, None
    return default, lambda: default


def type_schema(tp, defs=None, *, where="a type"):
    """Python type hint -> JSON Schema; classes go into `defs` (if given) by $ref."""
    translator = _Types({} if defs is None else defs, where)
    schema, _ = translator.translate(tp)
    if defs is not None:
        return schema
    defs = translator.defs
    # A class on top is written out in place, and needs no entry unless it is recursive.
    if schema.get("$ref", "").startswith("#/$defs/"):
        name = schema.pop("$ref")[len("#/$defs/"):]
        schema = {**defs[name], **schema}
        if f"'#/$defs/{name}'" not in repr(defs):
            del defs[name]
    return {**schema, "$defs": defs} if defs else schema


def _is_content(tp, content_types):
    """Does a return annotation name content blocks (or a list or union of them)?"""
    if _is_subclass(tp, content_types):
        return True
    # A plain class (int, a dataclass) needs no typing to tell
    if type(tp) is type:
        return False
    origin, args = _typing.get_origin(tp), _typing.get_args(tp)
    if origin is _typing.Annotated:
        args = args[:1]
    elif origin not in _typing.UNIONS and origin not in _typing.ARRAYS:
        return False
    return bool(args) and all(arg is type(None) or _is_content(arg, content_types)
                              for arg in args)


# --- the handler signature -------------------------------------------------

def _parameters(fn):
    """A callable's .params [(name, kind "/", "*", "**" or "", default, annotation)],
    .returns and .globals. A plain function is read from its code object (inspect is
    slow to import). Python 3.14 reads annotations lazily: NameError if undefined."""
    if type(fn) is types.FunctionType and not hasattr(fn, "__wrapped__"):
        try:
            return _code_parameters(fn)
        except (AttributeError, TypeError, ValueError):
            pass
    import inspect
    sig, empty = inspect.signature(fn), inspect.Parameter.empty
    kinds = {"POSITIONAL_ONLY": "/", "VAR_POSITIONAL": "*", "VAR_KEYWORD": "**"}
    params = [(p.name, kinds.get(p.kind.name, ""),
               _NOTHING if p.default is empty else p.default,
               _NOTHING if p.annotation is empty else p.annotation)
              for p in sig.parameters.values()]
    returns = _NOTHING if sig.return_annotation is empty else sig.return_annotation
    return types.SimpleNamespace(params=params, returns=returns,
                                 globals=getattr(inspect.unwrap(fn), "__globals__", {}))


def _code_parameters(fn):
    """_parameters() of a plain function, from its code object."""
    code, hints = fn.__code__, fn.__annotations__
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    positional = names[:code.co_argcount]
    defaults = dict(zip(reversed(positional), reversed(fn.__defaults__ or ())))
    defaults.update(fn.__kwdefaults__ or {})
    params = [(name, "/" if i < code.co_posonlyargcount else "",
               defaults.get(name, _NOTHING), hints.get(name, _NOTHING))
              for i, name in enumerate(names)]
    # CO_VARARGS and CO_VARKEYWORDS
    stars = [kind for flag, kind in ((4, "*"), (8, "**")) if code.co_flags & flag]
    params += [(name, kind, _NOTHING, hints.get(name, _NOTHING))
               for name, kind in zip(code.co_varnames[len(names):], stars)]
    return types.SimpleNamespace(params=params, returns=hints.get("return", _NOTHING),
                                 globals=fn.__globals__)


class Signature:
    """What mcp_min needs to know about a handler, worked out at registration (see
    docs/reference.md)."""

    def __init__(self, fn, *, context_type=None, description=None,
                 param_descriptions=None, input_schema=None, output_schema=None,
                 structured=None, content_types=()):
        self.context_param = None
        self.wrap_output = False
        self._where = getattr(fn, "__qualname__", None) or repr(fn)
        try:
            found = _parameters(fn)
        except NameError as e:
            raise SchemaError(f"{self._where}: an annotation names {e.name!r}, which "
                              f"is not defined when it is registered: define {e.name} "
                              "first") from None
        self._globals = found.globals
        doc, docs = parse_docstring(getattr(fn, "__doc__", None))
        self.description = doc if description is None else description
        # A parameter -> what makes its default (pydantic's Field), its converter
        self._defaults = {}
        self._converters = {}
        self._rest_converter = None
        fields, rest = self._parameter_fields(found.params, context_type,
                                              resolve=input_schema is None)
        translator = _Types({}, self._where)
        # (an input schema given is kept as it is: $schema, $defs...)
        if input_schema is None:
            docs = {**docs, **(param_descriptions or {})}
            input_schema = self._input_schema_of(fields, rest, docs, translator)
        self.input_schema = input_schema
        compiler = _blamed(f"{self._where}: input schema", _Compiler, input_schema)
        translator.finish(compiler)
        # The arguments are an object (bind sees to it): the checks of one
        self._check_object = getattr(compiler.check, "rest", compiler.check)
        self._branches = compiler.branches
        self._find_string_arguments(input_schema)
        self.output_schema = output_schema
        if output_schema is None and structured is not False:
            self.output_schema, self.wrap_output = self._output_schema_of(
                found.returns, content_types)

    def _parameter_fields(self, parameters, context_type, resolve):
        """([(name, annotation, required, default, FieldInfo or None)], the annotation
        of **kwargs or _NOTHING); finds the context parameter."""
        fields = []
        rest = _NOTHING
        for name, kind, default, annotation in parameters:
            # "Context", "mcp_min.Context" need not resolve, nor anything given a schema
            by_name = (context_type and isinstance(annotation, str)
                       and annotation.rpartition(".")[2] == context_type.__name__)
            hint = annotation
            if not by_name and resolve:
                hint = self._resolve(annotation, f"parameter {name!r}")
            if by_name or (context_type and _is_subclass(hint, context_type)):
                self.context_param = name
                continue
            if kind in ("*", "/"):
                raise SchemaError(f"{self._where}: parameter {name!r} can't be passed "
                                  "by name, and JSON arguments are named: *args and "
                                  "positional-only are not supported")
            if kind == "**":
                rest = _typing.Any if hint is _NOTHING else hint
                continue
            info = None
            # `n: int = Field(3, le=9)`: the default is 3
            if _is_field_info(default):
                info = default
                default, make = _pydantic_default(info)
                if make is not None:
                    self._defaults[name] = make
            required = default is _NOTHING and name not in self._defaults
            fields.append((name, hint, required, default, info))
        return fields, rest

    def _input_schema_of(self, fields, rest, docs, translator):
        """The input schema of `fields`; fills ._converters, ._rest_converter."""
        where = self._where
        schema = translator.object(fields, docs,
                                   lambda name: f"{where}: parameter {name!r}",
                                   self._converters)
        for name, *_, info in fields:
            if info is not None:
                translator.where = f"{where}: parameter {name!r}"
                translator.field_info(schema["properties"][name], info, is_default=True)
        if rest is not _NOTHING:
            translator.where = f"{where}: **kwargs"
            schema["additionalProperties"], self._rest_converter = _blamed(
                f"{where}: **kwargs", translator.translate, rest)
        if translator.defs:
            schema["$defs"] = translator.defs
        return schema

    def _find_string_arguments(self, input_schema):
        """Arguments that may come as JSON text: .parse_strings(_if_unfit), ._coerce."""
        kinds_of = {name: _types_of(sub, input_schema)
                    for name, sub in input_schema.get("properties", {}).items()}
        typed = {name: kinds for name, kinds in kinds_of.items()
                 if kinds and "string" not in kinds}
        # Prompt arguments and URI variables are always strings: parse those typed
        # otherwise, and those that may be strings or not (int | Literal["all"]) if the
        # string won't do.
        self.parse_strings = set(typed)
        self.parse_strings_if_unfit = {
            name for name, kinds in kinds_of.items()
            if kinds and "string" in kinds and len(kinds) > 1}
        # Claude Desktop sends object and array arguments as JSON text, to be parsed.
        self._coerce = [(name, kinds) for name, kinds in typed.items()
                        if {"object", "array"} & set(kinds)]

    def _output_schema_of(self, returns, content_types):
        """(output schema or None, whether a value is wrapped as {"result": value})."""
        ret = self._resolve(returns, "the return value")
        # A str is text content already: wrapping it would double every payload.
        if (ret in (_NOTHING, None, type(None), str)
                or _is_content(ret, tuple(content_types))):
            return None, False
        label = f"{self._where}: return annotation (structured=False skips it)"
        schema = _blamed(label, type_schema, ret, where=f"{self._where}: return value")
        if schema.get("type") == "object":
            return schema, False
        defs = {"$defs": schema.pop("$defs")} if "$defs" in schema else {}
        return {"type": "object", "properties": {"result": schema},
                "required": ["result"], **defs}, True

    def _resolve(self, annotation, label):
        """Evaluate an annotation (a string if postponed) in the function's module."""
        if annotation is _NOTHING or isinstance(annotation, type):
            return annotation
        try:
            holder = types.SimpleNamespace(__annotations__={"_": annotation})
            hints = _typing.get_type_hints(holder, self._globals, include_extras=True)
            return hints["_"]
        except Exception as e:
            raise SchemaError(f"{self._where}: cannot resolve the annotation "
                              f"{annotation!r} of {label}: {e}") from None

    def bind(self, arguments, ctx=None):
        """tools/call arguments -> (kwargs for the function, all the problems found)."""
        args = {} if arguments is None else arguments
        if not isinstance(args, dict):
            return {}, ["Expected the arguments to be an object, got "
                        f"{_typed_preview(args)}"]
        for name, kinds in self._coerce:
            if isinstance(args.get(name), str):
                # (if it holds no JSON, validation says what is wrong with it)
                parsed = _json_in(args[name])
                if isinstance(parsed, (dict, list)) and _json_type(parsed) in kinds:
                    # A copy: the caller's dict stays as it was.
                    args = {**args, name: parsed}
        problems = []
        try:
            if ctx is not None and self._branches:
                _budget.check(self._check_object, args, problems, ctx)
            elif self._check_object is not None:
                self._check_object(args, "", problems)
        except RecursionError:
            # json read it, but checking it nests deeper still
            return {}, ["the arguments are nested too deeply to check"]
        if problems:
            return {}, list(dict.fromkeys(problems))
        kwargs = {}
        for name, value in args.items():
            # An argument no parameter is named for goes to **kwargs; the usual one
            # needs no converting
            convert = self._converters.get(name, self._rest_converter)
            if convert is None or _NUMBER_CONVERTERS.get(type(value)) is convert:
                kwargs[name] = value
                continue
            try:
                kwargs[name] = convert(value)
            except (ValueError, TypeError) as e:
                problems.append(f"{name}: {e}")
            except Exception as e:
                problems.append(f"{name}: {type(e).__name__}: {e}")
        for name, make in self._defaults.items():
            if name not in kwargs:
                kwargs[name] = make()
        return kwargs, problems

    def dump_output(self, value):
        """Return value -> structuredContent, wrapped as {"result": ...} if need be."""
        return {"result": _dump(value)} if self.wrap_output else _dump(value)


# --- the validator ---------------------------------------------------------
# A schema compiles into nested closures check(value, path, problems).

def _is_multiple(value, factor):
    if type(value) is int and type(factor) is int:
        return value % factor == 0
    # Exactly, on the decimals as written (19.99 / 0.01); inf and nan: ValueError
    from fractions import Fraction
    try:
        return Fraction(str(value)) % Fraction(str(factor)) == 0
    except (ValueError, OverflowError):
        return False


# keyword, the JSON type it bounds (a number, else its length), passes, message
_BOUNDS = [
    ("minimum", "number", operator.ge, "must be >= {}"),
    ("maximum", "number", operator.le, "must be <= {}"),
    ("exclusiveMinimum", "number", operator.gt, "must be > {}"),
    ("exclusiveMaximum", "number", operator.lt, "must be < {}"),
    ("multipleOf", "number", _is_multiple, "must be a multiple of {}"),
    ("minLength", "string", operator.ge, "must be at least {} characters long"),
    ("maxLength", "string", operator.le, "must be at most {} characters long"),
    ("minItems", "array", operator.ge, "must have at least {} items"),
    ("maxItems", "array", operator.le, "must have at most {} items"),
    ("minProperties", "object", operator.ge, "must have at least {} properties"),
    ("maxProperties", "object", operator.le, "must have at most {} properties")]
_NUMBER_BOUNDS = _BOUNDS[:5]


def _at_path(path, text):
    """"where: text", or "Text" at the root; a path is nested (parent, key) pairs:
    ((("", "a"), 2), "b") -> "a[2].b"."""
    keys = []
    while path:
        path, key = path
        keys.insert(0, f"[{key}]" if isinstance(key, int) else f".{key}")
    _spend(len(keys) + 1)
    if not keys:
        return text[0].upper() + text[1:]
    return f"{''.join(keys).removeprefix('.')}: {text}"


def _either(names):
    """"a", "a or b", "a, b or c"."""
    if len(names) > 1:
        names = [", ".join(names[:-1]), names[-1]]
    return " or ".join(names)


def _problems(check, value, path=""):
    """The problems ``check`` (None: no check) finds in ``value``."""
    problems = []
    if check:
        check(value, path, problems)
    return problems


def _rule(passes, arg, text, applies=lambda v: True, measure=None):
    """A check that passes(measure(value), arg), for the values it applies to."""
    def rule(v, path, out):
        if applies(v):
            got = measure(v) if measure else v
            if not passes(got, arg):
                out.append(_at_path(path, f"{text}, got {_preview(got)}"))
    return rule


def _all_of(checks):
    """One check doing all of `checks` (None if there are none)."""
    if len(checks) < 2:
        return checks[0] if checks else None

    def all_of(v, path, out):
        for check in checks:
            check(v, path, out)
    return all_of


class _Budget(threading.local):
    """The steps (properties, items, path keys) checking a request's arguments on this
    thread may still take: ``cell`` holds those left before the next look (every
    20,000 steps, a few ms), those after, and the request."""

    cell = [float("inf")]
    look_every = 20_000

    def check(self, check, value, problems, ctx):
        # Spent at once: a look first
        self.cell = [0, ctx.server.max_validation_steps, ctx]
        try:
            if check is not None:
                check(value, "", problems)
        finally:
            del self.cell

    def look(self):
        """-32602 past the limit, Cancelled once the request is; else on to the next."""
        cell = self.cell
        left, ctx = cell[0] + cell[1], cell[2]
        if left < 0:
            raise JSONRPCError(INVALID_PARAMS, "The arguments are too costly to check: "
                               f"more than {ctx.server.max_validation_steps:,} steps "
                               "of validation (each property, item and problem is one;"
                               " the server's max_validation_steps sets the limit)")
        # On the HTTP server's own thread nothing else watches the client
        gone = getattr(ctx.stream, "gone", None)
        if gone is not None and gone():
            ctx.cancelled = True
        ctx.check_cancelled()
        cell[0] = min(left, self.look_every)
        cell[1] = left - cell[0]


_budget = _Budget()


def _spend(steps):
    cell = _budget.cell
    cell[0] -= steps
    if cell[0] < 0:
        _budget.look()


def _resolve_ref(root, ref):
    """A JSON pointer within the document: "#", "#/$defs/Name", "#/definitions/Name"."""
    if not isinstance(ref, str) or not (ref + "/").startswith("#/"):
        raise SchemaError(f"$ref {ref!r} is not supported: only references within the "
                          "schema (#/...)")
    node = root
    try:
        for part in ref.split("/")[1:]:
            part = part.replace("~1", "/").replace("~0", "~")
            node = node[int(part)] if isinstance(node, list) else node[part]
    except (KeyError, IndexError, ValueError, TypeError):
        raise SchemaError(f"$ref {ref!r} points to nothing") from None
    return node


def _types_of(schema, root, seen=()):
    """The JSON types `schema` admits (through $ref, anyOf, oneOf), or None: any."""
    schema = schema if isinstance(schema, dict) else {}
    if "type" in schema:
        kind = schema["type"]
        if isinstance(kind, str):
            return [kind]
        # Not a list either: the compiler says what is wrong with it
        return list(kind) if isinstance(kind, list) else None
    if "$ref" in schema and schema["$ref"] not in seen:
        target = _resolve_ref(root, schema["$ref"])
        return _types_of(target, root, (*seen, schema["$ref"]))
    arms = schema.get("anyOf") or schema.get("oneOf") or ()
    kinds = [_types_of(sub, root, seen) for sub in arms]
    if not kinds or None in kinds:
        return None
    return list(dict.fromkeys(kind for arm in kinds for kind in arm))


class _Compiler:
    """A schema compiled into .check(value, path, problems) and .validate(value)."""

    def __init__(self, root):
        self.root = root
        # $ref -> its check
        self.refs = {}
        dialect = root.get("$schema", "") if isinstance(root, dict) else ""
        known = ("2020-12", "2019-09", "draft-07", "draft-06")
        if dialect and not any(name in dialect for name in known):
            raise SchemaError(f"unsupported JSON Schema dialect {dialect!r}; use "
                              "2020-12 or draft-07")
        self.branches = False
        self.check = self.compile(root)

    def validate(self, value, check=_NOTHING, path=""):
        """The problems of ``value`` against the schema (or ``check``), each once."""
        if check is _NOTHING:
            check = self.check
        return list(dict.fromkeys(_problems(check, value, path)))

    def compile(self, schema):
        """Schema -> check(value, path, problems), or None if it accepts anything."""
        if schema is True or schema == {}:
            return None
        if schema is False:
            return _rule(lambda v, _: False, None, "not allowed")
        if not isinstance(schema, dict):
            raise SchemaError(
                f"a schema must be an object or a boolean, not {_preview(schema)}")
        if "patternProperties" in schema:
            raise SchemaError("patternProperties is not supported: name the properties")
        rest = _all_of([check for check in self._keyword_checks(schema) if check])
        return self._typed(schema, rest) if "type" in schema else rest

    def _keyword_checks(self, schema):
        """The checks (or None) of every keyword but `type`."""
        checks = [self.ref(schema["$ref"])] if "$ref" in schema else []
        # These may check a value more than once: a request's budget applies (_Budget)
        self.branches |= any(k in schema for k in ("allOf", "anyOf", "oneOf", "not"))
        checks += self._bounds(schema)
        if "enum" in schema:
            values = ", ".join(map(_preview, schema["enum"]))
            checks.append(_rule(lambda v, keys: _json_key(v) in keys,
                                {_json_key(x) for x in schema["enum"]},
                                "must be one of " + values))
        if "const" in schema:
            checks.append(_rule(lambda v, key: _json_key(v) == key,
                                _json_key(schema["const"]),
                                f"must be {_preview(schema['const'])}"))
        if "pattern" in schema:
            checks.append(self._pattern(schema["pattern"]))
        if schema.get("uniqueItems") is True:
            checks.append(_rule(lambda v, _: len({_json_key(x) for x in v}) == len(v),
                                None, "must not contain duplicates",
                                _TYPE_TESTS["array"]))
        if any(k in schema for k in ("required", "properties", "additionalProperties")):
            checks.append(self._object(schema))
        if "prefixItems" in schema or "items" in schema:
            checks.append(self._array(schema))
        checks += map(self.compile, schema.get("allOf", ()))
        checks += [self._alternatives(schema[k], k == "oneOf")
                   for k in ("anyOf", "oneOf") if k in schema]
        if "not" in schema:
            checks.append(_rule(lambda v, check: _problems(check, v),
                                self.compile(schema["not"]),
                                f"must not match {_preview(schema['not'])}"))
        return checks

    def _bounds(self, schema):
        checks = []
        for keyword, kind, passes, text in _BOUNDS:
            if keyword not in schema:
                continue
            bound = schema[keyword]
            if not _is_json_number(bound):
                raise SchemaError(f"{keyword} must be a number, not {_preview(bound)}")
            if keyword == "multipleOf" and bound <= 0:
                raise SchemaError(
                    f"multipleOf must be greater than 0, not {_preview(bound)}")
            message = text.format(_preview(bound))
            measure = None if kind == "number" else len
            checks.append(_rule(passes, bound, message, _TYPE_TESTS[kind], measure))
        return checks

    def _pattern(self, pattern):
        # Python's re, as the `jsonschema` package uses; ECMA-only syntax is refused
        try:
            regex = re.compile(pattern)
        except (re.error, TypeError) as e:
            raise SchemaError(f"invalid pattern {pattern!r}: {e}") from None
        return _rule(lambda v, regex: regex.search(v), regex,
                     f"must match the pattern {pattern}", _TYPE_TESTS["string"])

    def _typed(self, schema, rest):
        """The check of `type`, which does the `rest` on a value of that type."""
        names = _types_of(schema, self.root)
        if not names or not set(names) <= _TYPE_TESTS.keys():
            raise SchemaError(f"unknown type {_preview(schema['type'])}")
        tests = [_TYPE_TESTS[name] for name in names]
        expected = _either(names)
        fits = tests[0] if len(tests) == 1 else lambda v: any(test(v) for test in tests)
        # Values of these exact types pass without calling fits(); not a float, which
        # may be inf or nan (json reads 1e400 as inf).
        sure = {cls for cls, name in _JSON_TYPES.items()
                if cls is not float
                and (name in names or (name == "integer" and "number" in names))}

        def check(v, path, out):
            # Not of the type: the other keywords would only repeat that.
            if type(v) not in sure and not fits(v):
                out.append(_at_path(
                    path, f"expected {expected}, got {_typed_preview(v)}"))
            elif rest:
                rest(v, path, out)
        # For _object: the types that pass untested; the checks past the type
        check.passes = () if rest else sure
        check.rest = rest
        return check

    def _object(self, schema):
        props = {k: self.compile(sub)
                 for k, sub in schema.get("properties", {}).items()}
        required = schema.get("required", ())
        extra = schema.get("additionalProperties", True)
        extra_check = None if extra is False else self.compile(extra)
        # The usual argument ("a": 3 for {"type": "integer"}) is checked here: no call.
        passes = {k: check.passes for k, check in props.items()
                  if hasattr(check, "passes")}

        def object_(v, path, out):
            if isinstance(v, dict):
                # (a budget only for a schema that may check a value twice: _Budget)
                if self.branches:
                    _spend(len(v))
                for k in required:
                    if k not in v:
                        out.append(_at_path(path, f"missing required property '{k}'"))
                for k, x in v.items():
                    if type(x) in passes.get(k, ()):
                        continue
                    check = props.get(k, extra_check)
                    if check:
                        check(x, (path, k), out)
                    elif extra is False and k not in props:
                        out.append(_at_path(path, f"unexpected property '{k}'"))
        return object_

    def _array(self, schema):
        prefix = schema.get("prefixItems", [])
        items = schema.get("items", True)
        # (draft-07 spells prefixItems so)
        if isinstance(items, list):
            prefix, items = items, schema.get("additionalItems", True)
        prefix = [self.compile(sub) for sub in prefix]
        rest = None if items is False else self.compile(items)

        def array(v, path, out):
            if isinstance(v, list):
                if self.branches:
                    _spend(len(v))
                for i, x in enumerate(v):
                    check = prefix[i] if i < len(prefix) else rest
                    if check:
                        check(x, (path, i), out)
                if items is False and len(v) > len(prefix):
                    out.append(_at_path(path, f"must have at most {len(prefix)} items, "
                                              f"got {len(v)}"))
        return array

    def _alternatives(self, schemas, exactly_one):
        """anyOf, or oneOf (`exactly_one`); none matching: the problems of the one
        for this kind of value. One is checked in full only once its quick keywords
        pass (_quick): a tree of Unions costs one check a node, not two per level."""
        arms = [(self.compile(sub), self.compile(self._quick(sub)),
                 _types_of(sub, self.root)) for sub in schemas]
        every_kind = dict.fromkeys(k for *_, kinds in arms for k in kinds or ())
        expected = _either(list(every_kind))

        def alternatives(v, path, out):
            matching, fitting = [], []
            for i, (check, quick, kinds) in enumerate(arms):
                # At the root: only how many counts, and a path costs steps
                refusal = _problems(quick, v)
                problems = refusal or _problems(check, v, path)
                if not problems:
                    if not exactly_one:
                        return
                    matching.append(str(i))
                elif kinds is None or any(_TYPE_TESTS[k](v) for k in kinds):
                    fitting.append((bool(refusal), len(problems), i, problems, check))
            if not matching:
                if fitting:
                    # Those checked in full first; one refused quickly is, now
                    refused, *_, problems, check = min(fitting)
                    if refused:
                        problems = _problems(check, v, path)
                    out.extend(problems)
                else:
                    out.append(_at_path(path, f"expected {expected}, got "
                                              f"{_typed_preview(v)}"))
            elif exactly_one and len(matching) > 1:
                out.append(_at_path(
                    path, "must match exactly one oneOf alternative, but matches "
                          f"alternatives {', '.join(matching)}, got {_preview(v)}"))
        return alternatives

    def _quick(self, schema, deep=True, seen=()):
        """`schema`'s type, const, enum and required (`deep`: its properties' too),
        through $ref: a cheap schema refusing nothing `schema` accepts."""
        schema = schema if isinstance(schema, dict) else {}
        quick = {k: schema[k] for k in ("type", "const", "enum", "required")
                 if k in schema}
        if deep and isinstance(schema.get("properties"), dict):
            quick["properties"] = {k: self._quick(sub, False)
                                   for k, sub in schema["properties"].items()}
        ref = schema.get("$ref")
        if ref is not None and ref not in seen:
            target = _resolve_ref(self.root, ref)
            quick["allOf"] = [self._quick(target, deep, (*seen, ref))]
        return quick

    def ref(self, ref):
        """A $ref's check, compiled once; meanwhile recursion gets one calling it."""
        if ref not in self.refs:
            slot = []
            self.refs[ref] = lambda v, path, out: slot[0] and slot[0](v, path, out)
            slot.append(self.compile(_resolve_ref(self.root, ref)))
            self.refs[ref] = slot[0]
        return self.refs[ref]


def compile_schema(schema):
    """Compile a JSON Schema once into validate(value) -> problems (empty: valid), each
    like `items[2].name: expected string, got integer 5`."""
    return _Compiler(schema).validate


# ======================================================================================
# Content
# ======================================================================================

# Content blocks are Content, a dict subclass, so that a tool result tells a block
# from a dict to return as structured data.

class Content(dict):
    """A content block: text, image, audio, resource_link or resource (embedded)."""


def _block(annotations, meta, **fields):
    """A Content of the fields that are not None."""
    fields.update(annotations=annotations or None, _meta=meta or None)
    return Content((k, v) for k, v in fields.items() if v is not None)


def text(value, *, annotations=None, meta=None):
    """A text block."""
    return _block(annotations, meta, type="text", text=str(value))


# The first bytes of a file -> its MIME type, for image() and audio().
_MAGIC = ((b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"),
          (b"GIF87a", "image/gif"), (b"GIF89a", "image/gif"), (b"OggS", "audio/ogg"),
          (b"fLaC", "audio/flac"), (b"ID3", "audio/mpeg"), (b"\xff\xfb", "audio/mpeg"))


def _sniff(data):
    # RIFF is a container: what it holds is named at offset 8
    if data[:4] == b"RIFF":
        return {b"WEBP": "image/webp", b"WAVE": "audio/wav"}.get(data[8:12])
    return next((mime for magic, mime in _MAGIC if data.startswith(magic)), None)


def _media(kind, data, path, mime_type):
    """The fields of an image or audio block, its MIME type told by its first bytes."""
    if (data is None) == (path is None):
        raise TypeError(f"{kind}() takes either data or path")
    if path is not None:
        with open(path, "rb") as f:
            data = f.read()
    if isinstance(data, str):
        encoded = data
        raw = b64decode(data[:64]) if mime_type is None else b""
    else:
        raw = bytes(data)
        encoded = b64encode(raw)
    if mime_type is None:
        mime_type = _sniff(raw) or (path and _guess_type(str(path)))
        if not (mime_type or "").startswith(kind + "/"):
            raise ValueError(f"{kind}(): cannot tell the MIME type; pass mime_type=")
    return {"type": kind, "data": encoded, "mimeType": mime_type}


def image(data=None, *, path=None, mime_type=None, annotations=None, meta=None):
    """An image block from bytes, base64 text or a file; the MIME type is detected."""
    return _block(annotations, meta, **_media("image", data, path, mime_type))


def audio(data=None, *, path=None, mime_type=None, annotations=None, meta=None):
    """An audio block from bytes, base64 text or a file; the MIME type is detected."""
    return _block(annotations, meta, **_media("audio", data, path, mime_type))


def resource_link(uri, name=None, *, title=None, description=None, mime_type=None,
                  size=None, annotations=None, icons=None, meta=None):
    """A link to a resource the client can read with resources/read (2025-06-18+)."""
    return _block(annotations, meta, type="resource_link", uri=uri, name=name or uri,
                  title=title, description=description, mimeType=mime_type,
                  size=size, icons=icons)


def embedded_resource(uri, *, text=None, blob=None, mime_type=None, annotations=None,
                      meta=None):
    """A resource's contents inline: ``text`` (str) or ``blob`` (bytes or base64)."""
    if (text is None) == (blob is None):
        raise TypeError("embedded_resource() takes either text or blob")
    if text is not None and not isinstance(text, str):
        raise TypeError("embedded_resource(text=...) takes a str, not "
                        f"{type(text).__name__}: bytes go in blob=")
    if isinstance(blob, str):
        contents = {"uri": uri, "mimeType": mime_type or "application/octet-stream",
                    "blob": blob}
    else:
        contents = _contents(uri, blob if text is None else text, mime_type)
    return _block(annotations, meta, type="resource", resource=contents)


def _guess_type(uri):
    """The MIME type a file name suggests (mimetypes, slow to import, on first use)."""
    import mimetypes
    return mimetypes.guess_type(uri, strict=False)[0]


def to_json(value, root="result"):
    """JSON text for humans and models; what JSON can't carry raises TypeError (NaN:
    ValueError), saying where."""
    value = _dump(value)
    try:
        return _encode_text(value)
    except (TypeError, ValueError) as e:
        raise type(e)(_find_not_json(value, root) or str(e)) from None


def _find_not_json(value, path):
    """The first thing in a _dump()ed value JSON cannot carry: "path: what is wrong"."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key is not None and not isinstance(key, (str, int, float)):
                return (f"{path}: a key of type {type(key).__name__}, {key!r}; "
                        "JSON object keys are strings")
            if found := _find_not_json(item, f"{path}.{key}"):
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            if found := _find_not_json(item, f"{path}[{i}]"):
                return found
    elif isinstance(value, float) and not _is_json_number(value):
        return f"{path}: {value} has no JSON form (JSON has no NaN or Infinity)"
    elif value is not None and not isinstance(value, (str, int, float)):
        hint = "convert it to a str, number, bool, list, dict or dataclass"
        if isinstance(value, (bytes, bytearray, memoryview)):
            hint = ("send it as image(...), audio(...), embedded_resource(blob=...) "
                    "or base64 text")
        return (f"{path}: a value of type {type(value).__name__} has no JSON form; "
                f"{hint}")
    return None


_encode_text = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": "),
                                allow_nan=False).encode


def _contents(uri, value, mime_type=None):
    """A resource value -> a TextResourceContents or BlobResourceContents dict."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"uri": uri, "mimeType": mime_type or "application/octet-stream",
                "blob": b64encode(value)}
    if isinstance(value, str):
        return {"uri": uri, "mimeType": mime_type or "text/plain", "text": value}
    return {"uri": uri, "mimeType": mime_type or "application/json",
            "text": to_json(value)}


def _content_block(value, what):
    """``value`` as one content block (a str: a text block), else TypeError."""
    if isinstance(value, str):
        return text(value)
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        raise TypeError(f"{what} must be a content block (a str, or text(), image(), "
                        f"...), not {_preview(value)}")
    return value


class ToolResult:
    """A tool result in full: content blocks, structured data, the error flag."""

    def __init__(self, content=(), structured=None, is_error=False, meta=None):
        # One block, not a list of them (a dict's keys are no blocks)
        if isinstance(content, (str, dict, bytes)):
            content = [content]
        self.content = [_content_block(c, "ToolResult content") for c in content]
        if structured is not None and not isinstance(_dump(structured), dict):
            raise TypeError("ToolResult(structured=...) is an object (a dict, a "
                            f"dataclass), not {_preview(_dump(structured))}")
        self.structured = structured
        self.is_error = is_error
        self.meta = meta

    def to_dict(self):
        result = {"content": self.content, "isError": self.is_error}
        if self.structured is not None:
            result["structuredContent"] = _dump(self.structured)
        if self.meta:
            result["_meta"] = self.meta
        return result


# ======================================================================================
# Registry: tools, resources, prompts
# ======================================================================================

def _add_optional(entry, key, value, version="", since=""):
    """Add an optional field if it is set and the negotiated version defines it."""
    if value is not None and version >= since:
        entry[key] = value


def _errors_text(problems):
    return "\n".join(f"- {p}" for p in problems)


def _as_blocks(value):
    """The content blocks ``value`` is (one, or a list of them) as a list, else None."""
    if isinstance(value, Content):
        return [value]
    if isinstance(value, list) and value and all(isinstance(b, Content) for b in value):
        return value
    return None


def _json_in(text):
    """The JSON value a string holds, or _NOTHING."""
    try:
        return _decoder.decode(text)
    except (ValueError, RecursionError):
        return _NOTHING


def _parsed(values, keys):
    """``values`` with the strings of ``keys`` parsed as JSON, where they are JSON."""
    values = dict(values)
    for key, value in values.items():
        if isinstance(value, str) and key in keys:
            parsed = _json_in(value)
            if parsed is not _NOTHING:
                values[key] = parsed
    return values


class Entry:
    """What tools, resources and prompts share: a function, its Signature, metadata."""

    def __init__(self, fn, *, name, title, description, icons, meta,
                 **signature_options):
        self.fn = fn
        self.title = title
        self.icons = icons
        self.meta = meta
        self.name = getattr(fn, "__name__", None) if name is None else name
        if not isinstance(self.name, str):
            raise TypeError(f"{fn!r} has no __name__ to name it by: pass name=...")
        self.signature = Signature(fn, context_type=Context, description=description,
                                   **signature_options)

    def describe_common(self, entry, version):
        _add_optional(entry, "title", self.title, version, V2025_06)
        _add_optional(entry, "description", self.signature.description)
        _add_optional(entry, "icons", self.icons, version, V2025_11)
        _add_optional(entry, "_meta", self.meta, version, V2025_06)
        return entry

    def invoke(self, ctx, kwargs):
        if self.signature.context_param:
            kwargs[self.signature.context_param] = ctx
        value = self.fn(**kwargs)
        if hasattr(value, "__await__"):
            return _run_coroutine(value, ctx)
        return value

    def bind_strings(self, values, what, ctx=None):
        """Bind arguments that arrive as strings (prompt arguments, URI variables),
        parsed as JSON for a parameter typed otherwise (if it may be a string too,
        ``int | Literal["all"]``, only if the string does not fit)."""
        signature = self.signature
        kwargs, problems = signature.bind(_parsed(values, signature.parse_strings), ctx)
        named = {re.split(r"[.\[:]", problem, maxsplit=1)[0] for problem in problems}
        unfit = named & signature.parse_strings_if_unfit
        if unfit:
            parsed = _parsed(values, signature.parse_strings | unfit)
            kwargs, problems = signature.bind(parsed, ctx)
        if problems:
            raise JSONRPCError(INVALID_PARAMS, f"Invalid arguments for {what}:\n"
                               + _errors_text(problems))
        return kwargs


class Tool(Entry):
    """A registered tool: the function, its schemas, its tools/list entry."""
    registry_name = "tools"

    def __init__(self, fn, *, name=None, title=None, description=None, annotations=None,
                 input_schema=None, output_schema=None, structured=None, icons=None,
                 meta=None):
        super().__init__(fn, name=name, title=title, description=description,
                         icons=icons, meta=meta, input_schema=input_schema,
                         output_schema=output_schema, structured=structured,
                         content_types=(Content, ToolResult))
        if not re.fullmatch(r"[A-Za-z0-9_.-]{1,128}", self.name):
            raise ValueError(f"tool name {self.name!r} does not follow the MCP naming "
                             "guidance: 1 to 128 characters from A-Z a-z 0-9 _ - . "
                             "(no spaces)")
        if self.signature.input_schema.get("type") != "object":
            raise ValueError(f"tool {self.name!r}: the input schema's root must have "
                             '"type": "object" (tool arguments are a JSON object)')
        self.mirrored = _mirrored_arguments(self.signature.input_schema, self.name)
        self.annotations = annotations
        # version -> its tools/list entry
        self.described = {}
        # With an output schema: check_output checks structured content,
        # check_returned a return value before it is wrapped as {"result": ...}
        self.check_output = None
        schema = self.signature.output_schema
        if schema is not None:
            compiler = _Compiler(schema)
            self.check_output = self.check_returned = compiler.validate
            self.returned_passes = ()
            if self.signature.wrap_output:
                check = compiler.compile(schema["properties"]["result"])
                self.returned_passes = getattr(check, "passes", ())
                self.check_returned = functools.partial(
                    compiler.validate, check=check, path=("", "result"))

    def describe(self, version):
        if version not in self.described:
            entry = {"name": self.name, "inputSchema": self.signature.input_schema}
            output = self.signature.output_schema
            # before 2026-07-28, an outputSchema's root is an object
            if version < V2026_07 and (output or {}).get("type") != "object":
                output = None
            _add_optional(entry, "outputSchema", output, version, V2025_06)
            _add_optional(entry, "annotations", self.annotations, version, V2025_03)
            self.described[version] = self.describe_common(entry, version)
        return self.described[version]

    def call(self, ctx, arguments):
        """Run the tool; its failures are results with isError, for the model."""
        kwargs, problems = self.signature.bind(arguments, ctx)
        if problems:
            return _error_result(f"Invalid arguments for tool '{self.name}':\n"
                                 + _errors_text(problems))
        try:
            result = self.result(self.invoke(ctx, kwargs))
        except ToolError as e:
            return _error_result(str(e))
        except (Cancelled, InputRequired):
            raise
        # SystemExit and KeyboardInterrupt too: a tool never stops the server
        except BaseException as e:
            # (2026-07-28 has them as protocol errors, -32021 and -32602)
            if isinstance(e, (CapabilityError, InvalidAnswer)) and ctx.stateless:
                raise
            expected = isinstance(e, (CapabilityError, TimeoutError, JSONRPCError))
            _log_failure(f"tool {self.name!r}", e, with_traceback=not expected)
            return _error_result(f"{type(e).__name__}: {e}")
        version = ctx.protocol_version or LATEST_PROTOCOL_VERSION
        if version < V2026_07:
            return _shape_result(result, version)
        return result

    def result(self, value):
        """Turn what the function returned into a CallToolResult dict."""
        plain = type(value) in _SCALAR_TYPES
        blocks = None if plain else _as_blocks(value)
        if isinstance(value, ToolResult) or blocks:
            if blocks is None:
                result = value.to_dict()
                # A trial encoding: what JSON cannot carry is an error saying where
                try:
                    encode_message(result)
                except (TypeError, ValueError) as e:
                    raise type(e)(_find_not_json(result, "result") or str(e)) from None
            else:
                result = {"content": blocks, "isError": False}
            if self.check_output is None or result["isError"]:
                return result
            structured = result.get("structuredContent")
            if structured is None:
                problems = ["no structured content: a tool with an output schema "
                            "must return it (as its return value, or "
                            "ToolResult(structured=...))"]
            else:
                problems = self.check_output(structured)
            if problems:
                return self.mismatch(problems)
            return result
        if self.check_output is not None:
            shown = structured = value if plain else _dump(value)
            if type(structured) not in self.returned_passes:
                problems = self.check_returned(structured)
                if problems:
                    return self.mismatch(problems)
            if self.signature.wrap_output:
                structured = {"result": shown}
        elif value is None or isinstance(value, str):
            return {"content": [] if value is None else [text(value)], "isError": False}
        else:
            shown = structured = _dump(value)
            # only objects are structured content
            if not isinstance(structured, dict):
                return {"content": [text(to_json(shown))], "isError": False}
        # str and int are their own JSON text; anything else is encoded
        shown = str(shown) if type(shown) in (str, int) else to_json(shown)
        return {"content": [{"type": "text", "text": shown}],
                "structuredContent": structured, "isError": False}

    def mismatch(self, problems):
        """Output that breaks the tool's own outputSchema is a server bug: say so."""
        shown = _errors_text([_escaped(problem) for problem in problems])
        log.error("tool %r returned output that does not match its outputSchema:\n%s",
                  self.name, _escaped(shown, _LOGGED_CHARS, keep="\n"))
        return _error_result(f"Tool '{self.name}' produced output that does not match "
                             f"its output schema:\n{_errors_text(problems)}")


def _shape_result(result, version):
    """A tool's result as a version before 2026-07-28 has it: structuredContent an
    object, and none before 2025-06-18."""
    if version < V2025_06 or not isinstance(result.get("structuredContent", {}), dict):
        result.pop("structuredContent", None)
    content = result["content"]
    # (a plain text block is the same in every version)
    if version < V2025_11 and any(b.get("type") != "text" or len(b) > 2
                                  for b in content):
        result["content"] = [_shape_block(b, version) for b in content]
    return result


def _shape_block(block, version):
    """A content block as an older protocol version has it."""
    if version >= V2025_11:
        return block
    kind = block.get("type")
    if kind == "resource_link" and version < V2025_06:
        return text(f"Resource: {block['uri']} ({block.get('name')})")
    if kind == "audio" and version < V2025_03:
        return text(f"[{block.get('mimeType')} audio omitted: not in {version}]")
    if kind == "resource_link" and "icons" in block:
        block = {k: v for k, v in block.items() if k != "icons"}
    if version < V2025_06 and ("_meta" in block or "annotations" in block):
        block = {k: v for k, v in block.items() if k != "_meta"}
        if "annotations" in block:
            block["annotations"] = _shape_annotations(block["annotations"], version)
    return block


def _shape_annotations(annotations, version):
    if version >= V2025_06 or "lastModified" not in annotations:
        return annotations
    return {k: v for k, v in annotations.items() if k != "lastModified"}


def _mirrored_arguments(schema, tool):
    """The arguments a tool's input schema marks with "x-mcp-header" (docs/http.md), as
    {name: path of properties}; a mark the spec does not allow is a ValueError."""
    mirrored = {}

    # path: None once the way from the root is not by properties alone
    def walk(node, path):
        if isinstance(node, list):
            for item in node:
                walk(item, None)
        if not isinstance(node, dict):
            return
        name = node.get("x-mcp-header")
        if name is not None:
            problem = _header_mark_problem(node, name, path, mirrored)
            if problem:
                raise ValueError(f"tool {tool!r}: x-mcp-header {name!r}: {problem}")
            mirrored[name] = path
        for key, value in node.items():
            if key == "properties" and path is not None and isinstance(value, dict):
                for prop, sub in value.items():
                    walk(sub, path + (prop,))
            # these keywords hold values, not schemas
            elif key not in ("enum", "const", "default", "examples"):
                walk(value, None)
    walk(schema, ())
    return mirrored


def _header_mark_problem(node, name, path, mirrored):
    """What is wrong with the "x-mcp-header" mark ``name`` at ``path``, or None."""
    if not path:
        return "it may only mark a property reached from the root by properties"
    if not isinstance(name, str) or not _TOKEN.fullmatch(name):
        return "it must be a header name (letters, digits and !#$%&'*+-.^_`|~)"
    if node.get("type") not in ("string", "integer", "boolean"):
        return "it may only mark a string, integer or boolean"
    if name.lower() in {n.lower() for n in mirrored}:
        return "it must be unique (whatever the case)"
    return None


# an HTTP field name (RFC 9110)
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")


def _mirrors(value, header):
    """Does a Mcp-Param-{Name} header (decoded; None: absent) stand for ``value``?
    Integers compare as numbers (42.0 is 42)."""
    if isinstance(value, str) or header is None:
        return header == value
    sent = _json_in(header)
    if isinstance(value, bool) or isinstance(sent, bool):
        return sent is value
    return _is_json_number(sent) and sent == value


def _error_result(message):
    return {"content": [text(message)], "isError": True}


class Resource(Entry):
    """A resource at a fixed URI, or a family of them under an RFC 6570 template:
    ``{var}`` matches one path segment, ``{+var}`` the rest; neither lets a URI walk
    out of a directory the function joins the value to (see safe_value)."""
    registry_name = "resources"

    def __init__(self, fn, uri, *, name=None, title=None, description=None,
                 mime_type=None, size=None, annotations=None, icons=None, meta=None,
                 ttl_ms=None, cache_scope=None, allow_dot_segments=False):
        super().__init__(fn, name=name, title=title, description=description,
                         icons=icons, meta=meta, structured=False)
        self.uri = uri
        # name -> whether it is a {+name}
        self.variables = {}
        if not re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", uri):
            raise ValueError(f"resource {uri!r} has no scheme: start it with one, as "
                             f"in {'file:///' + uri.lstrip('/')!r}")
        self.compile_template(uri)
        self.is_template = bool(self.variables)
        if type(allow_dot_segments) is not bool:
            raise ValueError(f"resource {uri!r}: allow_dot_segments must be True or "
                             f"False, not {allow_dot_segments!r}")
        if allow_dot_segments and not any(self.variables.values()):
            raise ValueError(f"resource {uri!r}: allow_dot_segments=True is for a "
                             "{+var}, which this URI has not; a {var} is always one "
                             "segment")
        self.allow_dot_segments = allow_dot_segments
        params = set(self.signature.input_schema.get("properties", ()))
        if params != set(self.variables):
            raise TypeError(f"resource {uri!r}: the function's parameters "
                            f"{sorted(params)} must match the URI template's variables "
                            f"{sorted(self.variables)}")
        self.mime_type = mime_type or _guess_type(uri)
        self.size = size
        self.annotations = annotations
        # 2026-07-28 cache hints for resources/read
        self.ttl_ms, self.cache_scope = _cache_hints(ttl_ms, cache_scope,
                                                     f"resource {uri!r}")

    def compile_template(self, uri):
        # literal, "+" or "", name, literal, "+" or "", name, ..., literal
        parts = re.split(r"\{(\+?)([A-Za-z_][A-Za-z0-9_]*)\}", uri)
        for literal in parts[::3]:
            if "{" in literal or "}" in literal:
                raise ValueError(_template_brace_error(uri, literal))
        pattern = [re.escape(parts[0])]
        for i in range(1, len(parts), 3):
            plus, var, literal = parts[i:i + 3]
            if var in self.variables:
                raise ValueError(f"resource {uri!r}: variable {var!r} appears twice; "
                                 "give each variable a name of its own")
            if not literal and i + 3 < len(parts):
                raise ValueError(f"resource {uri!r}: variables {var!r} and "
                                 f"{parts[i + 4]!r} are next to each other; put a "
                                 "literal between them, such as '/' or '-'")
            self.variables[var] = bool(plus)
            matches = ".+" if plus else "[^/?#]+"
            pattern += [f"(?P<{var}>{matches})", re.escape(literal)]
        self.pattern = re.compile("".join(pattern) + r"\Z")

    def describe(self, version):
        key = "uriTemplate" if self.is_template else "uri"
        entry = {key: self.uri, "name": self.name}
        _add_optional(entry, "mimeType", self.mime_type)
        if not self.is_template:
            _add_optional(entry, "size", self.size)
        if self.annotations is not None:
            entry["annotations"] = _shape_annotations(self.annotations, version)
        return self.describe_common(entry, version)

    def match(self, uri):
        """The template variables of a URI this resource serves, or None."""
        found = self.pattern.match(uri)
        if found is None:
            return None
        from urllib.parse import unquote
        variables = {}
        for var, value in found.groupdict().items():
            # a {+var} is passed on as it is, encoded
            if self.variables[var]:
                variables[var] = value
                decoded = unquote(value, errors="replace")
            else:
                try:
                    variables[var] = decoded = unquote(value, errors="strict")
                except UnicodeDecodeError:
                    # two URIs must not reach the function as one name
                    raise JSONRPCError(INVALID_PARAMS, f"Invalid params: {uri} has a "
                                       "percent-encoding that is not UTF-8") from None
            # Decoded once more too: "%252e%252e" decoded twice is ".."
            for text in (decoded, unquote(decoded, errors="replace")):
                if not self.safe_value(text, self.variables[var]):
                    return None
        return variables

    def safe_value(self, text, plus):
        """Does a decoded variable stay where it is put? A {var} one path segment (not
        '.' or '..'); a {+var} relative, with no '..' segment (unless allowed)."""
        if "\0" in text:
            return False
        if not plus:
            return "/" not in text and "\\" not in text and text not in (".", "..")
        if self.allow_dot_segments:
            return True
        # Either slash separates on Windows; a leading one would make the path absolute.
        segments = re.split(r"[/\\]", text)
        return segments[0] != "" and ".." not in segments

    def read(self, ctx, uri, variables):
        value = self.invoke(ctx, self.bind_strings(variables, f"resource {uri}", ctx))
        blocks = _as_blocks(value)
        if blocks is None:
            return [_contents(uri, value, self.mime_type or _guess_type(uri))]
        for block in blocks:
            if block.get("type") != "resource":
                raise TypeError(f"resource {uri!r} returned a {block.get('type')!r} "
                                "content block; return str, bytes, JSON data, or "
                                "embedded_resource(...) blocks")
        return [block["resource"] for block in blocks]


def _template_brace_error(uri, literal):
    """What is wrong with a brace in a URI template."""
    start = literal.find("{")
    if start < 0:
        problem = "a '}' that closes no '{'"
    elif "}" not in literal[start:]:
        problem = f"{literal[start:]!r} is not closed"
    else:
        problem = f"{literal[start:literal.index('}', start) + 1]!r} is not a variable"
    return (f"resource {uri!r}: {problem}; variables are {{name}} (one path "
            "segment) or {+name} (the rest, slashes too), the name made of letters, "
            "digits and _")


class Prompt(Entry):
    """A registered prompt: a function returning messages, taking its arguments."""
    registry_name = "prompts"

    def __init__(self, fn, *, name=None, title=None, description=None, icons=None,
                 meta=None):
        super().__init__(fn, name=name, title=title, description=description,
                         icons=icons, meta=meta, structured=False)
        schema = self.signature.input_schema
        required = set(schema.get("required", ()))
        self.arguments = []
        for arg, prop in schema.get("properties", {}).items():
            argument = {"name": arg, "required": arg in required}
            _add_optional(argument, "description", prop.get("description"))
            self.arguments.append(argument)

    def describe(self, version):
        entry = {"name": self.name, "arguments": self.arguments}
        return self.describe_common(entry, version)

    def get(self, ctx, arguments):
        kwargs = self.bind_strings(arguments, f"prompt '{self.name}'", ctx)
        value = self.invoke(ctx, kwargs)
        version = ctx.protocol_version or LATEST_PROTOCOL_VERSION
        items = value if isinstance(value, list) else [value]
        messages = [_prompt_message(item) for item in items]
        for message in messages:
            message["content"] = _shape_block(message["content"], version)
        result = {"messages": messages}
        _add_optional(result, "description", self.signature.description)
        return result


def _prompt_message(item):
    """A prompt's return item -> a PromptMessage (str or a block: a user message)."""
    if isinstance(item, (str, Content)):
        item = {"role": "user", "content": item}
    elif not isinstance(item, dict) or "role" not in item:
        raise TypeError(f"a prompt returned {type(item).__name__}; expected str, a "
                        'content block or {"role": ..., "content": ...}')
    if item["role"] not in ("user", "assistant"):
        raise TypeError(f'a prompt message\'s role is "user" or "assistant", not '
                        f'{_preview(item["role"])}')
    content = _content_block(item.get("content"), "a prompt message's content")
    return dict(item, content=content)


# ======================================================================================
# Server
# ======================================================================================

# Parameter names people write by mistake -> the ones MCP uses (seen in the wild).
_DID_YOU_MEAN = {
    "tool": "name", "toolName": "name", "prompt": "name", "promptName": "name",
    "args": "arguments", "params": "arguments", "input": "arguments",
    "resourceId": "uri", "url": "uri", "resource": "uri"}


def _did_you_mean(name, known=None, params=None):
    """The hint ending an error about ``name``: the closest names in ``known``, or the
    key ``params`` holds instead of it (``tool`` for ``name``)."""
    if params is not None:
        for wrong, right in _DID_YOU_MEAN.items():
            if right == name and wrong in params:
                return f' (found "{wrong}": did you mean "{name}"?)'
        return ""
    import difflib
    close = difflib.get_close_matches(name, list(known), n=3)
    return f" (did you mean {', '.join(map(repr, close))}?)" if close else ""


def _require(params, key, kind, method):
    """params[key] as ``kind``, or -32602 saying what was expected (and meant)."""
    value = params.get(key)
    if isinstance(value, kind):
        return value
    expected = "a string" if kind is str else "an object"
    raise JSONRPCError(INVALID_PARAMS, f"{method} needs params.{key} ({expected})"
                       + _did_you_mean(key, params=params))


def _named(registry, what, params, method):
    """The tool or prompt params.name names, and params.arguments; else -32602."""
    name = params.get("name")
    entry = None
    if type(name) is str:
        entry = registry.get(name)
    if entry is None:
        name = _require(params, "name", str, method)
        raise JSONRPCError(INVALID_PARAMS, f"Unknown {what}: {_short_repr(name)}"
                           + _did_you_mean(name, registry), {"name": name})
    arguments = params.get("arguments")
    if type(arguments) is not dict:
        if arguments is not None or _did_you_mean("arguments", params=params):
            _require(params, "arguments", dict, method)
        arguments = {}
    return entry, arguments


class _Honoured(dict):
    """What a listen was acknowledged; its URIs as sets (and without a trailing "/")."""

    def __init__(self, honoured):
        super().__init__(honoured)
        uris = honoured.get("resourceSubscriptions", ())
        self.uris = set(uris)
        self.parents = {uri.rstrip("/") for uri in uris}


def _cache_hints(ttl_ms, scope, owner, required=False):
    """Check a ttlMs and cacheScope setting and return them (None: not set)."""
    if (ttl_ms is not None or required) and (type(ttl_ms) is not int or ttl_ms < 0):
        raise ValueError(f"{owner}: cache_ttl_ms must be a whole number of "
                         "milliseconds >= 0")
    if scope not in ("public", "private") and (scope is not None or required):
        raise ValueError(f'{owner}: cache_scope must be "public" or "private"')
    return ttl_ms, scope


def _cursor_position(cursor):
    """The order of the last item a nextCursor showed; else -32602."""
    try:
        raw = b64decode(cursor)
        if raw.startswith(b"after:"):
            return int(raw[6:])
    except (ValueError, TypeError):
        pass
    raise JSONRPCError(INVALID_PARAMS, f"Invalid cursor: {_preview(cursor)} is not a "
                                       "nextCursor from this server")


class Setting:
    """One of a Server's settings: its default, and what it may be (``kind``: "count"
    of at least ``least``, "seconds", "positive seconds", "function", "path",
    "origins", "hosts", "url", "list", "any"). ``none``: None too (no limit)."""
    __slots__ = ("default", "kind", "least", "none")

    def __init__(self, default, kind="any", least=1, none=False):
        self.default, self.kind, self.least, self.none = default, kind, least, none

    def check(self, name, value):
        """``value``, as the server keeps it; else ValueError saying what it may be."""
        kind = self.kind
        if kind == "any" or (value is None and self.none):
            return value
        if kind == "hosts":
            return _allowed_hosts(value)
        if kind == "url":
            return _public_url(value)
        if kind in ("list", "origins"):
            if kind == "origins" and isinstance(value, str):
                raise ValueError(f"{name} must be a list of origins, not the string "
                                 f"{value!r}: {name}=[{value!r}]")
            return tuple(value)
        # Each test is safe to make whatever the value: the one of its kind decides
        number = _is_json_number(value)
        fits, expected = {
            "count": (type(value) is int and value >= self.least,
                      f"an integer of at least {self.least}"),
            "function": (value is None or callable(value), "a function, or None"),
            "path": (isinstance(value, str) and value.startswith("/"),
                     'a path such as "/mcp"'),
            "positive seconds": (number and value > 0,
                                 "a number of seconds more than 0"),
            "seconds": (number and value >= 0, "a number of seconds at least 0"),
        }[kind]
        if kind == "seconds" and self.none:
            expected += " (or None: no limit)"
        if not fits:
            raise ValueError(f"{name} must be {expected}, not {value!r}")
        return value


#: Every setting of a Server, by name (docs/reference.md, "Settings"): Server(name,
#: version, **settings) checks each one given, and server.NAME is its value.
SETTINGS = {
    # Who the server is (serverInfo), and what it tells clients
    "title": Setting(None), "description": Setting(None),
    "instructions": Setting(None), "website_url": Setting(None), "icons": Setting(None),
    "openai_keys": Setting(True),
    # The lifespan, and logging
    "lifespan": Setting(None, "function"), "forward_logging": Setting(False),
    # Limits
    "page_size": Setting(100, "count", none=True),
    "max_workers": Setting(64, "count"), "max_queue": Setting(10_000, "count", least=0),
    "max_line_bytes": Setting(32 << 20, "count"),
    "grace_period": Setting(5.0, "seconds"), "cancel_timeout": Setting(2.0, "seconds"),
    "request_timeout": Setting(60.0, "seconds", none=True),
    # 2026-07-28: cache hints, and requestState
    "cache_ttl_ms": Setting(0), "cache_scope": Setting("public"),
    "state_key": Setting(None), "state_ttl": Setting(600, "seconds"),
    "max_state_bytes": Setting(64 << 10, "count"),
    # HTTP
    "http_path": Setting("/mcp", "path"), "http_sessions": Setting(True),
    "max_sessions": Setting(1000, "count"),
    "max_sessions_per_principal": Setting(16, "count"),
    "session_idle": Setting(3600, "seconds"),
    "max_streams": Setting(100, "count"),
    "max_streams_per_principal": Setting(16, "count"),
    "max_subscriptions": Setting(1000, "count", least=0),
    "can_subscribe": Setting(None, "function"),
    "heartbeat": Setting(15.0, "positive seconds"),
    "idle_timeout": Setting(30.0, "seconds", none=True),
    "max_body_bytes": Setting(4 << 20, "count"),
    "max_inflight_bytes": Setting(32 << 20, "count"),
    "max_connections": Setting(200, "count"),
    "max_connections_per_address": Setting(50, "count"),
    # What checking one request's arguments may take (_Budget)
    "max_validation_steps": Setting(5_000_000, "count"),
    # What one session keeps: initialize's clientInfo and capabilities, the URIs it
    # subscribes to (bytes of JSON, characters)
    "max_client_bytes": Setting(64 << 10, "count"),
    "max_uri_length": Setting(8 << 10, "count"),
    "max_subscribed_length": Setting(64 << 10, "count"),
    # HTTP security
    "allowed_origins": Setting((), "origins"), "allowed_hosts": Setting(None, "hosts"),
    "public_url": Setting(None, "url"), "auth": Setting(None, "function"),
    "authorization_servers": Setting((), "list"),
}


class Server:
    """An MCP server: the registries of tools, resources and prompts; ``handlers``, the
    dict from method name to ``handler(ctx, params) -> result``; its settings."""

    # Taken by the first request of any server's wsgi
    _http_start_lock = threading.Lock()
    #: Seconds before a request tries again a lifespan that failed to start.
    lifespan_retry = 5.0

    def __init__(self, name, version="0.1.0", **settings):
        unknown = [setting for setting in settings if setting not in SETTINGS]
        if unknown:
            raise TypeError(f"Server() got an unexpected keyword argument "
                            f"{unknown[0]!r}{_did_you_mean(unknown[0], SETTINGS)}")
        self.name, self.version = name, version
        for setting, declared in SETTINGS.items():
            value = settings.get(setting, declared.default)
            setattr(self, setting, declared.check(setting, value))
        if self.max_inflight_bytes < self.max_body_bytes:
            raise ValueError(f"max_inflight_bytes ({self.max_inflight_bytes}) must be "
                             f"at least max_body_bytes ({self.max_body_bytes})")
        _cache_hints(self.cache_ttl_ms, self.cache_scope, name, required=True)
        self.request_state = RequestStateSigner(self.state_key, self.state_ttl,
                                                self.max_state_bytes)
        # What the lifespan yielded; the connections (or HTTP) in it
        self.lifespan_value = None
        self._lifespan_users = 0
        self._lifespan_lock = threading.Lock()
        # What is registered, in the order lists use; capabilities(), cached
        self.tools, self.resources, self.prompts, self.completers = {}, {}, {}, {}
        self.order = count(1).__next__
        self._offered = None
        self.lock = threading.Lock()
        # Serving: the pool, the sessions hearing of changes (stdio connections, HTTP
        # streams), every HttpSession in use, the HttpEndpoint, 2026-07-28's _meta
        self.pool = None
        self.sessions = set()
        self.http_sessions_alive = weakref.WeakSet()
        self._http = self._stateless_meta = None
        # The rules of each method, as this server applies them
        self.methods = dict(METHODS)
        self.handlers = {
            "initialize": self.initialize, "ping": self.ping,
            "tools/list": self.list_tools, "tools/call": self.call_tool,
            "resources/list": self.list_resources, "resources/read": self.read_resource,
            "resources/templates/list": self.list_resource_templates,
            "resources/subscribe": self.subscribe,
            "resources/unsubscribe": self.unsubscribe,
            "prompts/list": self.list_prompts, "prompts/get": self.get_prompt,
            "completion/complete": self.complete,
            "logging/setLevel": self.set_logging_level,
            "server/discover": self.discover, "subscriptions/listen": self.listen,
            "notifications/initialized": self.on_initialized,
            "notifications/cancelled": self.on_cancelled,
            "notifications/roots/list_changed": self.on_roots_list_changed,
        }

    @property
    def inline_methods(self):
        """The methods run on the thread that reads them: those whose row in
        ``methods`` is not ``threaded``. Setting it changes those rows."""
        return frozenset(name for name, rules in self.methods.items()
                         if not rules.threaded)

    @inline_methods.setter
    def inline_methods(self, names):
        for name in self.methods.keys() | set(names):
            rules = self.methods.get(name, CUSTOM_METHOD)
            if rules.threaded == (name in names):
                self.methods[name] = rules.but(threaded=name not in names)

    # -- registration (docs/reference.md, "Registering") -------------------------------
    def tool(self, fn=None, *, replace=False, ui=None, visibility=None, **options):
        """``@server.tool`` or ``@server.tool(name=...)``: register a tool; ``ui``: the
        widget showing its results, ``visibility``: who calls it ("model", "app")."""
        if ui is not None and (ui not in self.resources or not ui.startswith("ui://")):
            raise ValueError(f"@server.tool(ui={ui!r}): no widget is registered at "
                             "that URI; register its HTML first, at a ui:// URI")
        if not set(visibility or ()) <= {"model", "app"}:
            raise ValueError(f"@server.tool(visibility={visibility!r}): a list of "
                             '"model" and/or "app"')
        link = {key: value for key, value in (("resourceUri", ui),
                                              ("visibility", visibility)) if value}
        if link:
            meta = options["meta"] = dict(options.get("meta") or {}, ui=link)
        if ui is not None and self.openai_keys:
            meta["openai/outputTemplate"] = meta["ui/resourceUri"] = ui
        return self._register(Tool, fn, replace, options)

    def resource(self, uri, *, replace=False, **options):
        """``@server.resource(uri, ...)``: register a resource (or a URI template);
        at a ui:// URI, a widget's HTML, csp=, permissions=, ... in its _meta."""
        if not isinstance(uri, str):
            raise TypeError('@server.resource needs the URI first: '
                            '@server.resource("file:///notes")')
        if uri.startswith("ui://"):
            options.setdefault("mime_type", UI_MIME)
            meta = options["meta"] = dict(options.get("meta") or {}, ui={})
            for key in [key for key in _WIDGET_META if key in options]:
                (name, chatgpt), value = _WIDGET_META[key], options.pop(key)
                meta["ui"][name] = value
                # ChatGPT's names: connect_domains, ... (and no base URIs)
                if key == "csp":
                    value = {k.replace("Domains", "_domains"): domains for k, domains
                             in value.items() if k != "baseUriDomains"}
                if chatgpt and self.openai_keys:
                    meta[chatgpt] = value
        return self._register(Resource, None, replace, dict(options, uri=uri))

    def prompt(self, fn=None, *, replace=False, **options):
        """``@server.prompt`` or ``@server.prompt(name=...)``: register a prompt."""
        return self._register(Prompt, fn, replace, options)

    def _register(self, kind, fn, replace, options):
        """Add ``kind(fn, **options)`` to its registry (no fn: a decorator doing it); a
        name or URI registered twice is an error, unless ``replace``."""
        if fn is None:
            return lambda fn: self._register(kind, fn, replace, options)
        item = kind(fn, **options)
        registry_name = kind.registry_name
        key = item.uri if kind is Resource else item.name
        item.order = self.order()
        with self.lock:
            registry = getattr(self, registry_name)
            if key in registry and not replace:
                raise ValueError(f"{registry_name[:-1]} {key!r} is already registered: "
                                 "pass replace=True to replace it, or give this one "
                                 f"another {'URI' if kind is Resource else 'name'}")
            registry[key] = item
        self._offered = None
        self.notify_list_changed(registry_name)
        return fn

    def completion(self, argument, *, prompt=None, template=None):
        """Register ``fn(value, arguments) -> [str, ...]`` completing ``argument``."""
        if (prompt is None) == (template is None):
            raise TypeError("completion() takes exactly one of prompt= or template=")
        key = ("ref/resource", template, argument)
        if prompt is not None:
            key = ("ref/prompt", prompt, argument)

        def register(fn):
            self.completers[key] = fn
            self._offered = None
            return fn
        return register

    def remove_tool(self, name):
        self._remove("tools", name)

    def remove_resource(self, uri):
        self._remove("resources", uri)

    def remove_prompt(self, name):
        self._remove("prompts", name)

    def _remove(self, registry_name, key):
        with self.lock:
            item = getattr(self, registry_name).pop(key, None)
        if item is None:
            raise KeyError(f"no {registry_name[:-1]} {key!r}")
        self._offered = None
        self.notify_list_changed(registry_name)

    # -- server-initiated notifications ------------------------------------------------
    def notify_list_changed(self, kind):
        """Tell the clients that asked (listChanged, listens) that ``kind`` changed."""
        method = f"notifications/{kind}/list_changed"
        flag = f"{kind}ListChanged"
        for session in list(self.sessions):
            if session.capabilities.get(kind, {}).get("listChanged"):
                session.notify(method)
            if session.listens:
                session.publish(method, lambda honoured: honoured.get(flag))

    def notify_resource_updated(self, uri):
        """Tell the clients subscribed to ``uri`` (or, on a listen, to a URI containing
        it) that it changed."""
        # The beginnings of uri that end before a "/": subscriptions covering it
        parts = uri.split("/")
        parents = {"/".join(parts[:end]) for end in range(1, len(parts))}
        method = "notifications/resources/updated"

        def covers(honoured, principal):
            if uri in honoured.uris:
                return True
            if honoured.parents.isdisjoint(parents):
                return False
            return self.may_subscribe(principal, uri)
        for session in list(self.sessions):
            if uri in session.subscriptions:
                session.notify(method, {"uri": uri})
            if session.listens:
                wanted = functools.partial(covers, principal=session.principal)
                session.publish(method, wanted, {"uri": uri})

    def may_subscribe(self, principal, uri):
        """Does can_subscribe let ``principal`` hear of changes to ``uri``? A hook that
        fails says no (its log names the error's type, never the URI)."""
        if self.can_subscribe is None:
            return True
        try:
            return bool(self.can_subscribe(principal, uri))
        except Exception:
            log.error("the can_subscribe hook failed (%s)", sys.exc_info()[0].__name__)
            return False

    # -- what the server says about itself ---------------------------------------------
    def capabilities(self):
        """The capabilities, from what is registered; changes only where they can be
        delivered (``http_sessions=True``: one process)."""
        caps = {"logging": {}}
        changes = {}
        if self.http_sessions:
            changes = {"listChanged": True}
        for kind in ("tools", "resources", "prompts"):
            if getattr(self, kind):
                caps[kind] = dict(changes)
        if changes and self.resources:
            caps["resources"] = {"subscribe": True, **changes}
        if self.completers:
            caps["completions"] = {}
        if any(uri.startswith("ui://") for uri in self.resources):
            caps["extensions"] = {UI_EXTENSION: {}}
        return caps

    def server_info(self, version):
        info = {"name": self.name, "version": self.version}
        _add_optional(info, "title", self.title, version, V2025_06)
        _add_optional(info, "description", self.description, version, V2025_11)
        _add_optional(info, "icons", self.icons, version, V2025_11)
        _add_optional(info, "websiteUrl", self.website_url, version, V2025_11)
        return info

    # -- serving -----------------------------------------------------------------------
    def prepare(self):
        """Start what serving needs, once: the worker pool."""
        with self.lock:
            if self.pool is None:
                self.pool = WorkerPool(self.max_workers, self.max_queue)

    def run(self, trace=None, http=None):
        """Serve stdin/stdout until end of input, SIGTERM or Ctrl+C, then exit (catching
        the SystemExit gives back the signal handlers); ``http``: run_http instead."""
        if trace is None:
            trace = os.environ.get("MCP_MIN_TRACE", "") not in ("", "0")
        if trace:
            trace = FramePrinter({"in": "C->S", "out": "S->C"}, sys.stderr)
        if http is not None:
            sys.exit(self.run_http(http, trace))
        read_fd, write_fd = claim_stdio()
        _catch_stop_signals(self.grace_period, write_fd)
        code = 0
        try:
            self.serve_connection(read_fd, write_fd, trace=trace)
        except _Stop:
            pass
        except KeyboardInterrupt:
            code = 130
        finally:
            first, saved = _end_stop_signals()
        # SIGINT: exit as an interrupted program does
        if first == 2:
            code = 130
        raise _Exit(code, saved)

    def serve_connection(self, read_fd=0, write_fd=1, trace=None):
        """Serve one connection (two fds) until its input ends; returns the Session."""
        self.prepare()
        writer = Writer(write_fd, trace)
        session = Session(self, writer)
        session.trace = trace
        writer.on_closed = functools.partial(_stdout_gone, session)
        rfile = open(read_fd, "rb", buffering=1 << 16, closefd=False)
        self._enter_lifespan()
        self.sessions.add(session)
        try:
            serve_lines(session, rfile)
        finally:
            held = _hold_signals()
            try:
                self.sessions.discard(session)
                self._exit_lifespan()
                session.stream.close()
            finally:
                _release_signals(held)
        return session

    def wsgi(self, environ, start_response):
        """The WSGI application serving Streamable HTTP at ``http_path`` (the server is
        one too: ``gunicorn app:server``): an HttpExchange serves each request."""
        endpoint = self._http
        if not isinstance(endpoint, HttpEndpoint):
            endpoint = self.start_http(environ.get("SERVER_SOFTWARE", ""))
            # Its lifespan failed: 503, until a request tries it again
            if not isinstance(endpoint, HttpEndpoint):
                return endpoint(environ, start_response)
        return HttpExchange(endpoint, environ, start_response).serve()

    __call__ = wsgi

    def run_http(self, address="127.0.0.1:8000", trace=None):
        """Serve ``wsgi`` on the embedded server at "HOST:PORT", each request's frames
        to ``trace``, until Ctrl+C or SIGTERM; the exit code (0, or 130 on Ctrl+C)."""
        return serve_http(self, address, trace)

    def start_http(self, engine="mcp_min"):
        """Enter the lifespan and make the HTTP endpoint, once per process (a lifespan
        that fails is tried again at most every ``lifespan_retry`` seconds)."""
        global _tune_allocator
        with Server._http_start_lock:
            endpoint = self._http
            if isinstance(endpoint, HttpEndpoint) or (
                    isinstance(endpoint, _LifespanFailed) and not endpoint.due()):
                return endpoint
            self.prepare()
            # SERVER_SOFTWARE says "gunicorn/27.0.1" in gunicorn, "Granian" in granian:
            # a worker process that serves this application alone
            if engine.lower().startswith(("gunicorn/", "granian")):
                _tune_allocator = True
            try:
                self._enter_lifespan()
            except Exception as e:
                _log_failure("the lifespan", e)
                self._http = _LifespanFailed(e, self.lifespan_retry)
                return self._http
            self._http = HttpEndpoint(self)
            _at_process_exit(self.stop_http)
            # run_http is one process, whatever it shares
            if (engine != "mcp_min" and not self.http_sessions
                    and not self.request_state.shared):
                log.warning("requestState is signed with a key of this process alone: "
                            "give every worker the same MCP_MIN_STATE_KEY, or a retry "
                            "that reaches another worker is refused")
            return self._http

    def stop_http(self, httpd=None):
        """End serving HTTP here (once): cancel the calls running, exit the lifespan."""
        with Server._http_start_lock:
            endpoint, self._http = self._http, None
        if not isinstance(endpoint, HttpEndpoint):
            return
        # An engine may signal its worker twice: the second must not cut this short
        ignored = _ignore_stop_signals()
        try:
            self._cancel_http_calls(httpd)
            self._exit_lifespan()
        finally:
            _restore_signals(ignored)

    def _cancel_http_calls(self, httpd):
        """Cancel the calls still running; give them ``cancel_timeout`` seconds to
        return and (with ``httpd``) their responses to be written."""
        busy = [s for s in list(self.http_sessions_alive) if s.running]
        if not busy:
            return
        for session in busy:
            session.cancel_all("the server is shutting down", stopping=True)
        deadline = time.monotonic() + self.cancel_timeout
        while time.monotonic() < deadline and (
                (httpd is not None and httpd.serving)
                or any(session.running for session in busy)):
            time.sleep(0.01)
        left = sum(len(session.running) for session in busy)
        if left:
            log.warning("exiting with %d call(s) unfinished: still running %.1f s "
                        "after they were cancelled", left, self.cancel_timeout)

    def _enter_lifespan(self):
        """The first connection enters the lifespan and starts forwarding logging."""
        with self._lifespan_lock:
            self._lifespan_users += 1
            if self._lifespan_users > 1:
                return
            _forward_logging(self, True)
            try:
                if self.lifespan is not None:
                    self.lifespan_value, self._lifespan_exit = _open_lifespan(
                        self.lifespan(self))
            except BaseException:
                self._lifespan_users -= 1
                _forward_logging(self, False)
                raise

    def _exit_lifespan(self):
        with self._lifespan_lock:
            self._lifespan_users -= 1
            if self._lifespan_users:
                return
            _forward_logging(self, False)
            if self.lifespan is not None:
                leave = self._lifespan_exit
                self._lifespan_exit = self.lifespan_value = None
                leave()

    # -- built-in handlers: lifecycle --------------------------------------------------
    def initialize(self, ctx, params):
        session = ctx.session
        if session.version is not None:
            raise JSONRPCError(INVALID_REQUEST, "Already initialized: initialize may "
                                                "be sent only once per connection")
        version = _require(params, "protocolVersion", str, "initialize")
        # Echo a version we speak, else counter-offer our latest
        if version not in PROTOCOL_VERSIONS:
            version = LATEST_PROTOCOL_VERSION
        info, caps = params.get("clientInfo"), params.get("capabilities")
        info = info if isinstance(info, dict) else {}
        caps = caps if isinstance(caps, dict) else {}
        # The session keeps them for its life: bounded in bytes, not only in number
        size = len(encode_message([info, caps]))
        if size > self.max_client_bytes:
            raise JSONRPCError(INVALID_PARAMS, "initialize: clientInfo and "
                               f"capabilities take {size} bytes as JSON, more than "
                               "this server keeps per session "
                               f"({self.max_client_bytes}, max_client_bytes)")
        session.client_info, session.client_capabilities = info, caps
        offered = self.capabilities()
        declared = dict(offered)
        # no such flag in 2024-11-05; nor, before 2025-06-18, the _meta widgets need
        if version < V2025_03:
            declared.pop("completions", None)
        if version < V2025_06:
            declared.pop("extensions", None)
        result = {"protocolVersion": version, "capabilities": declared,
                  "serverInfo": self.server_info(version)}
        if self.instructions:
            result["instructions"] = self.instructions

        # Changes reach the session from the moment this response is written, under
        # its write lock: none goes out ahead of it
        def negotiated():
            session.capabilities, session.version = offered, version
        ctx._with_response = negotiated
        return result

    def ping(self, ctx, params):
        return {}

    def on_initialized(self, ctx, params):
        ctx.session.initialized = True

    def on_cancelled(self, ctx, params):
        ctx.session.cancel(params.get("requestId"), params.get("reason"))

    def on_roots_list_changed(self, ctx, params):
        ctx.session.roots = None
        ctx.session.roots_generation += 1
        self.roots_changed(ctx.session)

    def roots_changed(self, session):
        """Hook: the client's roots changed (override to react)."""

    # -- built-in handlers: the 2026-07-28 era -----------------------------------------
    def discover(self, ctx, params):
        """server/discover: what initialize would tell (serverInfo is in _meta)."""
        capabilities = {kind: dict(c) for kind, c in self.offered().items()}
        result = {"supportedVersions": list(STATELESS_PROTOCOL_VERSIONS),
                  "capabilities": capabilities}
        if self.instructions:
            result["instructions"] = self.instructions
        return result

    def listen(self, ctx, params):
        """subscriptions/listen: changes on a stream open until the client cancels."""
        wanted = _require(params, "notifications", dict, "subscriptions/listen")
        offered = self.offered()
        if not any(kind.get("listChanged") or kind.get("subscribe")
                   for kind in offered.values()):
            raise JSONRPCError(METHOD_NOT_FOUND, "Method not found: "
                               "subscriptions/listen (this server sends no change "
                               "notifications)")
        honoured = {f"{kind}ListChanged": True
                    for kind in ("tools", "prompts", "resources")
                    if wanted.get(f"{kind}ListChanged") is True
                    and offered.get(kind, {}).get("listChanged")}
        uris = wanted.get("resourceSubscriptions")
        if uris is not None:
            if isinstance(uris, list) and len(uris) > self.max_subscriptions:
                raise JSONRPCError(INVALID_PARAMS, f"subscriptions/listen: {len(uris)} "
                                   "resourceSubscriptions are more than this server "
                                   f"takes in one listen ({self.max_subscriptions}, "
                                   "max_subscriptions); a URI covers the resources "
                                   "under it")
            if not isinstance(uris, list) or not all(isinstance(u, str) for u in uris):
                raise JSONRPCError(INVALID_PARAMS, "subscriptions/listen: notifications"
                                   ".resourceSubscriptions must be a list of URIs")
            self._check_uris("subscriptions/listen", uris)
            if offered.get("resources", {}).get("subscribe"):
                # (a part refused is left out of the acknowledgement)
                honoured["resourceSubscriptions"] = [
                    uri for uri in dict.fromkeys(uris)
                    if self.may_subscribe(ctx.principal, uri)]
        ctx.session.listen(ctx.request_id, honoured)
        return NO_RESPONSE

    # -- built-in handlers: lists (with cursor pagination) -----------------------------
    def paginate(self, ctx, params, items, key):
        """One page of ``items`` in registration order. The cursor names the last item
        shown: changes between pages make none repeat or go missing."""
        cursor = params.get("cursor")
        after = 0 if cursor is None else _cursor_position(cursor)
        entries = sorted((i for i in items if i.order > after), key=lambda i: i.order)
        page = entries if self.page_size is None else entries[:self.page_size]
        result = {key: [i.describe(ctx.protocol_version) for i in page]}
        if len(page) < len(entries):
            result["nextCursor"] = b64encode(b"after:%d" % page[-1].order)
        return result

    def list_tools(self, ctx, params):
        return self.paginate(ctx, params, list(self.tools.values()), "tools")

    def list_resources(self, ctx, params):
        resources = [r for r in list(self.resources.values()) if not r.is_template]
        return self.paginate(ctx, params, resources, "resources")

    def list_resource_templates(self, ctx, params):
        templates = [r for r in list(self.resources.values()) if r.is_template]
        return self.paginate(ctx, params, templates, "resourceTemplates")

    def list_prompts(self, ctx, params):
        return self.paginate(ctx, params, list(self.prompts.values()), "prompts")

    # -- built-in handlers: tools, resources, prompts ----------------------------------
    def call_tool(self, ctx, params):
        tool, arguments = _named(self.tools, "tool", params, "tools/call")
        return tool.call(ctx, arguments)

    def find_resource(self, uri):
        """The resource serving ``uri`` and its template variables, or (None, None)."""
        exact = self.resources.get(uri)
        if exact is not None and not exact.is_template:
            return exact, {}
        for resource in sorted(list(self.resources.values()), key=lambda r: r.order):
            variables = resource.match(uri)
            if variables is not None:
                return resource, variables
        return None, None

    def read_resource(self, ctx, params):
        uri = _require(params, "uri", str, "resources/read")
        resource, variables = self.find_resource(uri)
        try:
            if resource is None:
                raise ResourceNotFound(uri)
            result = {"contents": resource.read(ctx, uri, variables)}
            # a widget's _meta on its HTML too: hosts read it there first
            if uri.startswith("ui://"):
                result["contents"][0].setdefault("_meta", resource.meta)
        except (ResourceNotFound, FileNotFoundError):
            # 2026-07-28 has no code of its own for it; data.uri has the URI in full
            code = RESOURCE_NOT_FOUND
            if ctx.stateless:
                code = INVALID_PARAMS
            shown = uri if len(uri) <= 200 else uri[:199] + "…"
            raise JSONRPCError(code, f"Resource not found: {shown}",
                               {"uri": uri}) from None
        if ctx.stateless:
            _add_optional(result, "ttlMs", resource.ttl_ms)
            _add_optional(result, "cacheScope", resource.cache_scope)
        return result

    def subscribe(self, ctx, params):
        if not ctx.session.capabilities["resources"].get("subscribe"):
            raise JSONRPCError(METHOD_NOT_FOUND, "Method not found: "
                               "resources/subscribe (this server offers no "
                               "subscriptions)")
        uri = _require(params, "uri", str, "resources/subscribe")
        subscriptions = ctx.session.subscriptions
        if uri not in subscriptions:
            if len(subscriptions) >= self.max_subscriptions:
                raise JSONRPCError(INVALID_PARAMS, "resources/subscribe: this session "
                                   f"has {len(subscriptions)} subscriptions, the most "
                                   "this server keeps (max_subscriptions); unsubscribe "
                                   "from one first")
            self._check_uris("resources/subscribe", [uri],
                             sum(map(len, subscriptions)))
            if not self.may_subscribe(ctx.principal, uri):
                raise JSONRPCError(INVALID_PARAMS, "resources/subscribe: subscribing "
                                   f"to {_preview(uri)} is not allowed")
        subscriptions.add(uri)
        return {}

    def _check_uris(self, method, uris, kept=0):
        """-32602 for a URI longer than max_uri_length, or for URIs that, with the
        ``kept`` characters subscribed already, pass max_subscribed_length."""
        longest = max(map(len, uris), default=0)
        if longest > self.max_uri_length:
            raise JSONRPCError(INVALID_PARAMS, f"{method}: a URI of {longest} "
                               "characters is longer than this server takes "
                               f"({self.max_uri_length}, max_uri_length)")
        total = kept + sum(map(len, uris))
        if total > self.max_subscribed_length:
            raise JSONRPCError(INVALID_PARAMS, f"{method}: {total} characters of "
                               "subscribed URIs are more than this server keeps per "
                               f"session or listen ({self.max_subscribed_length}, "
                               "max_subscribed_length); a URI covers the resources "
                               "under it")

    def unsubscribe(self, ctx, params):
        uri = _require(params, "uri", str, "resources/unsubscribe")
        ctx.session.subscriptions.discard(uri)
        return {}

    def get_prompt(self, ctx, params):
        prompt, arguments = _named(self.prompts, "prompt", params, "prompts/get")
        return prompt.get(ctx, arguments)

    def complete(self, ctx, params):
        ref = _require(params, "ref", dict, "completion/complete")
        argument = _require(params, "argument", dict, "completion/complete")
        kind, name = ref.get("type"), argument.get("name")
        registry, what, key = self.resources, "resource template", ref.get("uri")
        if kind == "ref/prompt":
            registry, what, key = self.prompts, "prompt", ref.get("name")
        if (kind not in ("ref/prompt", "ref/resource") or not isinstance(key, str)
                or not isinstance(name, str)):
            raise JSONRPCError(INVALID_PARAMS, 'completion/complete needs ref {"type": '
                               '"ref/prompt", "name"} or {"type": "ref/resource", '
                               '"uri"}, and argument.name')
        if key not in registry:
            raise JSONRPCError(INVALID_PARAMS, f"Unknown {what}: {key!r}"
                               + _did_you_mean(key, registry))
        value = argument.get("value", "")
        context = params.get("context")
        known = context.get("arguments") if isinstance(context, dict) else None
        if not isinstance(value, str) or (
                known is not None and not isinstance(known, dict)):
            raise JSONRPCError(INVALID_PARAMS, "completion/complete: argument.value "
                               "must be a string, and context.arguments an object")
        completer = self.completers.get((kind, key, name))
        values = []
        if completer is not None:
            values = completer(value, known or {})
            if hasattr(values, "__await__"):
                values = _run_coroutine(values, ctx)
            values = [str(v) for v in values]
        return {"completion": {"values": values[:100], "total": len(values),
                               "hasMore": len(values) > 100}}

    def set_logging_level(self, ctx, params):
        level = params.get("level")
        if level not in LOG_LEVELS:
            raise JSONRPCError(INVALID_PARAMS, f"Invalid log level {level!r}: use one "
                                               f"of {', '.join(LOG_LEVELS)}")
        ctx.session.log_level = level
        return {}

    # -- running a request: where, its handler, and what 2026-07-28 adds --------------
    def offered(self):
        """capabilities(), cached until a registration changes it (for 2026-07-28)."""
        offered = self._offered
        if offered is None:
            with self.lock:
                offered = self._offered = self.capabilities()
        return offered

    def schedule(self, fn, *args):
        """Run ``fn(*args)`` on the worker pool: the one place where calls are handed to
        threads (override it to run them elsewhere). False: refused, it is full."""
        return self.pool.submit(fn, *args)

    def call_handler(self, ctx, handler):
        """handler(ctx, params), run to completion if it is a coroutine function; its
        result, which must be an object (or NO_RESPONSE)."""
        result = handler(ctx, ctx.params)
        if hasattr(result, "__await__"):
            result = _run_coroutine(result, ctx)
        if not isinstance(result, dict) and result is not NO_RESPONSE:
            raise TypeError(f"{ctx.method} returned {_preview(result)}: a result must "
                            "be an object")
        return result

    def run_stateless(self, ctx, handler):
        """Run a handler for a 2026-07-28 request: its result as that era has it (a
        resultType, the cache hints, serverInfo in _meta), a question turned into an
        input_required result, CapabilityError into -32021; or NO_RESPONSE."""
        params = ctx.params
        try:
            if "requestState" in params:
                ctx.answers = self.read_answers(ctx.method, params, ctx.principal)
            elif params.get("inputResponses") is not None:
                # Answers without a state (a client may answer before it is asked):
                # taken, and checked, when the handler asks
                ctx.answers = {key: [None, answer]
                               for key, answer in _input_responses(params).items()}
            result = self.call_handler(ctx, handler)
        except InputRequired as unanswered:
            result = self.input_required(ctx, unanswered)
        except CapabilityError as e:
            raise JSONRPCError(MISSING_CAPABILITY, f"Missing client capability: {e}",
                               {"requiredCapabilities": e.required}) from None
        if result is NO_RESPONSE:
            return result
        if self._stateless_meta is None:
            self._stateless_meta = {SERVER_INFO_KEY: self.server_info(V2026_07)}
        result = dict(result)
        kind = result.setdefault("resultType", "complete")
        if kind == "input_required" and not ctx.rules.asks:
            raise JSONRPCError(INTERNAL_ERROR, f"Internal error: {ctx.method} answered "
                                               "input_required, which only tools/call, "
                                               "prompts/get and resources/read may")
        if kind == "complete" and ctx.rules.cacheable:
            result.setdefault("ttlMs", self.cache_ttl_ms)
            result.setdefault("cacheScope", self.cache_scope)
        result["_meta"] = {**(result.get("_meta") or {}), **self._stateless_meta}
        return result

    def read_answers(self, method, params, principal=None):
        """The answers a retry brings: earlier rounds' in its signed requestState
        (-32602 if forged, altered, expired or another call's), this round's in
        inputResponses (checked after the state: a forged state is the error to
        report)."""
        token = params.get("requestState")
        if not isinstance(token, str):
            raise _invalid_state("it must be the string the server sent")
        state = self.request_state.open(token)
        if state.get("call") != self.call_digest(method, params, principal):
            raise _invalid_state(
                "it was issued for another call (method, name or arguments)")
        responses = _input_responses(params)
        answers = state.get("answers", {})
        for key, (digest, method_asked) in state.get("asked", {}).items():
            if responses and key in responses:
                answer = _check_answer(key, method_asked, responses[key])
                answers[key] = [digest, answer]
        return answers

    def call_digest(self, method, params, principal):
        """What a requestState is bound to: server, method, target, arguments, user."""
        target = params.get("uri" if method == "resources/read" else "name")
        try:
            return _digest([self.name, method, target, params.get("arguments"),
                            _principal_id(principal)])
        except (RecursionError, ValueError) as e:
            raise JSONRPCError(INVALID_PARAMS, "Invalid params: arguments cannot be "
                               f"read back ({type(e).__name__})") from None

    def input_required(self, ctx, unanswered):
        """The result asking the questions, with the answers so far in requestState."""
        questions = unanswered.questions
        if not METHODS.get(ctx.method, CUSTOM_METHOD).asks:
            raise JSONRPCError(INTERNAL_ERROR, f"Internal error: {ctx.method} cannot "
                               f"ask the client for input ({', '.join(questions)}); "
                               "only prompts/get, resources/read and tools/call can")
        asked = {key: [digest, request["method"]]
                 for key, (request, digest) in questions.items()}
        state = {"call": self.call_digest(ctx.method, ctx.params, ctx.principal),
                 "answers": ctx.answers or {}, "asked": asked}
        try:
            sealed = self.request_state.seal(state)
        # (the client's answers nest deeper than json.dumps goes)
        except RecursionError:
            raise JSONRPCError(INVALID_PARAMS, "Invalid params: the answers in "
                                               "inputResponses are nested too deeply "
                                               "to carry") from None
        requests = {key: request for key, (request, _) in questions.items()}
        return {"resultType": "input_required", "inputRequests": requests,
                "requestState": sealed}

# ======================================================================================
# Context: one request as its handler sees it; async handlers; forwarded logging
# ======================================================================================

LOG_LEVELS = (
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
_LEVEL_RANK = {level: rank for rank, level in enumerate(LOG_LEVELS)}
# The Context a worker thread is serving, and the one an async handler is serving.
_current = threading.local()
_serving_ctx = contextvars.ContextVar("mcp_min_ctx", default=None)


def _log_params(level, data, logger, threshold):
    """The params of notifications/message, or None below ``threshold`` (None: none)."""
    if level not in _LEVEL_RANK:
        raise ValueError(f"unknown log level {level!r}; use one of "
                         f"{', '.join(LOG_LEVELS)}")
    if logger is not None and not isinstance(logger, str):
        raise TypeError(f"logger must be a str, not {_preview(logger)}")
    if threshold is None or _LEVEL_RANK[level] < _LEVEL_RANK[threshold]:
        return None
    params = {"level": level, "data": data}
    if logger:
        params["logger"] = logger
    return params


class Context:
    """One request as its handler sees it (docs/reference.md): what it asks, who asks
    it, and what the handler can do meanwhile: report progress, log, ask the client,
    see that it was cancelled. In an ``async def`` its methods return awaitables."""

    # Hooks: cancel an async handler's coroutine; run just before the response goes
    # out (Stream.respond's ``before``); run once the handler has returned, with what
    # it counts meanwhile against its principal's share (HttpEndpoint.claim)
    _on_cancel = _with_response = _on_end = _holder = None
    # The request's state as it starts: 2026-07-28 answers (key -> [question digest,
    # answer]) and questions asked in this run; stopped: cancelled by the server's
    # shutdown (its response still sent); done: the response is sent
    answers = None
    questions = 0
    cancelled = stopped = done = False
    last_progress = progress_token = None
    # Set by Session.admit: the request's row of METHODS, and its handler
    rules = handler = None

    def __init__(self, session, request_id, method, params, stream=None,
                 envelope=None):
        self.session = session
        self.server = session.server
        self.stream = stream or session.stream
        self.request_id, self.method, self.params = request_id, method, params
        self.principal = session.principal
        # 2026-07-28: all the server knows of its client (else the session knows it)
        self.envelope = envelope
        self.stateless = envelope is not None
        known = envelope or session
        self.protocol_version = known.version
        self.client_info = known.client_info
        self.client_capabilities = known.client_capabilities
        meta = params.get("_meta")
        self.meta = {}
        if isinstance(meta, dict):
            self.meta = meta
        token = self.meta.get("progressToken")
        # a string or a number (1.5 too), nothing else
        if token is not None and (isinstance(token, str) or _is_json_number(token)):
            self.progress_token = token

    @property
    def lifespan(self):
        """What the server's lifespan yielded."""
        return self.server.lifespan_value

    @property
    def client_shows_widgets(self):
        """Whether the client shows widgets: it declared MCP Apps (docs/widgets.md)."""
        # (what a client declared, checked: a malformed declaration shows nothing)
        extensions = self.client_capabilities.get("extensions")
        if not isinstance(extensions, dict) or not isinstance(
                extensions.get(UI_EXTENSION), dict):
            return False
        mime_types = extensions[UI_EXTENSION].get("mimeTypes")
        return isinstance(mime_types, list) and UI_MIME in mime_types

    # The name this attribute had before streams were called streams
    outlet = property(operator.attrgetter("stream"))

    def check_cancelled(self):
        """Raise Cancelled if this request was cancelled: call it between steps."""
        if self.cancelled:
            raise Cancelled(self.cancel_reason)

    @property
    def cancel_reason(self):
        why = ": the server is shutting down" if self.stopped else ""
        return f"request {self.request_id!r} was cancelled{why}"

    def report_progress(self, progress, total=None, message=None):
        """Send notifications/progress, given a progressToken; whether it was sent."""
        for name, value in (("progress", progress), ("total", total)):
            if value is not None and not _is_json_number(value):
                raise TypeError(f"{name} must be a number, not {_preview(value)}")
        if message is not None and not isinstance(message, str):
            raise TypeError(f"message must be a str, not {_preview(message)}")
        if self.progress_token is None:
            return False
        params = {"progressToken": self.progress_token, "progress": progress}
        _add_optional(params, "total", total)
        _add_optional(params, "message", message, self.protocol_version or "", V2025_03)
        # Under the lock the response cannot overtake it; threads keep their order
        with self.session.lock:
            last = self.last_progress
            if last is not None and progress <= last:
                raise ValueError(f"progress must increase: {progress} after {last}")
            if self.done or self.cancelled:
                return False
            self.last_progress = progress
            return self.stream.notify("notifications/progress", params)

    def log(self, level, data, logger=None):
        """Send notifications/message at the client's level or above; whether sent."""
        if self.stateless:
            threshold = self.envelope.log_level
        else:
            threshold = self.session.version and self.session.log_level
        params = _log_params(level, data, logger, threshold)
        if params is None:
            return False
        if not self.stateless:
            return self.stream.notify("notifications/message", params)
        # 2026-07-28: only before the response, which cannot overtake us under the lock
        with self.session.lock:
            if self.done or self.cancelled:
                return False
            return self.stream.notify("notifications/message", params)

    # -- asking the client (docs/reference.md says how each era carries the question) --
    def request(self, method, params=None, capability=None, timeout=None, key=None):
        """Ask the client and return its answer, if it declared ``capability`` (else
        CapabilityError). In 2026-07-28 an unanswered question ends this run with an
        input_required result; ``key`` names it there."""
        # the handshake allows only pings before notifications/initialized
        if not self.stateless and not self.session.initialized and method != "ping":
            raise CapabilityError(f"cannot send {method} before the client has sent "
                                  "notifications/initialized")
        if not self.stateless and self.session.no_requests:
            raise CapabilityError(f"{method} cannot be sent: "
                                  f"{self.session.no_requests}")
        if not capability and method in _QUESTIONS:
            capability = _QUESTIONS[method][0]
        if self.stateless and method not in _QUESTIONS:
            raise ValueError(f"{method} cannot be sent to a 2026-07-28 client: a "
                             "server asks it only for elicitation, sampling or roots")
        if capability:
            declared = self.client_capabilities.get(capability)
            if not isinstance(declared, dict):
                raise CapabilityError(f"the client did not declare the '{capability}' "
                                      f"capability, so {method} cannot be sent to it",
                                      {capability: {}})
        self.check_cancelled()
        if self.stateless:
            return self._ask(method, params, key)
        timeout = self.server.request_timeout if timeout is None else timeout
        answer = self.session.request(method, params, timeout, owner=self)
        return _check_answer(None, method, answer)

    def _ask(self, method, params, key=None):
        """2026-07-28: the answer if the retry carries it, else InputRequired. An answer
        is kept with its question's digest: a different question is asked anew."""
        self.questions += 1
        question = {"method": method}
        _add_optional(question, "params", params)
        digest = _digest(question)
        key = key or f"{method.split('/')[0]}-{self.questions}"
        answer = self.answers.get(key) if self.answers else None
        if answer is not None and answer[0] == digest:
            return answer[1]
        if answer is not None and answer[0] is None:
            return _check_answer(key, method, answer[1])
        raise InputRequired({key: (question, digest)})

    def ask_together(self, *asks):
        """Ask several questions (``lambda: ctx.elicit(...)``, ...): in 2026-07-28 those
        unanswered share one round."""
        answers, waiting = [], {}
        for ask in asks:
            try:
                answers.append(ask())
            except InputRequired as unanswered:
                waiting.update(unanswered.questions)
                answers.append(None)
        if waiting:
            raise InputRequired(waiting)
        return answers

    def sample(self, messages, *, max_tokens=1000, system_prompt=None, temperature=None,
               stop_sequences=None, model_preferences=None, include_context=None,
               metadata=None, tools=None, tool_choice=None, timeout=None, key=None):
        """sampling/createMessage: ``messages`` is a string or block (a user turn), a
        ``{"role", "content"}`` dict, or a list of them. Returns the client's result."""
        if isinstance(messages, (str, dict)):
            messages = [messages]
        params = {"messages": [_prompt_message(m) for m in messages],
                  "maxTokens": max_tokens}
        optional = {"systemPrompt": system_prompt, "temperature": temperature,
                    "stopSequences": stop_sequences, "includeContext": include_context,
                    "modelPreferences": model_preferences, "metadata": metadata,
                    "tools": tools, "toolChoice": tool_choice}
        params.update((field, value) for field, value in optional.items()
                      if value is not None)
        declared = self.client_capabilities.get("sampling")
        takes_tools = (isinstance(declared, dict) and "tools" in declared
                       and (self.protocol_version or "") >= V2025_11)
        if (tools or tool_choice) and not takes_tools:
            raise CapabilityError("the client did not declare sampling.tools "
                                  "(2025-11-25), so a sampling request cannot offer "
                                  "tools", {"sampling": {"tools": {}}})
        return self.request("sampling/createMessage", params, "sampling", timeout, key)

    def elicit(self, message, schema=None, *, url=None, elicitation_id=None,
               timeout=None, key=None):
        """elicitation/create: a flat form ``schema``, or (2025-11-25) a page at
        ``url``, for anything secret. Returns ``{"action", "content"?}``."""
        if not isinstance(message, str):
            raise TypeError(f"message must be a str, not {_preview(message)}")
        declared = self.client_capabilities.get("elicitation")
        version = self.protocol_version
        if (version or "") < V2025_06:
            raise CapabilityError("elicitation arrived in protocol 2025-06-18; this "
                                  f"session speaks {version}")
        if url is not None:
            if (not isinstance(declared, dict) or "url" not in declared
                    or version < V2025_11):
                raise CapabilityError("the client did not declare elicitation.url "
                                      "(2025-11-25)", {"elicitation": {"url": {}}})
            params = {"mode": "url", "message": message, "url": url}
            # 2026-07-28 correlates through requestState instead
            if not self.stateless:
                import uuid
                params["elicitationId"] = elicitation_id or str(uuid.uuid4())
        else:
            if isinstance(declared, dict) and declared and "form" not in declared:
                raise CapabilityError("the client declared only URL elicitation, not "
                                      "forms", {"elicitation": {"form": {}}})
            schema = schema or {"type": "object", "properties": {}}
            _check_form(schema)
            params = {"message": message, "requestedSchema": schema}
            if version >= V2025_11:
                params = {"mode": "form", **params}
        answer = self.request("elicitation/create", params, "elicitation", timeout, key)
        if (url is None and isinstance(answer, dict)
                and answer.get("action") == "accept"):
            problems = compile_schema(schema)(answer.get("content", {}))
            if problems:
                raise InvalidAnswer("The client's answer does not fit the form:\n"
                                    + _errors_text(problems))
        return answer

    def list_roots(self, timeout=None, key=None):
        """roots/list: ``[{"uri", "name"?}, ...]``, in the handshake era cached until
        notifications/roots/list_changed."""
        session = self.session
        if not self.stateless and session.roots is not None:
            return session.roots
        generation = session.roots_generation
        roots = self.request("roots/list", None, "roots", timeout, key).get("roots", [])
        # no list_changed meanwhile
        if not self.stateless and generation == session.roots_generation:
            session.roots = roots
        return roots


def _check_form(schema):
    """An elicitation form is flat: strings, numbers, booleans, enumerated lists."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict) or schema.get("type") != "object":
        raise ValueError('an elicitation form is {"type": "object", '
                         '"properties": {...}}')
    for name, prop in properties.items():
        kind = prop.get("type") if isinstance(prop, dict) else None
        items = prop.get("items") if kind == "array" else None
        enumerated = isinstance(items, dict) and ("enum" in items or "anyOf" in items)
        if kind not in ("string", "number", "integer", "boolean") and not enumerated:
            raise ValueError(f"elicitation form property {name!r}: forms take strings, "
                             "numbers, booleans and arrays of enumerated strings, "
                             "nothing nested")


# --- async handlers --------------------------------------------------------
# An async handler runs on the process's one event loop while its worker thread waits;
# the Context's methods, called on the loop, give awaitables.

def _run_coroutine(awaitable, ctx):
    """Run an async handler on the loop and wait for it. Cancelled, its coroutine gets
    asyncio.CancelledError, and this thread waits until it has unwound."""
    import concurrent.futures
    loop = _event_loop()
    escaped, tasks = [], []

    async def serving():
        if ctx.cancelled:
            raise loop.asyncio.CancelledError
        tasks.append(loop.asyncio.current_task())
        # (in this task's own context, where forwarded logging finds it)
        _serving_ctx.set(ctx)
        try:
            return await awaitable
        except (SystemExit, KeyboardInterrupt) as e:
            # Out of a task they would stop the loop: raised in the caller's thread
            escaped.append(e)

    def cancel():
        # The task, not the future: the future waits until the task ends
        for task in tasks:
            task.cancel()
    future = loop.submit(serving())
    ctx._on_cancel = lambda: loop.loop.call_soon_threadsafe(cancel)
    try:
        result = future.result()
        if escaped:
            raise escaped[0]
        return result
    except concurrent.futures.CancelledError:
        if ctx.cancelled:
            raise Cancelled(ctx.cancel_reason) from None
        raise
    finally:
        ctx._on_cancel = None


def _awaitable_on_the_loop(method, waits):
    """``method``, but on the loop an awaitable: a finished Future, or for one that
    ``waits`` for the client a coroutine waiting in a thread (the loop serves on)."""
    @functools.wraps(method)
    def call(self, *args, **kwargs):
        # (current_thread() would leave a dummy Thread behind for each thread)
        if _loop_thread is None or _thread.get_ident() != _loop_thread.ident:
            return method(self, *args, **kwargs)
        if waits:
            waiting = _in_a_thread(functools.partial(method, self, *args, **kwargs))
            # For the warning "coroutine 'Context.elicit' was never awaited"
            waiting.__qualname__ = method.__qualname__
            return waiting
        done = _loop_thread.loop.create_future()
        done.set_result(method(self, *args, **kwargs))
        return done
    return call


async def _in_a_thread(call):
    import asyncio
    import concurrent.futures
    future, context = concurrent.futures.Future(), contextvars.copy_context()

    def work():
        # False: the coroutine stopped waiting (once running, cancel() is ignored)
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(context.run(call))
        except BaseException as e:
            future.set_exception(e)
    _start_thread(work)
    return await asyncio.wrap_future(future)


for _method, _waits in (("report_progress", False), ("log", False), ("request", True),
                        ("ask_together", True), ("sample", True), ("elicit", True),
                        ("list_roots", True)):
    setattr(Context, _method, _awaitable_on_the_loop(getattr(Context, _method), _waits))
# ctx.debug(data), ctx.info(data), ... ctx.emergency(data): log() at that level
for _level in LOG_LEVELS:
    setattr(Context, _level, functools.partialmethod(Context.log, _level))
del _method, _waits, _level


# --- forwarded logging -----------------------------------------------------
# Server(forward_logging=...): records logged while a handler runs also go to its
# client, through one wrapper (of the factory ``make``) of the log record factory:
# no handler is added.
_forwarding = types.SimpleNamespace(servers=0, installed=False, make=None, format=None)


def _forward_logging(server, serving):
    """A server starts (``serving``) or stops serving: install or remove the wrapper."""
    if not server.forward_logging:
        return
    import logging
    with _first_use:
        _forwarding.servers += 1 if serving else -1
        # Installed once: another library's wrapper around ours keeps it in the chain
        if serving and _forwarding.servers == 1 and not _forwarding.installed:
            _forwarding.make = logging.getLogRecordFactory()
            _forwarding.format = logging.Formatter().format
            logging.setLogRecordFactory(_forwarded_record)
            _forwarding.installed = True
        elif (not _forwarding.servers
                and logging.getLogRecordFactory() is _forwarded_record):
            logging.setLogRecordFactory(_forwarding.make)
            _forwarding.installed = False


def _mcp_level(levelno):
    """A logging level -> the MCP level at or below it (25: "notice")."""
    levels = ((50, "critical"), (40, "error"), (30, "warning"), (25, "notice"),
              (20, "info"))
    return next((level for lowest, level in levels if levelno >= lowest), "debug")


def _forwarded_record(*args, **kwargs):
    record = _forwarding.make(*args, **kwargs)
    ctx = getattr(_current, "ctx", None) or _serving_ctx.get()
    if ctx is None:
        return record
    wanted = ctx.server.forward_logging
    name = record.name
    if wanted and not name.startswith("mcp_min") and (
            wanted is True or name == wanted or name.startswith(wanted + ".")):
        try:
            ctx.log(_mcp_level(record.levelno), _forwarding.format(record), name)
        except Exception:
            pass
    return record


# ======================================================================================
# The eras: the method table, and what a 2026-07-28 request carries
# ======================================================================================

# In the handshake era (2024-11-05 to 2025-11-25) a client opens a session with
# initialize; in the stateless era (2026-07-28) each request carries its envelope in
# params._meta: the protocol version, the client's capabilities. A handler needing the
# client's input answers "input_required": the questions, and a requestState (signed:
# never altered, nor moved to another call) the client sends back with the answers.

HANDSHAKE = "handshake"
STATELESS = "stateless"


class Method:
    """A row of METHODS: ``params`` (name -> its JSON types, "?" after an optional
    name; for ``explain``), its ``era`` (None: both), the server capability it
    ``needs``; whether it may come ``before_initialize``, runs user code (``threaded``:
    on the pool), has a result a client may cache, and may ask the client (``asks``)."""
    __slots__ = ("params", "era", "needs", "before_initialize", "threaded",
                 "cacheable", "asks")

    def __init__(self, params=(), era=None, needs=None, before_initialize=False,
                 threaded=False, cacheable=False, asks=False):
        self.params, self.era, self.needs = dict(params), era, needs
        self.before_initialize, self.threaded = before_initialize, threaded
        self.cacheable, self.asks = cacheable, asks

    def but(self, **changes):
        """A copy of this row, with ``changes``."""
        fields = {name: getattr(self, name) for name in self.__slots__}
        return Method(**{**fields, **changes})


_PAGE = {"cursor?": "string null"}
#: Every method of both eras, both ways, and the rules of each. A method a server adds
#: to its handlers that is not here gets CUSTOM_METHOD's: both eras, on the pool.
METHODS = {
    # -- a client's requests to the server --
    "initialize": Method({"protocolVersion": "string", "capabilities": "object",
                          "clientInfo": "object"}, HANDSHAKE, before_initialize=True),
    "ping": Method({}, HANDSHAKE, before_initialize=True),
    "server/discover": Method({}, STATELESS, cacheable=True),
    "tools/list": Method(_PAGE, needs="tools", cacheable=True),
    "tools/call": Method({"name": "string", "arguments?": "object"}, needs="tools",
                         threaded=True, asks=True),
    "resources/list": Method(_PAGE, needs="resources", cacheable=True),
    "resources/templates/list": Method(_PAGE, needs="resources", cacheable=True),
    "resources/read": Method({"uri": "string"}, needs="resources", threaded=True,
                             cacheable=True, asks=True),
    "resources/subscribe": Method({"uri": "string"}, HANDSHAKE, needs="resources"),
    "resources/unsubscribe": Method({"uri": "string"}, HANDSHAKE, needs="resources"),
    "subscriptions/listen": Method({"notifications": "object"}, STATELESS),
    "prompts/list": Method(_PAGE, needs="prompts", cacheable=True),
    "prompts/get": Method({"name": "string", "arguments?": "object"},
                          needs="prompts", threaded=True, asks=True),
    "completion/complete": Method({"ref": "object", "argument": "object",
                                   "context?": "object"}, needs="completions",
                                  threaded=True),
    "logging/setLevel": Method({"level": "string"}, HANDSHAKE, needs="logging"),
    # -- the server's requests to a client (in 2026-07-28, its questions) --
    "sampling/createMessage": Method({"messages": "array", "maxTokens": "integer",
                                      "systemPrompt?": "string",
                                      "temperature?": "number"}),
    "elicitation/create": Method({"message": "string", "requestedSchema?": "object",
                                  "mode?": "string", "url?": "string"}),
    "roots/list": Method({}),
    # -- notifications, either way --
    "notifications/initialized": Method({}, HANDSHAKE),
    "notifications/cancelled": Method({"requestId": "string integer",
                                       "reason?": "string"}),
    "notifications/progress": Method({"progressToken": "string number",
                                      "progress": "number", "total?": "number",
                                      "message?": "string"}),
    "notifications/message": Method({"level": "string", "data": "any",
                                     "logger?": "string"}),
    "notifications/resources/updated": Method({"uri": "string"}),
    "notifications/resources/list_changed": Method({}),
    "notifications/tools/list_changed": Method({}),
    "notifications/prompts/list_changed": Method({}),
    "notifications/roots/list_changed": Method({}),
    "notifications/elicitation/complete": Method({"elicitationId": "string"}),
    "notifications/subscriptions/acknowledged": Method({"notifications": "object"},
                                                       STATELESS),
}
CUSTOM_METHOD = Method(threaded=True)

PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL_KEY = "io.modelcontextprotocol/logLevel"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_ID_KEY = "io.modelcontextprotocol/subscriptionId"

#: A handler's result meaning "no response": subscriptions/listen answers with a stream.
NO_RESPONSE = object()


class Envelope:
    """What a 2026-07-28 request says about its client in ``params._meta``: -32602 for
    a malformed _meta, -32022 for a version this server does not serve."""
    __slots__ = ("meta", "version", "client_capabilities", "client_info",
                 "log_level")

    def __init__(self, meta):
        if not isinstance(meta, dict):
            raise JSONRPCError(INVALID_PARAMS, "Invalid params: this method is part of "
                               "protocol 2026-07-28, whose requests carry params._meta "
                               f'with "{PROTOCOL_VERSION_KEY}" and '
                               f'"{CLIENT_CAPABILITIES_KEY}"')
        for key, kind, what in (
                (PROTOCOL_VERSION_KEY, str, "a string"),
                (CLIENT_CAPABILITIES_KEY, dict, "an object; {} for none")):
            if not isinstance(meta.get(key), kind):
                raise JSONRPCError(INVALID_PARAMS, "Invalid params: params._meta needs "
                                                   f'"{key}" ({what})')
        version = meta[PROTOCOL_VERSION_KEY]
        if version not in STATELESS_PROTOCOL_VERSIONS:
            raise JSONRPCError(
                UNSUPPORTED_VERSION,
                f"Unsupported protocol version {_short_repr(version)}: requests are "
                f"served at {', '.join(STATELESS_PROTOCOL_VERSIONS)}; "
                f"{', '.join(PROTOCOL_VERSIONS)} after initialize",
                {"supported": list(STATELESS_PROTOCOL_VERSIONS), "requested": version})
        level = meta.get(LOG_LEVEL_KEY)
        if LOG_LEVEL_KEY in meta and level not in LOG_LEVELS:
            raise JSONRPCError(INVALID_PARAMS, f"Invalid params: log level {level!r} "
                               f"in params._meta; use one of {', '.join(LOG_LEVELS)}")
        self.meta, self.version, self.log_level = meta, version, level
        self.client_capabilities = meta[CLIENT_CAPABILITIES_KEY]
        self.client_info = {}
        if isinstance(meta.get(CLIENT_INFO_KEY), dict):
            self.client_info = meta[CLIENT_INFO_KEY]


def is_stateless(method, meta):
    """Is a request of the stateless era? An envelope key says so, or its method."""
    if method == "initialize":
        return False
    if METHODS.get(method, CUSTOM_METHOD).era == STATELESS:
        return True
    return type(meta) is dict and (PROTOCOL_VERSION_KEY in meta
                                   or CLIENT_CAPABILITIES_KEY in meta)


def _digest(value):
    """A short, stable fingerprint of a JSON value."""
    import hashlib
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"),
                           ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _b64url(data):
    return b64encode(data).rstrip("=").replace("+", "-").replace("/", "_")


class RequestStateSigner:
    """Seals and opens requestState: JSON, base64url, and an HMAC-SHA256 over it. One
    over ``max_bytes`` is not even hashed."""

    def __init__(self, key, ttl, max_bytes):
        if key is None:
            key = os.environ.get("MCP_MIN_STATE_KEY")
        if isinstance(key, str):
            key = key.encode("utf-8")
        self.shared = bool(key)
        self.key = key or os.urandom(32)
        self.ttl, self.max_bytes = ttl, max_bytes

    def signature(self, body):
        import hashlib
        import hmac
        digest = hmac.new(self.key, body.encode("ascii"), hashlib.sha256).digest()
        return _b64url(digest)

    def seal(self, payload):
        body = _b64url(encode_message(dict(payload, exp=int(time.time() + self.ttl))))
        token = f"v1.{body}.{self.signature(body)}"
        # (its retry would be refused)
        if len(token) > self.max_bytes:
            raise JSONRPCError(INVALID_PARAMS, "Invalid params: the requestState "
                               f"carrying the answers so far would be {len(token)} "
                               f"bytes, over the limit of {self.max_bytes} "
                               "(Server(max_state_bytes=...))")
        return token

    def open(self, token):
        """The payload of a state this server sealed, or -32602 saying why not."""
        import hmac
        if len(token) > self.max_bytes:
            raise _invalid_state(f"it is {len(token)} characters long, over the limit "
                                 f"of {self.max_bytes} (Server(max_state_bytes=...))")
        version, _, rest = token.partition(".")
        body, _, mac = rest.partition(".")
        payload = None
        try:
            # compared as text: a signature written any other way is refused
            if version == "v1" and hmac.compare_digest(
                    mac.encode("ascii"), self.signature(body).encode("ascii")):
                body = body.replace("-", "+").replace("_", "/")
                payload = json.loads(b64decode(body + "=" * (-len(body) % 4)))
        # (binascii.Error and UnicodeEncodeError are ValueErrors)
        except ValueError:
            pass
        if not isinstance(payload, dict):
            raise _invalid_state("it was not issued by this server, or it was altered")
        if not isinstance(payload.get("exp"), int) or payload["exp"] < time.time():
            raise _invalid_state("it has expired; send the request again without it")
        return payload


def _invalid_state(why):
    return JSONRPCError(INVALID_PARAMS, f"Invalid params: requestState rejected: {why}",
                        {"reason": "invalid_request_state"})


def _input_responses(params):
    """A retry's inputResponses: an object, or None (-32602 for anything else)."""
    responses = params.get("inputResponses")
    if responses is not None and not isinstance(responses, dict):
        raise JSONRPCError(INVALID_PARAMS,
                           "Invalid params: inputResponses must be an object")
    return responses


# The questions a server asks a client: the client capability each needs, and what its
# answer must hold (a field, of a type).
_QUESTIONS = {"elicitation/create": ("elicitation", "action", str),
              "sampling/createMessage": ("sampling", "content", (dict, list)),
              "roots/list": ("roots", "roots", list)}


def _check_answer(key, method, answer):
    """An answer must be a result of the question's method: inputResponses[key]
    (2026-07-28), or (``key`` None) the client's response."""
    _, field, kind = _QUESTIONS.get(method, (None, None, None))
    answered = ("The client's answer" if key is None
                else f"Invalid params: inputResponses.{key}")
    if not isinstance(answer, dict):
        raise InvalidAnswer(f"{answered} is not a result of {method} (a result is an "
                            "object)")
    if field and not isinstance(answer.get(field), kind):
        raise InvalidAnswer(f"{answered} is not a result of {method} (it needs "
                            f"{field!r})")
    if (method == "elicitation/create"
            and answer["action"] not in ("accept", "decline", "cancel")):
        raise InvalidAnswer(f"{answered} has the action {_preview(answer['action'])}: "
                            'it must be "accept", "decline" or "cancel"')
    return answer


# ======================================================================================
# Scheduling: the worker pool
# ======================================================================================

class WorkerPool:
    """At most ``max_workers`` threads, each started when a call finds none idle, and
    ``max_queue`` calls waiting; past that ``submit`` refuses at once: the thread
    reading requests never waits for the pool."""

    def __init__(self, max_workers, max_queue):
        self.max_workers = max_workers
        self.limit = max_workers + max_queue
        self.jobs = SimpleQueue()
        self.lock = threading.Lock()
        # Threads started; calls queued or running
        self.threads = self.outstanding = 0

    def submit(self, fn, *args):
        """Run ``fn(*args)`` on a worker; False, with nothing queued, if it is full."""
        with self.lock:
            if self.outstanding >= self.limit:
                return False
            self.outstanding += 1
            start = self.outstanding > self.threads and self.threads < self.max_workers
            if start:
                self.threads += 1
        if start:
            try:
                _start_thread(self._work)
            except RuntimeError:
                # Out of threads: the ones running take the call when they are done;
                # with none at all, it is refused, as when the pool is full.
                with self.lock:
                    self.threads -= 1
                    if not self.threads:
                        self.outstanding -= 1
                        return False
                log.error("cannot start a worker thread (%d running)", self.threads)
        self.jobs.put((fn, args))
        return True

    def _work(self):
        while True:
            fn, args = self.jobs.get()
            try:
                fn(*args)
            except BaseException as e:
                _log_failure("a worker job", e)
            # Don't keep the last call's data alive while idle.
            fn = args = None
            with self.lock:
                self.outstanding -= 1


# Threads _start_thread started that do not run yet; whether exit waits for them
_threads_starting = 0
_waits_for_threads = False
_threads_lock = threading.Lock()


def _start_thread(fn, *args):
    """Run ``fn(*args)`` on a new thread (not threading.Thread, whose start() waits for
    it to run, and exit for it to end). Exit waits a moment for one still starting:
    Python frees its state as it finalizes, and it would crash the process."""
    global _threads_starting, _waits_for_threads
    with _threads_lock:
        _threads_starting += 1
        if not _waits_for_threads:
            _waits_for_threads = True
            import atexit
            atexit.register(_let_threads_start)
    try:
        _thread.start_new_thread(_begin_thread, (fn, args))
    except BaseException:
        with _threads_lock:
            _threads_starting -= 1
        raise


def _begin_thread(fn, args):
    global _threads_starting
    with _threads_lock:
        _threads_starting -= 1
    fn(*args)


def _let_threads_start():
    """At exit: wait (a second at most) until _start_thread's threads all run."""
    deadline = time.monotonic() + 1.0
    while _threads_starting and time.monotonic() < deadline:
        time.sleep(0.001)


# ======================================================================================
# The core: the Peer's dispatch, and the Session that serves one client
# ======================================================================================

class _Pending:
    """A request we sent, waiting for its response."""
    __slots__ = ("done", "result", "error", "owner")

    def __init__(self, owner):
        self.done = threading.Event()
        self.result = self.error = None
        self.owner = owner

    def resolve(self, result=None, error=None):
        self.result, self.error = result, error
        self.done.set()


class Peer:
    """One end of a JSON-RPC connection, for Session and Client: dispatch hands each
    message to a hook by its kind; request sends a request and waits for its response.
    ``stream`` takes what belongs to no request."""

    # trace: a callable("in" or "out", raw bytes) that sees each frame; closed: the
    # connection is gone; input_ended: no response can arrive any more
    trace = None
    closed = input_ended = False

    def __init__(self, stream=None):
        self.stream = stream
        # The id of each request we sent that waits for its response -> _Pending
        self.pending = {}
        self.next_id = count(1).__next__

    # -- reading -----------------------------------------------------------------------
    def read_loop(self, rfile, max_line_bytes):
        """Act on each line until the input ends or the connection closes. A line ends
        at b"\\n" only (JSON strings may hold U+2028 raw)."""
        self.max_line_bytes = max_line_bytes
        readline = rfile.readline
        # room for the longest line and its CR LF
        while line := readline(max_line_bytes + 2):
            if len(line) > max_line_bytes and line.rstrip(b"\r\n")[max_line_bytes:]:
                self.handle_too_long(read_past(readline, line, max_line_bytes))
            elif not line.isspace():
                if self.trace:
                    self.trace("in", line)
                if len(line) > 1 << 20:
                    _keep_big_blocks_apart()
                try:
                    message = decode_message(line)
                except JSONRPCError as e:
                    self.handle_unparsable(line, e)
                else:
                    self.dispatch(message)
            if self.closed:
                break

    def dispatch(self, message, stream=None):
        """Act on one decoded message; ``stream`` (this peer's own by default) takes the
        messages about it and its response."""
        stream = stream or self.stream
        if isinstance(message, list):
            return self.handle_batch(message, stream)
        try:
            kind = classify(message)
        except JSONRPCError as e:
            return self.handle_invalid(e, stream)
        if kind == "request":
            return self.handle_request(message, stream)
        if kind == "notification":
            self.handle_notification(message)
        else:
            self.handle_response(message)
        stream.respond(None)

    def handle_message(self, message, stream=None):
        """dispatch's former name, kept for code that calls it so."""
        return self.dispatch(message, stream)

    def handle_request(self, message, stream):
        """Hook: respond to a request (through ``stream.respond``)."""
        stream.respond(error_frame(message["id"], METHOD_NOT_FOUND,
                                   f"Method not found: {message['method']}"))

    def handle_notification(self, message):
        """Hook: act on a notification (never answered)."""

    def handle_response(self, message):
        rid = message.get("id")
        error = None
        if "error" in message:
            error = message["error"]
            if not isinstance(error, dict):
                error = {"message": str(error)}
            error = JSONRPCError(error.get("code", INTERNAL_ERROR),
                                 str(error.get("message", "")), error.get("data"))
        if not self._settle(rid, message.get("result"), error):
            log.debug("ignored a response to no pending request: id %.200r", rid)

    def handle_batch(self, items, stream):
        """Hook: a JSON array of messages (only protocol 2025-03-26 has them)."""
        stream.respond(error_frame(None, INVALID_REQUEST, "Invalid Request: batches "
                                   "are not supported; send one message per line"))

    def dispatch_batch(self, items, stream):
        """Act on each member of a batch as if it came alone; their responses go back
        through ``stream`` as one array (Batch)."""
        if not items:
            return stream.respond(error_frame(None, INVALID_REQUEST,
                                              "Invalid Request: empty batch"))
        batch = Batch(stream, len(items))
        for item in items:
            if isinstance(item, list):
                batch.respond(error_frame(None, INVALID_REQUEST,
                                          "Invalid Request: a batch inside a batch"))
            else:
                self.dispatch(item, batch)

    def handle_invalid(self, error, stream):
        """A message classify refused: a request gets ``error`` as its response; a
        notification or response is logged, never answered."""
        kind, rid = error.data.get("kind"), error.data.get("id")
        # No method, and the id of a request of ours: a botched response (no result).
        if kind is None and rid in self.pending:
            kind = "response"
        if kind not in ("notification", "response"):
            return stream.respond(error_frame(rid, error.code, error.message))
        log.warning("ignored an invalid %s: %s", kind, _escaped(error.message, 500))
        if kind == "response":
            self.fail_response(rid, error.code, error.message)
        stream.respond(None)

    def handle_unparsable(self, line, error):
        """Hook: a line that is not JSON; answered with a parse error."""
        self.send_frame(error_frame(None, error.code, error.message))

    def handle_too_long(self, line):
        if self.trace:
            self.trace("in", line.head + b"..." + line.tail)
        text = (f"Message too large: {line.size} bytes is over the limit of "
                f"{self.max_line_bytes} bytes per line; it was skipped")
        kind, rid = line.kind(), line.request_id()
        if kind == "request":
            return self.send_frame(error_frame(rid, INVALID_REQUEST, text))
        log.warning("%s (an over-long %s, not answered)", text, kind)
        if kind == "response":
            self.fail_response(rid, INVALID_REQUEST, text)

    def fail_response(self, rid, code, text):
        """A response we could not read fails its request (``rid``: a valid id or
        None; True would find id 1)."""
        self._settle(rid, error=JSONRPCError(code, text))

    # -- sending -----------------------------------------------------------------------
    def send_frame(self, frame):
        """Send encoded bytes on this peer's stream; False if they cannot go out."""
        return self.stream is not None and self.stream.send(frame)

    def send(self, message):
        return self.send_frame(encode_message(message))

    def notify(self, method, params=None):
        return self.stream is not None and self.stream.notify(method, params)

    def request(self, method, params=None, timeout=None, owner=None, request_id=None):
        """Send a request and wait for its result, or raise JSONRPCError, TimeoutError,
        Cancelled or ConnectionError. ``owner``: the Context asking (its stream)."""
        rid = request_id
        if rid is None:
            rid = self.next_id()
        message = {"jsonrpc": "2.0", "id": rid, "method": method}
        _add_optional(message, "params", params)
        # (before it is registered: it may raise TypeError)
        frame = encode_message(message)
        slot = self.pending[rid] = _Pending(owner)
        stream = self.stream
        if owner is not None:
            stream = owner.stream
            # cancelled just before it was registered
            if owner.cancelled:
                self.pending.pop(rid, None)
                raise Cancelled("the request that made this one was cancelled")
        # After the end of input, no response could ever arrive.
        if self.input_ended or stream is None or not stream.send(frame):
            self.pending.pop(rid, None)
            raise ConnectionError("the connection is closed")
        # Still pending after the timeout (else the response won the race and is being
        # filed now): tell the other side, unless it is initialize (the spec forbids).
        if not slot.done.wait(timeout) and self.pending.pop(rid, None) is not None:
            if method != "initialize":
                stream.notify("notifications/cancelled", {
                    "requestId": rid, "reason": f"no response within {timeout} s"})
            raise TimeoutError(f"{method}: no response within {timeout} s")
        slot.done.wait()
        # (the other side's error, as a JSONRPCError)
        if slot.error is not None:
            raise slot.error
        return slot.result

    def _settle(self, rid, result=None, error=None):
        """File the outcome of our request ``rid``; False if it is not pending."""
        slot = self.pending.pop(rid, None)
        if slot is not None:
            slot.resolve(result, error)
        return slot is not None

    def cancel_pending(self, owner, reason):
        """Give up the requests an owner made, telling the other side."""
        for rid, slot in list(self.pending.items()):
            if slot.owner is owner and self.pending.pop(rid, None) is not None:
                stream = self.stream
                if owner is not None:
                    stream = owner.stream
                stream.notify("notifications/cancelled",
                              {"requestId": rid, "reason": reason})
                slot.resolve(error=Cancelled(reason))

    def fail_pending(self, error):
        """The input ended (``error`` says how): every request waiting fails with it."""
        self.input_ended = True
        for rid in list(self.pending):
            self._settle(rid, error=error)


def classify(message):
    """"request", "notification" or "response"; else -32600 saying what is wrong,
    ``data`` holding the "id" if readable, and the "kind" if clear."""
    if not isinstance(message, dict):
        raise JSONRPCError(INVALID_REQUEST,
                           "Invalid Request: a message must be a JSON object", {})
    rid = message.get("id")
    problem = None
    if "method" in message:
        kind = "notification"
        if "id" in message:
            kind = "request"
        if not isinstance(message["method"], str):
            problem = '"method" must be a string'
        elif not isinstance(message.get("params", {}), dict):
            problem = '"params" must be an object'
        elif kind == "request" and type(rid) is not int and type(rid) is not str:
            problem = ('"id" must be a string or an integer (not null, a boolean, '
                       'a float or an object)')
    else:
        kind = None
        if "result" in message or "error" in message:
            kind = "response"
        one_of_them = ("result" in message) != ("error" in message)
        # An error responding to a request whose id was unreadable has no id.
        id_fits = valid_id(rid) or ("error" in message and rid is None)
        if not one_of_them or not id_fits:
            problem = ('expected "method" (a request or notification), or "id" with '
                       'exactly one of "result" and "error" (a response)')
    if message.get("jsonrpc") != "2.0":
        problem = '"jsonrpc" must be "2.0"'
    if problem is None:
        return kind
    data = {"kind": kind}
    if valid_id(rid):
        data["id"] = rid
    raise JSONRPCError(INVALID_REQUEST, f"Invalid Request: {problem}", data)


def valid_id(value):
    """MCP request ids are strings or integers: never null, booleans or floats."""
    return type(value) is str or type(value) is int


class Session(Peer):
    """What the server knows of one client, and its requests in flight: a connection
    over stdio, a handshake-era session over HTTP (Mcp-Session-Id), or one 2026-07-28
    POST. Peer.dispatch hands it each message; a request goes on through
    handle_request, admit, run and response (the map at the top of this file)."""

    # Set by initialize and later requests; roots: the cached roots/list result
    version = roots = None
    initialized = False
    log_level = "info"
    roots_generation = 0
    # Why it can send no request to the client, if so
    no_requests = None
    # claim(ctx), if set: why a call may not start, or None (HttpEndpoint.claim)
    claim = None

    def __init__(self, server, stream=None, principal=None):
        super().__init__(stream)
        self.server = server
        # Who the transport says the client is: over HTTP, the auth hook's answer
        self.principal = principal
        self.client_info, self.client_capabilities = {}, {}
        # What initialize offered this client
        self.capabilities = {}
        self.subscriptions = set()
        # The requests running, by id -> Context; the open subscriptions/listen
        # requests, by id -> what each hears (_Honoured); both guarded by the lock,
        # which also orders a request's progress before its response
        self.running, self.listens = {}, {}
        self.lock = threading.Lock()

    def response(self, ctx):
        """Run the handler: its response, encoded (None for none)."""
        rid = ctx.request_id
        try:
            # cancelled while it waited for a thread
            if ctx.cancelled:
                raise Cancelled(ctx.cancel_reason)
            if ctx.stateless:
                result = self.server.run_stateless(ctx, ctx.handler)
            else:
                result = self.server.call_handler(ctx, ctx.handler)
            if result is NO_RESPONSE:
                return None
            return encode_message({"jsonrpc": "2.0", "id": rid, "result": result})
        except Cancelled as e:
            # (run sends no response at all if the client cancelled it)
            return error_frame(rid, INTERNAL_ERROR, f"Cancelled: {e}")
        except JSONRPCError as e:
            code = e.code
            # 2026-07-28 reserves -32020...-32099, and gives servers three codes of it.
            if ctx.stateless and -32099 <= code <= -32020 and code not in (
                    HEADER_MISMATCH, MISSING_CAPABILITY, UNSUPPORTED_VERSION):
                code = INTERNAL_ERROR
            return error_frame(rid, code, e.message, e.data)
        except CapabilityError as e:
            # the client's doing, not a fault of the server
            return error_frame(rid, INVALID_REQUEST, f"Invalid Request: {e}",
                               {"requiredCapabilities": e.required})
        except BaseException as e:
            # SystemExit and KeyboardInterrupt too: a handler never stops the server
            _log_failure(ctx.method, e)
            return error_frame(rid, INTERNAL_ERROR,
                               f"Internal error: {type(e).__name__}: {e}")

    def run(self, ctx):
        """Run one request (on a worker, or at once) and send its response."""
        _current.ctx = ctx
        try:
            frame = self.response(ctx)
        finally:
            _current.ctx = None
            if ctx._on_end is not None:
                ctx._on_end()
        with self.lock:
            ctx.done = True
            # cancelled by the client: no response
            if ctx.cancelled and not ctx.stopped:
                frame = None
        try:
            ctx.stream.respond(frame, ctx._with_response)
        finally:
            # In flight until sent: a shutdown waits for it
            with self.lock:
                if self.running.get(ctx.request_id) is ctx:
                    del self.running[ctx.request_id]

    def admit(self, message, stream, stateless=None):
        """The Context of a request, registered as running, if its era and METHODS
        allow it; else JSONRPCError saying why not, in the order the spec implies."""
        rid, method = message["id"], message["method"]
        params = message.get("params") or {}
        if method.startswith("notifications/"):
            raise JSONRPCError(INVALID_REQUEST, f"Invalid Request: {method} is a "
                                                "notification; send it without an id")
        if stateless is None:
            stateless = is_stateless(method, params.get("_meta"))
        era = HANDSHAKE
        envelope = None
        if stateless:
            era = STATELESS
            if isinstance(stream, Batch):
                raise JSONRPCError(INVALID_REQUEST, "Invalid Request: 2026-07-28 "
                                   "requests cannot be part of a batch")
            envelope = Envelope(params.get("_meta"))
        elif method == "initialize" and isinstance(stream, Batch):
            raise JSONRPCError(INVALID_REQUEST,
                               "initialize must not be part of a batch")
        rules = self.server.methods.get(method, CUSTOM_METHOD)
        handler = self.server.handlers.get(method)
        if handler is None or rules.era not in (None, era):
            removed = ""
            if handler is not None:
                removed = f" (not part of protocol {V2026_07})"
                if not stateless:
                    removed = f" (a method of protocol {V2026_07} only)"
            raise JSONRPCError(METHOD_NOT_FOUND, f"Method not found: {method}{removed}")
        if not stateless and self.version is None and not rules.before_initialize:
            raise JSONRPCError(INVALID_REQUEST, "Server not initialized: send "
                               f"initialize first (got {method} before initialize)")
        ctx = Context(self, rid, method, params, stream, envelope)
        ctx.rules, ctx.handler = rules, handler
        # A method of a capability the server does not offer does not exist for it.
        if rules.needs:
            declared = self.capabilities
            if stateless:
                declared = self.server.offered()
            if rules.needs not in declared:
                raise JSONRPCError(METHOD_NOT_FOUND, f"Method not found: {method} "
                                   f"(this server declares no {rules.needs} "
                                   "capability)")
        with self.lock:
            earlier = self.running.get(rid)
            # Answered, the id is free again; an open listen keeps it until cancelled.
            if rid in self.listens or (earlier is not None and not earlier.done):
                raise JSONRPCError(INVALID_REQUEST, f"Invalid Request: id {rid!r} is "
                                   "already in use by a request still in progress")
            self.running[rid] = ctx
        return ctx

    def handle_request(self, message, stream, stateless=None):
        """A request: admitted (or refused), then run at once, or on the pool if its
        method is ``threaded``. ``stateless``: the era, if HTTP's headers said it."""
        rid = message["id"]
        try:
            ctx = self.admit(message, stream, stateless)
        except JSONRPCError as e:
            return stream.respond(error_frame(rid, e.code, e.message, e.data))
        if not ctx.rules.threaded:
            return self.run(ctx)
        refused = None
        if self.claim is not None:
            refused = self.claim(ctx)
        if refused is None and self.server.schedule(self.run, ctx):
            return
        with self.lock:
            self.running.pop(rid, None)
        if ctx._on_end is not None:
            ctx._on_end()
        if refused is None:
            refused = (f"Server busy: {self.server.max_workers} calls running and "
                       f"{self.server.max_queue} waiting; try again later")
        stream.respond(error_frame(rid, _busy_code(ctx.stateless), refused))

    # -- the other messages ------------------------------------------------------------
    def handle_batch(self, items, stream):
        if self.version != V2025_03:
            version = self.version or "none (not initialized)"
            return stream.respond(error_frame(
                None, INVALID_REQUEST, "Invalid Request: batches are not part of "
                f"protocol version {version}; send one message at a time"))
        self.dispatch_batch(items, stream)

    def handle_notification(self, message):
        method = message["method"]
        handler = self.server.handlers.get(method)
        # an unknown notification is ignored
        if handler is None or not method.startswith("notifications/"):
            return
        params = message.get("params") or {}
        try:
            handler(Context(self, None, method, params), params)
        except Exception as e:
            _log_failure(f"the {method} handler", e)

    def cancel(self, request_id, reason=None, stopping=False):
        """Cancel a running request, or close its listen. ``stopping``: the server
        shuts down (the client still gets a response)."""
        if not valid_id(request_id):
            return
        with self.lock:
            if self.listens.pop(request_id, None) is not None:
                return
            ctx = self.running.get(request_id)
            if ctx is None or ctx.method == "initialize":
                return
            ctx.cancelled = True
            ctx.stopped = stopping
        why = f"request {request_id!r} was cancelled by the client"
        if stopping:
            why = reason
        self.cancel_pending(ctx, why)
        on_cancel = ctx._on_cancel
        if on_cancel is not None:
            on_cancel()

    def cancel_all(self, reason, stopping=False):
        """Cancel every request running (the session ends, the server shuts down)."""
        for request_id in list(self.running):
            self.cancel(request_id, reason, stopping)

    def log(self, level, data, logger=None):
        """Log to a handshake-era client, at or above its logging/setLevel level."""
        params = _log_params(level, data, logger, self.version and self.log_level)
        return params is not None and self.notify("notifications/message", params)

    # -- 2026-07-28 subscriptions: one table entry per open listen, no thread held -----
    def listen(self, request_id, honoured):
        # Acknowledged under the lock publish() takes: no change is missed after it
        honoured = _Honoured(honoured)
        with self.lock:
            self.listens[request_id] = honoured
            self.notify("notifications/subscriptions/acknowledged",
                        {"_meta": {SUBSCRIPTION_ID_KEY: request_id},
                         "notifications": honoured})

    def end_listens(self):
        """Shutting down: responses that end the open listens (clients listen anew)."""
        with self.lock:
            ended = list(self.listens)
            self.listens = {}
        info = {SERVER_INFO_KEY: self.server.server_info(V2026_07)}
        return [encode_message({"jsonrpc": "2.0", "id": rid, "result": {
            "resultType": "complete", "_meta": {SUBSCRIPTION_ID_KEY: rid, **info}}})
            for rid in ended]

    def publish(self, method, wanted, params=None):
        """Send a notification on every open listen ``wanted`` accepts, tagged with its
        id; under the lock: none follows a cancellation."""
        for request_id, honoured in list(self.listens.items()):
            if not wanted(honoured):
                continue
            tagged = dict(params or {}, _meta={SUBSCRIPTION_ID_KEY: request_id})
            with self.lock:
                if self.listens.get(request_id) is honoured:
                    self.notify(method, tagged)
# ======================================================================================
# stdio: a loop reading lines, a pool running calls, a lock around the writer
# ======================================================================================

# Server.run() serves stdin and stdout: a Session whose stream is a Writer; serve_lines
# reads lines on a thread of its own and hands each message to the session.
#
# One stray byte on stdout (a print(), a C library's warning, a child process's output)
# corrupts the stream, and a child that reads stdin could swallow protocol bytes. So the
# protocol gets private copies of fds 0 and 1; fd 1 goes to stderr, fd 0 to /dev/null.

def claim_stdio():
    """Take stdin and stdout for the protocol; return private (read_fd, write_fd)."""
    global _tune_allocator
    _tune_allocator = True
    # (a duplicate is not inherited by child processes)
    read_fd = os.dup(0)
    write_fd = os.dup(1)
    os.dup2(2, 1)
    # What print() buffered goes to stderr too
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    # print() goes to stderr; input() reads the end of file, not protocol bytes
    sys.stdout = sys.stderr
    sys.stdin = open(os.devnull, encoding="utf-8")
    # Windows must not alter newlines
    if sys.platform == "win32":
        import msvcrt
        for fd in (read_fd, write_fd):
            msvcrt.setmode(fd, os.O_BINARY)
    return read_fd, write_fd


def serve_lines(session, rfile):
    """Serve a stdio connection until its input ends, then ``drain`` it. A thread reads
    while this one waits: a stop signal (to the main thread) interrupts a wait."""
    # A bare lock, not an Event: a signal's exception raised inside Event.wait can
    # leave its condition's lock half released ("release unlocked lock")
    reading = _thread.allocate_lock()
    reading.acquire()
    ended = []
    failed = []

    def read():
        try:
            session.read_loop(rfile, session.server.max_line_bytes)
        except BaseException as e:
            failed.append(e)
        ended.append(True)
        reading.release()
    try:
        _start_thread(read)
        # (a timeout, for Ctrl+C on Windows)
        while not reading.acquire(timeout=0.5):
            pass
        if failed:
            raise failed[0]
    finally:
        if not ended:
            # A stop signal: no request is read after it, and the open listens end
            session.closed = True
            for frame in session.end_listens():
                session.send_frame(frame)
        drain(session)


def drain(session):
    """End of input: give the calls in flight ``grace_period`` seconds (a stop signal
    ends it), then cancel those left and give them ``cancel_timeout`` more."""
    session.fail_pending(ConnectionError("the client closed the connection"))
    server = session.server
    writer = session.stream
    signals = _StopSignals.of(writer.write_fd)
    writer.deadline = _wait_for_calls(server.grace_period, signals,
                                      lambda: session.running and not writer.closed)
    # (A call whose handler is done is writing its response: Writer.close waits.)
    unfinished = [ctx for ctx in list(session.running.values()) if not ctx.done]
    if not unfinished:
        return
    for ctx in unfinished:
        session.cancel(ctx.request_id, "the server is shutting down", stopping=True)
    writer.deadline = _wait_for_calls(server.cancel_timeout, signals, lambda: any(
        ctx.request_id in session.running for ctx in unfinished))
    if session.running:
        log.warning("exiting with %d call(s) unfinished: still running %.1f s "
                    "after the %.1f s grace period ended and they were cancelled",
                    len(session.running), server.cancel_timeout, server.grace_period)
    else:
        log.warning("%d call(s) still running after the %.1f s grace period were "
                    "cancelled", len(unfinished), server.grace_period)


def _wait_for_calls(seconds, signals, waiting):
    """Wait while ``waiting()``, ``seconds`` at most, or until a stop signal; returns
    the deadline."""
    deadline = time.monotonic() + seconds
    count = signals.count
    while waiting() and time.monotonic() < deadline and signals.count == count:
        time.sleep(0.01)
    return deadline


def _stdout_gone(session):
    """Writing failed: the client is gone; a signal ends run()'s wait for the reader."""
    session.closed = True
    if (_StopSignals.of(session.stream.write_fd).saved
            and session in session.server.sessions
            and _thread.get_ident() != _MAIN_THREAD):
        _interrupt_main()


# --- tracing ---------------------------------------------------------------

def describe_frame(message, responds_to=None):
    """A short label: 'request 3 tools/call', 'error 3 -32601' (+ ``responds_to``)."""
    if isinstance(message, list):
        return f"batch of {len(message)}"
    if not isinstance(message, dict):
        return "not a message"
    if "method" in message and "id" not in message:
        return f"notification {message['method']}"
    rid = "(no id)"
    if "id" in message:
        rid = json.dumps(message["id"])
    if "method" in message:
        return f"request {rid} {message['method']}"
    label = f"response {rid}"
    if isinstance(message.get("error"), dict):
        label = f"error {rid} {message['error'].get('code')}"
    if responds_to:
        label += f" {responds_to}"
    result = message.get("result")
    if isinstance(result, dict) and result.get("isError"):
        return label + " (isError)"
    return label


def _shows_colour(stream):
    """Does ``stream`` show ANSI colours? A terminal, unless NO_COLOR is set; on Windows
    only a terminal known to read them."""
    isatty = getattr(stream, "isatty", None)
    if not isatty or not isatty() or os.environ.get("NO_COLOR"):
        return False
    return sys.platform != "win32" or any(
        name in os.environ for name in ("WT_SESSION", "TERM", "ANSICON"))


class FramePrinter:
    """A Peer's trace: one line a frame, with who sent it (``labels`` maps "in" and
    "out" to, say, "C->S"), what it is and its bytes; coloured on a terminal."""

    _COLOURS = {"request": "36", "notification": "33", "response": "32", "error": "31"}

    def __init__(self, labels, stream=None, colour=None):
        self.labels = labels
        self.stream = stream or sys.stdout
        self.colour = colour
        if colour is None:
            self.colour = _shows_colour(self.stream)
        self.lock = threading.Lock()
        # (direction, id) of a request -> its method
        self.methods = {}

    def __call__(self, direction, raw):
        body = raw.decode("utf-8", "replace").rstrip("\r\n")
        with self.lock:
            try:
                message = json.loads(raw)
            except (ValueError, RecursionError):
                label = "blank"
                if body.strip():
                    label = "unparsable"
            else:
                label = describe_frame(message, self.responds_to(direction, message))
                label = _escaped(label, 200)
            if self.colour:
                code = self._COLOURS.get(label.split(" ")[0], "35")
                label = f"\x1b[{code}m{label}\x1b[0m"
            _print_text(f"{self.labels[direction]} {label}: {_escaped(body)}",
                        self.stream)

    def responds_to(self, direction, message):
        """The method a response responds to; a request is noted for its response."""
        if not isinstance(message, dict) or not valid_id(message.get("id")):
            return None
        if "method" not in message:
            # The request it responds to came the other way.
            asked = {"in": "out", "out": "in"}[direction]
            return self.methods.pop((asked, message["id"]), None)
        self.methods[direction, message["id"]] = message["method"]
        # (some requests are never answered)
        if len(self.methods) > 4096:
            del self.methods[next(iter(self.methods))]
        return None


def _print_text(text, file=None):
    """print(), escaping (as \\udcff) what the stream cannot encode."""
    file = file or sys.stdout
    try:
        print(text, file=file, flush=True)
    except UnicodeEncodeError:
        encoding = file.encoding or "utf-8"
        escaped = text.encode(encoding, "backslashreplace").decode(encoding)
        print(escaped, file=file, flush=True)
# ======================================================================================
# Streamable HTTP: the same sessions and handlers behind a WSGI application
# ======================================================================================

# Every client message is one POST to one endpoint (/mcp), whose response is one JSON
# body, or an SSE stream when something comes before the response. As over stdio, the
# message goes to a Session with the POST's HttpExchange as its stream. A 2026-07-28
# request gets a session of its own, so any worker process can serve it; a
# handshake-era client keeps one (Mcp-Session-Id) in this process.

#: The status lines mcp_min responds with, by code.
HTTP_STATUS = {int(line[:3]): line for line in (
    "200 OK", "202 Accepted", "204 No Content", "400 Bad Request", "401 Unauthorized",
    "403 Forbidden", "404 Not Found", "405 Method Not Allowed", "406 Not Acceptable",
    "408 Request Timeout", "409 Conflict", "411 Length Required",
    "413 Content Too Large", "415 Unsupported Media Type", "421 Misdirected Request",
    "429 Too Many Requests", "500 Internal Server Error", "503 Service Unavailable")}
#: 2026-07-28 errors that are the client's fault get 400, an unknown method 404 (both
#: with the JSON-RPC error as the body); other errors get 200, as results do.
_STATELESS_ERROR_STATUS = {
    **dict.fromkeys((PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS, HEADER_MISMATCH,
                     MISSING_CAPABILITY, UNSUPPORTED_VERSION), 400),
    METHOD_NOT_FOUND: 404}


class HttpSession(Session):
    """A handshake-era Session over HTTP: frames about a request go in its response,
    the others (list changes, resource updates) in the GET stream, if one is open."""

    # A kept session's Mcp-Session-Id, and its principal's identity (under auth)
    id = owner = None

    def request(self, method, params=None, timeout=None, owner=None, request_id=None):
        """A request to the client travels in the response to the request that asks it:
        not if the client accepts JSON alone there."""
        if owner is not None and not owner.stream.events:
            raise CapabilityError(
                f"the client accepts only application/json in response to this "
                f"request, so {method} cannot be sent to it (requests to the client "
                "travel in a text/event-stream)")
        return super().request(method, params, timeout, owner, request_id)

    def run(self, ctx):
        try:
            super().run(ctx)
        finally:
            self.last_used = time.monotonic()

    def idle(self, now):
        """Seconds since it was last used: 0 while it has a stream open or calls."""
        if self.stream is not None or self.running:
            return 0
        return now - self.last_used

    def end(self):
        """DELETE, eviction or expiry: stop its calls, close its stream."""
        self.fail_pending(ConnectionError("the session ended"))
        self.cancel_all("the session ended")
        if self.stream is not None:
            self.stream.close()


class _HttpRefusal(Exception):
    """An error status, with a JSON-RPC error (the exception's text) as the body."""

    def __init__(self, status, message, request_id=None, code=INVALID_REQUEST,
                 headers=()):
        super().__init__(message)
        self.status = status
        self.request_id = request_id
        self.code = code
        self.headers = headers


class HttpEndpoint:
    """What the HTTP requests of a server share: the sessions it keeps, the caps on
    what stays open, the bytes of bodies taken in (made by ``Server.start_http``)."""

    def __init__(self, server):
        self.server = server
        self.sessions = {}
        self.lock = threading.Lock()
        # The DNS names a Host may give: allowed_hosts, and public_url's host
        self.host_names = set(server.allowed_hosts or ())
        if server.public_url is not None:
            public_host = _PUBLIC_URL.fullmatch(server.public_url)[2]
            self.host_names.add(_host_parts(public_host)[0])
        # Bytes of bodies reserved (max_inflight_bytes); a principal's identity -> the
        # responses and calls it holds open; the listen and GET streams open
        self.inflight, self.held, self.streams = 0, {}, 0
        # MCP_MIN_TRACE=1, in an engine's worker too (serve_http sets run's trace)
        self.trace = None
        if os.environ.get("MCP_MIN_TRACE", "") not in ("", "0"):
            self.trace = FramePrinter({"in": "C->S", "out": "S->C"}, sys.stderr)

    # -- the caps on what stays open --------------------------------------------------
    def hold(self, stream, is_stream):
        """Count a response that holds a thread while open, a listen or GET stream
        (``is_stream``) or a call (a Context: claim), against the caps on them."""
        server = self.server
        owner = None
        if server.auth is not None:
            owner = self.identity(stream.principal)
        if owner is None and not is_stream:
            return
        code = _busy_code(stream.stateless)
        with self.lock:
            if is_stream and self.streams >= server.max_streams:
                # Retry-After is a guess: streams end when their clients leave
                raise _HttpRefusal(503, f"Service Unavailable: {self.streams} streams "
                                        "are open, the most this server keeps "
                                        "(max_streams); try again later",
                                   stream.request_id, code, [("Retry-After", "10")])
            held = self.held.get(owner, 0)
            if owner is not None and held >= server.max_streams_per_principal:
                raise _HttpRefusal(429, f"Too Many Requests: you have {held} streams "
                                        "and calls open, the most one client may "
                                        "(max_streams_per_principal); end one first",
                                   stream.request_id, code)
            if owner is not None:
                self.held[owner] = held + 1
            self.streams += is_stream
        stream._holder = (owner, is_stream)

    def let_go(self, stream):
        """The end of what hold() counted (once, however often it is called)."""
        with self.lock:
            holder, stream._holder = stream._holder, None
            if holder is None:
                return
            owner, is_stream = holder
            self.streams -= is_stream
            if owner is not None:
                self.held[owner] -= 1
                if not self.held[owner]:
                    del self.held[owner]

    def claim(self, ctx):
        """Count a call against its principal's share until its handler returns, in its
        request's place (the first of a batch) or its own; why it is refused, or None"""
        stream = ctx.stream
        if isinstance(stream, Batch):
            stream = stream.stream
        with self.lock:
            ctx._holder, stream._holder = stream._holder, None
        if ctx._holder is None:
            try:
                self.hold(ctx, False)
            except _HttpRefusal as refusal:
                return str(refusal)
        ctx._on_end = functools.partial(self.let_go, ctx)
        return None

    # -- handshake-era sessions -------------------------------------------------------
    def open_session(self, session, request_id=None):
        """Keep a new session; returns its id. Sessions idle past ``session_idle`` end
        first; then an owner at ``max_sessions_per_principal`` (or any, at
        ``max_sessions``) gives up its longest idle, or is refused (503)."""
        import secrets
        server = self.server
        owner = None
        if server.auth is not None:
            owner = self.identity(session.principal)
        now = time.monotonic()
        limit = server.session_idle
        with self.lock:
            for old in [s for s in self.sessions.values() if s.idle(now) > limit]:
                self.sessions.pop(old.id).end()
            own = [s for s in self.sessions.values() if s.owner == owner]
            while own and (len(self.sessions) >= server.max_sessions or (
                    owner is not None
                    and len(own) >= server.max_sessions_per_principal)):
                oldest = max(own, key=lambda s: (s.idle(now), -s.last_used))
                own.remove(oldest)
                self.sessions.pop(oldest.id).end()
            if len(self.sessions) >= server.max_sessions:
                soonest = min(limit - s.idle(now) for s in self.sessions.values())
                retry = [("Retry-After", str(max(1, int(soonest))))]
                raise _HttpRefusal(503, "Service Unavailable: this server keeps at "
                                        f"most {server.max_sessions} sessions "
                                        "(max_sessions), all of other clients; try "
                                        "again later", request_id, SERVER_BUSY, retry)
            session.id = secrets.token_urlsafe(24)
            session.owner = owner
            self.sessions[session.id] = session
        return session.id

    def find_session(self, environ, principal):
        """The session a request names, if its principal (or its identity) opened it."""
        session_id = environ.get("HTTP_MCP_SESSION_ID")
        if not session_id:
            raise _HttpRefusal(400, "Bad Request: Mcp-Session-Id header required (send "
                                    "initialize first)")
        with self.lock:
            session = self.sessions.get(session_id)
        if (session is None
                or (session.principal != principal
                    and session.owner != self.identity(principal))
                or session.idle(time.monotonic()) > self.server.session_idle):
            raise _HttpRefusal(404, "Session not found: initialize again")
        version = environ.get("HTTP_MCP_PROTOCOL_VERSION")
        if version is not None and version != session.version:
            raise _HttpRefusal(400, f"Bad Request: MCP-Protocol-Version "
                                    f"{_short_repr(version)} is not this session's "
                                    f"({session.version})")
        return session

    @staticmethod
    def identity(principal):
        """What tells a principal from another (_principal_id), as a dict key."""
        try:
            return json.dumps(_principal_id(principal), sort_keys=True)
        except TypeError as e:
            log.error("%s", _escaped(e, 500))
            raise _HttpRefusal(500, "Internal Server Error: the server cannot tell its "
                                    "clients apart (see its log)") from None

    def throwaway_session(self, environ, principal):
        """A session for one handshake-era message, on a server that keeps none (the
        version from the header: 2025-03-26 when absent)."""
        version = environ.get("HTTP_MCP_PROTOCOL_VERSION", V2025_03)
        if version not in PROTOCOL_VERSIONS:
            raise _HttpRefusal(400, f"Bad Request: unsupported MCP-Protocol-Version "
                                    f"{_short_repr(version)} (supported: "
                                    f"{', '.join(PROTOCOL_VERSIONS)})")
        session = HttpSession(self.server, None, principal)
        session.version = version
        session.no_requests = ("this server has no sessions (http_sessions=False), so "
                               "it sends no requests to the client in the handshake "
                               "era")
        session.capabilities = self.server.capabilities()
        session.initialized = True
        return session

    def end_streams(self):
        """Shutting down: end GET and listen streams (their clients reconnect)."""
        for session in list(self.server.sessions):
            stream = session.stream
            if stream is not None:
                for frame in session.end_listens():
                    stream.respond(frame)
                stream.close()


class HttpExchange(Stream):
    """One HTTP request and its response, and the stream of its messages, queued as
    ``(frame, is_response, time.monotonic())`` for the thread that writes them."""

    # What serving it finds out (opens_session: an initialize, if it succeeds)
    principal = session = request_id = None
    stateless = opens_session = listen = closed = False
    # The bytes of max_inflight_bytes its body holds (read_body, release)
    reserved = 0
    # What it counts against the stream caps while open (HttpEndpoint.hold)
    _holder = None

    def __init__(self, endpoint, environ, start_response):
        self.endpoint = endpoint
        self.server = endpoint.server
        self.environ = environ
        self.start_response = start_response
        # (the embedded server's: has the client closed its connection?)
        self.gone = environ.get("mcp_min.client_gone")
        self.frames = SimpleQueue()

    def serve(self):
        """The checks (Host, Origin, the path, the token), then what the method asks: a
        POST's message, a GET's stream, a DELETE, a preflight; or an _HttpRefusal."""
        environ = self.environ
        server = self.server
        try:
            try:
                host = self.check_host()
                # A browser's: if its page may ask, it may read every response (CORS)
                if "HTTP_ORIGIN" in environ:
                    self.start_response = functools.partial(
                        _cors_start, self.start_response, self.check_origin(host))
                method = environ["REQUEST_METHOD"]
                path = environ.get("PATH_INFO") or "/"
                if server.auth and path == _WELL_KNOWN + server.http_path:
                    return self.metadata(host)
                if path.rstrip("/") != server.http_path.rstrip("/"):
                    raise _HttpRefusal(404, "Not Found: the MCP endpoint is "
                                            f"{server.http_path}")
                allowed = "POST"
                if server.http_sessions:
                    allowed = "GET, POST, DELETE"
                if method == "OPTIONS" and "HTTP_ORIGIN" in environ:
                    return self.preflight(allowed)
                if server.auth is not None:
                    self.principal = self.authenticate(host)
                if method == "POST":
                    result = self.post()
                elif method in ("GET", "DELETE") and server.http_sessions:
                    result = self.get_or_delete(method)
                else:
                    raise _HttpRefusal(405, f"Method Not Allowed: {_preview(method)} "
                                            f"(this endpoint takes {allowed})",
                                       headers=[("Allow", allowed)])
            except _HttpRefusal as refusal:
                body = error_frame(refusal.request_id, refusal.code, str(refusal))
                result = _http_response(self.start_response, refusal.status, body,
                                        refusal.headers)
        except BaseException:
            self.release()
            raise
        # A whole response: the request is over (a stream ends it as it ends)
        if self.reserved and type(result) is list:
            self.release()
        return result

    # -- who may ask -------------------------------------------------------------------
    def check_host(self):
        """The Host, if it names this server: localhost, an IP address, allowed_hosts or
        public_url's host. Another name is 421 (a DNS rebinding); junk: 400."""
        host = self.environ.get("HTTP_HOST")
        if host is None:
            raise _HttpRefusal(400, "Bad Request: send a Host header (RFC 9112 3.2)")
        # (a DNS name has 253 characters at most: what _host_parts caches stays small)
        parts = len(host) <= 300 and _host_parts(host)
        if not parts:
            raise _HttpRefusal(400, f"Bad Request: Host {_preview(host)} is not a host "
                                    "name or address with an optional port")
        name = parts[0]
        if (name != "localhost" and _ip_address(name) is None
                and name not in self.endpoint.host_names):
            raise _HttpRefusal(421, f"Misdirected Request: Host {_preview(host)} is "
                                    "not a name of this server: list the names clients "
                                    "use in Server(allowed_hosts=[...])")
        return host

    def authenticate(self, host):
        """Who the bearer token belongs to, by the auth hook (falsy: nobody); else 401,
        with where to read how to get a token (RFC 9728)."""
        scheme, _, token = self.environ.get("HTTP_AUTHORIZATION", "").partition(" ")
        principal = None
        if scheme.lower() == "bearer" and token.strip():
            try:
                principal = self.server.auth(token.strip())
            except Exception:
                # only the error's class: its message may quote the token
                log.error("the auth hook failed (%s)", sys.exc_info()[0].__name__)
        if principal:
            return principal
        challenge = f'Bearer resource_metadata="{self.urls(host)[1]}"'
        if scheme.lower() == "bearer":
            challenge += ', error="invalid_token"'
        raise _HttpRefusal(401, "Unauthorized: send Authorization: Bearer TOKEN",
                           headers=[("WWW-Authenticate", challenge)])

    def urls(self, host):
        """The endpoint's URL and its metadata's (RFC 9728), from public_url or from
        Host and SCRIPT_NAME; neither can end a header's quoted string."""
        public = self.server.public_url
        if public is not None:
            match = _PUBLIC_URL.fullmatch(public)
            return public, f"{match[1]}{_WELL_KNOWN}{match[3] or ''}"
        from urllib.parse import quote
        environ = self.environ
        scheme = "http"
        if environ.get("wsgi.url_scheme") == "https":
            scheme = "https"
        # WSGI strings are bytes as Latin-1 (PEP 3333): percent-encode those bytes
        prefix = environ.get("SCRIPT_NAME", "").rstrip("/").encode("latin-1", "replace")
        base = f"{scheme}://{host}{quote(prefix, safe=_URL_SAFE)}"
        path = quote(self.server.http_path, safe=_URL_SAFE)
        return base + path, f"{base}{_WELL_KNOWN}{path}"

    def metadata(self, host):
        """The metadata (RFC 9728) naming the servers that issue tokens."""
        method = self.environ["REQUEST_METHOD"]
        if method == "OPTIONS" and "HTTP_ORIGIN" in self.environ:
            return self.preflight("GET, HEAD")
        if method not in ("GET", "HEAD"):
            raise _HttpRefusal(405, f"Method Not Allowed: {_preview(method)} (this "
                                    "path takes GET, HEAD)",
                               headers=[("Allow", "GET, HEAD")])
        body = encode_message({
            "resource": self.urls(host)[0],
            "authorization_servers": list(self.server.authorization_servers),
            "bearer_methods_supported": ["header"],
        })
        response = _http_response(self.start_response, 200, body)
        if method == "HEAD":
            return []
        return response

    # -- POST: one client message -----------------------------------------------------
    def post(self):
        """Accept, Content-Type, the body and its era; then the message delivered."""
        environ = self.environ
        server = self.server
        accept = environ.get("HTTP_ACCEPT", "*/*")
        # (clients send the same Accept every time: a short one's is cached)
        accepted = _accepted
        if len(accept) > 200:
            accepted = _accepted.__wrapped__
        sse, takes_json = accepted(accept)
        if not (sse or takes_json):
            raise _HttpRefusal(406, "Not Acceptable: accept application/json and "
                                    "text/event-stream")
        self.events = sse
        content_type = environ.get("CONTENT_TYPE", "")
        if content_type.split(";")[0].strip().lower() != "application/json":
            raise _HttpRefusal(415, "Unsupported Media Type: the body must be "
                                    "application/json")
        # The era: 2026-07-28 if the MCP-Protocol-Version header or the body says so
        version = environ.get("HTTP_MCP_PROTOCOL_VERSION")
        self.stateless = version in STATELESS_PROTOCOL_VERSIONS
        body = self.read_body()
        if self.endpoint.trace:
            self.endpoint.trace("in", body)
        try:
            message = decode_message(body)
            kind = "batch"
            if not isinstance(message, list):
                kind = classify(message)
            elif self.stateless or not server.http_sessions:
                raise JSONRPCError(INVALID_REQUEST, "Invalid Request: batches are "
                                   "accepted only in a protocol 2025-03-26 session; "
                                   "POST one message")
        except JSONRPCError as e:
            rid = None
            if isinstance(e.data, dict):
                rid = e.data.get("id")
            if rid is not None and server.http_sessions and not self.stateless:
                # An invalid message may be a botched answer: its request fails at once
                try:
                    session = self.endpoint.find_session(environ, self.principal)
                except _HttpRefusal:
                    pass
                else:
                    session.dispatch(message, self)
            raise _HttpRefusal(400, e.message, rid, e.code) from None
        if kind != "request" and self.stateless:
            return _http_response(self.start_response, 202, b"")
        if kind == "request":
            params = message.get("params") or {}
            if self.stateless or is_stateless(message["method"], params.get("_meta")):
                self.stateless = True
                self.check_headers(message, params)
                return self.deliver(message)
        return self.post_in_session(message, kind)

    def read_body(self):
        """The body, within max_body_bytes and what max_inflight_bytes has left: that
        stays reserved until the response (decoded JSON takes 1 to 25 times as much)."""
        environ = self.environ
        server = self.server
        endpoint = self.endpoint
        length = environ.get("CONTENT_LENGTH")
        limit = min(server.max_body_bytes, server.max_line_bytes)
        if length:
            if not _is_length(length):
                raise _HttpRefusal(400, "Bad Request: invalid Content-Length")
            length = size = int(length)
            if length > limit:
                raise _HttpRefusal(413, f"Content Too Large: {length} bytes is over "
                                        f"the limit of {limit} bytes per message")
        elif "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower():
            length = None
            size = limit + 1
        else:
            raise _HttpRefusal(411, "Length Required: send Content-Length")
        with endpoint.lock:
            if endpoint.inflight + size <= server.max_inflight_bytes:
                endpoint.inflight += size
                self.reserved = size
        if not self.reserved:
            raise _HttpRefusal(503, f"Server busy: {server.max_inflight_bytes} bytes "
                                    "of requests at most are taken at once "
                                    "(Server(max_inflight_bytes=...)); try again "
                                    "shortly", code=_busy_code(self.stateless),
                               headers=[("Retry-After", "1")])
        try:
            body = environ["wsgi.input"].read(size)
        except TimeoutError:
            raise _HttpRefusal(408, "Request Timeout: the body did not all come within "
                                    f"{server.idle_timeout} s of the headers") from None
        if len(body) > limit:
            raise _HttpRefusal(413, "Content Too Large: over the limit of "
                                    f"{limit} bytes per message")
        # Chunked: keep what came, not the most that could have
        if length is None:
            self.release(keep=len(body))
        if len(body) > 1 << 20:
            _keep_big_blocks_apart()
        return body

    def check_headers(self, message, params):
        """2026-07-28 repeats in headers what the body says (for proxies to route on):
        any disagreement is refused (-32020)."""
        environ = self.environ
        meta = params.get("_meta")
        method = message["method"]
        version = isinstance(meta, dict) and meta.get(PROTOCOL_VERSION_KEY)
        header = environ.get("HTTP_MCP_PROTOCOL_VERSION")
        name = params.get("name")
        if method == "resources/read":
            name = params.get("uri")
        sent_method = environ.get("HTTP_MCP_METHOD")
        sent_name = environ.get("HTTP_MCP_NAME")
        problem = None
        if isinstance(version, str) and header != version:
            sent = "missing"
            if header is not None:
                sent = _short_repr(header)
            problem = (f"MCP-Protocol-Version is {sent}, the body's _meta says "
                       f"{_short_repr(version)}")
        elif sent_method != method and _header_value(sent_method) != method:
            problem = f"Mcp-Method must be {_short_repr(method)}"
        elif (self.server.methods.get(method, CUSTOM_METHOD).asks
              and sent_name != name and _header_value(sent_name) != name):
            problem = f"Mcp-Name must be {_preview(name)}"
        elif method == "tools/call" and type(name) is str:
            tool = self.server.tools.get(name)
            if tool is not None and tool.mirrored:
                problem = _mirror_problem(environ, tool, params)
        if problem:
            raise _HttpRefusal(400, f"Header mismatch: {problem}", message["id"],
                               HEADER_MISMATCH)

    def deliver(self, message):
        """Hand a request (or batch) to its session, then respond: JSON if the response
        comes first, else an SSE stream (also after ``heartbeat`` s). A client leaving
        cancels in 2026-07-28; in the handshake era the call runs on, unheard."""
        server = self.server
        batch = isinstance(message, list)
        session = self.session
        if session is None:
            session = self.session = Session(server, None, self.principal)
        # (where a shutdown finds the calls to cancel)
        server.http_sessions_alive.add(session)
        if server.auth is not None:
            session.claim = self.endpoint.claim
        if not batch:
            self.request_id = message["id"]
            method = message["method"]
            self.listen = self.stateless and method == "subscriptions/listen"
        if self.listen and not self.events:
            raise _HttpRefusal(406, "Not Acceptable: subscriptions/listen responds "
                                    "with text/event-stream", self.request_id)
        # What holds a thread for long is counted before it starts: a listen; with
        # auth, a call that runs user code, or a batch
        if self.listen or (server.auth is not None and (
                batch or server.methods.get(method, CUSTOM_METHOD).threaded)):
            self.endpoint.hold(self, self.listen)
        try:
            if self.listen:
                session.stream = self
                server.sessions.add(session)
            if batch:
                session.handle_batch(message, self)
            else:
                session.handle_request(message, self, stateless=self.stateless)
            # A listen's handler has returned: its stream costs a place, no body
            if self.listen:
                self.release()
            if self.events:
                first = self.next_item(server.heartbeat)
            else:
                # JSON only: what comes before the response is dropped
                first = self.next_item(None)
                while not first[1]:
                    first = self.next_item(None)
        except ConnectionAbortedError:
            if self.stateless:
                session.cancel(self.request_id, "the client closed the connection")
            self.finish()
            return _http_response(self.start_response, 202, b"")
        except BaseException:
            self.endpoint.let_go(self)
            raise
        # The response came first: no stream (and nothing more goes into it)
        if first is not None and first[1]:
            self.closed = True
            if self._holder is not None or self.listen:
                self.finish()
            frame = first[0]
            if frame is not None:
                status = 200
                if b'"error":{"code":' in frame:
                    status = self.status_of(frame)
                headers = ()
                if self.opens_session and "result" in json.loads(frame):
                    session_id = self.endpoint.open_session(session, self.request_id)
                    headers = [("Mcp-Session-Id", session_id)]
                self.release()
                return _http_response(self.start_response, status, frame, headers)
            # no way to say "nothing", or a batch with nothing to respond (cancelled,
            # and events accepted: a stream that ends with no response)
            if not self.events or batch:
                return _http_response(self.start_response, 202, b"")
        return _http_response(self.start_response, 200, self.stream_events(first))

    def next_item(self, timeout):
        """The next ``(frame, is_response, queued)``, or None after ``timeout`` seconds;
        ConnectionAbortedError once the client has gone (a request asks every 0.25 s,
        a listen or GET only at its timeout)."""
        gone = self.gone
        deadline = None
        if timeout is not None:
            deadline = time.monotonic() + timeout
        while True:
            waits = []
            if gone and not self.listen:
                waits.append(0.25)
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                waits.append(left)
            try:
                return self.frames.get(timeout=min(waits, default=None))
            except Empty:
                if gone and gone():
                    raise ConnectionAbortedError from None

    # -- as the core's stream ----------------------------------------------------------
    def send(self, frame):
        if self.closed:
            return False
        if self.endpoint.trace:
            self.endpoint.trace("out", frame)
        self.frames.put((frame, False, time.monotonic()))
        return True

    def respond(self, frame, before=None):
        if before is not None:
            before()
        if frame is not None and self.endpoint.trace:
            self.endpoint.trace("out", frame)
        if frame is not None or not self.listen:
            self.frames.put((frame, True, time.monotonic()))

    def close(self):
        """End a stream that waits for no response (GET, listen)."""
        self.closed = True
        self.frames.put((None, True, time.monotonic()))

    # -- the response ------------------------------------------------------------------
    def status_of(self, frame):
        """The HTTP status of a response that holds an error (a batch's: 200)."""
        response = json.loads(frame)
        error = isinstance(response, dict) and response.get("error")
        if not isinstance(error, dict):
            return 200
        code = error.get("code")
        if self.stateless:
            return _STATELESS_ERROR_STATUS.get(code, 200)
        if code in (PARSE_ERROR, INVALID_REQUEST):
            return 400
        return 200

    def stream_events(self, first=None):
        """The SSE body: each frame an event, a keep-alive after ``heartbeat`` seconds
        of silence, until the response (a listen: until the client leaves)."""
        finished = False
        try:
            item = first
            while True:
                if item is None:
                    yield b": keep-alive\n\n"
                else:
                    frame, final, queued = item
                    late = self.server.idle_timeout
                    # (a client that cannot keep up: as if gone)
                    if late and time.monotonic() - queued > late:
                        return
                    if frame is not None:
                        yield b"event: message\ndata: " + frame + b"\n\n"
                    if final:
                        finished = True
                        return
                item = yield from self.wait_item()
        except ConnectionAbortedError:
            pass
        finally:
            self.finish()
            self.release()
            if not finished and self.stateless and self.request_id is not None:
                self.session.cancel(self.request_id,
                                    "the client closed the HTTP response")

    #: Seconds between the empty chunks of a waiting stream (wait_item)
    probe_every = 0.25

    def wait_item(self):
        """The next item (``yield from``), or None after ``heartbeat`` seconds. Where
        the engine cannot say a client has gone, an empty chunk every ``probe_every``
        seconds, which granian fails to send once it has, frees the thread sooner."""
        heartbeat = self.server.heartbeat
        if self.gone is not None:
            return self.next_item(heartbeat)
        deadline = time.monotonic() + heartbeat
        while True:
            left = deadline - time.monotonic()
            item = self.next_item(min(left, self.probe_every))
            if item is not None or left <= self.probe_every:
                return item
            yield b""

    def finish(self):
        """The end of the response: nothing more goes in, hold()'s count is given back,
        a GET or listen stream leaves its session."""
        self.closed = True
        self.endpoint.let_go(self)
        session = self.session
        if session is not None and session.stream is self:
            session.last_used = time.monotonic()
            session.stream = None
            self.server.sessions.discard(session)

    def release(self, keep=0):
        """Give back what read_body reserved of max_inflight_bytes, but ``keep``."""
        if self.reserved:
            with self.endpoint.lock:
                self.endpoint.inflight -= self.reserved - keep
            self.reserved = keep

    # -- handshake-era sessions -------------------------------------------------------
    def post_in_session(self, message, kind):
        """A handshake-era message: an initialize opens a session; anything else goes to
        the session it names (or one made for it)."""
        server = self.server
        initialize = kind == "request" and message["method"] == "initialize"
        if initialize:
            session = HttpSession(server, None, self.principal)
        elif server.http_sessions:
            session = self.endpoint.find_session(self.environ, self.principal)
        else:
            session = self.endpoint.throwaway_session(self.environ, self.principal)
        session.last_used = time.monotonic()
        # (a response is the answer to a question of ours)
        if kind in ("notification", "response"):
            session.dispatch(message, self)
            return _http_response(self.start_response, 202, b"")
        self.opens_session = initialize and server.http_sessions
        self.session = session
        return self.deliver(message)

    def get_or_delete(self, method):
        """GET: the stream of a session's messages about no request; DELETE: its end."""
        endpoint = self.endpoint
        session = endpoint.find_session(self.environ, self.principal)
        if method == "DELETE":
            with endpoint.lock:
                endpoint.sessions.pop(session.id, None)
            session.end()
            return _http_response(self.start_response, 204, b"")
        if not _accepts(self.environ.get("HTTP_ACCEPT", ""), "text/event-stream"):
            raise _HttpRefusal(406, "Not Acceptable: GET opens a text/event-stream")
        self.listen = True
        self.session = session
        with session.lock:
            if session.stream is not None:
                raise _HttpRefusal(409, "Conflict: this session already has a GET "
                                        "stream open")
            session.stream = self
        try:
            endpoint.hold(self, True)
        except _HttpRefusal:
            session.stream = None
            raise
        self.server.sessions.add(session)
        return _http_response(self.start_response, 200, self.stream_events())

    # -- a browser's request (CORS) ----------------------------------------------------
    def check_origin(self, host):
        """403 for another site's script. An Origin is allowed if it has the Host's
        host[:port], if both are this machine, or if allowed_origins lists it or "*";
        returned for Access-Control-Allow-Origin ("*" if unlisted: never echoed)."""
        origin = self.environ["HTTP_ORIGIN"]
        allowed = self.server.allowed_origins
        if origin in allowed:
            return origin
        if "*" in allowed:
            return "*"
        match = _ORIGIN.fullmatch(origin)
        # (a longer one is no host name)
        page = match and len(match[2]) <= 300 and _host_parts(match[2])
        if page:
            name, port = _host_parts(host)
            default = _DEFAULT_PORTS.get(match[1].lower())
            same_site = page[0] == name and (page[1] or default) == (port or default)
            if same_site or (_is_loopback(page[0]) and _is_loopback(name)):
                return origin
        raise _HttpRefusal(403, f"Forbidden: Origin {_preview(origin)} is not allowed "
                                "(Server(allowed_origins=[...]))")

    def preflight(self, methods):
        """OPTIONS from an allowed Origin, no token needed: may its page send this? It
        may, for an hour; a public page asking a private server (Private Network
        Access), only if allowed_origins names its origin ("*" is no such consent)."""
        names = ["Content-Type, Accept, Authorization, MCP-Protocol-Version, "
                 "Mcp-Session-Id, Mcp-Method, Mcp-Name, Last-Event-ID"]
        for tool in list(self.server.tools.values()):
            names += ["Mcp-Param-" + name for name in tool.mirrored]
        headers = [("Access-Control-Allow-Methods", methods),
                   ("Access-Control-Allow-Headers", ", ".join(names)),
                   ("Access-Control-Max-Age", "3600")]
        if (self.environ.get("HTTP_ACCESS_CONTROL_REQUEST_PRIVATE_NETWORK") == "true"
                and self.environ["HTTP_ORIGIN"] in self.server.allowed_origins):
            headers.append(("Access-Control-Allow-Private-Network", "true"))
        return _http_response(self.start_response, 204, b"", headers)


def _http_response(start_response, status, body, headers=()):
    """Start a response and return its body: the one place where the status and headers
    are made. ``body`` is JSON, empty, or the SSE stream of stream_events."""
    if isinstance(body, bytes):
        fields = [("Content-Length", str(len(body)))]
        if body:
            fields.append(("Content-Type", "application/json"))
        elif status == 204:
            fields = []
        body = [body]
    else:
        fields = [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache"),
                  ("X-Accel-Buffering", "no")]
    start_response(HTTP_STATUS[status], [*fields, *headers])
    return body


def _is_length(text):
    """Is a Content-Length one? ASCII digits only (int() takes "+5", isdigit() "²")."""
    text = text.strip(" \t")
    return text.isascii() and text.isdigit() and len(text) <= 18


def _principal_id(principal):
    """A principal's identity, in any process: JSON form, or repr (else TypeError)."""
    try:
        json.dumps(principal, sort_keys=True)
        return principal
    except (TypeError, ValueError, RecursionError):
        pass
    # "<User object at 0x...>": each object its own
    if type(principal).__repr__ is object.__repr__:
        raise TypeError(
            f"the auth hook returned a {type(principal).__name__}, which has no JSON "
            "form and no __repr__: return a user id or a dict, or give it a __repr__ "
            "naming the user (a dataclass has one)")
    return repr(principal)


def _header_value(raw):
    """A header value as sent: one that is not plain ASCII travels as =?base64?...?=."""
    if raw and raw.startswith("=?base64?") and raw.endswith("?="):
        encoded = raw[9:-2]
        # (a2b_base64 would skip what is not base64)
        if not _BASE64.fullmatch(encoded):
            return None
        try:
            return b64decode(encoded).decode("utf-8")
        except (ValueError, binascii.Error):
            return None
    return raw


def _mirror_problem(environ, tool, params):
    """What is wrong with the Mcp-Param-{Name} headers of a ``tool`` call, or None."""
    for name, path in tool.mirrored.items():
        value = params.get("arguments")
        for key in path:
            if not isinstance(value, dict):
                value = None
                break
            value = value.get(key)
        header = environ.get("HTTP_MCP_PARAM_" + name.upper().replace("-", "_"))
        if value is not None and not _mirrors(value, _header_value(header)):
            return f"Mcp-Param-{name} must be {_preview(value)}, as in the arguments"
    return None


@functools.lru_cache(maxsize=64)
def _accepted(accept):
    """Whether an Accept header takes text/event-stream, and application/json."""
    return _accepts(accept, "text/event-stream"), _accepts(accept, "application/json")


def _accepts(accept, media_type):
    """Does an Accept header take ``media_type``? The most specific range that names it
    decides; q=0 refuses it (RFC 9110 12.5.1)."""
    ranks = {media_type: 3, media_type.split("/")[0] + "/*": 2, "*/*": 1}
    best = 0
    accepted = False
    for item in accept.lower().split(","):
        media, *params = item.split(";")
        rank = ranks.get(media.strip(), 0)
        if rank > best:
            best = rank
            accepted = not any(re.fullmatch(r"\s*q\s*=\s*0(\.0*)?\s*", param)
                               for param in params)
    return accepted


def _cors_start(start_response, allowed_origin, status, headers):
    """start_response for a request from an allowed Origin: the browser lets its page
    read the response, and the headers a client reads (CORS)."""
    cors = [("Access-Control-Allow-Origin", allowed_origin), ("Vary", "Origin"),
            ("Access-Control-Expose-Headers",
             "Mcp-Session-Id, WWW-Authenticate, Retry-After")]
    return start_response(status, [*headers, *cors])


_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")
#: A Host, or the host[:port] of an Origin or a URL
_HOST = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::([0-9]{1,5}))?")
#: What a URL's path may hold besides letters, digits and "_.-": nothing that could end
#: a header's quoted string ('"', '\', space, control characters).
_URL_SAFE = "/:@!$&'()*+,;=~%"
_URL_PATH = re.compile(r"[\w.~\-" + re.escape(_URL_SAFE) + "]*", re.ASCII)
_PUBLIC_URL = re.compile(r"((?i:https?)://([^/?#]*))(/[^?#]*)?")
_ORIGIN = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://([^/?#]*)")
_DEFAULT_PORTS = {"http": 80, "https": 443}
#: Where RFC 9728 puts a resource's metadata
_WELL_KNOWN = "/.well-known/oauth-protected-resource"


@functools.lru_cache(maxsize=64)
def _host_parts(host):
    """``(name, port)`` of a Host or an Origin's or URL's host[:port], lowercased
    without brackets; None for anything else."""
    match = _HOST.fullmatch(host)
    if match is None:
        return None
    name = match[1].lower()
    port = match[2]
    if port is not None:
        port = int(port)
        if not 0 < port < 65536:
            return None
    if name.startswith("["):
        name = name[1:-1]
        if ":" not in name or _ip_address(name) is None:
            return None
    return name, port


@functools.lru_cache(maxsize=256)
def _ip_address(name):
    """The address an IPv4 or IPv6 literal (no brackets) writes; None for a name."""
    import ipaddress
    try:
        return ipaddress.ip_address(name)
    except ValueError:
        return None


def _is_loopback(name):
    """Is a host name or address this machine (also ::ffff:127.0.0.1)?"""
    if name == "localhost":
        return True
    address = _ip_address(name)
    if address is None:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or (mapped is not None and mapped.is_loopback)


def _allowed_hosts(names):
    """The allowed_hosts setting, checked: a set of lowercased host names, or None."""
    if names is None:
        return None
    if isinstance(names, (str, bytes)) or not hasattr(names, "__iter__"):
        raise ValueError(f"allowed_hosts must be a list of host names, like "
                         f"['mcp.example.com'], not {names!r}")
    checked = set()
    for name in names:
        parts = None
        if isinstance(name, str):
            parts = _host_parts(name)
            if parts is None and ":" in name:
                parts = _host_parts(f"[{name}]")
        if parts is None or parts[1] is not None:
            raise ValueError(f"allowed_hosts takes host names without a port, like "
                             f"'mcp.example.com', not {name!r}")
        checked.add(parts[0])
    return checked


def _public_url(url):
    """The public_url setting, checked: None, or an http(s) URL with a host and no query
    or fragment, fit for a header."""
    if url is None:
        return None
    match = None
    if isinstance(url, str):
        match = _PUBLIC_URL.fullmatch(url)
    if (match is None or _host_parts(match[2]) is None
            or not _URL_PATH.fullmatch(match[3] or "")):
        raise ValueError(
            f"public_url must be the http(s) URL clients reach the MCP endpoint at, "
            f"with a host and no query or fragment, like "
            f"'https://mcp.example.com/mcp', not {url!r}")
    return url


class _LifespanFailed:
    """The WSGI application while the lifespan fails to start: 503 with the error's
    one-line summary (start_http logged its traceback)."""

    def __init__(self, error, retry):
        import traceback
        self.summary = _exception_line(error, traceback, 200)
        self.retry = retry
        self.retry_at = time.monotonic() + retry

    def due(self):
        return time.monotonic() >= self.retry_at

    def __call__(self, environ, start_response):
        length = environ.get("CONTENT_LENGTH") or ""
        if _is_length(length) and int(length) <= 1 << 16:
            environ["wsgi.input"].read(int(length))
        body = error_frame(None, INTERNAL_ERROR, "Service Unavailable: the server's "
                           f"lifespan failed: {self.summary}")
        return _http_response(start_response, 503, body,
                              [("Retry-After", str(max(1, round(self.retry))))])


def _ignore_stop_signals():
    """Ignore SIGINT, SIGTERM, SIGQUIT (if any) on the main thread: the old handlers."""
    import signal
    names = ("SIGINT", "SIGTERM", "SIGQUIT")
    return _ignore_signals([getattr(signal, name) for name in names
                            if hasattr(signal, name)])


def _at_process_exit(fn):
    """Call ``fn`` as this process exits: by atexit, and in a worker process that
    multiprocessing started (granian's), by its own exit, which skips atexit."""
    import atexit
    atexit.register(fn)
    multiprocessing = sys.modules.get("multiprocessing")
    if multiprocessing is not None and multiprocessing.parent_process() is not None:
        from multiprocessing import util
        util.Finalize(None, fn, exitpriority=10)
# ======================================================================================
# Signals and shutdown (a first reading can skip this)
# ======================================================================================

def _open_lifespan(cm):
    """Enter what the lifespan function returned (a context manager or a generator,
    sync or async): (what it yields, a function that exits it)."""
    import contextlib
    generator = cm
    if isinstance(cm, types.GeneratorType):
        cm = contextlib.contextmanager(lambda: generator)()
    elif isinstance(cm, types.AsyncGeneratorType):
        cm = contextlib.asynccontextmanager(lambda: generator)()
    if hasattr(cm, "__enter__"):
        return cm.__enter__(), lambda: cm.__exit__(None, None, None)
    if not hasattr(cm, "__aenter__"):
        raise TypeError(f"lifespan returned {type(cm).__name__}, not a context "
                        "manager: decorate it with @contextlib.contextmanager or "
                        "@contextlib.asynccontextmanager")
    # An async generator must be finalised on the loop that started it, and async
    # handlers use what it starts (tasks, clients): all run on the one shared loop.
    loop = _event_loop()
    value = loop.submit(cm.__aenter__()).result()
    return value, lambda: loop.submit(cm.__aexit__(None, None, None)).result()


class _LoopThread:
    """The process's one asyncio event loop, in a daemon thread: asyncio objects that
    async handlers and the lifespan share work only on their own loop."""

    def __init__(self):
        import asyncio
        self.asyncio = asyncio
        self.loop = asyncio.new_event_loop()
        thread = threading.Thread(target=self.loop.run_forever, daemon=True,
                                  name="mcp_min-event-loop")
        thread.start()
        self.ident = thread.ident

    def submit(self, coroutine):
        if _thread.get_ident() == self.ident:
            coroutine.close()
            raise RuntimeError("mcp_min's event loop cannot wait for itself: make this "
                               "call from a plain def, or through asyncio.to_thread")
        return self.asyncio.run_coroutine_threadsafe(coroutine, self.loop)


# The _LoopThread, once something async needs it
_loop_thread = None
_loop_lock = threading.Lock()


def _event_loop():
    global _loop_thread
    with _loop_lock:
        if _loop_thread is None:
            _loop_thread = _LoopThread()
    return _loop_thread


# --- stop signals ----------------------------------------------------------
# run() serves until end of input, SIGTERM or Ctrl+C. A stop signal raises _Stop in the
# main thread's wait (serve_lines), once: raised in the shutdown, it would cut it short.

class _Stop(BaseException):
    """SIGTERM or stdout gone, in the main thread: no ``except Exception`` takes it."""


_MAIN_THREAD = threading.main_thread().ident
# The _StopSignals of the run() in progress
_stop_signals = None


class _StopSignals:
    """Stop signals of the run() serving the connection writing to ``write_fd``."""

    def __init__(self, grace, write_fd):
        self.grace, self.write_fd = grace, write_fd
        # The application's handlers while ours are in ({} off the main thread); the
        # first signal, which decides the exit code
        self.saved = {}
        self.first = self.held_since = self.waiting_since = None
        self.count = 0
        self.raised = self.force = False

    @staticmethod
    def of(write_fd):
        """The run() writing to ``write_fd`` (else one that no signal reaches)."""
        state = _stop_signals
        if state is None or state.write_fd != write_fd:
            state = _StopSignals(0, None)
        return state

    def on_signal(self, signum, frame):
        """The first signal raises _Stop, unless the shutdown holds signals back; any
        other is counted (drain ends its grace period) and waits (watch)."""
        if _stop_signals is not self:
            return
        if self.first is None:
            self.first = signum
        self.count += 1
        if self.force or (self.held_since is None and not self.raised):
            self.raised = True
            raise _Stop()
        if self.waiting_since is None:
            self.waiting_since = time.monotonic()
            _start_thread(self.watch)

    def watch(self):
        """A signal held back a grace period (a stuck client, a hang) cuts it short."""
        while _stop_signals is self:
            held_since = self.held_since
            if held_since is not None:
                waited = time.monotonic() - max(self.waiting_since, held_since)
                if waited > self.grace:
                    self.force = True
                    return _interrupt_main()
            time.sleep(0.05)


def _catch_stop_signals(grace, write_fd):
    """run(): a stop signal (see _take_stop_signals) ends serving gracefully."""
    global _stop_signals
    _stop_signals = _StopSignals(grace, write_fd)
    _stop_signals.saved = _take_stop_signals(_stop_signals.on_signal)


def _end_stop_signals():
    """After run(): ignore the stop signals until the application is back in control
    (_Exit). Returns (first signal, handlers)."""
    global _stop_signals
    state, _stop_signals = _stop_signals, None
    if state.saved:
        _ignore_signals(state.saved)
    return state.first, state.saved


def _hold_signals():
    """Open the shutdown (on the main thread): a stop signal waits for it."""
    state = _stop_signals
    if state is None or _thread.get_ident() != _MAIN_THREAD:
        return None
    state.held_since = time.monotonic()
    return state


def _release_signals(state):
    if state is not None:
        state.held_since = None


def _interrupt_main():
    """SIGTERM to the main thread (pthread_kill interrupts a read or write)."""
    import signal
    if hasattr(signal, "pthread_kill"):
        signal.pthread_kill(_MAIN_THREAD, signal.SIGTERM)
    else:
        _thread.interrupt_main(signal.SIGTERM)


def _take_stop_signals(handler):
    """SIGTERM, and Ctrl+C unless the application handles it, go to ``handler``; the
    handlers as they were ({} off the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    import signal
    saved = {signum: signal.getsignal(signum)
             for signum in (signal.SIGTERM, signal.SIGINT)}
    signal.signal(signal.SIGTERM, handler)
    if saved[signal.SIGINT] is signal.default_int_handler:
        signal.signal(signal.SIGINT, handler)
    return saved


def _ignore_signals(signums):
    """Ignore ``signums``; their handlers as they were ({} off the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    import signal
    return {signum: signal.signal(signum, signal.SIG_IGN) for signum in signums}


def _restore_signals(saved):
    """Put back the handlers replaced (but None: one set outside Python)."""
    import signal
    for signum, handler in saved.items():
        if handler is not None:
            signal.signal(signum, handler)


class _Exit(SystemExit):
    """How run() ends: a SystemExit holding the application's signal handlers, ignored
    as the program exits (a late signal must not kill a clean exit); back if caught."""

    def __init__(self, code, saved):
        super().__init__(code)
        self.saved = saved

    def __del__(self):
        # No Python caller: the interpreter is exiting
        try:
            sys._getframe(1)
        except ValueError:
            return
        if self.saved and threading.current_thread() is threading.main_thread():
            _restore_signals(self.saved)
# ======================================================================================
# The embedded HTTP server: wsgiref, hardened (a first reading can skip this)
# ======================================================================================

def serve_http(server, address="127.0.0.1:8000", trace=None):
    """Server.run_http: serve ``server.wsgi`` on the embedded server at "HOST:PORT"
    until Ctrl+C or SIGTERM; returns the exit code (0, or 130 after Ctrl+C)."""
    global _tune_allocator
    _tune_allocator = True
    host, port = _parse_address(address)
    httpd = make_http_server(server.wsgi, host, port, server.idle_timeout,
                             server.max_connections,
                             min(server.max_body_bytes, server.max_line_bytes),
                             server.max_connections_per_address)
    started = server.start_http()
    if isinstance(started, _LifespanFailed):
        httpd.server_close()
        server._http = None
        raise SystemExit(f"mcp_min: cannot serve {server.name}: its lifespan failed: "
                         f"{started.summary}")
    if trace:
        started.trace = trace
    shown = host
    if ":" in host:
        shown = f"[{host}]"
    if not _is_loopback(host) and server.auth is None and server.allowed_hosts is None:
        log.warning("listening on %s, which other machines can reach, with no auth: "
                    "anyone who can reach it by its IP address can call this server's "
                    "tools and read its resources; set Server(auth=...) to require a "
                    "bearer token, and Server(allowed_hosts=[...]) to the names "
                    "clients use (bind 127.0.0.1 to serve this machine alone)", shown)
    import signal
    saved = {}
    code = 0
    try:
        saved = _take_stop_signals(httpd.stop)
        print(f"mcp_min: serving {server.name} on http://{shown}:{httpd.server_port}"
              f"{server.http_path}", file=sys.stderr, flush=True)
        httpd.serve_forever()
    except KeyboardInterrupt:
        # ours (stop), or Python's own for Ctrl+C
        if httpd.stop_signal in (None, signal.SIGINT):
            code = 130
    finally:
        httpd.server_close()
        httpd.drain(server.grace_period, server._http)
        server.stop_http(httpd)
        _restore_signals(saved)
    return code


def make_http_server(app, host="127.0.0.1", port=8000, idle_timeout=30.0,
                     max_connections=200, max_body_bytes=None,
                     max_connections_per_address=50):
    """A wsgiref server for ``app``: a thread per connection, HTTP/1.1 keep-alive and
    chunked streams, hardened against slow and hostile clients (docs/http.md)."""
    httpd = _embedded_server_class()((host, port))
    httpd.idle_timeout = idle_timeout
    httpd.max_body_bytes = max_body_bytes
    httpd.slots = threading.BoundedSemaphore(max_connections)
    httpd.per_address = max_connections_per_address
    httpd.set_app(app)
    return httpd


@functools.lru_cache(maxsize=None)
def _embedded_server_class():
    """Each mixin below on the class it extends, on first use (wsgiref is slow)."""
    import io
    import socket
    import socketserver
    from wsgiref import simple_server

    def join(mixin, *bases, **attributes):
        name = mixin.__name__.strip("_").removesuffix("Mixin")
        return type(name, (mixin, *bases), attributes)

    handler = join(
        _RequestHandlerMixin, simple_server.WSGIRequestHandler,
        response_writer=join(_ResponseWriterMixin, simple_server.ServerHandler),
        line_reader=join(_LineReaderMixin, io.BufferedReader),
        socket_reader=join(_DeadlineReaderMixin, socket.SocketIO))
    return join(_HttpServerMixin, socketserver.ThreadingMixIn, simple_server.WSGIServer,
                request_handler=handler)


def _readable(connection):
    """Would a read not wait (input, or the client closed its end)? By poll(): select()
    refuses a descriptor past 1023."""
    import selectors
    try:
        with getattr(selectors, "PollSelector", selectors.SelectSelector)() as selector:
            selector.register(connection, selectors.EVENT_READ)
            return bool(selector.select(0))
    except (OSError, ValueError):
        return True


class _ResponseWriterMixin:
    """A response (on wsgiref's ServerHandler): HTTP/1.1, chunked when its length is not
    known, keeping the connection only when that is safe."""

    http_version = "1.1"
    chunked = mute = False

    def bodiless(self):
        """No body may follow the headers: a HEAD's, a 204's (RFC 9110)."""
        return self.request_handler.command == "HEAD" or self.status[:3] == "204"

    def cleanup_headers(self):
        # Keep the connection only if the request's body was all read and the
        # response's length is known (chunks tell it); never after a 401.
        request = self.request_handler
        if not request.body.discard() or self.status[:3] == "401":
            self.headers["Connection"] = "close"
            request.close_connection = request.lingers = True
        if self.status[:3] == "204":
            del self.headers["Content-Length"]
        if "Content-Length" not in self.headers and not self.bodiless():
            if request.request_version == "HTTP/1.1":
                self.headers["Transfer-Encoding"] = "chunked"
            else:
                request.close_connection = True
        # (an HTTP/1.0 client that asked for keep-alive must be told)
        if request.request_version == "HTTP/1.0" and not request.close_connection:
            self.headers["Connection"] = "keep-alive"

    def send_headers(self):
        super().send_headers()
        self.chunked = "Transfer-Encoding" in self.headers
        self.mute = self.bodiless()

    def _write(self, data):
        if self.mute:
            return
        if self.chunked and data:
            data = b"%X\r\n%s\r\n" % (len(data), data)
        # In pieces: the timeout bounds each send, and a client reading slowly (64 KiB
        # per idle_timeout) has not stopped reading.
        view = memoryview(data)
        for start in range(0, len(view), 1 << 16):
            super()._write(view[start:start + (1 << 16)])

    def handle_error(self):
        # (a timeout within the body or the response: the connection ends)
        if isinstance(sys.exc_info()[1], TimeoutError):
            self.request_handler.close_connection = True
        else:
            super().handle_error()

    # (wsgiref's writes the whole traceback)
    def log_exception(self, exc_info):
        _log_failure("an HTTP request", exc_info[1])

    def finish_content(self):
        super().finish_content()
        if self.chunked:
            self.chunked = False
            super()._write(b"0\r\n\r\n")
            self._flush()


class _LineReaderMixin:
    """A reader (on io.BufferedReader) that remembers a CR within a line: a header
    hidden after one ("Foo: x\rMcp-Session-Id: y") would get past a proxy (400)."""

    bare_cr = False

    def readline(self, size=-1):
        line = super().readline(size)
        if b"\r" in line and b"\r" in line.rstrip(b"\n")[:-1]:
            self.bare_cr = True
        return line


class _DeadlineReaderMixin:
    """Socket reads (on socket.SocketIO) that end by ``deadline``, if set; sends keep
    ``idle_timeout``."""

    deadline = None
    idle_timeout = None

    def readinto(self, buffer):
        if self.deadline is None:
            return super().readinto(buffer)
        self._sock.settimeout(max(self.deadline - time.monotonic(), 1e-6))
        try:
            return super().readinto(buffer)
        finally:
            self._sock.settimeout(self.idle_timeout)


_ABSOLUTE_FORM = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://([^/?#]*)/?(.*)")


class _RequestHandlerMixin:
    """A connection to the embedded server (WSGIRequestHandler): requests in turn."""

    protocol_version = "HTTP/1.1"
    # (headers and body are two writes: by Nagle's algorithm the body would wait 40 ms)
    disable_nagle_algorithm = True
    # Closing with input unread (a refusal before the body was read): linger()
    lingers = False
    #: The most bytes linger() reads and drops
    linger_bytes = 64 << 20

    def setup(self):
        # (0 would make the socket non-blocking)
        self.timeout = self.server.idle_timeout or None
        super().setup()
        # makefile's reader gives way to one that keeps a deadline
        self.rfile.close()
        reader = self.socket_reader(self.connection, "rb")
        reader.idle_timeout = self.timeout
        self.rfile = self.line_reader(reader)

    def handle(self):
        # Not wsgiref's, which serves one request, then closes; the idle timeout
        # (between requests, or within a request's head) ends the connection
        from http.server import BaseHTTPRequestHandler
        try:
            BaseHTTPRequestHandler.handle(self)
        except TimeoutError:
            pass
        if self.lingers:
            self.linger()

    def linger(self):
        """A lingering close: a client that sends its whole body before it reads would
        be reset by a close, and miss the refusal; what it still sends is dropped (up
        to linger_bytes, until the body's deadline, else 30 s)."""
        import socket
        connection = self.connection
        deadline = self.rfile.raw.deadline or time.monotonic() + 30
        buffer = bytearray(1 << 16)
        left = self.linger_bytes
        try:
            connection.shutdown(socket.SHUT_WR)
            while left > 0 and deadline > time.monotonic():
                connection.settimeout(max(deadline - time.monotonic(), 1e-6))
                read = connection.recv_into(buffer)
                if not read:
                    break
                left -= read
        except OSError:
            pass

    def handle_one_request(self):
        # The line and headers must all come within the timeout (a slowloris client,
        # sending a byte at a time, is never silent for that long)
        if self.timeout:
            self.rfile.raw.deadline = time.monotonic() + self.timeout
        self.rfile.bare_cr = False
        try:
            self.raw_requestline = self.rfile.readline(65537)
        except ConnectionError:
            # the client reset an idle connection
            self.raw_requestline = b""
        connection = self.connection
        if not self.raw_requestline:
            self.close_connection = True
            self.server.unread.discard(connection)
            return
        # serving, then no longer unread: drain sees it in one or the other
        self.server.serving.add(connection)
        self.server.unread.discard(connection)
        try:
            # (the rest of a longer line would be taken for the next request)
            if len(self.raw_requestline) > 65536:
                self.refuse_line(414)
            else:
                self.serve_request()
        finally:
            self.server.serving.discard(connection)

    def parse_request(self):
        # (HTTP/0.9, a line with no version, would get a bare body, with no status line)
        if len(self.raw_requestline.split()) in (1, 2):
            return self.refuse_line(400, "The request line needs an HTTP version.")
        if not super().parse_request():
            return False
        if self.request_version not in ("HTTP/1.0", "HTTP/1.1"):
            return self.refuse_line(505, "This server speaks HTTP/1.0 and HTTP/1.1.")
        if self.rfile.bare_cr:
            return self.refuse_line(400, "A line of the request holds a CR that does "
                                         "not end it.")
        return True

    def refuse_line(self, status, explanation=None):
        """An error for a request that cannot be read, then a close; False."""
        self.command, self.path = None, ""
        self.send_error(status, None, explanation)
        return False

    def serve_request(self):
        if not self.parse_request():
            return
        # The body too, from the headers' end: trickled, it would hold this thread (408)
        if self.timeout:
            self.rfile.raw.deadline = time.monotonic() + self.timeout
        # The absolute form (a proxy's "POST http://host/mcp") names the host (RFC 9112)
        absolute = _ABSOLUTE_FORM.match(self.path)
        if absolute:
            self.path = "/" + absolute[2]
            del self.headers["Host"]
            self.headers["Host"] = absolute[1]
        self.body = _BodyReader(self.rfile, self.headers)
        if self.server.stopping and not self.body.refusal:
            self.body.refusal = (503, "Service Unavailable: the server is shutting "
                                      "down")
        environ = self.get_environ()
        environ["mcp_min.client_gone"] = self.client_gone
        writer = self.response_writer(self.body, self.wfile, self.get_stderr(),
                                      environ, multithread=True)
        writer.request_handler = self
        app = self.server.get_app()
        if self.body.refusal:
            app = self.body.refuse
        writer.run(app)

    def client_gone(self):
        """Did the client close its end (readable, nothing to read)?"""
        import socket
        connection = self.connection
        try:
            return _readable(connection) and not connection.recv(1, socket.MSG_PEEK)
        except (OSError, ValueError):
            return True

    def handle_expect_100(self):
        # (no "100 Continue" for a body the application refuses by its length: 413)
        length = self.headers.get("Content-Length", "")
        limit = self.server.max_body_bytes
        if limit is not None and _is_length(length) and int(length) > limit:
            return True
        return super().handle_expect_100()

    def send_error(self, code, message=None, explain=None):
        """The server's own refusals: a JSON-RPC error, a close; the status line has
        the standard phrase alone (the message may quote the client)."""
        phrase = self.responses.get(code, ("Error",))[0]
        said = ": ".join(filter(None, (phrase, message, explain)))
        self.log_error("code %d, message %s", code, said)
        # (never a bare body, as to "HTTP/0.9")
        self.request_version = "HTTP/1.1"
        if len(said) > 300:
            said = said[:299] + "…"
        body = error_frame(None, INVALID_REQUEST, said)
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = self.lingers = True
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, format, *args):
        # (it quotes the client: bounded and escaped)
        log.debug("HTTP %s: %s", self.client_address[0], _escaped(format % args, 500))

    def log_request(self, code="-", size="-"):
        log.debug("%s %s %s", _escaped(self.command, 100),
                  _escaped(getattr(self, "path", ""), 500), code)


class _HttpServerMixin:
    """The embedded server (on socketserver.ThreadingMixIn and wsgiref's WSGIServer): a
    stop signal ends serve_forever, then ``drain`` lets requests in progress finish."""

    daemon_threads = allow_reuse_address = True
    stopping = False
    # The signal that stopped serve_forever; shutdown() was called
    stop_signal = None
    closing = False
    # A connection is being taken (accepted, its thread started); a stop came meanwhile
    taking = stop_due = False

    def __init__(self, address):
        import socket
        # (past socketserver's 5 waiting, a burst of new clients waits for SYN resends)
        self.request_queue_size = socket.SOMAXCONN
        self.address_family = socket.AF_INET
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        # The connections with a request in progress, and those taken whose first
        # request is not read yet; the address each comes from
        self.serving, self.unread, self.peers = set(), set(), {}
        super().__init__(address, self.request_handler)

    def stop(self, signum=None, frame=None):
        """SIGTERM's and Ctrl+C's handler: KeyboardInterrupt ends serve_forever, but not
        while a connection is taken (socketserver would close it under its thread)."""
        if self.stop_signal is None:
            self.stop_signal = signum
        if self.taking:
            self.stop_due = True
        else:
            raise KeyboardInterrupt

    def get_request(self):
        # At max_connections, take none until one ends: clients wait in the kernel's
        # queue, not each on a thread
        while not self.slots.acquire(timeout=0.2):
            if self.closing:
                # serve_forever's loop goes on, and ends
                raise OSError("shutting down")
        self.taking = True
        try:
            connection = super().get_request()
        except BaseException:
            self.slots.release()
            raise
        # Past max_connections_per_address: 429 at once, lest one client hold them all
        address = connection[1][0]
        if list(self.peers.values()).count(address) >= self.per_address:
            self.slots.release()
            self.refuse(connection[0])
            raise OSError("too many connections from one address")
        self.peers[connection[0]] = address
        self.unread.add(connection[0])
        return connection

    def refuse(self, connection):
        """429 and a close, on a connection just taken, without waiting for it."""
        body = error_frame(None, INTERNAL_ERROR, "Too Many Requests: this server "
                           f"serves at most {self.per_address} connections from one "
                           "address (max_connections_per_address); close one first")
        head = (f"HTTP/1.1 {HTTP_STATUS[429]}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n")
        try:
            # (the empty buffer of a new connection takes it all)
            connection.setblocking(False)
            connection.send(head.encode() + body)
            # (a close with the request unread would reset it, and lose the 429)
            connection.recv(1 << 16)
        except OSError:
            pass
        connection.close()

    def shutdown(self):
        self.closing = True
        super().shutdown()

    # serve_forever's loop, after taking one
    def service_actions(self):
        self.taking = False
        if self.stop_due:
            raise KeyboardInterrupt

    def handle_error(self, request, client_address):
        _log_failure("serving a connection", sys.exc_info()[1])

    # its thread ends (or never began)
    def shutdown_request(self, request):
        self.unread.discard(request)
        self.peers.pop(request, None)
        try:
            super().shutdown_request(request)
        finally:
            self.slots.release()

    def drain(self, grace, endpoint=None):
        """After serve_forever: new requests get 503, GET and listen streams end, the
        requests in progress have ``grace`` seconds (a second signal cuts it short)."""
        self.stopping = True
        if endpoint is not None:
            endpoint.end_streams()
        deadline = time.monotonic() + grace
        # (a connection taken just before the stop whose request has come gets a 503)
        sent = [connection for connection in list(self.unread) if _readable(connection)]
        try:
            while time.monotonic() < deadline and (
                    self.serving or any(taken in self.unread for taken in sent)):
                time.sleep(0.01)
        except KeyboardInterrupt:
            pass
        if self.serving:
            log.warning("exiting with %d HTTP request(s) without a response after the "
                        "%.1f s grace period", len(self.serving), grace)


class _BodyReader:
    """wsgi.input: no further than Content-Length. A body whose end is unknown gets
    ``refusal`` (status, message), then a close, lest it pass for the next request."""

    def __init__(self, rfile, headers):
        lengths = headers.get_all("Content-Length", [])
        self.rfile = rfile
        self.left = 0
        self.refusal = None
        # (a line that is not a header ends those the parser reads: the length may be
        # among those after it)
        if headers.defects:
            self.refusal = (400, "Bad Request: a header line is not NAME: VALUE")
        elif "Transfer-Encoding" in headers:
            self.refusal = (411, "Length Required: send Content-Length (this server "
                                 "reads no Transfer-Encoding)")
        elif lengths and (len(set(lengths)) > 1 or not _is_length(lengths[0])):
            self.refusal = (400, "Bad Request: invalid Content-Length")
        elif lengths:
            self.left = int(lengths[0])

    def refuse(self, environ, start_response):
        """The WSGI application for a request that cannot be read."""
        status, message = self.refusal
        body = error_frame(None, INVALID_REQUEST, message)
        return _http_response(start_response, status, body)

    def discard(self):
        """Drop what the application left unread (64 KiB at most); False if not."""
        if 0 < self.left <= 1 << 16 and not self.refusal:
            self.read()
        return not (self.left or self.refusal)

    def read(self, size=-1):
        if size is None or size < 0 or size > self.left:
            size = self.left
        try:
            data = self.rfile.read(size)
        except TimeoutError:
            # where the body ends is unknown: the connection closes
            self.refusal = (408, "Request Timeout")
            raise
        self.left -= len(data)
        return data


def _parse_address(address):
    """"HOST:PORT", ":PORT", "PORT" or "[::1]:PORT" -> (host, port); by default
    127.0.0.1: nothing else can reach the server unless asked."""
    host, _, port = str(address).rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit():
        raise ValueError(f"not an address: {address!r} (use HOST:PORT, e.g. "
                         "127.0.0.1:8000)")
    return host, int(port)
# ======================================================================================
# Client
# ======================================================================================

class ProtocolError(Exception):
    """The server broke the protocol: a result of the wrong shape, a repeated cursor."""


def _expect(value, what, kind=dict):
    """``value`` if it is a ``kind``, else ProtocolError."""
    if not isinstance(value, kind):
        shape = {dict: "an object", list: "a list"}[kind]
        raise ProtocolError(f"{what} must be {shape}; the server sent "
                            f"{_preview(value)}")
    return value


class _HttpPoster(Stream):
    """A Client's stream to a server at a URL (Streamable HTTP): each frame a POST, a
    request's on a thread of its own, so that its SSE stream flows while it waits."""

    session_id = None
    closed = False

    def __init__(self, client, url, headers):
        import http.client
        from urllib.parse import urlsplit
        parts = urlsplit(url)
        self.client = client
        self.url = url
        self.path = parts._replace(scheme="", netloc="").geturl() or "/"
        self.connect = functools.partial(http.client.HTTPConnection, parts.netloc)
        if parts.scheme == "https":
            self.connect = functools.partial(http.client.HTTPSConnection, parts.netloc)
        self.headers = headers or {}

    def send(self, frame, verb="POST"):
        if self.closed:
            return False
        if self.client.trace and frame:
            self.client.trace("out", frame)
        try:
            message = dict(json.loads(frame or "{}"))
            params = dict(message.get("params") or {})
            version = dict(params.get("_meta") or {}).get(PROTOCOL_VERSION_KEY)
        except (ValueError, TypeError):
            message, params, version = {}, {}, None
        method = message.get("method")
        headers = {"Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream",
                   "MCP-Protocol-Version": version or self.client.protocol_version,
                   "Mcp-Session-Id": self.session_id, **self.headers}
        # 2026-07-28 repeats in headers what the body says (HttpExchange.check_headers)
        if version in STATELESS_PROTOCOL_VERSIONS:
            headers["Mcp-Method"] = method
            headers["Mcp-Name"] = params.get("name", params.get("uri"))
        headers = {name: value for name, value in headers.items() if type(value) is str}
        if not (method and "id" in message):
            return self.post(verb, frame, headers)
        _start_thread(self.post, verb, frame, headers, message["id"])
        return True

    def post(self, verb, frame, headers, request_id=None):
        """Send; each message of the response goes to the Client's read_loop; then the
        request fails if it still waits, with what came instead."""
        import http.client
        import io
        connection = self.connect(timeout=self.client.timeout)
        error = ConnectionError(f"{self.url} sent no response to {request_id!r}")
        limit = self.client.max_line_bytes
        response = None
        try:
            connection.request(verb, self.path, frame, headers)
            response = connection.getresponse()
            self.session_id = response.getheader("Mcp-Session-Id", self.session_id)
            kind = response.getheader("Content-Type", "")
            body = b""
            if kind.startswith("text/event-stream"):
                lines = iter(functools.partial(response.readline, limit), b"")
                data = (line[5:].lstrip(b" ") for line in lines if line[:5] == b"data:")
                self.client.read_loop(types.SimpleNamespace(
                    readline=lambda size: next(data, b"")), limit)
            else:
                body = response.read(limit)
            if kind.startswith("application/json"):
                self.client.read_loop(io.BytesIO(b" ".join(body.splitlines())), limit)
            if response.status >= 400:
                error = JSONRPCError(INTERNAL_ERROR, _escaped(
                    f"HTTP {response.status} {response.reason}: "
                    + body.decode(errors="replace"), 300))
        except (OSError, ValueError, http.client.HTTPException) as e:
            error = ConnectionError(f"{verb} {self.url}: {e}")
        finally:
            connection.close()
        self.client._settle(request_id, error=error)
        return response is not None

    def respond(self, frame, before=None):
        if frame is not None:
            self.send(frame)

    def close(self, timeout=None):
        """No frame goes out any more; a session the server keeps ends (DELETE)."""
        if self.session_id is not None:
            self.send(None, "DELETE")
        self.closed = self.client.closed = True


class Client(Peer):
    """An MCP client on the same JSON-RPC core, for tests, scripts and workshops."""

    # (``stateless``'s former name)
    modern = property(operator.attrgetter("stateless"))

    def __init__(self, target, *, roots=None, sampling=None, elicitation=None,
                 protocol_version=LATEST_PROTOCOL_VERSION, client_info=None,
                 capabilities=None, timeout=30.0, env=None, cwd=None, stderr=None,
                 trace=None, on_notification=None, initialize=True, era=HANDSHAKE,
                 log_level=None, max_rounds=10, max_line_bytes=64 << 20, headers=None):
        # ("legacy": the handshake era's former name)
        if era == "legacy":
            era = HANDSHAKE
        eras = (HANDSHAKE, "auto") + STATELESS_PROTOCOL_VERSIONS
        if era not in eras:
            raise ValueError(f"era must be one of {eras}")
        self.era = era
        self.stateless = False
        self.log_level = log_level
        self.max_rounds = max_rounds
        self.max_line_bytes = max_line_bytes
        self.timeout = timeout
        self.on_notification = on_notification
        self.notifications = []
        self.progress_handlers = {}
        self.progress_tokens = count(1).__next__
        self.junk = []
        self.subscriptions = {}
        self.cancelled_requests = set()
        self.callbacks = {"roots/list": roots, "sampling/createMessage": sampling,
                          "elicitation/create": elicitation}
        # By default, those of the callbacks given
        if capabilities is None:
            capabilities = {method.split("/")[0]: {}
                            for method, callback in self.callbacks.items() if callback}
            if roots:
                capabilities["roots"] = {"listChanged": True}
        self.capabilities = capabilities
        self.client_info = client_info or {"name": "mcp_min-client",
                                           "version": __version__}
        self.protocol_version = self.handshake_version = protocol_version
        self.server_info = self.server_capabilities = self.instructions = None
        # Last: the reader reads the above
        self._start(target, trace, headers, env=env, cwd=cwd, stderr=stderr)
        if initialize:
            try:
                self.connect()
            except BaseException:
                try:
                    self.close(timeout=1.0)
                except Exception:
                    pass
                raise

    def _start(self, target, trace, headers, **popen_options):
        """Start the server (a process, or a Server on a thread), and the reader."""
        self.process = self.server_thread = self.reader = None
        if trace:
            trace = self._guarded_trace(trace)
        self.trace = trace
        if isinstance(target, str) and target.startswith(("http://", "https://")):
            return super().__init__(_HttpPoster(self, target, headers))
        if isinstance(target, Server):
            write_fd, rfile = self._serve_in_memory(target)
        else:
            import subprocess
            # A process group of its own: Ctrl+C reaches this client alone, which
            # cancels what is in flight and closes the server's input (__exit__)
            self.process = subprocess.Popen(
                target, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                start_new_session=os.name == "posix", **popen_options)
            write_fd, rfile = self.process.stdin.fileno(), self.process.stdout
        super().__init__(Writer(write_fd, trace))
        self.reader = threading.Thread(target=self._read, args=(rfile,), daemon=True,
                                       name="mcp_min-client-reader")
        self.reader.start()

    def _serve_in_memory(self, server):
        """Serve ``server`` on a thread over OS pipes (the stdio code): our ends."""
        server_reads, client_writes = os.pipe()
        client_reads, server_writes = os.pipe()

        def serve():
            try:
                server.serve_connection(server_reads, server_writes)
            finally:
                os.close(server_reads)
                os.close(server_writes)
        self.server_thread = threading.Thread(target=serve, daemon=True,
                                              name="mcp_min-server")
        self.server_thread.start()
        return client_writes, open(client_reads, "rb", buffering=1 << 16)

    def _guarded_trace(self, trace):
        """``trace``, off once it raises: raising would end the reader thread."""
        def guarded(direction, raw):
            try:
                trace(direction, raw)
            except Exception as e:
                self.trace = self.stream.trace = None
                if not isinstance(e, BrokenPipeError):
                    log.warning("the client's trace failed and is switched off: %s: %s",
                                type(e).__name__, e)
        return guarded

    def _read(self, rfile):
        """The reader's thread: once the server's output ends, what waits fails."""
        try:
            self.read_loop(rfile, self.max_line_bytes)
        finally:
            self.closed = True
            code = None
            if self.process is None:
                rfile.close()
            else:
                try:
                    code = self.process.wait(1)
                except Exception:
                    pass
            why = "the server closed the connection"
            if code:
                why += f" (exit code {code})"
            if code == 0 and self.server_info is None:
                why += (": it exited before answering; does the script call "
                        "server.run()?")
            self.fail_pending(ConnectionError(why))
            for listen_id in list(self.subscriptions):
                self.end_subscription(listen_id, why)

    # -- lifecycle ---------------------------------------------------------------------
    def connect(self):
        """Open the session in the client's ``era``: the result of the opening call."""
        if self.era == HANDSHAKE:
            return self.initialize()
        # (a handshake-only server may never respond to a method it lacks)
        probe_timeout = 10.0
        if self.timeout is not None:
            probe_timeout = min(self.timeout, 10.0)
        try:
            result = self.discover(timeout=probe_timeout)
        except (TimeoutError, JSONRPCError) as e:
            if self.era != "auto":
                raise
            if getattr(e, "code", None) == UNSUPPORTED_VERSION:
                data = e.data if isinstance(e.data, dict) else {}
                self._check_handshake_offered(data.get("supported"))
            # Else a handshake-only server: not an error
            return self.initialize()
        if self.stateless:
            return result
        supported = result.get("supportedVersions")
        if self.era != "auto":
            raise ConnectionError(f"the server does not serve {self.era}: it offers "
                                  f"{_preview(supported)}")
        # A discover result: not a handshake-only server
        if supported is not None:
            self._check_handshake_offered(supported)
        return self.initialize()

    def _check_handshake_offered(self, supported):
        """A stateless-era server without 2026-07-28 must offer a handshake version."""
        if isinstance(supported, list) and any(
                version in PROTOCOL_VERSIONS for version in supported):
            return
        offered = "other versions"
        if supported:
            offered = f"protocol versions {_preview(supported)}"
        raise ConnectionError(f"the server supports {offered}: not 2026-07-28, and as "
                              "a server of the stateless era it has no handshake to "
                              "fall back to")

    def discover(self, timeout=None):
        """server/discover; if the server offers 2026-07-28, the client speaks it."""
        result = self.request("server/discover", {"_meta": self.envelope(V2026_07)},
                              timeout)
        result = _expect(result, "the result of server/discover")
        supported = result.get("supportedVersions")
        if supported is not None:
            _expect(supported, "supportedVersions in the result of server/discover",
                    list)
        if V2026_07 in (supported or ()):
            meta = _expect(result.get("_meta") or {},
                           "_meta in the result of server/discover")
            self._opened("server/discover", result, V2026_07, meta.get(SERVER_INFO_KEY))
            self.stateless = True
        return result

    def envelope(self, version=None):
        """The _meta keys a 2026-07-28 request carries: who and what this client is."""
        meta = {PROTOCOL_VERSION_KEY: version or self.protocol_version,
                CLIENT_CAPABILITIES_KEY: self.capabilities,
                CLIENT_INFO_KEY: self.client_info}
        if self.log_level:
            meta[LOG_LEVEL_KEY] = self.log_level
        return meta

    def initialize(self):
        """initialize, then notifications/initialized."""
        self.stateless = False
        params = {"protocolVersion": self.handshake_version,
                  "capabilities": self.capabilities,
                  "clientInfo": self.client_info}
        result = _expect(self.request("initialize", params), "the result of initialize")
        version = result.get("protocolVersion")
        if version not in PROTOCOL_VERSIONS:
            raise ConnectionError(f"the server offers protocol version "
                                  f"{_preview(version)}, which this client does not "
                                  "speak")
        self._opened("initialize", result, version, result.get("serverInfo"))
        self.notify("notifications/initialized")
        return result

    def _opened(self, method, result, version, server_info):
        """The session is open in ``version``: keep what the server says of itself."""
        self.server_capabilities = _expect(result.get("capabilities", {}),
                                           f"capabilities in the result of {method}")
        self.protocol_version = version
        self.server_info = server_info
        self.instructions = result.get("instructions")

    def close(self, timeout=5.0):
        """Close the server's input (MCP's shutdown signal); wait for the server."""
        writer = self.stream
        writer.close(timeout)
        # Over HTTP: no process, no reader
        if self.reader is None:
            return
        fd = writer.write_fd
        writer.write_fd = None
        if self.process is None:
            if fd is not None:
                os.close(fd)
            self.server_thread.join(timeout)
        else:
            if fd is not None:
                self.process.stdin.close()
            # Terminate it after ``timeout``, kill it after as long again; then wait
            for stop in (self.process.terminate, self.process.kill):
                try:
                    self.process.wait(timeout)
                    break
                except Exception:
                    stop()
            self.process.wait()
            self.process.stdout.close()
        self.reader.join(timeout)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, traceback):
        # Left by an exception (Ctrl+C), the requests still waiting are cancelled
        if exc_type is None:
            self.close()
        else:
            self.cancel_all(f"the client stopped ({exc_type.__name__})")
            self.close(timeout=0.5)

    def cancel_all(self, reason=None):
        """Cancel every request of ours still waiting for its response."""
        for request_id in list(self.pending):
            self.cancel(request_id, reason)

    # -- incoming ----------------------------------------------------------------------
    def dispatch(self, message, stream=None):
        # 2026-07-28: a client MUST NOT write responses on stdio, errors included; a
        # Writer with nowhere to write drops them
        if stream is None and self.stateless:
            stream = Writer(None)
        return super().dispatch(message, stream)

    def handle_batch(self, items, stream):
        # (protocol 2025-03-26 has batches, and a client must take them)
        if self.protocol_version != V2025_03:
            return super().handle_batch(items, stream)
        self.dispatch_batch(items, stream)

    def handle_request(self, message, stream):
        threading.Thread(target=self._answer, args=(message, stream),
                         daemon=True).start()

    def answer(self, method, params):
        """The callbacks' answer to a request, or a question, from the server."""
        if method == "ping":
            return {}
        callback = self.callbacks.get(method)
        if callback is None:
            raise JSONRPCError(METHOD_NOT_FOUND, f"Method not found: {method}")
        if method == "roots/list":
            return {"roots": callback()}
        result = callback(params or {})
        if not isinstance(result, dict):
            raise TypeError(f"the {method} callback returned {_preview(result)}, "
                            "not a dict")
        return result

    def _answer(self, message, stream):
        """Respond to a request of the server's with ``answer``, or its error."""
        rid = message["id"]
        try:
            result = self.answer(message["method"], message.get("params"))
            frame = encode_message({"jsonrpc": "2.0", "id": rid, "result": result})
        except JSONRPCError as e:
            frame = error_frame(rid, e.code, e.message, e.data)
        except Exception as e:
            frame = error_frame(rid, INTERNAL_ERROR, f"{type(e).__name__}: {e}")
        # Cancelled by the server: the spec forbids a response
        if rid in self.cancelled_requests:
            self.cancelled_requests.discard(rid)
            frame = None
        stream.respond(frame)

    def handle_unparsable(self, line, error):
        # A server writing anything but JSON-RPC to stdout is broken: kept, to say so
        self.junk.append(line.decode("utf-8", "replace").rstrip("\r\n"))

    def handle_notification(self, message):
        """Keep the notification, and act on it (a failing callback is logged)."""
        self.notifications.append(message)
        params = message.get("params") or {}
        method = message["method"]
        meta = params.get("_meta")
        listen_id = meta.get(SUBSCRIPTION_ID_KEY) if isinstance(meta, dict) else None
        try:
            if listen_id is not None:
                self.deliver(listen_id, message)
            if method == "notifications/cancelled":
                request_id = params.get("requestId")
                self.cancelled_requests.add(request_id)
                self.end_subscription(request_id, "the server cancelled the "
                                                  f"subscription {request_id!r}")
            elif method == "notifications/progress":
                handler = self.progress_handlers.get(params.get("progressToken"))
                if handler:
                    handler(params)
            if self.on_notification:
                self.on_notification(message)
        except Exception as e:
            _log_failure("a notification callback", e)

    # -- requests ----------------------------------------------------------------------
    def request(self, method, params=None, timeout=None, owner=None, request_id=None):
        if threading.current_thread() is self.reader:
            raise RuntimeError(f"{method}: a request from a notification or progress "
                               "callback could never be answered (the callback runs "
                               "on the thread that reads the responses); make it from "
                               "a thread of its own")
        if self.stateless:
            params = dict(params or {})
            meta = params.get("_meta") or {}
            if not isinstance(meta, dict):
                raise TypeError("params._meta must be a dict, not "
                                f"{type(meta).__name__}")
            params["_meta"] = {**self.envelope(), **meta}
        if timeout is None:
            timeout = self.timeout
        result = super().request(method, params, timeout, owner, request_id)
        if self.stateless and isinstance(result, dict):
            kind = result.get("resultType", "complete")
            if kind not in ("complete", "input_required"):
                raise ProtocolError(f"{method}: the server sent resultType "
                                    f"{_preview(kind)}, which this client does not "
                                    "know")
        return result

    def request_with_input(self, method, params, timeout=None):
        """A request whose input_required rounds are answered with the callbacks."""
        result = self.request(method, params, timeout)
        rounds = 0
        while isinstance(result, dict) and result.get("resultType") == "input_required":
            if rounds >= self.max_rounds:
                raise JSONRPCError(INTERNAL_ERROR, f"{method}: still input_required "
                                   f"after {self.max_rounds} rounds; giving up")
            rounds += 1
            asked = _expect(result.get("inputRequests") or {},
                            f"inputRequests in the result of {method}")
            answers = {}
            for key, question in asked.items():
                _expect(question, f"inputRequests[{_preview(key)}] in the result of "
                                  f"{method}")
                answers[key] = self.answer(question.get("method"),
                                           question.get("params"))
            retry = dict(params, inputResponses=answers)
            if "requestState" in result:
                retry["requestState"] = result["requestState"]
            if not asked:
                time.sleep(0.05)
            result = self.request(method, retry, timeout)
        return result

    # -- 2026-07-28 subscriptions ------------------------------------------------------
    def listen(self, *, tools=False, prompts=False, resources=False, resource_uris=None,
               timeout=None):
        """subscriptions/listen (2026-07-28): a Subscription, once acknowledged."""
        kinds = (("tools", tools), ("prompts", prompts), ("resources", resources))
        wanted = {f"{kind}ListChanged": True for kind, on in kinds if on}
        if resource_uris:
            wanted["resourceSubscriptions"] = list(resource_uris)
        return self._listen(wanted, timeout)[0]

    def _listen(self, wanted, timeout):
        """subscriptions/listen: the Subscription, the ack's params (its response)."""
        rid = f"listen-{self.next_id()}"
        subscription = self.subscriptions[rid] = Subscription(self, rid)
        try:
            ack = self.request("subscriptions/listen", {"notifications": wanted},
                               timeout, request_id=rid)
        except BaseException:
            self.subscriptions.pop(rid, None)
            raise
        subscription.honoured = ack.get("notifications", {})
        return subscription, ack

    def end_subscription(self, listen_id, why):
        """The stream is over: its next() raises ConnectionError, after what came."""
        subscription = self.subscriptions.pop(listen_id, None)
        if subscription is not None:
            subscription.events.put(ConnectionError(why))

    def handle_response(self, message):
        rid = message.get("id")
        if rid in self.subscriptions and rid not in self.pending:
            return self.end_subscription(rid, "the server ended the subscription "
                                              f"{rid!r}; listen again to go on")
        super().handle_response(message)

    def deliver(self, listen_id, message):
        subscription = self.subscriptions.get(listen_id)
        if subscription is None:
            return
        if message["method"] == "notifications/subscriptions/acknowledged":
            self._settle(listen_id, message.get("params") or {})
        else:
            subscription.events.put(message)

    # -- high-level methods ------------------------------------------------------------
    def ping(self):
        return self.request("ping")

    def list_all(self, method, key):
        """Every item of a paginated list method, following nextCursor to the end."""
        items, params, seen = [], {}, set()
        while True:
            result = _expect(self.request(method, params), f"the result of {method}")
            items += _expect(result.get(key, []), f"{key} in the result of {method}",
                             list)
            cursor = result.get("nextCursor")
            if cursor is None:
                return items
            if not isinstance(cursor, str) or cursor in seen:
                raise ProtocolError(f"{method}: the server sent nextCursor "
                                    f"{_preview(cursor)}, which is not a new cursor (a "
                                    "string it has not sent)")
            seen.add(cursor)
            params = {"cursor": cursor}

    list_tools = functools.partialmethod(list_all, "tools/list", "tools")
    list_resources = functools.partialmethod(list_all, "resources/list", "resources")
    list_resource_templates = functools.partialmethod(
        list_all, "resources/templates/list", "resourceTemplates")
    list_prompts = functools.partialmethod(list_all, "prompts/list", "prompts")

    def call_tool(self, name, arguments=None, *, progress=None, meta=None,
                  timeout=None):
        """Call a tool; ``progress`` gets each notifications/progress params."""
        params = {"name": name, "arguments": arguments or {}}
        token = None
        if progress is not None:
            token = f"progress-{self.progress_tokens()}"
            self.progress_handlers[token] = progress
            meta = dict(meta or {}, progressToken=token)
        if meta:
            params["_meta"] = meta
        try:
            return self.request_with_input("tools/call", params, timeout)
        finally:
            self.progress_handlers.pop(token, None)

    def cancel(self, request_id, reason=None):
        """Cancel a request of ours: tell the server, and stop waiting for it."""
        params = {"requestId": request_id}
        if reason:
            params["reason"] = reason
        self.notify("notifications/cancelled", params)
        self._settle(request_id,
                     error=Cancelled(f"request {request_id!r} was cancelled"))

    def read_resource(self, uri):
        return self.request_with_input("resources/read", {"uri": uri})

    def get_prompt(self, name, arguments=None):
        params = {"name": name, "arguments": arguments or {}}
        return self.request_with_input("prompts/get", params)

    def complete(self, ref, argument, value, context=None):
        """Completion for a prompt argument or a template variable: the inner dict."""
        params = {"ref": ref, "argument": {"name": argument, "value": value}}
        if context:
            params["context"] = {"arguments": context}
        return self.request("completion/complete", params)["completion"]

    def set_logging_level(self, level):
        """logging/setLevel; in 2026-07-28, the level every later request asks for."""
        if self.stateless:
            self.log_level = level
            return {}
        return self.request("logging/setLevel", {"level": level})

    def subscribe(self, uri):
        return self.request("resources/subscribe", {"uri": uri})

    def unsubscribe(self, uri):
        return self.request("resources/unsubscribe", {"uri": uri})


class Subscription:
    """An open subscriptions/listen stream (2026-07-28), from Client.listen()."""

    def __init__(self, client, request_id):
        self.client = client
        self.id = request_id
        self.honoured = None
        self.events = SimpleQueue()

    def next(self, timeout=None):
        """The next notification; TimeoutError if none in time, ConnectionError once
        the stream is over."""
        if timeout is None:
            timeout = self.client.timeout
        try:
            event = self.events.get(timeout=timeout)
        except Empty:
            raise TimeoutError(f"no notification on {self.id!r} in time") from None
        if isinstance(event, ConnectionError):
            self.events.put(event)
            raise ConnectionError(*event.args)
        return event

    def close(self):
        if self.client.subscriptions.pop(self.id, None) is not None:
            self.client.notify("notifications/cancelled", {"requestId": self.id})

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

# ======================================================================================
# Command line (a first reading can skip this)
# ======================================================================================

# Tools for seeing the protocol: `demo` plays a whole session with the gift server
# (built in, demo_server(): `serve` with no file serves it too), `inspect` lists what a
# server offers, `call` makes one request, `repl` lets you type frames, `explain` says
# what a message is and what is wrong with it.

# --- explain ---------------------------------------------------------------

def explain(raw):
    """What a message is, and what is wrong with it: (summary, list of problems)."""
    try:
        message = json.loads(raw)
    except (ValueError, RecursionError) as e:
        return "not JSON", [f"not valid JSON ({e}): a receiver answers -32700 Parse "
                            "error"]
    if isinstance(message, list):
        return f"a batch of {len(message)}", [
            "a JSON array is a batch: only protocol 2025-03-26 has batches; from "
            "2025-06-18 send one message per line"]
    problems = []
    kind = "invalid message"
    try:
        kind = classify(message)
    except JSONRPCError as e:
        problems.append(e.message.removeprefix("Invalid Request: "))
    if not isinstance(message, dict):
        return kind, problems
    method = message.get("method")
    params = message.get("params") if isinstance(message.get("params"), dict) else {}
    known = isinstance(method, str) and method in METHODS
    problems += _frame_problems(message, kind, method, known)
    if known:
        _explain_params(method, params, problems)
    elif isinstance(method, str):
        # Not an MCP method: name the one meant (a close one, or one ending so)
        import difflib
        close = difflib.get_close_matches(method, METHODS, n=1)
        close += [name for name in METHODS if name.endswith("/" + method)]
        hint = f": did you mean {close[0]!r}?" if close else ""
        problems.append(f"{method!r} is not an MCP method{hint}")
    if kind == "invalid message":
        return kind, problems
    if kind == "response":
        return _explain_response(message, problems), problems
    summary = describe_frame(message) + _explain_envelope(method, params, problems)
    return summary, problems


def _frame_problems(message, kind, method, known):
    """What MCP finds wrong in a message's JSON-RPC frame: its id, result and error."""
    notification = known and method.startswith("notifications/")
    null_id = message.get("id", 0) is None
    error = message.get("error")
    bad_error = isinstance(error, dict) and (
        type(error.get("code")) is not int or not isinstance(error.get("message"), str))
    # A result is an object; a tool's content a list of blocks (an elicitation's is not)
    result = message.get("result")
    content = []
    if isinstance(result, dict):
        content = result.get("content", [])
    example = '{"content": [{"type": "text", "text": "Sunny, 22°C"}]}'
    blocks = ("text", "image", "audio", "resource_link", "resource")
    checks = (
        ("method" in message and ("result" in message or "error" in message),
         "a message has a method (a request or notification) or a result or error (a "
         "response), never both: a response does not repeat the method"),
        ("method" in message and null_id,
         "a null id is not allowed in MCP: give a request a string or integer id, or "
         "drop the id to make it a notification"),
        ("result" in message and "error" in message,
         "a response carries result or error, never both"),
        (notification and "id" in message,
         f"{method} is a notification: it must not carry an id, or the receiver has to "
         "answer it as a request"),
        (known and not notification and "id" not in message,
         f"{method} is a request: without an id it is a notification and gets no "
         "answer"),
        (kind == "response" and null_id,
         '"id": null: the 2025-11-25 schema omits the id of an error to an unreadable '
         "request instead, and some clients reject null"),
        (kind == "response" and bad_error,
         "error needs an integer code and a string message"),
        (kind == "response" and "result" in message and not isinstance(result, dict),
         f"result must be an object, not {_typed_preview(result)}: every MCP result "
         f"is one, as a tool's: {example}"),
        (not isinstance(content, (list, dict)),
         f"result.content must be a list of content blocks, as in {example}, not "
         f"{_typed_preview(content)}"),
        *((not isinstance(block, dict) or block.get("type") not in blocks,
           f"result.content[{i}] must be a content block, an object whose type is "
           f"{', '.join(blocks)}; not {_typed_preview(block)}"
           + _did_you_mean(str(isinstance(block, dict) and block.get("type")), blocks))
          for i, block in enumerate(content) if isinstance(content, list)),
    )
    return [problem for found, problem in checks if found]


def _explain_params(method, params, problems):
    """What is wrong with the params of a known method (METHODS gives their types)."""
    answer = "a server answers -32602"
    if method.startswith("notifications/"):
        answer = "a receiver ignores it"
    elif method in ("sampling/createMessage", "elicitation/create", "roots/list"):
        answer = "a client answers -32602"
    problems += filter(None, (_param_problem(key, kinds, params, answer)
                              for key, kinds in METHODS[method].params.items()))
    level = params.get("level")
    if (method in ("logging/setLevel", "notifications/message")
            and isinstance(level, str) and level not in LOG_LEVELS):
        problems.append(f"params.level must be one of {', '.join(LOG_LEVELS)}, not "
                        f"{_preview(level)}: {answer}")
    arguments = params.get("arguments")
    if method == "prompts/get" and isinstance(arguments, dict):
        for name, value in arguments.items():
            if not isinstance(value, str):
                problems.append(f"params.arguments.{name} must be a string (the spec's "
                                f"prompt arguments are), not {_typed_preview(value)}: "
                                "a strict server answers -32602")


# What a value of each JSON type is called in a problem ("a string" for the others)
_A_JSON_TYPE = {"array": "an array", "integer": "an integer", "object": "an object",
                "null": "null"}


def _param_problem(key, kinds, params, answer):
    """The problem with the param ``key`` ("?" at its end: optional) in ``params``."""
    optional = key.endswith("?")
    key = key.rstrip("?")
    if key not in params:
        hint = _did_you_mean(key, params=params)
        # An optional param is missing only if it was sent misnamed.
        if optional and not hint:
            return None
        return f"params.{key} is missing{hint}"
    value = params[key]
    kinds = kinds.split()
    found = _json_type(value)
    if "any" in kinds or found in kinds or (found == "integer" and "number" in kinds):
        return None
    wanted = " or ".join(_A_JSON_TYPE.get(kind, f"a {kind}") for kind in kinds)
    return f"params.{key} must be {wanted}, not {_typed_preview(value)}: {answer}"


def _explain_envelope(method, params, problems):
    """The 2026-07-28 note for a summary line ("" if none); the envelope's problems."""
    meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
    if method == "notifications/subscriptions/acknowledged":
        listen = json.dumps(meta.get(SUBSCRIPTION_ID_KEY))
        return (f" (acknowledges subscriptions/listen {listen}: notifications tagged "
                "with that id follow)")
    if method.startswith("notifications/") or not is_stateless(method, meta):
        return ""
    try:
        Envelope(params.get("_meta"))
    except JSONRPCError as e:
        what = e.message.removeprefix("Invalid params: ")
        problems.append(f"{what}: a server answers {e.code}")
    if METHODS.get(method, CUSTOM_METHOD).era == HANDSHAKE:
        problems.append(f"{method} is not part of 2026-07-28: a server answers -32601")
    return (" (2026-07-28: stateless; params._meta carries the version and the "
            "client's capabilities)")


def _explain_response(message, problems):
    """The summary line of a response, and an input_required result's problems."""
    summary = describe_frame(message)
    result = message.get("result")
    if not isinstance(result, dict) or result.get("resultType") != "input_required":
        if summary.endswith(" (isError)"):
            return (summary.removesuffix(" (isError)") + " (a tool result with "
                    "isError: a business error, not a protocol error)")
        if "error" in message:
            summary += " (a protocol error)"
        return summary
    questions = result.get("inputRequests") or {}
    if not isinstance(questions, dict):
        problems.append("inputRequests must be an object (a key for each question), "
                        f"not {_preview(questions)}")
        questions = {}
    elif not questions and "requestState" not in result:
        problems.append("an input_required result needs inputRequests, requestState or "
                        "both")
    asked = []
    for key, question in questions.items():
        if isinstance(question, dict):
            asked.append(f"{key}: {question.get('method')}")
        else:
            problems.append(f"inputRequests[{_preview(key)}] must be an object (a "
                            f"request: method and params), not {_preview(question)}")
    listed = f" ({', '.join(asked)})" if asked else ""
    return (f"{summary} (input_required: the server asks the client {len(questions)} "
            f"question(s){listed}; the client sends the request again, with a new id, "
            "the answers in inputResponses and requestState echoed)")


# --- demo ------------------------------------------------------------------

# The demo's catalogue: name, price in dollars, the occasions and interests it suits.
_GIFT_CATALOG = (
    ("Board game: Catan", 45, "birthday housewarming", "board games|games|strategy"),
    ("Dice set with velvet bag", 20, "birthday thank-you",
     "board games|games|roleplaying"),
    ("Cooperative game: Pandemic", 40, "birthday graduation",
     "board games|games|teamwork"),
    ("Cast-iron skillet", 35, "wedding housewarming", "cooking|food|kitchen"),
    ("Chef's knife", 90, "wedding housewarming anniversary", "cooking|food|kitchen"),
    ("Houseplant in a ceramic pot", 28, "housewarming thank-you",
     "plants|gardening|home"))
_OCCASIONS = ("birthday", "wedding", "anniversary", "graduation", "housewarming",
              "thank-you")


def demo_server():
    """The gift server of `demo`, and of `serve` with no file: examples/gift_server.py
    with a shorter catalogue, built in for a lone copy of this file."""
    server = Server("gift-server", "1.0.0", title="Gift picker", instructions=(
        "Suggests gifts from a small catalogue. Call suggest_gifts with the occasion, "
        "a budget in dollars and a few words about the recipient; read the "
        "gift_catalog resource for everything on offer."))
    read_only = {"readOnlyHint": True, "openWorldHint": False}

    # (The annotations are read in this module's globals when a tool is made: there
    # _typing imports typing, slow to import, on first use.)
    @server.tool(title="Gift ideas generator", annotations=read_only)
    def suggest_gifts(occasion: _typing.Literal[_OCCASIONS], budget: float,
                      recipient: str = "") -> dict:
        """Suggest gift ideas for an occasion, a budget in dollars and a few words about
        the recipient ("friend who loves board games")."""
        if budget <= 0:
            raise ToolError("The budget must be more than $0.")
        # Up to three gifts: those that match the most interests named first, then
        # the cheapest
        scored = []
        for name, price, occasions, interests in _GIFT_CATALOG:
            matched = sorted(i for i in interests.split("|") if i in recipient.lower())
            if price <= budget and occasion in occasions.split():
                scored.append((len(matched), -price, name, price, matched))
        if not scored:
            raise ToolError(f"No gifts in the catalogue for a {occasion} within "
                            f"${budget:g}. Try a larger budget or another occasion.")
        gifts = []
        for _, _, name, price, matched in sorted(scored, reverse=True)[:3]:
            why = f"a safe {occasion} pick"
            if matched:
                why = f"matches {', '.join(matched)}"
            gifts.append({"name": name, "price": price, "why": why})
        return {"occasion": occasion, "budget": budget, "gifts": gifts}

    @server.tool(title="Pick one gift", annotations=read_only)
    def pick_gift(occasion: _typing.Literal[_OCCASIONS], budget: float,
                  ctx: Context) -> dict:
        """Pick one gift for an occasion and a budget, asking the user who it is for."""
        schema = {"type": "object", "required": ["recipient"],
                  "properties": {"recipient": {"type": "string"}}}
        try:
            answer = ctx.elicit("Who is the gift for?", schema)
        except CapabilityError:
            # A client that cannot ask its user: pick anyway
            answer = {"action": "decline"}
        recipient = ""
        if answer["action"] == "accept":
            recipient = answer.get("content", {}).get("recipient", "")
        return suggest_gifts(occasion, budget, recipient)["gifts"][0]

    @server.resource("mcp://gift-server/resources/gift_catalog",
                     description="Base catalog of gifts with categories and prices",
                     mime_type="application/json")
    def gift_catalog() -> dict:
        return {"gifts": [{"name": name, "price": price, "occasions": occasions.split(),
                           "interests": interests.split("|")}
                          for name, price, occasions, interests in _GIFT_CATALOG]}

    @server.prompt(title="Congratulations style")
    def gift_congrats_style(recipient: str = "a friend",
                            occasion: str = "birthday") -> str:
        """Style guide for congratulations in a friendly tone."""
        return (f"You are a friendly assistant that writes short, warm {occasion} "
                f"congratulations for {recipient}. Two or three sentences, no "
                "clichés, one personal touch, and end with a wish for the year ahead.")
    return server


def _print_json(value):
    """A result on stdout as JSON, with JSON's escapes where stdout cannot encode it."""
    try:
        print(json.dumps(value, indent=2, ensure_ascii=False), flush=True)
    except UnicodeEncodeError:
        print(json.dumps(value, indent=2), flush=True)


def _client_trace(colour):
    return FramePrinter({"out": "C->S", "in": "S->C"}, sys.stdout, colour)


def _demo_answer(params):
    """The demo's user, answering pick_gift's question."""
    return {"action": "accept", "content": {"recipient": "a friend who loves cooking"}}


_BOARD_GAME_BIRTHDAY = {"occasion": "birthday", "budget": 100,
                        "recipient": "friend who loves board games"}
# The demo's two sessions, one in each era: the Client's options, then the steps, each
# a note to print (or None) and the Client method to call (if any) with its arguments.
_DEMO_SESSIONS = {
    HANDSHAKE: ({}, [
        ("The client starts the server as a subprocess and opens with initialize.",
         "initialize"),
        ("initialized was a notification: no id, so no response. Now discovery:",
         "request", "tools/list"),
        ("A tool call. structuredContent is for programs, the text block for the "
         "model.", "call_tool", "suggest_gifts", _BOARD_GAME_BIRTHDAY),
        ("A resource is addressable data, read by URI.",
         "read_resource", "mcp://gift-server/resources/gift_catalog"),
        ("A prompt is a reusable template the client can fill in.", "get_prompt",
         "gift_congrats_style", {"recipient": "Sam", "occasion": "birthday"}),
        ("A protocol error: a method that does not exist gets a JSON-RPC error.",
         "request", "tools/col"),
        (None, "request", "tools/call", {"name": "suggest_gift"}),
        ("Business errors are results with isError: the tool, or its argument check, "
         "said no.",
         "call_tool", "suggest_gifts", {"occasion": "wedding", "budget": 5}),
        (None, "call_tool", "suggest_gifts",
         {"occasion": "funeral", "budget": "a hundred bucks"}),
        ("Closing stdin ends the session; the server exits.",)]),
    V2026_07: ({"era": V2026_07, "elicitation": _demo_answer}, [
        ("Protocol 2026-07-28 has no handshake. The client may ask what the server "
         "speaks:", "discover"),
        ("Each request carries the envelope in params._meta: the version, the client's "
         "capabilities and name. The server remembers nothing between requests.",
         "call_tool", "suggest_gifts", _BOARD_GAME_BIRTHDAY),
        ("pick_gift must ask the user. The server sends no request: it answers "
         "input_required, with the question and a signed requestState. The client asks "
         "its user and sends the request again (a new id) with the answer; the tool "
         "runs again from the top, and this time gets the answer where it asked.",
         "call_tool", "pick_gift", {"occasion": "housewarming", "budget": 60}),
        ("Closing stdin ends it; the server exits.",)]),
}
# The list methods, each with the key of its result that holds the list.
_LIST_METHODS = (("tools/list", "tools"), ("resources/list", "resources"),
                 ("resources/templates/list", "resourceTemplates"),
                 ("prompts/list", "prompts"))
_DEMO_CLIENT_INFO = {"name": "mcp_min-demo", "version": __version__}
_DEMO_OPENINGS = {HANDSHAKE: "initialize, the handshake.",
                  "auto": "server/discover first (protocol 2026-07-28), initialize if "
                          "the server does not know it."}


def demo(colour=False, era=None):
    """Play the _DEMO_SESSIONS with the gift server (both, or the one of ``era``)."""
    command = [sys.executable, os.path.abspath(__file__), "serve"]
    for session_era, (options, steps) in _DEMO_SESSIONS.items():
        if era not in (None, session_era):
            continue
        with Client(command, trace=_client_trace(colour), initialize=False,
                    client_info=_DEMO_CLIENT_INFO, **options) as client:
            for note, *call in steps:
                if note:
                    _demo_note(note, colour)
                if call:
                    _demo_step(client, *call)
    return 0


def _demo_note(text, colour):
    text = f"# {text}"
    if colour:
        text = f"\x1b[1m{text}\x1b[0m"
    print("\n" + text, flush=True)


def _demo_step(client, method, *args, **options):
    """The Client ``method`` called; None for an error response (its frames show it)."""
    try:
        return getattr(client, method)(*args, **options)
    except JSONRPCError:
        return None


def _demo_answered(client, answer, colour, method, params):
    """demo_yours's client ``answer``s a question of the server's, after a note."""
    note = f"The server asks the client ({method}) in the middle of the call."
    if client.stateless:
        note = (f"The server needs the client ({method}), so in 2026-07-28 it answered "
                "input_required. The client sends the request again (a new id) with "
                "its answer and the requestState; the tool runs again from the top.")
    _demo_note(note, colour)
    return answer(method, params)


def _canned_callbacks(model):
    """Client callbacks with canned answers: a sampled text, decline, cwd as root."""
    import pathlib
    return {"sampling": lambda params: {
                "role": "assistant", "model": model,
                "content": {"type": "text", "text": "(a sampled reply)"}},
            "elicitation": lambda params: {"action": "decline"},
            "roots": lambda: [{"uri": pathlib.Path.cwd().as_uri(), "name": "cwd"}]}


def demo_yours(command, colour=False, era="auto"):
    """`demo -- CMD...`: a session with the user's own server, every frame shown."""
    opening = _DEMO_OPENINGS.get(era, f"protocol {era}, with no handshake.")
    _demo_note("The client starts your server as a subprocess and opens the session: "
               + opening, colour)
    with Client(command, trace=_client_trace(colour), client_info=_DEMO_CLIENT_INFO,
                era=era, **_canned_callbacks("demo")) as client:
        client.answer = functools.partial(_demo_answered, client, client.answer, colour)
        offered = client.server_capabilities or {}
        opened = f"protocol {client.protocol_version}"
        if client.stateless:
            opened = "2026-07-28"
        names = ", ".join(sorted(offered)) or "nothing"
        _demo_note(f"Your server speaks {opened} and offers: {names}. What it has:",
                   colour)
        found = {}
        for method, key in _LIST_METHODS:
            if method.split("/")[0] in offered:
                result = _demo_step(client, "request", method) or {}
                found[key] = result.get(key) or []
        # A use of the first tool, resource and prompt
        if found.get("tools"):
            tool = found["tools"][0]
            arguments = _example_arguments(tool.get("inputSchema") or {})
            _demo_note(f"A call of {tool['name']}, with arguments made from its "
                       "inputSchema (defaults, first choices, sample values) and a "
                       f"progressToken: {json.dumps(arguments)}", colour)
            _demo_step(client, "call_tool", tool["name"], arguments,
                       progress=lambda _: 0)
        if found.get("resources"):
            _demo_note("A resource is addressable data, read by URI.", colour)
            _demo_step(client, "read_resource", found["resources"][0]["uri"])
        if found.get("prompts"):
            prompt = found["prompts"][0]
            arguments = {a["name"]: "example" for a in prompt.get("arguments") or ()
                         if isinstance(a, dict) and a.get("required")}
            _demo_note("A prompt is a template the client fills in: "
                       f"{prompt['name']}.", colour)
            _demo_step(client, "get_prompt", prompt["name"], arguments)
        _demo_note("Closing stdin ends the session; the server exits.", colour)
    return 0


def _example_arguments(schema):
    """Arguments a tool's inputSchema accepts, for the demo: its required properties."""
    defs = schema.get("$defs") or {}
    properties = schema.get("properties") or {}
    return {name: _example_value(properties.get(name) or {}, defs)
            for name in schema.get("required") or []}


_EXAMPLE_STRINGS = {"date-time": "2026-01-01T12:00:00Z", "date": "2026-01-01",
                    "uri": "https://example.com/", "email": "someone@example.com"}


def _example_value(schema, defs, depth=0):
    """A value that fits ``schema``: one it names, else a sample of its type."""
    if not isinstance(schema, dict) or depth > 8:
        return None
    for key in ("default", "const"):
        if key in schema:
            return schema[key]
    for key in ("examples", "enum"):
        if schema.get(key):
            return schema[key][0]
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _example_value(defs.get(ref[8:]), defs, depth + 1)
    for key in ("anyOf", "oneOf", "allOf"):
        choices = [c for c in schema.get(key) or () if c.get("type") != "null"]
        if choices:
            return _example_value(choices[0], defs, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind == "string":
        return _EXAMPLE_STRINGS.get(schema.get("format"), "example")
    if kind in ("integer", "number"):
        # 42, moved within the bounds the schema gives
        step = 1 if kind == "integer" else 0.5
        value = max(42, schema.get("minimum", 42),
                    schema.get("exclusiveMinimum", 0) + step)
        value = min(value, schema.get("maximum", value),
                    schema.get("exclusiveMaximum", value + step) - step)
        return int(value) if kind == "integer" else value
    if kind == "boolean":
        return True
    if kind == "array":
        items = schema.get("prefixItems") or [schema.get("items") or {}]
        return [_example_value(item, defs, depth + 1) for item in items]
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        return {name: _example_value(value, defs, depth + 1)
                for name, value in properties.items()}
    return None


# --- call ------------------------------------------------------------------

_CALL_HELP = {"description": """\
Start a server (or reach one at its URL), make one request, print its result as JSON.

  SERVER_CMD...  the command that starts the server (python3 server.py), or its URL
  METHOD|TOOL    an MCP method (tools/list, resources/read, prompts/get, ping, ...),
                 or, without a slash, the name of a tool to call
  JSON           the method's params, or the tool's arguments (default: none): a JSON
                 object, the last word

The words after -- are read from the end: the JSON, if the last word starts with {, [
or ", then the method (it has a slash) or the tool; the words before them start the
server (all of them, with --tool or --method).
""", "epilog": """\
examples:
  mcp_min.py call -- python3 server.py tools/list
  mcp_min.py call -- python3 server.py add '{"a": 2, "b": 3}'
  mcp_min.py call --tool add --json '{"a": 2, "b": 3}' -- python3 server.py
  mcp_min.py call -- python3 server.py resources/read '{"uri": "file:///notes/a"}'
  mcp_min.py call -v --timeout 0 -- python3 slow.py countdown '{"steps": 60}'
  mcp_min.py call --token TOKEN https://example.com/mcp tools/list

A tool that fails still answers with a result (exit 0): its "isError" result is on
stdout, and its text on stderr, as written. A JSON-RPC error exits 1 with the code and
message on stderr. This client offers no sampling, elicitation or roots: a tool that
asks for them fails (error -32021 in 2026-07-28); repl answers them.
"""}
_CALL_USAGE = "call [options] {-- SERVER_CMD... | URL} METHOD|TOOL [JSON]"
# A word of `call` that ends so names the server's script, not a tool.
_SCRIPT_SUFFIXES = (".py", ".pyz", ".js", ".mjs", ".cjs", ".ts", ".sh", ".rb", ".jar",
                    ".exe")


def _pop_request(words, tool=None, method=None, json_text=None):
    """`call`'s (method, params) popped off ``words`` as _CALL_HELP says: from the
    words alone, never from which files exist; ValueError for a usage error."""
    named = tool is not None or method is not None
    # --json goes with --tool or --method only
    if not named and words and words[-1].lstrip()[:1] in ('{', '[', '"'):
        json_text = words.pop()
    params = _call_params(json_text)
    if not named:
        if len(words) < 2:
            raise ValueError("name a method or a tool after the server command: "
                             + _CALL_USAGE)
        name = words.pop()
        if name.lower().endswith(_SCRIPT_SUFFIXES) or name.startswith(("/", ".", "~")):
            raise ValueError(f"{_preview(name)} looks like the server's command: name "
                             "a method or a tool after it (--tool NAME and --method "
                             "METHOD take any name)")
        if "/" in name or name == "ping":
            method = name
        else:
            tool = name
    if not words:
        raise ValueError(f"the server command is missing: {_CALL_USAGE}")
    if tool is not None:
        params = {"name": tool, "arguments": params or {}}
        method = "tools/call"
    if params is not None and not isinstance(params.get("_meta", {}), dict):
        meta = _preview(params["_meta"])
        raise ValueError(f"params._meta must be an object, not {meta}")
    return method, params


def _finite_float(text):
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"{text} is out of the range of a number")
    return value


def _call_params(json_text):
    """The JSON of `call` (its last word, or --json) as an object; None without it."""
    if json_text is None:
        return None
    # As strict as a message: no NaN or Infinity, no number too large to send (1e999)
    decoder = json.JSONDecoder(parse_constant=_reject_constant,
                               parse_float=_finite_float)
    try:
        params = decoder.decode(json_text)
    except (ValueError, RecursionError) as e:
        raise ValueError(f"not valid JSON: {e}") from None
    if not isinstance(params, dict):
        raise ValueError(f"the arguments must be a JSON object, as in '{{\"a\": 1}}', "
                         f"not {_typed_preview(params)}")
    return params


def _call_command(args, words, colour):
    """`call`: one request; then each line from the server not JSON-RPC (exit 1)."""
    method, params = args.request
    era = args.era
    # e.g. ping: only in the handshake era
    if era == "auto" and METHODS.get(method, CUSTOM_METHOD).era == HANDSHAKE:
        era = HANDSHAKE
    options = {"timeout": args.timeout}
    if args.verbose:
        options.update(on_notification=_show_notification, log_level="debug")
    elif args.timeout is None:
        # No time limit: show that the call is alive
        options.update(on_notification=_show_progress)
    client = Client(args.target, era=era, headers=args.headers, **options)
    try:
        with client:
            code = _call(client, method, params, args)
    finally:
        # After close(), which has read all the server wrote, its last line too
        for line in client.junk:
            _print_text("mcp_min: the server wrote a line that is not JSON-RPC: "
                        + _escaped(line), sys.stderr)
    if client.junk:
        return 1
    return code


def _call(client, method, params, args):
    """`call`'s request made as its method needs, its result printed: the exit code."""
    if args.verbose or args.timeout is None:
        params = dict(params or {})
        params["_meta"] = {**(params.get("_meta") or {}), "progressToken": "call"}
    try:
        if args.verbose and "logging" in client.server_capabilities:
            client.set_logging_level("debug")
        if method == "subscriptions/listen":
            # Acknowledged by a notification, not a response
            wanted = (params or {}).get("notifications") or {}
            result = client._listen(wanted, None)[1]
            print("mcp_min: acknowledged; the notifications that follow are for a "
                  "longer session: repl's listen shows them", file=sys.stderr)
        elif METHODS.get(method, CUSTOM_METHOD).asks:
            # input_required: answered, with no callbacks
            result = client.request_with_input(method, params or {})
        else:
            result = client.request(method, params)
    except JSONRPCError as e:
        _print_text(f"error {e.code}: " + _escaped(e.message, keep="\n\t"), sys.stderr)
        return 1
    _print_json(result)
    if isinstance(result, dict) and result.get("isError") is True:
        shown = [block.get("text") for block in result.get("content") or ()
                 if isinstance(block, dict) and isinstance(block.get("text"), str)]
        _print_text(_escaped("\n".join(["mcp_min: the tool reported an error:",
                                         *shown]), keep="\n\t"), sys.stderr)
    return 0


def _show_notification(message):
    """`call -v`: a log message or progress from the server, on stderr as it arrives."""
    method = message.get("method")
    params = message.get("params") or {}
    if method == "notifications/message":
        data = params.get("data")
        if not isinstance(data, str):
            data = json.dumps(data, ensure_ascii=False)
        logger = f"{params['logger']}: " if params.get("logger") else ""
        line = f"[{params.get('level')}] {logger}{data}"
    elif method == "notifications/progress":
        total = ""
        if isinstance(params.get("total"), (int, float)):
            total = f"/{params['total']:g}"
        line = f"progress {params.get('progress')}{total}"
        if params.get("message"):
            line += f": {params['message']}"
    else:
        line = f"{method} {json.dumps(params, ensure_ascii=False)}"
    _print_text(_escaped(line), sys.stderr)


def _show_progress(message):
    if message.get("method") == "notifications/progress":
        _show_notification(message)


# --- repl ------------------------------------------------------------------

_REPL_GREETING = (
    "mcp_min repl: type a JSON line, or: init (the handshake) or discover "
    "(2026-07-28), tools, resources, prompts, ping (handshake), call NAME {args}, read "
    "URI, prompt NAME {args}, listen (2026-07-28), cancel ID, accept {...}, decline or "
    "cancel (to answer a question), help, quit")


def repl(command, colour=False, stdin=None, headers=None):
    """Type JSON lines (sent verbatim) or commands; see every frame as it crosses."""
    answers = SimpleQueue()
    client = Client(command, trace=_client_trace(colour), initialize=False,
                    headers=headers, **{**_canned_callbacks("repl"), "elicitation":
                                        functools.partial(_repl_question, answers)})
    commands = {
        "init": lambda a: client.initialize(),
        "ping": lambda a: client.ping(),
        "discover": lambda a: client.discover(),
        "listen": lambda a: client.listen(tools=True, prompts=True, resources=True),
        "tools": lambda a: client.request("tools/list"),
        "resources": lambda a: client.request("resources/list"),
        "prompts": lambda a: client.request("prompts/list"),
        "read": client.read_resource,
        "cancel": functools.partial(_repl_cancel, client, answers),
        "call": lambda a: client.call_tool(*_name_args(a), progress=lambda p: None),
        "prompt": lambda a: client.get_prompt(*_name_args(a)),
        "accept": lambda a: answers.put(dict(action="accept",
                                             content=json.loads(a or "{}"))),
        "decline": lambda a: answers.put(dict(action="decline")),
        "help": lambda a: print(_REPL_GREETING, flush=True)}
    print(_REPL_GREETING, flush=True)
    with client:
        for line in stdin or sys.stdin:
            line = line.strip()
            if line in ("quit", "exit"):
                break
            _repl_line(client, commands, line)
            # Let the response print before the prompt
            time.sleep(0.2)
        # No more answers: a question to come is declined; what is in flight ends
        answers.put({"action": "decline"})
        while client.pending:
            time.sleep(0.05)
    return 0


def _repl_line(client, commands, line):
    """A line typed at the repl: a frame sent as it is (mistakes included), or a
    command run (init, discover and help before the next line is read)."""
    name, _, arg = line.partition(" ")
    # ping is of the handshake era alone, listen of 2026-07-28
    if (name in ("ping", "listen") and client.server_capabilities is not None
            and (name == "ping") == client.stateless):
        _print_text(f"! {name}: not part of protocol {client.protocol_version}, which "
                    "this session speaks")
    elif line and name not in commands:
        if not client.send_frame(line.encode()):
            print("! not sent: the connection to the server is closed", flush=True)
    elif name in ("init", "discover", "help"):
        _run_repl_command(commands[name], arg)
    elif line:
        threading.Thread(target=_run_repl_command, args=(commands[name], arg.strip()),
                         daemon=True).start()


def _repl_question(answers, params):
    """The repl's elicitation: the question shown, then answered by the next accept
    {...}, decline or cancel typed (decline, once the input has ended)."""
    _print_text(f"? {_escaped(params.get('message'))} (accept {{...}}, decline or "
                "cancel)")
    return answers.get()


def _repl_cancel(client, answers, arg):
    """`cancel ID` cancels a request of ours; `cancel` alone answers a question."""
    if arg:
        return client.cancel(json.loads(arg))
    answers.put({"action": "cancel"})


def _run_repl_command(command, arg):
    """Run a repl command: its JSON-RPC error is in the frames shown already."""
    try:
        command(arg)
    except JSONRPCError:
        pass
    except Exception as e:
        _print_text(f"! {type(e).__name__}: " + _escaped(e, keep="\n"))


def _name_args(text):
    """`call NAME {args}` or `prompt NAME {args}`: the name, and the arguments."""
    name, _, args = text.partition(" ")
    if not args.strip():
        return name, {}
    return name, json.loads(args)


# --- the commands ----------------------------------------------------------

def main(argv=None):
    """The command line: parse the arguments, then run the command; the exit code."""
    parser = _argument_parser()
    args = parser.parse_args(argv)
    words = getattr(args, "words", [])
    if words[:1] == ["--"]:
        words = words[1:]
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    _check_arguments(parser, args, words)
    return _run_and_report(args, words)


def _argument_parser():
    import argparse
    parser = argparse.ArgumentParser(prog="mcp_min.py",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--version", action="version", version=f"mcp_min {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    serve = commands.add_parser("serve", help="run the server in a Python file "
                                "(FILE.py[:NAME]); with none, the demo's gift server")
    serve.add_argument("target", nargs="?")
    serve.add_argument("--trace", action="store_true", help="log every frame to stderr")
    serve.add_argument("--http", metavar="[HOST:]PORT", help="serve Streamable HTTP at "
                       "http://HOST:PORT/mcp (HOST: 127.0.0.1 unless given)")
    demo_command = commands.add_parser(
        "demo", help="watch a client and the gift server (or yours: demo -- "
                     "SERVER_CMD...) talk, frame by frame",
        usage="%(prog)s [--era ERA] [-- SERVER_CMD...]")
    demo_command.add_argument("--era", choices=(HANDSHAKE, "legacy", "auto", V2026_07),
                              help="one session in this era (default: the gift server, "
                                   "one in each; yours: auto)")
    demo_command.add_argument("words", nargs=argparse.REMAINDER,
                              metavar="-- SERVER_CMD...",
                              help="narrate a session with this server instead")
    for name, text in (("inspect", "list what a server offers"),
                       ("call", "one request: -- CMD... METHOD|TOOL [JSON]"),
                       ("repl", "type frames to a server and watch the responses")):
        _add_client_command(commands, name, text)
    explain_command = commands.add_parser(
        "explain", help="what a JSON-RPC/MCP message is, and what is wrong with it")
    explain_command.add_argument("message", help="the message as JSON; - reads it from "
                                 "standard input")
    return parser


def _add_client_command(commands, name, text):
    """inspect, call or repl: a command for a server (its command after --, or URL)."""
    import argparse
    words = "{-- SERVER_CMD... | URL}"
    words_help = "the command that starts the server (after --), or its http(s) URL"
    more = {}
    if name == "call":
        words += " METHOD|TOOL [JSON]"
        words_help += ", then what to call"
        more = _CALL_HELP
    command = commands.add_parser(
        name, help=text, formatter_class=argparse.RawDescriptionHelpFormatter,
        usage=f"%(prog)s [options] {words}", **more)
    if name != "repl":
        eras = ("auto", HANDSHAKE, "legacy") + STATELESS_PROTOCOL_VERSIONS
        command.add_argument("--era", choices=eras, default="auto",
                             help="auto (the default) speaks 2026-07-28 with servers "
                                  "that offer it, else the handshake (handshake; "
                                  "legacy is another name for it)")
    command.add_argument("--header", action="append", default=[], metavar="'NAME: "
                         "VALUE'", help="with a URL: an HTTP header (again for more)")
    command.add_argument("--token", action="append", dest="header", metavar="TOKEN",
                         help="with a URL: send Authorization: Bearer TOKEN",
                         type=lambda token: f"Authorization: Bearer {token}")
    command.add_argument("words", nargs=argparse.REMAINDER, metavar=words,
                         help=words_help)
    if name != "call":
        return
    command.add_argument("-v", "--verbose", action="store_true",
                         help="show the server's log messages and progress on stderr "
                              "as they arrive (it is asked for every level)")
    command.add_argument("--timeout", type=_seconds, default=30.0, metavar="SECONDS",
                         help="how long to wait for the response (default 30); 0 or "
                              "none: as long as the call runs, showing its progress")
    named = command.add_mutually_exclusive_group()
    named.add_argument("--tool", metavar="NAME", help="call this tool: every word "
                       "after -- is then the server command")
    named.add_argument("--method", metavar="METHOD", help="send this method, the "
                       "server's own too: every word after -- is the server command")
    command.add_argument("--json", metavar="JSON", help="with --tool or --method: the "
                         "tool's arguments, or the method's params")


def _seconds(text):
    """--timeout's value: seconds, or None for no limit (0 or "none")."""
    import argparse
    if text.strip().lower() in ("none", "0", "0.0"):
        return None
    try:
        if 0 < float(text) < float("inf"):
            return float(text)
    except ValueError:
        pass
    raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r} (0 or none: "
                                     "no limit)")


def _check_arguments(parser, args, words):
    """What argparse cannot check (a usage error, exit 2); pops `call`'s request off
    ``words`` (args.request), leaving the server command."""
    # "legacy": what the handshake era was called before
    if getattr(args, "era", None) == "legacy":
        args.era = HANDSHAKE
    if args.command in ("inspect", "call", "repl") and not words:
        parser.error(f"{args.command} needs a server command or URL: "
                     f"{args.command} -- SERVER_CMD ...")
    if args.command == "demo" and args.era == "auto" and not words:
        parser.error("--era auto is for your own server: demo --era auto -- SERVER_CMD")
    if args.command == "call":
        if args.json is not None and not (args.tool or args.method):
            parser.error("--json goes with --tool NAME or --method METHOD (or put the "
                         "JSON last, after the tool's name)")
        try:
            args.request = _pop_request(words, args.tool, args.method, args.json)
        except ValueError as e:
            parser.error(str(e))
    if args.command == "serve" and args.http:
        try:
            port = _parse_address(args.http)[1]
        except ValueError as e:
            parser.error(str(e))
        if port > 65535:
            parser.error(f"not a port: {port} (a port is 0 to 65535)")
    if args.command not in ("inspect", "call", "repl"):
        return
    # The server: the command that starts it, or its URL (with --header, --token)
    args.target = words
    if words[0].startswith(("http://", "https://")):
        args.target = words[0]
    if any(":" not in header for header in args.header):
        parser.error("--header takes 'NAME: VALUE'")
    args.headers = dict(map(str.strip, h.split(":", 1)) for h in args.header)


def _run_and_report(args, words):
    """Run the command: its exit code. What goes wrong is a line on stderr (exit 1)."""
    try:
        return _COMMANDS[args.command](args, words, _shows_colour(sys.stdout))
    except BrokenPipeError:
        # stdout was closed early, as by `| head`: end quietly (and at exit too).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except KeyboardInterrupt:
        # Ctrl+C: what was in flight is cancelled
        print("mcp_min: interrupted", file=sys.stderr)
        return 130
    except (TimeoutError, ConnectionError, ProtocolError) as e:
        hint = ""
        if isinstance(e, TimeoutError) and args.command == "call":
            hint = "; call --timeout SECONDS waits longer (0: as long as it takes)"
        print(f"mcp_min: {e}{hint}", file=sys.stderr)
    except OSError as e:
        # The server command did not start
        if e.filename is None:
            raise
        hint = ""
        if os.path.isdir(e.filename):
            hint = " (it is a directory: name the server's program or script)"
        elif isinstance(e, PermissionError) and os.path.isfile(e.filename):
            hint = (" (it is not executable: start it with its interpreter, e.g. "
                    f"python3 {e.filename}, or chmod +x it)")
        print(f"mcp_min: cannot start {e.filename!r}: {e.strerror}{hint}",
              file=sys.stderr)
    except JSONRPCError as e:
        # e.g. --era 2026-07-28 to a server without it
        _print_text(f"mcp_min: the server answered error {e.code}: "
                    + _escaped(e.message, keep="\n\t"), sys.stderr)
    return 1


def _serve_command(args, words, colour):
    """`serve`: the server in a file, or the demo's, on stdio or over HTTP."""
    if args.target:
        server = load_server(args.target)
    else:
        if sys.stdin and sys.stdin.isatty() and not args.http:
            print("mcp_min: serving the demo's gift server over stdin/stdout (serve "
                  "FILE.py serves yours); Ctrl+D ends it", file=sys.stderr)
        server = demo_server()
    try:
        server.run(trace=args.trace or None, http=args.http)
    except OSError as e:
        # e.g. the port is taken
        if args.http is None:
            raise
        raise SystemExit(f"mcp_min: cannot serve on {args.http}: {e.strerror or e}")


def _demo_command(args, words, colour):
    if words:
        return demo_yours(words, colour, args.era or "auto")
    return demo(colour=colour, era=args.era)


def _explain_command(args, words, colour):
    raw = args.message
    if raw == "-":
        raw = sys.stdin.read()
    summary, problems = explain(raw)
    _print_text(summary)
    if not problems:
        _print_text("  no problems found")
        return 0
    _print_text("\n".join(f"  problem: {problem}" for problem in problems))
    return 1


def _inspect_command(args, words, colour):
    """`inspect`: what the server says of itself, and every list it offers, as JSON."""
    with Client(args.target, era=args.era, headers=args.headers) as client:
        report = {"serverInfo": client.server_info,
                  "protocolVersion": client.protocol_version,
                  "capabilities": client.server_capabilities,
                  "instructions": client.instructions}
        for method, key in _LIST_METHODS:
            if method.split("/")[0] in client.server_capabilities:
                report[key] = client.list_all(method, key)
    _print_json(report)
    return 0


_COMMANDS = {"serve": _serve_command, "demo": _demo_command, "call": _call_command,
             "explain": _explain_command, "inspect": _inspect_command,
             "repl": lambda args, words, colour: repl(args.target, colour,
                                                      headers=args.headers)}


def load_server(target):
    """The Server in a Python file: ``path.py`` (its only one) or ``path.py:name``."""
    import runpy
    path, _, name = target.partition(":")
    if not os.path.isfile(path):
        raise SystemExit(f"mcp_min: no such file: {path}")
    namespace = runpy.run_path(path, run_name="__mcp_min__")
    if name:
        if not isinstance(namespace.get(name), Server):
            raise SystemExit(f"mcp_min: {path} has no Server named {name!r}")
        return namespace[name]
    servers = [v for v in namespace.values() if isinstance(v, Server)]
    if len(servers) != 1:
        raise SystemExit(f"{path}: found {len(servers)} Server objects; name one as "
                         f"{path}:NAME")
    return servers[0]


if __name__ == "__main__":
    # Run as a script, this module is __main__; files it loads that `import mcp_min`
    # must get this same module (and its Server class), not a second copy.
    sys.modules.setdefault("mcp_min", sys.modules[__name__])
    sys.exit(main())
