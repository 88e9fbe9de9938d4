"""Text renderings of sessions for terminals (the CLI and the demo)."""
