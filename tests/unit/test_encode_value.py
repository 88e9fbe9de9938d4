"""jsjson.encode_value, the wire's encoder: JSON.stringify's output for every value, fast or exact.

msgspec writes the value; what JavaScript writes otherwise (integral floats, exponents, integers
beyond 2**53, integer-like keys, -0, lone surrogates, ABSENT, any depth) takes the exact path.
"""

from __future__ import annotations

import random
import struct
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from test_jsjson import json_values

from pi_session_server.format.jsjson import _encode_exact, dumps, encode_value
from pi_session_server.format.jsvalue import ABSENT


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1e16, "10000000000000000"),
        (1e21, "1e+21"),
        (1.5e300, "1.5e+300"),
        (1e-6, "0.000001"),
        (1e-7, "1e-7"),
        (1.0, "1"),
        (-0.0, "0"),
        (100.0, "100"),
        (0.1, "0.1"),
        (float("nan"), "null"),
        ({"b": 1, "10": 2, "2": 3}, '{"2":3,"10":2,"b":1}'),
        ({"a": ABSENT, "b": [ABSENT]}, '{"b":[null]}'),
        ("half \ud83d", '"half \\ud83d"'),
        ({"r": msgspec.Raw(b"[1, 2]")}, '{"r":[1, 2]}'),
    ],
)
def test_javascript_spelling(value: Any, text: str) -> None:
    assert encode_value(value).decode() == text
    assert encode_value([value]).decode() == f"[{text}]"


def test_displayed_text_replaces_lone_surrogates() -> None:
    value = {"message": "half \ud83d", "pair": "\U0001f600", "key \udc80": ["x\ud800y"]}
    assert msgspec.json.decode(encode_value(value, displayed=True)) == {
        "message": "half \ufffd",
        "pair": "\U0001f600",
        "key \ufffd": ["x\ufffdy"],
    }


class Point:
    def __init__(self, x: float) -> None:
        self.x = x


def test_the_default_hook_turns_objects_into_json_values() -> None:
    def default(value: Any) -> Any:
        if isinstance(value, Point):
            return {"x": value.x}
        raise TypeError

    assert encode_value([Point(1.0), Point(2.5)], default=default) == b'[{"x":1},{"x":2.5}]'
    assert encode_value([Point(1.0)], default=default, exact=True) == b'[{"x":1}]'
    with pytest.raises(TypeError):
        encode_value([Point(1.0)])


@pytest.mark.slow
def test_numbers_agree_with_the_exact_path_on_random_doubles() -> None:
    rnd = random.Random(11)
    for _ in range(20_000):
        f = struct.unpack("d", rnd.getrandbits(64).to_bytes(8, "little"))[0]
        if f != f or abs(f) == float("inf"):
            continue
        # (integers beyond 2**53 are written as held: see encode_value)
        for value in (f, float(round(f)) if abs(f) < 1e300 else 0.0, rnd.randint(-(2**53), 2**53)):
            for container in (value, [value], {"a": [1, value]}):
                assert encode_value(container).decode() == _encode_exact(container), container


def test_a_big_value_is_checked_everywhere() -> None:
    value = ["x" * (1 << 20), 1e16, "y" * (1 << 20), 1e-6, {"7": 1.0}]
    assert encode_value(value).decode() == _encode_exact(value)


def _small_integers(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, list, dict)):
        return True
    if isinstance(value, int):
        return abs(value) <= 2**53
    items = value.values() if isinstance(value, dict) else value
    return all(_small_integers(item) for item in items)


@settings(max_examples=300, deadline=None)
@given(json_values.filter(_small_integers))
def test_encode_value_is_json_stringify(value: Any) -> None:
    assert encode_value(value) == dumps(value).encode("utf-8")
