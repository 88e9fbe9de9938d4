"""Sessions as older pis wrote them, made from the conformance kit's sessions written by pi."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from pi_session_server.cli import main
from pi_session_server.format.jsjson import dumps_bytes
from pi_session_server.session import file_load, loader
from pi_session_server.session.manager import SessionManager
from pi_session_server.session.tree import TreeNode

# the conformance kit's sessions written by pi, committed with its vectors
KIT_FIXTURES = Path(__file__).resolve().parent / "conformance" / "vectors" / "fixtures"


def index_setting(indexed: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> bool | Path:
    """A test's ``index`` argument to an open: none, or a directory of its own in ``tmp_path``
    with every file indexed, whatever its size (an ``index`` fixture's, param False or True)."""
    if not indexed:
        return False
    monkeypatch.setenv("PI_SESSION_INDEX_MIN_SIZE", "0")
    return tmp_path / "index"


def read_as_large(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file is read as a large one: a read-only open of a version 1 file is then lazy."""
    monkeypatch.setattr(loader, "KEEP_BYTES_LIMIT", 0)


def as_version_2(data: bytes) -> bytes:
    """A version 3 session as pi's version 2 held it: the header's version 2, and every other user
    message a hook's (``hookMessage``, the role version 3 calls ``custom``). Its lines are changed
    as text: the other bytes stay as pi wrote them (a line too deep for ``json``, too)."""
    out = []
    users = 0
    for line in data.splitlines(keepends=True):
        if line.startswith(b'{"type":"session"'):
            line = line.replace(b'"version":3', b'"version":2', 1)
        elif b'"message":{"role":"user"' in line:
            users += 1
            if users % 2 == 0:
                hook = b'"message":{"role":"hookMessage","customType":"hook","display":true'
                line = line.replace(b'"message":{"role":"user"', hook, 1)
        out.append(line)
    return b"".join(out)


def held_open(path: Path, index: bool | Path) -> SessionManager:
    """The session of ``path`` opened read-only holding its migrated values (a small file's open)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(loader, "KEEP_BYTES_LIMIT", 1 << 62)
        return SessionManager.open(str(path), read_only=True, index=index)


def tree_rows(nodes: list[TreeNode], encode: Callable[[Any], bytes] = dumps_bytes) -> Iterator[Any]:
    stack = list(reversed(nodes))
    while stack:
        node = stack.pop()
        yield encode(node.entry.value), node.label, node.label_timestamp, len(node.children)
        stack.extend(reversed(node.children))


class EncodedOnce:
    """``dumps_bytes`` of a session's values, each value remembered encoded once: met again (the
    same object: an entry's value reappears in the tree and the branch, its message in the context
    and the projection) its text is reused, written into a container that holds it through a
    stand-in string replaced afterwards. The text is ``dumps_bytes``'s, byte for byte; a line
    nested deeper than msgspec encodes takes the exact encoder, seconds each time it is encoded."""

    # containers holding a remembered value lie this close to the top (the projection's entries,
    # their source entries and messages): deeper ones are left as they are, to the encoder alone
    STAND_IN_DEPTH = 4

    def __init__(self) -> None:
        self._texts: dict[int, tuple[Any, bytes]] = {}  # (the value is held: its id stays its own)
        self._mark = uuid.uuid4().hex
        self._stand_in = re.compile(rb'"stand-in-%s-(\d+)"' % self._mark.encode())

    def remember(self, value: Any, depth: int = STAND_IN_DEPTH) -> bytes:
        """The text of ``value``, reused wherever ``value`` is met again (``depth``: as deep as a
        remembered value may lie in it; each container down to it is copied)."""
        text = self(value, depth)
        self._texts[id(value)] = (value, text)
        return text

    def __call__(self, value: Any, depth: int = STAND_IN_DEPTH) -> bytes:
        known = self._texts.get(id(value))
        if known is not None and known[0] is value:
            return known[1]
        texts: list[bytes] = []
        text = dumps_bytes(self._with_stand_ins(value, texts, depth))
        if not texts:
            return text
        # (one pass over the text: a replace for each stand-in would be quadratic)
        return self._stand_in.sub(lambda found: texts[int(found[1])], text)

    def _with_stand_ins(self, value: Any, texts: list[bytes], depth: int) -> Any:
        """``value`` with each remembered value in it, down to ``depth``, a stand-in string naming
        its text in ``texts`` (the containers on the way copied; nothing else changes, key order
        included)."""
        known = self._texts.get(id(value))
        if known is not None and known[0] is value:
            texts.append(known[1])
            return f"stand-in-{self._mark}-{len(texts) - 1}"
        if depth == 0:
            return value
        if isinstance(value, Mapping):  # (an entry is one: encoded as a dict of its items)
            return {k: self._with_stand_ins(v, texts, depth - 1) for k, v in value.items()}
        if type(value) is list:
            return [self._with_stand_ins(v, texts, depth - 1) for v in value]
        return value


def public_results(session: SessionManager) -> dict[str, Any]:
    """What the session gives, its values as JSON text (a line may be nested deeper than Python
    compares)."""
    entries = session.get_entries()
    values = [e.value for e in entries]  # (read once: a lazy entry's is read again at each ask)
    encode = EncodedOnce()
    for value in values:  # (a message holds no other remembered value; an entry, its message)
        if isinstance(value, dict) and "message" in value:
            encode.remember(value["message"], depth=0)
    return {
        "header": dumps_bytes(session.get_header()),
        "id": session.get_session_id(),
        "entries": [
            (encode.remember(v, depth=1), e.line, e.type, e.id, e.parent_id, e.role)
            for e, v in zip(entries, values, strict=True)
        ],
        "tree": list(tree_rows(session.get_tree(), encode)),
        "leaf": session.get_leaf_id(),
        "branch": [encode(e.value) for e in session.get_branch()],
        "context": encode(session.build_session_context()),
        "projection": encode(session.build_session_projection()),
        "labels": [(session.get_label(e.id), session.get_label_timestamp(e.id)) for e in entries],
        "children": [[c.id for c in session.get_children(e.id)] for e in entries],
        "name": session.get_session_name(),
        "problems": [(p.line, p.kind, p.offset, p.length) for p in session.problems],
        "open_last_line": session.open_last_line(),
        "make_writable": session.make_writable(),  # (False: the migration is still to write)
    }


def cli_output(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    code = main(list(args))
    out = capsys.readouterr().out
    assert code in (0, None), out
    return out


def assert_commands_print_as_held(
    path: Path, index: bool | Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``tree``, ``context --json`` and ``stats --json`` of the older file ``path`` print, read
    lazily (twice: the second run reads the index the first one kept, when there is one), what they
    print of the file's values held, and leave the file as it was."""
    data = path.read_bytes()
    flags = [] if index else ["--no-index"]
    if index:
        monkeypatch.setenv("PI_SESSION_INDEX_DIR", str(index))
    commands = [
        ["tree", *flags, str(path)],
        ["context", "--json", *flags, str(path)],
        ["stats", "--json", *flags, str(path)],
    ]
    with monkeypatch.context() as patch:
        patch.setattr(loader, "KEEP_BYTES_LIMIT", 1 << 62)
        held = [cli_output(capsys, *command) for command in commands]
    for _ in range(2):
        with monkeypatch.context() as patch:
            patch.setattr(file_load, "load_exact", None)  # lazy: the whole-file read is not made
            assert [cli_output(capsys, *command) for command in commands] == held
    assert path.read_bytes() == data
