"""Regenerate the Node-derived test corpora in this directory (run by hand; needs ``node``).

    .venv/bin/python tests/unit/data/gen_js_corpora.py

Inputs are generated here with fixed seeds; Node 20 computes the expected results; the JSON files
are committed so the unit tests never need Node.
"""

from __future__ import annotations

import json
import os
import random
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parents[1]))  # tests/: reference_locations
import reference_locations  # noqa: E402

PI_PATHS = str(reference_locations.pi_086_package() / "dist/utils/paths.js")

NODE_SCRIPT = r"""
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { Readable } from 'node:stream';
const input = JSON.parse(fs.readFileSync(0, 'utf8'));
const task = process.argv[2];
const wrap = (f) => { try { return { ok: f() }; } catch (e) { return { err: e.message }; } };
const out = {};
if (task === 'json') {
  out.parse = input.parse.map((text) => {
    try { const v = JSON.parse(text); return { text, ok: true, compact: JSON.stringify(v), pretty: JSON.stringify(v, null, 2) }; }
    catch (e) { return { text, ok: false, message: e.message }; }
  });
  out.numbers = input.numbers.map((hex) => {
    const dv = new DataView(new ArrayBuffer(8)); dv.setBigUint64(0, BigInt(hex));
    const x = dv.getFloat64(0); return [hex, String(x), JSON.stringify(x)];
  });
  out.strings = input.strings.map((units) => [units, JSON.stringify(String.fromCharCode(...units))]);
} else if (task === 'text') {
  out.dates = input.dates.map((s) => { const t = new Date(s).getTime(); return [s, Number.isNaN(t) ? null : t]; });
  out.iso = input.iso.map((t) => { const d = new Date(t); return [t, Number.isNaN(d.getTime()) ? null : d.toISOString()]; });
  out.trim = input.trim.map((s) => [s, s.trim()]);
  out.lines = [];
  for (const s of input.lines) {
    const rl = readline.createInterface({ input: Readable.from([Buffer.from(s, 'utf8')]), crlfDelay: Infinity });
    const lines = []; for await (const l of rl) lines.push(l);
    out.lines.push([s, lines]);
  }
  const names = [...input.names];
  out.sorted_names = names.sort((a, b) => a.localeCompare(b));
  out.pairs = input.pairs.map(([a, b]) => [a, b, Math.sign(a.localeCompare(b))]);
} else if (task === 'paths') {
  const { normalizePath, resolvePath } = await import(process.argv[3]);
  out.normalize = input.paths.map((p) => [p, wrap(() => normalizePath(p))]);
  out.resolve = input.paths.map((p) => [p, wrap(() => resolvePath(p))]);
  out.node_normalize = input.paths.map((p) => [p, path.normalize(p)]);
  out.join = input.joins.map((a) => [a, path.join(...a)]);
  out.node_resolve = input.joins.map((a) => [a, path.resolve(...a)]);
}
process.stdout.write(JSON.stringify(out));
"""


def run_node(
    task: str,
    payload: object,
    cwd: str | None = None,
    env: dict[str, str] | None = None,
    extra: list[str] | None = None,
) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".mjs", delete=False) as f:
        f.write(NODE_SCRIPT)
        script = f.name
    try:
        res = subprocess.run(
            ["node", script, task, *(extra or [])],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            check=True,
            cwd=cwd,
            env=env,
        )
    finally:
        os.unlink(script)
    return json.loads(res.stdout)


# ---- JSON ------------------------------------------------------------------------------------------

# fmt: off
HAND_JSON = [
    "", " ", "[", "]", "[1,]", '{"a":1,}', "{", '{"a"', '{"a":', '{"a" 1}', "{1:2}", "[1 2]", "01", "-", "-a",
    "1.", "1.a", "1e", "1e+", "1e+a", ".5", "+1", "tru", "trux", "nul", "NaN", "Infinity", "-Infinity",
    "undefined", "[object Object]", '"abc', '"a\x01"', '"\\x"', '"\\u12"', '"\\u12G4"', "\ufeff1", "1\u00a0",
    "\u00a0[]", "[]\ufeff", "[1]x", "[1] x", '{"a":1 "b"}', '{"a":1,"b"}', "{,}", "[,1]", "x", '"\\', '"\\u',
    "[1,", '{"a":1,', "[01]", "-01", "1.5e", "[-]", '"a\nb"', '{"a":1}}', "truex", "true x", "[true false]",
    "n", "fals", "[\r\n1\t]", "123abc", '"\u2028\u2029"', '{"a":tru}', '{"a":[}', "[{]", "\t\n", "1 2",
    '"\\u00e9\\ud800"', '"\\udc00\\ud800"', '"\\uD83D\\uDE00"', '"\\ud83d"', "[1,2", "[[[", '{"a":{"b":',
    '"\\u"', "1e5x", "-0.", "0x10", "00", "[.5]", '{"a\x1f":1}', '"\\a"', "\x00", '{"":1,"":2}', 'tr"',
    "nu1", '{"a":1,"b" 2}', '{"a":1,"b"', "[1,2,3,4,5,6,7,8,9,10,11,x]",
    "[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,x,1,2,3,4,5,6,7,8,9,10,11]", "x" + " " * 30, '"\\\u1234"',
    '"😀" x', '["😀😀😀😀😀😀😀😀😀😀😀😀",x]', "😀", '["😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀",😀,1,2,3,4,5,6,7,8,9]',
    "1.5.3", "1e5e", "1.e5", "-0", "-0.0", "1E400", "-1e400", "-1e-400", "1e-400", "12345678901234567890",
    "9007199254740993", "-9007199254740993", "9007199254740992", "1" + "0" * 400, "1" + "0" * 5000,
    "[1,2]]", "tRue", "nULL", "f", '{"a":1,"a":2,"b":3}', '{"2":1,"1":2,"b":3,"a":4,"2":5}',
    '{"b":1,"2":2,"a":3,"1":4,"-1":5,"01":6,"4294967295":7,"4294967294":8,"0":9}', '"\\/"', '{"a"}',
    '{"a",}', '{"a":}', "[1:2]", '{"a":1:2}', "[\u00a0]", "{\r\n}", " \t\r\n[ \t\r\n1 \t\r\n, \t\r\n2]\r",
    '"a\x7f\u0085\u2028/"', "1.0", "100", "1e2", "1.5e300", "1e21", "1e-7", "123456789012345680000",
    "0.000001", "0.0000001", '{"__proto__":1}', '[{"a":[]},{},[[]],""]', '{"a":{},"b":[],"c":{"d":[1,{}]}}',
    '"\\b\\f\\n\\r\\t\\"\\\\\\u0001\\u001f\\u007f"', "[1e999]", "[-0]", "[0.1,0.2,0.30000000000000004]",
]

ATOMS = ["0", "-0", "1", "-1", "01", "1.5", "1.", ".5", "1e5", "1E+5", "1e-5", "1e", "-", "12345678901234567890",
         "9007199254740993", "1e400", '"a"', '""', '"\\n"', '"\\u00e9"', '"\\ud800"', '"\\u12"', '"\\x"', '"é😀"',
         "true", "false", "null", "tru", "nul", "NaN", "Infinity", '"\x01"', '"\u2028"']
PUNCT = [*list('{}[],:" \t\r\n\\-+.eE0123456789aftnu'), "\xa0", "\ufeff", "😀", "\x00", "\x7f", "é"]
KEYS = ['"a"', '"b"', '"1"', '"0"', '"01"', '"-1"', '"4294967295"', '"4294967294"', '""', '"a"', '"10"', '"2"']
# fmt: on


def _value(rng: random.Random, d: int = 0) -> str:
    r = rng.random()
    if d > 4 or r < 0.4:
        return rng.choice(
            [
                *ATOMS[:10],
                '"a"',
                '""',
                '"\\n"',
                '"\\u00e9"',
                "true",
                "false",
                "null",
                '"é😀"',
                '"\\ud800"',
                "1e21",
                "1e-7",
                "0.1",
            ]
        )
    if r < 0.7:
        return "[" + ",".join(_value(rng, d + 1) for _ in range(rng.randint(0, 4))) + "]"
    return "{" + ",".join(rng.choice(KEYS) + ":" + _value(rng, d + 1) for _ in range(rng.randint(0, 4))) + "}"


def _mutate(rng: random.Random, s: str) -> str:
    for _ in range(rng.randint(0, 3)):
        op = rng.random()
        i = rng.randint(0, len(s))
        if op < 0.3 and s:
            s = s[:i] + s[i + 1 :]
        elif op < 0.6:
            s = s[:i] + rng.choice(PUNCT) + s[i:]
        elif op < 0.8:
            s = s[:i]
        else:
            s = s[:i] + rng.choice(ATOMS) + s[i:]
    return s


def json_inputs() -> dict:
    rng = random.Random(20261130)
    fuzz: set[str] = set()
    while len(fuzz) < 2500:
        s = _value(rng)
        if rng.random() < 0.5:
            s = "".join(c + (rng.choice([" ", "\t", "\r\n", ""]) if rng.random() < 0.2 else "") for c in s)
        if rng.random() < 0.7:
            s = _mutate(rng, s)
        fuzz.add(s)
    numbers: list[str] = []
    for _ in range(1500):  # uniform bit patterns (includes NaN/inf/subnormals)
        numbers.append(hex(rng.getrandbits(64)))
    for _ in range(2500):  # values of every magnitude with few or many digits
        x = float(f"{rng.randint(1, 10 ** rng.randint(1, 17))}e{rng.randint(-30, 30)}") * rng.choice([1, -1])
        numbers.append(hex(struct.unpack(">Q", struct.pack(">d", x))[0]))
    for x in [
        0.0,
        -0.0,
        1.0,
        1e21,
        1e20,
        1e-6,
        1e-7,
        9.999999999999999e20,
        2.0**53,
        2.0**53 + 2,
        2.0**60,
        5e-324,
        1.7976931348623157e308,
        0.1,
        1 / 3,
        123456789012345680000.0,
        1e16,
        1e15 + 0.5,
        1e-4,
        9.9999e-5,
        float("inf"),
        float("-inf"),
        float("nan"),
    ]:
        numbers.append(hex(struct.unpack(">Q", struct.pack(">d", x))[0]))
    special = [
        0x22,
        0x5C,
        0x2F,
        0x7F,
        0x85,
        0xA0,
        0x2028,
        0x2029,
        0xFEFF,
        0xD800,
        0xDBFF,
        0xDC00,
        0xDFFF,
        0xE9,
        0x1F600 >> 10,
        0xFFFD,
        0xFFFF,
    ]
    strings = [[c] for c in range(0x00, 0x80)] + [[c] for c in special]
    strings += [[0xD83D, 0xDE00], [0xDE00, 0xD83D], [0xD83D, 0xD83D, 0xDE00], [0xD83D, 0x41], [0x41, 0xDC00]]
    for _ in range(600):
        strings.append(
            [
                rng.choice(
                    [
                        rng.randint(0, 0x7F),
                        rng.choice(special),
                        rng.randint(0xD800, 0xDFFF),
                        rng.randint(0x80, 0xFFFF),
                    ]
                )
                for _ in range(rng.randint(0, 8))
            ]
        )
    return {"parse": HAND_JSON + sorted(fuzz), "numbers": numbers, "strings": strings}


# ---- dates, text, collation -----------------------------------------------------------------------

# fmt: off
HAND_DATES = [
    "2025-01-01T00:00:00Z", "2025-01", "2025", "2025-01-01T00:00:00.1234567Z", "2025-01-01T00:00:00+01:00",
    "2025-02-30", "2025-02-31T00:00:00Z", "2025-02-29T00:00:00Z", "2025-04-31", "2025-02-32", "2025-13-01",
    "2025-00-01", "2025-01-00", "2025T10:00Z", "2025-01T10:00Z", "2025-01-01T24:00", "2025-01-01T24:00:00.0001Z",
    "2025-01-01T24:01Z", "2025-01-01T23:59:60Z", "2025-01-01T10:00+0100", "2025-01-01T10:00+01",
    "2025-01-01 10:00Z", "2025-01 10:00Z", "2025 10:00Z", "2025-01-01t10:00z", "2025-01-01T10:00:00.1234567890123Z",
    "+002025-01-01", "-000001-01-01T00:00:00Z", "+275760-09-13T00:00:00.000Z", "+275760-09-13T00:00:00.001Z",
    "-271821-04-20T00:00:00Z", "-271821-04-19T23:59:59.999Z", "2025-01-01T10:00+24:00", "2025-01-01T10:00+23:59",
    "2025-01-01T10:00+01:60", "2025-01-01T10", "2025-01-01T10:0", "2025-01-01T1:00", "2025-01-01T10:00Z ",
    "2025-01-01T10:00:00.Z", "2025-01-01T10:00:00,5Z", "20250101", "2025-01-01T10:00:00+01:00:00",
    "0000-01-01T00:00:00Z", "9999-12-31T23:59:59.999Z", "2025-01-01T10:00-0130", "2025-01-01T10:00:00.5+0130",
    "2025-01-01 24:00", "2025-01-01T00:00:00.000+00:00", "2025-01-01 10:00:00.123z", "2025-01-01t10:00+0100",
    "2024-02-30T00:00Z", "2025-06-31T00:00:00", "2025-01-01T24:00:00.000Z", "2025-01-01T24:00:00.0000Z",
    "2025-12-31T24:00:00.000", "+002025", "-002025", "+002025-01", "2025-01-01T10:00:00.1", "-000001-12-31T23:59:59.999Z",
    "1970-01-01T00:00:00.000-00:00", "2026-11-30T09:13:48.180Z", "1969-12-31T23:59:59.999Z", "1900-02-29",
    "2000-02-29T12:00", "2100-02-29", "-000100-03-01T00:00Z", "+010000-01-01T00:00:00.000Z",
    "+275760-09-13T00:00:00.000+00:01", "-271821-04-19T23:00-01:00", "2025-01-01T10:00:00.000-23:59",
    "2025-01-01T00:00:00.000+", "2025-01-01T00:00:00.000+1:00", "x", "", "2025-01-01T10:00:00Zx", "0001-01-01",
    "+000000-01-01T00:00:00Z", "2025-01-01T00:00:59.999Z", "1600-02-29T00:00:00Z", "-000400-02-29T00:00:00Z",
]
#: Strings only V8's legacy parser accepts: ours gives NaN by design (D9); recorded for reference.
LEGACY_DATES = ["2025/01/01", "Jan 1 2025", "2025-1-1", "12", "2025-01-01 ", " 2025-01-01", "2025-01-01Z",
                "2025-01-01\n", "-000000-01-01", "2025-01-01  10:00"]
# fmt: on


def _strict_date(rng: random.Random) -> str:
    """A strict ECMAScript form (V8's ISO parser) with values around every boundary."""
    y = rng.choice([f"{rng.randint(0, 9999):04d}", f"{rng.choice('+-')}{rng.randint(0, 280000):06d}"])
    s = y
    if rng.random() < 0.9:
        s += f"-{rng.randint(0, 13):02d}"
        if rng.random() < 0.9:
            s += f"-{rng.randint(0, 32):02d}"
    if rng.random() < 0.8:
        s += f"T{rng.randint(0, 25):02d}:{rng.randint(0, 60):02d}"
        if rng.random() < 0.7:
            s += f":{rng.randint(0, 60):02d}"
            if rng.random() < 0.6:
                s += "." + "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 7)))
        if rng.random() < 0.7:
            s += rng.choice(["Z", f"{rng.choice('+-')}{rng.randint(0, 24):02d}:{rng.randint(0, 60):02d}"])
    return s


def _extended_date(rng: random.Random) -> str:
    """One of the V8 extensions of D9 (through V8's legacy parser): full valid dates and times only."""
    s = f"{rng.randint(1970, 2999):04d}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    s += rng.choice("Tt ") + f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}"
    if rng.random() < 0.7:
        s += f":{rng.randint(0, 59):02d}"
        if rng.random() < 0.6:
            s += "." + "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 3)))
    if rng.random() < 0.8:
        s += rng.choice(
            [
                "Z",
                "z",
                f"{rng.choice('+-')}{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}",
                f"{rng.choice('+-')}{rng.randint(0, 23):02d}{rng.randint(0, 59):02d}",
            ]
        )
    return s


def text_inputs() -> dict:
    rng = random.Random(7)
    dates = list(HAND_DATES)
    dates += [_strict_date(rng) for _ in range(500)]
    dates += [_extended_date(rng) for _ in range(300)]
    iso = [
        0,
        -1,
        1,
        1735689600123,
        -62198755200000,
        253402300799999,
        253402300800000,
        -62167219200001,
        8640000000000000,
        -8640000000000000,
        8640000000000001,
        -8640000000000001,
        951782400000,
    ]
    iso += [rng.randint(-8_640_000_000_000_000, 8_640_000_000_000_000) for _ in range(300)]
    iso += [rng.randint(-100_000_000_000_000, 300_000_000_000_000) for _ in range(300)]
    ws = "\t\n\v\f\r \u00a0\u1680\u2000\u200a\u2028\u2029\u202f\u205f\u3000\ufeff\x1c\x1d\x1e\x1f\x85\u180e\u200b"
    trim = [ws, "a" + ws + "a"] + [
        "".join(rng.choice(ws + "ab") for _ in range(rng.randint(0, 6))) for _ in range(300)
    ]
    trim += [c + "x" + c for c in ws]
    lines = [
        "",
        "\n",
        "a",
        "a\n",
        "a\r",
        "a\r\n",
        "a\r\rb",
        "\r\n\r\n",
        "a\n\nb\r\n",
        "\r",
        "a\u2028b\u0085c\x0bd",
        "x\ry\r\nz\nw",
        "\n\r",
        "\r\r\n\n",
    ]
    lines += [
        "".join(rng.choice(["a", "b", "\r", "\n", "\r\n", " "]) for _ in range(rng.randint(0, 10)))
        for _ in range(200)
    ]
    alphabet = [chr(c) for c in range(0x20, 0x7F)]
    common = [*list("aAbBzZ09_-. "), "x1", "x10", "x9"]
    names: set[str] = set(alphabet)
    while len(names) < 1500:
        k = rng.randint(1, 6)
        pool = alphabet if rng.random() < 0.5 else common
        names.add("".join(rng.choice(pool) for _ in range(k)))
    names.update(
        [
            "_",
            "1",
            "a_x",
            "A-x",
            "a",
            "b",
            "B",
            "x10",
            "x9",
            "ab",
            "Ab",
            "aB",
            "AB",
            "a b",
            "a-b",
            "a\tb",
            "ab\x01",
            "ab\x7f",
            "\x00",
            "a\nb",
            "2026-11-30T09-13-48-180Z_01a22bbb-5993-736f-8ed9-3b7e7d11bef3.jsonl",
            "2026-11-30T09-13-48-180Z_01a22bbb-5993-736f-8ed9-3b7e7d11bef4.jsonl",
            "2026-11-30T09-13-48-181Z_01a22bbb-5993-736f-8ed9-3b7e7d11bef3.jsonl",
            "my-id.jsonl",
            "My-Id.jsonl",
            "my_id.jsonl",
            "my.id.jsonl",
            "myid.jsonl",
        ]
    )
    names_list = sorted(names)
    rng.shuffle(names_list)
    pairs = [[rng.choice(names_list), rng.choice(names_list)] for _ in range(3000)]
    for a in names_list[:200]:
        pairs.append([a, a.swapcase()])
        pairs.append([a, a + "a"])
    return {
        "dates": dates + LEGACY_DATES,
        "iso": iso,
        "trim": trim,
        "lines": lines,
        "names": names_list,
        "pairs": pairs,
    }


# ---- paths ---------------------------------------------------------------------------------------

# fmt: off
PATHS = [
    "~", "~/", "~/x", "~/x/../..", "~x", "~\\x", "/a/b/", "/x/./y/../z", "//double", "///triple/", "/a:b\\c", "/",
    "relative/path", "C:\\Users\\me", "", ".", "..", "../..", "./a/", "a//b", "/..", "/../a", "a/..", "a/../..", "...",
    "./", "/a/b/..", "/a/.../b", "/Users/me/proj", "file:///tmp/a%20b", "file:///tmp/a b", "file://localhost/tmp/x",
    "file://LOCALHOST/tmp/x", "file://host/x", "file:///a/../b", "file:///a/./b/", "file:///a/%2e%2E/b",
    "file:///a%2Fb", "file:///a%2fb", "file:///%E9", "file:///%C3%A9t%C3%A9", "file:///x?q=1#f", "file:///x#f",
    "file:///a\\b", "file:///a/..", "file:///a/.", "file://", "file:///", "file:///%zz", "file:///%", "file:///C:/x",
    "file://C:/x", "file:///C|/x", "file:///a\tb", " file:///x", "file:///x ", "FILE:///x", "file:/x",
    "file://[::1]/x", "file://a%20b/x", "file:///a%25b", "file:///é", "file:///a/b/../../..", "file:///a;b",
    "file:///~", "file:///a/%2e", "file://localhost", "file://localhost/", "file:///C:/..", "file://exa mple/x",
    "file://%6cocalhost/x", "/a/b/c/../../../..", "a/b/../../c", "~/.pi/agent", "file:///x/y/", "~/../..",
]
JOINS = [["a", "b"], ["a", ""], ["", ""], [], ["/a", "../.."], ["a/", "b/"], ["a", "/b"], ["/", "x"], ["", "a"],
         ["./a", "./b"], ["..", "a"], ["a", "..", ".."], ["/h", ".pi/agent"], ["rel/dir", "sess.jsonl"], ["a//", "//b"],
         ["/x/", "sessions", "--a--"], ["w", "/abs"], ["/w", ""], ["./"], ["a/./"], ["//a"], ["a", "../../b/"]]
# fmt: on


def main() -> None:
    out = run_node("json", json_inputs())
    (HERE / "js_json_corpus.json").write_text(json.dumps(out, ensure_ascii=True, indent=0) + "\n")
    env = dict(os.environ, TZ="UTC")
    out = run_node("text", text_inputs(), env=env)
    out["legacy_dates"] = LEGACY_DATES
    (HERE / "js_text_corpus.json").write_text(json.dumps(out, ensure_ascii=True, indent=0) + "\n")
    # Paths: a fixed cwd and HOME (the tests pretend to be there; nothing touches the disk).
    cwd, home = "/tmp/pi-corpus-w", "/tmp/pi-corpus-h"
    for d in (cwd, home):
        os.makedirs(d, exist_ok=True)
    try:
        out = run_node(
            "paths",
            {"paths": PATHS, "joins": JOINS},
            cwd=cwd,
            env=dict(os.environ, HOME=home),
            extra=[PI_PATHS],
        )
    finally:
        for d in (cwd, home):
            os.rmdir(d)
    out["cwd"], out["home"] = cwd, home
    (HERE / "js_paths_corpus.json").write_text(json.dumps(out, ensure_ascii=True, indent=0) + "\n")


if __name__ == "__main__":
    main()
