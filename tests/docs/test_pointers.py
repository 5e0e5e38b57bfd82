"""The docs' pointers to tests stay true: every guarantee in ``docs/explanation/guarantees.md``
names at least one test, and every ``tests/<folder>/<file>.py::<test>`` named anywhere in the
docs exists (a test moved or renamed must take its pointers with it)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted((ROOT / "docs").rglob("*.md"))
POINTER = re.compile(r"`(tests/[\w/]+\.py)(?:::(\w+))?[^`]*`")


def pointers() -> list[tuple[str, str, str | None]]:
    found = []
    for page in DOCS:
        for match in POINTER.finditer(page.read_text()):
            found.append((page.relative_to(ROOT).as_posix(), match.group(1), match.group(2)))
    return found


def test_every_guarantee_names_its_tests() -> None:
    rows = [
        line
        for line in (ROOT / "docs" / "explanation" / "guarantees.md").read_text().splitlines()
        if line.startswith("| ") and not line.startswith(("| what", "|---"))
    ]
    assert rows, "no guarantee rows found"
    bare = [row.split("|")[1].strip() for row in rows if not POINTER.search(row.split("|")[-2])]
    assert bare == [], f"guarantees without a test: {bare}"


@pytest.mark.parametrize(("page", "path", "test"), pointers(), ids=lambda v: str(v))
def test_pointer_names_an_existing_test(page: str, path: str, test: str | None) -> None:
    target = ROOT / path
    assert target.is_file(), f"{page}: {path} does not exist"
    if test is not None:
        assert re.search(rf"^(async )?def {test}\(", target.read_text(), re.M), (
            f"{page}: {path} has no test {test}"
        )
