"""SIMT IR -> GPU source: CUDA C++ (`cuda.py`), HIP C++ (`hip.py`), and a host C++
emulation of one workgroup at a time (`host_emulation.py`) that g++ builds and runs
here, so that index mistakes are caught without a GPU.

What the three share: `kernel_writer.py` (the writer of a function body: values, loops,
op dispatch) with one module per op family mixed in (`arith_ops`, `index_ops`,
`memory_ops`, `vector_transfers`, `vector_ops`, `vector_reductions`, `control_flow`,
`lane_ops`, `matrix_ops`); `c_names`, `c_types`, `c_values` (how values look in C),
`expressions` (linear index forms), `live_ops` (what must be emitted), `op_attributes`,
`prelude` (C++ helpers), `kernel_file` (parameters, launch, the kernel around the body).
`launch.py` holds the launch description; `toolchain.py` runs the compilers."""

LANGUAGES = ("cuda", "hip", "host")


def emit(language: str, module, func: str, target: str, **kw):
    """The EmittedKernel for `func` in `language` ("cuda", "hip" or "host"); keyword
    arguments: grid, block, subgroup_size, and (cuda, hip) name."""
    from simtify.codegen.cuda import emit_cuda
    from simtify.codegen.hip import emit_hip
    from simtify.codegen.host_emulation import emit_host
    from simtify.errors import SimtifyError

    if language not in LANGUAGES:
        raise SimtifyError(f"no language '{language}' (have: {', '.join(LANGUAGES)})", "emit")
    return {"cuda": emit_cuda, "hip": emit_hip, "host": emit_host}[language](module, func, target, **kw)
