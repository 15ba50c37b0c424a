"""Planning a layout conversion: how `to_layout` moves a value from layout A to layout B.

Everything is decided on the two ownership maps (which thread holds which element in
which register) and the target's shared-memory banks; nothing here builds IR. The
choices, cheapest first:

- **no-op**: the maps are identical (same elements, same registers, same order);
- **registers**: every thread already holds what it needs; registers are permuted;
- **lane shuffles**: every element a thread needs is held by a thread of the *same
  subgroup*. For each destination register, rounds of ``gpu.shuffle`` read one source
  register from another lane (xor when the lane distance is one constant, idx with a
  constant or per-thread lane otherwise); a register that several source registers
  feed takes one round per source register and a select;
- **workgroup memory**: the source writes (one owner per element), a barrier, the target
  reads. The buffer is laid out so that both sides use the widest vector access their
  layouts allow (a thread's run of consecutive elements along the buffer's fastest dim,
  up to 16 bytes) and so that neither side has bank conflicts: the planner tries the
  plain row-major buffer, XOR swizzles of the column groups (``col' = (col / vec ^
  (row / per_phase) % max_phase) · vec + col % vec``, as Triton's and MLIR's swizzled
  shared layouts) and row paddings, counting the conflicts of every candidate by brute
  force with the simulator's own counter (DESIGN.md's definition), and keeps the
  cheapest. When no candidate is conflict-free it says so.

Why shuffles or memory: costs are counted in shared-memory *phases* per subgroup (one
phase serves banks × bank-width bytes; a conflict adds one). A shuffle moves 4 bytes per
lane (sg·4 / phase bytes phases); a memory access of w bytes per lane costs sg·w / phase
bytes phases plus its conflicts; a barrier is charged ``BARRIER_PHASES``. Memory moves
every byte twice (write, then read) and waits at a barrier, so shuffles win unless
replication or scattered sources need many rounds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from math import prod

import numpy as np

from simtify.errors import SimtifyError
from simtify.layout.memory_access import count_bank_conflicts
from simtify.layout.protocol import VectorLayout

BARRIER_PHASES = 16  # what one workgroup barrier is charged, in shared-memory phases per subgroup
MAX_ACCESS_BYTES = 16  # the widest shared-memory access per lane (ds_read_b128, ld.shared.v4)


# --- memory plans -------------------------------------------------------------------------


@dataclass(frozen=True)
class BufferLayout:
    """Where element x of the vector lives in the (1-D) workgroup buffer. The plain
    address is x linearized over `order` (slowest to fastest) with rows of `pitch`
    elements (`cols` + `pad`). Two swizzles, both bijections that keep a thread's run
    contiguous: `swizzle = (vec, per_phase, max_phase)` XORs the column group
    ``col / vec`` with ``(row / per_phase) % max_phase`` (Triton's and MLIR's swizzled
    shared layout); `xor_columns` (power-of-two buffers) XORs into the address, for every
    address bit `b` above one bank phase that is set, the mask `m` of ``(b, m)``: a
    linear map over F2 chosen so that both sides' phases hit distinct banks."""

    shape: tuple[int, ...]  # the vector's shape
    order: tuple[int, ...]  # vector dims, slowest to fastest
    pad: int = 0  # elements appended to every row
    swizzle: tuple[int, int, int] | None = None  # (vec, per_phase, max_phase)
    xor_columns: tuple[tuple[int, int], ...] = ()  # (address bit, xor mask)

    @property
    def cols(self) -> int:
        return self.shape[self.order[-1]]

    @property
    def rows(self) -> int:
        return prod(self.shape) // self.cols

    @property
    def pitch(self) -> int:
        return self.cols + self.pad

    @property
    def weights(self) -> dict[int, int]:
        """Per vector dim, its weight in the plain address (the fastest dim: 1)."""
        out, w = {self.order[-1]: 1}, self.pitch
        for d in reversed(self.order[:-1]):
            out[d] = w
            w *= self.shape[d]
        return out

    def plain(self, coords: np.ndarray) -> np.ndarray:
        flat = np.zeros(coords.shape[:-1], dtype=np.int64)
        for d, w in self.weights.items():
            flat += coords[..., d].astype(np.int64) * w
        return flat

    def xor_of(self, flat: np.ndarray) -> np.ndarray:
        """The F2 swizzle's XOR value for plain addresses `flat`."""
        out = np.zeros_like(flat)
        for bit, mask in self.xor_columns:
            out ^= ((flat >> bit) & 1) * mask
        return out

    def address(self, coords: np.ndarray) -> np.ndarray:
        if self.swizzle is not None:
            vec, per_phase, max_phase = self.swizzle
            fast = self.order[-1]
            col = coords[..., fast].astype(np.int64)
            row = (self.plain(coords) - col) // self.pitch
            col = ((col // vec) ^ ((row // per_phase) % max_phase)) * vec + col % vec
            return row * self.pitch + col
        flat = self.plain(coords)
        return flat ^ self.xor_of(flat) if self.xor_columns else flat

    @property
    def elements(self) -> int:
        return self.rows * self.pitch

    def swizzle_json(self) -> dict | None:
        """The swizzle, with what a script needs to recompute `address` (in elements)."""
        if self.swizzle is not None:
            vec, per_phase, max_phase = self.swizzle
            return {"kind": "column-groups", "vec": vec, "per_phase": per_phase, "max_phase": max_phase,
                    "formula": "col' = ((col / vec) ^ ((row / per_phase) % max_phase)) * vec + col % vec; "
                               "address = row * pitch + col'"}
        if self.xor_columns:
            return {"kind": "xor-bits", "xor": [[b, m] for b, m in self.xor_columns],
                    "formula": "plain = row * pitch + col; address = plain ^ (xor of mask for every [bit, mask] "
                               "with bit `bit` of plain set)"}
        return None

    def describe(self) -> str:
        dims = "x".join(str(self.shape[d]) for d in self.order)
        text = f"buffer of {self.rows} rows x {self.pitch} (vector dims {list(self.order)} slowest to fastest: {dims})"
        if self.pad:
            text += f", rows padded by {self.pad} elements"
        if self.swizzle:
            vec, per_phase, max_phase = self.swizzle
            text += f", XOR swizzle of {vec}-element column groups: group ^= (row / {per_phase}) % {max_phase}"
        if self.xor_columns:
            text += ", F2 swizzle: address ^= " + " ^ ".join(f"bit{b}·{m}" for b, m in self.xor_columns)
        if not self.pad and not self.swizzle and not self.xor_columns:
            text += ", plain row-major"
        return text


@dataclass(frozen=True)
class Accesses:
    """One side of a memory conversion: every thread issues one vector access of `width`
    elements per run; run k takes the thread's registers `runs[k]` (flat, row-major over
    the distributed shape) in increasing order of the fastest buffer dim."""

    width: int
    runs: tuple[tuple[int, ...], ...]
    offsets: tuple[tuple[int, ...], ...]  # the coordinate offset (thread-independent) of each run's first register
    active: np.ndarray = field(compare=False, repr=False)  # [threads] bool: threads that access
    first: np.ndarray = field(compare=False, repr=False)  # [threads, runs, rank] first coordinates


@dataclass(frozen=True)
class MemoryPlan:
    buffer: BufferLayout
    write: Accesses
    read: Accesses
    write_conflicts: int  # per workgroup, as the simulator counts them
    read_conflicts: int
    write_instructions: int  # per workgroup: accesses × subgroups that issue them
    read_instructions: int
    element_bytes: int
    barriers: int
    conflict_free_exists: bool  # some candidate had 0 conflicts on both sides

    @property
    def conflicts(self) -> int:
        return self.write_conflicts + self.read_conflicts

    @property
    def bytes(self) -> int:
        return self.buffer.elements * self.element_bytes


@dataclass(frozen=True)
class ShuffleRound:
    """Destination register `dst` takes source register `src` from lane `lanes[tid]` on the
    threads `members[tid]`. `mode`: 'own' (no shuffle: the thread's own register), 'xor'
    (lane ^ value), 'idx' (lane `value` for all), 'f2' (lane = value ^ XOR of `columns[j]`
    over the set bits j of the lane), 'table' (a per-thread lane table). `member_fields`:
    None when every thread is a member, else ``(shift, bits, value)`` tests that together
    say ``(lane >> shift) % 2**bits == value`` (empty tuple: only a table says it)."""

    dst: int
    src: int
    members: np.ndarray = field(repr=False)  # [threads] bool
    lanes: np.ndarray = field(repr=False)  # [threads] int: source lane (own lane where not a member)
    mode: str
    value: int = 0
    columns: tuple[int, ...] = ()
    member_fields: tuple[tuple[int, int, int], ...] | None = None

    @property
    def is_shuffle(self) -> bool:
        return self.mode != "own"


@dataclass(frozen=True)
class LanePlan:
    rounds: tuple[ShuffleRound, ...]
    subgroups: int
    dst_registers: int

    @property
    def shuffles_per_subgroup(self) -> int:
        return sum(r.is_shuffle for r in self.rounds)

    @property
    def shuffles(self) -> int:
        return self.shuffles_per_subgroup * self.subgroups

    @property
    def selects(self) -> int:
        return len(self.rounds) - self.dst_registers


@dataclass(frozen=True)
class ConversionPlan:
    kind: str  # 'noop' | 'registers' | 'shuffles' | 'memory'
    src: VectorLayout
    dst: VectorLayout
    lanes: LanePlan | None
    memory: MemoryPlan | None
    costs: dict  # kind -> phases per subgroup (where the kind is possible)
    reason: str

    def explain(self) -> str:
        lines = [f"choice: {self.kind}", f"why: {self.reason}"]
        for kind, cost in self.costs.items():
            lines.append(f"cost of {kind}: {cost:g} shared-memory phases per subgroup")
        if self.lanes is not None and self.kind in ("registers", "shuffles"):
            lp = self.lanes
            modes = {}
            for r in lp.rounds:
                modes[r.mode] = modes.get(r.mode, 0) + 1
            lines.append(f"registers per thread: {lp.dst_registers}; rounds: "
                         + ", ".join(f"{n} {m}" for m, n in sorted(modes.items()))
                         + f"; selects: {lp.selects}")
            lines.append(f"shuffles: {lp.shuffles_per_subgroup} per subgroup, {lp.shuffles} per workgroup")
        if self.memory is not None and self.kind == "memory":
            m = self.memory
            lines.append(m.buffer.describe() + f", {m.bytes} bytes")
            lines.append(f"writes: vector<{m.write.width}> x {len(m.write.runs)} per thread, "
                         f"{m.write_instructions} instructions, {m.write_conflicts} bank conflicts")
            lines.append(f"reads: vector<{m.read.width}> x {len(m.read.runs)} per thread, "
                         f"{m.read_instructions} instructions, {m.read_conflicts} bank conflicts")
            lines.append(f"barriers: {m.barriers}")
            if m.conflicts and not m.conflict_free_exists:
                lines.append("no padding or XOR swizzle tried makes both sides conflict-free; "
                             "this is the fewest conflicts found")
        return "\n".join(lines)

    def to_json(self) -> dict:
        out = {"choice": self.kind, "reason": self.reason, "costs": dict(self.costs)}
        if self.lanes is not None and self.kind in ("registers", "shuffles"):
            out["shuffles_per_workgroup"] = self.lanes.shuffles
            out["rounds"] = len(self.lanes.rounds)
            out["selects"] = self.lanes.selects
        if self.memory is not None and self.kind == "memory":
            m = self.memory
            out.update({
                "buffer": {"rows": m.buffer.rows, "pitch": m.buffer.pitch, "order": list(m.buffer.order),
                           "pad": m.buffer.pad, "swizzle": m.buffer.swizzle_json(), "bytes": m.bytes,
                           "description": m.buffer.describe()},
                "write_width": m.write.width, "read_width": m.read.width,
                "write_instructions": m.write_instructions, "read_instructions": m.read_instructions,
                "bank_conflicts": {"write": m.write_conflicts, "read": m.read_conflicts},
                "barriers": m.barriers, "conflict_free_exists": m.conflict_free_exists,
            })
        return out


# --- runs: a thread's consecutive elements along one dim ------------------------------------


def _runs(coords: np.ndarray, fast: int, max_width: int) -> tuple[int, list[list[int]]] | None:
    """The widest w <= max_width such that every thread's registers split into runs of w
    elements consecutive along dim `fast`, aligned to w, with the same register indices
    for every thread. Returns (w, runs) with each run's registers in increasing order."""
    _, R, rank = coords.shape
    unit = np.zeros(rank, dtype=np.int64)
    unit[fast] = 1
    c0 = coords[0]
    index = {tuple(int(v) for v in c): r for r, c in enumerate(c0)}
    widths = []
    w = max_width
    while w >= 1:
        widths.append(w)
        w //= 2
    for w in widths:
        runs: list[list[int]] = []
        ok = True
        for r in range(R):
            if c0[r, fast] % w:
                continue
            run = []
            for j in range(w):
                reg = index.get(tuple(int(v) for v in c0[r] + j * unit))
                if reg is None:
                    ok = False
                    break
                run.append(reg)
            if not ok:
                break
            runs.append(run)
        if ok and sum(len(r) for r in runs) == R:
            arr = np.array(runs, dtype=np.int64)  # [n, w]
            first = coords[:, arr[:, 0], :]
            expect = first[:, :, None, :] + np.arange(w)[None, None, :, None] * unit
            if (first[:, :, fast] % w == 0).all() and np.array_equal(coords[:, arr, :], expect):
                return w, runs
    return None


def _first_owners(flat: np.ndarray) -> np.ndarray:
    """[threads] bool: the first thread of every group of threads holding the same row."""
    _, first = np.unique(flat, axis=0, return_index=True)
    out = np.zeros(flat.shape[0], dtype=bool)
    out[first] = True
    return out


def _accesses(omap, fast: int, max_width: int, active: np.ndarray) -> Accesses:
    coords = omap.coords
    found = _runs(coords, fast, max_width)
    if found is None:
        found = (1, [[r] for r in range(coords.shape[1])])
    w, runs = found
    first = coords[:, [r[0] for r in runs], :]
    offsets = tuple(tuple(int(v) for v in first[0, k] - first[0, 0] + 0) for k in range(len(runs)))
    return Accesses(w, tuple(tuple(r) for r in runs), offsets, active, first)


def _narrow(acc: Accesses, width: int, fast: int) -> Accesses:
    """The same accesses split into runs of `width` (a divisor of acc.width)."""
    if width == acc.width:
        return acc
    runs, firsts = [], []
    for k, run in enumerate(acc.runs):
        for j in range(0, acc.width, width):
            runs.append(tuple(run[j:j + width]))
            f = acc.first[:, k, :].copy()
            f[:, fast] += j
            firsts.append(f)
    first = np.stack(firsts, axis=1)
    offsets = tuple(tuple(int(v) for v in first[0, k] - first[0, 0]) for k in range(len(runs)))
    return Accesses(width, tuple(runs), offsets, acc.active, first)


def _conflicts(acc: Accesses, buf: BufferLayout, sg: int, elem_bytes: int, target) -> tuple[int, int]:
    """(bank conflicts, instructions) of one side's accesses, per workgroup, counted with
    the simulator's counter over every subgroup and every run."""
    T = acc.first.shape[0]
    S = T // sg
    n = len(acc.runs)
    w = acc.width
    tids = np.nonzero(acc.active)[0]
    if tids.size == 0:
        return 0, 0
    coords = acc.first[tids]  # [t, n, rank]
    fast = buf.order[-1]
    steps = np.zeros((w, coords.shape[-1]), dtype=np.int64)
    steps[:, fast] = np.arange(w)
    elem = coords[:, :, None, :] + steps[None, None, :, :]  # [t, n, w, rank]
    addr = buf.address(elem) * elem_bytes  # [t, n, w]
    # entries in (group = run·S + subgroup, lane, element) order
    addr = np.transpose(addr, (1, 0, 2))  # [n, t, w]
    group = (np.arange(n)[:, None] * S + (tids // sg)[None, :])[:, :, None]
    lane = (tids % sg)[None, :, None]
    shape = (n, tids.size, w)
    g = np.broadcast_to(group, shape).ravel()
    ln = np.broadcast_to(lane, shape).ravel()
    el = np.broadcast_to(np.arange(w)[None, None, :], shape).ravel()
    conflicts = count_bank_conflicts(g, ln, el, addr.ravel(), w, elem_bytes, target.shared_banks,
                                     target.bank_width_bytes, True)
    subgroups = np.unique(tids // sg).size
    return int(conflicts), n * subgroups


def _pow2_divisors(n: int, cap: int) -> list[int]:
    out, v = [], 1
    while v <= min(n, cap):
        if n % v == 0:
            out.append(v)
        v *= 2
    return out


def _is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _span(basis: list[int]) -> list[int]:
    out = [0]
    for v in basis:
        if v and v not in out:
            out = out + [x ^ v for x in out]
    return sorted(set(out))


def _side_basis(acc: Accesses, plain: BufferLayout, sg: int, elem_bytes: int, target) -> list[int] | None:
    """The F2 basis of what one phase of one access touches: the run's element bits and
    the phase's lane bits, as plain-address vectors; None where the lanes are not linear."""
    chunk = max(1, min(acc.width, MAX_ACCESS_BYTES // elem_bytes))
    per_phase = max(1, target.shared_banks * target.bank_width_bytes // (chunk * elem_bytes))
    lanes = min(per_phase, sg, acc.first.shape[0])
    flat = plain.plain(acc.first[:lanes, 0, :])  # [lanes]
    rel = flat ^ flat[0]
    basis = [1 << k for k in range(acc.width.bit_length() - 1)]
    bits = [rel[1 << j] for j in range(lanes.bit_length() - 1)]
    expect = np.zeros(lanes, dtype=np.int64)
    for j, v in enumerate(bits):
        expect ^= ((np.arange(lanes) >> j) & 1) * int(v)
    if not np.array_equal(expect, rel):
        return None
    return basis + [int(v) for v in bits]


def _decomposes(acc: Accesses, plain: BufferLayout) -> bool:
    """Every run's plain address is the thread's base address XOR a per-run constant on
    disjoint bits (so that the F2 swizzle splits into a per-thread and a per-run part)."""
    flat = plain.plain(acc.first)  # [T, runs]
    base = flat[:, :1]
    off = flat[0:1, :] - flat[0:1, :1]
    return bool(((base & off) == 0).all() and np.array_equal(flat, base + off))


def _f2_swizzle(plain: BufferLayout, sides: list[list[int]], elem_bytes: int, vec_width: int, target,
                budget: int = 20000) -> tuple[tuple[int, int], ...] | None:
    """XOR masks for the address bits above one bank phase such that, for every side, no
    two words one phase touches share a bank (None when the search finds none).

    With the address split as (low p bits | high bits), the swizzle is
    ``low ^= A · high``. Two elements x != y of a side's phase subspace S meet in one
    bank exactly when their swizzled low bits differ only within a word while their high
    bits differ; as S is linear, this is: for every h = high(z) != 0 of some z in S,
    ``A·h`` must not equal low(z) plus within-word bits. `A` is built column by column
    (one per high bit) by depth-first search, zero columns first."""
    n = plain.elements.bit_length() - 1
    phase_elems = target.shared_banks * target.bank_width_bytes // elem_bytes
    p = min(n, phase_elems.bit_length() - 1)
    high = n - p
    if high <= 0:
        return ()
    word_bits = max(0, (target.bank_width_bytes // elem_bytes).bit_length() - 1)
    low_from = max(word_bits, vec_width.bit_length() - 1)
    if low_from >= p:
        return None
    within = _span([1 << k for k in range(word_bits)])
    forbidden: list[dict[int, set[int]]] = []
    low_mask = (1 << p) - 1
    for basis in sides:
        f: dict[int, set[int]] = {}
        for z in _span(basis):
            h = z >> p
            if h:
                f.setdefault(h, set()).update((z & low_mask) ^ w for w in within)
        forbidden.append(f)
    by_top: dict[int, list[tuple[int, set[int]]]] = {}
    for f in forbidden:
        for h, bad in f.items():
            by_top.setdefault(h.bit_length() - 1, []).append((h, bad))
    values = [0] + [v << low_from for v in range(1, 1 << (p - low_from))]
    cols = [0] * high
    nodes = [0]

    def value(h: int) -> int:
        out, i = 0, 0
        while h:
            if h & 1:
                out ^= cols[i]
            h >>= 1
            i += 1
        return out

    def place(i: int) -> bool:
        if i == high:
            return True
        for v in values:
            nodes[0] += 1
            if nodes[0] > budget:
                return False
            cols[i] = v
            if all(value(h) not in bad for h, bad in by_top.get(i, ())) and place(i + 1):
                return True
        cols[i] = 0
        return False

    if not place(0):
        return None
    return tuple((p + i, c) for i, c in enumerate(cols) if c)


def _candidates(shape, order, ws: Accesses, wr: Accesses, sg: int, elem_bytes: int, target, narrowed: bool):
    """Buffer layouts to try for one dim order and one pair of access widths, roughly
    best first: plain, an F2 swizzle (power-of-two buffers) or Triton-style XOR
    swizzles, then row paddings (only at the full widths: `narrowed` is False)."""
    cols = shape[order[-1]]
    rows = prod(shape) // cols
    phase_elems = max(1, target.shared_banks * target.bank_width_bytes // elem_bytes)
    plain = BufferLayout(tuple(shape), tuple(order))
    yield plain
    wmax = max(ws.width, wr.width)
    if rows == 1:
        return
    if _is_pow2(prod(shape)) and _decomposes(ws, plain) and _decomposes(wr, plain):
        sides = [_side_basis(a, plain, sg, elem_bytes, target) for a in (ws, wr)]
        if all(b is not None for b in sides):
            masks = _f2_swizzle(plain, sides, elem_bytes, wmax, target)
            if masks:
                yield BufferLayout(tuple(shape), tuple(order), 0, None, masks)
    if narrowed:
        return
    if not _is_pow2(prod(shape)):
        for vec in _pow2_divisors(cols, phase_elems):
            groups = cols // vec
            if vec < wmax or not _is_pow2(groups):
                continue
            for max_phase in _pow2_divisors(groups, groups):
                for per_phase in _pow2_divisors(rows, rows):
                    if max_phase >= 2 and per_phase * max_phase <= rows * 2:
                        yield BufferLayout(tuple(shape), tuple(order), 0, (vec, per_phase, max_phase))
    for pad in range(wmax, phase_elems + 1, wmax):
        yield BufferLayout(tuple(shape), tuple(order), pad)
    for pad in range(1, phase_elems + 1):
        if pad % wmax:
            yield BufferLayout(tuple(shape), tuple(order), pad)


def _halvings(w: int) -> list[int]:
    out = [w]
    while w % 2 == 0 and w > 1:
        w //= 2
        out.append(w)
    return out


def _width_for(buf: BufferLayout, w: int) -> int:
    """The widest access of at most w that the buffer keeps contiguous and aligned."""
    while w > 1:
        if buf.swizzle is not None and buf.swizzle[0] % w:
            w //= 2
            continue
        if buf.pad % w:
            w //= 2
            continue
        break
    return max(w, 1)


def plan_memory(src_map, dst_map, shape, sg: int, elem_bytes: int, target, barriers: int) -> MemoryPlan:
    """The cheapest buffer layout for writing with `src_map` and reading with `dst_map`:
    fewest bank conflicts, then fewest instructions, then least padding."""
    rank = len(shape)
    max_w = max(1, MAX_ACCESS_BYTES // elem_bytes)
    writers = _first_owners(src_map.flat)
    readers = np.ones(dst_map.flat.shape[0], dtype=bool)
    orders = []
    for fast in [rank - 1] + list(range(rank - 1)):
        if shape[fast] == 1 and fast != rank - 1:
            continue
        orders.append(tuple([d for d in range(rank) if d != fast] + [fast]))
    best = None
    any_free = False
    for order in orders:
        fast = order[-1]
        ws_full = _accesses(src_map, fast, max_w, writers)
        wr_full = _accesses(dst_map, fast, max_w, readers)
        # widest pairs first; a narrower pair only where the wider ones have conflicts
        pairs = sorted(((a, b) for a in _halvings(ws_full.width) for b in _halvings(wr_full.width)),
                       key=lambda ab: (-(ab[0] + ab[1]), -min(ab)))
        for pw, pr in pairs:
            narrowed = (pw, pr) != (ws_full.width, wr_full.width)
            ws_pair, wr_pair = _narrow(ws_full, pw, fast), _narrow(wr_full, pr, fast)
            for buf in _candidates(shape, order, ws_pair, wr_pair, sg, elem_bytes, target, narrowed):
                ws = _narrow(ws_pair, _width_for(buf, pw), fast)
                wr = _narrow(wr_pair, _width_for(buf, pr), fast)
                wc, wi = _conflicts(ws, buf, sg, elem_bytes, target)
                rc, ri = _conflicts(wr, buf, sg, elem_bytes, target)
                key = (wc + rc, wi + ri, buf.pad, buf.swizzle is not None or bool(buf.xor_columns),
                       orders.index(order))
                any_free = any_free or wc + rc == 0
                if best is None or key < best[0]:
                    best = (key, MemoryPlan(buf, ws, wr, wc, rc, wi, ri, elem_bytes, barriers, False))
                if wc + rc == 0 and ws.width == pw and wr.width == pr:
                    break  # conflict-free at this pair's widths: later candidates are no better
            if best[0][0] == 0:
                break  # narrower pairs only cost more instructions
    plan = best[1]
    return MemoryPlan(plan.buffer, plan.write, plan.read, plan.write_conflicts, plan.read_conflicts,
                      plan.write_instructions, plan.read_instructions, elem_bytes, barriers, any_free)


# --- lane plans ------------------------------------------------------------------------------


def plan_lanes(src_map, dst_map, sg: int) -> LanePlan | None:
    """Rounds of register moves and shuffles that give every thread its target registers,
    or None when some thread needs an element no thread of its subgroup holds."""
    src, dst = src_map.flat, dst_map.flat
    T, Rs = src.shape
    Rd = dst.shape[1]
    S = T // sg
    N = src_map.num_elements
    if S * N * Rs > 1 << 24:
        return None  # too large to plan lane by lane; memory is always possible
    # owner[s, e, q]: the lowest lane of subgroup s holding element e in register q, else -1
    owner = np.full((S, N, Rs), -1, dtype=np.int64)
    tids = np.arange(T)
    for q in range(Rs):
        # assign from the highest lane down so that the lowest lane wins
        order = tids[::-1]
        owner[order // sg, src[order, q], q] = order % sg
    sub = tids // sg
    own_lane = tids % sg
    rounds: list[ShuffleRound] = []
    for r in range(Rd):
        e = dst[:, r]
        cand = owner[sub, e, :]  # [T, Rs]
        if ((cand >= 0).sum(axis=1) == 0).any():
            return None
        own = src == e[:, None]  # [T, Rs]
        uncovered = np.ones(T, dtype=bool)
        while uncovered.any():
            can = (cand >= 0) & uncovered[:, None]
            own_can = own & uncovered[:, None]
            # the source register serving most uncovered threads; then most of them locally
            score = can.sum(axis=0) * (2 * T) + own_can.sum(axis=0)
            q = int(np.argmax(score))
            members = can[:, q]
            lanes = np.where(own[:, q], own_lane, cand[:, q])
            lanes = np.where(members, lanes, own_lane)
            rounds.append(_round(r, q, members, lanes, own_lane, sg))
            uncovered &= ~members
    return LanePlan(tuple(rounds), S, Rd)


def _round(r: int, q: int, members: np.ndarray, lanes: np.ndarray, own_lane: np.ndarray, sg: int) -> ShuffleRound:
    m = members
    fields = _member_fields(members, own_lane, sg)
    if (lanes[m] == own_lane[m]).all():
        return ShuffleRound(r, q, members, own_lane.copy(), "own", member_fields=fields)
    x = lanes[m] ^ own_lane[m]
    if (x == x[0]).all():
        return ShuffleRound(r, q, members, own_lane ^ int(x[0]), "xor", int(x[0]), member_fields=fields)
    if (lanes[m] == lanes[m][0]).all():
        return ShuffleRound(r, q, members, np.full_like(lanes, int(lanes[m][0])), "idx", int(lanes[m][0]),
                            member_fields=fields)
    f2 = _f2_lanes(members, lanes, own_lane, sg)
    if f2 is not None:
        c, cols = f2
        return ShuffleRound(r, q, members, lanes, "f2", c, cols, member_fields=fields)
    return ShuffleRound(r, q, members, lanes, "table", member_fields=fields)


def _f2_lanes(members, lanes, own_lane, sg: int):
    """(c, columns) with lane' = c ^ XOR_j columns[j]·bit_j(lane) on every member, if the
    members' source lanes are such an affine map over F2 of their own lanes."""
    if not _is_pow2(sg):
        return None
    bits = sg.bit_length() - 1
    # solve on the members: Gaussian elimination over (lane bits + 1) unknown columns
    rows = {}
    for l, t in zip(own_lane[members].tolist(), lanes[members].tolist()):
        rows.setdefault(l, t)
    if any(rows.get(l, t) != t for l, t in zip(own_lane[members].tolist(), lanes[members].tolist())):
        return None  # one lane, two sources (subgroups differ)
    pivots: dict[int, tuple[int, int]] = {}  # leading bit -> (row vector incl. constant bit, target)
    for l, t in rows.items():
        v, y = (l << 1) | 1, t
        while v:
            top = v.bit_length() - 1
            if top not in pivots:
                pivots[top] = (v, y)
                break
            pv, py = pivots[top]
            v, y = v ^ pv, y ^ py
        if v == 0 and y != 0:
            return None
    # back-substitute; free unknowns are 0
    sol = [0] * (bits + 1)  # sol[0] = constant, sol[j + 1] = column of bit j
    for top in sorted(pivots):
        v, y = pivots[top]
        acc = y
        for b in range(top):
            if v >> b & 1:
                acc ^= sol[b]
        sol[top] = acc
    return sol[0], tuple(sol[1:])


def _member_fields(members: np.ndarray, own_lane: np.ndarray, sg: int):
    """None when all threads are members; else contiguous lane-bit tests that select
    exactly the members (the same in every subgroup); () when no such tests exist."""
    if members.all():
        return None
    if not _is_pow2(sg):
        return ()
    T = members.size
    by_lane = members.reshape(T // sg, sg)
    if not (by_lane == by_lane[0]).all():
        return ()
    mem = by_lane[0]
    lanes = np.arange(sg)
    bits = sg.bit_length() - 1
    relevant = [j for j in range(bits) if not np.array_equal(mem, mem[lanes ^ (1 << j)])]
    first = int(np.argmax(mem))
    fields = []
    j = 0
    while j < len(relevant):
        k = j
        while k + 1 < len(relevant) and relevant[k + 1] == relevant[k] + 1:
            k += 1
        shift, n = relevant[j], relevant[k] - relevant[j] + 1
        fields.append((shift, n, (first >> shift) % (1 << n)))
        j = k + 1
    test = np.ones(sg, dtype=bool)
    for shift, n, v in fields:
        test &= (lanes >> shift) % (1 << n) == v
    return tuple(fields) if np.array_equal(test, mem) else ()


# --- the planner ---------------------------------------------------------------------------------


def memory_phases(plan: MemoryPlan, sg: int, target) -> float:
    phase = target.shared_banks * target.bank_width_bytes
    subgroups = max(1, plan.write.first.shape[0] // sg)
    per = lambda acc, instrs: instrs * max(1.0, sg * acc.width * plan.element_bytes / phase)
    total = per(plan.write, plan.write_instructions) + per(plan.read, plan.read_instructions) + plan.conflicts
    return total / subgroups + BARRIER_PHASES * plan.barriers


def lane_phases(plan: LanePlan, sg: int, target) -> float:
    phase = target.shared_banks * target.bank_width_bytes
    return plan.shuffles_per_subgroup * max(1.0, sg * 4 / phase)


def plan_conversion(src: VectorLayout, dst: VectorLayout, *, subgroup_size: int, threads: int, target,
                    element_bytes: int = 4, force_memory: bool = False, barriers: int = 1,
                    shape=None) -> ConversionPlan:
    """Choose how to convert a value from `src` to `dst` (see the module docstring), on
    their ownership maps: any layout family plans the same way. `shape`: the value's,
    where the layouts do not fix it (a nested layout does). `barriers`: the barriers a
    memory conversion needs here (1, or 2 inside a loop)."""
    if src.own_shape is not None and dst.own_shape is not None and src.own_shape != dst.own_shape:
        raise SimtifyError(f"layouts of different shapes: {list(src.own_shape)} vs {list(dst.own_shape)}")
    shape = tuple(shape) if shape is not None else src.own_shape or dst.own_shape
    if shape is None:
        raise SimtifyError(f"neither {src} nor {dst} fixes the value's shape: give it")
    sm = src.ownership(shape, subgroup_size, threads)
    dm = dst.ownership(shape, subgroup_size, threads)
    costs: dict[str, float] = {}
    if not force_memory and sm.identical(dm):
        return ConversionPlan("noop", src, dst, None, None, {"noop": 0.0}, "the ownership maps are identical")
    lanes = None if force_memory else plan_lanes(sm, dm, subgroup_size)
    if lanes is not None and lanes.shuffles_per_subgroup == 0:
        costs["registers"] = 0.0
        return ConversionPlan("registers", src, dst, lanes, None, costs,
                              "every thread already holds the elements it needs; only registers move")
    memory = plan_memory(sm, dm, shape, subgroup_size, element_bytes, target, barriers)
    costs["memory"] = memory_phases(memory, subgroup_size, target)
    if force_memory:
        return ConversionPlan("memory", src, dst, None, memory, costs,
                              "shared_memory_conversion asks for workgroup memory")
    if lanes is None:
        return ConversionPlan("memory", src, dst, None, memory, costs,
                              "some thread needs an element that no thread of its subgroup holds")
    costs["shuffles"] = lane_phases(lanes, subgroup_size, target)
    if costs["shuffles"] < costs["memory"]:
        return ConversionPlan("shuffles", src, dst, lanes, memory, costs,
                              "elements stay inside their subgroups and shuffles cost less than memory")
    return ConversionPlan("memory", src, dst, lanes, memory, costs,
                          "elements stay inside their subgroups but shuffles would cost at least as much as memory")
