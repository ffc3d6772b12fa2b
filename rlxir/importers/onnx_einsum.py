"""ONNX Einsum -> transpose, reshape, reduce_sum and one matmul.

The equations handled are those of one or two operands whose every letter appears at most
once per operand, with no ellipsis: attention's ``bhid,bhjd->bhij`` and ``bhij,bhjd->bhid``,
``bij,bjk->bik``, ``ij,jk->ik``, outer products, and one-operand transposes and sums
(``ij->ji``, ``ij->i``). The letters of two operands fall into four groups:

- *batch*: in both operands and the output (matmul's batch dims),
- *left* / *right*: in one operand and the output (matmul's M and N),
- *contracted*: in both operands, not the output (matmul's K).

A letter in one operand only and not in the output is summed away first. Each group becomes
one dim (a reshape when it has several letters), the operands are put into
``[batch, M, K]`` / ``[batch, K, N]`` order (or read transposed by the matmul when they
already are), and the product is reshaped and transposed to the output's letter order.
Anything else (an ellipsis, a repeated letter such as a diagonal ``ii->i``, three operands)
is refused naming the equation.
"""

from __future__ import annotations

import re

import numpy as np

from rlxir.importers.builder import UnsupportedModel
from rlxir.importers.onnx_registry import register
from rlxir.importers.onnx_ops import first_dtype, foldable, hint, operand, present, product

_EXPECTED = "one or two operands, each letter at most once per operand, no ellipsis (e.g. bhid,bhjd->bhij)"


def parse_equation(equation: str, operands: int) -> tuple[list[str], str]:
    """(letters per operand, output letters) of an explicit or implicit equation."""
    text = equation.replace(" ", "")
    if "." in text:
        raise UnsupportedModel(f"Einsum {equation!r} uses an ellipsis", expected=_EXPECTED)
    inputs_text, arrow, output = text.partition("->")
    inputs = inputs_text.split(",")
    if len(inputs) != operands or not all(re.fullmatch(r"[A-Za-z]*", part) for part in inputs + [output]):
        raise UnsupportedModel(f"Einsum {equation!r} for {operands} operand(s)", expected=_EXPECTED)
    if not arrow:  # implicit form: the letters used once, in alphabetical order
        counts = {letter: inputs_text.count(letter) for letter in set(inputs_text.replace(",", ""))}
        output = "".join(sorted(letter for letter, count in counts.items() if count == 1))
    for part in inputs + [output]:
        if len(set(part)) != len(part):
            raise UnsupportedModel(f"Einsum {equation!r} repeats a letter within one term (a diagonal)",
                                   expected=_EXPECTED)
    if set(output) - set("".join(inputs)):
        raise UnsupportedModel(f"Einsum {equation!r} has output letters no operand has", expected=_EXPECTED)
    return inputs, output


def convert_einsum(ctx, node, attrs):
    equation = attrs["equation"]
    names = present(node)
    if len(names) not in (1, 2):
        raise UnsupportedModel(f"Einsum {equation!r} with {len(names)} operands", expected=_EXPECTED)
    letters, output = parse_equation(equation, len(names))
    for name, term in zip(names, letters):
        if len(term) != len(ctx.shape(name)):
            raise UnsupportedModel(f"Einsum {equation!r}: term {term!r} for an operand of rank {len(ctx.shape(name))}",
                                   expected="one letter per axis")
    _same_sizes(ctx, equation, names, letters)
    if foldable(ctx, node):
        return [np.einsum(equation, *(np.asarray(ctx.static(name)) for name in names))]
    dtype = first_dtype(ctx, names)
    name = hint(node)
    values = [operand(ctx, value, dtype) for value in names]
    kept = set(output) | (set(letters[1]) if len(letters) == 2 else set())
    a, a_letters = _sum_unshared(ctx, values[0], letters[0], kept, f"{name}.a")
    if len(letters) == 1:
        return [_arrange(ctx, a, a_letters, output, name)]
    b, b_letters = _sum_unshared(ctx, values[1], letters[1], set(output) | set(a_letters), f"{name}.b")
    return [_contract(ctx, a, a_letters, b, b_letters, output, name)]


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
