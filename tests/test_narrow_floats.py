"""The narrow float formats against brute force: every bit pattern decoded from the
format's definition written out per code, and rounding against the nearest of all the
format's values (ties to the even pattern; f8E8M0FNU's up); then the simulator's
conversions (extf, truncf, bitcasts, constants) on them, from Python and the CLI."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simtify.ir import parse
from simtify.sim import run
from simtify.sim.narrow_floats import FORMATS

# (exponent bits, mantissa bits, bias, has inf, NaN codes) as the formats define them
SPEC = {
    "f8E4M3FN": (4, 3, 7, False, {0x7F, 0xFF}),
    "f8E5M2": (5, 2, 15, True, {c for c in range(256) if (c >> 2) & 31 == 31 and c & 3}),
    "f4E2M1FN": (2, 1, 1, False, set()),
}


def brute_value(name: str, code: int) -> float:
    if name == "f8E8M0FNU":
        return math.nan if code == 0xFF else 2.0 ** (code - 127)
    e_bits, m_bits, bias, has_inf, nans = SPEC[name]
    if code in nans:
        return math.nan
    sign = -1.0 if code >> (e_bits + m_bits) else 1.0
    e, m = (code >> m_bits) & ((1 << e_bits) - 1), code & ((1 << m_bits) - 1)
    if has_inf and e == (1 << e_bits) - 1:
        return sign * math.inf
    if e == 0:
        return sign * (m / 2 ** m_bits) * 2.0 ** (1 - bias)
    return sign * (1 + m / 2 ** m_bits) * 2.0 ** (e - bias)


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_every_bit_pattern_decodes_as_the_format_defines(name):
    fmt = FORMATS[name]
    want = np.array([brute_value(name, c) for c in range(1 << fmt.bits)])
    got = fmt.decode(np.arange(1 << fmt.bits))
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got.astype(np.float64), want)
    # and every value encodes back to its pattern (NaN to the format's one NaN)
    codes = fmt.encode(got)
    finite = ~np.isnan(want)
    assert (codes[finite] == np.arange(1 << fmt.bits)[finite]).all()
    if (~finite).any():
        assert set(codes[~finite]) == {fmt.nan_code}


def test_the_format_tables():
    assert sorted(set(FORMATS["f4E2M1FN"].table[:8].tolist())) == [0, 0.5, 1, 1.5, 2, 3, 4, 6]
    assert FORMATS["f8E4M3FN"].largest == 448 and FORMATS["f8E5M2"].largest == 57344
    assert FORMATS["f8E8M0FNU"].decode([0, 127, 254]).tolist() == [2.0 ** -127, 1.0, 2.0 ** 127]


def brute_round(name: str, x: float) -> float:
    """The nearest value of the format (APFloat: ties to even, f8E8M0FNU's up), or what
    the format gives past its largest value."""
    fmt = FORMATS[name]
    codes = range(1 << fmt.bits)
    values = [(brute_value(name, c), c) for c in codes]
    finite = [(v, c) for v, c in values if math.isfinite(v)]
    if math.isnan(x):
        return math.nan
    if name == "f8E8M0FNU":
        if x < 0 or math.isinf(x):
            return math.nan
        if x >= 1.5 * 2.0 ** 127:
            return math.nan
        below = max((v for v, _ in finite if v <= x), default=2.0 ** -127)
        above = min((v for v, _ in finite if v >= x), default=math.nan)
        if math.isnan(above) or below == above:
            return below
        return below if x - below < above - x else above  # a tie goes up
    largest = fmt.largest
    # the point past which rounding leaves the format: half a step above the largest
    step = largest - max(v for v, _ in finite if v < largest)
    limit = largest + step / 2
    if abs(x) > limit or (abs(x) == limit and name != "f8E4M3FN") or math.isinf(x):
        past = {"f8E5M2": math.inf, "f8E4M3FN": math.nan, "f4E2M1FN": largest}[name]
        return math.copysign(past, x)
    best = min(finite, key=lambda vc: (abs(vc[0] - x), vc[1] & 1))  # ties: the even pattern
    return math.copysign(best[0], x) if best[0] == 0 else best[0]


def _midpoints(name: str) -> list[float]:
    t = np.unique(FORMATS[name].table[np.isfinite(FORMATS[name].table)].astype(np.float64))
    mids = ((t[1:] + t[:-1]) / 2).tolist()
    return mids + t.tolist() + [np.nextafter(m, np.inf) for m in mids] + [np.nextafter(m, -np.inf) for m in mids]


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_rounding_at_every_value_and_midpoint(name):
    xs = _midpoints(name) + [0.0, -0.0, math.inf, -math.inf, math.nan, 1e30, -1e30, 464.0, 470.0, 7.0, 61440.0,
                              1e-40, 3e38]
    got = FORMATS[name].round(np.array(xs))
    for x, g in zip(xs, got.tolist()):
        want = brute_round(name, x)
        if name == "f8E8M0FNU" and x == 0:
            want = 2.0 ** -127  # no zero: the smallest value
        assert (math.isnan(g) and math.isnan(want)) or (g == want and math.copysign(1, g) == math.copysign(1, want)), \
            (name, x, g, want)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(FORMATS)), st.floats(width=32, allow_nan=False))
def test_rounding_any_float32_as_brute_force(name, x):
    g = float(FORMATS[name].round(np.array([x], dtype=np.float32))[0])
    want = brute_round(name, x)
    if name == "f8E8M0FNU" and x == 0:
        want = 2.0 ** -127
    assert (math.isnan(g) and math.isnan(want)) or g == want, (name, x, g, want)


CONVERSIONS = """func.func @conv(%x: memref<16xf32>, %out: memref<16xf32>, %bits: memref<16xi8>) {
  %c0 = arith.constant 0 : index
  %v = vector.load %x[%c0] : memref<16xf32>, vector<16xf32>
  %n = arith.truncf %v : vector<16xf32> to vector<16xTYPE>
  %w = arith.extf %n : vector<16xTYPE> to vector<16xf32>
  vector.store %w, %out[%c0] : memref<16xf32>, vector<16xf32>
  %b = arith.bitcast %n : vector<16xTYPE> to vector<16xi8>
  vector.store %b, %bits[%c0] : memref<16xi8>, vector<16xi8>
  return
}"""


@pytest.mark.parametrize("name", ["f8E4M3FN", "f8E5M2", "f8E8M0FNU"])
def test_truncf_extf_and_bitcast_in_the_simulator(name):
    x = np.array([0.3, -1.7, 500.0, 1e5, 0.0, 1e-9, 2.5, -0.0, 3.0, 0.75, 464.0, 65536.0, -2.0, 6.0, 1.5, 1e-3],
                 dtype=np.float32)
    res = run(parse(CONVERSIONS.replace("TYPE", name)), "conv",
              {"x": x, "out": np.zeros(16, np.float32), "bits": np.zeros(16, np.int8)}, level="workgroup")
    want = np.array([brute_round(name, float(v)) for v in x])
    if name == "f8E8M0FNU":
        want[x == 0] = 2.0 ** -127
    np.testing.assert_array_equal(res.arguments["out"].astype(np.float64), want)
    codes = res.arguments["bits"].view(np.uint8)
    np.testing.assert_array_equal(FORMATS[name].decode(codes).astype(np.float64), want)


F4_BITCAST = """func.func @f4(%x: memref<4xi8>, %out: memref<8xf32>, %back: memref<4xi8>) {
  %c0 = arith.constant 0 : index
  %v = vector.load %x[%c0] : memref<4xi8>, vector<4xi8>
  %f = vector.bitcast %v : vector<4xi8> to vector<8xf4E2M1FN>
  %b = vector.bitcast %f : vector<8xf4E2M1FN> to vector<4xi8>
  vector.store %b, %back[%c0] : memref<4xi8>, vector<4xi8>
  %w = arith.extf %f : vector<8xf4E2M1FN> to vector<8xf32>
  vector.store %w, %out[%c0] : memref<8xf32>, vector<8xf32>
  return
}"""


def test_a_byte_holds_two_f4_values_low_nibble_first():
    x = np.array([0x21, 0x7F, -0x48, 0x0A], dtype=np.int8)  # 0xB8 as -0x48
    res = run(parse(F4_BITCAST), "f4", {"x": x, "out": np.zeros(8, np.float32), "back": np.zeros(4, np.int8)},
              level="workgroup")
    nibbles = [(b >> s) & 0xF for b in x.view(np.uint8).tolist() for s in (0, 4)]
    np.testing.assert_array_equal(res.arguments["out"], [brute_value("f4E2M1FN", n) for n in nibbles])
    np.testing.assert_array_equal(res.arguments["back"], x)


def test_a_bitcast_between_widths_is_a_located_error(tmp_path):
    text = """func.func @f(%x: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %v = vector.load %x[%c0] : memref<4xf32>, vector<4xf32>
  %n = arith.truncf %v : vector<4xf32> to vector<4xf8E5M2>
  %b = arith.bitcast %n : vector<4xf8E5M2> to vector<4xi16>
  return
}"""
    path = tmp_path / "bad.mlir"
    path.write_text(text)
    p = subprocess.run([sys.executable, "-m", "simtify", "run", str(path), "--func", "f"], capture_output=True,
                       text=True)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert "bad.mlir:5:3: error:" in p.stderr and "equal bitwidths" in p.stderr, p.stderr


def test_random_inputs_of_narrow_types_are_their_values_and_never_zero():
    from simtify.sim import find_function, random_inputs
    m = parse("""func.func @f(%a: memref<64xf4E2M1FN>, %s: memref<64xf8E8M0FNU>, %e: memref<64xf8E4M3FN>) {
  return
}""")
    args = random_inputs(find_function(m, "f"), 3)
    for name, fmt in (("a", "f4E2M1FN"), ("s", "f8E8M0FNU"), ("e", "f8E4M3FN")):
        v = args[name]
        assert (v != 0).all() and np.isfinite(v).all()
        np.testing.assert_array_equal(FORMATS[fmt].round(v), v)
