"""The inputs of upstream's vector-warp-distribute.mlir (tests/fixtures/warp/, each
naming its origin), through the simtify pipeline matching the upstream RUN line and
through the whole warp-distribute pipeline; every step is simulated against the input."""

from __future__ import annotations

from pathlib import Path

import pytest
from iree_oracle import run_iree_opt
from warp_harness import check_warp_steps

FIXTURES = Path(__file__).parent / "fixtures" / "warp"

# (function = fixture name, upstream check prefix -> our pipeline, inputs fixed by hand)
SCF_IF, PROP, DIST = "warp-to-scf-if", "warp-propagate", "warp-distribute"
CASES = [
    ("rewrite_warp_op_to_scf_if", SCF_IF, {}),
    ("warp", DIST, {"gid": 40}),
    ("warp_extract", DIST, {}),
    ("warp_dead_result", PROP, {}),
    ("warp_propagate_operand", PROP, {}),
    ("warp_propagate_elementwise", PROP, {}),
    ("warp_propagate_scalar_arith", PROP, {}),
    ("warp_propagate_cast", PROP, {}),
    ("warp_propagate_read", PROP, {}),
    ("fold_vector_broadcast", PROP, {}),
    ("extract_vector_broadcast", PROP, {}),
    ("extract_scalar_vector_broadcast", PROP, {}),
    ("warp_scf_for", PROP, {}),
    ("warp_scf_for_use_from_above", PROP, {}),
    ("warp_scf_for_swap", PROP, {}),
    ("warp_scf_for_swap_no_yield", PROP, {}),
    ("warp_scf_for_multiple_yield", PROP, {}),
    ("vector_reduction", PROP, {}),
    ("vector_reduction_store", DIST, {}),
    ("vector_reduction_large", PROP, {}),
    ("vector_reduction_acc", PROP, {}),
    ("warp_duplicate_yield", PROP, {}),
    ("warp_constant", PROP, {}),
    ("vector_extract_1d", PROP, {}),
    ("vector_extract_2d", PROP, {}),
    ("vector_extract_2d_broadcast_scalar", PROP, {}),
    ("vector_extract_2d_broadcast", PROP, {}),
    ("vector_extract_3d", PROP, {}),
    ("vector_extractelement_0d", PROP, {}),
    ("vector_extractelement_1element", PROP, {}),
    ("vector_extractelement_1d", PROP, {"pos": 76}),
    ("lane_dependent_warp_propagate_read", PROP, {}),
    ("warp_propagate_read_3d", PROP, {}),
    ("warp_propagate_read_broadcast", PROP, {}),
    ("dont_duplicate_read", PROP, {}),
    ("dedup", PROP, {}),
    ("warp_execute_has_broadcast_semantics", SCF_IF, {}),
    ("warp_execute_nd_distribute", SCF_IF, {}),
    ("vector_insertelement_1d", PROP, {"pos": 76}),
    ("vector_insertelement_1d_broadcast", PROP, {"pos": 44}),
    ("vector_insertelement_0d", PROP, {}),
    ("vector_insert_1d", PROP, {}),
    ("vector_insert_2d_distr_src", PROP, {}),
    ("vector_insert_2d_distr_pos", PROP, {}),
    ("vector_insert_2d_broadcast", PROP, {}),
    ("transfer_read_no_prop", PROP, {"in2": [[1, 0]]}),
    ("dont_fold_vector_broadcast", PROP, {}),
    ("warp_propagate_shape_cast", PROP, {}),
    ("warp_propagate_uniform_transfer_read", PROP, {"index": 100}),
    ("warp_propagate_multi_transfer_read", PROP, {"index": 7, "index1": 4000}),
    ("warp_propagate_dead_user_multi_read", PROP, {"index": 64, "index1": 1000}),
    ("warp_propagate_masked_write", DIST, {}),
    ("warp_propagate_masked_transfer_read", PROP, {"index": 100}),
    ("warp_propagate_unconnected_read_write", DIST, {}),
    ("warp_propagate_create_mask", PROP, {}),
    ("warp_propagate_multi_dim_create_mask", PROP, {}),
    ("vector_extract_strided_slice_2d_distr_inner", PROP, {}),
    ("vector_extract_strided_slice_2d_distr_outer", PROP, {}),
    ("vector_insert_strided_slice_1d_to_2d", PROP, {}),
    ("vector_insert_strided_slice_2d_to_2d", PROP, {}),
    ("warp_propagate_constant_mask", PROP, {}),
    ("warp_propagate_multi_dim_constant_mask", PROP, {}),
    ("warp_propagate_nd_write", DIST, {}),
    ("warp_propagate_duplicated_operands_in_yield", PROP, {}),
    ("warp_step_distribute", PROP, {}),
    ("negative_warp_step_more_than_warp_size", PROP, {}),
    ("warp_scf_if_no_yield_distribute", PROP, {"p": 90}),
    ("warp_scf_if_distribute", PROP, {"p": 10}),
    ("dedup_unused_result", PROP, {}),
    ("warp_propagate_nontrivial_map_masked_transfer_read", PROP, {"index": 100}),
    ("warp_propagate_masked_transfer_read_shared_mask", PROP, {"index": 300, "index2": 17, "mask_ub": 77}),
]


def _text(name: str) -> str:
    return (FIXTURES / f"{name}.mlir").read_text()


def _target(text: str) -> str:
    return "gfx942" if ")[64]" in text else "sm_90"


def test_every_fixture_is_listed_and_names_its_origin():
    names = {p.stem for p in FIXTURES.glob("*.mlir")}
    assert names == {c[0] for c in CASES}
    for name in names:
        assert "vector-warp-distribute.mlir" in _text(name).splitlines()[0]


@pytest.mark.parametrize("name,pipeline,args", CASES, ids=[c[0] for c in CASES])
def test_upstream_input(name, pipeline, args):
    text = _text(name)
    check_warp_steps(text, name, pipeline, target=_target(text), args=args)


@pytest.mark.parametrize("name,pipeline,args", [c for c in CASES if c[1] != DIST], ids=[c[0] for c in CASES if c[1] != DIST])
def test_upstream_input_fully_distributed(name, pipeline, args):
    text = _text(name)
    check_warp_steps(text, name, DIST, target=_target(text), args=args)


# What warp-distribute keeps on lane 0 (in scf.if %laneid == 0), and why; everything
# else ends with no scf.if, no workgroup buffer and no region.
KEPT_ON_LANE_0 = {
    "rewrite_warp_op_to_scf_if": "a slice at an offset inside the split dim takes elements other lanes hold",
    "dedup": "a slice at an offset inside the split dim takes elements other lanes hold",
    "warp_extract": "1-element writes are kept whole (--max-whole-write 1, as upstream's test pass)",
    "warp_propagate_multi_transfer_read": "a 1-element write is kept whole",
    "vector_reduction_store": "a 0-D write (one element) is kept whole",
    "warp_scf_for_swap_no_yield": "a scalar load-add-store in a loop is kept on one lane",
    "transfer_read_no_prop": "the gather's only use is one scalar of it, so it is needed whole",
}
# Uniform results whose source is wider: every lane computes the whole source.
WHOLE_SOURCE = {"vector_extract_2d_broadcast"}


def _vector_sizes(module, inside_regions: bool | None):
    from xdsl.dialects.builtin import VectorType

    from simtify.transforms.warp_region import WARP_OP

    for op in module.walk():
        p, in_region = op.parent_op(), False
        while p is not None:
            in_region |= p.name == WARP_OP
            p = p.parent_op()
        if inside_regions is not None and in_region != inside_regions:
            continue
        for v in list(op.results) + [a for r in op.regions for b in r.blocks for a in b.args]:
            if isinstance(v.type, VectorType):
                n = 1
                for d in v.type.get_shape():
                    n *= d
                yield n


@pytest.mark.parametrize("name,pipeline,args", CASES, ids=[c[0] for c in CASES])
def test_fully_distributed_output_shape(name, pipeline, args):
    """No lane-0 scf.if for distributable ops, no vector wider than a lane's share."""
    from simtify.ir import parse
    from simtify.transforms import warp_distribute
    from simtify.transforms.pipelines import Options

    text = _text(name)
    module = parse(text, name)
    warp = 64 if ")[64]" in text else 32
    per_lane = max([n // warp for n in _vector_sizes(module, True)] + list(_vector_sizes(module, False)) + [1])
    warp_distribute.run(module, "warp-distribute", Options(target=_target(text)))
    from simtify.ir import print_module

    out = print_module(module)
    assert "warp_execute_on_lane_0" not in out
    lane_0_ifs = out.count("scf.if") - text.count("scf.if")  # the input's own scf.if stay
    if name in KEPT_ON_LANE_0:
        assert lane_0_ifs > 0
    else:
        assert lane_0_ifs == 0 and "memref.alloc" not in out, out
    if name not in WHOLE_SOURCE:
        assert max(_vector_sizes(module, None), default=0) <= per_lane, out


@pytest.mark.iree
def test_every_distributed_fixture_parses_in_iree_opt(tmp_path):
    """warp-distribute's output of every fixture, in one iree-opt 3.12 run."""
    from simtify.ir import parse, print_module
    from simtify.transforms import warp_distribute
    from simtify.transforms.pipelines import Options

    outputs = []
    for name, _, _ in CASES:
        text = _text(name)
        module = parse(text, name)
        warp_distribute.run(module, "warp-distribute", Options(target=_target(text)))
        outputs.append(print_module(module))
    path = tmp_path / "all.mlir"
    path.write_text("\n// -----\n".join(outputs))
    proc = run_iree_opt(["--split-input-file", path])
    assert proc.returncode == 0, proc.stderr[:4000]
