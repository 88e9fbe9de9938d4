"""The ``file:`` URI of a path, as pygls makes it (``pygls.uris.from_fs_path``, on POSIX), without
importing ``urllib.parse``.

Every ``pi/open`` reply names its file by URI, and ``urllib.parse`` (which imports ``ipaddress``)
is a good part of what the sidecar imports before that reply: the few rules pygls takes from it
are written here. tests/unit/test_file_uri.py holds them to pygls' results.
"""

from __future__ import annotations

import re

# what urllib.parse.quote leaves as it is (its unreserved characters, and "/", its default ``safe``)
_KEPT = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~/")
_QUOTED = tuple(chr(byte) if byte in _KEPT else f"%{byte:02X}" for byte in range(256))
_DRIVE_LETTER_PATH = re.compile(r"^\/[a-zA-Z]:")


def quote(text: str) -> str:
    """``urllib.parse.quote(text)``: its UTF-8 bytes (a lone surrogate raises UnicodeEncodeError),
    each percent-encoded but the unreserved ones and "/"."""
    return "".join(map(_QUOTED.__getitem__, text.encode("utf-8")))


def from_fs_path(path: str) -> str:
    """``pygls.uris.from_fs_path(path)``: a path starting with "//" names an authority first (as a
    UNC share does; ValueError without a "/" after it, as pygls raises), a drive letter is made
    lower case and its colon kept."""
    netloc = ""
    if path[:2] == "//":
        end = path.index("/", 2)
        netloc, path = path[2:end], path[end:]
    if not path.startswith("/"):
        path = "/" + path
    if _DRIVE_LETTER_PATH.match(path):
        path = path[0] + path[1].lower() + path[2:]
        quoted = path[:3] + quote(path[3:])
    else:
        quoted = quote(path)
    # urllib.parse.urlunparse of ("file", netloc, path, "", "", ""): "file" uses an authority, so
    # one goes before the path but where the path itself starts with "//" and there is none
    netloc = quote(netloc)
    if netloc or quoted[:2] != "//":
        quoted = "//" + netloc + quoted
    return "file:" + quoted
