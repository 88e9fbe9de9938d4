"""``python -m pi_session_server`` runs the sidecar on stdio (same as ``pi-session serve``)."""

import sys

from pi_session_server.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["serve"]))
