"""Helpers shared by subcommands."""

from __future__ import annotations

import os
from importlib import resources
from typing import Any

from ..format.jsvalue import ABSENT, js_string_of


def example_session_path() -> str:
    """The bundled example session (used when a command is given no file)."""
    return str(resources.files("pi_session_server").joinpath("examples", "example-session.jsonl"))


def session_path(arg: str | None) -> str:
    return os.path.abspath(arg) if arg else example_session_path()


def model_text(model: Any) -> str:
    """``provider/modelId`` of a context's model: "none" without a model, "unknown" when the
    message it comes from names neither (old sessions), "?" for the part it does not name."""
    if not isinstance(model, dict):
        return "none"
    parts = [model.get(key) for key in ("provider", "modelId")]
    if all(part is None or part is ABSENT for part in parts):
        return "unknown"
    return "/".join("?" if part is None or part is ABSENT else js_string_of(part) for part in parts)
