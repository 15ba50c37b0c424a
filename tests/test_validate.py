"""`simtify validate`: every stage of a recorded iree-compile dump (tests/fixtures/validate,
regenerate.sh) runs on the simulator; a miscompile planted in one pass's printed IR is
named as that pass, a planted missing barrier as a sanitizer finding after that pass, and
the unmodified dump validates clean."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from simtify.cli.main import main
from simtify.validate import Options, validate_dump
from simtify.validate.dump import dispatch_module, dispatch_names, split_stages

FIXTURES = Path(__file__).parent / "fixtures" / "validate"
RSUM = "rsum_dispatch_0_reduction_64x1024_f32"


def _dump(name: str) -> str:
    return gzip.decompress((FIXTURES / f"{name}.dump.gz").read_bytes()).decode()


def _plant(dump: str, after_pass: str, old: str, new: str) -> str:
    """The dump with `old` replaced by `new` in the IR printed after the first run of
    `after_pass` only (the stages after it are printed as the compiler made them)."""
    header = re.search(rf"^// -----// IR Dump After {after_pass}: .*$", dump, re.MULTILINE)
    start = header.end()
    end = dump.index("// -----// IR Dump After", start)
    stage = dump[start:end]
    assert stage.count(old) >= 1, f"{old!r} is not in the IR after {after_pass}"
    return dump[:start] + stage.replace(old, new, 1) + dump[end:]


def _validate(tmp_path, dump: str, *extra: str) -> tuple[int, dict]:
    path = tmp_path / "dump.txt"
    path.write_text(dump)
    out = tmp_path / "report.json"
    rc = main(["validate", "--dump", str(path), "--json", str(out), "--no-progress", *extra])
    return rc, json.loads(out.read_text())


@pytest.fixture(scope="module")
def planted_in_distribution(tmp_path_factory):
    """(exit code, JSON report, HTML page, text report) of the dump whose
    LLVMGPUVectorDistributePass output reads 2 of the 4 subgroup partials."""
    tmp = tmp_path_factory.mktemp("planted")
    # the cross-subgroup step reads 4 partials; a cluster of 2 drops half of them
    dump = _plant(_dump("rsum"), "LLVMGPUVectorDistributePass", "cluster(size = 4)", "cluster(size = 2)")
    (tmp / "dump.txt").write_text(dump)
    import contextlib
    import io

    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        rc = main(["validate", "--dump", str(tmp / "dump.txt"), "--json", str(tmp / "r.json"),
                   "--html", str(tmp / "r.html"), "--no-progress"])
    return rc, json.loads((tmp / "r.json").read_text()), (tmp / "r.html").read_text(), text.getvalue()


def test_the_dump_splits_into_stages_and_one_dispatch():
    stages = split_stages(_dump("rsum"))
    assert stages[0].pass_name == "AutoInputConversionPipelinePass"
    labels = [s.label for s in stages]
    assert "LLVMGPUVectorDistributePass" in labels and "CSEPass#2" in labels
    assert dispatch_names(stages) == [RSUM]
    module = dispatch_module(next(s.text for s in stages if s.label == "LLVMGPUVectorDistributePass"), RSUM)
    assert module.startswith("module {") and f"func.func @{RSUM}()" in module


def test_the_unmodified_dump_validates_clean(tmp_path, capsys):
    rc, report = _validate(tmp_path, _dump("rsum"))
    assert rc == 0, capsys.readouterr().out
    (d,) = report["dispatches"]
    assert d["first_bad_pass"] is None and d["findings"] == []
    assert d["exact"] is True  # a sum of small integers: every stage must agree bit for bit
    checked = d["stages_checked"]
    # from the first buffer-level stage to the last structured one
    assert checked[0] == "IREEComprehensiveBufferizePass"
    for name in ("LLVMGPUVectorDistributePass", "ExpandGPUOpsPass", "LLVMGPUVectorLoweringPass"):
        assert name in checked
    assert all(d["counters"][label]["global_bytes"] > 0 for label in checked)
    assert report["summary"]["clean"] is True
    assert "clean" in capsys.readouterr().out.splitlines()[-1]


def test_a_miscompile_in_vector_distribution_is_named(planted_in_distribution):
    rc, report, _, out = planted_in_distribution
    assert rc == 1
    bad = report["dispatches"][0]["first_bad_pass"]
    assert bad["pass"] == "LLVMGPUVectorDistributePass"
    assert bad["binding"] == "binding1" and len(bad["index"]) == 1
    assert bad["expected"] != bad["got"] and bad["max_error"] > 0
    assert "MISCOMPILE after LLVMGPUVectorDistributePass: binding1[" in out


def test_a_miscompile_in_a_later_pass_is_named(tmp_path):
    # reading lane 31 instead of 63 after the DPP chain takes half a subgroup's sum
    dump = _plant(_dump("rsum"), "LLVMGPUVectorLoweringPass", "rocdl.readlane %29, %c63_i32", "rocdl.readlane %29, %c31_i32")
    dump = _plant(dump, "LLVMGPUVectorLoweringPass", "%c63_i32 = arith.constant 63 : i32",
                  "%c63_i32 = arith.constant 63 : i32\n    %c31_i32 = arith.constant 31 : i32")
    rc, report = _validate(tmp_path, dump)
    assert rc == 1
    assert report["dispatches"][0]["first_bad_pass"]["pass"] == "LLVMGPUVectorLoweringPass"


def test_iree_minsi_neutral_value_bug_is_named(tmp_path):
    """A bug of IREE 3.12 itself, reached from a linalg input (row minima of i32): its
    vector distribution starts the per-thread minima from -1 instead of INT32_MAX, so rows
    of positive values come out as -1. validate names the pass that does it."""
    rc, report = _validate(tmp_path, _dump("rowmin_i32"))
    assert rc == 1
    bad = report["dispatches"][0]["first_bad_pass"]
    assert bad["pass"] == "LLVMGPUVectorDistributePass" and bad["got"] == -1 and bad["expected"] > 0


def test_a_missing_barrier_is_a_finding_after_that_pass(tmp_path):
    dump = _dump("rsum")
    header = "// -----// IR Dump After LLVMGPUVectorDistributePass"
    start = dump.index(header)
    end = dump.index("// -----// IR Dump After", start + len(header))
    stage = dump[start:end]
    second = stage.index("gpu.barrier", stage.index("gpu.barrier") + 1)  # between the write and the read
    line_start, line_end = stage.rindex("\n", 0, second), stage.index("\n", second)
    dump = dump[:start] + stage[:line_start] + stage[line_end:] + dump[end:]
    rc, report = _validate(tmp_path, dump)
    assert rc == 1
    findings = report["dispatches"][0]["findings"]
    assert findings and {f["pass"] for f in findings} == {"LLVMGPUVectorDistributePass"}
    assert findings[0]["kind"] == "race"


LAYOUT = ("layout(<bindings = [#hal.pipeline.binding<storage_buffer>, #hal.pipeline.binding<storage_buffer>]>)")
BINDINGS = f"""    %c0 = arith.constant 0 : index
    %pad = arith.constant 0.0 : f32
    %in = hal.interface.binding.subspan {LAYOUT} binding(0) alignment(64) offset(%c0) : memref<2x8xf32>
    %out = hal.interface.binding.subspan {LAYOUT} binding(1) alignment(64) offset(%c0) : memref<2x8xf32>
"""
FORALL_STAGE = """// -----// IR Dump After FirstPass: first //----- //
func.func @copy() attributes {translation_info = #iree_codegen.translation_info<pipeline = #iree_gpu.pipeline<VectorDistribute> workgroup_size = [1, 1, 1] subgroup_size = 64>} {
""" + BINDINGS + """    scf.forall (%i, %j) = (0, 0) to (2, 8) step (1, 4) {
      %v = vector.transfer_read %in[%i, %j], %pad {in_bounds = [true, true]} : memref<2x8xf32>, vector<1x4xf32>
      vector.transfer_write %v, %out[%i, %j] {in_bounds = [true, true]} : vector<1x4xf32>, memref<2x8xf32>
    } {mapping = [#iree_codegen.workgroup_mapping<y>, #iree_codegen.workgroup_mapping<x>]}
    return
}
"""
LINEAR_STAGE = """// -----// IR Dump After SecondPass: second //----- //
func.func @copy() attributes {translation_info = #iree_codegen.translation_info<pipeline = #iree_gpu.pipeline<VectorDistribute> workgroup_size = [1, 1, 1] subgroup_size = 64>} {
""" + BINDINGS + """    %w = hal.interface.workgroup.id[0] : index
    %d:2 = affine.delinearize_index %w into (2, 2) : index, index
    %j = affine.apply affine_map<(d0) -> (d0 * 4)>(%d#1)
    %v = vector.transfer_read %in[%d#0, %j], %pad {in_bounds = [true, true]} : memref<2x8xf32>, vector<1x4xf32>
    vector.transfer_write %v, %out[%d#0, %j] {in_bounds = [true, true]} : vector<1x4xf32>, memref<2x8xf32>
    iree_codegen.workgroup_count_hint(4)
    return
}
"""


def test_each_stage_launches_the_grid_it_implies(tmp_path):
    """A 2x2 workgroup forall becomes 4 linear workgroup ids: the second stage is run on
    the grid it records, not on the first stage's (which made attention's stages differ)."""
    rc, report = _validate(tmp_path, FORALL_STAGE + LINEAR_STAGE)
    assert rc == 0, report
    assert report["dispatches"][0]["stages_checked"] == ["FirstPass", "SecondPass"]
    # and a miscompile of the linear stage (rows swapped) is still seen
    bad = LINEAR_STAGE.replace("%in[%d#0, %j]", "%in[%d#1, %j]")
    rc, report = _validate(tmp_path, FORALL_STAGE + bad)
    assert rc == 1 and report["dispatches"][0]["first_bad_pass"]["pass"] == "SecondPass"


def test_two_dispatches_in_parallel_give_the_same_report(tmp_path):
    rc1, one = _validate(tmp_path, _dump("two_reductions"), "--jobs", "1")
    rc2, two = _validate(tmp_path, _dump("two_reductions"), "--jobs", "2")
    assert rc1 == rc2 and one == two
    assert [d["name"] for d in one["dispatches"]] == ["row_sum_dispatch_0_reduction_64x1024_f32",
                                                        "row_max_dispatch_0_reduction_32x512_f32"]


def test_the_html_page_has_the_grid_and_each_stage(planted_in_distribution):
    text = planted_in_distribution[2]
    assert text.count("class=c ") > 200  # one cell per stage that defines the dispatch
    assert "title='LLVMGPUVectorDistributePass: differs" in text
    assert "first bad pass: LLVMGPUVectorDistributePass" in text
    assert "<span class=add>+      %35 = gpu.subgroup_reduce add %34 cluster(size = 2)" in text


def test_inexact_kernels_say_why_and_exact_is_refused(tmp_path, capsys):
    from simtify.ir import parse
    from simtify.validate.inputs import inexact_reason

    module = parse("func.func @f(%x: f32) -> f32 {\n  %e = math.exp %x : f32\n  return %e : f32\n}\n", "t")
    assert inexact_reason(module.body.block.first_op) == "the kernel uses math.exp"
    report = validate_dump(_dump("rsum"), Options(exact=False))
    assert report.dispatches[0].exact is False and report.clean
    # a kernel with math.exp: floats by default, the reason said; --exact is an error
    exp_dump = FORALL_STAGE.replace(
        "      vector.transfer_write %v,",
        "      %e = math.exp %v : vector<1x4xf32>\n      vector.transfer_write %e,")
    rc, report = _validate(tmp_path, exp_dump)
    assert rc == 0 and report["dispatches"][0]["exact"] is False
    assert "not exact: the kernel uses math.exp" in report["dispatches"][0]["inputs"]
    capsys.readouterr()
    assert main(["validate", "--dump", str(tmp_path / "dump.txt"), "--exact", "--no-progress"]) == 2
    assert "--exact: the kernel uses math.exp" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["validate"], "give either INPUT.mlir (compiled with iree-compile) or --dump FILE"),
    (["validate", "x.mlir", "--dump", "d.txt"], "give either INPUT.mlir"),
    (["validate", "--dump", "/nonexistent/dump.txt"], "cannot read it"),
    (["validate", "--dump", "DUMP", "--jobs", "0"], "--jobs must be at least 1, not 0"),
    (["validate", "--dump", "NOHEADER"], "no '// -----// IR Dump After PASS //----- //' header"),
])
def test_bad_input_is_one_error_line(tmp_path, capsys, argv, message):
    (tmp_path / "nohdr.txt").write_text("func.func @f() {\n  return\n}\n")
    argv = [str(tmp_path / "nohdr.txt") if a in ("NOHEADER", "DUMP") else a for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_flags_after_a_double_dash_reach_iree_compile(tmp_path):
    """`simtify validate IN.mlir -- FLAGS`: FLAGS are passed to iree-compile (here a
    stand-in that records its arguments and prints a recorded dump)."""
    fake = tmp_path / "fake-iree-compile"
    argv_file = tmp_path / "argv.txt"
    dump_file = tmp_path / "dump.txt"
    dump_file.write_text(_dump("rsum"))
    fake.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" > {argv_file}\ncat {dump_file} >&2\n")
    fake.chmod(0o755)
    source = tmp_path / "in.mlir"
    source.write_text("// compiled by the stand-in\n")
    rc = main(["validate", str(source), "--iree-compile", str(fake), "--no-progress", "--json", str(tmp_path / "r.json"),
               "--", "--iree-codegen-llvmgpu-enable-outer-reduction-tile-and-fuse=false"])
    assert rc == 0
    argv = argv_file.read_text().split()
    assert argv[-1] == "--iree-codegen-llvmgpu-enable-outer-reduction-tile-and-fuse=false"
    assert "--mlir-print-ir-after-all" in argv and str(source) in argv
    assert "--iree-codegen-llvmgpu-enable-outer-reduction-tile-and-fuse=false" in \
        json.loads((tmp_path / "r.json").read_text())["command"]


def test_skipped_stages_are_grouped_by_what_the_simulator_met():
    from simtify.validate.report import skip_kind

    tensors = "tensor level (the simulator runs buffers)"
    unstructured = "unstructured control flow or LLVM (after SCFToControlFlow)"
    assert skip_kind("'stream.binding' is not registered") == tensors
    assert skip_kind("unknown operation 'iree_codegen.load_from_buffer'") == tensors
    assert skip_kind("the simulator does not support 'cf.br'") == unstructured
    assert skip_kind("the simulator does not support 'llvm.mlir.poison'") == unstructured
    # scf.forall is not a cf. op: a reason of its own
    reason = "the simulator runs scf.forall only when it is mapped to workgroups"
    assert skip_kind(reason) == reason


@pytest.mark.iree
def test_validate_compiles_with_iree_compile(tmp_path, capsys):
    assert main(["validate", str(FIXTURES / "inputs" / "rsum.mlir"), "--json", str(tmp_path / "r.json"),
                 "--no-progress"]) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert "iree-compile" in report["command"] and report["summary"]["clean"]


@pytest.mark.ray
def test_ray_gives_the_same_report(tmp_path):
    pytest.importorskip("ray", reason="Ray is not installed (pip install '.[ray]')")
    rc1, one = _validate(tmp_path, _dump("two_reductions"))
    rc2, two = _validate(tmp_path, _dump("two_reductions"), "--ray", "local")
    assert rc1 == rc2 and one == two


def _row_sum_stage(pass_name: str, body: str) -> str:
    """A one-workgroup stage summing each row of a 64x8 bf16 binding into a 64-element one."""
    return (f"// -----// IR Dump After {pass_name}: {pass_name.lower()} //----- //\n"
            "func.func @rows() attributes {translation_info = #iree_codegen.translation_info<pipeline = "
            "#iree_gpu.pipeline<VectorDistribute> workgroup_size = [1, 1, 1] subgroup_size = 64>} {\n"
            "    %c0 = arith.constant 0 : index\n    %c1 = arith.constant 1 : index\n"
            "    %pad = arith.constant 0.0 : bf16\n"
            f"    %in = hal.interface.binding.subspan {LAYOUT} binding(0) alignment(64) offset(%c0) : memref<64x8xbf16>\n"
            f"    %out = hal.interface.binding.subspan {LAYOUT} binding(1) alignment(64) offset(%c0) : memref<64xbf16>\n"
            + body + "    return\n}\n")


# each row summed whole, then as two halves added (bf16 rounds each partial sum)
WHOLE_ROWS = """    %m = vector.transfer_read %in[%c0, %c0], %pad {in_bounds = [true, true]} : memref<64x8xbf16>, vector<64x8xbf16>
    %zero = arith.constant dense<0.0> : vector<64xbf16>
    %s = vector.multi_reduction <add>, %m, %zero [1] : vector<64x8xbf16> to vector<64xbf16>
    vector.transfer_write %s, %out[%c0] {in_bounds = [true]} : vector<64xbf16>, memref<64xbf16>
"""
HALF_ROWS = """    %c4 = arith.constant 4 : index
    %a = vector.transfer_read %in[%c0, %c0], %pad {in_bounds = [true, true]} : memref<64x8xbf16>, vector<64x4xbf16>
    %b = vector.transfer_read %in[%c0, %c4], %pad {in_bounds = [true, true]} : memref<64x8xbf16>, vector<64x4xbf16>
    %zero = arith.constant dense<0.0> : vector<64xbf16>
    %sa = vector.multi_reduction <add>, %a, %zero [1] : vector<64x4xbf16> to vector<64xbf16>
    %sb = vector.multi_reduction <add>, %b, %zero [1] : vector<64x4xbf16> to vector<64xbf16>
    %s = arith.addf %sa, %sb : vector<64xbf16>
    vector.transfer_write %s, %out[%c0] {in_bounds = [true]} : vector<64xbf16>, memref<64xbf16>
"""


def test_bf16_stages_are_compared_within_bf16_precision(tmp_path):
    """bf16 is held in float32: two stages summing in different orders differ by bf16's
    rounding, far above float32's tolerance; they agree within bf16's. A stage that
    drops half of each row still differs."""
    rc, report = _validate(tmp_path, _row_sum_stage("FirstPass", WHOLE_ROWS) + _row_sum_stage("SecondPass", HALF_ROWS),
                           "--no-exact")
    stages = {s["label"]: s for s in report["dispatches"][0]["stages"]}
    assert rc == 0 and stages["SecondPass"]["status"] == "equal", report
    assert 0 < stages["SecondPass"]["max_error"], report  # the orders do round differently
    dropped = HALF_ROWS.replace("%s = arith.addf %sa, %sb", "%s = arith.addf %sa, %sa")
    rc, report = _validate(tmp_path, _row_sum_stage("FirstPass", WHOLE_ROWS) + _row_sum_stage("SecondPass", dropped),
                           "--no-exact")
    assert rc == 1 and report["dispatches"][0]["first_bad_pass"]["pass"] == "SecondPass", report
