"""Signature -> schema: annotations, docstrings, defaults, Context exclusion, output schemas
and the decoration-time failures.  Spec: §11.2 (inputSchema root is an object, outputSchema),
J1/J3 (2020-12 and valid schemas), R5/R7 (structuredContent is an object that fits outputSchema)."""
import dataclasses
import datetime
import enum
import functools
import subprocess
import sys
import textwrap
import time
import typing
from typing import Annotated, Any, List, Literal, Optional, TypedDict, Union

import jsonschema
import pytest

import schema_future_helpers as future_helpers
from conftest import ROOT
from mcp_min import SchemaError, Signature, compile_schema, parse_docstring, type_schema

NotRequired = getattr(typing, "NotRequired", None)


class Context:
    """Stands in for mcp_min.Context."""


class Image:
    """Stands in for a content helper class."""


class Colour(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@dataclasses.dataclass
class Gift:
    """A gift idea.

    Attributes:
        name: what to buy
        price: in euros
    """
    name: str
    price: float = 10.0
    tags: list[str] = dataclasses.field(default_factory=list)
    colour: Colour = Colour.RED


class Address(TypedDict):
    street: str
    city: str


class Partial(TypedDict, total=False):
    a: int
    b: str


OBJ = {"type": "object"}
GIFT = {"type": "object", "description": "A gift idea.", "properties": {
    "name": {"type": "string", "description": "what to buy"},
    "price": {"type": "number", "description": "in euros", "default": 10.0},
    "tags": {"type": "array", "items": {"type": "string"}},
    "colour": {"$ref": "#/$defs/Colour", "default": "red"}},
    "required": ["name"], "additionalProperties": False}
COLOUR = {"type": "string", "enum": ["red", "green"]}


def root(props, required=(), **extra):
    schema = {"type": "object", "properties": props}
    if required:
        schema["required"] = list(required)
    schema["additionalProperties"] = False
    return {**schema, **extra}


# --- handlers for the table ------------------------------------------------

def no_params():
    """Nothing to see."""


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: first addend
        b (int): second addend,
            which may be negative
    Returns:
        the sum
    """
    return a + b


def sphinx(text: str, times: int = 2) -> str:
    """Repeat text.

    More detail that is not the first paragraph.

    :param text: what to repeat
    :param int times: how often
        (at least once)
    :returns: the text, repeated
    :raises ValueError: never
    """
    return text * times


def defaults(text: str, count: int = 3, ratio: float = 0.5, flag: bool = False,
             maybe: Optional[str] = None, sentinel: object = object(), when: datetime.date = datetime.date(2024, 1, 2)):
    pass


def annotated(a: Annotated[int, "the a"], b: Annotated[int, {"minimum": 0, "maximum": 9}],
              c: Annotated[str, "docstring loses"] = "x"):
    """Annotated things.

    Args:
        c: the docstring's c
        a: the docstring's a
    """


def with_context(query: str, ctx: Context, limit: int = 10):
    pass


def with_string_context(query: str, ctx: "Context"):
    pass


def unannotated(x, y=1):
    pass


def kwargs_any(name: str, **extra):
    pass


def kwargs_typed(name: str, **extra: int):
    pass


def collections_(a: list[int], b: List[str], c: tuple[int, str], d: tuple[float, ...], e: set[str],
                 f: frozenset[int], g: dict[str, float], h: list, i: dict, j: tuple, k: set, m: Any,
                 n: typing.Sequence[int], o: typing.Mapping[str, bool]):
    pass


def unions(a: Optional[int], b: Union[int, str, None], c: int | None, d: Literal["x", "y"],
           e: Literal[5], f: Literal["a", 1, None], g: Colour, h: Level):
    pass


def classes(gift: Gift, address: Address, part: Partial, gifts: list[Gift] = ()):
    pass


def dates(at: datetime.datetime, on: datetime.date):
    pass


CASES = [  # id, handler, Signature keywords, expected input schema, expected description
    ("no-params", no_params, {}, root({}), "Nothing to see."),
    ("google", add, {}, root({"a": {"type": "integer", "description": "first addend"},
                               "b": {"type": "integer", "description": "second addend, which may be negative"}},
                              ["a", "b"]), "Add two integers."),
    ("sphinx", sphinx, {}, root({"text": {"type": "string", "description": "what to repeat"},
                                  "times": {"type": "integer", "description": "how often (at least once)",
                                            "default": 2}}, ["text"]), "Repeat text."),
    ("defaults", defaults, {}, root({
        "text": {"type": "string"}, "count": {"type": "integer", "default": 3},
        "ratio": {"type": "number", "default": 0.5}, "flag": {"type": "boolean", "default": False},
        "maybe": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        "sentinel": {},                 # no JSON form: the default is not advertised
        "when": {"type": "string", "format": "date", "default": "2024-01-02"}}, ["text"]), None),
    ("annotated", annotated, {}, root({
        "a": {"type": "integer", "description": "the a"},
        "b": {"type": "integer", "minimum": 0, "maximum": 9},
        "c": {"type": "string", "description": "docstring loses", "default": "x"}}, ["a", "b"]),
     "Annotated things."),
    ("explicit-descriptions", add, {"description": "Sum.", "param_descriptions": {"a": "A!"}},
     root({"a": {"type": "integer", "description": "A!"},
           "b": {"type": "integer", "description": "second addend, which may be negative"}}, ["a", "b"]), "Sum."),
    ("context", with_context, {"context_type": Context},
     root({"query": {"type": "string"}, "limit": {"type": "integer", "default": 10}}, ["query"]), None),
    ("context-string", with_string_context, {"context_type": Context},
     root({"query": {"type": "string"}}, ["query"]), None),
    ("context-not-given", with_context, {}, None, None),    # Context is then just an unsupported class
    ("unannotated", unannotated, {}, root({"x": {}, "y": {"default": 1}}, ["x"]), None),
    ("kwargs", kwargs_any, {}, root({"name": {"type": "string"}}, ["name"], additionalProperties={}), None),
    ("kwargs-typed", kwargs_typed, {}, root({"name": {"type": "string"}}, ["name"],
                                            additionalProperties={"type": "integer"}), None),
    ("collections", collections_, {}, root({
        "a": {"type": "array", "items": {"type": "integer"}},
        "b": {"type": "array", "items": {"type": "string"}},
        "c": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}],
              "minItems": 2, "maxItems": 2},
        "d": {"type": "array", "items": {"type": "number"}},
        "e": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
        "f": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
        "g": {"type": "object", "additionalProperties": {"type": "number"}},
        "h": {"type": "array"}, "i": OBJ, "j": {"type": "array"}, "k": {"type": "array", "uniqueItems": True},
        "m": {}, "n": {"type": "array", "items": {"type": "integer"}},
        "o": {"type": "object", "additionalProperties": {"type": "boolean"}}}, "abcdefghijkmno"), None),
    ("unions", unions, {}, root({
        "a": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "b": {"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}]},
        "c": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "d": {"type": "string", "enum": ["x", "y"]},
        "e": {"type": "integer", "const": 5},
        "f": {"type": ["string", "integer", "null"], "enum": ["a", 1, None]},
        "g": {"$ref": "#/$defs/Colour"}, "h": {"$ref": "#/$defs/Level"}}, "abcdefgh",
        **{"$defs": {"Colour": COLOUR, "Level": {"type": "integer", "enum": [1, 2]}}}), None),
    ("classes", classes, {}, root({
        "gift": {"$ref": "#/$defs/Gift"}, "address": {"$ref": "#/$defs/Address"},
        "part": {"$ref": "#/$defs/Partial"},
        "gifts": {"type": "array", "items": {"$ref": "#/$defs/Gift"}, "default": []}},
        ["gift", "address", "part"], **{"$defs": {
            "Gift": GIFT, "Colour": COLOUR,
            "Address": root({"street": {"type": "string"}, "city": {"type": "string"}}, ["street", "city"]),
            "Partial": root({"a": {"type": "integer"}, "b": {"type": "string"}})}}), None),
    ("dates", dates, {}, root({"at": {"type": "string", "format": "date-time"},
                               "on": {"type": "string", "format": "date"}}, ["at", "on"]), None),
    ("future-annotations", future_helpers.plan, {"context_type": future_helpers.Context}, root({
        "budget": {"type": "number", "description": "money to spend"},
        "size": {"$ref": "#/$defs/Size", "description": "how big"},
        "tree": {"anyOf": [{"$ref": "#/$defs/Tree"}, {"type": "null"}], "default": None},
        "note": {"type": "string", "description": "free text", "default": ""}}, ["budget", "size"], **{"$defs": {
            "Size": {"type": "string", "enum": ["s", "l"]},
            "Tree": {"type": "object", "description": "A tree of labels.", "properties": {
                "label": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}},
                "required": ["label"], "additionalProperties": False}}}), "Plan something."),
    ("future-dotted-context", future_helpers.takes_context_by_dotted_name,
     {"context_type": future_helpers.Context}, root({"text": {"type": "string"}}, ["text"]), None),
    ("future-typeddict", future_helpers.orders, {}, root({
        "first": {"$ref": "#/$defs/Order"},
        "rest": {"type": "object", "additionalProperties": {"$ref": "#/$defs/Order"}}}, ["first", "rest"],
        **{"$defs": {"Order": root({"item": {"type": "string"}, "quantity": {"type": "integer"}})}}), None),
]


@pytest.mark.parametrize("fn, kwargs, schema, description", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_signature_input_schema(fn, kwargs, schema, description):
    """§11.2: inputSchema is an object schema; J3: it is a valid 2020-12 schema; no `title` noise."""
    if schema is None:
        with pytest.raises(SchemaError):
            Signature(fn, **kwargs)
        return
    sig = Signature(fn, **kwargs)
    assert sig.input_schema == schema
    assert sig.description == description
    jsonschema.Draft202012Validator.check_schema(sig.input_schema)
    assert '"title"' not in str(sig.input_schema).replace("'", '"')


def test_context_param_is_recorded():
    assert Signature(with_context, context_type=Context).context_param == "ctx"
    assert Signature(with_string_context, context_type=Context).context_param == "ctx"
    assert Signature(future_helpers.takes_context_by_dotted_name,
                     context_type=future_helpers.Context).context_param == "ctx"
    assert Signature(add, context_type=Context).context_param is None


def test_context_subclass_and_wrapped_functions():
    class MyContext(Context):
        pass

    @functools.wraps(with_context)
    def wrapper(*args, **kwargs):
        return with_context(*args, **kwargs)

    def f(x: int, c: MyContext):
        pass
    assert Signature(f, context_type=Context).context_param == "c"
    assert Signature(wrapper, context_type=Context).input_schema["required"] == ["query"]


def test_bound_methods():
    class Tools:
        def search(self, query: str) -> list[str]:
            """Search."""
            return [query]
    sig = Signature(Tools().search)
    assert sig.input_schema == root({"query": {"type": "string"}}, ["query"])
    assert sig.wrap_output and sig.dump_output(("a",)) == {"result": ["a"]}


# --- output schemas ----------------------------------------------------------

def out_none(): ...
def out_explicit_none() -> None: ...
def out_int() -> int: ...
def out_str() -> str: ...
def out_list() -> list[Gift]: ...
def out_gift() -> Gift: ...
def out_address() -> Address: ...
def out_mapping() -> dict[str, int]: ...
def out_dict() -> dict: ...
def out_optional_gift() -> Optional[Gift]: ...
def out_image() -> Image: ...
def out_images() -> list[Image]: ...
def out_image_or_none() -> Union[Image, None]: ...
def out_tree() -> future_helpers.Tree: ...
def out_annotated() -> Annotated[Gift, "the pick"]: ...


RESULT_INT = {"type": "object", "properties": {"result": {"type": "integer"}}, "required": ["result"]}
OUTPUT_CASES = [  # id, handler, Signature keywords, expected output schema, wrapped?
    ("none", out_none, {}, None, False),
    ("explicit-none", out_explicit_none, {}, None, False),
    ("int", out_int, {}, RESULT_INT, True),
    ("str-is-text-content", out_str, {}, None, False),   # a str return is a text block, never wrapped
    ("list", out_list, {}, {"type": "object", "properties": {"result": {"type": "array", "items": {
        "$ref": "#/$defs/Gift"}}}, "required": ["result"], "$defs": {"Gift": GIFT, "Colour": COLOUR}}, True),
    ("dataclass-inlined", out_gift, {}, {**GIFT, "$defs": {"Colour": COLOUR}}, False),
    ("typeddict", out_address, {}, root({"street": {"type": "string"}, "city": {"type": "string"}},
                                        ["street", "city"]), False),
    ("mapping", out_mapping, {}, {"type": "object", "additionalProperties": {"type": "integer"}}, False),
    ("dict", out_dict, {}, OBJ, False),
    ("optional-dataclass", out_optional_gift, {}, {"type": "object", "properties": {"result": {"anyOf": [
        {"$ref": "#/$defs/Gift"}, {"type": "null"}]}}, "required": ["result"],
        "$defs": {"Gift": GIFT, "Colour": COLOUR}}, True),
    ("content", out_image, {"content_types": (Image,)}, None, False),
    ("content-list", out_images, {"content_types": (Image,)}, None, False),
    ("content-union", out_image_or_none, {"content_types": (Image,)}, None, False),
    ("structured-false", out_gift, {"structured": False}, None, False),
    ("hand-written", out_int, {"output_schema": {"type": "object", "$defs": {}}}, {"type": "object", "$defs": {}},
     False),
    ("recursive-root", out_tree, {}, {
        "type": "object", "description": "A tree of labels.", "properties": {
            "label": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}},
        "required": ["label"], "additionalProperties": False, "$defs": {"Tree": {
            "type": "object", "description": "A tree of labels.", "properties": {
                "label": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}},
            "required": ["label"], "additionalProperties": False}}}, False),
    ("annotated-root", out_annotated, {}, {**GIFT, "description": "the pick", "$defs": {"Colour": COLOUR}}, False),
]


@pytest.mark.parametrize("fn, kwargs, schema, wrapped", [c[1:] for c in OUTPUT_CASES],
                         ids=[c[0] for c in OUTPUT_CASES])
def test_signature_output_schema(fn, kwargs, schema, wrapped):
    """R7: an outputSchema root is an object (other types are wrapped as {"result": ...}); J3: valid 2020-12."""
    sig = Signature(fn, **kwargs)
    assert sig.output_schema == schema
    assert sig.wrap_output is wrapped
    if schema is not None:
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object"


def test_dump_output_fits_the_output_schema():
    """R5: what dump_output produces conforms to the declared outputSchema."""
    samples = [
        (out_int, 3, {"result": 3}),
        (out_gift, Gift("tea", tags=["hot"]), {"name": "tea", "price": 10.0, "tags": ["hot"], "colour": "red"}),
        (out_list, [Gift("a", 1, [], Colour.GREEN)], {"result": [
            {"name": "a", "price": 1, "tags": [], "colour": "green"}]}),
        (out_tree, future_helpers.Tree("r", [future_helpers.Tree("c")]),
         {"label": "r", "children": [{"label": "c", "children": []}]}),
        (out_optional_gift, None, {"result": None}),
        (out_mapping, {"a": 1}, {"a": 1}),
    ]
    for fn, value, expected in samples:
        sig = Signature(fn)
        assert sig.dump_output(value) == expected
        assert compile_schema(sig.output_schema)(expected) == []
        jsonschema.validate(expected, sig.output_schema, cls=jsonschema.Draft202012Validator)


def test_dump_output_converts_values_without_a_schema():
    sig = Signature(out_none)
    value = {"when": datetime.datetime(2024, 5, 6, 7, 8, 9), "on": datetime.date(2024, 1, 2),
             "level": Level.HIGH, "pair": (1, 2), "set": {3}, Colour.RED: [Gift("x")]}
    assert sig.dump_output(value) == {
        "when": datetime.datetime(2024, 5, 6, 7, 8, 9).astimezone().isoformat(), "on": "2024-01-02", "level": 2, "pair": [1, 2], "set": [3],
        "red": [{"name": "x", "price": 10.0, "tags": [], "colour": "red"}]}


# --- hand-written schemas ----------------------------------------------------

def test_hand_written_input_schema_is_kept_exactly():
    """J1: $schema, $defs and $ref are preserved (conformance scenario json-schema-2020-12)."""
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
              "$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"}},
                                    "required": ["street"]}},
              "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
              "required": ["name"], "additionalProperties": False}
    copy = {**schema}

    def f(name, address=None, ctx: "Context" = None):
        pass
    sig = Signature(f, input_schema=schema, context_type=Context)
    assert sig.input_schema is schema and schema == copy
    assert sig.context_param == "ctx"
    assert sig.bind({"name": "x", "address": {"street": "y"}}) == ({"name": "x", "address": {"street": "y"}}, [])
    assert sig.bind({"address": {}})[1] == ["Missing required property 'name'",
                                             "address: missing required property 'street'"]
    # Claude Desktop's stringified objects are parsed for hand-written schemas too
    assert sig.bind({"name": "x", "address": '{"street": "z"}'})[0]["address"] == {"street": "z"}


def test_hand_written_schema_excuses_unusable_annotations():
    def f(x: "NoSuchName", y: bytes):    # noqa: F821
        pass
    sig = Signature(f, input_schema={"type": "object"})
    assert sig.bind({"x": 1}) == ({"x": 1}, [])


def test_hand_written_input_schema_errors_name_the_function():
    """J2: an unsupported dialect is an error; J4: a network $ref is refused, never fetched."""
    def f(x):
        pass
    for schema, words in [({"$schema": "http://json-schema.org/draft-04/schema#"}, "dialect"),
                          ({"properties": {"x": {"$ref": "https://example.com/x.json"}}}, "$ref"),
                          ({"properties": {"x": {"$ref": "#/$defs/missing"}}}, "points to nothing"),
                          ({"properties": {"x": {"pattern": "("}}}, "pattern"),
                          ({"type": "thing"}, "unknown type"),
                          ({"type": 5}, "unknown type 5"),
                          ({"properties": {"x": {"type": None}}}, "unknown type null")]:
        with pytest.raises(SchemaError, match="f: input schema") as info:
            Signature(f, input_schema=schema)
        assert words in str(info.value)
    Signature(f, input_schema={"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"})


# --- decoration-time failures ------------------------------------------------

def bad_bytes(name: str, data: bytes): ...
def bad_complex(z: complex): ...
def bad_callable(cb: typing.Callable[[int], int]): ...
def bad_args(*values: int): ...
def bad_positional(a: int, /, b: int): ...
def bad_keys(m: dict[int, str]): ...
def bad_nested(gifts: list[dict[str, typing.Callable]]): ...
def bad_kwargs(**extra: complex): ...
def bad_return(x: int) -> typing.Iterator[int]: ...


@dataclasses.dataclass
class BadField:
    ok: int
    blob: bytes


def bad_field(b: BadField): ...


class NonJSONEnum(enum.Enum):
    A = (1, 2)


def bad_enum(e: NonJSONEnum): ...


def same_name_twice():
    other = dataclasses.make_dataclass("Gift", [("x", int)])     # a different class with the same name

    def f(a: Gift, b: other): ...
    return f


FAILURES = [  # id, handler, words the message must contain
    ("bytes", bad_bytes, ["bad_bytes", "'data'", "bytes", "base64"]),
    ("complex", bad_complex, ["bad_complex", "'z'", "complex"]),
    ("callable", bad_callable, ["'cb'", "Callable"]),
    ("args", bad_args, ["'values'", "*args"]),
    ("positional-only", bad_positional, ["'a'", "positional-only"]),
    ("dict-keys", bad_keys, ["'m'", "keys are strings"]),
    ("nested", bad_nested, ["'gifts'", "Callable"]),
    ("kwargs", bad_kwargs, ["**kwargs", "complex"]),
    ("return", bad_return, ["return annotation", "Iterator", "structured=False"]),
    ("dataclass-field", bad_field, ["'b'", "field 'blob' of BadField", "bytes"]),
    ("enum-values", bad_enum, ["'e'", "[[1, 2]]", "not all JSON"]),
    ("same-class-name", same_name_twice(), ["two classes are named 'Gift'"]),
    ("unresolvable", future_helpers.unresolvable, ["unresolvable", "'x'", "NoSuchName"]),
]


@pytest.mark.parametrize("fn, words", [c[1:] for c in FAILURES], ids=[c[0] for c in FAILURES])
def test_unsupported_annotations_fail_at_decoration_naming_function_and_parameter(fn, words):
    with pytest.raises(SchemaError) as info:
        Signature(fn)
    for word in words:
        assert word in str(info.value)
    assert isinstance(info.value, TypeError)


def test_structured_false_excuses_an_unsupported_return():
    assert Signature(bad_return, structured=False).output_schema is None


# --- type_schema on its own -----------------------------------------------

TYPES = [  # annotation, self-contained schema
    (int, {"type": "integer"}), (float, {"type": "number"}), (str, {"type": "string"}),
    (bool, {"type": "boolean"}), (None, {"type": "null"}), (type(None), {"type": "null"}), (Any, {}),
    (list[list[int]], {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}}),
    (tuple[()], {"type": "array"}),
    (dict[str, Optional[list[float]]], {"type": "object", "additionalProperties": {
        "anyOf": [{"type": "array", "items": {"type": "number"}}, {"type": "null"}]}}),
    (Literal[True], {"type": "boolean", "const": True}),
    (Literal[Colour.GREEN], {"type": "string", "const": "green"}),
    (Colour, COLOUR),
    (typing.NewType("UserId", int), {"type": "integer"}),
    (Annotated[list[Annotated[str, "a tag"]], "tags"], {"type": "array", "items": {
        "type": "string", "description": "a tag"}, "description": "tags"}),
    (Gift, {**GIFT, "$defs": {"Colour": COLOUR}}),
    (list[Gift], {"type": "array", "items": {"$ref": "#/$defs/Gift"}, "$defs": {"Gift": GIFT, "Colour": COLOUR}}),
]


@pytest.mark.parametrize("tp, schema", TYPES, ids=[repr(t) for t, _ in TYPES])
def test_type_schema(tp, schema):
    assert type_schema(tp) == schema
    jsonschema.Draft202012Validator.check_schema(schema)


def test_type_schema_fills_the_given_defs():
    defs = {}
    assert type_schema(Optional[Gift], defs) == {"anyOf": [{"$ref": "#/$defs/Gift"}, {"type": "null"}]}
    assert defs == {"Gift": GIFT, "Colour": COLOUR}


@pytest.mark.skipif(NotRequired is None, reason="typing.Required/NotRequired are Python 3.11+")
def test_typeddict_required_and_not_required():
    class Mixed(TypedDict):
        a: int
        b: NotRequired[str]

    class Loose(TypedDict, total=False):
        c: typing.Required[int]
        d: Annotated[int, "dee"]
    assert type_schema(Mixed) == root({"a": {"type": "integer"}, "b": {"type": "string"}}, ["a"])
    assert type_schema(Loose) == root({"c": {"type": "integer"}, "d": {"type": "integer", "description": "dee"}},
                                      ["c"])


@pytest.mark.skipif(NotRequired is None, reason="typing.Required/NotRequired are Python 3.11+")
def test_typeddict_required_with_postponed_annotations():
    assert type_schema(future_helpers.Loose) == root({"a": {"type": "integer"}, "b": {"type": "string"}}, ["a"])
    assert type_schema(future_helpers.Strict) == root({"c": {"type": "integer"}, "d": {"type": "integer"}}, ["c"])


def test_undecorated_dataclass_subclass():
    def f(s: future_helpers.Sub): ...
    sig = Signature(f)
    assert sig.input_schema["$defs"] == {"Sub": root({"x": {"type": "integer"}}, ["x"])}
    assert sig.bind({"s": {"x": 1}}) == ({"s": future_helpers.Sub(1)}, [])


# --- docstrings ------------------------------------------------------------

DOCSTRINGS = [  # docstring, description, parameter descriptions
    (None, None, {}),
    ("", None, {}),
    ("One line.", "One line.", {}),
    ("""Summary that
        wraps   over lines.

        Second paragraph.
        """, "Summary that wraps over lines.", {}),
    ("""Do it.

        Arguments:
            x: the x
            y (list[int], optional): the y,
                continued
                and continued again.
            *args: rest
        Returns:
            z: not a parameter
        Raises:
            ValueError: not a parameter either
        """, "Do it.", {"x": "the x", "y": "the y, continued and continued again.", "args": "rest"}),
    ("""Parameters:
            a: only params, no summary
        """, None, {"a": "only params, no summary"}),
    ("""Summary.
        Args:
            a: right after the summary line
        """, "Summary.", {"a": "right after the summary line"}),
    ("""Sphinx.

        :param a: the a
        :param Dict[str, int] b: the b
            over two lines
        :type b: dict
        :return: nothing
        """, "Sphinx.", {"a": "the a", "b": "the b over two lines"}),
    ("""Example: not a section, just text.""", "Example: not a section, just text.", {}),
    # a summary line that ends in a colon is still the summary; only a parameter section
    # may stand first
    ("""Fetch the current weather for:""", "Fetch the current weather for:", {}),
    ("""Look up a city and return its details:

        Args:
            city: the city name
        """, "Look up a city and return its details:", {"city": "the city name"}),
]


@pytest.mark.parametrize("doc, description, params", DOCSTRINGS)
def test_parse_docstring(doc, description, params):
    assert parse_docstring(doc) == (description, params)


def test_method_docstring_indentation():
    class K:
        def m(self, a: int):
            """Method.

            Args:
                a: indented twice over
            """
    assert parse_docstring(K.m.__doc__) == ("Method.", {"a": "indented twice over"})


# --- pydantic and annotated_types metadata -----------------------------------
# Read by duck typing (mcp_min imports neither); tested with the real packages.

def test_pydantic_field_in_annotated_goes_into_the_schema_and_is_enforced():
    pydantic = pytest.importorskip("pydantic")
    Field = pydantic.Field

    def f(n: Annotated[int, Field(description="how many", ge=1, le=10)],
          name: Annotated[str, Field(title="Name", min_length=2, max_length=5,
                                     pattern="^[a-z]+$", examples=["ada"],
                                     json_schema_extra={"x-secret": False})] = "ada",
          tags: Annotated[list[str], Field(max_length=2, deprecated="use labels")] = ()):
        """F.

        Args:
            n: the docstring loses to the Field
        """
    sig = Signature(f)
    props = sig.input_schema["properties"]
    assert props["n"] == {"type": "integer", "description": "how many", "minimum": 1, "maximum": 10}
    assert props["name"] == {"type": "string", "title": "Name", "minLength": 2, "maxLength": 5,
                             "pattern": "^[a-z]+$", "examples": ["ada"], "x-secret": False,
                             "default": "ada"}
    assert props["tags"]["maxItems"] == 2 and props["tags"]["deprecated"] is True
    jsonschema.Draft202012Validator.check_schema(sig.input_schema)
    assert sig.bind({"n": 10})[1] == []
    assert sig.bind({"n": 50, "name": "ADA!!!", "tags": ["a", "b", "c"]})[1] == [
        "n: must be <= 10, got 50", "name: must be at most 5 characters long, got 6",
        "name: must match the pattern ^[a-z]+$, got \"ADA!!!\"",
        "tags: must have at most 2 items, got 3"]


def test_annotated_types_constraints_go_into_the_schema_and_are_enforced():
    at = pytest.importorskip("annotated_types")

    def f(a: Annotated[int, at.Gt(0), at.Lt(10)], b: Annotated[float, at.Interval(ge=0, le=1)],
          c: Annotated[float, at.MultipleOf(0.25)], d: Annotated[str, at.Len(1, 3)],
          e: Annotated[Optional[list[int]], at.MinLen(1), at.MaxLen(2)],
          g: Annotated[dict[str, int], at.MaxLen(1)], h: Annotated[str, at.doc("the h")]): ...
    props = Signature(f).input_schema["properties"]
    assert props["a"] == {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10}
    assert props["b"] == {"type": "number", "minimum": 0, "maximum": 1}
    assert props["c"] == {"type": "number", "multipleOf": 0.25}
    assert props["d"] == {"type": "string", "minLength": 1, "maxLength": 3}
    assert props["e"]["minItems"] == 1 and props["e"]["maxItems"] == 2
    assert props["g"]["maxProperties"] == 1
    assert props["h"] == {"type": "string", "description": "the h"}
    problems = Signature(f).bind({"a": 10, "b": 1.5, "c": 0.3, "d": "", "e": [],
                                  "g": {"x": 1, "y": 2}, "h": ""})[1]
    assert problems == ["a: must be < 10, got 10", "b: must be <= 1, got 1.5",
                        "c: must be a multiple of 0.25, got 0.3",
                        "d: must be at least 1 characters long, got 0",
                        "e: must have at least 1 items, got 0",
                        "g: must have at most 1 properties, got 2"]


def test_metadata_mcp_min_cannot_use_is_a_warning_naming_the_function_and_parameter():
    at = pytest.importorskip("annotated_types")
    pydantic = pytest.importorskip("pydantic")

    def positive(x):
        return x > 0

    def f(a: Annotated[int, at.Predicate(positive)] = 1,
          b: Annotated[str, at.Ge(3)] = "x",
          c: Annotated[int, pydantic.Field(default=3)] = 3,
          d: Annotated[int, pydantic.Field(alias="dee")] = 4,
          e: Annotated[int, pydantic.AfterValidator(abs)] = 5): ...
    with pytest.warns(UserWarning) as caught:
        sig = Signature(f)
    messages = [str(w.message).split("<locals>.")[-1] for w in caught]
    assert len(messages) == 5, messages
    assert messages[4].startswith("f: parameter 'e': Annotated metadata AfterValidator(")
    assert messages[0].startswith("f: parameter 'a': Annotated metadata Predicate(") and \
        "is not used by mcp_min" in messages[0]
    assert messages[1].startswith("f: parameter 'b': Annotated metadata ge=3 is not used")
    assert messages[2].startswith("f: parameter 'c': Annotated metadata Field(default=...)") \
        and "in the signature" in messages[2]
    assert messages[3].startswith("f: parameter 'd': Annotated metadata Field(alias=...)")
    assert all(w.filename == __file__ for w in caught)      # the warning points at the caller
    assert sig.input_schema["properties"]["b"] == {"type": "string", "default": "x"}


def test_a_warning_about_the_kwargs_annotation_names_kwargs():
    """Not the parameter before it, even one whose default is a pydantic Field."""
    at = pytest.importorskip("annotated_types")
    pydantic = pytest.importorskip("pydantic")

    def g(n: int = pydantic.Field(3), **rest: Annotated[int, at.Predicate(callable)]): ...
    with pytest.warns(UserWarning) as caught:
        Signature(g)
    messages = [str(w.message).split("<locals>.")[-1] for w in caught]
    assert len(messages) == 1 and messages[0].startswith(
        "g: **kwargs: Annotated metadata Predicate("), messages


def test_pydantic_field_as_the_default_value():
    """FastMCP's other spelling, ``q: str = Field(description=...)``: the Field's metadata goes
    into the schema, and the function gets the Field's default, never the Field itself."""
    pydantic = pytest.importorskip("pydantic")
    Field = pydantic.Field

    def f(q: str = Field(description="the query", min_length=1), k: int = Field(3, le=5),
          tags: list[str] = Field(default_factory=list)):
        return q, k, tags
    sig = Signature(f)
    assert sig.input_schema == {
        "type": "object", "required": ["q"], "additionalProperties": False, "properties": {
            "q": {"type": "string", "description": "the query", "minLength": 1},
            "k": {"type": "integer", "default": 3, "maximum": 5},
            "tags": {"type": "array", "items": {"type": "string"}}}}
    kwargs, problems = sig.bind({"q": "owls"})
    assert problems == [] and f(**kwargs) == ("owls", 3, [])
    first, second = sig.bind({"q": "a"})[0]["tags"], sig.bind({"q": "b"})[0]["tags"]
    assert first == [] and first is not second                 # a new list for each call
    assert sig.bind({"q": "", "k": 6})[1] == ["q: must be at least 1 characters long, got 0",
                                             "k: must be <= 5, got 6"]


def test_tools_with_plain_annotations_import_no_slow_module():
    """Start-up time matters (clients spawn servers often): registering tools whose hints are
    plain classes, and answering a call, must not import typing, inspect, logging, asyncio or
    dataclasses, which take milliseconds each."""
    script = textwrap.dedent("""
        import sys
        sys.path.insert(0, sys.argv[1])
        from mcp_min import Client, Server
        server = Server("plain")

        @server.tool
        def add(a: int, b: float = 1.0, label: str = "") -> float:
            '''Add two numbers.

            Args:
                a: the first
                b: the second
            '''
            return a + b
        with Client(server) as client:
            assert client.call_tool("add", {"a": 2})["structuredContent"] == {"result": 3.0}
        slow = {"typing", "inspect", "logging", "asyncio", "dataclasses"} & set(sys.modules)
        print(sorted(slow))
        """)
    result = subprocess.run([sys.executable, "-I", "-c", script, str(ROOT)], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]", result.stdout


# ============================================================================================
# Values the schema alone does not rule out
# ============================================================================================

def test_decimal_bounds_hold_for_the_string_form_too():
    """A validator checks minimum and the like on numbers only; a Decimal sent as "-5" (its
    exact form) must meet them all the same, and be finite."""
    at = pytest.importorskip("annotated_types")
    from decimal import Decimal

    def charge(amount: Annotated[Decimal, at.Ge(0), at.Le(100), at.MultipleOf(0.01)]): ...
    sig = Signature(charge)
    assert sig.input_schema["properties"]["amount"] == {
        "type": ["string", "number"], "minimum": 0, "maximum": 100, "multipleOf": 0.01}
    assert sig.bind({"amount": "19.99"}) == ({"amount": Decimal("19.99")}, [])
    assert sig.bind({"amount": 20}) == ({"amount": Decimal("20")}, [])
    assert sig.bind({"amount": "-5"})[1] == ['amount: must be >= 0, got "-5"']
    assert sig.bind({"amount": "1e9"})[1] == ['amount: must be <= 100, got "1e9"']
    assert sig.bind({"amount": "0.001"})[1] == ['amount: must be a multiple of 0.01, got "0.001"']
    assert sig.bind({"amount": "NaN"})[1] == ['amount: expected a finite number, got "NaN"']
    assert sig.bind({"amount": -5})[1] == ["amount: must be >= 0, got -5"]


def test_a_decimal_bound_is_the_number_as_written_and_a_huge_exponent_is_quick():
    """0.1 is Decimal("0.1") at the bound, not the float's 0.1000000000000000055; and
    checking multipleOf on 1e30000000 must not build a number of 30 million digits."""
    from decimal import Decimal

    def pay(x: Annotated[Decimal, {"minimum": 0.1, "maximum": 0.3, "multipleOf": 0.01}]): ...
    sig = Signature(pay)
    assert sig.bind({"x": 0.1}) == ({"x": Decimal("0.1")}, [])
    assert sig.bind({"x": "0.3"}) == ({"x": Decimal("0.3")}, [])
    start = time.monotonic()
    assert sig.bind({"x": "-1e30000000"})[1] == ['x: must be >= 0.1, got "-1e30000000"']

    def big(x: Annotated[Decimal, {"multipleOf": 0.01}]): ...
    assert Signature(big).bind({"x": "1e30000000"})[1] == [
        'x: must be a multiple of 0.01, got "1e30000000"']
    assert time.monotonic() - start < 1


def test_infinity_and_nan_are_no_json_numbers():
    """json reads 1e400 as inf, and json.loads reads NaN: neither reaches a function."""
    def f(x: float, xs: list[float] = ()): ...
    sig = Signature(f)
    assert sig.bind({"x": float("inf")})[1] == [
        "x: expected number, got Infinity (JSON has no such number)"]
    assert sig.bind({"x": float("nan")})[1][0].startswith("x: expected number, got NaN")
    assert sig.bind({"x": 1.5, "xs": "[NaN, 1]"})[1] == [
        'xs: expected array, got string "[NaN, 1]"']
    assert sig.bind({"x": 1e308}) == ({"x": 1e308}, [])


def test_a_union_alternative_that_cannot_convert_the_value_leaves_it_to_the_next():
    import uuid

    def remind(when: Union[datetime.datetime, Literal["now"]]): ...

    def lookup(key: Union[uuid.UUID, str]): ...
    assert Signature(remind).bind({"when": "now"}) == ({"when": "now"}, [])
    when = Signature(remind).bind({"when": "2024-05-01T10:00:00Z"})[0]["when"]
    assert when == datetime.datetime(2024, 5, 1, 10, tzinfo=datetime.timezone.utc)
    assert Signature(lookup).bind({"key": "alice"}) == ({"key": "alice"}, [])
    key = "12345678-1234-5678-1234-567812345678"
    assert Signature(lookup).bind({"key": key}) == ({"key": uuid.UUID(key)}, [])
    assert Signature(remind).bind({"when": "later"})[1] == [
        'when: expected an ISO 8601 date-time string, got "later"']


def test_multiple_of_zero_is_refused_when_the_schema_is_compiled():
    with pytest.raises(SchemaError, match="multipleOf must be greater than 0, not 0"):
        compile_schema({"type": "number", "multipleOf": 0})

    def step(n: Annotated[int, {"multipleOf": 0}]): ...
    with pytest.raises(SchemaError, match="step: input schema: multipleOf must be greater"):
        Signature(step)


def test_int_and_float_subclasses_are_numbers():
    """numpy.float64 is a float, an IntEnum an int: both encode as JSON numbers."""
    class Money(float):
        pass

    def avg() -> dict[str, float]: ...

    def count() -> int: ...
    assert compile_schema(Signature(avg).output_schema)({"mean": Money(2.5)}) == []
    assert compile_schema(Signature(count).output_schema)({"result": Level.HIGH}) == []
    assert compile_schema({"type": "integer"})(True) == ["Expected integer, got boolean true"]


@dataclasses.dataclass
class Node:
    name: str
    children: "list[Node]" = dataclasses.field(default_factory=list)


def test_arguments_too_deep_to_check_are_refused_not_crashed_on():
    def tree(root: Node): ...
    deep = {"name": "leaf"}
    for _ in range(400):
        deep = {"name": "n", "children": [deep]}
    assert Signature(tree).bind({"root": deep}) == (
        {}, ["the arguments are nested too deeply to check"])


def test_an_argument_string_nesting_too_deep_to_read_is_invalid_not_a_crash():
    def total(numbers: list[int]) -> int: ...
    kwargs, problems = Signature(total).bind({"numbers": "[" * 100_000})
    assert kwargs == {} and len(problems) == 1
    assert problems[0].startswith("numbers: expected array, got string")


def test_pydantic_conint_gives_no_warning_about_its_placeholders():
    pydantic = pytest.importorskip("pydantic")
    import warnings

    def pick(n: pydantic.conint(ge=0)): ...
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sig = Signature(pick)
    assert sig.input_schema["properties"]["n"] == {"type": "integer", "minimum": 0}
