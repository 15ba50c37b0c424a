"""Nested (IREE-style) distribution: rewrite a workgroup-level function whose vectors
carry nested layouts into the per-thread (SIMT) program.

Every vector value becomes its thread's registers, ``vector<B.. x O.. x E..>``; the
code asks the layout which elements those are. A thread's coordinate in dim i for
register (b, o, e) is ``x = ((((s·B + b)·O + o)·T + t)·E + e)`` with ``t`` and ``s`` its
thread and subgroup digits, computed once at the function entry from the
workgroup-linear thread id. Ops are rewritten one by one, one rewrite per op:

    %v = vector.transfer_read %m[%i, %j] ... : vector<64x64xf32>   // layout #L
  becomes, for each batch/outer register group (b, o),
    %p = vector.transfer_read %m[%i + x0(b, o), %j + x1(b, o)] ... : vector<E0xE1xf32>
    %acc = vector.insert_strided_slice %p, %acc offsets = [b.., o.., 0..] ...

The modules:
    driver          the function: budget checks, thread ids, the op-name table
    context         what every rewrite shares (launch, value map, the id prelude)
    budget          refusals before any work (registers per thread, unrolling)
    registers       what a thread holds, and small register moves
    vectors         ops within a thread's registers (elementwise, constants,
                    transpose, shape_cast, broadcast, extract/insert, step, masks)
    control_flow    scf.for / forall / while / if
    memory          transfers and gathers, one access per register group
    conversions     layout conversions: registers, lane shuffles, workgroup memory
    reductions      multi_reduction, reduction, contract (lanes, then subgroups)
    cross_subgroup  the cost planner of the reductions' cross-subgroup step
    matrix          contractions on matrix intrinsics, inner_tiled
    masks           vector.mask around transfers, reductions and contractions
    scans           vector.scan
    arg_compare     iree_vector_ext.arg_compare

Writes of replicated values are done by one owner only. Layout conversions are free
when the ownership maps agree; otherwise `plan_conversion` chooses.
"""
