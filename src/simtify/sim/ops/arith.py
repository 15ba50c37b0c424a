"""`arith`: integer ops wrap at their width, division truncates toward zero as MLIR's
signed division does, floats follow IEEE (maximumf propagates NaN, maxnumf does not)."""

from __future__ import annotations

import numpy as np

from simtify.errors import SimtifyError
from simtify.ir.vector import element_type_of
from simtify.sim.handlers import handles
from simtify.sim.types import bit_width, bits_of, dtype_of, fit, from_bits
from simtify.sim.values import constant, prop

CMPI = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]
CMPF = ["false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true"]


def _args(sim, op):
    return [np.asarray(sim.get(o)) for o in op.operands]


def _unsigned(a: np.ndarray) -> np.ndarray:
    if a.dtype == np.bool_:
        return a.astype(np.uint8)
    return a.view(np.dtype(f"u{a.dtype.itemsize}")) if a.dtype.kind == "i" else a


def _quiet(fn):
    with np.errstate(all="ignore"):
        return fn()


@handles("arith.constant")
def _constant(sim, op):
    return [constant(prop(op, "value"), op.result.type)]


def _binary(fn):
    def run(sim, op):
        a, b = _args(sim, op)
        return [fit(_quiet(lambda: fn(a, b)), op.results[0].type)]

    return run


def _trunc_div(a, b):
    b = np.where(b == 0, 1, b)
    q = a // b
    return np.where((a % b != 0) & ((a < 0) != (b < 0)), q + 1, q)


def _ceil_div(a, b):
    b = np.where(b == 0, 1, b)
    return -((-a) // b)


BINARY = {
    "arith.addi": lambda a, b: a + b,
    "arith.subi": lambda a, b: a - b,
    "arith.muli": lambda a, b: a * b,
    "arith.divsi": _trunc_div,
    "arith.divui": lambda a, b: _unsigned(a) // np.where(_unsigned(b) == 0, 1, _unsigned(b)),
    "arith.remsi": lambda a, b: np.fmod(a, np.where(b == 0, 1, b)),
    "arith.remui": lambda a, b: _unsigned(a) % np.where(_unsigned(b) == 0, 1, _unsigned(b)),
    "arith.ceildivsi": _ceil_div,
    "arith.ceildivui": lambda a, b: _ceil_div(_unsigned(a).astype(np.int64), _unsigned(b).astype(np.int64)),
    "arith.floordivsi": lambda a, b: a // np.where(b == 0, 1, b),
    "arith.andi": lambda a, b: a & b,
    "arith.ori": lambda a, b: a | b,
    "arith.xori": lambda a, b: a ^ b,
    "arith.shli": lambda a, b: a << b,
    "arith.shrsi": lambda a, b: a >> b,
    "arith.shrui": lambda a, b: _unsigned(a) >> _unsigned(b),
    "arith.maxsi": np.maximum,
    "arith.minsi": np.minimum,
    "arith.maxui": lambda a, b: np.maximum(_unsigned(a), _unsigned(b)),
    "arith.minui": lambda a, b: np.minimum(_unsigned(a), _unsigned(b)),
    "arith.addf": np.add,
    "arith.subf": np.subtract,
    "arith.mulf": np.multiply,
    "arith.divf": np.divide,
    "arith.remf": np.fmod,
    "arith.maximumf": np.maximum,
    "arith.minimumf": np.minimum,
    "arith.maxnumf": np.fmax,
    "arith.minnumf": np.fmin,
}
for _name, _fn in BINARY.items():
    handles(_name)(_binary(_fn))


@handles("arith.negf")
def _negf(sim, op):
    return [fit(-np.asarray(sim.get(op.operands[0])), op.results[0].type)]


def _predicate(op, names):
    p = prop(op, "predicate")
    return names[p.value.data]


@handles("arith.cmpi")
def _cmpi(sim, op):
    a, b = _args(sim, op)
    pred = _predicate(op, CMPI)
    if pred[0] == "u":
        a, b = _unsigned(a), _unsigned(b)
    fn = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
          "ge": np.greater_equal}[pred if pred in ("eq", "ne") else pred[1:]]
    return [fn(a, b)]


@handles("arith.cmpf")
def _cmpf(sim, op):
    a, b = _args(sim, op)
    pred = _predicate(op, CMPF)
    unordered = np.isnan(a) | np.isnan(b)
    if pred in ("false", "true"):
        return [np.full(np.broadcast(a, b).shape, pred == "true")]
    if pred == "ord":
        return [~unordered]
    if pred == "uno":
        return [unordered]
    fn = {"eq": np.equal, "gt": np.greater, "ge": np.greater_equal, "lt": np.less, "le": np.less_equal,
          "ne": np.not_equal}[pred[1:]]
    with np.errstate(invalid="ignore"):
        r = fn(a, b)
    return [(r & ~unordered) if pred[0] == "o" else (r | unordered)]


@handles("arith.select")
def _select(sim, op):
    c, a, b = _args(sim, op)
    if c.ndim < a.ndim:
        c = c.reshape(c.shape + (1,) * (a.ndim - c.ndim))
    return [np.where(c, a, b)]


@handles("arith.index_cast", "arith.extsi", "arith.trunci", "arith.extf", "arith.truncf", "arith.sitofp",
         "arith.fptosi")
def _cast(sim, op):
    (a,) = _args(sim, op)
    return [fit(_quiet(lambda: a.astype(dtype_of(op.results[0].type)) if a.dtype != np.bool_ else a), op.results[0].type)]


@handles("arith.index_castui", "arith.extui", "arith.uitofp", "arith.fptoui")
def _cast_unsigned(sim, op):
    (a,) = _args(sim, op)
    src = element_type_of(op.operands[0].type)
    if op.name == "arith.fptoui":
        return [fit(_quiet(lambda: a.astype(np.uint64)).astype(np.int64), op.results[0].type)]
    u = _unsigned(a) if a.dtype.kind in "ib" else a
    del src
    return [fit(u.astype(np.int64) if u.dtype.kind == "u" else u, op.results[0].type)]


@handles("arith.bitcast")
def _bitcast(sim, op):
    """Through the bit patterns: bf16 and the narrow floats are held wider than they are."""
    (a,) = _args(sim, op)
    src, dst = op.operands[0].type, op.results[0].type
    if bit_width(src) != bit_width(dst):
        raise SimtifyError(f"bitcast between types of different widths: {element_type_of(src)} has "
                           f"{bit_width(src)} bits, {element_type_of(dst)} {bit_width(dst)}")
    return [from_bits(bits_of(a, src), dst)]
