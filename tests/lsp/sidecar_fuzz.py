"""Shared pieces of the sidecar fuzz tests: params drawn from the schemas of ``protocol/``, the
values that break them, and a file system of hostile places (a directory, a FIFO, a device, a file
that is not a session, paths and uris the server must refuse).

The seed of a run comes from ``PI_SIDECAR_FUZZ_SEED`` (one seed) or is each of :data:`SEEDS`.
"""

from __future__ import annotations

import os
import random
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sidecar_support import PROTOCOL, contract

#: the seeds a run draws from by default; PI_SIDECAR_FUZZ_SEED=N replaces them with N
SEEDS = (1, 2, 3)


def seeds() -> list[int]:
    chosen = os.environ.get("PI_SIDECAR_FUZZ_SEED")
    return [int(chosen)] if chosen else list(SEEDS)


def resolve(schema: Any) -> Any:
    """``schema`` with a ``$ref`` to ``components`` followed (once, at the top)."""
    while isinstance(schema, dict) and "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        schema = contract().document["components"]["schemas"][name]
    return schema


def params_schema(method: str) -> dict[str, Any]:
    return dict(contract().methods[method]["x-paramsSchema"])


# ids, paths and uris: the names under which params carry them
ID_MEMBERS = {
    "entryId",
    "id",
    "targetId",
    "parentId",
    "leafId",
    "fromId",
    "branchFromId",
    "firstKeptEntryId",
    "rootId",
    "aroundId",
    "since",
}
PATH_MEMBERS = {"path", "sourcePath", "cwdOverride"}
DIRECTORY_MEMBERS = {"cwd", "targetCwd", "sessionDir", "home", "agentDir"}


@dataclass
class Places:
    """A directory of files to aim at: the session, the places no session can be, and what a
    request may name instead."""

    root: Path
    session: Path
    other: Path  # a second session, never written to by a valid request
    text: Path  # not a session
    directory: Path
    fifo: Path
    device: Path | None  # a character device of our own (the null device's numbers)
    missing: Path
    sessions: Path  # a session directory for the methods that make files
    ids: list[str] = field(default_factory=list)

    @classmethod
    def make(cls, root: Path, example: bytes) -> Places:
        session = root / "fuzz.jsonl"
        session.write_bytes(example)
        other = root / "other.jsonl"
        other.write_bytes(example)
        text = root / "notes.txt"
        text.write_text("not a session\n", encoding="utf-8")
        directory = root / "a-directory.jsonl"
        directory.mkdir()
        fifo = root / "a-fifo.jsonl"
        os.mkfifo(fifo)
        device: Path | None = root / "a-device.jsonl"
        try:
            os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        except OSError:  # not allowed here: the FIFO and the directory stand for it
            device = None
        sessions = root / "sessions"
        sessions.mkdir()
        return cls(root, session, other, text, directory, fifo, device, root / "missing.jsonl", sessions)

    def watched(self) -> list[Path]:
        """The files whose bytes no refused request may change."""
        return [self.session, self.other, self.text]

    def hostile_paths(self) -> list[Any]:
        paths: list[Any] = [
            str(self.directory),
            str(self.fifo),
            str(self.missing),
            str(self.text),
            str(self.root / "missing-dir" / "x.jsonl"),
            str(self.text / "below-a-file.jsonl"),
            "relative.jsonl",
            "~/in-home.jsonl",
            str(self.root / "nul\x00.jsonl"),
            str(self.root / "lone-\ud800.jsonl"),
            str(self.root / ("long" * 1100)),
            str(self.root) + "/" + "n" * 300 + ".jsonl",  # a name longer than NAME_MAX
            "",
            ".",
            "/",
        ]
        if self.device is not None:
            paths.append(str(self.device))
        return paths

    def hostile_uris(self) -> list[Any]:
        return [
            self.directory.as_uri(),
            self.fifo.as_uri(),
            self.missing.as_uri(),
            self.text.as_uri(),
            "file://other-host" + str(self.session),
            "file://" + str(self.root) + "/%00.jsonl",
            "file://" + str(self.root) + "/%2F..%2Ffuzz.jsonl",
            "file://" + str(self.root) + "/%E0%A4%A.jsonl",
            "file://" + str(self.root) + "/%ff%fe.jsonl",
            "file:relative.jsonl",
            "file://",
            "file:///",
            "file:///" + "x" * 50_000,
            "http://example.com/fuzz.jsonl",
            "untitled:Untitled-1",
            "vscode-remote://ssh/" + str(self.session),
            str(self.session),
            *([self.device.as_uri()] if self.device is not None else []),
        ]


def nested(depth: int) -> Any:
    value: Any = "bottom"
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


def hostile_values(rng: random.Random, places: Places) -> list[Any]:
    """Values of every JSON type and every size that params should not hold (or hold oddly)."""
    return [
        None,
        True,
        False,
        0,
        -1,
        -(2**63),
        2**64,
        10**30,
        0.5,
        -0.0,
        1e308,
        -1e308,
        1.0,
        "",
        "x",
        "\ud800",
        "a\udc00b",
        "\x00",
        "\x1b[31mred\u2028",
        "💥" * 3,
        "y" * rng.choice((5_000, 100_000, 1_000_000)),
        [],
        [1, "two", None],
        {},
        {"unexpected": True},
        nested(rng.choice((40, 300, 3_000))),
        "s999999",
        "ffffffff",
        "not-an-id",
        rng.choice(places.hostile_paths()),
        rng.choice(places.hostile_uris()),
    ]


class Draw:
    """Params for a method, drawn from its schema, with the members that name things aimed at the
    places (the session, its ids) so that a request gets past the first check."""

    def __init__(self, rng: random.Random, places: Places, handle: str) -> None:
        self.rng = rng
        self.places = places
        self.handle = handle

    def value(self, schema: Any, name: str = "", depth: int = 0) -> Any:
        rng = self.rng
        aimed = self._aimed(name)
        if aimed is not _NOTHING:
            return aimed
        schema = resolve(schema)
        if not isinstance(schema, dict) or not schema:
            return self._any(depth)
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            return rng.choice(schema["enum"])
        for key in ("anyOf", "oneOf"):
            if key in schema and "type" not in schema and "properties" not in schema:
                return self.value(rng.choice(schema[key]), name, depth)
        kind = schema.get("type")
        if isinstance(kind, list):
            kind = rng.choice(kind)
        if kind == "object" or "properties" in schema:
            return self.object(schema, depth)
        if kind == "array":
            return [self.value(schema.get("items", {}), "", depth + 1) for _ in range(rng.randrange(3))]
        return self._scalar(kind, schema, depth)

    def _scalar(self, kind: Any, schema: dict[str, Any], depth: int) -> Any:
        rng = self.rng
        if kind == "string":
            if schema.get("pattern") == "^/":
                return str(self.places.root)
            return rng.choice(("a", "hello world", "x y z", "s1"))
        if kind == "integer":
            low = schema.get("minimum", 0)
            return rng.randrange(low, low + 5)
        if kind == "number":
            return rng.choice((0, 1.5, 100))
        if kind == "boolean":
            return rng.random() < 0.5
        if kind == "null":
            return None
        return self._any(depth)

    def object(self, schema: Any, depth: int = 0) -> dict[str, Any]:
        schema = resolve(schema)
        required = set(schema.get("required", []))
        for branch in schema.get("anyOf", []):  # "session or uri": one of them
            if "required" in branch and not required & set(branch["required"]):
                required |= set(self.rng.choice(schema["anyOf"])["required"])
                break
        result: dict[str, Any] = {}
        for member, sub in schema.get("properties", {}).items():
            if member == "workDoneToken":
                continue
            if member in required or self.rng.random() < 0.3:
                result[member] = self.value(sub, member, depth + 1)
        if "session" in result and "uri" in result:
            del result[self.rng.choice(("session", "uri"))]
        return result

    def _aimed(self, name: str) -> Any:
        rng, places = self.rng, self.places
        if name == "session":
            return self.handle
        if name == "uri":
            return places.session.as_uri()
        if name in ID_MEMBERS and places.ids:
            return rng.choice(places.ids)
        if name in PATH_MEMBERS:
            return str(rng.choice((places.session, places.other)))
        if name in DIRECTORY_MEMBERS:
            return str(places.sessions) if name == "sessionDir" else str(places.root)
        return _NOTHING

    def _any(self, depth: int) -> Any:
        """A plain JSON value, for a member of any type."""
        choice = self.rng.randrange(5)
        if choice == 0 or depth > 3:
            return self.rng.choice(("text", 1, None, True))
        if choice == 1:
            return {"role": "user", "content": "hi", "timestamp": 1}
        if choice == 2:
            return [self._any(depth + 1)]
        if choice == 3:
            return {"content": "replaced"}
        return self.rng.choice(self.places.ids) if self.places.ids else "x"


_NOTHING = object()


def broken(rng: random.Random, params: dict[str, Any], schema: Any, places: Places) -> dict[str, Any]:
    """``params`` with one to three things wrong: a member of another type or size, a member left
    out, a member the schema does not have."""
    result = dict(params)
    members = list(resolve(schema).get("properties", {})) or list(result) or ["session"]
    for _ in range(rng.choice((1, 1, 2, 3))):
        how = rng.randrange(10)
        if how == 0 and result:
            del result[rng.choice(list(result))]
        elif how == 1:
            result[rng.choice(("extra", "Session", "__proto__", "constructor", "\ud800"))] = rng.choice(
                hostile_values(rng, places)
            )
        elif how == 2:
            member = rng.choice(members)
            result[member] = rng.choice(places.hostile_paths() + places.hostile_uris())
        elif how == 3 and "environment" in members:
            result["environment"] = rng.choice(
                (
                    {"cwd": "relative"},
                    {"cwd": str(places.fifo)},
                    {"home": None, "agentDir": str(places.text)},
                    {"cwd": str(places.root), "home": rng.choice(places.hostile_paths())},
                    {"agentDir": 5},
                    [],
                )
            )
        else:
            result[rng.choice(members)] = rng.choice(hostile_values(rng, places))
    return result


def protocol_methods() -> list[str]:
    return sorted(contract().methods)


__all__ = ["PROTOCOL"]
