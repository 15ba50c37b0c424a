"""The reduction of a dispatch as a configured ``linalg.generic`` on memrefs: the input
`reduction-from-config` turns into a SIMT kernel.

    func.func @reduce(%in: memref<128x4096xf16>, %out: memref<4096xf32>) {
      linalg.generic {indexing_maps = [(d0, d1) -> (d1, d0), (d0, d1) -> (d0)], ...}
          ins(%in) outs(%out) attrs = {lowering_config = #iree_gpu.lowering_config<{...}>} {
      ^bb0(%a: f16, %acc: f32):
        %x = arith.extf %a : f16 to f32
        %s = arith.addf %x, %acc : f32
        linalg.yield %s : f32
      }
    }

The input keeps its memory order (the dispatch's `input_dims`), so its map is the
dispatch's permutation; a matvec adds a vector read through the reduction dims.
"""

from __future__ import annotations

from collections.abc import Sequence

from simtify.tune.problem import Dispatch

FUNCTION = "reduce"


def _memref(sizes: Sequence[int], elt: str) -> str:
    return f"memref<{'x'.join(map(str, sizes))}x{elt}>" if sizes else f"memref<{elt}>"


def _extend(value: str, src: str, dst: str, name: str) -> tuple[list[str], str]:
    if src == dst:
        return [], value
    op = "arith.extsi" if src.startswith("i") else "arith.extf"
    return [f"%{name} = {op} {value} : {src} to {dst}"], f"%{name}"


def program_text(dispatch: Dispatch, config: str, sizes: Sequence[int] | None = None) -> str:
    """The dispatch's reduction with lowering config `config` (attribute text), on
    `sizes` (default: the dispatch's; a sample may shrink them, keeping the rank)."""
    sizes = tuple(sizes or dispatch.sizes)
    n = len(sizes)
    dt = dispatch.dtype
    elt, acc = dt.name, dt.accumulator
    par = list(dispatch.parallel_dims)
    dims = ", ".join(f"d{i}" for i in range(n))

    def amap(ds) -> str:
        return f"affine_map<({dims}) -> ({', '.join(f'd{d}' for d in ds)})>"

    in_type = _memref([sizes[d] for d in dispatch.input_dims], elt)
    out_type = _memref([sizes[d] for d in par], acc)
    args = [f"%in: {in_type}"]
    ins = ["%in"]
    types = [in_type]
    maps = [amap(dispatch.input_dims)]
    block = [f"%a: {elt}"]
    body, a = _extend("%a", elt, acc, "x")
    combine = "arith.addi" if acc.startswith("i") else "arith.addf"
    if dispatch.operation == "matvec":
        v_type = _memref([sizes[d] for d in dispatch.vector_dims], elt)
        args.append(f"%v: {v_type}")
        ins.append("%v")
        types.append(v_type)
        maps.append(amap(dispatch.vector_dims))
        block.append(f"%b: {elt}")
        more, b = _extend("%b", elt, acc, "y")
        body += more
        mul = "arith.muli" if acc.startswith("i") else "arith.mulf"
        body.append(f"%p = {mul} {a}, {b} : {acc}")
        a = "%p"
    body.append(f"%s = {combine} {a}, %acc : {acc}")
    body.append(f"linalg.yield %s : {acc}")
    args.append(f"%out: {out_type}")
    maps.append(amap(par))
    iters = ", ".join('"reduction"' if d >= dispatch.num_parallel else '"parallel"' for d in range(n))
    lines = "\n    ".join(body)
    return (f"func.func @{FUNCTION}({', '.join(args)}) {{\n"
            f"  linalg.generic {{indexing_maps = [{', '.join(maps)}], iterator_types = [{iters}]}}\n"
            f"      ins({', '.join(ins)} : {', '.join(types)}) outs(%out : {out_type})\n"
            f"      attrs = {{lowering_config = {config}}} {{\n"
            f"  ^bb0({', '.join(block)}, %acc: {acc}):\n    {lines}\n  }}\n  return\n}}\n")
