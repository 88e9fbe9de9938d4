"""The bytes of pi/getTree ``levels`` replies as the client receives them: the frame the connection
writes, the reply given to it as its parts (``RawParts``: the levels kept for the next reply among
them, never joined into a copy). Pinned by digest for a few sessions, filters and ``since`` deltas
(a turn, a branch, a label, a revision the server no longer has), so that how the reply is
assembled and written never changes what it says."""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import random
from pathlib import Path
from typing import Any

import msgspec
import pytest
from test_protocol_tree_filters import random_session

from pi_session_server.server import methods_read
from pi_session_server.server import params as P
from pi_session_server.server.jsonrpc import Connection, FrameWriter
from pi_session_server.server.raw_parts import RawParts
from pi_session_server.server.tree_pages import Revisions
from pi_session_server.server.wire import encoded_reply
from pi_session_server.session import SessionManager
from pi_session_server.session import manager as manager_module


@pytest.fixture
def fixed_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    """Entry ids and timestamps a run of the test gives alike (the digests pin the replies' bytes)."""
    ids = itertools.count(1)
    stamps = itertools.count(0)
    monkeypatch.setattr(manager_module, "new_entry_id", lambda _taken: f"e{next(ids):07x}")
    monkeypatch.setattr(manager_module, "_now", lambda: f"2026-01-01T00:00:{next(stamps) % 60:02d}.000Z")
    # (revisions are numbered per process: the tests run before this one took some)
    monkeypatch.setattr(methods_read, "_revisions", Revisions())


def _frame_body(result: Any) -> bytes:
    """The body of the frame the connection writes for ``result`` as a job's reply (request id 7)."""
    out = io.BytesIO()
    connection = Connection()
    connection.writer = FrameWriter(out)
    connection.send_result(7, encoded_reply(result))
    head, body = out.getvalue().split(b"\r\n\r\n", 1)
    assert head == b"Content-Length: %d" % len(body)
    return body


def _levels(m: SessionManager, view: dict[str, Any], since: str | None = None) -> bytes:
    params = {"session": "s", "levels": True, "aroundId": m.get_leaf_id(), "limit": 4, **view}
    if since is not None:
        params["since"] = since
    return _frame_body(methods_read._tree_reply(m, P.parse(params, P.GetTreeParams)))


def _turn(m: SessionManager, n: int) -> None:
    m.append_message({"role": "user", "content": f"turn {n}", "timestamp": n})
    m.append_message(
        {"role": "assistant", "content": [{"type": "text", "text": f"answer {n}"}], "timestamp": n}
    )


def _replies(tmp_path: Path, seed: int, view: dict[str, Any]) -> list[bytes]:
    """A view following a session: the levels, then a delta after a turn, a branch and a turn, a
    label, and a reply to a revision the server never gave."""
    path = tmp_path / f"s{seed}.jsonl"
    random_session(random.Random(seed), path)
    m = SessionManager.open(str(path))
    for n in range(12):  # branch points down the path: many levels
        if n % 3 == 0:
            m.branch(m.get_branch()[-2].id)
        _turn(m, 100 + n)
    replies = [_levels(m, view)]

    def delta() -> None:
        revision = json.loads(replies[-1])["result"]["revision"]
        replies.append(_levels(m, view, since=revision))

    _turn(m, 200)
    delta()
    m.branch(m.get_branch()[-3].id)
    _turn(m, 201)
    delta()
    m.append_label_change(m.get_branch()[-4].id, "here")
    delta()
    replies.append(_levels(m, view, since="no such revision"))
    return replies


# sha256 of the replies of each case, one after another, revisions numbered from 1 (as the server
# wrote them before the levels went out as parts: the bytes are the same)
EXPECTED = {
    (11, "default"): "2489640c9f54e422d972e626b8fcde890cf064d120c00bc67198fe60ea648d18",
    (11, "no-tools"): "e412f7f1ec0317412bfa55094ee8924f591b10ee21fbd6892e8ba2188d777d56",
    (11, "all"): "2a8da054dd8f7b3f617c498cf8f7c95e5e967ff4c12331824109a4fc72863ad7",
    (23, "default"): "c7cd4635e74f4d32520e6aad1160c30f19bb385d8d2a4b2b224bf933cef964c8",
    (23, "no-tools"): "0c4ae378786628de4dd110bfa0b57960ee7fd6496d3b24c1d96a42cc13105ca3",
    (23, "all"): "03b04a99d7d4cc1a289946e88f0df19706cfa345fbe87c981ed8928a912ddfaa",
}
VIEWS = {
    "default": {"filter": "default"},
    "no-tools": {"filter": "no-tools", "search": "n"},
    "all": {"filter": "all", "activeBranchFirst": True},
}


@pytest.mark.parametrize(("seed", "view"), EXPECTED)
def test_a_levels_reply_and_its_deltas_say_what_they_said(
    tmp_path: Path, fixed_ids: None, seed: int, view: str
) -> None:
    replies = _replies(tmp_path, seed, VIEWS[view])
    result = [json.loads(reply)["result"] for reply in replies]
    assert "keptLevels" in result[1] and "keptLevels" in result[3] and result[-1]["reload"] is True
    assert hashlib.sha256(b"\n".join(replies)).hexdigest() == EXPECTED[seed, view]


def test_a_levels_reply_is_given_to_the_connection_as_its_parts(tmp_path: Path, fixed_ids: None) -> None:
    """The levels (kept by the view's shape for the next reply) are parts of the reply as they are,
    and the frame is their concatenation."""
    path = tmp_path / "s.jsonl"
    random_session(random.Random(11), path)
    m = SessionManager.open(str(path))
    _turn(m, 1)
    params = P.parse(
        {"session": "s", "levels": True, "aroundId": m.get_leaf_id(), "limit": 4}, P.GetTreeParams
    )
    reply = methods_read._tree_reply(m, params)
    assert isinstance(reply, RawParts)
    again = methods_read._tree_reply(m, params)  # the levels as encoded before: the same objects
    assert isinstance(again, RawParts)
    kept = [part for part in reply.parts if len(part) > 1 and bytes(part).startswith(b'{"kind":')]
    assert kept and all(any(part is other for other in again.parts) for part in kept)
    assert _frame_body(reply) == b'{"jsonrpc":"2.0","id":7,"result":' + bytes(reply) + b"}"


def test_a_reply_encoded_already_goes_to_the_connection_as_it_is() -> None:
    raw = msgspec.Raw(b'{"a":1}')
    parts = RawParts([b'{"a":', b"1}"])
    assert encoded_reply(raw) is raw and encoded_reply(parts) is parts  # (not copied once more)
    assert bytes(encoded_reply({"a": 1})) == b'{"a":1}'
    assert _frame_body(parts) == b'{"jsonrpc":"2.0","id":7,"result":{"a":1}}'
