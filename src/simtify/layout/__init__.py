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

Every family answers the same questions with the same signatures (`layout/protocol.py`,
`VectorLayout`): ``ownership(shape, subgroup_size, num_threads)``, ``check_shape``,
``permute``, ``project``, ``insert_dims``, ``reshape``, ``distributed_shape_of``; passes
ask those and never which family they hold.
"""

import importlib

# name -> the module defining it; imported on first use, so that reading one layout
# module (the IR layer reads `layout.syntax`) does not import every family.
_EXPORTS = {
    "Basis": "basis", "layout_from_config": "basis",
    "NestedConversion": "convert", "xegpu_to_nested": "convert",
    "CuteLayout": "cute", "cute_from_ownership": "cute", "parse_cute": "cute",
    "NestedLayout": "nested",
    "OwnershipMap": "ownership",
    "VectorLayout": "protocol",
    "Layout": "parse", "default_subgroup_size": "parse", "ownership_map": "parse", "parse_layout": "parse",
    "parse_shape": "syntax",
    "TritonBlocked": "triton", "TritonDotOperand": "triton", "TritonLinear": "triton", "TritonMfma": "triton",
    "TritonMma": "triton", "TritonSlice": "triton", "nested_to_linear": "triton", "triton_to_nested": "triton",
    "XeGPULayout": "xegpu", "XeGPUSlice": "xegpu",
}


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


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
    "VectorLayout",
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
