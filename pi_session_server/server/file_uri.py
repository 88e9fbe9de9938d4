"""The ``file:`` URI of a path, as pygls makes it (``pygls.uris.from_fs_path``, on POSIX), without
importing ``urllib.parse``; and of the paths pygls cannot encode (a lone surrogate: see :func:`quote`).

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
    """``urllib.parse.quote(text)``: its UTF-8 bytes, each percent-encoded but the unreserved ones
    and "/". Where that raises (a lone surrogate), a name the file system gave that is not UTF-8
    (``os.fsdecode``'s escapes) is its own bytes, and any other lone surrogate U+FFFD (what Node
    gives the file system for it): a URI for every path a session can be on."""
    try:
        data = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        data = _NOT_AN_ESCAPE.sub("\ufffd", text).encode("utf-8", "surrogateescape")
    return "".join(map(_QUOTED.__getitem__, data))


# a lone surrogate that is not one of os.fsdecode's escapes of a byte (U+DC80 to U+DCFF)
_NOT_AN_ESCAPE = re.compile("[\ud800-\udc7f\udd00-\udfff]")


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
