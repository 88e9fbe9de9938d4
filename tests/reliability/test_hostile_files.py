"""Hostile files: mutated real sessions and generated garbage never crash or hang the reader, the API
or the language features, and every broken line is reported on its own line.

Mutations of the real session files in ``data/`` (copied from the conformance fixtures; see
``data/SOURCES.md``) are drawn by hypothesis: truncation anywhere, flipped bytes, duplicated,
dropped and swapped lines, invalid UTF-8, NUL bytes, deep nesting, ``1e999``, parent cycles, BOM,
CRLF, lone surrogates. Sizes that take seconds (a 200,000-entry chain, a 100 MB line, a million
``{}`` lines) are in ``test_hostile_large.py``.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import builders as S
import pytest
from builders import generate_session
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from reliability_exercise import exercise_file, known_finding
from reliability_helpers import run_bounded

from pi_session_server.format.jsvalue import ABSENT
from pi_session_server.session import SessionManager

pytestmark = pytest.mark.timeout(600)

DATA = Path(__file__).resolve().parent / "data"
SMALL_FIXTURES = sorted(p for p in DATA.glob("*.jsonl") if p.stat().st_size < 100_000)
EXAMPLE = Path(__file__).resolve().parents[2] / "pi_session_server" / "examples" / "example-session.jsonl"


def _sources() -> dict[str, bytes]:
    sources = {p.name: p.read_bytes() for p in SMALL_FIXTURES}
    sources["generated-v3"] = generate_session(30_000, seed=7)
    if EXAMPLE.is_file():
        sources["example-session"] = EXAMPLE.read_bytes()
    return sources


SOURCES = _sources()


# -- mutations: (data, draw) -> data ------------------------------------------------------------


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def truncate(data: bytes, draw: Any) -> bytes:
    return data[: draw(st.integers(0, len(data)))]


def flip_bytes(data: bytes, draw: Any) -> bytes:
    if not data:
        return data
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(out) - 1))
        out[i] ^= 1 << draw(st.integers(0, 7))
    return bytes(out)


def duplicate_line(data: bytes, draw: Any) -> bytes:
    lines = _lines(data)
    i = draw(st.integers(0, len(lines) - 1))
    j = draw(st.integers(0, len(lines)))
    lines.insert(j, lines[i])
    return b"\n".join(lines)


def drop_line(data: bytes, draw: Any) -> bytes:
    lines = _lines(data)
    if len(lines) > 1:
        del lines[draw(st.integers(0, len(lines) - 1))]
    return b"\n".join(lines)


def swap_lines(data: bytes, draw: Any) -> bytes:
    lines = _lines(data)
    i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
    lines[i], lines[j] = lines[j], lines[i]
    return b"\n".join(lines)


def insert_bytes(data: bytes, draw: Any) -> bytes:
    junk = draw(
        st.sampled_from(
            [
                b"\xff\xfe",  # invalid UTF-8
                b"\xc3",  # a cut multi-byte sequence
                b"\xed\xa0\x80",  # an encoded surrogate (invalid UTF-8)
                b"\x00",
                b"\x00" * 100,
                b"\r",
                b"\r\n",
                b"\n\n",
                b"\xe2\x80\xa8",  # U+2028 outside a string
                b"\xef\xbb\xbf",  # BOM
                b"\\ud800",  # a lone surrogate escape (inside a string it is valid JSON)
                b"}",
                b'{"',
                b"\t",
            ]
        )
    )
    i = draw(st.integers(0, len(data)))
    return data[:i] + junk + data[i:]


NASTY_VALUES = [
    b"1e999",
    b"-1e999",
    b"1e-999",
    b"123456789012345678901234567890",
    b"-0",
    b"0.1e400000",
    b'"\\ud800"',
    b'"\\u0000"',
    b"null",
    b"[]",
    b"{}",
    b"true",
    b'"' + b"\xff" * 3 + b'"',
    b"[" * 1000 + b"]" * 1000,  # deeper: test_hostile_large.py
    b'{"a":' * 1000 + b"1" + b"}" * 1000,
]


def replace_value(data: bytes, draw: Any) -> bytes:
    """Replace the value of one JSON member (id, parentId, timestamp, content, ...) by a nasty one."""
    lines = _lines(data)
    i = draw(st.integers(0, len(lines) - 1))
    line = lines[i]
    try:
        value = json.loads(line)
    except ValueError:
        return data
    if not isinstance(value, dict) or not value:
        return data
    key = draw(st.sampled_from(sorted(value)))
    nasty = draw(st.sampled_from(NASTY_VALUES))
    members = [
        json.dumps(k).encode() + b":" + (nasty if k == key else json.dumps(v).encode())
        for k, v in value.items()
    ]
    lines[i] = b"{" + b",".join(members) + b"}"
    return b"\n".join(lines)


def make_cycle(data: bytes, draw: Any) -> bytes:
    """Point an entry's parentId at itself or at a later entry (a parent cycle)."""
    lines = _lines(data)
    parsed = []
    for n, line in enumerate(lines):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and isinstance(value.get("id"), str) and value.get("type") != "session":
            parsed.append((n, value))
    if len(parsed) < 1:
        return data
    a = draw(st.integers(0, len(parsed) - 1))
    b = draw(st.integers(a, len(parsed) - 1))
    n, value = parsed[a]
    value["parentId"] = parsed[b][1]["id"]
    lines[n] = json.dumps(value, separators=(",", ":")).encode()
    return b"\n".join(lines)


def crlf(data: bytes, draw: Any) -> bytes:
    return data.replace(b"\n", b"\r\n")


def drop_header(data: bytes, draw: Any) -> bytes:
    lines = _lines(data)
    return b"\n".join(lines[1:])


MUTATIONS = [
    truncate,
    flip_bytes,
    duplicate_line,
    drop_line,
    swap_lines,
    insert_bytes,
    replace_value,
    make_cycle,
    crlf,
    drop_header,
]


def test_unmutated_sources_pass_every_check(tmp_path: Path):
    for name, data in SOURCES.items():
        path = tmp_path / name
        path.write_bytes(data)
        assert exercise_file(str(path), tmp_path / f"scratch-{name}") == "opened", name


EXAMPLE_BOUND = 60.0  # seconds per example: a hang fails the example instead of the whole run


def _exercise_bytes(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "session.jsonl"
        path.write_bytes(content)
        exercise_file(str(path), Path(tmp) / "scratch")


def check_bytes(content: bytes) -> None:
    """Everything on ``content``, in a forked child with a time bound (a hang inside a C call, or
    one that pytest-timeout would turn into an endless shrink, is reported as a hang)."""
    result = run_bounded(EXAMPLE_BOUND, _exercise_bytes, content)
    assert result.finished, f"hang: still running after {EXAMPLE_BOUND:.0f} s"
    if result.error and known_finding(result.error) is not None:
        return  # an open finding with its own strict-xfail test
    assert not result.error, result.error


@pytest.mark.slow
def test_mutated_real_sessions(long_run: bool):
    @settings(
        max_examples=2000 if long_run else 120,
        deadline=None,
        derandomize=not long_run,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        database=None,
    )
    @given(st.data())
    def check(data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(sorted(SOURCES)), label="source")
        content = SOURCES[name]
        for mutation in data.draw(
            st.lists(st.sampled_from(MUTATIONS), min_size=1, max_size=3), label="mutations"
        ):
            content = mutation(content, data.draw)
        check_bytes(content)

    check()


# -- generated files: lines drawn from a small grammar (ids from a tiny pool: duplicates, dangling
#    parents and cycles come naturally) ------------------------------------------------------

IDS = st.sampled_from(["a", "b", "c", "dd", "e1", "0", ""]) | st.sampled_from([[], {}, ["a"]])
JSON_LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)
JSON_VALUE = st.recursive(
    JSON_LEAF,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
ENTRY_TYPES = st.sampled_from(
    [
        "message",
        "label",
        "compaction",
        "branch_summary",
        "custom",
        "session_info",
        "model_change",
        "session",
        "?",
    ]
) | st.sampled_from([[], {}, 5, None, ["message"]])
MESSAGE = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "toolResult", "bashExecution", "custom", 5])},
    optional={
        "content": st.one_of(st.text(max_size=20), st.lists(JSON_VALUE, max_size=3), JSON_VALUE),
        "timestamp": JSON_LEAF,
    },
)
ENTRY = st.fixed_dictionaries(
    {"type": ENTRY_TYPES, "id": st.one_of(IDS, JSON_LEAF)},
    optional={
        "parentId": st.one_of(IDS, st.none(), JSON_LEAF),
        "timestamp": st.one_of(st.just("2026-01-01T00:00:00.000Z"), JSON_LEAF),
        "message": st.one_of(MESSAGE, JSON_VALUE),
        "targetId": IDS,
        "label": st.one_of(st.text(max_size=10), JSON_LEAF),
        "firstKeptEntryId": IDS,
        "fromId": IDS,
        "summary": JSON_VALUE,
        "name": JSON_VALUE,
    },
)
LINE = st.one_of(
    ENTRY.map(lambda v: json.dumps(v).encode()),
    ENTRY.map(lambda v: json.dumps(v).encode()),
    JSON_VALUE.map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=30),
    st.sampled_from([b"", b"   ", b"1e999", b"[" * 200, b'{"type":"message"', b"\x00"]),
)
HEADER = st.fixed_dictionaries(
    {"type": st.just("session"), "id": st.one_of(st.just("s1"), JSON_LEAF)},
    optional={
        "version": st.sampled_from([1, 2, 3, 4, "3", None, 1e999]),
        "cwd": st.one_of(st.just("/p"), JSON_LEAF),
        "timestamp": st.one_of(st.just("2026-01-01T00:00:00.000Z"), JSON_LEAF),
    },
).map(lambda v: json.dumps(v).encode())

# the shapes the walks must end on, tried first whatever is drawn: a self-parent and a two-entry
# cycle (D1), a duplicate id closing a cycle under a root (D2)
WALKS_HEADER = b'{"type":"session","version":3,"id":"s1","cwd":"/p","timestamp":"2026-01-01T00:00:00.000Z"}'


def _linked(entry_id: str, parent: str | None) -> bytes:
    return json.dumps(
        {"type": "custom", "id": entry_id, "parentId": parent, "timestamp": "2026-01-01T00:00:00.000Z"}
    ).encode()


@pytest.mark.slow
def test_generated_files(long_run: bool):
    @settings(
        max_examples=2000 if long_run else 120,
        deadline=None,
        derandomize=not long_run,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        database=None,
    )
    @given(HEADER, st.lists(LINE, max_size=25), st.booleans())
    @example(WALKS_HEADER, [_linked("a", "a"), _linked("b", "c"), _linked("c", "b")], True)  # D1
    @example(
        WALKS_HEADER, [_linked("R", None), _linked("x", "R"), _linked("y", "x"), _linked("x", "y")], True
    )  # D2
    def check(header: bytes, lines: list[bytes], final_newline: bool) -> None:
        check_bytes(b"\n".join([header, *lines]) + (b"\n" if final_newline else b""))

    check()


# -- findings pinned on small files ---------------------------------------------------------------

BIG = 123456789012345678901234567890  # beyond 2**53: JSON.parse holds the nearest double


def test_integer_ids_beyond_2_53_are_looked_up_as_js_numbers(tmp_path: Path):
    """A client (or a label's targetId) naming the id with the same digits finds the entry, as in pi."""
    path = tmp_path / "big-ids.jsonl"
    path.write_bytes(
        b'{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}\n'
        + f'{{"type":"message","id":{BIG},"parentId":null,"timestamp":"2026-01-01T00:00:00.000Z",'
        f'"message":{{"role":"user","content":"x","timestamp":1}}}}\n'.encode()
    )
    manager = SessionManager.open(str(path), read_only=True)
    assert manager.get_entry(BIG) is not ABSENT
    assert manager.get_entry(float(BIG)) is not ABSENT
    manager.close()


def test_loader_reports_broken_lines_of_files_it_migrates(tmp_path: Path):
    lines = (DATA / "whamp-pi-v1-linear.jsonl").read_bytes().split(b"\n")
    lines.insert(2, b'{"type":"message", broken')
    path = tmp_path / "v1-broken.jsonl"
    path.write_bytes(b"\n".join(lines))
    manager = SessionManager.open(str(path), read_only=True)
    assert [p.line for p in manager.problems] == [2]
    manager.close()


@pytest.mark.parametrize("read_only", [True, False])
def test_lines_and_problems_of_a_migrated_file_with_blank_lines(tmp_path: Path, read_only: bool):
    """Read-only: numbers of the file as it is; migrated in place: of the rewritten file (D7 drops
    blank lines), so an editor jumps to the right line either way (#12)."""
    lines = (DATA / "whamp-pi-v1-linear.jsonl").read_bytes().rstrip(b"\n").split(b"\n")
    lines[2:2] = [b"", b"[1]", b""]
    path = tmp_path / "v1-blank.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    manager = SessionManager.open(str(path), read_only=read_only)
    physical = path.read_bytes().split(b"\n")
    assert [p.line for p in manager.problems] == [3 if read_only else 2]
    assert physical[manager.problems[0].line] == b"[1]"
    for entry in manager.get_entries():
        on_disk = json.loads(physical[entry.line])
        assert (on_disk["type"], on_disk.get("timestamp")) == (entry.type, entry.get("timestamp"))
    manager.close()


@pytest.mark.parametrize(
    ("odd_id", "last_id"), [("[]", "[]"), ("{}", "{}"), ("5", "6"), ("1.5", "-0"), ("true", "false")]
)
def test_code_lenses_on_an_entry_whose_id_is_an_array(odd_id: str, last_id: str):
    """An entry whose id is not a string gets its lenses as any other: a branch point where two
    entries name it as their parent (a number or a boolean is found as pi's Map finds it; an array
    or an object is a new value on every line, so nothing names it), the leaf where it is last."""
    from pi_session_server.analysis import SessionDocument, hints

    def entry(entry_id: str, parent: str) -> bytes:
        return (
            f'{{"type":"message","id":{entry_id},"parentId":{parent},"timestamp":"2026-01-01T00:00:00.000Z",'
            '"message":{"role":"user","content":"x","timestamp":1}}\n'
        ).encode()

    doc = SessionDocument(
        b'{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}\n'
        + entry(odd_id, "null")
        + entry('"b"', odd_id)
        + entry('"c"', odd_id)
        + entry(last_id, '"c"')
    )
    lenses = {lens.line: lens.title for lens in hints.code_lenses(doc)}
    branches = {} if odd_id in ("[]", "{}") else {1: f"{hints.BRANCH_ICON} 2 branches"}
    assert lenses == {
        0: "4 entries · leaf on line 5",
        **branches,
        4: f"{hints.LEAF_ICON} leaf: pi continues here",
    }


#: a hand-made file's entries whose ids are a number and a boolean, each labelled by that value;
#: a label naming the string "5" (another key to pi's Map) and one naming 7 then taken back
_LABELLED_BY_VALUE = (
    b'{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}\n'
    b'{"type":"message","id":5,"parentId":null,"timestamp":"2026-01-01T00:00:00.000Z",'
    b'"message":{"role":"user","content":"x","timestamp":1}}\n'
    b'{"type":"message","id":true,"parentId":5,"timestamp":"2026-01-01T00:00:00.500Z",'
    b'"message":{"role":"user","content":"y","timestamp":1}}\n'
    b'{"type":"message","id":7,"parentId":true,"timestamp":"2026-01-01T00:00:00.600Z",'
    b'"message":{"role":"user","content":"z","timestamp":1}}\n'
    b'{"type":"label","id":"l","parentId":7,"timestamp":"2026-01-01T00:00:01.000Z","targetId":5,"label":"kept"}\n'
    b'{"type":"label","id":"m","parentId":"l","timestamp":"2026-01-01T00:00:02.000Z","targetId":"5","label":"string"}\n'
    b'{"type":"label","id":"n","parentId":"m","timestamp":"2026-01-01T00:00:03.000Z","targetId":true,"label":"yes"}\n'
    b'{"type":"label","id":"o","parentId":"n","timestamp":"2026-01-01T00:00:04.000Z","targetId":7.0,"label":"seven"}\n'
    b'{"type":"label","id":"p","parentId":"o","timestamp":"2026-01-01T00:00:05.000Z","targetId":7,"label":""}\n'
)


@pytest.mark.parametrize("pi", ["1.6.0", "0.86.1"])
def test_the_label_of_an_entry_whose_id_is_a_number_is_shown_as_pi_reads_it(tmp_path: Path, pi: str):
    """pi's labels are a Map from targetId: a label naming 5 labels the entry whose id is 5, as the
    library's get_label and get_tree say (the string "5" is another key; 7.0 is 7, and the last
    label naming it, empty, takes it away); the lens, the inlay hint and the hover say it too."""
    from pi_session_server.analysis import SessionDocument, hints

    path = tmp_path / "s.jsonl"
    path.write_bytes(_LABELLED_BY_VALUE)
    expected = {1: "kept", 2: "yes", 3: None}
    with SessionManager.open(str(path), read_only=True, pi=pi) as manager:
        assert [manager.get_label(i) for i in (5, True, 7)] == ["kept", "yes", ABSENT]
        assert manager.get_label("5") == "string"
    for doc in (SessionDocument(_LABELLED_BY_VALUE, pi=pi), SessionDocument.from_file(str(path), pi=pi)):
        _assert_labels_shown(doc, expected)
        edited = SessionDocument(_LABELLED_BY_VALUE, pi=pi)
        last = edited.line_count - 2  # the label taking 7's away, removed: "seven" is shown
        edited.apply_edit(last, 0, last + 1, 0, b"")
        assert "label “seven”" in next(h.label for h in hints.inlay_hints(edited) if h.line == 3)


def _assert_labels_shown(doc: Any, expected: dict[int, str | None]) -> None:
    """The lens, the inlay hint and the hover of each line of ``expected`` show its label (None:
    no label)."""
    from pi_session_server.analysis import hints, hover

    lenses = {lens.line: lens.title for lens in hints.code_lenses(doc)}
    shown = {hint.line: hint.label for hint in hints.inlay_hints(doc)}
    for line, label in expected.items():
        markdown = hover.hover(doc, line, 1)
        assert markdown is not None
        if label is None:
            assert "label" not in lenses.get(line, "") and "label" not in shown[line]
            assert "**label**" not in markdown[0]
        else:
            assert f"label “{label}”" in lenses[line] and f"label “{label}”" in shown[line]
            assert f"**label** `{label}`" in markdown[0]


#: each entry's label, as a file written by hand might have it: pi keeps any truthy value
_LABEL_VALUES: list[Any] = [42, 1.5, 1e21, {"a": 1}, [1, [2, "x"]], True, [], "plain"]


@pytest.mark.parametrize("pi", ["1.6.0", "0.86.1"])
def test_a_label_that_is_not_a_string_is_shown_as_the_library_gives_it(tmp_path: Path, pi: str):
    """A label whose ``label`` is truthy but not a string (a number, an object, an array, ``true``)
    is kept by pi's SessionManager (any truthy value goes in its Map), as the library's
    ``get_label`` and tree keep it; the CLI's ``tree`` shows ``String`` of it. The lens, the inlay
    hint and the hover show that text; one whose text is empty (``[]``) shows no label, as ``tree``
    shows none."""
    from pi_session_server.analysis import SessionDocument, preview
    from pi_session_server.format.jsvalue import index_key, js_string_of

    count = len(_LABEL_VALUES)
    lines = [S.header(), *(S.user(f"e{n}", f"e{n - 1}" if n else None) for n in range(count))]
    lines += [
        S.label(f"l{n}", f"l{n - 1}" if n else f"e{count - 1}", f"e{n}", value)
        for n, value in enumerate(_LABEL_VALUES)
    ]
    data = "".join(line + "\n" for line in lines).encode()
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    expected: dict[int, str | None] = {}
    with SessionManager.open(str(path), read_only=True, pi=pi) as manager:
        nodes, stack = {}, list(manager.get_tree())
        while stack:
            node = stack.pop()
            nodes[index_key(node.entry.id)] = node
            stack.extend(node.children)
        for n in range(count):
            value = manager.get_label(f"e{n}")
            assert nodes[f"e{n}"].label == value
            expected[n + 1] = (js_string_of(value) if value is not ABSENT else "") or None
    # the values pi keeps, not only its strings: String(42), String({}), an array's join
    assert [expected[n] for n in (1, 3, 4, 5, 6, 7)] == [
        "42",
        "1e+21",
        "[object Object]",
        "1,2,x",
        "true",
        None,
    ]
    for doc in (SessionDocument(data, pi=pi), SessionDocument.from_file(str(path), pi=pi)):
        _assert_labels_shown(doc, expected)
        # the label lines' own previews (outline, references, completion) say the same: an empty
        # text is a label set to it, as pi keeps the truthy [] (not one taken back)
        label_lines = [doc.lines[count + 1 + n] for n in range(count)]
        assert [preview.quick_preview(info) for info in label_lines] == [
            f"[label: {js_string_of(value)}]" for value in _LABEL_VALUES
        ]


@pytest.mark.parametrize("entry_type", [b"[]", b"{}", b'["message"]'])
def test_an_entry_type_that_is_an_array_or_object(entry_type: bytes):
    from pi_session_server.analysis import SessionDocument, document_diagnostics

    doc = SessionDocument(
        b'{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}\n'
        b'{"type":' + entry_type + b',"id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z"}\n'
    )
    document_diagnostics(doc)


def test_ids_nested_1000_deep_in_messages_and_diagnostics(tmp_path: Path):
    from pi_session_server.analysis import SessionDocument, document_diagnostics
    from pi_session_server.errors import EntryNotFoundError
    from pi_session_server.format.jsjson import parse_bytes

    deep = b"[" * 1000 + b"]" * 1000
    document_diagnostics(SessionDocument(b'{"type":"session","id":' + deep + b',"version":3,"cwd":"/p"}\n'))
    path = tmp_path / "s.jsonl"
    path.write_bytes(
        b'{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}\n'
    )
    manager = SessionManager.open(str(path))
    with pytest.raises(EntryNotFoundError):
        manager.branch(parse_bytes(deep))
    with pytest.raises(EntryNotFoundError):
        manager.append_label_change(parse_bytes(deep), "x")


@pytest.mark.parametrize("member", [b'"parentId":[]', b'"id":{}', b'"timestamp":[1]'])
def test_unterminated_last_line_with_an_object_in_its_envelope_can_be_read(tmp_path: Path, member: bytes):
    path = tmp_path / "s.jsonl"
    line = (
        b'{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":"x"}}'
    )
    key = member.split(b":")[0]
    line = line.replace(key + b":", member + b',"_replaced":', 1)
    path.write_bytes(b'{"type":"session","id":"s1","version":3}\n' + line)  # no final newline
    manager = SessionManager.open(str(path), read_only=True)
    assert [e.to_json()["message"]["content"] for e in manager.get_entries()] == ["x"]


@pytest.mark.parametrize("member", [b'"parentId":[]', b'"id":{"k":[1]}', b'"timestamp":[1]'])
def test_lines_of_a_file_read_back_from_disk_with_an_object_in_their_envelope(tmp_path: Path, member: bytes):
    """Files above the in-memory threshold re-read every body from disk (#17)."""
    from pi_session_server.session import loader

    path = tmp_path / "s.jsonl"
    line = (
        b'{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":"x"}}'
    )
    key = member.split(b":")[0]
    line = line.replace(key + b":", member + b',"_replaced":', 1)
    path.write_bytes(b'{"type":"session","id":"s1","version":3}\n' + line + b"\n")
    old = loader.KEEP_BYTES_LIMIT
    loader.KEEP_BYTES_LIMIT = 0
    try:
        manager = SessionManager.open(str(path), read_only=True)
        assert not manager.get_entries()[0].is_loaded
    finally:
        loader.KEEP_BYTES_LIMIT = old
    assert [e.to_json()["message"]["content"] for e in manager.get_entries()] == ["x"]
