"""Registered resources and resource templates (``ResourceSpec``,
``TemplateSpec``, ``build_resource``) and ``resource_contents``, which turns
what a resource function returns into ``contents``."""

from __future__ import annotations

import base64
import dataclasses
import json
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from pydantic_core import to_jsonable_python

from ._handlers import _analyze, _describe, _Signature

__all__ = ["resource_contents", "ResourceSpec", "TemplateSpec", "build_resource"]


_TEMPLATE_VAR = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def resource_contents(uri: str, value: Any, mime_type: str | None) -> list[dict[str, Any]]:
    """The ``contents`` of a ``ReadResourceResult`` for a resource function's return value.

    ``str`` is text (default ``text/plain``); ``bytes`` is a base64 ``blob`` (default
    ``application/octet-stream``); a dict with a ``"contents"`` list, or a list of content
    dicts, is used as is; anything else is JSON text (``application/json``).
    """
    if isinstance(value, dict) and isinstance(value.get("contents"), list):
        return list(value["contents"])
    if isinstance(value, list) and all(isinstance(v, dict) and "uri" in v for v in value):
        return list(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        blob = base64.b64encode(bytes(value)).decode("ascii")
        return [{"uri": uri, "mimeType": mime_type or "application/octet-stream", "blob": blob}]
    if isinstance(value, str):
        return [{"uri": uri, "mimeType": mime_type or "text/plain", "text": value}]
    text = json.dumps(to_jsonable_python(value, fallback=str), ensure_ascii=False)
    return [{"uri": uri, "mimeType": mime_type or "application/json", "text": text}]


@dataclasses.dataclass(frozen=True)
class ResourceSpec:
    """A resource with a fixed URI. The function takes no arguments (except a ``Context``)."""

    fn: Callable[..., Any]
    uri: str
    name: str
    title: str | None
    description: str | None
    mime_type: str | None
    signature: _Signature

    def definition(self) -> dict[str, Any]:
        return _described({"uri": self.uri, "name": self.name}, self)


@dataclasses.dataclass(frozen=True)
class TemplateSpec:
    """A resource URI template (RFC 6570 level 1: ``{var}`` only).

    A variable matches one non-empty path segment (no ``/``, ``?`` or ``#``), which is
    percent-decoded and passed to the function as a keyword argument of the same name.
    """

    fn: Callable[..., Any]
    uri_template: str
    name: str
    title: str | None
    description: str | None
    mime_type: str | None
    signature: _Signature
    pattern: re.Pattern[str]

    @staticmethod
    def compile(uri_template: str) -> tuple[re.Pattern[str], tuple[str, ...]]:
        parts: list[str] = []
        names: list[str] = []
        pos = 0
        for m in _TEMPLATE_VAR.finditer(uri_template):
            parts.append(re.escape(uri_template[pos : m.start()]))
            parts.append(f"(?P<{m.group(1)}>[^/?#]+)")
            names.append(m.group(1))
            pos = m.end()
        parts.append(re.escape(uri_template[pos:]))
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate variable in URI template {uri_template!r}")
        return re.compile("".join(parts) + r"\Z"), tuple(names)

    def match(self, uri: str) -> dict[str, str] | None:
        m = self.pattern.match(uri)
        if m is None:
            return None
        return {k: unquote(v) for k, v in m.groupdict().items()}

    def definition(self) -> dict[str, Any]:
        return _described({"uriTemplate": self.uri_template, "name": self.name}, self)


def _described(out: dict[str, Any], spec: ResourceSpec | TemplateSpec) -> dict[str, Any]:
    """Add the optional ``title``, ``description`` and ``mimeType`` of a resource listing."""
    if spec.title is not None:
        out["title"] = spec.title
    if spec.description:
        out["description"] = spec.description
    if spec.mime_type:
        out["mimeType"] = spec.mime_type
    return out


def build_resource(
    fn: Callable[..., Any],
    context_type: type,
    uri: str,
    name: str | None,
    title: str | None,
    description: str | None,
    mime_type: str | None,
) -> ResourceSpec | TemplateSpec:
    """A ``ResourceSpec`` for a plain URI, a ``TemplateSpec`` when it contains ``{var}``."""
    res_name = name or fn.__name__
    sig = _analyze(fn, f"{res_name}Variables", context_type)
    desc = _describe(fn, description)
    if "{" not in uri:
        if sig.model.model_fields and any(f.is_required() for f in sig.model.model_fields.values()):
            raise TypeError(f"resource {uri!r}: a fixed-URI resource function takes no arguments")
        return ResourceSpec(fn, uri, res_name, title, desc, mime_type, sig)
    pattern, names = TemplateSpec.compile(uri)
    missing = set(sig.params) - set(names)
    required = {
        sig.params[i] for i, f in enumerate(sig.model.model_fields.values()) if f.is_required()
    }
    if missing & required or set(names) - set(sig.params):
        raise TypeError(
            f"resource template {uri!r}: variables {sorted(names)} must match the function's "
            f"parameters {sorted(sig.params)}"
        )
    return TemplateSpec(fn, uri, res_name, title, desc, mime_type, sig, pattern)
