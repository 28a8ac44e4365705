"""Reading a pydantic ``ValidationError`` location back against the schema that raised it.

The one schema walk behind every "unknown key 'x'; valid keys: …" message: ptosim's profile schema
and pattern-gen's card loader both ask it which keys a mapping at a location accepts. It imports
pydantic only (a card error must not pay for NumPy).
"""

from __future__ import annotations

import types
import typing
from typing import Any, Mapping

from pydantic import BaseModel

__all__ = ["dotted", "field_names", "keys_at", "models_in"]


def dotted(path: tuple[Any, ...]) -> str:
    """``inputs.x[0].dtype``: keys joined by dots, list indexes in brackets."""
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def field_names(model: type[BaseModel]) -> list[str]:
    """The keys a model accepts, as written in the input (aliases where given)."""
    return [info.alias or name for name, info in model.model_fields.items()]


def models_in(annotation: Any) -> list[Any]:
    """The types an annotation may hold, through ``Annotated`` and unions (one container level)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return models_in(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [t for arg in typing.get_args(annotation) for t in models_in(arg)]
    return [annotation]


def _step(annotation: Any, item: Any, tags: Mapping[str, type[BaseModel]]) -> list[Any]:
    """What the value at ``item`` inside a value of type ``annotation`` may be."""
    out: list[Any] = []
    for t in models_in(annotation):
        origin = typing.get_origin(t)
        if isinstance(t, type) and issubclass(t, BaseModel):
            if item == t.__name__:  # pydantic names the union member it tried
                out.append(t)
            elif isinstance(item, str) and item in tags and item not in field_names(t):
                out.append(tags[item])  # a discriminated union's tag
            else:
                out.extend(info.annotation for name, info in t.model_fields.items() if item in (name, info.alias))
        elif origin in (list, tuple) and isinstance(item, int):
            out.extend(typing.get_args(t)[:1])
        elif origin is dict:
            out.append(typing.get_args(t)[1])
        elif isinstance(item, str) and item in tags:
            out.append(tags[item])
    return out


def keys_at(root: type[BaseModel], path: tuple[Any, ...], tags: Mapping[str, type[BaseModel]] | None = None) -> list[str]:
    """The keys a mapping at ``path`` (a location pydantic reported) accepts, sorted; empty when
    ``path`` is not a mapping of the schema. ``tags`` maps a discriminated union's tags to models."""
    current: list[Any] = [root]
    for item in path:
        if item == "[key]":  # pydantic's marker for a dict key: the key's own mapping
            continue
        current = [t for ann in current for t in _step(ann, item, tags or {})]
    keys = {k for ann in current for t in models_in(ann) if isinstance(t, type) and issubclass(t, BaseModel)
            for k in field_names(t)}
    return sorted(keys)
