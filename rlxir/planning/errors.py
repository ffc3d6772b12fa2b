"""The error the planning package raises."""

from __future__ import annotations


class PlanError(Exception):
    """A buffer list or a plan that breaks a planning rule.

    Raised for invalid input (duplicate names, a fixed offset that is not aligned) and by
    `validate_plan` for an invalid placement. The message names the offending buffers with
    their live intervals and address ranges, so it reads on its own.
    """
