"""The sidecar's writes against a model: the library in this process, replaying the same calls.

Seeded random sequences of the write methods (every append kind, pi 1.6.0's context edits,
branch, branchWithSummary, resetLeaf, and the switches to another file: createBranchedSession,
newSession, setSessionFile, forkFrom; and the handle swapped or closed by continueRecent, inMemory
and delete, in sidecar_handles.py) go to the real server process and to a ``SessionManager``
here, interleaved with a close and reopen of both and with other programs writing each file the
same way: pi appending its lines without a lock, pi cut short mid-line (the line finished later, or
never, or the next one glued to it), a shell's ``>`` rewriting it, an editor saving it in place, a
program renaming another file over it. After every step the entries, the leaf, the context, the
stats and the tree (pi's form, and the flat form in pages) must be the same on both sides, ids aside
(each side makes its own: the wire's are mapped to the model's), and so must each refusal (its
message, and its code, one ``protocol/`` lists for the method). While the handle holds an in-memory
session, no file in its directory changes but by other programs.

A server that does not watch its file (``watching=False``) takes another program's lines in before
its next append, as the library does. One that watches finds them itself: the model then takes
the change in (``refresh_from_disk``) and waits, with a bound, for the server's ``pi/didChange`` of
the same kind and new entries; after that the server must also answer as the library reading the
file fresh, and hold nothing back of what the other program left in the file.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import other_programs
import reference_locations
import sidecar_handles
from sidecar_support import ROOT, SERVER_COMMAND, contract, server_env

from pi_session_server.errors import PiSessionError, SessionFileReplacedError
from pi_session_server.format.jsjson import dumps_bytes, parse_bytes
from pi_session_server.format.jsvalue import ABSENT
from pi_session_server.server.errors import PiRpcError, from_library_error
from pi_session_server.server.session_stats import session_stats
from pi_session_server.server.stdio_client import RpcError, SidecarClient
from pi_session_server.session import PROFILES, SessionManager
from pi_session_server.session.environment import Environment

#: the steps of a run (``PI_SIDECAR_FUZZ_STEPS=N`` for longer runs)
STEPS = int(os.environ.get("PI_SIDECAR_FUZZ_STEPS", "70"))
#: the weight of each step that swaps or closes the handle (continueRecent, delete, inMemory)
HANDLE_STEPS = 2
PI_VERSIONS = tuple(PROFILES)
PAGE_SIZES = (1, 3, 7)
_HEX_ID = re.compile(r"[0-9a-f]{8}")


def _plain(value: Any) -> Any:
    """The JSON value a library result is on the wire (``to_json`` where it has one)."""
    if isinstance(value, list):
        value = [item.to_json() if hasattr(item, "to_json") else item for item in value]
    return parse_bytes(dumps_bytes(value.to_json() if hasattr(value, "to_json") else value))


def _without_timestamps(value: Any, everywhere: bool) -> Any:
    """Each side stamps its entries with its own clock: the entries' (or every) timestamp left out."""
    if isinstance(value, list):
        return [_without_timestamps(v, everywhere) for v in value]
    if isinstance(value, dict):
        return {
            k: (_without_timestamps(v, everywhere) if everywhere else v)
            for k, v in value.items()
            if k != "timestamp" and not k.endswith("Timestamp")  # (labelTimestamp, firstTimestamp, ...)
        }
    return value


#: how often a watching server looks at its file, in seconds
WATCH_INTERVAL = "0.02"
#: the longest the model waits for a watching server to tell a change it must find, in seconds
CHANGE_BOUND = 20.0


def _first_difference(wire: list[Any], model: list[Any]) -> str:
    for number, (one, other) in enumerate(zip(wire, model, strict=False)):
        if one != other:
            return f"entry {number}: {one} against {other}"
    return f"{len(wire)} entries against {len(model)}"


def _starts_with_a_header(path: Path) -> bool:
    with path.open("rb") as f:
        try:
            first = json.loads(f.readline())
        except ValueError:
            return False
    return isinstance(first, dict) and first.get("type") == "session" and isinstance(first.get("id"), str)


class Model:
    def __init__(self, root: Path, seed: int, pi: str, watching: bool = False) -> None:
        self.pi = pi
        self.seed = seed
        self.rng = random.Random(seed)
        self.root = root
        self.watching = watching
        interval = WATCH_INTERVAL if watching else "0"
        env = server_env(root)
        env.pop("XDG_DATA_HOME", None)  # (pi/delete's trash is the one under the test's HOME)
        self.client = SidecarClient(
            [*SERVER_COMMAND, "--watch-interval", interval, "--pi", pi], env=env, cwd=str(root)
        )
        self.client.initialize()
        # the library's environment as the server's process has it (its working directory is
        # the cwd of the header pi/open writes into an empty file)
        self.env = Environment(str(root), env["HOME"], env["PI_CODING_AGENT_DIR"])
        (root / "wire").mkdir()
        (root / "model").mkdir()
        info = self.client.request("pi/create", {"cwd": str(root), "sessionDir": str(root / "wire")})
        self.handle = info["session"]
        self.wire_file: Path | None = Path(info["sessionFile"])
        self.manager = SessionManager.create(str(root), str(root / "model"), pi=pi, env=self.env)
        self.model_file: Path | None = Path(self.manager.get_session_file())
        # False while the handle holds an in-memory session (pi/inMemory), which writes nothing:
        # the files in the wire directory then (in_memory_disk) stay as they are
        self.persisted = True
        self.in_memory_disk: dict[str, bytes] | None = None
        self.to_model: dict[str, str] = {}  # wire id -> model id
        self.log: list[str] = []
        self.counts: dict[str, int] = {}
        self.foreign = 0
        # the files each side wrote (wire, model), for setSessionFile and the oracle at the end
        self.files: list[tuple[Path, Path]] = [(self.wire_file, self.model_file)]
        # the rest of a line pi was cut short in (wire, model), if the file ends with its start
        self.cut_short: tuple[bytes, bytes] | None = None
        # what another program last left in the wire file: the server keeps it all
        self.left_by_others = b""
        # the files' bytes (wire, model) before another program last rewrote or deleted them
        self.backup: tuple[bytes, bytes] | None = None
        # the last change the model took in from its file ("unchanged" aside)
        self.last_change = ""

    # -- ids -------------------------------------------------------------------------------

    def wire_ids(self) -> list[str]:
        return list(self.to_model)

    as_json = staticmethod(_plain)

    def to_model_id(self, wire_id: Any) -> Any:
        return self.to_model.get(wire_id, wire_id) if isinstance(wire_id, str) else wire_id

    def as_wire(self, value: Any) -> Any:
        """A model value with its ids and the paths of its files as the wire's."""
        back = {m: w for w, m in self.to_model.items()}
        text = dumps_bytes(value).decode("utf-8")
        for wire_file, model_file in self.files:
            text = text.replace(str(model_file), str(wire_file))
        return parse_bytes(_HEX_ID.sub(lambda m: back.get(m.group(0), m.group(0)), text).encode("utf-8"))

    def some_id(self) -> Any:
        roll = self.rng.random()
        ids = self.wire_ids()
        if roll < 0.08 or not ids:
            return self.rng.choice(("0badf00d", None, 5))
        return self.rng.choice(ids)

    # -- steps ------------------------------------------------------------------------------

    def both(self, what: str, wire: tuple[str, dict[str, Any]], model: Any) -> Any:
        """One call on each side; the same refusal or both a result (the wire's returned)."""
        _where, result, model_result, refused = self._on_both_sides(what, wire, model)
        if isinstance(refused, SessionFileReplacedError):
            # the server reads the file that replaced the session's before it answers the refusal
            # (whether it follows the file or not): the client writes again on that session
            self.manager.refresh_from_disk()
        elif refused is None and isinstance(result, dict) and "id" in result:
            model_id = model_result["id"] if isinstance(model_result, dict) else model_result
            if hasattr(model_result, "id"):
                model_id = model_result.id
            self.to_model[result["id"]] = model_id
        self.counts[what] = self.counts.get(what, 0) + 1
        return result

    def _on_both_sides(
        self, what: str, wire: tuple[str, dict[str, Any]], model: Any
    ) -> tuple[str, Any, Any, Exception | None]:
        """The call ``wire`` (method, params) on the handle's session: :meth:`call_both`."""
        method, params = wire
        return self.call_both(what, method, {"session": self.handle, **params}, model)

    def call_both(
        self, what: str, method: str, params: dict[str, Any], model: Any, sent: int | None = None
    ) -> tuple[str, Any, Any, Exception | None]:
        """The request ``method`` with ``params`` through the server and ``model()`` on the library,
        logged as ``what``, checked to give the same refusal (the message and the contract's code;
        ``model()`` raises the library's error, or the server's for what the library has not) or
        both a result: where it was (for messages), the wire's result, the model's, and the
        model's refusal (None: both gave a result). ``sent``: the id the request was sent with
        already (requests sent behind it before its reply)."""
        self.log.append(f"{what} {params}")
        where = f"seed {self.seed} (PI_SIDECAR_FUZZ_SEED={self.seed}), step {len(self.log)}: {what}"
        wire_error = model_error = None
        result: Any = None
        model_result: Any = None
        refused: Exception | None = None
        try:
            if sent is None:
                sent = self.client.send_request(method, params)
            result = self.client.reply(sent, method, timeout=60)
            contract().check_result(method, params, result)
        except RpcError as error:
            assert error.rpc_code != -32603, f"{where}: {error.message}"
            contract().check_error(method, params, error.rpc_code)
            wire_error = (error.rpc_code, error.message)
        try:
            model_result = model()
        except (PiSessionError, PiRpcError) as error:
            refused = error
            expected = error if isinstance(error, PiRpcError) else from_library_error(error)
            model_error = (expected.code, self.as_wire(str(error)))
        assert wire_error == model_error, (
            f"{where}: wire {wire_error!r}, model {model_error!r}\n" + "\n".join(self.log[-8:])
        )
        return where, result, model_result, refused

    def step(self) -> None:
        """One step, drawn by weight: an append of each kind, a context edit, a move of the leaf,
        a close and reopen, or a line another program appends."""
        steps = [
            (22, self.message),
            (5, self.thinking),
            (4, self.model_change),
            (4, self.custom),
            (5, self.custom_message),
            (4, self.name),
            (6, self.label),
            (5, self.compaction),
            (8, self.context_edit),
            (9, self.branch),
            (2, self.reset_leaf),
            (6, self.branch_with_summary),
            (6, self.reopen),
            (14, self.append_as_another_program),
            (3, self.branched_session),
            (2, self.new_session),
            (2, self.set_session_file),
            (2, self.fork_from),
            (HANDLE_STEPS, lambda: sidecar_handles.continue_recent(self)),
            (HANDLE_STEPS, lambda: sidecar_handles.delete(self)),
            (HANDLE_STEPS, lambda: sidecar_handles.in_memory(self)),
        ]
        steps += [(8, self.cut_short_by_another_program), (6, self.rewrite_by_another_program)]
        self.other_programs = (
            self.append_as_another_program,
            self.cut_short_by_another_program,
            self.rewrite_by_another_program,
        )
        weights = [weight for weight, _ in steps]
        run = self.rng.choices([run for _, run in steps], weights)[0]
        # (a step that deletes a file while in memory takes the files anew)
        self.in_memory_disk = None if self.persisted else self.disk()
        run()
        if run in self.other_programs:  # (what an in-memory session holds is not read again)
            self.in_memory_disk = None if self.persisted else self.disk()
        if self.watching and self.persisted:
            self.follow()
        if not self.persisted and self.in_memory_disk is not None:
            now = self.disk()
            changed = sorted(
                name
                for name in {*now, *self.in_memory_disk}
                if now.get(name) != self.in_memory_disk.get(name)
            )
            assert not changed, f"{self._where()}: an in-memory session wrote {changed}\n" + "\n".join(
                self.log[-8:]
            )

    def disk(self) -> dict[str, bytes]:
        """The files in the wire directory (the server's), by name."""
        return {path.name: path.read_bytes() for path in (self.root / "wire").iterdir()}

    def message(self) -> None:
        message = self._message()
        self.both(
            "message",
            ("pi/append", {"kind": "message", "message": message}),
            lambda: self.manager.append_message(message),
        )

    def thinking(self) -> None:
        level = self.rng.choice(("low", "high", "off"))
        self.both(
            "thinking",
            ("pi/append", {"kind": "thinking_level_change", "thinkingLevel": level}),
            lambda: self.manager.append_thinking_level_change(level),
        )

    def model_change(self) -> None:
        model = self.rng.choice(("m1", "m2"))
        self.both(
            "model",
            ("pi/append", {"kind": "model_change", "provider": "p", "modelId": model}),
            lambda: self.manager.append_model_change("p", model),
        )

    def custom(self) -> None:
        data = {"n": self.rng.randrange(9)}
        self.both(
            "custom",
            ("pi/append", {"kind": "custom", "customType": "t", "data": data}),
            lambda: self.manager.append_custom_entry("t", data),
        )

    def custom_message(self) -> None:
        display = self.rng.random() < 0.5
        params = {"kind": "custom_message", "customType": "c", "content": "note", "display": display}
        self.both(
            "custom_message",
            ("pi/append", params),
            lambda: self.manager.append_custom_message_entry("c", "note", display),
        )

    def name(self) -> None:
        name = self.rng.choice(("  named  ", "other\nname", ""))
        self.both(
            "name",
            ("pi/append", {"kind": "session_info", "name": name}),
            lambda: self.manager.append_session_info(name),
        )

    def label(self) -> None:
        target, label = self.some_id(), self.rng.choice(("keep", None, "x y"))
        self.both(
            "label",
            ("pi/append", {"kind": "label", "targetId": target, "label": label}),
            lambda: self.manager.append_label_change(self.to_model_id(target), label),
        )

    def compaction(self) -> None:
        first, tokens = self.some_id(), self.rng.randrange(1000)
        params = {"kind": "compaction", "summary": "sum", "firstKeptEntryId": first, "tokensBefore": tokens}
        self.both(
            "compaction",
            ("pi/append", params),
            lambda: self.manager.append_compaction("sum", self.to_model_id(first), tokens),
        )

    def context_edit(self) -> None:
        target = self.some_id()
        replacement = self.rng.choice(
            (None, {"content": "edited"}, {"content": [{"type": "text", "text": "e"}]}, {"x": 1})
        )
        if self.rng.random() < 0.5:
            wire = ("pi/appendContextEdit", {"targetId": target, "replacement": replacement})
        else:
            wire = ("pi/append", {"kind": "context_edit", "targetId": target, "replacement": replacement})
        self.both(
            "context_edit",
            wire,
            lambda: self.manager.append_context_edit(self.to_model_id(target), replacement),
        )

    def branch(self) -> None:
        target = self.some_id()
        self.both(
            "branch",
            ("pi/branch", {"entryId": target}),
            lambda: self.manager.branch(self.to_model_id(target)),
        )

    def reset_leaf(self) -> None:
        self.both("resetLeaf", ("pi/resetLeaf", {}), self.manager.reset_leaf)

    def branch_with_summary(self) -> None:
        target = self.some_id()
        self.both(
            "branchWithSummary",
            ("pi/branchWithSummary", {"branchFromId": target, "summary": "went back"}),
            lambda: self._as_one_request(
                lambda: self.manager.branch_with_summary(self.to_model_id(target), "went back")
            ),
        )

    def _as_one_request(self, call: Any) -> Any:
        """``call()`` all or nothing, as the server runs a write that is more than one append: a
        refused branchWithSummary leaves the leaf where it was (D17), where pi's has moved it."""
        with self.manager.transaction():
            return call()

    def _message(self) -> dict[str, Any]:
        rng = self.rng
        stamp = 1_700_000_000_000 + len(self.log)
        role = rng.choice(("user", "user", "assistant", "toolResult"))
        if role == "user":
            return {"role": "user", "content": f"question {len(self.log)}", "timestamp": stamp}
        if role == "toolResult":
            return {
                "role": "toolResult",
                "toolCallId": "call1",
                "toolName": "bash",
                "content": [{"type": "text", "text": "ok"}],
                "isError": False,
                "timestamp": stamp,
            }
        return {
            "role": "assistant",
            "content": [{"type": "text", "text": "answer"}],
            "provider": "p",
            "model": "m1",
            "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15},
            "stopReason": "stop",
            "timestamp": stamp,
        }

    def reopen(self) -> None:
        self.log.append("close and reopen")
        self.client.request("pi/close", {"session": self.handle})
        self.manager.close()
        if not self.persisted or self.wire_file is None:  # (in memory: gone once closed)
            return self.start_again()
        if not self.wire_file.exists():  # nothing written yet (no conversation): a new session
            assert self.model_file is not None and not self.model_file.exists()
            return self.start_again()
        wire_error = model_error = None
        try:
            self.handle = self.client.request("pi/open", {"path": str(self.wire_file)})["session"]
        except RpcError as error:
            assert error.rpc_code != -32603, f"seed {self.seed}: {error.message}"
            wire_error = error.message
        try:
            self.manager = SessionManager.open(str(self.model_file), pi=self.pi, env=self.env)
        except PiSessionError as error:
            model_error = str(error).replace(str(self.model_file), str(self.wire_file))
        assert wire_error == model_error, (
            f"seed {self.seed}, reopen: wire {wire_error!r}, model {model_error!r}"
        )
        if wire_error is not None:  # (not a session any more: a new one)
            return self.start_again()
        self.counts["reopen"] = self.counts.get("reopen", 0) + 1

    def start_again(self) -> None:
        """A new session on the handle (pi/create; the one it held closed)."""
        info = self.client.request(
            "pi/create", {"cwd": str(self.root), "sessionDir": str(self.root / "wire")}
        )
        self.handle = info["session"]
        self.manager = SessionManager.create(
            str(self.root), str(self.root / "model"), pi=self.pi, env=self.env
        )
        self._bind(info)
        self._switched()

    def append_as_another_program(self) -> None:
        """pi in another process: a whole line appended with no lock, on the entry its file ends with."""
        if self.wire_file is None or not self.wire_file.exists():
            return
        wire_line, model_line, entry_id = self._foreign_line()
        self._write_as_another_program(wire_line + b"\n", model_line + b"\n")
        self.log.append(f"another program appended {entry_id}")
        self.counts["foreign"] = self.counts.get("foreign", 0) + 1

    def cut_short_by_another_program(self) -> None:
        """pi in another process cut short mid-line: the start of a line; or, after one, its end
        (the write finished late), or a whole line glued to it (pi started again), or nothing more."""
        if self.wire_file is None or not self.wire_file.exists():
            return
        if self.cut_short is None:
            wire_line, model_line, entry_id = self._foreign_line()
            cut = self.rng.randrange(1, len(wire_line))
            self._write_as_another_program(wire_line[:cut], model_line[:cut])
            self.cut_short = (wire_line[cut:] + b"\n", model_line[cut:] + b"\n")
            what = f"another program cut short {entry_id} after {cut} bytes"
        elif self.rng.random() < 0.5:
            self._write_as_another_program(*self.cut_short)
            what = "another program finished the line it was cut short in"
            self.cut_short = None
        else:
            wire_line, model_line, entry_id = self._foreign_line()
            self._write_as_another_program(wire_line + b"\n", model_line + b"\n")
            what = f"another program glued {entry_id} to the line it was cut short in"
            self.cut_short = None
        self.log.append(what)
        self.counts["cut short"] = self.counts.get("cut short", 0) + 1

    def rewrite_by_another_program(self) -> None:
        """A shell's ``>``, an editor saving in place or a rename over the file: the file's bytes,
        edited (or not), written anew the same way in both files; or the file deleted, or written
        back as it was before the last of these."""
        if self.wire_file is None or self.model_file is None:
            return
        if not self.wire_file.exists() and self.backup is None:
            return
        how = self.rng.choice(sorted(other_programs.WRITERS))
        roll, detail = self.rng.random(), ""
        if roll < 0.1 and self.wire_file.exists():
            self.backup = (self.wire_file.read_bytes(), self.model_file.read_bytes())
            self.wire_file.unlink()
            self.model_file.unlink()
            self.left_by_others = b""
            what = "deleted"
        elif (roll < 0.3 or not self.wire_file.exists()) and self.backup is not None:
            wire_bytes, model_bytes = self.backup
            other_programs.WRITERS[how](self.wire_file, wire_bytes)
            other_programs.WRITERS[how](self.model_file, model_bytes)
            self.left_by_others = wire_bytes
            what = f"restored ({how})"
        else:
            wire_bytes, model_bytes = self.wire_file.read_bytes(), self.model_file.read_bytes()
            self.backup = (wire_bytes, model_bytes)
            edit = other_programs.draw_edit(self.rng, wire_bytes.count(b"\n"))
            wire_bytes = other_programs.edited(wire_bytes, edit)
            model_bytes = other_programs.edited(model_bytes, edit)
            other_programs.WRITERS[how](self.wire_file, wire_bytes)
            other_programs.WRITERS[how](self.model_file, model_bytes)
            self.left_by_others = wire_bytes
            what, detail = f"rewrote ({how}) {edit[0]}", f" at {edit[1]} lines from the end"
        self.cut_short = None
        self.log.append(f"another program {what}{detail}")
        self.counts[what] = self.counts.get(what, 0) + 1

    def _foreign_line(self) -> tuple[bytes, bytes, str]:
        """A line pi in another process writes, on the entry the file ends with or another: as in
        the wire file and as in the model's (its ids the model's), and its id."""
        self.foreign += 1
        entry_id = f"{self.rng.getrandbits(32):08x}"
        last_lines = self.wire_file.read_bytes().rsplit(b"\n", 2)
        wire_last = None
        for line in reversed(last_lines):
            try:
                wire_last = json.loads(line).get("id")
                break
            except (ValueError, AttributeError):
                continue
        parent = wire_last if self.rng.random() < 0.7 else self.some_id()
        line: dict[str, Any] = {
            "type": "message",
            "id": entry_id,
            "parentId": parent if isinstance(parent, str) else None,
            "timestamp": "2026-01-01T00:00:00.000Z",
        }
        kind = self.rng.choice(("message", "message", "label", "session_info", "assistant"))
        if kind == "label":  # pi's label of an entry of ours
            line.update(type="label", targetId=self.some_id(), label=f"pi {self.foreign}")
        elif kind == "session_info":
            line.update(type="session_info", name=f"named by pi {self.foreign}")
        else:
            line["message"] = (
                self._message() if kind == "assistant" else {"role": "user", "content": "pi", "timestamp": 1}
            )
        model_line = {**line, "parentId": self.to_model_id(line["parentId"])}
        if "targetId" in line:
            model_line["targetId"] = self.to_model_id(line["targetId"])
        self.to_model[entry_id] = entry_id
        return dumps_bytes(line), dumps_bytes(model_line), entry_id

    def _write_as_another_program(self, wire: bytes, model: bytes) -> None:
        with self.wire_file.open("ab") as f:
            f.write(wire)
        with self.model_file.open("ab") as f:
            f.write(model)
        self.left_by_others = self.wire_file.read_bytes()

    def follow(self) -> None:
        """A server that watches finds what changed its file (another program, or its own append
        that found a line cut short): the model takes it in, and waits for the server to tell the
        same change; both then answer as the library reading the file."""
        change = self.manager.refresh_from_disk()
        self.log.append(f"the model took in {change.kind} {change.new_entry_ids}")
        whole = change.kind == "reloaded"
        # (a file still gone is told once: the server looks again only when the file changed)
        still_gone = change.kind == "deleted" and self.last_change == "deleted"
        self.last_change = change.kind if change.kind != "unchanged" else self.last_change
        if change.kind != "unchanged" and not still_gone:
            self._await_change(change.kind, self.as_wire(_plain(change.new_entry_ids)), whole)
            return
        difference = self._differs_from_a_fresh_read(whole)
        assert difference is None, f"{self._where()}: {difference}\n" + "\n".join(self.log[-8:])

    def _where(self) -> str:
        return f"seed {self.seed} (PI_SIDECAR_FUZZ_SEED={self.seed}), after step {len(self.log)}"

    def _await_change(self, kind: str, new_ids: list[Any], whole: bool) -> None:
        """Wait for the server's ``pi/didChange`` of the session that tells ``kind`` with ``new_ids``
        and leaves it holding what a fresh read of the file gives (a change told of a state the
        file went through on the way, an editor's save in place caught between its write and its
        truncation, is followed by another: those are passed over)."""
        deadline = time.monotonic() + CHANGE_BOUND
        told: list[Any] = []
        difference = None
        while True:
            left = deadline - time.monotonic()
            try:
                params = self.client.wait_for_notification("pi/didChange", timeout=max(left, 0.01))
            except TimeoutError:
                raise AssertionError(
                    f"{self._where()}: no pi/didChange {kind} {new_ids} that leaves the server as a "
                    f"fresh read within {CHANGE_BOUND} s (told {told}; {difference})\n"
                    + "\n".join(self.log[-8:])
                ) from None
            contract().check_notification("pi/didChange", params)
            if params["session"] != self.handle:
                continue
            told.append((params["kind"], params["newEntryIds"]))
            if params["kind"] == kind and params["newEntryIds"] == new_ids:
                difference = self._differs_from_a_fresh_read(whole)
                if difference is None:
                    self.log.append(f"the server told {told}")
                    self.counts[f"told {kind}"] = self.counts.get(f"told {kind}", 0) + 1
                    return

    def _differs_from_a_fresh_read(self, whole: bool) -> str | None:
        """How the server's session differs from the entries the library reads in its file anew
        (read-only: nothing written), and once it read the file whole (``whole``) from the context
        there (a session that took in lines appended keeps its own leaf, where a fresh read's is
        the last entry); None if it does not."""
        if not self.wire_file.exists() or not _starts_with_a_header(self.wire_file):
            return None  # not a session (yet): the server holds the session it had, as the model does
        fresh = SessionManager.open(str(self.wire_file), read_only=True, index=False, pi=self.pi)
        try:
            at = {"session": self.handle}
            entries = self.client.request("pi/getEntries", at)["entries"]
            read = _plain(fresh.get_entries())
            if entries != read:
                return (
                    f"entries differ from a fresh read: {_first_difference(entries, read)} "
                    f"(the model holds {len(self.manager.get_entries())})"
                )
            if whole and self.client.request("pi/buildSessionContext", at) != _plain(
                fresh.build_session_context()
            ):
                return "the context differs from a fresh read"
            return None
        finally:
            fresh.close()

    def kept_what_others_left(self) -> None:
        """Nothing another program left in the file is gone or changed by the server's writes."""
        if self.left_by_others and self.persisted and self.wire_file is not None and self.wire_file.exists():
            now = self.wire_file.read_bytes()
            assert now.startswith(self.left_by_others), (
                f"seed {self.seed} (PI_SIDECAR_FUZZ_SEED={self.seed}), after step {len(self.log)}: "
                "the server changed what another program wrote\n" + "\n".join(self.log[-8:])
            )

    # -- switches to another file -----------------------------------------------------------

    def switch(self, what: str, wire: tuple[str, dict[str, Any]], model: Any) -> None:
        """A method that gives the handle another file, on each side: the same refusal, or both on
        a new file holding the same entries (ids mapped by their place in it)."""
        where, info, model_result, refused = self._on_both_sides(what, wire, model)
        if refused is not None:
            return
        # (the result is left out where the library's is absent: in memory, the file newSession names)
        assert ("result" in info) == (model_result is not ABSENT), f"{where}: {info} {model_result}"
        assert (info.get("result") is None) == (model_result in (None, ABSENT)), (
            f"{where}: {info} {model_result}"
        )
        self._bind(info)
        self._switched()
        self.counts[what] = self.counts.get(what, 0) + 1

    def take_handle(self, what: str, info: dict[str, Any], manager: SessionManager) -> None:
        """The handle an opening method gave (``info``) and the model's ``manager`` made alike
        replace those the model held, which are closed."""
        self.client.request("pi/close", {"session": self.handle})
        self.manager.close()
        self.handle = info["session"]
        self.manager = manager
        self._bind(info)
        self._switched()
        self.counts[what] = self.counts.get(what, 0) + 1

    def _bind(self, info: dict[str, Any]) -> None:
        """The files the handle (its ``info``) and the model's manager hold, and whether they write."""
        self.persisted = info["isPersisted"]
        assert self.persisted == self.manager.is_persisted(), f"{self._where()}: {info}"
        self.wire_file = Path(info["sessionFile"]) if "sessionFile" in info else None
        model_file = self.manager.get_session_file()
        self.model_file = None if model_file in (None, ABSENT) else Path(model_file)
        assert (self.wire_file is None) == (self.model_file is None), f"{self._where()}: {info}"

    def _switched(self) -> None:
        """The handle holds another file: its entries' ids mapped by place, what others left there
        not the server's to keep."""
        pair = (self.wire_file, self.model_file)
        if pair[0] is not None and pair[1] is not None and pair not in self.files:
            self.files.append((pair[0], pair[1]))
        self.cut_short = None
        self.left_by_others = b""
        self.backup = None
        self.last_change = ""
        wire = self.client.request("pi/getEntries", {"session": self.handle})["entries"]
        for wire_entry, model_entry in zip(wire, _plain(self.manager.get_entries()), strict=False):
            if not isinstance(wire_entry, dict) or not isinstance(model_entry, dict):
                continue  # (a value an in-memory session was given that is not an entry)
            wire_id, model_id = wire_entry.get("id"), model_entry.get("id")
            if isinstance(wire_id, str) and wire_id not in self.to_model:
                self.to_model[wire_id] = model_id

    def branched_session(self) -> None:
        target = self.some_id()
        self.switch(
            "createBranchedSession",
            ("pi/createBranchedSession", {"leafId": target}),
            lambda: self.manager.create_branched_session(self.to_model_id(target)),
        )

    def new_session(self) -> None:
        options = self.rng.choice(({}, {"options": {"parentSession": "from the model"}}))
        self.switch(
            "newSession",
            ("pi/newSession", options),
            lambda: self.manager.new_session(options.get("options", ABSENT)),
        )

    def set_session_file(self) -> None:
        written = [pair for pair in self.files if pair[0].exists() and pair[1].exists()]
        if not written:
            return
        wire_file, model_file = self.rng.choice(written)
        real = Path(os.path.realpath(wire_file))  # (a link to a file: the file is what a load repairs)
        before = real.read_bytes()
        self.switch(
            "setSessionFile",
            ("pi/setSessionFile", {"path": str(wire_file)}),
            lambda: self.manager.set_session_file(str(model_file)),
        )
        if self.in_memory_disk is not None and real.exists():
            # in memory too, the load ends a last line cut short with a newline, as pi's
            # loadEntriesFromFile does: the one write an in-memory session makes
            after = real.read_bytes()
            assert after in (before, before + b"\n"), f"{self._where()}: setSessionFile wrote {real}"
            self.in_memory_disk[real.name] = after

    def fork_from(self) -> None:
        """forkFrom of a file either side wrote: a new handle (the old one closed) on its copy."""
        written = [pair for pair in self.files if pair[0].exists() and pair[1].exists()]
        if not written:
            return
        wire_file, model_file = self.rng.choice(written)
        params = {
            "sourcePath": str(wire_file),
            "targetCwd": str(self.root),
            "sessionDir": str(self.root / "wire"),
        }
        _where, info, forked, refused = self.call_both(
            "forkFrom",
            "pi/forkFrom",
            params,
            lambda: SessionManager.fork_from(
                str(model_file), str(self.root), str(self.root / "model"), pi=self.pi, env=self.env
            ),
        )
        if refused is None:  # (refused: a file other programs left without a header, or empty)
            self.take_handle("forkFrom", info, forked)

    # -- comparison ---------------------------------------------------------------------------

    def compare(self) -> None:
        where = f"seed {self.seed} (PI_SIDECAR_FUZZ_SEED={self.seed}), after step {len(self.log)}"
        history = "\n".join(self.log[-8:])
        at = {"session": self.handle}
        sm = self.manager
        entries = _without_timestamps(self.client.request("pi/getEntries", at)["entries"], False)
        held = _without_timestamps(self.as_wire(_plain(sm.get_entries())), False)
        assert entries == held, f"{where}: entries differ: {_first_difference(entries, held)}\n{history}"
        # (the leaf is absent where the last entry has no id: a value an in-memory session was given)
        leaf = self.client.request("pi/getLeaf", at).get("leafId", "absent") if entries else None
        held_leaf = sm.get_leaf_id() if entries else None
        assert leaf == ("absent" if held_leaf is ABSENT else self.as_wire(_plain(held_leaf))), (
            f"{where}: leaf differs: {leaf} against {held_leaf}\n{history}"
        )
        context = self.client.request("pi/buildSessionContext", at)
        assert _without_timestamps(context, True) == _without_timestamps(
            self.as_wire(_plain(sm.build_session_context())), True
        ), f"{where}: context differs\n{history}"
        stats = self.client.request("pi/getStats", at)
        assert _without_timestamps(stats, True) == _without_timestamps(_plain(session_stats(sm)), True), (
            f"{where}: stats differ\n{history}"
        )
        tree = self.client.request("pi/getTree", {**at, "form": "reference"})
        assert _without_timestamps(tree, True) == _without_timestamps(
            self.as_wire(_plain(sm.get_tree())), True
        ), f"{where}: tree differs\n{history}"
        self._compare_pages(at, where, history)

    def _compare_pages(self, at: dict[str, Any], where: str, history: str) -> None:
        view = {"filter": self.rng.choice(("none", "default", "all", "no-tools")), "previews": False}
        whole = self.client.request("pi/getTree", {**at, **view})["nodes"]
        limit = self.rng.choice(PAGE_SIZES)
        pages: list[Any] = []
        offset, revision = 0, None
        while True:
            params = {**at, **view, "offset": offset, "limit": limit}
            if revision is not None:
                params["revision"] = revision
            page = self.client.request("pi/getTree", params)
            revision = page["revision"]
            pages.extend(page["nodes"])
            if not page["hasMore"]:
                break
            offset = page["nextOffset"]
        assert [n["id"] for n in pages] == [n["id"] for n in whole], f"{where}: the pages differ\n{history}"

    def close(self) -> None:
        self.client.close()
        self.manager.close()


# the conformance runner, which oracle_agrees imports: its directory is on the path once, as this
# module is imported (sys.path is the process's, which each test leaves as it found it)
sys.path.insert(0, str(ROOT / "tests" / "conformance"))

# the run's own times are normalized by when each side ran (the oracle's documents say "<TS>"): the
# file's entries get one time of the past instead
_ISO_TIME = re.compile(r'"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"')
_FIXED_TIME = '"2025-01-02T03:04:05.678Z"'
# and a session file's name in a header's parentSession loses its time (the oracle's report writes
# it as "<FTS>", the library's as it is)
_FILE_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z_")


def oracle_agrees(directory: Path, session_file: Path) -> None:
    """The oracle (both pi releases) and the library load ``session_file`` alike: its tree, its
    entries, its leaf and its context (``directory``: a new one for the oracle's files)."""
    import runner

    directory.mkdir()
    scenario = {
        "description": "the sidecar model's final file",
        "files": {
            "s/final.jsonl": {
                "text": _FILE_TIME.sub(
                    "", _ISO_TIME.sub(_FIXED_TIME, session_file.read_text(encoding="utf-8"))
                )
            }
        },
        "start": {"op": "open", "args": [{"$path": "s/final.jsonl"}]},
        "ops": [{"op": "getTree"}, {"op": "getEntries"}, {"op": "getLeafId"}, {"op": "buildSessionContext"}],
        "final": {"files": "none"},
    }
    path = directory / "model-final.scenario.json"
    path.write_text(json.dumps(scenario), encoding="utf-8")
    for pi in runner.PI_VERSIONS:
        reference_locations.oracle_writes_expected(directory, pi)
        expected = runner.expected_path(path, pi).read_text(encoding="utf-8")
        report = runner.run_scenario_report(path, pi=pi)
        assert report.text == expected, f"pi {pi}: " + "; ".join(
            runner.compare_texts(expected, report.text, max_diffs=5)
        )


def oracle_here() -> bool:
    oracle = reference_locations.oracle_dir()
    return (
        shutil.which("node") is not None
        and (oracle / "run.mjs").is_file()
        and reference_locations.has_pi_160(oracle)
    )
