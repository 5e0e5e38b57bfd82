"""Small wording helpers for messages a person reads: counts with the right plural, sizes."""

from __future__ import annotations


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """``plural(1, "tool")`` -> ``"1 tool"``; ``plural(2, "tool")`` -> ``"2 tools"``."""
    word = noun if count == 1 else (plural_form or noun + "s")
    return f"{count} {word}"


def human_size(size: int) -> str:
    """``512`` -> ``"512 bytes"``, ``12_345`` -> ``"12 KB"``, ``3_500_000`` -> ``"3.3 MB"``
    (binary units, as file managers show them)."""
    if size < 1024:
        return plural(size, "byte")
    if size < 1024 * 1024:
        return f"{round(size / 1024)} KB"
    return f"{size / (1024 * 1024):.1f} MB"
