"""Lowered task bodies reused across roots of the same shape (issue #31 item 6).

A kernel's loop body records the same ops on new tensors every iteration, so most tasks are a
task of an earlier root on other tensor uids and other boxes of the kernel's arguments. Lowering
(``lower_vec``, ``lower_cube``) asks only two questions of the world outside the task's own ops:
where a box of a tensor lives (``Aliases.resolve``) and its box in the tensor's first shape
(``Aliases.canon``); everything else it reads is in the ops' structure (op names, shapes, dtypes,
tiles, attributes, which tensor feeds which op, seq offsets), the task's row blocks and whether a
result is copied out. A ``Template`` is one lowered body plus the questions it asked, with the
task's tensors numbered by first appearance.

For a task whose structure key matches, the questions are asked again with its own uids (their
arguments depend on the structure only) and the answers substituted into a copy of the body. That
is the body lowering would make exactly when the answers have the same equality pattern (the
lowering's only branches on them: a copy-in done once per block, a block kept in L1) and each
block has one answer (``via_view``/``cacheable``); ``replay`` checks both and returns None
otherwise, and the caller lowers the task itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..record import OpRecord
from .lower import Body, Box, Link, TileOp
from .lower_cube import L1Blocks, lower_cube
from .params import CostParams
from .tasks import Aliases
from .vec_units import lower_unit

__all__ = ["Labels", "Lowering", "Recorder", "Template", "make_template", "replay", "structure"]

Call = tuple[int, int, Box, "tuple[int, ...] | None"]  #: (0 resolve / 1 canon, tensor label, box, shape)


@dataclass
class Labels:
    """The tensors of a task's ops numbered by first appearance, and its first op's seq."""

    uids: list[int]
    index: dict[int, int]
    seq0: int


def structure(ops: Sequence[OpRecord]) -> tuple[Labels, tuple]:
    """The ops' labels and everything of them lowering reads, with uids as labels and seqs relative."""
    index: dict[int, int] = {}
    label = index.setdefault  # label(uid, len(index)): a new uid takes the next number (dicts keep order)
    seq0 = ops[0].seq if ops else 0
    parts = []
    for op in ops:
        ins = tuple([(label(t.uid, len(index)), t.shape, t.dtype) for t in op.inputs])
        out = op.output
        parts.append((op.op, op.seq - seq0, ins,
                      (label(out.uid, len(index)), out.shape, out.dtype) if out is not None else None,
                      op.tile, tuple(sorted(op.cube_tile.items())) if op.cube_tile else None,
                      tuple(sorted([(k, repr(v)) for k, v in op.attrs.items()])) if op.attrs else ()))
    return Labels(list(index), index, seq0), tuple(parts)


class Recorder:
    """A resolver (``Aliases``' interface for lowering) that logs each question and its answer."""

    def __init__(self, aliases: Aliases) -> None:
        self.aliases = aliases
        self.calls: list[tuple[int, int, Box, Any]] = []
        self.answers: list[Any] = []

    def __call__(self, uid: int, box: Box, shape: tuple[int, ...] | None = None) -> tuple[int, Box, bool, bool]:
        res = self.aliases.resolve(uid, box, shape)
        self.calls.append((0, uid, box, shape))
        self.answers.append(res)
        return res

    def canon(self, uid: int, box: Box, shape: tuple[int, ...] | None) -> Box:
        res = self.aliases.canon(uid, box, shape)
        self.calls.append((1, uid, box, shape))
        self.answers.append(res)
        return res


@dataclass
class Template:
    calls: list[Call]
    answers: list[Any]  #: the template's answers (checked against a replay's pattern)
    ops: list[TileOp]
    gm_ops: list[int]  #: indices of ops with a ``gm`` (their blocks are substituted)
    reads: list[tuple[int, Box, bool]]
    writes_uid: list[int]  #: label of each write's tensor (its box: the canon answers in order)
    record_ops: list[int]  #: relative seqs
    extra: Any = None  #: whatever else the caller keeps (a cube task's ``l1.decided``)
    #: per call, the template's block (base, box) of a resolve answer, None for a canon one (made once:
    #: replay compares a replay's blocks with these for every task)
    blocks: list[Any] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.blocks = [(ans[0], ans[1]) if kind == 0 else None for (kind, *_r), ans in zip(self.calls, self.answers)]


def _blocks(calls: Sequence[tuple[int, Any, Any, Any]], answers: Sequence[Any]) -> dict[tuple[int, Box], Any] | None:
    """(base, box) -> the one resolve answer for it; None if a block has two different answers."""
    out: dict[tuple[int, Box], Any] = {}
    for (kind, *_r), ans in zip(calls, answers):
        if kind == 0 and out.setdefault((ans[0], ans[1]), ans) != ans:
            return None
    return out


def make_template(labels: Labels, rec: Recorder, body: Body, extra: Any = None) -> Template | None:
    """The template of ``body``, lowered with ``rec`` for ops labelled ``labels``; None when it
    cannot be replayed (a question about a tensor outside the ops, a write not from a canon answer)."""
    if any(uid not in labels.index for _k, uid, _b, _s in rec.calls) or _blocks(rec.calls, rec.answers) is None:
        return None
    canon = [(uid, ans) for (kind, uid, _b, _s), ans in zip(rec.calls, rec.answers) if kind == 1]
    if canon != list(body.writes):
        return None
    calls = [(kind, labels.index[uid], box, shape) for kind, uid, box, shape in rec.calls]
    return Template(calls, list(rec.answers), list(body.ops), [i for i, op in enumerate(body.ops) if op.gm is not None],
                    list(body.reads), [labels.index[uid] for uid, _b in body.writes],
                    [s - labels.seq0 for s in body.record_ops], extra)


def replay(tpl: Template, labels: Labels, aliases: Aliases) -> Body | None:
    """The body lowering would make for ops labelled ``labels`` of the template's structure, or None
    when the answers do not have the template's equality pattern (then lower the task itself)."""
    uids = labels.uids
    resolve, canon = aliases.resolve, aliases.canon
    new: dict[tuple[int, Box], Any] = {}  # the replay's block -> its one answer
    fwd: dict[tuple[int, Box], tuple[int, Box]] = {}  # template block -> replay block, one to one
    back: dict[tuple[int, Box], tuple[int, Box]] = {}
    boxes = []  # the canon answers, in order: the writes' boxes
    for (kind, lab, box, shape), a in zip(tpl.calls, tpl.blocks):
        if kind == 1:
            boxes.append(canon(uids[lab], box, shape))
            continue
        ans = resolve(uids[lab], box, shape)
        b = (ans[0], ans[1])
        if new.setdefault(b, ans) != ans or fwd.setdefault(a, b) != b or back.setdefault(b, a) != a:
            return None
    ops = list(tpl.ops)
    for i in tpl.gm_ops:
        op = ops[i]
        ans = new[fwd[(op.gm[0], op.gm[1])]]
        ops[i] = TileOp(op.name, op.pipe, op.cycles, op.deps, op.shape, op.nbytes, (ans[0], ans[1], ans[3]))
    reads = []
    for base, box, _v in tpl.reads:
        ans = new[fwd[(base, box)]]
        reads.append((ans[0], ans[1], ans[2]))
    seq0 = labels.seq0
    return Body(ops=ops, reads=reads, writes=[(uids[lab], box) for lab, box in zip(tpl.writes_uid, boxes)],
                record_ops=[s + seq0 for s in tpl.record_ops])


def _links(links: Mapping[int, Link] | None, labels: Labels) -> tuple | None:
    """``links`` (lower_vec's) with labels and relative seqs; None if one names a tensor outside the ops."""
    out = []
    for uid, (res, seq) in (links or {}).items():
        if uid not in labels.index or res not in labels.index:
            return None
        out.append((labels.index[uid], labels.index[res], seq - labels.seq0))
    return tuple(sorted(out))


#: False: lower every task (the full build; tests compare the two)
REPLAY = True


class Lowering:
    """Lowers task bodies, through a template per distinct task structure where one replays."""

    def __init__(self, aliases: Aliases, params: CostParams) -> None:
        self.aliases, self.params = aliases, params
        self.replay = REPLAY
        self.templates: dict[tuple, Template | None] = {}
        self._last: tuple = (None, None, None)  #: (ops, labels, structure): a group's chunks come in a row
        self._vec_base: tuple = (None, None)  #: (ops, the vector key but for the chunk)
        self.replayed = self.lowered = 0

    def _structure(self, ops: Sequence[OpRecord]) -> tuple[Labels, tuple]:
        if self._last[0] is not ops:
            self._last = (ops, *structure(ops))
        return self._last[1], self._last[2]

    def vec(self, ops: Sequence[OpRecord], grid: tuple[int, int, int, int], chunk: Sequence[Any],
            needs_out: Callable[[int], bool], links: Mapping[int, Link] | None) -> Body:
        """The body of the units ``chunk`` (row blocks, or (row block, column tile) pairs: vec_units.py)
        of vector ops ``ops`` (group_tasks.py's merged AIV task)."""
        labels, struct = self._structure(ops)
        if self._vec_base[0] is not ops:  # what the key takes of the group: the same for all its chunks
            rel = _links(links, labels)
            outs = tuple(o.output is not None and needs_out(o.output.uid) for o in ops)
            self._vec_base = (ops, None if rel is None else ("V", struct, grid, outs, rel))
        base = self._vec_base[1]
        key = None if base is None else (*base, tuple(chunk))

        def lower(resolve: Any) -> tuple[Body, Any]:
            body = Body()
            for unit in chunk:
                lower_unit(ops, unit, grid, body, needs_out, resolve, self.params, links)
            return body, None
        return self._body(key, labels, lower)[0]

    def cube(self, ops: Sequence[OpRecord], pairs: Sequence[tuple[int, int]]) -> tuple[Body, bool]:
        """The body of the output tiles ``pairs`` of matmul ``ops[0]`` (a cube group's one op) and
        whether L1 kept a block for reuse."""
        labels, struct = self._structure(ops)
        op = ops[0]

        def lower(resolve: Any) -> tuple[Body, Any]:
            body, l1 = Body(), L1Blocks(self.params.l1_bytes)
            for mi, nj in pairs:
                lower_cube(op, mi, nj, body, l1, resolve, self.params)
            return body, l1.decided
        return self._body(("C", struct, tuple(pairs)), labels, lower)

    def _body(self, key: tuple | None, labels: Labels, lower: Callable[[Any], tuple[Body, Any]]) -> tuple[Body, Any]:
        if not self.replay:
            key = None
        tpl = self.templates.get(key) if key is not None else None
        if tpl is not None:
            body = replay(tpl, labels, self.aliases)
            if body is not None:
                self.replayed += 1
                return body, tpl.extra
        self.lowered += 1
        if key is None or key in self.templates:  # no structure key, no template, or another answer pattern
            return lower(self.aliases)
        rec = Recorder(self.aliases)
        body, extra = lower(rec)
        self.templates[key] = make_template(labels, rec, body, extra)
        return body, extra
