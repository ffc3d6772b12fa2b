"""ONNX Einsum -> transpose, reshape, reduce_sum and matmuls.

Any number of operands is contracted left to right, one matmul per pair. Of a pair, each
letter falls into one of four groups:

- *batch*: in both operands and kept (in the output or a later operand): matmul's batch,
- *left* / *right*: in one operand and kept (matmul's M and N),
- *contracted*: in both operands, not kept (matmul's K).

A letter in one operand only and kept nowhere is summed away first. Each group becomes one
dim (a reshape when it has several letters), the operands are put into ``[batch, M, K]`` /
``[batch, K, N]`` order (or read transposed by the matmul when they already are), and the
product is reshaped and transposed to the letter order that follows. An ellipsis stands for
the operand's remaining leading dims, named by letters the equation does not use (aligned
from the right, as broadcasting aligns them); a letter repeated within one operand takes
that operand's diagonal (a ``where`` against an equality mask of two counters, then a sum).
A letter repeated in the output is refused naming the equation.
"""

from __future__ import annotations

import re
import string

import numpy as np

from rlxir.importers.builder import UnsupportedModel
from rlxir.importers.onnx_registry import register
from rlxir.importers.onnx_ops import along, counter, first_dtype, foldable, hint, operand, present, product

_EXPECTED = "terms of letters (and at most one ellipsis each), one per operand (e.g. bhid,bhjd->bhij)"


def parse_equation(equation: str, ranks: list[int]) -> tuple[list[str], str]:
    """(letters per operand, output letters) of an explicit or implicit equation, an
    ellipsis replaced by letters the equation does not use."""
    text = equation.replace(" ", "")
    inputs_text, arrow, output = text.partition("->")
    inputs = inputs_text.split(",")
    if len(inputs) != len(ranks) or not all(re.fullmatch(r"[A-Za-z]*(\.\.\.)?[A-Za-z]*", part)
                                            for part in inputs + [output]):
        raise UnsupportedModel(f"Einsum {equation!r} for {len(ranks)} operand(s)", expected=_EXPECTED)
    if not arrow:  # implicit form: the ellipsis, then the letters used once, in alphabetical order
        letters = inputs_text.replace(",", "").replace(".", "")
        once = "".join(sorted(letter for letter in set(letters) if letters.count(letter) == 1))
        output = ("..." if "..." in inputs_text else "") + once
    inputs, output = _expand_ellipsis(equation, text, inputs, output, ranks)
    if len(set(output)) != len(output):
        raise UnsupportedModel(f"Einsum {equation!r} repeats a letter in its output", expected=_EXPECTED)
    if set(output) - set("".join(inputs)):
        raise UnsupportedModel(f"Einsum {equation!r} has output letters no operand has", expected=_EXPECTED)
    return inputs, output


def _expand_ellipsis(equation: str, text: str, inputs: list[str], output: str, ranks: list[int]):
    """Each ``...`` as the letters of the dims it covers, right-aligned among all of them."""
    if "..." not in text:
        return inputs, output
    covered = [rank - len(term) + 3 for term, rank in zip(inputs, ranks) if "..." in term]
    if min(covered) < 0:
        raise UnsupportedModel(f"Einsum {equation!r}: an ellipsis term has more letters than its operand has dims",
                               expected="one letter per axis")
    spare = [letter for letter in string.ascii_letters if letter not in text]
    extra = "".join(spare[:max(covered)])
    expanded = [term.replace("...", extra[len(extra) - (rank - len(term) + 3):]) if "..." in term else term
                for term, rank in zip(inputs, ranks)]
    return expanded, output.replace("...", extra)


def convert_einsum(ctx, node, attrs):
    equation = attrs["equation"]
    names = present(node)
    letters, output = parse_equation(equation, [len(ctx.shape(name)) for name in names])
    for name, term in zip(names, letters):
        if len(term) != len(ctx.shape(name)):
            raise UnsupportedModel(f"Einsum {equation!r}: term {term!r} for an operand of rank {len(ctx.shape(name))}",
                                   expected="one letter per axis")
    _same_sizes(ctx, equation, names, letters)
    if foldable(ctx, node):
        return [np.einsum(equation, *(np.asarray(ctx.static(name)) for name in names))]
    dtype = first_dtype(ctx, names)
    name = hint(node)
    terms = [_diagonals(ctx, operand(ctx, value, dtype), term, f"{name}.{index}")
             for index, (value, term) in enumerate(zip(names, letters))]
    value, term = terms[0]
    for index, (other, other_term) in enumerate(terms[1:], start=1):
        later = set(output).union(*(set(rest) for _, rest in terms[index + 1:]))
        a, a_letters = _sum_unshared(ctx, value, term, later | set(other_term), f"{name}.a{index}")
        b, b_letters = _sum_unshared(ctx, other, other_term, later | set(a_letters), f"{name}.b{index}")
        last = index == len(terms) - 1
        kept = output if last else "".join(dict.fromkeys(letter for letter in a_letters + b_letters if letter in later))
        value, term = _contract(ctx, a, a_letters, b, b_letters, kept, name if last else f"{name}.{index}"), kept
    if len(terms) > 1:
        return [value]
    value, term = _sum_unshared(ctx, value, term, set(output), f"{name}.a")
    return [_arrange(ctx, value, term, output, name)]


def _diagonals(ctx, value: str, term: str, name: str) -> tuple[str, str]:
    """`value` with every letter repeated in `term` reduced to its diagonal: the elements
    where the two axes' positions agree are kept (a ``where``, so an inf elsewhere cannot
    turn into NaN) and the second axis summed away."""
    while len(set(term)) != len(term):
        letter = next(letter for letter in term if term.count(letter) > 1)
        first, second = term.index(letter), term.index(letter, term.index(letter) + 1)
        shape = ctx.builder.type(value).shape
        rank, size = len(shape), shape[first]
        rows = counter(ctx.builder, size, along(rank, first, size), f"{name}.{letter}.rows")
        columns = counter(ctx.builder, size, along(rank, second, size), f"{name}.{letter}.columns")
        same = ctx.builder.op("eq", [rows, columns], hint=f"{name}.{letter}.same")
        zero = ctx.builder.scalar(0, ctx.builder.type(value).dtype)
        kept = ctx.builder.op("where", [same, value, zero], hint=f"{name}.{letter}.kept")
        value = ctx.builder.op("reduce_sum", [kept], {"axes": (second,), "keepdims": False},
                               hint=f"{name}.{letter}.diagonal")
        term = term[:second] + term[second + 1:]
    return value, term


def _same_sizes(ctx, equation: str, names: list[str], letters: list[str]) -> None:
    """A letter has one size in every operand (or 1, which broadcasts)."""
    seen: dict = {}
    for name, term in zip(names, letters):
        for letter, size in zip(term, ctx.shape(name)):
            known = seen.setdefault(letter, size)
            if known != size and known != 1 and size != 1:
                raise UnsupportedModel(f"Einsum {equation!r}: letter {letter!r} is {known} in one operand and {size} "
                                       "in the other", expected="one size per letter (or 1, broadcast)")
            if known == 1:
                seen[letter] = size


def _sum_unshared(ctx, value: str, letters: str, kept: set, name: str) -> tuple[str, str]:
    """`value` with the axes whose letters are in no other term summed away."""
    axes = tuple(index for index, letter in enumerate(letters) if letter not in kept)
    if not axes:
        return value, letters
    summed = ctx.builder.op("reduce_sum", [value], {"axes": axes, "keepdims": False}, hint=f"{name}.sum")
    return summed, "".join(letter for letter in letters if letter not in set(letters[axis] for axis in axes))


def _arrange(ctx, value: str, letters: str, output: str, name: str) -> str:
    """`value` (letters `letters`) transposed to the order `output`."""
    if letters == output:
        return value
    perm = tuple(letters.index(letter) for letter in output)
    return ctx.builder.op("transpose", [value], {"perm": perm}, hint=name)


def _contract(ctx, a: str, a_letters: str, b: str, b_letters: str, output: str, name: str) -> str:
    batch = [letter for letter in a_letters if letter in b_letters and letter in output]
    left = [letter for letter in a_letters if letter not in b_letters]
    right = [letter for letter in b_letters if letter not in a_letters]
    summed = [letter for letter in a_letters if letter in b_letters and letter not in output]
    sizes = dict(zip(a_letters, ctx.builder.type(a).shape))
    for letter, size in zip(b_letters, ctx.builder.type(b).shape):
        if sizes.get(letter, 1) == 1:  # a batch dim of 1 broadcasts against the other side's
            sizes[letter] = size
    a_matrix, transpose_a = _as_matrix(ctx, a, a_letters, batch, left, summed, sizes, f"{name}.a")
    b_matrix, transpose_b = _as_matrix(ctx, b, b_letters, batch, summed, right, sizes, f"{name}.b")
    product_value = ctx.builder.op("matmul", [a_matrix, b_matrix],
                                   {"transpose_a": transpose_a, "transpose_b": transpose_b}, hint=f"{name}.matmul")
    grouped = "".join(batch + left + right)
    shape = tuple(sizes[letter] for letter in grouped)
    if tuple(ctx.builder.type(product_value).shape) != shape:
        product_value = ctx.builder.op("reshape", [product_value], {"shape": shape}, hint=f"{name}.ungrouped")
    return _arrange(ctx, product_value, grouped, output, name)


def _as_matrix(ctx, value: str, letters: str, batch: list, rows: list, columns: list, sizes: dict,
               name: str) -> tuple[str, bool]:
    """`value` as ``[batch..., rows, columns]`` (each group one dim), or as its transpose
    ``[batch..., columns, rows]`` with True when that needs no transpose op."""
    straight, swapped = batch + rows + columns, batch + columns + rows
    order, transposed = (straight, False)
    if list(letters) == swapped and list(letters) != straight:
        order, transposed = swapped, True
    arranged = _arrange(ctx, value, letters, "".join(order), f"{name}.arranged")
    first, second = (columns, rows) if transposed else (rows, columns)
    shape = tuple(sizes[letter] for letter in batch) + (product([sizes[letter] for letter in first]),
                                                         product([sizes[letter] for letter in second]))
    if tuple(ctx.builder.type(arranged).shape) == shape:
        return arranged, transposed
    return ctx.builder.op("reshape", [arranged], {"shape": shape}, hint=f"{name}.grouped"), transposed


register({"Einsum": convert_einsum})
