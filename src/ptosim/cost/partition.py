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
from collections.abc import Sequence

from ..record import OpRecord, RunRecord, TensorRef
from .aliases import Aliases
from .lower import vec_grid
from .fired import Fire, ignore
from .vec_units import column_tiling

__all__ = ["chains", "copied_assembles", "copied_views", "group_grid", "reshape_tasks", "unrolled", "vec_groups",
           "vector_results", "view_sources"]


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
    fusion = _Fusion(root_ops, aliases, fire)
    for o in root_ops:
        fusion.visit(o)
    return fusion.groups()


class _Fusion:
    """The state of vec_groups' walk over one root: a union-find over the vector ops' seqs and what
    each tensor holds on the way."""

    def __init__(self, root_ops: list[OpRecord], aliases: Aliases, fire: Fire) -> None:
        self.vops = [o for o in root_ops if o.unit == "V"]
        self.aliases, self.fire = aliases, fire
        self.parent = {o.seq: o.seq for o in self.vops}
        self.grid = {o.seq: vec_grid(o)[:2] for o in self.vops}
        self.cols = {o.seq: column_tiling(o) for o in self.vops}
        self.chain: dict[int, int] = {}  # uid -> seq of the vector op whose result it holds
        self.depth: dict[int, int] = {}  # uid -> matmuls on the way to it within the root
        self.strided: set[int] = set()  # uids of views that take one element of every row of a wider tensor
        self.halves: set[int] = set()  # uids of views of part of the last dim of a vector result of the root
        self.read_of: dict[int, int] = {}  # uid of a one-input vector op on a kernel argument -> the argument's uid
        # ops with no inputs (a full's constant) sit at no matmul depth: they join their first reader
        self.made_from_nothing = {o.seq for o in self.vops if not o.inputs}
        self.sliced: dict[int, int] = {}  # uid of a view of a vector result -> seq of the op that made the result
        self.copied = {o.seq for o in copied_assembles(root_ops)}
        self.first_reader: dict[int, int | None] = dict.fromkeys(_argument_copies(root_ops, aliases))
        # named tensors something in the root reads again (a reshape, a vector op), not only assembles out
        self.reread = {t.uid for x in root_ops if x.op != "assemble" for t in x.inputs}
        self.stitched: set[int] = set()  # uids holding pieces joined that way (and their reshapes, assembles)

    def find(self, x: int) -> int:
        parent = self.parent
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def join(self, a: int, b: int) -> None:
        """Put op ``a``'s task with op ``b``'s."""
        self.parent[self.find(a)] = self.find(b)

    def groups(self) -> list[list[OpRecord]]:
        groups: dict[int, list[OpRecord]] = defaultdict(list)
        for o in self.vops:
            groups[self.find(o.seq)].append(o)
        return sorted(groups.values(), key=lambda g: g[0].seq)

    def visit(self, o: OpRecord) -> None:
        """One op of the root, in program order: join it to its producers' tasks, then track its result."""
        d = 0
        for t in o.inputs:  # the deepest input (a loop: this runs for every op of every root)
            d = max(d, self.depth.get(t.uid, 0))
        alone = o.unit == "V" and self.stands_alone(o)
        if o.unit == "V" and not alone:
            self.join_producers(o, d)
        if o.output is not None:
            self.track(o, o.output, d, alone)

    def stands_alone(self, o: OpRecord) -> bool:
        """A vector op on strided views (RoPE's x1·cos of interleaved pairs), or a product of part of a
        row by a table broadcast over a middle dim (variant A's x1·cos over the heads): a task of its own
        in PyPTO 0.2.0, copying the whole source in (rule strided-view-op-alone)."""
        on_strided = bool(self.strided) and any(t.uid in self.strided for t in o.inputs)
        if on_strided and o.output is not None and o.output.shape and o.output.shape[-1] > 1:
            # a [rows, 1] column broadcast along the rows of a wider operand is a per-row scalar, no
            # strided op (rule column-broadcast-joins: the MoE's expert output times its routing column)
            self.fire("column-broadcast-joins")
            on_strided = False
        alone = on_strided or (bool(self.halves) and _half_times_broadcast(o, self.halves))
        if alone:
            self.fire("strided-view-op-alone")
        return alone

    def join_producers(self, o: OpRecord, d: int) -> None:
        """Join a vector op to the tasks of the vector ops whose results it reads at its stage (or that
        made a constant: rule constant-joins-reader), and to the other readers of an argument copy
        (rule argument-copy-readers-share-task)."""
        chain, depth, grid = self.chain, self.depth, self.grid
        reads = self.argument_reads(o)
        for t in o.inputs:
            p = chain.get(t.uid)
            if (p is not None and t.uid not in reads and _fits(grid[p], grid[o.seq])
                    and (depth[t.uid] == d or p in self.made_from_nothing) and self.same_columns(p, o.seq)):
                if depth[t.uid] != d:
                    self.fire("constant-joins-reader")
                self.join(o.seq, p)
            if t.uid in self.first_reader:
                q = self.first_reader[t.uid]
                if q is None:
                    self.first_reader[t.uid] = o.seq
                elif _fits(grid[q], grid[o.seq]):
                    self.fire("argument-copy-readers-share-task")
                    self.join(o.seq, q)

    def same_columns(self, p: int, q: int) -> bool:
        """Producer ``p`` and consumer ``q`` on one column tiling, or each in one column tile (or one a
        per-row value): else the consumer starts a new task, its column tiles tasks of their own
        (rule vec-task-per-column-tile)."""
        (ca, ta), (cb, tb) = self.cols[p], self.cols[q]
        if (ca, ta) == (cb, tb) or (ca <= ta and cb <= tb) or min(ca, cb) == 1:
            return True
        self.fire("vec-task-per-column-tile")
        return False

    def argument_reads(self, o: OpRecord) -> set[int]:
        """The inputs of an op joining the reads of two kernel arguments (add_residual's x + residual):
        each read (and its cast) stays a task of its own in PyPTO 0.2.0 (rule two-argument-reads-alone)."""
        read_of = self.read_of
        reads = {t.uid for t in o.inputs if t.uid in read_of} if read_of else set()
        if len({read_of[u] for u in reads}) < 2:
            return set()
        if any(t.uid in reads and t.uid in self.chain for t in o.inputs):
            self.fire("two-argument-reads-alone")
        return reads

    def track(self, o: OpRecord, out: TensorRef, d: int, alone: bool) -> None:
        """Record what ``o``'s result is: its stage, the argument it reads, a strided view or part of a
        row, and the vector op whose result it holds (none after an op that stands alone: its
        consumers start the next task)."""
        self.depth[out.uid] = d + (o.unit == "C")
        src = o.inputs[0].uid if o.inputs else None
        if o.unit == "V" and len(o.inputs) == 1 and (arg := self.aliases.argument(src)) is not None:
            self.read_of[out.uid] = arg
        if o.unit == "S" and o.op == "view" and out.shape and o.inputs and o.inputs[0].shape:
            if out.shape[-1] == 1 < o.inputs[0].shape[-1]:
                self.strided.add(out.uid)
            elif out.shape[-1] < o.inputs[0].shape[-1] and src in self.chain:
                self.halves.add(out.uid)
        chain = self.chain
        if alone:
            chain.pop(out.uid, None)
        elif o.unit == "V":
            chain[out.uid] = o.seq
        elif o.unit == "S" and o.op == "view" and src in chain:
            self.sliced[out.uid] = chain.pop(out.uid, chain[src])
        elif o.unit == "S" and o.op == "reshape" and src in self.sliced:
            self.fire("reshaped-slice-joins-producer")
            chain[out.uid] = self.sliced[src]
        elif o.unit == "S" and src in chain and chains(o) and o.seq not in self.copied:
            self.assembled_pieces(o, src, out.uid)
            chain[out.uid] = chain[src]
        else:
            chain.pop(out.uid, None)

    def assembled_pieces(self, o: OpRecord, src: int, dst: int) -> None:
        """Two results assembled into one named tensor in the root: one task in PyPTO 0.2.0 when the root
        reads the tensor again (RoPE's o1 and o2 into the pairs, reshaped; K's halves into k_tmp,
        scattered) or it already holds pieces stitched that way (the rotated pairs and the pass-through
        into the heads); the fused pre-attention's Q halves, only assembled out, stay two (rule
        assembled-pieces-share-task)."""
        chain, depth = self.chain, self.depth
        prev = chain.get(dst) if o.op == "assemble" else None
        if src in self.stitched:
            self.stitched.add(dst)
        if (prev is not None and (dst in self.reread or dst in self.stitched)
                and _fits(self.grid[prev], self.grid[chain[src]]) and depth.get(dst) == depth.get(src)):
            self.fire("assembled-pieces-share-task")
            self.join(chain[src], prev)
            self.stitched.add(dst)


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


def view_sources(root_ops: Sequence[OpRecord]) -> dict[int, int]:
    """Uid of each view the root makes -> the uid it views (what a matmul reading A through a view reads)."""
    return {o.output.uid: o.inputs[0].uid for o in root_ops if o.op == "view" and o.output is not None and o.inputs}


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
    after the reshape. Only a view read in a later root (a nested loop's body) is copied: one the
    same root reads is the reader's operand (single-pass attention's query rows)."""
    read_here = {t.uid for o in root_ops for t in o.inputs}
    return [o for o in root_ops if o.unit == "S" and o.op == "view" and o.inputs and o.output is not None
            and o.inputs[0].uid in reshaped and o.output.uid not in read_here]


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
