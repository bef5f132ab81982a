"""compile_schema against the `jsonschema` package (Draft202012Validator): on generated schemas
and instances, both must give the same verdict.  Spec: J1/J2 (2020-12 semantics), R9.

Every keyword compile_schema supports is generated.  The vocabularies are small on purpose, so
that instances often hit what the schemas talk about and both verdicts come up.  Where the two
validators disagree by design, the generators stay clear of it:
- multipleOf: compile_schema works on the decimals as written (19.99 is a multiple of 0.01),
  jsonschema divides floats; divisors are integers or powers of two, where the two agree.
- pattern: both use Python's re.search; the patterns are plain enough to mean the same in ECMA 262.
- uniqueItems: jsonschema compares sorted neighbours and misses [[1], [true], [1]]; the oracle
  below uses its own `equal` on every pair instead.
- format is not generated (an annotation for both); nor are keywords compile_schema ignores.

MCP_MIN_SLOW=1 runs many more examples."""
import itertools
import os

import jsonschema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema._utils import equal

from mcp_min import compile_schema

settings.register_profile("mcp_min_fast", max_examples=200, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("mcp_min_slow", max_examples=5000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
PROFILE = settings.get_profile("mcp_min_slow" if os.environ.get("MCP_MIN_SLOW") == "1" else "mcp_min_fast")


def _unique_items(validator, unique, instance, schema):
    if unique and validator.is_type(instance, "array"):
        if any(equal(a, b) for a, b in itertools.combinations(instance, 2)):
            yield jsonschema.ValidationError(f"{instance!r} has non-unique elements")


Oracle = jsonschema.validators.extend(jsonschema.Draft202012Validator, {"uniqueItems": _unique_items})

KEYS = ["a", "b", "x_1"]
TYPES = ["null", "boolean", "integer", "number", "string", "array", "object"]
NUMBERS = st.one_of(st.integers(-3, 3), st.sampled_from([0.5, -1.5, 2.0, 0.25, 3.0, 1e20, -0.0]))
SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, st.text("ab1", max_size=3))
JSON = st.recursive(SCALARS, lambda kids: st.one_of(st.lists(kids, max_size=3),
                                                    st.dictionaries(st.sampled_from(KEYS), kids, max_size=3)),
                    max_leaves=5)

LEAF_KEYWORDS = {
    "type": st.one_of(st.sampled_from(TYPES), st.lists(st.sampled_from(TYPES), min_size=1, max_size=3, unique=True)),
    "enum": st.lists(JSON, min_size=1, max_size=3),
    "const": JSON,
    "minimum": NUMBERS, "maximum": NUMBERS, "exclusiveMinimum": NUMBERS, "exclusiveMaximum": NUMBERS,
    "multipleOf": st.sampled_from([1, 2, 3, 0.5, 0.25]),
    "minLength": st.integers(0, 3), "maxLength": st.integers(0, 3),
    "pattern": st.sampled_from(["^a", "b$", "a|1", "^[ab]*$", "1", "^$"]),
    "minItems": st.integers(0, 3), "maxItems": st.integers(0, 3), "uniqueItems": st.booleans(),
    "minProperties": st.integers(0, 3), "maxProperties": st.integers(0, 3),
    "required": st.lists(st.sampled_from(KEYS), max_size=3, unique=True),
}
REFS = st.sampled_from([{"$ref": "#/$defs/d0"}, {"$ref": "#/$defs/d1"}])


@st.composite
def _some(draw, keywords):
    """A schema using a few of `keywords` at once (often one or two, sometimes none)."""
    names = draw(st.lists(st.sampled_from(sorted(keywords)), max_size=3, unique=True))
    return {name: draw(keywords[name]) for name in names}


def _nested(kids):
    return {
        "properties": st.dictionaries(st.sampled_from(KEYS), kids, max_size=3),
        "additionalProperties": kids, "items": kids, "prefixItems": st.lists(kids, min_size=1, max_size=3),
        "allOf": st.lists(kids, min_size=1, max_size=3), "anyOf": st.lists(kids, min_size=1, max_size=3),
        "oneOf": st.lists(kids, min_size=1, max_size=3), "not": kids,
    }


def _schemas(leaves, max_leaves):
    """Schemas of every supported keyword, nested."""
    return st.recursive(leaves, lambda kids: st.builds(
        lambda a, b: {**a, **b}, _some(LEAF_KEYWORDS), _some(_nested(kids))), max_leaves=max_leaves)


# The $defs entries hold no $ref, so there are no cycles that never descend into the instance.
DEFS = st.fixed_dictionaries({"d0": _schemas(_some(LEAF_KEYWORDS), 2), "d1": _schemas(_some(LEAF_KEYWORDS), 2)})
ROOTS = st.builds(lambda body, defs: {**body, "$defs": defs} if isinstance(body, dict) else body,
                  _schemas(st.one_of(st.booleans(), _some(LEAF_KEYWORDS), REFS), 6), DEFS)


def _values_in(schema):
    """The enum and const values a schema mentions: instances that hit them make both verdicts likely."""
    if isinstance(schema, dict):
        found = list(schema.get("enum", [])) + ([schema["const"]] if "const" in schema else [])
        for value in schema.values():
            found += _values_in(value)
        return found
    if isinstance(schema, list):
        return [v for item in schema for v in _values_in(item)]
    return []


def _instances(schema):
    mentioned = _values_in(schema)
    pool = st.one_of(JSON, st.sampled_from(mentioned)) if mentioned else JSON
    return st.lists(st.one_of(pool, st.dictionaries(st.sampled_from(KEYS), pool, max_size=3),
                              st.lists(pool, max_size=3)), min_size=1, max_size=6)


def test_compile_schema_agrees_with_jsonschema():
    """Same valid/invalid verdict as jsonschema's Draft202012Validator, for every supported keyword."""
    verdicts = {True: 0, False: 0}

    @PROFILE
    @given(st.data())
    def check(data):
        schema = data.draw(ROOTS, label="schema")
        instances = data.draw(_instances(schema), label="instances")
        Oracle.check_schema(schema)
        validate, oracle = compile_schema(schema), Oracle(schema)
        for instance in instances:
            problems = validate(instance)
            expected = oracle.is_valid(instance)
            assert (not problems) == expected, (schema, instance, problems)
            assert all(isinstance(p, str) and p for p in problems)
            verdicts[expected] += 1
    check()
    total = sum(verdicts.values())
    assert verdicts[True] > total / 10 and verdicts[False] > total / 10, verdicts   # both verdicts exercised


def test_the_oracle_fix_is_needed():
    """Why uniqueItems uses a pairwise oracle: jsonschema's sorted-neighbour shortcut misses this one."""
    instance = [[1], [True], [1]]
    assert jsonschema.Draft202012Validator({"uniqueItems": True}).is_valid(instance)
    assert not Oracle({"uniqueItems": True}).is_valid(instance)
    assert compile_schema({"uniqueItems": True})(instance) == ["Must not contain duplicates, got [[1], [true], [1]]"]
