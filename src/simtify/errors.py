"""The one exception a user can cause.

Every error that bad input can provoke (a malformed layout, a shape the layout does
not fit, bad IR, an unsupported op) is a `SimtifyError` naming *where* it happened and
*what* is wrong; the CLI prints it as ``error: <where>: <what>`` and exits 2. Anything
else escaping to the user is a bug.
"""


class SimtifyError(Exception):
    def __init__(self, what: str, where: str | None = None):
        super().__init__(what)
        self.what = what
        self.where = where

    def at(self, where: str) -> "SimtifyError":
        """The same error, located at `where` unless it already has a location."""
        if not self.where:  # None or "" (no location known)
            self.where = where
        return self

    def __str__(self) -> str:
        return f"{self.where}: {self.what}" if self.where else self.what
