"""IREE dispatch functions as iree-compile 3.12 prints them (tests/fixtures/iree_dispatch,
made by its regenerate.sh): they read back, run on the simulator with their HAL bindings
bound to random inputs, match numpy, and agree with each other stage by stage."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from diagnostics import one_error
from iree_oracle import run_iree_compile

from simtify.cli.main import main
from simtify.errors import SimtifyError
from simtify.ir import parse, print_module
from simtify.sim import find_function, function_args, random_inputs, run

FIXTURES = Path(__file__).parent / "fixtures" / "iree_dispatch"
STAGES = ("before", "distributed", "reconciled", "lowered")
# kernel -> (dispatch function, block, grid); the lowered stage records neither.
KERNELS = {
    "rsum": ("rsum_dispatch_0_reduction_512x4096_f32", 512, 512),
    "softmax": ("softmax_dispatch_0_softmax_128x1024xf32_dispatch_tensor_store", 256, 128),
    "matvec": ("matvec_dispatch_0_matvec_256x1024_f32", 256, 8),
}
CASES = [(k, s) for k in KERNELS for s in STAGES]


def reference(kernel: str, inputs: dict[str, np.ndarray]) -> tuple[str, np.ndarray]:
    """(the output binding, its numpy value in float64)."""
    if kernel == "rsum":
        return "binding1", inputs["binding0"].astype(np.float64).sum(axis=1)
    if kernel == "softmax":
        x = inputs["binding0"].astype(np.float64)
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return "binding1", e / e.sum(axis=1, keepdims=True)
    return "binding2", inputs["binding0"].astype(np.float64) @ inputs["binding1"].astype(np.float64)


def load(kernel: str, stage: str):
    path = FIXTURES / f"{kernel}.{stage}.mlir"
    return parse(path.read_text(), str(path))


def cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("kernel,stage", CASES, ids=[f"{k}.{s}" for k, s in CASES])
def test_stage_matches_numpy(kernel, stage):
    func_name, block, grid = KERNELS[kernel]
    module = load(kernel, stage)
    func = find_function(module, func_name)
    inputs = random_inputs(func, seed=11)
    assert all((a != 0).all() for a in inputs.values())
    launch = {"block": (block,), "grid": (grid,)} if stage == "lowered" else {}
    result = run(module, func_name, inputs, sanitize=True, **launch)
    assert result.findings == []
    assert result.launch.grid == (grid, 1, 1) and result.launch.block == (block, 1, 1)
    out, want = reference(kernel, inputs)
    assert sorted(result.outputs) == [out]
    np.testing.assert_allclose(result.outputs[out], want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kernel", KERNELS)
def test_bindings_are_the_functions_arguments(kernel):
    func = find_function(load(kernel, "before"), KERNELS[kernel][0])
    names = [n for n, _ in function_args(func)]
    assert names == [f"binding{i}" for i in range(len(names))] and len(names) == (3 if kernel == "matvec" else 2)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("pair", [("before", "distributed"), ("distributed", "reconciled"), ("before", "lowered")])
def test_stages_compare_equal_with_check(capsys, kernel, pair):
    func_name, block, grid = KERNELS[kernel]
    a, b = (FIXTURES / f"{kernel}.{s}.mlir" for s in pair)
    extra = ["--block", block, "--grid", grid] if "lowered" in pair else []
    code, out, err = cli(capsys, "check", a, b, "--func", func_name, *extra)
    assert code == 0, out + err
    assert out.strip().splitlines()[-1] == "equal"


def test_run_cli_binds_files_and_writes_outputs(capsys, tmp_path):
    func_name, _, _ = KERNELS["rsum"]
    x = np.random.default_rng(3).uniform(0.5, 1.5, size=(512, 4096)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    code, out, err = cli(capsys, "run", FIXTURES / "rsum.distributed.mlir", "--func", func_name,
                         "--arg", f"binding0={tmp_path / 'x.npy'}", "--arg", "binding1=random",
                         "--out", tmp_path / "o.npz", "--sanitize")
    assert code == 0 and err == "", out + err
    assert "grid [512, 1, 1], block [512, 1, 1], subgroup 64" in out
    np.testing.assert_allclose(np.load(tmp_path / "o.npz")["binding1"], x.sum(axis=1), rtol=1e-5)


# --- round trips -------------------------------------------------------------------------

# Lines made of the ops and attributes this feature reads; they must print back exactly.
DISPATCH_LINE = re.compile(r"hal\.interface|amdgpu\.fat_raw_buffer_cast|memref\.assume_alignment|ub\.poison|"
                           r"iree_codegen\.(workgroup|dispatch_config|yield)|iree_tensor_ext\.|workgroup_mapping|"
                           r"translation_info|pipeline_options")


def canonical(text: str) -> list[str]:
    """Stripped lines without comments, each with its SSA names renamed in order of
    appearance in the line (printers name values differently)."""
    out = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("//"):
            continue
        names: dict[str, str] = {}
        out.append(re.sub(r"%[\w.$-]+", lambda m, names=names: names.setdefault(m.group(0), f"%v{len(names)}"),
                          line.strip()))
    return out


@pytest.mark.parametrize("kernel,stage", CASES, ids=[f"{k}.{s}" for k, s in CASES])
def test_round_trip(kernel, stage):
    """parse -> print is a fixed point, and every line of the dispatch ops prints
    exactly as iree-compile printed it."""
    text = (FIXTURES / f"{kernel}.{stage}.mlir").read_text()
    first = print_module(parse(text))
    assert print_module(parse(first)) == first
    source = [line for line in canonical(text) if DISPATCH_LINE.search(line)]
    printed = [line for line in canonical(first) if DISPATCH_LINE.search(line)]
    assert source and printed == source


# --- semantics of the wrappers ------------------------------------------------------------

LAYOUT = ('layout(<bindings = [#hal.pipeline.binding<storage_buffer, "ReadOnly|Indirect">, '
          '#hal.pipeline.binding<storage_buffer, Indirect>], flags = Indirect>)')


def dispatch(body: str, in_type="memref<8xf32, #hal.descriptor_type<storage_buffer>>",
             out_type="memref<8xf32, #hal.descriptor_type<storage_buffer>>", offset="%c0") -> str:
    fat = lambda t: t.replace("#hal.descriptor_type<storage_buffer>", "#amdgpu.address_space<fat_raw_buffer>")
    return f"""func.func @d() {{
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c6 = arith.constant 6 : index
  %0 = hal.interface.binding.subspan {LAYOUT} binding(0) alignment(64) offset({offset}) flags("ReadOnly|Indirect") : {in_type}
  %a = memref.assume_alignment %0, 64 : {in_type}
  %in = amdgpu.fat_raw_buffer_cast %a resetOffset : {in_type} to {fat(in_type)}
  %1 = hal.interface.binding.subspan {LAYOUT} binding(1) alignment(64) offset(%c0) flags(Indirect) : {out_type}
  %out = amdgpu.fat_raw_buffer_cast %1 resetOffset : {out_type} to {fat(out_type)}
{body}
  return
}}
"""


def test_fat_buffer_reads_past_the_end_give_zero_and_writes_are_dropped():
    """``in_bounds = [true]`` claims what is false: the buffer resource reads 0 past the
    end and drops the writes there, and the sanitizer reports both."""
    text = dispatch("""  %p = ub.poison : f32
  %v = vector.transfer_read %in[%c6], %p {in_bounds = [true]} : memref<8xf32, #amdgpu.address_space<fat_raw_buffer>>, vector<4xf32>
  vector.transfer_write %v, %out[%c6] {in_bounds = [true]} : vector<4xf32>, memref<8xf32, #amdgpu.address_space<fat_raw_buffer>>
  vector.transfer_write %v, %out[%c0] {in_bounds = [true]} : vector<4xf32>, memref<8xf32, #amdgpu.address_space<fat_raw_buffer>>""")
    module = parse(text)
    inputs = random_inputs(find_function(module, "d"), seed=1)
    result = run(module, "d", inputs, sanitize=True)
    x, out = inputs["binding0"], result.outputs["binding1"]
    np.testing.assert_array_equal(out[:4], [x[6], x[7], 0, 0])
    np.testing.assert_array_equal(out[4:6], inputs["binding1"][4:6])
    np.testing.assert_array_equal(out[6:], x[6:])
    assert len(result.findings) == 2 and {f.kind for f in result.findings} == {"out-of-bounds"}


def test_poison_is_undefined():
    text = dispatch("""  %p = ub.poison : f32
  %v = vector.broadcast %p : f32 to vector<4xf32>
  vector.transfer_write %v, %out[%c0] {in_bounds = [true]} : vector<4xf32>, memref<8xf32, #amdgpu.address_space<fat_raw_buffer>>""")
    module = parse(text)
    result = run(module, "d", random_inputs(find_function(module, "d"), seed=2))
    assert np.isnan(result.outputs["binding1"][:4]).all() and not np.isnan(result.outputs["binding1"][4:]).any()


def test_subspan_at_a_byte_offset_binds_its_view():
    """IREE packs results into one buffer, each binding viewed at a byte offset: the
    dispatch sees only the view, and `bindingN` is that view."""
    text = dispatch("""  %v = vector.transfer_read %in[%c0], %c0f {in_bounds = [true]} : memref<8xf32, #amdgpu.address_space<fat_raw_buffer>>, vector<8xf32>
  vector.transfer_write %v, %out[%c0] {in_bounds = [true]} : vector<8xf32>, memref<8xf32, #amdgpu.address_space<fat_raw_buffer>>""",
                    offset="%c4").replace("  %c4 = arith", "  %c0f = arith.constant 0.0 : f32\n  %c4 = arith")
    module = parse(text)
    inputs = random_inputs(find_function(module, "d"), seed=1)
    result = run(module, "d", inputs, sanitize=True)
    np.testing.assert_array_equal(result.outputs["binding1"], inputs["binding0"])


def test_workgroup_forall_and_workgroup_ids_agree():
    """The tiled form (forall over workgroups) and the resolved form (workgroup ids)."""
    tiled = dispatch("""  scf.forall (%i) in (2) {
    %o = affine.apply affine_map<(d0) -> (d0 * 4)>(%i)
    %v = vector.transfer_read %in[%o], %c0 {in_bounds = [true]} : memref<8xf32, #amdgpu.address_space<fat_raw_buffer>>, vector<4xf32>
    %w = arith.addf %v, %v : vector<4xf32>
    vector.transfer_write %w, %out[%o] {in_bounds = [true]} : vector<4xf32>, memref<8xf32, #amdgpu.address_space<fat_raw_buffer>>
  } {mapping = [#iree_codegen.workgroup_mapping<x>]}""").replace("%c0 {in", "%p {in").replace(
        "  scf.forall", "  %p = ub.poison : f32\n  scf.forall")
    resolved = dispatch("""  %p = ub.poison : f32
  %i = hal.interface.workgroup.id[0] : index
  %n = hal.interface.workgroup.count[0] : index
  %o = affine.apply affine_map<(d0) -> (d0 * 4)>(%i)
  %v = vector.transfer_read %in[%o], %p {in_bounds = [true]} : memref<8xf32, #amdgpu.address_space<fat_raw_buffer>>, vector<4xf32>
  %w = arith.addf %v, %v : vector<4xf32>
  vector.transfer_write %w, %out[%o] {in_bounds = [true]} : vector<4xf32>, memref<8xf32, #amdgpu.address_space<fat_raw_buffer>>
  iree_codegen.workgroup_count_hint(2)""")
    for text in (tiled, resolved):
        module = parse(text)
        inputs = random_inputs(find_function(module, "d"), seed=4)
        result = run(module, "d", inputs, sanitize=True)
        assert result.launch.grid == (2, 1, 1) and not result.findings
        np.testing.assert_array_equal(result.outputs["binding1"], 2 * inputs["binding0"])


# --- errors --------------------------------------------------------------------------------


def error_line(capsys, path, *argv) -> str:
    code, out, err = cli(capsys, "run", path, *argv)
    assert code == 2 and out == "", out
    return one_error(err)


def test_lowered_stage_without_grid_is_one_error(capsys):
    line = error_line(capsys, FIXTURES / "rsum.lowered.mlir", "--func", KERNELS["rsum"][0], "--block", "512",
                      "--arg", "binding0=random", "--arg", "binding1=random")
    assert "give --grid" in line


@pytest.mark.parametrize("text,expected", [
    (dispatch(f"  %2 = hal.interface.binding.subspan {LAYOUT} binding(0) alignment(64) offset(%c0) "
              'flags("ReadOnly|Indirect") : memref<8xf32, #hal.descriptor_type<storage_buffer>>', offset="%c4"),
     "byte offsets 4 and 0"),
    (dispatch("  scf.forall (%i) in (2) {\n  }"), "mapped to workgroups"),
])
def test_unsupported_dispatches_are_one_error(capsys, tmp_path, text, expected):
    path = tmp_path / "d.mlir"
    path.write_text(text)
    line = error_line(capsys, path, "--func", "d", "--arg", "binding0=random", "--arg", "binding1=random")
    assert expected in line


def test_binding_outside_the_layout_is_a_located_error():
    with pytest.raises(SimtifyError, match="binding 2 is not in the layout's 2 binding"):
        parse(dispatch("").replace("binding(1)", "binding(2)"), "d.mlir")


def _copy_dispatch() -> str:
    return dispatch("""  %p = ub.poison : f32
  %v = vector.transfer_read %in[%c0], %p {in_bounds = [true]} : memref<8xf32, #amdgpu.address_space<fat_raw_buffer>>, vector<8xf32>
  vector.transfer_write %v, %out[%c0] {in_bounds = [true]} : vector<8xf32>, memref<8xf32, #amdgpu.address_space<fat_raw_buffer>>""")


@pytest.mark.parametrize("form", ["alias", "whole"])
def test_a_layout_written_whole_or_by_alias_reads_as_the_bare_one(form):
    """``layout(#pipeline_layout)``, as IREE's lit tests write it and its dumps print it
    before bufferization, is the same op as the bare ``layout(<..>)`` (MLIR reads an
    attribute of a known kind either way), prints bare, and runs alike."""
    whole = "#hal.pipeline.layout" + LAYOUT[len("layout("):-1]
    bare = _copy_dispatch()
    text = (f"#pipeline_layout = {whole}\n" + bare.replace(LAYOUT, "layout(#pipeline_layout)") if form == "alias"
            else bare.replace(LAYOUT, f"layout({whole})"))
    assert text != bare
    assert print_module(parse(text)) == print_module(parse(bare))
    module = parse(text)
    inputs = random_inputs(find_function(module, "d"), seed=3)
    result = run(module, "d", {k: v.copy() for k, v in inputs.items()}, sanitize=True)
    np.testing.assert_array_equal(result.outputs["binding1"], inputs["binding0"])


def test_a_layout_of_another_kind_is_a_located_error():
    text = _copy_dispatch().replace(LAYOUT, "layout(#hal.pipeline.binding<storage_buffer>)", 1)
    with pytest.raises(SimtifyError, match=r"d.mlir:5:\d+: expected a #hal.pipeline.layout attribute"):
        parse(text, "d.mlir")


# --- live iree-compile -----------------------------------------------------------------------


@pytest.mark.iree
def test_live_iree_compile_dump_simulates(tmp_path):
    """Compile the row sum now, split the dump as regenerate.sh does, and simulate the
    stages around vector distribution against numpy."""
    compiled = run_iree_compile(
        ["--iree-hal-target-device=hip", "--iree-rocm-target=gfx942", "--compile-to=executable-targets",
         FIXTURES / "inputs" / "rsum.mlir", "--mlir-print-ir-after-all", "--mlir-disable-threading", "-o", "/dev/null"])
    assert compiled.returncode == 0, compiled.stderr[-4000:]
    dump = compiled.stderr
    (tmp_path / "dump.txt").write_text(dump)
    subprocess.run([sys.executable, str(FIXTURES / "split_dump.py"), str(tmp_path / "dump.txt"), str(tmp_path / "rsum"),
                    "live", "before=<LLVMGPUVectorDistributePass", "distributed=LLVMGPUVectorDistributePass"],
                   check=True)
    for stage in ("before", "distributed"):
        module = parse((tmp_path / f"rsum.{stage}.mlir").read_text())
        func = next(op for op in module.walk() if op.name == "func.func")
        name = func.sym_name.data
        inputs = random_inputs(func, seed=5)
        result = run(module, name, inputs, sanitize=True)
        assert not result.findings
        out, want = reference("rsum", inputs)
        np.testing.assert_allclose(result.outputs[out], want, rtol=1e-5, atol=1e-5)
