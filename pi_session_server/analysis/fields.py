"""Field checks of one parsed line against the typed records (the slow path of line analysis).

``format.records`` says what pi writes; msgspec decodes a conforming line in one pass but reports
only the first problem. For a line it rejects, :func:`check_fields` walks the same record types
(via ``msgspec.inspect``) over the plain JSON value and names *every* missing or mistyped field,
unknown role and unknown content block, each with the JSON path where it is.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import msgspec
from msgspec import inspect as mi

from ..format import records
from .codes import (
    FIELD_MISSING,
    FIELD_WRONG_TYPE,
    UNKNOWN_BLOCK_TYPE,
    UNKNOWN_ENTRY_TYPE,
    UNKNOWN_ROLE,
)

Path = tuple[str | int, ...]


@dataclass(frozen=True, slots=True)
class FieldProblem:
    code: str
    path: Path  # where the problem is: the offending value, or the object missing a field
    message: str
    v1_expected: bool = False  # normal in a v1 file (ids and links are added by the migration)
    missing: str | None = None  # the name of a missing field


_JSON_KIND = {
    mi.StrType: "a string",
    mi.FloatType: "a number",
    mi.IntType: "a number",
    mi.BoolType: "a boolean",
    mi.NoneType: "null",
    mi.ListType: "an array",
    mi.DictType: "an object",
    mi.StructType: "an object",
    mi.LiteralType: "a constant",
}


def json_kind(value: Any) -> str:
    """``a string``, ``an object``, ``null`` ...: the JSON type of ``value`` in words."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def render_path(path: Path) -> str:
    """``message.content[2].text`` style."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out or "(line)"


@functools.cache
def _info(tp: Any) -> mi.Type:
    return mi.type_info(tp)


#: Required fields of a record that are not reported missing, with why: pi never needs them.
#: ``usage.totalTokens``: older pi releases did not write it, and the one place pi reads it
#: (compaction's ``calculateContextTokens``) adds up the token counts when it is missing.
NOT_NEEDED: frozenset[tuple[type, str]] = frozenset({(records.Usage, "totalTokens")})


class _Checker:
    def __init__(self) -> None:
        self.problems: list[FieldProblem] = []

    def add(
        self, code: str, path: Path, message: str, v1_expected: bool = False, missing: str | None = None
    ) -> None:
        self.problems.append(FieldProblem(code, path, message, v1_expected, missing))

    # -- values ------------------------------------------------------------------------------

    def check(self, value: Any, t: mi.Type, path: Path) -> None:
        if isinstance(t, mi.AnyType):
            return
        if isinstance(t, mi.UnionType):
            self.check_union(value, t, path)
            return
        if not _matches_kind(value, t):
            self.wrong_type(value, (t,), path)
            return
        if isinstance(t, mi.ListType):
            for i, item in enumerate(value):
                self.check(item, t.item_type, (*path, i))
        elif isinstance(t, mi.DictType):
            for key, item in value.items():
                self.check(item, t.value_type, (*path, key))
        elif isinstance(t, mi.StructType):
            self.check_struct(value, t, path)

    def wrong_type(self, value: Any, alternatives: tuple[mi.Type, ...], path: Path) -> None:
        kinds = []
        for alt in alternatives:
            kind = _JSON_KIND.get(type(alt), "a value")
            if kind not in kinds:
                kinds.append(kind)
        expected = " or ".join(kinds)
        self.add(
            FIELD_WRONG_TYPE, path, f"`{render_path(path)}` should be {expected}, not {json_kind(value)}"
        )

    def check_union(self, value: Any, t: mi.UnionType, path: Path) -> None:
        structs = [s for s in t.types if isinstance(s, mi.StructType)]
        if isinstance(value, dict) and structs and structs[0].tag_field is not None:
            self.check_tagged(value, structs, path)
            return
        for alt in t.types:
            if _matches_kind(value, alt):
                self.check(value, alt, path)
                return
        self.wrong_type(value, t.types, path)

    def check_tagged(self, value: dict[str, Any], structs: list[mi.StructType], path: Path) -> None:
        tag_field = structs[0].tag_field
        assert tag_field is not None
        tag = value.get(tag_field, msgspec.UNSET)
        if tag is msgspec.UNSET:
            self.add(FIELD_MISSING, path, f"`{render_path(path)}` has no `{tag_field}`", missing=tag_field)
            return
        for s in structs:
            if s.tag == tag:
                self.check_struct(value, s, path)
                return
        tag_path = (*path, tag_field)
        if not isinstance(tag, str):
            self.add(
                FIELD_WRONG_TYPE,
                tag_path,
                f"`{render_path(tag_path)}` should be a string, not {json_kind(tag)}",
            )
        elif tag_field == "role":
            self.add(UNKNOWN_ROLE, tag_path, f"unknown message role `{tag}` (pi carries it unchanged)")
        elif tag_field == "type" and path:
            allowed = ", ".join(f"`{s.tag}`" for s in structs)
            self.add(
                UNKNOWN_BLOCK_TYPE,
                tag_path,
                f"content block type `{tag}` is not allowed here (expected {allowed})",
            )
        else:
            self.add(UNKNOWN_ENTRY_TYPE, tag_path, f"unknown entry type `{tag}`")

    def check_struct(self, value: dict[str, Any], t: mi.StructType, path: Path) -> None:
        for f in t.fields:
            item = value.get(f.encode_name, msgspec.UNSET)
            field_path = (*path, f.encode_name)
            if item is msgspec.UNSET:
                if f.required and (t.cls, f.encode_name) not in NOT_NEEDED:
                    where = f" in `{render_path(path)}`" if path else ""
                    self.add(
                        FIELD_MISSING,
                        path,
                        f"missing required field `{f.encode_name}`{where}",
                        v1_expected=not path and f.encode_name in ("id", "parentId"),
                        missing=f.encode_name,
                    )
                continue
            self.check(item, f.type, field_path)


def _matches_kind(value: Any, t: mi.Type) -> bool:
    if isinstance(t, mi.AnyType):
        return True
    if isinstance(t, mi.StrType):
        return isinstance(value, str)
    if isinstance(t, (mi.FloatType, mi.IntType)):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(t, mi.BoolType):
        return isinstance(value, bool)
    if isinstance(t, mi.NoneType):
        return value is None
    if isinstance(t, mi.ListType):
        return isinstance(value, list)
    if isinstance(t, (mi.DictType, mi.StructType)):
        return isinstance(value, dict)
    if isinstance(t, mi.LiteralType):
        return value in t.values
    return True


_LINE_UNION = _info(records.SessionLine)
assert isinstance(_LINE_UNION, mi.UnionType)
_LINE_STRUCTS: dict[str, mi.StructType] = {
    s.tag: s for s in _LINE_UNION.types if isinstance(s, mi.StructType) and isinstance(s.tag, str)
}
_UNKNOWN_ENTRY = _info(records.UnknownEntry)
assert isinstance(_UNKNOWN_ENTRY, mi.StructType)


def check_fields(value: dict[str, Any]) -> list[FieldProblem]:
    """Every problem of a parsed line object (the header or an entry) against the records."""
    checker = _Checker()
    etype = value.get("type", msgspec.UNSET)
    if etype is msgspec.UNSET:
        checker.add(FIELD_MISSING, (), "missing required field `type`", missing="type")
        checker.check_struct(value, _entry_base_without_type(), ())
    elif isinstance(etype, str) and etype in _LINE_STRUCTS:
        checker.check_struct(value, _LINE_STRUCTS[etype], ())
    elif isinstance(etype, str):
        checker.add(
            UNKNOWN_ENTRY_TYPE, ("type",), f"unknown entry type `{etype}` (pi keeps it as a tree node)"
        )
        checker.check_struct(value, _entry_base_without_type(), ())
    else:
        checker.add(FIELD_WRONG_TYPE, ("type",), f"`type` should be a string, not {json_kind(etype)}")
        checker.check_struct(value, _entry_base_without_type(), ())
    return checker.problems


@functools.cache
def _entry_base_without_type() -> mi.StructType:
    base = _UNKNOWN_ENTRY
    assert isinstance(base, mi.StructType)
    fields = tuple(f for f in base.fields if f.encode_name != "type")
    return mi.StructType(
        cls=records.UnknownEntry,
        fields=fields,
        tag_field=None,
        tag=None,
        array_like=False,
        forbid_unknown_fields=False,
    )
