"""Which output tiles of one matmul share an AIC task under ``cube_l1_reuse_setting``.

PyPTO 0.2.0 merges N output tiles that share a block of one operand: by default the B (weight)
block, along m; along n (the A block shared) when the matmul has one row tile at compile time too
and its A is read from GM. No L1 limit shows: a token row beside two [128, K] weight n tiles
merges at K = 16384 too.
"""

from __future__ import annotations

from .fired import Fire

__all__ = ["Units", "l1_reuse_units"]

Units = list[list[tuple[int, int]]]  #: per task, the (m tile, n tile) pairs it computes


def l1_reuse_units(grid: tuple[int, int, int, int], l1n: int, side: str, static_a: bool,
                   fire: Fire) -> Units:
    """The tasks' output tiles. ``side`` is the setting's (``right``: the B
    block shared, the default); ``static_a``: one row tile at compile time too (rows not scaled by a
    token-loop unroll) of an A read from GM, not handed on by a vector task of the root."""
    mtiles, ntiles = grid[0], grid[1]
    if side == "right" and mtiles == 1 and static_a:
        side = "left"  # rule l1-reuse-along-n-static-rows: the n tiles share the A block
        if l1n > 1:
            fire("l1-reuse-along-n-static-rows")
    if side == "left":
        return [[(mi, nj) for nj in range(s, min(ntiles, s + l1n))] for mi in range(mtiles)
                for s in range(0, ntiles, l1n)]
    if l1n > 1 and mtiles > 1:
        fire("l1-reuse-along-m")
    return [[(mi, nj) for mi in range(s, min(mtiles, s + l1n))] for s in range(0, mtiles, l1n)
            for nj in range(ntiles)]
