"""pi/getStats counts branch points and leaves as entries come (session_stats.SessionTotals), in
one pass, and again for each run of entries pi appends: the counts of a session read in any runs
are those of its tree, and a session whose counts could disagree with getTree (an id twice or
missing, a parent written after its child, an entry its own parent) is marked irregular, so that
its tree is asked for instead."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pi_session_server.format.jsvalue import ABSENT
from pi_session_server.server.session_stats import SessionTotals
from pi_session_server.session.envelopes import Envelopes

IDS = st.sampled_from(["a", "b", "c", "d", "e", "f", "g", "h", "", None, 7])
PARENTS = st.one_of(IDS, st.just(ABSENT))


def _envelopes(pairs: list[tuple[Any, Any]]) -> Envelopes:
    n = len(pairs)
    return Envelopes(
        0, ["custom"] * n, [i for i, _ in pairs], [p for _, p in pairs], [ABSENT] * n, [None] * n, [-1] * n
    )


def _counted(pairs: list[tuple[Any, Any]], cuts: list[int]) -> SessionTotals:
    totals = SessionTotals()
    start = 0
    for cut in [*sorted(cuts), len(pairs)]:
        totals.add_columns(_envelopes(pairs[start:cut]), [])
        start = cut
    return totals


def _expected(pairs: list[tuple[Any, Any]]) -> tuple[bool, int, int]:
    """(irregular, branch points, leaves), worked out from the whole list at once."""
    ids = [i for i, _ in pairs]
    usable = [i for i in ids if (isinstance(i, str) and i) or i == 7]
    irregular = len(usable) != len(ids) or len(set(usable)) != len(usable)
    seen: set[Any] = set()
    children = dict.fromkeys(usable, 0)
    for entry_id, parent in pairs:
        if parent == entry_id and parent not in (None, "", ABSENT):
            irregular = True
        elif parent not in (None, "", ABSENT):
            if parent in children and parent not in seen:
                irregular = True  # written after its child
            elif parent in seen:
                children[parent] += 1
        seen.add(entry_id)
    branch_points = sum(1 for count in children.values() if count > 1)
    leaves = sum(1 for count in children.values() if count == 0)
    return irregular, branch_points, leaves


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(IDS, PARENTS), max_size=14), st.lists(st.integers(0, 14), max_size=4))
def test_the_counts_of_runs_are_those_of_the_whole_session(pairs: list[tuple[Any, Any]], cuts: list[int]):
    cuts = [min(cut, len(pairs)) for cut in cuts]
    totals = _counted(pairs, cuts)
    irregular, branch_points, leaves = _expected(pairs)
    assert totals.irregular == irregular
    if not irregular:
        assert (totals.branch_points, totals.leaves) == (branch_points, leaves)
        whole = _counted(pairs, [])
        assert (whole.branch_points, whole.leaves) == (branch_points, leaves)


def test_a_parent_key_is_not_held_beside_the_entry_it_names():
    """A session of GBs has hundreds of thousands of entries: the tree is counted in one map, by
    each entry's own id (not a map by parent key beside a set of the ids seen)."""
    ids = ["".join(["e", str(n)]) for n in range(50)]
    parents = [None] + ["".join(["e", str(n)]) for n in range(49)]  # equal strings, other objects
    totals = SessionTotals()
    totals.add_columns(Envelopes(0, ["custom"] * 50, ids, parents, [ABSENT] * 50, [None] * 50, [-1] * 50), [])
    kept = {id(key) for key in totals.children}
    assert kept == {id(key) for key in ids}
    assert not any(id(parent) in kept for parent in parents[1:])
    assert (totals.branch_points, totals.leaves, totals.irregular) == (0, 1, False)
