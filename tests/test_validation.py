"""compile_schema: every keyword, every message format; Signature.bind: coercion, validation,
conversion.  Spec: R2/R4/R9 (every input is validated; problems become an isError result listing
each one), J1 (2020-12 semantics by default), J2 (draft-07 spellings understood), J4 (no network
$ref, recursion is fine)."""
import dataclasses
import datetime
import enum
import typing
from typing import Annotated, Any, Literal, Optional, TypedDict, Union

import pytest

from mcp_min import SchemaError, Signature, compile_schema


def problems(schema, value):
    return compile_schema(schema)(value)


# --- the message formats the README promises -------------------------------

GIFT = {"type": "object", "properties": {
    "budget": {"type": "number", "minimum": 0},
    "occasion": {"enum": ["birthday", "wedding"]},
    "items": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
    "x": {"type": ["integer", "null"]}},
    "required": ["budget"], "additionalProperties": False}


@pytest.mark.parametrize("value, expected", [
    ({}, ["Missing required property 'budget'"]),
    ({"budget": "a hundred bucks"}, ['budget: expected number, got string "a hundred bucks"']),
    ({"budget": 1, "items": [{}, {}, {"name": 5}]}, ["items[2].name: expected string, got integer 5"]),
    ({"budget": 1, "colour": "red"}, ["Unexpected property 'colour'"]),
    ({"budget": -5}, ["budget: must be >= 0, got -5"]),
    ({"budget": 0, "occasion": "funeral"}, ['occasion: must be one of "birthday", "wedding", got "funeral"']),
    ({"budget": 0, "x": "a"}, ['x: expected integer or null, got string "a"']),
    ({"budget": True}, ["budget: expected number, got boolean true"]),
    ({"budget": None}, ["budget: expected number, got null"]),
    ({"budget": [1, 2]}, ["budget: expected number, got array [1, 2]"]),
    ({"budget": {"a": 1}}, ['budget: expected number, got object {"a": 1}']),
    ("nope", ['Expected object, got string "nope"']),
    ({"occasion": "funeral", "colour": 1, "budget": "x"}, [     # every problem, not just the first
        'occasion: must be one of "birthday", "wedding", got "funeral"', "Unexpected property 'colour'",
        'budget: expected number, got string "x"']),
])
def test_message_formats(value, expected):
    """R2: the problems say where and what, readably."""
    assert problems(GIFT, value) == expected


def test_long_values_are_truncated():
    [message] = problems({"type": "integer"}, "x" * 500)
    assert message.startswith('Expected integer, got string "xxx') and message.endswith("…")
    assert len(message) < 100


def test_nested_paths_and_root_arrays():
    schema = {"type": "array", "items": {"type": "object", "properties": {
        "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["id"]}}
    assert problems(schema, [{"id": 1, "tags": ["a", 2]}, {}]) == [
        "[0].tags[1]: expected string, got integer 2", "[1]: missing required property 'id'"]


# --- every keyword -------------------------------------------------------------

KEYWORDS = [  # schema, valid values, (invalid value, problems)
    ({"type": "integer"}, [1, 1.0, -3, 10 ** 30], [(1.5, ["Expected integer, got number 1.5"]),
                                                   (True, ["Expected integer, got boolean true"])]),
    ({"type": "number"}, [1, 1.5], [(False, ["Expected number, got boolean false"]),
                                   ("1", ['Expected number, got string "1"'])]),
    ({"type": "boolean"}, [True, False], [(0, ["Expected boolean, got integer 0"])]),
    ({"type": "null"}, [None], [(0, ["Expected null, got integer 0"])]),
    ({"type": "string"}, ["", "x"], [(None, ["Expected string, got null"])]),
    ({"type": "array"}, [[], [1]], [((), None), ({}, ["Expected array, got object {}"])]),
    ({"type": "object"}, [{}], [([], ["Expected object, got array []"])]),
    ({"type": ["string", "integer", "null"]}, ["a", 1, None], [(1.5, ["Expected string, integer or null, "
                                                                      "got number 1.5"])]),
    ({"enum": [1, "a", None, [1, {"b": True}]]}, [1, 1.0, "a", None, [1.0, {"b": True}]],
     [(True, ['Must be one of 1, "a", null, [1, {"b": true}], got true']), ([1, {"b": 1}], None)]),
    ({"const": {"a": [1, 2]}}, [{"a": [1.0, 2]}], [({"a": [2, 1]}, ['Must be {"a": [1, 2]}, got {"a": [2, 1]}'])]),
    ({"const": False}, [False], [(0, ["Must be false, got 0"])]),
    ({"minimum": 2}, [2, 2.5, "not a number"], [(1.9, ["Must be >= 2, got 1.9"])]),
    ({"maximum": 2}, [2, True], [(3, ["Must be <= 2, got 3"])]),
    ({"exclusiveMinimum": 0}, [0.1], [(0, ["Must be > 0, got 0"])]),
    ({"exclusiveMaximum": 0}, [-1], [(0, ["Must be < 0, got 0"])]),
    ({"multipleOf": 3}, [0, 9, -3, 6.0], [(4, ["Must be a multiple of 3, got 4"]), (7.5, None)]),
    ({"multipleOf": 0.01}, [19.99, 0.3, 5], [(0.001, ["Must be a multiple of 0.01, got 0.001"])]),
    ({"multipleOf": 0.5}, [1.5, 2], [(1.25, None)]),
    ({"minLength": 2}, ["ab", "日本", 5], [("a", ["Must be at least 2 characters long, got 1"]),
                                          ("😀", None)]),      # one code point, two UTF-16 units
    ({"maxLength": 1}, ["😀", ""], [("ab", ["Must be at most 1 characters long, got 2"])]),
    ({"pattern": "^[a-z]+$"}, ["abc", 12], [("aBc", ['Must match the pattern ^[a-z]+$, got "aBc"'])]),
    ({"pattern": "b"}, ["abc"], [("ac", None)]),                 # search, not match
    ({"minItems": 1}, [[0], "x"], [([], ["Must have at least 1 items, got 0"])]),
    ({"maxItems": 1}, [[0]], [([1, 2], ["Must have at most 1 items, got 2"])]),
    ({"uniqueItems": True}, [[1, "1", True], [[1], [True]], [{"a": 1}, {"a": 2}]],
     [([1, 1.0], ["Must not contain duplicates, got [1, 1.0]"]), ([{"a": [1]}, {"a": [1.0]}], None)]),
    ({"uniqueItems": False}, [[1, 1]], []),
    ({"minProperties": 1}, [{"a": 1}], [({}, ["Must have at least 1 properties, got 0"])]),
    ({"maxProperties": 0}, [{}], [({"a": 1}, ["Must have at most 0 properties, got 1"])]),
    ({"required": ["a", "b"]}, [{"a": 1, "b": 2}, [1]], [({"b": 1}, ["Missing required property 'a'"])]),
    ({"properties": {"a": {"type": "string"}}}, [{}, {"a": "x", "b": 1}], [({"a": 1}, None)]),
    ({"properties": {"a": {}}, "additionalProperties": False}, [{"a": 1}], [({"b": 1}, ["Unexpected property 'b'"])]),
    ({"additionalProperties": {"type": "integer"}}, [{"a": 1}], [({"a": "1"}, ['a: expected integer, got string "1"'])]),
    ({"items": {"type": "integer"}}, [[1, 2], "no array"], [([1, "2"], ['[1]: expected integer, got string "2"'])]),
    ({"prefixItems": [{"type": "integer"}, {"type": "string"}]}, [[1], [1, "a", None]], [(["a"], None)]),
    ({"prefixItems": [{"type": "integer"}], "items": False}, [[], [1]],
     [([1, 2], ["Must have at most 1 items, got 2"])]),
    ({"prefixItems": [{"type": "integer"}], "items": {"type": "string"}}, [[1, "a"]], [([1, 2], None)]),
    ({"items": [{"type": "integer"}], "additionalItems": False}, [[1]], [([1, 2], None)]),   # draft-07 spelling
    ({"allOf": [{"minimum": 1}, {"maximum": 3}]}, [2], [(5, ["Must be <= 3, got 5"])]),
    ({"anyOf": [{"type": "integer"}, {"type": "string", "minLength": 3}]}, [1, "abc"],
     [("ab", ["Must be at least 3 characters long, got 2"]), (None, ["Expected integer or string, got null"])]),
    ({"anyOf": [{"type": "integer"}, {}]}, ["anything"], []),
    ({"oneOf": [{"type": "integer"}, {"minimum": 0}]}, [-1, 0.5], [
        (1, ["Must match exactly one oneOf alternative, but matches alternatives 0, 1, got 1"]),
        (-0.5, ["Must be >= 0, got -0.5"])]),
    ({"not": {"type": "string"}}, [1], [("s", ['Must not match {"type": "string"}, got "s"'])]),
    ({"not": {}}, [], [(1, None)]),
    (True, [1, None], []),
    (False, [], [(1, ["Not allowed, got 1"])]),
    ({"properties": {"a": False}}, [{}], [({"a": 1}, ["a: not allowed, got 1"])]),
    ({"format": "email", "title": "ignored", "x-unknown": 1}, ["not an email"], []),
    ({"$defs": {"pos": {"type": "integer", "minimum": 1}}, "items": {"$ref": "#/$defs/pos"}}, [[1]],
     [([0], ["[0]: must be >= 1, got 0"])]),
    ({"definitions": {"pos": {"minimum": 1}}, "$ref": "#/definitions/pos"}, [1], [(0, None)]),
    ({"type": "object", "properties": {"next": {"$ref": "#"}}}, [{"next": {"next": {}}}],
     [({"next": {"next": 1}}, ["next.next: expected object, got integer 1"])]),
    ({"$defs": {"a/b": {"type": "string"}, "c~d": {"type": "integer"}},
      "properties": {"x": {"$ref": "#/$defs/a~1b"}, "y": {"$ref": "#/$defs/c~0d"}}},
     [{"x": "s", "y": 1}], [({"x": 1}, None), ({"y": "s"}, None)]),
    ({"prefixItems": [{"type": "string"}], "items": {"$ref": "#/prefixItems/0"}}, [["a", "b"]], [(["a", 1], None)]),
]


@pytest.mark.parametrize("schema, valid, invalid", KEYWORDS, ids=[str(k[0])[:60] for k in KEYWORDS])
def test_keyword(schema, valid, invalid):
    """J1: 2020-12 semantics; 1.0 is an integer, booleans are not numbers, equality is JSON's."""
    validate = compile_schema(schema)
    for value in valid:
        assert validate(value) == [], value
    for value, expected in invalid:
        found = validate(value)
        assert found, value
        if expected is not None:
            assert found == expected


def test_any_of_reports_the_alternative_meant_for_the_value():
    schema = {"anyOf": [{"$ref": "#/$defs/Gift"}, {"type": "null"}], "$defs": {"Gift": {
        "type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"],
        "additionalProperties": False}}}
    assert problems(schema, {"nme": "x"}) == ["Missing required property 'name'", "Unexpected property 'nme'"]
    assert problems(schema, 5) == ["Expected object or null, got integer 5"]
    two_objects = {"anyOf": [{"type": "object", "required": ["a", "b", "d"]},
                             {"type": "object", "required": ["c"]}]}
    assert problems(two_objects, {"a": 1}) == ["Missing required property 'c'"]     # the fewest problems


def test_one_of_with_no_match_explains_like_any_of():
    schema = {"oneOf": [{"type": "integer"}, {"type": "string"}]}
    assert problems(schema, None) == ["Expected integer or string, got null"]


def test_problems_are_not_repeated():
    schema = {"allOf": [{"minimum": 3}, {"minimum": 3}]}
    assert problems(schema, 1) == ["Must be >= 3, got 1"]


def test_bad_schemas_fail_at_compile_time():
    """J2/J4: unsupported dialects, network and dangling $refs, bad patterns are errors up front."""
    for schema in [{"$schema": "http://json-schema.org/draft-04/schema#"}, {"$ref": "other.json#/a"},
                   {"$ref": "#anchor"}, {"$ref": "#/nope"}, {"pattern": "[unclosed"}, {"type": "float"},
                   {"minimum": "1"}, {"items": 3}, 7, {"patternProperties": {"^x_": {}}}]:
        with pytest.raises(SchemaError):
            compile_schema(schema)


def test_recursive_refs_compile_once_and_terminate():
    """J4: recursion through $ref does not loop at compile time."""
    tree = {"$ref": "#/$defs/node", "$defs": {"node": {"type": "object", "properties": {
        "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "additionalProperties": False}}}
    validate = compile_schema(tree)
    assert validate({"children": [{"children": []}]}) == []
    assert validate({"children": [{"kids": []}]}) == ["children[0]: unexpected property 'kids'"]
    assert compile_schema({"$ref": "#"})  # a schema that is only a reference to itself still compiles


# --- bind: coercion, validation, conversion ------------------------------------

class Colour(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@dataclasses.dataclass
class Item:
    name: str
    qty: int = 1
    colour: Colour = Colour.RED


@dataclasses.dataclass
class Basket:
    items: list[Item]
    note: Optional[str] = None
    when: Optional[datetime.date] = None


@dataclasses.dataclass
class Checked:
    n: int

    def __post_init__(self):
        if self.n < 0:
            raise ValueError("n must not be negative")


class Point(TypedDict):
    x: int
    y: int


@dataclasses.dataclass
class Cat:
    kind: Literal["cat"]
    lives: int


@dataclasses.dataclass
class Dog:
    kind: Literal["dog"]
    good: bool


def shop(basket: Basket, budget: float = 10, tags: set[str] = frozenset(), pair: tuple[int, str] = (0, ""),
         level: Level = Level.LOW, mode: Literal["fast", "slow"] = "fast", points: list[Point] = (),
         matrix: Optional[list[list[int]]] = None, lookup: dict[str, Colour] = None,
         frozen: frozenset[int] = frozenset(), at: datetime.datetime = None, pet: Union[Cat, Dog, None] = None,
         count: int = 0, anything: Any = None, pairs: tuple[tuple[int, int], ...] = ()):
    pass


SHOP = Signature(shop)


def test_bind_converts_to_the_annotated_python_types():
    kwargs, found = SHOP.bind({
        "basket": {"items": [{"name": "tea", "qty": 2.0, "colour": "green"}, {"name": "cake"}],
                   "when": "2024-03-01"},
        "budget": 5, "tags": ["a", "b"], "pair": [1, "x"], "level": 2, "mode": "slow",
        "points": [{"x": 1, "y": 2.0}], "matrix": [[1.0, 2]], "lookup": {"k": "red"}, "frozen": [3],
        "at": "2024-03-01T10:00:00Z", "pet": {"kind": "dog", "good": True}, "count": 3.0,
        "anything": {"raw": [1.0]}, "pairs": [[1, 2.0]]})
    assert found == []
    assert kwargs == {
        "basket": Basket([Item("tea", 2, Colour.GREEN), Item("cake")], when=datetime.date(2024, 3, 1)),
        "budget": 5, "tags": {"a", "b"}, "pair": (1, "x"), "level": Level.HIGH, "mode": "slow",
        "points": [{"x": 1, "y": 2}], "matrix": [[1, 2]], "lookup": {"k": Colour.RED}, "frozen": frozenset({3}),
        "at": datetime.datetime(2024, 3, 1, 10, tzinfo=datetime.timezone.utc), "pet": Dog("dog", True),
        "count": 3, "anything": {"raw": [1.0]}, "pairs": ((1, 2),)}
    assert type(kwargs["basket"].items[0].qty) is int and type(kwargs["count"]) is int
    assert type(kwargs["matrix"][0][0]) is int and type(kwargs["points"][0]["y"]) is int
    assert type(kwargs["tags"]) is set and type(kwargs["frozen"]) is frozenset


def test_bind_picks_the_union_alternative_the_value_is_valid_for():
    assert SHOP.bind({"basket": {"items": []}, "pet": {"kind": "cat", "lives": 9}})[0]["pet"] == Cat("cat", 9)
    assert SHOP.bind({"basket": {"items": []}, "pet": None})[0]["pet"] is None


def test_bind_omits_missing_optional_arguments():
    kwargs, found = SHOP.bind({"basket": {"items": []}})
    assert found == [] and kwargs == {"basket": Basket([])}


def test_bind_reports_every_problem_and_calls_nothing():
    """R2/R9: all inputs are validated, and every problem is reported."""
    kwargs, found = SHOP.bind({"basket": {"items": [{"qty": "two"}]}, "budget": "lots", "mode": "medium",
                               "level": 3, "extra": 1})
    assert kwargs == {}
    assert found == ["basket.items[0]: missing required property 'name'",
                     'basket.items[0].qty: expected integer, got string "two"',
                     'budget: expected number, got string "lots"',
                     'mode: must be one of "fast", "slow", got "medium"',
                     "level: must be one of 1, 2, got 3",
                     "Unexpected property 'extra'"]
    assert SHOP.bind({})[1] == ["Missing required property 'basket'"]
    assert SHOP.bind(None)[1] == ["Missing required property 'basket'"]
    assert SHOP.bind([1])[1] == ["Expected the arguments to be an object, got array [1]"]


def test_bind_reports_conversion_failures():
    kwargs, found = SHOP.bind({"basket": {"items": []}, "at": "yesterday", "count": 1})
    assert found == ['at: expected an ISO 8601 date-time string, got "yesterday"']

    def f(c: Checked): ...
    assert Signature(f).bind({"c": {"n": -1}}) == ({}, ["c: n must not be negative"])

    @dataclasses.dataclass
    class Strict:
        n: int

        def __post_init__(self):
            raise LookupError("no such n")          # not a ValueError: still a problem, named

    def g(s: Strict): ...
    assert Signature(g).bind({"s": {"n": 1}}) == ({}, ["s: LookupError: no such n"])


def test_string_arguments_are_parsed_for_any_non_string_type():
    """Prompt arguments and URI variables always arrive as strings; Optional[int], a
    Literal of ints and an IntEnum are parsed too, a str | int union is left as text."""
    import mcp_min

    class Size(enum.IntEnum):
        S = 1
        L = 3

    def f(a: Optional[int] = None, b: Literal[1, 2] = 1, c: Size = Size.S, d: Union[str, int] = "x"): ...
    entry = mcp_min.Prompt(f)
    assert entry.bind_strings({"a": "5", "b": "2", "c": "3", "d": "7"}, "prompt") == \
        {"a": 5, "b": 2, "c": Size.L, "d": "7"}


def test_bind_parses_objects_and_arrays_sent_as_json_text():
    """Claude Desktop sends object and array arguments as strings holding JSON."""
    arguments = {"basket": '{"items": [{"name": "x"}]}', "tags": '["a"]', "matrix": "[[1]]",
                 "points": '{"not": "an array"}', "mode": "fast"}
    kwargs, found = SHOP.bind(arguments)
    assert found == ['points: expected array, got string "{\\"not\\": \\"an array\\"}"']
    assert arguments["basket"] == '{"items": [{"name": "x"}]}'      # the caller's dict is left alone
    del arguments["points"]
    kwargs, found = SHOP.bind(arguments)
    assert found == [] and kwargs["basket"] == Basket([Item("x")]) and kwargs["tags"] == {"a"}
    assert kwargs["matrix"] == [[1]]
    assert SHOP.bind({"basket": "{broken"})[1] == ['basket: expected object, got string "{broken"']


def test_strings_stay_strings_where_a_string_is_allowed():
    def f(text: str, either: Union[str, list[str]], raw: Any): ...
    kwargs, found = Signature(f).bind({"text": "[1]", "either": "[1]", "raw": "{}"})
    assert kwargs == {"text": "[1]", "either": "[1]", "raw": "{}"}


def test_ints_become_floats_for_a_float_and_integral_floats_become_ints():
    """As pydantic's lax mode (so the official SDK) converts: losslessly, never 2.5 or true to
    an int."""
    def f(x: float, n: int, m: Annotated[int, "an int"], k: typing.NewType("K", int),
          y: Optional[float] = None, z: list[float] = ()): ...
    kwargs, found = Signature(f).bind({"x": 1, "n": 2.0, "m": 3.0, "k": 4.0, "y": 5,
                                       "z": [6, 7.5]})
    assert found == [] and kwargs == {"x": 1.0, "n": 2, "m": 3, "k": 4, "y": 5.0, "z": [6.0, 7.5]}
    assert [type(kwargs[name]) for name in "xnmky"] == [float, int, int, int, float]
    assert [type(v) for v in kwargs["z"]] == [float, float]
    assert Signature(f).bind({"x": 1, "n": 2.5, "m": 1, "k": 1})[1] == ["n: expected integer, got number 2.5"]
    assert Signature(f).bind({"x": 1, "n": True, "m": 1, "k": 1})[1] == ["n: expected integer, got boolean true"]
    assert Signature(f).bind({"x": True, "n": 1, "m": 1, "k": 1})[1] == ["x: expected number, got boolean true"]
    too_large = Signature(f).bind({"x": 10 ** 400, "n": 1, "m": 1, "k": 1})[1]
    assert len(too_large) == 1 and too_large[0].startswith("x: 1000") and "too large for a float" in too_large[0]


def test_literal_values_come_back_as_the_literal():
    def f(x: Literal[1, 2], c: Literal[Colour.RED]): ...
    kwargs, _ = Signature(f).bind({"x": 1.0, "c": "red"})
    assert type(kwargs["x"]) is int and kwargs["c"] is Colour.RED


def test_kwargs_collects_extra_arguments():
    def f(name: str, **extra: int): ...
    sig = Signature(f)
    assert sig.bind({"name": "a", "x": 1.0, "y": 2}) == ({"name": "a", "x": 1, "y": 2}, [])
    assert sig.bind({"name": "a", "x": "1"})[1] == ['x: expected integer, got string "1"']


def test_unannotated_parameters_take_any_json():
    def f(x, y=None): ...
    assert Signature(f).bind({"x": [1, {"a": None}]}) == ({"x": [1, {"a": None}]}, [])


def test_bind_is_fast_enough_for_every_call():
    """Compiled once: validating and converting a typical call stays well under a millisecond."""
    import time
    arguments = {"basket": {"items": [{"name": "tea", "qty": 2}] * 5}, "budget": 5, "tags": ["a"]}
    start = time.perf_counter()
    for _ in range(1000):
        SHOP.bind(arguments)
    assert (time.perf_counter() - start) / 1000 < 0.001


def test_a_pydantic_bound_is_enforced_on_a_tool_call():
    """Annotated[int, Field(le=10)]: n=50 is refused before the tool runs, and the client
    sees the bound and the description in tools/list."""
    pydantic = pytest.importorskip("pydantic")
    from mcp_min import Client, Server
    server, calls = Server("bounds"), []

    @server.tool
    def repeat(n: Annotated[int, pydantic.Field(description="how many times", le=10)]) -> str:
        calls.append(n)
        return "ok" * n

    with Client(server, timeout=5) as client:
        (tool,) = client.list_tools()
        assert tool["inputSchema"]["properties"]["n"] == {
            "type": "integer", "description": "how many times", "maximum": 10}
        refused = client.call_tool("repeat", {"n": 50})
        assert refused["isError"] and refused["content"][0]["text"] == \
            "Invalid arguments for tool 'repeat':\n- n: must be <= 10, got 50"
        assert client.call_tool("repeat", {"n": 2})["content"][0]["text"] == "okok"
    assert calls == [2]


# --- alternatives told apart cheaply; the budget of one request ------------------------

class KindA(TypedDict):
    kind: Literal["a"]
    children: list[Union["KindA", "KindB"]]


class KindB(TypedDict):
    kind: Literal["b"]
    children: list[Union["KindA", "KindB"]]


def kinds_tool(root: Union[KindA, KindB]) -> int:
    return 1


def kinds_chain(depth, kind_at=lambda level: "ab"[level % 2]):
    node = {"kind": kind_at(depth), "children": []}
    for level in reversed(range(depth)):
        node = {"kind": kind_at(level), "children": [node]}
    return node


def request_of(**settings):
    """The Context of a tools/call on a Server with ``settings``."""
    from mcp_min import Context, Server, Session
    return Context(Session(Server("budget", **settings)), 1, "tools/call", {})


def test_alternatives_told_apart_by_a_const_are_checked_once_per_node():
    """Union[A, B] of recursive TypedDicts: the arm whose `kind` fails is not descended into,
    so 60 levels cost a few hundred steps (2^60 checks otherwise)."""
    sig, ctx = Signature(kinds_tool), request_of(max_validation_steps=1000)
    assert sig.bind({"root": kinds_chain(60)}, ctx) == ({"root": kinds_chain(60)}, [])
    path = "root" + ".children[0]" * 60
    wrong_leaf = kinds_chain(60, lambda level: "c" if level == 60 else "ab"[level % 2])
    assert sig.bind({"root": wrong_leaf}, ctx)[1] == [f'{path}.kind: must be "a", got "c"']
    # the problems of the alternative whose kind matches, not of the one with fewest
    inner = {"kind": "b", "children": [{"kind": "a", "children": 5}]}
    assert sig.bind({"root": inner}, ctx)[1] == \
        ["root.children[0].children: expected array, got integer 5"]
    # no kind matches: the first alternative's problems, in full, as before
    assert sig.bind({"root": {"kind": "c", "children": [{"kind": "b"}]}}, ctx)[1] == [
        'root.kind: must be "a", got "c"', "root.children[0]: missing required property 'children'"]


# How two alternatives differ: (schema of A's, of B's), (A's property, B's property).
TOLD_APART = {
    "const through $ref": ({"properties": {"k": {"$ref": "#/$defs/ka"}}},
                           {"properties": {"k": {"const": "b"}}}, {"k": "a"}, {"k": "b"}),
    "enum": ({"properties": {"k": {"enum": ["a", 1]}}},
             {"properties": {"k": {"enum": ["b"]}}}, {"k": 1}, {"k": "b"}),
    "required": ({"required": ["a"]}, {"required": ["b"]}, {"a": 0}, {"b": 0}),
    "type of a property": ({"properties": {"v": {"type": "integer"}}},
                           {"properties": {"v": {"type": "string"}}}, {"v": 1}, {"v": "s"}),
}


@pytest.mark.parametrize("keyword", ["anyOf", "oneOf"])
@pytest.mark.parametrize("how", TOLD_APART)
def test_alternatives_are_told_apart_by_their_quick_keywords(keyword, how):
    a, b, a_value, b_value = TOLD_APART[how]
    children = {"children": {"type": "array", "items": {"$ref": "#/$defs/N"}}}
    schema = {"type": "object", "properties": {"n": {"$ref": "#/$defs/N"}}, "$defs": {
        "ka": {"const": "a"},
        "A": {**a, "type": "object", "properties": {**a.get("properties", {}), **children}},
        "B": {**b, "type": "object", "properties": {**b.get("properties", {}), **children}},
        "N": {keyword: [{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/B"}]}}}
    node = {**b_value, "children": []}
    for level in range(60):
        node = {**(a_value, b_value)[level % 2], "children": [node]}
    sig = Signature(lambda **arguments: 1, input_schema=schema)
    ctx = request_of(max_validation_steps=1000)
    assert sig.bind({"n": node}, ctx) == ({"n": node}, [])


ALIKE = {"type": "object", "properties": {"c": {"type": "array", "items": {"$ref": "#/$defs/N"}},
                                          "v": {"type": "integer"}}}
ALIKE_SCHEMA = {"type": "object", "properties": {"n": {"$ref": "#/$defs/N"}},
                "$defs": {"N": {"anyOf": [ALIKE, ALIKE]}}}


def alike_arguments(depth):
    node = {"v": "not an integer"}
    for _ in range(depth):
        node = {"c": [node]}
    return {"n": node}


def test_arguments_past_max_validation_steps_are_a_32602_naming_the_limit():
    from mcp_min import JSONRPCError, Server
    sig = Signature(lambda **arguments: 1, input_schema=ALIKE_SCHEMA)
    with pytest.raises(JSONRPCError) as refused:
        sig.bind(alike_arguments(30), request_of(max_validation_steps=10_000))
    assert refused.value.code == -32602
    assert refused.value.message.startswith("The arguments are too costly to check: more than "
                                            "10,000 steps")
    assert "max_validation_steps" in refused.value.message
    # within the budget, the same check ends as usual
    assert sig.bind(alike_arguments(3), request_of(max_validation_steps=10_000))[1] == [
        "n.c[0].c[0].c[0].v: expected integer, got string \"not an integer\""]
    with pytest.raises(ValueError, match="max_validation_steps"):
        Server("s", max_validation_steps=0)


def test_large_arguments_fit_the_default_budget():
    """A million items: a million steps (the allOf makes the budget apply)."""
    sig = Signature(lambda xs: 1, input_schema={"type": "object", "properties": {
        "xs": {"allOf": [{"type": "array", "items": {"type": "integer"}}]}}})
    numbers = list(range(1_000_000))
    assert sig.bind({"xs": numbers}, request_of()) == ({"xs": numbers}, [])
    assert request_of().server.max_validation_steps == 5_000_000


def test_a_cancelled_request_stops_validating():
    from mcp_min import Cancelled
    sig = Signature(lambda **arguments: 1, input_schema=ALIKE_SCHEMA)
    ctx = request_of(max_validation_steps=10 ** 12)
    ctx.cancelled = True
    with pytest.raises(Cancelled):
        sig.bind(alike_arguments(40), ctx)


def test_a_number_in_a_string_is_refused_as_the_readme_says():
    """The README: '"98.6" for a float' is refused (pydantic's lax mode would take it)."""
    def f(temperature: float, count: int): ...
    kwargs, found = Signature(f).bind({"temperature": "98.6", "count": "3"})
    assert kwargs == {} and found == ['temperature: expected number, got string "98.6"',
                                      'count: expected integer, got string "3"']
    assert Signature(f).bind({"temperature": 98, "count": 3.0})[0] == {"temperature": 98.0,
                                                                       "count": 3}
