"""SIMT IR -> a host C++ program that runs the kernel one workgroup at a time
(``simtify emit host``), so that g++ can check the emitted index math here, without a GPU.

The body is the CUDA writer's, re-scheduled: it is split into *phases* at every
``gpu.barrier``, ``gpu.shuffle`` and ``gpu.subgroup_reduce``; each phase is a loop over
the workgroup's threads (``for (int t = 0; t < THREADS; ++t)``), and a value that lives
across phases is kept per thread, in an array indexed by ``t`` (``v12[t][i]`` is element
i of thread t's register array v12). A shuffle is its own loop that reads the other
lane's slot of that array. ``scf.for`` / ``scf.if`` around a barrier or a shuffle must
be uniform: the program checks that every thread agrees on the bounds or the condition
(a divergent barrier is a bug on a GPU) and stops with an error if not. Workgroup
memory is filled with NaN (or 0x5A bytes) before each workgroup, so that reading it
before writing shows up in the results.

The program's command line: ``GRID_X GRID_Y GRID_Z ARG...``: one raw little-endian file
per buffer argument (read before the launch and written back after it), the value of
each scalar argument as text.
"""

from __future__ import annotations

from math import prod

from xdsl.ir import Block, Operation

from simtify.codegen.c_names import RESERVED
from simtify.codegen.c_values import Mem, Val
from simtify.codegen.expressions import Fact, Lin, paren
from simtify.codegen.kernel_file import (
    EmittedKernel,
    bind_arguments,
    bind_attributions,
    comment,
    emission_target,
    kernel_setup,
)
from simtify.codegen.kernel_writer import KernelWriter
from simtify.codegen.launch import LaunchDescription
from simtify.codegen.prelude import PORTABLE_FLOAT_MINMAX, PRELUDE_HELPERS
from simtify.errors import SimtifyError
from simtify.ir import location_of

# ops that read other threads' registers, or wait for them: each ends a phase
SYNC_OPS = frozenset({"gpu.barrier", "gpu.shuffle", "gpu.ballot", "gpu.subgroup_reduce", "iree_gpu.subgroup_scan",
                      "nvgpu.mma.sync", "amdgpu.mfma"})

KERNEL_MARK = "// ---- the workgroup and its launcher ----\n"

PRELUDE = r"""#ifndef SIMTIFY_HOST_PRELUDE
#define SIMTIFY_HOST_PRELUDE
#include <algorithm>
#include <math.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
typedef _Float16 f16_t;
#define SIMTIFY_FN static inline
""" + PRELUDE_HELPERS + PORTABLE_FLOAT_MINMAX + r"""SIMTIFY_FN float rsqrtf(float x) { return 1.0f / sqrtf(x); }
SIMTIFY_FN double rsqrt(double x) { return 1.0 / sqrt(x); }
// Stop when threads disagree where a GPU needs them to agree (a divergent barrier).
SIMTIFY_FN void require(bool ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "error: %s\n", what);
    exit(3);
  }
}
// What unwritten workgroup memory holds here: NaN, or 0x5A bytes.
template <typename T> SIMTIFY_FN T poison() {
  T x;
  memset(&x, 0x5A, sizeof x);
  return x;
}
template <> inline float poison<float>() { return NAN; }
template <> inline double poison<double>() { return NAN; }
template <typename T> static std::vector<T> read_buffer(const char* path, size_t n) {
  std::vector<T> data(n);
  FILE* f = fopen(path, "rb");
  require(f && fread(data.data(), sizeof(T), n, f) == n, path);
  fclose(f);
  return data;
}
template <typename T> static void write_buffer(const char* path, const std::vector<T>& data) {
  FILE* f = fopen(path, "wb");
  require(f && fwrite(data.data(), sizeof(T), data.size(), f) == data.size(), path);
  fclose(f);
}
#endif  // SIMTIFY_HOST_PRELUDE
"""


def contains_sync(op: Operation, memo: dict) -> bool:
    hit = memo.get(op)
    if hit is None:
        hit = op.name in SYNC_OPS or any(contains_sync(o, memo) for r in op.regions for b in r.blocks for o in b.ops)
        memo[op] = hit
    return hit


class HostWriter(KernelWriter):
    language = "host"
    reserved_names = RESERVED | {
        "t", "lane", "first", "src_lane", "ok", "member", "folded", "acc", "A", "B", "C", "wx", "wy", "wz", "run",
        "argc", "argv", "THREADS", "SUBGROUP", "BLOCK_X", "BLOCK_Y", "BLOCK_Z", "block_id_x", "block_id_y",
        "block_id_z", "grid_x", "grid_y", "grid_z", "require", "poison", "run_workgroup", "read_buffer", "write_buffer",
        "size_t", "memcpy"}
    unroll_pragma = ""
    wide_memory = False

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.at_split = False  # emitting an op whose results must outlive its phase
        self.sync_memo: dict = {}
        self.shared: list[tuple[str, str, int]] = []

    # --- storage: per-thread arrays for values that cross phases ------------------------

    def new_var(self, hint, ctype, shape, *, mutable=False) -> Val:
        name = self.names.fresh(hint)
        if not self.at_split:
            return Val(ctype, shape, "var", name, mutable=mutable)
        n = prod(shape)
        self.top.append(f"static {ctype} {name}[THREADS]" + (f"[{n}];" if n > 1 else ";"))
        return Val(ctype, shape, "var", f"{name}[t]", mutable=mutable, thread_array=name)

    def declare(self, val: Val) -> None:
        if val.thread_array is None:
            super().declare(val)

    def assign_new(self, val: Val, expr: str) -> None:
        if val.thread_array is None:
            super().assign_new(val, expr)
        else:
            self.line(f"{val.text} = {expr};")

    def init_var(self, val: Val, expr: str) -> None:
        if val.thread_array is None:
            super().init_var(val, expr)
        else:
            self.line(f"{val.text} = {expr};")

    def private_array(self, v, ctype: str, n: int) -> str:
        name = self.names.fresh(v.name_hint or "scratch")
        if self.at_split or v.owner is self.func.body.blocks.first:
            self.top.append(f"static {ctype} {name}[THREADS][{n}];")
            return f"{name}[t]"
        self.line(f"{ctype} {name}[{n}];")
        return name

    def shared_array(self, ctype: str, name: str, n: int) -> str:
        self.shared.append((ctype, name, n))
        return f"static {ctype} {name}[{n}];"

    # --- spelling ---------------------------------------------------------------------------

    def thread_index(self, axis: int) -> str:
        bx, by, bz = self.block
        if axis == 0:
            return "t" if by * bz == 1 else f"t % {bx}"
        if axis == 1:
            return f"t / {bx}" if bz == 1 else f"(t / {bx}) % {by}"
        return f"t / {bx * by}"

    def linear_thread(self) -> str:
        return "t"

    def block_index(self, axis: int) -> str:
        return f"block_id_{'xyz'[axis]}"

    def grid_size(self, axis: int) -> str:
        return f"grid_{'xyz'[axis]}"

    def gather_to_lds(self, op, src: Mem, sidx, dst: Mem, didx, nbytes: int, n: int) -> None:
        self.line(f"// {op.name}: lane l's {nbytes} bytes land at the subgroup's destination + l * {nbytes}")
        self.line(f"memcpy(&{dst.ptr}[{dst.address(didx).render()} + (t % SUBGROUP) * {n}], "
                  f"&{src.element(sidx)}, {nbytes});")

    def async_copy(self, op, src: Mem, sidx, dst: Mem, didx, n, nbytes, src_n, bypass_l1) -> None:
        # lands at once: a program that waits before reading sees the same
        self.line(f"// {op.name}: lands at once here (a GPU lands it at the wait)")
        with self.block_of(f"for (int i = 0; i < {n}; ++i)"):
            take = f"i < {paren(src_n)} ? {src.ptr}[{src.address(sidx).render()} + i] : 0" if src_n else \
                f"{src.ptr}[{src.address(sidx).render()} + i]"
            self.line(f"{dst.ptr}[{dst.address(didx).render()} + i] = {take};")

    def async_commit(self, op) -> None:
        self.line(f"// {op.name}: nothing in flight here")

    def async_wait(self, op, groups_left: int) -> None:
        self.line(f"// {op.name}: every copy has landed")

    # --- phases ---------------------------------------------------------------------------------

    def emit_block(self, block: Block, on_yield=None) -> None:
        """A region inside one phase: plain C++ under the thread loop, locals only."""
        if block.parent_op() is self.func or any(contains_sync(o, self.sync_memo) for o in block.ops):
            self.emit_split(block, on_yield)
            return
        saved, self.at_split = self.at_split, False
        try:
            super().emit_block(block, on_yield)
        finally:
            self.at_split = saved

    def emit_split(self, block: Block, on_yield=None) -> None:
        """A block with barriers or shuffles: runs of other ops become phase loops."""
        self.cse.append({})
        pending: list[Operation] = []

        def flush():
            if not pending:
                return
            with self.block_of("for (int t = 0; t < THREADS; ++t)"):
                saved, self.at_split = self.at_split, True
                for op in pending:
                    if op.name == "scf.yield":
                        on_yield(op)
                    else:
                        self.emit_op(op)
                self.at_split = saved
            pending.clear()

        for op in block.ops:
            if op.name in ("func.return", "gpu.return"):
                continue
            if op.name == "scf.yield":
                if on_yield is not None and op.operands:
                    pending.append(op)
                continue
            if op not in self.live:
                continue
            if contains_sync(op, self.sync_memo):
                flush()
                self.emit_sync(op)
            else:
                pending.append(op)
        flush()
        self.cse.pop()

    def emit_sync(self, op: Operation) -> None:
        where = location_of(op)
        if op.name == "gpu.barrier":
            self.line(f"// gpu.barrier ({where}): every thread has finished the phase above")
        elif op.name == "gpu.shuffle":
            self.emulate_shuffle(op)
        elif op.name == "gpu.subgroup_reduce":
            self.emulate_subgroup_reduce(op)
        elif op.name == "gpu.ballot":
            self.emulate_ballot(op)
        elif op.name == "iree_gpu.subgroup_scan":
            self.emulate_subgroup_scan(op)
        elif op.name in ("nvgpu.mma.sync", "amdgpu.mfma"):
            self.emulate_matrix_instruction(op)
        elif op.name == "scf.for":
            self.uniform_for(op, where)
        elif op.name == "scf.if":
            self.uniform_if(op, where)
        else:
            raise self.error(op, "a barrier or shuffle inside this op cannot be emulated")

    def thread_loop(self, what: str):
        self.line(f"// {what}")
        return self.block_of("for (int t = 0; t < THREADS; ++t)")

    def emulate_shuffle(self, op: Operation) -> None:
        mode, value, off, width = self.shuffle_operands(op)
        res, valid = op.results
        self.at_split = True
        out = self.fresh(res)
        ok = self.fresh(valid)
        self.at_split = False
        with self.thread_loop(f"gpu.shuffle {mode} ({location_of(op)}): lane k reads another lane's value"):
            self.line("const int lane = t % SUBGROUP, first = t - lane;")
            src = {"xor": f"lane ^ {paren(off.at(0))}", "down": f"lane + {paren(off.at(0))}",
                   "up": f"lane - {paren(off.at(0))}", "idx": off.at(0)}[mode]
            self.line(f"const int src_lane = {src};")
            w = paren(width.at(0))
            self.line(f"const bool ok = lane < {w} && src_lane >= 0 && src_lane < {w} && src_lane < SUBGROUP;")
            with self.loop(out.n) as i:
                self.line(f"{out.at(i)} = ok ? {value.at_thread(i, 'first + src_lane')} : {value.at(i)};")
            self.line(f"{ok.at(0)} = ok;")
        self.vals[res], self.vals[valid] = out, ok
        self.immutable.add(paren(out.at(0)))

    def emulate_subgroup_reduce(self, op: Operation) -> None:
        kind, size, stride = self.clusters(op)
        src = self.val(op.value)
        self.at_split = True
        out = self.fresh(op.results[0])
        self.at_split = False
        span = size * stride
        with self.thread_loop(f"gpu.subgroup_reduce {kind} ({location_of(op)}): over clusters of {size} lanes"
                              + (f" at stride {stride}" if stride > 1 else "")):
            self.line(f"const int lane = t % SUBGROUP, first = t - lane + lane / {span} * {span} + lane % {stride};")
            with self.loop(out.n) as i:
                self.line(f"{out.ctype} folded = {src.at_thread(i, 'first')};")
                with self.block_of(f"for (int member = 1; member < {size}; ++member)"):
                    other = src.at_thread(i, f"first + member * {stride}" if stride > 1 else "first + member")
                    self.line(f"folded = {self.combine(kind, 'folded', other, out.ctype)};")
                self.line(f"{out.at(i)} = folded;")
        self.vals[op.results[0]] = out

    def emulate_ballot(self, op: Operation) -> None:
        pred = self.val(op.predicate)
        self.at_split = True
        out = self.fresh(op.result)
        self.at_split = False
        bits = min(64, self.sg, int(op.result.type.width.data))
        with self.thread_loop(f"gpu.ballot ({location_of(op)}): bit l is lane l's predicate"):
            self.line("const int first = t - t % SUBGROUP;")
            self.line("unsigned long long member = 0;")
            self.line(f"for (int lane = 0; lane < {bits}; ++lane) member |= "
                      f"(unsigned long long)({pred.at_thread(0, 'first + lane')} ? 1 : 0) << lane;")
            self.line(f"{out.at(0)} = ({out.ctype})member;")
        self.vals[op.result] = out

    def emulate_subgroup_scan(self, op: Operation) -> None:
        value = self.val(op.value)
        self.at_split = True
        result, total = (self.fresh(r) for r in op.results)
        self.at_split = False
        with self.thread_loop(f"iree_gpu.subgroup_scan ({location_of(op)}): each lane folds its cluster's members"):
            self.scan_cluster(op, lambda src: value.at_thread(0, f"t - t % SUBGROUP + {paren(src)}"), "t % SUBGROUP",
                              result, total)
        self.vals[op.results[0]], self.vals[op.results[1]] = result, total

    def emulate_matrix_instruction(self, op: Operation) -> None:
        """Per subgroup: assemble A, B and C from every lane's fragments (the tables say
        which matrix element each lane's register holds), D = A·B + C, hand back D."""
        import numpy as np

        from simtify.sim.ops.mma import _elements

        intr = self.intrinsic_of(op)
        a, b, c = (self.val(o) for o in op.operands)
        self.at_split = True
        d = self.fresh(op.results[0])
        self.at_split = False
        m, n, k = intr.m, intr.n, intr.k
        tables = {}
        for role in "abc":
            idx = np.asarray(_elements(intr.name, role))
            name = self.names.fresh(f"{role}_element")
            rows = ", ".join("{" + ", ".join(map(str, r)) + "}" for r in idx)
            self.top.append(f"static const int {name}[{idx.shape[0]}][{idx.shape[1]}] = {{{rows}}};")
            tables[role] = (name, idx.shape[1])
        self.line(f"// {op.name} {m}x{n}x{k} ({location_of(op)}): per subgroup, D = A·B + C from every lane's "
                  "fragments")
        with self.block_of("for (int first = 0; first < THREADS; first += SUBGROUP)"):
            self.line(f"float A[{m * k}], B[{k * n}], C[{m * n}];")
            with self.block_of("for (int lane = 0; lane < SUBGROUP; ++lane)"):
                for role, mat, val in (("a", "A", a), ("b", "B", b), ("c", "C", c)):
                    name, per = tables[role]
                    with self.loop(per) as i:
                        self.line(f"{mat}[{name}[lane][{i.render()}]] = float({val.at_thread(i, 'first + lane')});")
            with self.block_of(f"for (int i = 0; i < {m}; ++i)"):
                with self.block_of(f"for (int j = 0; j < {n}; ++j)"):
                    self.line(f"float acc = C[i * {n} + j];")
                    self.line(f"for (int l = 0; l < {k}; ++l) acc += A[i * {k} + l] * B[l * {n} + j];")
                    self.line(f"C[i * {n} + j] = acc;")
            name, per = tables["c"]
            with self.block_of("for (int lane = 0; lane < SUBGROUP; ++lane)"):
                own = d.thread_array
                with self.loop(per) as i:
                    slot = f"{own}[first + lane]" + (f"[{i.render()}]" if d.n > 1 else "")
                    self.line(f"{slot} = C[{name}[lane][{i.render()}]];")
        self.vals[op.results[0]] = d

    def uniform_value(self, val: Val, what: str) -> str:
        """Thread 0's value of `val`, after checking that every thread has the same."""
        first = val.at_thread(0, "0")
        if val.thread_array is not None or (val.kind == "view" and val.root().thread_array is not None):
            with self.block_of("for (int t = 1; t < THREADS; ++t)"):
                self.line(f'require({val.at(0)} == {first}, "{what} differs between threads");')
        return first

    def uniform_for(self, op: Operation, where: str) -> None:
        body = op.body.blocks.first
        lb, ub, step = (self.val(o) for o in (op.lb, op.ub, op.step))
        self.line(f"// scf.for ({where}) holds a barrier or shuffle: every thread must run the same trips")
        lb0, ub0, step0 = (self.uniform_value(v, f"a bound of the scf.for at {where}") for v in (lb, ub, step))
        carried = []
        if op.iter_args:
            with self.block_of("for (int t = 0; t < THREADS; ++t)"):
                self.at_split = True
                carried = [self.carried(r, self.val(i), hint=a) for r, i, a in zip(op.results, op.iter_args, body.args[1:])]
                self.at_split = False
        iv = body.args[0]
        name = self.names.fresh(iv.name_hint or "iv")
        it = self.ctype(iv.type, op)
        with self.block_of(f"for ({it} {name} = {lb0}; {name} < {paren(ub0)}; {name} += {step0})"):
            lb_fact = self.fact(Lin.of(lb0) if not lb0.lstrip("-").isdigit() else Lin(int(lb0)))
            self.enter_loop_body(body, name, it, Fact(lb_fact.nonneg, 1), carried)
            self.emit_split(body, on_yield=lambda y: self.yield_to(carried, y.operands))
        for r, c in zip(op.results, carried):
            self.vals[r] = Val(c.ctype, c.shape, c.kind, c.text, thread_array=c.thread_array)

    def uniform_if(self, op: Operation, where: str) -> None:
        cond = self.val(op.cond)
        self.line(f"// scf.if ({where}) holds a barrier or shuffle: every thread must take the same branch")
        c0 = self.uniform_value(cond, f"the condition of the scf.if at {where}")
        results = []
        if op.results:
            self.at_split = True
            for r in op.results:
                results.append(self.fresh(r, mutable=True))
                self.vals[r] = results[-1]
            self.at_split = False
        with self.block_of(f"if ({c0})"):
            self.emit_split(op.true_region.blocks.first, on_yield=lambda y: self.yield_to(results, y.operands))
        if op.false_region.blocks:
            self.lines[-1] += " else {"
            self.indent += 1
            self.emit_split(op.false_region.blocks.first, on_yield=lambda y: self.yield_to(results, y.operands))
            self.indent -= 1
            self.line("}")
        for r in results:
            r.mutable = False


def emit_host(module: Operation, func_name: str, target="sm_90", *, grid=None, block=None,
              subgroup_size=None) -> EmittedKernel:
    """A C++ program that runs `func_name` on the host, one workgroup at a time."""
    tgt = emission_target(target)
    func, grid, block, sg = kernel_setup(module, func_name, tgt, grid, block, subgroup_size)
    w = HostWriter(func, block=block, subgroup_size=sg, target=tgt)
    w.names.used.add(func_name)
    params, args = bind_arguments(w, func, restrict="")
    w.at_split = True
    bind_attributions(w, func)
    w.at_split = False
    w.emit_block(func.body.blocks.first)
    launch = LaunchDescription(func_name, grid, block, sg, w.shared_bytes, 0, tuple(args))
    bx, by, bz = block
    ids = ", ".join(f"int {x}" for x in ("block_id_x", "block_id_y", "block_id_z", "grid_x", "grid_y", "grid_z"))
    fills = [f"  std::fill({name}, {name} + {n}, poison<{ct}>());" for ct, name, n in w.shared]
    body = ["  " + t for t in w.top] + fills + w.lines
    out = [comment([f"Host emulation of @{func_name} for {tgt.name}, emitted by simtify: one workgroup at a time,",
                    "its threads as loops, the body split into phases at barriers and shuffles.",
                    "usage: PROGRAM GRID_X GRID_Y GRID_Z ARG... (buffers: raw files, read and written back;",
                    "scalars: their value)"] + launch.comment_lines()),
           PRELUDE + KERNEL_MARK + f"constexpr int BLOCK_X = {bx}, BLOCK_Y = {by}, BLOCK_Z = {bz};",
           f"constexpr int THREADS = {bx * by * bz}, SUBGROUP = {sg};",
           "",
           f"static void run_workgroup({', '.join(params + [ids])}) {{",
           *body,
           "}",
           "",
           _main(launch, args)]
    return EmittedKernel("host", "\n".join(out), launch)


def _main(launch: LaunchDescription, args) -> str:
    n = len(args)
    lines = ["int main(int argc, char** argv) {",
             f"  if (argc != {4 + n}) {{",
             f'    fprintf(stderr, "usage: %s GRID_X GRID_Y GRID_Z {" ".join(a.param.upper() for a in args)}\\n", argv[0]);',
             "    return 2;",
             "  }",
             "  const int grid_x = atoi(argv[1]), grid_y = atoi(argv[2]), grid_z = atoi(argv[3]);"]
    call = []
    for k, a in enumerate(args):
        argv = f"argv[{4 + k}]"
        if a.kind == "buffer":
            held = "uint8_t" if a.ctype == "bool" else a.ctype  # std::vector<bool> has no data()
            lines.append(f"  std::vector<{held}> {a.param} = read_buffer<{held}>({argv}, {prod(a.shape)});")
            call.append(f"reinterpret_cast<bool*>({a.param}.data())" if a.ctype == "bool" else f"{a.param}.data()")
        else:
            conv = "atof" if a.ctype in ("float", "double") else "atoll"
            lines.append(f"  const {a.ctype} {a.param} = ({a.ctype}){conv}({argv});")
            call.append(a.param)
    lines += ["  for (int wz = 0; wz < grid_z; ++wz)",
              "    for (int wy = 0; wy < grid_y; ++wy)",
              "      for (int wx = 0; wx < grid_x; ++wx)",
              f"        run_workgroup({', '.join(call + ['wx', 'wy', 'wz', 'grid_x', 'grid_y', 'grid_z'])});"]
    for k, a in enumerate(args):
        if a.kind == "buffer" and a.access != "read":
            lines.append(f"  write_buffer(argv[{4 + k}], {a.param});")
    lines += ["  return 0;", "}", ""]
    return "\n".join(lines)


def combine_programs(sources: dict[str, str]) -> str:
    """Several host emulations as one program (one g++ run): each in a namespace named
    after its key, and a `main` that runs the one named by its first argument."""
    out = [PRELUDE]
    for name, text in sources.items():
        if KERNEL_MARK not in text or not name.isidentifier():
            raise SimtifyError(f"{name}: not a host emulation simtify emitted", "host emulation")
        kernel = text.split(KERNEL_MARK, 1)[1].replace("int main(int argc, char** argv)", "int run(int argc, char** argv)")
        out.append(f"namespace {name} {{\n{kernel}}}  // namespace {name}\n")
    out.append("int main(int argc, char** argv) {")
    for name in sources:
        out.append(f'  if (argc > 1 && strcmp(argv[1], "{name}") == 0) return {name}::run(argc - 1, argv + 1);')
    out += ['  fprintf(stderr, "usage: %s PROGRAM GRID_X GRID_Y GRID_Z ARG...\\n", argv[0]);', "  return 2;", "}", ""]
    return "\n".join(out)
