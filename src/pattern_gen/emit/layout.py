"""Decisions about the kernel's text that are not spellings: indentation and line layout, which tile
calls a stage needs, and which scalars become named module constants.

render.py builds the stage contexts (data); the functions here decide on them in place; the
templates (``ops.j2``, ``kernel_body.j2``) spell and place the result.
"""

from __future__ import annotations

import re
from typing import Any

from .pytext import COMMENT, LINE, comment_lines, wrapped_call

__all__ = [
    "INDENT",
    "lay_out",
    "drop_repeated_tiles",
    "name_constants",
    "constant_hint",
    "shorten_names",
    "share_casts",
    "hoist_invariants",
]

INDENT = "    "


def lay_out(stages: list[dict[str, Any]], base: int, ops: Any) -> list[dict[str, Any]]:
    """Give each stage header and op its indentation: ``loop``/``if`` open a block, ``else``
    sits at the level of its ``if``, ``end`` closes one (and renders nothing). Each op is spelled
    by its ``ops.j2`` macro, and its note goes after the code where the line stays short, else
    above it, wrapped."""
    depth = base
    for stage in stages:
        stage["pad"] = INDENT * depth
        for op in stage["ops"]:
            if op["kind"] in ("else", "end"):
                depth -= 1
            op["pad"] = INDENT * depth
            if op["kind"] in ("loop", "if", "else"):
                depth += 1
            op["lines"] = wrapped_call(str(getattr(ops, op["macro"])(op)), op["pad"]) if op["kind"] != "end" else []
            note, op["above"] = op["note"], []
            if note and (len(op["pad"] + op["lines"][-1] + "  # " + note) > LINE or len("# " + note) > COMMENT):
                op["note"], op["above"] = "", comment_lines(note)
    return stages


# --- tile calls -------------------------------------------------------------------------------------

_State = dict[str, Any]  # "vec"/"cube" -> the tile shape in force (None: not known here)


def drop_repeated_tiles(*regions: list[dict[str, Any]], loop_region: int = 1) -> None:
    """Drop a stage's tile call where the shape in force already is its shape. ``regions`` are
    the stage lists in kernel order; ``regions[loop_region]`` is the token loop's body.

    The shape in force is followed per kind (vector, cube) through the blocks the ops open, and
    known at a point only when it is the same on every way there, both as the kernel runs and in
    source order: a loop body is entered with the shape before the loop or the one the body left
    (so a body that ends on another shape needs its call at the top again), an ``else`` with the
    shape before the ``if`` or the one its ``if`` branch left, and after a branch or a loop only a
    shape every way agrees on is known."""
    tree: list[Any] = []
    for i, stages in enumerate(regions):
        nodes = _tree(stages)
        tree += [("loop", nodes)] if i == loop_region else nodes
    _walk(tree, {"vec": None, "cube": None}, mark=True)
    for stages in regions:
        for stage in stages:
            if stage.pop("tile_repeated", False):
                stage["tile"] = None


def _tree(stages: list[dict[str, Any]]) -> list[Any]:
    """The tile calls of ``stages`` nested in the loops and branches their ops open."""
    root: list[Any] = []
    stack = [root]
    for stage in stages:
        if stage["tile"]:
            stack[-1].append(("set", stage))
        for op in stage["ops"]:
            if op["kind"] == "loop":
                stack[-1].append(("loop", []))
                stack.append(stack[-1][-1][1])
            elif op["kind"] == "if":
                stack[-1].append(("if", [], []))
                stack.append(stack[-1][-1][1])
            elif op["kind"] == "else" and len(stack) > 1:
                stack.pop()
                stack.append(stack[-1][-1][2])
            elif op["kind"] == "end" and len(stack) > 1:
                stack.pop()
    return root


def _key(tile: dict[str, Any]) -> tuple[Any, ...]:
    if tile["kind"] == "vec":
        return ("vec", tuple(tile["shape"]))
    return ("cube", tuple(tile["m"]), tuple(tile["k"]), tuple(tile["n"]), tile["split_k"])


def _meet(a: _State, b: _State) -> _State:
    return {kind: a[kind] if a[kind] == b[kind] else None for kind in a}


def _walk(nodes: list[Any], state: _State, mark: bool) -> _State:
    state = dict(state)
    for node in nodes:
        if node[0] == "set":
            stage = node[1]
            kind, key = stage["tile"]["kind"], _key(stage["tile"])
            if mark:
                stage["tile_repeated"] = state[kind] == key
            state[kind] = key
        elif node[0] == "loop":
            entry = state
            while True:  # the shapes the body may start with: before the loop, or as the body left them
                nxt = _meet(entry, _walk(node[1], entry, False))
                if nxt == entry:
                    break
                entry = nxt
            _walk(node[1], entry, mark)
            state = entry
        else:
            then_end = _walk(node[1], state, mark)
            else_end = _walk(node[2], _meet(state, then_end), mark)
            state = _meet(then_end, else_end)
    return state


# --- named constants --------------------------------------------------------------------------------

_RECIPROCAL = re.compile(r"1\.0 / ([A-Za-z_]\w*)")


def constant_hint(param: str | None, text: str) -> str | None:
    """The name a scalar argument earns: a card parameter's (``eps`` -> ``EPS``), ``INV_D`` for
    ``1.0 / D``; None for any other number or expression (it stays where it is)."""
    if param:
        return re.sub(r"\W", "_", param).upper()
    m = _RECIPROCAL.fullmatch(text)
    return f"INV_{m.group(1)}" if m else None


def name_constants(stage_lists: list[list[dict[str, Any]]], taken: set[str]) -> list[tuple[str, str]]:
    """Name every hinted scalar argument once, as a module constant: ``(name, value)`` in order of
    first use, the ops' arguments replaced by the names. A name another value already holds gets
    its stage's prefix (``Q_HEAD_NORM_EPS``); ``taken`` are the kernel's other names."""
    names: dict[tuple[str, str], str] = {}
    used = set(taken)
    for stages in stage_lists:
        for stage in stages:
            prefix = re.sub(r"\W", "_", stage["label"].split(".")[0]).upper()
            for op in stage["ops"]:
                for i, hint in op.pop("hints", {}).items():
                    value = op["args"][i]
                    if (hint, value) not in names:
                        name, n = hint, 1
                        while name in used:
                            n += 1
                            name = f"{prefix}_{hint}" if n == 2 else f"{prefix}_{hint}_{n - 1}"
                        names[(hint, value)] = name
                        used.add(name)
                    op["args"][i] = names[(hint, value)]
    return [(name, value) for (_, value), name in names.items()]


# --- local names ------------------------------------------------------------------------------------

#: the op attributes that hold no code (their words are not the kernel's variables)
_NOT_CODE = frozenset({"kind", "macro", "note", "name", "to", "dtype", "out_dtype", "mode", "cond", "hints", "identity"})


def shorten_names(stage_lists: list[list[dict[str, Any]]], taken: set[str]) -> None:
    """Give each inlined atom's variable (``qkv_proj_norm_sq``: its call path, then its own name) the
    shortest tail of its words that no other name of the kernel takes (``sq`` where only one norm
    squares, ``q_norm_sq`` beside ``k_norm_sq``), a valid name that shadows nothing (``taken``:
    Python's and the kernel's reserved names, dims, tensors, constants). Rewrites the ops in place."""
    ops = [op for stages in stage_lists for stage in stages for op in stage["ops"]]
    fixed = set(taken) | {op["index"] for op in ops if op["kind"] == "loop"}
    words: dict[str, list[str]] = {}
    roots: dict[str, str] = {}  # name -> the label root of the stage that made it
    for stage in (stage for stages in stage_lists for stage in stages):
        root = re.sub(r"\W", "_", stage["label"].split(".")[0]) + "_"
        for out in (op["out"] for op in stage["ops"] if op.get("out")):
            if out.startswith(root) and len(out) > len(root) and out not in fixed:  # a name the call path made
                words.setdefault(out, out.split("_"))
                roots.setdefault(out, root)
            else:  # a name the card gave (a skeleton's own, or what a call binds its output to)
                fixed.add(out)
    words = {n: w for n, w in words.items() if n not in fixed}
    size = {n: min(2, len(w) - _call_path_words(n, words, roots)) for n, w in words.items()}
    for _ in range(max((len(w) for w in words.values()), default=0) + 1):
        chosen = {n: "_".join(w[-size[n] :]) for n, w in words.items()}
        count: dict[str, int] = {}
        for short in chosen.values():
            count[short] = count.get(short, 0) + 1
        bad = [n for n, s in chosen.items() if count[s] > 1 or s in fixed or not s.isidentifier() or (s != n and s in words)]
        if not bad:
            break
        for n in bad:
            size[n] = min(size[n] + 1, len(words[n]))
    rename = {n: s for n, s in chosen.items() if s != n} if words else {}
    if not rename:
        return
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, sorted(rename, key=len, reverse=True))) + r")\b")
    for op in ops:
        for key, value in op.items():
            if key in _NOT_CODE:
                continue
            if isinstance(value, str):
                op[key] = pattern.sub(lambda m: rename[m.group(1)], value)
            elif isinstance(value, list) and all(isinstance(v, str) for v in value):
                op[key] = [pattern.sub(lambda m: rename[m.group(1)], v) for v in value]


def _call_path_words(name: str, words: dict[str, list[str]], roots: dict[str, str]) -> int:
    """How many leading words of ``name`` are its call path: its stage's label root and the words
    after it that every name made under that root shares (``attn_softmax`` of
    ``attn_softmax_o_first``), never its last word."""
    w = words[name]
    group = [words[n] for n in words if roots[n] == roots[name]]
    n = len(roots[name].rstrip("_").split("_"))
    while n < len(w) - 1 and all(len(v) > n + 1 and v[n] == w[n] for v in group):
        n += 1
    return n


# --- shared casts, hoisted invariants ---------------------------------------------------------------

#: op family -> the argument it writes into (the kernel's only mutations)
_WRITES = {"assemble": 1, "store": 1, "scatter": 2}
#: the keys of an op context that do not make it another computation
_NOT_COMPUTATION = frozenset({"out", "note", "hints", "pad", "lines", "above"})


def _mutated_roots(ops: list[dict[str, Any]]) -> set[str]:
    """The tensors some op writes into, each traced to the tensor it views (a view or an in-place
    reshape aliases its source; so does a cast to the dtype the value already has)."""
    root: dict[str, str] = {}
    for op in ops:
        if op.get("out") and (op["kind"] in ("view", "reshape") or (op["kind"] == "cast" and op.get("identity"))):
            root[op["out"]] = root.get(op["args"][0], op["args"][0])
    return {root.get(op["args"][i], op["args"][i]) for op in ops for f, i in _WRITES.items() if op["macro"] == f}


def _definitions(ops: list[dict[str, Any]]) -> dict[str, int]:
    count: dict[str, int] = {}
    for op in ops:
        if op.get("out"):
            count[op["out"]] = count.get(op["out"], 0) + 1
    return count


def _replace(ops: list[dict[str, Any]], old: str, new: str) -> None:
    pattern = re.compile(rf"\b{re.escape(old)}\b")
    for op in ops:
        for key, value in op.items():
            if key in _NOT_CODE:
                continue
            if isinstance(value, str):
                op[key] = pattern.sub(new, value)
            elif isinstance(value, list) and all(isinstance(v, str) for v in value):
                op[key] = [pattern.sub(new, v) for v in value]


def share_casts(stage_lists: list[list[dict[str, Any]]]) -> int:
    """One cast of a tensor per target dtype (and mode) where an earlier identical cast is in scope:
    inlined atoms each cast their operands, so two RoPEs of one token cast the same cos twice. The
    later cast goes and its name reads the earlier one's. Only where the source is written by no op
    of the kernel, each name is defined once, and the earlier cast's block encloses the later one
    (the token loop's body and every loop or branch an op opens count as blocks). Returns how many
    casts went."""
    ops = [op for stages in stage_lists for stage in stages for op in stage["ops"]]
    mutated, defined = _mutated_roots(ops), _definitions(ops)
    seen: dict[tuple[Any, ...], tuple[str, tuple[int, ...]]] = {}
    dropped = 0
    block: list[int] = []
    opened = 0
    for n, stages in enumerate(stage_lists):
        if n == 1:  # the token loop's body
            opened += 1
            block = [*block, opened]
        for stage in stages:
            kept = []
            for op in stage["ops"]:
                if op["kind"] in ("else", "end") and len(block) > 1:
                    block = block[:-1]
                if op["kind"] in ("loop", "if", "else"):
                    opened += 1
                    block = [*block, opened]
                key = tuple(sorted((k, str(v)) for k, v in op.items() if k not in _NOT_COMPUTATION))
                earlier = seen.get(key)
                if (
                    op["kind"] == "cast"
                    and not op.get("identity")
                    and op["args"][0] not in mutated
                    and defined.get(op["args"][0], 0) <= 1
                    and defined.get(op["out"]) == 1
                ):
                    if earlier and tuple(block[: len(earlier[1])]) == earlier[1]:
                        _replace(ops, op["out"], earlier[0])
                        dropped += 1
                        continue
                    seen[key] = (op["out"], tuple(block))
                kept.append(op)
            stage["ops"] = kept
        if n == 1:
            block = block[:-1]
    return dropped


def hoist_invariants(stages: list[dict[str, Any]], outside: set[str], loop_names: set[str]) -> list[tuple[str, dict[str, Any]]]:
    """Take out of the token loop's body the in-place reshapes of its top level that are the same on
    every pass: every name they read is defined before the loop (``outside``: the kernel's
    tensors, the prologue's values, T) and written by no op, and they are their name's one
    definition. (Only in-place reshapes: they move no data, so no task of PyPTO's changes; a view
    or a cast out of the loop would change the task graph, which wants measuring first.)
    ``loop_names`` are the loop's index and tile factor. Returns the ops, in order, each with its
    stage's label."""
    ops = [op for stage in stages for op in stage["ops"]]
    mutated, defined = _mutated_roots(ops), _definitions(ops)
    inside = {op["out"] for op in ops if op.get("out")} | set(loop_names) | {op["index"] for op in ops if op["kind"] == "loop"}
    hoisted: list[tuple[str, dict[str, Any]]] = []
    depth = 0
    for stage in stages:
        kept = []
        for op in stage["ops"]:
            if op["kind"] in ("else", "end"):
                depth -= 1
            words = {w for k, v in op.items() if k not in _NOT_CODE | _NOT_COMPUTATION for w in re.findall(r"\b[A-Za-z_]\w*\b", str(v))}
            if (
                depth == 0
                and op["kind"] == "reshape"
                and op.get("inplace")
                and defined.get(op["out"]) == 1
                and not (words - {op["out"]}) & inside
                and all(a in outside and a not in mutated for a in op["args"])
            ):
                hoisted.append((stage["label"], op))
                inside.discard(op["out"])
                outside.add(op["out"])
                continue
            if op["kind"] in ("loop", "if", "else"):
                depth += 1
            kept.append(op)
        stage["ops"] = kept
    return hoisted
