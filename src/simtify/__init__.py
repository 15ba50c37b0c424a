"""simtify: distribute workgroup-level vector programs onto subgroups, lanes and
registers as layouts dictate, and check every step on a simulated GPU."""

__version__ = "0.1.0"

# before anything imports xDSL: the methods of its dataclasses compiled once per installation
from simtify import dataclass_methods  # noqa: E402,F401  (isort: skip)
