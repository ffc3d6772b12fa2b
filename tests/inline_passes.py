"""Passes that tests register for themselves, each one function and a line of declaration."""

from __future__ import annotations

import attrs

from rlxir.pass_machinery.pass_base import Pass, register_pass


def _changes_nothing(graph, ctx) -> bool:
    return False


def register_test_pass(name: str, doc: str, body=_changes_nothing, **declared) -> type[Pass]:
    """Register pass NAME, documented by DOC, whose run(graph, ctx) is BODY (by default it
    changes nothing); DECLARED sets what a pass class declares, e.g. requires=("cse",)."""

    @attrs.frozen
    class InlinePass(Pass):
        def run(self, graph, ctx) -> bool:
            return body(graph, ctx)

    InlinePass.name = name
    InlinePass.__doc__ = doc
    for key, value in declared.items():
        setattr(InlinePass, key, value)
    return register_pass(InlinePass)
