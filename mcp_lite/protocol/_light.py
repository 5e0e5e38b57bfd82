"""``WireObject``, the light-object base: a wire object backed by its JSON dict, its fields read
from it, its shape checked by a few type tests and the pydantic API delegated to a twin in
``result_models`` (see docs/explanation/protocol.md, "Light objects").
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from ._snake import no_attribute

if TYPE_CHECKING:
    from pydantic import BaseModel, GetCoreSchemaHandler
    from pydantic_core import CoreSchema

W = TypeVar("W", bound="WireObject")


def _field(key: str, default: Any = None) -> Any:
    """A field read from the object's wire dict under its wire key (``default`` when the
    key is absent) and written back there. A property: the cheapest attribute Python has
    after a slot, and the dict stays the one source of truth for the pydantic twin."""

    def get(self: WireObject) -> Any:
        return self._wire.get(key, default)

    def set(self: WireObject, value: Any) -> None:
        self._wire[key] = value

    return property(get, set)


# --- shape checks: True when pydantic would take the value exactly as it is -----------------

# ``plain_shape`` (a kernel) checks a dict against one of these tables: the exact types each
# known key may hold (one ``type()`` test, no call), ``None`` for any value, a tuple for a
# list of objects (their table, their Python names, a key they must have), or a function
# for what is rare. The Python names (``mime_type``...) are left to pydantic, which accepts
# them too. Unknown keys are kept.
_STR = frozenset({str})
_OPT_STR = frozenset({str, type(None)})
_OPT_DICT = frozenset({dict, type(None)})
_BOOL = frozenset({bool})


# --- the common base ----------------------------------------------------------------------


class _ModelAPI(type):
    """Class-level reads of the rest of the model API (``model_fields``...) go to the twin."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("model_"):
            return getattr(cls._twin_class(), name)
        raise AttributeError(f"type object {cls.__name__!r} has no attribute {name!r}")


class WireObject(metaclass=_ModelAPI):
    """A wire object backed by its JSON dict, with the pydantic model API on demand.

    Subclasses name their twin (the pydantic model in ``result_models``), their fields
    (Python name -> wire key, in the model's order) and their shape check (``plain_shape``).
    """

    __slots__ = ("__weakref__", "_wire")
    _twin_name: ClassVar[str]
    _fields: ClassVar[dict[str, str]]  # Python name -> wire key
    _wire_keys: ClassVar[frozenset[str]]

    _wire: dict[str, Any]

    def __init__(self, **data: Any) -> None:
        self._set_wire(self._checked(data, copy=True))

    def _set_wire(self, wire: dict[str, Any]) -> None:
        self._wire = wire

    # --- construction ----------------------------------------------------------------------

    @staticmethod
    def _shape_ok(value: Any) -> bool:
        """``value`` can be used as it is (see ``plain_shape``)."""
        raise NotImplementedError

    @classmethod
    def _checked(cls, raw: Any, *, copy: bool) -> dict[str, Any]:
        """The wire dict for ``raw``: ``raw`` itself (``copy``: a copy) when its shape is
        plain, else what pydantic makes of it (raises ``pydantic.ValidationError``)."""
        if copy and type(raw) is dict:
            raw = cls._copied(raw)
        if cls._shape_ok(raw):
            return raw  # type: ignore[no-any-return]
        twin = cls._twin_class().model_validate(raw)
        return twin.model_dump(by_alias=True, exclude_unset=True)

    @classmethod
    def _copied(cls, raw: dict[str, Any]) -> dict[str, Any]:
        """A copy that a setter may write to without touching the caller's dict, with
        objects of these classes in it as their dicts (the models accepted instances)."""
        return dict(raw)

    @classmethod
    def _trusted(cls: type[W], wire: dict[str, Any]) -> W:
        obj = cls.__new__(cls)
        obj._set_wire(wire)
        return obj

    @classmethod
    def _twin_class(cls) -> type[BaseModel]:
        from . import result_models

        twin: type[BaseModel] = getattr(result_models, cls._twin_name)
        return twin

    def _twin_input(self) -> dict[str, Any]:
        return self._wire

    def _twin(self) -> BaseModel:
        """The pydantic model holding the same values (built now; it is not kept)."""
        return self._twin_class().model_validate(self._twin_input())

    @classmethod
    def _from_twin(cls: type[W], twin: BaseModel) -> W:
        return cls._trusted(twin.model_dump(by_alias=True, exclude_unset=True))

    # --- the pydantic model API, delegated -------------------------------------------------

    @classmethod
    def model_validate(cls: type[W], obj: Any, **kwargs: Any) -> W:
        """Like ``BaseModel.model_validate``: an instance as is, a dict checked (raises
        ``pydantic.ValidationError`` when invalid)."""
        if isinstance(obj, cls) and not kwargs:
            return obj
        if kwargs or not isinstance(obj, dict):  # attributes, strict mode...: pydantic's own
            return cls._from_twin(cls._twin_class().model_validate(obj, **kwargs))
        return cls._trusted(cls._checked(obj, copy=True))

    @classmethod
    def model_validate_json(cls: type[W], json_data: str | bytes, **kwargs: Any) -> W:
        return cls._from_twin(cls._twin_class().model_validate_json(json_data, **kwargs))

    @classmethod
    def model_construct(cls: type[W], _fields_set: set[str] | None = None, **values: Any) -> W:
        return cls._from_twin(cls._twin_class().model_construct(_fields_set, **values))

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return cls._twin_class().model_json_schema(*args, **kwargs)

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        return self._twin().model_dump(**kwargs)

    def model_dump_json(self, **kwargs: Any) -> str:
        return self._twin().model_dump_json(**kwargs)

    def model_copy(self: W, *, update: dict[str, Any] | None = None, deep: bool = False) -> W:
        return self._from_twin(self._twin().model_copy(update=update, deep=deep))

    @property
    def model_extra(self) -> dict[str, Any]:
        """The fields no model declares, by their wire key (a newer revision's, a server's own)."""
        return {k: v for k, v in self._wire.items() if k not in self._wire_keys}

    @property
    def model_fields_set(self) -> set[str]:
        return self._twin().model_fields_set

    def to_wire(self) -> dict[str, Any]:
        """The JSON object for the wire (camelCase, ``None`` fields left out)."""
        return self._twin().model_dump(by_alias=True, exclude_none=True, mode="json")

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        """As a field of a pydantic model: validated and serialized as the twin would be."""
        from pydantic_core import core_schema

        twin = handler.generate_schema(cls._twin_class())
        from_twin = core_schema.no_info_after_validator_function(cls._from_twin, twin)
        return core_schema.json_or_python_schema(
            json_schema=from_twin,
            python_schema=core_schema.union_schema(
                [core_schema.is_instance_schema(cls), from_twin]
            ),
            serialization=core_schema.wrap_serializer_function_ser_schema(
                lambda value, serialize: serialize(value._twin()), schema=twin
            ),
        )

    # --- what a model instance also does ---------------------------------------------------

    def __getattr__(self, name: str) -> Any:
        # Unknown wire fields read as attributes, as on the models (``extra="allow"``).
        try:
            wire = object.__getattribute__(self, "_wire")
        except AttributeError:
            raise AttributeError(name) from None
        if name in wire and name not in self._wire_keys:
            return wire[name]
        if name.startswith("model_"):  # the rest of the model API (model_fields...)
            return getattr(self._twin(), name)
        raise no_attribute(type(self), name, self._fields)

    def _items(self) -> Iterator[tuple[str, Any]]:
        for name in self._fields:
            yield name, getattr(self, name)
        yield from self.model_extra.items()

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        return self._items()

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._items())
        return f"{type(self).__name__}({args})"

    def __str__(self) -> str:
        return " ".join(f"{k}={v!r}" for k, v in self._items())

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, WireObject)
        return self._twin() == other._twin()

    __hash__ = None  # type: ignore[assignment]  # mutable, like the models

    def __copy__(self: W) -> W:
        return self._trusted(dict(self._twin_input()))

    def __reduce__(self) -> tuple[Any, ...]:
        return (self._trusted, (self._twin_input(),))


def _problems(exc: ValueError, whole: str = "the result") -> str:
    """What a ``ValidationError`` found, without the values (they may hold secrets);
    ``whole`` names the object itself when the problem is not in one of its fields."""
    errors = getattr(exc, "errors", None)
    if errors is None:
        return str(exc)
    found = errors(include_url=False, include_input=False)
    first = found[0]
    where = ".".join(str(part) for part in first["loc"]) or whole
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    return f"{where}: {first['msg']}{more}"
