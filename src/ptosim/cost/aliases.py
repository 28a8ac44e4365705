"""Views, reshapes and assembles of the recorded tensors, so a read or a write resolves to the tensor
that holds the data: a view or a reshape is a read alias of its source, an assemble a write alias
(what is written to its source lands in its target)."""

from __future__ import annotations

from collections import defaultdict
from typing import NamedTuple

from ..record import OpRecord, TensorRef
from .lower import Box, row_offset, rows_cols

__all__ = ["Aliases", "ReadAlias", "WriteAlias"]


class ReadAlias(NamedTuple):
    """A view or reshape of ``base``."""

    base: int
    dr: int  #: the view's first row in the base's 2-D view
    dc: int  #: its first column
    exact: bool  #: a view: a box shifts by (dr, dc); a reshape: any box is all of the base


class WriteAlias(NamedTuple):
    """What is written to a tensor lands in ``target`` at (dr, dc) (an assemble)."""

    target: int
    dr: int
    dc: int


class Aliases:
    """Views (read aliases), reshapes and assembles (write aliases) of the recorded tensors."""

    def __init__(self, ops: list[OpRecord], refs: dict[int, TensorRef]) -> None:
        self.read: dict[int, ReadAlias] = {}  #: uid of a view or reshape -> what it views
        self.write: dict[int, list[WriteAlias]] = defaultdict(list)  #: uid -> where assembles put it
        self.refs = refs
        for op in ops:
            if op.unit != "S" or op.output is None or not op.inputs:
                continue
            src, dst = op.inputs[0], op.output
            offs = tuple(op.attrs.get("offsets", ()) or ())
            dc = int(offs[-1]) if offs else 0
            if op.op == "view" and src.uid != dst.uid:
                self.read[dst.uid] = ReadAlias(src.uid, row_offset(offs, src.shape), dc, True)
            elif op.op == "reshape" and src.uid != dst.uid:
                self.read[dst.uid] = ReadAlias(src.uid, 0, 0, False)
            elif op.op == "assemble":
                self.write[src.uid].append(WriteAlias(dst.uid, row_offset(offs, dst.shape), dc))

    def canon(self, uid: int, box: Box, shape: tuple[int, ...] | None) -> Box:
        """``box`` of ``uid`` seen through an in-place reshape (same uid, another 2-D shape) in the
        coordinates of the tensor's first shape: whole rows map by element offset, else the whole tensor."""
        ref = self.refs.get(uid)
        if shape is None or ref is None or shape == ref.shape:  # the common case: no reshape in between
            return box
        (r, c), (R, C) = rows_cols(shape), rows_cols(ref.shape)
        if (r, c) == (R, C):
            return box
        if box[2] == 0 and box[3] >= c and C > 0:
            return (box[0] * c // C, min(R, -(-box[1] * c // C)), 0, C)
        return (0, R, 0, C)

    def __call__(self, uid: int, box: Box, shape: tuple[int, ...] | None = None) -> tuple[int, Box, bool, bool]:
        return self.resolve(uid, box, shape)

    def resolve(self, uid: int, box: Box, shape: tuple[int, ...] | None = None) -> tuple[int, Box, bool, bool]:
        ref = self.refs.get(uid)
        if uid not in self.read and (shape is None or ref is None or shape == ref.shape):
            # the common case: the tensor itself, in its own shape (canon and the alias walk are no-ops)
            return uid, box, False, bool(ref.cacheable) if ref is not None else True
        box = self.canon(uid, box, shape)
        via_view = False
        seen = 0
        while uid in self.read and seen < 16:
            base, dr, dc, exact = self.read[uid]
            if exact:
                box = (box[0] + dr, box[1] + dr, box[2] + dc, box[3] + dc)
                via_view = True
            else:
                r, c = rows_cols(self.refs[base].shape) if base in self.refs else (box[1], box[3])
                box = (0, r, 0, c)
            uid, seen = base, seen + 1
        ref = self.refs.get(uid)
        return uid, box, via_view, bool(ref.cacheable) if ref is not None else True

    def argument(self, uid: int) -> int | None:
        """The kernel argument ``uid`` views or reshapes (through any chain of them), or None."""
        seen = 0
        while uid in self.read and seen < 16:
            uid, seen = self.read[uid][0], seen + 1
        ref = self.refs.get(uid)
        return uid if ref is not None and ref.kind == "gm" else None

    def write_targets(self, uid: int, box: Box) -> list[tuple[int, Box]]:
        """``box`` of ``uid`` and where assembles put it, through nested assembles (a head's rows into
        a named buffer, the buffer into the kernel's output: both hold the data)."""
        out, todo, seen = [(uid, box)], [(uid, box)], {uid}
        while todo:
            u, b = todo.pop()
            for dst, dr, dc in self.write.get(u, ()):
                if dst in seen:
                    continue
                seen.add(dst)
                nb = (b[0] + dr, b[1] + dr, b[2] + dc, b[3] + dc)
                out.append((dst, nb))
                todo.append((dst, nb))
        return out
