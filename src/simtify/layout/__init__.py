"""Layouts: who owns which element of a workgroup-level vector.

Every layout family lowers to one **ownership map**: for a vector shape, a subgroup size
and a thread count, the elements each workgroup-linear thread ``tid`` holds, in register
order (subgroup ``tid // subgroup_size``, lane ``tid % subgroup_size``). Equality,
replication, coverage and conversions are all decided on that map. Triton's layouts
(``#ttg.blocked``, ``#ttg.linear``, ``#ttg.slice``, ``#ttg.nvidia_mma``, ``#ttg.amd_mfma``,
``#ttg.dot_op``) reach it through their linear layouts
over F2 (`layout/triton.py`), a warp being a subgroup. A CuTe layout ``(4,8):(8,1)``
is read as a thread-value layout (`layout/cute.py`): mode 0 the threads, the rest the
values, offsets column-major in the vector shape.

The seed's example: ``vector<64x64xf16>`` with ::

    #iree_vector_ext.nested_layout<subgroup_tile = [2, 1], batch_tile = [2, 4],
        outer_tile = [1, 1], thread_tile = [16, 4], element_tile = [1, 4],
        subgroup_strides = [1, 0], thread_strides = [1, 16]>

Dim 0 is ``2 subgroups × 2 batches × 16 threads × 1``, dim 1 ``4 batches × 4 threads × 4
elements``. Thread ``tid`` has ``t0 = tid % 16``, ``t1 = (tid // 16) % 4`` and subgroup
digit ``s0 = tid // 64``; it holds ``x0 = (s0·2 + b0)·16 + t0`` and
``x1 = (b1·4 + t1)·4 + e1`` for its 2 × 4 × 4 registers, a 2x16 slice: thread 0 holds
rows 0 and 16, columns 0-3, 16-19, 32-35, 48-51; thread 16 the same rows at columns
4-7, 20-23, ...; thread 64 (subgroup 1) rows 32 and 48.
"""

from simtify.layout.basis import Basis, layout_from_config
from simtify.layout.convert import NestedConversion, xegpu_to_nested
from simtify.layout.cute import CuteLayout, cute_from_ownership, parse_cute
from simtify.layout.nested import NestedLayout
from simtify.layout.ownership import OwnershipMap
from simtify.layout.parse import Layout, default_subgroup_size, ownership_map, parse_layout
from simtify.layout.syntax import parse_shape
from simtify.layout.triton import (
    TritonBlocked,
    TritonDotOperand,
    TritonLinear,
    TritonMfma,
    TritonMma,
    TritonSlice,
    nested_to_linear,
    triton_to_nested,
)
from simtify.layout.xegpu import XeGPULayout, XeGPUSlice

__all__ = [
    "Basis",
    "CuteLayout",
    "Layout",
    "NestedConversion",
    "NestedLayout",
    "OwnershipMap",
    "TritonBlocked",
    "TritonDotOperand",
    "TritonLinear",
    "TritonMfma",
    "TritonMma",
    "TritonSlice",
    "XeGPULayout",
    "XeGPUSlice",
    "cute_from_ownership",
    "default_subgroup_size",
    "layout_from_config",
    "nested_to_linear",
    "ownership_map",
    "parse_cute",
    "parse_layout",
    "parse_shape",
    "triton_to_nested",
    "xegpu_to_nested",
]
