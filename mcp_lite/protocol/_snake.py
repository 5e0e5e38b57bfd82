"""The ``AttributeError`` of a wire object that names our snake_case attribute when the caller
used the SDK's camelCase one (``result.isError``), called only from ``__getattr__``, the
failure path.
"""

from __future__ import annotations

import re
from collections.abc import Container

__all__ = ["no_attribute"]

_HUMP = re.compile(r"(?<=[a-z0-9])([A-Z])")


def no_attribute(cls: type, name: str, fields: Container[str]) -> AttributeError:
    """The error for ``cls().name``; when ``name`` is the camelCase spelling of one of
    ``fields`` (or of a class attribute), the message names it: "'CallToolResult' object
    has no attribute 'isError' (mcp_lite names it 'is_error')"."""
    message = f"{cls.__name__!r} object has no attribute {name!r}"
    snake = "meta" if name == "_meta" else _HUMP.sub(r"_\1", name).lower()
    if snake != name and (snake in fields or hasattr(cls, snake)):
        message += f" (mcp_lite names it {snake!r})"
    return AttributeError(message)
