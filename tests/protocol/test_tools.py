"""``Tool`` and ``ToolAnnotations`` read straight from the wire dict behave as the pydantic
models they replaced: same values, dumps, reprs, equality, pickling, schema and errors.

The reference is the pydantic twin in ``protocol.result_models`` (the model these classes
were, same fields and config), validated eagerly.
"""

from __future__ import annotations

import copy
import json
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pydantic
import pytest

import mcp_lite
from mcp_lite.errors import RemoteProtocolError
from mcp_lite.protocol import result_models as eager
from mcp_lite.protocol.tools import Tool, ToolAnnotations, validate_tools

TOOLS: list[dict[str, Any]] = [
    {"name": "t", "inputSchema": {"type": "object"}},
    {"name": "bare"},  # no inputSchema (the spec requires one): the model's default
    {
        "name": "full",
        "title": "Full",
        "description": "Does it all",
        "inputSchema": {"type": "object", "properties": {"a": {"type": "integer"}}},
        "outputSchema": {"type": "object"},
        "annotations": {"title": "A", "readOnlyHint": True, "destructiveHint": False},
        "icons": [{"src": "https://x/i.png", "mimeType": "image/png"}],
        "_meta": {"anthropic/alwaysLoad": True},
        "execution": {"taskSupport": "optional"},  # a field the model does not declare
    },
    {"name": "n", "inputSchema": {}, "annotations": {}, "title": None, "icons": None},
    {"name": "ann", "inputSchema": {}, "annotations": {"openWorldHint": None, "x-new": 1}},
    {"name": "at", "inputSchema": {}, "annotations": {"title": "From annotations"}},
    # shapes the fast check leaves to pydantic: Python names, values it coerces
    {"name": "py", "input_schema": {"type": "object"}, "meta": {"k": 1}},
    {"name": "co", "inputSchema": {}, "annotations": {"readOnlyHint": "true"}},
    {"name": "sn", "inputSchema": {}, "annotations": {"read_only_hint": 1}},
]
INVALID: list[tuple[Any, str]] = [
    ({"inputSchema": {}}, "name"),
    ({"name": 7, "inputSchema": {}}, "name"),
    ({"name": "t", "inputSchema": None}, "inputSchema"),
    ({"name": "t", "inputSchema": []}, "inputSchema"),
    ({"name": "t", "annotations": "read-only"}, "annotations"),
    ({"name": "t", "annotations": {"readOnlyHint": "maybe"}}, "annotations.readOnlyHint"),
    ({"name": "t", "icons": "x"}, "icons"),
    ({"name": "t", "_meta": 3}, "_meta"),
]
DUMPS: list[dict[str, Any]] = [
    {},
    {"by_alias": True},
    {"exclude_unset": True},
    {"exclude_none": True, "by_alias": True, "mode": "json"},
    {"exclude_defaults": True},
]
FIELDS = ("name", "title", "description", "input_schema", "output_schema", "icons", "meta")


def _ids(value: Any) -> str:
    return json.dumps(value)[:40]


def _display_name(model: eager.Tool) -> str:
    """What the model's ``display_name`` was: title, then annotations.title, then name."""
    if model.title:
        return model.title
    if model.annotations is not None and model.annotations.title:
        return model.annotations.title
    return model.name


@pytest.mark.parametrize("raw", TOOLS, ids=_ids)
def test_fields_dumps_and_repr_are_the_eager_models(raw: dict[str, Any]) -> None:
    (light,), model = validate_tools([copy.deepcopy(raw)]), eager.Tool.model_validate(raw)
    assert isinstance(light, mcp_lite.Tool) and isinstance(light, Tool)
    assert repr(light) == repr(model) and str(light) == str(model)
    for name in FIELDS:
        assert getattr(light, name) == getattr(model, name), name
    assert light.display_name == _display_name(model)
    assert light.model_extra == model.model_extra
    assert light.model_fields_set == model.model_fields_set
    assert dict(light).keys() == dict(model).keys()
    for kwargs in DUMPS:
        assert light.model_dump(**kwargs) == model.model_dump(**kwargs), kwargs
    assert light.model_dump_json(by_alias=True) == model.model_dump_json(by_alias=True)
    assert light.to_wire() == model.model_dump(by_alias=True, exclude_none=True, mode="json")
    if model.annotations is None:
        assert light.annotations is None
    else:
        annotations = light.annotations
        assert isinstance(annotations, ToolAnnotations) and annotations is light.annotations
        assert repr(annotations) == repr(model.annotations)
        assert annotations.model_dump() == model.annotations.model_dump()
    for key, value in (model.model_extra or {}).items():
        assert getattr(light, key) == value


@pytest.mark.parametrize("raw", TOOLS, ids=_ids)
def test_equality_pickling_and_copies(raw: dict[str, Any]) -> None:
    tool = Tool.model_validate(raw)
    assert tool == Tool.model_validate(copy.deepcopy(raw))
    assert tool != Tool.model_validate({**raw, "name": "other"})
    for clone in (
        pickle.loads(pickle.dumps(tool)),
        copy.copy(tool),
        copy.deepcopy(tool),
        tool.model_copy(),
        Tool.model_validate_json(tool.model_dump_json(by_alias=True)),
    ):
        assert type(clone) is Tool and clone == tool
        assert clone.model_dump() == tool.model_dump()
    renamed = tool.model_copy(update={"description": "changed"})
    assert renamed.description == "changed" and renamed != tool
    with pytest.raises(TypeError):
        hash(tool)


@pytest.mark.parametrize(("raw", "where"), INVALID, ids=_ids)
def test_invalid_tools_are_refused_naming_the_entry_and_field(raw: Any, where: str) -> None:
    with pytest.raises(pydantic.ValidationError):
        eager.Tool.model_validate(raw)
    with pytest.raises(pydantic.ValidationError):
        Tool.model_validate(raw)
    good = {"name": "ok", "inputSchema": {}}
    with pytest.raises(RemoteProtocolError, match=r"invalid tool \(tools/list entry 1\)") as err:
        validate_tools([good, raw])
    assert str(err.value).split("entry 1): ", 1)[1].startswith(where + ":")


def test_an_entry_that_is_no_object_is_refused() -> None:
    with pytest.raises(RemoteProtocolError, match=r"entry 0\): the entry: "):
        validate_tools(["not a tool"])


def test_an_invalid_tool_error_names_no_value() -> None:
    with pytest.raises(RemoteProtocolError) as err:
        validate_tools([{"name": "t", "annotations": {"readOnlyHint": "secret-token-123"}}])
    assert "secret-token-123" not in str(err.value)


def test_each_tool_gets_its_own_dicts_so_a_cached_list_stays_as_sent() -> None:
    """A 2026-07-28 list result may be cached and read again: changing a tool changes no
    dict of the server's answer (the model made new ones too)."""
    raw = copy.deepcopy(TOOLS[2])
    sent = copy.deepcopy(raw)
    (tool,) = validate_tools([raw])
    tool.description = "mine"
    tool.input_schema["added"] = True
    tool.annotations.title = "mine"  # type: ignore[union-attr]
    tool.meta["mine"] = 1  # type: ignore[index]
    tool.icons[0]["src"] = "mine"  # type: ignore[index]
    tool.icons.append({})  # type: ignore[union-attr]
    assert raw == sent
    assert tool.model_dump(by_alias=True)["annotations"]["title"] == "mine"
    assert tool.to_wire()["inputSchema"]["added"] is True


def test_setters_and_constructors_take_names_aliases_and_instances() -> None:
    annotations = ToolAnnotations(read_only_hint=True)
    assert annotations.read_only_hint is True and annotations.model_dump(exclude_unset=True) == {
        "read_only_hint": True
    }
    by_name = Tool(name="t", input_schema={"type": "object"}, annotations=annotations)
    by_alias = Tool.model_validate({"name": "t", "inputSchema": {"type": "object"},
                                    "annotations": {"readOnlyHint": True}})
    assert by_name == by_alias
    assert by_name.annotations is not annotations  # the tool holds its own copy
    by_alias.annotations = ToolAnnotations(title="T")
    assert by_alias.display_name == "T" and by_alias.annotations.title == "T"  # type: ignore[union-attr]
    by_alias.annotations = None
    assert by_alias.annotations is None and by_alias.display_name == "t"
    by_alias.input_schema = {"type": "object", "required": []}
    assert by_alias.to_wire()["inputSchema"] == {"type": "object", "required": []}


def test_json_schema_and_use_inside_pydantic_models_are_the_models() -> None:
    assert Tool.model_json_schema() == eager.Tool.model_json_schema()

    class Catalog(pydantic.BaseModel):
        tools: list[Tool]

    catalog = Catalog.model_validate({"tools": [TOOLS[2]]})
    assert isinstance(catalog.tools[0], Tool) and catalog.tools[0].name == "full"
    assert catalog.model_dump(by_alias=True)["tools"][0]["inputSchema"] == TOOLS[2]["inputSchema"]


LIST_TOOLS = """
import sys, mcp_lite
with mcp_lite.connect([sys.executable, sys.argv[1], "echo"]) as client:
    (tool,) = client.list_tools()
    seen = [tool.name, tool.display_name, sorted(tool.input_schema), tool.annotations,
            isinstance(tool, mcp_lite.Tool)]
print("LOADED" if "pydantic" in sys.modules else "CLEAN", seen)
"""


def test_list_tools_in_a_fresh_process_loads_no_pydantic() -> None:
    server = Path(mcp_lite.__file__).parent.parent / "tests" / "peers" / "fault_server.py"
    out = subprocess.run(
        [sys.executable, "-c", LIST_TOOLS, str(server)],
        capture_output=True, text=True, timeout=60, check=True,
    )
    assert out.stdout.startswith("CLEAN ['echo', 'echo', "), out.stdout + out.stderr
    assert out.stdout.rstrip().endswith("None, True]")
