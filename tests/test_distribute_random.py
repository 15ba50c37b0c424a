"""Random layouts and random small programs (read -> elementwise -> reduce, transpose or
convert -> write), distributed and checked by simulation against the input program."""

from __future__ import annotations

from math import prod

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from distribution_harness import check_distribution, nested, shape_text
from strategies import nested_launches
from test_layout_properties import variant_of

ELEMENTWISE = ["math.exp", "arith.negf", "arith.mulf", "arith.addf"]


def text_of(layout) -> str:
    return nested(layout.subgroup_tile, layout.batch_tile, layout.outer_tile, layout.thread_tile,
                  layout.element_tile, layout.subgroup_strides, layout.thread_strides)


@st.composite
def programs(draw, launches=None):
    """(text, subgroup size, threads); `launches` draws (layout, subgroup size, threads)
    (default: a random layout whose thread span fits a 32- or 64-lane subgroup)."""
    if launches is None:
        layout, _, _ = draw(nested_launches(max_elements=256))
        sg = draw(st.sampled_from([32, 64]))
        assume(layout.thread_span <= sg)
        threads = sg * layout.subgroup_span * draw(st.sampled_from([1, 1, 2]))
    else:
        layout, sg, threads = draw(launches)
    # keep the unrolled register groups few: the test is about correctness, not size
    assume(prod(layout.batch_tile) * prod(layout.outer_tile) <= 8)
    assume(threads <= 1024)
    case = (layout, sg, threads)
    shape = layout.undistributed_shape
    r = len(shape)
    vt = f"vector<{shape_text(shape)}xf32>"
    mt = f"memref<{shape_text(shape)}xf32>"
    zeros = ", ".join(["%c0"] * r)
    trues = ", ".join(["true"] * r)
    ew = draw(st.sampled_from(ELEMENTWISE))
    if ew in ("arith.mulf", "arith.addf"):
        body = f"  %e = {ew} %a, %a : {vt}\n"
    else:
        body = f"  %e = {ew} %a : {vt}\n"
    last = draw(st.sampled_from(["reduce", "transpose", "convert", "none"]))
    dst_shape = shape
    if last == "reduce":
        dims = sorted(draw(st.sets(st.integers(0, r - 1), min_size=1)))
        kind = draw(st.sampled_from(["add", "maximumf"]))
        kept = [n for d, n in enumerate(shape) if d not in dims]
        init = "0.0" if kind == "add" else "0xFF800000"
        if kept:
            rt = f"vector<{shape_text(kept)}xf32>"
            body += f"  %i = arith.constant dense<{init}> : {rt}\n"
            body += f"  %o = vector.multi_reduction <{kind}>, %e, %i [{', '.join(map(str, dims))}] : {vt} to {rt}\n"
            dst_shape = tuple(kept)
            store = (f"  vector.transfer_write %o, %dst[{', '.join(['%c0'] * len(kept))}] "
                     f"{{in_bounds = [{', '.join(['true'] * len(kept))}]}} : {rt}, memref<{shape_text(kept)}xf32>\n")
        else:
            body += f"  %i = arith.constant {init} : f32\n"
            body += f"  %o = vector.multi_reduction <{kind}>, %e, %i [{', '.join(map(str, dims))}] : {vt} to f32\n"
            dst_shape = (1,)
            store = "  memref.store %o, %dst[%c0] : memref<1xf32>\n"
    elif last == "transpose":
        perm = list(draw(st.permutations(range(r))))
        dst_shape = tuple(shape[p] for p in perm)
        rt = f"vector<{shape_text(dst_shape)}xf32>"
        body += f"  %o = vector.transpose %e, [{', '.join(map(str, perm))}] : {vt} to {rt}\n"
        store = (f"  vector.transfer_write %o, %dst[{zeros}] {{in_bounds = [{trues}]}} : "
                 f"{rt}, memref<{shape_text(dst_shape)}xf32>\n")
    else:
        if last == "convert":
            other = draw(variant_of(case))
            body += f"  %o = iree_vector_ext.to_layout %e to layout({text_of(other)}) : {vt}\n"
        else:
            body += f"  %o = arith.addf %e, %e : {vt}\n"
        store = f"  vector.transfer_write %o, %dst[{zeros}] {{in_bounds = [{trues}]}} : {vt}, {mt}\n"
    text = f"""
func.func @f(%src: {mt}, %dst: memref<{shape_text(dst_shape)}xf32>) {{
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %v = vector.transfer_read %src[{zeros}], %pad {{in_bounds = [{trues}]}} : {mt}, {vt}
  %a = iree_vector_ext.to_layout %v to layout({text_of(layout)}) : {vt}
{body}{store}  return
}}
"""
    return text, sg, threads


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(programs())
def test_random_programs_distribute_correctly(case):
    text, sg, threads = case
    check_distribution(text, "f", subgroup_size=sg, workgroup_size=threads, rtol=1e-4, atol=1e-5)
