"""`math`: xDSL's dialect, completed with the upstream ops it lacks (`math.erfc`)."""

from __future__ import annotations

from xdsl.dialects.math import FloatingPointLikeUnaryMathOperation
from xdsl.dialects.math import Math as _XdslMath
from xdsl.ir import Dialect
from xdsl.irdl import irdl_op_definition, traits_def
from xdsl.traits import Pure, SameOperandsAndResultType


@irdl_op_definition
class ErfcOp(FloatingPointLikeUnaryMathOperation):
    """``%r = math.erfc %x : vector<8xf32>``: the complementary error function,
    ``1 - erf(x)`` without the cancellation of that difference for large x."""

    name = "math.erfc"

    traits = traits_def(Pure(), SameOperandsAndResultType())


Math = Dialect("math", [*_XdslMath.operations, ErfcOp], [*_XdslMath.attributes])
