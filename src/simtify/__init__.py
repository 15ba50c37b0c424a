"""simtify: distribute workgroup-level vector programs onto subgroups, lanes and
registers as layouts dictate, and check every step on a simulated GPU."""

__version__ = "0.1.0"
