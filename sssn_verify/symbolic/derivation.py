"""The Derivation object: what every symbolic module returns.

A derivation is plain data: a name, its assumptions, a list of steps (each a
sentence and a sympy object), the result (a sympy object) and optional
numeric extras.  The same object feeds the CLI (text/latex/json), the LaTeX
document in ``derivations/``, the notebooks and the tests.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import sympy as sp


# LaTeX names of the symbols, by symbol name (applied when rendering, so the symbol
# definitions stay where they are).  Names not listed print as sympy prints them.
LATEX_NAMES = {
    "K_rho": r"K(\rho)", "lambda_edge": r"\lambda_{\mathrm{edge}}", "lambda_1": r"\lambda_1",
    "norm_V": r"\|V\|", "norm_KtQ": r"\|K^{\top} Q\|", "energy_lowering": r"\text{energy-lowering attention}",
    "xa": r"\langle x, a\rangle", "xg": r"\langle x, g\rangle", "gg": r"|g|^2", "ag": r"\langle a, g\rangle",
    "aa": r"|a|^2", "xSx": r"x^{\top} \Sigma x", "trSigma": r"\operatorname{tr}\Sigma", "aSx": r"a^{\top}\Sigma x",
    "Sigma_x": r"\Sigma x", "Sigma_a": r"\Sigma a", "epsilon": r"\varepsilon", "e_beta": r"e^{\beta}",
    "Lambda": r"\Lambda", "E tau": r"E\,\tau", "Var tau": r"\operatorname{Var}\tau",
    "p_reach": r"p_{\mathrm{reach}}", "mu_scipy": r"\mu", "M0": "M_0", "M1": "M_1", "k0": "k_0", "k1": "k_1", "k2": "k_2",
}
_GRAM = re.compile(r"^<(\w+),(\w+)>$")


def _vector_name(name: str) -> str:
    """'Ai' -> 'A_i', 'x0' -> 'x_0', 'x' -> 'x' (the names used by the Gram formalism)."""
    m = re.fullmatch(r"([A-Za-z])([a-z0-9]+)", name)
    return f"{m.group(1)}_{{{m.group(2)}}}" if m else name


def latex_name(name: str) -> str | None:
    """The LaTeX name of a symbol called `name`, or None to keep sympy's."""
    if name in LATEX_NAMES:
        return LATEX_NAMES[name]
    m = _GRAM.match(name)
    if m:
        return rf"\langle {_vector_name(m.group(1))}, {_vector_name(m.group(2))}\rangle"
    return None


def tex(expr: Any) -> str:
    """sympy.latex with the project's LaTeX symbol names."""
    expr = sp.sympify(expr)
    names = {}
    for sym in expr.atoms(sp.Symbol):
        ln = latex_name(sym.name)
        if ln is not None:
            names[sym] = ln
    # long_frac_ratio: a long numerator over a short denominator prints as (1/den) * (...), which
    # breqn can break across lines (it cannot break inside a \frac)
    return sp.latex(expr, symbol_names=names, long_frac_ratio=2)


@dataclass(frozen=True)
class Step:
    """One step of a derivation: what was done (LaTeX prose, maths in $...$, code in `...`),
    and the sympy object it produced."""

    text: str
    expr: Any = None

    def latex(self) -> str:
        if self.expr is None:
            return prose(self.text)
        return f"{prose(self.text)}\n\\begin{{dmath*}}\n{tex(self.expr)}\n\\end{{dmath*}}"


def _escape_text(part: str) -> str:
    for a, b in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("#", r"\#"),
                 ("_", r"\_"), ("{", r"\{"), ("}", r"\}"), ("^", r"\^{}"), ("~", r"\~{}")):
        part = part.replace(a, b)
    return part


def prose(text: str) -> str:
    """LaTeX of a prose string: $...$ spans are kept as math, `...` spans become \texttt,
    everything else is escaped."""
    out, math = [], False
    for part in text.split("$"):
        if math:
            out.append(f"${part}$")
        else:
            for j, piece in enumerate(part.split("`")):
                out.append(f"\\texttt{{{_escape_text(piece)}}}" if j % 2 else _escape_text(piece))
        math = not math
    return "".join(out)


_escape = prose   # the former name


# ASCII on purpose: pdflatex compares label texts between runs, and UTF-8 there never settles
_PDF_STRING = {r"\bar\lambda": "lambda-bar", r"\mathrm{att}": "att", r"\lambda": "lambda", r"\beta": "beta",
               r"\rho": "rho", r"\phi": "phi", r"\sigma": "sigma", r"\mu": "mu", r"\infty": "infinity"}


def pdf_string(text: str) -> str:
    """A plain ASCII version of a title for PDF bookmarks (maths spelt out, braces dropped)."""
    out, math = [], False
    for part in text.split("$"):
        if math:
            for k in sorted(_PDF_STRING, key=len, reverse=True):
                part = part.replace(k, _PDF_STRING[k])
            part = re.sub(r"\\[A-Za-z]+", "", part)
            part = re.sub(r"[{}_^\\]", "", part)
        out.append(part.replace("`", ""))
        math = not math
    return " ".join("".join(out).split())


_PLAIN_WORDS = {"langle": "<", "rangle": ">", "top": "T", "le": "<=", "ge": ">=", "to": "->", "mapsto": "->",
                "infty": "oo", "dots": "...", "cdot": "*", "iff": "<=>", "sim": "~", "wedge": "^", "in": "in",
                "nabla": "grad ", "partial": "d", "times": "x", "left": "", "right": "", "bigl": "", "bigr": "",
                "quad": " ", "varepsilon": "eps", "varphi": "phi"}


def _group(x: str) -> str:
    """x, parenthesized unless it is one token."""
    return x if re.fullmatch(r"[A-Za-z0-9.'_]+|\\?[A-Za-z]+", x.strip()) else f"({x})"


def plain_text(text: str) -> str:
    """A terminal rendering of LaTeX prose (the ``text`` format): maths spelt in ASCII."""
    s = text.replace("`", "").replace("\\{", "\x00").replace("\\}", "\x01")
    s = re.sub(r"\\t?frac12", "1/2", s)
    s = re.sub(r"\\bar\\?([A-Za-z]+)", r"\1_bar", s)
    s = re.sub(r"\\nabla\^2", r"Hess ", s)
    s = re.sub(r"\\langle\s*", "<", s)
    s = re.sub(r"\s*\\rangle", ">", s)
    for _ in range(3):   # nested arguments
        s = re.sub(r"\\(operatorname|mathrm|text|mathbb|mathcal)\{([^{}]*)\}", r"\2", s)
        s = re.sub(r"\\t?frac\{([^{}]*)\}\{([^{}]*)\}", lambda m: f"{_group(m[1])}/{_group(m[2])}", s)
        s = re.sub(r"\\binom\{([^{}]*)\}\{([^{}]*)\}", r"C(\1, \2)", s)
        s = re.sub(r"\\sqrt\{([^{}]*)\}", r"sqrt(\1)", s)
    s = s.replace("\\|", "||")
    s = re.sub(r"\\[,;:! ]", " ", s)
    s = re.sub(r"\\([A-Za-z]+)(?=\\[A-Za-z])", lambda m: _PLAIN_WORDS.get(m[1], m[1]) + " ", s)   # \beta\rho
    s = re.sub(r"\\([A-Za-z]+)", lambda m: _PLAIN_WORDS.get(m[1], m[1]), s)
    s = re.sub(r"\^\{([^{}]*)\}", lambda m: "^" + _group(m[1]), s)
    s = re.sub(r"_\{([^{}]*)\}", lambda m: "_" + _group(m[1]) if " " in m[1].strip() else "_" + m[1], s)
    s = s.replace("$", "").replace("{", "").replace("}", "").replace("\x00", "{").replace("\x01", "}")
    return " ".join(s.split())


def heading(level: str, title: str, label: str | None = None) -> str:
    """\\section-like heading with a PDF-safe bookmark string and an optional label."""
    t = prose(title)
    plain = pdf_string(title)
    head = f"\\{level}{{\\texorpdfstring{{{t}}}{{{plain}}}}}" if "$" in title else f"\\{level}{{{t}}}"
    return head + (f"\\label{{{label}}}" if label else "")


def label_key(text: str) -> str:
    """A LaTeX label fragment: letters, digits and '-' only."""
    return re.sub(r"[^A-Za-z0-9]+", "-", str(text)).strip("-") or "x"


@dataclass
class Derivation:
    """A finished derivation: assumptions, steps, result, rendering."""

    name: str
    title: str
    assumptions: list[str]
    steps: list[Step]
    result: Any
    extras: dict[str, Any] = field(default_factory=dict)
    # an equivalent, shorter sympy form of the result for typesetting (e.g. in named
    # intermediate quantities); None: the result itself
    result_display: Any = None

    def add(self, text: str, expr: Any = None) -> Any:
        self.steps.append(Step(text, expr))
        return expr

    @property
    def result_latex(self) -> str:
        return tex(self.result if self.result_display is None else self.result_display)

    def latex(self, level: str = "section", *, key: str | None = None,
              checked_by: list[tuple[str, bool]] | None = None) -> str:
        """A LaTeX section: the assumptions (an ``assumption`` environment), the numbered
        derivation steps, and the result (a ``result`` environment) that refers back to its
        assumptions and steps and to the claims that check it numerically.

        `key` makes the labels unique (default: the derivation name); `checked_by` lists
        (claim name, True if the document has a ``claim:<name>`` label to refer to).  Needs
        amsmath, amsthm (environments ``assumption`` and ``result``), breqn and hyperref.
        """
        k = label_key(key or self.name)
        # \leavevmode: a theorem-like environment that opens with a list loses its hyperref anchor
        lines = [heading(level, self.title, f"sec:{k}"),
                 f"\\begin{{assumption}}\\label{{asm:{k}}}\\leavevmode", "\\begin{itemize}"]
        lines += [f"  \\item {prose(a)}" for a in self.assumptions] or ["  \\item none"]
        lines += ["\\end{itemize}", "\\end{assumption}"]
        n = len(self.steps)
        if n:
            lines += ["\\paragraph{Derivation.}", "\\begin{enumerate}"]
            lines += [f"  \\item\\label{{step:{k}:{i}}} {s.latex()}" for i, s in enumerate(self.steps, 1)]
            lines += ["\\end{enumerate}"]
        if n == 0:
            steps = ""
        elif n == 1:
            steps = f", step~\\ref{{step:{k}:1}}"
        else:
            steps = f", steps~\\ref{{step:{k}:1}}--\\ref{{step:{k}:{n}}}"
        lines += [f"\\begin{{result}}\\label{{res:{k}}}",
                  f"Under Assumption~\\ref{{asm:{k}}} (derived in Section~\\ref{{sec:{k}}}{steps}):",
                  "\\begin{dmath*}", self.result_latex, "\\end{dmath*}"]
        checks = list(checked_by or [])
        if checks:
            refs = [f"Claim~\\ref{{claim:{label_key(c)}}} (\\texttt{{{_escape_text(c)}}})" if linked
                    else f"the claim \\texttt{{{_escape_text(c)}}} of \\texttt{{sssn-verify verify}}"
                    for c, linked in checks]
            lines.append("Checked numerically by " + _join(refs) + ".")
        else:
            lines.append("No claim of the verification suite checks this result numerically; "
                         "its unit tests check it against independent computations.")
        lines += ["\\end{result}"]
        return "\n".join(lines) + "\n"

    def text(self) -> str:
        lines = [f"== {plain_text(self.title)} [{self.name}]", "Assumptions:"]
        lines += [f"  - {plain_text(a)}" for a in self.assumptions]
        lines.append("Steps:")
        for i, s in enumerate(self.steps, 1):
            lines.append(f"  {i}. {plain_text(s.text)}")
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
                       "latex": None if s.expr is None else tex(s.expr)} for s in self.steps],
        }
        out.update({k: _jsonable(v) for k, v in self.extras.items()})
        return out


def _join(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


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
