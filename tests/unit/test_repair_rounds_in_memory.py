"""``repair`` without a target plays the rounds ``--in-place`` would make on the file's analysis in
memory (:meth:`SessionDocument.apply_splices`): the lines a round's repairs touch are read again,
the others keep their facts, and nothing is written, not even a copy of the file. The document a
round gives is the one the file written with those repairs gives, and the dry run tells what
``--in-place`` then does, on the conformance kit's sessions damaged at random."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import builders as S
import pytest
from test_repair_command import in_process_args
from test_repair_counts_other_codes import KIT_SESSIONS, _damaged

from pi_session_server.analysis import document as document_module
from pi_session_server.analysis.autofix import FIXABLE_CODES, SAFE_CODES, plan_repairs, spliced
from pi_session_server.analysis.diagnostics import document_diagnostics
from pi_session_server.analysis.document import SessionDocument
from pi_session_server.analysis.lines import LineInfo
from pi_session_server.cli import main
from pi_session_server.commands import repair as repair_command

_FACTS = [name for name in LineInfo.__slots__ if name not in ("raw", "source", "timestamp")]


def _facts(doc: SessionDocument) -> list[Any]:
    """Every line's bytes and facts (problems by what they hold: they compare by identity), and the
    document's diagnostics."""
    lines = [
        (info.raw, repr(info.timestamp), [repr(getattr(info, name)) for name in _FACTS]) for info in doc.lines
    ]
    return [lines, repr(document_diagnostics(doc)), doc.byte_size(), len(doc.headers), len(doc.problem_lines)]


def _damaged_file(seed: int, tmp_path: Path, *, min_lines: int = 0) -> Path:
    """One of the kit's sessions (of ``min_lines`` lines or more) damaged at random."""
    rng = random.Random(seed)
    kit = rng.choice([p for p in KIT_SESSIONS if len(_lines(p)) >= min_lines])
    lines = _lines(kit)
    path = tmp_path / kit.name
    path.write_bytes(b"\n".join(_damaged(lines, rng)) + b"\n")
    return path


def _lines(path: Path) -> list[bytes]:
    return [line for line in path.read_bytes().split(b"\n") if line.strip()]


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("chosen", [SAFE_CODES, FIXABLE_CODES], ids=["safe", "all"])
def test_a_round_s_repairs_applied_give_the_document_of_the_file_they_write(
    seed: int, chosen: frozenset[str], tmp_path: Path
) -> None:
    path = _damaged_file(seed, tmp_path)
    doc = SessionDocument.from_file(str(path))
    written = path  # the file as the last round wrote it (the document's lines read the first)
    for n in range(4):  # rounds on the lines earlier rounds made, as the dry run plays them
        splices = plan_repairs(doc, chosen, str(path)).splices()
        if not splices:
            break
        out = tmp_path / f"round{n + 2}.jsonl"
        with written.open("rb") as f:
            out.write_bytes(b"".join(spliced(f.fileno(), written.stat().st_size, splices)))
        written = out
        doc.apply_splices(splices)
        assert _facts(doc) == _facts(SessionDocument.from_file(str(out)))
        assert doc.data() == out.read_bytes()


@pytest.mark.parametrize("seed", range(6))
def test_an_editor_s_document_takes_splices_as_its_text_would(seed: int, tmp_path: Path) -> None:
    text = _damaged_file(seed, tmp_path).read_bytes()
    doc = SessionDocument(text)
    splices = plan_repairs(doc, FIXABLE_CODES).splices()
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(text)
    with copy.open("rb") as f:
        repaired = b"".join(spliced(f.fileno(), len(text), splices))
    doc.apply_splices(splices)
    assert _facts(doc) == _facts(SessionDocument(repaired))


def _in_place_told_as_a_dry_run(stdout: str) -> list[str]:
    """What --in-place says, worded as the dry run words its last line."""
    return [
        re.sub(
            r"^(\d+ repairs?) made in (.*); problems left: (.*)$",
            r"\2: \1 to make; problems left then: \3; write them with --in-place or --output OUT",
            line,
        )
        for line in stdout.splitlines()
    ]


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("options", [[], ["--all"]], ids=["safe", "all"])
def test_the_dry_run_tells_what_in_place_then_does_on_damaged_files(
    seed: int, options: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _damaged_file(seed, tmp_path, min_lines=20)  # (with repairs to make, in every round)
    content = path.read_bytes()
    main(["repair", *options, str(path)])
    listed = capsys.readouterr().out
    assert path.read_bytes() == content
    main(["repair", "--in-place", "--no-backup", *options, str(path)])
    done = capsys.readouterr().out
    assert " made in " in done
    assert listed.splitlines() == _in_place_told_as_a_dry_run(done)


@pytest.mark.parametrize("target", ["dry-run", "in-place", "output"])
def test_a_later_round_reads_only_the_lines_the_repairs_touch(
    target: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A long session with one glued line: the second round scans the two lines the split makes,
    not the whole file again (the dry run read a copy of the repaired file whole, --in-place the
    file it had written, ``-o OUT`` OUT)."""
    chain = [S.header()]
    parent = None
    for n in range(400):
        chain.append(S.user(f"u{n:04d}", parent, "hello"))
        parent = f"u{n:04d}"
    cut = S.user("lost", parent, "hello")
    chain.append(cut[: len(cut) // 2] + S.user("kept", "lost", "hi"))
    path = tmp_path / "s.jsonl"
    path.write_bytes(("\n".join(chain) + "\n").encode())
    scanned: list[bytes] = []
    scan = document_module.scan_line

    def counted(raw: bytes, *args: Any, **kwargs: Any) -> LineInfo:
        scanned.append(raw)
        return scan(raw, *args, **kwargs)

    monkeypatch.setattr(document_module, "scan_line", counted)
    SessionDocument.from_file(str(path))
    loaded = len(scanned)  # the lines a load of the file scans
    scanned.clear()
    args = in_process_args(path, in_place=target == "in-place")
    if target == "output":
        args.output = str(tmp_path / "out.jsonl")
    assert repair_command.run(args) == 1
    assert "1 repair " in capsys.readouterr().out
    assert len(scanned) == loaded + 2
    assert scanned[loaded:] == [cut[: len(cut) // 2].encode(), S.user("kept", "lost", "hi").encode()]


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("options", [[], ["--all"]], ids=["safe", "all"])
@pytest.mark.parametrize("target", ["in-place", "output"])
def test_a_repair_says_and_writes_what_reading_each_round_s_file_again_gave(
    seed: int,
    options: list[str],
    target: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The file repaired in place, or OUT: what the rounds after the first take from the analysis
    kept in memory is what reading the file each round wrote again gives."""
    path = _damaged_file(seed, tmp_path)
    content = path.read_bytes()
    out = tmp_path / "out.jsonl"
    written, how = (
        (path, ["--in-place", "--no-backup"]) if target == "in-place" else (out, ["--force", "-o", str(out)])
    )

    def repaired() -> tuple[str, bytes]:
        path.write_bytes(content)
        main(["repair", *how, *options, str(path)])
        return capsys.readouterr().out, written.read_bytes()

    kept = repaired()
    monkeypatch.setattr(repair_command, "_as_written", lambda *_: None)  # each round reads its file
    assert kept == repaired()


@pytest.mark.parametrize("target", ["in-place", "output"])
def test_a_file_changed_after_a_round_wrote_it_is_read_again(
    target: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Another program (pi) appends a line to the file repaired in place, or to OUT, after round 1
    wrote it and before round 2 looks at it: round 2 reads the file again, the line appended among
    what it analyses (not the document round 1 kept)."""
    cut = S.user("lost", None, "hello")
    path = tmp_path / "s.jsonl"
    path.write_bytes(
        ("\n".join([S.header(), cut[: len(cut) // 2] + S.user("kept", "lost", "hi")]) + "\n").encode()
    )
    out = tmp_path / "out.jsonl"
    written = path if target == "in-place" else out
    real_round = repair_command._round

    def appended_first(written_path: str, chosen: Any, round_number: int, *args: Any) -> Any:
        if round_number == 2:
            with written.open("ab") as f:
                f.write(b"\0\0\0\n")  # a line of NUL bytes: what round 2 repairs
        return real_round(written_path, chosen, round_number, *args)

    monkeypatch.setattr(repair_command, "_round", appended_first)
    args = in_process_args(path, in_place=target == "in-place")
    if target == "output":
        args.output = str(out)
    assert repair_command.run(args) == 1
    told = capsys.readouterr().out
    assert "round 2, on the file as repaired so far:" in told and ":4: PI001 " in told, told
    assert b"\0" not in written.read_bytes()


def _splices_applied(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The splices each SessionDocument.apply_splices is given from now on, in a list, call by call."""
    applied: list[Any] = []
    apply = SessionDocument.apply_splices
    monkeypatch.setattr(
        SessionDocument, "apply_splices", lambda doc, s: (applied.append(s), apply(doc, s))[1]
    )
    return applied


@pytest.mark.parametrize("target", ["in-place", "output"])
def test_a_migrated_file_is_read_again_by_the_next_round(
    target: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A migration is one repair that rewrites every line: the next round reads the file it wrote
    rather than apply every line of it to the document (and hold them in memory)."""
    chain = [S.header().replace('"version":3', '"version":2')]
    parent = None
    for n in range(20):
        chain.append(S.user(f"u{n:04d}", parent, "hello"))
        parent = f"u{n:04d}"
    path = tmp_path / "s.jsonl"
    path.write_bytes(("\n".join(chain) + "\n").encode())
    applied = _splices_applied(monkeypatch)
    args = in_process_args(path, in_place=target == "in-place")
    args.all = True
    if target == "output":
        args.output = str(tmp_path / "out.jsonl")
    assert repair_command.run(args) == 0
    assert "PI015 Migrate to version 3" in capsys.readouterr().out
    assert applied == []


def test_in_place_reads_a_file_whose_every_line_was_repaired_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A round that repaired most lines (a file glued everywhere) has its file read again by the
    next one rather than applied to the document line by line, which costs more per line than a
    read in the stream; the dry run, which has no file to read, applies them."""
    chain = [S.header()]
    for n in range(20):
        cut = S.user(f"lost{n:02d}", None, "hello")
        chain.append(cut[: len(cut) // 2] + S.user(f"kept{n:02d}", f"lost{n:02d}", "hi"))
    path = tmp_path / "s.jsonl"
    path.write_bytes(("\n".join(chain) + "\n").encode())
    applied = _splices_applied(monkeypatch)
    assert repair_command.run(in_process_args(path)) == 1
    assert len(applied) == 1
    assert repair_command.run(in_process_args(path, in_place=True)) == 1
    assert len(applied) == 1 and "20 repairs made in" in capsys.readouterr().out
