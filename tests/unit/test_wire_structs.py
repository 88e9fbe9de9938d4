"""Entries and tree nodes are msgspec Structs; on the wire they must still be their JSON values."""

from __future__ import annotations

import json

from pi_session_server.format.entry import Entry
from pi_session_server.server.wire import encode_result
from pi_session_server.session.tree import build_tree

VALUE = {
    "type": "message",
    "id": "a",
    "parentId": None,
    "timestamp": "t",
    "message": {"role": "user", "content": "x"},
}


def test_entries_anywhere_in_a_result_are_sent_as_their_json_values():
    entry = Entry.of(dict(VALUE))
    for result, expected in [
        (entry, VALUE),
        ([entry, 1], [VALUE, 1]),
        ({"entries": [entry], "total": 1}, {"entries": [VALUE], "total": 1}),
        ({"entry": entry, "leafId": "a"}, {"entry": VALUE, "leafId": "a"}),
        ({"a": {"b": {"c": [entry]}}}, {"a": {"b": {"c": [VALUE]}}}),  # deeper than the fast unwrap
    ]:
        assert json.loads(encode_result(result)) == expected


def test_tree_nodes_are_sent_as_the_reference_tree():
    roots = build_tree([Entry.of(dict(VALUE))], {"a": "L"}, {})
    assert json.loads(encode_result(roots)) == [{"entry": VALUE, "children": [], "label": "L"}]
    assert json.loads(encode_result({"tree": roots})) == {
        "tree": [{"entry": VALUE, "children": [], "label": "L"}]
    }


def test_small_plain_results_take_the_short_way_and_still_escape_lone_surrogates():
    assert encode_result({"id": "a1", "leafId": None}) == b'{"id":"a1","leafId":null}'
    assert encode_result({"id": "x\ud800", "leafId": "y"}) == b'{"id":"x\\ud800","leafId":"y"}'
    assert encode_result({"2": "b", "1": "a"}) == b'{"1":"a","2":"b"}'  # JS moves index keys first
