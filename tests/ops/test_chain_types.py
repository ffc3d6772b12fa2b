"""A fused region's step types: memoised per (op, attributes, argument types), never
across values Python calls equal but the attribute checks tell apart, and never for a step
that fails."""

from __future__ import annotations

import pytest

from rlxir.dtypes import DType
from rlxir.errors import IRTypeError
from rlxir.ops import ShapeError
from rlxir.ops.chain import ChainStep, chain_types
from rlxir.types import TensorType

X = TensorType(DType.f32, (4, 8))


def test_a_bool_attribute_given_as_an_int_is_refused_after_the_bool_was_inferred():
    assert chain_types((ChainStep("gelu", (("$", 0),), (("approximate", True),)),), (X,)) == [X]
    # True == 1 and both hash alike: a memo keyed on the values alone would serve the
    # bool's answer for the int, which the attribute check refuses.
    with pytest.raises(IRTypeError, match="approximate"):
        chain_types((ChainStep("gelu", (("$", 0),), (("approximate", 1),)),), (X,))


def test_a_failing_step_fails_every_time_and_the_same_step_on_fitting_types_infers():
    step = ChainStep("add", (("$", 0), ("$", 1)), ())
    wrong = TensorType(DType.f32, (3, 5))
    for _ in range(2):
        with pytest.raises(ShapeError):
            chain_types((step,), (X, wrong))
    assert chain_types((step, ChainStep("exp", (("%", 0),), ())), (X, X)) == [X, X]


def test_steps_read_the_types_of_their_own_arguments():
    narrow = TensorType(DType.f16, (4, 8))
    steps = (ChainStep("neg", (("$", 0),), ()), ChainStep("neg", (("$", 1),), ()))
    assert chain_types(steps, (X, narrow)) == [X, narrow]
