"""JSON message kernels: encode_message / decode_message (pydantic_core underneath)."""

from __future__ import annotations

import json
import os
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st


def _examples(n: int) -> int:
    """``n`` examples, scaled by ``MCP_LITE_EXAMPLES_SCALE`` (``make check`` runs a quarter)."""
    return max(10, int(n * float(os.environ.get("MCP_LITE_EXAMPLES_SCALE", "1"))))


def test_encode_message_is_compact_utf8_with_one_newline(speedups: ModuleType) -> None:
    msg = {"jsonrpc": "2.0", "id": 1, "params": {"text": "héllo\nworld 😀", "xs": [1, 2.5, None]}}
    out = speedups.encode_message(msg)
    assert out.endswith(b"\n")
    assert out.count(b"\n") == 1
    assert b", " not in out and b": " not in out
    assert "héllo".encode() in out and "😀".encode() in out
    assert b"\\u" not in out
    assert json.loads(out) == msg


def test_encode_message_list_and_nan(speedups: ModuleType) -> None:
    assert speedups.encode_message([{"a": 1}, {"b": []}]) == b'[{"a":1},{"b":[]}]\n'
    assert speedups.encode_message({"x": float("nan"), "y": float("inf")}) == (
        b'{"x":null,"y":null}\n'
    )


def test_encode_message_unserializable(speedups: ModuleType) -> None:
    with pytest.raises(ValueError):
        speedups.encode_message({"x": object()})


def test_decode_message(speedups: ModuleType) -> None:
    assert speedups.decode_message(b'{"a": [1, "\xc3\xa9"]}') == {"a": [1, "é"]}
    assert speedups.decode_message(bytearray(b"[]")) == []


@pytest.mark.parametrize("bad", [b"", b"{", b"{bad}", b'{"a": 1} x', b"\xff", b"[1,]"])
def test_decode_message_errors(speedups: ModuleType, bad: bytes) -> None:
    with pytest.raises(ValueError):
        speedups.decode_message(bad)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=_examples(150), deadline=None)
@given(value=st.dictionaries(st.text(), json_values, max_size=5) | st.lists(json_values))
def test_encode_decode_round_trip_and_single_newline(speedups: ModuleType, value: object) -> None:
    out = speedups.encode_message(value)
    assert out.endswith(b"\n") and b"\n" not in out[:-1] and b"\r" not in out
    assert speedups.decode_message(out) == value
