"""Arguments the simulator gives memory of its own making (`simtify.sim.arguments`):
memrefs of dynamic size (`--shape`, `shapes=`), block descriptors, shared-memory
matrices (mem_desc) and raw addresses taken from memrefs. Each is run before and after a
pass on random inputs, from Python and from the command line; bad input is a located
error."""

from __future__ import annotations

import json

import numpy as np
import pytest
from diagnostics import one_error
from xegpu_harness import check_xegpu, distribute

from simtify.cli.main import main
from simtify.errors import SimtifyError
from simtify.ir import parse
from simtify.sim import find_function, random_inputs, run


def cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def cli_check(capsys, tmp_path, text: str, func: str, pipeline: str, *flags):
    """`simtify check` of `text` against what `pipeline` makes of it, with `flags`."""
    ref, new = tmp_path / "ref.mlir", tmp_path / "new.mlir"
    ref.write_text(text)
    new.write_text(distribute(text, pipeline))
    return cli(capsys, "check", ref, new, "--func", func, "--target", "xe", "--json", "--no-progress", *flags)


# --- memrefs of dynamic size -----------------------------------------------------------

GATHER = """gpu.module @m {
  gpu.func @gather(%src: memref<?xf32>, %dst: memref<256x4xf32>) {
    %offset = arith.constant dense<7> : vector<256xindex>
    %mask = arith.constant dense<true> : vector<256xi1>
    %v = xegpu.load %src[%offset], %mask <{chunk_size = 4, layout = #xegpu.layout<sg_layout = [32, 1], sg_data = [8, 4]>}>
      : memref<?xf32>, vector<256xindex>, vector<256xi1> -> vector<256x4xf32>
    %d = xegpu.create_nd_tdesc %dst : memref<256x4xf32> -> !xegpu.tensor_desc<256x4xf32, #xegpu.layout<sg_layout = [32, 1], sg_data = [8, 4]>>
    xegpu.store_nd %v, %d[0, 0] : vector<256x4xf32>, !xegpu.tensor_desc<256x4xf32, #xegpu.layout<sg_layout = [32, 1], sg_data = [8, 4]>>
    gpu.return
  }
}"""


def test_a_dynamic_memref_takes_its_shape_from_python():
    out = check_xegpu(GATHER, "gather", "xegpu-wg-to-sg", shapes={"src": (11,)})
    assert "memref<?xf32>" in out
    inputs = random_inputs(find_function(parse(GATHER), "gather"), 0, {"src": (11,)})
    assert inputs["src"].shape == (11,) and np.all(inputs["src"] != 0)
    got = run(parse(GATHER), "gather", inputs, target="xe", level="workgroup").arguments["dst"]
    np.testing.assert_array_equal(got, np.broadcast_to(inputs["src"][7:11], (256, 4)))


def test_a_dynamic_memref_too_small_for_the_gather_is_out_of_bounds():
    module = parse(GATHER)
    inputs = random_inputs(find_function(module, "gather"), 0, {"src": (9,)})
    findings = run(module, "gather", inputs, target="xe", level="workgroup").findings
    assert [f.kind for f in findings] == ["out-of-bounds"] and findings[0].buffer == "src"


def test_a_dynamic_memref_takes_its_shape_from_the_command_line(capsys, tmp_path):
    code, out, err = cli_check(capsys, tmp_path, GATHER, "gather", "xegpu-wg-to-sg", "--shape", "src=11")
    assert code == 0 and json.loads(out)["equal"], out + err
    f = tmp_path / "in.mlir"
    f.write_text(GATHER)
    code, out, err = cli(capsys, "run", f, "--func", "gather", "--target", "xe", "--arg", "src=random",
                         "--arg", "dst=random", "--shape", "src=11", "--json", "--no-progress")
    assert code == 0 and json.loads(out)["outputs"] == ["dst"], err


@pytest.mark.parametrize("flags, message", [
    ((), "--shape: argument 'src' has a dynamic shape (memref<?xf32>); give it one with --shape src=SIZES"),
    (("--shape", "src=4x4"), "--shape: argument 'src' is a memref<?xf32>: give 1 positive sizes that keep its "
                             "static dims (?), not 4x4"),
    (("--shape", "src=0"), "give 1 positive sizes"),
    (("--shape", "dst=256x4"), "--shape: argument 'dst' is a memref<256x4xf32>, which has no dynamic dims to give"),
    (("--shape", "nope=4"), "--shape: the function has no argument 'nope' (arguments: src, dst)"),
    (("--shape", "src=four"), "--shape: 'src=four' is not NAME=AxB"),
    (("--shape", "src=11", "--shape", "src=12"), "--shape: argument 'src' is given two shapes"),
])
def test_bad_shapes_are_located_errors(capsys, tmp_path, flags, message):
    code, out, err = cli_check(capsys, tmp_path, GATHER, "gather", "xegpu-wg-to-sg", *flags)
    assert code == 2 and message in one_error(err), err


def test_bad_shapes_are_errors_from_python():
    func = find_function(parse(GATHER), "gather")
    with pytest.raises(SimtifyError, match="has a dynamic shape"):
        random_inputs(func)
    with pytest.raises(SimtifyError, match="no dynamic dims"):
        random_inputs(func, 0, {"src": (11,), "dst": (256, 4)})
