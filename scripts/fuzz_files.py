#!/usr/bin/env python3
"""Damaged-file scenarios for the conformance suite: real and generated sessions, broken at random.

    python3 scripts/fuzz_files.py --seed N --count K --out DIR [--sources DIR ...]

gen.py drives the API on well-formed files; pi's users open files broken in other ways (a crash
mid-line, two writers, hand edits, a BOM or CRLF from an editor). This takes session files (the
real ones of the shared kit's fixtures, plus the lines of every file in the ``final`` sections
of ``*.expected.json`` documents under ``--sources``), applies one to three random damages per
scenario (lines dropped, doubled, swapped, glued together, cut short, blank or non-object lines
inserted, a byte changed, parent links pointed elsewhere, at themselves or nowhere, the header
doubled or dropped, its version changed, CRLF, a BOM, no final newline), and writes scenarios
that open the result and look at it from every side: entries, tree, branch, context, labels,
names, the listing, an append and what it wrote, a reopen. Deterministic for a given seed and
sources. The expected documents come from the oracle (``node run.mjs --batch DIR --rules ours``).
"""

from __future__ import annotations

import argparse
import base64
import json
import random
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "conformance" / "vectors" / "fixtures" / "real"
MAX_SOURCE_LINES = 80  # of a big real file, a window of this many lines (after its header)

# Placeholders of the oracle's normalization, made concrete again.
PLACEHOLDERS = {"<TS>": "2025-03-01T00:00:00.000Z", "<W>": "/w", "<FTS>": "2025-03-01T00-00-00-000Z"}
_PLACEHOLDER = re.compile("|".join(re.escape(p) for p in PLACEHOLDERS))


def fixture_sources() -> list[list[str]]:
    sources = []
    for path in sorted(FIXTURES.glob("*.jsonl")):
        lines = path.read_text(encoding="utf-8").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if len(lines) > MAX_SOURCE_LINES:
            lines = lines[:MAX_SOURCE_LINES]
        sources.append(lines)
    return sources


def final_file_sources(directory: Path) -> list[list[str]]:
    sources = []
    for doc_path in sorted(directory.glob("*.expected.json")):
        doc = json.loads(doc_path.read_text(encoding="utf-8"))
        for dumped in (doc.get("final") or {}).get("files") or []:
            raws = [line.get("raw") for line in dumped.get("lines") or []]
            if len(raws) >= 2 and all(isinstance(r, str) for r in raws):
                sources.append([_PLACEHOLDER.sub(lambda m: PLACEHOLDERS[m.group()], r) for r in raws])
    return sources


def _ids(lines: list[str]) -> list[str]:
    found = []
    for line in lines:
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and isinstance(value.get("id"), str):
            found.append(value["id"])
    return found


def _relink(rng: random.Random, lines: list[str], how: str) -> None:
    """Point one entry's parentId at another entry, at itself, or at nothing known."""
    candidates = [i for i, line in enumerate(lines) if '"parentId"' in line]
    if not candidates:
        return
    at = rng.choice(candidates)
    try:
        value = json.loads(lines[at])
    except ValueError:
        return
    if not isinstance(value, dict):
        return
    ids = _ids(lines)
    if how == "self":
        value["parentId"] = value.get("id")
    elif how == "other" and ids:
        value["parentId"] = rng.choice(ids)
    elif how == "later" and ids:
        value["parentId"] = ids[-1]
    elif how == "missing":
        value["parentId"] = "gone" + str(rng.randrange(100))
    else:
        value["parentId"] = None
    lines[at] = json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def damage(rng: random.Random, lines: list[str]) -> tuple[list[str], dict]:
    """One random damage; returns the lines and how the file is to be written."""
    lines = list(lines)
    write = {"eol": "\n", "bom": False, "trailingNewline": True, "cut": None}
    n = len(lines)
    kind = rng.choice(
        [
            "drop", "double", "swap", "glue", "cut_line", "blank", "non_object", "byte",
            "relink_self", "relink_other", "relink_later", "relink_missing", "relink_null",
            "header_twice", "header_gone", "version", "crlf", "bom", "no_newline", "cut_file",
            "reorder",
        ]
    )  # fmt: skip
    at = rng.randrange(n) if n else 0
    if kind in _WRITE_DAMAGE:
        _damage_write(rng, kind, write)
    elif kind in _MOVE_DAMAGE:
        _move_lines(rng, kind, lines, at)
    else:
        _corrupt_lines(rng, kind, lines, at)
    return lines, write


_WRITE_DAMAGE = frozenset({"crlf", "bom", "no_newline", "cut_file"})
_MOVE_DAMAGE = frozenset({"drop", "double", "swap", "reorder", "glue", "header_twice", "header_gone"})


def _move_lines(rng: random.Random, kind: str, lines: list[str], at: int) -> None:
    """Lines dropped, doubled, swapped, shuffled or glued together."""
    n = len(lines)
    if kind == "drop" and n > 1:
        del lines[rng.randrange(1, n)]
    elif kind == "double" and n:
        lines.insert(at, lines[at])
    elif kind == "swap" and n > 2:
        a, b = rng.sample(range(1, n), 2)
        lines[a], lines[b] = lines[b], lines[a]
    elif kind == "reorder" and n > 3:
        body = lines[1:]
        rng.shuffle(body)
        lines[1:] = body
    elif kind == "glue" and n > 1:
        a = rng.randrange(n - 1)
        lines[a : a + 2] = [lines[a] + lines[a + 1]]
    elif kind == "header_twice" and n:
        lines.insert(rng.randrange(1, n + 1), lines[0])
    elif kind == "header_gone" and n:
        del lines[0]


def _corrupt_lines(rng: random.Random, kind: str, lines: list[str], at: int) -> None:
    """A line cut, blank, not an object, with a wrong byte, relinked, or a header's version changed."""
    n = len(lines)
    if kind == "cut_line" and n and lines[at]:
        lines[at] = lines[at][: rng.randrange(len(lines[at]))]
    elif kind == "blank":
        lines.insert(at, rng.choice(["", "   ", "\t", "\u00a0", "\ufeff", "\r"]))
    elif kind == "non_object":
        lines.insert(at, rng.choice(["null", "0", "false", "1", '"text"', "[]", "[1,2]", "true", "{}", "-0"]))
    elif kind == "byte" and n and lines[at]:
        pos = rng.randrange(len(lines[at]))
        lines[at] = (
            lines[at][:pos]
            + rng.choice(['"', "}", "{", ",", "\\", "x", "\u2028", "é"])
            + lines[at][pos + 1 :]
        )
    elif kind.startswith("relink_"):
        _relink(rng, lines, kind.removeprefix("relink_"))
    elif kind == "version" and n:
        _change_version(rng, lines)


def _change_version(rng: random.Random, lines: list[str]) -> None:
    try:
        header = json.loads(lines[0])
    except ValueError:
        header = None
    if isinstance(header, dict):
        version = rng.choice([None, 1, 2, 3, 4, "3", 0])
        if version is None:
            header.pop("version", None)
        else:
            header["version"] = version
        lines[0] = json.dumps(header, ensure_ascii=False, separators=(",", ":"))


def _damage_write(rng: random.Random, kind: str, write: dict) -> None:
    """How the file is written: CRLF, a BOM, no final newline, or cut short."""
    if kind == "crlf":
        write["eol"] = "\r\n"
    elif kind == "bom":
        write["bom"] = True
    elif kind == "no_newline":
        write["trailingNewline"] = False
    elif kind == "cut_file":
        write["cut"] = rng.random()


def file_bytes(lines: list[str], write: dict) -> bytes:
    eol = write["eol"]
    text = eol.join(lines) + (eol if write["trailingNewline"] and lines else "")
    data = (b"\xef\xbb\xbf" if write["bom"] else b"") + text.encode("utf-8")
    if write["cut"] is not None and data:
        data = data[: max(1, int(len(data) * write["cut"]))]
    return data


def scenario(rng: random.Random, source: list[str], name: str) -> dict:
    lines, write = list(source), {"eol": "\n", "bom": False, "trailingNewline": True, "cut": None}
    for _ in range(rng.choice([1, 1, 2, 3])):
        lines, more = damage(rng, lines)
        write = {key: more[key] if more[key] != default else write[key] for key, default in
                 (("eol", "\n"), ("bom", False), ("trailingNewline", True), ("cut", None))}  # fmt: skip
    data = file_bytes(lines, write)
    ids = _ids(lines)
    some_id = rng.choice(ids) if ids else "none"
    ops: list[dict] = [
        {"op": "info"},
        {"op": "getEntries", "view": rng.choice(["full", "ids", "types"])},
        {"op": "getTree", "view": "flat"},
        {"op": "getBranch", "view": "ids"},
        {"op": "buildSessionContext", "view": rng.choice(["full", "roles"])},
        {"op": "getSessionName"},
        {"op": "getLabel", "args": [some_id]},
        {"op": "getChildren", "args": [some_id], "view": "ids"},
        {"op": "getBranch", "args": [some_id], "view": "ids"},
        {"op": "fn.buildSessionContext", "args": [{"$entries": True}, some_id], "view": "roles"},
        {"op": "list", "args": [{"$path": "proj"}, {"$path": "sessions"}], "pick": [
            "id", "cwd", "name", "parentSessionPath", "messageCount", "firstMessage"]},
    ]  # fmt: skip
    if rng.random() < 0.5:
        ops += [
            {"op": "branch", "args": [some_id]},
            {"op": "buildSessionContext", "view": "roles"},
        ]
    if rng.random() < 0.6:
        ops += [
            {"op": "appendMessage", "args": [{"role": "user", "content": "after damage", "timestamp": 1}]},
            {"op": "appendLabelChange", "args": [some_id, "seen"]},
            {"op": "readFile", "parsed": False},
            {"op": "reopen"},
            {"op": "snapshot"},
        ]
    if rng.random() < 0.2:
        ops.append({"op": "createBranchedSession", "args": [some_id]})
        ops.append({"op": "readFile", "parsed": False})
    return {
        "description": f"fuzz_files: damaged session file ({name})",
        "files": {"sessions/s.jsonl": {"base64": base64.b64encode(data).decode("ascii")}},
        "start": {"op": "open", "args": [{"$path": "sessions/s.jsonl"}, {"$path": "sessions"}]},
        "ops": ops,
        "final": {"files": "changed"},
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--out", required=True)
    parser.add_argument("--sources", action="append", default=[], help="dirs of *.expected.json documents")
    args = parser.parse_args()
    sources = fixture_sources()
    for directory in args.sources:
        sources += final_file_sources(Path(directory))
    rng = random.Random(args.seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for index in range(args.count):
        source = rng.choice(sources)
        doc = scenario(rng, source, f"seed {args.seed} #{index}")
        path = out / f"fuzz-{args.seed}-{index:03d}.scenario.json"
        path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{args.count} scenarios from {len(sources)} source files in {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
