"""The server's ``file:`` URIs are pygls': ``file_uri.from_fs_path`` gives what
``pygls.uris.from_fs_path`` gives (or raises what it raises) for any path, without importing
``urllib.parse``."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pygls import uris

from pi_session_server.server import file_uri


def _outcome(function: object, path: str) -> tuple[str, object]:
    try:
        return "uri", function(path)  # type: ignore[operator]
    except Exception as error:  # noqa: BLE001 - the failure is compared too
        return "error", type(error)


PATHS = [
    "/home/u/.pi/agent/sessions/--home-u-proj--/2025-01-01T00-00-00-000Z_0190f5f5.jsonl",
    "/",
    "",
    "relative/name.jsonl",
    "/with space/and%percent/#hash?query;params=1&b=c/plus+/at@/colon:/comma,/",
    "/unicode/é/日本/🎉.jsonl",
    "/back\\slash/tilde~/under_score/dot.dash-",
    "//server/share/file.jsonl",
    "//server",
    "///three/slashes",
    "////four/slashes",
    "//",
    "/C:/Users/x.jsonl",
    "/c:",
    "C:/no/leading/slash",
    "/lone\udc80surrogate",
    "/escaped\udcffbyte",
    "/nul\x00byte/and\nnewline\rreturn\ttab",
    "/\x7f\x80\u00a0",
]


@pytest.mark.parametrize("path", PATHS)
def test_the_uri_of_a_path_is_pygls(path: str) -> None:
    assert _outcome(file_uri.from_fs_path, path) == _outcome(uris.from_fs_path, path)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("/\\:%#?;@+ ~._-aZ09Cé日🎉\x00\udc80")), max_size=20))
def test_the_uri_of_any_path_is_pygls(path: str) -> None:
    assert _outcome(file_uri.from_fs_path, path) == _outcome(uris.from_fs_path, path)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=30))
def test_quoting_any_text_is_urllib(text: str) -> None:
    from urllib.parse import quote

    assert _outcome(file_uri.quote, text) == _outcome(quote, text)


def test_no_url_parsing_is_imported() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from pi_session_server.server import file_uri; "
            "print(file_uri.from_fs_path('/a b'), 'urllib.parse' in sys.modules)",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.split() == ["file:///a%20b", "False"]
