"""Which output tiles of one matmul share an AIC task under ``cube_l1_reuse_setting``.

PyPTO 0.2.0 merges N output tiles that share a block of one operand: by default the B (weight)
block, along m; along n (the A block shared) when the matmul has one row tile at compile time too
and its A is read from GM, as many B blocks as fit L1 next to the A block, twice over.
"""

from __future__ import annotations

from ..record import OpRecord
from .lower import nbytes_of
from .params import CostParams
from .rules import Fire

__all__ = ["Units", "l1_reuse_units"]

Units = list[list[tuple[int, int]]]  #: per task, the (m tile, n tile) pairs it computes


def l1_reuse_units(op: OpRecord, grid: tuple[int, int, int, int], l1n: int, side: str, static_a: bool,
                   params: CostParams, fire: Fire) -> tuple[Units, int]:
    """The tasks' output tiles and the merge count kept. ``side`` is the setting's (``right``: the B
    block shared, the default); ``static_a``: one row tile at compile time too (rows not scaled by a
    token-loop unroll) of an A read from GM, not handed on by a vector task of the root."""
    mtiles, ntiles, mt, nt = grid
    if side == "right" and mtiles == 1 and static_a:
        side = "left"  # rule l1-reuse-along-n-static-rows: the n tiles share the A block
        if l1n > 1:
            fire("l1-reuse-along-n-static-rows")
    if side == "left":
        # rule l1-reuse-along-n-fits-l1: [128 or 64, 1024] weight n tiles beside a token row stay tasks
        # of their own, whatever the k step; q·kᵀ's 2 x [64, 64] merge
        k, nb = int(op.attrs.get("k", 1)), nbytes_of(op.inputs[0].dtype) if op.inputs else 2
        while l1n > 1 and 2 * (mt + l1n * nt) * k * nb > params.l1_bytes:
            fire("l1-reuse-along-n-fits-l1")
            l1n //= 2
        return [[(mi, nj) for nj in range(s, min(ntiles, s + l1n))] for mi in range(mtiles)
                for s in range(0, ntiles, l1n)], l1n
    if l1n > 1 and mtiles > 1:
        fire("l1-reuse-along-m")
    return [[(mi, nj) for mi in range(s, min(mtiles, s + l1n))] for s in range(0, mtiles, l1n)
            for nj in range(ntiles)], l1n
