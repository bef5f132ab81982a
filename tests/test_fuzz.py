"""Property-based fuzzing of the real server subprocess (tests/servers/everything.py).

Hypothesis generates whole input streams: valid and invalid JSON, wrong types in every field,
ids of every JSON type (huge and negative numbers, duplicates), empty lines, lone CR,
U+2028/U+2029/U+0085 inside strings, NUL bytes, invalid UTF-8, batches of every size,
notifications (cancellations among them) mixed with requests, unknown methods, and valid
calls with random arguments; some lines are then mutated byte by byte.

One server runs per test; each example's stream is written to it, followed by a sentinel
ping with a unique id, and stdout is read until that ping's reply and every reply the
stream must still produce. Every line in between is checked against the promise:

- each stdout line is one valid JSON-RPC 2.0 message in strict UTF-8 (an array of them only
  for a batch in 2025-03-26), and the server sends no requests of its own here;
- every request gets exactly one reply with its own id (at most one if a cancellation for its
  id is in the stream, since a cancelled request gets none);
- unreadable input gets exactly one id-less error: -32700 for a line that is not JSON,
  -32600 for one that is not a valid message (its id, if readable, is echoed);
- notifications and responses, valid or not, get nothing (an over-long one included).

The expected replies come from an oracle below that follows the documented rules (README
"Protocol behaviour"). A server that dies fails the example, and is restarted for the next.
After the examples, the server's peak memory (VmHWM) must stay under a bound.

Profiles: the default is sized for CI (the file runs in well under a minute on a slow 2-core
machine); MCP_MIN_SLOW=1 runs many more examples (see README, "Reliability")."""

import json
import os
import re
import queue
import sys
import time

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

import mcp_min
from conftest import INIT_PARAMS, SERVERS, Wire

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX pipes and /proc")

_COMMON = dict(deadline=None, database=None, print_blob=True,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                      HealthCheck.filter_too_much])
# CI: no shrinking (each shrink step replays against the server and a missing reply costs a
# timeout; the falsifying stream is printed whole). Slow mode shrinks.
settings.register_profile("mcp_min_fuzz_ci", max_examples=120, **_COMMON,
                          phases=[Phase.explicit, Phase.reuse, Phase.generate])
settings.register_profile("mcp_min_fuzz_slow", max_examples=3000, **_COMMON)
SLOW = os.environ.get("MCP_MIN_SLOW") == "1"
PROFILE = settings.get_profile("mcp_min_fuzz_slow" if SLOW else "mcp_min_fuzz_ci")

PEAK_BOUND_KIB = 64 * 1024           # VmHWM after fuzzing; seen: 16-18 MiB
KNOWN_METHODS = set(mcp_min.Server("probe").handlers)
WORKER_METHODS = {"tools/call", "resources/read", "prompts/get", "completion/complete"}
SMALL_CAP = 256                      # max_line_bytes of the server fuzzed with over-long lines


# ============================================================================================
# The oracle: what the server must answer to each line, per the documented rules
# ============================================================================================

def valid_id(value):
    return type(value) in (str, int)


def key(rid):
    """Ids compare by type and value: 1, "1" and True are three different things."""
    return (type(rid).__name__, rid)


def _reject(name):
    raise ValueError(name)


class Expected:
    """What one stream must produce."""

    def __init__(self):
        self.requests = {}        # key(id) -> number of requests with that id
        self.must = {}            # key(id) -> replies that must come (cancellations aside)
        self.idless = {-32700: 0, -32600: 0}
        self.too_long = 0         # over-long lines: one -32600 "too large" reply each
        self.codes = {}           # key(id) -> the error codes its reply may have, if known
        self.cancels = []         # (position, requestId) of cancellations
        self.entries = []         # (position, key, method) of requests
        self.batches = []         # per batch reply: (id-less members, [entry index, ...])
        self.must_batches = self.max_batches = 0

    def request(self, rid, method, position, code=None):
        k = key(rid)
        self.requests[k] = self.requests.get(k, 0) + 1
        self.entries.append((position, k, method))
        if code is not None:
            self.codes.setdefault(k, set()).add(code)
        return len(self.entries) - 1

    def finish(self):
        """A worker-run request followed by a cancellation of its id may go unanswered."""
        may = set()
        for index, (at, k, method) in enumerate(self.entries):
            if method in WORKER_METHODS and any(
                    valid_id(rid) and key(rid) == k and position > at for position, rid in self.cancels):
                may.add(index)
        for index, (_, k, _) in enumerate(self.entries):
            self.must.setdefault(k, 0)
            if index not in may:
                self.must[k] += 1
        for idless, members in self.batches:
            self.max_batches += 1
            self.must_batches += bool(idless or any(i not in may for i in members))


def expect_member(message, expected, position):
    """One message (top level or a batch member): an entry index if it is answered with an id,
    "idless" if answered without one, None if never answered."""
    if not isinstance(message, dict):
        expected.idless[-32600] += 1
        return "idless"
    rid = message.get("id")
    if "method" in message and "id" not in message:
        if (message.get("jsonrpc") == "2.0" and message["method"] == "notifications/cancelled"
                and isinstance(message.get("params"), dict)):
            expected.cancels.append((position, message["params"].get("requestId")))
        return None                               # a notification, valid or not: never answered
    if "method" not in message and ("result" in message or "error" in message):
        return None                               # a response, valid or not: never answered
    if message.get("jsonrpc") != "2.0" or ("method" in message and (
            not isinstance(message["method"], str)
            or ("params" in message and not isinstance(message["params"], dict)))):
        if valid_id(rid):
            return expected.request(rid, None, position, -32600)
        expected.idless[-32600] += 1
        return "idless"
    if "method" in message:
        if not valid_id(rid):
            expected.idless[-32600] += 1
            return "idless"
        method = message["method"]
        code = None
        if method.startswith("notifications/"):
            code = -32600
        elif method not in KNOWN_METHODS:
            code = -32601
        elif method == "initialize":
            code = -32600                         # already initialized (or inside a batch)
        return expected.request(rid, method, position, code)
    if valid_id(rid):
        return expected.request(rid, None, position, -32600)
    expected.idless[-32600] += 1
    return "idless"


def long_line_is_request(raw, max_line):
    """README "Protocol behaviour": an over-long line is answered unless its first and last
    bytes show a response (its first key after "jsonrpc" and "id" is "result" or "error", or
    "result"/"error" and no "method") or a notification ("method", no "id"). The server
    keeps the last 512 bytes, and the first 512 of its first read (of max_line + 2 bytes)."""
    head = raw[:min(512, max_line + 2)]
    ends = head + b" " + raw[-512:]
    first = re.match(rb'\s*\{(?:\s*"(?:jsonrpc|id)"\s*:\s*(?:-?\d+|"[^"\\]*")\s*,)*\s*"(\w+)"\s*:', head)
    if first and first[1] in (b"result", b"error"):
        return False                              # a response, by its first key
    if not re.search(rb'"method"\s*:', ends):
        return not re.search(rb'"(result|error)"\s*:', head)
    return bool(re.search(rb'"id"\s*:', ends))


def expect_stream(data, session, max_line):
    """Split ``data`` as the server does (on \\n only, one trailing \\r dropped) and list what
    every line must produce."""
    expected = Expected()
    lines = data.split(b"\n")
    assert lines[-1] == b"", "streams end with a newline"
    for position, raw in enumerate(lines[:-1]):
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        if len(raw) > max_line:
            expected.too_long += long_line_is_request(raw, max_line)
            continue
        if not raw.strip():
            continue                               # blank lines are ignored
        try:
            message = json.loads(raw.decode("utf-8"), parse_constant=_reject)
        except (ValueError, RecursionError):
            expected.idless[-32700] += 1
            continue
        if isinstance(message, list):
            if session != "2025-03-26" or not message:
                expected.idless[-32600] += 1
                continue
            outcomes = [expect_member(item, expected, (position, i)) for i, item in enumerate(message)]
            members = [o for o in outcomes if isinstance(o, int)]
            idless = outcomes.count("idless")
            if members or idless:
                expected.batches.append((idless, members))
            continue
        expect_member(message, expected, (position, 0))
    expected.finish()
    return expected


# ============================================================================================
# Strategies: whole streams
# ============================================================================================

PICK = {n: st.sampled_from(range(n)) for n in range(2, 21)}   # uniform-ish small choices

SPECIAL_CHARS = ["\u2028", "\u2029", "\u0085", "\x00", "\r", "\n", "\t", "\ufeff", "\ud800",
                 "\udfff", "\U0001f600", "é", '"', "\\", "/", " ", "%", "\x7f", "\u00a0"]
TEXT = st.one_of(
    st.text(max_size=12),
    st.lists(st.sampled_from(SPECIAL_CHARS) | st.text(max_size=3), max_size=6).map("".join),
)
INTS = st.one_of(st.integers(-3, 3), st.integers(), st.integers(-2 ** 64, 2 ** 64),
                 st.sampled_from([2 ** 53 + 1, -2 ** 63, 2 ** 63, 10 ** 30, -10 ** 30]))
FLOATS = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([1.0, -0.0, 1e308, 5e-324])
SCALARS = st.one_of(st.none(), st.booleans(), INTS, FLOATS, TEXT)
JSON = st.recursive(SCALARS, lambda kids: st.one_of(
    st.lists(kids, max_size=4), st.dictionaries(TEXT, kids, max_size=4)), max_leaves=8)
FINITE_JSON = st.recursive(st.one_of(st.none(), st.booleans(), INTS, TEXT, st.floats(allow_nan=False, allow_infinity=False)),
                           lambda kids: st.one_of(st.lists(kids, max_size=3),
                                                  st.dictionaries(TEXT, kids, max_size=3)),
                           max_leaves=6)

VALID_IDS = st.one_of(INTS, TEXT)
INVALID_IDS = st.one_of(st.none(), st.booleans(), FLOATS, st.lists(SCALARS, max_size=2),
                        st.dictionaries(TEXT, SCALARS, max_size=2))

TOOL_ARGS = {
    "add": st.fixed_dictionaries({"a": INTS | JSON, "b": INTS | JSON}),
    "echo": st.fixed_dictionaries({"text": TEXT | JSON}),
    "sleep": st.fixed_dictionaries({"ms": st.integers(-5, 40) | st.floats(-1, 40)}),
    "block": st.fixed_dictionaries({"ms": st.integers(0, 30)}),
    "progress": st.fixed_dictionaries({"steps": st.integers(-2, 5)}),
    "chatty": st.just({}),
    "fail": st.fixed_dictionaries({"kind": st.sampled_from(
        ["tool", "exit", "interrupt", "recursion", "runtime"]) | TEXT}),
    "big": st.fixed_dictionaries({"size": st.integers(-3, 100_000)}),
    "ask_model": st.fixed_dictionaries({"question": TEXT}),
    "ask_user": st.just({}),
    "roots": st.just({}),
    "lifespan_value": st.just({}),
    "no_such_tool": st.dictionaries(TEXT, FINITE_JSON, max_size=3),
}


@st.composite
def tool_call_params(draw):
    name = draw(st.sampled_from(sorted(TOOL_ARGS)))
    arguments = draw(st.one_of(TOOL_ARGS[name], TOOL_ARGS[name], TOOL_ARGS[name],
                               st.dictionaries(TEXT, JSON, max_size=3), JSON))
    params = {"name": name if draw(PICK[10]) else draw(TEXT), "arguments": arguments}
    if draw(PICK[5]) == 0:
        params["_meta"] = {"progressToken": draw(VALID_IDS | SCALARS)}
    if draw(PICK[10]) == 0:
        params.pop("arguments")
    return params


PARAMS_FOR = {
    "tools/call": tool_call_params(),
    "resources/read": st.fixed_dictionaries({"uri": st.one_of(
        st.sampled_from(["test://static/text", "test://static/blob", "test://items/1"]),
        TEXT.map(lambda t: "test://items/" + t), TEXT, JSON)}),
    "prompts/get": st.fixed_dictionaries({"name": st.sampled_from(["greet"]) | TEXT,
                                          "arguments": st.dictionaries(
                                              st.sampled_from(["name", "style"]) | TEXT, TEXT | JSON, max_size=3)}),
    "completion/complete": st.fixed_dictionaries({
        "ref": st.fixed_dictionaries({"type": st.sampled_from(["ref/prompt", "ref/resource"]) | TEXT,
                                      "name": st.just("greet") | TEXT, "uri": TEXT}) | JSON,
        "argument": st.fixed_dictionaries({"name": st.just("style") | TEXT, "value": TEXT | JSON}) | JSON}),
    "logging/setLevel": st.fixed_dictionaries({"level": st.sampled_from(mcp_min.LOG_LEVELS) | JSON}),
    "tools/list": st.fixed_dictionaries({}, optional={"cursor": JSON}),
    "resources/list": st.fixed_dictionaries({}, optional={"cursor": JSON}),
    "resources/templates/list": st.fixed_dictionaries({}, optional={"cursor": JSON}),
    "prompts/list": st.fixed_dictionaries({}, optional={"cursor": JSON}),
    "resources/subscribe": st.fixed_dictionaries({"uri": TEXT | JSON}),
    "resources/unsubscribe": st.fixed_dictionaries({"uri": TEXT | JSON}),
    "ping": st.just({}),
    "initialize": st.just(INIT_PARAMS) | st.dictionaries(TEXT, JSON, max_size=3),
}
OTHER_METHODS = ["notifications/initialized", "notifications/roots/list_changed", "notifications/cancelled",
                 "notifications/progress", "server/discover", "sampling/createMessage", "rpc.discover",
                 "", "tools/CALL", "tools/call ", "elicitation/create"]
NOTIFICATION_METHODS = st.sampled_from(["notifications/initialized", "notifications/roots/list_changed",
                                        "notifications/unknown", "notifications/progress",
                                        "notifications/message"]) | TEXT


def request(draw, rng, ids):
    pick = rng.randrange(10)                    # weighted: mostly valid calls
    if pick <= 3:
        method = "tools/call"
    elif pick <= 7:
        method = rng.choice(sorted(PARAMS_FOR))
    elif pick == 8:
        method = rng.choice(OTHER_METHODS)
    else:
        method = draw(TEXT)
    message = {"jsonrpc": "2.0", "id": draw(ids), "method": method}
    if method in PARAMS_FOR and rng.randrange(6):
        message["params"] = draw(PARAMS_FOR[method])
    elif draw(st.booleans()):
        message["params"] = draw(st.dictionaries(TEXT, JSON, max_size=3))
    return message


def notification(draw, rng, earlier_ids):
    if earlier_ids and rng.randrange(3):
        target = rng.choice(earlier_ids)
        return {"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": target, "reason": draw(TEXT)}}
    message = {"jsonrpc": "2.0", "method": draw(NOTIFICATION_METHODS)}
    if draw(st.booleans()):
        message["params"] = draw(st.dictionaries(TEXT, JSON, max_size=3))
    return message


def broken(draw, rng, ids):
    """A message with something wrong in one of its fields."""
    message = request(draw, rng, ids)
    field = rng.choice(["jsonrpc", "method", "params", "id", "drop", "response"])
    if field == "drop":
        message.pop(draw(st.sampled_from(["jsonrpc", "method", "id"])), None)
    elif field == "response":
        message.pop("method")
        message.pop("params", None)
        for member in draw(st.lists(st.sampled_from(["result", "error"]), max_size=2)):
            message[member] = draw(JSON)
        if draw(st.booleans()):
            message["id"] = draw(st.one_of(ids, INVALID_IDS))
    elif field == "id":
        message["id"] = draw(st.one_of(INVALID_IDS, JSON.filter(lambda v: not valid_id(v))))
    else:
        message[field] = draw(JSON)
    return message


def message(draw, rng, ids, earlier_ids):
    kind = rng.randrange(10)
    if kind <= 4:
        return request(draw, rng, ids)
    if kind <= 6:
        return notification(draw, rng, earlier_ids)
    if kind <= 8:
        return broken(draw, rng, ids)
    return draw(JSON)


def encode(value, rng):
    style = rng.randrange(4)
    text = json.dumps(value, ensure_ascii=style == 0, allow_nan=True,
                      separators=(",", ":") if style < 2 else (", ", ": "),
                      indent=None)
    return text.encode("utf-8", "surrogatepass")


MUTATION_BYTES = [b"\x00", b"\r", b"\n", b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xe2\x80\xa8",
                  b"\xc2\x85", b"\x85", b" ", b"{", b"}", b"[", b"]", b",", b":", b'"', b"\\", b"0",
                  b"\xef\xbb\xbf", b"\t", b"\x0b"]


def mutate(data, rng):
    for _ in range(rng.randint(1, 3)):
        where = rng.randint(0, len(data))               # (lengths vary with the ids' tag)
        op = rng.randrange(4)
        if op == 0:
            data = data[:where] + rng.choice(MUTATION_BYTES) + data[where:]
        elif op == 1:
            data = data[:where] + data[where + rng.randint(1, 8):]
        elif op == 2:
            data = data[:where]
        else:
            data = data[:where] + bytes([rng.randrange(256)]) + data[where + 1:]
    return data


BLANKS = [b"", b" ", b"\t", b"\r", b"  \r", b"\x0b", b"\x0c"]
ENDINGS = [b"\n", b"\n", b"\n", b"\r\n"]


@st.composite
def streams(draw, tag, long_lines=False):
    """Bytes of a whole input stream; ``tag`` makes this example's ids unique (other
    examples' late replies can then never be mistaken for this one's)."""
    pool = draw(st.lists(VALID_IDS, min_size=1, max_size=6))     # few ids: duplicates happen
    unique = [f"{tag}:{i}" if isinstance(i, str) else i * 1_000_003 + tag for i in pool]
    ids = st.one_of(st.sampled_from(unique), st.sampled_from(unique), INVALID_IDS)
    rng = draw(st.randoms(use_true_random=True))     # structure (uniform); content from draws
    used = []
    parts = []
    for _ in range(rng.randint(1, 24)):
        kind = rng.randrange(20)
        if kind <= 11:
            item = message(draw, rng, ids, used)
            if isinstance(item, dict) and valid_id(item.get("id")):
                used.append(item["id"])
            data = encode(item, rng)
        elif kind <= 13:                                          # a batch of any size
            size = rng.choice([0, 1, 1, 2, 2, 3, 4, 5, 8, 13, 30, 100])
            members = [message(draw, rng, ids, used) for _ in range(size)]
            used += [m["id"] for m in members if isinstance(m, dict) and valid_id(m.get("id"))]
            data = encode(members, rng)
        elif kind <= 14:
            data = rng.choice(BLANKS)
        elif kind <= 17:
            data = mutate(encode(message(draw, rng, ids, used), rng), rng)
        else:
            data = draw(st.binary(max_size=40)).replace(b"\n", b"")
        if long_lines and rng.randrange(3) == 0:
            data = pad(data, rng)
        parts.append(data + rng.choice(ENDINGS))
    return b"".join(parts)


def pad(data, rng):
    """Make a line longer than SMALL_CAP, padding inside a string where there is one."""
    low = max(0, SMALL_CAP - len(data) - 2)
    size = rng.randint(low, low + 300)
    filler = rng.choice([b"p", b"\xe2\x80\xa8", b" ", b"\\u0000"]) * max(1, size // 3)
    cut = data.rfind(b'"')
    if cut > 0 and rng.randrange(2):
        return data[:cut] + filler + data[cut:]
    return data + filler if rng.randrange(2) else filler + data


# ============================================================================================
# The harness: one server per test, fed example after example
# ============================================================================================

class Checked:
    """A reply line, parsed and checked: returns the responses it holds (a list)."""

    @staticmethod
    def parse(raw, session):
        assert raw.endswith(b"\n") and b"\n" not in raw[:-1], raw[:300]
        assert not raw.endswith(b"\r\n"), raw[-50:]
        text = raw[:-1].decode("utf-8")                       # strict UTF-8 (T3)
        message = json.loads(text, parse_constant=_reject)    # no NaN / Infinity
        if isinstance(message, list):
            assert session == "2025-03-26", f"a batch reply in {session}: {text[:300]}"
            assert message, "an empty array on stdout"
            for item in message:
                Checked.response(item)
            return message, []
        assert isinstance(message, dict), text[:300]
        assert message.get("jsonrpc") == "2.0", text[:300]
        if "method" in message:
            assert "id" not in message, f"the server sent a request: {text[:300]}"
            assert isinstance(message["method"], str)
            assert isinstance(message.get("params", {}), dict)
            return [], [message]
        Checked.response(message)
        return [message], []

    @staticmethod
    def response(message):
        assert isinstance(message, dict) and message.get("jsonrpc") == "2.0", message
        assert set(message) <= {"jsonrpc", "id", "result", "error"}, message
        assert ("result" in message) != ("error" in message), message
        if "id" in message:
            assert valid_id(message["id"]) and not isinstance(message["id"], bool), message
        if "result" in message:
            assert isinstance(message["result"], dict), message
        else:
            error = message["error"]
            assert isinstance(error, dict) and type(error.get("code")) is int, message
            assert isinstance(error.get("message"), str) and error["message"], message
            if "id" not in message:
                assert error["code"] in (-32700, -32600), message


class FuzzServer:
    def __init__(self, session, max_line=None):
        self.session, self.max_line = session, max_line or (32 << 20)
        self.tag = 0
        self.late = {}                       # key(id) -> replies an earlier example may still send
        self.examples = 0
        self.dirty = False
        self.start()

    def start(self):
        env = {"EVERYTHING_MAX_LINE": str(self.max_line)} if self.max_line != (32 << 20) else {}
        self.wire = Wire([sys.executable, str(SERVERS / "everything.py")], env=env)
        self.wire.initialize(self.session)

    def close(self):
        self.wire.close()

    def next_tag(self):
        self.tag += 1
        return self.tag

    def feed(self, data):
        """Send one example's stream and check everything the server writes for it."""
        if self.dirty or self.wire.proc.poll() is not None:
            # The last example failed (Hypothesis now replays it) or the server died: start
            # afresh, so that nothing left over from it is mistaken for this one's output.
            self.close()
            self.start()
            self.late = {}
        self.dirty = True
        self.examples += 1
        expected = expect_stream(data, self.session, self.max_line)
        sentinel = f"sentinel-{self.examples}-{time.monotonic_ns()}"
        self.wire.send(data + (json.dumps({"jsonrpc": "2.0", "id": sentinel, "method": "ping"}) + "\n").encode())

        got, idless, too_long, arrays = {}, {-32700: 0, -32600: 0}, 0, 0
        must = expected.must

        def satisfied():
            return (sentinel_seen and all(got.get(k, 0) >= n for k, n in must.items())
                    and idless == expected.idless and too_long == expected.too_long
                    and arrays >= expected.must_batches)

        sentinel_seen = False
        deadline = time.monotonic() + 30
        while not satisfied():
            remaining = deadline - time.monotonic()
            assert remaining > 0, self.report("timed out", expected, got, idless, too_long)
            # Before the sentinel, the reader may be busy; after it, only short tool calls
            # (at most ~100 ms) can still be running: a missing reply shows up quickly.
            wait = min(remaining, 2.0 if sentinel_seen else 10.0)
            try:
                raw = self.wire.lines.get(timeout=wait)
            except queue.Empty:
                raise AssertionError(self.report(f"nothing more within {wait} s", expected, got,
                                                 idless, too_long)) from None
            assert raw is not None, self.report("the server died", expected, got, idless, too_long)
            responses, _notifications = Checked.parse(raw, self.session)
            ours = False                               # does this line belong to this example?
            for reply in responses:
                if reply.get("id") == sentinel:
                    assert reply.get("result") == {}, reply
                    sentinel_seen = True
                    continue
                if "error" in reply and "too large" in reply["error"]["message"].lower() \
                        and reply["error"]["code"] == -32600 and expected.too_long:
                    too_long += 1
                    continue
                if "id" not in reply:
                    idless[reply["error"]["code"]] += 1
                    ours = True
                    continue
                k = key(reply["id"])
                if k not in expected.requests and self.late.get(k, 0) > 0:
                    self.late[k] -= 1                  # a cancelled request of an earlier example
                    continue
                if got.get(k, 0) >= expected.requests.get(k, 0) and self.late.get(k, 0) > 0:
                    self.late[k] -= 1                  # the same id in an earlier example
                    continue
                ours = True
                got[k] = got.get(k, 0) + 1
                assert k in expected.requests, self.report(f"a reply to no request: {reply}",
                                                           expected, got, idless, too_long)
                assert got[k] <= expected.requests[k], self.report(
                    f"more replies than requests for id {reply['id']!r}", expected, got, idless, too_long)
                codes = expected.codes.get(k)
                if codes and expected.requests[k] == 1:
                    assert "error" in reply and reply["error"]["code"] in codes, reply
            if raw.startswith(b"[") and ours:      # (an earlier example's late batch is not)
                arrays += 1
            assert idless[-32700] <= expected.idless[-32700] and idless[-32600] <= expected.idless[-32600], \
                self.report("too many id-less errors", expected, got, idless, too_long)
            assert too_long <= expected.too_long, self.report("too many 'too large'", expected, got, idless, too_long)
            assert arrays <= expected.max_batches, self.report("too many batch replies", expected, got, idless, too_long)
        for k, n in expected.requests.items():
            if n > got.get(k, 0):                   # cancelled, or a late reply still to come
                self.late[k] = self.late.get(k, 0) + n - got.get(k, 0)
        assert self.wire.proc.poll() is None, "the server exited"
        self.dirty = False

    def report(self, what, expected, got, idless, too_long):
        return (f"{what}\nexpected requests {expected.requests} (must {expected.must}),"
                f" id-less {expected.idless}, too long {expected.too_long}, batches {expected.batches}\n"
                f"got {got}, id-less {idless}, too long {too_long}\nstderr tail:\n{self.wire.stderr[-3000:]}")

    def peak_kib(self):
        with open(f"/proc/{self.wire.proc.pid}/status") as f:
            return next(int(row.split()[1]) for row in f if row.startswith("VmHWM:"))

    def finish(self):
        """A last quiet period: nothing unexpected arrives after the last example."""
        time.sleep(0.3)
        while True:
            try:
                raw = self.wire.lines.get_nowait()
            except queue.Empty:
                break
            assert raw is not None, f"the server died:\n{self.wire.stderr[-3000:]}"
            for reply in Checked.parse(raw, self.session)[0]:
                k = key(reply.get("id"))
                assert self.late.get(k, 0) > 0, f"unexpected late reply {reply}"
                self.late[k] -= 1
        assert self.wire.proc.poll() is None
        self.wire.close_stdin()
        assert self.wire.wait(15) == 0, self.wire.stderr[-3000:]


def run_fuzz(session, max_line=None, long_lines=False, extra_examples=()):
    server = FuzzServer(session, max_line)
    try:
        @PROFILE
        @given(st.data())
        def check(data):
            stream = data.draw(streams(server.next_tag(), long_lines=long_lines), label="stream")
            server.feed(stream)

        for raw in extra_examples:
            server.feed(raw)
        check()
        peak = server.peak_kib() if os.path.exists("/proc/self/status") else 0
        print(f"\n[figure] fuzz {session}{' (long lines)' if long_lines else ''}: {server.examples} "
              f"streams, peak RSS {peak / 1024:.1f} MiB")
        assert peak < PEAK_BOUND_KIB, f"peak RSS {peak} KiB after fuzzing"
        server.finish()
    finally:
        server.close()


# Hand-picked streams run before the generated ones: each named hazard at least once.
HAZARDS = [
    b"\n\r\n \n\t\r\n",
    b'{"jsonrpc":"2.0","id":"h1","method":"tools/call","params":{"name":"echo","arguments":{"text":"a\xe2\x80\xa8b\xe2\x80\xa9c\xc2\x85d"}}}\n',
    b'{"jsonrpc":"2.0","id":"h2","method":"ping"}\r\r\n',
    b'{"jsonrpc":"2.0",\r"id":"h3","method":"ping"}\n',
    b'{"jsonrpc":"2.0","id":"h4\x00","method":"ping"}\n',
    b'{"jsonrpc":"2.0","id":"h5","method":"ping"}\x00\n',
    b'{"jsonrpc":"2.0","id":"h6\xff","method":"ping"}\n',
    b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}\n',
    b'{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}\n'
    b'{"jsonrpc":"2.0","id":-9223372036854775809,"method":"ping"}\n',
    b'{"jsonrpc":"2.0","id":"dup","method":"tools/call","params":{"name":"block","arguments":{"ms":50}}}\n'
    b'{"jsonrpc":"2.0","id":"dup","method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}\n',
    b'{"jsonrpc":"2.0","id":null,"method":"ping"}\n{"jsonrpc":"2.0","id":true,"method":"ping"}\n'
    b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}\n{"jsonrpc":"2.0","id":[1],"method":"ping"}\n'
    b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}\n',
    b'[]\n[1]\n[{"jsonrpc":"2.0","method":"notifications/initialized"}]\n'
    b'[{"jsonrpc":"2.0","id":"b1","method":"ping"},{"jsonrpc":"2.0","id":"b2","method":"tools/call",'
    b'"params":{"name":"sleep","arguments":{"ms":20}}},{"jsonrpc":"2.0","method":"notifications/cancelled",'
    b'"params":{"requestId":"b2"}},5,[]]\n',
    b'{"jsonrpc":"2.0","id":"n1","method":"notifications/initialized"}\n'
    b'{"jsonrpc":"2.0","method":"ping"}\n{"jsonrpc":"2.0","method":"tools/call"}\n',
    b'{"jsonrpc":"2.0","id":"r1","result":{}}\n{"jsonrpc":"2.0","error":{"code":1,"message":"x"}}\n'
    b'{"jsonrpc":"2.0","id":"r2","result":{},"error":{}}\n',
    b'NaN\n{"jsonrpc":"2.0","id":"c","method":"ping","params":{"x":Infinity}}\n\xef\xbb\xbf{}\n',
    b'{"jsonrpc":"2.0","id":"u1","method":"no/such/method"}\n{"jsonrpc":"1.0","id":"v1","method":"ping"}\n',
]


def test_fuzz_streams_2025_11_25():
    run_fuzz("2025-11-25", extra_examples=HAZARDS)


def test_fuzz_streams_with_batches_2025_03_26():
    run_fuzz("2025-03-26", extra_examples=HAZARDS)


def test_fuzz_over_long_lines():
    """A server capped at 256-byte lines: over-long lines (many of them generated) each get one
    -32600 "too large" reply and nothing else; the rest is served as usual."""
    run_fuzz("2025-11-25", max_line=SMALL_CAP, long_lines=True, extra_examples=[
        b'{"jsonrpc":"2.0","id":"long","method":"ping","params":{"p":"' + b"q" * 300 + b'"}}\n',
        b'{"method":"ping","params":{"p":"' + b"q" * 300 + b'"},"jsonrpc":"2.0","id":77}\r\n',
        b"\xff" * 600 + b"\n",
    ])


def test_fuzz_over_long_lines_with_hostile_ids():
    """Over-long lines that start with '{"jsonrpc":"2.0","id":' or end with ',"id":...}' where the
    id is arbitrary bytes: the id-recovery path must never take the server down. (The explicit
    examples killed the server until LineTooLong.request_id() caught bad JSON in the id.)"""
    server = FuzzServer("2025-11-25", SMALL_CAP)
    try:
        hostile_value = st.one_of(
            st.binary(min_size=1, max_size=12).filter(lambda b: b"\n" not in b and b'"' not in b
                                                      and b"\\" not in b).map(lambda b: b'"' + b + b'"'),
            st.from_regex(rb"\A-?[0-9]{1,18}\Z"))

        @PROFILE
        @example(b'"\xff\xfe"', True)
        @example(b'"a\tb"', True)
        @example(b"007", True)
        @example(b'"\xc0\xaf"', False)
        @example(b"-0012", False)
        @given(hostile_value, st.booleans())
        def check(value, leading):
            padding = b'"params":{"p":"' + b"q" * 300 + b'"}'
            if leading:
                raw = b'{"jsonrpc":"2.0","id":' + value + b"," + padding + b',"method":"ping"}\n'
            else:
                raw = b'{"jsonrpc":"2.0","method":"ping",' + padding + b',"id":' + value + b"}\n"
            server.feed(raw)

        check()
        server.finish()
    finally:
        server.close()
