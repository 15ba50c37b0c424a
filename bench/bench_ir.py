"""How fast the IR layer reads and writes MLIR (not a test).

1. Parse and print throughput, in ops/s, on one generated function of 10,000 ops that
   cycles through the ops a distributed kernel is made of (vector transfers, strided
   slices, multi-reductions, shuffles, subgroup reductions, index arithmetic, splat
   constants).
2. The wall time of ``simtify opt`` as a whole process on a 100-op file (interpreter
   start, imports, parse, verify, print), next to ``iree-opt``'s on the same file when
   iree-opt is installed.
3. When iree-opt is installed: whole-process nested distribution of IREE's own lit
   inputs (``tests/fixtures/iree_nested``), ``simtify opt --pipeline nested-distribute``
   against ``iree-opt`` running ``iree-llvmgpu-vector-distribute`` on the same file (the
   inputs both distribute); then the same on generated functions of 10 / 100 / 1000 /
   5000 / 6250 distributed units (read, anchor, an elementwise op, write: 4 ops a unit;
   6250 units are 25,003 ops). Beside the lit inputs, a bare xDSL process: the
   interpreter importing the xDSL modules every lit input needs (builtin, the parser,
   printer and declarative formats, func, arith, vector, affine, scf), no simtify code,
   leaving as ``simtify`` does (no interpreter teardown); it compiles its dataclasses'
   methods, as any xDSL program does, where installed simtify runs kept code
   (`simtify.dataclass_methods`).

Prints the measurements and their ratios; every number comes from this one run. Whole
processes run simtify as installed and used before: a copy of the package with its
bytecode compiled (`pip install` compiles it) and its dataclass methods kept by a first
run; the lit inputs are also timed from a source tree never run (no bytecode, no kept
methods: every simtify module and dataclass method compiled anew). Beside the
wall times, the distributions' CPU times (user and system) are compared: on a machine
other work keeps busy, wall times include waiting for a core.

    python bench/bench_ir.py [--ops 10000] [--repeat 3] [--units 10,100,1000,5000,6250] [--lit]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# One line per op; {n} makes names unique. Every op reads only the function's
# arguments, so any prefix of the cycle is a valid function.
CYCLE = [
    "%c{n} = arith.constant dense<0xFF800000> : vector<4xf32>",
    "%r{n} = vector.transfer_read %m[%i, %i], %s {{in_bounds = [true, true]}} : memref<64x64xf32>, vector<4x8xf32>",
    "%t{n} = vector.transpose %v, [1, 0] : vector<4x8xf32> to vector<8x4xf32>",
    "%x{n} = vector.extract_strided_slice %v offsets = [0, 4], sizes = [2, 4], strides = [1, 1] : vector<4x8xf32> to vector<2x4xf32>",
    "%y{n} = vector.multi_reduction <maximumf>, %v, %v4 [1] : vector<4x8xf32> to vector<4xf32>",
    "%e{n} = vector.extract %v[1, %i] : f32 from vector<4x8xf32>",
    "%b{n} = vector.broadcast %s : f32 to vector<4x8xf32>",
    "%a{n} = arith.addf %v, %v : vector<4x8xf32>",
    "%l{n} = affine.linearize_index disjoint [%i, %i] by (4, 16) : index",
    "%d{n}:2 = affine.delinearize_index %i into (8, 8) : index, index",
    "%h{n}, %k{n} = gpu.shuffle xor %s, %o, %w : f32",
    "%g{n} = gpu.subgroup_reduce add %s cluster(size = 16) : (f32) -> f32",
    "vector.transfer_write %v, %m[%i, %i] {{in_bounds = [true, true]}} : vector<4x8xf32>, memref<64x64xf32>",
]

SIGNATURE = "%v: vector<4x8xf32>, %v4: vector<4xf32>, %s: f32, %i: index, %m: memref<64x64xf32>, %o: i32, %w: i32"


LAYOUT = ("#iree_vector_ext.nested_layout<subgroup_tile = [1, 1], batch_tile = [1, 1], outer_tile = [1, 1], "
          "thread_tile = [16, 4], element_tile = [2, 4], subgroup_strides = [0, 0], thread_strides = [4, 1]>")
LAUNCH = ("translation_info = #iree_codegen.translation_info<pipeline = #iree_gpu.pipeline<VectorDistribute> "
          "workgroup_size = [64, 1, 1] subgroup_size = 64>")
UNIT = [
    "%r{n} = vector.transfer_read %in[%c0, %c0], %pad {{in_bounds = [true, true]}} : memref<32x16xf32>, vector<32x16xf32>",
    "%l{n} = iree_vector_ext.to_layout %r{n} to layout(" + LAYOUT + ") : vector<32x16xf32>",
    "%a{n} = arith.addf %l{n}, %l{n} : vector<32x16xf32>",
    "vector.transfer_write %a{n}, %out[%c0, %c0] {{in_bounds = [true, true]}} : vector<32x16xf32>, memref<32x16xf32>",
]


def generate_units(units: int) -> str:
    """A function of `units` independent distributed units (each 4 ops, 3 vector values of
    one register group: 6250 units stay within the distribution's unroll budget)."""
    body = [f"    {line.format(n=n)}" for n in range(units) for line in UNIT]
    return ("builtin.module {\n  func.func @units(%in: memref<32x16xf32>, %out: memref<32x16xf32>) attributes {"
            + LAUNCH + "} {\n    %c0 = arith.constant 0 : index\n    %pad = arith.constant 0.0 : f32\n"
            + "\n".join(body) + "\n    func.return\n  }\n}\n")


def generate(ops: int) -> str:
    """A module with one function of `ops` ops (its `return` included)."""
    body = [f"  {CYCLE[n % len(CYCLE)].format(n=n)}" for n in range(ops - 1)]
    return f"func.func @bench({SIGNATURE}) {{\n" + "\n".join(body) + "\n  return\n}\n"


def best_of(repeat: int, action) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times)


# The environment of the whole processes: simtify as installed, its bytecode compiled
# (`install_compiled`), or a source tree never run (`SOURCE_ENV`: no bytecode written,
# and an empty bytecode cache directory, so none is read).
ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
SOURCE_ENV = dict(ENV, PYTHONDONTWRITEBYTECODE="1", PYTHONPYCACHEPREFIX=tempfile.mkdtemp(prefix="simtify-no-cache-"))


def install_compiled(directory: Path) -> None:
    """Copy the simtify package into `directory` and compile its bytecode there, as
    `pip install` does; the whole processes then import it from there."""
    import simtify

    shutil.copytree(Path(simtify.__file__).parent, directory / "simtify",
                    ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(directory / "simtify")], check=True,
                   stdout=subprocess.DEVNULL)
    path = os.pathsep.join(p for p in (str(directory), os.environ.get("PYTHONPATH")) if p)
    ENV.update(PYTHONPATH=path)
    # a first run keeps the dataclass methods it compiled, as an installation's first run does
    first = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "iree_nested" / FIRST_RUN_INPUT
    subprocess.run(OURS + [str(first), "-o", os.devnull], env=ENV, check=True, stdout=subprocess.DEVNULL)


def timed_run(command: list[str], env: dict[str, str] | None = None) -> tuple[bool, float, float]:
    """(whether it succeeded, its wall time, its CPU time) of one whole process. The CPU
    time (user and system, every thread) is what a busy machine leaves comparable: the
    wall time there includes waiting for a core."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env or ENV)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return done.returncode == 0, wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def process_time(command: list[str], repeat: int) -> tuple[float, float]:
    """Median wall and CPU times of a whole process (start-up included)."""
    runs = [timed_run(command) for _ in range(repeat)]
    if not all(ok for ok, _, _ in runs):
        raise SystemExit(f"failed: {' '.join(command)}")
    return statistics.median(w for _, w, _ in runs), statistics.median(c for _, _, c in runs)


def main() -> int:
    options = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    options.add_argument("--ops", type=int, default=10_000)
    options.add_argument("--small", type=int, default=100, help="ops in the file for the whole-process timing")
    options.add_argument("--repeat", type=int, default=3)
    options.add_argument("--units", default="10,100,1000,5000,6250", help="sizes of the generated distribution inputs")
    options.add_argument("--lit", action="store_true",
                         help="only the whole-process distribution of IREE's lit inputs (needs iree-opt)")
    args = options.parse_args()
    if args.lit:
        iree_opt = shutil.which("iree-opt")
        if iree_opt is None:
            raise SystemExit("--lit needs iree-opt (pip install iree-base-compiler==3.12.0)")
        with tempfile.TemporaryDirectory() as directory:
            install_compiled(Path(directory) / "installed")
            lit_inputs(iree_opt)
        return 0

    from simtify.ir import parse, print_module

    text = generate(args.ops)
    parse(generate(len(CYCLE) + 1))  # load every dialect once, outside the timings
    module = None

    def do_parse():
        nonlocal module
        module = parse(text, "bench.mlir")

    parse_s = best_of(args.repeat, do_parse)
    printed = print_module(module)
    print_s = best_of(args.repeat, lambda: print_module(module))
    assert print_module(parse(printed)) == printed, "printing is not a fixed point"
    count = sum(1 for _ in module.walk()) - 2  # without builtin.module and func.func
    print(f"{count} ops: parse+verify {count / parse_s:,.0f} ops/s ({parse_s:.2f} s), print {count / print_s:,.0f} ops/s ({print_s:.3f} s)")
    print(f"  print is {parse_s / print_s:.1f}x faster than parse; round trip {count / (parse_s + print_s):,.0f} ops/s")

    with tempfile.TemporaryDirectory() as directory:
        install_compiled(Path(directory) / "installed")
        small = Path(directory) / "small.mlir"
        small.write_text(generate(args.small))
        version, _ = process_time([sys.executable, "-m", "simtify.cli.main", "--version"], args.repeat)
        print(f"simtify --version, whole process: {version:.3f} s")
        ours, _ = process_time([sys.executable, "-m", "simtify.cli.main", "opt", str(small)], args.repeat)
        print(f"simtify opt, {args.small}-op file, whole process: {ours:.2f} s")
        iree_opt = shutil.which("iree-opt")
        if iree_opt is None:
            print("iree-opt not installed (pip install iree-base-compiler==3.12.0): no comparison")
        else:
            theirs, _ = process_time([iree_opt, str(small)], args.repeat)
            print(f"iree-opt,    {args.small}-op file, whole process: {theirs:.2f} s  (simtify opt / iree-opt = {ours / theirs:.1f}x)")
        idle, _ = process_time([sys.executable, "-c", "import simtify.ir; simtify.ir.make_context()"], args.repeat)
        print(f"  of which interpreter start + imports + context: {idle:.2f} s ({idle / ours:.0%})")
        if iree_opt is not None:
            distribution(iree_opt, Path(directory), [int(u) for u in args.units.split(",")], args.repeat)
    return 0


IREE_DISTRIBUTE = "--pass-pipeline=builtin.module(func.func(iree-llvmgpu-vector-distribute))"


OURS = [sys.executable, "-m", "simtify.cli.main", "opt", "--pipeline", "nested-distribute"]
FIRST_RUN_INPUT = "main__12_distribute_transfer_read_write.mlir"
# The xDSL modules every lit input's distribution needs, and no simtify code: a bare xDSL
# process, which compiles its dataclasses' methods as any xDSL program does.
BARE_XDSL = [sys.executable, "-c", "import os, xdsl.dialects.builtin, xdsl.parser, xdsl.printer, "
              "xdsl.irdl.declarative_assembly_format, xdsl.dialects.func, xdsl.dialects.arith, "
              "xdsl.dialects.vector, xdsl.dialects.affine, xdsl.dialects.scf; os._exit(0)"]


def distribution(iree_opt: str, directory: Path, units: list[int], repeat: int) -> None:
    """Whole-process nested distribution, simtify against iree-opt: IREE's lit inputs, then
    generated functions of growing size."""
    lit_inputs(iree_opt)
    scaling(iree_opt, directory, units, repeat)


def lit_inputs(iree_opt: str) -> None:
    """IREE's lit inputs, each file once through simtify (installed and from source),
    iree-opt and a bare xDSL process, interleaved; the files both tools distribute count."""
    lit = sorted((Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "iree_nested").glob("*.mlir"))
    ours = theirs = source = bare_xdsl = ours_cpu = theirs_cpu = bare_cpu = 0.0
    both = 0
    for p in lit:
        runs = [timed_run(cmd + [str(p)]) for cmd in (OURS, [iree_opt, IREE_DISTRIBUTE])]
        uncompiled = timed_run(OURS + [str(p)], SOURCE_ENV)
        bare = timed_run(BARE_XDSL)
        if all(ok for ok, _, _ in runs) and bare[0]:
            both += 1
            ours, theirs, source = ours + runs[0][1], theirs + runs[1][1], source + uncompiled[1]
            ours_cpu, theirs_cpu = ours_cpu + runs[0][2], theirs_cpu + runs[1][2]
            bare_xdsl, bare_cpu = bare_xdsl + bare[1], bare_cpu + bare[2]
    print(f"nested distribution of IREE's lit inputs ({both} of {len(lit)} files both distribute), "
          f"whole processes, summed: simtify {ours:.2f} s, iree-opt {theirs:.2f} s "
          f"(simtify / iree-opt = {ours / theirs:.1f}x)")
    print(f"  CPU time: simtify {ours_cpu:.2f} s, iree-opt {theirs_cpu:.2f} s ({ours_cpu / theirs_cpu:.1f}x)")
    print(f"  per file: simtify {ours / both * 1e3:.0f} ms ({ours_cpu / both * 1e3:.0f} ms CPU), "
          f"iree-opt {theirs / both * 1e3:.0f} ms ({theirs_cpu / both * 1e3:.0f} ms CPU)")
    print(f"  a bare xDSL process importing the modules these inputs need (no simtify code; its dataclass methods "
          f"compiled): "
          f"{bare_xdsl / both * 1e3:.0f} ms a file ({bare_cpu / both * 1e3:.0f} ms CPU), "
          f"{bare_xdsl / theirs:.1f}x iree-opt ({bare_cpu / theirs_cpu:.1f}x CPU)")
    print(f"  a source tree never run (no bytecode, no kept dataclass methods): simtify {source:.2f} s "
          f"({source / theirs:.1f}x)")


def scaling(iree_opt: str, directory: Path, units: list[int], repeat: int) -> None:
    """Generated functions of `units` distributed units, simtify against iree-opt."""
    print("| units | ops | simtify s | iree-opt s | simtify / iree-opt | CPU time: simtify / iree-opt "
          "| simtify ms per unit |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for n in units:
        path = directory / f"units_{n}.mlir"
        path.write_text(generate_units(n))
        times = max(1, repeat if n <= 1000 else 1)
        ours, ours_cpu = process_time(OURS + [str(path)], times)
        theirs, theirs_cpu = process_time([iree_opt, IREE_DISTRIBUTE, str(path)], times)
        print(f"| {n} | {len(UNIT) * n + 3} | {ours:.2f} | {theirs:.2f} | {ours / theirs:.1f} "
              f"| {ours_cpu / theirs_cpu:.1f} | {ours / n * 1e3:.2f} |")


if __name__ == "__main__":
    sys.exit(main())
