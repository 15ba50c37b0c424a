"""`simtify opt --pipeline lower-dma`: tile copies into workgroup memory lowered to
direct global-to-LDS loads (the seed's GPULowerToGlobalLoadsPass, then gather_to_lds),
to cp.async on sm_90, or through registers; every lowering checked by simulation
against its input on random data."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest
from dma_programs import check_lowering, copy_in_program, copy_program, lower
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from iree_oracle import run_iree_opt

from simtify.errors import SimtifyError
from simtify.ir import parse
from simtify.sim import run
from simtify.target import get_target
from simtify.transforms.lower_dma import plan_dma

BYTES = {"i8": 1, "f16": 2, "f32": 4, "i32": 4}


def transfer_types(text: str) -> list[str]:
    return re.findall(r"amdgpu\.gather_to_lds [^:]*: ([^,]+),", text)


# --- the seed's index calculation ---------------------------------------------------------


def test_seed_index_calculation_16x64xi32():
    """Workgroup 256, subgroup 64, 16x64xi32: subgroup Si has the 4x64 slice at row 4i,
    256 words, so 4 loads per thread; thread Ti loads [j, Ti] for j = 0..3."""
    plan = plan_dma((16, 64), 4, 256, 64, get_target("gfx942"))
    assert plan.num_subgroups == 4 and plan.slice_shape == (4, 64)
    assert plan.width_bytes == 4 and plan.num_loads == 4
    for i in range(4):
        assert plan.slice_offset(i) == (4 * i, 0)
    for lane in (0, 1, 17, 63):
        assert [plan.source_index(lane, j) for j in range(4)] == [(j, lane) for j in range(4)]
    assert [plan.dest_index(j) for j in range(4)] == [(j, 0) for j in range(4)]


def test_seed_64x256xi8_example():
    """The seed's IR example: a 64x256xi8 copy; each of 4 subgroups owns 16x256 = 4096
    bytes; 4-byte loads (the widest that lands packed on gfx942) make 16 per lane, 16-byte
    ones on gfx950 make 4."""
    plan = plan_dma((64, 256), 1, 256, 64, get_target("gfx942"))
    assert plan.slice_shape == (16, 256) and plan.width_bytes == 4 and plan.num_loads == 16
    assert plan.source_index(1, 1) == (1, 4)  # lane 1, load 1: byte 4 + 256 of the slice
    assert plan_dma((64, 256), 1, 256, 64, get_target("gfx950")).num_loads == 4
    out, res = check_lowering(copy_program((64, 256), "i8"), "copy", workgroup_size=256)
    assert transfer_types(out) == ["vector<4xi8>"]
    assert res.stats_by_op["amdgpu.gather_to_lds"]["dma_instructions"] == 4 * 16


def test_seed_sixteen_loads_per_thread():
    """The seed's lowering example moves a 1x64xi8 row per thread (64 bytes) with 16
    global_load_lds; here the 128x64xi8 buffer it fills, copied by 128 threads."""
    out, res = check_lowering(copy_program((128, 64), "i8"), "copy", workgroup_size=128)
    per_thread = res.stats_by_op["amdgpu.gather_to_lds"]["dma_instructions"] / (128 // 64)
    assert per_thread == 16
    assert "scf.for" in out and transfer_types(out) == ["vector<4xi8>"]


# --- copies of 1-D to 3-D tiles, several workgroup and subgroup sizes ---------------------

COPIES = [
    # shape, element, workgroup size, subgroup size, target, expected transfer type
    ((4096,), "f32", 256, 64, "gfx942", "f32"),
    ((2048,), "i8", 64, 64, "gfx942", "vector<4xi8>"),
    ((32, 64), "f16", 128, 64, "gfx942", "vector<2xf16>"),
    ((32, 64), "f16", 128, 64, "gfx950", "vector<8xf16>"),
    ((16, 128), "i8", 512, 64, "gfx942", "vector<4xi8>"),
    ((8, 16, 32), "f16", 128, 64, "gfx942", "vector<2xf16>"),
    ((4, 8, 64), "f32", 256, 64, "gfx950", "vector<4xf32>"),
    ((2, 4, 64), "f32", 256, 64, "gfx942", "f32"),  # 2 rows for 4 subgroups: split further in
    ((1, 512), "f32", 128, 64, "gfx950", "vector<4xf32>"),
]


@pytest.mark.parametrize("shape, elem, wg, sg, target, ttype", COPIES)
def test_copy_lowers_to_gather_to_lds(shape, elem, wg, sg, target, ttype):
    out, res = check_lowering(copy_program(shape, elem), "copy", target=target, workgroup_size=wg,
                              subgroup_size=sg)
    assert transfer_types(out) == [ttype]
    s = res.stats_by_op["amdgpu.gather_to_lds"]
    nbytes = int(np.prod(shape)) * BYTES[elem]
    assert s["dma_bytes"] == s["global_bytes"] == s["shared_bytes"] == nbytes


def test_copy_of_a_tile_of_a_larger_buffer():
    out, _ = check_lowering(copy_program((16, 64), "f32", src_shape=(64, 128), offset=(16, 32)), "copy",
                            workgroup_size=256)
    assert "memref.subview %tile" in out


def test_tile_level_global_load_dma_lowers_like_a_tagged_copy():
    text = """
func.func @copy(%src: memref<32x64xf16>, %out: memref<32x64xf16>) {
  %lds = memref.alloc() : memref<32x64xf16, #gpu.address_space<workgroup>>
  iree_gpu.global_load_dma %src[] -> %lds[] : memref<32x64xf16> -> memref<32x64xf16, #gpu.address_space<workgroup>>
  linalg.copy {lowering_config = #iree_gpu.derived_thread_config} ins(%lds : memref<32x64xf16, #gpu.address_space<workgroup>>) outs(%out : memref<32x64xf16>)
  return
}
"""
    out, _ = check_lowering(text, "copy", workgroup_size=128)
    assert transfer_types(out) == ["vector<2xf16>"]


def test_seed_pass_alone_emits_global_load_dma():
    """`--pass lower-to-global-loads` stops at the seed's lane-level global_load_dma (the
    width as a transfer_type), which `--pass lower-global-load-dma` turns into gather_to_lds."""
    mid = lower(copy_program((16, 64), "i32"), "lower-dma", workgroup_size=256)
    from simtify.transforms.pipelines import Options, run_pass

    module = parse(copy_program((16, 64), "i32"))
    run_pass(module, "lower-to-global-loads", Options(workgroup_size=256))
    from simtify.ir import print_module

    text = print_module(module)
    assert "iree_gpu.global_load_dma %" in text and "transfer_type = i32" in text and "gather_to_lds" not in text
    run_pass(module, "lower-global-load-dma", Options(workgroup_size=256))
    assert print_module(module) == mid


@pytest.mark.parametrize("shape, elem, wg", [((32, 64), "f16", 128), ((64, 32), "f32", 256), ((4096,), "i8", 256)])
def test_sm90_lowers_the_same_copy_to_async_copies(shape, elem, wg):
    out, res = check_lowering(copy_program(shape, elem), "copy", target="sm_90", workgroup_size=wg)
    assert "nvgpu.device_async_copy" in out and "nvgpu.device_async_wait" in out and "gather_to_lds" not in out
    assert re.search(r"device_async_copy [^:]*, (\d+) :", out).group(1) == str(16 // BYTES[elem])
    assert res.stats_by_op["nvgpu.device_async_copy"]["dma_bytes"] == int(np.prod(shape)) * BYTES[elem]


def test_derived_thread_config_copy_goes_through_registers():
    out, res = check_lowering(copy_program((5, 3), "f32", config="#iree_gpu.derived_thread_config"), "copy",
                              workgroup_size=64)
    assert "vector.transfer_read" in out and "scf.if" in out  # 15 chunks for 64 threads: guarded
    assert res.stats["dma_bytes"] == 0


def test_auto_falls_back_to_registers():
    text = copy_program((6, 64), "f32")  # 6 rows do not split among 4 subgroups
    with pytest.raises(SimtifyError, match="does not split into 4 equal contiguous slices"):
        lower(text, "lower-dma", workgroup_size=256)
    out, res = check_lowering(text, "copy", "lower-dma-auto", workgroup_size=256)
    assert "gather_to_lds" not in out and res.stats["dma_bytes"] == 0


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rank=st.integers(1, 3), dims=st.lists(st.sampled_from([1, 2, 4, 8, 16, 32, 64]), min_size=3, max_size=3),
       elem=st.sampled_from(["i8", "f16", "f32"]), subgroups=st.sampled_from([1, 2, 4]),
       target=st.sampled_from(["gfx942", "gfx950"]), seed=st.integers(0, 9))
def test_random_copies_agree_with_their_input(rank, dims, elem, subgroups, target, seed):
    shape = tuple(dims[:rank])
    if np.prod(shape) * BYTES[elem] > 32768:
        shape = shape[1:] or (64,)
    wg = 64 * subgroups
    text = copy_program(shape, elem)
    try:
        plan_dma(shape, BYTES[elem], wg, 64, get_target(target))
    except SimtifyError as e:
        with pytest.raises(SimtifyError, match=re.escape(e.what)):
            lower(text, "lower-dma", target=target, workgroup_size=wg)
        check_lowering(text, "copy", "lower-dma-auto", target=target, workgroup_size=wg, seed=seed)
        return
    out, _ = check_lowering(text, "copy", target=target, workgroup_size=wg, seed=seed)
    assert "gather_to_lds" in out


# --- what the DMA path saves: counters against the register path --------------------------


def counters(config: str, shape, elem, wg, target="gfx942"):
    out = lower(copy_in_program(shape, elem, config), "lower-dma", target=target, workgroup_size=wg)
    module = parse(out)
    from simtify.sim import find_function, random_inputs

    res = run(module, "copy_in", random_inputs(find_function(module, "copy_in")), target=target, sanitize=True)
    assert not res.findings
    return res


@pytest.mark.parametrize("shape, elem", [((64, 256), "i8"), ((32, 64), "f32")])
def test_dma_path_against_register_path(shape, elem):
    """Same tile, same LDS bytes; the DMA path's bytes never sit in a register (every
    byte it reads is a DMA byte) and it issues one instruction per 4 bytes and lane."""
    wg = 256
    nbytes = int(np.prod(shape)) * BYTES[elem]
    dma = counters("#iree_gpu.use_global_load_dma", shape, elem, wg)
    reg = counters("#iree_gpu.derived_thread_config", shape, elem, wg)
    d, r = dma.stats_by_op, reg.stats_by_op
    # bytes through registers: what non-DMA ops read or wrote
    register_bytes = lambda by_op: sum(v.get("global_bytes", 0) + v.get("shared_bytes", 0)
                                       for k, v in by_op.items() if not v.get("dma_bytes"))
    assert register_bytes(d) == 0 and register_bytes(r) == 2 * nbytes
    assert dma.stats["shared_bytes"] == reg.stats["shared_bytes"] == nbytes
    assert dma.stats["dma_bytes"] == nbytes and reg.stats["dma_bytes"] == 0
    dma_per_thread = d["amdgpu.gather_to_lds"]["dma_instructions"] / (wg // 64)
    reg_per_thread = 2 * r["vector.transfer_read"]["global_bytes"] / (wg * 16)  # 16-byte loads + stores
    assert dma_per_thread == nbytes / (wg * 4) and reg_per_thread == 2 * nbytes / (wg * 16)


# --- the command line and the reference compiler ------------------------------------------


def test_cli_lowers_and_runs(tmp_path):
    src = tmp_path / "copy.mlir"
    src.write_text(copy_program((64, 256), "i8"))
    out = tmp_path / "lowered.mlir"
    cmd = [sys.executable, "-m", "simtify.cli.main"]
    r = subprocess.run(cmd + ["opt", str(src), "--pipeline", "lower-dma", "--target", "gfx942",
                              "--workgroup-size", "256", "-o", str(out)], check=False, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "amdgpu.gather_to_lds" in out.read_text()
    r = subprocess.run(cmd + ["run", str(out), "--func", "copy", "--arg", "src=random", "--arg", "out=random",
                              "--sanitize", "--stats"], check=False, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "dma_bytes: 16384" in r.stdout


@pytest.mark.iree
@pytest.mark.parametrize("target", ["gfx950", "sm_90"])
def test_lowered_output_parses_in_iree_opt(tmp_path, target):
    f = tmp_path / "out.mlir"
    f.write_text(lower(copy_program((32, 64), "f16"), "lower-dma", target=target, workgroup_size=128))
    r = run_iree_opt([f])
    assert r.returncode == 0, r.stderr


def test_nvgpu_async_copy_syntax():
    """Upstream's syntax as iree-opt 3.12 prints it; the older dictionaries are read too."""
    from simtify.ir import print_module

    text = """func.func @f(%src: memref<128x128xf32>, %dst: memref<16x128xf32, #gpu.address_space<workgroup>>, %i: index) {
  %0 = nvgpu.device_async_copy %src[%i, %i], %dst[%i, %i], 4, %i {bypassL1} : memref<128x128xf32> to memref<16x128xf32, #gpu.address_space<workgroup>>
  %1 = nvgpu.device_async_create_group %0
  nvgpu.device_async_wait %1 {numGroups = 1 : i32}
  return
}
"""
    printed = print_module(parse(text))
    assert "4, %i bypassL1 :" in printed and "nvgpu.device_async_wait %1 numGroups = 1" in printed
    assert print_module(parse(printed)) == printed
    with pytest.raises(SimtifyError, match="cp.async copies 4, 8 or 16 bytes"):
        parse(text.replace("], 4, %i", "], 3, %i"))


def test_refilling_a_buffer_waits_for_its_readers():
    """Two tiles through one LDS buffer: the second copy starts after a barrier, or it
    would overwrite what other threads are still reading."""
    t, lds = "memref<64x64xf32>", "memref<64x64xf32, #gpu.address_space<workgroup>>"
    cfg = "{lowering_config = #iree_gpu.use_global_load_dma}"
    back = "{lowering_config = #iree_gpu.derived_thread_config}"
    text = f"""
func.func @two(%a: {t}, %b: {t}, %oa: {t}, %ob: {t}) {{
  %lds = memref.alloc() : {lds}
  linalg.copy {cfg} ins(%a : {t}) outs(%lds : {lds})
  linalg.copy {back} ins(%lds : {lds}) outs(%oa : {t})
  linalg.copy {cfg} ins(%b : {t}) outs(%lds : {lds})
  linalg.copy {back} ins(%lds : {lds}) outs(%ob : {t})
  return
}}
"""
    out, _ = check_lowering(text, "two", workgroup_size=256)
    second = out.index("gather_to_lds", out.index("gather_to_lds") + 1)
    assert out.rfind("gpu.barrier", 0, second) > out.index("vector.transfer_write")
