"""Rendering: a KernelPlan -> the files of its instance folder (pure: no disk writes here).

The kernel body is emitted op by op from the plan's typed stages; the templates only place
already-rendered strings (STYLE: templates hold holes, not logic). The golden module inlines the
hand-written per-atom references (``emit/golden/atoms.py``) and the skeleton's hand-written
composition (``emit/golden/<SK>.py``) — never ptosim, never the card flow. What differs between
targets (the import, the host wrapper, the test) lives in the target's folder (``emit/targets``).
"""

from __future__ import annotations

import functools
import json
import re
import textwrap
from pathlib import Path
from typing import Any, Mapping, Sequence

import jinja2

from ptosim.dtypes import dtype_from_name
from ptosim.testing import differ_ratio_for as _np_differ
from ptosim.testing import tolerance_for as _np_tolerance

from ..flow import COp, ScalarArg, Var
from ..plan.kernel_plan import KernelPlan, StagePlan, TensorPlan
from ..plan.test_points import SEEDS, test_values, verify_T
from ..vocab.errors import PatternGenError, Problem
from ..vocab.expr import render as render_expr
from ..vocab.ops import op_spec
from ..vocab.targets import RESERVED
from .layout import (
    INDENT,
    constant_hint,
    drop_repeated_tiles,
    hoist_invariants,
    lay_out,
    name_constants,
    share_casts,
    shorten_names,
)
from .pytext import COMMENT, LINE, NonFinite, comment_lines, comment_text, docstring_text, py_literal, wrapped_literal
from .references import REFERENCE_FILES, SKELETON_REFERENCES
from .targets import Target, get_target

__all__ = ["render_instance", "kernel_function_name", "module_id"]


_HERE = Path(__file__).resolve().parent
#: the target-neutral templates (the kernel body, the op spellings, the golden module)
TEMPLATES = _HERE / "templates"
#: the hand-written per-atom references and skeleton compositions
GOLDEN = _HERE / "golden"


def _finalize(value: Any) -> Any:
    """Templates print text the renderer built (code, names, numbers); a float is printed through
    ``py_literal`` so a non-finite one can never become a bare ``inf``."""
    return _py(value) if isinstance(value, float) else value


@functools.lru_cache(maxsize=None)
def _env(target: Target) -> jinja2.Environment:
    """The target's templates first, then the shared ones. One environment per target and process:
    jinja2 then compiles each template once (its auto-reload still notices an edited template).
    Templates quote text only through the ``py`` filter (``pytext.py_literal``)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([str(target.folder), str(TEMPLATES)]),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
        finalize=_finalize,
    )
    env.filters["py"] = _py
    return env


def module_id(name: str) -> str:
    """A Python identifier made from an instance name."""
    return re.sub(r"\W", "_", name)


def kernel_function_name(plan: KernelPlan) -> str:
    return f"{plan.skeleton.replace('-', '').lower()}_{plan.atom.replace('-', '').lower()}_kernel"


_comment = comment_text
_doc = docstring_text


def _shape(values: Any) -> str:
    return "[" + ", ".join(render_expr(v) for v in values) + "]"


def _scalar(arg: Any) -> str:
    if isinstance(arg, Var):
        return arg.name
    if isinstance(arg, ScalarArg):
        text = render_expr(arg.expr, float_div=True)
        if arg.param:
            return text
        try:
            float(text)
        except ValueError:
            return text
        # a float literal as ruff format writes it: 1e30, not 1e+30
        return repr(float(text)).replace("e+", "e") if "." not in text and "e" not in text else text.replace("e+", "e")
    return str(arg)


#: attributes holding one expression (kept as a one-entry list so the shape machinery substitutes it)
_SINGLE_EXPRESSIONS = ("extent", "value", "min", "max", "k")


def _op_context(op: COp) -> dict[str, Any]:
    spec = op_spec(op.op)
    ctx: dict[str, Any] = {
        "kind": op.op,
        "macro": spec.family,
        "out": op.out,
        "args": [_scalar(a) for a in op.args],
        "note": _comment(op.note),
    }
    # scalars that become named module constants (layout.name_constants): argument index -> name
    hints = {i: constant_hint(a.param, ctx["args"][i]) for i, a in enumerate(op.args) if isinstance(a, ScalarArg)}
    ctx["hints"] = {i: h for i, h in hints.items() if h}
    for key in spec.attrs:
        value = op.attrs[key]
        if key in _SINGLE_EXPRESSIONS:  # the one expression of a control or scalar op, not a list
            ctx[key] = render_expr(value[0]) if value else ""
        else:
            ctx[key] = (_shape(value) if value is not None else "") if key in spec.shape_attrs else value
    if op.op == "cast":
        # A cast to the dtype the value already has (a card written for several input dtypes) is no op
        # a PyPTO engineer would write: the kernel just names the value.
        identity = op.is_identity_cast
        ctx.update(mode="" if ctx["mode"] == "NONE" else ctx["mode"], identity=identity)
        if identity:
            ctx["note"] = "; ".join(filter(None, [f"already {ctx['to']}: no cast", ctx["note"]]))
    return ctx


def _stage_context(stage: StagePlan, files: Mapping[str, str], where: str = "") -> dict[str, Any]:
    if stage.vec_tile is not None:
        tile: dict[str, Any] | None = {"kind": "vec", "shape": list(stage.vec_tile)}
    elif stage.cube_tile is not None:
        c = stage.cube_tile
        tile = {"kind": "cube", "m": list(c["m"]), "k": list(c["k"]), "n": list(c["n"]), "split_k": bool(stage.split_k)}
    else:
        tile = None
    calls = "".join(f"; ops of {cid} {title} ({files.get(cid, cid)})" for cid, title in stage.stage.calls)
    where = ", before the loop" if where == "prologue" else (", after the token loop" if stage.stage.after_loop else "")
    header = comment_lines(f"{stage.title} ({files.get(stage.card, stage.card)}){calls}", first=f"-- {stage.label} ({stage.unit}{where}):")
    return {
        "label": stage.label,
        "header": header,
        "tile": tile,
        "ops": [_op_context(op) for op in stage.stage.ops],
    }


def _py(value: Any) -> str:
    """A Python literal of a card, option or plan value (``pytext.py_literal``; dicts keep their int keys)."""
    try:
        return py_literal(value)
    except NonFinite as exc:
        raise PatternGenError(Problem("bad-param-value", f"{exc}: a generated kernel needs finite numbers")) from None


def _string_pieces(text: str, around: int) -> list[str]:
    """A string as one literal where ``around`` more characters still fit a line, else as the
    literals of an implicit concatenation, a line each ([] for no text)."""
    if not text or around + len(_py(text)) <= LINE:
        return [_py(text)] if text else []
    parts = textwrap.wrap(text, COMMENT, break_long_words=False, break_on_hyphens=False)
    return [_py(p + " ") for p in parts[:-1]] + [_py(parts[-1])]


def _signature(plan: KernelPlan) -> list[dict[str, Any]]:
    """The kernel's parameters: name, dims (None: the dynamic token axis) and dtype."""
    return [
        {"name": t.name, "dims": [None if i == t.token_axis else render_expr(s) for i, s in enumerate(t.shape)], "dtype": t.dtype}
        for t in plan.inputs + plan.outputs
    ]


def _output_shape(t: TensorPlan, token: str) -> str:
    parts = [token if i == t.token_axis else render_expr(s) for i, s in enumerate(t.shape)]
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def _table_checks(plan: KernelPlan) -> list[dict[str, Any]]:
    """Block tables and the key counts that read them: the host checks one against the other."""
    out = []
    for t in plan.inputs:
        if t.role != "block_table":
            continue
        lens = next((x.name for x in plan.inputs if x.role == "lengths" and x.index_into == t.name), None)
        cache = next(x for x in plan.inputs + plan.outputs if x.name == t.index_into)
        blocks = cache.default_shape[0] // t.block_size
        out.append({"name": t.name, "lens": lens, "cache": cache.name, "blocks": blocks, "block_size": t.block_size})
    return [c for c in out if c["lens"] is not None]


#: the module-level names of every target's kernel file
_MODULE_NAMES = ("T", "UNROLL", "PLATFORM", "INPUTS", "OUTPUTS", "PYPTO_VERSION", "LAST_RUN")


def _kernel_context(plan: KernelPlan, card_files: Mapping[str, str], ops: Any) -> dict[str, Any]:
    loop = plan.loop
    token_input = next(t for t in plan.inputs if t.token_axis is not None)
    prologue = [_stage_context(s, card_files, "prologue") for s in plan.prologue]
    stages = [_stage_context(s, card_files) for s in plan.stages if not s.stage.after_loop]
    after = [_stage_context(s, card_files) for s in plan.stages if s.stage.after_loop]
    share_casts([prologue, stages, after])
    tensors = {t.name for t in plan.inputs + plan.outputs}
    before = tensors | {op["out"] for s in prologue for op in s["ops"] if op.get("out")} | {"T"}
    hoisted = [
        {"label": label, "header": [], "tile": None, "ops": [op]}
        for label, op in hoist_invariants(stages, before, {loop["index"], loop["factor"]})
    ]
    drop_repeated_tiles(prologue, stages, after)
    taken = {*plan.dims, *tensors, *_MODULE_NAMES}
    regions = [prologue, hoisted, stages, after]
    constants = name_constants(regions, taken)
    shorten_names(regions, taken | {name for name, _ in constants} | RESERVED | {kernel_function_name(plan)})
    k = {
        "name": plan.name,
        "skeleton": plan.skeleton,
        "skeleton_title": _doc(plan.skeleton_title),
        "atom": plan.atom,
        "platform": plan.platform,
        "cycles_per_us": f"{plan.cycles_per_us:g}",
        "unroll": list(plan.unroll),
        "cards": ", ".join(plan.cards_used),
        "notes": [_doc(n) for n in plan.plan_notes],
        "dims": list(plan.dims.items()),
        "input_lines": wrapped_literal("INPUTS = ", {t.name: tuple(str(a) for a in t.shape) for t in plan.inputs}),
        "output_lines": wrapped_literal("OUTPUTS = ", [t.name for t in plan.outputs]),
        "option_lines": wrapped_literal("runtime_options=", plan.runtime_options, ",", INDENT)
        + wrapped_literal("pass_options=", plan.pass_options, ",", INDENT),
        "operation_options": dict(plan.operation_options),
        "cache_policy": list(plan.cache_policy.items()),
        "function": kernel_function_name(plan),
        "signature": _signature(plan),
        "prologue": lay_out(prologue, 1, ops),
        "stages": lay_out(stages, 2, ops),
        "after": lay_out(after, 1, ops),
        "hoisted": lay_out(hoisted, 1, ops),
        "constants": constants,
        "token": "T",
        "token_source": token_input.name,
        "token_axis": token_input.token_axis,
        "index": loop["index"],
        "factor": loop["factor"],
        "loop_name": loop["name"],
        "submit": loop["submit_before_loop"],
        "outputs": [
            {"name": t.name, "shape": _output_shape(t, "T"), "dtype": t.dtype, "cache": t.role == "cache",
             "np_dtype": dtype_from_name(t.dtype).np_dtype.name}
            for t in plan.outputs
        ],
        "has_cache": any(t.role == "cache" for t in plan.outputs),
        "index_checks": [
            {"name": t.name, "into": t.index_into, "rows": render_expr(next(o for o in plan.outputs if o.name == t.index_into).shape[0])}
            for t in plan.inputs if t.index_into and t.role == "index"
        ],
        "table_checks": _table_checks(plan),
        "loop_split": False,
    }
    k["loop_split"] = max(map(len, str(ops.token_loop(k)).splitlines())) > LINE
    return k


def tolerance_for(dtype: str) -> tuple[float, float, float]:
    """(atol, rtol, max_error_ratio) of an output dtype — ptosim.testing's table, one source."""
    return _np_tolerance(dtype_from_name(dtype).np_dtype)


def _tolerance(t: TensorPlan) -> list[float]:
    """(atol, rtol, ratio, differ[, ties]) of an output: the dtype's default, overridden where the
    card says so; ``ties`` only where the card gives one."""
    atol, rtol, ratio = tolerance_for(t.dtype)
    differ = _np_differ(dtype_from_name(t.dtype).np_dtype)
    o = t.tolerance or {}
    tol = [o.get("atol", atol), o.get("rtol", rtol), o.get("ratio", ratio), o.get("differ", differ)]
    return tol + [o["ties"]] if o.get("ties") else tol


def _golden_source(
    plan: KernelPlan, golden_dirs: Sequence[Path] = (), user_atoms: Mapping[str, Sequence[Path]] | None = None
) -> tuple[str, str]:
    """The per-atom references and the skeleton's hand-written composition: a user's catalogue
    keeps the composition of its own skeleton in ``golden/<SK>.py`` and the reference of each
    of its own atoms in ``golden/<AT>.py`` beside its cards (inlined after the shipped ones)."""
    base = GOLDEN
    places = [*golden_dirs, base]
    composition = next((d / f"{plan.skeleton}.py" for d in places if (d / f"{plan.skeleton}.py").is_file()), None)
    problems = []
    if composition is None:
        problems.append(
            Problem(
                "missing-golden",
                f"no golden reference for {plan.skeleton}: write its hand-written composition as "
                f"{places[0] / (plan.skeleton + '.py')} (see {base / 'SK-03.py'}; goldens never re-read the card flow)",
            )
        )
    files = REFERENCE_FILES + SKELETON_REFERENCES.get(plan.skeleton, ())
    atoms = [_strip_header((base / name).read_text(encoding="utf-8")) for name in files]
    for atom, dirs in (user_atoms or {}).items():
        found = next((d / f"{atom}.py" for d in dirs if (d / f"{atom}.py").is_file()), None)
        if found is None:
            where = dirs[0] / f"{atom}.py" if dirs else Path("golden") / f"{atom}.py"
            problems.append(
                Problem(
                    "missing-golden",
                    f"{atom} is not a shipped atom and has no golden reference: write it by hand as {where} "
                    f"(`pattern-gen new-card` writes a stub), or the golden would silently check another atom's math",
                )
            )
            continue
        atoms.append(f"# --- {atom} (the team's own reference: {found.name}) ---\n\n" + _strip_header(found.read_text(encoding="utf-8")))
    if problems:
        raise PatternGenError(problems)
    return "\n\n".join(atoms), _strip_header(composition.read_text(encoding="utf-8"))  # type: ignore[union-attr]


#: Ends the part of a composition file that makes it importable on its own (imports of the
#: per-atom references, placeholders the golden module defines); that part is not rendered.
HEADER_END = "# --- end of header"


def _strip_header(text: str) -> str:
    """Drop a reference file's module docstring, imports and standalone header (the golden
    template has its own)."""
    lines = text.splitlines()
    i = 0
    if lines and lines[0].startswith('"""'):
        i = 1 if lines[0].count('"""') >= 2 else next(j for j in range(1, len(lines)) if '"""' in lines[j]) + 1
    end = next((j for j in range(i, len(lines)) if lines[j].startswith(HEADER_END)), None)
    if end is not None:
        i = end + 1
    body = [line for line in lines[i:] if not line.startswith(("import ", "from "))]
    return "\n".join(body).strip() + "\n"


def render_instance(
    plan: KernelPlan,
    version: str,
    card_files: Mapping[str, str],
    golden_dirs: Sequence[Path] = (),
    user_atoms: Mapping[str, Sequence[Path]] | None = None,
) -> dict[str, str]:
    """``{relative path: content}`` of one instance folder for the plan's target (content without
    the hash header); ``golden_dirs`` are searched for the skeleton's golden composition before
    the package's; ``user_atoms`` maps each of a team's own atoms to the folders of its reference."""
    target = get_target(plan.target)
    env = _env(target)
    kernel = env.get_template("kernel.py.j2").render(k={**_kernel_context(plan, card_files, env.get_template("ops.j2").module), "pypto_version": target.pypto_version})
    atoms_src, composition_src = _golden_source(plan, golden_dirs, user_atoms)
    params = {**plan.params, "atom": plan.atom, "unroll": list(plan.unroll), "platform": plan.platform}
    tolerances = {t.name: _tolerance(t) for t in plan.outputs}
    golden = env.get_template("golden.py.j2").render(
        g={
            "name": plan.name,
            "skeleton": plan.skeleton,
            "constants": wrapped_literal("PARAMS = ", params)
            + wrapped_literal("STAGE_PARAMS = ", plan.stage_params)
            + wrapped_literal("DIMS = ", plan.dims),
            "uses_lru_cache": "lru_cache" in atoms_src + composition_src,
            "atoms_source": atoms_src,
            "composition_source": composition_src,
        }
    )
    test = env.get_template("test.py.j2").render(
        t={
            "name": plan.name,
            "module_id": module_id(plan.name),
            "t_values": test_values(plan.unroll),
            "seeds": list(SEEDS),
            "tolerance_lines": wrapped_literal("TOLERANCES = ", tolerances),
            "command": plan.request.command(),
            "verify_t": verify_T(plan.unroll),
            "skip_reason": _string_pieces(target.cannot_run(plan.platform), len("pytestmark = pytest.mark.skip(reason=)")),
        }
    )
    data = plan.to_json(version)
    data["tolerances"] = tolerances
    data["test_T"] = test_values(plan.unroll)
    return {
        "kernel.py": kernel,
        "golden.py": golden,
        f"test_{module_id(plan.name)}.py": test,
        "instance.json": json.dumps(data, indent=2, sort_keys=False) + "\n",
    }
