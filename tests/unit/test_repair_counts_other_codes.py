"""``repair`` counts the problems of the fixable codes not chosen ("repairs of other codes")
without building a repair for each of those that always have one (an orphan, an entry of a
parent cycle, a tool result without its call): a damaged file's second round has an orphan on
every line its split left. What it says and writes is what building every repair gave, on the
conformance kit's sessions damaged at random."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest.mock import Mock

import builders as S
import pytest

from pi_session_server.analysis import autofix, codes, repairs
from pi_session_server.analysis.autofix import FIXABLE_CODES, SAFE_CODES, plan_repairs
from pi_session_server.analysis.document import SessionDocument
from pi_session_server.cli import main

KIT = Path(__file__).resolve().parents[1] / "conformance" / "vectors" / "fixtures"
# the kit's sessions small enough to damage and repair many times
KIT_SESSIONS = sorted(p for p in KIT.glob("*/*.jsonl") if p.stat().st_size < 300_000)


def _every_repair_built(monkeypatch: pytest.MonkeyPatch) -> None:
    """The plan as it was made before: every problem's repairs built, those of other codes too."""
    counting = autofix.repairs_counting
    monkeypatch.setattr(
        autofix,
        "repairs_counting",
        lambda doc, first, last, _count_only, *rest: counting(doc, first, last, frozenset(), *rest),
    )


def _damaged(lines: list[bytes], rng: random.Random) -> list[bytes]:
    """``lines`` with damage of every kind here and there: lines lost (orphans, tool results without
    their call), glued to the next (whole or cut off), repeated, turned to NUL bytes, and parents
    pointing at a later entry (cycles)."""
    out: list[bytes] = []
    ids = [i for line in lines if isinstance(i := _value(line).get("id"), str)]
    for line in lines:
        roll = rng.random()
        if roll < 0.08:
            continue
        if roll < 0.16 and out:
            out[-1] += line
            continue
        if roll < 0.22:
            out.append(line[: rng.randint(1, max(1, len(line) - 1))] + line)
            continue
        if roll < 0.27:
            out.extend([line, line])
            continue
        if roll < 0.29:
            out.append(b"\0" * 12)
            continue
        if roll < 0.36:
            value = _value(line)
            if "parentId" in value and ids:
                value["parentId"] = rng.choice(ids)
                out.append(json.dumps(value, ensure_ascii=False).encode())
                continue
        out.append(line)
    return out


def _value(line: bytes) -> dict[str, Any]:
    """The object on ``line`` (empty for what is none, or is no JSON ``json`` reads)."""
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def _said_and_written(path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Iterator[Any]:
    main(["repair", str(path)])  # the report of what would be repaired
    yield capsys.readouterr()
    out = tmp_path / "repaired.jsonl"
    out.unlink(missing_ok=True)
    for chosen in ([], ["--all"]):
        main(["repair", *chosen, "-o", str(out), str(path)])
        yield capsys.readouterr(), out.read_bytes() if out.exists() else None
        out.unlink(missing_ok=True)


def _plans(path: Path) -> Iterator[Any]:
    doc = SessionDocument(path.read_bytes())
    for chosen in (
        SAFE_CODES,
        FIXABLE_CODES,
        {codes.GLUED_LINES},
        {codes.DANGLING_PARENT},
        {codes.PARENT_CYCLE},
    ):
        plan = plan_repairs(doc, chosen, str(path))
        yield (
            plan.others,
            [
                (s.start, s.end, s.data if isinstance(s.data, bytes) else b"".join(s.data))
                for s in plan.splices()
            ],
            [p.repair.key for p in plan.applied],
            [r.key for r in plan.deferred],
        )


def _as_before(
    path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # (a header made up gets a fresh id each time)
    monkeypatch.setattr(repairs, "uuid7", lambda: "01a24d37-50f1-7004-a3ba-8bbc032caa75")
    said = list(_said_and_written(path, tmp_path, capsys))
    plans = list(_plans(path))
    with monkeypatch.context() as before:
        _every_repair_built(before)
        assert said == list(_said_and_written(path, tmp_path, capsys))
        assert plans == list(_plans(path))


@pytest.mark.parametrize("seed", range(16))
def test_repair_says_and_writes_what_building_every_repair_gave(
    seed: int, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(seed)
    kit = rng.choice(KIT_SESSIONS)
    lines = [line for line in kit.read_bytes().split(b"\n") if line.strip()]
    path = tmp_path / kit.name
    path.write_bytes(b"\n".join(_damaged(lines, rng)) + b"\n")
    _as_before(path, tmp_path, capsys, monkeypatch)


@pytest.mark.parametrize("kit", KIT_SESSIONS, ids=lambda p: p.stem)
def test_the_kit_s_sessions_are_planned_as_before(
    kit: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / kit.name
    path.write_bytes(kit.read_bytes())
    _as_before(path, tmp_path, capsys, monkeypatch)


def _split_glued_file(count: int) -> SessionDocument:
    """A second round's file: each cut-off line the split left on its own line, then an entry that
    names it as its parent (an orphan), ``count`` times; and some tool results without their call
    and a parent cycle."""
    lines = [S.header()]
    parent = None
    for n in range(count):
        cut = S.user(f"lost{n:05d}", parent, "hello")
        lines += [cut[: len(cut) // 2], S.assistant(f"kept{n:05d}", f"lost{n:05d}", "hi")]
        parent = f"kept{n:05d}"
    lines += [S.tool_result(f"res{n:05d}", parent, f"call{n}") for n in range(3)]
    lines += [S.user("loopa", "loopb", "a"), S.user("loopb", "loopa", "b")]
    return SessionDocument(("\n".join(lines) + "\n").encode())


def test_the_repairs_of_other_codes_that_always_have_one_are_counted_not_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    count = 200
    doc = _split_glued_file(count)
    builders = ("_orphan_repairs", "_cycle_repairs", "_orphan_result_repairs")
    for name in builders:
        monkeypatch.setattr(repairs, name, Mock(wraps=getattr(repairs, name)))

    def built() -> list[int]:
        return [getattr(repairs, name).call_count for name in builders]

    plan = plan_repairs(doc, SAFE_CODES)
    assert plan.others == {codes.DANGLING_PARENT: count, codes.ORPHAN_TOOL_RESULT: 3, codes.PARENT_CYCLE: 2}
    assert built() == [0, 0, 0]
    # chosen, they are built: one per problem
    plan = plan_repairs(doc, FIXABLE_CODES)
    assert built() == [count, 2, 3]
    assert not plan.others
