"""Property-based fuzzing of the real server subprocess, in both eras of the protocol.

Hypothesis generates whole input streams: valid and invalid JSON, wrong types in every field,
ids of every JSON type (huge and negative numbers, duplicates), empty lines, lone CR,
U+2028/U+2029/U+0085 inside strings, NUL bytes, invalid UTF-8, batches of every size,
notifications (cancellations among them) mixed with requests, unknown methods, and valid
calls with random arguments; some lines are then mutated byte by byte.

On the same pipe, between those handshake-era lines, come requests of the stateless
2026-07-28 era, each with its own envelope in params._meta: valid envelopes, envelopes with a
key missing or of the wrong type, unknown versions and log levels, handshake-only and unknown
methods, server/discover, subscriptions/listen (and cancellations that close it), and calls
that ask the client for input. Their retries carry requestStates harvested from the server's
own input_required results: as issued (with answers, without, with malformed ones), altered,
forged, issued by another process, expired, or moved to another tool, other arguments or
another method.

One server runs per test; each example's stream is written to it, followed by two sentinels
with unique ids (a ping, and a 2026-07-28 server/discover), and stdout is read until their
replies and every reply the stream must still produce. Every line in between is checked:

- each stdout line is one valid JSON-RPC 2.0 message in strict UTF-8 (an array of them only
  for a batch in 2025-03-26), and the server sends no requests of its own here;
- every request gets exactly one reply with its own id (at most one if a cancellation for its
  id is in the stream, since a cancelled request gets none), except a subscriptions/listen
  that opens its stream: that gets one acknowledgement, and no reply;
- unreadable input gets exactly one id-less error: -32700 for a line that is not JSON,
  -32600 for one that is not a valid message (its id, if readable, is echoed);
- notifications and responses, valid or not, get nothing (an over-long one included);
- a handshake-era result has no field of the 2026-07-28 era (resultType, ttlMs, ...); a
  2026-07-28 reply has the error its first broken rule implies, or a result with resultType,
  cache hints exactly where clients may cache it, and the server's name in _meta; no reply
  has a code of -32099...-32020 other than -32020/-32021/-32022, nor, in 2026-07-28, -32002.

The expected replies come from an oracle below that follows the documented rules (README
"Protocol behaviour", and for 2026-07-28 the rules tests/test_modern.py shows on the wire).
A server that dies fails the example, and is restarted for the next. After the examples, the
server's peak memory (VmHWM) must stay under a bound.

Profiles: the default is sized for CI (the file runs in well under a minute on a slow 2-core
machine); MCP_MIN_SLOW=1 runs many more examples (see README, "Reliability")."""

import base64
import binascii
import itertools
import json
import os
import queue
import random
import re
import sys
import time
from collections import Counter

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

# The 2026-07-28 era, written out here rather than taken from mcp_min: the oracle is the rules.
V2026 = "2026-07-28"
_MCP = "io.modelcontextprotocol/"
PV, CAPS = _MCP + "protocolVersion", _MCP + "clientCapabilities"
LOG_LEVEL, CLIENT_INFO = _MCP + "logLevel", _MCP + "clientInfo"
SERVER_INFO, SUB_ID = _MCP + "serverInfo", _MCP + "subscriptionId"
LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
MODERN_ONLY = {"server/discover", "subscriptions/listen"}
HANDSHAKE_ONLY = {"ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"}
CACHEABLE = {"server/discover", "tools/list", "prompts/list", "resources/list",
             "resources/templates/list", "resources/read"}
INPUT_METHODS = {"tools/call", "prompts/get", "resources/read"}
MODERN_CODES = {-32020, -32021, -32022}      # the only codes of -32099...-32020 a server sends
MODERN_RESULT_FIELDS = ("resultType", "ttlMs", "cacheScope", "inputRequests", "requestState")
ALL_CAPS = {"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}}
SERVER_CAPS = {"logging": {}, "tools": {"listChanged": True},
               "resources": {"subscribe": True, "listChanged": True},
               "prompts": {"listChanged": True}, "completions": {}}
LIST_FIELDS = {"tools/list": "tools", "prompts/list": "prompts", "resources/list": "resources",
               "resources/templates/list": "resourceTemplates"}
RESULT_FIELDS = {**LIST_FIELDS, "server/discover": "capabilities", "tools/call": "content",
                 "resources/read": "contents", "prompts/get": "messages",
                 "completion/complete": "completion"}
KIND_METHOD = {"form": "elicitation/create", "url": "elicitation/create",
               "sampling": "sampling/createMessage", "roots": "roots/list"}



# ============================================================================================
# The oracle: what the server must answer to each line, per the documented rules
# ============================================================================================

MISSING = object()


def valid_id(value):
    return type(value) in (str, int)


def key(rid):
    """Ids compare by type and value: 1, "1" and True are three different things."""
    return (type(rid).__name__, rid)


def _reject(name):
    raise ValueError(name)


class Outcome:
    """What the reply to one request must be. ``early``: the reader answers it before any
    handler runs, so no cancellation can withhold it. ``harvest``: where a requestState in
    the reply comes from (see Harvest)."""
    early = False
    harvest = None

    def check(self, reply, timing):
        """None if ``reply`` is right, else what is wrong with it. ``timing``: when the stream
        was sent and when the reply was read (some requestStates expire in between)."""
        raise NotImplementedError


class Error(Outcome):
    def __init__(self, code, data=MISSING, words=None, early=False):
        self.code, self.data, self.words, self.early = code, data, words, early

    def check(self, reply, timing):
        error = reply.get("error")
        if error is None:
            return f"a result, expected error {self.code}"
        if error["code"] != self.code:
            return f"error {error['code']}, expected {self.code}"
        if self.data is not MISSING and error.get("data") != self.data:
            return f"error data {error.get('data')!r}, expected {self.data!r}"
        if self.words and self.words not in error["message"]:
            return f"the message does not say {self.words!r}"
        return None


STATE_REJECTED = Error(-32602, words="requestState")     # checked by the worker


class Handshake(Outcome):
    """A request of the handshake era (or too broken for either era): error ``code`` if one
    is given; a result has no field of the 2026-07-28 era."""

    def __init__(self, code=None, early=False):
        self.code, self.early = code, early

    def check(self, reply, timing):
        if "error" in reply:
            code = reply["error"]["code"]
            if self.code is not None and code != self.code:
                return f"error {code}, expected {self.code}"
            return f"the 2026-07-28 code {code} in the handshake era" if code in MODERN_CODES \
                else None
        if self.code is not None:
            return f"a result, expected error {self.code}"
        result = reply["result"]
        modern = [field for field in MODERN_RESULT_FIELDS if field in result]
        if isinstance(result.get("_meta"), dict) and SERVER_INFO in result["_meta"]:
            modern.append(SERVER_INFO)
        return f"2026-07-28 fields in a handshake-era result: {modern}" if modern else None


class Modern(Outcome):
    """Served in the 2026-07-28 era: a result of that era's shape for ``method`` (with the
    cache hints ``hints`` where clients may cache it) that ``want`` accepts, or an error
    whose code is in ``codes``."""

    def __init__(self, oracle, method, want=None, codes=(), hints=None, harvest=None):
        self.profile, self.method, self.want, self.codes = oracle.profile, method, want, codes
        self.hints, self.harvest = hints or oracle.profile.cache, harvest

    def check(self, reply, timing):
        if "error" in reply:
            code = reply["error"]["code"]
            return None if code in self.codes else f"error {code}, expected a result" + (
                f" or an error in {list(self.codes)}" if self.codes else "")
        result = reply["result"]
        return modern_shape(self.profile, self.method, result, self.hints) or (
            self.want(result) if self.want else None)


def modern_shape(profile, method, result, hints):
    """What is wrong with ``result`` as a 2026-07-28 result of ``method``, if anything."""
    kind = result.get("resultType")
    if kind not in ("complete", "input_required"):
        return f"resultType {kind!r}"
    meta = result.get("_meta")
    info = meta.get(SERVER_INFO) if isinstance(meta, dict) else None
    if not isinstance(info, dict) or info.get("name") != profile.name:
        return "the server's name is not in _meta"
    if kind == "complete" and method in CACHEABLE:
        found = (result.get("ttlMs"), result.get("cacheScope"))
        if type(found[0]) is not int or found[0] < 0 or found[1] not in ("public", "private"):
            return f"cache hints (ttlMs, cacheScope) {found}"
        if found != hints:
            return f"cache hints {found}, expected {hints}"
    elif "ttlMs" in result or "cacheScope" in result:
        return "cache hints on a result clients may not cache"
    if kind == "input_required":
        asked, state = result.get("inputRequests"), result.get("requestState")
        if method not in INPUT_METHODS:
            return f"{method} asked the client for input"
        if not isinstance(asked, dict) or not asked or not all(
                isinstance(q, dict) and type(q.get("method")) is str for q in asked.values()):
            return f"inputRequests {asked!r}"
        return None if type(state) is str and state else f"requestState {state!r}"
    field = RESULT_FIELDS.get(method)
    if field and field not in result:
        return f"no {field} in the result"
    if method == "server/discover":
        if result.get("supportedVersions") != [V2026] or result["capabilities"] != SERVER_CAPS:
            return "server/discover names other versions or capabilities"
        if "serverInfo" in result or "protocolVersion" in result:
            return "handshake fields in server/discover"
    if method == "tools/call" and type(result.get("isError")) is not bool:
        return "tools/call without isError"
    return None


def complete(result):
    return None if result["resultType"] == "complete" else "input_required, expected complete"


def asks(question_key, kind):
    """This question and no other, of this kind."""
    def want(result):
        asked = result.get("inputRequests") or {}
        if set(asked) != {question_key} or asked[question_key]["method"] != KIND_METHOD[kind]:
            return f"asked {sorted(asked)}, expected {question_key!r} ({KIND_METHOD[kind]})"
        return None
    return want


def asks_again(question):
    """The same question as the result whose requestState the retry brings."""
    def want(result):
        same = result.get("inputRequests") == question
        return None if same else f"asked {result.get('inputRequests')}, expected {question}"
    return want


def says(text):
    def want(result):
        content = result.get("content") or [{}]
        found = content[0].get("text") if isinstance(content[0], dict) else None
        return complete(result) or (None if found == text else f"said {found!r}, not {text!r}")
    return want


class Either(Outcome):
    """Any one of ``options``: where the rules leave a choice, a race, or a known bug."""

    def __init__(self, *options):
        self.options = options
        self.early = all(option.early for option in options)
        self.harvest = next((o.harvest for o in options if o.harvest is not None), None)

    def check(self, reply, timing):
        problems = [option.check(reply, timing) for option in self.options]
        return None if None in problems else " / ".join(problems)


class Expiring(Outcome):
    """A retry whose requestState may expire before the server reads it. The server issued it
    between when that earlier request was sent and when its reply was read, and it expires
    ``ttl`` s later (in whole seconds, rounded down): the retry is refused if it was sent
    after that, and served as ``fresh`` if its reply came before."""

    def __init__(self, record, fresh, stats):
        self.record, self.fresh, self.stats = record, fresh, stats
        self.early, self.harvest = fresh.early, fresh.harvest

    def check(self, reply, timing):
        sent, received = timing
        if sent > self.record.received + self.record.ttl:
            self.stats["requestStates expired"] += 1
            return STATE_REJECTED.check(reply, timing)
        if received <= self.record.sent + self.record.ttl - 1:
            self.stats["requestStates still valid"] += 1
            return self.fresh.check(reply, timing)
        return Either(STATE_REJECTED, self.fresh).check(reply, timing)


class InModernEra(Outcome):
    """What every 2026-07-28 reply must be, around what this one must be: -32099...-32020 is
    reserved, with three codes defined in it, and -32002 is retired."""

    def __init__(self, outcome):
        self.outcome, self.early, self.harvest = outcome, outcome.early, outcome.harvest

    def check(self, reply, timing):
        code = reply.get("error", {}).get("code")
        if code == -32002 or code is not None and -32099 <= code <= -32020 and \
                code not in MODERN_CODES:
            return f"error {code}, a code the 2026-07-28 era does not use"
        return self.outcome.check(reply, timing)


class Ack:
    """A subscriptions/listen that opens its stream: one acknowledgement that names what the
    server will send (``honoured``), and no reply."""

    def __init__(self, honoured):
        self.honoured = honoured


class Harvest:
    """The call behind an input_required result, so that its requestState can be filed."""

    def __init__(self, ask, method, params):
        self.ask, self.method, self.params = ask, method, params


def call_key(method, params):
    """What a requestState is issued for: the method, its target (name or uri) and its
    arguments, as canonical JSON (the same call, however its JSON is spelled)."""
    target = params.get("uri") if method == "resources/read" else params.get("name")
    return json.dumps([method, target, params.get("arguments")], sort_keys=True,
                      ensure_ascii=False, separators=(",", ":"))


class StateRecord:
    """A requestState the server issued: for which call, in which process (``issuer``), at
    which round of its questions, and when (it expires ``ttl`` s later)."""

    def __init__(self, state, issuer, ask, round_, method, params, question, sent, received,
                 ttl):
        self.state, self.issuer, self.ask, self.round = state, issuer, ask, round_
        self.method, self.call = method, call_key(method, params)
        self.params = {k: params[k] for k in ("name", "uri", "arguments") if k in params}
        self.key, self.kind = ask.questions[round_]
        self.question, self.sent, self.received, self.ttl = question, sent, received, ttl


class Registry:
    """The requestStates the server issued, harvested from its input_required results."""
    LIMIT = 400

    def __init__(self):
        self.records = {}

    def add(self, record):
        self.records[record.state] = record
        while len(self.records) > self.LIMIT:
            del self.records[next(iter(self.records))]

    def pick(self, rng):
        """Mostly one of the newest (still valid), sometimes any (perhaps expired)."""
        records = list(self.records.values())
        return rng.choice(records[-6:] if rng.randrange(4) else records) if records else None

    def find(self, state):
        """The record of ``state`` exactly as the server issued it, or None."""
        return self.records.get(state) if type(state) is str else None


class Oracle:
    """What the oracle knows beyond one stream: the server (its profile), the requestStates
    it issued (``issuer`` counts processes: a restart brings a new key), and the
    subscriptions/listen streams open on it."""

    def __init__(self, profile, modern_share):
        self.profile, self.modern_share = profile, modern_share
        self.registry, self.issuer = Registry(), 0
        self.open_listens, self.listened = {}, {}    # key(id) -> what the listen honours
        self.tag, self.listen_ids = 0, []            # this example's tag, its listens' ids
        self.calls = itertools.count(1)              # ids of other requests of its own
        self.ext = random.Random()                   # see streams()
        self.stats = Counter()

    def restarted(self):
        self.issuer += 1
        self.open_listens.clear()
        self.listened.clear()


def missing_capability(kind, caps):
    """The requiredCapabilities of the -32021 a question of ``kind`` gets from a client that
    declared ``caps``, or None if the client may be asked."""
    declared = caps.get("elicitation")
    if kind == "url":
        return None if isinstance(declared, dict) and "url" in declared else \
            {"elicitation": {"url": {}}}
    if kind == "form":
        if isinstance(declared, dict) and declared and "form" not in declared:
            return {"elicitation": {"form": {}}}        # URL elicitation only
        return None if isinstance(declared, dict) else {"elicitation": {}}
    return None if isinstance(caps.get(kind), dict) else {kind: {}}


def answer_problem(kind, answer):
    """Whether an inputResponses entry is a result of the question's method: None if it is,
    "bad" if not."""
    if type(answer) is not dict:
        return "bad"
    if kind in ("form", "url"):
        return None if answer.get("action") in ("accept", "decline", "cancel") else "bad"
    if kind == "roots":
        return None if type(answer.get("roots")) is list else "bad"
    return None if type(answer.get("content")) in (dict, list) else "bad"


def modern_outcome(oracle, rid, method, params, in_batch):
    """A request on the 2026-07-28 path: the rules in the order they are checked (envelope,
    version, method, requestState), then what its handler answers."""
    if in_batch:
        return Error(-32600, early=True)            # 2026-07-28 requests are never batched
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        return Error(-32602, early=True)
    version, caps = meta.get(PV), meta.get(CAPS)
    if type(version) is not str or type(caps) is not dict:
        return Error(-32602, early=True)
    level = meta.get(LOG_LEVEL, "info")
    bad_level = level not in LEVELS
    if version != V2026:
        unsupported = Error(-32022, {"supported": [V2026], "requested": version}, early=True)
        # With both wrong, the rules as listed put the bad level (-32602) first; the server
        # checks the version first (it cannot know the levels of a version it does not
        # speak). Either is accepted.
        return Either(unsupported, Error(-32602, early=True)) if bad_level else unsupported
    if bad_level:
        return Error(-32602, early=True)
    return served_outcome(oracle, rid, method, params, caps)


def served_outcome(oracle, rid, method, params, caps):
    if method not in oracle.profile.methods or method in HANDSHAKE_ONLY:
        return Error(-32601, early=True)
    if "requestState" not in params:
        outcome = handler_outcome(oracle, rid, method, params, caps, None, MISSING)
        early = params.get("inputResponses")
        if method in INPUT_METHODS and isinstance(early, dict) and early:
            # Answers sent before their question are taken if the handler asks it (checked:
            # -32602 if one does not fit), so the handler may get further than round one.
            return Either(outcome, Modern(oracle, method, None, (-32021, -32602, -32603)))
        return outcome
    record = oracle.registry.find(params["requestState"])
    if record is None or record.issuer != oracle.issuer or record.call != call_key(
            method, params):
        oracle.stats["requestStates refused"] += 1
        return STATE_REJECTED
    oracle.stats["requestStates accepted"] += 1
    responses = params.get("inputResponses")
    answer = responses.get(record.key, MISSING) if isinstance(responses, dict) else MISSING
    problem = None if answer is MISSING else answer_problem(record.kind, answer)
    if responses is not None and type(responses) is not dict or problem == "bad":
        fresh = Error(-32602)
    else:
        fresh = handler_outcome(oracle, rid, method, params, caps, record, answer)
    return Expiring(record, fresh, oracle.stats)


def handler_outcome(oracle, rid, method, params, caps, record, answer):
    """What the handler of ``method`` answers (``record``: the requestState the retry
    brings, if any, with ``answer`` to its question)."""
    profile = oracle.profile
    if method == "server/discover":
        return Modern(oracle, method)
    if method == "subscriptions/listen":
        return listen_outcome(oracle, rid, params)
    if method in LIST_FIELDS:                          # only made-up cursors here
        return Modern(oracle, method, complete, () if params.get("cursor") is None else
                      (-32602,))
    if method == "completion/complete":
        return Modern(oracle, method, complete, (-32602,))
    if method in profile.asks_outside_a_call:          # asks, though only three methods may
        missing = missing_capability("form", caps)
        return Error(-32021, {"requiredCapabilities": missing}) if missing else Error(-32603)
    if method not in INPUT_METHODS:
        return Modern(oracle, method, complete, (-32602, -32603))
    target = params.get("uri") if method == "resources/read" else params.get("name")
    if type(target) is not str:
        return Error(-32602)
    ask = profile.asking.get((method, target))
    hints = profile.resource_hints.get(target, profile.cache)
    if method == "tools/call":
        arguments = params.get("arguments")
        if target not in profile.tools | profile.maybe_tools:
            return Error(-32602, {"name": target})
        if wrong_arguments(params):
            return Error(-32602)                       # arguments that are not an object
        outcome = Modern(oracle, method, complete) if ask is None else call_outcome(
            oracle, method, params, caps, ask, arguments or {}, record, answer, hints)
        # a tool that another call adds and removes: there or not, by the time it is called
        return Either(Error(-32602), outcome) if target in profile.maybe_tools else outcome
    if method == "resources/read":
        if ask is not None:
            return call_outcome(oracle, method, params, caps, ask, {}, record, answer, hints)
        if target in profile.resources:
            return Modern(oracle, method, complete, hints=hints)
        if target.startswith(profile.template_prefixes):   # a template may match it
            return Modern(oracle, method, complete, (-32602, -32603), hints)
        return Error(-32602, {"uri": target})          # never -32002 in this era
    if target not in profile.prompts:
        return Error(-32602)
    if wrong_arguments(params):
        return Error(-32602)
    arguments = params.get("arguments") or {}
    if ask is not None:
        return call_outcome(oracle, method, params, caps, ask, arguments, record, answer, hints)
    return Modern(oracle, method, complete, (-32602, -32603))


def wrong_arguments(params):
    """Arguments that are not an object, or none but some under a name people write by
    mistake ("args", "params", "input")."""
    arguments = params.get("arguments")
    if arguments is None:
        return any(name in params for name in ("args", "params", "input"))
    return type(arguments) is not dict


def call_outcome(oracle, method, params, caps, ask, arguments, record, answer, hints):
    """A call that asks the client: one question per round, each needing a capability of
    the client; every retry runs the handler from the top, so each question asked so far is
    asked (and its capability checked) again."""
    harvest = Harvest(ask, method, params)
    broken = (-32603,) if method != "tools/call" else ()   # an answer a prompt cannot use

    def served(want, codes=()):
        return Modern(oracle, method, want, codes + broken, hints, harvest)

    if not ask.valid(arguments):                 # refused before asking, or not
        return served(None, (-32021, -32602))
    answered = record is not None and answer is not MISSING
    asked = record.round if record else 0        # the last question this run reaches
    for _, kind in ask.questions[:asked + 1]:
        missing = missing_capability(kind, caps)
        if missing and ask.optional:             # the handler does without
            return served(complete)
        if missing:
            return Error(-32021, {"requiredCapabilities": missing})
    if record is None:
        return served(asks(*ask.questions[0]))
    if not answered:
        return served(asks_again(record.question))
    broken += (-32602,)                          # an answer that does not fit its form
    if asked + 1 == len(ask.questions):
        text = ask.result(answer) if ask.result else None
        return served(says(text) if text is not None else complete)
    # The answer may not suit the handler (then it fails), else it asks the next question.
    next_key, next_kind = ask.questions[asked + 1]
    missing = missing_capability(next_kind, caps)
    nxt = Error(-32021, {"requiredCapabilities": missing}) if missing else \
        served(asks(next_key, next_kind))
    return Either(served(complete), nxt)


def listen_outcome(oracle, rid, params):
    if key(rid) in oracle.open_listens:              # that id names an open stream: refused
        return Error(-32600, early=True)             # before the listen's params are read
    wanted = params.get("notifications")
    if type(wanted) is not dict:
        return Error(-32602, early=True)
    uris = wanted.get("resourceSubscriptions")
    if uris is not None and (type(uris) is not list or not all(type(u) is str for u in uris)):
        return Error(-32602, early=True)
    honoured = {f"{kind}ListChanged": True for kind in ("tools", "prompts", "resources")
                if wanted.get(f"{kind}ListChanged") is True}
    if uris is not None:
        honoured["resourceSubscriptions"] = list(dict.fromkeys(uris))
    return Ack(honoured)


class Expected:
    """What one stream must produce."""

    def __init__(self):
        self.requests = {}        # key(id) -> number of requests with that id
        self.must = {}            # key(id) -> replies that must come (cancellations aside)
        self.idless = {-32700: 0, -32600: 0}
        self.too_long = 0         # over-long lines: one -32600 "too large" reply each
        self.outcomes = {}        # key(id) -> the Outcome of each request with that id
        self.acks = {}            # key(id) -> what each listen opened with that id honours
        self.cancels = []         # (position, requestId) of cancellations
        self.entries = []         # (position, key, cancellable) of requests
        self.batches = []         # per batch reply: (id-less members, [entry index, ...])
        self.must_batches = self.max_batches = 0

    def request(self, rid, position, outcome, cancellable=False):
        k = key(rid)
        self.requests[k] = self.requests.get(k, 0) + 1
        self.outcomes.setdefault(k, []).append(outcome)
        self.entries.append((position, k, cancellable))
        return len(self.entries) - 1

    def judge(self, k, reply, timing):
        """What is wrong with this reply to (one of) the requests with id ``k``, if anything."""
        outcomes = self.outcomes[k]
        problems = [outcome.check(reply, timing) for outcome in outcomes]
        if None in problems or len(outcomes) > 1 and reply.get("error", {}).get("code") == -32600:
            return None                           # (the id in use by an earlier one of them)
        return " / ".join(problems)

    def finish(self):
        """A worker-run request followed by a cancellation of its id may go unanswered."""
        may = set()
        for index, (at, k, cancellable) in enumerate(self.entries):
            if cancellable and any(valid_id(rid) and key(rid) == k and position > at
                                   for position, rid in self.cancels):
                may.add(index)
        for index, (_, k, _) in enumerate(self.entries):
            self.must.setdefault(k, 0)
            if index not in may:
                self.must[k] += 1
        for idless, members in self.batches:
            self.max_batches += 1
            self.must_batches += bool(idless or any(i not in may for i in members))


def expect_member(message, expected, position, oracle, in_batch=False):
    """One message (top level or a batch member): an entry index if it is answered with an id,
    "idless" if answered without one, None if never answered (or answered by a notification:
    a subscriptions/listen that opens its stream)."""
    if not isinstance(message, dict):
        expected.idless[-32600] += 1
        return "idless"
    rid = message.get("id")
    if "method" in message and "id" not in message:
        if (message.get("jsonrpc") == "2.0" and message["method"] == "notifications/cancelled"
                and isinstance(message.get("params"), dict)):
            target = message["params"].get("requestId")
            expected.cancels.append((position, target))
            if valid_id(target):                    # it also closes a listen with that id
                oracle.open_listens.pop(key(target), None)
        return None                               # a notification, valid or not: never answered
    if "method" not in message and ("result" in message or "error" in message):
        return None                               # a response, valid or not: never answered
    if message.get("jsonrpc") != "2.0" or ("method" in message and (
            not isinstance(message["method"], str)
            or ("params" in message and not isinstance(message["params"], dict)))):
        if valid_id(rid):
            return expected.request(rid, position, Handshake(-32600, early=True))
        expected.idless[-32600] += 1
        return "idless"
    if "method" not in message:
        if valid_id(rid):
            return expected.request(rid, position, Handshake(-32600, early=True))
        expected.idless[-32600] += 1
        return "idless"
    if not valid_id(rid):
        expected.idless[-32600] += 1
        return "idless"
    method, params = message["method"], message.get("params") or {}
    meta, worker = params.get("_meta"), method in oracle.profile.worker_methods
    if method.startswith("notifications/"):
        return expected.request(rid, position, Handshake(-32600, early=True))
    if method in MODERN_ONLY or method != "initialize" and isinstance(meta, dict) and (
            PV in meta or CAPS in meta):
        outcome = modern_outcome(oracle, rid, method, params, in_batch)
        if isinstance(outcome, Ack):
            expected.acks.setdefault(key(rid), []).append(outcome.honoured)
            oracle.open_listens[key(rid)] = oracle.listened[key(rid)] = outcome.honoured
            oracle.stats["listens opened"] += 1
            return None
        oracle.stats["2026-07-28 requests"] += 1
        if worker and not outcome.early:               # refused at once when the pool is full
            outcome = Either(outcome, Error(-32000))
        return expected.request(rid, position, InModernEra(outcome), worker and not outcome.early)
    code = None
    if method not in oracle.profile.methods:
        code = -32601
    elif method == "initialize":
        code = -32600                             # already initialized (or inside a batch)
    return expected.request(rid, position, Handshake(code), worker)


def long_line_is_request(raw, max_line):
    """README "Protocol behaviour": an over-long line is answered unless its first and last
    bytes show a response (its first key after "jsonrpc" and "id" is "result" or "error", or
    "result"/"error" and no "method") or a notification ("method", no "id"). The server
    keeps the last 512 bytes, and the first 512 of its first read (of max_line + 2 bytes)."""
    head = raw[:min(512, max_line + 2)]
    ends = head + b" " + raw[-512:]
    first = re.match(rb'\s*\{(?:\s*"(?:jsonrpc|id)"\s*:\s*(?:-?\d+|"[^"\\]*")\s*,)*\s*"(\w+)"\s*:',
                     head)
    if first and first[1] in (b"result", b"error"):
        return False                              # a response, by its first key
    if not re.search(rb'"method"\s*:', ends):
        return not re.search(rb'"(result|error)"\s*:', head)
    return bool(re.search(rb'"id"\s*:', ends))


def expect_stream(data, session, max_line, oracle):
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
            outcomes = [expect_member(item, expected, (position, i), oracle, in_batch=True)
                        for i, item in enumerate(message)]
            members = [o for o in outcomes if isinstance(o, int)]
            idless = outcomes.count("idless")
            if members or idless:
                expected.batches.append((idless, members))
            continue
        expect_member(message, expected, (position, 0), oracle)
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
FLOATS = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from(
    [1.0, -0.0, 1e308, 5e-324])
SCALARS = st.one_of(st.none(), st.booleans(), INTS, FLOATS, TEXT)
JSON = st.recursive(SCALARS, lambda kids: st.one_of(
    st.lists(kids, max_size=4), st.dictionaries(TEXT, kids, max_size=4)), max_leaves=8)
FINITE_JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), INTS, TEXT, st.floats(allow_nan=False,
                                                              allow_infinity=False)),
    lambda kids: st.one_of(st.lists(kids, max_size=3), st.dictionaries(TEXT, kids, max_size=3)),
    max_leaves=6)
NOT_STRINGS = st.one_of(st.none(), st.booleans(), INTS, st.lists(SCALARS, max_size=2),
                        st.dictionaries(TEXT, SCALARS, max_size=2))
NOT_OBJECTS = st.one_of(st.none(), st.booleans(), INTS, TEXT, st.lists(SCALARS, max_size=2))

VALID_IDS = st.one_of(INTS, TEXT)
INVALID_IDS = st.one_of(st.none(), st.booleans(), FLOATS, st.lists(SCALARS, max_size=2),
                        st.dictionaries(TEXT, SCALARS, max_size=2))

EVERYTHING_TOOLS = {
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
MODERN_URIS = ["test://modern/text", "test://modern/plain", "test://modern/ask"]
MODERN_TOOLS = {
    "add": st.fixed_dictionaries({"a": INTS | JSON, "b": INTS | JSON}),
    "greet": st.just({}),
    "interview": st.fixed_dictionaries({"topic": TEXT | JSON}),
    "count_runs": st.just({}),
    "optional_model": st.just({}),
    "secret_link": st.just({}),
    "report": st.fixed_dictionaries({"steps": st.integers(-2, 4)}),
    "slow": st.fixed_dictionaries({"ms": st.integers(-5, 40)}),
    "toggle": st.fixed_dictionaries({"present": st.booleans() | JSON}),
    "touch": st.fixed_dictionaries({"uri": st.sampled_from(MODERN_URIS) | TEXT}),
    "extra": st.just({}),
    "no_such_tool": st.dictionaries(TEXT, FINITE_JSON, max_size=3),
}


def tool_call_params(tool_args):
    @st.composite
    def params(draw):
        name = draw(st.sampled_from(sorted(tool_args)))
        arguments = draw(st.one_of(tool_args[name], tool_args[name], tool_args[name],
                                   st.dictionaries(TEXT, JSON, max_size=3), JSON))
        params = {"name": name if draw(PICK[10]) else draw(TEXT), "arguments": arguments}
        if draw(PICK[5]) == 0:
            params["_meta"] = {"progressToken": draw(VALID_IDS | SCALARS)}
        if draw(PICK[10]) == 0:
            params.pop("arguments")
        return params
    return params()


def params_for(tool_args, uris, prompt, argument):
    """Parameters of each handshake-era method, mostly of the right shape, for one server."""
    cursor = st.fixed_dictionaries({}, optional={"cursor": JSON})
    return {
        "tools/call": tool_call_params(tool_args),
        "resources/read": st.fixed_dictionaries({"uri": st.one_of(
            st.sampled_from(uris), TEXT.map(lambda t: "test://items/" + t), TEXT, JSON)}),
        "prompts/get": st.fixed_dictionaries({"name": st.just(prompt) | TEXT,
                                              "arguments": st.dictionaries(
                                                  st.sampled_from(["name", "style"]) | TEXT,
                                                  TEXT | JSON, max_size=3)}),
        "completion/complete": st.fixed_dictionaries({
            "ref": st.fixed_dictionaries({
                "type": st.sampled_from(["ref/prompt", "ref/resource"]) | TEXT,
                "name": st.just(prompt) | TEXT, "uri": TEXT}) | JSON,
            "argument": st.fixed_dictionaries({"name": st.just(argument) | TEXT,
                                               "value": TEXT | JSON}) | JSON}),
        "logging/setLevel": st.fixed_dictionaries({"level": st.sampled_from(LEVELS) | JSON}),
        "tools/list": cursor,
        "resources/list": cursor,
        "resources/templates/list": cursor,
        "prompts/list": cursor,
        "resources/subscribe": st.fixed_dictionaries({"uri": st.sampled_from(uris) | TEXT | JSON}),
        "resources/unsubscribe": st.fixed_dictionaries({"uri": TEXT | JSON}),
        "ping": st.just({}),
        "initialize": st.just(INIT_PARAMS) | st.dictionaries(TEXT, JSON, max_size=3),
    }


OTHER_METHODS = ["notifications/initialized", "notifications/roots/list_changed",
                 "notifications/cancelled", "notifications/progress", "server/discover",
                 "sampling/createMessage", "rpc.discover", "", "tools/CALL", "tools/call ",
                 "elicitation/create", "subscriptions/listen"]
NOTIFICATION_METHODS = st.sampled_from([
    "notifications/initialized", "notifications/roots/list_changed", "notifications/unknown",
    "notifications/progress", "notifications/message"]) | TEXT


def request(draw, rng, ids, profile):
    pick = rng.randrange(10)                    # weighted: mostly valid calls
    if pick <= 3:
        method = "tools/call"
    elif pick <= 7:
        method = rng.choice(sorted(profile.params_for))
    elif pick == 8:
        method = rng.choice(OTHER_METHODS)
    else:
        method = draw(TEXT)
    message = {"jsonrpc": "2.0", "id": draw(ids), "method": method}
    if method in profile.params_for and rng.randrange(6):
        message["params"] = draw(profile.params_for[method])
    elif draw(st.booleans()):
        message["params"] = draw(st.dictionaries(TEXT, JSON, max_size=3))
    return message


# -- 2026-07-28 requests ----------------------------------------------------------------------

CAPABILITIES = st.sampled_from([
    {}, ALL_CAPS, {"elicitation": {}}, {"elicitation": {"form": {}}},
    {"elicitation": {"url": {}}}, {"sampling": {}}, {"roots": {}},
    {"elicitation": {}, "sampling": {}}, {"elicitation": None}, {"sampling": []},
]) | st.dictionaries(TEXT, JSON, max_size=2)
VERSIONS = st.sampled_from(["2025-11-25", "2025-06-18", "2024-11-05", "2026-07-29",
                            "2026-07-28 ", "", "2027-01-01"]) | TEXT
BAD_LEVELS = st.sampled_from(["INFO", "loud", "", "warn", " info", 3, 0.5, True, None, [],
                             ["info"], {}, {"level": "info"}]) | TEXT
LISTEN_FILTERS = st.fixed_dictionaries({}, optional={
    "toolsListChanged": st.booleans() | JSON, "promptsListChanged": st.booleans(),
    "resourcesListChanged": st.booleans(),
    "resourceSubscriptions": st.lists(st.sampled_from(MODERN_URIS[:2] + ["test://static/text"])
                                      | TEXT, max_size=3) | JSON,
    "somethingElse": JSON}) | JSON
ANSWERS = {
    "form": st.one_of(
        st.fixed_dictionaries({"action": st.just("accept"), "content": st.fixed_dictionaries(
            {"name": TEXT, "subject": TEXT})}),
        st.sampled_from([{"action": "decline"}, {"action": "cancel"}, {"action": "accept"}]),
        st.fixed_dictionaries({"action": st.just("accept"), "content": JSON})),
    "url": st.sampled_from([{"action": "accept"}, {"action": "decline"}, {"action": "cancel"}]),
    "sampling": st.fixed_dictionaries({
        "role": st.just("assistant"), "model": st.just("m"),
        "content": st.fixed_dictionaries({"type": st.just("text"), "text": TEXT})}),
    "roots": st.fixed_dictionaries({"roots": st.lists(st.fixed_dictionaries(
        {"uri": st.sampled_from(["file:///a", "file:///b"])}), max_size=3)}),
}
WRONG_ANSWERS = {
    "form": st.sampled_from([{"action": "maybe"}, "yes", {"content": {"name": "x"}},
                             {"action": 1}, None, []]),
    "url": st.sampled_from([{"action": "ACCEPT"}, {}, "accept"]),
    "sampling": st.sampled_from([{"role": "assistant", "model": "m"}, {"content": None},
                                 {"content": "x"}, "text", []]),
    "roots": st.sampled_from([{"roots": "file:///a"}, {}, [], {"roots": None}]),
}
B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def envelope(draw, rng, capabilities=None):
    """params._meta of a 2026-07-28 request: mostly valid, else with one thing wrong."""
    meta = {PV: V2026, CAPS: draw(CAPABILITIES) if capabilities is None else capabilities}
    fault = rng.randrange(24)
    if fault == 0:
        del meta[PV]
    elif fault == 1:
        del meta[CAPS]
    elif fault == 2:
        meta[PV] = draw(NOT_STRINGS)
    elif fault == 3:
        meta[CAPS] = draw(NOT_OBJECTS)
    elif fault <= 5:
        meta[PV] = draw(VERSIONS)
    elif fault == 6:
        meta[LOG_LEVEL] = draw(BAD_LEVELS)
    elif fault <= 9:
        meta[LOG_LEVEL] = rng.choice(LEVELS)
    if rng.randrange(6) == 0:
        meta[CLIENT_INFO] = draw(st.just({"name": "fuzz", "version": "1"}) | JSON)
    if rng.randrange(6) == 0:
        meta["progressToken"] = draw(VALID_IDS)
    return meta


def asking_call(draw, rng, profile):
    """A fresh call to something that asks the client: method and params."""
    (method, target), ask = rng.choice(sorted(profile.asking.items(), key=lambda i: i[0]))
    params = {"uri": target} if method == "resources/read" else {"name": target}
    arguments = draw(ask.arguments)
    if arguments or method != "resources/read" and rng.randrange(2):
        params["arguments"] = arguments
    return method, params


def alter(state, rng):
    """A requestState with one change: a character flipped, dropped or added, cut short,
    something appended, another version, or the last character's unused bits changed."""
    where, op = rng.randrange(len(state)), rng.randrange(7)
    if op == 0:
        return state[:where] + rng.choice(B64.replace(state[where], "")) + state[where + 1:]
    if op == 1:
        return state[:where] + state[where + 1:]
    if op == 2:
        return state[:where] + rng.choice(B64 + "=.~ !") + state[where:]
    if op == 3:
        return state[:where]
    if op == 4:
        return state + rng.choice(["=", "==", "A", ".", "\n"])
    if op == 5:
        return "v2" + state[2:]
    return state[:-1] + B64[max(0, B64.find(state[-1])) ^ rng.randint(1, 3)]


def forged(state, draw):
    """The state's payload changed (made-up answers, a later expiry, another call), its
    signature kept."""
    version, _, rest = state.partition(".")
    body, _, signature = rest.partition(".")
    try:
        payload = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    except ValueError:
        payload = None
    payload = payload if isinstance(payload, dict) else {}
    field = draw(st.sampled_from(["answers", "exp", "call", "asked"]))
    payload[field] = draw(st.just({"elicitation-1": ["0" * 32, {"action": "accept"}]})
                          | st.just(2 ** 40) | FINITE_JSON)
    text = base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=")
    return f"{version}.{text}.{signature}"


def moved(draw, rng, oracle, method, params):
    """The call a state was issued for, changed: other arguments, another asking call, a
    call that asks nothing, or another method on the same target."""
    how = rng.randrange(4)
    if how == 0:
        arguments = params.get("arguments") if isinstance(params.get("arguments"), dict) else {}
        params["arguments"] = draw(st.sampled_from([{**arguments, "x": 1}, {}, None])
                                   | st.dictionaries(TEXT, FINITE_JSON, max_size=2))
    elif how == 1:
        method, params = asking_call(draw, rng, oracle.profile)
    elif how == 2:
        method, params = "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}
    else:
        method = rng.choice(["tools/list", "server/discover", "prompts/get", "resources/read",
                             "completion/complete", "subscriptions/listen"])
        if method == "subscriptions/listen":
            params = dict(params, notifications={})
    return method, params


def retry(draw, rng, oracle):
    """A call carrying a requestState the server issued: as issued, or altered, forged,
    not a string, moved to another call, or another state altogether (perhaps from another
    process); with answers, none, or wrong ones.

    Hypothesis replays draws by position, so what is drawn here never depends on what the
    registry holds: everything is drawn first, and then the state is picked (by oracle.ext)."""
    method, params = asking_call(draw, rng, oracle.profile)
    made_up = draw(st.sampled_from(["", "v1..", "v1.e30.AAAA"]) | TEXT)
    how, answers = rng.randrange(20), rng.randrange(10)
    record = oracle.registry.pick(oracle.ext)
    if record is not None:
        method, params = record.method, json.loads(json.dumps(record.params))
    state = record.state if record else made_up
    if record and 9 <= how <= 11:
        state = alter(state, oracle.ext)
    elif how == 12:
        state = draw(NOT_STRINGS)
    elif 13 <= how <= 15:
        method, params = moved(draw, rng, oracle, method, params)
    elif how == 16:
        state = forged(state, draw)
    elif record and how == 17:                     # this body, another state's signature
        other = oracle.registry.pick(oracle.ext).state
        state = state.rsplit(".", 1)[0] + "." + other.rsplit(".", 1)[-1]
    elif record and how >= 18:                     # another state (maybe of another process)
        state = oracle.registry.pick(oracle.ext).state
    params["requestState"] = state
    question, kind = (record.key, record.kind) if record else ("elicitation-1", "form")
    if answers <= 4:
        params["inputResponses"] = {question: draw_for(draw, ANSWERS, kind)}
    elif answers == 5:
        params["inputResponses"] = {question: draw_for(draw, WRONG_ANSWERS, kind)}
    elif answers == 6:
        params["inputResponses"] = {}
    elif answers == 7:
        params["inputResponses"] = {draw(TEXT): draw_for(draw, ANSWERS, kind)}
    elif answers == 8:
        params["inputResponses"] = draw(NOT_OBJECTS)
    return method, params


def draw_for(draw, answers, kind):
    """An answer to a question of ``kind``, drawn for every kind (see retry)."""
    return {k: draw(answers[k]) for k in sorted(answers)}[kind]


def modern_request(draw, rng, ids, oracle):
    """A request on the 2026-07-28 path (or one that looks like it, for the handshake era).
    Mostly with an id of its own, so that its input_required result, if any, can be filed."""
    profile = oracle.profile
    rid = draw(ids) if rng.randrange(3) == 0 else f"{oracle.tag}:call:{next(oracle.calls)}"
    pick = rng.randrange(20)
    if pick <= 6:
        method, params = retry(draw, rng, oracle)
    elif pick <= 9:
        method, params = asking_call(draw, rng, profile)
    elif pick == 10:
        method, params = "server/discover", {}
    elif pick == 11:
        method, params = "subscriptions/listen", {"notifications": draw(LISTEN_FILTERS)}
        rid = rng.choice(oracle.listen_ids)
    elif pick <= 13:                                # a call that works, if the envelope does
        method, params = rng.choice(profile.calls)
    elif pick <= 15:
        method = rng.choice(sorted(set(profile.params_for) - HANDSHAKE_ONLY - {"initialize"}))
        params = draw(profile.params_for[method]) if rng.randrange(5) else {}
    elif pick == 16:
        method = rng.choice(sorted(HANDSHAKE_ONLY | {"initialize"}))
        params = draw(profile.params_for[method])
    elif pick == 17:
        method = rng.choice(["tools/lisst", "server/Discover", "subscriptions/listen/",
                             "notifications/progress", "example/nothing", "rpc.discover"]
                            + sorted(profile.asks_outside_a_call))
        params = {}
    else:
        method, params = "tools/call", draw(profile.params_for["tools/call"])
    params = dict(params)
    meta = params.get("_meta")
    # Calls that ask the client mostly offer every capability, to get past the first question.
    capabilities = ALL_CAPS if pick <= 9 and rng.randrange(3) else None
    params["_meta"] = {**(meta if isinstance(meta, dict) else {}),
                       **envelope(draw, rng, capabilities)}
    if rng.randrange(25) == 0:             # a modern-only method: -32602; else handshake era
        params["_meta"] = draw(NOT_OBJECTS)
    if rng.randrange(15) == 0 and "requestState" not in params:
        params["requestState"] = draw(TEXT | NOT_STRINGS)
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


def notification(draw, rng, earlier_ids):
    if earlier_ids and rng.randrange(3):
        target = rng.choice(earlier_ids)
        return {"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": target, "reason": draw(TEXT)}}
    message = {"jsonrpc": "2.0", "method": draw(NOTIFICATION_METHODS)}
    if draw(st.booleans()):
        message["params"] = draw(st.dictionaries(TEXT, JSON, max_size=3))
    return message


def broken(draw, rng, ids, oracle):
    """A message with something wrong in one of its fields."""
    message = modern_request(draw, rng, ids, oracle) if rng.random() < oracle.modern_share \
        else request(draw, rng, ids, oracle.profile)
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


def message(draw, rng, ids, earlier_ids, oracle):
    if rng.random() < oracle.modern_share:
        return modern_request(draw, rng, ids, oracle)
    kind = rng.randrange(10)
    if kind <= 4:
        return request(draw, rng, ids, oracle.profile)
    if kind <= 6:
        return notification(draw, rng, earlier_ids)
    if kind <= 8:
        return broken(draw, rng, ids, oracle)
    return draw(JSON)


def encode(value, rng):
    style = rng.randrange(4)
    text = json.dumps(value, ensure_ascii=style == 0, allow_nan=True,
                      separators=(",", ":") if style < 2 else (", ", ": "),
                      indent=None)
    return text.encode("utf-8", "surrogatepass")


MUTATION_BYTES = [b"\x00", b"\r", b"\n", b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xe2\x80\xa8",
                  b"\xc2\x85", b"\x85", b" ", b"{", b"}", b"[", b"]", b",", b":", b'"', b"\\",
                  b"0", b"\xef\xbb\xbf", b"\t", b"\x0b"]


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
def streams(draw, tag, oracle, long_lines=False):
    """Bytes of a whole input stream; ``tag`` makes this example's ids unique (other
    examples' late replies can then never be mistaken for this one's)."""
    pool = draw(st.lists(VALID_IDS, min_size=1, max_size=6))     # few ids: duplicates happen
    unique = [f"{tag}:{i}" if isinstance(i, str) else i * 1_000_003 + tag for i in pool]
    ids = st.one_of(st.sampled_from(unique), st.sampled_from(unique), INVALID_IDS)
    oracle.tag = tag
    # Listens keep their ids for as long as they are open: ids of their own, never reused.
    oracle.listen_ids = [f"{tag}:listen", f"{tag}:listen:2", (10 ** 7 + tag) * 1_000_003 + tag + 1]
    rng = draw(st.randoms(use_true_random=True))     # structure (uniform); content from draws
    # Choices that depend on more than the draws (lengths, which include the tag; the states
    # the server issued) come from a random generator of their own: the draws stay the same
    # whenever Hypothesis replays the same choices.
    oracle.ext = random.Random(rng.getrandbits(64))
    used = []
    parts = []
    for _ in range(rng.randint(1, 24)):
        kind = rng.randrange(20)
        if kind <= 11:
            item = message(draw, rng, ids, used, oracle)
            if isinstance(item, dict) and valid_id(item.get("id")):
                used.append(item["id"])
            data = encode(item, rng)
        elif kind <= 13:                                          # a batch of any size
            size = rng.choice([0, 1, 1, 2, 2, 3, 4, 5, 8, 13, 30, 100])
            members = [message(draw, rng, ids, used, oracle) for _ in range(size)]
            used += [m["id"] for m in members if isinstance(m, dict) and valid_id(m.get("id"))]
            data = encode(members, rng)
        elif kind <= 14:
            data = rng.choice(BLANKS)
        elif kind <= 17:
            data = mutate(encode(message(draw, rng, ids, used, oracle), rng), oracle.ext)
        else:
            data = draw(st.binary(max_size=40)).replace(b"\n", b"")
        if long_lines and rng.randrange(3) == 0:
            data = pad(data, oracle.ext)
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
# The servers: what the fuzzer knows of each
# ============================================================================================

class Ask:
    """A call that asks the client: its questions in order, as (key, kind), kind one of
    "form"/"url" (elicitation), "sampling", "roots"; ``arguments`` that reach the first
    question (``valid`` tells them); ``optional``: the handler copes without the capability;
    ``result(answer)``: the text of the result once the last question is answered, if known."""

    def __init__(self, questions, arguments=st.just({}), valid=lambda arguments: not arguments,
                 optional=False, result=None):
        self.questions, self.arguments, self.valid = questions, arguments, valid
        self.optional, self.result = optional, result


def greeting(answer):
    """What modern.py's greet says to an answer."""
    action, content = answer.get("action"), answer.get("content")
    if action in ("decline", "cancel"):
        return f"no name ({action})"
    if action == "accept" and isinstance(content, dict) and type(content.get("name")) is str:
        return f"Hello, {content['name']}!"
    return None


class Profile:
    """What the fuzzer knows of one test server: its tools, prompts and resources, which
    calls ask the client, its cache hints and how long its requestStates live."""

    def __init__(self, script, name, tools, uris, prompt, argument, asking, *, resources, calls,
                 template_prefixes=(), resource_hints=None, maybe_tools=(), own_methods=(),
                 state_ttl=600.0, env=None):
        self.script, self.name, self.tool_args, self.asking = script, name, tools, asking
        self.calls = list(calls) + [
            (method, {}) for method in ("tools/list", "prompts/list", "resources/list",
                                        "resources/templates/list")]
        self.tools = set(tools) - {"no_such_tool"} - set(maybe_tools)
        self.maybe_tools, self.prompts, self.resources = set(maybe_tools), {prompt}, resources
        self.template_prefixes, self.resource_hints = template_prefixes, resource_hints or {}
        self.params_for = params_for(tools, uris, prompt, argument)
        self.methods = KNOWN_METHODS | set(own_methods)
        self.worker_methods = WORKER_METHODS | set(own_methods)
        self.asks_outside_a_call = set(own_methods)
        self.cache, self.state_ttl, self.env = (0, "public"), state_ttl, env or {}


def text_argument(name):
    return st.fixed_dictionaries({name: TEXT})


EVERYTHING = Profile(
    "everything.py", "everything", EVERYTHING_TOOLS,
    ["test://static/text", "test://static/blob", "test://items/1"], "greet", "style", {
        ("tools/call", "ask_user"): Ask([("elicitation-1", "form")]),
        ("tools/call", "ask_model"): Ask(
            [("sampling-1", "sampling")], text_argument("question"),
            lambda a: set(a) == {"question"} and type(a["question"]) is str),
        ("tools/call", "roots"): Ask([("roots-1", "roots")]),
    },
    resources={"test://static/text", "test://static/blob"},
    template_prefixes=("test://items/",), calls=[
        ("resources/read", {"uri": "test://static/text"}),
        ("resources/read", {"uri": "test://static/blob"}),
        ("resources/read", {"uri": "test://items/7"}),
        ("prompts/get", {"name": "greet", "arguments": {"name": "Bo"}}),
        ("completion/complete", {"ref": {"type": "ref/prompt", "name": "greet"},
                                 "argument": {"name": "style", "value": "w"}}),
        ("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}),
        ("tools/call", {"name": "progress", "arguments": {"steps": 2}}),
        ("tools/call", {"name": "chatty", "arguments": {}})])
# The modern server's requestStates expire after 2 s, so that the fuzzer sees both sides.
MODERN = Profile(
    "modern.py", "modern", MODERN_TOOLS, MODERN_URIS + ["test://none"], "poem", "subject", {
        ("tools/call", "greet"): Ask([("user_name", "form")], result=greeting),
        ("tools/call", "interview"): Ask(
            [("elicitation-1", "form"), ("sampling-2", "sampling"), ("roots-3", "roots")],
            text_argument("topic"), lambda a: set(a) == {"topic"} and type(a["topic"]) is str),
        ("tools/call", "count_runs"): Ask([("elicitation-1", "form")]),
        ("tools/call", "secret_link"): Ask([("elicitation-1", "url")]),
        ("tools/call", "optional_model"): Ask([("sampling-1", "sampling")], optional=True),
        ("resources/read", "test://modern/ask"): Ask([("elicitation-1", "form")]),
        ("prompts/get", "poem"): Ask([("elicitation-1", "form")]),
    },
    resources=set(MODERN_URIS), resource_hints={"test://modern/text": (60000, "private")},
    calls=[("resources/read", {"uri": "test://modern/text"}),
           ("resources/read", {"uri": "test://modern/plain"}),
           ("completion/complete", {"ref": {"type": "ref/prompt", "name": "poem"},
                                    "argument": {"name": "subject", "value": "s"}}),
           ("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}),
           ("tools/call", {"name": "report", "arguments": {"steps": 2}}),
           ("tools/call", {"name": "toggle", "arguments": {"present": True}}),
           ("tools/call", {"name": "toggle", "arguments": {"present": False}}),
           ("tools/call", {"name": "touch", "arguments": {"uri": "test://modern/text"}})],
    maybe_tools=["extra"], own_methods=["example/ask"], state_ttl=2.0,
    env={"MODERN_STATE_TTL": "2"})


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


def envelope_line(rid, method, params=None, capabilities=None):
    """One 2026-07-28 request line, with a valid envelope."""
    params = dict(params or {}, _meta={PV: V2026, CAPS: capabilities or {}})
    return (json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
            + "\n").encode()


SEED_ARGUMENTS = {"interview": {"topic": "tea"}, "ask_model": {"question": "q"}}


class FuzzServer:
    def __init__(self, session, profile=EVERYTHING, max_line=None, modern_share=0.15):
        self.session, self.profile = session, profile
        self.max_line = max_line or (32 << 20)
        self.oracle = Oracle(profile, modern_share)
        self.tag = 0
        self.late = {}                       # key(id) -> replies an earlier example may still send
        self.examples = 0
        self.dirty = False
        self.start()
        if self.max_line > 4096:
            self.ask_a_stranger()

    def start(self):
        env = dict(self.profile.env)
        if self.max_line != (32 << 20):
            env["EVERYTHING_MAX_LINE"] = str(self.max_line)
        # A key of its own: states the last process issued are now another process's.
        env["MCP_MIN_STATE_KEY"] = os.urandom(16).hex()
        self.wire = Wire([sys.executable, str(SERVERS / self.profile.script)], env=env)
        self.wire.initialize(self.session)
        self.oracle.restarted()
        if self.max_line > 4096:
            self.seed(self.wire, self.oracle.issuer)

    def seed(self, wire, issuer):
        """Make every asking call once, so that retries have real requestStates from the
        first example on."""
        for (method, target), ask in sorted(self.profile.asking.items(), key=lambda i: i[0]):
            params = {"uri": target} if method == "resources/read" else \
                {"name": target, "arguments": SEED_ARGUMENTS.get(target, {})}
            sent = time.time()
            result = wire.result(method, dict(params, _meta={PV: V2026, CAPS: ALL_CAPS}))
            assert result["resultType"] == "input_required", result
            self.oracle.registry.add(StateRecord(
                result["requestState"], issuer, ask, 0, method, params, result["inputRequests"],
                sent, time.time(), self.profile.state_ttl))
        wire.notifications.clear()

    def ask_a_stranger(self):
        """requestStates from another process of the same server (with another key): never
        valid here, however right the call they come with."""
        env = dict(self.profile.env, MCP_MIN_STATE_KEY=os.urandom(16).hex())
        stranger = Wire([sys.executable, str(SERVERS / self.profile.script)], env=env)
        try:
            self.seed(stranger, issuer=-1)
        finally:
            stranger.close()

    def close(self):
        self.wire.close()

    def next_tag(self):
        self.tag += 1
        return self.tag

    def feed(self, data):
        """Send one example's stream and check everything the server writes for it.
        ``data``: bytes, or a function of this server returning them (to use live states)."""
        if self.dirty or self.wire.proc.poll() is not None:
            # The last example failed (Hypothesis now replays it) or the server died: start
            # afresh, so that nothing left over from it is mistaken for this one's output.
            self.close()
            self.start()
            self.late = {}
        self.dirty = True
        self.examples += 1
        if callable(data):
            data = data(self)
        expected = expect_stream(data, self.session, self.max_line, self.oracle)
        sentinel = f"sentinel-{self.examples}-{time.monotonic_ns()}"
        discover = f"discover-{self.examples}-{time.monotonic_ns()}"
        sent = time.time()
        self.wire.send(data + (json.dumps({"jsonrpc": "2.0", "id": sentinel, "method": "ping"})
                               + "\n").encode() + envelope_line(discover, "server/discover"))

        got, idless, too_long, arrays, acks = {}, {-32700: 0, -32600: 0}, 0, 0, {}
        must = expected.must
        sentinels = set()

        def satisfied():
            return (len(sentinels) == 2 and all(got.get(k, 0) >= n for k, n in must.items())
                    and idless == expected.idless and too_long == expected.too_long
                    and arrays >= expected.must_batches
                    and all(acks.get(k, 0) == len(v) for k, v in expected.acks.items()))

        def report(what):
            return self.report(what, expected, got, idless, too_long)

        deadline = time.monotonic() + 30
        while not satisfied():
            remaining = deadline - time.monotonic()
            assert remaining > 0, report("timed out")
            # Before the sentinels, the reader may be busy; after them, only short tool calls
            # (at most ~100 ms) can still be running: a missing reply shows up quickly.
            wait = min(remaining, 2.0 if sentinels else 10.0)
            try:
                raw = self.wire.lines.get(timeout=wait)
            except queue.Empty:
                raise AssertionError(report(f"nothing more within {wait} s")) from None
            assert raw is not None, report("the server died")
            responses, notifications = Checked.parse(raw, self.session)
            for note in notifications:
                self.notice(note, expected, acks, report)
            ours = False                               # does this line belong to this example?
            for reply in responses:
                timing = (sent, time.time())
                if reply.get("id") == sentinel:
                    assert reply.get("result") == {}, reply
                    sentinels.add("ping")
                    continue
                if reply.get("id") == discover:
                    problem = Modern(self.oracle, "server/discover").check(reply, timing)
                    assert problem is None, (problem, reply)
                    sentinels.add("discover")
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
                assert k in expected.requests, report(f"a reply to no request: {reply}")
                assert got[k] <= expected.requests[k], report(
                    f"more replies than requests for id {reply['id']!r}")
                problem = expected.judge(k, reply, timing)
                assert problem is None, report(f"{problem}, in {json.dumps(reply)[:600]}")
                self.harvest(expected, k, reply, timing)
            if raw.startswith(b"[") and ours:      # (an earlier example's late batch is not)
                arrays += 1
            assert idless[-32700] <= expected.idless[-32700] and \
                idless[-32600] <= expected.idless[-32600], report("too many id-less errors")
            assert too_long <= expected.too_long, report("too many 'too large'")
            assert arrays <= expected.max_batches, report("too many batch replies")
        for k, n in expected.requests.items():
            if n > got.get(k, 0):                   # cancelled, or a late reply still to come
                self.late[k] = self.late.get(k, 0) + n - got.get(k, 0)
        assert self.wire.proc.poll() is None, "the server exited"
        self.dirty = False

    def notice(self, note, expected, acks, report):
        """A notification: those of subscriptions/listen streams must be for an open listen
        (the acknowledgement, exactly once) and of a kind it asked for."""
        params = note.get("params", {})
        meta = params.get("_meta")
        if note["method"] == "notifications/subscriptions/acknowledged":
            sid = meta.get(SUB_ID) if isinstance(meta, dict) else None
            assert valid_id(sid), report(f"an acknowledgement without the listen's id: {note}")
            k, n = key(sid), acks.get(key(sid), 0)
            assert n < len(expected.acks.get(k, [])), report(f"an acknowledgement too many: {note}")
            assert params.get("notifications") == expected.acks[k][n], report(
                f"{note} acknowledges other notifications than {expected.acks[k][n]}")
            acks[k] = n + 1
            self.oracle.stats["acknowledgements"] += 1
        elif isinstance(meta, dict) and SUB_ID in meta:
            sid = meta[SUB_ID]
            honoured = self.oracle.listened.get(key(sid)) if valid_id(sid) else None
            assert honoured is not None, report(f"a notification for no listen: {note}")
            asked = {"notifications/tools/list_changed": honoured.get("toolsListChanged"),
                     "notifications/prompts/list_changed": honoured.get("promptsListChanged"),
                     "notifications/resources/list_changed": honoured.get("resourcesListChanged"),
                     "notifications/resources/updated":
                         params.get("uri") in honoured.get("resourceSubscriptions", [])}
            assert asked.get(note["method"]), report(f"{note}, on a listen for {honoured}")
            self.oracle.stats["listen notifications"] += 1

    def harvest(self, expected, k, reply, timing):
        """File the requestState of an input_required result, for later retries."""
        outcomes, result = expected.outcomes[k], reply.get("result")
        if isinstance(result, dict) and "resultType" in result:
            self.oracle.stats[f"{result['resultType']} results"] += 1
        if len(outcomes) != 1 or outcomes[0].harvest is None or not isinstance(result, dict) \
                or result.get("resultType") != "input_required":
            return
        source, asked = outcomes[0].harvest, list(result["inputRequests"])
        keys = [question_key for question_key, _ in source.ask.questions]
        if len(asked) == 1 and asked[0] in keys:
            self.oracle.registry.add(StateRecord(
                result["requestState"], self.oracle.issuer, source.ask, keys.index(asked[0]),
                source.method, source.params, result["inputRequests"], *timing,
                self.profile.state_ttl))
            self.oracle.stats["requestStates harvested"] += 1

    def report(self, what, expected, got, idless, too_long):
        return (f"{what}\nexpected requests {expected.requests} (must {expected.must}),"
                f" id-less {expected.idless}, too long {expected.too_long},"
                f" batches {expected.batches}, acknowledgements {expected.acks}\n"
                f"got {got}, id-less {idless}, too long {too_long}\n"
                f"stderr tail:\n{self.wire.stderr[-3000:]}")

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


def run_fuzz(session, profile=EVERYTHING, max_line=None, long_lines=False, extra_examples=(),
             modern_share=0.15, max_examples=None, final_examples=()):
    server = FuzzServer(session, profile, max_line, modern_share)
    try:
        @settings(PROFILE, max_examples=max_examples or PROFILE.max_examples)
        @given(st.data())
        def check(data):
            stream = data.draw(streams(server.next_tag(), server.oracle, long_lines=long_lines),
                               label="stream")
            server.feed(stream)

        for raw in extra_examples:
            server.feed(raw)
        check()
        for raw in final_examples:
            server.feed(raw)
        peak = server.peak_kib() if os.path.exists("/proc/self/status") else 0
        print(f"\n[figure] fuzz {profile.script} {session}"
              f"{' (long lines)' if long_lines else ''}: {server.examples} streams, peak RSS "
              f"{peak / 1024:.1f} MiB; {dict(sorted(server.oracle.stats.items()))}")
        assert peak < PEAK_BOUND_KIB, f"peak RSS {peak} KiB after fuzzing"
        server.finish()
        return server.oracle.stats
    finally:
        server.close()


# Hand-picked streams run before the generated ones: each named hazard at least once.
HAZARDS = [
    b"\n\r\n \n\t\r\n",
    b'{"jsonrpc":"2.0","id":"h1","method":"tools/call","params":{"name":"echo","arguments":'
    b'{"text":"a\xe2\x80\xa8b\xe2\x80\xa9c\xc2\x85d"}}}\n',
    b'{"jsonrpc":"2.0","id":"h2","method":"ping"}\r\r\n',
    b'{"jsonrpc":"2.0",\r"id":"h3","method":"ping"}\n',
    b'{"jsonrpc":"2.0","id":"h4\x00","method":"ping"}\n',
    b'{"jsonrpc":"2.0","id":"h5","method":"ping"}\x00\n',
    b'{"jsonrpc":"2.0","id":"h6\xff","method":"ping"}\n',
    b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}\n',
    b'{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}\n'
    b'{"jsonrpc":"2.0","id":-9223372036854775809,"method":"ping"}\n',
    b'{"jsonrpc":"2.0","id":"dup","method":"tools/call","params":{"name":"block",'
    b'"arguments":{"ms":50}}}\n'
    b'{"jsonrpc":"2.0","id":"dup","method":"tools/call","params":{"name":"echo",'
    b'"arguments":{"text":"x"}}}\n',
    b'{"jsonrpc":"2.0","id":null,"method":"ping"}\n{"jsonrpc":"2.0","id":true,"method":"ping"}\n'
    b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}\n{"jsonrpc":"2.0","id":[1],"method":"ping"}\n'
    b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}\n',
    b'[]\n[1]\n[{"jsonrpc":"2.0","method":"notifications/initialized"}]\n'
    b'[{"jsonrpc":"2.0","id":"b1","method":"ping"},{"jsonrpc":"2.0","id":"b2","method":'
    b'"tools/call","params":{"name":"sleep","arguments":{"ms":20}}},{"jsonrpc":"2.0","method":'
    b'"notifications/cancelled","params":{"requestId":"b2"}},5,[]]\n',
    b'{"jsonrpc":"2.0","id":"n1","method":"notifications/initialized"}\n'
    b'{"jsonrpc":"2.0","method":"ping"}\n{"jsonrpc":"2.0","method":"tools/call"}\n',
    b'{"jsonrpc":"2.0","id":"r1","result":{}}\n{"jsonrpc":"2.0","error":{"code":1,"message":"x"}}\n'
    b'{"jsonrpc":"2.0","id":"r2","result":{},"error":{}}\n',
    b'NaN\n{"jsonrpc":"2.0","id":"c","method":"ping","params":{"x":Infinity}}\n\xef\xbb\xbf{}\n',
    b'{"jsonrpc":"2.0","id":"u1","method":"no/such/method"}\n'
    b'{"jsonrpc":"1.0","id":"v1","method":"ping"}\n',
]


def line(rid, method, params=None):
    message = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        message["params"] = params
    return (json.dumps(message) + "\n").encode()


ENVELOPE = {PV: V2026, CAPS: {}}
LISTEN = {"notifications": {"toolsListChanged": True}, "_meta": ENVELOPE}
CANCEL_LISTEN = (b'{"jsonrpc":"2.0","method":"notifications/cancelled",'
                 b'"params":{"requestId":"mL"}}\n')
# Each rule of the 2026-07-28 era at least once, between handshake-era lines.
MODERN_HAZARDS = [
    line("m1", "server/discover") + line("m2", "server/discover", {"_meta": []})
    + line("m3", "subscriptions/listen", {"notifications": {}}) + line("m0", "tools/list"),
    line("m4", "tools/list", {"_meta": {CAPS: {}}})
    + line("m5", "tools/list", {"_meta": {PV: 20260728, CAPS: {}}})
    + line("m6", "tools/list", {"_meta": {PV: V2026}})
    + line("m7", "tools/list", {"_meta": {PV: V2026, CAPS: ["elicitation"]}})
    + line("m8", "tools/list", {"_meta": {PV: V2026, CAPS: {}, LOG_LEVEL: "loud"}})
    + line("m9", "tools/list", {"_meta": {PV: V2026, CAPS: {}, LOG_LEVEL: "debug"}}),
    line("m10", "tools/list", {"_meta": {PV: "2025-11-25", CAPS: {}}})
    + line("m11", "ping", {"_meta": {PV: "1900-01-01", CAPS: {}}})
    + line("m12", "tools/list", {"_meta": {PV: "2027-01-01", CAPS: {}, LOG_LEVEL: "loud"}}),
    b"".join(line(f"m2{i}", method, {"_meta": ENVELOPE, "level": "info", "uri": "test://x"})
             for i, method in enumerate(["ping", "logging/setLevel", "resources/subscribe",
                                         "resources/unsubscribe", "tools/lisst", "initialize",
                                         "notifications/progress"])),
    line("m30", "tools/list", {"_meta": ENVELOPE, "requestState": "x"})
    + line("m31", "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2},
                                 "requestState": None, "_meta": ENVELOPE})
    + line("m32", "resources/read", {"uri": "test://none", "_meta": ENVELOPE})
    + line("m33", "resources/read", {"uri": "test://none"})
    + b"".join(line(f"m3{i}", "resources/read", {"uri": uri, "_meta": ENVELOPE}) for i, uri in
               enumerate(["test://static/text", "test://modern/plain", "test://modern/text"], 4)),
    # a listen, the same id again while it is open, its cancellation, and the id again
    line("mL", "subscriptions/listen", LISTEN) + line("mL", "subscriptions/listen", LISTEN)
    + CANCEL_LISTEN + line("mL", "subscriptions/listen", LISTEN) + CANCEL_LISTEN,
    # 2026-07-28 requests inside a batch (in 2025-03-26; elsewhere the batch is refused)
    b"[" + line("mb1", "subscriptions/listen", LISTEN)[:-1] + b","
    + line("mb2", "tools/list", {"_meta": ENVELOPE})[:-1] + b"," + line("mb3", "tools/list")[:-1]
    + b"]\n",
    # a retry without an envelope is a handshake-era call: requestState means nothing there
    line("m40", "tools/call", {"name": "greet", "requestState": "v1.e30.AAAA"})
    + line("m41", "tools/call", {"name": "ask_user", "requestState": "v1.e30.AAAA"}),
]
ANSWER_EXAMPLES = {"form": {"action": "accept", "content": {"name": "Ada", "subject": "rain"}},
                   "url": {"action": "accept"}, "roots": {"roots": [{"uri": "file:///a"}]},
                   "sampling": {"role": "assistant", "model": "m",
                                "content": {"type": "text", "text": "fine"}}}


def live_retries(server):
    """Retries of a requestState this server issued: as issued with its answer and without,
    altered, with a malformed answer, moved to other arguments and to another tool, and a
    state of another process with its own call."""
    records = list(server.oracle.registry.records.values())
    mine = [r for r in records if r.issuer == server.oracle.issuer and r.kind == "form"]
    theirs = [r for r in records if r.issuer != server.oracle.issuer]
    if not mine:
        return b"\n"
    record = mine[-1]
    answer = {record.key: ANSWER_EXAMPLES["form"]}

    def retry_line(rid, state, answers=None, params=None, method=None):
        params = dict(record.params if params is None else params, requestState=state)
        if answers is not None:
            params["inputResponses"] = answers
        return line(rid, method or record.method, dict(params, _meta={PV: V2026, CAPS: ALL_CAPS}))

    flipped = record.state[:-5] + ("A" if record.state[-5] != "A" else "B") + record.state[-4:]
    lines = [retry_line("live1", record.state, answer), retry_line("live2", record.state),
             retry_line("live3", flipped, answer), retry_line("live4", record.state, [answer]),
             retry_line("live5", record.state, {record.key: {"action": "maybe"}}),
             retry_line("live6", record.state, answer, dict(record.params, arguments={"x": 1})),
             retry_line("live7", record.state, answer, {"name": "add", "arguments": {"a": 1}},
                        "tools/call")]
    if theirs:
        lines.append(retry_line("live8", theirs[0].state, {theirs[0].key: answer[record.key]},
                                theirs[0].params, theirs[0].method))
    return b"".join(lines)


def stale_retries(server):
    """Retries, as issued and answered, of the oldest requestStates this server issued, once
    they have expired (waiting for that if the run was quick)."""
    records = [r for r in server.oracle.registry.records.values()
               if r.issuer == server.oracle.issuer][:3]
    if not records:
        return b"\n"
    time.sleep(max(0.0, records[-1].received + records[-1].ttl + 0.1 - time.time()))
    return b"".join(line(f"stale{i}", r.method, dict(
        r.params, requestState=r.state, inputResponses={r.key: ANSWER_EXAMPLES[r.kind]},
        _meta={PV: V2026, CAPS: ALL_CAPS})) for i, r in enumerate(records))


def test_fuzz_streams_2025_11_25():
    run_fuzz("2025-11-25", extra_examples=HAZARDS + MODERN_HAZARDS + [live_retries])


def test_fuzz_streams_with_batches_2025_03_26():
    run_fuzz("2025-03-26", extra_examples=HAZARDS + MODERN_HAZARDS + [live_retries])


def test_fuzz_both_eras_on_the_modern_server():
    """tests/servers/modern.py, with mostly 2026-07-28 requests beside a 2025-06-18 session:
    calls that ask the client over several rounds, retried with the states they get (which
    expire after 2 s here), listens, and tools that change the tool list and resources."""
    stats = run_fuzz("2025-06-18", MODERN, modern_share=0.6,
                     extra_examples=MODERN_HAZARDS + [live_retries],
                     final_examples=[stale_retries])
    # The generator reached every rule it claims to exercise, at least once.
    for what in ("requestStates harvested", "requestStates accepted", "requestStates refused",
                 "requestStates expired", "listens opened", "acknowledgements",
                 "2026-07-28 requests"):
        assert stats[what] > 0, f"no {what}: {dict(stats)}"


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
    server = FuzzServer("2025-11-25", EVERYTHING, SMALL_CAP)
    try:
        hostile_value = st.one_of(
            st.binary(min_size=1, max_size=12).filter(lambda b: b"\n" not in b and b'"' not in b
                                                      and b"\\" not in b).map(
                                                          lambda b: b'"' + b + b'"'),
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


def test_the_oracle_tells_wrong_replies_from_right_ones():
    """The oracle itself, on made-up replies: it would notice a server that broke the rules."""
    oracle = Oracle(EVERYTHING, 0)
    expected = expect_stream(
        line(1, "tools/list") + line(2, "tools/list", {"_meta": ENVELOPE})
        + line(3, "tools/list", {"_meta": {PV: "2025-11-25", CAPS: {}}})
        + line(4, "resources/read", {"uri": "test://none", "_meta": ENVELOPE})
        + line(5, "ping", {"_meta": ENVELOPE}), "2025-11-25", 1 << 20, oracle)
    info = {SERVER_INFO: {"name": "everything", "version": "1.2.3"}}
    modern = {"tools": [], "resultType": "complete", "ttlMs": 0, "cacheScope": "public",
              "_meta": info}

    def judge(rid, body):
        return expected.judge(key(rid), dict({"jsonrpc": "2.0", "id": rid}, **body), (0, 0))

    assert judge(1, {"result": {"tools": []}}) is None
    assert "2026-07-28 fields" in judge(1, {"result": {"tools": [], "resultType": "complete"}})
    assert judge(2, {"result": modern}) is None
    assert "cache hints" in judge(2, {"result": dict(modern, ttlMs=-1)})
    assert "resultType" in judge(2, {"result": {"tools": [], "_meta": info}})
    assert judge(3, {"error": {"code": -32022, "message": "x", "data": {
        "supported": [V2026], "requested": "2025-11-25"}}}) is None
    assert "error data" in judge(3, {"error": {"code": -32022, "message": "x"}})
    assert judge(4, {"error": {"code": -32602, "message": "x", "data": {"uri": "test://none"}}}) \
        is None
    assert "does not use" in judge(4, {"error": {"code": -32002, "message": "x"}})
    assert "does not use" in judge(2, {"error": {"code": -32042, "message": "x"}})
    assert judge(5, {"error": {"code": -32601, "message": "x"}}) is None
    assert "expected error -32601" in judge(5, {"result": {}})


# ============================================================================================
# Server bugs the fuzzer found, each reduced to its shortest exchange
# ============================================================================================

def modern_call(wire, method, params=None, capabilities=None, meta=None):
    params = dict(params or {}, _meta={PV: V2026, CAPS: capabilities or {}, **(meta or {})})
    return wire.request(method, params)


@pytest.mark.parametrize("level", [[], {"level": "info"}])
def test_a_log_level_of_another_type_is_32602(spawn, level):
    wire = spawn("modern.py")
    response = modern_call(wire, "tools/list", meta={LOG_LEVEL: level})
    assert response.get("error", {}).get("code") == -32602, response
    assert "result" in modern_call(wire, "server/discover")        # and the server goes on


def test_a_null_log_level_is_32602(spawn):
    response = modern_call(spawn("modern.py"), "tools/list", meta={LOG_LEVEL: None})
    assert response.get("error", {}).get("code") == -32602, response


@pytest.mark.parametrize("rewrite", ["padding added", "unused bits changed"])
def test_a_request_state_with_its_signature_rewritten_is_32602(spawn, rewrite):
    wire = spawn("modern.py")
    state = modern_call(wire, "tools/call", {"name": "greet"}, ALL_CAPS)["result"]["requestState"]
    altered = state + "=" if rewrite == "padding added" else \
        state[:-1] + B64[B64.index(state[-1]) ^ 1]       # the last of 43 characters: 2 unused bits
    response = modern_call(wire, "tools/call", {
        "name": "greet", "requestState": altered,
        "inputResponses": {"user_name": {"action": "decline"}}}, ALL_CAPS)
    assert response.get("error", {}).get("code") == -32602, response


def test_a_sampling_answer_without_content_is_32602(spawn):
    wire = spawn("modern.py")
    first = modern_call(wire, "tools/call", {"name": "optional_model"}, ALL_CAPS)["result"]
    response = modern_call(wire, "tools/call", {
        "name": "optional_model", "requestState": first["requestState"],
        "inputResponses": {"sampling-1": {"role": "assistant", "model": "m"}}}, ALL_CAPS)
    assert response.get("error", {}).get("code") == -32602, response
