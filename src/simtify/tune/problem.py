"""A reduction to configure, and the shape IREE's dispatch gives it.

`ReductionProblem` is what the user names: an iteration space, its reduction dims, the
element type of the input and the operation (``sum``: ``out[p] += x[p, r]``;
``matvec``: ``out[p] += A[p, r] * v[r]``). The input is row-major in the iteration
order; the output is indexed by the parallel dims.

IREE never configures that op as written. Before a dispatch reaches
``setReductionConfig`` its iteration space is normalised, and the config IREE prints
addresses the normalised space (measured with iree-compile 3.12)::

    4x6656x16384, reduce d2       ->  26624x16384        (adjacent parallel dims fold)
    4x64x1x512, reduce d1, d3     ->  4x32768            (unit dims drop, then d1, d3 fold)
    128x4096, reduce d0           ->  4096x128, input map (d1, d0)   (parallel dims first)

`Dispatch` is that normalised space: unit dims dropped, runs of adjacent dims of one
kind folded into one, then the parallel dims moved in front of the reduction dims.
The input keeps its memory order, so its indexing map is a permutation
(`Dispatch.input_map`). Every config in `simtify.tune` is written for this space.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from simtify.errors import SimtifyError

OPERATIONS = ("sum", "matvec")


@dataclass(frozen=True)
class DType:
    name: str
    bits: int
    kind: str  # "f" or "i"
    accumulator: str  # the element type the reduction accumulates (and writes) in

    @property
    def bytes(self) -> int:
        return max(1, self.bits // 8)

    @property
    def simulated(self) -> bool:
        """Whether the simulator has a numpy type for it (no 8-bit floats)."""
        return not (self.kind == "f" and self.bits == 8)


DTYPES: dict[str, DType] = {d.name: d for d in (
    DType("f16", 16, "f", "f32"), DType("bf16", 16, "f", "f32"), DType("f32", 32, "f", "f32"),
    DType("f64", 64, "f", "f64"),
    DType("i8", 8, "i", "i32"), DType("i16", 16, "i", "i32"), DType("i32", 32, "i", "i32"),
    DType("i64", 64, "i", "i64"),
    DType("f8E4M3FNUZ", 8, "f", "f32"), DType("f8E5M2FNUZ", 8, "f", "f32"),
    DType("f8E4M3FN", 8, "f", "f32"), DType("f8E5M2", 8, "f", "f32"),
)}

# The 8-bit float formats each target's loads and converts handle: CDNA3 has the FNUZ
# variants, CDNA4 and Hopper the OCP ones, Xe-HPC none. Every target loads the rest.
FLOAT8 = {
    "gfx942": ("f8E4M3FNUZ", "f8E5M2FNUZ"),
    "gfx950": ("f8E4M3FN", "f8E5M2"),
    "sm_90": ("f8E4M3FN", "f8E5M2"),
    "xe": (),
}


def dtype_for(name: str, target, *, simulate: bool) -> DType:
    """The element type `name`, checked against what `target` can load (and, with
    `simulate`, what the simulator can run)."""
    if name not in DTYPES:
        raise SimtifyError(f"unknown element type '{name}' (known: {', '.join(DTYPES)})", "--dtype")
    d = DTYPES[name]
    if d.kind == "f" and d.bits == 8 and name not in FLOAT8.get(target.name, ()):
        have = ", ".join(FLOAT8.get(target.name, ())) or "none"
        raise SimtifyError(f"{target.name} cannot load {name} elements (its 8-bit float types: {have})", "--dtype")
    if simulate and not d.simulated:
        raise SimtifyError(f"{name}: the simulator has no 8-bit float type, so configs for it cannot be checked "
                           "(`simtify config suggest` still works)", "--dtype")
    return d


@dataclass(frozen=True)
class ReductionProblem:
    sizes: tuple[int, ...]
    reduction_dims: tuple[int, ...]
    dtype: DType
    operation: str = "sum"

    @classmethod
    def create(cls, sizes, reduction_dims, dtype: DType, operation: str = "sum") -> ReductionProblem:
        """Checked: positive sizes, reduction dims inside the space, a known operation."""
        sizes = tuple(int(s) for s in sizes)
        if not sizes:
            raise SimtifyError("the iteration space has no dims", "--iteration-space")
        if any(s < 1 for s in sizes):
            raise SimtifyError(f"iteration space {'x'.join(map(str, sizes))} has a size below 1; every dim needs "
                               "at least one element", "--iteration-space")
        red = sorted({int(d) for d in reduction_dims})
        if not red:
            raise SimtifyError("a reduction needs at least one reduction dim", "--reduction-dims")
        bad = [d for d in red if not 0 <= d < len(sizes)]
        if bad:
            raise SimtifyError(f"d{bad[0]} is not a dim of the rank-{len(sizes)} iteration space", "--reduction-dims")
        if operation not in OPERATIONS:
            raise SimtifyError(f"unknown operation '{operation}' (known: {', '.join(OPERATIONS)})", "--op")
        if all(sizes[d] == 1 for d in red):
            raise SimtifyError(f"the reduction dims {red} all have size 1: there is nothing to reduce",
                               "--reduction-dims")
        return cls(sizes, tuple(red), dtype, operation)

    @property
    def parallel_dims(self) -> tuple[int, ...]:
        return tuple(d for d in range(len(self.sizes)) if d not in self.reduction_dims)

    def describe(self) -> str:
        return (f"{self.operation} of {'x'.join(map(str, self.sizes))} over "
                f"{', '.join(f'd{d}' for d in self.reduction_dims)}, {self.dtype.name}")


@dataclass(frozen=True)
class Dispatch:
    """The problem in IREE's dispatch iteration space (see the module docstring)."""

    problem: ReductionProblem
    sizes: tuple[int, ...]  # parallel dims first, then reduction dims
    num_parallel: int
    groups: tuple[tuple[int, ...], ...]  # per dispatch dim, the original dims it folds (outer first)
    input_dims: tuple[int, ...]  # per input dim (memory order, outer first), its dispatch dim

    @property
    def rank(self) -> int:
        return len(self.sizes)

    @property
    def parallel_dims(self) -> tuple[int, ...]:
        return tuple(range(self.num_parallel))

    @property
    def reduction_dims(self) -> tuple[int, ...]:
        return tuple(range(self.num_parallel, self.rank))

    dtype = property(lambda self: self.problem.dtype, doc="The problem's element type.")
    operation = property(lambda self: self.problem.operation, doc="The problem's operation (sum, matvec, ...).")

    @property
    def vector_dims(self) -> tuple[int, ...]:
        """matvec: the dispatch dims of the vector operand (the reduction dims, in memory order)."""
        return tuple(d for d in self.input_dims if d >= self.num_parallel)

    @property
    def parallel_size(self) -> int:
        return prod(self.sizes[: self.num_parallel])

    @property
    def reduction_size(self) -> int:
        return prod(self.sizes[self.num_parallel:])

    @property
    def contiguous_dim(self) -> int:
        """The dispatch dim that is innermost in the input's memory."""
        return self.input_dims[-1]

    @property
    def is_outer_reduction(self) -> bool:
        """IREE's `isOuterReduction`: the input's outermost dim is a reduction dim."""
        return self.input_dims[0] >= self.num_parallel

    def input_map(self) -> str:
        names = ", ".join(f"d{d}" for d in range(self.rank))
        return f"affine_map<({names}) -> ({', '.join(f'd{d}' for d in self.input_dims)})>"

    def shape_text(self) -> str:
        return "x".join(map(str, self.sizes))

    def describe(self) -> str:
        """How the problem's dims became the dispatch's, for people."""
        parts = []
        for d, g in enumerate(self.groups):
            kind = "p" if d < self.num_parallel else "r"
            src = "*".join(f"d{o}" for o in g)
            parts.append(f"d{d}={self.sizes[d]}{kind}<-{src}")
        return ", ".join(parts)

    @property
    def identity(self) -> bool:
        """Whether normalising changed nothing."""
        return self.problem.sizes == self.sizes and all(len(g) == 1 and g[0] == d for d, g in enumerate(self.groups))


def dispatch_of(problem: ReductionProblem) -> Dispatch:
    """Drop unit dims, fold adjacent dims of one kind, put parallel dims first."""
    red = set(problem.reduction_dims)
    kept = [d for d, s in enumerate(problem.sizes) if s > 1]
    runs: list[list[int]] = []
    for d in kept:
        if runs and (runs[-1][-1] in red) == (d in red):
            runs[-1].append(d)
        else:
            runs.append([d])
    parallel = [r for r in runs if r[0] not in red]
    reduction = [r for r in runs if r[0] in red]
    order = parallel + reduction
    sizes = tuple(prod(problem.sizes[d] for d in r) for r in order)
    position = {tuple(r): k for k, r in enumerate(order)}
    input_dims = tuple(position[tuple(r)] for r in runs)
    return Dispatch(problem, sizes, len(parallel), tuple(tuple(r) for r in order), input_dims)
