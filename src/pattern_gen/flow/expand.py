"""Expanding a card: inline calls, splice ``use:`` items and the slot, resolve guards, rename locals.

``Expander`` does everything above the single op: the unit rules of a stage, calls of
single-stage atoms, spliced atoms with their parameters, hoisted stages and labels. It is composed
of explicit collaborators: the cards it reads (a ``CardSource``: the catalogue), the one
``TypeState`` of the expansion and the ``OpTyper`` that types each op against it. The two entry
points build one kernel: ``expand_atom`` (an atom on its own, for the checks and the docs) and
``expand_skeleton`` (a skeleton with its slot filled, for the resolver).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from ptosim.platform import Profile

from ..cards import model as m
from ..vocab.errors import did_you_mean
from ..vocab.expr import Expr, Name, parse, simplify, substitute
from ..vocab.expr import render as render_expr
from ..vocab.ops import UNIT_FREE_OPS, op_spec
from ..vocab.predicates import TRUE
from .control import ControlOps
from .frame import Frame, dims_equal, tensor_decl
from .platform_view import PlatformView
from .state import Path, TypeState
from .typer import OpTyper
from .types import RESERVED, CardSource, CStage, Expansion, FlowError, Refused, TType

__all__ = ["Expander", "expander", "expand_atom", "expand_skeleton", "skeleton_env"]

#: fills a skeleton's slot item (``expand_skeleton`` passes one; atoms have no slot)
SlotFiller = Callable[[Frame, m.SlotItem, Path], None]


class Expander:
    """Expands one kernel (a skeleton, or an atom checked on its own): the cards come from
    ``cards``, each op is typed by ``typer`` against ``state``."""

    def __init__(self, cards: CardSource, state: TypeState, typer: OpTyper) -> None:
        self.cards = cards
        self.state = state
        self.typer = typer
        #: ``SLOT.param=value`` overrides for a skeleton's fixed stages, by their ``as`` name
        self.stage_overrides: dict[str, dict[str, Any]] = {}
        #: expanding a skeleton's ``after:`` items (the stages after the token loop)
        self.after_loop = False
        self.used_overrides: set[str] = set()

    # -- ops ----------------------------------------------------------------------------------------
    def op(self, frame: Frame, op: Any, unit: str, path: Path, stage: CStage) -> None:
        if not op.when.holds(frame.params):
            return
        if isinstance(op, m.CallOp):
            self.call(frame, op, unit, path, stage)
            return
        kind = op.op
        spec = op_spec(kind)
        if unit == "C" and spec.unit == "V":
            raise self.state.fail(frame, path, "flow-mismatch", f"vector op {kind!r} in a C (Cube) stage")
        if unit == "V" and spec.unit == "C":
            raise self.state.fail(frame, path, "flow-mismatch", f"cube op {kind!r} in a V (Vector) stage")
        cop = getattr(self.typer, f"op_{spec.family}")(frame, op, path)
        cop.note = op.note
        stage.ops.append(cop)

    # -- calls ----------------------------------------------------------------------------------------
    def callee_params(
        self, frame: Frame, callee: Any, given: Mapping[str, Any], inherit: bool, path: Path
    ) -> dict[str, Any]:
        specs = self.cards.effective_params(callee.id)
        values: dict[str, Any] = {}
        for key, value in given.items():
            if key not in specs:
                raise self.state.fail(
                    frame, path + ("params", key), "unknown-param", f"{callee.id} has no parameter {key!r}" + did_you_mean(key, specs)
                )
            if isinstance(value, m.ParamRef):
                if value.param not in frame.params:
                    raise self.state.fail(frame, path + ("params", key), "unknown-param", f"{{param: {value.param}}} names no parameter of {frame.card.id}")
                value = frame.params[value.param]
            values[key] = value
        for key, spec in specs.items():
            if key in values:
                continue
            values[key] = frame.params[key] if inherit and key in frame.params else spec.default
        return values

    def check_refusals(self, callee: Any, params: Mapping[str, Any]) -> None:
        for rule in callee.refuse:
            if rule.when.holds(params):
                raise Refused(callee.id, rule.reason)

    def bind_inputs(self, frame: Frame, callee: Any, params: Mapping[str, Any], bind: Mapping[str, str], path: Path, sub: Frame) -> None:
        for local, decl in callee.inputs.items():
            if not decl.when.holds(params):
                continue
            if local not in bind:
                raise self.state.fail(frame, path + ("bind",), "undefined-name", f"{callee.id} input {local!r} is not bound")
            gname, ttype = self.state.var(frame, bind[local], path + ("bind", local))
            shape, dtypes = tensor_decl(decl, params)
            allowed = dtypes if isinstance(dtypes, list) else [dtypes]
            if ttype.dtype not in allowed:
                raise self.state.fail(
                    frame, path + ("bind", local), "dtype-illegal", f"{callee.id} input {local!r} takes {'/'.join(allowed)}, got {ttype.dtype}"
                )
            if len(shape) != ttype.rank:
                raise self.state.fail(
                    frame, path + ("bind", local), "dtype-illegal", f"{callee.id} input {local!r} has rank {len(shape)}, got {ttype.shape_text()}"
                )
            for axis, (decl_dim, actual) in enumerate(zip(shape, ttype.shape)):
                node = parse(decl_dim)
                if not (isinstance(node, Name) and node.name not in sub.dims):
                    self.state.check_extent(sub, simplify(substitute(node, sub.dims)), ("inputs", local, "shape", axis))
                # the first use of a callee dim binds it; later uses must agree
                if isinstance(node, Name) and node.name not in sub.dims:
                    sub.dims[node.name] = actual
                    continue
                if dims_equal(substitute(node, sub.dims), actual, self.state.dim_values) is False:
                    raise self.state.fail(
                        frame,
                        path + ("bind", local),
                        "dtype-illegal",
                        f"{callee.id} input {local!r} expects {render_expr(substitute(node, sub.dims))} on an axis where {bind[local]!r} has {render_expr(actual)}",
                    )
            sub.names[local] = gname
            sub.inputs.add(local)
        for local in getattr(callee, "scalars", {}):
            given = bind.get(local)
            if given is None:
                raise self.state.fail(frame, path + ("bind",), "undefined-name", f"{callee.id} scalar {local!r} is not bound (bind it to a loop index or scalar)")
            if given not in frame.dims:
                raise self.state.fail(frame, path + ("bind", local), "undefined-name", f"{callee.id} scalar {local!r}: {given!r} is no scalar, loop index or dim here" + did_you_mean(given, frame.dims))
            sub.dims[local] = frame.dims[given]
        for local in bind:
            if local not in callee.inputs and local not in getattr(callee, "scalars", {}):
                known = list(callee.inputs) + list(getattr(callee, "scalars", {}))
                raise self.state.fail(frame, path + ("bind", local), "undefined-name", f"{callee.id} has no input {local!r}" + did_you_mean(local, known))

    def new_frame(self, frame: Frame | None, callee: Any, params: Mapping[str, Any], as_: str, out: Mapping[str, str], label_prefix: str) -> Frame:
        prefix = f"{frame.prefix}_{as_}" if frame and frame.prefix else as_
        names: dict[str, str] = {}
        for local, caller_name in out.items():
            names[local] = frame.global_name(caller_name) if frame else caller_name
        return Frame(callee, params, prefix, label_prefix, names, {})

    def finish_outputs(self, frame: Frame, sub: Frame, out: Mapping[str, str], path: Path) -> None:
        callee = sub.card
        for local in out:
            if local not in callee.outputs:
                raise self.state.fail(frame, path + ("out", local), "undefined-name", f"{callee.id} has no output {local!r}" + did_you_mean(local, callee.outputs))
            decl = callee.outputs[local]
            if not decl.when.holds(sub.params):
                continue
            gname = sub.names.get(local)
            if gname is None or gname not in self.state.exp.types:
                raise self.state.fail(frame, path + ("out", local), "undefined-name", f"{callee.id} never defines its output {local!r}")

    def call(self, frame: Frame, op: m.CallOp, unit: str, path: Path, stage: CStage) -> None:
        callee = self.cards.card(op.call, frame.card.id, path + ("call",))
        params = self.callee_params(frame, callee, op.params, frame.card.kind == "atom", path)
        self.check_refusals(callee, params)
        sub = self.new_frame(frame, callee, params, op.as_, op.out, frame.label_prefix)
        self.bind_inputs(frame, callee, params, op.bind, path, sub)
        active = [(i, s) for i, s in enumerate(callee.stages) if isinstance(s, m.Stage) and s.when.holds(params) and not s.hoist]
        if len(active) != 1 or len(active) != sum(1 for s in callee.stages if not (isinstance(s, m.Stage) and s.hoist)):
            raise self.state.fail(frame, path, "flow-mismatch", f"{callee.id} has several stages; splice it with 'use:' instead of 'call:'")
        self.hoisted(sub, callee, params)
        i, s = active[0]
        if s.unit != unit:
            raise self.state.fail(frame, path, "flow-mismatch", f"{callee.id} stage is {s.unit}, called from a {unit} stage")
        self.state.exp.cards_used.append(callee.id)
        if (callee.id, callee.title) not in stage.calls:
            stage.calls.append((callee.id, callee.title))
        for j, inner in enumerate(s.ops):
            self.op(sub, inner, unit, ("stages", i, "ops", j), stage)
        self.finish_outputs(frame, sub, op.out, path)

    def hoisted(self, sub: Frame, callee: Any, params: Mapping[str, Any]) -> None:
        for i, s in enumerate(callee.stages):
            if isinstance(s, m.Stage) and s.hoist and s.when.holds(params):
                self.stage(sub, s, ("stages", i), prologue=True)

    def use(
        self,
        frame: Frame,
        item: m.UseItem,
        path: Path,
        overrides: Mapping[str, Any] | None = None,
        card_id: str | None = None,
    ) -> None:
        """Splice ``item``'s atom (or, for a slot, ``card_id``) with all its stages."""
        callee = self.cards.card(card_id or item.use, frame.card.id, path + ("use",))
        given = dict(item.params)
        if card_id is None and frame.card.kind == "skeleton" and item.as_ in self.stage_overrides:
            self.used_overrides.add(item.as_)
            given.update(self.stage_overrides[item.as_])
        if overrides:
            given.update(overrides)
        params = self.callee_params(frame, callee, given, frame.card.kind == "atom", path)
        self.check_refusals(callee, params)
        label = f"{frame.label_prefix}.{item.as_}" if frame.label_prefix else item.as_
        slot = card_id is not None
        out = {k: v for k, v in item.out.items() if k in callee.outputs} if slot else item.out
        sub = self.new_frame(frame, callee, params, item.as_, out, label)
        self.bind_inputs(frame, callee, params, item.bind, path, sub)
        self.state.exp.cards_used.append(callee.id)
        depth = len(self.state.exp.blocks)
        self.items(sub, callee.stages, ("stages",))
        self.check_closed(sub, depth)
        self.finish_outputs(frame, sub, out, path)

    def check_closed(self, frame: Frame, depth: int = 0) -> None:
        """Every ``loop``/``if`` a card opens is closed by its own ``end``."""
        if len(self.state.exp.blocks) > depth:
            kind, index, card, path = self.state.exp.blocks[-1]
            raise FlowError("flow-mismatch", f"this {kind} ({index}) is never closed: add {{op: end}} after its body", card, path)

    # -- stages ---------------------------------------------------------------------------------------
    def stage_label(self, frame: Frame, label: str, siblings: int) -> str:
        if not frame.label_prefix:
            return label
        return frame.label_prefix if siblings == 1 else f"{frame.label_prefix}.{label}"

    def stage(self, frame: Frame, s: m.Stage, path: Path, prologue: bool = False, siblings: int = 1) -> None:
        hoist = s.hoist or prologue
        target = self.state.exp.prologue if hoist else self.state.exp.stages
        if s.merge:
            if not target:
                raise self.state.fail(frame, path + ("merge",), "flow-mismatch", "'merge: true' on the first stage: there is no stage to continue")
            stage = target[-1]
            if stage.after_loop != self.after_loop:
                raise self.state.fail(frame, path + ("merge",), "flow-mismatch", "'merge: true' on the first stage after the token loop: the stage before it is inside the loop")
            if s.unit != stage.unit and any(getattr(op, "op", None) not in UNIT_FREE_OPS for op in s.ops):  # a call computes
                raise self.state.fail(frame, path + ("unit",), "flow-mismatch", f"merging a {s.unit} stage into the {stage.unit} stage {stage.label!r}")
            for j, op in enumerate(s.ops):
                self.op(frame, op, stage.unit, path + ("ops", j), stage)
            return
        label = self.stage_label(frame, s.label, siblings)
        if hoist and frame.label_prefix:
            label = f"{frame.label_prefix}.{s.label}"
        title = f"{frame.card.id} {frame.card.title}"
        stage = CStage(label, s.unit, hoist, [], frame.card.id, title, path, s.doc, s.label, dict(frame.dims), self.after_loop and not hoist)
        for j, op in enumerate(s.ops):
            self.op(frame, op, s.unit, path + ("ops", j), stage)
        if stage.ops:
            target.append(stage)

    def items(self, frame: Frame, items: Sequence[Any], base: Path, prologue: bool = False, slot: SlotFiller | None = None) -> None:
        loop_stages = [
            s for s in items if isinstance(s, m.Stage) and not s.hoist and not s.merge and s.when.holds(frame.params)
        ]
        # a spliced card's only stage takes the splice's name as its label (see ``stage_label``)
        siblings = len(loop_stages) + _uses(items, frame.params)
        for i, item in enumerate(items):
            path = base + (i,)
            if isinstance(item, m.Stage):
                if item.when.holds(frame.params):
                    self.stage(frame, item, path, prologue=prologue or item.hoist, siblings=siblings)
            elif isinstance(item, m.UseItem):
                if item.when.holds(frame.params):
                    self.use(frame, item, path)
            elif isinstance(item, m.SlotItem):
                if slot is None:
                    raise self.state.fail(frame, path, "slot-mismatch", "a slot outside a skeleton")
                slot(frame, item, path)


def _uses(items: Sequence[Any], params: Mapping[str, Any]) -> int:
    return sum(1 for it in items if isinstance(it, (m.UseItem, m.SlotItem)) and getattr(it, "when", TRUE).holds(params))


# --- entry points ----------------------------------------------------------------------------------


def expander(cards: CardSource, profile: Profile | PlatformView | None, dim_values: Mapping[str, int] | None = None) -> Expander:
    """An ``Expander`` of one kernel and its collaborators: one typing state, shared by the typer
    of the data ops and the typer of the control ops. A ``PlatformView`` given for ``profile``
    keeps the questions the expansion asked (the checks compare platforms by them)."""
    state = TypeState(profile, dim_values)
    return Expander(cards, state, OpTyper(state, ControlOps(state)))


def skeleton_env(atom: Any, slot_params: Mapping[str, Any], platform: str, unroll: int) -> dict[str, Any]:
    """The values skeleton predicates read: the slot's parameters (bare), atom, unroll, platform."""
    env = dict(slot_params)
    env.update({"atom": atom.id, "unroll": unroll, "platform": platform})  # unroll: the list's largest factor
    return env


def _declare_io(ex: Expander, frame: Frame, card: Any, env: Mapping[str, Any], dims: Mapping[str, Expr]) -> None:
    for group, target in (("inputs", ex.state.exp.inputs), ("outputs", ex.state.exp.outputs)):
        for name, decl in getattr(card, group).items():
            if not decl.when.holds(env):
                continue
            shape, dtype = tensor_decl(decl, env)
            if isinstance(dtype, list):
                dtype = dtype[0]
            ex.state.check_dtype(str(dtype))
            ttype = TType(str(dtype), tuple(simplify(substitute(parse(s), dims)) for s in shape))
            if name in RESERVED:
                raise FlowError("reserved-name", f"{name!r} is reserved in the emitted kernel; rename it", card.id, (group, name))
            ex.state.exp.types[name] = ttype
            target[name] = ttype
            ex.state.exp.roles[name] = decl.role
            frame.names[name] = name
            if group == "inputs":
                frame.inputs.add(name)


def expand_atom(
    catalogue: CardSource,
    card: m.AtomCard,
    params: Mapping[str, Any],
    profile: Profile | PlatformView | None,
    input_dtypes: Mapping[str, str] | None = None,
) -> Expansion:
    """Expand an atom on its own (inputs as declared, symbolic dims) — used by the checks."""
    ex = expander(catalogue, profile)
    ex.check_refusals(card, params)
    frame = Frame(card, params, "", "", {}, {})
    for name, decl in card.inputs.items():
        if not decl.when.holds(params):
            continue
        shape, dtypes = tensor_decl(decl, params)
        dtype = (input_dtypes or {}).get(name) or (dtypes[0] if isinstance(dtypes, list) else dtypes)
        ex.state.check_dtype(str(dtype))
        ttype = TType(str(dtype), tuple(parse(s) for s in shape))
        ex.state.exp.types[name] = ttype
        ex.state.exp.inputs[name] = ttype
        ex.state.exp.roles[name] = decl.role
        frame.names[name] = name
        frame.inputs.add(name)
    for local in card.scalars:
        frame.dims[local] = Name(local)
    ex.state.free_scalars = set(card.scalars)
    ex.items(frame, card.stages, ("stages",))
    ex.check_closed(frame)
    for name, decl in card.outputs.items():
        if decl.when.holds(params):
            if name not in ex.state.exp.types:
                raise FlowError("undefined-name", f"output {name!r} is never defined by the flow", card.id, ("outputs", name))
            shape, dtype = tensor_decl(decl, params)
            got = ex.state.exp.types[name]
            want = dtype if isinstance(dtype, list) else [dtype]
            if got.dtype not in [str(w) for w in want]:
                raise FlowError(
                    "dtype-illegal", f"output {name!r} is {got.dtype} but the card declares {'/'.join(map(str, want))}", card.id, ("outputs", name)
                )
            ex.state.exp.outputs[name] = got
    return ex.state.exp


def expand_skeleton(
    catalogue: CardSource,
    card: m.SkeletonCard,
    env: Mapping[str, Any],
    slot_atom: Any,
    slot_params: Mapping[str, Any],
    overrides: Mapping[str, Mapping[str, Any]],
    profile: Profile | PlatformView | None,
    dim_values: Mapping[str, int] | None = None,
) -> Expansion:
    """Expand a skeleton with its slot filled; ``env`` holds the predicates' parameter values."""
    ex = expander(catalogue, profile, dim_values)
    ex.check_refusals(card, env)
    frame = Frame(card, env, "", "", {}, {})
    dims = {d: Name(d) for d in card.dims}
    dims[card.token_axis] = Name(card.token_axis)
    _declare_io(ex, frame, card, env, dims)
    for local in (card.loop.factor, card.loop.index):
        frame.dims[local] = Name(local)
    frame.dims.update(dims)

    def fill_slot(fr: Frame, item: m.SlotItem, path: Path) -> None:
        spec = card.slots.get(item.slot)
        if spec is None:
            raise FlowError("slot-mismatch", f"unknown slot {item.slot!r}", card.id, path)
        use = m.UseItem.model_validate({"use": slot_atom.id, "as": item.slot, "bind": item.bind, "out": item.out})
        # the skeleton's own parameters (SK-04's kv_layout) are not the slot atom's
        atom_params = {k: v for k, v in slot_params.items() if k not in card.params}
        ex.use(fr, use, path, overrides=atom_params, card_id=slot_atom.id)

    ex.stage_overrides = {k: dict(v) for k, v in overrides.items()}
    ex.items(frame, card.prologue, ("prologue",), prologue=True, slot=fill_slot)
    ex.items(frame, card.stages, ("stages",), slot=fill_slot)
    ex.check_closed(frame)
    ex.after_loop = True
    ex.items(frame, card.after, ("after",), slot=fill_slot)
    ex.check_closed(frame)
    unknown = set(overrides) - ex.used_overrides
    if unknown:
        stages = sorted(i.as_ for i in card.fixed_stages)
        name = sorted(unknown)[0]
        raise FlowError("unknown-param", f"{card.id} has no fixed stage {name!r}; fixed stages: {', '.join(stages)}" + did_you_mean(name, stages), card.id, ())
    for name in ex.state.exp.outputs:
        if name not in ex.state.exp.written:
            raise FlowError("undefined-name", f"output {name!r} is never assembled", card.id, ("outputs", name))
    return ex.state.exp
