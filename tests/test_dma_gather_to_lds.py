"""Per-lane gathers written to workgroup memory become `amdgpu.gather_to_lds` (pass
`lower-gather-to-lds`, a step of `lower-dma`): each lowering runs against its input on
random inputs with the sanitizers on, and what gather_to_lds cannot do is refused with
the reason."""

from __future__ import annotations

import re

import pytest
from diagnostics import one_error
from dma_programs import check_lowering, cli, lane_gather_program, lower
from iree_oracle import run_iree_opt

from simtify.errors import SimtifyError
from simtify.ir import parse
from simtify.sim import find_function, random_inputs, run


def transfer_types(text: str) -> list[str]:
    return re.findall(r"amdgpu\.gather_to_lds [^:]*: ([^,]+),", text)


LOWERED = [
    # elements per lane, element, target, op, transfer type
    (1, "f32", "gfx942", "gather", "f32"),
    (1, "i32", "gfx942", "transfer_gather", "i32"),
    (2, "f16", "gfx942", "gather", "vector<2xf16>"),
    (4, "i8", "gfx942", "transfer_gather", "vector<4xi8>"),
    (4, "f32", "gfx950", "gather", "vector<4xf32>"),
    (8, "f16", "gfx950", "transfer_gather", "vector<8xf16>"),
]


def test_a_seed_form_transfer_gather_lowers_as_its_3_12_form_does():
    from simtify.ir import print_module
    from simtify.transforms.transfer_gather_forms import to_seed_form

    module = parse(lane_gather_program(2, "f16", op="transfer_gather"), "g.mlir")
    to_seed_form(module)
    text = print_module(module)
    assert "indexed_maps" in text and "indexing_maps" not in text
    out, _ = check_lowering(text, "g", target="gfx942")
    assert transfer_types(out) == ["vector<2xf16>"] and "transfer_gather" not in out


@pytest.mark.parametrize("n, elem, target, op, ttype", LOWERED)
def test_gather_written_to_lds_becomes_gather_to_lds(n, elem, target, op, ttype):
    text = lane_gather_program(n, elem, op=op)
    out, res = check_lowering(text, "g", target=target)
    assert transfer_types(out) == [ttype]
    assert "vector.gather" not in out and "transfer_gather" not in out
    s = res.stats_by_op["amdgpu.gather_to_lds"]
    nbytes = 256 * n * {"f32": 4, "i32": 4, "f16": 2, "i8": 1}[elem]
    assert s["dma_bytes"] == s["shared_bytes"] == nbytes and s["dma_instructions"] == 4


def test_two_dim_destination_one_row_per_subgroup():
    """Subgroup s writes row s of a 4x64 tile, lane l at column l."""
    lds1, lds2 = "memref<256xf32, #gpu.address_space<workgroup>>", "memref<4x64xf32, #gpu.address_space<workgroup>>"
    text = lane_gather_program(1).replace(
        f"vector.transfer_write %g, %lds[%dst] {{in_bounds = [true]}} : vector<1xf32>, {lds1}",
        f"""%lds2 = memref.alloc() : {lds2}
  %row = gpu.subgroup_id : index
  %col = gpu.lane_id
  vector.transfer_write %g, %lds2[%row, %col] {{in_bounds = [true]}} : vector<1xf32>, {lds2}
  gpu.barrier
  %mine = vector.transfer_read %lds2[%row, %col], %pad {{in_bounds = [true]}} : {lds2}, vector<1xf32>
  vector.transfer_write %mine, %lds[%dst] {{in_bounds = [true]}} : vector<1xf32>, {lds1}""")
    out, _ = check_lowering(text, "g")
    assert "amdgpu.gather_to_lds %flat[" in out and "%lds2[" in out and "affine.delinearize_index" in out


def refusal(text: str, target: str = "gfx942") -> str:
    with pytest.raises(SimtifyError) as e:
        lower(text, "lower-dma", target=target)
    return str(e.value)


def test_non_uniform_destination_is_refused():
    """Thread t writing at (255 - t): lanes go backwards, not side by side from one base."""
    text = lane_gather_program(1, dst="255 - d0")
    assert check_lowering(text, "g", "lower-dma-auto")[0] == lower(text, "lower-dma-auto")  # runs before
    msg = refusal(text)
    assert "lanes 0 and 1 of subgroup 0 write at elements 255 and 254 of the destination" in msg
    assert "one uniform address" in msg


@pytest.mark.parametrize("n, elem, target, message", [
    (4, "f32", "gfx942", "a lane gathers 4 x f32 = 16 bytes, but global_load_lds on gfx942 moves 1, 2, 4 bytes per "
                         "lane"),
    (1, "f16", "gfx942", "a lane gathers 2 bytes, which global_load_lds widens to 4 bytes in LDS"),
    (3, "f32", "gfx950", "a lane gathers 12 bytes, which global_load_lds widens to 16 bytes in LDS"),
    (1, "f32", "sm_90", "sm_90 has no global_load_lds"),
])
def test_transfer_sizes_the_target_lacks_are_refused(n, elem, target, message):
    assert message in refusal(lane_gather_program(n, elem), target)


def test_masked_and_scattered_gathers_are_refused():
    masked = lane_gather_program(1).replace("%true = arith.constant dense<true> : vector<1xi1>",
                                            "%b = arith.cmpi ult, %tid, %raw : index\n"
                                            "  %true = vector.broadcast %b : i1 to vector<1xi1>")
    assert "it is masked: gather_to_lds reads every lane's transfer" in refusal(masked)
    scattered = lane_gather_program(2, "f16").replace(
        "%idx = arith.addi %s, %step : vector<2xindex>",
        "%two = arith.constant dense<2> : vector<2xindex>\n  %twice = arith.muli %step, %two : vector<2xindex>\n"
        "  %idx = arith.addi %s, %twice : vector<2xindex>")
    assert "its 2 indices per lane are not consecutive" in refusal(scattered)


def test_auto_keeps_what_it_cannot_lower():
    text = lane_gather_program(4, "f32")  # 16 bytes: not on gfx942
    out, res = check_lowering(text, "g", "lower-dma-auto")
    assert "vector.gather" in out and "gather_to_lds" not in out and res.stats["dma_bytes"] == 0


def test_workgroup_level_gathers_are_left_for_distribution():
    text = """func.func @w(%src: memref<4096xf32>, %i: vector<64xindex>) {
  %c0 = arith.constant 0 : index
  %lds = memref.alloc() : memref<64xf32, #gpu.address_space<workgroup>>
  %t = arith.constant dense<true> : vector<64xi1>
  %p = arith.constant dense<0.0> : vector<64xf32>
  %g = vector.gather %src[%c0] [%i], %t, %p : memref<4096xf32>, vector<64xindex>, vector<64xi1>, vector<64xf32> into vector<64xf32>
  vector.transfer_write %g, %lds[%c0] {in_bounds = [true]} : vector<64xf32>, memref<64xf32, #gpu.address_space<workgroup>>
  return
}
"""
    assert "vector.gather" in lower(text, "lower-dma")


def test_cli(tmp_path, capsys):
    f = tmp_path / "g.mlir"
    f.write_text(lane_gather_program(4, "f32"))
    out = tmp_path / "out.mlir"
    code, _, err = cli(["opt", str(f), "--pass-pipeline", "builtin.module(lower-gather-to-lds{target=gfx950})",
                        "-o", str(out)], capsys)
    assert code == 0, err
    assert "amdgpu.gather_to_lds" in out.read_text()
    code, text, err = cli(["check", str(f), str(out), "--func", "g", "--target", "gfx950"], capsys)
    assert code == 0 and text.strip().endswith("equal"), text + err
    code, _, err = cli(["opt", str(f), "--pass", "lower-gather-to-lds"], capsys)  # gfx942: 16 bytes is too wide
    line = f.read_text().splitlines().index(next(x for x in f.read_text().splitlines() if "vector.gather" in x)) + 1
    assert code == 2 and f"{f}:{line}:3: error: cannot gather into workgroup memory with gather_to_lds: a lane " \
                          "gathers 4 x f32 = 16 bytes" in one_error(err), err


@pytest.mark.iree
@pytest.mark.parametrize("op", ["gather", "transfer_gather"])
def test_input_and_lowering_parse_in_iree_opt(tmp_path, op):
    text = lane_gather_program(2, "f16", op=op)
    for name, body in (("in.mlir", text), ("out.mlir", lower(text, "lower-dma"))):
        f = tmp_path / name
        f.write_text(body)
        r = run_iree_opt([f])
        assert r.returncode == 0, name + "\n" + r.stderr


def test_out_of_bounds_rows_are_a_bounds_finding_after_the_rewrite():
    """The rewrite assumes in-bounds indices, as the hardware does: a row past the source
    is reported by the simulator's bounds check in the lowered program."""
    text = lane_gather_program(1).replace("(d0 mod 64)", "(d0 mod 64 + 60)")
    module = parse(lower(text, "lower-dma"))
    res = run(module, "g", random_inputs(find_function(module, "g")))
    assert any(f.kind == "out-of-bounds" and f.op == "amdgpu.gather_to_lds" for f in res.findings), res.findings
