"""Which recorded ops PyPTO 0.2.0 puts in one task, and which S ops become tasks of their own.

Each rule is read off PyPTO's swimlanes (a task's operands and the pipe log of its tile ops) for the
generated kernels: vector ops fuse producer -> consumer on one row grid (or on whole blocks of it) at
one cube depth, through named buffers, copying reshapes and reshaped slices, into a shared assembled
tensor the root reads again, and around a shared copy of an argument's view; an op
on a strided view stands alone, as do the reads of two kernel arguments an op joins; some reshapes,
views and assembles are copy tasks. graph.py builds the tasks from these groups.
"""

from __future__ import annotations

from collections import defaultdict

from ..record import OpRecord, RunRecord
from .lower import vec_grid
from .rules import Fire, ignore
from .tasks import Aliases

__all__ = ["vec_groups", "group_grid", "reshape_tasks", "copied_views", "copied_assembles", "unrolled", "chains",
           "vector_results"]


def vec_groups(root_ops: list[OpRecord], aliases: Aliases, fire: Fire = ignore) -> list[list[OpRecord]]:
    """Vector ops of one root joined producer -> consumer when they share a row-tile grid and a stage.

    The stage counts the matmuls on the way to an op: a vector op that needs a matmul's result cannot
    share a task with the ops the matmul waits for, and one that does not goes as early as it can
    (online softmax is rescale with ``o·α``, P·V, then ``+ P·V`` in PyPTO 0.2.0: three tasks). The
    chain runs through a named buffer assembled and read again in the root and through a copying
    reshape (the last block's o update, o / l, reshape and cast are one task), and through a column view
    of a vector result only when it is reshaped (rule reshaped-slice-joins-producer: the fused
    pre-attention's q and k slices of a vector epilogue, reshaped to one row per head for their norms),
    not into a buffer PyPTO copies (a copied assemble). The readers of one copy of a kernel argument's
    view share a task (the K and V cache scatters at a token's slot). ``fire`` records the rules applied."""
    vops = [o for o in root_ops if o.unit == "V"]
    parent = {o.seq: o.seq for o in vops}

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    chain: dict[int, int] = {}  # uid -> seq of the vector op whose result it holds
    depth: dict[int, int] = {}  # uid -> matmuls on the way to it within the root
    strided: set[int] = set()  # uids of views that take one element of every row of a wider tensor
    halves: set[int] = set()  # uids of views of part of the last dim of a vector result of the root
    grid = {o.seq: vec_grid(o)[:2] for o in vops}
    read_of: dict[int, int] = {}  # uid of a one-input vector op on a kernel argument -> the argument's uid
    # ops with no inputs (a full's constant) sit at no matmul depth: they join their first reader
    made_from_nothing = {o.seq for o in vops if not o.inputs}
    sliced: dict[int, int] = {}  # uid of a view of a vector result -> seq of the op that made the result
    copied = {o.seq for o in copied_assembles(root_ops)}
    first_reader: dict[int, int | None] = dict.fromkeys(_argument_copies(root_ops, aliases))
    # named tensors something in the root reads again (a reshape, a vector op), not only assembles out
    reread = {t.uid for x in root_ops if x.op != "assemble" for t in x.inputs}
    stitched: set[int] = set()  # uids holding pieces joined that way (and their reshapes, assembles)
    for o in root_ops:
        d = 0
        for t in o.inputs:  # the deepest input (a loop: this runs for every op of every root)
            d = max(d, depth.get(t.uid, 0))
        # a [rows, 1] column broadcast along the rows of a wider operand is a per-row scalar, no strided
        # op (rule column-broadcast-joins: the MoE's expert output times its routing column)
        on_strided = bool(strided) and any(t.uid in strided for t in o.inputs)
        if on_strided and o.output is not None and o.output.shape and o.output.shape[-1] > 1:
            fire("column-broadcast-joins")
            on_strided = False
        alone = o.unit == "V" and (on_strided or (bool(halves) and _half_times_broadcast(o, halves)))
        if alone:
            fire("strided-view-op-alone")
        if o.unit == "V" and not alone:
            # an op joining the reads of two kernel arguments (add_residual's x + residual) leaves each
            # read (and its cast) a task of its own in PyPTO 0.2.0 (rule two-argument-reads-alone)
            reads = {t.uid for t in o.inputs if t.uid in read_of} if read_of else set()
            if len({read_of[u] for u in reads}) < 2:
                reads = set()
            elif any(t.uid in reads and t.uid in chain for t in o.inputs):
                fire("two-argument-reads-alone")
            for t in o.inputs:
                p = chain.get(t.uid)
                if (p is not None and t.uid not in reads and _fits(grid[p], grid[o.seq])
                        and (depth[t.uid] == d or p in made_from_nothing)):
                    if depth[t.uid] != d:
                        fire("constant-joins-reader")
                    parent[find(o.seq)] = find(p)
                if t.uid in first_reader:  # the readers of one argument copy share a task
                    q = first_reader[t.uid]
                    if q is None:
                        first_reader[t.uid] = o.seq
                    elif _fits(grid[q], grid[o.seq]):
                        fire("argument-copy-readers-share-task")
                        parent[find(o.seq)] = find(q)
        if o.output is None:
            continue
        depth[o.output.uid] = d + (o.unit == "C")
        src = o.inputs[0].uid if o.inputs else None
        if o.unit == "V" and len(o.inputs) == 1 and (arg := aliases.argument(src)) is not None:
            read_of[o.output.uid] = arg
        if o.unit == "S" and o.op == "view" and o.inputs and o.output.shape and o.inputs[0].shape:
            if o.output.shape[-1] == 1 < o.inputs[0].shape[-1]:
                strided.add(o.output.uid)
            elif o.output.shape[-1] < o.inputs[0].shape[-1] and src in chain:
                halves.add(o.output.uid)
        if alone:
            # an op on strided views (RoPE's x1·cos of interleaved pairs), or a product of part of a
            # row by a table broadcast over a middle dim (variant A's x1·cos over the heads), runs as
            # a task of its own in PyPTO 0.2.0, copying the whole source in; its consumers start the
            # next task
            chain.pop(o.output.uid, None)
        elif o.unit == "V":
            chain[o.output.uid] = o.seq
        elif o.unit == "S" and o.op == "view" and src in chain:
            sliced[o.output.uid] = chain.pop(o.output.uid, chain[src])
        elif o.unit == "S" and o.op == "reshape" and src in sliced:
            fire("reshaped-slice-joins-producer")
            chain[o.output.uid] = sliced[src]
        elif o.unit == "S" and src in chain and chains(o) and o.seq not in copied:
            dst = o.output.uid
            prev = chain.get(dst) if o.op == "assemble" else None
            if src in stitched:
                stitched.add(dst)
            if (prev is not None and (dst in reread or dst in stitched) and _fits(grid[prev], grid[chain[src]])
                    and depth.get(dst) == depth.get(src)):
                # two results assembled into one named tensor in the root: one task in PyPTO 0.2.0 when
                # the root reads the tensor again (RoPE's o1 and o2 into the pairs, reshaped; K's halves
                # into k_tmp, scattered) or it already holds pieces stitched that way (the rotated pairs
                # and the pass-through into the heads); the fused pre-attention's Q halves, only
                # assembled out, stay two (rule assembled-pieces-share-task)
                fire("assembled-pieces-share-task")
                parent[find(chain[src])] = find(prev)
                stitched.add(dst)
            chain[o.output.uid] = chain[src]
        else:
            chain.pop(o.output.uid, None)
    groups: dict[int, list[OpRecord]] = defaultdict(list)
    for o in vops:
        groups[find(o.seq)].append(o)
    return sorted(groups.values(), key=lambda g: g[0].seq)


def _argument_copies(root_ops: list[OpRecord], aliases: Aliases) -> list[int]:
    """Uids of copying reshapes of a kernel argument's view (the fused pre-attention's slot_mapping rows
    reshaped to [T, 1]): PyPTO 0.2.0 keeps such a copy in UB and runs its readers (the K and V cache scatters) as
    one task."""
    return [o.output.uid for o in root_ops if o.unit == "S" and o.op == "reshape" and o.output is not None
            and not o.attrs.get("inplace") and o.inputs and aliases.argument(o.inputs[0].uid) is not None]


def _half_times_broadcast(o: OpRecord, halves: set[int]) -> bool:
    """A binary vector op on a view of part of a row and an operand broadcast over a middle dim."""
    if len(o.inputs) < 2 or o.output is None or not any(t.uid in halves for t in o.inputs):
        return False
    out = o.output.shape
    return any(len(t.shape) == len(out) and any(a == 1 < b for a, b in zip(t.shape[:-1], out[:-1]))
               for t in o.inputs)


def _fits(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    """Two vector ops can share tasks: the same row-tile grid, each one row block only, or one grid's
    blocks made of whole blocks of the other (PyPTO 0.2.0 puts two [4, K] RMSNorm tiles and the
    [8, K] activation-quant tile that reads them in one task)."""
    return a == b or (a[0] <= a[1] and b[0] <= b[1]) or (a[0] == b[0] and max(a[1], b[1]) % min(a[1], b[1]) == 0)


def group_grid(ops: list[OpRecord]) -> tuple[int, int]:
    """(rows, rows per task) of a vector group: the coarsest row tile of its ops (finer ones run per
    row sub-block inside the task, see lower_vec)."""
    grids = [vec_grid(o)[:2] for o in ops]
    R = grids[0][0]
    return R, max(tr for r, tr in grids if r == R)


def unrolled(op: OpRecord, record: RunRecord) -> bool:
    """Whether the op sits in a loop_unroll with a factor above 1 (its rows are compiled for a tile
    of several tokens, however few the run has)."""
    return any(max(record.scopes.get(f.scope, {}).get("unroll_list", (1,)) or (1,)) > 1 for f in op.loops)


def vector_results(root_ops: list[OpRecord]) -> set[int]:
    """Uids of the vector results of one root and of the views and reshapes of them: data a vector
    task of the root hands on, not data read from GM (a kernel argument, what an earlier root wrote)."""
    out: set[int] = set()
    for o in root_ops:
        if o.output is None:
            continue
        if o.unit == "V" or (o.unit == "S" and o.op in ("view", "reshape") and o.inputs and o.inputs[0].uid in out):
            out.add(o.output.uid)
    return out


def chains(op: OpRecord) -> bool:
    """An S op through which a vector result stays the same data in UB: an assemble into a named
    buffer, or a reshape of anything but a kernel argument (an in-place reshape of an argument only
    changes how GM is viewed)."""
    if op.op == "assemble":
        return op.output is not None and op.output.kind == "buffer"
    return op.op == "reshape" and not (op.attrs.get("inplace") and op.inputs and op.inputs[0].kind == "gm")


def reshape_tasks(root_ops: list[OpRecord], aliases: Aliases, fire: Fire = ignore) -> list[OpRecord]:
    """Reshapes PyPTO runs as a task of their own (PIPE_S RESHAPE between a copy-in and a copy-out)
    when the vector ops making their source run in more than one row block (a single block does the
    reshape itself: the MLA prolog with unroll 1, or T < 8 with unroll 8) — rule
    reshape-task-of-multi-block-result:

    * one that changes the rank of a vector result which is then assembled or viewed (the MLA
      prolog's [T*NH, D] -> [T, NH, D] head split);
    * a copying reshape of a view of such a result (RoPE's interleaved pairs, [.., R] -> [.., R/2, 2]),
      also of a result made in one block when the root is an unrolled one of several tokens (rule
      reshape-task-in-unrolled-root: the MLA prolog's kv pairs at T=16, unroll 8: one [8, 64] tile).

    A reshape of a GM tensor (a matmul result, a kernel argument) is a view change only (PyPTO's
    zero-cost "fake" task)."""
    made = {o.output.uid: vec_grid(o) for o in root_ops if o.unit == "V" and o.output is not None}
    factor = max((f.factor for f in root_ops[0].loops), default=1) if root_ops else 1
    viewed = {t.uid for o in root_ops if o.unit == "S" and o.op == "view" for t in o.inputs}
    source: dict[int, int] = {}  # a view's uid -> the uid it views
    out = []
    for o in root_ops:
        if o.unit != "S" or not o.inputs or o.output is None:
            continue
        src = o.inputs[0].uid
        if o.op == "view":
            source[o.output.uid] = source.get(src, src)
            continue
        if o.op != "reshape":
            continue
        direct = src in made
        base = src if direct else source.get(src)
        grid = made.get(base) if base is not None else None
        if grid is None or (grid[0] <= grid[1] and (direct or factor == 1)):
            continue
        rank = len(o.output.shape) != len(o.inputs[0].shape)
        if direct and rank and (o.output.uid in aliases.write or (o.output.uid == src and src in viewed)):
            fire("reshape-task-of-multi-block-result")
            out.append(o)
        elif not direct and not o.attrs.get("inplace"):
            fire("reshape-task-in-unrolled-root" if grid[0] <= grid[1] else "reshape-task-of-multi-block-result")
            out.append(o)
    return out


def copied_views(root_ops: list[OpRecord], reshaped: dict[int, str]) -> list[OpRecord]:
    """Views PyPTO 0.2.0 copies in a task of their own (REGISTER_COPY under the vec tile): a view of a
    kernel argument reshaped in place (the online flash attention's query rows, q -> [T*NQ, D]). Its swimlane names the task
    after the reshape."""
    return [o for o in root_ops if o.unit == "S" and o.op == "view" and o.inputs and o.output is not None
            and o.inputs[0].uid in reshaped]


def copied_assembles(root_ops: list[OpRecord]) -> list[OpRecord]:
    """Assembles into a named buffer of data no vector or cube op of the root holds, i.e. the result of a
    copying (not in-place) reshape: the fused pre-attention's v, ``reshape(qkv[:, K+N:], [T, NKV, D])`` or its cast, into
    ``v_tmp``. PyPTO 0.2.0 copies it in tasks of their own, one per index of the source's middle dims
    (two for two KV heads, per token or per four-token root alike), between the matmul and the cache
    write that reads the buffer."""
    held = {o.output.uid for o in root_ops if o.unit in ("V", "C") and o.output is not None}
    out = []
    for o in root_ops:
        if o.unit != "S" or o.output is None or not o.inputs:
            continue
        src = o.inputs[0].uid
        if o.op == "view" and src in held:
            held.add(o.output.uid)
        elif o.op == "reshape" and src in held and o.attrs.get("inplace"):
            held.add(o.output.uid)  # a copying reshape makes data no op holds
        elif o.op == "assemble" and src in held:
            held.add(o.output.uid)  # the buffer holds what was assembled into it
        elif o.op == "assemble" and o.output.kind == "buffer":
            out.append(o)
    return out
