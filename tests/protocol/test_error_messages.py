"""What an error's text carries: a stdio server's exit code and stderr tail are never lost."""

from __future__ import annotations

import pickle

from mcp_lite import ConnectionClosed


def test_stderr_tail_is_kept_when_the_message_mentions_stderr() -> None:
    # a server named "stderr-logger": the word alone must not hide the tail
    error = ConnectionClosed("MCP server 'stderr-logger' exited", 3, "Traceback: boom")
    assert "Traceback: boom" in str(error)
    assert "exit code 3" in str(error)


def test_a_tail_already_in_the_message_is_not_repeated() -> None:
    first = ConnectionClosed("server exited", 1, "no such module")
    again = ConnectionClosed(str(first), 1, "no such module")
    assert str(again).count("no such module") == 1
    assert str(again).count("exit code 1") == 1


def test_survives_pickling_with_its_fields() -> None:
    error = pickle.loads(pickle.dumps(ConnectionClosed("gone", 2, "tail")))
    assert (error.exit_code, error.stderr_tail) == (2, "tail")
    assert "tail" in str(error)
