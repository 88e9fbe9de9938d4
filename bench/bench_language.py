"""Scale benchmarks of the language features, end to end against the real server process.

    .venv/bin/python bench/bench_language.py [--size-mb 100] [--hovers 300] [--appends 30]
        [--long-line-mb 30] [--long-line-only] [--reopen FILE] [--reopens 5]
        [--outline FILE] [--diagnostics FILE] [--quick-fix FILE] [--hover-at-open FILE]
        [--baseline main] [--rounds 3]

Figures printed (each with the target it is measured against):

1. didOpen of a generated 100 MB session -> first publishDiagnostics (target < 1 s), measured from
   the first byte written to the server's stdin; plus the same document read from disk (the path
   for files VS Code does not send) and the in-process analysis alone, for a breakdown.
2. hover at random positions of random lines of the open 100 MB document: p50 / p99 request
   latency (target p99 < 10 ms).
3. one line appended to an open 1 MB and to an open 100 MB document -> the new diagnostics
   (target < 30 ms for both, i.e. flat in file size). Appends are spaced beyond the debounce
   interval, so each one measures the leading-edge publication.
4. the outline (documentSymbol) and the inlay hints of the whole document of a session of about
   8,000 lines holding one tool result of ``--long-line-mb`` (a base64 screenshot after a text with
   an emoji), in process (from bytes and from the file) and through the server (sent by the editor,
   and read from disk): best of several runs, as a ratio to the same session whose screenshot is a
   few bytes, measured in the same run (target: about 1x).

5. ``--reopen FILE`` (only this): a session open in Neovim while pi appends to it. Neovim reloads the
   file changed on disk as didClose + didOpen of the grown text: the time from that didOpen to its
   complete diagnostics, as a ratio to a fresh didOpen of the same text under another URI in the
   same run (the path every reload took before closed documents were kept). Then a hover asked
   right after the inlay hints of the whole document: its latency, as a ratio to the hints' (what
   it waited for when it queued behind them), and to a hover asked alone. Then (5b.) a reopening
   with the text edited before its end, analysed afresh: the time from that didOpen to its complete
   diagnostics, as a ratio to a server of ``--baseline`` measured in the same run, taken in turns.

7. ``--outline FILE`` (only this): the outline (documentSymbol) of the session at ``FILE`` through
   the server, once analysed (its complete diagnostics out): the first answer and the answer to the
   same request asked again without a change, each a ratio to a server of ``--baseline`` (a commit,
   ``main`` by default) measured in the same run, taken in turns, each after the document of the
   turn before was let go; the two answers must be the same. Then the peak memory of each server.

8. ``--diagnostics FILE`` (only this): didOpen of the session at ``FILE`` -> its first and its
   complete diagnostics, then the same for the session with one line in ten cut short (a damaged
   file: a problem on each of those lines, the search for problems pausing at them): p50 of
   ``--rounds``, each a ratio to a server of ``--baseline`` measured in the same run, taken in turns.

9. ``--quick-fix FILE`` (only this): didOpen of the session at ``FILE`` with a quick fix asked at
   once (of its eleventh line) -> its complete diagnostics, then the same for the session with one
   line in ten cut short (the quick fix answered at a pause of the search for problems): p50 of
   ``--rounds``, each a ratio to a server of ``--baseline`` measured in the same run, taken in
   turns; the quick fixes offered must be the same.

10. ``--hover-at-open FILE`` (only this): didOpen of the session at ``FILE`` with a hover asked at
   once (on its second line) -> the hover's answer, and the same hover on the file not opened (read
   from disk, under a new name each round) -> its answer: p50 of ``--rounds``, each a ratio to a
   server of ``--baseline`` measured in the same run, taken in turns; the answers must be the same.

The client is a minimal JSON-RPC reader/writer on pipes (no pygls), so client-side overhead does
not inflate the figures; messages are prepared before the clock starts.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import functools
import gc
import json
import os
import queue
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import msgspec

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # the session builders of the tests (tests/builders.py)

import builders as S  # noqa: E402

from pi_session_server.analysis.diagnostics import document_diagnostics, first_pass_diagnostics  # noqa: E402
from pi_session_server.analysis.document import SessionDocument  # noqa: E402
from pi_session_server.analysis.hints import inlay_hints  # noqa: E402
from pi_session_server.analysis.symbols import document_symbols  # noqa: E402
from pi_session_server.server.json_string import json_string_bytes  # noqa: E402
from pi_session_server.server.language_documents import publishes_in_two_steps  # noqa: E402
from pi_session_server.server.language_reopen import KEEP_SECONDS  # noqa: E402

T = TypeVar("T")

# ---------------------------------------------------------------------- a raw LSP client


class RawClient:
    def __init__(self, tree: Path = ROOT) -> None:
        """A server of the package in ``tree`` (this checkout's, or a baseline's: see baseline_tree)."""
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pi_session_server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=tree,
            env={**os.environ, "PYTHONPATH": str(tree)},
        )
        self.messages: queue.Queue[tuple[float, dict[str, Any]]] = queue.Queue()
        self.next_id = 0
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        stream = self.proc.stdout
        assert stream is not None
        while True:
            length = -1
            while True:
                line = stream.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            body = stream.read(length)
            received = time.perf_counter()
            self.messages.put((received, json.loads(body)))

    @staticmethod
    def frame(message: dict[str, Any]) -> bytes:
        body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
        return b"Content-Length: %d\r\n\r\n" % len(body) + body

    def send_frame(self, data: bytes) -> float:
        assert self.proc.stdin is not None
        start = time.perf_counter()
        self.proc.stdin.write(data)
        self.proc.stdin.flush()
        return start

    def request_frame(self, method: str, params: Any) -> tuple[int, bytes]:
        self.next_id += 1
        return self.next_id, self.frame(
            {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        )

    def notification_frame(self, method: str, params: Any) -> bytes:
        return self.frame({"jsonrpc": "2.0", "method": method, "params": params})

    def wait(self, predicate: Any, timeout: float = 120.0) -> tuple[float, dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while True:
            received, message = self.messages.get(timeout=max(0.01, deadline - time.monotonic()))
            if message.get("method") == "workspace/configuration" or (
                "id" in message and "method" in message
            ):  # a request from the server: answer null
                self.send_frame(self.frame({"jsonrpc": "2.0", "id": message["id"], "result": None}))
                continue
            if predicate(message):
                return received, message

    def request(self, method: str, params: Any) -> tuple[float, dict[str, Any]]:
        msg_id, data = self.request_frame(method, params)
        start = self.send_frame(data)
        received, message = self.wait(lambda m: m.get("id") == msg_id and "method" not in m)
        return received - start, message

    def initialize(self, pulls: bool = True) -> None:
        caps: dict[str, Any] = {"general": {"positionEncodings": ["utf-16"]}}
        if pulls:
            caps["textDocument"] = {"diagnostic": {}}
        else:  # as Neovim 0.11: UTF-8 positions, diagnostics pushed
            caps["general"]["positionEncodings"] = ["utf-8", "utf-16"]
        self.request("initialize", {"processId": os.getpid(), "rootUri": None, "capabilities": caps})
        self.send_frame(self.notification_frame("initialized", {}))

    def close(self) -> None:
        try:
            self.request("shutdown", None)
            self.send_frame(self.notification_frame("exit", None))
            self.proc.wait(timeout=10)
        except Exception:  # noqa: BLE001 - teardown: whatever failed, the child is killed
            self.proc.kill()


def diagnostics_for(uri: str, version: int | None = None) -> Any:
    def match(m: dict[str, Any]) -> bool:
        if m.get("method") != "textDocument/publishDiagnostics" or m["params"]["uri"] != uri:
            return False
        return version is None or m["params"].get("version") == version

    return match


# ---------------------------------------------------------------------- scenarios


def session_file(size_mb: int) -> Path:
    path = Path(tempfile.gettempdir()) / f"pi-bench-session-{size_mb}mb.jsonl"
    if not path.exists():
        print(f"generating a {size_mb} MB session at {path} ...", flush=True)
        path.write_bytes(S.generate_session(size_mb * 1_000_000, seed=size_mb))
    return path


def in_process(data: bytes) -> dict[str, float]:
    gc.collect()
    t = time.perf_counter()
    doc = SessionDocument(data)
    document_diagnostics(doc)
    from_bytes = time.perf_counter() - t
    text = data.decode()
    del doc
    gc.collect()
    t = time.perf_counter()
    doc = SessionDocument(text)
    document_diagnostics(doc)
    from_text = time.perf_counter() - t
    del doc
    gc.collect()
    t = time.perf_counter()
    doc = SessionDocument(text, quick=True)
    first_pass_diagnostics(doc)
    first_pass = time.perf_counter() - t
    del doc
    gc.collect()
    token = msgspec.json.encode(text)
    del text
    gc.collect()
    t = time.perf_counter()
    found = SessionDocument.from_editor_bytes(json_string_bytes(token) or b"", quick=True)
    assert found is not None
    first_pass_diagnostics(found)
    first_pass_token = time.perf_counter() - t
    del found, token
    gc.collect()
    return {"bytes": from_bytes, "text": from_text, "first": first_pass, "token": first_pass_token}


def pushes_at_open(frame: bytes) -> int:
    """How many times the server publishes the diagnostics of the document the didOpen ``frame``
    opens: twice for a big one (the envelope problems, then all), as the server decides it."""
    _header, _, body = frame.partition(b"\r\n\r\n")
    return 2 if publishes_in_two_steps(body) else 1


def open_document(client: RawClient, uri: str, text: str) -> tuple[float, int, float, int]:
    """(seconds to the first diagnostics, their number, seconds to the complete ones, their number)
    (see pushes_at_open)."""
    frame = client.notification_frame(
        "textDocument/didOpen",
        {"textDocument": {"uri": uri, "languageId": "pi-session", "version": 1, "text": text}},
    )
    start = client.send_frame(frame)
    received, message = client.wait(diagnostics_for(uri, 1))
    first = (received - start, len(message["params"]["diagnostics"]))
    if pushes_at_open(frame) == 2:
        received, message = client.wait(diagnostics_for(uri, 1))
    return (*first, received - start, len(message["params"]["diagnostics"]))


def hovers(client: RawClient, uri: str, lines: list[str], count: int, seed: int = 7) -> list[float]:
    rnd = random.Random(seed)
    times = []
    for _ in range(count):
        n = rnd.randrange(1, len(lines) - 1)
        line = lines[n]
        col = rnd.randrange(0, max(1, len(line.encode("utf-16-le")) // 2))
        elapsed, message = client.request(
            "textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": n, "character": col}}
        )
        assert "result" in message, message
        times.append(elapsed)
    return times


def appends(client: RawClient, uri: str, lines: list[str], count: int) -> list[float]:
    """Append entries continuing the last one, as pi does; each needs a new publication."""
    last = json.loads(lines[-2])
    parent = last["id"]
    line_no = len(lines) - 1  # the empty text after the final newline
    version = 1
    times = []
    for i in range(count):
        entry_id = f"ap{i:06x}"
        new_line = S.user(entry_id, parent, f"appended {i} 😀") + "\n"
        version += 1
        frame = client.notification_frame(
            "textDocument/didChange",
            {
                "textDocument": {"uri": uri, "version": version},
                "contentChanges": [
                    {
                        "range": {
                            "start": {"line": line_no, "character": 0},
                            "end": {"line": line_no, "character": 0},
                        },
                        "text": new_line,
                    }
                ],
            },
        )
        start = client.send_frame(frame)
        received, message = client.wait(diagnostics_for(uri, version))
        assert message["params"]["diagnostics"] == [], message["params"]["diagnostics"][:2]
        times.append(received - start)
        parent = entry_id
        line_no += 1
        time.sleep(0.12)  # beyond the debounce interval: measure the leading-edge publication
    return times


def long_line_sessions(long_line_mb: int) -> tuple[Path, Path]:
    """A generated session of about 8,000 lines with one tool result of ``long_line_mb`` of base64
    in its middle, and the same session with a few bytes of it."""
    paths = tuple(
        Path(tempfile.gettempdir()) / f"pi-bench-long-line-{name}.jsonl"
        for name in (f"{long_line_mb}mb", "base")
    )
    long_path, base_path = paths
    if long_path.exists() and base_path.exists():
        return long_path, base_path
    lines = S.generate_session(20_000_000, seed=4).split(b"\n")
    middle = len(lines) // 2
    parent = json.loads(lines[middle - 1])["id"]
    follower = json.loads(lines[middle])
    follower["parentId"] = "screenshot"
    shot = base64.b64encode(random.Random(4).randbytes(long_line_mb * 750_000)).decode()
    for path, data in ((long_path, shot), (base_path, "iVBORw0KGgo=")):
        line = S.tool_result(
            "screenshot", parent, "call-shot", "the page 😀", "screenshot", ((data, "image/png"),)
        )
        rest = json.dumps(follower, ensure_ascii=False, separators=(",", ":"))
        path.write_bytes(b"\n".join([*lines[:middle], line.encode(), rest.encode(), *lines[middle + 1 :]]))
    return long_path, base_path


def best(run: Any, times: int = 5) -> float:
    spent = []
    for _ in range(times):
        start = time.perf_counter()
        run()
        spent.append(time.perf_counter() - start)
    return min(spent)


def outline_and_hints_in_process(path: Path) -> dict[str, float]:
    found = {}
    for how, doc in (
        ("bytes", SessionDocument(path.read_bytes())),
        ("file", SessionDocument.from_file(str(path))),
    ):
        found[f"symbols {how}"] = best(lambda doc=doc: document_symbols(doc))
        found[f"hints {how}"] = best(lambda doc=doc: inlay_hints(doc))
    return found


def outline_and_hints_served(client: RawClient, path: Path) -> dict[str, float]:
    text = path.read_text(encoding="utf-8")
    whole = {"start": {"line": 0, "character": 0}, "end": {"line": text.count("\n") + 1, "character": 0}}
    found = {}
    sent = f"file:///bench/{path.name}"
    client.send_frame(
        client.notification_frame(
            "textDocument/didOpen",
            {"textDocument": {"uri": sent, "languageId": "pi-session", "version": 1, "text": text}},
        )
    )
    for how, uri in (("sent", sent), ("disk", path.as_uri())):
        doc = {"textDocument": {"uri": uri}}
        client.request("textDocument/documentSymbol", doc)  # (the document read, not timed)
        found[f"symbols {how}"] = min(client.request("textDocument/documentSymbol", doc)[0] for _ in range(5))
        found[f"hints {how}"] = min(
            client.request("textDocument/inlayHint", {**doc, "range": whole})[0] for _ in range(5)
        )
    return found


def print_long_line_case(
    label: str, long_line_mb: int, with_it: dict[str, float], without: dict[str, float]
) -> None:
    print(
        f"4. {label}, one {long_line_mb} MB line: "
        + ", ".join(f"{what} {ms(with_it[what])} ({with_it[what] / without[what]:.2f}x)" for what in with_it)
        + "  [target about 1x the session without it]"
    )


def opened(client: RawClient, uri: str, version: int, text: str, quiet: float = 2.0) -> tuple[float, Any]:
    """Open ``uri``: the seconds to its complete diagnostics (the last published before ``quiet``
    seconds without another: a big document's first pass comes first) and them."""
    start = client.send_frame(
        client.notification_frame(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "pi-session", "version": version, "text": text}},
        )
    )
    last = None
    while True:
        try:
            received, message = client.wait(diagnostics_for(uri, version), 120 if last is None else quiet)
        except queue.Empty:
            assert last is not None
            return last
        last = (received - start, message["params"]["diagnostics"])


def reopen_scenario(path: Path, reopens: int) -> None:
    """Figures 5 (see the module's docstring) on the session at ``path``."""
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    parent = json.loads(lines[-2] if text.endswith("\n") else lines[-1])["id"]
    client = RawClient()
    try:
        client.initialize(pulls=False)
        uri = "file:///bench/reopened.jsonl"
        opened(client, uri, 1, text)
        version = 1
        fresh_times, reopen_times = [], []
        for i in range(reopens):
            entry_id = f"re{i:06x}"
            text += S.user(entry_id, parent, f"pi appended turn {i} 😀") + "\n"
            if i % 2:  # a damaged line too, as a crash mid-write leaves
                text += '{"type":"message","id":"torn' + str(i) + '","parentId":"' + entry_id + '","mess\n'
            parent = entry_id
            fresh_uri = f"file:///bench/fresh-{i}.jsonl"
            fresh, expected = opened(client, fresh_uri, 1, text)
            for closed in (fresh_uri, uri):
                client.send_frame(
                    client.notification_frame("textDocument/didClose", {"textDocument": {"uri": closed}})
                )
            version += 1
            reopened, found = opened(client, uri, version, text)
            assert json.dumps(found).replace(uri, fresh_uri) == json.dumps(expected), "not a fresh analysis's"
            fresh_times.append(fresh)
            reopen_times.append(reopened)
        print(
            f"5. didClose + didOpen of the {len(text) / 1e6:.1f} MB session grown by pi -> complete "
            f"diagnostics: p50 {ms(pct(reopen_times, 0.5))}, max {ms(max(reopen_times))}; a fresh didOpen "
            f"of the same text: p50 {ms(pct(fresh_times, 0.5))} "
            f"({pct(reopen_times, 0.5) / pct(fresh_times, 0.5):.3f}x)"
        )
        whole = {"start": {"line": 0, "character": 0}, "end": {"line": text.count("\n") + 1, "character": 0}}
        asked = {"textDocument": {"uri": uri}, "position": {"line": len(lines) // 2, "character": 20}}
        alone, behind, hints = [], [], []
        for _ in range(5):
            alone.append(client.request("textDocument/hover", asked)[0])
            hint_id, hint_frame = client.request_frame(
                "textDocument/inlayHint", {"textDocument": {"uri": uri}, "range": whole}
            )
            hover_id, hover_frame = client.request_frame("textDocument/hover", asked)
            hint_start = client.send_frame(hint_frame)
            time.sleep(0.01)  # the hints started
            hover_start = client.send_frame(hover_frame)
            answered: dict[int, float] = {}
            while len(answered) < 2:
                received, message = client.wait(
                    lambda m, ids=(hint_id, hover_id): m.get("id") in ids and "method" not in m
                )
                assert "result" in message, str(message)[:300]
                answered[message["id"]] = received
            hints.append(answered[hint_id] - hint_start)
            behind.append(answered[hover_id] - hover_start)
        print(
            f"6. hover asked while the inlay hints of the whole document are made: p50 {ms(pct(behind, 0.5))}, "
            f"max {ms(max(behind))} ({pct(behind, 0.5) / pct(hints, 0.5):.3f}x the hints' {ms(pct(hints, 0.5))}, "
            f"{pct(behind, 0.5) / pct(alone, 0.5):.1f}x a hover alone, {ms(pct(alone, 0.5))})"
        )
    finally:
        client.close()


def reopen_edited_scenario(path: Path, reopens: int, baseline: str) -> None:
    """Figure 5b (see the module's docstring) on the session at ``path``."""
    text = path.read_text(encoding="utf-8")
    middle = text.index("\n{", len(text) // 2) + 2
    edited = text[:middle] + " " + text[middle:]  # (a space before a line's first key: still JSON)
    servers = {"new": RawClient(), "old": RawClient(baseline_tree(baseline))}
    times: dict[str, list[float]] = {name: [] for name in servers}
    found: dict[str, Any] = {}
    uri = "file:///bench/reopened-edited.jsonl"
    try:
        for client in servers.values():
            client.initialize(pulls=False)
            opened(client, uri, 1, text)
        for i in range(reopens):
            for name, client in servers.items():  # (taken in turns: both see the same machine load)
                client.send_frame(
                    client.notification_frame("textDocument/didClose", {"textDocument": {"uri": uri}})
                )
                spent, found[name] = opened(client, uri, i + 2, edited if i % 2 == 0 else text)
                times[name].append(spent)
        assert found["new"] == found["old"], f"other diagnostics than {baseline}'s"
    finally:
        for client in servers.values():
            client.close()
    new, old = pct(times["new"], 0.5), pct(times["old"], 0.5)
    print(
        f"5b. didClose + didOpen of the {len(text) / 1e6:.1f} MB session edited before its end (analysed "
        f"afresh) -> complete diagnostics: p50 {ms(new)} ({new / old:.2f}x {baseline}'s {ms(old)})"
    )


def baseline_tree(ref: str) -> Path:
    """The package as commit ``ref`` has it, in a temporary directory, for a server run from it."""
    where = Path(tempfile.mkdtemp(prefix="pi-bench-baseline-"))
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", ref, "pi_session_server"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(where)], input=archive, check=True)
    return where


def peak_memory_mb(client: RawClient) -> float:
    """The server process's peak resident memory so far (Linux)."""
    status = Path(f"/proc/{client.proc.pid}/status").read_text()
    return next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")) / 1024


def outline_scenario(path: Path, baseline: str, rounds: int) -> None:
    """Figure 7 (see the module's docstring) on the session at ``path``."""
    text = path.read_text(encoding="utf-8")
    servers = {"new": RawClient(), "old": RawClient(baseline_tree(baseline))}
    made: dict[str, list[float]] = {name: [] for name in servers}
    again: dict[str, list[float]] = {name: [] for name in servers}
    answers: dict[str, Any] = {}
    try:
        for client in servers.values():
            client.initialize(pulls=False)  # (diagnostics pushed: their arrival says the analysis is done)
        for i in range(rounds):
            for name, client in servers.items():  # (taken in turns: both see the same machine load)
                uri = f"file:///bench/outline-{i}.jsonl"
                opened(client, uri, 1, text)
                asked = {"textDocument": {"uri": uri}}
                spent, message = client.request("textDocument/documentSymbol", asked)
                made[name].append(spent)
                spent, repeated = client.request("textDocument/documentSymbol", asked)
                again[name].append(spent)
                assert repeated["result"] == message["result"], "asked again, another outline"
                answers[name] = message["result"]
                client.send_frame(
                    client.notification_frame(
                        "textDocument/didClose", {"textDocument": asked["textDocument"]}
                    )
                )
                # the closed analysis let go: the next measure does not share the process with that
                time.sleep(KEEP_SECONDS + 1)
        assert answers["new"] == answers["old"], f"the outline differs from {baseline}'s"
        peaks = {name: peak_memory_mb(client) for name, client in servers.items()}
    finally:
        for client in servers.values():
            client.close()
    print(
        f"7. outline (documentSymbol) of the {len(text) / 1e6:.1f} MB session through the server, "
        f"{len(answers['new'])} top-level symbols, the same as {baseline}'s: {against(made, baseline)}; "
        f"asked again unchanged: {against(again, baseline)}; server peak memory "
        f"{peaks['new']:.0f} MB ({peaks['new'] / peaks['old']:.2f}x {baseline}'s {peaks['old']:.0f} MB)"
    )


def against(times: dict[str, list[float]], baseline: str) -> str:
    """The p50 of the new server's ``times``, as a ratio to the ``baseline`` server's too."""
    new, old = pct(times["new"], 0.5), pct(times["old"], 0.5)
    return f"p50 {ms(new)} ({new / old:.2f}x {baseline}'s {ms(old)})"


def damaged(text: str, every: int = 10) -> str:
    """``text`` with one line in ``every`` cut short by its last character (invalid JSON)."""
    lines = text.split("\n")
    return "\n".join(line[:-1] if n % every == every - 1 and line else line for n, line in enumerate(lines))


def opened_in_turns(
    servers: dict[str, RawClient], rounds: int, measure: Callable[[RawClient, str], T]
) -> dict[str, list[T]]:
    """What ``measure(client, uri)`` finds of each server, ``rounds`` times, as it opens a document
    under ``uri`` (taken in turns, which goes first alternating: both see the same machine load);
    the document is closed after each, and its analysis let go before the next."""
    found: dict[str, list[T]] = {name: [] for name in servers}
    for i in range(rounds):
        for name, client in sorted(servers.items(), reverse=i % 2 == 1):
            uri = f"file:///bench/opened-{i}.jsonl"
            found[name].append(measure(client, uri))
            client.send_frame(
                client.notification_frame("textDocument/didClose", {"textDocument": {"uri": uri}})
            )
            time.sleep(KEEP_SECONDS + 1)
    return found


@contextlib.contextmanager
def against_baseline(baseline: str) -> Iterator[dict[str, RawClient]]:
    """A server of this checkout ("new") and one of ``baseline`` ("old"), initialized as Neovim's
    client is (diagnostics pushed: their arrival says the analysis is done)."""
    servers = {"new": RawClient(), "old": RawClient(baseline_tree(baseline))}
    try:
        for client in servers.values():
            client.initialize(pulls=False)
        yield servers
    finally:
        for client in servers.values():
            client.close()


def as_it_is_and_damaged(path: Path) -> list[tuple[str, str]]:
    """The text of the session at ``path`` and the same damaged, each with the words saying which."""
    whole = path.read_text(encoding="utf-8")
    return [("as it is", whole), ("one line in ten cut short", damaged(whole))]


def diagnostics_scenario(path: Path, baseline: str, rounds: int) -> None:
    """Figure 8 (see the module's docstring) on the session at ``path``."""
    with against_baseline(baseline) as servers:
        for label, text in as_it_is_and_damaged(path):
            opened = opened_in_turns(servers, rounds, functools.partial(open_document, text=text))
            first = {name: [t for t, _, _, _ in runs] for name, runs in opened.items()}
            complete = {name: [t for _, _, t, _ in runs] for name, runs in opened.items()}
            counts = {name: runs[-1][3] for name, runs in opened.items()}
            assert counts["new"] == counts["old"], f"{counts} diagnostics"
            print(
                f"8. didOpen of the {len(text) / 1e6:.1f} MB session {label} ({counts['new']} diagnostics) "
                f"-> first diagnostics {against(first, baseline)}, complete {against(complete, baseline)}"
            )


def open_with_a_request(
    client: RawClient, uri: str, text: str, method: str, params: dict[str, Any]
) -> tuple[float, float, Any]:
    """(seconds from the didOpen of ``text`` to its complete diagnostics, and to the answer of the
    request ``method`` about it asked in the same write, that answer)."""
    msg_id, asked = client.request_frame(method, {"textDocument": {"uri": uri}, **params})
    opened = client.notification_frame(
        "textDocument/didOpen",
        {"textDocument": {"uri": uri, "languageId": "pi-session", "version": 1, "text": text}},
    )
    pushed = diagnostics_for(uri, 1)
    pushes = pushes_at_open(opened)
    complete, answered, answer = 0.0, 0.0, None
    start = client.send_frame(opened + asked)
    while pushes or not answered:
        received, message = client.wait(lambda m: pushed(m) or m.get("id") == msg_id)
        if pushed(message):
            pushes -= 1
            complete = received - start
        else:
            answered, answer = received - start, message["result"]
    return complete, answered, answer


def open_with_a_quick_fix(client: RawClient, uri: str, text: str) -> tuple[float, Any]:
    """(seconds from the didOpen of ``text`` to its complete diagnostics, the quick fixes of its
    eleventh line, asked in the same write as the didOpen)."""
    at = {"line": 10, "character": 0}  # (its parent cut short in the damaged text)
    params = {"range": {"start": at, "end": at}, "context": {"diagnostics": []}}
    complete, _answered, answer = open_with_a_request(client, uri, text, "textDocument/codeAction", params)
    return complete, answer


def timed_in_turns(
    servers: dict[str, RawClient],
    rounds: int,
    measure: Callable[[RawClient, str], tuple[float, Any]],
    what: str,
) -> tuple[dict[str, list[float]], Any]:
    """The seconds ``measure(client, uri)`` finds of each server as it opens a document (see
    :func:`opened_in_turns`), and the answer it finds, the same for both (``what``: what it is)."""
    opened = opened_in_turns(servers, rounds, measure)
    answers = {name: runs[-1][1] for name, runs in opened.items()}
    assert answers["new"] == answers["old"], f"{what} differ"
    return {name: [t for t, _ in runs] for name, runs in opened.items()}, answers["new"]


def quick_fix_scenario(path: Path, baseline: str, rounds: int) -> None:
    """Figure 9 (see the module's docstring) on the session at ``path``."""
    with against_baseline(baseline) as servers:
        for label, text in as_it_is_and_damaged(path):
            complete, offered = timed_in_turns(
                servers, rounds, functools.partial(open_with_a_quick_fix, text=text), "the quick fixes"
            )
            print(
                f"9. didOpen of the {len(text) / 1e6:.1f} MB session {label}, a quick fix asked at once "
                f"({len(offered)} offered, the same as {baseline}'s) -> complete diagnostics "
                f"{against(complete, baseline)}"
            )


#: the hover of figure 10: on the second line, the entry's own (answered from its line)
HOVER_AT_OPEN = {"line": 1, "character": 3}


def open_with_a_hover(client: RawClient, uri: str, text: str) -> tuple[float, Any]:
    """(seconds from the didOpen of ``text`` to the answer of a hover asked in the same write, that
    answer); returns once the complete diagnostics are out too."""
    params = {"position": HOVER_AT_OPEN}
    _complete, answered, answer = open_with_a_request(client, uri, text, "textDocument/hover", params)
    return answered, answer


def hover_on_disk(client: RawClient, path: Path) -> tuple[float, Any]:
    """(seconds from a hover on the file at ``path``, which no editor opened, to its answer, that
    answer); returns once its diagnostics are out too."""
    uri = path.as_uri()
    msg_id, asked = client.request_frame(
        "textDocument/hover", {"textDocument": {"uri": uri}, "position": HOVER_AT_OPEN}
    )
    pushed = diagnostics_for(uri)
    answered, answer, published = 0.0, None, False
    start = client.send_frame(asked)
    while not (answered and published):  # (in either order)
        received, message = client.wait(lambda m: pushed(m) or (m.get("id") == msg_id and "method" not in m))
        if pushed(message):
            published = True
        else:
            answered, answer = received - start, message["result"]
    return answered, answer


def hover_at_open_scenario(path: Path, baseline: str, rounds: int) -> None:
    """Figure 10 (see the module's docstring) on the session at ``path``."""
    text = path.read_text(encoding="utf-8")
    with against_baseline(baseline) as servers:
        times, _answer = timed_in_turns(
            servers, rounds, functools.partial(open_with_a_hover, text=text), "the hovers"
        )
        print(
            f"10. didOpen of the {len(text) / 1e6:.1f} MB session, a hover asked at once -> its answer "
            f"{against(times, baseline)}"
        )
        where = Path(tempfile.mkdtemp(prefix="pi-bench-hover-"))
        on_disk: dict[str, list[float]] = {name: [] for name in servers}
        found: dict[str, Any] = {}
        for i in range(rounds):
            for name, client in sorted(servers.items(), reverse=i % 2 == 1):
                named = where / f"{name}-{i}.jsonl"  # (a new document each time: read afresh)
                os.link(path, named)
                spent, found[name] = hover_on_disk(client, named)
                on_disk[name].append(spent)
        assert found["new"]["contents"] == found["old"]["contents"], "the hovers on disk differ"
        print(f"    the same hover on the file read from disk -> its answer {against(on_disk, baseline)}")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def ms(x: float) -> str:
    return f"{x * 1000:.1f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size-mb", type=int, default=100)
    parser.add_argument("--hovers", type=int, default=300)
    parser.add_argument("--appends", type=int, default=30)
    parser.add_argument("--long-line-mb", type=int, default=30)
    parser.add_argument("--long-line-only", action="store_true", help="only the figures of 4.")
    parser.add_argument("--reopen", type=Path, help="only the figures of 5., 6. and 5b., on this session")
    parser.add_argument("--reopens", type=int, default=5)
    parser.add_argument("--outline", type=Path, help="only the figures of 7., on this session")
    parser.add_argument("--diagnostics", type=Path, help="only the figures of 8., on this session")
    parser.add_argument("--quick-fix", type=Path, help="only the figures of 9., on this session")
    parser.add_argument("--hover-at-open", type=Path, help="only the figures of 10., on this session")
    parser.add_argument("--baseline", default="main", help="the commit 5b., 7., 8., 9. and 10. compare with")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    if args.reopen is not None:
        reopen_scenario(args.reopen, args.reopens)
        reopen_edited_scenario(args.reopen, args.reopens, args.baseline)
        return 0
    if args.outline is not None:
        outline_scenario(args.outline, args.baseline, args.rounds)
        return 0
    if args.diagnostics is not None:
        diagnostics_scenario(args.diagnostics, args.baseline, args.rounds)
        return 0
    if args.quick_fix is not None:
        quick_fix_scenario(args.quick_fix, args.baseline, args.rounds)
        return 0
    if args.hover_at_open is not None:
        hover_at_open_scenario(args.hover_at_open, args.baseline, args.rounds)
        return 0

    long_path, base_path = long_line_sessions(args.long_line_mb)
    without = outline_and_hints_in_process(base_path)
    print_long_line_case("in process", args.long_line_mb, outline_and_hints_in_process(long_path), without)
    client = RawClient()
    try:
        client.initialize()
        without = outline_and_hints_served(client, base_path)
        print_long_line_case(
            "through the server", args.long_line_mb, outline_and_hints_served(client, long_path), without
        )
    finally:
        client.close()
    if args.long_line_only:
        return 0

    big_path = session_file(args.size_mb)
    small_path = session_file(1)
    big_data = big_path.read_bytes()
    big_text = big_data.decode()
    big_lines = big_text.split("\n")
    small_text = small_path.read_text(encoding="utf-8")
    print(
        f"sessions: {len(big_data) / 1e6:.1f} MB ({len(big_lines) - 1:,} lines), {len(small_text) / 1e6:.2f} MB"
    )

    analysis = in_process(big_data)
    print(
        f"in-process analysis of {args.size_mb} MB: from bytes {ms(analysis['bytes'])}, from text {ms(analysis['text'])}"
    )
    print(
        f"   first pass (envelopes) from text {ms(analysis['first'])}, "
        f"from the didOpen JSON string token {ms(analysis['token'])}"
    )

    client = RawClient()
    try:
        client.initialize()
        big_uri = "file:///bench/big.jsonl"
        t_open, n, t_all, n_all = open_document(client, big_uri, big_text)
        print(
            f"1. didOpen {args.size_mb} MB -> first diagnostics: {ms(t_open)} ({n} diagnostics)  [target < 1000 ms]"
        )
        if t_all != t_open:
            print(f"   ... then the complete diagnostics: {ms(t_all)} ({n_all} diagnostics)")

        disk_uri = big_path.as_uri()
        msg_id, frame = client.request_frame(
            "textDocument/hover", {"textDocument": {"uri": disk_uri}, "position": {"line": 1, "character": 3}}
        )
        start = client.send_frame(frame)
        received, _ = client.wait(diagnostics_for(disk_uri))
        client.wait(lambda m: m.get("id") == msg_id and "method" not in m)
        print(
            f"   the same file read from disk (not sent by the editor) -> first diagnostics: {ms(received - start)}"
        )

        time.sleep(0.5)  # let the idle warm-up (depths, leaf path) run
        times = hovers(client, big_uri, big_lines, args.hovers)
        print(
            f"2. hover on {args.hovers} random lines of {args.size_mb} MB: p50 {ms(pct(times, 0.5))}, "
            f"p99 {ms(pct(times, 0.99))}, max {ms(max(times))}  [target p99 < 10 ms]"
        )

        small_uri = "file:///bench/small.jsonl"
        open_document(client, small_uri, small_text)
        time.sleep(0.2)
        for label, uri, lines in (
            ("1 MB", small_uri, small_text.split("\n")),
            (f"{args.size_mb} MB", big_uri, big_lines),
        ):
            times = appends(client, uri, lines, args.appends)
            print(
                f"3. append one line to the open {label} document -> new diagnostics: "
                f"p50 {ms(pct(times, 0.5))}, p90 {ms(pct(times, 0.9))}, max {ms(max(times))}  [target < 30 ms]"
            )
    finally:
        client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
