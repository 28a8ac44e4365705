"""Load one card file: YAML with positions -> validated model, or problems with file:line:col.

Pydantic's errors are turned into one sentence each: the dotted key path, the rule, the value
that broke it, the valid choices and the closest spelling, at the line of the offending key.
Renamed keys (``patterns/renames.yaml``) are reported as renames rather than unknown keys.
"""

from __future__ import annotations

import re
import typing
from pathlib import Path
from typing import Any, Mapping

from pydantic import BaseModel, TypeAdapter, ValidationError

from ptosim.schema_keys import dotted, field_names, keys_at

from ..vocab.errors import PatternGenError, Problem, closest, did_you_mean
from . import model as m
from .yamlsrc import Located, load_located_file

__all__ = ["load_card", "card_adapter", "problems_from_validation", "LoadedCard"]

card_adapter: TypeAdapter[Any] = TypeAdapter(m.Card)


class LoadedCard(typing.NamedTuple):
    card: Any  #: AtomCard | SkeletonCard
    located: Located


def _walk(
    data: Any, loc: tuple[Any, ...], etype: str, kind: str | None
) -> tuple[tuple[Any, ...], list[tuple[tuple[Any, ...], str]]]:
    """Map a pydantic ``loc`` onto the data: (data path, union branches taken on the way).

    A ``loc`` mixes real keys and indices with union tags: the card kind at the root, the tag of
    a tagged union right after a list index (``stage``/``use``/``slot``, an op name, ``call`` —
    which may also be a real key, e.g. ``('stages', 1, 'use', 'use')``), and the member names of
    plain unions (``'ParamRef'``, ``"literal['BF16', …]"``, ``'int'``). The last are returned as
    branches ``(path of the union value, member)`` so that errors of the other members can be
    dropped (see ``_prune_unions``).
    """
    path: list[Any] = []
    branches: list[tuple[tuple[Any, ...], str]] = []
    cur = data
    after_index = False
    for n, item in enumerate(loc):
        last = n == len(loc) - 1
        if n == 0 and kind is not None and item == kind and not (isinstance(cur, Mapping) and item in cur):
            continue  # the card-kind discriminator
        if after_index and isinstance(cur, Mapping) and item in (m.item_tag(cur), m.op_tag(cur)):
            after_index = False
            continue  # the tag of a tagged union (stage item or op)
        after_index = False
        if isinstance(cur, Mapping) and item in cur:
            path.append(item)
            cur = cur[item]
        elif isinstance(cur, list) and isinstance(item, int) and 0 <= item < len(cur):
            path.append(item)
            cur = cur[item]
            after_index = True
        elif last and etype == "missing" and isinstance(item, str):
            path.append(item)  # the missing key
            cur = None
        elif item == "[key]":
            continue
        else:
            branches.append((tuple(path), str(item)))
    return tuple(path), branches


_MODEL_NAMES = {name for name, obj in vars(m).items() if isinstance(obj, type) and issubclass(obj, BaseModel)}


def _member_kind(member: str) -> str:
    if member in _MODEL_NAMES:
        return "model"
    if member.startswith(("list[", "tuple[")):
        return "list"
    return "scalar"


def _describe_member(member: str) -> str:
    if member == "ParamRef":
        return "{param: NAME}"
    if member == "Scalar":
        return "{scalar: EXPR}"
    if member in _MODEL_NAMES:
        return f"a mapping ({member})"
    if member.startswith("literal["):
        return "one of " + ", ".join(re.findall(r"'([^']*)'", member))
    if member.startswith(("list[", "tuple[")):
        return "a list"
    return {
        "bool": "true/false",
        "int": "an integer",
        "float": "a number",
        "str": "a string",
        "constrained-str": "a name",
        "none": "nothing",
    }.get(member, member)


def _value_at(data: Any, path: tuple[Any, ...]) -> Any:
    cur = data
    for p in path:
        try:
            cur = cur[p]
        except (KeyError, IndexError, TypeError):
            return None
    return cur


_Entry = tuple[tuple[Any, ...], list[tuple[tuple[Any, ...], str]], dict[str, Any]]


def _prune_unions(entries: list[_Entry], data: Any, depth: int = 0) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
    """Keep the errors of the union member the value was meant to be (one message, not one per member).

    A mapping is taken for the model member with the fewest errors (ties: the one whose keys look
    most like the value's), a list for the list member, a scalar for the literal or string member;
    when nothing fits, one ``expected … or …`` problem replaces the lot.
    """
    out: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    groups: dict[tuple[Any, ...], dict[str, list[_Entry]]] = {}
    order: list[Any] = []
    for entry in entries:
        branches = entry[1]
        if len(branches) <= depth:
            order.append(("plain", entry))
            continue
        upath, member = branches[depth]
        if upath not in groups:
            groups[upath] = {}
            order.append(("union", upath))
        groups[upath].setdefault(member, []).append(entry)
    for tag, item in order:
        if tag == "plain":
            out.append((item[0], item[2]))
            continue
        members = groups[item]
        if len(members) == 1:
            out.extend(_prune_unions(next(iter(members.values())), data, depth + 1))
            continue
        value = _value_at(data, item)
        want = "model" if isinstance(value, Mapping) else "list" if isinstance(value, list) else "scalar"
        cands = [mb for mb in members if _member_kind(mb) == want]
        if want == "scalar":
            literal = [mb for mb in cands if mb.startswith("literal[")]
            strings = [mb for mb in cands if mb in ("str", "constrained-str")] if isinstance(value, str) else []
            cands = literal[:1] or strings[:1]
        elif want == "model" and cands:
            keys = [str(k) for k in value]

            def score(mb: str) -> tuple[int, int, int]:
                fields = field_names(getattr(m, mb))
                exact = sum(k in fields for k in keys)
                near = sum(bool(did_you_mean(k, fields)) for k in keys)
                return (len(members[mb]), -exact, -near)

            cands = sorted(cands, key=score)[:1]
        if cands:
            out.extend(_prune_unions(members[cands[0]], data, depth + 1))
        else:
            err = dict(next(iter(members.values()))[0][2])
            descs = list(dict.fromkeys(_describe_member(mb) for mb in members))
            err.update(type="union_mismatch", msg="expected " + " or ".join(descs), input=value)
            out.append((item, err))
    return out


_TAG_TO_MODEL: dict[str, type[BaseModel]] = {**m.OP_MODELS, "call": m.CallOp, "stage": m.Stage, "use": m.UseItem, "slot": m.SlotItem}
_ROOTS: dict[str, type[BaseModel]] = {"atom": m.AtomCard, "skeleton": m.SkeletonCard, "constraints": m.ConstraintCatalogue}


def _valid_keys(kind: str, loc: tuple[Any, ...]) -> list[str] | None:
    """The keys a mapping at ``loc`` accepts, by walking the schema (None when unknown)."""
    root = _ROOTS.get(kind)
    if root is None:
        return None
    if loc and kind in ("atom", "skeleton") and loc[0] == kind:
        loc = loc[1:]  # the card-kind tag of the Card union
    return keys_at(root, loc[:-1], _TAG_TO_MODEL) or None


#: the schema's string patterns, in words
_PATTERN_WORDS = {
    r"^[A-Za-z_][A-Za-z0-9_]*$": "a name (letters, digits and _, not starting with a digit)",
    r"^[VC][0-9]*$": "a unit, V or C, numbered in skeletons (V1, C2, …)",
    r"^(AT|SK)-\d\d$": "a card id such as AT-10 or SK-04",
    r"^C-(API|TILE|LOOP|DATA|SYM)-\d\d$": "a constraint id such as C-API-01 (families API, TILE, LOOP, DATA, SYM)",
}


def _at(path: tuple[Any, ...]) -> str:
    """``"inputs.x.dtype: "`` (empty at the top of the card)."""
    text = dotted(path)
    return f"{text}: " if text else ""


def problems_from_validation(
    exc: ValidationError, located: Located, kind: str, renames: Mapping[str, str] | None = None
) -> list[Problem]:
    renames = renames or {}
    problems: list[Problem] = []
    entries: list[_Entry] = []
    for err in exc.errors(include_url=False):
        path, branches = _walk(located.data, tuple(err["loc"]), err["type"], kind)
        entries.append((path, branches, err))
    errors = _prune_unions(entries, located.data)
    # a renamed key stands in for its new name: no second "missing" problem for the new name
    renamed_to = {
        (path[:-1], renames[path[-1]])
        for path, err in errors
        if err["type"] == "extra_forbidden" and path and path[-1] in renames
    }
    # a misspelt key whose closest spelling is a missing required key: one problem, not two
    misspelt = set()
    for path, err in errors:
        if err["type"] == "extra_forbidden" and path:
            valid = _valid_keys(kind, tuple(err["loc"])) or []
            near = closest(str(path[-1]), valid)
            if near is not None:
                misspelt.add((path[:-1], near))
    for path, err in errors:
        loc = tuple(err["loc"])
        etype = err["type"]
        msg = str(err["msg"]).removeprefix("Value error, ")
        where = _at(path)
        value = err.get("input")
        if etype == "extra_forbidden":
            key = path[-1] if path else loc[-1]
            if key in renames:
                text = f"{_at(path[:-1])}key {key!r} was renamed {renames[key]!r}; rename it in the card"
            else:
                valid = _valid_keys(kind, loc)
                hint = (f"; valid keys: {', '.join(valid)}" + did_you_mean(str(key), valid)) if valid else ""
                where_key = f"{dotted(path[:-1])}: unknown key" if path[:-1] else "unknown top-level key"
                text = f"{where_key} {key!r}{hint}"
            line, col = located.key_where(path)
        elif etype == "missing":
            if path and ((path[:-1], path[-1]) in renamed_to or (path[:-1], path[-1]) in misspelt):
                continue
            text = f"{_at(path[:-1]) if path else ''}missing required key {loc[-1]!r}"
            line, col = located.where(path[:-1] if path and path[-1] == loc[-1] else path)
        elif loc and loc[-1] == "[key]":
            text = f"{_at(path[:-1])}key {path[-1]!r} is not a name (letters, digits and _, not starting with a digit)"
            line, col = located.key_where(path)
        elif etype == "literal_error":
            expected = re.findall(r"'([^']*)'", str(err.get("ctx", {}).get("expected", "")))
            text = f"{where}must be one of {', '.join(expected)}; got {value!r}" + did_you_mean(str(value), expected)
            line, col = located.where(path)
        elif etype in ("unknown_op", "union_tag_invalid"):
            valid = list(m.OP_MODELS) + ["call"]
            if isinstance(value, Mapping) and "op" not in value:
                text = f"{where}an op needs an 'op' key (or 'call' to call an atom); valid ops: {', '.join(valid)}"
                line, col = located.where(path)
            else:
                tag = value.get("op") if isinstance(value, Mapping) else value
                text = f"{where}unknown op {tag!r}; valid ops: {', '.join(valid)}" + did_you_mean(str(tag), valid)
                line, col = located.where(path + ("op",))
        elif etype == "string_pattern_mismatch" and str(err.get("ctx", {}).get("pattern")) in _PATTERN_WORDS:
            text = f"{where}must be {_PATTERN_WORDS[str(err['ctx']['pattern'])]}; got {value!r}"
            line, col = located.where(path)
        elif etype == "union_tag_not_found":
            text = (
                f"{where}expected a stage {{label, unit, ops}}, {{use: ATOM, as: NAME}} or {{slot: NAME}}; got {value!r}"
            )
            line, col = located.where(path)
        elif etype in ("model_type", "model_attributes_type", "dict_type"):
            keys = ", ".join(_valid_keys(kind, loc + ("",)) or [])
            text = f"{where}expected a mapping{' with keys ' + keys if keys else ''}; got {value!r}"
            line, col = located.where(path)
        else:
            said = "got " in msg or (isinstance(value, str) and repr(value) in msg)
            shown = "" if isinstance(value, (Mapping, list)) or said else f"; got {value!r}"
            text = f"{where}{msg[0].lower() + msg[1:] if msg else msg}{shown}"
            line, col = located.where(path)
        problems.append(Problem("card-schema", text, located.file, line, col))
    return problems


def load_card(path: Path, renames: Mapping[str, str] | None = None) -> LoadedCard:
    """Parse and validate one card file; PatternGenError lists every problem found in it."""
    file = str(path)
    located = load_located_file(path)
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
    prefix = "AT-" if card.kind == "atom" else "SK-"
    if not card.id.startswith(prefix):
        line, col = located.where(("id",))
        raise PatternGenError(
            Problem("card-id", f"the id of a{'n' if card.kind == 'atom' else ''} {card.kind} starts with {prefix}; got {card.id!r}", file, line, col)
        )
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
