"""Programs that copy a tile into workgroup memory, and the check that a lowering of
them computes what the input computes (simulated on the same random inputs)."""

from __future__ import annotations

from math import prod

import numpy as np

from simtify.cli.main import main
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


def cli(args, capsys) -> tuple[int, str, str]:
    """`simtify ARGS`: (exit code, stdout, stderr)."""
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def lower(text: str, pipeline: str, **opts) -> str:
    module = parse(text, "input.mlir")
    run_pipeline(module, pipeline, Options(**opts))
    return print_module(module)


def check_lowering(text: str, func: str, pipeline: str = "lower-dma", *, seed: int = 0, **opts):
    """Lower `text` with `pipeline`; the input (at its own level: workgroup, or SIMT with
    its translation_info) and the output (SIMT level) must write the same values on the
    same random inputs (never zeros), with no sanitizer finding in either. Returns
    (lowered text, result of the lowered run)."""
    ref_module = parse(text, "input.mlir")
    inputs = random_inputs(find_function(ref_module, func), seed)
    target = opts.get("target", "gfx942")
    simt = "translation_info" in text  # else a workgroup-level program (a tile-level copy reads no thread id)
    level = {"subgroup_size": opts.get("subgroup_size")} if simt else {"block": (1,), "level": "workgroup"}
    ref = run(ref_module, func, {k: v.copy() for k, v in inputs.items()}, target=target, **level)
    assert not ref.findings, "\n".join(map(str, ref.findings))
    out = lower(text, pipeline, **opts)
    new = run(parse(out, "lowered.mlir"), func, {k: v.copy() for k, v in inputs.items()}, target=target,
              subgroup_size=opts.get("subgroup_size"))
    assert new.launch.level == "simt"
    assert not new.findings, "\n".join(map(str, new.findings)) + "\n" + out
    for name, want in ref.arguments.items():
        assert name not in ref.outputs or not np.array_equal(inputs[name], want), f"{name} was not written"
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


def translation_info(threads: int, subgroup: int) -> str:
    return (f"attributes {{translation_info = #iree_codegen.translation_info<pipeline = "
            f"#iree_gpu.pipeline<VectorDistribute> workgroup_size = [{threads}, 1, 1] subgroup_size = {subgroup}>}}")


def lane_gather_program(n: int, elem: str = "f32", *, threads: int = 256, subgroup: int = 64, op: str = "gather",
                        dst: str | None = None, rows: int = 64) -> str:
    """`@g`, a SIMT program: every thread gathers `n` consecutive `elem`s of `src` (a
    `rows`x`rows * n` memref) at a row it loads from `rows_of`, writes them to workgroup
    memory at `dst`, an expression of thread id d0 (default: t·n, lane after lane), and after a barrier
    thread t copies out what thread (threads - 1 - t) gathered. `op`: ``gather``
    (vector.gather of ``vector.step`` + the row's start) or ``transfer_gather`` (IREE 3.12,
    the row from a 0-d index vector)."""
    cols = 8 * n
    lds = f"memref<{threads * n}x{elem}, {LDS}>"
    src_t = f"memref<{rows}x{cols}x{elem}>"
    vt = f"vector<{n}x{elem}>"
    zero = "0.0" if elem.startswith(("f", "bf")) else "0"
    if op == "gather":
        read = f"""  %start = affine.apply affine_map<(d0) -> (d0 * {cols})>(%r)
  %flat = memref.collapse_shape %src [[0, 1]] : {src_t} into memref<{rows * cols}x{elem}>
  %s = vector.broadcast %start : index to vector<{n}xindex>
  %step = vector.step : vector<{n}xindex>
  %idx = arith.addi %s, %step : vector<{n}xindex>
  %true = arith.constant dense<true> : vector<{n}xi1>
  %pass = arith.constant dense<{zero}> : {vt}
  %g = vector.gather %flat[%c0] [%idx], %true, %pass : memref<{rows * cols}x{elem}>, vector<{n}xindex>, vector<{n}xi1>, {vt} into {vt}
"""
    else:
        read = f"""  %ri = vector.broadcast %r : index to vector<index>
  %g = iree_vector_ext.transfer_gather %src[%c0, %c0] [%ri : vector<index>], %pad {{indexing_maps = [affine_map<(d0)[s0] -> (s0, d0)>, affine_map<(d0)[s0] -> ()>]}} : {src_t}, {vt}
"""
    return f"""
func.func @g(%src: {src_t}, %rows_of: memref<{threads}xindex>, %out: memref<{threads * n}x{elem}>) {translation_info(threads, subgroup)} {{
  %c0 = arith.constant 0 : index
  %pad = arith.constant {zero} : {elem}
  %lds = memref.alloc() : {lds}
  %tid = gpu.thread_id x
  %tid_n = affine.apply affine_map<(d0) -> (d0 * {n})>(%tid)
  %dst = affine.apply affine_map<(d0) -> ({dst or f"d0 * {n}"})>(%tid)
  %raw = memref.load %rows_of[%tid] : memref<{threads}xindex>
  %r = affine.apply affine_map<(d0) -> (d0 mod {rows})>(%raw)
{read}  vector.transfer_write %g, %lds[%dst] {{in_bounds = [true]}} : {vt}, {lds}
  gpu.barrier
  %other = affine.apply affine_map<(d0) -> ({threads - 1} - d0)>(%tid)
  %back = affine.apply affine_map<(d0) -> ({dst or f"d0 * {n}"})>(%other)
  %v = vector.transfer_read %lds[%back], %pad {{in_bounds = [true]}} : {lds}, {vt}
  vector.transfer_write %v, %out[%tid_n] {{in_bounds = [true]}} : {vt}, memref<{threads * n}x{elem}>
  return
}}
"""
