"""`XeGPULevel`: the piece-by-piece rewriter with every op rewrite the three levels
share; wg-to-sg, blocking and sg-to-lane each subclass it, implement the hooks of
`PieceRewriter` and rewrite what crosses pieces or ids (dpas, cross-subgroup
reductions, layout conversions)."""

from __future__ import annotations

from xdsl.ir import SSAValue

from simtify.layout.xegpu import Layout, flatten
from simtify.transforms.xegpu_pieces.block_access import BlockAccess
from simtify.transforms.xegpu_pieces.control_flow import ControlFlow
from simtify.transforms.xegpu_pieces.positional import PositionalOps
from simtify.transforms.xegpu_pieces.scattered_access import ScatteredAccess
from simtify.transforms.xegpu_pieces.vector_ops import VectorOps


class XeGPULevel(BlockAccess, ScatteredAccess, ControlFlow, VectorOps, PositionalOps):
    """One level's rewrite of a function; `run` does it."""

    def id_digits(self, layout: Layout, grid_field: str, id_value, cache: dict) -> list[SSAValue | None]:
        """Per base dim, the digit of the id `id_value()` gives (a subgroup's or a lane's)
        in `layout`'s `grid_field` grid (``sg_layout``, ``lane_layout``), taken apart
        in the prelude once per grid and order (None: a dim of one position)."""
        base, _ = flatten(layout)
        grid = getattr(base, grid_field)
        if grid is None:
            return [None] * (base.rank or 0)
        order = base.order if base.order is not None else tuple(range(base.rank - 1, -1, -1))
        key = (grid, order)
        if key not in cache:
            whole = id_value()
            moving = [d for d in reversed(order) if grid[d] > 1]  # slowest first
            out: list[SSAValue | None] = [None] * base.rank
            if moving:
                for d, r in zip(moving, self.prelude.delinearize(whole, [grid[d] for d in moving])[1:]):
                    out[d] = r
            cache[key] = out
        return cache[key]
