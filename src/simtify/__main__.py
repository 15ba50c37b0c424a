"""`python -m simtify ...`: the same command line as `simtify ...`."""

from simtify.cli.main import entry

entry()
