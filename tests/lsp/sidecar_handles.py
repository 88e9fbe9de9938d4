"""The sidecar model's steps that give its handle another session or take it away (see
sidecar_model.py): pi/continueRecent of the sessions' directory while other programs write files
there, pi/delete of a file (or a link to it) the model's handle, a second client's handle or pi
appending holds, and pi/inMemory sessions (the model's entries given or none, options the contract
refuses) that the other steps then branch, switch to other files and append to, writing nothing
(but the newline pi's load ends a cut line with).

Each takes the model (``sidecar_model.Model``) and expects what the library does (delete, which
the library has not, as the contract words it): the same result, or the same refusal with the
contract's error code.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import builders as S

from pi_session_server.errors import FsError
from pi_session_server.format.jsjson import dumps_bytes
from pi_session_server.format.jsvalue import ABSENT
from pi_session_server.server.errors import FS_ERROR, UNKNOWN_SESSION, path_refused
from pi_session_server.server.stdio_client import RpcError
from pi_session_server.session import SessionManager
from pi_session_server.session.discovery import discover_header_quietly

if TYPE_CHECKING:
    from sidecar_model import Model


# -- pi/continueRecent ------------------------------------------------------------------------


def continue_recent(model: Model) -> None:
    """The most recent session of the directory, after another program maybe wrote a newer file
    there: pi of another directory (skipped: its cwd is not ours), a ``.jsonl`` that is not a
    session (skipped), or pi of this directory (chosen)."""
    roll = model.rng.random()
    if roll < 0.2:
        _write_foreign_session(model, str(model.root / "elsewhere"))
    elif roll < 0.3:
        _write_foreign_file(model, b'{"type":"message","id":"00000000"}\nnot a session\n')
    elif roll < 0.45:
        _write_foreign_session(model, str(model.root))
    _continue(model, model.client.send_request("pi/continueRecent", _recent_params(model)))


def _recent_params(model: Model) -> dict[str, str]:
    return {"cwd": str(model.root), "sessionDir": str(model.root / "wire")}


def _continue(model: Model, sent: int) -> None:
    """The handle swapped for the session pi/continueRecent (``sent``) chose, as the library's."""
    root = str(model.root)
    where, info, manager, refused = model.call_both(
        "continueRecent",
        "pi/continueRecent",
        _recent_params(model),
        lambda: SessionManager.continue_recent(root, str(model.root / "model"), pi=model.pi, env=model.env),
        sent,
    )
    if refused is not None:
        return
    chosen = Path(manager.get_session_file())
    paired = {model_file: wire_file for wire_file, model_file in model.files}
    if chosen in paired and paired[chosen] != Path(info["sessionFile"]):
        # files written within one millisecond tie (pi orders them by the listing then, which
        # differs between the two directories): the model follows the server's choice
        mtimes = {
            int(path.stat().st_mtime_ns // 1_000_000) for path in (paired[chosen], Path(info["sessionFile"]))
        }
        assert len(mtimes) == 1, f"{where}: the server chose {info['sessionFile']}, the library {chosen}"
        manager.close()
        model_file = next(m for w, m in model.files if w == Path(info["sessionFile"]))
        manager = SessionManager.open(
            str(model_file), str(model.root / "model"), root, pi=model.pi, env=model.env
        )
    model.take_handle("continueRecent", info, manager)


def _write_foreign_session(model: Model, cwd: str) -> None:
    """pi (another process) writes a new session of ``cwd`` in both directories: a header, a
    question and its answer."""
    model.foreign += 1
    session_id = f"0190f00d-0000-7000-8000-{model.foreign:012x}"
    question, answer = f"{model.rng.getrandbits(32):08x}", f"{model.rng.getrandbits(32):08x}"
    lines = [
        {
            "type": "session",
            "version": 3,
            "id": session_id,
            "timestamp": "2026-01-01T00:00:00.000Z",
            "cwd": cwd,
        },
        {
            "type": "message",
            "id": question,
            "parentId": None,
            "timestamp": "2026-01-01T00:00:00.000Z",
            "message": S.user_message("from pi", 1),
        },
        {
            "type": "message",
            "id": answer,
            "parentId": question,
            "timestamp": "2026-01-01T00:00:01.000Z",
            "message": S.assistant_message("pi answered", 2, provider="p", model="m1"),
        },
    ]
    model.to_model.update({question: question, answer: answer})
    _write_foreign_file(model, b"".join(dumps_bytes(line) + b"\n" for line in lines))


def _write_foreign_file(model: Model, data: bytes) -> None:
    """Another program writes ``data`` as a new ``.jsonl`` in both directories."""
    name = f"2026-01-01T00-00-00-000Z_foreign-{model.foreign}-{model.rng.getrandbits(32):08x}.jsonl"
    pair = (model.root / "wire" / name, model.root / "model" / name)
    for path in pair:
        path.write_bytes(data)
    model.files.append(pair)
    model.log.append(f"another program wrote {name}")


# -- pi/delete --------------------------------------------------------------------------------


def delete(model: Model) -> None:
    """pi/delete of a file: the one the model's handle holds (pi maybe appending to it), another
    the model wrote, or one gone, or a symlink to one; held or not by a second client's handle
    (opened through the link maybe). The server closes the handles on the file (on the link: those
    opened through it) and deletes it, or refuses as the contract says (nothing closed). Half the
    time a write on each handle it closes is sent right behind it: UnknownSession, nothing written."""
    wire_file, model_file = _file_to_delete(model)
    link = (
        _link_to(model, wire_file, model_file) if model.rng.random() < 0.25 and wire_file.exists() else None
    )
    second = _second_client(model, wire_file, model_file, link)
    wire_target, model_target = (
        link if link is not None and model.rng.random() < 0.5 else (wire_file, model_file)
    )
    addresses = [{"session": model.handle}] if _holds(model, model.wire_file, wire_target) else []
    if second is not None and _holds(model, second[2], wire_target):
        addresses.append(second[1])
    holders = sorted({_handle(model, address, second) for address in addresses})
    permanent = model.rng.random() < 0.8
    is_session = model_file.exists() and discover_header_quietly(str(model_file)) is not None

    def expected() -> dict[str, Any]:
        if not os.path.lexists(model_target):
            raise FsError("ENOENT", "no such file or directory", "stat", str(model_target))
        if not is_session:
            raise path_refused(f"Not a pi session file: {model_target}", str(model_target))
        model_target.unlink()
        return {"path": str(wire_target), "trashed": not permanent, "closedSessions": holders}

    params = {**_spelled(model, wire_target), "permanent": permanent}
    sent = model.client.send_request("pi/delete", params)
    behind = _writes_behind(model, addresses) if is_session and model.rng.random() < 0.5 else []
    # (sent behind it, the listing finds the file gone)
    recent = (
        model.client.send_request("pi/continueRecent", _recent_params(model))
        if is_session and model.rng.random() < 0.3
        else None
    )
    where, result, expectation, refused = model.call_both("delete", "pi/delete", params, expected, sent)
    if refused is None:
        answered = {**result, "closedSessions": sorted(result["closedSessions"])}
        assert answered == expectation, f"{where}: {answered} against {expectation}"
        for address, request in behind:
            reply = lambda request=request: model.client.reply(request, "pi/append")  # noqa: E731
            _unknown(model, where, _handle(model, address, second), reply)
        _gone(model, where, wire_target)
        assert wire_file.exists() == model_file.exists(), f"{where}: the file and its link"
        _closed(model, where, holders)
        model.counts["deleted"] = model.counts.get("deleted", 0) + 1
    else:
        assert wire_target.exists() == model_target.exists(), f"{where}: the file was deleted"
    if second is not None and second[0] not in (model.handle, *holders):  # (the second client is done)
        model.client.request("pi/close", {"session": second[0]})
    if refused is None:
        _go_on(model, holders, recent)


def _holds(model: Model, held: Path | None, target: Path) -> bool:
    """Whether a handle on ``held`` holds ``target``, as a delete of it finds: the same file (through
    links too), but a link only by the handles opened through it."""
    if held is None or (held is model.wire_file and not model.persisted):
        return False  # (an in-memory session holds no file)
    if target.is_symlink():
        return held == target
    return os.path.realpath(held) == os.path.realpath(target)


def _handle(model: Model, address: dict[str, str], second: tuple[str, dict[str, str], Path] | None) -> str:
    """The handle a request to ``address`` goes to: its own, or the one a uri uses."""
    if "session" in address:
        return address["session"]
    return second[0] if second is not None else model.handle


def _link_to(model: Model, wire_file: Path, model_file: Path) -> tuple[Path, Path]:
    """A symlink to each file, in a directory of links (known to the model as a pair of files)."""
    (model.root / "links").mkdir(exist_ok=True)
    name = f"link-{len(model.files)}-{model.rng.getrandbits(16):04x}.jsonl"
    pair = (model.root / "links" / f"wire-{name}", model.root / "links" / f"model-{name}")
    pair[0].symlink_to(wire_file)
    pair[1].symlink_to(model_file)
    model.files.append(pair)
    model.log.append(f"a link {pair[0].name} to {wire_file.name}")
    return pair


def _go_on(model: Model, closed: list[str], recent: int | None) -> None:
    """After a delete that closed the handles ``closed``: a new session if the model's was one of
    them, the continueRecent sent behind the delete (``recent``) taken as the handle."""
    if model.handle in closed:
        model.manager.close()
        model.start_again()
    elif not model.persisted:
        model.in_memory_disk = model.disk()
    if recent is not None:
        _continue(model, recent)


def _spelled(model: Model, path: Path) -> dict[str, str]:
    """``path`` as pi/delete may be given it: as it is, through ``.`` or ``..``, or as a uri."""
    how = model.rng.choice(("as it is", "as it is", "dot", "dot-dot", "uri"))
    if how == "uri":
        return {"uri": path.as_uri()}
    if how == "dot":
        return {"path": f"{path.parent}/./{path.name}"}
    if how == "dot-dot":
        return {"path": f"{path.parent}/../{path.parent.name}/{path.name}"}
    return {"path": str(path)}


def _writes_behind(model: Model, addresses: list[dict[str, str]]) -> list[tuple[dict[str, str], int]]:
    """An append on each session of ``addresses`` (a handle or a uri) sent now, behind a delete:
    the address, the request's id."""
    message = {"role": "user", "content": "sent behind the delete", "timestamp": 1}
    sent = []
    for address in addresses:
        append = {**address, "kind": "message", "message": message}
        sent.append((address, model.client.send_request("pi/append", append)))
        model.counts["a write behind a delete"] = model.counts.get("a write behind a delete", 0) + 1
    return sent


def _file_to_delete(model: Model) -> tuple[Path, Path]:
    """Half the time the file the handle holds, if there is one (pi maybe appending to it
    meanwhile), else any file the model knows (wire, model), which may be gone."""
    held = model.persisted and model.wire_file is not None and model.wire_file.exists()
    if held and model.rng.random() < 0.5:
        assert model.wire_file is not None and model.model_file is not None
        if model.rng.random() < 0.4:
            model.rng.choice((model.append_as_another_program, model.cut_short_by_another_program))()
        return model.wire_file, model.model_file
    return model.rng.choice(model.files)


def _unknown(model: Model, where: str, handle: str, call: Any) -> None:
    """``call()`` answers UnknownSession (-32001) for ``handle``."""
    try:
        call()
    except RpcError as error:
        assert error.rpc_code == UNKNOWN_SESSION, f"{where}: {error}"
        assert error.data == {"session": handle}, f"{where}: {error.data}"
    else:
        raise AssertionError(f"{where}: a request on {handle}, closed by the delete, answered")


def _gone(model: Model, where: str, path: Path) -> None:
    """``path`` is gone: a read by uri finds no file there (not a session the delete closed)."""
    assert not path.exists(), f"{where}: {path} is there after the delete"
    try:
        model.client.request("pi/getEntryCount", {"uri": path.as_uri()})
    except RpcError as error:
        assert (error.rpc_code, error.code) == (FS_ERROR, "ENOENT"), f"{where}: {error}"
    else:
        raise AssertionError(f"{where}: a read by uri of {path}, deleted, answered")


def _closed(model: Model, where: str, handles: list[str]) -> None:
    """The ``handles`` a delete closed: a request on one is UnknownSession; pi/close of one
    answers closed (a client's close sent before it knew of the delete must not fail)."""
    for handle in handles:
        _unknown(
            model,
            where,
            handle,
            lambda handle=handle: model.client.request("pi/getLeaf", {"session": handle}),
        )
        closed = model.client.request("pi/close", {"session": handle})
        assert closed == {"session": handle, "closed": True}, f"{where}: {closed}"


def _second_client(
    model: Model, wire_file: Path, model_file: Path, link: tuple[Path, Path] | None
) -> tuple[str, dict[str, str], Path] | None:
    """Half the time, another client on ``wire_file``: its handle, how it addresses it, and the
    path it opened (a handle of its own from pi/open, maybe through ``link``, which may repair the
    file's last line as the library's open does in ``model_file``; or a look by uri, which writes
    nothing and uses the model's handle if that holds the file); None if not."""
    roll = model.rng.random()
    if roll < 0.5 or discover_header_quietly(str(model_file)) is None:
        return None
    if roll < 0.75:
        opened = link[0] if link is not None and model.rng.random() < 0.5 else wire_file
        handle = str(model.client.request("pi/open", {"path": str(opened)})["session"])
        SessionManager.open(str(model_file), pi=model.pi, env=model.env).close()
        model.log.append(f"a second client opened {opened.name}")
        return handle, {"session": handle}, opened
    uri = wire_file.as_uri()
    model.client.request("pi/getEntryCount", {"uri": uri})
    held = [s["session"] for s in model.client.request("pi/sessions", {}) if s.get("uri") == uri]
    model.log.append(f"a second client looked at {wire_file.name} by uri (held by {held})")
    return next((h for h in held if h != model.handle), model.handle), {"uri": uri}, wire_file


# -- pi/inMemory ------------------------------------------------------------------------------


def in_memory(model: Model) -> None:
    """The handle swapped for an in-memory session: empty, or given the model's entries (with the
    header or not, maybe a value that is not an entry), with options maybe (an id the contract
    refuses among them)."""
    params: dict[str, Any] = {"cwd": str(model.root)}
    wire_entries: list[Any] = []
    model_entries: list[Any] = []
    if model.rng.random() < 0.7:
        wire_entries = model.client.request("pi/getEntries", {"session": model.handle})["entries"]
        model_entries = model.as_json(model.manager.get_entries())
        if model.rng.random() < 0.5:
            wire_entries.insert(0, model.client.request("pi/getHeader", {"session": model.handle}))
            model_entries.insert(0, model.as_json(model.manager.get_header()))
        if model.rng.random() < 0.2:
            junk = model.rng.choice((None, 5, "text", [], {"type": "message"}))
            wire_entries.append(junk)
            model_entries.append(junk)
        params["entries"] = wire_entries
    options = model.rng.choice(
        (None, {"parentSession": "from memory"}, {"id": "not an id!"}, {"id": "mem-1"})
    )
    if options is not None:
        params["options"] = options
    where, info, manager, refused = model.call_both(
        "inMemory",
        "pi/inMemory",
        params,
        lambda: SessionManager.in_memory(
            str(model.root),
            options if options is not None else ABSENT,
            model_entries or ABSENT,
            pi=model.pi,
            env=model.env,
        ),
    )
    if refused is None:
        assert "sessionFile" not in info and info["isPersisted"] is False, f"{where}: {info}"
        model.take_handle("inMemory", info, manager)
