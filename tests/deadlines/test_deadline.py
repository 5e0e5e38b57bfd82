"""``mcp_lite._deadline.Deadline``: one absolute moment per public operation, never extended."""

from __future__ import annotations

import math
import pickle
import time

import pytest

from mcp_lite._deadline import Deadline
from mcp_lite.errors import McpError, RequestTimeout


def test_after_is_an_absolute_moment_from_now() -> None:
    before = time.monotonic()
    deadline = Deadline.after(2)
    assert before + 2 <= deadline.at <= time.monotonic() + 2
    assert deadline.timeout == 2.0
    assert 0 < deadline.remaining() <= 2
    assert not deadline.expired()


def test_none_and_inf_mean_no_deadline() -> None:
    for timeout in (None, math.inf):
        deadline = Deadline.after(timeout)
        assert deadline.at == math.inf and deadline.remaining() == math.inf
        assert not deadline.expired()
        assert deadline.bound(3) == 3
        assert deadline.describe() == "no timeout"


def test_remaining_never_goes_negative_and_expired_says_so() -> None:
    deadline = Deadline(time.monotonic() - 1, 1.0)
    assert deadline.remaining() == 0.0
    assert deadline.expired()
    assert deadline.bound(5) == 0.0


def test_bound_caps_a_step_by_what_is_left_never_more() -> None:
    deadline = Deadline.after(1)
    assert deadline.bound(0.25) == 0.25  # a step's own, smaller cap
    assert deadline.bound(10) <= 1  # never more than what is left
    assert deadline.bound(None) <= 1


def test_of_keeps_the_callers_deadline() -> None:
    mine = Deadline.after(1)
    assert Deadline.of(mine, 60) is mine  # a lower layer never starts a fresh timer
    fresh = Deadline.of(None, 2)
    assert fresh is not mine and fresh.timeout == 2


def test_earlier_only_ever_moves_the_deadline_closer() -> None:
    deadline = Deadline.after(1)
    assert deadline.earlier(10) is deadline
    assert deadline.earlier(None) is deadline
    sooner = deadline.earlier(0.1)
    assert sooner.at < deadline.at and sooner.timeout == deadline.timeout


def test_the_error_names_the_phase_and_the_timeout() -> None:
    error = Deadline.after(2).error("connecting", "initialize got no answer")
    assert isinstance(error, RequestTimeout) and isinstance(error, McpError)
    assert isinstance(error, TimeoutError)
    assert str(error) == "connecting: initialize got no answer within the 2 s timeout"
    assert error.timeout == 2.0
    again = pickle.loads(pickle.dumps(error))  # errors cross processes and futures
    assert str(again) == str(error)


def test_check_raises_only_once_the_deadline_passed() -> None:
    Deadline.after(5).check("listing tools")
    with pytest.raises(RequestTimeout, match=r"^listing tools: page 3 was not reached within"):
        Deadline(time.monotonic() - 0.01, 1.0).check("listing tools", "page 3 was not reached")


def test_repr_says_what_is_left() -> None:
    assert "of 2 s timeout" in repr(Deadline.after(2))
