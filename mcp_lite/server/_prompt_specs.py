"""``PromptSpec``: a registered prompt, and ``prompt_messages``, which turns what
a prompt function returns into ``messages``."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from ._handlers import _analyze, _describe, _Signature

__all__ = ["PromptSpec", "prompt_messages"]


@dataclasses.dataclass(frozen=True)
class PromptSpec:
    """A registered prompt: its arguments are the function's parameters (sent as strings,
    validated and converted by pydantic)."""

    fn: Callable[..., Any]
    name: str
    title: str | None
    description: str | None
    signature: _Signature

    @classmethod
    def build(
        cls,
        fn: Callable[..., Any],
        context_type: type,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
    ) -> PromptSpec:
        prompt_name = name or fn.__name__
        sig = _analyze(fn, f"{prompt_name}Arguments", context_type)
        return cls(fn, prompt_name, title, _describe(fn, description), sig)

    def required_arguments(self) -> list[str]:
        fields = list(self.signature.model.model_fields.values())
        return [p for p, f in zip(self.signature.params, fields, strict=False) if f.is_required()]

    def definition(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.title is not None:
            out["title"] = self.title
        if self.description:
            out["description"] = self.description
        args = []
        fields = list(self.signature.model.model_fields.values())
        for param, field in zip(self.signature.params, fields, strict=False):
            arg: dict[str, Any] = {"name": param, "required": field.is_required()}
            if field.description:
                arg["description"] = field.description
            args.append(arg)
        out["arguments"] = args
        return out


def prompt_messages(value: Any) -> list[dict[str, Any]]:
    """``PromptMessage`` dicts for a prompt function's return value.

    A ``str`` is one user message. A list may mix strings (user messages) and
    ``{"role", "content"}`` dicts whose ``content`` is a string (made a text block) or a
    content block. Raises ``ValueError`` for anything else.
    """
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list):
        raise ValueError(
            f"a prompt must return a str or a list of messages, not {type(value).__name__}"
        )
    messages = []
    for item in items:
        if isinstance(item, str):
            item = {"role": "user", "content": item}
        if not isinstance(item, dict) or item.get("role") not in ("user", "assistant"):
            raise ValueError(f"invalid prompt message: {item!r}"[:300])
        content = item.get("content")
        if isinstance(content, str):
            content = {"type": "text", "text": content}
        if not isinstance(content, dict):
            raise ValueError(f"invalid prompt message content: {content!r}"[:300])
        messages.append({**item, "content": content})
    return messages
