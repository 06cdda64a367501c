"""The list of documented differences is complete and used: each entry says what differs and why,
and some test under tests/differential/ names it."""

from __future__ import annotations

from pathlib import Path

from tests.differential.differences import AREAS, LIST, entries

HERE = Path(__file__).parent


def test_every_difference_says_what_and_why_and_is_used() -> None:
    sources = "".join(
        p.read_text(encoding="utf-8") for p in HERE.glob("test_*.py") if p.name != Path(__file__).name
    )
    for area in AREAS:
        for id, entry in entries()[area].items():
            assert entry.get("what") and entry.get("why"), (area, id)
            assert f'"{id}"' in sources, f"{LIST.name}: {area}/{id} is named by no test"
