"""`simtify config explain`: the seed's worked example reproduced number by number,
expand_dims applied or ignored, operand layouts, and IREE's own layouts as an oracle."""

from __future__ import annotations

import json
import re
from pathlib import Path
from math import prod

import pytest
from iree_oracle import run_iree_opt

from simtify.cli.main import main
from simtify.layout import Basis
from simtify.layout.reduction_config import (
    ExpandDims,
    ReductionConfig,
    fold_expansion,
    plan_reduction,
)

SEED = ("#iree_gpu.lowering_config<{expand_dims = #iree_gpu.expand_dims<[[0], [1], [2, 3]], "
        "output_shape = [?, ?, ?, 8]>, lane_basis = [[1, 1, 64, 1], [0, 1, 2, 3]], "
        "partial_reduction = [0, 0, 64, 0], subgroup_basis = [[1, 1, 1, 1], [0, 1, 2, 3]], "
        "thread = [0, 0, 1, 8], workgroup = [4, 1, 0, 0]}>")
SEED_ARGS = ["config", "explain", "--iteration-space", "4x6656x16384", "--reduction-dims", "2", "--dtype", "f16",
             "--target", "gfx942", "--config", SEED]
KEYS = ["expanded_iteration_space", "workgroup_count", "threads_per_workgroup", "subgroups_per_workgroup",
        "reduction_loop_trip_count", "outputs_per_workgroup", "elements_per_subgroup_per_iteration",
        "accumulator_per_output", "load_width_bits", "operand_layouts"]


def cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def nested(sg, b, t, e, ss, ts, o=None) -> str:
    o = o or [1] * len(sg)
    f = lambda v: "[" + ", ".join(map(str, v)) + "]"
    return (f"#iree_vector_ext.nested_layout<subgroup_tile = {f(sg)}, batch_tile = {f(b)}, outer_tile = {f(o)}, "
            f"thread_tile = {f(t)}, element_tile = {f(e)}, subgroup_strides = {f(ss)}, thread_strides = {f(ts)}>")


def test_seed_worked_example_json(capsys):
    code, out, err = cli(capsys, *SEED_ARGS, "--json")
    assert code == 0 and err == ""
    info = json.loads(out)
    assert all(k in info for k in KEYS)
    # "Expanded: [d0=parallel(4), d1=parallel(6656), d2=reduction(2048), d3=reduction(8)]"
    assert info["expanded_iteration_space"] == [4, 6656, 2048, 8]
    assert info["expanded_reduction_dims"] == [2, 3] and info["expand_dims_applied"] is True
    # "2048 / 64 = 32 outer loop iterations"; d3 "fully processed within each iteration"
    assert info["reduction_loop_trip_count"] == 32 and info["reduction_trip_counts"] == [32, 1]
    # "a single 64-thread subgroup per workgroup"
    assert info["threads_per_workgroup"] == 64 and info["subgroups_per_workgroup"] == 1
    # "the subgroup collectively processes 64 * 8 = 512 elements of the original reduction dimension"
    assert info["elements_per_subgroup_per_iteration"] == 512
    # The seed contradicts itself: its Purpose paragraph says the split lets each thread
    # "reduce per inner chunk (e.g., vector<1xf16>)", its worked example says "each thread
    # maintains a vector<8> partial accumulator". IREE's partial-reduction tiling carries
    # only the reduction dims it tiles (d2 here; d3 has partial_reduction 0 and is folded
    # in every iteration), so the loop carries one register per output: vector<1>.
    assert info["accumulator_per_output"] == [1] and info["folded_dims"] == [3]
    # "The workgroup produces a 4x1 output tile": 4 outputs, 6656 / 1 x 4 / 4 workgroups
    assert info["outputs_per_workgroup"] == 4
    assert info["workgroup_counts"] == [1, 6656] and info["workgroup_count"] == 6656
    # 8 x f16 per load instruction
    assert info["load_width_bits"] == 128 and info["loads_per_thread_per_iteration"] == 4
    # the seed's "Tip" (partial_reduction x thread = 64 x 1) ignores the 64 lanes: 8 per output
    assert info["elements_per_thread_per_output_per_iteration"] == 8
    assert info["masked_dims"] == []
    lay = nested([1, 1, 1, 1], [4, 1, 1, 1], [1, 1, 64, 1], [1, 1, 1, 8], [0, 0, 0, 0], [0, 0, 1, 0])
    acc = nested([1, 1, 1, 1], [4, 1, 1, 1], [1, 1, 64, 1], [1, 1, 1, 1], [0, 0, 0, 0], [0, 0, 1, 0])
    assert info["accumulator_layout"] == acc
    assert info["operand_layouts"] == {"input": lay, "output": nested([1, 1], [4, 1], [1, 1], [1, 1], [0, 0], [0, 0])}


def test_seed_worked_example_text(capsys):
    code, out, err = cli(capsys, *SEED_ARGS)
    assert code == 0 and err == ""
    assert "expanded iteration space [4, 6656, 2048, 8]" in out
    assert "workgroups: 6656 (1 x 6656), each producing 4 outputs" in out
    assert "threads per workgroup: 64 = 1 subgroup x 64 lanes" in out
    assert "reduction loop: 32 iterations (d2: 2048 / 64, d3: 8 / 8)" in out
    assert "a subgroup consumes 512 reduction elements per output" in out
    assert "of 128 bits" in out
    assert "accumulator: vector<1> per output per thread" in out
    assert re.search(r"^\s+input\s+#iree_vector_ext.nested_layout<", out, re.MULTILINE)


def test_same_numbers_from_python():
    cfg = ReductionConfig((4, 1, 0, 0), (0, 0, 64, 0), (0, 0, 1, 8), Basis((1, 1, 64, 1), (0, 1, 2, 3)),
                          Basis((1, 1, 1, 1), (0, 1, 2, 3)), ExpandDims(((0,), (1,), (2, 3)), (None, None, None, 8)))
    plan = plan_reduction(cfg, (4, 6656, 16384), [2], subgroup_size=64)
    assert plan.sizes == (4, 6656, 2048, 8) and plan.trip_count == 32 and plan.workgroup_count == 6656
    assert plan.elements_per_subgroup_per_iteration == 512 and plan.accumulator_per_output == (1,)
    assert plan.folded_dims == (3,) and plan.accumulator_tile == (4, 1, 64, 1)
    assert plan.load_width_bits((0, 1, 2), 16) == 128


def test_expand_dims_ignored_folds_the_config(capsys):
    """16383 is no multiple of 8: the expansion is ignored and the config folded onto d2
    (512-element chunks, 8 per thread, 64 lanes): 32 iterations, the last one masked."""
    code, out, err = cli(capsys, *[a if a != "4x6656x16384" else "4x6656x16383" for a in SEED_ARGS], "--json")
    assert code == 0, err
    info = json.loads(out)
    assert info["expand_dims_applied"] is False and "16383 is not a multiple of 8" in info["expand_dims_note"]
    assert info["expanded_iteration_space"] == [4, 6656, 16383]
    assert info["effective_config"] == ("#iree_gpu.lowering_config<{lane_basis = [[1, 1, 64], [0, 1, 2]], "
                                        "partial_reduction = [0, 0, 512], subgroup_basis = [[1, 1, 1], [0, 1, 2]], "
                                        "thread = [0, 0, 8], workgroup = [4, 1, 0]}>")
    assert info["reduction_loop_trip_count"] == 32 and info["masked_dims"] == [2]
    assert info["elements_per_subgroup_per_iteration"] == 512 and info["accumulator_per_output"] == [8]


def test_folded_layout_owns_what_the_expanded_one_owns():
    """Folding is exact: on a size where both apply, the folded layout of the 4x1x512
    tile gives every thread the elements the expanded 4x1x64x8 layout gives it."""
    cfg = ReductionConfig((4, 1, 0, 0), (0, 0, 64, 0), (0, 0, 1, 8), Basis((1, 1, 64, 1), (0, 1, 2, 3)),
                          Basis((1, 1, 1, 1), (0, 1, 2, 3)), ExpandDims(((0,), (1,), (2, 3)), (None, None, None, 8)))
    expanded = plan_reduction(cfg, (4, 6656, 16384), [2], 64)
    folded = plan_reduction(fold_expansion(cfg), (4, 6656, 16384), [2], 64)
    a = expanded.layout.ownership(64, 64)
    b = folded.layout.ownership(64, 64)
    assert (a.flat == b.flat).all()  # row-major flat indices of 4x1x64x8 and 4x1x512 coincide


def test_operands_through_their_maps(capsys):
    """A matvec's vector x[k] takes the iteration layout's k dim; the output its rows."""
    cfg = ("{workgroup = [4, 0], partial_reduction = [0, 512], thread = [0, 8], "
           "lane_basis = [[1, 64], [0, 1]], subgroup_basis = [[1, 1], [0, 1]]}")
    code, out, err = cli(capsys, "config", "explain", "--iteration-space", "12x1000", "--reduction-dims", "1",
                         "--dtype", "f16", "--config", cfg, "--operand", "x=1", "--json")
    assert code == 0, err
    info = json.loads(out)
    assert info["operand_layouts"]["x"] == nested([1], [1], [64], [8], [0], [1])
    assert info["operand_layouts"]["output"] == nested([1], [4], [1], [1], [0], [0])
    assert info["reduction_loop_trip_count"] == 2 and info["masked_dims"] == [1]
    assert info["workgroup_count"] == 3


def test_explain_a_file(capsys, tmp_path):
    from config_programs import config_text, reduction_text

    text = reduction_text([8, 300], [1], config_text([2, 0], [0, 128], [0, 4], ([2, 32], [0, 1]),
                                                     ([1, 1], [0, 1])), dtype="f16")
    path = tmp_path / "r.mlir"
    path.write_text(text)
    code, out, err = cli(capsys, "config", "explain", path, "--json")
    assert code == 0, err
    [info] = json.loads(out)
    assert info["function"] == "reduce" and info["location"].endswith(":2:3")
    assert info["iteration_space"] == [8, 300] and info["workgroup_count"] == 4
    assert info["load_width_bits"] == 64  # 4 x f16
    assert set(info["operand_layouts"]) == {"%in", "%out0"}
    code, out, err = cli(capsys, "config", "explain", path)
    assert code == 0 and out.startswith("@reduce (")


def test_explain_iree_tensor_ir(capsys):
    """IREE's own tensor-level IR (the seed config without expand_dims) explains too."""
    path = Path(__file__).parent / "fixtures" / "iree" / "inputs" / "reduction_config.mlir"
    code, out, err = cli(capsys, "config", "explain", path, "--json")
    assert code == 0, err
    [info] = json.loads(out)
    assert info["dtype"] == "f16" and info["reduction_loop_trip_count"] == 32 and info["load_width_bits"] == 128
    assert info["elements_per_subgroup_per_iteration"] == 512 and info["accumulator_per_output"] == [8]


# --- IREE as the oracle for layouts from configs ---------------------------------------

IREE_CASES = [
    # (tile, reduction dims, workgroup, partial, thread, lane basis, subgroup basis)
    ([4, 1, 512], [2], [4, 1, 0], [0, 0, 512], [0, 0, 8], [[2, 1, 32], [0, 1, 2]], [[1, 1, 2], [0, 1, 2]]),
    ([8, 256], [1], [8, 0], [0, 256], [0, 4], [[32, 2], [1, 0]], [[1, 1], [0, 1]]),
    ([64, 8], [0], [0, 8], [64, 0], [2, 1], [[8, 8], [0, 1]], [[2, 1], [0, 1]]),
    ([2, 16, 32], [1, 2], [2, 0, 0], [0, 16, 32], [0, 2, 4], [[2, 4, 8], [0, 1, 2]], [[1, 1, 1], [0, 1, 2]]),
]


@pytest.mark.iree
@pytest.mark.parametrize("case", range(len(IREE_CASES)))
def test_operand_layouts_match_iree(case, tmp_path):
    """IREE's LLVMGPUConfigureTensorLayouts anchors a tile-sized linalg.generic's operands
    with the layouts `config explain` reports."""
    tile, red, wg, pr, th, lanes, subgroups = IREE_CASES[case]
    n = len(tile)
    par = [d for d in range(n) if d not in red]
    dims = ", ".join(f"d{i}" for i in range(n))
    cfg = (f"#iree_gpu.lowering_config<{{lane_basis = {lanes}, partial_reduction = {pr}, "
           f"subgroup_basis = {subgroups}, thread = {th}, workgroup = {wg}}}>")
    threads = 64 * prod(subgroups[0])
    shp = "x".join(map(str, tile))
    oshp = "x".join(str(tile[d]) for d in par)
    iters = ", ".join('"reduction"' if d in red else '"parallel"' for d in range(n))
    text = f"""
#t = #iree_codegen.translation_info<pipeline = #iree_gpu.pipeline<VectorDistribute> workgroup_size = [{threads}, 1, 1] subgroup_size = 64>
func.func @r(%in: tensor<{shp}xf32>, %out: tensor<{oshp}xf32>) -> tensor<{oshp}xf32> attributes {{translation_info = #t}} {{
  %r = linalg.generic {{indexing_maps = [affine_map<({dims}) -> ({dims})>, affine_map<({dims}) -> ({', '.join(f'd{d}' for d in par)})>], iterator_types = [{iters}]}} ins(%in : tensor<{shp}xf32>) outs(%out : tensor<{oshp}xf32>) attrs = {{lowering_config = {cfg}}} {{
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  }} -> tensor<{oshp}xf32>
  return %r : tensor<{oshp}xf32>
}}
"""
    path = tmp_path / "in.mlir"
    path.write_text(text)
    p = run_iree_opt(["--pass-pipeline=builtin.module(func.func(iree-llvmgpu-configure-tensor-layouts))", path],
                     timeout=120)
    assert p.returncode == 0, p.stderr
    aliases = dict(re.findall(r"^(#nested\d*) = (#iree_vector_ext\.nested_layout<.*>)$", p.stdout, re.MULTILINE))
    anchored = re.findall(r"to_layout %(arg\d) to layout\((#nested\d*)\)", p.stdout)
    iree = {arg: aliases[alias] for arg, alias in anchored}
    cfg_attr = _config(cfg)
    plan = plan_reduction(cfg_attr.reduction_config(), tile, red, 64, threads)
    assert iree["arg0"] == str(plan.operand_layout(range(n)))
    assert iree["arg1"] == str(plan.operand_layout(par))


def _config(text: str):
    from simtify.cli.config_cmd import parse_config

    return parse_config(text)


def test_explain_the_built_in_example(capsys):
    code, out, err = cli(capsys, "config", "explain", "example:config-reduction", "--json")
    assert code == 0, err
    [info] = json.loads(out)
    assert info["expanded_iteration_space"] == [4, 8, 2048, 8] and info["reduction_loop_trip_count"] == 32
    assert info["workgroup_count"] == 8 and info["accumulator_per_output"] == [1]


def test_config_round_trips_through_the_attribute():
    """Parsed, printed in IREE's sorted order, and the pure config prints the same text."""
    from simtify.ir import parse, print_module

    attr = _config(SEED)
    assert str(attr.reduction_config()) == SEED
    text = f"func.func @f() attributes {{c = {SEED}}} {{\n  return\n}}\n"
    printed = print_module(parse(text))
    assert SEED in printed and print_module(parse(printed)) == printed
