"""A compaction's ``firstKeptEntryId`` on its path (PI034): the tree's ancestor test against a plain
walk up the path, on trees with deep paths, branches, duplicate ids and parent cycles, as built at
once and after edits."""

from __future__ import annotations

import random

import builders as S

from pi_session_server.analysis import codes
from pi_session_server.analysis import lines as L
from pi_session_server.analysis.document import SessionDocument
from pi_session_server.analysis.lines import LineInfo
from pi_session_server.analysis.tree import TreeIndex
from pi_session_server.format.jsvalue import strict_equal


def _kept_on_path(tree: TreeIndex, c: LineInfo) -> bool:
    """What pi does: walk up from the compaction's parent, stopping before an entry walked already."""
    if strict_equal(c.ref, c.id):
        return True
    seen: set[LineInfo] = set()
    x = tree.parent(c)
    while x is not None and x not in seen and x is not c:
        if strict_equal(x.id, c.ref):
            return True
        seen.add(x)
        x = tree.parent(x)
    return False


def _check(doc: SessionDocument) -> int:
    """Compare every compaction's PI034 with the plain walk; how many were reported."""
    tree = doc.tree
    reported = 0
    for info in doc.lines:
        if info.kind != L.ENTRY or info.etype != "compaction" or not isinstance(info.ref, str):
            continue
        flagged = any(p.code == codes.FIRST_KEPT_NOT_ON_PATH for p in tree.cross.get(info, ()))
        assert flagged == (not _kept_on_path(tree, info)), info
        reported += flagged
    return reported


def _random_lines(rng: random.Random, count: int) -> list[str]:
    ids = [f"e{i}" for i in range(count * 3 // 4)]  # fewer ids than entries: duplicates
    lines = [S.header()]
    previous: str | None = None
    for _ in range(count):
        entry_id = rng.choice(ids)
        roll = rng.random()
        if roll < 0.75:
            parent = previous  # a long path, deeper than the ancestors looked at directly
        elif roll < 0.9:
            parent = rng.choice(ids)  # a branch, or a parent further down the file (cycles)
        else:
            parent = None
        if rng.random() < 0.3:
            lines.append(S.compaction(entry_id, parent, rng.choice([*ids, "nowhere"])))
        else:
            lines.append(S.user(entry_id, parent))
        previous = entry_id
    return lines


def test_first_kept_on_path_is_what_a_walk_up_finds() -> None:
    rng = random.Random(20261202)
    reported = 0
    for round_no in range(60):
        lines = _random_lines(rng, rng.choice([10, 40, 120]))
        text = "\n".join(lines) + "\n"
        for quick in (False, True):
            doc = SessionDocument(text, quick=quick)
            reported += _check(doc)
        if round_no % 3:
            continue
        doc = SessionDocument(text)
        for _ in range(8):  # edits: lines inserted, replaced and removed, the tree updated in place
            at = rng.randrange(1, doc.line_count)
            new = rng.choice(_random_lines(rng, 30)[1:])
            if rng.random() < 0.5:
                doc.apply_edit(at, 0, at, 0, new + "\n")
            else:
                doc.apply_edit(at, 0, at + 1, 0, "" if rng.random() < 0.5 else new + "\n")
            _check(doc)
    assert reported > 0  # the trees made both cases


def test_first_kept_far_above_on_a_deep_path_and_on_another_branch() -> None:
    lines = [S.header(), S.user("root", None)]
    parent = "root"
    for i in range(60):
        lines.append(S.user(f"a{i}", parent))
        parent = f"a{i}"
    lines.append(S.user("side", "a3"))  # another branch, near the top
    lines.append(S.compaction("c1", parent, "a1"))  # far above, on the path
    lines.append(S.compaction("c2", "c1", "side"))  # on another branch
    lines.append(S.compaction("c3", "c2", "nowhere"))  # names no entry
    lines.append(S.compaction("c4", "c3", "c1"))  # its parent
    doc = SessionDocument("\n".join(lines) + "\n")
    found = {(doc.lines[i.line].id, p.message.split(":")[0]) for i, ps in doc.tree.cross.items() for p in ps}
    assert {entry for entry, _ in found} == {"c2", "c3"}
    assert _check(doc) == 2
