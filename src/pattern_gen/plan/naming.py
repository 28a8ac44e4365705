"""Instance names: derived from a resolved plan, decoded by ``explain``.

Format: ``<skeleton>-<atom>-<axis tokens…>`` with every axis of ``naming.yaml`` in
its order (defaults included), then suffix tokens for what differs from the defaults: ``eps``,
dims (``K1024``) and fixed-stage settings (``kv_norm.nogamma``), and last the target when it is
not the default (``…-pypto``). Example:
``sk04-at10-gamma-rsqrt-qnone-obf16-nobias-norstd-kn-u8-a2a3``. Floats are written without
``-`` (``1e-05`` -> ``1em05``) so ``-`` only ever separates tokens.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Mapping

from ..vocab.errors import PatternGenError, Problem, did_you_mean
from ..vocab.targets import DEFAULT_TARGET, TARGETS
from .regime import dim_steps
from .unroll import UnrollError, parse_unroll, parse_unroll_token, unroll_token

__all__ = ["instance_name", "explain", "card_token", "float_token", "parse_float_token"]


def card_token(card_id: str) -> str:
    return card_id.replace("-", "").lower()


def _card_from_token(token: str) -> str | None:
    m = re.fullmatch(r"(at|sk)(\d\d)", token)
    return f"{m.group(1).upper()}-{m.group(2)}" if m else None


def float_token(value: float) -> str:
    """``1e-05`` -> ``1em05``, ``0.001`` -> ``0d001``: no ``-`` (token separator) and no ``.``
    (stage-setting separator) in a name token."""
    return repr(float(value)).replace("-", "m").replace("+", "p").replace(".", "d")


def parse_float_token(text: str) -> float:
    return float(text.replace("m", "-").replace("p", "+").replace("d", "."))


def _axis_token(axis: Mapping[str, Any], value: Any) -> str:
    if "tokens" in axis:
        for key, token in axis["tokens"].items():
            if key == value:
                return str(token)
        raise KeyError(value)
    return f"{axis.get('prefix', '')}{value}"


def _value_token(naming: Mapping[str, Any], param: str, value: Any) -> str:
    """Token of a non-axis or fixed-stage parameter value."""
    for axis in naming.get("axes", []):
        if axis["param"] == param and "tokens" in axis:
            return _axis_token(axis, value)
    if isinstance(value, float):
        return f"{param}{float_token(value)}"
    if isinstance(value, bool):
        return f"{param}{'1' if value else '0'}"
    return f"{param}{value}"


def instance_name(
    naming: Mapping[str, Any],
    skeleton: str,
    atom: str,
    params: Mapping[str, Any],
    param_defaults: Mapping[str, Any],
    unroll: tuple[int, ...],
    platform: str,
    dims: Mapping[str, int],
    dim_defaults: Mapping[str, int],
    stage_params: Mapping[str, Mapping[str, Any]],
    target: str = DEFAULT_TARGET,
    tiles: Mapping[str, Any] | None = None,
) -> str:
    values = {**params, "unroll": unroll_token(unroll), "platform": platform}
    tokens = [card_token(skeleton), card_token(atom)]
    axis_params = set()
    for axis in naming.get("axes", []):
        axis_params.add(axis["param"])
        if axis["param"] in values:
            tokens.append(_axis_token(axis, values[axis["param"]]))
    for name in sorted(params):
        if name not in axis_params and params[name] != param_defaults.get(name):
            tokens.append(_value_token(naming, name, params[name]))
    for dim in dims:
        if dims[dim] != dim_defaults.get(dim):
            tokens.append(f"{dim}{dims[dim]}")
    for stage in sorted(stage_params):
        for name in sorted(stage_params[stage]):
            tokens.append(f"{stage}.{_value_token(naming, name, stage_params[stage][name])}")
    if tiles:  # a digest: tile shapes do not spell well in a name; instance.json has them
        digest = hashlib.sha256(json.dumps(tiles, sort_keys=True).encode()).hexdigest()[:6]
        tokens.append(f"tiles{digest}")
    if target != DEFAULT_TARGET:  # the default target is no token: one kernel, one name
        tokens.append(target)
    bad = [t for t in tokens if not _SAFE_TOKEN.fullmatch(t) or ".." in t]
    if bad:  # the name is a folder name: card words that reach it were checked as tokens; this is the net under them
        raise PatternGenError(Problem("bad-name", f"the instance name would hold {bad[0]!r}: name tokens are letters, digits, _ and one . (stage.setting)"))
    return "-".join(tokens)


_SAFE_TOKEN = re.compile(r"[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)?")


def _decode_value(naming: Mapping[str, Any], token: str, specs: Mapping[str, Any]) -> tuple[str, Any] | None:
    for axis in naming.get("axes", []):
        if "tokens" in axis and axis["param"] in specs:
            for value, tok in axis["tokens"].items():
                if tok == token:
                    return axis["param"], value
    for name in sorted(specs, key=len, reverse=True):
        if token.startswith(name) and token != name:
            rest = token[len(name):]
            spec = specs[name]
            try:
                if spec.type == "float":
                    return name, parse_float_token(rest)
                if spec.type == "int":
                    return name, int(rest)
                if spec.type == "bool":
                    return (name, rest == "1") if rest in ("0", "1") else None
                choices = [c for c in spec.choices or [] if str(c) == rest]
                return (name, choices[0]) if choices else None
            except ValueError:
                return None
    return None


def explain(catalogue: Any, name: str) -> dict[str, Any]:
    """Decode an instance name back into its choices (PatternGenError when it does not parse)."""
    tokens = name.split("-")

    def bad(message: str) -> PatternGenError:
        return PatternGenError(Problem("bad-name", f"cannot decode {name!r}: {message}"))

    if len(tokens) < 2:
        raise bad("expected <skeleton>-<atom>-…")
    skeleton_id, atom_id = _card_from_token(tokens[0]), _card_from_token(tokens[1])
    if skeleton_id not in catalogue.cards or catalogue.cards[skeleton_id].kind != "skeleton":
        raise bad(f"{tokens[0]!r} is not a skeleton of the catalogue")
    if atom_id not in catalogue.cards or catalogue.cards[atom_id].kind != "atom":
        raise bad(f"{tokens[1]!r} is not an atom of the catalogue")
    skeleton = catalogue.cards[skeleton_id]
    if atom_id not in [a.id for a in catalogue.slot_atoms(skeleton)]:
        raise bad(f"{atom_id} cannot fill {skeleton_id}'s slot")
    specs = catalogue.slot_specs(skeleton, atom_id)
    naming = catalogue.naming
    result: dict[str, Any] = {"skeleton": skeleton_id, "atom": atom_id, "params": {}, "dims": {}, "stage_params": {}}
    platforms = set(catalogue.platforms)
    seen: set[str] = set()

    def once(key: str, token: str) -> None:
        if key in seen:
            raise bad(f"{token!r} sets {key} a second time")
        seen.add(key)

    for token in tokens[2:]:
        if "." in token:
            stage, _, rest = token.partition(".")
            fixed = {i.as_: i.use for i in skeleton.fixed_stages}
            if stage not in fixed:
                raise bad(f"{stage!r} is not a fixed stage of {skeleton_id}" + did_you_mean(stage, fixed))
            decoded = _decode_value(naming, rest, catalogue.effective_params(fixed[stage]))
            if decoded is None:
                raise bad(f"cannot read the stage setting {token!r}")
            once(f"{stage}.{decoded[0]}", token)
            result["stage_params"].setdefault(stage, {})[decoded[0]] = decoded[1]
            continue
        if token in platforms:
            once("platform", token)
            result["platform"] = token
            continue
        if token in TARGETS:
            once("target", token)
            result["target"] = token
            continue
        if re.fullmatch(r"tiles[0-9a-f]{6}", token):
            once("tiles", token)
            result["tiles"] = f"--tile overrides (digest {token[5:]}; the instance's instance.json lists them)"
            continue
        factors = parse_unroll_token(token[1:]) if token.startswith("u") else None
        if factors is not None:
            once("unroll", token)
            allowed = sorted(set(skeleton.loop.candidates) | {u for r in skeleton.regimes for u in r.unroll}, reverse=True)
            try:
                result["unroll"] = list(parse_unroll(list(factors), allowed))
            except UnrollError as exc:
                raise bad(f"unroll {token[1:]}: {exc}") from None
            continue
        m = re.fullmatch(r"([A-Z][A-Z_]*)(\d+)", token)
        if m and m.group(1) in skeleton.dims:
            once(m.group(1), token)
            value, steps = int(m.group(2)), sorted(dim_steps(skeleton, m.group(1)))
            if value <= 0 or all(value % step for step in steps):  # the regime that takes it is checked by the resolver
                raise bad(f"dim {m.group(1)}={value} must be a positive multiple of {' or '.join(map(str, steps))}")
            result["dims"][m.group(1)] = value
            continue
        decoded = _decode_value(naming, token, specs)
        if decoded is None:
            raise bad(f"unknown token {token!r}")
        once(decoded[0], token)
        result["params"][decoded[0]] = decoded[1]
    return result
