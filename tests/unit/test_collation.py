"""localeCompare emulation for listing tie-breaks (docs/API.md §9.7, D9), checked against Node's ICU."""

from __future__ import annotations

import functools
import itertools
import json
from pathlib import Path

import pytest

from pi_session_server.format.collation import collation_key, locale_compare

CORPUS = json.loads((Path(__file__).parent / "data" / "js_text_corpus.json").read_text())


def test_sorting_matches_node() -> None:
    names = list(reversed(CORPUS["sorted_names"]))
    ours = sorted(names, key=functools.cmp_to_key(locale_compare))
    # Names that ICU considers equal keep their input order in both sorts; compare keys for those.
    assert [collation_key(n) for n in ours] == [collation_key(n) for n in CORPUS["sorted_names"]]
    assert sorted(names, key=collation_key) == ours


def test_pairwise_signs_match_node() -> None:
    mismatches = [(a, b, s) for a, b, s in CORPUS["pairs"] if locale_compare(a, b) != s]
    assert mismatches == []


@pytest.mark.parametrize(
    "ascending",
    [
        # Node: a proper prefix sorts first, so "a" < "a_x" (docs/API.md §9.7).
        ["_", "1", "a", "A", "a_x", "A-x", "b", "B"],
        ["x10", "x9"],
        [" ", "_", "-", ",", ";", ":", "!", "?", ".", "'", '"', "(", ")", "[", "]", "{", "}", "@", "*", "/", "\\",
         "&", "#", "%", "`", "^", "+", "<", "=", ">", "|", "~", "$", "0", "9", "a", "z"],
        ["aB", "Ab", "AB"],
        ["ab", "abc"],
    ],
)  # fmt: skip
def test_documented_order(ascending: list[str]) -> None:
    for a, b in itertools.pairwise(ascending):
        assert locale_compare(a, b) == -1, (a, b)
        assert locale_compare(b, a) == 1, (b, a)


def test_ignorable_controls_and_equality() -> None:
    assert locale_compare("ab\x01", "ab") == 0
    assert locale_compare("a", "a") == 0


def test_non_ascii_is_deterministic_and_sensible() -> None:
    names = ["zebra", "éclair", "eclair", "Éclair", "日本", "ångström", "angstrom"]
    once = sorted(names, key=collation_key)
    assert once == sorted(reversed(names), key=collation_key)
    assert once.index("eclair") < once.index("éclair") < once.index("zebra")
    assert once[-1] == "日本"
    assert locale_compare("é", "e") == 1 and locale_compare("e", "é") == -1
