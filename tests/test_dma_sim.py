"""The simulator's meaning of direct global-to-LDS loads, compared with numpy:
`amdgpu.gather_to_lds`, the seed's `iree_gpu.global_load_dma`, IREE 3.12's
`iree_gpu.coalesced_gather_dma`, and NVIDIA's `nvgpu.device_async_copy`."""

from __future__ import annotations

import numpy as np
import pytest

from simtify.errors import SimtifyError
from simtify.ir import parse
from simtify.sim import find_function, random_inputs, run

LDS = "#gpu.address_space<workgroup>"


def launch(threads: int, sg: int = 64) -> str:
    return (f'attributes {{translation_info = #iree_codegen.translation_info<pipeline = '
            f'#iree_gpu.pipeline<VectorDistribute> workgroup_size = [{threads}, 1, 1] subgroup_size = {sg}>}}')


def simulate(text: str, func: str, inputs=None, target="gfx942", seed=0, **kw):
    module = parse(text, "test.mlir")
    args = inputs if inputs is not None else random_inputs(find_function(module, func), seed)
    return run(module, func, {k: np.copy(v) for k, v in args.items()}, target=target, **kw), args


def readback(n_lds: str, out: str, rows: int, cols: int, threads: int) -> str:
    """Every thread copies its share of `lds` to `out` after a barrier (row-major)."""
    per = rows * cols // threads
    return f"""
  gpu.barrier
  %t = gpu.thread_id x
  %cper = arith.constant {per} : index
  %cz = arith.constant 0 : index
  %cone = arith.constant 1 : index
  scf.for %k = %cz to %cper step %cone {{
    %lin = affine.apply affine_map<(d0, d1) -> (d0 * {per} + d1)> (%t, %k)
    %rc:2 = affine.delinearize_index %lin into ({rows}, {cols}) : index, index
    %v = memref.load {n_lds}[%rc#0, %rc#1] : memref<{rows}x{cols}x{{elem}}, {LDS}>
    memref.store %v, {out}[%rc#0, %rc#1] : memref<{rows}x{cols}x{{elem}}>
  }}"""


def seed_16x64_program(op: str = "gather") -> str:
    """The seed's worked example: workgroup 256, subgroup 64, a 16x64xi32 tile; subgroup
    Si owns rows [4i, 4i + 4) and thread Ti loads [j, Ti] of them for j = 0..3."""
    if op == "gather":
        inst = (f"amdgpu.gather_to_lds %src[%r, %lane], %lds[%r, %c0] : i32, memref<16x64xi32>, "
                f"memref<16x64xi32, {LDS}>")
    else:
        inst = f"iree_gpu.global_load_dma %src[%r, %lane] -> %lds[%r, %c0] : memref<16x64xi32> -> memref<16x64xi32, {LDS}>"
    return f"""
func.func @seed(%src: memref<16x64xi32>, %out: memref<16x64xi32>) {launch(256)} {{
  %lds = memref.alloc() : memref<16x64xi32, {LDS}>
  %sg = gpu.subgroup_id : index
  %lane = gpu.lane_id
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %j = %c0 to %c4 step %c1 {{
    %r = affine.apply affine_map<(d0, d1) -> (d0 * 4 + d1)> (%sg, %j)
    {inst}
  }}{readback("%lds", "%out", 16, 64, 256).replace("{elem}", "i32")}
  return
}}
"""


@pytest.mark.parametrize("op", ["gather", "global_load_dma"])
def test_seed_worked_example_16x64xi32(op):
    res, args = simulate(seed_16x64_program(op), "seed", sanitize=True)
    assert not res.findings
    np.testing.assert_array_equal(res.arguments["out"], args["src"])
    s = res.stats_by_op[f"{'amdgpu.gather_to_lds' if op == 'gather' else 'iree_gpu.global_load_dma'}"]
    # 4 subgroups x 4 loads; 64 lanes x 4 bytes each; every byte moved without registers
    assert s["dma_instructions"] == 16 and s["dma_bytes"] == 16 * 64 * 4
    assert s["global_bytes"] == s["shared_bytes"] == s["dma_bytes"]


def test_seed_hip_chunk_memcpy():
    """The seed's HIP `chunk_memcpy`: lane reads global[tid·4 + i], the subgroup writes
    at shared[(subgroup·64)·4 + i], i stepping by the workgroup's 4·threads bytes."""
    size, threads = 4096, 128
    text = f"""
func.func @memcpy(%g: memref<{size}xi8>, %out: memref<{size}xi8>) {launch(threads)} {{
  %s = memref.alloc() : memref<{size}xi8, {LDS}>
  %t = gpu.thread_id x
  %sg = gpu.subgroup_id : index
  %c0 = arith.constant 0 : index
  %cs = arith.constant {size} : index
  %step = arith.constant {threads * 4} : index
  scf.for %i = %c0 to %cs step %step {{
    %ga = affine.apply affine_map<(d0, d1) -> (d0 * 4 + d1)> (%t, %i)
    %sa = affine.apply affine_map<(d0, d1) -> (d0 * 256 + d1)> (%sg, %i)
    amdgpu.gather_to_lds %g[%ga], %s[%sa] : vector<4xi8>, memref<{size}xi8>, memref<{size}xi8, {LDS}>
  }}
  gpu.barrier
  %c1 = arith.constant 1 : index
  %per = arith.constant {size // threads} : index
  scf.for %k = %c0 to %per step %c1 {{
    %a = affine.apply affine_map<(d0, d1) -> (d0 * {size // threads} + d1)> (%t, %k)
    %v = memref.load %s[%a] : memref<{size}xi8, {LDS}>
    memref.store %v, %out[%a] : memref<{size}xi8>
  }}
  return
}}
"""
    res, args = simulate(text, "memcpy", sanitize=True)
    assert not res.findings
    np.testing.assert_array_equal(res.arguments["out"], args["g"])


def one_gather(transfer: str, elem: str, n: int, threads: int = 64, dst_index: str = "%c0",
               src_index: str | None = None) -> str:
    """Lane l gathers `transfer` from src[l·k] (k elements per transfer) into lds[dst]."""
    lanes_src = src_index or "%off"
    return f"""
func.func @one(%src: memref<{n}x{elem}>, %out: memref<{n}x{elem}>) {launch(threads)} {{
  %lds = memref.alloc() : memref<{n}x{elem}, {LDS}>
  %c0 = arith.constant 0 : index
  %lane = gpu.lane_id
  %t = gpu.thread_id x
  %off = affine.apply affine_map<(d0) -> (d0 * {{k}})> (%lane)
  amdgpu.gather_to_lds %src[{lanes_src}], %lds[{dst_index}] : {transfer}, memref<{n}x{elem}>, memref<{n}x{elem}, {LDS}>
  gpu.barrier
  %cn = arith.constant {n} : index
  %c1 = arith.constant 1 : index
  %cth = arith.constant {threads} : index
  scf.for %a = %t to %cn step %cth {{
    %v = memref.load %lds[%a] : memref<{n}x{elem}, {LDS}>
    memref.store %v, %out[%a] : memref<{n}x{elem}>
  }}
  return
}}
"""


@pytest.mark.parametrize("transfer, elem, k, slot, target", [
    ("i8", "i8", 1, 4, "gfx942"),  # a byte per lane, widened to a dword in LDS
    ("vector<2xi8>", "i8", 2, 4, "gfx942"),
    ("f16", "f16", 1, 2, "gfx942"),  # 2 bytes: a dword slot of two f16, the second zero
    ("vector<4xi8>", "i8", 4, 4, "gfx942"),
    ("f32", "f32", 1, 1, "gfx942"),
    ("vector<3xf32>", "f32", 3, 4, "gfx950"),  # 12 bytes padded to 16
    ("vector<8xf16>", "f16", 8, 8, "gfx950"),
])
def test_lane_slots_in_lds(transfer, elem, k, slot, target):
    """Lane l's data lands at slot l (lane order); sub-dword transfers are zero-extended
    to 4 bytes and 12-byte ones padded to 16, as upstream documents global_load_lds."""
    n = 64 * slot
    res, args = simulate(one_gather(transfer, elem, n).replace("{k}", str(k)), "one", target=target)
    src, out = args["src"], res.arguments["out"]
    want = np.zeros(n, dtype=src.dtype)
    for lane in range(64):
        want[lane * slot: lane * slot + k] = src[lane * k: lane * k + k]
    np.testing.assert_array_equal(out, want)
    assert res.stats["dma_bytes"] == 64 * k * src.itemsize
    assert res.stats["dma_instructions"] == 1


@pytest.mark.parametrize("transfer, target, widths", [
    ("vector<4xf32>", "gfx942", "1, 2, 4"),
    ("vector<3xf32>", "gfx942", "1, 2, 4"),
])
def test_width_the_target_lacks_is_an_error(transfer, target, widths):
    text = one_gather(transfer, "f32", 1024).replace("{k}", "4")
    with pytest.raises(SimtifyError, match=f"per lane is not supported on {target} .global_load_lds moves {widths} bytes"):
        simulate(text, "one", target=target)


def test_width_no_target_has_is_a_verifier_error():
    with pytest.raises(SimtifyError, match="a lane transfers 64 bits with vector<2xf32>; global_load_lds moves 8, 16, "
                                           "32, 96 or 128"):
        parse(one_gather("vector<2xf32>", "f32", 1024).replace("{k}", "2"))


def test_gather_to_lds_on_nvidia_is_an_error():
    text = one_gather("f32", "f32", 64).replace("{k}", "1").replace("subgroup_size = 64", "subgroup_size = 32")
    with pytest.raises(SimtifyError, match="AMD's global_load_lds; sm_90 has none"):
        simulate(text, "one", target="sm_90")


def test_non_uniform_destination_is_a_sanitizer_finding():
    text = one_gather("f32", "f32", 64, dst_index="%lane").replace("{k}", "1")
    res, _ = simulate(text, "one", sanitize=True)
    kinds = {f.kind for f in res.findings}
    assert "non-uniform-destination" in kinds
    f = next(f for f in res.findings if f.kind == "non-uniform-destination")
    assert "63 lanes of subgroup 0" in f.detail and f.threads[:3] == (1, 2, 3)


def test_destination_out_of_bounds_is_reported():
    # 64 lanes x 4 bytes from lds[32]: the last 32 slots fall past the 64-element buffer
    text = one_gather("f32", "f32", 64, dst_index="%c32").replace("{k}", "1").replace(
        "%c0 = arith.constant 0 : index", "%c0 = arith.constant 0 : index\n  %c32 = arith.constant 32 : index")
    res, _ = simulate(text, "one", sanitize=True)
    assert any(f.kind == "out-of-bounds" and f.op == "amdgpu.gather_to_lds" for f in res.findings)


def test_source_out_of_bounds_is_reported():
    text = one_gather("f32", "f32", 64).replace("{k}", "2")  # lanes 32.. read past 64 elements
    res, _ = simulate(text, "one", sanitize=True)
    assert any(f.kind == "out-of-bounds" and f.buffer == "src" for f in res.findings)


def test_inactive_lanes_leave_their_slots_alone():
    """Under a divergent scf.if only the active lanes write; their slots keep lane order."""
    text = f"""
func.func @half(%src: memref<64xf32>, %out: memref<64xf32>) {launch(64)} {{
  %lds = memref.alloc() : memref<64xf32, {LDS}>
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %lane = gpu.lane_id
  %zero = arith.constant 0.0 : f32
  memref.store %zero, %lds[%lane] : memref<64xf32, {LDS}>
  gpu.barrier
  %low = arith.cmpi ult, %lane, %c32 : index
  scf.if %low {{
    amdgpu.gather_to_lds %src[%lane], %lds[%c0] : f32, memref<64xf32>, memref<64xf32, {LDS}>
  }}
  gpu.barrier
  %v = memref.load %lds[%lane] : memref<64xf32, {LDS}>
  memref.store %v, %out[%lane] : memref<64xf32>
  return
}}
"""
    res, args = simulate(text, "half", sanitize=True)
    assert not res.findings
    want = np.concatenate([args["src"][:32], np.zeros(32, np.float32)])
    np.testing.assert_array_equal(res.arguments["out"], want)
    assert res.stats_by_op["amdgpu.gather_to_lds"]["dma_bytes"] == 32 * 4


def test_gather_rows_through_an_index_vector():
    """A gather: lane l of load r reads row idx[r] of the source; rows land in order."""
    rows, cols, n = 8, 64, 32
    text = f"""
func.func @gather(%src: memref<{n}x{cols}xf32>, %idx: memref<{rows}xindex>, %out: memref<{rows}x{cols}xf32>) {launch(64)} {{
  %lds = memref.alloc() : memref<{rows}x{cols}xf32, {LDS}>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cr = arith.constant {rows} : index
  %lane = gpu.lane_id
  scf.for %r = %c0 to %cr step %c1 {{
    %row = memref.load %idx[%r] : memref<{rows}xindex>
    amdgpu.gather_to_lds %src[%row, %lane], %lds[%r, %c0] : f32, memref<{n}x{cols}xf32>, memref<{rows}x{cols}xf32, {LDS}>
  }}
  gpu.barrier
  scf.for %r = %c0 to %cr step %c1 {{
    %v = memref.load %lds[%r, %lane] : memref<{rows}x{cols}xf32, {LDS}>
    memref.store %v, %out[%r, %lane] : memref<{rows}x{cols}xf32>
  }}
  return
}}
"""
    module = parse(text)
    args = random_inputs(find_function(module, "gather"), 3)
    args["idx"] = np.random.default_rng(3).permutation(n)[:rows].astype(np.int64)
    res = run(module, "gather", {k: np.copy(v) for k, v in args.items()}, sanitize=True)
    assert not res.findings
    np.testing.assert_array_equal(res.arguments["out"], args["src"][args["idx"]])


@pytest.mark.parametrize("in_bounds", [True, False])
def test_coalesced_gather_dma_with_index_vector(in_bounds):
    """IREE 3.12's op: each subgroup fills its tile with rows idx[r] of the source; a row
    past the source reads zeros where in_bounds is false."""
    rows, cols, n = 4, 64, 16
    ib = " in_bounds [false, true]" if not in_bounds else ""
    text = f"""
func.func @cg(%src: memref<{n}x{cols}xf32>, %out: memref<{2 * rows}x{cols}xf32>) {launch(128)} {{
  %lds = memref.alloc() : memref<{2 * rows}x{cols}xf32, {LDS}>
  %sg = gpu.subgroup_id : index
  %lane = gpu.lane_id
  %base = affine.apply affine_map<(d0) -> (d0 * {rows})> (%sg)
  %tile = memref.subview %lds[%base, 0] [{rows}, {cols}] [1, 1] : memref<{2 * rows}x{cols}xf32, {LDS}> to memref<{rows}x{cols}xf32, strided<[{cols}, 1], offset: ?>, {LDS}>
  %idx = arith.constant dense<[3, 0, {n + 2 if not in_bounds else 7}, 9]> : vector<{rows}xindex>
  iree_gpu.coalesced_gather_dma %src[%idx] into %tile lane(%lane){ib} : memref<{n}x{cols}xf32>, vector<{rows}xindex>, memref<{rows}x{cols}xf32, strided<[{cols}, 1], offset: ?>, {LDS}>, index
  gpu.barrier
  %t = gpu.thread_id x
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cr = arith.constant {2 * rows} : index
  %col = affine.apply affine_map<(d0) -> (d0 mod 64)> (%t)
  %half = affine.apply affine_map<(d0) -> (d0 floordiv 64)> (%t)
  scf.for %r = %c0 to %cr step %c1 {{
    %own = arith.cmpi eq, %half, %c0 : index
    scf.if %own {{
      %v = memref.load %lds[%r, %col] : memref<{2 * rows}x{cols}xf32, {LDS}>
      memref.store %v, %out[%r, %col] : memref<{2 * rows}x{cols}xf32>
    }}
  }}
  return
}}
"""
    res, args = simulate(text, "cg", sanitize=True)
    assert not res.findings
    src = args["src"]
    picked = [3, 0, n + 2 if not in_bounds else 7, 9]
    tile = np.stack([src[i] if i < n else np.zeros(cols, np.float32) for i in picked])
    np.testing.assert_array_equal(res.arguments["out"], np.concatenate([tile, tile]))
    assert res.stats["dma_bytes"] == 2 * rows * cols * 4


def tile_level_program(shape, elem) -> str:
    t = "x".join(map(str, shape))
    return f"""
func.func @tile(%src: memref<{t}x{elem}>, %out: memref<{t}x{elem}>) {{
  %lds = memref.alloc() : memref<{t}x{elem}, {LDS}>
  iree_gpu.global_load_dma %src[] -> %lds[] : memref<{t}x{elem}> -> memref<{t}x{elem}, {LDS}>
  linalg.copy ins(%lds : memref<{t}x{elem}, {LDS}>) outs(%out : memref<{t}x{elem}>)
  return
}}
"""


def test_tile_level_global_load_dma_is_a_block_copy():
    res, args = simulate(tile_level_program((16, 32), "f16"), "tile", block=(1,), level="workgroup")
    np.testing.assert_array_equal(res.arguments["out"], args["src"])
    assert res.stats_by_op["iree_gpu.global_load_dma"]["dma_bytes"] == 16 * 32 * 2


def async_program(wait: str) -> str:
    """sm_90: thread t copies 4 floats with cp.async, then (maybe) waits, then reads."""
    return f"""
func.func @cp(%src: memref<512xf32>, %out: memref<512xf32>) {launch(128, 32)} {{
  %lds = memref.alloc() : memref<512xf32, {LDS}>
  %t = gpu.thread_id x
  %a = affine.apply affine_map<(d0) -> (d0 * 4)> (%t)
  %tok = nvgpu.device_async_copy %src[%a], %lds[%a], 4 : memref<512xf32> to memref<512xf32, {LDS}>
  %g = nvgpu.device_async_create_group %tok
  {wait}
  gpu.barrier
  %r = affine.apply affine_map<(d0) -> (511 - d0 * 4)> (%t)
  %v = memref.load %lds[%r] : memref<512xf32, {LDS}>
  memref.store %v, %out[%r] : memref<512xf32>
  return
}}
"""


def test_async_copy_lands_at_the_wait():
    res, args = simulate(async_program("nvgpu.device_async_wait %g"), "cp", target="sm_90", sanitize=True)
    assert not res.findings
    got, want = res.arguments["out"], args["src"]
    idx = 511 - 4 * np.arange(128)
    np.testing.assert_array_equal(got[idx], want[idx])
    assert res.stats["dma_bytes"] == 2048 and res.stats["dma_instructions"] == 4


def test_async_copy_never_waited_for_is_uninitialised():
    res, _ = simulate(async_program(""), "cp", target="sm_90", sanitize=True)
    assert any(f.kind == "uninitialized-read" for f in res.findings)


def test_async_copy_on_amd_is_an_error():
    text = async_program("nvgpu.device_async_wait %g").replace("subgroup_size = 32", "subgroup_size = 64")
    with pytest.raises(SimtifyError, match="cp.async; gfx942 has none"):
        simulate(text, "cp", target="gfx942")
