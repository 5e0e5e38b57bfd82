"""``plain_shape``: the shape check that lets a server's dict be used without pydantic.

Each test runs on both implementations (``speedups``); a property test compares them.
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def _examples(n: int) -> int:
    """``n`` examples, scaled by ``MCP_LITE_EXAMPLES_SCALE`` (``make check`` runs a quarter)."""
    return max(10, int(n * float(os.environ.get("MCP_LITE_EXAMPLES_SCALE", "1"))))


SETTINGS = settings(
    max_examples=_examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

STR = frozenset({str})
OPT_STR = frozenset({str, type(None)})
BLOCK_CHECKS: dict[str, Any] = {"type": STR, "text": OPT_STR, "resource": lambda v: v is None}
BLOCK_NAMES = frozenset({"mime_type"})
RESULT_CHECKS: dict[str, Any] = {
    "content": (BLOCK_CHECKS, BLOCK_NAMES, "type"),
    "isError": frozenset({bool}),
    "structuredContent": None,
}
RESULT_NAMES = frozenset({"is_error"})


def check(speedups: ModuleType, raw: Any) -> bool:
    return bool(speedups.plain_shape(raw, RESULT_CHECKS, RESULT_NAMES))


def test_plain_result_is_accepted(speedups: ModuleType) -> None:
    raw = {"content": [{"type": "text", "text": "hi"}], "isError": False, "extra": 1}
    assert check(speedups, raw)
    assert check(speedups, {})  # every key is optional
    assert check(speedups, {"structuredContent": object()})  # None: any value


def test_exact_types_only(speedups: ModuleType) -> None:
    assert not check(speedups, {"isError": 0})  # pydantic would coerce: left to it
    assert not check(speedups, {"isError": "false"})
    assert not check(speedups, [])  # not a dict
    assert not check(speedups, {"content": ({"type": "text"},)})  # a tuple is not a list


def test_python_names_are_left_to_pydantic(speedups: ModuleType) -> None:
    assert not check(speedups, {"is_error": True})
    assert not check(speedups, {"content": [{"type": "text", "mime_type": "x"}]})


def test_list_items_need_the_required_key_and_their_shape(speedups: ModuleType) -> None:
    assert not check(speedups, {"content": [{"text": "no type"}]})
    assert not check(speedups, {"content": [{"type": "text", "text": 5}]})
    assert not check(speedups, {"content": ["text"]})
    assert check(speedups, {"content": []})


def test_function_checks_are_called(speedups: ModuleType) -> None:
    assert check(speedups, {"content": [{"type": "resource", "resource": None}]})
    assert not check(speedups, {"content": [{"type": "resource", "resource": {"uri": "x"}}]})


values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["type", "text", "resource", "mime_type", "content", "isError", "x"]),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@SETTINGS
@given(raw=values)
def test_parity(compiled: ModuleType, pure: ModuleType, raw: Any) -> None:
    assert check(compiled, raw) == check(pure, raw)
