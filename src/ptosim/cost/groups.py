"""The groups of a root (the ops that share a task structure) and who reads what they make.

A **group** is a set of vector ops that feed each other on one row-tile grid (partition.py), a
matmul, or a copy task (a copying reshape, a copied view or assemble); graph.py makes them per
root. ``Reads`` says, per tensor, which groups and S ops read it, so a group writes out (COPY_OUT)
only what something outside it reads, and reads from UB what holds its own result (``Link``).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from ..record import OpRecord, TensorRef
from .aliases import Aliases
from .lower import Link
from .partition import chains

__all__ = ["Group", "Held", "OTHER", "Reader", "Reads", "consumer_n"]


@dataclass
class Group:
    gid: int
    root: int
    unit: str  #: "V" or "C"
    ops: list[OpRecord]
    grid: tuple[int, ...]
    hash_order: int = 0
    named: str = ""  #: a label the group takes from elsewhere (a copied view: its reshape's)
    family: tuple[int, int] = (-1, -1)  #: shared by the parts of a vector group split for the UB (one hash group in PyPTO)

    def __post_init__(self) -> None:
        # worked out once (asked per task); the ops of a group do not change once it is made. Plain
        # attributes, not cached_property, whose lock cost ~4 % of a long estimate (Python 3.11)
        self.label: str = self._label()
        self.labels: list[str] = sorted({o.label for o in self.ops if o.label})

    def _label(self) -> str:
        # the label most of its ops carry, the later one on a tie (PyPTO's swimlane: the last block's
        # o update + o / l + cast is "finalize_store", the rescale with o·α is "softmax.rescale")
        if self.named:
            return self.named
        labels = [o.label for o in self.ops if o.label]
        if not labels:
            return ""
        if labels.count(labels[0]) == len(labels):  # one label: most groups
            return labels[0]
        n = Counter(labels)
        return max(reversed(labels), key=lambda lab: n[lab])


def consumer_n(ops: list[OpRecord], root_ops: list[OpRecord]) -> int:
    """The largest N of the matmuls that take the group's results as their A operand (0 if none)."""
    made = {o.output.uid for o in ops if o.output is not None}
    return max((int(o.attrs.get("n", 0)) for o in root_ops
                if o.unit == "C" and any(t.uid in made for t in o.inputs[:1])), default=0)


# --- who reads what -------------------------------------------------------------------------


class Held(NamedTuple):
    """A tensor that holds a group's result (the result itself, or a view or reshape chained to it)."""

    gid: int  #: the group
    result: int  #: uid of the group's result it holds
    after: int  #: seq of the op from which on it holds it


class Reader(NamedTuple):
    """Who reads a tensor: an op of group ``gid``; a reshape that links it to tensor ``link`` (which
    holds the same group result: its readers count); or, with neither, any other S op."""

    gid: int | None = None
    link: int | None = None


#: any S op that reads a tensor and is neither a group's op nor a link through a reshape
#: (``Reads.needs_out`` asks only whether a reader is another group than the asking one)
OTHER = Reader()


class Reads:
    """Per tensor, who reads it (to decide a group's copy-outs), and per group the tensors it reads
    that hold its own result (read from UB: ``Link``)."""

    __slots__ = ("aliases", "links", "readers", "refs")

    def __init__(self, ops: Sequence[OpRecord], groups: Sequence[Group], refs: dict[int, TensorRef], aliases: Aliases) -> None:
        self.refs, self.aliases = refs, aliases
        self.links: dict[int, dict[int, Link]] = defaultdict(dict)  #: gid -> uid read -> the result it holds
        #: uid -> who reads it: one reader kept bare, two or more in a set (most tensors have one)
        self.readers: dict[int, Reader | set[Reader]] = {}
        self._scan(ops, groups)

    def _scan(self, ops: Sequence[OpRecord], groups: Sequence[Group]) -> None:
        """Walk the ops in program order: which tensor holds which group's result, who reads each tensor."""
        member = {o.seq: g.gid for g in groups for o in g.ops}
        as_reader = [Reader(g.gid) for g in groups]
        held: dict[int, Held] = {}  # uid -> the group result it holds
        links, readers = self.links, self.readers
        for op in ops:
            gid = member.get(op.seq)
            who = OTHER
            if gid is not None:  # a vector or cube op of a group (or its copy task)
                who = as_reader[gid]
                for t in op.inputs:
                    h = held.get(t.uid)
                    if h is not None and h.gid == gid:
                        links[gid][t.uid] = Link(h.result, h.after)
                if op.output is not None:
                    held[op.output.uid] = Held(gid, op.output.uid, op.seq)
            elif op.unit == "S" and op.output is not None and op.inputs and op.inputs[0].uid in held and chains(op):
                h = held[op.inputs[0].uid]
                held[op.output.uid] = Held(h.gid, h.result, op.seq)
                if op.op == "reshape" and op.output.uid != op.inputs[0].uid:
                    who = Reader(link=op.output.uid)
            elif op.output is not None:
                held.pop(op.output.uid, None)
            if op.unit == "S" and op.op in ("view", "reshape") and who.link is None:
                who = OTHER
            for t in op.inputs:
                had = readers.get(t.uid, who)
                if had is not who and had != who:
                    if isinstance(had, set):
                        had.add(who)
                    else:
                        readers[t.uid] = {had, who}
                else:
                    readers[t.uid] = had

    def needs_out(self, gid: int) -> Callable[[int], bool]:
        """Whether group ``gid`` writes a result out: it is a kernel argument or buffer, an assemble
        puts it elsewhere, or another group or S op reads it (through a linking reshape, that one's readers)."""
        refs, aliases, readers = self.refs, self.aliases, self.readers

        def check(uid: int, seen: frozenset[int] = frozenset()) -> bool:
            ref = refs.get(uid)
            if ref is not None and ref.kind in ("gm", "buffer"):
                return True
            if uid in aliases.write:
                return True
            ws = readers.get(uid)
            ws = () if ws is None else ws if isinstance(ws, set) else (ws,)
            return any((w.link not in seen and check(w.link, seen | {uid})) if w.link is not None else w.gid != gid
                       for w in ws)
        return check
