"""Files shipped with the package (the JSON schemas), found with importlib.resources."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any


def schema_text(name: str) -> str:
    """The text of ``schemas/<name>``, installed as ``kaffinity/schemas/<name>``."""
    installed = resources.files("kaffinity") / "schemas" / name
    if installed.is_file():
        return installed.read_text(encoding="utf-8")
    # Running from a source checkout without installing: the top-level schemas/ folder.
    return (Path(__file__).resolve().parents[2] / "schemas" / name).read_text(encoding="utf-8")


@cache
def schema(name: str) -> Any:
    return json.loads(schema_text(name))
