"""Programs that copy a tile into workgroup memory, and the check that a lowering of
them computes what the input computes (simulated on the same random inputs)."""

from __future__ import annotations

from math import prod

import numpy as np

from simtify.ir import parse, print_module
from simtify.sim import find_function, random_inputs, run
from simtify.transforms.pipelines import Options, run_pipeline

LDS = "#gpu.address_space<workgroup>"


def shape_text(shape) -> str:
    return "x".join(map(str, shape))


def copy_program(shape, elem: str, config: str = "#iree_gpu.use_global_load_dma", *, src_shape=None,
                 offset=None, readback: str = "#iree_gpu.derived_thread_config") -> str:
    """`@copy`: the `shape` tile of `src` at `offset` (a subview when given) into workgroup
    memory by a copy tagged `config`, then back out to `out` through registers."""
    t = f"memref<{shape_text(shape)}x{elem}>"
    lds = f"memref<{shape_text(shape)}x{elem}, {LDS}>"
    src_shape = src_shape or shape
    st = f"memref<{shape_text(src_shape)}x{elem}>"
    if offset is None:
        tile, tile_t, view = "%src", st, ""
    else:
        strides = [prod(src_shape[i + 1:]) for i in range(len(src_shape))]
        lin = sum(o * s for o, s in zip(offset, strides))
        tile_t = f"memref<{shape_text(shape)}x{elem}, strided<{list(strides)}, offset: {lin}>>"
        view = (f"  %tile = memref.subview %src[{', '.join(map(str, offset))}] [{', '.join(map(str, shape))}] "
                f"[{', '.join('1' for _ in shape)}] : {st} to {tile_t}\n")
        tile = "%tile"
    cfg = f"{{lowering_config = {config}}} " if config else ""
    back = f"{{lowering_config = {readback}}} " if readback else ""
    return f"""
func.func @copy(%src: {st}, %out: {t}) {{
  %lds = memref.alloc() : {lds}
{view}  linalg.copy {cfg}ins({tile} : {tile_t}) outs(%lds : {lds})
  linalg.copy {back}ins(%lds : {lds}) outs(%out : {t})
  return
}}
"""


def lower(text: str, pipeline: str, **opts) -> str:
    module = parse(text, "input.mlir")
    run_pipeline(module, pipeline, Options(**opts))
    return print_module(module)


def check_lowering(text: str, func: str, pipeline: str = "lower-dma", *, seed: int = 0, **opts):
    """Lower `text` with `pipeline`; the input (workgroup level) and the output (SIMT
    level) must write the same values on the same random inputs, with no sanitizer
    finding. Returns (lowered text, result of the lowered run)."""
    ref_module = parse(text, "input.mlir")
    inputs = random_inputs(find_function(ref_module, func), seed)
    ref = run(ref_module, func, {k: v.copy() for k, v in inputs.items()}, block=(1,), level="workgroup")
    out = lower(text, pipeline, **opts)
    new = run(parse(out, "lowered.mlir"), func, {k: v.copy() for k, v in inputs.items()},
              target=opts.get("target", "gfx942"), subgroup_size=opts.get("subgroup_size"))
    assert new.launch.level == "simt"
    assert not new.findings, "\n".join(map(str, new.findings)) + "\n" + out
    for name, want in ref.arguments.items():
        np.testing.assert_array_equal(new.arguments[name], want, err_msg=f"{name}\n{out}")
    return out, new


def copy_in_program(shape, elem: str, config: str) -> str:
    """`@copy_in`: only the copy of `src` into workgroup memory (for counting it alone)."""
    t = f"memref<{shape_text(shape)}x{elem}>"
    lds = f"memref<{shape_text(shape)}x{elem}, {LDS}>"
    return f"""
func.func @copy_in(%src: {t}) {{
  %lds = memref.alloc() : {lds}
  linalg.copy {{lowering_config = {config}}} ins(%src : {t}) outs(%lds : {lds})
  return
}}
"""


def tensor_copy_program(shape, elem: str, config: str = "#iree_gpu.use_global_load_dma", *, src_shape=None,
                        offset=None, op: str = "linalg") -> str:
    """`@copy` on tensors, before bufferization: the `shape` tile of `src` (at `offset`, an
    extract_slice when given) copied into a `tensor.empty` by a copy tagged `config` (or, with
    `op="tile"`, the seed's tile-level global_load_dma), then stored into `out`."""
    tt = f"tensor<{shape_text(shape)}x{elem}>"
    src_shape = src_shape or shape
    st, stt = f"memref<{shape_text(src_shape)}x{elem}>", f"tensor<{shape_text(src_shape)}x{elem}>"
    ot = f"memref<{shape_text(shape)}x{elem}>"
    tile = "%s"
    view = ""
    if offset is not None:
        view = (f"  %tile = tensor.extract_slice %s[{', '.join(map(str, offset))}] [{', '.join(map(str, shape))}] "
                f"[{', '.join('1' for _ in shape)}] : {stt} to {tt}\n")
        tile = "%tile"
    if op == "linalg":
        copy = f"linalg.copy {{lowering_config = {config}}} ins({tile} : {tt}) outs(%e : {tt}) -> {tt}"
    else:
        copy = f"iree_gpu.global_load_dma {tile}[] -> %e[] : {tt}, {tt} -> {tt}"
    return f"""
func.func @copy(%src: {st}, %out: {ot}) {{
  %s = bufferization.to_tensor %src restrict : {st} to {stt}
{view}  %e = tensor.empty() : {tt}
  %c = {copy}
  bufferization.materialize_in_destination %c in restrict writable %out : ({tt}, {ot}) -> ()
  return
}}
"""
