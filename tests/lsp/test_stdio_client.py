"""The Python client of the sidecar (``SidecarClient``): requests sent behind one another without
waiting (``send_request``) are answered in the order the server gives them, each to its own id
(``reply``), an error reply raised as ``RpcError``; README.md's example of it runs as written."""

from __future__ import annotations

from pathlib import Path

import builders as S
import pytest
from sidecar_support import SERVER_COMMAND, server_env

from pi_session_server.server.errors import UNKNOWN_SESSION
from pi_session_server.server.stdio_client import RpcError, SidecarClient

pytestmark = pytest.mark.timeout(60)

USER = S.user_message("q", 1)
ASSISTANT = S.assistant_message("a", 2)


def test_a_write_sent_behind_a_delete_answers_unknown_session_and_writes_nothing(tmp_path: Path) -> None:
    with SidecarClient(SERVER_COMMAND, env=server_env(tmp_path), cwd=str(tmp_path)) as pi:
        pi.initialize()
        opened = pi.request("pi/create", {"cwd": str(tmp_path), "sessionDir": str(tmp_path / "s")})
        handle = opened["session"]
        for message in (USER, ASSISTANT):
            pi.request("pi/append", {"session": handle, "kind": "message", "message": message})
        path = Path(opened["sessionFile"])
        deleting = pi.send_request("pi/delete", {"path": str(path), "permanent": True})
        behind = pi.send_request("pi/append", {"session": handle, "kind": "message", "message": USER})
        # (the answers are waited for in the other order: each goes to its own request)
        with pytest.raises(RpcError) as refused:
            pi.reply(behind, "pi/append")
        assert (refused.value.rpc_code, refused.value.data) == (UNKNOWN_SESSION, {"session": handle})
        assert pi.reply(deleting, "pi/delete")["closedSessions"] == [handle]
        assert not path.exists()


def test_the_readme_s_sidecar_example_runs_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """README.md's sidecar block, run where its reader was told to copy the example session: it
    opens that session, and its context and first page of the tree are the session's."""
    import re
    import shutil

    root = Path(__file__).resolve().parents[2]
    blocks = re.findall(
        r"^```python\n(.*?)^```", (root / "README.md").read_text(encoding="utf-8"), re.M | re.S
    )
    (code,) = [block for block in blocks if "SidecarClient" in block]
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    shutil.copy(root / "pi_session_server" / "examples" / "example-session.jsonl", work / "session.jsonl")
    before = (work / "session.jsonl").read_bytes()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("PI_CODING_AGENT_DIR", raising=False)
    monkeypatch.chdir(work)
    namespace: dict[str, object] = {"__name__": "__example__"}
    exec(compile(code, "README.md (sidecar)", "exec"), namespace)
    context, page = namespace["context"], namespace["page"]
    assert isinstance(context, dict) and len(context["messages"]) == 12
    assert isinstance(page, dict) and len(page["nodes"]) == page["total"] == 36
    assert (work / "session.jsonl").read_bytes() == before
