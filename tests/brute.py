"""Brute-force, per-element definitions of who owns what, written from the seeds' and
DESIGN.md's prose independently of `simtify.layout`, for property tests to compare with.
Slow on purpose: plain Python loops, no numpy."""

from __future__ import annotations

import itertools
from math import prod


def _digits(x: int, radices):
    """Mixed-radix digits of x, most significant first."""
    out = []
    for r in reversed(radices):
        out.append(x % r)
        x //= r
    return list(reversed(out))


def nested_map(L, subgroup_size: int, num_threads: int) -> list[list[tuple[int, ...]]]:
    """Element-major: for every element, unpack its per-dim (s, b, o, t, e) digits and find
    every thread whose virtual subgroup and thread ids match; its register is the
    row-major position of (b.., o.., e..)."""
    r = len(L.batch_tile)
    shape = [L.subgroup_tile[i] * L.batch_tile[i] * L.outer_tile[i] * L.thread_tile[i] * L.element_tile[i] for i in range(r)]
    reg_shape = list(L.batch_tile) + list(L.outer_tile) + list(L.element_tile)
    nregs = prod(reg_shape)
    table = [[None] * nregs for _ in range(num_threads)]
    # each thread's virtual (subgroup, thread) digits per dim, worked out once; an
    # element belongs to every thread whose digits are the element's
    threads_of = {}
    for tid in range(num_threads):
        sg = tid // subgroup_size
        key = tuple(((sg // L.subgroup_strides[i]) % L.subgroup_tile[i] if L.subgroup_tile[i] > 1 else 0,
                     (tid // L.thread_strides[i]) % L.thread_tile[i] if L.thread_tile[i] > 1 else 0)
                    for i in range(r))
        threads_of.setdefault(key, []).append(tid)
    for x in itertools.product(*[range(n) for n in shape]):
        digs = [
            _digits(x[i], [L.subgroup_tile[i], L.batch_tile[i], L.outer_tile[i], L.thread_tile[i], L.element_tile[i]])
            for i in range(r)
        ]
        reg_digits = [d[1] for d in digs] + [d[2] for d in digs] + [d[4] for d in digs]
        reg = 0
        for d, n in zip(reg_digits, reg_shape):
            reg = reg * n + d
        for tid in threads_of.get(tuple((d[0], d[3]) for d in digs), ()):
            assert table[tid][reg] is None
            table[tid][reg] = tuple(x)
    return table


def _delin(i: int, layout, order):
    order = order if order is not None else list(range(len(layout) - 1, -1, -1))
    out = [0] * len(layout)
    for d in order:
        out[d] = i % layout[d]
        i //= layout[d]
    return out


def xegpu_map(base, removed, shape, subgroup_size: int, num_threads: int) -> list[list[tuple[int, ...]]]:
    """Upstream's generation of coordinates, then lane membership, then a sort key.

    Subgroup: for every distribution unit offset u (row-major over the shape in steps of
    ``min(n, layout·data)``) the subgroup tile is ``(u + id·data + p) % n``. A tile-local
    position p belongs to the lane whose digit is ``((p % inst) // lane_data) % lane_layout``.
    Register order: unit, then instruction block, then the lane's local index
    ``(pi // (LL·LD))·LD + pi % LD`` per dim, each row-major."""
    rank = base.rank if base.rank is not None else len(shape) + len(removed)
    kept = [d for d in range(rank) if d not in removed]
    f = lambda name, d, default: (getattr(base, name)[d] if getattr(base, name) is not None else default)  # noqa: E731
    sg_layout = [f("sg_layout", d, 1) for d in range(rank)]
    lane_layout = [f("lane_layout", d, 1) for d in range(rank)]
    sg_order = base.order if base.sg_layout is not None else None
    lane_order = base.order if base.lane_layout is not None else None
    dims = []
    for d, n in zip(kept, shape):
        L = sg_layout[d]
        D = f("sg_data", d, n // L if n % L == 0 else n)
        I = f("inst_data", d, D)
        LL = lane_layout[d]
        LD = f("lane_data", d, I // LL)
        dims.append((n, L, D, I, LL, LD))
    table = []
    for tid in range(num_threads):
        sid = _delin(tid // subgroup_size, sg_layout, sg_order)
        lid = _delin(tid % subgroup_size, lane_layout, lane_order)
        units = [range(0, n, min(n, L * D)) for (n, L, D, I, LL, LD) in dims]
        # lane membership is a condition on each dimension's position alone: the
        # positions p whose every digit is this lane's are the product of each
        # dimension's (in the same order as filtering the whole product)
        mine = [[pk for pk in range(D) if ((pk % I) // LD) % LL == lid[d]]
                for d, (n, L, D, I, LL, LD) in zip(kept, dims)]
        found = []
        for ui, u in enumerate(itertools.product(*units)):
            # per dim and position: (coordinate, instruction block, local index)
            per_dim = [[((uk + sid[d] * D + pk) % n, pk // I, ((pk % I) // (LL * LD)) * LD + (pk % I) % LD)
                        for pk in mine_k] for uk, d, mine_k, (n, L, D, I, LL, LD) in zip(u, kept, mine, dims)]
            for digits in itertools.product(*per_dim):
                coord, block, local = zip(*digits) if digits else ((), (), ())
                found.append(((ui, block, local), coord))
        found.sort()
        table.append([c for _, c in found])
    return table


def replication(table, shape) -> dict[tuple[int, ...], int]:
    count = {x: 0 for x in itertools.product(*[range(n) for n in shape])}
    for regs in table:
        for x in set(regs):
            count[x] += 1
    return count


def _delin_order(i: int, counts, order):
    """Digits of i over `counts`, order[0] fastest (Triton's thread and warp order)."""
    out = [0] * len(counts)
    for d in order:
        out[d] = i % counts[d]
        i //= counts[d]
    return out


def triton_blocked_map(spt, tpw, wpc, order, shape) -> list[list[tuple[int, ...]]]:
    """Triton's blocked layout as its documentation tells it: lane and warp ids are
    delinearized with order[0] fastest; a thread holds a sizePerThread block of every
    CTA tile (sizePerThread·threadsPerWarp·warpsPerCTA), the tiles repeating over a larger
    shape and wrapping (mod the size) over a smaller one. Registers count the block's
    elements (order[0] fastest), then the tile repetitions (order[0] fastest)."""
    rank = len(shape)
    warp_size, num_warps = prod(tpw), prod(wpc)
    tile = [spt[d] * tpw[d] * wpc[d] for d in range(rank)]
    reps = [max(1, shape[d] // tile[d]) for d in range(rank)]
    table = []
    for tid in range(warp_size * num_warps):
        lane = _delin_order(tid % warp_size, tpw, order)
        warp = _delin_order(tid // warp_size, wpc, order)
        regs = []
        for k_index in range(prod(reps)):
            k = _delin_order(k_index, reps, order)
            for e_index in range(prod(spt)):
                e = _delin_order(e_index, spt, order)
                regs.append(tuple((k[d] * tile[d] + (warp[d] * tpw[d] + lane[d]) * spt[d] + e[d]) % shape[d]
                                  for d in range(rank)))
        table.append(regs)
    return table


def slice_map(parent_table, dim: int) -> list[list[tuple[int, ...]]]:
    """A slice of a parent layout: drop coordinate `dim` and keep, per thread, the first
    register holding each element."""
    out = []
    for regs in parent_table:
        seen, row = set(), []
        for x in regs:
            y = x[:dim] + x[dim + 1:]
            if y not in seen:
                seen.add(y)
                row.append(y)
        out.append(row)
    return out


def xor_map(register, lane, warp, shape) -> list[list[tuple[int, ...]]]:
    """A linear layout read literally: (warp, lane, register) holds the XOR of the bases of
    its set bits; thread id = warp·2^len(lane) + lane."""
    rank = len(shape)
    table = []
    for tid in range(1 << (len(lane) + len(warp))):
        ids = [(tid >> j) & 1 for j in range(len(lane) + len(warp))]
        base = [0] * rank
        for bit, b in zip(ids, list(lane) + list(warp)):
            if bit:
                base = [x ^ y for x, y in zip(base, b)]
        regs = []
        for r in range(1 << len(register)):
            x = list(base)
            for j, b in enumerate(register):
                if (r >> j) & 1:
                    x = [p ^ q for p, q in zip(x, b)]
            regs.append(tuple(x))
        table.append(regs)
    return table


def cute_coord(index: int, shape):
    """CuTe's idx2crd: a 1-D index to a hierarchical coordinate, mode 0 fastest; the last
    mode takes what is left."""
    if not isinstance(shape, tuple):
        return index
    out = []
    for i, s in enumerate(shape):
        n = prod_tree(s)
        if i == len(shape) - 1:
            out.append(cute_coord(index, s))
        else:
            out.append(cute_coord(index % n, s))
            index //= n
    return tuple(out)


def prod_tree(t) -> int:
    return prod(prod_tree(a) for a in t) if isinstance(t, tuple) else t


def cute_offset(index: int, shape, stride) -> int:
    """A CuTe layout's offset of a 1-D index: the coordinate's inner product with the strides."""
    def inner(c, d):
        return sum(inner(x, y) for x, y in zip(c, d)) if isinstance(c, tuple) else c * d
    return inner(cute_coord(index, shape), stride)


def cute_tv_map(shape, stride, tensor_shape) -> list[list[tuple[int, ...]]]:
    """A TV layout read literally: thread t's value v is index t + T·v (T the size of mode
    0), its offset a column-major index into tensor_shape."""
    modes = shape if isinstance(shape, tuple) else (shape,)
    T = prod_tree(modes[0])
    V = prod_tree(shape) // T
    table = []
    for t in range(T):
        row = []
        for v in range(V):
            off = cute_offset(t + T * v, shape, stride)
            coord = []
            for n in tensor_shape:
                coord.append(off % n)
                off //= n
            row.append(tuple(coord))
        table.append(row)
    return table
