"""Helpers shared by subcommands."""

from __future__ import annotations

import os
from importlib import resources


def example_session_path() -> str:
    """The bundled example session (used when a command is given no file)."""
    return str(resources.files("pi_session_server").joinpath("examples", "example-session.jsonl"))


def session_path(arg: str | None) -> str:
    return os.path.abspath(arg) if arg else example_session_path()
