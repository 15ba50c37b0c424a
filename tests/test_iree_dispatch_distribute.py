"""IREE's pre-distribution stage of a dispatch (`NAME.before.mlir`, what iree-compile 3.12
hands to LLVMGPUVectorDistributePass) distributed by `nested-distribute`: the workgroup
`scf.forall`, HAL bindings and translation_info are kept; the result runs equal to the
`before` stage and to IREE's own `distributed` stage, at no more cost."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from simtify.cli.main import main
from simtify.ir import parse, print_module
from simtify.sim import find_function, random_inputs, run
from simtify.transforms.pipelines import Options, run_pipeline

FIXTURES = Path(__file__).parent / "fixtures" / "iree_dispatch"
KERNELS = {
    "rsum": "rsum_dispatch_0_reduction_512x4096_f32",
    "softmax": "softmax_dispatch_0_softmax_128x1024xf32_dispatch_tensor_store",
    "matvec": "matvec_dispatch_0_matvec_256x1024_f32",
}
# counters simtify must not exceed IREE's on
NO_WORSE = ("shuffles", "shared_bytes", "shared_bank_conflicts", "global_sectors", "global_bytes", "barriers",
            "max_registers_per_thread")


def distribute(text: str, pipeline: str = "nested-distribute") -> str:
    module = parse(text, "before.mlir")
    run_pipeline(module, pipeline, Options(target="gfx942"))
    return print_module(module)


def test_rsum_before_stage_distributes_on_the_cli(capsys, tmp_path):
    code = main(["opt", str(FIXTURES / "rsum.before.mlir"), "--pipeline", "nested-distribute", "--target", "gfx942"])
    out, err = capsys.readouterr()
    assert code == 0 and err == "", err
    (tmp_path / "rsum.simt.mlir").write_text(out)
    for ref in ("before", "distributed"):
        code = main(["check", str(FIXTURES / f"rsum.{ref}.mlir"), str(tmp_path / "rsum.simt.mlir"),
                     "--func", KERNELS["rsum"]])
        out, err = capsys.readouterr()
        assert code == 0, out + err
        assert out.strip().splitlines()[-1] == "equal"


@pytest.mark.parametrize("pipeline", ["nested-distribute", "nested-distribute-shuffles"])
@pytest.mark.parametrize("kernel", KERNELS)
def test_before_stage_distributes_like_iree(kernel, pipeline):
    func_name = KERNELS[kernel]
    before = (FIXTURES / f"{kernel}.before.mlir").read_text()
    simt = distribute(before, pipeline)
    # the dispatch around the body is kept: bindings, the workgroup forall, the launch
    for pattern in (r"hal\.interface\.binding\.subspan", r"scf\.forall \(%\w+\) in \(\d+\)",
                    r"\{mapping = \[#iree_codegen\.workgroup_mapping<x>\]\}",
                    r"translation_info = #iree_codegen\.translation_info<pipeline = #iree_gpu\.pipeline<"
                    r"VectorDistribute> workgroup_size = \[\d+, 1, 1\] subgroup_size = 64"):
        assert len(re.findall(pattern, simt)) == len(re.findall(pattern, before)), pattern
    assert "iree_vector_ext.to_layout" not in simt
    results = {}
    for stage, text in (("before", before), ("distributed", (FIXTURES / f"{kernel}.distributed.mlir").read_text()),
                        ("simtify", simt)):
        module = parse(text, stage)
        inputs = random_inputs(find_function(module, func_name), seed=5)
        results[stage] = run(module, func_name, inputs, sanitize=True)
        assert results[stage].findings == [], stage
    for name, want in results["before"].arguments.items():
        np.testing.assert_allclose(results["simtify"].arguments[name], want, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(results["simtify"].arguments[name], results["distributed"].arguments[name],
                                   rtol=1e-4, atol=1e-4)
    ours, iree = results["simtify"].stats, results["distributed"].stats
    for counter in NO_WORSE:
        assert ours[counter] <= iree[counter], (counter, ours[counter], iree[counter])


def test_a_forall_not_mapped_to_workgroups_is_refused():
    text = (FIXTURES / "rsum.before.mlir").read_text().replace(
        "{mapping = [#iree_codegen.workgroup_mapping<x>]}", "")
    module = parse(text, "before.mlir")
    from simtify.errors import SimtifyError

    with pytest.raises(SimtifyError, match="mapped to workgroups"):
        run_pipeline(module, "nested-distribute", Options(target="gfx942"))


def test_a_dispatch_with_push_constants_is_refused_where_and_why(capsys, tmp_path):
    """IREE reads a dynamic size from push constants (`hal.interface.constant.load`): not
    read yet; the CLI says where and why, exit 2."""
    path = tmp_path / "dyn.mlir"
    path.write_text('func.func @f() {\n  %c0 = arith.constant 0 : index\n'
                    '  %1 = hal.interface.constant.load layout(<constants = 1, bindings = '
                    '[#hal.pipeline.binding<storage_buffer>]>) ordinal(0) : i32\n  return\n}\n')
    assert main(["opt", str(path), "--pipeline", "nested-distribute", "--target", "gfx942"]) == 2
    err = capsys.readouterr().err
    assert re.search(r"dyn\.mlir:3:8: error: unknown operation 'hal.interface.constant.load' \(push constants .*"
                     r"not supported yet; compile with static shapes\)", err), err
