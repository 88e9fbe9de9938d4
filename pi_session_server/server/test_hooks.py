"""``$/pi/setEnvironment``: a hook for driving conformance scenarios through the wire.

Registered only when the server runs with ``--test-hooks``. The conformance runner gives every
scenario its own working directory, ``HOME`` and ``PI_CODING_AGENT_DIR``; the library reads those at
call time, so a sidecar serving many scenarios in a row must switch them too. The hook also forgets
every held session (a new scenario starts from nothing).
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import TYPE_CHECKING, Any

from .errors import invalid_params
from .workers import CancelToken, on_loop

if TYPE_CHECKING:
    from .app import PiSessionServer

METHOD = "$/pi/setEnvironment"


def register(server: PiSessionServer) -> None:
    @server.connection.route(METHOD)
    async def set_environment(params: Any) -> Any:
        if not isinstance(params, dict) or not isinstance(params.get("cwd"), str):
            raise invalid_params("Invalid params: Object missing required field `cwd`")
        env = params.get("env") or {}
        if not isinstance(env, dict) or not all(isinstance(v, (str, type(None))) for v in env.values()):
            raise invalid_params("Invalid params: `env` must map names to strings or null")
        loop = asyncio.get_running_loop()
        closing = []
        for slot in server.registry.slots():
            closing.append(on_loop(server.registry.close(slot), loop))
        await asyncio.gather(*closing, return_exceptions=True)

        def switch(token: CancelToken) -> None:
            os.chdir(params["cwd"])
            for name, value in env.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
            time.tzset()

        await on_loop(server.pool.queue(METHOD).submit(switch, interruptible=False), loop)
        return None
