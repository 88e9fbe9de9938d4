"""The rows ``pi-session tree`` draws without ids or a row width (commands/tree_draw.plain_rows, fewer
calls for a printable ASCII preview without a label) are those the general row gives, on any text:
ASCII, wide characters, control characters, lone surrogates, combining marks, labels, ids that are
not strings, every width, in every encoding and with either set of glyphs."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pi_session_server.commands.tree_draw import row_drawer
from pi_session_server.format.jsvalue import ABSENT
from pi_session_server.render.glyphs import ASCII, UNICODE
from pi_session_server.session.tree import TreeNode

# pieces texts are made of: what most previews are, characters of other widths, and each kind of
# character escaped (control characters, a lone surrogate)
_DRAWN = ["user: hello", "a", " ", "…", "界", "e\u0301", "🙂", "é"]
_ESCAPED = ["\x00", "\x1b[31m", "\n", "\t", "\x7f", "\ud800"]
_PIECES = st.sampled_from(_DRAWN + _ESCAPED)
_TEXTS = st.lists(_PIECES, max_size=12).map("".join) | st.text(max_size=30)
_LABELS = st.just(ABSENT) | st.none() | st.sampled_from(["", "mark", "界界", "\x1b"]) | st.text(max_size=8)
_IDS = st.sampled_from(["a1", 1, 1.0, None, True, ABSENT, "界"])


def _rows(preview: str, width: int, glyphs: Any, encoding: str | None, *, leaf: Any, general: bool) -> Any:
    """A row drawer over one preview (an entry's, asked once), the plain one or the general one (a
    row width given, but no room asked: the row as drawn without a width)."""
    asked: list[Any] = []

    def preview_of(entry: Any) -> str:
        asked.append(entry)
        return preview

    row = row_drawer(preview_of, width, glyphs, encoding, leaf, False, 10**6 if general else None)
    return row, asked


@settings(max_examples=400, deadline=None)
@given(
    preview=_TEXTS,
    label=_LABELS,
    entry_id=_IDS,
    width=st.integers(min_value=1, max_value=40),
    glyphs=st.sampled_from([UNICODE, ASCII]),
    encoding=st.sampled_from([None, "utf-8", "ascii", "latin-1"]),
    is_leaf=st.booleans(),
)
def test_plain_rows_are_the_general_rows(
    preview: str, label: Any, entry_id: Any, width: int, glyphs: Any, encoding: str | None, is_leaf: bool
) -> None:
    entry = SimpleNamespace(id=entry_id, type="message")
    node = TreeNode(entry, [], label)
    leaf = entry_id if is_leaf else "another"
    plain, plain_asked = _rows(preview, width, glyphs, encoding, leaf=leaf, general=False)
    general, general_asked = _rows(preview, width, glyphs, encoding, leaf=leaf, general=True)
    assert plain(node) == general(node, None)
    assert plain_asked == general_asked == [entry]  # each preview asked for once (it may be let go then)


def test_a_printable_ascii_preview_is_cut_at_the_width_with_the_ellipsis() -> None:
    node = TreeNode(SimpleNamespace(id="a", type="message"), [], ABSENT)
    for glyphs, cut in ((UNICODE, "user: hel…"), (ASCII, "user: h...")):
        row, _ = _rows("user: hello", 10, glyphs, None, leaf=None, general=False)
        assert row(node) == ("a", cut)
        row, _ = _rows("user: hello", 11, glyphs, None, leaf=None, general=False)
        assert row(node) == ("a", "user: hello")
    row, _ = _rows("user: hello", 2, ASCII, None, leaf=None, general=False)
    assert row(node) == ("a", "..")  # (an ellipsis wider than the width: cut to it)
