"""`iree_vector_ext.transfer_gather` in the seed's form (``indexed`` / ``indexed_maps`` /
``permutation_map``) and in IREE 3.12's (``indexing_maps``): the seed form runs (against
the seed's own formula), distributes, converts to the 3.12 form and back, and both
forms simplify to a ``vector.transfer_read`` where their index vectors are contiguous.
Every rewrite is checked by simulating before and after on the same random inputs."""

from __future__ import annotations

import numpy as np
import pytest
from distribution_harness import check_distribution, nested
from iree_oracle import iree_opt_accepts, run_iree_opt

from simtify.cli.main import main
from simtify.errors import SimtifyError
from simtify.ir import parse, print_module
from simtify.sim import find_function, random_inputs, run
from simtify.transforms.pipelines import Options, run_pass


def cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def inputs_with_indices(text: str, func: str, bounds: dict[str, int], seed: int = 0) -> dict[str, np.ndarray]:
    """Random inputs, with each index memref in `bounds` holding indices in [0, bound)."""
    inputs = random_inputs(find_function(parse(text, "in.mlir"), func), seed)
    rng = np.random.default_rng(seed + 100)
    for name, bound in bounds.items():
        inputs[name] = rng.integers(0, bound, size=inputs[name].shape).astype(inputs[name].dtype)
    return inputs


def simulate(text: str, func: str, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    result = run(parse(text, "in.mlir"), func, {k: v.copy() for k, v in inputs.items()}, grid=(1,), block=(1,),
                 level="workgroup")
    assert not result.findings, result.findings
    return result.arguments


def rewritten(text: str, *passes: str) -> str:
    module = parse(text, "in.mlir")
    for name in passes:
        run_pass(module, name, Options())
    return print_module(module)


def assert_same_results(text: str, other: str, func: str, inputs) -> None:
    want, got = simulate(text, func, inputs), simulate(other, func, inputs)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=f"{name}\n{other}")


# --- the seed's examples (iree_vector_ext_dialect.txt, transfer_gather) ----------------

# "slice[i, j, k] = source[i + i_offset][j][indices[i][j][k]]": indices = %i_offset, 0, 0,
# indexed = [False, False, True].
SEED_EXAMPLE_1 = """
func.func @seed1(%source: memref<16x8x32xf32>, %imem: memref<4x8x8xindex>, %omem: memref<1xindex>,
                 %out: memref<4x8x8xf32>) {
  %c0 = arith.constant 0 : index
  %c12 = arith.constant 12 : index
  %pad = arith.constant -7.0 : f32
  %o = memref.load %omem[%c0] : memref<1xindex>
  %i_offset = arith.remui %o, %c12 : index
  %indices = vector.transfer_read %imem[%c0, %c0, %c0], %c0 {in_bounds = [true, true, true]} : memref<4x8x8xindex>, vector<4x8x8xindex>
  %v = iree_vector_ext.transfer_gather %source[%i_offset, %c0, %c0][None, None, %indices: vector<4x8x8xindex>], %pad {indexed_maps = [affine_map<(i, j, k) -> (i, j, k)>]} : memref<16x8x32xf32>, vector<4x8x8xf32>
  %l = iree_vector_ext.to_layout %v to layout(LAYOUT) : vector<4x8x8xf32>
  vector.transfer_write %l, %out[%c0, %c0, %c0] {in_bounds = [true, true, true]} : vector<4x8x8xf32>, memref<4x8x8xf32>
  return
}
"""
SEED_EXAMPLE_1_LAYOUT = nested([1, 1, 1], [1, 1, 1], [1, 2, 1], [4, 4, 4], [1, 1, 2], [0, 0, 0], [16, 4, 1])

# "slice[i, j, k] = source[i][indices0[i] + offset][indices1[j, k]]": indices = 0, %offset, 0,
# indexed = [False, True, True], index maps (i, j, k) -> (i) and (i, j, k) -> (j, k).
SEED_EXAMPLE_2 = """
func.func @seed2(%source: memref<4x64x32xf32>, %i0mem: memref<4xindex>, %i1mem: memref<8x16xindex>,
                 %omem: memref<1xindex>, %out: memref<4x8x16xf32>) {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %pad = arith.constant 0.5 : f32
  %o = memref.load %omem[%c0] : memref<1xindex>
  %offset = arith.remui %o, %c32 : index
  %indices0 = vector.transfer_read %i0mem[%c0], %c0 {in_bounds = [true]} : memref<4xindex>, vector<4xindex>
  %indices1 = vector.transfer_read %i1mem[%c0, %c0], %c0 {in_bounds = [true, true]} : memref<8x16xindex>, vector<8x16xindex>
  %v = iree_vector_ext.transfer_gather %source[%c0, %offset, %c0][None, %indices0: vector<4xindex>, %indices1: vector<8x16xindex>], %pad {indexed_maps = [affine_map<(i, j, k) -> (i)>, affine_map<(i, j, k) -> (j, k)>]} : memref<4x64x32xf32>, vector<4x8x16xf32>
  %l = iree_vector_ext.to_layout %v to layout(LAYOUT) : vector<4x8x16xf32>
  vector.transfer_write %l, %out[%c0, %c0, %c0] {in_bounds = [true, true, true]} : vector<4x8x16xf32>, memref<4x8x16xf32>
  return
}
"""
SEED_EXAMPLE_2_LAYOUT = nested([1, 2, 1], [2, 1, 1], [1, 1, 1], [2, 4, 8], [1, 1, 2], [0, 1, 0], [32, 8, 1])

# "slice[i, j, k] = source[indices0[k]][j][indices1[i, j]]" read as vector<16x8x2xf32> through
# permutation_map (i, j, k) -> (k, j, i). As the seed writes it, its index vectors have the
# wrong shapes (vector<2xindex> and vector<4x8xindex>); the slice it reads is 2x8x16, so they
# are vector<16xindex> and vector<2x8xindex>.
SEED_EXAMPLE_3 = """
func.func @seed3(%source: memref<8192x8x16xf32>, %i0mem: memref<I0>, %i1mem: memref<I1>, %out: memref<16x8x2xf32>) {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %indices0 = vector.transfer_read %i0mem[%c0], %c0 {in_bounds = [true]} : memref<I0>, vector<I0>
  %indices1 = vector.transfer_read %i1mem[%c0, %c0], %c0 {in_bounds = [true, true]} : memref<I1>, vector<I1>
  %vector = iree_vector_ext.transfer_gather %source[%c0, %c0, %c0][%indices0: vector<I0>, None, %indices1: vector<I1>], %pad {indexed_maps = [affine_map<(i, j, k) -> (k)>, affine_map<(i, j, k) -> (i, j)>], in_bounds = [true, true, true], permutation_map = affine_map<(i, j, k) -> (k, j, i)>} : memref<8192x8x16xf32>, vector<16x8x2xf32>
  %l = iree_vector_ext.to_layout %vector to layout(LAYOUT) : vector<16x8x2xf32>
  vector.transfer_write %l, %out[%c0, %c0, %c0] {in_bounds = [true, true, true]} : vector<16x8x2xf32>, memref<16x8x2xf32>
  return
}
"""
SEED_EXAMPLE_3_LAYOUT = nested([1, 1, 1], [2, 1, 1], [1, 1, 1], [8, 8, 1], [1, 1, 2], [0, 0, 0], [8, 1, 0])
SEED_EXAMPLE_3_AS_WRITTEN = SEED_EXAMPLE_3.replace("I0", "2xindex").replace("I1", "4x8xindex")
SEED_EXAMPLE_3_FIXED = SEED_EXAMPLE_3.replace("I0", "16xindex").replace("I1", "2x8xindex")


def seed_formula_1(a):
    src, idx, off = a["source"], a["imem"], int(a["omem"][0]) % 12
    i, j, k = np.indices((4, 8, 8))
    return np.where(idx < 32, src[i + off, j, np.minimum(idx, 31)], np.float32(-7.0))


def seed_formula_2(a):
    src, i0, i1, off = a["source"], a["i0mem"], a["i1mem"], int(a["omem"][0]) % 32
    i, j, k = np.indices((4, 8, 16))
    row = i0[i] + off
    return np.where(row < 64, src[i, np.minimum(row, 63), i1[j, k]], np.float32(0.5))


def seed_formula_3(a):
    src, i0, i1 = a["source"], a["i0mem"], a["i1mem"]
    k, j, i = np.indices((16, 8, 2))  # vector[k, j, i] = slice[i, j, k]
    return src[i0[k], j, i1[i, j]]


SEED_EXAMPLES = [
    pytest.param(SEED_EXAMPLE_1.replace("LAYOUT", SEED_EXAMPLE_1_LAYOUT), "seed1", {"imem": 40, "omem": 100},
                 seed_formula_1, id="seed-example-1"),
    pytest.param(SEED_EXAMPLE_2.replace("LAYOUT", SEED_EXAMPLE_2_LAYOUT), "seed2",
                 {"i0mem": 40, "i1mem": 32, "omem": 100}, seed_formula_2, id="seed-example-2"),
    pytest.param(SEED_EXAMPLE_3_FIXED.replace("LAYOUT", SEED_EXAMPLE_3_LAYOUT), "seed3",
                 {"i0mem": 8192, "i1mem": 16}, seed_formula_3, id="seed-example-3-fixed"),
]


@pytest.mark.parametrize("text,func,bounds,formula", SEED_EXAMPLES)
def test_seed_examples_run_as_the_seed_defines_them(text, func, bounds, formula):
    # indices reach past the source, so padding is read as well (the seed's in_bounds is
    # a promise the program keeps; padding is what simtify reads where it is broken)
    inputs = inputs_with_indices(text, func, bounds, seed=1)
    got = simulate(text, func, inputs)["out"]
    np.testing.assert_array_equal(got, formula(inputs))


@pytest.mark.parametrize("text,func,bounds,formula", SEED_EXAMPLES)
@pytest.mark.parametrize("seed", [0, 1])
def test_seed_examples_distribute(text, func, bounds, formula, seed):
    out = check_distribution(text, func, seed=seed, inputs=inputs_with_indices(text, func, bounds, seed),
                             target="gfx942", workgroup_size=64 if func != "seed2" else 128)
    assert "indexed_maps" not in out and "indexing_maps" in out  # pieces in the 3.12 form


@pytest.mark.parametrize("text,func,bounds,formula", SEED_EXAMPLES)
def test_seed_examples_convert_to_3_12_and_back(text, func, bounds, formula):
    inputs = inputs_with_indices(text, func, bounds, seed=2)
    new_form = rewritten(text, "transfer-gather-to-indexing-maps")
    assert "indexed_maps" not in new_form and "indexing_maps" in new_form
    assert_same_results(text, new_form, func, inputs)
    back = rewritten(new_form, "transfer-gather-to-seed-form")
    assert "indexing_maps" not in back and "indexed_maps" in back
    assert_same_results(text, back, func, inputs)


@pytest.mark.iree
@pytest.mark.parametrize("text,func,bounds,formula", SEED_EXAMPLES)
def test_iree_opt_accepts_the_converted_seed_examples(text, func, bounds, formula):
    ok, err = iree_opt_accepts(rewritten(text, "transfer-gather-to-indexing-maps"))
    assert ok, err


def test_seed_example_3_as_written_is_a_located_error(tmp_path, capsys):
    path = tmp_path / "seed3.mlir"
    path.write_text(SEED_EXAMPLE_3_AS_WRITTEN.replace("LAYOUT", SEED_EXAMPLE_3_LAYOUT))
    for verb in (["opt", path], ["run", path, "--func", "seed3"], ["check", path, path, "--func", "seed3"]):
        code, out, err = cli(capsys, *verb)
        assert code == 2, err
        first = err.splitlines()[0]
        assert first.startswith(f"{path}:7:3:") and ": error: " in first, err
        assert ("index vector 0 has type vector<2xindex>, but the gather reads it through (d0, d1, d2) -> (d2) "
                "at shape [16]: expected vector<16xindex>") in first, err
        assert "Traceback" not in err and "IndexError" not in err


def test_index_vector_of_the_wrong_shape_in_the_3_12_form(tmp_path, capsys):
    path = tmp_path / "g.mlir"
    path.write_text("""func.func @g(%src: memref<64x8xf32>, %idx: memref<8xindex>, %out: memref<16x8xf32>) {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %i = vector.transfer_read %idx[%c0], %c0 {in_bounds = [true]} : memref<8xindex>, vector<8xindex>
  %g = iree_vector_ext.transfer_gather %src[%c0, %c0] [%i : vector<8xindex>], %pad {indexing_maps = [affine_map<(d0, d1)[s0] -> (s0, d1)>, affine_map<(d0, d1)[s0] -> (d0)>]} : memref<64x8xf32>, vector<16x8xf32>
  vector.transfer_write %g, %out[%c0, %c0] {in_bounds = [true, true]} : vector<16x8xf32>, memref<16x8xf32>
  return
}
""")
    code, out, err = cli(capsys, "run", path, "--func", "g")
    assert code == 2
    assert err.startswith(f"{path}:5:") and "expected vector<16xindex>" in err.splitlines()[0], err


def test_seed_examples_from_the_command_line(tmp_path, capsys):
    """`simtify opt` prints it as written, converts it, distributes it; `simtify run`
    computes the seed's formula; `simtify check` finds every rewrite equal."""
    text = SEED_EXAMPLE_3_FIXED.replace("LAYOUT", SEED_EXAMPLE_3_LAYOUT)
    path = tmp_path / "seed3.mlir"
    path.write_text(text)
    code, printed, err = cli(capsys, "opt", path)
    assert code == 0, err
    assert ("[%indices0: vector<16xindex>, None, %indices1: vector<2x8xindex>], %pad {in_bounds = [true, true, true], "
            "indexed_maps = [affine_map<(d0, d1, d2) -> (d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], "
            "permutation_map = affine_map<(d0, d1, d2) -> (d2, d1, d0)>}") in printed
    rewrites = {
        "3_12": ["--pipeline", "transfer-gather-to-indexing-maps"],
        "back": ["-p", "transfer-gather-to-indexing-maps,transfer-gather-to-seed-form"],
        "simt": ["--pipeline", "nested-distribute", "--target", "gfx942"],
    }
    for name, flags in rewrites.items():
        code, out, err = cli(capsys, "opt", path, *flags, "-o", tmp_path / f"{name}.mlir")
        assert code == 0, err
        code, out, err = cli(capsys, "check", path, tmp_path / f"{name}.mlir", "--func", "seed3")
        assert code == 0 and out.rstrip().endswith("equal"), out + err
    inputs = inputs_with_indices(text, "seed3", {"i0mem": 8192, "i1mem": 16}, seed=4)
    args = []
    for name, value in inputs.items():
        np.save(tmp_path / f"{name}.npy", value)
        args += ["--arg", f"{name}={tmp_path / (name + '.npy')}"]
    code, out, err = cli(capsys, "run", path, "--func", "seed3", *args, "--out", tmp_path / "out.npz")
    assert code == 0, err
    np.testing.assert_array_equal(np.load(tmp_path / "out.npz")["out"], seed_formula_3(inputs))


# --- the seed form distributed: layouts, masks, permutations, broadcast dims ------------

SEED_ROWS = """
func.func @g(%src: memref<64x16xf32>, %idx_mem: memref<16xindex>, %nmem: memref<2xindex>, %out: memref<16x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c17 = arith.constant 17 : index
  %pad = arith.constant -1.5 : f32
  %idx = vector.transfer_read %idx_mem[%c0], %c0 {in_bounds = [true]} : memref<16xindex>, vector<16xindex>
  %n0 = memref.load %nmem[%c0] : memref<2xindex>
  %n1 = memref.load %nmem[%c1] : memref<2xindex>
  %r = arith.remui %n0, %c17 : index
  %c = arith.remui %n1, %c17 : index
  %mask = vector.create_mask %r, %c : vector<16x16xi1>
  %v = iree_vector_ext.transfer_gather %src[%c0, %c1][%idx: vector<16xindex>, None], %pad, %mask {indexed_maps = [affine_map<(d0, d1) -> (d0)>]} : memref<64x16xf32>, vector<16x16xf32>
  %l = iree_vector_ext.to_layout %v to layout(LAYOUT) : vector<16x16xf32>
  vector.transfer_write %l, %out[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf32>, memref<16x16xf32>
  return
}
"""

# permuted: vector dim 0 iterates source dim 1 (gathered), vector dim 1 source dim 0; the
# mask is in source-dim order (32x16)
SEED_PERMUTED = """
func.func @g(%src: memref<48x64xf32>, %idx_mem: memref<16xindex>, %nmem: memref<2xindex>, %out: memref<16x32xf32>) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  %c33 = arith.constant 33 : index
  %pad = arith.constant 2.25 : f32
  %idx = vector.transfer_read %idx_mem[%c0], %c0 {in_bounds = [true]} : memref<16xindex>, vector<16xindex>
  %n0 = memref.load %nmem[%c0] : memref<2xindex>
  %n1 = memref.load %nmem[%c1] : memref<2xindex>
  %r = arith.remui %n0, %c33 : index
  %c = arith.remui %n1, %c33 : index
  %mask = vector.create_mask %r, %c : vector<32x16xi1>
  %v = iree_vector_ext.transfer_gather %src[%c2, %c0][None, %idx: vector<16xindex>], %pad, %mask {indexed_maps = [affine_map<(d0, d1) -> (d1)>], permutation_map = affine_map<(d0, d1) -> (d1, d0)>} : memref<48x64xf32>, vector<16x32xf32>
  %l = iree_vector_ext.to_layout %v to layout(LAYOUT) : vector<16x32xf32>
  vector.transfer_write %l, %out[%c0, %c0] {in_bounds = [true, true]} : vector<16x32xf32>, memref<16x32xf32>
  return
}
"""

# a broadcast vector dim (permutation result 0) and a source dim read at its offset only
SEED_BROADCAST = """
func.func @g(%src: memref<8x64xf32>, %idx_mem: memref<16xindex>, %out: memref<4x16xf32>) {
  %c0 = arith.constant 0 : index
  %c3 = arith.constant 3 : index
  %pad = arith.constant 0.75 : f32
  %idx = vector.transfer_read %idx_mem[%c0], %c0 {in_bounds = [true]} : memref<16xindex>, vector<16xindex>
  %v = iree_vector_ext.transfer_gather %src[%c3, %c0][None, %idx: vector<16xindex>], %pad {in_bounds = [true, false], indexed_maps = [affine_map<(d0, d1) -> (d1)>], permutation_map = affine_map<(d0, d1) -> (0, d1)>} : memref<8x64xf32>, vector<4x16xf32>
  %l = iree_vector_ext.to_layout %v to layout(LAYOUT) : vector<4x16xf32>
  vector.transfer_write %l, %out[%c0, %c0] {in_bounds = [true, true]} : vector<4x16xf32>, memref<4x16xf32>
  return
}
"""

LAYOUTS_16x16 = [
    nested([1, 1], [2, 1], [1, 1], [8, 8], [1, 2], [0, 0], [8, 1]),  # batches over rows, 2 elements per thread
    nested([2, 1], [1, 2], [1, 1], [8, 4], [1, 2], [1, 0], [4, 1]),  # two subgroups over rows
    nested([1, 1], [1, 1], [2, 1], [4, 16], [2, 1], [0, 0], [16, 1]),  # outer tiles, a column per thread
]
LAYOUTS_16x32 = [
    nested([1, 1], [1, 2], [1, 1], [16, 4], [1, 4], [0, 0], [4, 1]),
    nested([1, 2], [2, 1], [1, 1], [4, 16], [2, 1], [0, 1], [16, 1]),
]
LAYOUTS_4x16 = [
    nested([1, 1], [1, 1], [1, 1], [4, 16], [1, 1], [0, 0], [16, 1]),
    nested([1, 1], [2, 1], [1, 1], [2, 8], [1, 2], [0, 0], [8, 1]),
]

DISTRIBUTED = (
    [pytest.param(SEED_ROWS, lay, {"idx_mem": 70, "nmem": 100}, id=f"rows-masked-{k}")
     for k, lay in enumerate(LAYOUTS_16x16)]
    + [pytest.param(SEED_PERMUTED, lay, {"idx_mem": 70, "nmem": 100}, id=f"permuted-masked-{k}")
       for k, lay in enumerate(LAYOUTS_16x32)]
    + [pytest.param(SEED_BROADCAST, lay, {"idx_mem": 70}, id=f"broadcast-{k}") for k, lay in enumerate(LAYOUTS_4x16)]
)


@pytest.mark.parametrize("program,layout,bounds", DISTRIBUTED)
@pytest.mark.parametrize("seed", [0, 1])
def test_seed_form_distributes_like_the_3_12_form(program, layout, bounds, seed):
    text = program.replace("LAYOUT", layout)
    inputs = inputs_with_indices(text, "g", bounds, seed)  # some indices past the source: padding
    threads = 128 if "[2, 1], batch" in layout or "[1, 2], batch" in layout else 64
    seed_out = check_distribution(text, "g", inputs=inputs, target="gfx942", workgroup_size=threads)
    new_form = rewritten(text, "transfer-gather-to-indexing-maps")
    assert_same_results(text, new_form, "g", inputs)
    new_out = check_distribution(new_form, "g", inputs=inputs, target="gfx942", workgroup_size=threads)
    assert seed_out.count("iree_vector_ext.transfer_gather") == new_out.count("iree_vector_ext.transfer_gather") > 0


@pytest.mark.parametrize("program,layout,bounds", DISTRIBUTED[::2])
def test_seed_form_masks_and_broadcasts_convert_back(program, layout, bounds):
    text = program.replace("LAYOUT", layout)
    inputs = inputs_with_indices(text, "g", bounds, 3)
    back = rewritten(text, "transfer-gather-to-indexing-maps", "transfer-gather-to-seed-form")
    assert_same_results(text, back, "g", inputs)


# --- 3.12 form -> seed form ------------------------------------------------------------

# IREE's own 3.12 tests: a gathered row, two index vectors (one 2-D, transposed), a mask
# read through its own (projected) map
FROM_3_12 = {
    "paged": ("[%i : vector<16xindex>], %pad",
              "affine_map<(d0, d1)[s0] -> (0, s0, d1)>, affine_map<(d0, d1)[s0] -> (d0)>", ""),
    "two_index_vectors": ("[%i, %j : vector<16xindex>, vector<8x16xindex>], %pad",
                          "affine_map<(d0, d1)[s0, s1] -> (0, s0, s1)>, affine_map<(d0, d1)[s0, s1] -> (d0)>, "
                          "affine_map<(d0, d1)[s0, s1] -> (d1, d0)>", ""),
    "projected_mask": ("[%i : vector<16xindex>], %pad, %m",
                       "affine_map<(d0, d1)[s0] -> (0, s0, d1)>, affine_map<(d0, d1)[s0] -> (d0)>, "
                       "affine_map<(d0, d1)[s0] -> (d1)>", ", vector<8xi1>"),
    "symbols_out_of_order": ("[%j8, %i : vector<8xindex>, vector<16xindex>], %pad",
                             "affine_map<(d0, d1)[s0, s1] -> (0, s1, s0)>, affine_map<(d0, d1)[s0, s1] -> (d1)>, "
                             "affine_map<(d0, d1)[s0, s1] -> (d0)>", ""),
}
FROM_3_12_TEXT = """
func.func @g(%src: memref<3x64x8xf32>, %imem: memref<16xindex>, %jmem: memref<8x16xindex>, %j8mem: memref<8xindex>,
             %nmem: memref<1xindex>, %out: memref<16x8xf32>) {
  %c0 = arith.constant 0 : index
  %c9 = arith.constant 9 : index
  %pad = arith.constant -3.0 : f32
  %i = vector.transfer_read %imem[%c0], %c0 {in_bounds = [true]} : memref<16xindex>, vector<16xindex>
  %j = vector.transfer_read %jmem[%c0, %c0], %c0 {in_bounds = [true, true]} : memref<8x16xindex>, vector<8x16xindex>
  %j8 = vector.transfer_read %j8mem[%c0], %c0 {in_bounds = [true]} : memref<8xindex>, vector<8xindex>
  %n = memref.load %nmem[%c0] : memref<1xindex>
  %b = arith.remui %n, %c9 : index
  %m = vector.create_mask %b : vector<8xi1>
  %g = iree_vector_ext.transfer_gather %src[%c0, %c0, %c0] OPERANDS {indexing_maps = [MAPS]} : memref<3x64x8xf32>, vector<16x8xf32>MASKTYPE
  vector.transfer_write %g, %out[%c0, %c0] {in_bounds = [true, true]} : vector<16x8xf32>, memref<16x8xf32>
  return
}
"""
FROM_3_12 = {k: FROM_3_12_TEXT.replace("OPERANDS", o).replace("MAPS", m).replace("MASKTYPE", t)
             for k, (o, m, t) in FROM_3_12.items()}
FROM_3_12_BOUNDS = {"imem": 70, "jmem": 10, "j8mem": 10, "nmem": 100}


@pytest.mark.parametrize("name", sorted(FROM_3_12))
@pytest.mark.parametrize("seed", [0, 1])
def test_3_12_form_to_seed_form_and_back(name, seed):
    text = FROM_3_12[name]
    inputs = inputs_with_indices(text, "g", FROM_3_12_BOUNDS, seed)
    seed_form = rewritten(text, "transfer-gather-to-seed-form")
    assert "indexed_maps" in seed_form and "indexing_maps" not in seed_form
    assert_same_results(text, seed_form, "g", inputs)
    again = rewritten(seed_form, "transfer-gather-to-indexing-maps")
    assert_same_results(text, again, "g", inputs)


@pytest.mark.iree
@pytest.mark.parametrize("name", sorted(FROM_3_12))
def test_iree_opt_accepts_the_3_12_form_after_a_round_trip(name):
    again = rewritten(FROM_3_12[name], "transfer-gather-to-seed-form", "transfer-gather-to-indexing-maps")
    ok, err = iree_opt_accepts(again)
    assert ok, err


def test_the_seed_form_of_the_two_index_vector_gather():
    out = rewritten(FROM_3_12["two_index_vectors"], "transfer-gather-to-seed-form")
    # source dim 1 iterates vector dim 0 (its index vector's dim), dim 2 vector dim 1
    assert ("[None, %i: vector<16xindex>, %j: vector<8x16xindex>], %pad {indexed_maps = "
            "[affine_map<(d0, d1, d2) -> (d1)>, affine_map<(d0, d1, d2) -> (d2, d1)>]}") in out


RAGGED = """
func.func @g(%src: memref<512xf32>, %imem: memref<16x8xindex>, %out: memref<16x8xf32>) {
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %i = vector.transfer_read %imem[%c0, %c0], %c0 {in_bounds = [true, true]} : memref<16x8xindex>, vector<16x8xindex>
  %g = iree_vector_ext.transfer_gather %src[%c0] [%i : vector<16x8xindex>], %pad {indexing_maps = [affine_map<(d0, d1)[s0] -> (s0)>, affine_map<(d0, d1)[s0] -> (d0, d1)>]} : memref<512xf32>, vector<16x8xf32>
  vector.transfer_write %g, %out[%c0, %c0] {in_bounds = [true, true]} : vector<16x8xf32>, memref<16x8xf32>
  return
}
"""


def test_a_ragged_gather_has_no_seed_form(tmp_path, capsys):
    with pytest.raises(SimtifyError, match="no gathered source dim is left"):
        rewritten(RAGGED, "transfer-gather-to-seed-form")
    path = tmp_path / "ragged.mlir"
    path.write_text(RAGGED)
    code, out, err = cli(capsys, "opt", path, "-p", "transfer-gather-to-seed-form")
    assert code == 2 and out == ""
    assert err.startswith(f"{path}:6:3:") and "error: 'iree_vector_ext.transfer_gather': vector dim 1" in err, err


# --- contiguous index vectors: canonicalize-transfer-gather ----------------------------

CONTIGUOUS = """
func.func @g(%src: memref<64x8xf32>, %kmem: memref<1xindex>, %imem: memref<8xindex>, %out: memref<16x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c40 = arith.constant 40 : index
  %pad = arith.constant -2.5 : f32
  %k0 = memref.load %kmem[%c0] : memref<1xindex>
  %k = arith.remui %k0, %c40 : index
  %other = vector.transfer_read %imem[%c0], %c0 {in_bounds = [true]} : memref<8xindex>, vector<8xindex>
  %step = vector.step : vector<16xindex>
  %bk = vector.broadcast %k : index to vector<16xindex>
  %c3 = arith.constant dense<3> : vector<16xindex>
  INDEX
  %g = GATHER
  vector.transfer_write %g, %out[%c0, %c0] {in_bounds = [true, true]} : vector<16x8xf32>, memref<16x8xf32>
  return
}
"""
GATHER_3_12 = ("iree_vector_ext.transfer_gather %src[%c0, %c1] [%idx : vector<16xindex>], %pad "
               "{indexing_maps = [affine_map<(d0, d1)[s0] -> (s0, d1)>, affine_map<(d0, d1)[s0] -> (d0)>]} "
               ": memref<64x8xf32>, vector<16x8xf32>")
GATHER_SEED = ("iree_vector_ext.transfer_gather %src[%c0, %c1][%idx: vector<16xindex>, None], %pad "
               "{indexed_maps = [affine_map<(d0, d1) -> (d0)>]} : memref<64x8xf32>, vector<16x8xf32>")
INDICES = {
    "step": ("%idx = vector.step : vector<16xindex>", "%c0"),
    "step_plus_broadcast": ("%idx = arith.addi %step, %bk : vector<16xindex>", "(%c0, %k)"),
    "broadcast_plus_step": ("%idx = arith.addi %bk, %step : vector<16xindex>", "(%c0, %k)"),
    "step_plus_splat_plus_broadcast": ("%s3 = arith.addi %c3, %step : vector<16xindex>\n"
                                       "  %idx = arith.addi %s3, %bk : vector<16xindex>", "(%c0, %k)"),
}


def contiguous_program(index: str, gather: str) -> str:
    return CONTIGUOUS.replace("INDEX", index).replace("GATHER", gather)


@pytest.mark.parametrize("index", sorted(INDICES))
@pytest.mark.parametrize("form", ["3_12", "seed"])
def test_contiguous_gather_becomes_a_transfer_read(index, form):
    code, operands = INDICES[index]
    text = contiguous_program(code, GATHER_3_12 if form == "3_12" else GATHER_SEED)
    out = rewritten(text, "canonicalize-transfer-gather")
    assert "transfer_gather" not in out and "%idx" not in out, out
    read = [line.strip() for line in out.splitlines() if "vector.transfer_read %src" in line]
    assert len(read) == 1 and read[0].endswith(": memref<64x8xf32>, vector<16x8xf32>"), out
    if operands != "%c0":
        assert "affine.apply affine_map<(d0, d1) -> " in out and operands in out, out
    else:
        assert read[0].startswith("%g = vector.transfer_read %src[%c0, %c1], %pad"), out
    for seed in (0, 1):
        inputs = inputs_with_indices(text, "g", {"kmem": 100, "imem": 64}, seed)  # offsets past the end: padding
        assert_same_results(text, out, "g", inputs)


def test_contiguous_gather_printed():
    text = contiguous_program(INDICES["step_plus_splat_plus_broadcast"][0], GATHER_3_12)
    out = rewritten(text, "canonicalize-transfer-gather")
    assert "%0 = affine.apply affine_map<(d0, d1) -> (((d0 + 3) + d1))> (%c0, %k)" in out, out
    assert "%g = vector.transfer_read %src[%0, %c1], %pad : memref<64x8xf32>, vector<16x8xf32>" in out, out


def test_only_the_contiguous_index_vector_folds():
    gather = ("iree_vector_ext.transfer_gather %src[%c0, %c0] [%idx, %other : vector<16xindex>, vector<8xindex>], "
              "%pad {indexing_maps = [affine_map<(d0, d1)[s0, s1] -> (s0, s1)>, affine_map<(d0, d1)[s0, s1] -> (d0)>, "
              "affine_map<(d0, d1)[s0, s1] -> (d1)>]} : memref<64x8xf32>, vector<16x8xf32>")
    text = contiguous_program(INDICES["step_plus_broadcast"][0], gather)
    out = rewritten(text, "canonicalize-transfer-gather")
    assert ("[%other : vector<8xindex>], %pad {indexing_maps = [affine_map<(d0, d1)[s0] -> (d0, s0)>, "
            "affine_map<(d0, d1)[s0] -> (d1)>]}") in out, out
    inputs = inputs_with_indices(text, "g", {"kmem": 100, "imem": 10}, 0)
    assert_same_results(text, out, "g", inputs)


def test_a_gather_whose_index_vector_is_not_contiguous_is_kept():
    text = contiguous_program("%idx = arith.addi %step, %step : vector<16xindex>", GATHER_3_12)
    assert rewritten(text, "canonicalize-transfer-gather") == print_module(parse(text, "in.mlir"))


MASKED_CONTIGUOUS = """
func.func @g(%src: memref<8x64xf32>, %nmem: memref<2xindex>, %out: memref<16x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c9 = arith.constant 9 : index
  %pad = arith.constant 4.5 : f32
  %n0 = memref.load %nmem[%c0] : memref<2xindex>
  %b = arith.remui %n0, %c9 : index
  %m = vector.create_mask %b : vector<8xi1>
  %idx = vector.step : vector<16xindex>
  %g = iree_vector_ext.transfer_gather %src[%c1, %c0] [%idx : vector<16xindex>], %pad, %m {indexing_maps = [affine_map<(d0, d1)[s0] -> (d1, s0)>, affine_map<(d0, d1)[s0] -> (d0)>, affine_map<(d0, d1)[s0] -> (d1)>]} : memref<8x64xf32>, vector<16x8xf32>, vector<8xi1>
  vector.transfer_write %g, %out[%c0, %c0] {in_bounds = [true, true]} : vector<16x8xf32>, memref<16x8xf32>
  return
}
"""


def test_a_masked_transposed_contiguous_gather():
    """The mask, read along vector dim 1 only, is broadcast over dim 0 and transposed to
    the read's mask (source-dim order: vector dims 1, 0)."""
    out = rewritten(MASKED_CONTIGUOUS, "canonicalize-transfer-gather")
    assert "transfer_gather" not in out
    assert "vector.broadcast %m : vector<8xi1> to vector<16x8xi1>" in out, out
    assert "vector.transpose" in out and "permutation_map = affine_map<(d0, d1) -> (d1, d0)>" in out, out
    for seed in (0, 1, 2):
        assert_same_results(MASKED_CONTIGUOUS, out, "g", inputs_with_indices(MASKED_CONTIGUOUS, "g", {"nmem": 100}, seed))


@pytest.mark.iree
def test_iree_opt_accepts_the_canonicalized_reads():
    for text in [MASKED_CONTIGUOUS, contiguous_program(INDICES["step_plus_splat_plus_broadcast"][0], GATHER_3_12)]:
        ok, err = iree_opt_accepts(rewritten(text, "canonicalize-transfer-gather"))
        assert ok, err


def test_nested_distribute_canonicalizes_first():
    layout = nested([1, 1], [2, 1], [1, 1], [8, 8], [1, 1], [0, 0], [8, 1])
    text = contiguous_program(INDICES["step_plus_broadcast"][0], GATHER_SEED).replace(
        "  vector.transfer_write %g,",
        f"  %l = iree_vector_ext.to_layout %g to layout({layout}) : vector<16x8xf32>\n  vector.transfer_write %l,")
    text = "\n".join(line for line in text.splitlines() if "%other" not in line and "%c3 =" not in line)
    inputs = inputs_with_indices(text, "g", {"kmem": 100, "imem": 64}, 0)
    out = check_distribution(text, "g", inputs=inputs, target="gfx942", workgroup_size=64)
    assert "transfer_gather" not in out and "vector.transfer_read %src" in out


def iree_canonicalized(text: str) -> str:
    done = run_iree_opt(["--canonicalize", "-"], input=text, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.iree
def test_iree_3_12_canonicalizes_a_contiguous_gather_the_same():
    """IREE's own fold, simulated, agrees with ours where the reads stay in bounds (IREE's
    read promises in_bounds)."""
    gather = GATHER_3_12.replace("%src[%c0, %c1]", "%src[%c0, %c0]")  # in bounds, as IREE's read assumes
    text = contiguous_program(INDICES["step_plus_broadcast"][0], gather)
    text = "\n".join(line for line in text.splitlines() if "%other" not in line and "%c3 =" not in line)
    theirs = iree_canonicalized(text)
    assert "transfer_gather" not in theirs and "vector.transfer_read" in theirs
    for seed in (0, 1):
        inputs = inputs_with_indices(text, "g", {"kmem": 100, "imem": 64}, seed)
        want = simulate(rewritten(text, "canonicalize-transfer-gather"), "g", inputs)["out"]
        got = simulate(theirs, "g", {"arg0": inputs["src"], "arg1": inputs["kmem"], "arg2": inputs["imem"],
                                     "arg3": inputs["out"]})["arg3"]
        np.testing.assert_array_equal(got, want)


@pytest.mark.iree
def test_iree_3_12_shape_casts_a_transposed_mask():
    """IREE 3.12's fold reshapes the mask (vector.shape_cast 16x8 -> 8x16) where the read
    transposes it: wrong whenever the mask is not uniform. simtify transposes it."""
    text = MASKED_CONTIGUOUS.replace("%src[%c1, %c0]", "%src[%c0, %c0]")  # in bounds, as IREE's read assumes
    theirs = iree_canonicalized(text)
    assert "vector.shape_cast %3 : vector<16x8xi1> to vector<8x16xi1>" in theirs
    ours = rewritten(text, "canonicalize-transfer-gather")
    wrong = 0
    for seed in range(4):
        inputs = inputs_with_indices(text, "g", {"nmem": 100}, seed)
        want = simulate(text, "g", inputs)["out"]
        np.testing.assert_array_equal(simulate(ours, "g", inputs)["out"], want)
        got = simulate(theirs, "g", {"arg0": inputs["src"], "arg1": inputs["nmem"], "arg2": inputs["out"]})["arg2"]
        wrong += not np.array_equal(got, want)
    assert wrong > 0
