"""Fast equivalents of ``piconf.normalize`` and ``piconf.js_dumps`` (same output, byte for byte).

piconf is the contract's reference implementation and stays a verbatim copy; it escapes strings
character by character and runs five regex substitutions on every string, which dominates the
suite's run time. These versions skip the work when it cannot change anything;
test_runner_machinery.py checks that they agree with piconf on every committed vector.
"""

from __future__ import annotations

import os
import re
from typing import Any

import piconf
from nodefs import node_base64

_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f\ud800-\udfff]')
_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(m: re.Match[str]) -> str:
    ch = m.group(0)
    return _SHORT_ESCAPES.get(ch) or f"\\u{ord(ch):04x}"


def js_string(s: str) -> str:
    return '"' + _NEEDS_ESCAPE.sub(_escape, s) + '"'


def _key_order(d: dict[str, Any]) -> list[str]:
    keys = list(d)
    if any(k[:1].isdigit() for k in keys):
        return piconf.js_key_order(keys)
    return keys


def js_dumps(value: Any, indent: int = 2) -> str:
    """``JSON.stringify(value, null, indent)`` (no trailing newline), like ``piconf.js_dumps``."""
    out: list[str] = []
    pad = " " * indent

    def emit(v: Any, level: int) -> None:
        if v is None:
            out.append("null")
        elif v is True:
            out.append("true")
        elif v is False:
            out.append("false")
        elif isinstance(v, str):
            out.append(js_string(v))
        elif isinstance(v, (int, float)):
            out.append(piconf.js_number(v))
        elif isinstance(v, dict):
            keys = _key_order(v)
            if not keys:
                out.append("{}")
                return
            inner = "\n" + pad * (level + 1)
            out.append("{")
            for n, k in enumerate(keys):
                out.append(("," if n else "") + inner + js_string(k) + ": ")
                emit(v[k], level + 1)
            out.append("\n" + pad * level + "}")
        elif isinstance(v, (list, tuple)):
            if not v:
                out.append("[]")
                return
            inner = "\n" + pad * (level + 1)
            out.append("[")
            for n, x in enumerate(v):
                out.append(("," if n else "") + inner)
                emit(x, level + 1)
            out.append("\n" + pad * level + "]")
        else:
            raise TypeError(f"not JSON-serializable: {v!r}")

    emit(value, 0)
    return "".join(out)


# Anything one of piconf's rewriting steps could match; a string without any is left unchanged.
_ANY_TOKEN = re.compile(
    "|".join(p.pattern for p in (piconf.UUID_RE, piconf.HEX8_RE, piconf.ISO_RE, piconf.FTS_RE, piconf.MS_RE))
)


class Normalizer(piconf.Normalizer):
    def str(self, s: str) -> str:
        if (self.W and self.Wenc and (self.W in s or self.Wenc in s)) or _ANY_TOKEN.search(s):
            return super().str(s)
        return s

    def value(self, v: Any) -> Any:
        t = type(v)
        if t is str:
            return self.str(v)
        if t is dict:
            return {self.str(k): self.value(x) for k, x in v.items()}  # key before value, like piconf
        if t is list:
            return [self.value(x) for x in v]
        if t is int:
            return "<MS>" if self.lo <= v <= self.hi else v
        return super().value(v)


def collect_literal_tokens(scenario: Any, base_dir: str) -> set[str]:
    """``piconf.collect_literal_tokens``, but decoding base64 as leniently as Node's Buffer does
    (piconf's strict decoder raises on input the oracle accepts, e.g. missing padding)."""
    tokens: set[str] = set()

    def add_from(s: str) -> None:
        tokens.update(piconf.UUID_RE.findall(s))
        tokens.update(piconf.HEX8_RE.findall(s))

    def walk(v: Any) -> None:
        if isinstance(v, str):
            add_from(v)
        elif isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, dict):
            for k, x in v.items():
                add_from(k)
                walk(x)

    def walk_specs(v: Any) -> None:
        if isinstance(v, list):
            for x in v:
                walk_specs(x)
        elif isinstance(v, dict):
            if isinstance(v.get("fixture"), str):
                try:
                    with open(os.path.join(base_dir, v["fixture"]), "rb") as f:
                        add_from(f.read().decode("utf-8", "replace"))
                except OSError:
                    pass
            if isinstance(v.get("base64"), str):
                add_from(node_base64(v["base64"]).decode("utf-8", "replace"))
            for x in v.values():
                walk_specs(x)

    walk(scenario)
    walk_specs(scenario)
    return tokens


def normalize(raw_doc: Any, scenario: Any, base_dir: str, work_dir: str, t0: int, t1: int) -> Any:
    literals = collect_literal_tokens(scenario, base_dir)
    return Normalizer(work_dir, t0, t1, literals).value(raw_doc)
