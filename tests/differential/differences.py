"""The documented differences (differences.yaml): the only disagreements a differential test accepts."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

LIST = Path(__file__).with_name("differences.yaml")
AREAS = ("yaml", "validate", "cel", "admission", "schedule", "explain")


@cache
def entries() -> dict[str, dict[str, dict[str, Any]]]:
    """Area → id → entry."""
    data = YAML(typ="safe").load(LIST.read_text(encoding="utf-8"))
    return {area: {entry["id"]: entry for entry in data.get(area) or []} for area in AREAS}


def known(area: str, id: str) -> dict[str, Any]:
    """The entry that explains a difference (KeyError when the list does not have it: a test that
    names an undocumented difference fails)."""
    return entries()[area][id]
