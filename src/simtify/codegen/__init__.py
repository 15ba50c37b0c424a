"""SIMT IR -> GPU source: CUDA C++ (`cuda.py`), HIP C++ (`hip.py`), and a host C++
emulation of one workgroup at a time (`host_emulation.py`) that g++ builds and runs
here, so that index mistakes are caught without a GPU. `cpp_common.py` holds what the
three share; `launch.py` the launch description; `toolchain.py` runs the compilers."""

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
