"""Schemas from type hints, and return values turned into wire results (no connection)."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Optional

import jsonschema
import pydantic
import pytest
from pydantic import BaseModel, Field
from typing_extensions import TypedDict  # pydantic needs it on Python < 3.12

from mcp_lite.server import Context, Server


class Weather(BaseModel):
    city: str
    celsius: float


class Point(TypedDict):
    x: int
    y: int


@dataclasses.dataclass
class Pair:
    left: str
    right: str


class Unknown:
    """A plain class pydantic cannot describe."""


def tool_def(server: Server, name: str) -> dict[str, Any]:
    tools = {t["name"]: t for t in server._registry.list_tools({})["tools"]}
    return tools[name]


def call(server: Server, name: str, **arguments: Any) -> dict[str, Any]:
    return server._registry.call_tool({"name": name, "arguments": arguments}, ctx=None)


@pytest.fixture
def server() -> Server:
    s = Server("schemas")

    @s.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @s.tool(name="greet", title="Greeter", annotations={"readOnlyHint": True})
    def greet_fn(
        name: Annotated[str, Field(description="Who to greet")],
        excited: bool = False,
        times: Optional[int] = None,  # noqa: UP045 - the old spelling must work too
        ctx: Context | None = None,
    ) -> str:
        return f"hello {name}" + ("!" * (times or 1) if excited else "")

    @s.tool()
    def nothing() -> None:
        """Does nothing."""

    @s.tool()
    def weather(city: str) -> Weather:
        return Weather(city=city, celsius=21.5)

    @s.tool()
    def point() -> Point:
        return {"x": 1, "y": 2}

    @s.tool()
    def pair() -> Pair:
        return Pair("l", "r")

    @s.tool()
    def counts(text: str) -> dict[str, int]:
        return {"words": len(text.split())}

    @s.tool()
    def evens(n: int) -> list[int]:
        return list(range(0, n, 2))

    @s.tool()
    def untyped(x):  # type: ignore[no-untyped-def]
        return {"x": x, "list": [1, 2]}

    @s.tool()
    def opaque() -> Unknown:
        return Unknown()

    @s.tool()
    def model_arg(w: Weather, json: str = "shadowing BaseModel.json is fine") -> str:
        return f"{w.city}:{w.celsius}:{json}"

    @s.tool()
    def raw() -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "as is"}], "isError": False}

    @s.tool()
    def image() -> Any:
        return {"type": "image", "data": "AAAA", "mimeType": "image/png"}

    return s


def test_input_schema_from_signature(server: Server) -> None:
    assert tool_def(server, "add") == {
        "name": "add",
        "description": "Add two integers.",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
        "outputSchema": {
            "type": "object",
            "properties": {"result": {"type": "integer"}},
            "required": ["result"],
        },
    }


def test_defaults_descriptions_optional_and_context_left_out(server: Server) -> None:
    d = tool_def(server, "greet")
    assert d["title"] == "Greeter"
    assert d["annotations"] == {"readOnlyHint": True}
    assert "description" not in d  # no docstring, no description
    assert "outputSchema" not in d  # -> str is plain text
    assert d["inputSchema"] == {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "Who to greet"},
            "excited": {"type": "boolean", "default": False},
            "times": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
        },
        "required": ["name"],
    }


def test_no_parameters_gives_closed_object(server: Server) -> None:
    assert tool_def(server, "nothing")["inputSchema"] == {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    }
    assert "outputSchema" not in tool_def(server, "nothing")
    assert call(server, "nothing") == {"content": [], "isError": False}


def test_nested_model_argument_uses_defs_and_validates(server: Server) -> None:
    schema = tool_def(server, "model_arg")["inputSchema"]
    assert schema["properties"]["w"] == {"$ref": "#/$defs/Weather"}
    assert schema["$defs"]["Weather"]["required"] == ["city", "celsius"]
    assert schema["required"] == ["w"]
    jsonschema.Draft202012Validator.check_schema(schema)
    res = call(server, "model_arg", w={"city": "Oslo", "celsius": "3.5"})
    assert res["content"][0]["text"] == "Oslo:3.5:shadowing BaseModel.json is fine"


@pytest.mark.parametrize(
    ("name", "schema", "structured"),
    [
        (
            "weather",
            {
                "type": "object",
                "title": "Weather",
                "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
                "required": ["city", "celsius"],
            },
            {"city": "x", "celsius": 21.5},
        ),
        (
            "point",
            {
                "type": "object",
                "title": "Point",
                "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
                "required": ["x", "y"],
            },
            {"x": 1, "y": 2},
        ),
        (
            "pair",
            {
                "type": "object",
                "title": "Pair",
                "properties": {"left": {"type": "string"}, "right": {"type": "string"}},
                "required": ["left", "right"],
            },
            {"left": "l", "right": "r"},
        ),
        ("counts", {"type": "object", "additionalProperties": {"type": "integer"}}, {"words": 2}),
        (
            "evens",
            {
                "type": "object",
                "properties": {"result": {"type": "array", "items": {"type": "integer"}}},
                "required": ["result"],
            },
            {"result": [0, 2, 4]},
        ),
    ],
)
def test_structured_output(
    server: Server, name: str, schema: dict[str, Any], structured: dict[str, Any]
) -> None:
    assert tool_def(server, name)["outputSchema"] == schema
    args = {"weather": {"city": "x"}, "counts": {"text": "a b"}, "evens": {"n": 5}}.get(name, {})
    res = call(server, name, **args)
    assert res["structuredContent"] == structured
    jsonschema.validate(res["structuredContent"], schema)
    # The same JSON as a text block, for clients that ignore structuredContent.
    import json

    assert json.loads(res["content"][0]["text"]) == (
        structured["result"] if name == "evens" else structured
    )


def test_unstructured_results(server: Server) -> None:
    untyped = tool_def(server, "untyped")
    assert "outputSchema" not in untyped
    assert untyped["inputSchema"]["properties"] == {"x": {}}
    res = call(server, "untyped", x=3)
    assert res == {
        "content": [{"type": "text", "text": '{"x": 3, "list": [1, 2]}'}],
        "isError": False,
    }
    assert "outputSchema" not in tool_def(server, "opaque")
    assert call(server, "opaque")["content"][0]["text"].startswith("<")
    assert call(server, "raw") == {"content": [{"type": "text", "text": "as is"}], "isError": False}
    assert call(server, "image")["content"] == [
        {"type": "image", "data": "AAAA", "mimeType": "image/png"}
    ]


def test_invalid_arguments_are_a_tool_error(server: Server) -> None:
    res = call(server, "add", a="one", b=2)
    assert res["isError"] is True
    assert "Invalid arguments for tool add" in res["content"][0]["text"]
    assert "a" in res["content"][0]["text"]
    assert call(server, "add", a="1", b=2)["structuredContent"] == {"result": 3}  # lax coercion


def test_wrong_return_value_is_a_tool_error() -> None:
    s = Server("x")

    @s.tool()
    def bad() -> int:
        return "not a number"  # type: ignore[return-value]

    res = call(s, "bad")
    assert res["isError"] is True
    assert "does not match its return annotation" in res["content"][0]["text"]


def test_registration_errors() -> None:
    s = Server("x")
    with pytest.raises(TypeError, match=r"\*args"):

        @s.tool()
        def star(*args: int) -> None: ...

    with pytest.raises(TypeError, match="must match"):

        @s.resource("note://{name}")
        def note(other: str) -> str: ...

    with pytest.raises(TypeError, match="takes no arguments"):

        @s.resource("fixed://x")
        def fixed(required: str) -> str: ...

    with pytest.raises(ValueError, match="unsupported protocol versions"):
        Server("x", versions=("1999-01-01",))


def test_bare_decorator_and_async_tool() -> None:
    s = Server("x")

    @s.tool
    async def later(a: int) -> int:
        return a * 2

    assert call(s, "later", a=4)["structuredContent"] == {"result": 8}


def test_prompt_arguments_and_messages() -> None:
    s = Server("x")

    @s.prompt(description="Review code")
    def review(
        code: Annotated[str, Field(description="The code")], style: str = "terse"
    ) -> list[Any]:
        return [
            "Review this:",
            {"role": "assistant", "content": "OK"},
            {"role": "user", "content": {"type": "text", "text": code + style}},
        ]

    (d,) = s._registry.list_prompts({})["prompts"]
    assert d == {
        "name": "review",
        "description": "Review code",
        "arguments": [
            {"name": "code", "required": True, "description": "The code"},
            {"name": "style", "required": False},
        ],
    }
    got = s._registry.get_prompt({"name": "review", "arguments": {"code": "x"}}, ctx=None)
    assert got["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "Review this:"}},
        {"role": "assistant", "content": {"type": "text", "text": "OK"}},
        {"role": "user", "content": {"type": "text", "text": "xterse"}},
    ]


def test_resource_template_matching() -> None:
    s = Server("x")

    @s.resource("users://{user}/files/{name}")
    def user_file(user: str, name: str) -> bytes:
        return f"{user}/{name}".encode()

    (t,) = s._registry.list_templates({})["resourceTemplates"]
    assert t == {"uriTemplate": "users://{user}/files/{name}", "name": "user_file"}
    got = s._registry.read_resource(
        {"uri": "users://ann%20b/files/a.txt"}, None, pydantic.ValidationError
    )  # type: ignore[arg-type]
    assert got == {
        "contents": [
            {
                "uri": "users://ann%20b/files/a.txt",
                "mimeType": "application/octet-stream",
                "blob": "YW5uIGIvYS50eHQ=",
            }
        ]
    }
