"""Text renderings of sessions: the tree for terminals (the CLI and the demo), and the LLM context as
Markdown for the CLI and the editors."""
