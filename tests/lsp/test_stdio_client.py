"""The Python client of the sidecar (``SidecarClient``): requests sent behind one another without
waiting (``send_request``) are answered in the order the server gives them, each to its own id
(``reply``), an error reply raised as ``RpcError``."""

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
