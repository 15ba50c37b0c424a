"""Every constraint of direct global-to-LDS loads, violated: an `error:` naming the
reason and exit code 2 (a sanitizer finding, exit 1, where it can only be seen running)."""

from __future__ import annotations

import pytest
from diagnostics import one_error
from dma_programs import LDS, cli, copy_program



def tagged(src_t: str, dst_t: str, *, args: str = "", op: str = "linalg") -> str:
    if op == "linalg":
        copy = (f"linalg.copy {{lowering_config = #iree_gpu.use_global_load_dma}} ins(%src : {src_t}) "
                f"outs(%dst : {dst_t})")
    else:
        copy = f"iree_gpu.global_load_dma %src[] -> %dst[] : {src_t} -> {dst_t}"
    return f"""func.func @f(%src: {src_t}, %dst: {dst_t}{args}) {{
  {copy}
  return
}}
"""


LOWERING_ERRORS = {
    "dynamic dims": (tagged("memref<?x64xf32>", f"memref<?x64xf32, {LDS}>"), {},
                     "the tile ?x64 has dynamic dims: DMA needs a static tile"),
    "padding": (tagged("memref<60x64xf32>", f"memref<64x64xf32, {LDS}>", op="tile"), {},
                "the source tile 60x64 differs from the destination 64x64: DMA cannot pad"),
    "destination not contiguous": (
        tagged("memref<64x64xf32>", f"memref<64x64xf32, strided<[128, 1], offset: 64>, {LDS}>"), {},
        "is not one contiguous row-major block, so a subgroup's slice of it cannot be contiguous"),
    "rows do not split among subgroups": (copy_program((6, 64), "f32"), {"--workgroup-size": "256"},
                                          ("the 6x64 tile does not split into 4 equal contiguous slices, one per "
                                           "subgroup")),
    "innermost dim too short": (copy_program((64, 2), "i8"), {"--workgroup-size": "64"},
                                "4-byte loads need the innermost dim (2) to be a multiple of 4"),
    "slice not whole loads": (copy_program((4, 8), "f32"), {"--workgroup-size": "64"},
                              "4-byte loads need each subgroup's slice (32 elements) to be a multiple of 64 lanes x 1"),
    "elements wider than any width": (copy_program((64, 64), "f64"), {},
                                      "8-byte elements fit none of gfx942's packed global_load_lds widths"),
    "no DMA on the target": (copy_program((64, 64), "f32"), {"--target": "xe", "--workgroup-size": "64"},
                             "xe has no global_load_lds"),
    "cp.async sizes do not divide": (copy_program((5, 3), "f32"), {"--target": "sm_90", "--workgroup-size": "64"},
                                     "the 5x3 tile does not divide into 64 threads' copies of 16 or 8 or 4 bytes"),
    "source not in global memory": (tagged(f"memref<64x64xf32, {LDS}>", f"memref<64x64xf32, {LDS}>"), {},
                                    "the source is in #gpu.address_space<workgroup>, not global memory"),
    "copy on tensors of no memory": ("""func.func @f(%src: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %e = tensor.empty() : tensor<64x64xf32>
  %r = linalg.copy {lowering_config = #iree_gpu.use_global_load_dma} ins(%src : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %r : tensor<64x64xf32>
}
""", {}, "the copy's source tensor is not read from memory (bufferization.to_tensor of a memref"),
    "workgroup not whole subgroups": (copy_program((64, 64), "f32"), {"--workgroup-size": "96"},
                                      "workgroup size 96 is not a whole number of 64-lane subgroups"),
}


@pytest.mark.parametrize("name", sorted(LOWERING_ERRORS))
def test_lowering_errors(name, tmp_path, capsys):
    text, opts, message = LOWERING_ERRORS[name]
    f = tmp_path / "in.mlir"
    f.write_text(text)
    args = ["opt", str(f), "--pipeline", "lower-dma"] + [x for kv in opts.items() for x in kv]
    code, out, err = cli(args, capsys)
    assert code == 2, out + err
    assert message in one_error(err), err


def gather(transfer: str, dst_index: str, elem: str = "f32") -> str:
    return f"""func.func @g(%src: memref<64x64x{elem}>, %out: memref<64x64x{elem}>) attributes {{translation_info = #iree_codegen.translation_info<pipeline = #iree_gpu.pipeline<VectorDistribute> workgroup_size = [64, 1, 1] subgroup_size = 64>}} {{
  %lds = memref.alloc() : memref<64x64x{elem}, {LDS}>
  %lane = gpu.lane_id
  %c0 = arith.constant 0 : index
  %dl = affine.apply affine_map<(d0) -> (d0 floordiv 8)> (%lane)
  amdgpu.gather_to_lds %src[%c0, %lane], %lds[%c0, {dst_index}] : {transfer}, memref<64x64x{elem}>, memref<64x64x{elem}, {LDS}>
  return
}}
"""


def test_width_the_target_lacks_at_run_time(tmp_path, capsys):
    f = tmp_path / "g.mlir"
    f.write_text(gather("vector<4xf32>", "%c0"))
    code, _, err = cli(["run", str(f), "--func", "g", "--arg", "src=random", "--arg", "out=random"], capsys)
    assert code == 2
    assert f"{f}:6:3: error: a 16-byte transfer per lane is not supported on gfx942 (global_load_lds moves 1, 2, 4 " \
           "bytes)" in err
    code, _, _ = cli(["run", str(f), "--func", "g", "--arg", "src=random", "--arg", "out=random",
                      "--target", "gfx950"], capsys)
    assert code == 0  # gfx950 moves 16 bytes


def test_width_no_target_has_is_a_parse_error(tmp_path, capsys):
    f = tmp_path / "g.mlir"
    f.write_text(gather("vector<2xf32>", "%c0"))
    code, _, err = cli(["opt", str(f)], capsys)
    assert code == 2 and "a lane transfers 64 bits with vector<2xf32>" in err


@pytest.mark.parametrize("dst", ["%lane", "%dl"])
def test_non_uniform_destination(dst, tmp_path, capsys):
    """Statically (the lowering pipeline evaluates the index arithmetic per lane) an
    error; running, a sanitizer finding naming the lanes."""
    f = tmp_path / "g.mlir"
    f.write_text(gather("f32", dst))
    code, _, err = cli(["opt", str(f), "--pipeline", "lower-dma"], capsys)
    assert code == 2
    assert "the LDS destination must be uniform across a subgroup, but lanes 0 and " in err
    code, out, _ = cli(["run", str(f), "--func", "g", "--arg", "src=random", "--arg", "out=random"], capsys)
    assert code == 1 and "non-uniform-destination in 'amdgpu.gather_to_lds'" in out


def test_uniform_destination_from_the_subgroup_id_passes(tmp_path, capsys):
    f = tmp_path / "g.mlir"
    f.write_text(gather("f32", "%c0").replace("%dl = affine.apply affine_map<(d0) -> (d0 floordiv 8)> (%lane)",
                                              "%dl = gpu.subgroup_id : index"))
    code, _, err = cli(["opt", str(f), "--pipeline", "lower-dma"], capsys)
    assert code == 0, err
