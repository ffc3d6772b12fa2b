"""One op applied to inputs of given types, as a parsed graph: the shape-rule tests' probe.

Cases go through the parser, so a test sees exactly what a user sees: the inferred type as
the printer writes it, or the located error (and which operand its caret points at).
"""

from __future__ import annotations

import re

import pytest

import rlxir

SYMBOLS = ("B", "S", "H", "W", "N")


def case_text(op: str, operand_types, attrs: str = "") -> str:
    """``%r = op(%a0, %a1, ...) {attrs}`` on inputs ``%ai : operand_types[i]``."""
    inputs = [f"  input %a{index} : {type_}" for index, type_ in enumerate(operand_types)]
    operands = ", ".join(f"%a{index}" for index in range(len(operand_types)))
    block = f" {{{attrs}}}" if attrs else ""
    lines = [f"graph case({', '.join(SYMBOLS)}) {{", *inputs, f"  %r = {op}({operands}){block}", "  output %r", "}"]
    return "\n".join(lines) + "\n"


def infer(op: str, operand_types, attrs: str = "") -> str:
    """The result type of the case, as printed (e.g. ``f32[B*S, 768]``)."""
    return str(case_graph(op, operand_types, attrs).type("r"))


def case_graph(op: str, operand_types, attrs: str = "") -> rlxir.Graph:
    return rlxir.parse(case_text(op, operand_types, attrs), "case.rlx").main


def refusal(op: str, operand_types, attrs: str = "") -> rlxir.RlxError:
    """The error the case is refused with; it must be located on the op's line."""
    with pytest.raises(rlxir.RlxError) as caught:
        infer(op, operand_types, attrs)
    error = caught.value
    assert error.line == len(operand_types) + 2, error.render()
    return error


def blamed_operand(error: rlxir.RlxError) -> int | None:
    """The index of the operand the error's caret points at, or None (the op, an attribute)."""
    match = re.match(r"%a(\d+)", error.loc.source_line()[error.col - 1:])
    return int(match.group(1)) if match else None
