"""A tool's result checked against its ``outputSchema`` (``jsonschema``, optional): the
validator kept per tool, and the checks ``call_tool`` and ``submit_tool`` make."""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from ..errors import RemoteProtocolError
from ..protocol.results import tool_result

if TYPE_CHECKING:
    from ..protocol.types import CallToolResult

__all__ = ["json_or_none", "tool_result_of", "validate_structured", "output_validator"]

log = logging.getLogger("mcp_lite.client")


def output_validator(schemas: dict[str, dict[str, Any]], cache: dict[str, Any], tool: str) -> Any:
    """A compiled ``jsonschema`` validator of ``tool``'s ``outputSchema``, or None (no
    schema known, an invalid one, or no ``jsonschema``). Kept per tool while its schema
    stays the one ``list_tools`` last saw (bounded by the number of tools)."""
    schema = schemas.get(tool)
    if schema is None:
        return None
    kept = cache.get(tool)
    if kept is not None and kept[0] is schema:
        return kept[1]
    try:
        import jsonschema  # optional, as for call_tool
    except ImportError:
        return None
    try:
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        validator = cls(schema)
    except jsonschema.SchemaError as exc:
        log.warning("tool %r has an invalid outputSchema: %s", tool, exc.message)
        validator = None
    if len(cache) >= max(1000, len(schemas)):
        cache.clear()
    cache[tool] = (schema, validator)
    return validator


def json_or_none(text: str) -> Any:
    """``text`` parsed as JSON, or None when it is not JSON."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # a server's text nested too deep is no JSON to us
        return None


def tool_result_of(tool: str, raw: dict[str, Any], validator: Any) -> CallToolResult:
    """``submit_tool``'s result: ``raw`` as a ``CallToolResult``, its structured output
    checked by ``validator`` (see ``Client._output_validator``) as ``call_tool`` checks it."""
    if raw.get("resultType") == "task":
        raise RemoteProtocolError(
            f"the server made the call of tool {tool!r} a task: use call_tool_as_task"
        )
    result = tool_result(raw)
    if validator is not None and not result.is_error:
        if result.structured_content is None and result.text:
            result._text_json = json_or_none(result.text)
        error = next(iter(validator.iter_errors(result.data)), None)
        if error is not None:
            raise RemoteProtocolError(
                f"tool {tool!r} returned structuredContent that does not match its "
                f"outputSchema: {error.message}"
            )
    return result


def validate_structured(tool: str, schema: dict[str, Any], value: Any) -> None:
    try:
        import jsonschema
        import referencing.exceptions
    except ImportError:
        return
    try:
        jsonschema.validate(value, schema)
    except jsonschema.ValidationError as exc:
        raise RemoteProtocolError(
            f"tool {tool!r} returned structuredContent that does not match its outputSchema: "
            f"{exc.message}"
        ) from None
    except jsonschema.SchemaError as exc:
        log.warning("tool %r has an invalid outputSchema: %s", tool, exc.message)
    except (RecursionError, referencing.exceptions.Unresolvable) as exc:
        # a $ref cycle, a schema or value nested too deep for the validator's recursion, a
        # $ref to a document we do not fetch: the server's schema cannot check its result
        deep = isinstance(exc, RecursionError)
        what = "is nested too deep" if deep else "has an unresolvable $ref"
        raise RemoteProtocolError(
            f"tool {tool!r}: its outputSchema {what} (or loops); its result cannot be checked"
        ) from None
