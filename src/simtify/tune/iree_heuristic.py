"""IREE 3.12's choice of pipeline and lowering config for a reduction, reproduced.

The LLVMGPU `setRootConfig` (KernelConfig.cpp) tries, for a reduction ``linalg.generic``:

1. if the input's outermost dim is a reduction dim (`isOuterReduction`), TileAndFuse
   (`setTileAndFuseLoweringConfig`, ConfigUtils.cpp);
2. VectorDistribute (`setReductionConfig`, ReductionConfigUtils.cpp), which gives up
   when no subgroup size divides the reduction, or the element width is not a power
   of two >= 4 bits, or it exceeds the widest load;
3. TileAndFuse again; with no parallel dim to tile it fails and
4. `setRootDefaultConfig` takes it: the Distribute pipeline, one thread.

`setReductionConfig` in short, on the dispatch space (`simtify.tune.problem.Dispatch`):
the reduction size is the innermost reduction dim, or all of them when that dim is no
multiple of the preferred subgroup size; the subgroup size is the first choice that
divides it; each thread loads ``128 / bits`` elements (halved until the subgroups
divide the per-load count); a workgroup has ``reduction / loads`` threads, at most 1024
(or one subgroup when the parallel size exceeds 4 x the number of WGPs), halved while
the parallel size exceeds 256 and each thread would read fewer than 8 vectors; the
partial reduction is ``gcd(threads x loads, innermost reduction size)``; lanes and
subgroups go to the innermost reduction dim. For a matvec on AMD targets
the workgroup also takes the largest power of two below ``threads / 4`` that divides
the first parallel dim.

What IREE knows of our targets (`IREE_TARGETS`): ``--iree-rocm-target=gfx942`` and
``gfx950`` name an architecture but no chip, so IREE assumes 512 WGPs (not 304 or
256). IREE 3.12 has no sm_90 or Xe target (iree-compile reports "missing GPU target");
for them the same rules run with the target's subgroup sizes, and the suggestion says so.

The TileAndFuse and Distribute configs are printed as IREE prints them, and translated
(`Suggestion.config`) into the reduction-config vocabulary so that the kernel generator
can build and the simulator can measure a kernel that does the same work: each thread
owns ``thread`` outputs and reduces them alone, ``reduction`` elements per loop step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import gcd, prod

from simtify.layout.basis import Basis
from simtify.layout.reduction_config import ReductionConfig
from simtify.tune.problem import Dispatch

VECTOR_DISTRIBUTE = "VectorDistribute"
TILE_AND_FUSE = "TileAndFuse"
DISTRIBUTE = "Distribute"


@dataclass(frozen=True)
class IreeTarget:
    """The target description IREE's heuristics read (`#iree_gpu.target`)."""

    arch: str
    subgroup_size_choices: tuple[int, ...]
    max_workgroup_size: int = 1024
    wgp_count: int | None = None  # None: no chip named; IREE assumes 512
    simds_per_wgp: int | None = 4
    max_load_bits: int | None = 128
    known: bool = True  # whether IREE 3.12 has this target at all

    @property
    def preferred_subgroup_size(self) -> int:
        return self.subgroup_size_choices[0]

    @property
    def is_rocm(self) -> bool:
        return self.arch.startswith("gfx")


IREE_TARGETS = {
    "gfx942": IreeTarget("gfx942", (64,)),
    "gfx950": IreeTarget("gfx950", (64,)),
    # IREE 3.12 knows no sm_90 (Ampere-class details would apply: subgroup 32, no
    # chip, no load width, no SIMD count) and no Xe target.
    "sm_90": IreeTarget("sm_90", (32,), simds_per_wgp=None, max_load_bits=None, known=False),
    "xe": IreeTarget("xe", (16, 32), simds_per_wgp=None, max_load_bits=None, known=False),
}


@dataclass(frozen=True)
class Suggestion:
    """A pipeline and lowering config for one dispatch."""

    pipeline: str
    workgroup_size: int
    subgroup_size: int | None
    lowering_config: str  # the attribute text, as IREE prints it
    config: ReductionConfig | None  # the same kernel in reduction-config terms (None: not expressible)
    dispatch: Dispatch
    notes: tuple[str, ...] = field(default=())

    def to_json(self) -> dict:
        return {"pipeline": self.pipeline, "workgroup_size": self.workgroup_size,
                "subgroup_size": self.subgroup_size, "lowering_config": self.lowering_config}


def iree_bits(dispatch: Dispatch) -> int:
    """The element width IREE's heuristics see: iree-compile demotes f64 to f32 by
    default (``--iree-input-demote-f64-to-f32``); i64 stays (measured with 3.12)."""
    return 32 if dispatch.dtype.name == "f64" else dispatch.dtype.bits


def _ints(values) -> str:
    return "[" + ", ".join(str(int(v)) for v in values) + "]"



def _pow2_ceil(n: int) -> int:
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


def _log2_floor(n: int) -> int:
    return int(n).bit_length() - 1


# --- VectorDistribute ----------------------------------------------------------------


def vector_distribute(dispatch: Dispatch, target: IreeTarget) -> Suggestion | str:
    """`setReductionConfig`; a string saying why it gives up otherwise."""
    bounds = dispatch.sizes
    par, red = dispatch.parallel_dims, dispatch.reduction_dims
    if not red:
        return "no reduction dim"
    preferred = target.preferred_subgroup_size
    reduction_size = bounds[red[-1]]
    if reduction_size % preferred:
        reduction_size = prod(bounds[d] for d in red)
    subgroup = next((s for s in target.subgroup_size_choices if reduction_size % s == 0), 0)
    if not subgroup:
        return (f"no subgroup size ({', '.join(map(str, target.subgroup_size_choices))}) divides the reduction "
                f"size {reduction_size}")
    bits = iree_bits(dispatch)
    if bits < 4 or bits & (bits - 1):
        return f"{bits}-bit elements are not a power of two of at least 4 bits"
    load_bits = target.max_load_bits or 128
    if bits > load_bits:
        return f"{bits}-bit elements are wider than a {load_bits}-bit load"
    loads = load_bits // bits
    while (reduction_size // loads) % subgroup:
        loads //= 2
    parallel_size = prod(bounds[d] for d in par)
    max_wg = target.max_workgroup_size
    wgps = target.wgp_count or 512
    simds = target.simds_per_wgp or 4
    if parallel_size > wgps * simds:
        max_wg = preferred
    wg = reduction_size // loads
    if wg > max_wg:
        wg = gcd(wg, max_wg)
    while parallel_size > 256 and (wg // 2) % subgroup == 0 and reduction_size // (wg * loads) < 8:
        wg //= 2
        parallel_size //= 2
    # getVectorDistributeReductionConfig
    rank = dispatch.rank
    workgroup = [1 if d in par else 0 for d in range(rank)]
    if target.is_rocm and dispatch.operation == "matvec" and par:
        idx = next(d for d in par if bounds[d] != 1)
        bound = bounds[idx]
        factor, f = 1, 2
        while f < wg // 4 and bound % f == 0 and bound >= f:
            factor = f
            f *= 2
        workgroup[idx] = factor
    thread = [0] * rank
    partial = [0] * rank
    lanes = [1] * rank
    subgroups = [1] * rank
    for d in red:
        thread[d] = 1
        partial[d] = 1
    last = red[-1]
    last_size = bounds[last]
    while loads > 1 and last_size % loads:
        loads //= 2
    chunk = gcd(wg * loads, last_size)
    basis = subgroup
    while chunk % (basis * loads):
        basis >>= 1
    sgs = chunk // (basis * loads) or 1
    partial[last] = chunk
    thread[last] = loads
    lanes[last] = basis
    subgroups[last] = sgs
    ident = list(range(rank))
    text = ("#iree_gpu.lowering_config<{" + f"lane_basis = [{_ints(lanes)}, {_ints(ident)}], "
            f"partial_reduction = {_ints(partial)}, subgroup_basis = [{_ints(subgroups)}, {_ints(ident)}], "
            f"thread = {_ints(thread)}, workgroup = {_ints(workgroup)}" + "}>")
    config = ReductionConfig(tuple(workgroup), tuple(partial), tuple(thread), Basis(tuple(lanes), tuple(ident)),
                             Basis(tuple(subgroups), tuple(ident)))
    notes = []
    if basis * sgs != wg:
        notes.append(f"lanes x subgroups = {basis * sgs} threads, but the workgroup has {wg}")
    return Suggestion(VECTOR_DISTRIBUTE, wg, subgroup, text, config, dispatch, tuple(notes))


# --- TileAndFuse ---------------------------------------------------------------------


def _reduction_tiling_factor(size: int) -> int:
    """IREE's `getReductionTilingFactor`: 4, else the smallest prime below 50 dividing."""
    if size % 4 == 0:
        return 4
    for p in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47):
        if size % p == 0:
            return p
    return 1


def tile_and_fuse(dispatch: Dispatch, target: IreeTarget) -> Suggestion | str:
    """`setTileAndFuseLoweringConfig` for one reduction generic (no pack/unpack, no
    reshapes in the dispatch: every workgroup tile multiple is 1)."""
    bounds = list(dispatch.sizes)
    partitionable = list(dispatch.parallel_dims)
    if not partitionable:
        return "no parallel dim to tile"
    rank = dispatch.rank
    subgroup = target.preferred_subgroup_size
    bits = iree_bits(dispatch)
    min_bits = min(bits, 64 if dispatch.dtype.accumulator == "i64" else 32)
    representative = bits  # the input's map is a permutation
    scale = max(8 // min_bits, 1)
    state = {"vectorizable": bits & (bits - 1) == 0}
    workgroup = [0] * rank
    thread = [0] * rank
    threads_per_dim = [1] * rank
    flat = [1]

    def distribute(num_threads: int, loss: int | None) -> int:
        flat[0] = 1
        for d in partitionable:
            workgroup[d] = 1
            thread[d] = 1
            threads_per_dim[d] = 1
        wg_dim = 0
        for d in reversed(partitionable):
            bound = bounds[d]
            candidates = []
            nve = max(4, 128 // representative)
            vec_candidate = nve * num_threads
            while state["vectorizable"] and vec_candidate > bound and nve > 4:
                nve //= 2
                vec_candidate = nve * num_threads
            if state["vectorizable"] and wg_dim == 0 and loss is None:
                candidates.append(vec_candidate)
            i = max(1, _pow2_ceil(num_threads))
            while i >= 1:
                candidates.append(i)
                i >>= 1
            chosen = 1
            for cand in candidates:
                scaled = cand * scale
                if bound % scaled:
                    if loss is None:
                        continue
                    idle = cand - bound % scaled
                    if idle > cand // loss:
                        continue
                if len(partitionable) == 1 and cand > subgroup and -(-bound // scaled) <= 2:
                    continue
                if state["vectorizable"] and wg_dim == 0 and loss is None and cand % nve == 0:
                    idle_threads = len(partitionable) == 1 and cand <= subgroup
                    vsize = 1 if idle_threads else nve
                    thread[d] = vsize * scale
                    chosen = cand // vsize
                    num_threads //= cand // vsize
                else:
                    maybe = cand
                    if num_threads % cand:
                        maybe = min(1 << _log2_floor(cand), num_threads)
                        idle = cand % maybe
                        if idle and (loss is None or idle > cand // loss):
                            continue
                    if wg_dim == 0:
                        state["vectorizable"] = False
                    thread[d] = scale
                    chosen = maybe
                    num_threads //= maybe
                workgroup[d] = scaled
                break
            threads_per_dim[d] = chosen
            flat[0] *= chosen
            if num_threads == 1:
                break
            wg_dim += 1
        return num_threads

    if distribute(subgroup, None) != 1:
        threads = max(max(subgroup, 32), min(4 * subgroup, 1))
        loss = 32
        while loss >= 1:
            if distribute(threads, loss) == 1:
                break
            loss >>= 1
    loop_tiles = [0] * rank
    vector = 1
    for i in reversed(range(rank)):
        if i >= dispatch.num_parallel or workgroup[i] == 0:
            t = _reduction_tiling_factor(bounds[i])
            if vector * t > 32:
                t = 1
            vector *= t
            loop_tiles[i] = t
    entries = []
    if any(loop_tiles):
        entries.append(f"reduction = {_ints(loop_tiles)}")
    entries += [f"thread = {_ints(thread)}", f"workgroup = {_ints(workgroup)}"]
    text = "#iree_gpu.lowering_config<{" + ", ".join(entries) + "}>"
    config, note = _thread_serial_config(dispatch, workgroup, thread, threads_per_dim, loop_tiles, subgroup)
    notes = (note,) if note else ()
    return Suggestion(TILE_AND_FUSE, flat[0], subgroup, text, config, dispatch, notes)


def _thread_serial_config(dispatch: Dispatch, workgroup, thread, threads_per_dim, loop_tiles,
                          subgroup: int) -> tuple[ReductionConfig | None, str | None]:
    """A TileAndFuse reduction in reduction-config terms: the threads spread over the
    parallel dims only (lanes from the innermost dim out, then subgroups), each owning
    `thread` outputs per dim and `loop_tiles` reduction elements per loop step, so the
    final reduction is within each thread. Threads beyond the workgroup's (a workgroup
    smaller than a subgroup) replicate its lanes."""
    rank = dispatch.rank
    lanes = [1] * rank
    sgs = [1] * rank
    left = subgroup
    for d in reversed(dispatch.parallel_dims):
        t = threads_per_dim[d]
        lane = gcd(t, left)
        lanes[d] = lane
        sgs[d] = t // lane
        left //= lane
    th = [max(thread[d], 1) if d < dispatch.num_parallel else max(loop_tiles[d], 1) for d in range(rank)]
    partial = [0 if d < dispatch.num_parallel else max(loop_tiles[d], 1) for d in range(rank)]
    wg = [workgroup[d] if d < dispatch.num_parallel else 0 for d in range(rank)]
    for d in dispatch.parallel_dims:
        if wg[d] % (lanes[d] * sgs[d] * th[d]):
            return None, "no reduction-config equivalent (the workgroup tile is no multiple of its threads)"
    if left > 1:
        lane_basis = Basis(tuple([left] + lanes), tuple(range(1, rank + 1)))
    else:
        lane_basis = Basis(tuple(lanes), tuple(range(rank)))
    return ReductionConfig(tuple(wg), tuple(partial), tuple(th), lane_basis, Basis(tuple(sgs), tuple(range(rank)))), None


# --- Distribute ------------------------------------------------------------------------


def distribute_default(dispatch: Dispatch, target: IreeTarget) -> Suggestion:
    """`setRootDefaultConfig` for an op with nothing to partition: one thread."""
    return Suggestion(DISTRIBUTE, 1, None, "#iree_codegen.lowering_config<tile_sizes = [[]]>", None, dispatch,
                      ("one thread reduces everything (IREE's Distribute pipeline)",))


def iree_suggestion(dispatch: Dispatch, target_name: str) -> Suggestion:
    """The pipeline and config IREE 3.12 picks for `dispatch` on `target_name`."""
    target = IREE_TARGETS[target_name]
    notes: list[str] = []
    if dispatch.dtype.name == "f64":
        notes.append("iree-compile demotes f64 to f32 before choosing (--iree-input-demote-f64-to-f32 is on by "
                     "default)")
    if not target.known:
        notes.append(f"IREE 3.12 has no {target_name} target (iree-compile: missing GPU target); these are its "
                     f"rules run with {target_name}'s subgroup sizes {list(target.subgroup_size_choices)}")
    if dispatch.is_outer_reduction:
        s = tile_and_fuse(dispatch, target)
        if isinstance(s, Suggestion):
            outer = "the input's outermost dim is reduced: IREE takes TileAndFuse (isOuterReduction)"
            return _noted(s, [*notes, outer])
    vd = vector_distribute(dispatch, target)
    if isinstance(vd, Suggestion):
        return _noted(vd, notes)
    notes.append(f"VectorDistribute does not apply: {vd}")
    tf = tile_and_fuse(dispatch, target)
    if isinstance(tf, Suggestion):
        return _noted(tf, notes)
    return _noted(distribute_default(dispatch, target), [*notes, f"TileAndFuse does not apply: {tf}"])


def _noted(s: Suggestion, notes: list[str]) -> Suggestion:
    return Suggestion(s.pipeline, s.workgroup_size, s.subgroup_size, s.lowering_config, s.config, s.dispatch,
                      tuple(notes) + s.notes)
