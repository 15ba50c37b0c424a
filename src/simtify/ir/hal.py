"""``#hal.executable.target<"rocm", "rocm-hsaco-fb", {..}>``, the one ``hal`` attribute
simtify reads: IREE's codegen output carries it on the module (its passes pick AMD
lowerings such as `amdgpu.dpp` by its backend). simtify keeps it for printing back and
does not interpret it; the simulator takes its target from ``--target``."""

from __future__ import annotations

from xdsl.dialects.builtin import DictionaryAttr, StringAttr
from xdsl.ir import Dialect, ParametrizedAttribute
from xdsl.irdl import irdl_attr_definition, param_def
from xdsl.parser import AttrParser
from xdsl.printer import Printer


@irdl_attr_definition
class ExecutableTargetAttr(ParametrizedAttribute):
    """The backend (``"rocm"``), the executable format and the configuration dictionary
    (printed only when not empty, as IREE does)."""

    name = "hal.executable.target"

    backend: StringAttr = param_def(StringAttr)
    format: StringAttr = param_def(StringAttr)
    configuration: DictionaryAttr = param_def(DictionaryAttr)

    @classmethod
    def parse_parameters(cls, parser: AttrParser):
        with parser.in_angle_brackets():
            backend = StringAttr(parser.parse_str_literal())
            parser.parse_punctuation(",")
            format_ = StringAttr(parser.parse_str_literal())
            config = DictionaryAttr({})
            if parser.parse_optional_punctuation(",") is not None:
                config = DictionaryAttr(parser.parse_optional_attr_dict())
        return (backend, format_, config)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f'<"{self.backend.data}", "{self.format.data}"')
        if self.configuration.data:
            printer.print_string(", ")
            printer.print_attribute(self.configuration)
        printer.print_string(">")


from simtify.ir import hal_interface  # noqa: E402  (the dispatch interface ops)

HAL = Dialect("hal", hal_interface.OPS, [ExecutableTargetAttr, *hal_interface.ATTRIBUTES])

DIALECTS: list[Dialect] = [HAL]
