"""Subcommands of ``pi-session``; each module has ``add_arguments(parser)`` and ``run(args) -> int``."""
