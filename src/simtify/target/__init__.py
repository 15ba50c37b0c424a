"""GPU descriptions: what a target offers a kernel (subgroup size, shared memory and its
banks, direct-to-LDS and async copy widths, matrix instructions) and what it costs
(bandwidth, peak rates, launch limits). Numbers are the vendors' published figures for
one representative part of each architecture; the part is named in `Target.part`."""

from simtify.target.gpu import TARGETS, Target, get_target

__all__ = ["TARGETS", "Target", "get_target"]
