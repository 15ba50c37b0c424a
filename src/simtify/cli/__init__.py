"""The `simtify` command line. Subcommands live one per module and are imported only
when chosen, so that `simtify --help` and `simtify layout` start in a fraction of a second."""
