"""Every layout family answers the protocol's questions with one signature, and the
answers agree with the ownership maps; a question a family cannot answer is a
SimtifyError that says so."""

import numpy as np
import pytest

from simtify.errors import SimtifyError
from simtify.layout import VectorLayout, parse_layout

NESTED = ("#iree_vector_ext.nested_layout<subgroup_tile = [2, 1], batch_tile = [2, 1], outer_tile = [1, 1], "
          "thread_tile = [4, 8], element_tile = [1, 2], subgroup_strides = [1, 0], thread_strides = [8, 1]>")
XEGPU = "#xegpu.layout<sg_layout = [2, 1], sg_data = [8, 16], lane_layout = [2, 8], lane_data = [1, 2]>"
XEGPU_SLICE = f"#xegpu.slice<{XEGPU}, dims = [1]>"
TRITON = "#ttg.blocked<{sizePerThread = [1, 2], threadsPerWarp = [4, 8], warpsPerCTA = [2, 1], order = [1, 0]}>"
CUTE = "(8,4):(1,8)"

CASES = [(NESTED, (16, 16)), (XEGPU, (16, 16)), (XEGPU_SLICE, (16,)), (TRITON, (16, 16)), (CUTE, (32,))]


def _element_sets(omap, keep=None):
    """Per thread, the set of coordinates it holds (restricted to the dims in `keep`)."""
    coords = omap.coords
    if keep is not None:
        coords = coords[..., keep]
    return [set(map(tuple, c.tolist())) for c in coords]


@pytest.mark.parametrize("text,shape", CASES)
def test_every_family_answers_ownership_with_one_signature(text, shape):
    layout = parse_layout(text)
    assert isinstance(layout, VectorLayout)
    omap = layout.ownership(shape, layout.default_subgroup_size, None)
    assert omap.shape == shape and omap.covers
    assert layout.fits(shape)
    assert np.prod(layout.distributed_shape_of(shape)) == omap.num_registers


@pytest.mark.parametrize("text,shape", [c for c in CASES if len(c[1]) == 2 and "ttg" not in c[0]])
def test_permute_moves_every_element_with_its_owner(text, shape):
    layout = parse_layout(text)
    omap = layout.ownership(shape)
    moved = layout.permute([1, 0]).ownership(shape[::-1], omap.subgroup_size, omap.num_threads)
    # the same owners; registers follow the new dims' row-major order in XeGPU's fragments
    assert _element_sets(moved, [1, 0]) == _element_sets(omap)


@pytest.mark.parametrize("text,shape", [c for c in CASES if len(c[1]) == 2 and "ttg" not in c[0]])
def test_project_keeps_the_owners_of_the_kept_dims(text, shape):
    layout = parse_layout(text)
    omap = layout.ownership(shape)
    kept = layout.project([1]).ownership(shape[:1], omap.subgroup_size, omap.num_threads)
    assert _element_sets(kept) == _element_sets(omap, [0])


@pytest.mark.parametrize("text,shape", [c for c in CASES if len(c[1]) == 2 and "ttg" not in c[0]])
def test_insert_dims_gives_every_owner_the_whole_new_dim(text, shape):
    layout = parse_layout(text)
    omap = layout.ownership(shape)
    wide = layout.insert_dims([0], [3]).ownership((3,) + shape, omap.subgroup_size, omap.num_threads)
    assert _element_sets(wide, [1, 2]) == _element_sets(omap)
    assert all(len({c[0] for c in s}) == 3 for s in _element_sets(wide))


@pytest.mark.parametrize("text,shape", [(TRITON, (16, 16)), (CUTE, (32,))])
def test_a_question_a_family_cannot_answer_says_so(text, shape):
    layout = parse_layout(text)
    with pytest.raises(SimtifyError, match=f"a {layout.family} layout cannot answer 'permute'"):
        layout.permute([0])
    with pytest.raises(SimtifyError, match="cannot answer 'reshape'"):
        layout.reshape(shape)


def test_xegpu_reshape_adds_unit_dims_and_folds_runs_of_dims():
    layout = parse_layout(XEGPU)
    wide = layout.reshape((16, 1, 16), (16, 16))
    assert wide.ownership((16, 1, 16)).num_registers == layout.ownership((16, 16)).num_registers
    flat = layout.reshape((256,), (16, 16))  # a lane's rows 16 apart: its pairs 32 apart in the flat vector
    assert np.array_equal(flat.ownership((256,)).flat, layout.ownership((16, 16)).flat)
    with pytest.raises(SimtifyError, match="unit dims, or by folding"):
        layout.reshape((4, 64), (16, 16))
