"""JS semantics of format/jsvalue.py: ``String()`` of nested values (finding #16) and Map keys of
numbers beyond 2**53 (finding #5). Expected strings are what node prints for ``String(value)``."""

from __future__ import annotations

import math

import pytest

from pi_session_server.format.jsjson import parse_bytes
from pi_session_server.format.jsvalue import ABSENT, index_key, js_string_of, to_number

# (JSON text, String(JSON.parse(text)) in node)
JS_STRINGS = [
    ("[]", ""),
    ("[[]]", ""),
    ("[[],[]]", ","),
    ("[[[],[]],[]]", ",,"),
    ("[1,[2,3]]", "1,2,3"),
    ("[1,[2,[3,[4]]],5]", "1,2,3,4,5"),
    ('["a",["b",["c"]]]', "a,b,c"),
    ("[null,1]", ",1"),
    ("[[null],[null,null]]", ",,"),
    ("[true,false]", "true,false"),
    ("[{}]", "[object Object]"),
    ('[{"a":[1]},2]', "[object Object],2"),
    ("[1.5,1e21,-0,1e-7]", "1.5,1e+21,0,1e-7"),
    ("[123456789012345678901234567890]", "1.2345678901234568e+29"),
    ("[1e400]", "Infinity"),
    ("{}", "[object Object]"),
    ("null", "null"),
    ("true", "true"),
    ("5", "5"),
    ('"x"', "x"),
]


@pytest.mark.parametrize(("text", "expected"), JS_STRINGS)
def test_js_string_of_matches_node(text, expected):
    assert js_string_of(parse_bytes(text.encode())) == expected


def test_js_string_of_scalars_that_json_cannot_hold():
    assert js_string_of(ABSENT) == "undefined"
    assert js_string_of([ABSENT, 1]) == ",1"
    assert js_string_of(math.nan) == "NaN"
    assert js_string_of([-math.inf]) == "-Infinity"
    assert js_string_of(2**60) == "1152921504606847000"


@pytest.mark.parametrize("depth", [1_000, pytest.param(100_000, marks=pytest.mark.slow)])
def test_js_string_of_deeply_nested_arrays_does_not_recurse(depth):
    assert js_string_of(parse_bytes(b"[" * depth + b"]" * depth)) == ""
    assert js_string_of(parse_bytes(b"[" * depth + b"7" + b"]" * depth)) == "7"
    nested_pairs = parse_bytes(b"[1," * depth + b"2" + b"]" * depth)
    assert js_string_of(nested_pairs) == ",".join(["1"] * depth + ["2"])


def test_js_string_of_an_array_met_again_inside_itself_is_empty_like_v8():
    cyclic: list = [1]
    cyclic.append(cyclic)
    assert js_string_of(cyclic) == "1,"


def test_js_string_of_with_a_limit_is_a_prefix_built_without_the_rest():
    big = list(range(1_000_000))
    assert js_string_of(big, limit=12) == "0,1,2,3,4,5,"
    assert js_string_of("abcdef", limit=3) == "abc"
    assert js_string_of(parse_bytes(b"[[1,2],[3]]"), limit=100) == "1,2,3"
    assert js_string_of({}, limit=7) == "[object"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ([], 0.0),
        ([None], 0.0),
        ([[]], 0.0),
        ([[5]], 5.0),
        ([" 7 "], 7.0),
        ([1, 2], math.nan),
        ([True], math.nan),
    ],
)
def test_to_number_of_an_array_is_the_number_of_its_string(value, expected):
    result = to_number(value)
    assert result == expected or (math.isnan(expected) and math.isnan(result))


BIG = 123456789012345678901234567890


def test_index_key_of_an_integer_beyond_2_53_is_its_nearest_double():
    assert index_key(BIG) == index_key(float(BIG)) == index_key(1.2345678901234568e29)
    assert hash(index_key(BIG)) == hash(index_key(float(BIG)))
    # 2**53 + 1 is not a double: JSON.parse gives 2**53
    assert index_key(2**53 + 1) == index_key(2**53) == index_key(float(2**53))
    assert index_key(-(2**53) - 1) == index_key(-float(2**53))


def test_index_key_keeps_safe_integers_exact_and_apart():
    assert index_key(2**53) != index_key(2**53 - 1)
    assert index_key(5) == index_key(5.0)
    assert index_key(0) == index_key(-0.0)  # SameValueZero
    assert index_key(1) != index_key(True) and index_key(0) != index_key(False)
    assert index_key(1) != index_key("1")


def test_index_key_beyond_the_double_range_is_infinity():
    assert index_key(10**400) == index_key(math.inf)
    assert index_key(-(10**400)) == index_key(-math.inf)


def test_index_key_of_nan_is_one_key():
    assert index_key(math.nan) == index_key(float("nan"))
    assert index_key(math.nan) != index_key("NaN")
