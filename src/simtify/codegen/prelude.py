"""C++ helpers at the top of every emitted file (CUDA, HIP and the host emulation):
MLIR's floor division and modulo, bit_cast, bit counts (math.ctpop/ctlz/cttz, by loops:
no intrinsic is spelled alike everywhere), and IEEE 754-2019 maximumf/minimumf, which
C's fmax/fmin are not (they drop a NaN). Each file defines SIMTIFY_FN first."""

PRELUDE_HELPERS = r"""template <typename T> SIMTIFY_FN T floordiv(T a, T b) {
  const T q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
template <typename T> SIMTIFY_FN T floormod(T a, T b) {
  const T r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
template <typename T> SIMTIFY_FN T ceildiv(T a, T b) {
  const T q = a / b;
  return (a % b != 0 && ((a < 0) == (b < 0))) ? q + 1 : q;
}
template <typename To, typename From> SIMTIFY_FN To bit_cast(From x) {
  To y;
  __builtin_memcpy(&y, &x, sizeof y);
  return y;
}
template <typename T> SIMTIFY_FN T ctpop(T x) {
  T n = 0;
  for (int b = 0; b < 8 * (int)sizeof(T); ++b) n += (x >> b) & 1;
  return n;
}
template <typename T> SIMTIFY_FN T ctlz(T x) {
  T n = 0;
  for (int b = 8 * (int)sizeof(T) - 1; b >= 0 && !((x >> b) & 1); --b) ++n;
  return n;
}
template <typename T> SIMTIFY_FN T cttz(T x) {
  T n = 0;
  for (int b = 0; b < 8 * (int)sizeof(T) && !((x >> b) & 1); ++b) ++n;
  return n;
}
// arith.maximumf / minimumf: a NaN operand gives NaN, and -0 < +0 (IEEE 754-2019);
// for equal zeros, a + b and -(-a - b) pick the right sign without <math.h>.
SIMTIFY_FN double maximumf(double a, double b) {
  return (a != a || b != b) ? a + b : a > b ? a : b > a ? b : a == 0 ? a + b : a;
}
SIMTIFY_FN double minimumf(double a, double b) {
  return (a != a || b != b) ? a + b : a < b ? a : b < a ? b : a == 0 ? -(-a - b) : a;
}
"""

PORTABLE_FLOAT_MINMAX = r"""SIMTIFY_FN float maximumf(float a, float b) {
  return (a != a || b != b) ? a + b : a > b ? a : b > a ? b : a == 0 ? a + b : a;
}
SIMTIFY_FN float minimumf(float a, float b) {
  return (a != a || b != b) ? a + b : a < b ? a : b < a ? b : a == 0 ? -(-a - b) : a;
}
"""
