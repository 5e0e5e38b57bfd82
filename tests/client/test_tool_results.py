"""What ``call_tool`` hands back from a server's result: the values as sent, a clear error for a
result that breaks the schema (the connection lives on), and the same values as the pydantic
model for results only pydantic can read (Python names, coercible values)."""

from __future__ import annotations

from typing import Any

import pytest

import mcp_lite
from mcp_lite.errors import RemoteProtocolError
from mcp_lite.protocol import result_models as eager


def _answering(reply: Any, results: dict[str, Any]) -> Any:
    def answer(msg: dict[str, Any]) -> list[Any]:
        if msg.get("method") != "tools/call":
            return reply(msg, {}) if "id" in msg else []
        return reply(msg, results[msg["params"]["name"]])

    return answer


@pytest.mark.parametrize(
    ("result", "where"),
    [
        ({"content": "text"}, "content"),
        ({"content": [{"text": "no type"}]}, "content.0.type"),
        ({"content": [{"type": "text", "text": ["a"]}]}, "content.0.text"),
        ({"content": [], "isError": "perhaps"}, "isError"),
        ({"content": [], "_meta": []}, "_meta"),
    ],
)
def test_an_invalid_result_fails_its_call_and_the_next_call_works(
    scripted_client: Any, reply: Any, result: dict[str, Any], where: str
) -> None:
    good = {"content": [{"type": "text", "text": "fine"}]}
    client, _ = scripted_client(_answering(reply, {"bad": result, "good": good}))
    with pytest.raises(RemoteProtocolError, match="invalid tools/call result") as err:
        client.call_tool("bad")
    assert f": {where}:" in str(err.value)
    assert client.call_tool("good").text == "fine"


@pytest.mark.parametrize(
    "result",
    [
        {"content": [{"type": "text", "text": "a"}], "isError": False, "_meta": {"k": 1}},
        {"content": [], "is_error": 1, "structured_content": {"v": 2}},  # Python names
        {"content": [{"type": "image", "mime_type": "image/png", "data": "QQ=="}]},
        {"content": [{"type": "resource", "resource": {"uri": "u://1", "blob": "QQ=="}}]},
        {"content": [{"type": "text", "text": "x", "newer": True}], "isError": "false"},
    ],
)
def test_results_read_as_the_model_reads_them(
    scripted_client: Any, reply: Any, result: dict[str, Any]
) -> None:
    client, _ = scripted_client(_answering(reply, {"t": result}))
    got = client.call_tool("t")
    model = eager.CallToolResult.model_validate(result)
    assert isinstance(got, mcp_lite.CallToolResult)
    assert (got.is_error, got.structured_content, got.meta) == (
        model.is_error,
        model.structured_content,
        model.meta,
    )
    assert [b.model_dump() for b in got.content] == [b.model_dump() for b in model.content]
    assert got.model_dump() == model.model_dump()
    assert repr(got) == repr(model)


def test_a_task_result_can_be_read_twice() -> None:
    """A task keeps its final dict: each ``result()`` is its own object."""
    server = mcp_lite.Server("tasks")

    @server.tool(task_support="required")
    def build(name: str) -> str:
        return f"built {name}"

    with mcp_lite.connect(server) as client:
        task = client.call_tool_as_task("build", {"name": "x"})
        first = task.result(timeout=30)
        first.is_error = True
        first.content[0].text = "changed"
        second = task.result(timeout=30)
        assert second.text == "built x" and second.is_error is False


def test_a_server_tool_can_pass_on_a_result() -> None:
    """A proxy tool returning another server's ``CallToolResult`` answers with that result."""
    inner = mcp_lite.Server("inner")

    @inner.tool()
    def hello() -> dict[str, Any]:
        return {"greeting": "hi"}

    with mcp_lite.connect(inner) as inner_client:
        outer = mcp_lite.Server("outer")

        @outer.tool()
        def proxy():  # type: ignore[no-untyped-def]
            return inner_client.call_tool("hello")

        with mcp_lite.connect(outer) as client:
            passed = client.call_tool("proxy")
            assert passed == inner_client.call_tool("hello")
            assert passed.structured_content == {"greeting": "hi"}
