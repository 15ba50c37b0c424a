"""The seeds' worked examples, each reproduced by the layout core."""

import numpy as np
import pytest

from simtify.errors import SimtifyError
from simtify.layout import Basis, NestedLayout, XeGPULayout, layout_from_config, ownership_map, parse_layout

SEED_64x64 = (
    "#iree_vector_ext.nested_layout<subgroup_tile = [2, 1], batch_tile = [2, 4], outer_tile = [1, 1], "
    "thread_tile = [16, 4], element_tile = [1, 4], subgroup_strides = [1, 0], thread_strides = [1, 16]>"
)


def test_subgroup_order_of_strided_subgroup_tile():
    # vector<4x2> with subgroup_tile = [4, 2], subgroup_strides = [1, 4]: listing the
    # virtual ids [0][0], [0][1], [1][0], ... gives subgroups 0, 4, 1, 5, 2, 6, 3, 7.
    layout = NestedLayout((4, 2), (1, 1), (1, 1), (1, 1), (1, 1), (1, 4), (0, 0))
    omap = layout.ownership(subgroup_size=1)
    owner = {tuple(omap.coords[t, 0]): t for t in range(omap.num_threads)}
    assert [owner[(i, j)] for i in range(4) for j in range(2)] == [0, 4, 1, 5, 2, 6, 3, 7]


def test_64x64_example_each_thread_holds_2x16():
    layout = parse_layout(SEED_64x64)
    assert layout.undistributed_shape == (64, 64)
    assert layout.distributed_shape == (2, 4, 1, 1, 1, 4)
    assert layout.elements_per_thread == (2, 16)
    omap = ownership_map(layout, (64, 64))
    assert (omap.num_threads, omap.num_registers) == (128, 32)
    assert omap.covers and omap.max_replication == 1

    def rows_cols(tid):
        c = omap.coords[tid]
        return sorted(set(c[:, 0].tolist())), sorted(set(c[:, 1].tolist()))

    quad = lambda start: [start + 16 * k + e for k in range(4) for e in range(4)]  # noqa: E731
    # subgroup 0: thread t0 = tid % 16 picks the row inside each 16-row batch,
    # t1 = tid // 16 the group of 4 columns inside each 16-column batch.
    assert rows_cols(0) == ([0, 16], quad(0))
    assert rows_cols(1) == ([1, 17], quad(0))
    assert rows_cols(16) == ([0, 16], quad(4))
    # subgroup 1 (threads 64..127) holds the bottom half.
    assert rows_cols(64) == ([32, 48], quad(0))
    assert rows_cols(65) == ([33, 49], quad(0))
    assert rows_cols(80) == ([32, 48], quad(4))
    # register order is row-major over [B0, B1, O0, O1, E0, E1]: batch row, batch column, element.
    assert omap.elements_of(0)[:6] == [(0, 0), (0, 1), (0, 2), (0, 3), (0, 16), (0, 17)]
    assert omap.elements_of(0)[16] == (16, 0)


def test_64x64_example_with_four_subgroups_replicates_as_the_seed_lists():
    # The seed maps subgroups 2 and 3 onto the data of 0 and 1: replication, legal.
    omap = ownership_map(parse_layout(SEED_64x64), (64, 64), num_threads=256)
    assert omap.elements_of(128) == omap.elements_of(0)
    assert omap.elements_of(192 + 5) == omap.elements_of(64 + 5)
    assert omap.max_replication == 2 and omap.covers


def test_basis_thread_42():
    basis = Basis.parse("[[16, 4], [1, 0]]")
    assert basis.digits([42]).tolist() == [[10, 2]]
    assert basis.coords([42]).tolist() == [[2, 10]]


def test_xegpu_128x128_round_robin_table():
    layout = XeGPULayout.parse("#xegpu.layout<sg_layout = [2, 2], sg_data = [32, 128], order = [1, 0]>")
    omap = ownership_map(layout, (128, 128), subgroup_size=1)
    full = lambda rows: {(r, c) for r in rows for c in range(128)}  # noqa: E731
    expected = {
        0: full(range(0, 32)) | full(range(64, 96)),
        1: full(range(0, 32)) | full(range(64, 96)),
        2: full(range(32, 64)) | full(range(96, 128)),
        3: full(range(32, 64)) | full(range(96, 128)),
    }
    for sg, elems in expected.items():
        assert set(omap.elements_of(sg)) == elems
    assert omap.max_replication == 2  # columns shared by the two subgroups of a row


def test_xegpu_128x128_with_lanes_covers_each_subgroup_tile():
    layout = parse_layout(
        "#xegpu.layout<sg_layout = [2, 2], sg_data = [32, 128], lane_layout = [1, 16], lane_data = [1, 1], order = [1, 0]>"
    )
    omap = ownership_map(layout, (128, 128))
    assert omap.subgroup_size == 16 and omap.num_threads == 64
    lanes_of_sg2 = {e for t in range(32, 48) for e in omap.elements_of(t)}
    assert lanes_of_sg2 == {(r, c) for r in list(range(32, 64)) + list(range(96, 128)) for c in range(128)}
    # lane 3 of any subgroup holds columns 3, 19, 35, ... (round-robin over 16 lanes)
    assert sorted({c for _, c in omap.elements_of(3)}) == list(range(3, 128, 16))


def test_non_power_of_two_thread_tile_uses_workgroup_linear_tid():
    layout = NestedLayout((1,), (1,), (1,), (3,), (1,), (0,), (1,))
    omap = layout.ownership(subgroup_size=64, num_threads=128)
    assert omap.elements_of(64) == [(1,)]  # lane 0 of subgroup 1: 64 % 3 == 1
    assert omap.elements_of(0) == [(0,)]
    assert omap.max_replication == 43  # tids 0, 3, ..., 126 hold element 0


def test_reduction_config_example_layout():
    # The config doc's example in its expanded 4-D iteration space: workgroup = [4, 1, 0, 0],
    # partial_reduction = [0, 0, 64, 0] and thread = [0, 0, 1, 8] make the per-iteration tile
    # [4, 1, 64, 8]; one subgroup of 64 lanes along d2, 8 elements per thread along d3.
    layout = layout_from_config(
        (4, 1, 64, 8),
        Basis((1, 1, 1, 1), (0, 1, 2, 3)),
        Basis((1, 1, 64, 1), (0, 1, 2, 3)),
        (0, 0, 1, 8),
    )
    assert layout.thread_tile == (1, 1, 64, 1) and layout.thread_strides == (0, 0, 1, 0)
    assert layout.element_tile == (1, 1, 1, 8) and layout.batch_tile == (4, 1, 1, 1)
    omap = layout.ownership(64)
    # each thread holds a vector<8> accumulator per output row: 4 x 8 elements
    assert omap.num_registers == 32
    assert omap.elements_of(5)[:8] == [(0, 0, 5, k) for k in range(8)]


def test_layout_from_config_matches_iree_test_configure_tensor_layout():
    # IREE's configure_tensor_layout test (scan over 4x16): subgroup_basis [[1,1],[0,1]],
    # lane_basis [[1,8],[0,1]], thread [1,8] -> batch [4,1], thread [1,8] stride [0,1], element [1,8].
    layout = layout_from_config((4, 16), Basis((1, 1), (0, 1)), Basis((1, 8), (0, 1)), (1, 8))
    assert str(layout) == (
        "#iree_vector_ext.nested_layout<subgroup_tile = [1, 1], batch_tile = [4, 1], outer_tile = [1, 1], "
        "thread_tile = [1, 8], element_tile = [1, 8], subgroup_strides = [0, 0], thread_strides = [0, 1]>"
    )


def test_layout_from_config_mapping_takes_digit_per_dim():
    # lane_basis [[16, 4], [1, 0]]: dim 0 takes digit 1 (4 lanes, stride 1), dim 1 digit 0 (16 lanes, stride 4)
    layout = layout_from_config((4, 16), Basis((1, 1), (0, 1)),
                                Basis((16, 4), (1, 0)), (1, 1))
    assert layout.thread_tile == (4, 16) and layout.thread_strides == (1, 4)
    omap = layout.ownership(64)
    basis = Basis((16, 4), (1, 0))
    for tid in (0, 1, 5, 42, 63):
        assert omap.elements_of(tid) == [tuple(basis.coords([tid])[0].tolist())]


def test_parse_print_roundtrip_exact_text():
    assert str(parse_layout(SEED_64x64)) == SEED_64x64
    body = SEED_64x64[len("#iree_vector_ext.nested_layout"):]
    assert str(parse_layout(body)) == SEED_64x64
    x = "#xegpu.layout<sg_layout = [2, 4], sg_data = [16, 16], inst_data = [8, 16], lane_layout = [2, 8], lane_data = [1, 1], order = [0, 1]>"
    assert str(parse_layout(x)) == x
    s = "#xegpu.slice<#xegpu.layout<sg_layout = [8, 4], sg_data = [32, 32]>, dims = [0]>"
    assert str(parse_layout(s)) == s


def test_stride_is_normalised_to_zero_on_unit_tiles():
    layout = parse_layout(
        "<subgroup_tile = [1, 2], batch_tile = [1, 1], outer_tile = [1, 1], thread_tile = [1, 4], "
        "element_tile = [1, 1], subgroup_strides = [7, 1], thread_strides = [3, 1]>"
    )
    assert layout.subgroup_strides == (0, 1) and layout.thread_strides == (0, 1)


@pytest.mark.parametrize("n", [3, 5, 6, 7])
def test_distributed_shape_matches_register_count(n):
    layout = NestedLayout((1, 1), (n, 2), (1, 3), (4, 2), (2, 1), (0, 0), (2, 1))
    omap = layout.ownership(8)
    assert omap.num_registers == int(np.prod(layout.distributed_shape))


def test_more_subgroups_than_launched_wrap_around_as_the_seed_lists():
    # The same layout on 4 subgroups: "the subgroup used (say x) is x mod num_subgroups",
    # 0, 4, 1, 5, 2, 6, 3, 7 | mod 4 -> 0, 0, 1, 1, 2, 2, 3, 3; the wrapped virtual
    # subgroups become registers of the subgroup that runs them.
    layout = NestedLayout((4, 2), (1, 1), (1, 1), (1, 1), (1, 1), (1, 4), (0, 0))
    omap = layout.ownership(subgroup_size=1, num_threads=4)
    owner = {tuple(omap.coords[t, r]): t for t in range(4) for r in range(omap.num_registers)}
    assert [owner[(i, j)] for i in range(4) for j in range(2)] == [0, 0, 1, 1, 2, 2, 3, 3]
    assert omap.covers and omap.max_replication == 1
    runs = layout.on_subgroups(4)
    assert (runs.subgroup_tile, runs.batch_tile, runs.subgroup_strides) == ((4, 1), (1, 2), (1, 0))
    with pytest.raises(SimtifyError, match="straddles"):  # v mod 3 splits no subgroup digit
        layout.ownership(subgroup_size=1, num_threads=3)
