"""Load one card file: YAML with positions -> validated model, or problems with file:line:col.

Pydantic's errors are turned into one sentence each: the dotted key path, the rule, the value
that broke it, the valid choices and the closest spelling, at the line of the offending key.
Renamed keys (``patterns/renames.yaml``) are reported as renames rather than unknown keys.
"""

from __future__ import annotations

import re
import typing
from pathlib import Path
from typing import Any, Iterable, Mapping

from pydantic import BaseModel, TypeAdapter, ValidationError

from . import model as m
from .errors import PatternGenError, Problem, did_you_mean
from .yamlsrc import Located, load_located

__all__ = ["load_card", "card_adapter", "problems_from_validation", "LoadedCard"]

card_adapter: TypeAdapter[Any] = TypeAdapter(m.Card)


class LoadedCard(typing.NamedTuple):
    card: Any  #: AtomCard | SkeletonCard
    located: Located


def _data_path(data: Any, loc: Iterable[Any]) -> tuple[Any, ...]:
    """The part of a pydantic ``loc`` that is a real path in the data (drops union tags)."""
    path: list[Any] = []
    cur = data
    for item in loc:
        if isinstance(cur, Mapping) and item in cur:
            path.append(item)
            cur = cur[item]
        elif isinstance(cur, list) and isinstance(item, int) and 0 <= item < len(cur):
            path.append(item)
            cur = cur[item]
        elif isinstance(cur, Mapping) and isinstance(item, str) and item not in cur and _looks_like_key(item):
            # a missing or unknown key: keep it as the last element
            path.append(item)
            cur = None
    return tuple(path)


def _looks_like_key(item: str) -> bool:
    return item not in _TAGS


_TAGS = set(m.OP_MODELS) | {"call", "stage", "use", "slot", "atom", "skeleton", "str", "int", "float", "bool"}
_TAG_TO_MODEL: dict[str, type[BaseModel]] = {**m.OP_MODELS, "call": m.CallOp, "stage": m.Stage, "use": m.UseItem, "slot": m.SlotItem}


def _models_in(annotation: Any) -> list[Any]:
    """BaseModel classes and containers reachable from a type annotation (one level)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _models_in(typing.get_args(annotation)[0])
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        out = []
        for arg in typing.get_args(annotation):
            out.extend(_models_in(arg))
        return out
    return [annotation]


def _valid_keys(kind: str, loc: tuple[Any, ...]) -> list[str] | None:
    """The keys a mapping at ``loc`` accepts, by walking the schema (None when unknown)."""
    current: list[Any] = [m.AtomCard if kind == "atom" else m.SkeletonCard]
    if loc and loc[0] in ("atom", "skeleton"):
        loc = loc[1:]
    for item in loc[:-1]:
        nxt: list[Any] = []
        for ann in current:
            for t in _models_in(ann):
                origin = typing.get_origin(t)
                if isinstance(t, type) and issubclass(t, BaseModel):
                    if isinstance(item, str) and item in _TAG_TO_MODEL and item not in _field_names(t):
                        nxt.append(_TAG_TO_MODEL[item])
                        continue
                    for name, info in t.model_fields.items():
                        if item in (name, info.alias):
                            nxt.append(info.annotation)
                elif origin in (list, tuple) and isinstance(item, int):
                    nxt.extend(typing.get_args(t)[:1])
                elif origin is dict:
                    nxt.append(typing.get_args(t)[1])
                elif isinstance(item, str) and item in _TAG_TO_MODEL:
                    nxt.append(_TAG_TO_MODEL[item])
        current = nxt
    keys: list[str] = []
    for ann in current:
        for t in _models_in(ann):
            if isinstance(t, type) and issubclass(t, BaseModel):
                keys.extend(_field_names(t))
    return sorted(set(keys)) or None


def _field_names(model: type[BaseModel]) -> list[str]:
    return [info.alias or name for name, info in model.model_fields.items()]


def _dotted(path: tuple[Any, ...]) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(card)"


def problems_from_validation(
    exc: ValidationError, located: Located, kind: str, renames: Mapping[str, str] | None = None
) -> list[Problem]:
    renames = renames or {}
    problems: list[Problem] = []
    for err in exc.errors(include_url=False):
        loc = tuple(err["loc"])
        path = _data_path(located.data, loc)
        etype = err["type"]
        msg = str(err["msg"]).removeprefix("Value error, ")
        where = _dotted(path)
        value = err.get("input")
        if etype == "extra_forbidden":
            key = path[-1] if path else loc[-1]
            if key in renames:
                text = f"{_dotted(path[:-1])}: key {key!r} was renamed {renames[key]!r}; rename it in the card"
            else:
                valid = _valid_keys(kind, loc)
                hint = (f"; valid keys: {', '.join(valid)}" + did_you_mean(str(key), valid)) if valid else ""
                where_key = f"{_dotted(path[:-1])}: unknown key" if path[:-1] else "unknown top-level key"
                text = f"{where_key} {key!r}{hint}"
            line, col = located.key_where(path)
        elif etype == "missing":
            text = f"{where}: missing required key {loc[-1]!r}"
            line, col = located.where(path[:-1] if path and path[-1] == loc[-1] else path)
        elif etype == "literal_error":
            expected = re.findall(r"'([^']*)'", str(err.get("ctx", {}).get("expected", "")))
            text = f"{where}: must be one of {', '.join(expected)}; got {value!r}" + did_you_mean(str(value), expected)
            line, col = located.where(path)
        elif etype in ("unknown_op", "union_tag_invalid"):
            tag = value.get("op") if isinstance(value, Mapping) else value
            valid = list(m.OP_MODELS) + ["call"]
            text = f"{where}: unknown op {tag!r}; valid ops: {', '.join(valid)}" + did_you_mean(str(tag), valid)
            line, col = located.where(path + ("op",))
        else:
            shown = "" if isinstance(value, (Mapping, list)) else f"; got {value!r}"
            text = f"{where}: {msg[0].lower() + msg[1:] if msg else msg}{shown}"
            line, col = located.where(path)
        problems.append(Problem("card-schema", text, located.file, line, col))
    return problems


def load_card(path: Path, renames: Mapping[str, str] | None = None) -> LoadedCard:
    """Parse and validate one card file; PatternGenError lists every problem found in it."""
    file = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PatternGenError(Problem("bad-path", f"cannot read card file: {exc.strerror}", file)) from None
    located = load_located(text, file)
    data = located.data
    if not isinstance(data, Mapping):
        raise PatternGenError(Problem("card-schema", "a card is a YAML mapping with id, kind, title, …", file, 1, 1))
    kind = data.get("kind")
    if kind not in ("atom", "skeleton"):
        line, col = located.where(("kind",))
        raise PatternGenError(
            Problem(
                "card-schema",
                f"kind must be 'atom' or 'skeleton'; got {kind!r}" + did_you_mean(str(kind), ["atom", "skeleton"]),
                file,
                line,
                col,
            )
        )
    try:
        card = card_adapter.validate_python(data)
    except ValidationError as exc:
        raise PatternGenError(problems_from_validation(exc, located, kind, renames)) from None
    stem = path.stem.upper()
    if not (stem == card.id or stem.startswith(card.id + "-")):
        line, col = located.where(("id",))
        raise PatternGenError(
            Problem(
                "card-id",
                f"card id {card.id!r} does not match the file name {path.name!r}; name the file {card.id}-<slug>.yaml",
                file,
                line,
                col,
            )
        )
    return LoadedCard(card, located)
