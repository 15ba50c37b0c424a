"""Rewriting an XeGPU function piece by piece: the machinery the three distribution
levels (wg-to-sg, blocking, sg-to-lane) share.

Each level cuts every vector value into a grid of pieces, per dim, as its layout's
`DimPlan` says: workgroup→subgroup into the subgroup's round-robin rounds (``R`` pieces
of ``sg_data``), blocking into instruction blocks (``D / inst_data`` pieces), subgroup→lane
into one piece, the lane's fragment. A value maps to its list of pieces (row-major over
the grid — the register order of `simtify.layout.xegpu`), and ops are rewritten one by
one on pieces:

    %w = arith.addf %v, %v : vector<128x128xf16>       // #L: 2 rounds of 32x128
  becomes
    %w0 = arith.addf %v0, %v0 : vector<32x128xf16>
    %w1 = arith.addf %v1, %v1 : vector<32x128xf16>

Ops that map pieces to pieces the same way at every level live in this package (elementwise,
constants, steps and masks, bitcasts, transpose, broadcast, unit-dim shape_cast, reductions within the
pieces, block loads and stores, gathers and scatters (a piece of the rows takes its
piece of the offsets and mask, plus its start in the chunk), matrix loads and stores,
``scf.for`` / ``scf.while`` / ``scf.if``); a level (a subclass of `XeGPULevel`) says
how pieces are placed (`piece_offsets`) and handles what crosses pieces or ids (dpas,
cross-subgroup reductions, layout conversions).

A descriptor is not a piece: it is its memory and its origin (`Descriptor`). Block
descriptors without offsets are made once, where the original was; every access gets
origin + piece offset as its offsets. ``update_nd_offset`` (older IR) only moves the
origin, and a loop or branch carries a descriptor as its origin, one index per dim
(upstream distributes one descriptor per piece instead, and moves each):

    %r:2 = scf.for ... iter_args(%t = %ta, %acc = %c) -> (!xegpu.tensor_desc<16x32xf16>, ...)
      %a = xegpu.load_nd %t ...; %t2 = xegpu.update_nd_offset %t, [0, 32]
  becomes
    %r:3 = scf.for ... iter_args(%i = %c0, %j = %c0, %acc0 = ...) -> (index, index, ...)
      %a0 = xegpu.load_nd %t8x16[%i + .., %j + ..] ...; %j2 = %j + 32

The modules:
    rewriter         `PieceRewriter`: what a level decides (its hooks), values and
                     their pieces, the driver (budget, op by op), elementwise ops
    descriptors      `Descriptor`: a block descriptor's memory and origin
    vector_ops       constants, bitcasts, transpose, broadcast, shape_cast, reductions in pieces
    positional       vector.step, non-splat constants, masks: a fixed piece plus its offset
    control_flow     scf.for / scf.while / scf.if carrying pieces and origins
    block_access     create_nd_tdesc, update_nd_offset, load_nd / store_nd / prefetch_nd
    scattered_access gathers, scatters, prefetches by offsets; shared local memory matrices
    level            `XeGPULevel`: all of the above, what each level subclasses
"""
