"""`XeGPULevel`: the piece-by-piece rewriter with every op rewrite the three levels
share; wg-to-sg, blocking and sg-to-lane each subclass it, implement the hooks of
`PieceRewriter` and rewrite what crosses pieces or ids (dpas, cross-subgroup
reductions, layout conversions)."""

from __future__ import annotations

from simtify.transforms.xegpu_pieces.block_access import BlockAccess
from simtify.transforms.xegpu_pieces.control_flow import ControlFlow
from simtify.transforms.xegpu_pieces.scattered_access import ScatteredAccess
from simtify.transforms.xegpu_pieces.vector_ops import VectorOps


class XeGPULevel(BlockAccess, ScatteredAccess, ControlFlow, VectorOps):
    """One level's rewrite of a function; `run` does it."""
