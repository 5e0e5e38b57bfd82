"""Tool-name kernels: normalize_name, build_tool_name(s), parse_tool_name."""

from __future__ import annotations

from types import ModuleType

import pytest


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("my server!", "my_server_"),
        ("", ""),
        ("abc-XYZ_09", "abc-XYZ_09"),
        ("a.b/c:d", "a_b_c_d"),
        ("café", "caf_"),  # one "_" per code point, latin-1 kind
        ("日本語", "___"),  # 2-byte kind
        ("a😀b", "a_b"),  # astral: 4-byte kind, still one "_"
        ("\x00\x7f\x80", "___"),
        ("tab\there", "tab_here"),
        ("ǅ-x", "_-x"),
        ("\ud800x", "_x"),  # a lone surrogate is one code point
    ],
)
def test_normalize_name(speedups: ModuleType, name: str, expected: str) -> None:
    result = speedups.normalize_name(name)
    assert result == expected
    assert type(result) is str
    assert len(result) == len(name)


def test_normalize_name_long_and_mixed(speedups: ModuleType) -> None:
    name = "ok-" * 1000 + "é" + "x" * 1000 + "😀"
    expected = "ok-" * 1000 + "_" + "x" * 1000 + "_"
    assert speedups.normalize_name(name) == expected


def test_normalize_name_str_subclass_gives_plain_str(speedups: ModuleType) -> None:
    class Name(str):
        pass

    result = speedups.normalize_name(Name("ok"))
    assert result == "ok"
    assert type(result) is str


@pytest.mark.parametrize("bad", [b"abc", None, 3, ["a"]])
def test_normalize_name_rejects_non_str(speedups: ModuleType, bad: object) -> None:
    with pytest.raises(TypeError, match="name must be a str"):
        speedups.normalize_name(bad)


def test_normalize_names(speedups: ModuleType) -> None:
    assert speedups.normalize_names([]) == []
    assert speedups.normalize_names(["a b", "ok", "é"]) == ["a_b", "ok", "_"]
    assert speedups.normalize_names(n for n in ("x!", "y")) == ["x_", "y"]
    with pytest.raises(TypeError, match="name must be a str"):
        speedups.normalize_names(["ok", 1])


def test_build_tool_name(speedups: ModuleType) -> None:
    assert speedups.build_tool_name("my-db", "query") == "mcp__my-db__query"
    assert speedups.build_tool_name("my server", "do it!") == "mcp__my_server__do_it_"
    assert speedups.build_tool_name("sérveur", "日") == "mcp__s_rveur___"
    assert speedups.build_tool_name("", "") == "mcp____"
    with pytest.raises(TypeError):
        speedups.build_tool_name("s", None)
    with pytest.raises(TypeError):
        speedups.build_tool_name(b"s", "t")


def test_build_tool_names_is_the_batch_of_build_tool_name(speedups: ModuleType) -> None:
    tools = [f"tool {i} é😀" for i in range(50)] + ["", "plain"]
    assert speedups.build_tool_names("my srv", tools) == [
        speedups.build_tool_name("my srv", t) for t in tools
    ]
    assert speedups.build_tool_names("s", []) == []
    with pytest.raises(TypeError):
        speedups.build_tool_names("s", ["ok", 3])


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("mcp__my-db__query", ("my-db", "query")),
        ("mcp__srv", ("srv", "")),
        ("mcp__srv__", ("srv", "")),
        ("mcp__a__b__c", ("a", "b__c")),  # the tool may contain "__"
        ("mcp__a_b__c_d", ("a_b", "c_d")),
        ("mcp__é__ü", ("é", "ü")),  # parse does not normalize
    ],
)
def test_parse_tool_name(speedups: ModuleType, name: str, expected: tuple[str, str]) -> None:
    assert speedups.parse_tool_name(name) == expected


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "no 'mcp__' prefix"),
        ("foo__bar", "no 'mcp__' prefix"),
        ("mcp_x__y", "no 'mcp__' prefix"),
        ("MCP__x__y", "no 'mcp__' prefix"),
        ("mcp__", "empty server"),
        ("mcp____tool", "empty server"),
    ],
)
def test_parse_tool_name_errors(speedups: ModuleType, name: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        speedups.parse_tool_name(name)


def test_parse_tool_name_rejects_non_str(speedups: ModuleType) -> None:
    with pytest.raises(TypeError):
        speedups.parse_tool_name(b"mcp__a__b")


def test_server_names_with_double_underscore_are_ambiguous(speedups: ModuleType) -> None:
    # Documented limitation: the Hub refuses such server names.
    assert speedups.parse_tool_name(speedups.build_tool_name("a__b", "t")) == ("a", "b__t")
