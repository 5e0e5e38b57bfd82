"""``CallToolResult`` and ``Content`` read straight from the wire dict behave as the pydantic
models they replaced: same values, dumps, reprs, equality, pickling, schema and errors.

The reference is the pydantic twin in ``protocol.result_models``: the model these classes
were before they became light (same fields, same config), validated eagerly.
"""

from __future__ import annotations

import copy
import json
import pickle
from typing import Any

import pydantic
import pytest

import mcp_lite
from mcp_lite.errors import RemoteProtocolError, ToolError
from mcp_lite.protocol import result_models as eager
from mcp_lite.protocol.results import CallToolResult, Content, tool_result
from mcp_lite.protocol.types import GetPromptResult, PromptMessage, ResourceContents

RESULTS: list[dict[str, Any]] = [
    {"content": [{"type": "text", "text": "hi"}]},
    {},
    {"content": [], "isError": True},
    {
        "content": [
            {"type": "text", "text": "a"},
            {"type": "image", "data": "QUJD", "mimeType": "image/png", "_meta": {"k": 1}},
        ],
        "structuredContent": {"x": [1, 2]},
        "_meta": {"progressToken": "t"},
        "resultType": "complete",
        "somethingNewer": {"n": 1},
    },
    {"content": [{"type": "resource", "resource": {"uri": "file:///a", "text": "t"}}]},
    {"content": [{"type": "resource_link", "uri": "x://y", "name": "n", "annotations": {}}]},
    {"content": [{"type": "text", "text": None}], "structuredContent": None},
    {"isError": False, "structuredContent": ["a", 1]},
    # shapes the fast check leaves to pydantic: Python names, values it coerces
    {"is_error": 1, "structured_content": [1], "meta": {"a": 1}},
    {"isError": "true", "content": [{"type": "text", "mime_type": "text/x"}]},
    {"content": [{"type": "resource", "resource": {"uri": "u", "mime_type": "a/b"}}]},
]
INVALID: list[tuple[dict[str, Any], str]] = [
    ({"content": "not a list"}, "content"),
    ({"content": [{"text": "no type"}]}, "content.0.type"),
    ({"content": [{"type": 7}]}, "content.0.type"),
    ({"content": ["text"]}, "content.0"),
    ({"isError": "maybe"}, "isError"),
    ({"_meta": 3}, "_meta"),
    ({"content": [{"type": "text", "text": 5}]}, "content.0.text"),
    ({"content": [{"type": "resource", "resource": {"uri": None}}]}, "content.0.resource.uri"),
]
DUMPS: list[dict[str, Any]] = [
    {},
    {"by_alias": True},
    {"exclude_unset": True},
    {"exclude_none": True, "by_alias": True, "mode": "json"},
    {"exclude_defaults": True},
]


def _ids(value: Any) -> str:
    return json.dumps(value)[:40]


@pytest.mark.parametrize("raw", RESULTS, ids=_ids)
def test_fields_dumps_and_repr_are_the_eager_models(raw: dict[str, Any]) -> None:
    light, model = CallToolResult.model_validate(raw), eager.CallToolResult.model_validate(raw)
    assert isinstance(light, mcp_lite.CallToolResult)
    assert repr(light) == repr(model) and str(light) == str(model)
    for name in ("structured_content", "is_error", "meta"):
        assert getattr(light, name) == getattr(model, name)
    assert light.model_extra == model.model_extra
    assert light.model_fields_set == model.model_fields_set
    assert dict(light).keys() == dict(model).keys()
    for kwargs in DUMPS:
        assert light.model_dump(**kwargs) == model.model_dump(**kwargs), kwargs
    assert light.model_dump_json(by_alias=True) == model.model_dump_json(by_alias=True)
    assert light.to_wire() == model.model_dump(by_alias=True, exclude_none=True, mode="json")
    assert light.text == "\n".join(b.text for b in model.content if b.text is not None)
    assert len(light.content) == len(model.content)
    for block, twin in zip(light.content, model.content, strict=True):
        assert isinstance(block, Content) and repr(block) == repr(twin)
        assert block.model_dump() == twin.model_dump()
        assert block.resource == twin.resource
        assert block.resource is None or isinstance(block.resource, ResourceContents)


@pytest.mark.parametrize("raw", RESULTS, ids=_ids)
def test_equality_pickling_and_copies(raw: dict[str, Any]) -> None:
    result = CallToolResult.model_validate(raw)
    assert result == CallToolResult.model_validate(copy.deepcopy(raw))
    assert result != CallToolResult.model_validate({"content": [{"type": "text", "text": "?"}]})
    for clone in (
        pickle.loads(pickle.dumps(result)),
        copy.copy(result),
        copy.deepcopy(result),
        result.model_copy(),
        CallToolResult.model_validate_json(result.model_dump_json(by_alias=True)),
    ):
        assert type(clone) is CallToolResult and clone == result
        assert clone.model_dump() == result.model_dump()
    flipped = result.model_copy(update={"is_error": not result.is_error})
    assert flipped.is_error is not result.is_error and flipped != result
    with pytest.raises(TypeError):
        hash(result)


def test_equality_sees_everything_the_model_compares() -> None:
    one = CallToolResult.model_validate({"content": [], "extra": 1})
    assert one != CallToolResult.model_validate({"content": [], "extra": 2})
    assert one != CallToolResult.model_validate({"content": []})
    text_json = CallToolResult.model_validate({"content": []})
    text_json._text_json = {"parsed": True}
    assert text_json != CallToolResult.model_validate({"content": []})
    assert text_json.data == {"parsed": True}
    assert pickle.loads(pickle.dumps(text_json)).data == {"parsed": True}
    assert text_json.model_copy().data == {"parsed": True}


@pytest.mark.parametrize(("raw", "where"), INVALID, ids=_ids)
def test_invalid_results_are_refused(raw: dict[str, Any], where: str) -> None:
    with pytest.raises(pydantic.ValidationError):
        eager.CallToolResult.model_validate(raw)
    with pytest.raises(pydantic.ValidationError):
        CallToolResult.model_validate(raw)
    with pytest.raises(RemoteProtocolError, match="invalid tools/call result") as err:
        tool_result(raw)
    assert str(err.value).split("result: ", 1)[1].startswith(where + ":")


def test_an_invalid_result_error_names_no_value() -> None:
    with pytest.raises(RemoteProtocolError) as err:
        tool_result({"content": [{"type": "text", "text": {"token": "s3cret-value"}}]})
    assert "s3cret" not in str(err.value) and "content.0.text" in str(err.value)


def test_a_plain_result_is_read_in_place_and_a_user_dict_is_copied() -> None:
    raw = {"content": [{"type": "text", "text": "a"}], "isError": False}
    assert tool_result(raw)._wire is raw  # the client's own dict: no copy
    made = CallToolResult.model_validate(raw)
    made.is_error = True
    made.content[0].text = "changed"
    assert raw == {"content": [{"type": "text", "text": "a"}], "isError": False}
    assert made.model_dump()["is_error"] is True
    assert made.model_dump()["content"][0]["text"] == "changed" and made.text == "changed"


def test_changes_show_in_dumps_as_on_the_model() -> None:
    for cls, block in ((CallToolResult, Content), (eager.CallToolResult, eager.Content)):
        result: Any = cls.model_validate({})
        result.content.append(block(type="text", text="z"))
        assert result.model_dump(exclude_unset=True) == {}  # appended: still unset
        assert result.model_dump()["content"][0]["text"] == "z"
        result.structured_content = {"k": 1}
        assert result.model_dump(exclude_unset=True) == {"structured_content": {"k": 1}}
    light = CallToolResult.model_validate({"content": [{"type": "text", "text": "a"}]})
    light.content = [Content(type="text", text="b"), Content(type="text", text="c")]
    assert light.text == "b\nc"
    assert light.to_wire()["content"] == [
        {"type": "text", "text": "b"},
        {"type": "text", "text": "c"},
    ]


def test_constructors_take_names_aliases_and_instances() -> None:
    result = CallToolResult(
        content=[Content(type="text", text="a"), {"type": "text", "text": "b"}],
        is_error=True,
        structured_content={"v": 1},
    )
    assert result.text == "a\nb" and result.is_error and result.data == {"v": 1}
    assert result == CallToolResult(
        **{
            "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            "isError": True,
            "structuredContent": {"v": 1},
        }
    )
    assert CallToolResult.model_validate(result) is result
    block = Content(type="resource", resource=ResourceContents(uri="x://1", text="t"))
    assert isinstance(block.resource, ResourceContents) and block.resource.text == "t"
    assert Content(type="image", mime_type="image/png").mime_type == "image/png"
    built = CallToolResult.model_construct(is_error=True)
    assert isinstance(built, CallToolResult) and built.is_error is True
    with pytest.raises(pydantic.ValidationError):
        Content(text="no type")


def test_unknown_fields_read_as_attributes() -> None:
    result = tool_result({"content": [{"type": "text", "text": "a", "newField": 1}], "x": 2})
    assert result.x == 2 and result.content[0].newField == 1
    assert result.content[0].model_extra == {"newField": 1}
    with pytest.raises(AttributeError, match="nothing"):
        result.nothing  # noqa: B018
    with pytest.raises(AttributeError):
        result.content[0].is_error  # noqa: B018


def test_raise_for_error() -> None:
    ok = tool_result({"content": [{"type": "text", "text": "fine"}]})
    assert ok.raise_for_error() is ok
    failed = tool_result({"content": [{"type": "text", "text": "boom"}], "isError": True})
    with pytest.raises(ToolError, match="boom") as err:
        failed.raise_for_error()
    assert err.value.result is failed
    clone = pickle.loads(pickle.dumps(err.value))
    assert clone.result == failed and clone.result.text == "boom"


def test_json_schema_is_the_models() -> None:
    assert CallToolResult.model_json_schema() == eager.CallToolResult.model_json_schema()
    assert Content.model_json_schema(by_alias=False) == eager.Content.model_json_schema(
        by_alias=False
    )
    fields = ["content", "structured_content", "is_error", "meta"]
    assert list(CallToolResult.model_fields) == fields
    assert list(CallToolResult.model_validate({}).model_fields_set) == []


def test_the_classes_work_inside_pydantic_models() -> None:
    class Saved(pydantic.BaseModel):
        result: CallToolResult
        blocks: list[Content] = []

    saved = Saved(
        result={"content": [{"type": "text", "text": "x"}]},  # type: ignore[arg-type]
        blocks=[Content(type="text", text="y")],
    )
    assert type(saved.result) is CallToolResult and saved.result.text == "x"
    dumped = saved.model_dump(by_alias=True, exclude_none=True)
    assert dumped == {
        "result": {"content": [{"type": "text", "text": "x"}], "isError": False},
        "blocks": [{"type": "text", "text": "y"}],
    }
    assert Saved.model_validate_json(saved.model_dump_json()) == saved
    assert "CallToolResult" in json.dumps(Saved.model_json_schema())
    adapter = pydantic.TypeAdapter(CallToolResult)
    assert adapter.validate_python({"isError": True}).is_error is True
    with pytest.raises(pydantic.ValidationError):
        adapter.validate_python({"content": 1})


def test_prompt_messages_hold_content_blocks() -> None:
    got = GetPromptResult.model_validate(
        {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}]}
    )
    content = got.messages[0].content
    assert isinstance(content, Content) and content.text == "hi"
    assert got.model_dump(by_alias=True, exclude_none=True) == {
        "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}]
    }
    assert PromptMessage(role="user", content=content).content is content
    assert pickle.loads(pickle.dumps(got)) == got
