"""`python -m simtify ...`: the same command line as `simtify ...`."""

import sys

from simtify.cli.main import main

sys.exit(main())
