"""`simtify run` and `simtify check`: execute MLIR on the simulated GPU.

``run`` executes one function (``func.func``, or ``gpu.func`` in a ``gpu.module``) on
given or random inputs; memref arguments are inputs and outputs. ``check`` runs two
programs on the same random inputs with sanitizers on and compares every memref
argument afterwards: the test every transformation must pass.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from math import prod

import numpy as np

from simtify.cli.progress import Progress
from simtify.errors import SimtifyError
from simtify.sim.compare import compare


def _sizes(text: str) -> tuple[int, ...]:
    parts = text.replace("x", ",").split(",")
    if not all(p.strip().isdigit() for p in parts):
        raise argparse.ArgumentTypeError(f"'{text}' is not X[,Y,Z] (positive integers)")
    sizes = tuple(int(p) for p in parts)
    if not 1 <= len(sizes) <= 3 or any(s < 1 for s in sizes):
        raise argparse.ArgumentTypeError(f"'{text}' must be 1 to 3 positive sizes")
    return sizes


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--func", required=True, help="function name (without @)")
    p.add_argument("--grid", type=_sizes, help="workgroups X[,Y,Z] (default: what the function records: a pipeline's "
                   "simtify.workgroup_count, gpu.known_grid_size, an IREE dispatch's workgroup scf.forall or count "
                   "hint; else what its writes imply, e.g. the output's rows over a tile placed by block_id; else 1)")
    p.add_argument("--block", type=_sizes, help="threads per workgroup X[,Y,Z] (default: the function's translation_info)")
    p.add_argument("--target", default="gfx942", help="gfx942, gfx950, sm_90 or xe (default gfx942)")
    p.add_argument("--subgroup-size", type=int, help="lanes per subgroup (default: translation_info, else the target's)")
    p.add_argument("--level", choices=("simt", "workgroup"), help="force the program level (default: detected)")
    p.add_argument("--arg", action="append", default=[], metavar="NAME=FILE.npy|random[:seed]",
                   help="an argument's value; repeat for each argument (an IREE dispatch function's buffers "
                        "are its HAL bindings: binding0, binding1, ..)")
    p.add_argument("--shape", action="append", default=[], metavar="NAME=AxB",
                   help="the whole shape of a memref argument with dynamic dims (memref<?xf16>: --shape NAME=256), "
                        "for its random input; repeat for each such argument")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--jobs", type=int, help="processes sharing the workgroups (default: every core when the "
                                            "launch is large; 1: one process)")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bar (one is drawn on stderr when it is a terminal and the run takes over ~2 s)")


def add_parser(sub, name: str, help_text: str) -> None:
    if name == "run":
        p = sub.add_parser(name, help=help_text, description=__doc__)
        p.add_argument("file", metavar="FILE.mlir")
        _common(p)
        p.add_argument("--out", metavar="FILE.npz",
                       help="save the memref arguments the kernel wrote, and returned values as return0, return1, ..")
        p.add_argument("--sanitize", action="store_true",
                       help="check bounds, races, lane write conflicts, uninitialised reads, barriers")
        p.add_argument("--stats", action="store_true", help="print the cost counters")
        p.set_defaults(run=run_cmd)
    else:
        p = sub.add_parser(name, help=help_text, description=__doc__)
        p.add_argument("ref", metavar="REF.mlir")
        p.add_argument("new", metavar="NEW.mlir")
        _common(p)
        p.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
        p.add_argument("--rtol", type=float, help="relative tolerance for floats (default by type)")
        p.add_argument("--atol", type=float, help="absolute tolerance for floats (default by type)")
        p.set_defaults(run=check_cmd)


def _load_module(path: str):
    from simtify.cli.opt_cmd import read_source
    from simtify.ir import parse

    text, name = read_source(path)
    return parse(text, name)


def _shapes(specs: list[str]) -> dict[str, tuple[int, ...]]:
    """``NAME=AxB`` -> {NAME: (A, B)}."""
    out: dict[str, tuple[int, ...]] = {}
    for spec in specs:
        name, sep, value = spec.partition("=")
        parts = value.split("x")
        if not sep or not name or not all(p.isdigit() for p in parts):
            raise SimtifyError(f"'{spec}' is not NAME=AxB (positive sizes, e.g. src=256 or a=64x32)", "--shape")
        if name in out:
            raise SimtifyError(f"argument '{name}' is given two shapes; give it one", "--shape")
        out[name] = tuple(int(p) for p in parts)
    return out


def _arguments(func, specs: list[str], default_seed: int | None = None,
               shape_specs: list[str] = ()) -> dict[str, np.ndarray]:
    """Values for the function's arguments from ``NAME=FILE.npy`` / ``NAME=random[:seed]``,
    the dynamic dims of random memrefs from ``--shape NAME=AxB``."""
    from simtify.sim import function_args
    from simtify.sim.arguments import (argument_shape, check_shapes, pointer_arguments, pointer_extent, random_array,
                                       refuse_tensor_argument)

    types = dict(function_args(func))
    for name, t in types.items():
        refuse_tensor_argument(name, t)
    shapes = _shapes(shape_specs)
    check_shapes(list(types.items()), shapes)
    given: dict[str, str] = {}
    for spec in specs:
        name, sep, value = spec.partition("=")
        if not sep or not name or not value:
            raise SimtifyError(f"'{spec}' is not NAME=FILE.npy or NAME=random[:seed]", "--arg")
        if name not in types:
            raise SimtifyError(f"the function has no argument '{name}' (arguments: {', '.join(types)})", "--arg")
        if name in given:
            raise SimtifyError(f"argument '{name}' is given twice ({name}={given[name]} and {spec}); give it once",
                               "--arg")
        given[name] = value
    out = {}
    names = list(types)
    pointers = pointer_arguments(func, names)
    # a raw address's memory reaches as far as the other arguments say: drawn after them
    for i, (name, t) in sorted(enumerate(types.items()), key=lambda item: item[1][0] in pointers):
        value = given.get(name)
        if value is None:
            if default_seed is None:
                raise SimtifyError(f"argument '{name}' is missing; give --arg {name}=FILE.npy or {name}=random", "--arg")
            value = f"random:{default_seed + i}"
        if value == "random" or value.startswith("random:"):
            seed_text = value.partition(":")[2] or str(i)
            try:
                seed = int(seed_text)
            except ValueError:
                raise SimtifyError(f"'{value}': the seed must be an integer", "--arg") from None
            if seed < 0:
                raise SimtifyError(f"'{value}': the seed must not be negative", "--arg")
            if name in pointers:
                shape, t = (pointer_extent(func, names, name, out),), pointers[name]
            else:
                shape = argument_shape(name, t, shapes)
            out[name] = random_array(t, shape, np.random.default_rng(seed))
        else:
            try:
                out[name] = np.load(value, allow_pickle=False)
            except (OSError, ValueError) as e:
                raise SimtifyError(f"cannot load '{value}': {e}", "--arg") from None
            if not isinstance(out[name], np.ndarray):  # np.load opens a .npz as an archive of arrays
                out[name].close()
                raise SimtifyError(f"'{value}' is a .npz archive; give one .npy file per argument", "--arg")
            if name in shapes and out[name].shape != shapes[name]:
                raise SimtifyError(f"'{value}' holds a {'x'.join(map(str, out[name].shape))} array, but --shape "
                                   f"gives '{name}' {'x'.join(map(str, shapes[name]))}", "--shape")
    return {name: out[name] for name in names}


def _simulate(module, args, inputs, sanitize: bool, progress=None):
    from simtify.ir import location_of
    from simtify.sim import find_function, run
    from simtify.sim.launch import first_simt_op

    if args.subgroup_size is not None and args.subgroup_size < 1:
        raise SimtifyError(f"subgroup size {args.subgroup_size} must be positive", "--subgroup-size")
    simt_op = first_simt_op(find_function(module, args.func)) if args.level == "workgroup" else None
    if simt_op is not None:
        raise SimtifyError(f"@{args.func} is SIMT-level code ('{simt_op.name}' at {location_of(simt_op)}); it cannot "
                           "run as one logical thread per workgroup: drop --level workgroup", "--level")
    return run(module, args.func, inputs, grid=args.grid, block=args.block, target=args.target,
               sanitize=sanitize, subgroup_size=args.subgroup_size, level=args.level, progress=progress,
               jobs=args.jobs)


def run_cmd(args) -> int:
    from simtify.sim import find_function
    from simtify.sim.launch import detect_level

    if args.out and not args.out.endswith(".npz"):
        # numpy would append .npz: the file written would not be the one named
        raise SimtifyError(f"'{args.out}' does not end in .npz; --out writes a numpy .npz archive", "--out")
    t0 = time.perf_counter()
    module = _load_module(args.file)
    t1 = time.perf_counter()
    func = find_function(module, args.func)
    if args.block is not None and prod(args.block) != 1 and (args.level or detect_level(func)) == "workgroup":
        raise SimtifyError(f"@{args.func} is a workgroup-level function (one logical thread per workgroup, no "
                           "thread ids or lane ops): --block sets the threads of a SIMT-level function", "--block")
    inputs = _arguments(func, args.arg, shape_specs=args.shape)
    t2 = time.perf_counter()
    with Progress(not args.no_progress, unit="workgroup") as bar:
        result = _simulate(module, args, inputs, args.sanitize, bar.stage_of(f"@{args.func}"))
    t3 = time.perf_counter()
    if args.out:
        try:
            returned = {f"return{i}": np.asarray(r) for i, r in enumerate(result.returns)}
            np.savez(args.out, **result.outputs, **returned)
        except OSError as e:
            raise SimtifyError(f"cannot write: {e.strerror or e}", args.out) from None
    t4 = time.perf_counter()
    timing = {"parse_s": t1 - t0, "simulate_s": result.timing["simulate_s"], "io_s": (t2 - t1) + (t4 - t3)}
    L = result.launch
    for name, n in result.unwritten.items():
        print(f"warning: {name}: {n} of {result.outputs[name].size} elements never written by the launch (grid "
              f"{list(L.grid)}{'' if args.grid else ', the default'}); --grid sets it", file=sys.stderr)
    if args.json:
        print(json.dumps({"outputs": sorted(result.outputs), "stats": result.stats,
                          "sanitizer": [f.to_json() for f in result.findings], "timing": timing,
                          "launch": {"grid": list(L.grid), "block": list(L.block),
                                     "subgroup_size": L.subgroup_size, "level": L.level},
                          "unwritten": result.unwritten}))
    else:
        partial = L.threads % L.subgroup_size if L.level == "simt" else 0
        last = f" (last subgroup: {partial} of {L.subgroup_size} lanes active)" if partial else ""
        print(f"ran @{args.func}: {L.level} level, grid {list(L.grid)}, block {list(L.block)}, "
              f"subgroup {L.subgroup_size}{last}; wrote {', '.join(sorted(result.outputs)) or 'nothing'}"
              f"{f', returned {len(result.returns)} value(s) (return0.. in --out)' if result.returns else ''} "
              f"in {timing['simulate_s']:.3f} s")
        if args.stats:
            for k, v in result.stats.items():
                print(f"  {k}: {v}")
        for f in result.findings:
            print(f"sanitizer: {f}")
    return 1 if result.findings else 0


def check_cmd(args) -> int:
    from simtify.sim import find_function, function_args

    if args.seed < 0:
        raise SimtifyError(f"the seed {args.seed} must not be negative", "--seed")
    for flag, tol in (("--rtol", args.rtol), ("--atol", args.atol)):
        if tol is not None and not tol >= 0:
            raise SimtifyError(f"the tolerance {tol} must be a number >= 0", flag)
    ref_module = _load_module(args.ref)
    new_module = _load_module(args.new)
    ref_func = find_function(ref_module, args.func)
    new_func = find_function(new_module, args.func)
    ref_sig = [(n, str(t)) for n, t in function_args(ref_func)]
    new_sig = [(n, str(t)) for n, t in function_args(new_func)]
    if [t for _, t in ref_sig] != [t for _, t in new_sig]:
        raise SimtifyError(f"the two functions take different arguments: {ref_sig} vs {new_sig}", args.new)
    inputs = _arguments(ref_func, args.arg, default_seed=args.seed, shape_specs=args.shape)
    new_inputs = {n2: inputs[n1].copy() for (n1, _), (n2, _) in zip(ref_sig, new_sig)}
    labels = {"ref": f"ref {args.ref}", "new": f"new {args.new}"}
    with Progress(not args.no_progress, labels, unit="workgroup") as bar:
        ref = _simulate(ref_module, args, {k: v.copy() for k, v in inputs.items()}, True, bar.stage_of("ref"))
        new = _simulate(new_module, args, new_inputs, True, bar.stage_of("new"))
    rows, equal = [], True
    for (n1, t), (n2, _) in zip(function_args(ref_func), new_sig):
        if n1 not in ref.arguments:
            continue
        ok, err = compare(ref.arguments[n1], new.arguments[n2], args.rtol, args.atol, t)
        equal &= ok
        rows.append({"argument": n2, "equal": ok, "max_error": err})
    for i, (a, b, t) in enumerate(zip(ref.returns, new.returns, ref_func.function_type.outputs.data)):
        ok, err = compare(np.asarray(a), np.asarray(b), args.rtol, args.atol, t)
        equal &= ok
        rows.append({"argument": f"return{i}", "equal": ok, "max_error": err})
    findings = [("ref", f) for f in ref.findings] + [("new", f) for f in new.findings]
    if args.json:
        print(json.dumps({"equal": equal, "results": rows,
                          "sanitizer": [dict(f.to_json(), program=p) for p, f in findings],
                          "stats": {"ref": ref.stats, "new": new.stats}}))
    else:
        for r in rows:
            print(f"{r['argument']}: {'equal' if r['equal'] else 'MISMATCH'} (max error {r['max_error']:.3g})")
        for p, f in findings:
            print(f"sanitizer ({p}): {f}")
        print("equal" if equal and not findings else "NOT equal" if not equal else "equal, with sanitizer findings")
    return 0 if equal and not findings else 1
