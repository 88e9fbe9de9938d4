"""Random sessions as pi's version 1 and version 2 wrote them, and the paths that migrate them
compared: each path's streamed way (a value at a time) against its held way (every value held),
for the same file.

``random_old_session(seed)`` makes a file: messages of every role (a hook's in version 2), tool
calls and results, compactions (a version 1 one's ``firstKeptEntryIndex`` before it, after it, out
of range, not a number), branch summaries, labels, custom entries, session names, text with
U+2028, a lone surrogate and other non-ASCII characters, CRLF and blank lines, and now and then
some damage (two lines glued, a last line cut short, a line that is not JSON or no object, the
header twice, ``1e400``, in version 2 an id used twice).

``PATHS_TO_COMPARE`` lists the paths: each is run on a copy of the file its streamed way and its
held way, and what each gives (the bytes written, every public result, the problems found) must
be equal. A new path is compared by adding it there.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import random
import shutil
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

from old_sessions import public_results

from pi_session_server.analysis import codes, repairs
from pi_session_server.analysis.document import SessionDocument
from pi_session_server.cli import main
from pi_session_server.errors import PiSessionError
from pi_session_server.format.jsjson import dumps
from pi_session_server.session import file_load, fork_source, loader
from pi_session_server.session.cache_dir import INDEX_MIN_SIZE_ENV
from pi_session_server.session.manager import SessionManager
from pi_session_server.session.migrate import migrate_to_current_version, needs_migration

# --------------------------------------------------------------------------- the files

_LONE_SURROGATE = "<lone surrogate>"  # written as the escape JSON.stringify writes for one
_TEXTS = [
    "hello",
    "a\u2028b",
    "line\u2029sep",
    "caf\u00e9",
    "\U0001f600 emoji",
    "tab\tand\nnewline",
    'quote " back \\ slash',
    "",
    "\u00a0nbsp",
    "\ufeffbom inside",
    "\u65e5\u672c\u8a9e",
    _LONE_SURROGATE,
]


def _text(rng: random.Random) -> str:
    return " ".join(rng.choice(_TEXTS) for _ in range(rng.randint(1, 3)))


def _stamp(n: int) -> str:
    return f"2025-01-01T00:{n // 60 % 60:02d}:{n % 60:02d}.000Z"


def _usage() -> dict[str, Any]:
    cost = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
    return {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 3, "cost": cost}


def _message(rng: random.Random, n: int, version: int, call_ids: list[str]) -> dict[str, Any]:
    roles = ["user", "assistant", "assistant", "toolResult", "bashExecution", "hookMessage", "custom"]
    role = rng.choice(roles if version == 2 else roles[:-1])
    if role == "user":
        content: Any = _text(rng) if rng.random() < 0.5 else [{"type": "text", "text": _text(rng)}]
        message: dict[str, Any] = {"role": "user", "content": content, "timestamp": n}
    elif role == "assistant":
        blocks: list[Any] = [{"type": "text", "text": _text(rng)}]
        if rng.random() < 0.3:
            blocks.insert(0, {"type": "thinking", "thinking": _text(rng)})
        if rng.random() < 0.5:
            call_id = f"call_{n}"
            call_ids.append(call_id)
            blocks.append(
                {"type": "toolCall", "id": call_id, "name": "bash", "arguments": {"command": _text(rng)}}
            )
        message = {
            "role": "assistant",
            "content": blocks,
            "provider": "p",
            "model": rng.choice(["m", "m2"]),
            "usage": _usage(),
            "stopReason": "toolUse" if blocks[-1]["type"] == "toolCall" else "stop",
            "timestamp": n,
        }
    elif role == "toolResult":
        message = {
            "role": "toolResult",
            "toolCallId": call_ids[-1] if call_ids else "call_none",
            "toolName": "bash",
            "content": [{"type": "text", "text": _text(rng)}],
            "isError": rng.random() < 0.2,
            "timestamp": n,
        }
    elif role == "bashExecution":
        message = {
            "role": "bashExecution",
            "command": _text(rng),
            "output": _text(rng),
            "exitCode": rng.choice([0, 1]),
            "cancelled": False,
            "truncated": False,
            "timestamp": n,
        }
    else:  # a hook's message (version 3 calls it custom; version 2 files hold either)
        message = {
            "role": role,
            "customType": "hook",
            "content": _text(rng),
            "display": rng.random() < 0.7,
            "timestamp": n,
        }
    return {"type": "message", "timestamp": _stamp(n), "message": message}


def _first_kept_index(rng: random.Random, position: int, count: int) -> Any:
    """A version 1 compaction's firstKeptEntryIndex: mostly an earlier position, sometimes a later
    one, itself, the header, out of range, negative, not whole, or not a number."""
    kind = rng.random()
    if kind < 0.6 and position > 1:
        return rng.randrange(1, position)
    return rng.choice([position, 0, position + 1, position + 3, count + 50, -1, 1.5, "1", None, 2.0])


def _entry(rng: random.Random, n: int, version: int, call_ids: list[str]) -> dict[str, Any]:
    kind = rng.choices(
        ["message", "compaction", "branch_summary", "label", "custom", "custom_message", "session_info",
         "thinking_level_change", "model_change"],
        [14, 2, 1, 2, 1, 1, 1, 1, 1],
    )[0]  # fmt: skip
    stamp = _stamp(n)
    if kind == "message":
        return _message(rng, n, version, call_ids)
    if kind == "compaction":
        return {"type": "compaction", "timestamp": stamp, "summary": _text(rng), "tokensBefore": 100}
    if kind == "branch_summary":
        return {"type": "branch_summary", "timestamp": stamp, "summary": _text(rng)}
    if kind == "label":
        return {"type": "label", "timestamp": stamp, "label": rng.choice([_text(rng), None])}
    if kind == "custom":
        return {"type": "custom", "timestamp": stamp, "customType": "ext", "data": {"n": n, "t": _text(rng)}}
    if kind == "custom_message":
        return {
            "type": "custom_message",
            "timestamp": stamp,
            "customType": "ext",
            "content": _text(rng),
            "display": True,
        }
    if kind == "session_info":
        return {"type": "session_info", "timestamp": stamp, "name": _text(rng)}
    if kind == "thinking_level_change":
        return {
            "type": "thinking_level_change",
            "timestamp": stamp,
            "thinkingLevel": rng.choice(["off", "high"]),
        }
    return {"type": "model_change", "timestamp": stamp, "provider": "p", "modelId": rng.choice(["m", "m2"])}


def _header(rng: random.Random, seed: int, version: int) -> dict[str, Any]:
    header: dict[str, Any] = {"type": "session"}
    if version == 2:
        header["version"] = rng.choice([2, 2, 2, "2"])
    elif rng.random() < 0.3:
        header["version"] = rng.choice([1, None, 0, "abc"])  # ("abc": no step runs, rewritten at each open)
    header.update({"id": f"0000{seed:04x}-old-session", "timestamp": _stamp(0), "cwd": "/p"})
    if version == 1:
        header.update({"provider": "anthropic", "modelId": "m", "thinkingLevel": "off"})
    return header


def _link_version_1(rng: random.Random, values: list[dict[str, Any]]) -> None:
    """Version 1 links: none but a compaction's firstKeptEntryIndex (a position in the file)."""
    for position, value in enumerate(values):
        if value["type"] == "compaction" and rng.random() < 0.9:
            value["firstKeptEntryIndex"] = _first_kept_index(rng, position, len(values))


def _link_version_2(rng: random.Random, values: list[dict[str, Any]]) -> None:
    """Version 2 links: ids and parents (mostly the previous entry, sometimes a branch), a
    compaction's firstKeptEntryId, a branch summary's fromId, a label's targetId; now and then an
    id given twice."""
    ids: list[str] = []
    for n, value in enumerate(values[1:], start=1):
        entry_id = f"{n:04x}{rng.randrange(1 << 16):04x}"
        if ids and rng.random() < 0.03:
            entry_id = rng.choice(ids)  # (damage: an id used twice)
        parent = ids[-1] if ids else None
        if ids and rng.random() < 0.15:
            parent = rng.choice(ids)
        linked = {"type": value.pop("type"), "id": entry_id, "parentId": parent}
        rest = dict(value)
        value.clear()
        value.update(linked)
        value.update(rest)
        if value["type"] == "compaction" and ids:
            value["firstKeptEntryId"] = rng.choice(ids)
        elif value["type"] == "branch_summary" and ids:
            value["fromId"] = rng.choice(ids)
        elif value["type"] == "label" and ids:
            value["targetId"] = rng.choice(ids)
        ids.append(entry_id)


def _damaged_lines(rng: random.Random, lines: list[str]) -> list[str]:
    """Blank lines, and now and then a line that is not JSON or no object, two lines glued, the
    last line cut short, the header twice, a number pi holds as Infinity, an id where pi's
    version 1 had none."""
    for _ in range(rng.choice([0, 0, 1, 2])):
        lines.insert(rng.randrange(1, len(lines) + 1), rng.choice(["", "   ", "\t", "\r"]))
    if rng.random() < 0.15:
        lines.insert(
            rng.randrange(1, len(lines) + 1), rng.choice(["not json", '{"type":', "null", "1", '"s"', "[]"])
        )
    if rng.random() < 0.1 and len(lines) > 2:
        at = rng.randrange(1, len(lines) - 1)
        lines[at : at + 2] = [lines[at] + lines[at + 1]]
    if rng.random() < 0.1 and len(lines[-1]) > 2:
        lines[-1] = lines[-1][: rng.randrange(1, len(lines[-1]))]
    if rng.random() < 0.1:
        lines.insert(rng.randrange(1, len(lines) + 1), lines[0])  # the header twice
    if rng.random() < 0.1 and len(lines) > 1:
        at = rng.randrange(1, len(lines))
        lines[at] = lines[at].replace('"timestamp":', '"n":1e400,"timestamp":', 1)  # Infinity to pi
    if rng.random() < 0.05 and len(lines) > 1:
        # an entry carrying an id first (version 1: its only one; version 2: the key twice, the
        # last one counts)
        at = rng.randrange(1, len(lines))
        lines[at] = lines[at].replace('{"type":', f'{{"id":"{rng.randrange(1 << 32):08x}","type":', 1)
    return lines


def random_old_session(seed: int) -> bytes:
    """A random version 1 or version 2 session (even seeds version 1), as pi wrote it, sometimes
    damaged."""
    rng = random.Random(seed)
    version = 1 if seed % 2 == 0 else 2
    count = rng.randint(1, 30)
    call_ids: list[str] = []
    values: list[dict[str, Any]] = [_header(rng, seed, version)]
    values += [_entry(rng, n, version, call_ids) for n in range(1, count + 1)]
    (_link_version_1 if version == 1 else _link_version_2)(rng, values)
    lines = [
        json.dumps(v, ensure_ascii=False, separators=(",", ":")).replace(_LONE_SURROGATE, "\\ud83d")
        for v in values
    ]
    if rng.random() < 0.3:
        lines = _damaged_lines(rng, lines)
    crlf = rng.random()
    if crlf < 0.1:
        lines = [line + "\r" for line in lines]  # an editor's CRLF file
    elif crlf < 0.2:
        lines = [line + "\r" if rng.random() < 0.3 else line for line in lines]
    ends = rng.random() < 0.9 or not lines[-1]
    return ("\n".join(lines) + ("\n" if ends else "")).encode("utf-8", "surrogatepass")


# --------------------------------------------------------------------------- the paths


@dataclass(frozen=True)
class PathToCompare:
    """A path that migrates an old file: ``run(directory, file)`` gives what it makes of ``file``
    (a copy of the session in ``directory``), ``streamed()`` and ``held()`` the blocks in which it
    takes its streamed way (a value at a time) and its held way (every value held)."""

    name: str
    run: Callable[[Path, Path], Any]
    held: Callable[[], contextlib.AbstractContextManager[Any]]
    streamed: Callable[[], contextlib.AbstractContextManager[Any]] = contextlib.nullcontext


def _not_rewritten_after(*args: Any) -> bool:
    return False  # (no other program migrates the file: no wait for one)


def writable_open(directory: Path, file: Path) -> Any:
    """``file`` opened for writing (migrated: ``file`` the migration wrote), what the session gives,
    then an entry appended: where it went."""
    with mock.patch.object(file_load, "rewritten_after", _not_rewritten_after):
        session = SessionManager.open(str(file), str(directory), index=False)
    migrated, results = file.read_bytes(), public_results(session)
    appended = session.get_entry(session.append_custom_entry("fuzz"))
    return {
        "file": migrated,
        "results": results,
        "appended": (appended.parent_id, appended.line),
        "after": file.read_bytes()[: len(migrated)],
    }


def _rewrite_held() -> contextlib.AbstractContextManager[Any]:
    return mock.patch.object(file_load, "_rewrite_streamed", lambda *args: None)


def _read_only_open(directory: Path, file: Path) -> Any:
    session = SessionManager.open(str(file), read_only=True, index=False)
    return {"results": public_results(session), "file": file.read_bytes()}


def _read_only_indexed(directory: Path, file: Path) -> Any:
    """Opened twice: the second open reads the index the first one wrote (of any file's size)."""
    index = directory / "index"
    with mock.patch.dict(os.environ, {INDEX_MIN_SIZE_ENV: "0"}):
        SessionManager.open(str(file), read_only=True, index=index)
        session = SessionManager.open(str(file), read_only=True, index=index)
    return {"results": public_results(session), "file": file.read_bytes()}


def _read_only_streamed() -> contextlib.AbstractContextManager[Any]:
    return mock.patch.object(loader, "KEEP_BYTES_LIMIT", 0)  # every file large: a version 2 one read lazily


def _read_only_held() -> contextlib.AbstractContextManager[Any]:
    return mock.patch.object(loader, "KEEP_BYTES_LIMIT", 1 << 62)


def _fork(directory: Path, file: Path) -> Any:
    forks = directory / "forks"
    try:
        fork = SessionManager.fork_from(str(file), "/elsewhere", str(forks), {"id": "fork"})
    except PiSessionError as err:  # (a source that is no session: the same error either way)
        return {"error": repr(err), "forks": sorted(p.name for p in forks.glob("*"))}
    lines = Path(fork.get_session_file() or "").read_bytes().split(b"\n")
    return {"lines": lines[1:], "source": file.read_bytes()}  # (the header's timestamp is now)


_FORK_SOURCE_VALUES = fork_source._fork_source_values


def _fork_streamed() -> contextlib.AbstractContextManager[Any]:
    return mock.patch.object(fork_source, "_FORK_BATCH", 1)  # (each line appended as it is made)


def _fork_held() -> contextlib.AbstractContextManager[Any]:
    """An old source's values held together and migrated so (what the fork did before it drew a
    version 1 source's links first); a current one's as the fork reads it."""

    def held(fd: int, source: str, peek: Any, held: bool = False) -> Iterator[Any]:
        if not needs_migration([peek.value]):
            return _FORK_SOURCE_VALUES(fd, source, peek)
        values = loader.load_exact(fd).values
        migrate_to_current_version(values, True)
        return (value for value in values if isinstance(value, dict))

    return mock.patch.object(fork_source, "_fork_source_values", held)


def _command(directory: Path, *args: str) -> tuple[Any, bytes]:
    """The status and what ``pi-session ARGS`` printed (the directory it ran in named ``<D>``: each
    way runs in its own)."""
    written = io.BytesIO()
    printed = io.TextIOWrapper(written, encoding="utf-8")  # (as a terminal's: main sets its errors)
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        code = main(list(args))
    printed.flush()
    return code, written.getvalue().replace(bytes(directory), b"<D>")


def _read_only_commands(directory: Path, file: Path) -> Any:
    looks = [["tree"], ["context", "--json"], ["stats", "--json"], ["check"]]
    return [_command(directory, *look, "--no-index", str(file)) for look in looks]


def repair(*flags: str) -> Callable[[Path, Path], Any]:
    """A path's run: ``pi-session repair FLAGS -o OUT`` of the file, what it said and wrote."""

    def run(directory: Path, file: Path) -> Any:
        out = directory / "repaired.jsonl"
        said = _command(directory, "repair", *flags, "-o", str(out), str(file))
        return {"said": said, "out": out.read_bytes() if out.exists() else None}

    return run


def _repair_streamed() -> contextlib.AbstractContextManager[Any]:
    return mock.patch.object(repairs, "_MIGRATED_CHUNK", 1)  # (each line a chunk of its own)


def held_together(doc: SessionDocument) -> Iterator[str]:
    """A version 1 file's migration by ``repair`` as it was made before it was streamed: its values
    held together and migrated so."""
    slots: list[tuple[str, Any]] = []  # (repairs._VALUE, index into kept) or ("text", verbatim line)
    kept: list[Any] = []
    for kind, item in repairs._migration_slots(doc):
        if kind == repairs._VALUE:
            slots.append((repairs._VALUE, len(kept)))
            kept.append(item)
        elif kind == repairs._KEPT_TEXT:
            kept.append(item[1])  # counts as a v1 position (D3) but is written verbatim
            slots.append(("text", item[0]))
        else:
            slots.append(("text", item))
    migrate_to_current_version(kept, file_values=True)
    for kind, item in slots:
        yield (dumps(kept[item]) if kind == repairs._VALUE else item) + "\n"


def _repair_held() -> contextlib.AbstractContextManager[Any]:
    """Every version 1 file's values held together (:func:`held_together`), as the repair did before
    it drew a version 1 file's links first."""
    held = contextlib.ExitStack()
    held.enter_context(mock.patch.object(repairs, "_needs_later_value", lambda *args: True))
    held.enter_context(
        mock.patch.object(repairs, "_migrated_by_drawn_links", lambda doc, header: held_together(doc))
    )
    return held


PATHS_TO_COMPARE = [
    PathToCompare("writable open", writable_open, _rewrite_held),
    PathToCompare("read-only open", _read_only_open, _read_only_held, _read_only_streamed),
    PathToCompare("read-only open, indexed", _read_only_indexed, _read_only_held, _read_only_streamed),
    PathToCompare("read-only commands", _read_only_commands, _read_only_held, _read_only_streamed),
    PathToCompare("fork", _fork, _fork_held, _fork_streamed),
    PathToCompare("repair PI015", repair("--codes", codes.OLD_VERSION), _repair_held, _repair_streamed),
    PathToCompare("repair --all", repair("--all"), _repair_held, _repair_streamed),
]


def differences(data: bytes, work: Path, paths: list[PathToCompare] = PATHS_TO_COMPARE) -> list[str]:
    """The paths of ``paths`` whose streamed and held ways give different results for the session
    ``data`` (run in copies under ``work``), each with what differs."""
    found = []
    for path in paths:
        results = []
        for way, block in (("streamed", path.streamed), ("held", path.held)):
            directory = work / path.name.replace(" ", "-") / way
            shutil.rmtree(directory, ignore_errors=True)
            directory.mkdir(parents=True)
            file = directory / "s.jsonl"
            file.write_bytes(data)
            with block():
                results.append(path.run(directory, file))
        if results[0] != results[1]:
            found.append(f"{path.name}: {_first_difference(results[0], results[1])}")
    return found


def _first_difference(streamed: Any, held: Any) -> str:
    if isinstance(streamed, dict) and isinstance(held, dict):
        for key in streamed:
            if streamed.get(key) != held.get(key):
                return f"{key}: streamed {str(streamed.get(key))[:300]} held {str(held.get(key))[:300]}"
    return f"streamed {str(streamed)[:300]} held {str(held)[:300]}"


# --------------------------------------------------------------------------- pi itself


def oracle_scenarios(seed: int) -> dict[str, dict[str, Any]]:
    """Scenarios of the conformance kit's format (tests/conformance/README.md) that give the session
    of ``seed`` to pi: opened (its migration written, read back, appended to, reopened), and forked
    (its migration in memory, the fork written). By name."""
    data = random_old_session(seed)
    tail = data.rsplit(b"\n", 1)[-1]
    if tail and not tail.strip(b" \t\r"):
        data += b"\n"  # (D11: JSON whitespace after the last newline is no line for pi's repair to end)
    files = {"sessions/s.jsonl": {"base64": base64.b64encode(data).decode("ascii")}}
    source = {"$path": "sessions/s.jsonl"}
    looks: list[dict[str, Any]] = [
        {"op": "getEntries"},
        {"op": "getTree", "view": "flat"},
        {"op": "getBranch", "view": "ids"},
        {"op": "buildSessionContext"},
        {"op": "getSessionName"},
        {"op": "readFile", "parsed": False},
    ]
    opened = {
        "description": f"old_session_fuzz: seed {seed} opened",
        "files": files,
        "start": {"op": "open", "args": [source, {"$path": "sessions"}]},
        "ops": [
            *looks,
            {"op": "appendMessage", "args": [{"role": "user", "content": "after", "timestamp": 1}]},
            {"op": "reopen"},
            {"op": "snapshot"},
        ],
        "final": {"files": "changed", "parsed": False},
    }
    forked = {
        "description": f"old_session_fuzz: seed {seed} forked",
        "files": files,
        "start": {"op": "forkFrom", "args": [source, {"$path": "proj"}, {"$path": "forks"}]},
        "ops": looks,
        "final": {"files": "changed", "parsed": False},
    }
    return {f"old-{seed}-open": opened, f"old-{seed}-fork": forked}


def write_oracle_scenarios(seeds: Iterable[int], directory: Path) -> list[Path]:
    """The scenarios of ``seeds`` (:func:`oracle_scenarios`) written in ``directory``."""
    written = []
    for seed in seeds:
        for name, scenario in oracle_scenarios(seed).items():
            path = directory / f"{name}.scenario.json"
            path.write_text(json.dumps(scenario, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
            written.append(path)
    return written
