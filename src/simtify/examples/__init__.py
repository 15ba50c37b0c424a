"""Built-in examples, named so that the CLI can run on them with no files:
``simtify layout show example:seed-64x64``, ``simtify opt example:row-max ...``."""

from simtify.errors import SimtifyError

LAYOUTS = {
    # iree_vector_ext_dialect.txt, "A full example": vector<64x64xf16> over 2 subgroups.
    "seed-64x64": (
        "#iree_vector_ext.nested_layout<subgroup_tile = [2, 1], batch_tile = [2, 4], outer_tile = [1, 1], "
        "thread_tile = [16, 4], element_tile = [1, 4], subgroup_strides = [1, 0], thread_strides = [1, 16]>"
    ),
    # iree_vector_ext_dialect.txt: subgroups in the order 0, 4, 1, 5, 2, 6, 3, 7.
    "seed-subgroup-order": (
        "#iree_vector_ext.nested_layout<subgroup_tile = [4, 2], batch_tile = [1, 1], outer_tile = [1, 1], "
        "thread_tile = [1, 1], element_tile = [1, 1], subgroup_strides = [1, 4], thread_strides = [0, 0]>"
    ),
    # xegpu_workgroup_layout_pr.txt: 128x128 over sg_layout [2, 2], two rounds on dim 0, dim 1 shared.
    "xegpu-128x128": (
        "#xegpu.layout<sg_layout = [2, 2], sg_data = [32, 128], lane_layout = [1, 16], lane_data = [1, 1], order = [1, 0]>"
    ),
}

# Shapes for the examples whose layout does not fix one.
SHAPES = {"xegpu-128x128": "128x128"}


def example_layout(name: str) -> str:
    if name not in LAYOUTS:
        raise SimtifyError(f"no built-in example '{name}' (have: {', '.join(sorted(LAYOUTS))})", "layout")
    return LAYOUTS[name]


def example_program(name: str) -> str:
    """A built-in MLIR program (``example:row-max``), shipped as package data."""
    from importlib.resources import files

    programs = sorted(p.name[: -len(".mlir")].replace("_", "-") for p in files(__package__).iterdir()
                      if p.name.endswith(".mlir"))
    if name not in programs:
        raise SimtifyError(f"no built-in program '{name}' (have: {', '.join(programs)})", "example")
    return files(__package__).joinpath(name.replace("-", "_") + ".mlir").read_text()
