"""The Derivation object: what every symbolic module returns.

A derivation is plain data: a name, its assumptions, a list of steps (each a
sentence and a sympy object), the result (a sympy object) and optional
numeric extras.  The same object feeds the CLI (text/latex/json), the LaTeX
document in ``derivations/``, the notebooks and the tests.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import sympy as sp


@dataclass(frozen=True)
class Step:
    """One step of a derivation: what was done, and the sympy object it produced."""

    text: str
    expr: Any = None

    def latex(self) -> str:
        if self.expr is None:
            return _escape(self.text)
        return f"{_escape(self.text)}\n\\begin{{dmath*}}\n{sp.latex(self.expr)}\n\\end{{dmath*}}"


def _escape(text: str) -> str:
    """Escape prose for LaTeX, keeping $...$ math spans as they are."""
    out, math = [], False
    for part in text.split("$"):
        if math:
            out.append(f"${part}$")
        else:
            for a, b in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("#", r"\#"),
                         ("_", r"\_"), ("{", r"\{"), ("}", r"\}"), ("^", r"\^{}"), ("~", r"\~{}")):
                part = part.replace(a, b)
            out.append(part)
        math = not math
    return "".join(out)


@dataclass
class Derivation:
    """A finished derivation: assumptions, steps, result, rendering."""

    name: str
    title: str
    assumptions: list[str]
    steps: list[Step]
    result: Any
    extras: dict[str, Any] = field(default_factory=dict)

    def add(self, text: str, expr: Any = None) -> Any:
        self.steps.append(Step(text, expr))
        return expr

    @property
    def result_latex(self) -> str:
        return sp.latex(self.result)

    def latex(self, level: str = "section") -> str:
        """A LaTeX section (needs amsmath and breqn for dmath*)."""
        lines = [f"\\{level}{{{_escape(self.title)}}}", "\\paragraph{Assumptions.}", "\\begin{itemize}"]
        lines += [f"  \\item {_escape(a)}" for a in self.assumptions] or ["  \\item none"]
        lines += ["\\end{itemize}", "\\paragraph{Steps.}", "\\begin{enumerate}"]
        lines += [f"  \\item {s.latex()}" for s in self.steps]
        lines += ["\\end{enumerate}", "\\paragraph{Result.}", "\\begin{dmath*}", self.result_latex,
                  "\\end{dmath*}"]
        return "\n".join(lines) + "\n"

    def text(self) -> str:
        lines = [f"== {self.title} [{self.name}]", "Assumptions:"]
        lines += [f"  - {a}" for a in self.assumptions]
        lines.append("Steps:")
        for i, s in enumerate(self.steps, 1):
            lines.append(f"  {i}. {s.text}")
            if s.expr is not None:
                lines.append(f"     {sp.sstr(s.expr)}")
        lines.append(f"Result: {sp.sstr(self.result)}")
        for k, v in self.extras.items():
            lines.append(f"{k}: {v}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: name, title, result (sympy string), latex, assumptions, steps, extras."""
        out = {
            "name": self.name,
            "title": self.title,
            "result": sp.sstr(self.result),
            "latex": self.result_latex,
            "assumptions": list(self.assumptions),
            "steps": [{"text": s.text, "expr": None if s.expr is None else sp.sstr(s.expr),
                       "latex": None if s.expr is None else sp.latex(s.expr)} for s in self.steps],
        }
        out.update({k: _jsonable(v) for k, v in self.extras.items()})
        return out


def _jsonable(v):
    if isinstance(v, sp.Basic):
        return float(v) if v.is_number and v.is_real else sp.sstr(v)
    if isinstance(v, dict):
        return {k: _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    try:
        import numpy as np
        if isinstance(v, np.generic):
            return v.item()
    except ImportError:  # pragma: no cover
        pass
    return v
