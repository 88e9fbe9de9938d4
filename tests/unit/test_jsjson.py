"""JSON.parse / JSON.stringify compatibility (docs/FORMAT.md §2.2, §2.3), checked against a Node corpus."""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_session_server.format.jsjson import (
    READABLE_DEPTH,
    JsonSyntaxError,
    _encode_exact,
    _Parser,
    dumps,
    dumps_bytes,
    dumps_pretty,
    dumps_short,
    is_array_index_key,
    js_key_order,
    js_number,
    parse,
    parse_bytes,
)
from pi_session_server.format.jsvalue import ABSENT

CORPUS = json.loads((Path(__file__).parent / "data" / "js_json_corpus.json").read_text())


def _exact_parse(text: str) -> Any:
    return _Parser(text).parse()


PARSERS = [
    pytest.param(parse, id="parse"),
    pytest.param(_exact_parse, id="exact"),
    pytest.param(lambda t: parse_bytes(t.encode("utf-8")), id="parse_bytes"),
]


# ---- parsing: the Node corpus ----------------------------------------------------------------------


@pytest.mark.parametrize("parser", PARSERS)
def test_parse_matches_node_on_corpus(parser: Any) -> None:
    mismatches = []
    for case in CORPUS["parse"]:
        text = case["text"]
        try:
            value = parser(text)
        except JsonSyntaxError as err:
            got = {"ok": False, "message": err.js_message}
            expected = {"ok": False, "message": case.get("message")}
        else:
            got = {"ok": True, "compact": dumps(value), "pretty": dumps_pretty(value)}
            expected = {k: case.get(k) for k in ("ok", "compact", "pretty")}
        if got != expected:
            mismatches.append((text, expected, got))
    assert mismatches == []
    assert sum(1 for c in CORPUS["parse"] if c["ok"]) > 300  # the corpus exercises both outcomes


def test_error_position_is_a_python_index_and_matches_v8_in_utf16_units() -> None:
    checked = 0
    for case in CORPUS["parse"]:
        if case["ok"] or " at position " not in case["message"]:
            continue
        text = case["text"]
        with pytest.raises(JsonSyntaxError) as info:
            parse(text)
        err = info.value
        utf16_pos = len(text[: err.pos].encode("utf-16-le", "surrogatepass")) // 2
        assert case["message"].endswith(f" at position {utf16_pos}")
        assert err.msg in err.js_message
        checked += 1
    assert checked > 500


@pytest.mark.parametrize(
    ("text", "pos", "msg"),
    [
        ("[1,]", 3, "Unexpected token ']'"),
        ('"abc', 4, "Unterminated string"),
        ('{"a":1,}', 7, "Expected double-quoted property name"),
        ("", 0, "Unexpected end of JSON input"),
        ('["😀", x]', 6, "Unexpected token 'x'"),
        ("\ufeff{}", 0, "Unexpected token '\ufeff'"),
        ("{} \u00a0", 3, "Unexpected non-whitespace character after JSON"),
        ("NaN", 0, '"NaN" is not valid JSON'),
        ("[1, -Infinity]", 5, "No number after minus sign"),
        ("01", 1, "Unexpected number"),
    ],
)
def test_error_pos_and_msg(text: str, pos: int, msg: str) -> None:
    with pytest.raises(JsonSyntaxError) as info:
        parse(text)
    assert (info.value.pos, info.value.msg) == (pos, msg)
    assert isinstance(info.value, ValueError)
    assert str(info.value) == info.value.js_message


# ---- parsing: value details --------------------------------------------------------------------------


@pytest.mark.parametrize("parser", PARSERS)
def test_numbers_follow_js_doubles(parser: Any) -> None:
    assert parser("1.0") == 1 and dumps(parser("1.0")) == "1"
    assert parser("-0") == 0
    assert parser("1e400") == math.inf and parser("-1e400") == -math.inf
    assert parser("1e-400") == 0
    assert parser("9007199254740992") == 2**53
    assert dumps(parser("12345678901234567890")) == "12345678901234567000"
    assert dumps(parser("1" + "0" * 5000)) == "null"  # Infinity; no CPython digit-limit error


def test_parse_keeps_ints_exact_to_2_pow_53_then_rounds() -> None:
    assert type(parse("9007199254740992")) is int
    assert parse("12345678901234567890") == 12345678901234567168.0
    assert type(parse("-" + "9" * 4500)) is float


@pytest.mark.parametrize("parser", PARSERS)
def test_duplicate_keys_last_value_first_position(parser: Any) -> None:
    value = parser('{"a":1,"b":2,"a":3}')
    assert list(value.items()) == [("a", 3), ("b", 2)]


@pytest.mark.parametrize("parser", PARSERS)
def test_lone_surrogate_escapes_are_accepted(parser: Any) -> None:
    assert parser('"\\ud800x"') == "\ud800x"
    assert parser('"\\uD83D\\uDE00"') == "😀"
    assert dumps(parser('"\\udc00\\ud800"')) == '"\\udc00\\ud800"'


def test_parse_bytes_decodes_invalid_utf8_like_node() -> None:
    assert parse_bytes(b'"a\xffb"') == "a\ufffdb"
    assert parse_bytes(memoryview(b'{"k":"\xed\xa0\x80"}')) == {"k": "\ufffd\ufffd\ufffd"}
    with pytest.raises(JsonSyntaxError):
        parse_bytes(b"\xef\xbb\xbf{}")  # the BOM is not whitespace


def _nested(depth: int) -> str:
    return "[" * depth + '{"a":"x"}' + "]" * depth


@pytest.mark.parametrize("parser", PARSERS)
def test_any_nesting_depth_parses(parser: Any) -> None:
    depth = 200_000
    value = parser(_nested(depth))
    for _ in range(depth):
        assert type(value) is list and len(value) == 1
        value = value[0]
    assert value == {"a": "x"}


def test_deep_error_position() -> None:
    text = "[" * 50_000 + "1,]" + "]" * 49_999
    with pytest.raises(JsonSyntaxError) as info:
        parse(text)
    assert (info.value.pos, info.value.msg) == (50_002, "Unexpected token ']'")


# ---- serializing -----------------------------------------------------------------------------------


def _double(hex_bits: str) -> float:
    return struct.unpack(">d", int(hex_bits, 16).to_bytes(8, "big"))[0]


def test_js_number_matches_node_on_corpus() -> None:
    mismatches = []
    for hex_bits, js_string, js_json in CORPUS["numbers"]:
        x = _double(hex_bits)
        if js_number(x) != js_string or dumps(x) != js_json or dumps([x]) != f"[{js_json}]":
            mismatches.append((hex_bits, x, js_string, js_number(x)))
    assert mismatches == []
    assert len(CORPUS["numbers"]) > 3000


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (5, "5"),
        (5.0, "5"),
        (-0.0, "0"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (1e-7, "1e-7"),
        (1e-6, "0.000001"),
        (1.5e300, "1.5e+300"),
        (2**53 + 1, "9007199254740992"),
        (2**60, "1152921504606847000"),
        (10**400, "Infinity"),
        (-(10**400), "-Infinity"),
        (math.nan, "NaN"),
    ],
)
def test_js_number_examples(value: float, text: str) -> None:
    assert js_number(value) == text


def test_js_number_rejects_bool() -> None:
    with pytest.raises(TypeError):
        js_number(True)


def _string_from_units(units: list[int]) -> str:
    return struct.pack(f"<{len(units)}H", *units).decode("utf-16-le", "surrogatepass")


def test_string_escaping_matches_node_on_corpus() -> None:
    mismatches = []
    for units, expected in CORPUS["strings"]:
        combined = _string_from_units(units)  # pairs as one astral code point
        separate = "".join(map(chr, units))  # pairs as two surrogate code points: same JS string
        for s in (combined, separate):
            for got in (dumps(s), _encode_exact(s), dumps({"k": s})[5:-1], dumps_bytes(s).decode("utf-8")):
                if got != expected:
                    mismatches.append((units, expected, got))
    assert mismatches == []


def test_key_order_puts_array_indices_first() -> None:
    value = {"b": 1, "2": 2, "a": 3, "1": 4, "-1": 5, "01": 6, "4294967295": 7, "4294967294": 8}
    assert dumps(value) == '{"1":4,"2":2,"4294967294":8,"b":1,"a":3,"-1":5,"01":6,"4294967295":7}'


def test_the_key_order_rule_is_the_encoders() -> None:
    members = [("b", 1), ("10", 2), ("a", 3), ("9", 4), ("01", 5)]
    assert js_key_order(members) == [("9", 4), ("10", 2), ("b", 1), ("a", 3), ("01", 5)]
    assert dumps(dict(members)) == "{" + ",".join(f'"{k}":{v}' for k, v in js_key_order(members)) + "}"
    assert js_key_order([("x", 1)]) == [("x", 1)]


@pytest.mark.parametrize(
    ("key", "is_index"),
    [("0", True), ("1", True), ("10", True), ("4294967294", True), ("4294967295", False), ("01", False),
     ("-1", False), ("", False), ("1.0", False), (" 1", False), ("\u0661", False), ("99999999999", False)],
)  # fmt: skip
def test_is_array_index_key(key: str, is_index: bool) -> None:
    assert is_array_index_key(key) is is_index


def test_absent_members_omitted_and_array_items_null() -> None:
    assert dumps({"a": ABSENT, "b": [ABSENT, 1], "c": None}) == '{"b":[null,1],"c":null}'
    assert dumps_pretty({"a": ABSENT}) == "{}"
    with pytest.raises(TypeError):
        dumps(ABSENT)


def test_non_json_values_raise() -> None:
    with pytest.raises(TypeError):
        dumps({"a": {1, 2}})
    with pytest.raises(TypeError):
        dumps(b"x")


class LazyEntry(Mapping[str, Any]):
    """A Mapping that is not a dict, like the session manager's lazy entries."""

    def __init__(self, data: dict[str, Any]):
        self._data = data

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


def test_any_mapping_serializes_as_object_and_tuples_as_arrays() -> None:
    value = LazyEntry({"type": "message", "id": "ab", "m": LazyEntry({"x": (1, 2.5)}), "gone": ABSENT})
    assert dumps(value) == '{"type":"message","id":"ab","m":{"x":[1,2.5]}}'
    assert (
        dumps_pretty(value)
        == '{\n  "type": "message",\n  "id": "ab",\n  "m": {\n    "x": [\n      1,\n      2.5\n    ]\n  }\n}'
    )


def test_bool_is_not_a_number() -> None:
    assert dumps([True, False, 1, 0]) == "[true,false,1,0]"


def test_no_unneeded_escapes() -> None:
    assert dumps("/\x7f\u2028\u2029é😀\x00\x1f") == '"/\x7f\u2028\u2029é😀\\u0000\\u001f"'


def test_dumps_pretty_layout() -> None:
    assert dumps_pretty({"a": [], "b": {}, "c": [1, {"d": None}]}) == (
        '{\n  "a": [],\n  "b": {},\n  "c": [\n    1,\n    {\n      "d": null\n    }\n  ]\n}'
    )
    assert dumps_pretty([1], indent=4) == "[\n    1\n]"
    assert dumps_pretty("x") == '"x"'


def test_any_nesting_depth_serializes() -> None:
    depth = 200_000
    value: Any = {"k": 1}
    for _ in range(depth):
        value = [value]
    expected = "[" * depth + '{"k":1}' + "]" * depth
    assert dumps(value) == expected
    assert dumps_bytes(value) == expected.encode()


def test_deep_values_pretty_print() -> None:
    depth = 3000  # the pretty layout is quadratic in depth (indentation), as in JS
    value: Any = {"k": 1}
    for _ in range(depth):
        value = [value]
    pretty = dumps_pretty(value)
    assert pretty.count("\n") == 2 * depth + 2
    assert dumps(parse(pretty)) == "[" * depth + '{"k":1}' + "]" * depth


# ---- properties ------------------------------------------------------------------------------------

_keys = st.one_of(
    st.text(max_size=6), st.integers(0, 5_000_000_000).map(str), st.sampled_from(["01", "-1", "1.5"])
)
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**60), 2**60),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(),
    st.text(alphabet=st.sampled_from(["\ud800", "\udfff", "\ud83d", "\ude00", "a", "\x01", '"'])),
)
json_values = st.recursive(
    _scalars,
    lambda children: st.one_of(st.lists(children, max_size=5), st.dictionaries(_keys, children, max_size=5)),
    max_leaves=30,
)


def _js_equivalent(value: Any) -> Any:
    """What JS holds after a round trip: doubles, and strings as UTF-16 (pairs combined)."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        f = float(value)
        return 0.0 if f == 0 else f
    if isinstance(value, str):
        return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    if isinstance(value, list):
        return [_js_equivalent(v) for v in value]
    return {_js_equivalent(k): _js_equivalent(v) for k, v in value.items()}


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_fast_and_exact_serializers_agree(value: Any) -> None:
    text = dumps(value)
    assert text == _encode_exact(value)
    assert dumps_bytes(value) == text.encode("utf-8")


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_round_trip(value: Any) -> None:
    text = dumps(value)
    for parsed in (parse(text), _exact_parse(text), parse_bytes(text.encode("utf-8"))):
        assert _js_equivalent(parsed) == _js_equivalent(value)
        assert dumps(parsed) == text
    assert parse(dumps_pretty(value)) == parse(text)


def _depth(value: Any) -> int:
    """How many containers deep ``value`` nests (a scalar: 0)."""
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    return 0


@settings(max_examples=200, deadline=None)
@given(json_values, st.integers(0, 4))
def test_text_for_people_lays_out_values_down_to_a_depth(value: Any, depth: int) -> None:
    """``indented_depth``: JSON.stringify's layout down to that depth, the containers below it on
    one line; the same value either way."""
    text = dumps_pretty(value, indented_depth=depth)
    assert parse(text) == parse(dumps(value))
    if _depth(value) <= depth:
        assert text == dumps_pretty(value)
    if depth == 0:
        assert text == dumps(value)
    for line in text.split("\n"):
        assert len(line) - len(line.lstrip(" ")) <= 2 * depth


def test_text_for_people_grows_with_a_value_not_with_the_square_of_its_depth() -> None:
    """A few hundred KB of nested arrays laid out by JSON.stringify would be gigabytes."""
    depth = 100_000
    value = parse("[" * depth + "1" + "]" * depth)
    text = dumps_pretty({"m": value}, indented_depth=READABLE_DEPTH)
    assert len(text) < 3 * depth + READABLE_DEPTH**2
    assert dumps(parse(text)) == dumps({"m": value})  # (a comparison of the values would recurse)


@settings(max_examples=200, deadline=None)
@given(json_values, st.sampled_from([" ", "\t", "\r\n", ""]))
def test_fast_and_exact_parsers_agree(value: Any, ws: str) -> None:
    text = json.dumps(value, ensure_ascii=bool(ws), separators=("," + ws, ":" + ws))
    fast, exact = parse(text), _exact_parse(text)
    assert dumps(fast) == dumps(exact)
    assert list(_walk_types(fast)) == list(_walk_types(exact))


def _walk_types(value: Any) -> Iterator[type]:
    stack = [value]
    while stack:
        v = stack.pop()
        yield type(v)
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)


@settings(max_examples=250, deadline=None)
@given(st.binary(max_size=40) | json_values.map(lambda v: dumps(v).encode("utf-8", "surrogatepass")))
def test_parse_bytes_agrees_with_parse_of_replacement_decoding(data: bytes) -> None:
    text = data.decode("utf-8", "replace")
    try:
        expected = dumps(parse(text))
    except JsonSyntaxError as err:
        with pytest.raises(JsonSyntaxError) as info:
            parse_bytes(data)
        assert info.value.js_message == err.js_message
        return
    assert dumps(parse_bytes(data)) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("a" * 600 + "\ud800\x01é\u2028", '"' + "a" * 600 + '\\ud800\\u0001é\u2028"'),
        ("b" * 600 + "\ud83d\ude00", '"' + "b" * 600 + '😀"'),  # a pair held as two code points
        ("\x1f" * 600, '"' + "\\u001f" * 600 + '"'),
        ('"\\/' * 300, '"' + '\\"\\\\/' * 300 + '"'),
    ],
)
def test_long_strings_escape_like_short_ones(value: str, expected: str) -> None:
    assert dumps(value) == expected
    assert _encode_exact({"k": value}) == '{"k":' + expected + "}"
    assert dumps_bytes([value]) == ("[" + expected + "]").encode("utf-8")


@pytest.mark.parametrize(
    ("value", "limit", "expected"),
    [
        ({"a": True, "b": None}, 40, '{"a":true,"b":null}'),
        ([1.0, [2, []], {}, "x"], 40, '[1,[2,[]],{},"x"]'),
        ({"1": 1, "a": 2}, 40, '{"1":1,"a":2}'),
        ("\ud800", 40, '"\ufffd"'),
        ("x" * 100, 10, '"xxxxxxxx…'),
        ({"a": "b" * 50}, 20, '{"a":"bbbbbbbbbbbbb…'),
        ([1, ABSENT, 2], 40, "[1,null,2]"),  # undefined in an array: null, and the array goes on
    ],
)
def test_dumps_short_is_json_stringify_cut_short(value: Any, limit: int, expected: str) -> None:
    assert dumps_short(value, limit) == expected


def test_dumps_short_stops_after_limit_whatever_the_depth_or_size() -> None:
    deep: list[Any] = []
    for _ in range(100_000):
        deep = [deep]
    assert dumps_short(deep, 40) == "[" * 39 + "…"
    assert dumps_short([0] * 1_000_000, 12) == "[0,0,0,0,0,…"


def _circular() -> list[Any]:
    """Values that hold themselves (directly, through a list, deep down) and JSON.stringify refuses."""
    itself: dict[str, Any] = {}
    itself["x"] = itself
    in_a_list: list[Any] = []
    in_a_list.append({"a": in_a_list})
    deep: dict[str, Any] = {"content": [{"type": "text", "meta": {}}]}
    deep["content"][0]["meta"]["back"] = deep["content"]
    return [itself, in_a_list, deep]


@pytest.mark.parametrize("value", _circular(), ids=["itself", "through a list", "deep down"])
@pytest.mark.parametrize("encode", [dumps, dumps_bytes, dumps_pretty])
def test_a_value_that_holds_itself_is_refused_as_json_stringify_does(value, encode):
    """(It looped for ever, its memory growing, where JSON.stringify throws.)"""
    with pytest.raises(TypeError, match="Converting circular structure to JSON"):
        encode(value)


def test_a_value_held_twice_side_by_side_is_written_twice():
    shared = {"k": [1, {"n": None}]}
    value = {"a": shared, "b": [shared, shared]}
    assert dumps(value) == json.dumps(value, separators=(",", ":"))
    assert dumps_bytes(value) == dumps(value).encode()


# ---- parsing: texts cut short, worded from the C scanner's error ----------------------------------

_PIECES = ["", "a", "ü", "😀", "\\", '"', "\n", "\x00", "\ud800", "x y", "{", "[", "]}", ",", ":"]
_SPLICED = [" ", "\\", '"', "-", "1", ".", "e", "t", "NaN", "]", "}", ",", ":", "0", "\\u12", "\\u0041"]


_values = st.recursive(
    st.sampled_from([0, -1, 1.5, 1e300, 2**70, True, False, None])
    | st.lists(st.sampled_from(_PIECES), max_size=4).map("".join),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.lists(st.sampled_from(_PIECES), max_size=3).map("".join), inner, max_size=4)
    ),
    max_leaves=20,
)


def _error(parser: Any, text: str) -> tuple[str, int, str] | None:
    try:
        parser(text)
    except JsonSyntaxError as err:
        return err.msg, err.pos, err.js_message
    return None


@settings(max_examples=3000, deadline=None)
@given(
    _values,
    st.booleans(),
    st.sampled_from([None, 1]),
    st.floats(0, 1),
    st.lists(st.tuples(st.floats(0, 1), st.sampled_from(_SPLICED)), max_size=2),
)
def test_a_text_cut_short_is_worded_as_the_exact_parser_words_it(
    value: Any, ascii_only: bool, indent: int | None, cut: float, spliced: list[tuple[float, str]]
) -> None:
    # (the C scanner reads it to its end; the words V8 gives there are told from its error)
    text = json.dumps(value, ensure_ascii=ascii_only, indent=indent)
    text = text[: round(cut * len(text))]
    for at, what in spliced:
        where = round(at * len(text))
        text = text[:where] + what + text[where:]
    assert _error(parse, text) == _error(_exact_parse, text)


def test_texts_cut_short_are_worded_without_the_exact_parser(monkeypatch: pytest.MonkeyPatch) -> None:
    from pi_session_server.format import jsjson

    assert jsjson._SCANNER_TELLS_CUTS  # (the installed Python words its errors as this reads them)
    cuts = [
        '{"type":"message","id":"e1","message":{"role":"user","content":"hel',
        '{"a":"x\\',
        '{"a":"x\\\\',
        '{"a":[1,{"b":2}',
        '{"a":{"b":2}',
        '{"a":1, "b" ',
        '{"a" ',
        '{"a":1,',
        "{ ",
        '[1, "😀", ',
        '{"a": ',
    ]
    exact = {text: _error(_exact_parse, text) for text in cuts}
    walked = []
    monkeypatch.setattr(jsjson._Parser, "parse", lambda self: walked.append(self.text))
    assert {text: _error(parse, text) for text in cuts} == exact
    assert walked == []


def test_a_python_that_words_the_scanner_s_errors_otherwise_leaves_them_to_the_exact_parser(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pi_session_server.format import jsjson

    class Reworded(json.JSONDecodeError):
        def __init__(self, msg: str, doc: str, pos: int) -> None:
            super().__init__(msg.replace("Expecting", "Wanted"), doc, pos)

    def reworded(text: str) -> Any:
        try:
            return json.loads(text)
        except json.JSONDecodeError as err:
            raise Reworded(err.msg, err.doc, err.pos) from None

    monkeypatch.setattr(jsjson, "_fast_loads", reworded)
    assert not jsjson._scanner_tells_cuts()
    monkeypatch.setattr(jsjson, "_SCANNER_TELLS_CUTS", False)
    assert _error(parse, '{"a":1') == _error(_exact_parse, '{"a":1')


def test_the_error_of_a_text_cut_short_leaves_no_cycle_for_the_collector() -> None:
    # (a damaged file has a cut-off line by the hundred thousand: garbage in cycles, an error's
    # traceback holding the frame that holds the error, is freed only by the collector's walks)
    import gc

    cuts = ['{"type":"message","id":"e1","message":{"role":"user"', '{"a":"x', '[1, {"b"', '{"a" ']
    gc.collect()
    gc.disable()
    try:
        for text in cuts * 25:
            assert _error(parse, text) == _error(_exact_parse, text) is not None
        assert gc.collect() == 0
    finally:
        gc.enable()
