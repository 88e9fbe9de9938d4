"""The text of a ``didOpen``, made into UTF-8 bytes once.

A document opened again a moment after it was closed compares its text's bytes with the analysis
kept at the closing (:mod:`.language_reopen`); a text that is not the closed one with lines
appended is then analysed afresh, from the same bytes: a 100 MB text is unescaped (or encoded)
once, not once to compare it and once more to analyse it.
"""

from __future__ import annotations

from typing import Any

from pi_session_server.analysis.document import SessionDocument
from pi_session_server.format.jsjson import parse_bytes
from pi_session_server.session.profiles import Profile

from .json_string import json_string_bytes

_UNMADE: Any = object()


class OpenedText:
    """A ``didOpen``'s text: a ``str`` (decoded the usual way) or its JSON string token, undecoded
    (see ``LanguageDocuments.did_open_raw``)."""

    __slots__ = ("_encoded", "_pi", "_text", "_token", "_unescaped")

    def __init__(self, pi: Profile, *, text: str | None = None, token: Any = None) -> None:
        self._pi = pi
        self._text = text
        self._token = token
        self._unescaped: bytes | None = _UNMADE
        self._encoded: bytes | None = _UNMADE

    def utf8(self) -> bytes | None:
        """The text's UTF-8 bytes as the editor sent them (not checked to be valid UTF-8); None
        for a token that is not a JSON string."""
        unescaped = self._unescaped_token()
        return unescaped if unescaped is not None else self._encoded_text()

    def document(self, quick: bool) -> SessionDocument:
        """The text's analysis, made from the bytes :meth:`utf8` made if it was asked (which are
        let go: the analysis holds what it keeps of them). ValueError for a token that is not a
        JSON string."""
        try:
            unescaped = self._unescaped_token()
            if unescaped is not None:
                # None for invalid UTF-8: decoding the message would have replaced those bytes
                doc = SessionDocument.from_editor_bytes(unescaped, quick=quick, pi=self._pi)
                if doc is not None:
                    return doc
            encoded = self._encoded_text()
            if encoded is None:
                raise ValueError("the document text is not a JSON string")
            # (what SessionDocument(text) makes of a str)
            return SessionDocument(encoded, errors="surrogatepass", quick=quick, pi=self._pi)
        finally:
            self._unescaped = self._encoded = _UNMADE

    def _unescaped_token(self) -> bytes | None:
        """The token unescaped straight into bytes (None without a token, or for one that does not
        unescape so: see :func:`json_string_bytes`)."""
        if self._unescaped is _UNMADE:
            self._unescaped = None if self._token is None else json_string_bytes(self._token)
        return self._unescaped

    def _encoded_text(self) -> bytes | None:
        """The text decoded as JSON (the token's, or the ``str`` given) then encoded, lone
        surrogates kept; None for a token that is not a JSON string."""
        if self._encoded is _UNMADE:
            text = self._text if self._token is None else parse_bytes(memoryview(self._token))
            self._encoded = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else None
        return self._encoded
