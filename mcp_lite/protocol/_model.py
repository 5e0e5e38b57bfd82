"""The pydantic base of every wire model, and ``ResourceContents``; below both ``types`` and
``result_models`` so that neither imports the other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import AliasGenerator, BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from ._snake import no_attribute

__all__ = ["ResourceContents", "WireModel"]


def _alias(name: str) -> str:
    return "_meta" if name == "meta" else to_camel(name)


class WireModel(BaseModel):
    """Base of every wire type: camelCase aliases, unknown fields kept, by-name population."""

    model_config = ConfigDict(
        extra="allow",
        populate_by_name=True,
        alias_generator=AliasGenerator(validation_alias=_alias, serialization_alias=_alias),
        arbitrary_types_allowed=True,
        defer_build=True,  # build validators on first use: keeps import cheap
    )

    def to_wire(self) -> dict[str, Any]:
        """The JSON object for the wire (camelCase, ``None`` fields left out)."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")

    if not TYPE_CHECKING:  # a type checker keeps flagging unknown attributes

        def __getattr__(self, name: str) -> Any:
            # Only reached when normal lookup failed: pydantic's own (private attributes,
            # extra fields) first, then the SDK's camelCase spelling named in the error.
            try:
                return super().__getattr__(name)
            except AttributeError:
                if name.startswith("__"):
                    raise
                raise no_attribute(type(self), name, type(self).model_fields) from None


class ResourceContents(WireModel):
    uri: str = ""
    mime_type: str | None = None
    text: str | None = None
    blob: str | None = None  # base64
    meta: dict[str, Any] | None = None
