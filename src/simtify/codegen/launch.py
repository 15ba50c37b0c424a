"""What a host needs to launch an emitted kernel: grid, block, shared memory and the
order, types and roles of the arguments. Printed as a comment above every kernel and
available as JSON (``simtify emit ... --launch FILE.json``)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from math import prod

from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Operation

from simtify.errors import SimtifyError


@dataclass(frozen=True)
class KernelArg:
    name: str  # the MLIR argument's name, as the kernel's C parameter is named
    kind: str  # "buffer" (a memref: pointer to row-major elements) or "scalar"
    ctype: str  # C element type
    shape: tuple[int, ...]  # () for scalars
    access: str  # "read", "write", "read-write" (buffers), "value" (scalars)
    param: str = ""  # the C parameter's name (the MLIR name unless that is a C keyword)


@dataclass(frozen=True)
class LaunchDescription:
    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    subgroup_size: int
    static_shared_bytes: int
    dynamic_shared_bytes: int
    args: tuple[KernelArg, ...] = field(default_factory=tuple)

    @property
    def threads(self) -> int:
        return prod(self.block)

    def as_dict(self) -> dict:
        d = asdict(self)
        d["threads"] = self.threads
        return d

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), indent=2) + "\n"

    def comment_lines(self) -> list[str]:
        """The launch as C++ comment lines (the first lines of every emitted file)."""
        out = [f"launch {self.kernel}: grid = ({', '.join(map(str, self.grid))}), "
               f"block = ({', '.join(map(str, self.block))}), subgroup = {self.subgroup_size} lanes,",
               f"  shared memory = {self.static_shared_bytes} bytes static + {self.dynamic_shared_bytes} dynamic;",
               "  arguments, in order (buffers: device pointers to row-major data, 16-byte aligned):"]
        for i, a in enumerate(self.args):
            what = (f"{a.ctype}[{'x'.join(map(str, a.shape)) or '1'}], {a.access}" if a.kind == "buffer"
                    else f"{a.ctype} by value")
            out.append(f"    {i}: {a.name}: {what}")
        return out


def xyz(sizes, what: str) -> tuple[int, int, int]:
    sizes = tuple(int(s) for s in sizes)
    if not 1 <= len(sizes) <= 3 or any(s < 1 for s in sizes):
        raise SimtifyError(f"{what} must be 1 to 3 positive sizes, got {list(sizes)}", f"--{what}")
    return sizes + (1,) * (3 - len(sizes))


def recorded_block(func: Operation) -> tuple[tuple[int, int, int] | None, int | None]:
    """(block, subgroup size) the function records: IREE's translation_info, or a
    gpu.func's known_block_size."""
    info = func.attributes.get("translation_info")
    if info is not None and getattr(info, "workgroup_size", None):
        return xyz(info.workgroup_size, "block"), info.subgroup_size or None
    known = func.properties.get("known_block_size") if hasattr(func, "properties") else None
    if known is None:
        known = func.attributes.get("known_block_size")
    if known is not None:
        return xyz(known.get_values(), "block"), None
    return None, None


def written_memrefs(func: Operation) -> set:
    """Function arguments (block args) some op of the body writes through, following
    views (subview, casts) back to the argument."""
    writes = {"memref.store", "vector.store", "vector.transfer_write", "vector.scatter",
              "amdgpu.gather_to_lds", "memref.copy"}
    views = {"memref.subview", "memref.cast", "memref.expand_shape", "memref.collapse_shape",
             "memref.reinterpret_cast", "memref.memory_space_cast"}
    root_of: dict = {}

    def root(v):
        while v in root_of:
            v = root_of[v]
        return v

    written = set()
    for op in func.walk():
        if op.name in views and op.results:
            root_of[op.results[0]] = op.operands[0]
        if op.name in writes:
            targets = {"memref.store": [1], "vector.store": [1], "vector.transfer_write": [1],
                       "vector.scatter": [0], "amdgpu.gather_to_lds": [], "memref.copy": [1]}[op.name]
            if op.name == "amdgpu.gather_to_lds":
                targets = [len(op.operands) - 1 - len(op.dst_indices)]
            for k in targets:
                written.add(root(op.operands[k]))
    return written


def read_memrefs(func: Operation) -> set:
    reads = {"memref.load", "vector.load", "vector.transfer_read", "vector.gather", "amdgpu.gather_to_lds",
             "memref.copy"}
    views = {"memref.subview", "memref.cast", "memref.expand_shape", "memref.collapse_shape",
             "memref.reinterpret_cast", "memref.memory_space_cast"}
    root_of: dict = {}
    out = set()
    for op in func.walk():
        if op.name in views and op.results:
            root_of[op.results[0]] = op.operands[0]
        if op.name in reads and op.operands:
            v = op.operands[0]
            while v in root_of:
                v = root_of[v]
            out.add(v)
    return out


def memref_access(arg, written: set, read: set) -> str:
    if isinstance(arg.type, MemRefType):
        w, r = arg in written, arg in read
        return "read-write" if w and r else "write" if w else "read"
    return "value"
