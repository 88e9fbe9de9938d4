"""``python -m pi_session_server [OPTIONS]`` runs the sidecar on stdio (``pi-session serve
[OPTIONS]``); ``python -m pi_session_server COMMAND ...`` is ``pi-session COMMAND ...``."""

import sys

from pi_session_server.console import main

if __name__ == "__main__":
    args = sys.argv[1:]
    # nothing, or only options: the server's options (``--fsync``, ``--log-file F``), not pi-session's
    serves = not args or (args[0].startswith("-") and args[0] not in ("-h", "--help"))
    sys.exit(main(["serve", *args] if serves else args))
