#!/usr/bin/env python3
"""Writes the extra hand-written conformance scenarios (vectors/extra/x-*.scenario.json).

They probe edge cases the shared kit's scenarios leave out. Expected outputs come from the
oracle, never from this script:

    python3 tests/conformance/make_extra.py [--out DIR]
    cd "$(python3 tests/reference_locations.py oracle)" && node run.mjs --batch <repo>/tests/conformance/vectors/extra --rules ours

(scripts/regen_vectors.py does both.) Stdlib only; deterministic.
"""

from __future__ import annotations

import argparse
import json
import os
import random
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "vectors", "extra")

UNDEF = {"$undefined": True}
USAGE = {
    "input": 1,
    "output": 1,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 2,
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
}

S: dict[str, dict[str, Any]] = {}


def add(name: str, description: str, start: dict[str, Any] | None, ops: list[Any], **extra: Any) -> None:
    assert name not in S, name
    sc: dict[str, Any] = {"description": description}
    if "files" in extra:
        sc["files"] = extra.pop("files")
    if start is not None:
        sc["start"] = start
    sc["ops"] = ops
    sc.update(extra)
    S[name] = sc


# ---- small builders -----------------------------------------------------------


def op(name: str, *args: Any, **kw: Any) -> dict[str, Any]:
    o: dict[str, Any] = {"op": name}
    if args:
        o["args"] = list(args)
    for k, v in kw.items():
        o["as" if k == "as_" else k] = v
    return o


def ref(name: Any, get: Any = None) -> dict[str, Any]:
    r: dict[str, Any] = {"$ref": name}
    if get is not None:
        r["$get"] = get
    return r


def path(rel: str) -> dict[str, str]:
    return {"$path": rel}


def ts(sec: int, ms: int = 0, day: int = 1) -> str:
    h, rem = divmod(sec, 3600)
    m, s = divmod(rem, 60)
    return f"2025-01-{day:02d}T{h:02d}:{m:02d}:{s:02d}.{ms:03d}Z"


def jline(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def user(text: Any, t: Any = 1700000000000) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": t}


def asst(
    text: str, t: Any = 1700000000001, provider: str = "anthropic", model: str = "claude-test"
) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "api": "anthropic-messages",
        "provider": provider,
        "model": model,
        "usage": USAGE,
        "stopReason": "stop",
        "timestamp": t,
    }


def system(content: Any, t: Any = 1700000000000, **extra: Any) -> dict[str, Any]:
    return {"role": "system", "content": content, **extra, "timestamp": t}


def header(
    sid: Any = "x-sess",
    t: Any = "2025-01-01T00:00:00.000Z",
    cwd: Any = "/proj",
    version: Any = 3,
    **extra: Any,
):
    h: dict[str, Any] = {"type": "session"}
    if version is not None:
        h["version"] = version
    h["id"] = sid
    h["timestamp"] = t
    h["cwd"] = cwd
    h.update(extra)
    return h


def e_msg(id_: Any, parent: Any, message: Any, t: Any = "2025-01-01T00:00:00.000Z", **extra: Any):
    e: dict[str, Any] = {"type": "message", "id": id_, "parentId": parent, "timestamp": t, "message": message}
    e.update(extra)
    return e


def e_label(id_: Any, parent: Any, target: Any, label: Any, t: str = "2025-01-01T00:00:00.000Z"):
    return {
        "type": "label",
        "id": id_,
        "parentId": parent,
        "timestamp": t,
        "targetId": target,
        "label": label,
    }


def lines(*objs: Any, **spec: Any) -> dict[str, Any]:
    return {"lines": [o if isinstance(o, str) else jline(o) for o in objs], **spec}


def mem(cwd: str = "/proj") -> dict[str, Any]:
    return op("inMemory", cwd)


def persisted(dir_: str = "sessions", cwd: str = "/proj") -> dict[str, Any]:
    return op("create", cwd, path(dir_))


# ===========================================================================
# Tree
# ===========================================================================


def tree_sort_unparsable() -> None:
    rnd = random.Random(7)
    odd = [
        "garbage",
        None,
        5,
        True,
        "",
        "2025-01-01T00:00:10",
        "2025-01-01",
        "2025-01-01T00:00:05+01:00",
        "2025-01-01T00:00:05.123456Z",
        "2025-01",
        "2025-01-01T24:00:00Z",
        "2025-13-01T00:00:00Z",
        -0.0,
        1e300,
        "+002025-01-01T00:00:00Z",
    ]
    entries: list[Any] = [header("sort-odd"), e_msg("p", None, user("parent"), ts(0))]
    for i, odd_t in enumerate(odd):
        e = e_msg(f"k{i:02d}", "p", user(f"k{i}"), odd_t)
        if i == 3:
            del e["timestamp"]  # no timestamp at all
        entries.append(e)
    # a wide level where NaN comparisons meet TimSort's galloping/merging (more than 32 children)
    entries.append(e_msg("w", None, user("wide"), ts(1)))
    for i in range(70):
        choice = rnd.random()
        if choice < 0.3:  # no digits: V8's legacy parser would read "x 1" as a date (D9)
            t: Any = ["garbage", "nope", "zzz", "unparsable"][i % 4]
        elif choice < 0.4:
            t = None
        else:
            t = ts(rnd.randrange(0, 50), rnd.randrange(0, 3))
        entries.append(e_msg(f"w{i:02d}", "w", user(f"w{i}"), t))
    # grandchildren under an unparsable child
    entries += [e_msg("g1", "k00", user("g1"), ts(9)), e_msg("g0", "k00", user("g0"), "nope")]
    add(
        "x-01-tree-sort-unparsable-timestamps",
        "getTree sorts children with `new Date(a) - new Date(b)`: unparsable, missing, null, boolean, numeric, "
        "offset-less, date-only, month-only, 24:00, out-of-range and expanded-year timestamps make the comparator "
        "return NaN or unusual values; V8's TimSort order must be reproduced, also for a 70-child level.",
        op("open", path("s/sort.jsonl")),
        [
            op("getTree", view="flat"),
            op("getChildren", "p", view="ids"),
            op("getChildren", "w", view="ids"),
            op("branch", "k05"),
            op("appendMessage", user("new child of k05")),
            op("getTree", view="ids"),
            op("reopen", pick=["entryCount", "leafId"]),
            op("getTree", view="ids"),
        ],
        files={"s/sort.jsonl": lines(*entries)},
        final={"files": "none"},
    )


def duplicate_ids_and_labels() -> None:
    add(
        "x-02-duplicate-ids-and-labels",
        "Duplicate entry ids combined with labels: label entries sharing an id, a label on a duplicated target, "
        "labels on the header id and on a missing id; index, tree labels, branch, and createBranchedSession.",
        op("open", path("s/dup.jsonl")),
        [
            op("getLabel", "b"),
            op("getLabel", "dup-session"),
            op("getLabel", "ghost"),
            op("getEntry", "L", pick=["type", "id", "targetId", "label"]),
            op("getChildren", "a", view="ids"),
            op("getTree", view="flat"),
            op("getBranch", "L", view="ids"),
            op("branch", "b"),
            op("appendLabelChange", "b", "three", as_="l3"),
            op("getLabel", "b"),
            op("appendLabelChange", "dup-session", "hdr"),
            op("createBranchedSession", "c"),
            op("getEntries", view="types"),
            op("getTree", view="flat"),
            op("readFile", parsed=False),
        ],
        files={
            "s/dup.jsonl": lines(
                header("dup-session"),
                e_msg("a", None, user("a", 1), ts(1)),
                e_msg("b", "a", user("b first", 2), ts(2)),
                e_label("L", "b", "b", "one", ts(3)),
                e_msg("b", "a", user("b second", 3), ts(4)),
                e_label("L", "b", "b", "two", ts(5)),
                e_label("M", "L", "dup-session", "on header", ts(6)),
                e_label("N", "M", "ghost", "on nothing", ts(7)),
                e_msg("c", "N", asst("c"), ts(8)),
            )
        },
        final={"files": "none"},
    )


def cycles_with_labels() -> None:
    add(
        "x-03-cycles-labels-and-orphans",
        "A 3-cycle unreachable from any root, an entry hanging off the cycle, a self-parented entry and an "
        "orphan, all labelled: getTree (D2), getBranch/context from cycle members (D1), createBranchedSession "
        "from inside the cycle.",
        op("open", path("s/cyc.jsonl")),
        [
            op("getTree", view="flat"),
            op("getBranch", "c2", view="ids"),
            op("getBranch", "hang", view="ids"),
            op("getBranch", "self", view="ids"),
            op("branch", "hang"),
            op("buildSessionContext", view="roles"),
            op("buildContextEntries", view="ids"),
            op("getLabel", "c1"),
            op("createBranchedSession", "hang"),
            op("getEntries", pick=["type", "id", "parentId", "targetId", "label"]),
            op("getTree", view="flat"),
        ],
        files={
            "s/cyc.jsonl": lines(
                header("cyc"),
                e_msg("r", None, user("root", 1), ts(1)),
                e_msg("c1", "c3", user("c1", 2), ts(2)),
                e_msg("c2", "c1", asst("c2"), ts(3)),
                e_msg("c3", "c2", user("c3", 4), ts(4)),
                e_msg("hang", "c2", user("hang", 5), ts(5)),
                e_msg("self", "self", user("self", 6), ts(6)),
                e_msg("orph", "missing", user("orphan", 7), ts(7)),
                e_label("l1", "r", "c1", "in cycle", ts(8)),
                e_label("l2", "l1", "self", "selfish", ts(9)),
                e_label("l3", "l2", "orph", "lost", ts(10)),
                e_label("l4", "l3", "hang", "hanging", ts(11)),
            )
        },
        final={"files": "none"},
    )


def numeric_and_odd_ids() -> None:
    add(
        "x-04-numeric-and-odd-ids",
        "Ids that are not plain strings in a v3 file (not migrated): numbers vs numeric strings (Map keys use "
        "SameValueZero), the empty string, null and missing ids; parentIds pointing at them; labels on a "
        "numeric id; getEntry/getChildren/getBranch/getTree/context.",
        op("open", path("s/ids.jsonl")),
        [
            op("getEntry", {"$literal": 5}, pick=["id", "parentId"]),
            op("getEntry", "5", pick=["id", "parentId"]),
            op("getEntry", "", pick=["id", "parentId"]),
            op("getEntry", None, pick=["id", "parentId"]),
            op("getEntry", UNDEF, pick=["id", "parentId"]),
            op("getChildren", 5, view="ids"),
            op("getChildren", "5", view="ids"),
            op("getChildren", None, view="ids"),
            op("getChildren", UNDEF, view="ids"),
            op("getLabel", 5),
            op("getLabel", "5"),
            op("getTree", view="flat"),
            op("getBranch", 5, view="ids"),
            op("getBranch", "", view="ids"),
            op("getLeafId"),
            op("buildSessionContext", view="roles"),
            op("branch", 5),
            op("getLeafEntry", pick=["id"]),
            op("appendMessage", user("after numeric", 9), as_="n"),
            op("getEntry", ref("n"), pick=["parentId"]),
            op("branch", "nope"),
            op("branch", None),
        ],
        files={
            "s/ids.jsonl": lines(
                header("ids"),
                e_msg(5, None, user("number five", 1), ts(1)),
                e_msg("5", 5, user("string five", 2), ts(2)),
                e_msg("", "5", user("empty id", 3), ts(3)),
                e_msg(None, "", user("null id", 4), ts(4)),
                {"type": "message", "parentId": None, "timestamp": ts(5), "message": user("no id", 5)},
                {"type": "message", "id": "np", "timestamp": ts(6), "message": user("no parentId key", 6)},
                e_msg("under-np", "np", user("child of np", 7), ts(7)),
                {
                    "type": "label",
                    "id": "lab",
                    "parentId": "under-np",
                    "timestamp": ts(8),
                    "targetId": 5,
                    "label": "num",
                },
            )
        },
        final={"files": "none"},
    )


def getbranch_odd_args() -> None:
    add(
        "x-05-branch-args-and-roots",
        "getBranch/getChildren/branch/branchWithSummary with undefined, null, '' and label ids; resetLeaf then "
        "branchWithSummary (fromId 'root'); branchWithSummary(null) while a leaf is set; fn context helpers "
        "with $entries/$byId and explicit leaf ids (null, undefined, missing).",
        mem(),
        [
            op("appendMessage", user("u1", 1), as_="u1"),
            op("appendMessage", asst("a1"), as_="a1"),
            op("appendLabelChange", ref("u1"), "first", as_="lab"),
            op("getBranch", UNDEF, view="ids"),
            op("getBranch", None, view="ids"),
            op("getBranch", "", view="ids"),
            op("getBranch", ref("lab"), view="ids"),
            op("getChildren", None, view="ids"),
            op("branch", ref("lab")),
            op("getLeafEntry", pick=["type"]),
            op("buildSessionContext", view="roles"),
            op("resetLeaf"),
            op("getLeafEntry"),
            op("branchWithSummary", ref("u1"), "from root leaf", as_="bs1"),
            op("getEntry", ref("bs1")),
            op("branchWithSummary", None, "new root while leaf set", {"k": 1}, False, as_="bs2"),
            op("getEntry", ref("bs2")),
            op("branchWithSummary", "", "empty id"),
            op("getTree", view="ids"),
            op("fn.buildSessionContext", {"$entries": True}, view="roles"),
            op("fn.buildSessionContext", {"$entries": True}, None, view="roles"),
            op("fn.buildSessionContext", {"$entries": True}, ref("a1"), {"$byId": True}, view="roles"),
            op("fn.buildSessionContext", {"$entries": True}, "missing", {"$byId": True}, view="roles"),
            op("fn.buildContextEntries", {"$entries": True}, ref("lab"), view="ids"),
            op("fn.buildContextEntries", {"$entries": True}, UNDEF, {"$byId": True}, view="ids"),
            op("getLeafId"),
        ],
    )


# ===========================================================================
# Compaction
# ===========================================================================


def compaction_checkpoints() -> None:
    sys1 = system(
        "A",
        None,
        sections={"b": "1", "2": "x", "a": "2"},
        toolsAdded=[{"name": "t1", "description": "one"}, {"name": "t2", "description": "two"}],
    )
    sys2 = system(
        [
            {"type": "text", "text": "B1"},
            {"type": "image", "data": "x"},
            {"type": "text", "text": ""},
            {"type": "text", "text": "B2"},
        ],
        5,
        sections={"a": None, "1": "y", "b": "3"},
        toolsRemoved=[{"name": "t1"}],
        toolsAdded=[{"name": "t3"}, {"name": "t2", "description": "replaced"}],
    )
    sys3 = system("", 7, sections={"a": "back"})
    sys4 = {"role": "system", "content": "no timestamp, no tools"}
    add(
        "x-06-compaction-system-checkpoints",
        "appendCompaction folds several system messages into its systemMessage: first non-null timestamp, "
        "texts joined, sections set/deleted/re-added (integer-like names first), tools removed/replaced; a "
        "second compaction folds in the first one's checkpoint; a branch whose system messages have no "
        "timestamp and no tools gets no checkpoint; one with only a null timestamp gets timestamp:null -> ms.",
        mem(),
        [
            op("appendMessage", sys1, as_="s1"),
            op("appendMessage", user("u1", 1), as_="u1"),
            op("appendMessage", sys2, as_="s2"),
            op("appendMessage", sys3, as_="s3"),
            op("appendMessage", asst("a1"), as_="a1"),
            op("appendCompaction", "first", ref("u1"), 100, as_="c1"),
            op("getEntry", ref("c1"), pick=["firstKeptEntryId", "systemMessage"]),
            op(
                "appendMessage",
                system("after", 9, sections={"2": None, "z": "last"}, toolsRemoved=[{"name": "t3"}]),
            ),
            op("appendMessage", user("u2", 10), as_="u2"),
            op("appendCompaction", "second", ref("u2"), 200, {"files": []}, True, as_="c2"),
            op("getEntry", ref("c2"), pick=["systemMessage"]),
            op("buildSessionContext"),
            op("branch", ref("u1")),
            op("appendMessage", sys4),
            op("appendCompaction", "no checkpoint", ref("u1"), 1, as_="c3"),
            op("getEntry", ref("c3")),
            op("resetLeaf"),
            op("appendMessage", system("only null ts", None)),
            op("appendMessage", user("u3", 11), as_="u3"),
            op("appendCompaction", "null timestamp", ref("u3"), 1, as_="c4"),
            op("getEntry", ref("c4"), pick=["systemMessage"]),
            op("resetLeaf"),
            op(
                "appendMessage", {"role": "system", "content": "tools only", "toolsAdded": [{"name": "solo"}]}
            ),
            op("appendCompaction", "tools without timestamp", "nowhere", 1, as_="c5"),
            op("getEntry", ref("c5"), pick=["firstKeptEntryId", "systemMessage"]),
            op("buildSessionContext", view="roles"),
        ],
    )


def v1_first_kept_index() -> None:
    def v1msg(text: str, t: int) -> dict[str, Any]:
        return {"type": "message", "timestamp": ts(t), "message": user(text, t)}

    def v1comp(summary: str, index: Any, t: int, **extra: Any) -> dict[str, Any]:
        c: dict[str, Any] = {"type": "compaction", "timestamp": ts(t), "summary": summary}
        if index is not None:
            c["firstKeptEntryIndex"] = index
        c["tokensBefore"] = 10
        c.update(extra)
        return c

    add(
        "x-07-v1-first-kept-index-edges",
        "v1 migration of firstKeptEntryIndex: 0 (the header), 1, a duplicate header, negative, fractional, "
        "numeric string (left alone), out of range, itself, a later entry (key lost), an existing "
        "firstKeptEntryId kept or lost; positions count kept values only (blank/malformed lines do not count), "
        "and truthy non-object values keep their positions (D3).",
        op("open", path("s/v1.jsonl")),
        [
            op("getEntries", pick=["type", "summary", "firstKeptEntryId", "firstKeptEntryIndex"]),
            op("readFile", parsed=False),
            op("buildSessionContext", view="roles"),
            op("buildContextEntries", view="types"),
        ],
        files={
            "s/v1.jsonl": lines(
                header("v1-idx", version=None),  # 0
                v1msg("m1", 1),  # 1
                "",
                "{not json",
                v1comp("to header", 0, 2),  # 2
                v1comp("to m1", 1, 3),  # 3
                header("dup-header", version=None),  # 4
                v1comp("to dup header", 4, 4, firstKeptEntryId="kept-old"),  # 5
                "5",  # 6: truthy non-object (D3: dropped but keeps its position)
                v1comp("to the number line", 6, 5),  # 7
                v1comp("negative", -1, 6),  # 8
                v1comp("fraction", 1.5, 7),  # 9
                v1comp("string index", "1", 8),  # 10
                v1comp("out of range", 99, 9, firstKeptEntryId="survives"),  # 11
                v1comp("itself", 12, 10),  # 12
                v1comp("later", 15, 11, firstKeptEntryId="lost"),  # 13
                "null",
                v1msg("m2", 12),  # 14
                v1msg("m3", 13),  # 15
                v1comp("last, to m2", 14, 14),  # 16
            )
        },
        final={"files": "none"},
    )


def v1_carried_links() -> None:
    def v1line(type_: str, t: int, **fields: Any) -> dict[str, Any]:
        return {"type": type_, **fields, "timestamp": ts(t)}

    add(
        "x-42-v1-carried-links",
        "v1 lines carrying ids and links (an old tool's, a hand edit's): the migration replaces every id "
        "and parentId (one chain in file order), keeps a targetId, fromId or firstKeptEntryId as written "
        "(naming an id no entry has any more: the label labels nothing, the compaction keeps nothing), and "
        "a firstKeptEntryIndex naming a later entry gives that line's carried id.",
        op("open", path("s/v1.jsonl")),
        [
            op("getEntries", pick=["type", "id", "parentId", "targetId", "fromId", "firstKeptEntryId"]),
            op("getTree", view="flat"),
            op("getLabel", "aaaa"),
            op("getEntry", "aaaa"),
            op("buildSessionContext", view="roles"),
        ],
        files={
            "s/v1.jsonl": lines(
                header("v1-carried", version=None),  # 0
                v1line("message", 1, id="aaaa", parentId="zzzz", message=user("a", 1)),  # 1
                v1line("message", 2, id="bbbb", parentId="aaaa", message=asst("b", 2)),  # 2
                v1line("message", 3, id="cccc", parentId="aaaa", message=user("c", 3)),  # 3
                v1line("label", 4, targetId="aaaa", label="on a"),  # 4
                v1line("branch_summary", 5, fromId="bbbb", summary="from b"),  # 5
                v1line("compaction", 6, firstKeptEntryId="bbbb", summary="keeps b?", tokensBefore=1),  # 6
                v1line("compaction", 7, firstKeptEntryIndex=8, summary="later", tokensBefore=1),  # 7
                v1line("message", 8, id="dddd", parentId="cccc", message=user("d", 8)),  # 8
            )
        },
        final={"files": "none"},
    )


# ===========================================================================
# Files: CRLF, truncation, blank lines, numbers, key order, unicode
# ===========================================================================


def set_session_file_migrates_target() -> None:
    v1 = lines(
        header("v1-target", version=None, cwd="/p"),
        {"type": "message", "timestamp": ts(1), "message": user("from v1", 1)},
    )
    v2 = lines(
        header("v2-target", version=2, cwd="/p"),
        e_msg(
            "h",
            None,
            {"role": "hookMessage", "customType": "x", "content": "h", "display": True, "timestamp": 1},
        ),
    )
    add(
        "x-32-setsessionfile-migrates-target",
        "setSessionFile from a flushed session to a v1 file, then to a v2 file: the TARGET file is migrated and "
        "rewritten at load; the previously bound files keep their own content; reopen sees the same ids.",
        persisted("s", "/p"),
        [
            op("appendMessage", user("mine", 1)),
            op("appendMessage", asst("flushed")),
            op("getSessionFile", as_="mine"),
            op("setSessionFile", path("old/v1.jsonl")),
            op("info", pick=["sessionId", "leafId", "entryCount"]),
            op("readFile", ref("mine"), parsed=False),
            op("readFile", path("old/v1.jsonl"), parsed=False),
            op("reopen", pick=["leafId"]),
            op("setSessionFile", path("old/v2.jsonl")),
            op("readFile", path("old/v1.jsonl"), parsed=False),
            op("readFile", path("old/v2.jsonl"), parsed=False),
        ],
        files={"old/v1.jsonl": v1, "old/v2.jsonl": v2},
        final={"files": "none"},
    )


def foreign_writes_after_load() -> None:
    original = lines(
        header("foreign"),
        e_msg("a", None, user("original text A", 1), ts(1)),
        e_msg("b", "a", asst("original text B"), ts(2)),
        e_msg("c", "b", user("original text C", 3), ts(3)),
    )
    same_length = [
        jline(header("foreign")),
        jline(e_msg("a", None, user("REPLACED TEXT A", 1), ts(1))),
        jline(e_msg("b", "a", asst("REPLACED TEXT B"), ts(2))),
        jline(e_msg("c", "b", user("REPLACED TEXT C", 3), ts(3))),
    ]
    add(
        "x-33-foreign-writes-after-load",
        "Another process rewrites, truncates, appends to or deletes the session file after it was loaded: the "
        "manager keeps what it loaded (entries, context, tree are in-memory values in the reference); its own "
        "next append goes to the end of whatever the file is now.",
        op("open", path("s/f.jsonl"), pick=["entryCount", "leafId"]),
        [
            op("writeFile", path("s/f.jsonl"), {"lines": same_length}),
            op("getEntry", "a", pick=["message"]),
            op("getEntries", pick=["id", "message"]),
            op("buildSessionContext"),
            op("writeFile", path("s/f.jsonl"), {"lines": [jline(header("foreign"))]}),
            op("getEntry", "b", pick=["message"]),
            op("getBranch", pick=["id", "message"]),
            op(
                "appendFile",
                path("s/f.jsonl"),
                jline(e_msg("x", "c", user("foreign append", 9), ts(9))) + "\n",
            ),
            op("getEntries", view="ids"),
            op("appendMessage", user("mine", 10), as_="m"),
            op("readFile", parsed=False),
            op("deleteFile", path("s/f.jsonl")),
            op("getEntry", "c", pick=["message"]),
            op("appendMessage", user("after delete", 11)),
            op("readFile", parsed=False),
            op("getTree", view="ids"),
        ],
        files={"s/f.jsonl": original},
        final={"files": "none"},
    )


def non_object_messages() -> None:
    add(
        "x-34-non-object-messages",
        "appendMessage with values that are not message objects (string, number, array, true, {} without role): "
        "written as given, not assistant messages for the first flush (D6), context and tree survive, list() "
        "still lists the file and counts them.",
        persisted(),
        [
            op("appendMessage", "just a string", as_="s"),
            op("appendMessage", 42),
            op("appendMessage", [1, {"role": "assistant"}]),
            op("appendMessage", True),
            op("appendMessage", {}),
            op("appendMessage", {"role": ["assistant"], "content": "array role"}),
            op("listDir", "sessions"),
            op("buildSessionContext"),
            op("getTree", view="flat"),
            op("getLeafEntry"),
            op("appendMessage", asst("real assistant")),
            op("readFile", parsed=False),
            op("list", "/proj", path("sessions"), pick=["messageCount", "firstMessage", "allMessagesText"]),
            op("reopen", pick=["entryCount"]),
            op("buildSessionContext", view="roles"),
        ],
        final={"files": "none"},
    )


def header_size_boundary() -> None:
    mib = 1024 * 1024

    def padded_header(sid: str, total: int) -> str:
        base = jline(header(sid, pad=""))
        line = base.replace('"pad":""', '"pad":"' + "p" * (total - len(base)) + '"')
        assert len(line.encode()) == total
        return line

    entry = jline(e_msg("m", None, user("after a big header", 1), ts(1)))
    add(
        "x-35-header-size-boundary",
        "Header discovery reads at most 1 MiB: a header line of 1048575 bytes plus its newline is found; one of "
        "1048576 bytes (newline just beyond) is 'too large' (never chosen by continueRecent/findById, open falls "
        "back to a full load, list still lists it); a header-only file of exactly 1 MiB without a newline is "
        "found (end of file inside the limit).",
        None,
        [
            op("findById", "/proj", "fits", path("s")),
            op("findById", "/proj", "too-big", path("s")),
            op("findById", "/proj", "exact", path("s")),
            op("fn.findMostRecentSession", path("s")),
            op("continueRecent", "/proj", path("s"), pick=["sessionId", "entryCount"]),
            op("list", "/proj", path("s"), pick=["id", "messageCount"]),
            op("open", path("s/b-too-big.jsonl"), pick=["sessionId", "cwd", "entryCount"]),
            op("open", path("s/c-exact.jsonl"), pick=["sessionId", "entryCount"]),
            op("readFile", parsed=False, slice=[1]),
        ],
        files={
            "s/a-fits.jsonl": {
                "text": padded_header("fits", mib - 1) + "\n" + entry + "\n",
                "mtimeMs": 1500000000000,
            },
            "s/b-too-big.jsonl": {
                "text": padded_header("too-big", mib) + "\n" + entry + "\n",
                "mtimeMs": 1500000002000,
            },
            "s/c-exact.jsonl": {"text": padded_header("exact", mib), "mtimeMs": 1500000001000},
        },
        final={"files": "none"},
    )


def header_only_without_newline() -> None:
    add(
        "x-36-header-only-without-newline",
        "The load-time newline repair (docs/FORMAT.md §9.1) also applies when the only line is the header: open(), "
        "setSessionFile() and loadEntriesFromFile() append the missing \\n; list()/findById() never repair.",
        None,
        [
            op("list", "/proj", path("s"), pick=["id"]),
            op("findById", "/proj", "ho-b", path("s")),
            op("readFile", path("s/b.jsonl"), parsed=False),
            op("open", path("s/a.jsonl"), pick=["sessionId", "entryCount"]),
            op("readFile", parsed=False),
            op("setSessionFile", path("s/b.jsonl")),
            op("readFile", parsed=False),
            op("fn.loadEntriesFromFile", path("s/c.jsonl"), view="types"),
            op("readFile", path("s/c.jsonl"), parsed=False),
            op("appendMessage", user("after repair", 1)),
            op("readFile", path("s/b.jsonl"), parsed=False),
        ],
        files={
            "s/a.jsonl": lines(header("ho-a"), trailingNewline=False, mtimeMs=1500000000000),
            "s/b.jsonl": lines(header("ho-b"), trailingNewline=False, mtimeMs=1500000001000),
            "s/c.jsonl": lines(header("ho-c"), trailingNewline=False, mtimeMs=1500000002000),
        },
    )


DATE_VARIANTS = [
    "2025-01-01T00:00:00.1234567Z",
    "2025-01-01T24:00:00Z",
    "2025-01-01T24:00:01Z",
    "+275760-09-13T00:00:00.000Z",
    "+275760-09-13T00:00:00.001Z",
    "-271821-04-20T00:00:00.000Z",
    "-271821-04-19T23:59:59.999Z",
    "-000001-01-01T00:00:00Z",
    "+010000-01-01T00:00:00Z",
    "0000-01-01T00:00:00Z",
    "-000000-01-01T00:00:00Z",
    "2025-01-01 00:00:00Z",
    "2025-01-01t00:00:00z",
    "2025-01-01T00:00:00+0100",
    "2025-01-01T00:00:00.5+01:00",
    "2025-01-01T00:00Z",
    "2025-01-01T00Z",
    "2025",
    "2025-06",
    "2025-01-01T00:00:00",
    "2025-01-01T00:00:60Z",
    "2025-00-01",
    "2025-01-32",
    "2025-01-01T00:00:00.Z",
    "2025-01-01T00:00:00+01",
    "2025-01-01T00:00:00-23:59",
    "2025-01-01T00:00:00+24:00",
    "1969-12-31T23:59:59.999Z",
    "2025-01-01T12:00:00.999999999Z",
]


def date_grammar() -> None:
    files: dict[str, Any] = {}
    for i, t in enumerate(DATE_VARIANTS):
        files[f"s/t{i:02d}.jsonl"] = lines(header(f"t{i:02d}", t=t), mtimeMs=1300000000000 + i * 1000)
    tree = [header("dates"), e_msg("p", None, user("p", 1), ts(0))]
    tree += [e_msg(f"c{i:02d}", "p", user(f"c{i}", 1), t) for i, t in enumerate(DATE_VARIANTS)]
    files["tree/d.jsonl"] = lines(*tree)
    add(
        "x-37-date-grammar",
        "ms(x) on the ECMAScript date-time format and the V8 extensions ours supports (space for T, lowercase "
        "t/z, +HHMM): fraction digits beyond 3, 24:00, the +-8.64e15 limits, expanded and negative years, year "
        "0, -000000, offset-less local time, and invalid fields. Seen through SessionInfo created/modified "
        "(header timestamps; invalid -> created null, modified = mtime) and getTree's child order.",
        None,
        [
            op("list", "/proj", path("s"), pick=["id", "created", "modified"]),
            op("open", path("tree/d.jsonl"), pick=["entryCount"]),
            op("getTree", view="ids"),
        ],
        files=files,
        final={"files": "none"},
    )


def invalid_utf8_in_strings() -> None:
    import base64

    def b(obj: Any) -> bytes:
        return jline(obj).encode("utf-8")

    raw = (
        b"\n".join(
            [
                b(header("bad-utf8")),
                b(e_msg("u", None, user("PLACEHOLDER", 1), ts(1))).replace(
                    b"PLACEHOLDER", b"bad:\xff|\xed\xa0\x80|\xe2\x82|\xc0\xaf|\xf0\x9f\x98\x80|end"
                ),
                b(e_msg("a", "u", asst("ok"), ts(2))),
                b(
                    e_msg("k", "a", {"role": "user", "content": "key", "KEY": 1, "timestamp": 3}, ts(3))
                ).replace(b'"KEY"', b'"k\xfe\xff"'),
                b(
                    {"type": "session_info", "id": "n", "parentId": "k", "timestamp": ts(4), "name": "NAME"}
                ).replace(b"NAME", b"na\x80me"),
            ]
        )
        + b"\n"
    )
    add(
        "x-38-invalid-utf8-in-strings",
        "Valid JSON lines whose strings contain invalid UTF-8 (lone continuation bytes, an encoded surrogate, a "
        "truncated sequence, an overlong form) and an object key with invalid bytes: decoded with U+FFFD "
        "replacement like Node; re-serialized with U+FFFD by createBranchedSession and forkFrom; names and "
        "list() texts use the replaced text; the original file is never rewritten.",
        op("open", path("s/bad.jsonl"), pick=["entryCount", "leafId"]),
        [
            op("getEntries", pick=["id", "message", "name"]),
            op("getSessionName"),
            op("list", "/proj", path("s"), pick=["name", "firstMessage", "allMessagesText"]),
            op("createBranchedSession", "k"),
            op("readFile", parsed=False),
            op("forkFrom", path("s/bad.jsonl"), "/f", path("f"), pick=["entryCount"]),
            op("readFile", parsed=False),
            op("readFile", path("s/bad.jsonl")),
        ],
        files={"s/bad.jsonl": {"base64": base64.b64encode(raw).decode("ascii")}},
    )


def crlf_truncated() -> None:
    good = [
        header("crlf-trunc"),
        e_msg("a", None, user("a", 1), ts(1)),
        e_msg("b", "a", asst("b"), ts(2)),
    ]
    body = "\r\n".join(jline(x) for x in good) + "\r\n" + '{"type":"message","id":"partial","parentId":"b"'
    cr_only = (
        "\r\n".join(jline(x) for x in good[:2]) + "\r\n" + jline(e_msg("z", "a", user("z", 3), ts(3))) + "\r"
    )
    lone_cr = (
        jline(header("lone-cr")).replace('"cwd"', '\r"cwd"')
        + "\n"
        + jline(e_msg("m", None, user("split me", 4), ts(4))).replace('"parentId"', '\r"parentId"')
        + "\n"
        + jline(e_msg("n", "m", user("kept", 5), ts(5)))
        + "\n"
    )
    lone_cr_body = (
        jline(header("lone-cr-body"))
        + "\n"
        + jline(e_msg("m", None, user("split", 4), ts(4))).replace('"parentId"', '\r"parentId"')
        + "\n"
        + jline(e_msg("n", "m", asst("ok"), ts(5)))
        + "\n"
    )
    add(
        "x-08-crlf-truncated-and-lone-cr",
        "CRLF file whose last line is truncated: the repair appends a bare \\n, appends go to their own lines, "
        "reopen and list() agree; a file ending in a lone \\r gets a \\n appended; a lone \\r between JSON "
        "tokens parses for open() but splits the line for list() (a header line split that way drops the file "
        "from the listing).",
        persisted(),
        [
            op("open", path("s/a.jsonl"), pick=["entryCount", "leafId"]),
            op("readFile", parsed=False),
            op("appendMessage", user("after repair", 6)),
            op("readFile", slice=[-2]),
            op("reopen", pick=["entryCount", "leafId"]),
            op("open", path("s/b.jsonl"), pick=["entryCount", "leafId"]),
            op("readFile", parsed=False, slice=[-2]),
            op("open", path("s/c.jsonl"), pick=["entryCount", "leafId", "header"]),
            op("getEntries", view="ids"),
            op("list", "/proj", path("s"), pick=["id", "messageCount", "firstMessage", "allMessagesText"]),
            op("findById", "/proj", "lone-cr", path("s")),
            op("findById", "/proj", "lone-cr-body", path("s")),
        ],
        files={
            "s/a.jsonl": {"text": body, "mtimeMs": 1600000000000},
            "s/b.jsonl": {"text": cr_only, "mtimeMs": 1600000001000},
            "s/c.jsonl": {"text": lone_cr, "mtimeMs": 1600000002000},
            "s/d.jsonl": {"text": lone_cr_body, "mtimeMs": 1600000003000},
        },
    )


def js_blank_lines_rewrite() -> None:
    text_lines = [
        jline(header("blank", version=2)),
        "\u2028",
        "\u00a0\u3000\ufeff",
        "\u000b\u000c",
        "\u0085",
        "\u001c",
        jline(
            e_msg(
                "a",
                None,
                {"role": "hookMessage", "customType": "x", "content": "h", "display": True, "timestamp": 1},
                ts(1),
            )
        ),
        "  \t  ",
        "\u180e",
        jline(e_msg("b", "a", user("b", 2), ts(2))),
    ]
    add(
        "x-09-js-blank-lines-in-rewrite",
        "A v2 file rewritten by migration (D7): JS-blank lines (U+2028, NBSP, U+3000, BOM, VT/FF, spaces/tabs) are "
        "dropped, non-blank unparsable lines (U+0085, U+001C, U+180E which JS no longer treats as space) stay "
        "verbatim in order; hookMessage becomes custom.",
        op("open", path("s/blank.jsonl")),
        [
            op("readFile", parsed=False),
            op("getEntries", view="ids"),
            op("buildSessionContext", view="roles"),
            op(
                "fn.parseSessionEntries",
                '\ufeff\r\n null \r\n0\r\nfalse\r\n"s"\r\n[1]\r\n{"type":"x"}\r\n\u00a0\r\n{bad\r\n\u2029',
            ),
        ],
        files={"s/blank.jsonl": {"lines": text_lines}},
        final={"files": "none"},
    )


def numbers_in_messages() -> None:
    numbers = {
        "big": 1e21,
        "small": 1e-7,
        "edge6": 1e-6,
        "e20": 1e20,
        "third": 0.30000000000000004,
        "tiny": 5e-324,
        "max": 1.7976931348623157e308,
        "unsafe": 9007199254740993,
        "huge": 123456789012345678901234567890,
        "neg": -2.5e-7,
        "negzero": {"$number": "-0"},
        "nan": {"$number": "NaN"},
        "inf": {"$number": "-Infinity"},
        "4294967295": "not an index",
        "4294967294": "last index",
        "01": "leading zero",
        "-1": "negative",
        "1e3": "exponent key",
        "10": "ten",
        "2": "two",
    }
    v1_line = '{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"n","timestamp":1.0,"x":[1.0,1E+2,-0.0,0.1e1,1e-7,100e-9,12345678901234567890]}}'
    add(
        "x-10-numbers-and-keys",
        "Number formatting and key order through appendMessage/appendCustomEntry (written and read back): "
        "1e21, 1e-7, 1e-6, 5e-324, max double, unsafe integers, -0, NaN/Infinity (null), array-index keys up to "
        "4294967294 first, 4294967295/01/-1/1e3 in insertion order; a v1 file's raw number spellings are "
        "re-serialized by the migration rewrite, a v3 file's are kept.",
        persisted(),
        [
            op("appendMessage", {"role": "user", "content": "numbers", "timestamp": 1, "data": numbers}),
            op(
                "appendCustomEntry",
                "nums",
                {"list": [1e21, {"$number": "-0"}, UNDEF, {"$number": "Infinity"}, 0.1], "u": UNDEF},
            ),
            op("appendMessage", asst("flush")),
            op("readFile", parsed=False),
            op("reopen", pick=["entryCount"]),
            op("getEntries", view="full", pick=["type", "message", "data"]),
            op("open", path("old/v1.jsonl"), pick=["entryCount"]),
            op("readFile", parsed=False),
            op("open", path("old/v3.jsonl"), pick=["entryCount"]),
            op("readFile", parsed=False),
            op("getEntries", pick=["message"]),
        ],
        files={
            "old/v1.jsonl": lines(header("nums-v1", version=None), v1_line),
            "old/v3.jsonl": lines(
                header("nums-v3"),
                v1_line.replace('"timestamp":"2025', '"id":"n1","parentId":null,"timestamp":"2025'),
            ),
        },
        final={"files": "none"},
    )


def key_order_and_undefined() -> None:
    add(
        "x-11-key-order-and-undefined-members",
        "What appenders write byte for byte: message objects with integer-like keys, undefined members dropped and "
        "undefined array items written as null, details undefined vs null, fromHook false, usage null, appendUsage "
        "notes (empty, space, undefined), custom data undefined vs null, custom_message display false.",
        persisted(),
        [
            op(
                "appendMessage",
                {"timestamp": 5, "role": "user", "10": "ten", "content": "keys", "2": "two", "x": UNDEF},
            ),
            op("appendCustomEntry", "kind", UNDEF),
            op("appendCustomEntry", "kind", None),
            op("appendCustomEntry", "kind", {"a": [UNDEF, None, 1], "b": UNDEF}),
            op("appendCustomMessageEntry", "cm", "text", False),
            op("appendCustomMessageEntry", "cm", [{"type": "text", "text": "t"}], True, None),
            op("appendCompaction", "s", "nowhere", 3, UNDEF, False, None),
            op("appendUsage", "turn", "p", "m", USAGE, ""),
            op("appendUsage", "turn", "p", "m", USAGE, " "),
            op("appendUsage", "turn", "p", "m", USAGE, UNDEF),
            op("appendThinkingLevelChange", UNDEF),
            op("appendModelChange", "p", None),
            op("appendMessage", asst("flush")),
            op("readFile", parsed=False),
            op("buildSessionContext"),
        ],
        final={"files": "none"},
    )


def unicode_names_and_labels() -> None:
    add(
        "x-12-unicode-names-and-labels",
        "Session names and labels with non-ASCII text: CR/LF runs, U+2028, NEL, ideographic space and BOM (JS trim), "
        "emoji, combining marks, RTL, lone surrogates; getSessionName, getLabel, tree labels, the written lines "
        "(lone surrogates escaped) and list() names after reopen.",
        persisted(),
        [
            op("appendMessage", user("héllo wörld 🎉", 1), as_="u1"),
            op("appendSessionInfo", "  naïve\r\n\r\nname 🎉  "),
            op("getSessionName"),
            op("appendSessionInfo", "\u3000wide\u3000\ufeff"),
            op("getSessionName"),
            op("appendSessionInfo", "a\u2028b\u0085c\rd\n\ne"),
            op("getSessionName"),
            op("appendLabelChange", ref("u1"), "e\u0301 \u05e9\u05dc\u05d5\u05dd \ud83d"),
            op("getLabel", ref("u1")),
            op("appendMessage", asst("ok 🙂")),
            op("appendLabelChange", ref("u1"), "🏷️ final"),
            op("getTree", view="flat"),
            op("readFile", parsed=False),
            op("reopen", pick=["entryCount"]),
            op("getSessionName"),
            op("list", "/proj", path("sessions"), pick=["name", "firstMessage", "allMessagesText"]),
        ],
        final={"files": "none"},
    )


def labels_falsy_values() -> None:
    add(
        "x-13-label-values",
        "appendLabelChange with non-string labels: '' / 0 / false / null clear, 5, objects and arrays are kept as "
        "given (truthy), whitespace is not trimmed; labels on label entries; reload rebuilds the same map.",
        persisted(),
        [
            op("appendMessage", user("u", 1), as_="u"),
            op("appendMessage", asst("a"), as_="a"),
            op("appendLabelChange", ref("u"), 5),
            op("getLabel", ref("u")),
            op("appendLabelChange", ref("u"), 0),
            op("getLabel", ref("u")),
            op("appendLabelChange", ref("a"), {"k": [1]}),
            op("appendLabelChange", ref("u"), ["x"], as_="lx"),
            op("appendLabelChange", ref("lx"), " spaced "),
            op("getTree", view="flat"),
            op("appendLabelChange", ref("a"), False),
            op("appendLabelChange", ref("u"), None),
            op("getLabel", ref("a")),
            op("getLabel", ref("u")),
            op("getLabel", ref("lx")),
            op("readFile", slice=[3]),
            op("reopen", pick=["entryCount", "leafId"]),
            op("getTree", view="flat"),
        ],
        final={"files": "none"},
    )


# ===========================================================================
# createBranchedSession
# ===========================================================================


def branched_session_labels_other_branches() -> None:
    ops = [
        op("appendMessage", user("u1", 1), as_="u1"),
        op("appendMessage", asst("a1"), as_="a1"),
        op("appendMessage", user("u2 (branch A)", 2), as_="u2"),
        op("appendLabelChange", ref("u1"), "x"),
        op("appendLabelChange", ref("a1"), "y"),
        op("appendLabelChange", ref("u2"), "off-path"),
        op("branch", ref("a1")),
        op("appendMessage", user("u3 (branch B)", 3), as_="u3"),
        op("appendLabelChange", ref("u1"), "x2"),
        op("branch", ref("u2")),
        op("appendLabelChange", ref("a1"), UNDEF),
        op("branch", ref("u3")),
        op("appendLabelChange", ref("a1"), "y2"),
        op("appendLabelChange", ref("u3"), "w"),
        op("getLeafId", as_="leaf"),
        op("createBranchedSession", {"$leafId": True}),
        op("getEntries", pick=["type", "id", "parentId", "targetId", "label"]),
        op("getTree", view="flat"),
        op("getLabel", ref("u2")),
    ]
    add(
        "x-14-branched-session-labels-from-other-branches",
        "createBranchedSession (persisted, path with an assistant: written at once) re-creates labels set on OTHER "
        "branches for path entries, in label-map order (cleared and re-set moves to the end), with the original "
        "label timestamps; labels of off-path entries dropped; the old file untouched.",
        persisted(),
        [*ops, op("readFile", parsed=False), op("reopen", pick=["entryCount", "leafId"])],
    )
    add(
        "x-15-branched-session-in-memory-no-assistant",
        "A similar label history in memory: createBranchedSession returns undefined and keeps labels set on other "
        "branches; persisted without an assistant on the path the new file is only written with the next "
        "assistant message.",
        mem(),
        [
            op("appendMessage", user("u1", 1), as_="u1"),
            op("appendMessage", user("u2", 2), as_="u2"),
            op("appendLabelChange", ref("u2"), "off-path later"),
            op("branch", ref("u1")),
            op("appendMessage", user("u3", 3), as_="u3"),
            op("appendLabelChange", ref("u1"), "x"),
            op("branch", ref("u2")),
            op("appendLabelChange", ref("u3"), "set from the other branch"),
            op("appendLabelChange", ref("u1"), UNDEF),
            op("appendLabelChange", ref("u1"), "x again"),
            op("createBranchedSession", ref("u3")),
            op("getEntries", pick=["type", "id", "parentId", "targetId", "label", "timestamp"]),
            op("getSessionFile"),
            op("create", "/proj", path("p")),
            op("appendMessage", user("p1", 1), as_="p1"),
            op("appendMessage", user("p2", 2), as_="p2"),
            op("appendLabelChange", ref("p1"), "L"),
            op("createBranchedSession", ref("p2")),
            op("listDir", "p"),
            op("appendMessage", asst("now written")),
            op("readFile", parsed=False),
        ],
    )


def branched_session_from_compaction_path() -> None:
    add(
        "x-16-branched-session-compaction-and-labels",
        "createBranchedSession where a compaction's firstKeptEntryId points at a removed label entry that sits right "
        "before the compaction (maps to the compaction itself) and at one before a later entry; leaf in the middle "
        "of a branch; context of the new session.",
        mem(),
        [
            op("appendMessage", user("u1", 1), as_="u1"),
            op("appendLabelChange", ref("u1"), "before-c1", as_="L1"),
            op("appendCompaction", "c1", ref("L1"), 5, as_="c1"),
            op("appendLabelChange", ref("u1"), "mid", as_="L2"),
            op("appendMessage", user("u2", 2), as_="u2"),
            op("appendCompaction", "c2", ref("L2"), 6, as_="c2"),
            op("appendMessage", asst("a2"), as_="a2"),
            op("appendMessage", user("u3", 3)),
            op("createBranchedSession", ref("a2")),
            op("getEntries", pick=["type", "id", "parentId", "firstKeptEntryId", "targetId", "label"]),
            op("buildSessionContext", view="roles"),
            op("buildContextEntries", view="ids"),
        ],
    )


def branched_from_an_absent_leaf() -> None:
    add(
        "x-39-branched-from-an-absent-leaf",
        "The file's last entry has no id, so there is no leaf after open(): the entries appended then hold "
        "parentId undefined, and createBranchedSession() writes the re-rooted first one with parentId null in "
        "that key's place, after the id (pi spreads the entry); in memory too.",
        op("open", path("s/a.jsonl")),
        [
            op("getLeafId"),
            op("appendMessage", user("new", 3), as_="n"),
            op("appendMessage", asst("reply"), as_="r"),
            op("createBranchedSession", ref("r")),
            op("readFile", parsed=False),
            op("getEntries"),
        ],
        files={
            "s/a.jsonl": lines(
                header("absent-leaf"),
                e_msg("u1", None, user("hi", 1), ts(1)),
                {"type": "custom", "customType": "hand-edited, no id", "parentId": "u1", "timestamp": ts(2)},
            )
        },
    )


def session_names_not_strings() -> None:
    add(
        "x-40-session-names-not-strings",
        "appendSessionInfo() with a name that is no string: pi calls name.replace, so null and undefined are "
        "'Cannot read properties of ...' and the rest 'name.replace is not a function', TypeErrors all; "
        "nothing is appended.",
        mem(),
        [
            op("appendSessionInfo", "kept"),
            *(
                step
                for name in (5, None, UNDEF, ["a"], {"a": 1}, True)
                for step in (op("appendSessionInfo", name), op("getSessionName"))
            ),
            op("getEntries", view="types"),
        ],
    )


def values_that_are_not_entries() -> None:
    v3, v1 = header("notobj", version=3), header("notobj-v1", version=None)
    first = e_msg("u1", None, user("hi", 1), ts(1))
    add(
        "x-41-values-that-are-not-entries",
        "Values that are no object handed to inMemory(), migrateSessionEntries() and the context functions: "
        "kept as they are where pi does not touch them (a v3 list), pi's TypeErrors where it reads null's type "
        "or id or sets an id on a primitive (a v1 list).",
        mem(),
        [
            op("inMemory", "/proj", UNDEF, [v3, first, 123, "str", True, 0, False], pick=["entryCount"]),
            op("getEntries"),
            op("inMemory", "/proj", UNDEF, [v3, first, None]),
            op("inMemory", "/proj", UNDEF, [first, None]),
            op(
                "inMemory",
                "/proj",
                UNDEF,
                [v1, {"type": "message", "timestamp": ts(1), "message": user("m", 1)}, 5],
            ),
            op("inMemory", "/proj", UNDEF, [v1, "text"]),
            op("inMemory", "/proj", UNDEF, [v1, True]),
            op("fn.migrateSessionEntries", [{"type": "message", "message": user("m", 1)}, 7]),
            op("fn.buildSessionContext", [v3, first, None], view="roles"),
            op("fn.buildContextEntries", [v3, first, None], view="ids"),
            op("fn.getLatestCompactionEntry", [v3, first, None]),
            op("fn.getLatestCompactionEntry", [None, {"type": "compaction", "id": "c"}]),
        ],
    )


# ===========================================================================
# Listing
# ===========================================================================


def list_mtime_fallbacks() -> None:
    add(
        "x-17-list-mtime-and-dates",
        "SessionInfo dates from file mtimes set through Node's utimes (seconds as a double, truncated to "
        "microseconds: mtimeMs 1700000000123 is read back as ...122.999 and shown as .122Z), a numeric header "
        "timestamp (not a string: mtime used), negative and huge message timestamps (1e21: invalid Date -> null), "
        "offset timestamps, and ties broken by file name.",
        None,
        [
            op("list", "/proj", path("s"), pick=["path", "id", "created", "modified", "messageCount"]),
            op("listAll", path("s"), pick=["id", "modified"]),
            op("fn.findMostRecentSession", path("s")),
            op("continueRecent", "/proj", path("s"), pick=["sessionId", "entryCount"]),
        ],
        files={
            "s/a-invalid-ts.jsonl": lines(header("a-invalid", t="garbage"), mtimeMs=1700000000123),
            "s/b-numeric-ts.jsonl": lines(header("b-numeric", t=1600000000000), mtimeMs=1600000000999.5),
            "s/c-negative.jsonl": lines(
                header("c-negative", t="2024-06-01T00:00:00+02:00"),
                e_msg("m", None, user("neg", -5), ts(1)),
                mtimeMs=1234567890001,
            ),
            "s/d-huge.jsonl": lines(
                header("d-huge"),
                e_msg("m", None, asst("huge", 1e21), ts(1)),
                mtimeMs=1500000000000,
            ),
            "s/e-string-msg-ts.jsonl": lines(
                header("e-string"),
                e_msg("m", None, user("string ts", "1700000000000"), "2025-03-01T10:00:00.5Z"),
                mtimeMs=1500000000000,
            ),
            "s/F-tie.jsonl": lines(header("F-tie", t="2025-02-01T00:00:00.000Z"), mtimeMs=1400000000000),
            "s/f-tie.jsonl": lines(header("f-tie", t="2025-02-01T00:00:00.000Z"), mtimeMs=1400000000000),
            "s/_tie.jsonl": lines(header("_tie", t="2025-02-01T00:00:00.000Z"), mtimeMs=1400000000000),
            "s/1tie.jsonl": lines(header("1tie", t="2025-02-01T00:00:00.000Z"), mtimeMs=1400000000000),
            "s/f-tie-x.jsonl": lines(header("f-tie-x", t="2025-02-01T00:00:00.000Z"), mtimeMs=1400000000000),
        },
        final={"files": "none"},
    )


def list_texts_and_names() -> None:
    add(
        "x-18-list-texts-and-odd-content",
        "SessionInfo texts: text blocks whose text is a number/null/missing (String conversion), non-text blocks, "
        "messages without a content key (counted, no text/activity), toolResult/custom roles (counted only), "
        "content null (D6: listed), session_info with a non-string name (D6), name cleared later, header cwd not "
        "a string (cwd '' and filtered out by list(cwd) but kept by listAll).",
        None,
        [
            op(
                "listAll",
                path("s"),
                pick=["id", "cwd", "name", "messageCount", "firstMessage", "allMessagesText", "modified"],
            ),
            op("list", "/proj", path("s"), pick=["id"]),
        ],
        files={
            "s/a.jsonl": lines(
                header("texts"),
                e_msg(
                    "1",
                    None,
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": 42},
                            {"type": "text"},
                            {"type": "text", "text": None},
                            {"type": "image"},
                            {"type": "text", "text": "end"},
                        ],
                        "timestamp": 1600000000000,
                    },
                ),
                e_msg("2", "1", {"role": "assistant", "timestamp": 1600000000500}),
                e_msg("3", "2", {"role": "toolResult", "content": "tool text", "timestamp": 1600000009000}),
                e_msg("4", "3", {"role": "user", "content": None, "timestamp": 1600000001000}),
                e_msg("5", "4", {"role": "user", "content": "", "timestamp": 1600000002000}),
                e_msg("6", "5", {"role": "assistant", "content": "plain string", "timestamp": 1600000003000}),
                {
                    "type": "session_info",
                    "id": "n1",
                    "parentId": "6",
                    "timestamp": ts(1),
                    "name": "  named  ",
                },
                {"type": "session_info", "id": "n2", "parentId": "n1", "timestamp": ts(2), "name": 7},
                mtimeMs=1300000000000,
            ),
            "s/b.jsonl": lines(
                header("cwd-not-string", cwd=["/proj"]),
                e_msg("1", None, user("hi", 1500000000000)),
                {"type": "session_info", "id": "n1", "parentId": "1", "timestamp": ts(1), "name": "gone"},
                {"type": "session_info", "id": "n2", "parentId": "n1", "timestamp": ts(2), "name": "   "},
                mtimeMs=1300000000000,
            ),
        },
        final={"files": "none"},
    )


# ===========================================================================
# Sessions, paths, helpers
# ===========================================================================


def session_ids_and_options() -> None:
    add(
        "x-19-session-id-edge-cases",
        "Session id rule with a trailing/leading newline (JS $ is end of input), dots and underscores at the ends, "
        "non-string ids; newSession options (parentSession kept verbatim, id) on a persisted manager; in-memory "
        "newSession returns undefined.",
        mem(),
        [
            op("fn.assertValidSessionId", "a\n"),
            op("fn.assertValidSessionId", "\na"),
            op("fn.assertValidSessionId", "a_"),
            op("fn.assertValidSessionId", "a._-b"),
            op("fn.assertValidSessionId", "0"),
            op("fn.assertValidSessionId", 5),
            op("fn.assertValidSessionId", None),
            op("fn.assertValidSessionId", "x" * 300),
            op("fn.assertValidSessionId", "é"),
            op("newSession", {"id": "mem.1"}),
            op("info", pick=["sessionId", "header"]),
            op("create", "/proj", path("s"), {"id": "a\n"}),
            op("create", "/proj", path("s"), {"id": "P.1_x-2", "parentSession": "../rel/parent.jsonl"}),
            op("newSession", {"parentSession": None}),
            op("getHeader"),
            op("newSession", {"id": "Z9", "parentSession": 5}),
            op("getHeader"),
            op("getSessionFile"),
        ],
    )


def paths_and_directories() -> None:
    add(
        "x-20-paths-and-directories",
        "Paths: open() of a directory (EISDIR), of '~/...' (HOME), of a relative path with '..'; setSessionFile to "
        "a directory (D5 keeps the state); getDefaultSessionDir with backslashes, colons, '~', a file:// URL and a "
        "trailing slash; create() with a relative cwd.",
        persisted("s"),
        [
            op("appendMessage", user("kept", 1), as_="u"),
            op("open", path("s")),
            op("setSessionFile", path("s")),
            op("getLeafId"),
            op("open", "~/h.jsonl", pick=["sessionFile", "cwd", "entryCount"]),
            op("open", "./x/../s/../h2.jsonl", pick=["sessionFile", "entryCount"]),
            op("fn.getDefaultSessionDir", "/a\\b:c/"),
            op("fn.getDefaultSessionDir", "~/proj"),
            op("fn.getDefaultSessionDir", {"$fileUrl": "p q"}),
            op("fn.getDefaultSessionDir", "rel/dir", path("agent2")),
            op("create", "rel", pick=["cwd", "sessionDir"]),
            op("listDir", "agent/sessions"),
        ],
        files={"home/h.jsonl": lines(header("in-home", cwd="/home-proj"), e_msg("m", None, user("h", 1)))},
    )


def set_session_file_odd() -> None:
    add(
        "x-21-setsessionfile-odd-targets",
        "setSessionFile to an empty file (fresh header with the manager's cwd, written at once), to a BOM-prefixed "
        "file (throws, state restored: D5), to a missing file in a missing directory (first flush fails with "
        "ENOENT), and back to the original file.",
        persisted("s", "/mine"),
        [
            op("appendMessage", user("u", 1)),
            op("appendMessage", asst("a")),
            op("getSessionFile", as_="orig"),
            op("setSessionFile", path("s/empty.jsonl")),
            op("info", pick=["cwd", "leafId", "entryCount"]),
            op("readFile", path("s/empty.jsonl")),
            op("appendMessage", user("into empty", 2)),
            op("setSessionFile", path("s/bom.jsonl")),
            op("info", pick=["sessionFile", "leafId", "entryCount"]),
            op("setSessionFile", path("nodir/x.jsonl")),
            op("appendMessage", user("pending", 3)),
            op("appendMessage", asst("fails")),
            op("appendMessage", user("fails too", 4)),
            op("setSessionFile", ref("orig")),
            op("info", pick=["entryCount", "leafId"]),
        ],
        files={
            "s/empty.jsonl": {"text": ""},
            "s/bom.jsonl": {
                "lines": [jline(header("bom")), jline(e_msg("b", None, user("b", 1)))],
                "bom": True,
            },
        },
    )


def fork_odd_sources() -> None:
    add(
        "x-22-fork-odd-sources",
        "forkFrom a CRLF v2 source with a duplicate header, labels and a truncated last line (source repaired; "
        "copy migrated: D4; duplicate header dropped), with a relative target cwd and an explicit id; then from a "
        "v1 source with a compaction index; fork of a BOM file fails. (The ids sort the two new files in the same "
        "order whether or not they were made in the same millisecond.)",
        None,
        [
            op("forkFrom", path("src/v2.jsonl"), "rel/target", path("forks"), {"id": "fork.1"}),
            op("readFile", parsed=False),
            op("getTree", view="flat"),
            op("readFile", path("src/v2.jsonl"), parsed=False, slice=[-1]),
            op("forkFrom", path("src/v1.jsonl"), "/t", path("forks"), {"id": "fork.2-b"}),
            op("getEntries", pick=["type", "firstKeptEntryId", "firstKeptEntryIndex"]),
            op("forkFrom", path("src/bom.jsonl"), "/t", path("forks")),
            op("listDir", "forks"),
        ],
        files={
            "src/v2.jsonl": {
                "text": "\r\n".join(
                    jline(x)
                    for x in [
                        header("v2-src", version=2),
                        e_msg(
                            "a",
                            None,
                            {
                                "role": "hookMessage",
                                "customType": "h",
                                "content": "x",
                                "display": True,
                                "timestamp": 1,
                            },
                            ts(1),
                        ),
                        header("v2-dup", version=2),
                        e_label("l", "a", "a", "lab", ts(2)),
                        e_msg("b", "l", asst("b"), ts(3)),
                    ]
                )
                + '\r\n{"type":"message"'
            },
            "src/v1.jsonl": lines(
                header("v1-src", version=None),
                {"type": "message", "timestamp": ts(1), "message": user("m", 1)},
                {
                    "type": "compaction",
                    "timestamp": ts(2),
                    "summary": "s",
                    "firstKeptEntryIndex": 1,
                    "tokensBefore": 3,
                },
            ),
            "src/bom.jsonl": {"lines": [jline(header("bom"))], "bom": True},
        },
    )


def in_memory_entries_odd() -> None:
    add(
        "x-23-inmemory-entries-odd",
        "inMemory(cwd, options, entries): the header in the middle of the list, two headers (the first wins), a v1 "
        "header with a compaction index (migrated in memory), and headerless v1-style entries (not migrated, ids "
        "missing); appends after each.",
        op(
            "inMemory",
            "/proj",
            {"id": "ignored"},
            [
                e_msg("a", None, user("before header", 1)),
                header("mid", version=3),
                header("second", version=3),
                e_msg("b", "a", user("after", 2)),
            ],
        ),
        [
            op("getHeader"),
            op("getEntries", view="ids"),
            op("appendMessage", user("new", 3), as_="n"),
            op("getEntry", ref("n"), pick=["parentId"]),
            op(
                "inMemory",
                "/proj",
                UNDEF,
                [
                    header("v1mem", version=None),
                    {"type": "message", "timestamp": ts(1), "message": user("m1", 1)},
                    {
                        "type": "compaction",
                        "timestamp": ts(2),
                        "summary": "s",
                        "firstKeptEntryIndex": 1,
                        "tokensBefore": 1,
                    },
                ],
                pick=["sessionId", "header", "entryCount"],
            ),
            op("getEntries", pick=["type", "id", "parentId", "firstKeptEntryId"]),
            op(
                "inMemory",
                "/proj",
                {"id": "given"},
                [{"type": "message", "timestamp": ts(1), "message": user("no ids", 1)}],
                pick=["sessionId", "entryCount", "leafId"],
            ),
            op("getEntries", pick=["type", "id", "parentId"]),
            op("appendMessage", user("after id-less", 2), as_="m"),
            op("getEntry", ref("m"), pick=["parentId"]),
            op("getTree", view="ids"),
        ],
    )


def fn_helpers_odd() -> None:
    add(
        "x-24-fn-helpers-odd-inputs",
        "Exported helpers with unusual inputs: migrateSessionEntries with versions '2', 'abc', 2.5, true and no "
        "header; getLatestCompactionEntry of [] and of entries; sessionEntryToContextMessages for every entry type "
        "(compaction with systemMessage, branch_summary, custom_message display:false, model_change); "
        "loadEntriesFromFile of a missing file, a BOM file and a file without a final newline (repaired).",
        None,
        [
            op(
                "fn.migrateSessionEntries",
                [
                    header("v-str", version="2"),
                    e_msg("a", None, {"role": "hookMessage", "content": "h", "timestamp": 1}),
                ],
            ),
            op(
                "fn.migrateSessionEntries",
                [header("v-abc", version="abc"), {"type": "message", "message": user("x")}],
            ),
            op(
                "fn.migrateSessionEntries",
                [header("v-25", version=2.5), {"type": "message", "message": {"role": "hookMessage"}}],
            ),
            op(
                "fn.migrateSessionEntries",
                [header("v-true", version=True), {"type": "message", "message": user("x")}],
            ),
            op(
                "fn.migrateSessionEntries",
                [
                    {"type": "message", "message": user("no header")},
                    {"type": "compaction", "firstKeptEntryIndex": 0},
                ],
            ),
            op("fn.getLatestCompactionEntry", []),
            op(
                "fn.getLatestCompactionEntry",
                [
                    {"type": "compaction", "id": "c1"},
                    {"type": "message"},
                    {"type": "compaction", "id": "c2"},
                    {"type": "label"},
                ],
            ),
            op(
                "fn.sessionEntryToContextMessages",
                {
                    "type": "compaction",
                    "id": "c",
                    "parentId": None,
                    "timestamp": ts(1),
                    "summary": "S",
                    "firstKeptEntryId": "x",
                    "tokensBefore": 1,
                    "systemMessage": {"role": "system", "content": "sys", "timestamp": 3},
                },
            ),
            op(
                "fn.sessionEntryToContextMessages",
                {
                    "type": "branch_summary",
                    "id": "b",
                    "parentId": None,
                    "timestamp": ts(2),
                    "fromId": "root",
                    "summary": "B",
                },
            ),
            op(
                "fn.sessionEntryToContextMessages",
                {
                    "type": "custom_message",
                    "id": "m",
                    "parentId": None,
                    "timestamp": ts(3),
                    "customType": "t",
                    "content": "c",
                    "display": False,
                    "details": {"d": 1},
                },
            ),
            op(
                "fn.sessionEntryToContextMessages",
                {
                    "type": "model_change",
                    "id": "mc",
                    "parentId": None,
                    "timestamp": ts(4),
                    "provider": "p",
                    "modelId": "m",
                },
            ),
            op(
                "fn.sessionEntryToContextMessages",
                {
                    "type": "message",
                    "id": "u",
                    "parentId": None,
                    "timestamp": ts(5),
                    "message": {"role": "toolResult", "toolCallId": "t", "content": []},
                },
            ),
            op("fn.loadEntriesFromFile", path("missing.jsonl")),
            op("fn.loadEntriesFromFile", path("bom.jsonl")),
            op("fn.loadEntriesFromFile", path("open-end.jsonl"), view="types"),
            op("fn.loadEntriesFromFile", path("header-only.jsonl")),
        ],
        files={
            "bom.jsonl": {"lines": [jline(header("bom"))], "bom": True},
            "open-end.jsonl": lines(header("open"), e_msg("a", None, user("a", 1)), trailingNewline=False),
            "header-only.jsonl": lines(header("only")),
        },
    )


def context_settings_across_branches() -> None:
    add(
        "x-25-context-settings",
        "buildSessionContext settings: thinking level and model from entries before a compaction's kept range and "
        "on other branches, an assistant overriding the model, an assistant without provider/model, "
        "model_change with odd values; branch summaries and custom messages in the path.",
        mem(),
        [
            op("appendThinkingLevelChange", "high"),
            op("appendModelChange", "anthropic", "claude-a"),
            op("appendMessage", user("u1", 1), as_="u1"),
            op("appendMessage", asst("a1", provider="openai", model="gpt-x"), as_="a1"),
            op("appendThinkingLevelChange", "low", as_="tl"),
            op("appendMessage", user("u2", 2), as_="u2"),
            op("appendCompaction", "c", ref("u2"), 10),
            op("buildSessionContext", view="roles"),
            op("branch", ref("u1")),
            op("appendMessage", {"role": "assistant", "content": [], "timestamp": 3}),
            op("buildSessionContext", view="roles"),
            op("appendModelChange", None, 5),
            op("buildSessionContext", view="roles"),
            op("branchWithSummary", ref("a1"), "went back", {"why": 1}),
            op("appendCustomMessageEntry", "note", "hidden", False),
            op("buildSessionContext"),
            op("buildContextEntries", view="types"),
        ],
    )


def deep_chain() -> None:
    n = 3000
    entries = [header("deep-chain")]
    prev = None
    for i in range(n):
        eid = f"n{i:05d}"
        entries.append(e_msg(eid, prev, user(f"m{i}", i), ts(i % 86400)))
        prev = eid
    add(
        "x-26-deep-chain",
        "A 3000-entry linear chain (deeper than Python's default recursion limit): open, getBranch, tree shape, "
        "context, createBranchedSession from the middle, fork, and the label map on the last entry.",
        op("open", path("s/deep.jsonl"), pick=["entryCount", "leafId"]),
        [
            op("getBranch", view="count"),
            op("getTree", view="count"),
            op("buildSessionContext", view="count"),
            op("appendLabelChange", "n02999", "end"),
            op("getLabel", "n02999"),
            op("getChildren", "n01499", view="ids"),
            op("createBranchedSession", "n01500"),
            op("getEntries", view="count"),
            op("buildContextEntries", view="count"),
            op("forkFrom", path("s/deep.jsonl"), "/f", path("f"), pick=["entryCount"]),
            op("getBranch", view="count"),
        ],
        files={"s/deep.jsonl": lines(*entries)},
        final={"files": "none"},
    )


def eexist_and_flush() -> None:
    add(
        "x-27-first-flush-conflicts",
        "The first batch write uses exclusive create: a file created at the session path before the first "
        "assistant makes that append and later ones fail with EEXIST (entries stay in memory); deleting the "
        "intruder lets the next append write everything; newSession afterwards starts clean.",
        persisted(),
        [
            op("appendMessage", user("u", 1)),
            op("writeFile", {"$sessionFile": True}, {"text": "intruder\n"}),
            op("appendMessage", asst("a")),
            op("appendMessage", user("u2", 2)),
            op("info", pick=["entryCount", "leafId"]),
            op("deleteFile", {"$sessionFile": True}),
            op("appendMessage", user("u3", 3)),
            op("readFile", parsed=False),
            op("appendMessage", asst("a2")),
            op("newSession"),
            op("appendMessage", user("fresh", 4)),
            op("exists", {"$sessionFile": True}),
        ],
    )


def continue_recent_filters() -> None:
    add(
        "x-28-continue-recent-and-find",
        "continueRecent/findById/findMostRecentSession with a custom directory: newest valid header whose cwd "
        "resolves to the given cwd ('/proj/../proj', trailing slash), invalid newer files skipped, directories "
        "named *.jsonl skipped, header id matched strictly (no prefix, number vs string).",
        None,
        [
            op("continueRecent", "/proj/../proj/", path("s"), pick=["sessionId", "cwd", "entryCount"]),
            op("fn.findMostRecentSession", path("s"), "/proj"),
            op("fn.findMostRecentSession", path("s")),
            op("findById", "/proj", "good", path("s")),
            op("findById", "/proj", "goo", path("s")),
            op("findById", "/other", "other", path("s")),
            op("findById", "/proj", "5", path("s")),
            op("list", "/proj/", path("s"), pick=["id", "cwd"]),
        ],
        files={
            "s/1-good.jsonl": lines(
                header("good", cwd="/proj/"), e_msg("a", None, user("g", 1)), mtimeMs=1500000000000
            ),
            "s/2-other.jsonl": lines(header("other", cwd="/other"), mtimeMs=1500000001000),
            "s/3-invalid.jsonl": {
                "lines": ["not json", jline(e_msg("a", None, user("x")))],
                "mtimeMs": 1500000002000,
            },
            "s/4-dir.jsonl": {"dir": True, "mtimeMs": 1500000003000},
            "s/5-numeric.jsonl": lines(header(5, cwd="/proj"), mtimeMs=1400000000000),
            "s/6-bom.jsonl": {
                "lines": [jline(header("bom", cwd="/proj"))],
                "bom": True,
                "mtimeMs": 1500000004000,
            },
        },
    )


def header_variants() -> None:
    add(
        "x-29-header-variants",
        "Headers with a numeric id (open rejects, list accepts), an empty-string id (valid), extra keys and a "
        "non-string cwd (open uses the process cwd), a version 'abc' (rewritten unchanged), version '3' (not "
        "migrated).",
        None,
        [
            op("open", path("s/num.jsonl")),
            op("open", path("s/empty-id.jsonl"), pick=["sessionId", "cwd", "header"]),
            op("open", path("s/cwd.jsonl"), pick=["cwd", "header"]),
            op("open", path("s/abc.jsonl"), pick=["header", "entryCount"]),
            op("readFile", parsed=False),
            op("open", path("s/three.jsonl"), pick=["header"]),
            op("getEntries", pick=["message"]),
            op("list", "/proj", path("s"), pick=["id", "cwd"]),
        ],
        files={
            "s/num.jsonl": lines(header(5), mtimeMs=1500000000000),
            "s/empty-id.jsonl": lines(header(""), mtimeMs=1500000001000),
            "s/cwd.jsonl": lines(
                header("cwd-obj", cwd={"p": 1}, extra="kept", nested={"2": 1, "1": 2}), mtimeMs=1500000002000
            ),
            "s/abc.jsonl": lines(
                header("abc", version="abc"), e_msg("a", None, {"role": "hookMessage", "content": "h"})
            ),
            "s/three.jsonl": lines(
                header("three", version="3"), e_msg("a", None, {"role": "hookMessage", "content": "h"})
            ),
        },
        final={"files": "none"},
    )


def runner_helper_ops() -> None:
    add(
        "x-30-runner-helper-ops",
        "The runner's own helper ops and directives, no session manager involved: file specs (lines/eol/bom/base64/"
        "dir/mtime), readFile dumps (CRLF, invalid lines, big and -0 numbers, integer-like keys, slice, parsed), "
        "listDir/exists/deleteFile/appendFile/setMtime errors with Node's texts, $ref/$get/$number/$fileUrl/"
        "$literal, views and pick on plain values, unknown ops.",
        None,
        [
            op("listDir"),
            op("listDir", "a"),
            op("listDir", "nope"),
            op("readFile", "a/b.jsonl"),
            op("readFile", "c.txt", parsed=False, slice=[-1]),
            op("readFile", "e.bin"),
            op("readFile", "d"),
            op("readFile", "zz"),
            op("readFile"),
            op("exists", path("d")),
            op("exists", 5),
            op("writeFile", "w/x.jsonl", {"lines": [], "trailingNewline": True}, as_="w"),
            op("appendFile", "w/x.jsonl", "abc\n"),
            op("appendFile", "w/y.jsonl", {"lines": ["1", "2"]}),
            op("deleteFile", "c.txt"),
            op("deleteFile", "c.txt"),
            op("deleteFile", "d"),
            op("setMtime", "a/b.jsonl", 1000),
            op("setMtime", "nope", 1000),
            op("setMtime", "a/b.jsonl", None),
            op("writeFile", "d", {"text": "x"}),
            op("writeFile", "q", {"nothing": 1}),
            op("writeFile", "q", 5),
            op("getLeafId"),
            op("info", as_="i"),
            op("exists", ref("w")),
            op("exists", ref(11)),
            op("exists", ref(99)),
            op("exists", ref("nope")),
            op("exists", ref(None)),
            op("exists", ref(0, "lines.0.raw")),
            op("listDir", ref(1, ["length"])),
            op("readFile", path("a/b.jsonl"), view="count"),
            op("listDir", view="ids"),
            op("listDir", view="types"),
            op("listDir", view="roles"),
            op("listDir", view="flat"),
            op("listDir", view="bogus"),
            op("readFile", "a/b.jsonl", pick=["trailingNewline", "lineCount", "nope"]),
            op("exists", {"$number": "bad"}),
            op("exists", {"$fileUrl": "a b#c"}),
            op("nope"),
            {"op": 5},
            7,
            op("SessionManager.appendMessage"),
            op("fn.SessionManager"),
            op("fn.nothing"),
            op("listDir", {"$literal": {"$path": "x"}}),
            op("readFile", "a/b.jsonl", slice=[1, None]),
            op("readFile", "a/b.jsonl", slice=["1"], parsed=False),
        ],
        files={
            "a/b.jsonl": lines(
                '{"type":"session","id":"x"}',
                "garbage",
                '{"n":1e21,"m":1e-7,"z":-0,"big":12345678901234567890,"2":1,"1":0,"inf":1e400}',
                eol="\r\n",
            ),
            "c.txt": {"text": "héllo\u2028", "bom": True, "mtimeMs": 1700000000123},
            "d": {"dir": True},
            "e.bin": {"base64": "/w==", "mtimeMs": -1500.7},
            "f.bin": {"base64": "_-8"},
        },
        final={"files": "all"},
    )


def usage_and_custom() -> None:
    add(
        "x-31-usage-entries-in-paths",
        "appendUsage entries interleaved with compactions and branches: part of getBranch and buildContextEntries, "
        "never in context messages; firstKeptEntryId pointing at a usage entry; branchWithSummary from a usage "
        "entry; persisted key order.",
        persisted(),
        [
            op("appendMessage", user("u", 1), as_="u"),
            op("appendUsage", "turn", "anthropic", "claude", USAGE, "first", as_="us1"),
            op("appendMessage", asst("a"), as_="a"),
            op("appendUsage", "compaction", "openai", "gpt", {"input": 5}, as_="us2"),
            op("appendCompaction", "sum", ref("us1", "id"), 9, as_="c"),
            op("buildContextEntries", view="types"),
            op("buildSessionContext", view="roles"),
            op("branchWithSummary", ref("us2", "id"), "from usage", as_="bs"),
            op("getBranch", view="types"),
            op("buildSessionContext", view="roles"),
            op("readFile", parsed=False, slice=[2]),
        ],
        final={"files": "none"},
    )


BUILDERS = [
    tree_sort_unparsable,
    duplicate_ids_and_labels,
    cycles_with_labels,
    numeric_and_odd_ids,
    getbranch_odd_args,
    compaction_checkpoints,
    v1_first_kept_index,
    crlf_truncated,
    js_blank_lines_rewrite,
    numbers_in_messages,
    key_order_and_undefined,
    unicode_names_and_labels,
    labels_falsy_values,
    branched_session_labels_other_branches,
    branched_session_from_compaction_path,
    list_mtime_fallbacks,
    list_texts_and_names,
    session_ids_and_options,
    paths_and_directories,
    set_session_file_odd,
    fork_odd_sources,
    in_memory_entries_odd,
    fn_helpers_odd,
    context_settings_across_branches,
    deep_chain,
    eexist_and_flush,
    continue_recent_filters,
    header_variants,
    runner_helper_ops,
    usage_and_custom,
    set_session_file_migrates_target,
    foreign_writes_after_load,
    non_object_messages,
    header_size_boundary,
    header_only_without_newline,
    date_grammar,
    invalid_utf8_in_strings,
    branched_from_an_absent_leaf,
    session_names_not_strings,
    values_that_are_not_entries,
    v1_carried_links,
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=DEFAULT_OUT)
    args = ap.parse_args()
    for build in BUILDERS:
        build()
    os.makedirs(args.out, exist_ok=True)
    for name, sc in S.items():
        text = json.dumps(sc, indent=1, ensure_ascii=False)
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates must stay JSON escapes
            data = json.dumps(sc, indent=1).encode("utf-8")
        with open(os.path.join(args.out, name + ".scenario.json"), "wb") as f:
            f.write(data + b"\n")
    print(f"wrote {len(S)} scenarios to {args.out}")


if __name__ == "__main__":
    main()
