"""`simtify validate`: find the pass that miscompiles a dispatch by running every stage
of an IREE compile on the simulated GPU.

    report = validate_dump(open("dump.txt").read(), Options(target="gfx942"), jobs=2)
    report.dispatches[0].first_bad_pass, report.to_json()
"""

from simtify.validate.dispatch import DispatchReport, Options, StageOutcome, validate_dispatch
from simtify.validate.run import Report, compile_dump, validate_dump

__all__ = ["DispatchReport", "Options", "Report", "StageOutcome", "compile_dump", "validate_dispatch",
           "validate_dump"]
