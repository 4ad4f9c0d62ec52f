"""Exception types: one per kind of bad input or failure.

Every exception derives from :class:`SSSNError` so the CLI can turn any of
them into a one-line message and exit code 2 (bad input), except
:class:`NumericalError` (an internal numerical failure at valid input): exit code 4.
"""
from __future__ import annotations


class SSSNError(Exception):
    """Base class of every error the toolkit raises on purpose."""


class ParameterError(SSSNError, ValueError):
    """A model or simulation parameter is outside its allowed range."""

    def __init__(self, name: str, value: object, allowed: str):
        self.name, self.value, self.allowed = name, value, allowed
        super().__init__(f"invalid {name}={value!r}: {allowed}")


class ExpressionError(SSSNError, ValueError):
    """Text is outside the safe expression language (see :mod:`sssn_verify.expr`)."""


class OutputError(SSSNError, OSError):
    """An output file or folder cannot be written (checked before any work starts)."""


class ResourceError(SSSNError, ValueError):
    """A request exceeds a documented limit (size, memory, grid) or overflows."""


class ActivationError(ExpressionError):
    """An activation name or expression cannot be understood."""


class DerivationError(SSSNError, ValueError):
    """An unknown derivation was requested, or sympy could not carry it out."""


class CandidateError(ExpressionError):
    """A user's candidate formula cannot be parsed or evaluated."""


class SimulationError(SSSNError, RuntimeError):
    """A simulation produced a non-finite or exploding state."""


class ClaimError(SSSNError, ValueError):
    """An unknown claim was requested."""


class MissingExtraError(SSSNError, ImportError):
    """An optional part was asked for but its extra is not installed (the message names it)."""


class NonFiniteError(ParameterError):
    """Data handed to a statistic holds NaN or infinite values (bad input to the statistics API; inside
    a claim's checker, where the data are the toolkit's own, it becomes a :class:`NumericalError`)."""


class NumericalError(SSSNError, ArithmeticError):
    """A computation of the toolkit's own failed numerically (a non-finite estimate, a singular fit, an
    exploding simulation) at valid input: not bad input.  The CLI reports it in one line with exit
    code 4; ``verify`` reports such a point of an exploration in its table (verdict "error"), and a claim
    whose checker fails so at the suite's own configurations as a numerical failure (``ClaimResult.error``,
    not a verdict on the formula), and still writes every finished result."""
