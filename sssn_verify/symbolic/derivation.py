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
from sympy.printing.latex import LatexPrinter

from ..escape import UnsafeMathError, check_math, latex_text
from ..escape import pdf_string as _pdf_string
from ..tex_mathml import prose_spans


# LaTeX names of the symbols, by symbol name (applied when rendering, so the symbol
# definitions stay where they are).  Names not listed print as sympy prints them.
LATEX_NAMES = {
    "K_rho": r"K(\rho)", "lambda_edge": r"\lambda_{\mathrm{edge}}", "lambda_1": r"\lambda_1",
    "norm_V": r"\|V\|", "norm_KtQ": r"\|K^{\top} Q\|", "energy_lowering": r"\text{energy-lowering attention}",
    "xa": r"\langle x, a\rangle", "xg": r"\langle x, g\rangle", "gg": r"|g|^2", "ag": r"\langle a, g\rangle",
    "aa": r"|a|^2", "xSx": r"x^{\top} \Sigma x", "trSigma": r"\operatorname{tr}\Sigma", "aSx": r"a^{\top}\Sigma x",
    "Sigma_x": r"\Sigma x", "Sigma_a": r"\Sigma a", "epsilon": r"\varepsilon", "e_beta": r"e^{\beta}",
    "Lambda": r"\Lambda", "E tau": r"E\,\tau", "Var tau": r"\operatorname{Var}\tau",
    "p_reach": r"p_{\mathrm{reach}}", "epsilon_0": r"\varepsilon_0", "mu_scipy": r"\mu", "M0": "M_0", "M1": "M_1", "k0": "k_0", "k1": "k_1", "k2": "k_2",
    "lambda_edge_proj": r"\lambda_{\mathrm{edge,proj}}", "lambda_proj": r"\lambda_{\mathrm{proj}}",
    "lambdabar_proj": r"\bar\lambda_{\mathrm{proj}}",
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
    m = re.fullmatch(r"norm_(V|KtQ)(\d)", name)       # per-head norms of the attention bound
    if m:
        h = m.group(2)
        return rf"\|V_{h}\|" if m.group(1) == "V" else rf"\|K_{h}^{{\top}} Q_{h}\|"
    m = re.fullmatch(r"M([01])_(\d+)", name)            # Gaussian moments of layer l (deep blocks)
    if m:
        prime = "'" if m.group(1) == "1" else ""
        return f"\\,E[\\phi_{{{m.group(2)}}}{prime}(U_{{{m.group(2)}}})^2]\\,"
    m = re.fullmatch(r"sigma_([wb])(\d+)", name)        # the weights of layer l >= 2 (deep blocks)
    if m:
        return f"\\sigma_{{{m.group(1)},{m.group(2)}}}"
    m = re.fullmatch(r"v(\d)(\d)(?:_(\d))?", name)     # entries of a value matrix V (or V_h)
    if m:
        return f"(V_{m.group(3)})_{{{m.group(1)}{m.group(2)}}}" if m.group(3) else f"V_{{{m.group(1)}{m.group(2)}}}"
    m = _GRAM.match(name)
    if m:
        return rf"\langle {_vector_name(m.group(1))}, {_vector_name(m.group(2))}\rangle"
    return None


# How a displayed formula differs from the sympy object it shows (stated in the appendix; each
# rule keeps the value, which tests/test_latex_doc.py checks at random points):
DISPLAY_RULES = (
    "a sum that is a polynomial in the parameters with coefficients in $d$ alone is collected by "
    "monomial, each coefficient factored (so $(d - 3)\\sigma_b^2$, not $d\\sigma_b^2 - 3\\sigma_b^2$), "
    "when that is not longer",
    "a product $(e^{x} - 1)(e^{x} + 1)$ is multiplied out to $e^{2x} - 1$",
    "a product of square roots $\\sqrt{a}\\sqrt{b}$ is written $\\sqrt{ab}$, and the square root of "
    "the square of a positive quantity is that quantity",
)


def _collect_in_parameters(e: sp.Expr) -> sp.Expr:
    """Rule 1: a polynomial sum collected by monomial in its symbols other than d."""
    free = sorted(e.free_symbols - {_d_symbol()}, key=str)
    if not free or not e.is_commutative or e.has(sp.MatrixExpr) or any(not s.is_commutative for s in free):
        return e
    try:
        poly = sp.Poly(sp.expand(e), *free)
    except (sp.PolynomialError, sp.GeneratorsError):
        return e
    if any(c.free_symbols - {_d_symbol()} for c in poly.coeffs()):
        return e
    out = sp.Add(*[sp.factor(c) * sp.Mul(*[g**k for g, k in zip(free, mon)]) for mon, c in poly.terms()])
    return out if sp.count_ops(out) <= sp.count_ops(e) else e


def _d_symbol():
    from .symbols import d
    return d


def _merge_exp_pairs(e: sp.Mul) -> sp.Expr:
    """Rule 2: (e^x - 1)(e^x + 1) -> e^(2x) - 1 inside a product (also as (...)^-1 (...)^-1)."""
    factors = [f.as_base_exp() for f in e.args]
    for i, (f, p) in enumerate(factors):
        for j, (g, q) in enumerate(factors):
            if i < j and p == q and f.is_Add and g.is_Add and f.has(sp.exp) and sp.expand(f - g) in (2, -2):
                rest = [b**x for k, (b, x) in enumerate(factors) if k not in (i, j)]
                return sp.Mul(*rest, sp.Pow(sp.expand(f * g), p))
    return e


def _sqrt_rules(e: sp.Expr) -> sp.Expr:
    """Rule 3: sqrt(a) sqrt(b) -> sqrt(ab); sqrt of a symbol named 'x^2' (declared positive) -> x."""
    reps = {}
    for s in e.atoms(sp.Symbol):
        m = re.fullmatch(r"([A-Za-z]+)\^2", s.name)
        if m and s.is_positive:
            reps[s] = sp.Symbol(m.group(1), positive=True)**2
    if reps:
        e = e.xreplace(reps)
    if isinstance(e, sp.Mul):
        roots = [f for f in e.args if isinstance(f, sp.Pow) and f.exp == sp.S.Half]
        if len(roots) >= 2:
            rest = [f for f in e.args if f not in roots]
            merged = sp.Pow(sp.Mul(*[r.base for r in roots]), sp.S.Half, evaluate=False)
            e = sp.Mul(*rest, merged, evaluate=False) if rest else merged
    return e


def display_form(expr: Any) -> Any:
    """`expr` rewritten by DISPLAY_RULES for typesetting (the same value)."""
    if not isinstance(expr, sp.Basic) or isinstance(expr, (sp.Symbol, sp.Number)) or not expr.args:
        return _sqrt_rules(expr) if isinstance(expr, sp.Symbol) else expr
    if isinstance(expr, (sp.MatrixBase, sp.Integral, sp.Set)):
        return expr
    if isinstance(expr, sp.Eq):
        return sp.Eq(display_form(expr.lhs), display_form(expr.rhs), evaluate=False)
    if isinstance(expr, sp.Piecewise):
        return sp.Piecewise(*[(display_form(e), display_form(c)) for e, c in expr.args], evaluate=False)
    try:
        args = [display_form(a) for a in expr.args]
        out = expr.func(*args, evaluate=False) if isinstance(expr, (sp.Add, sp.Mul, sp.Pow)) else expr.func(*args)
    except (TypeError, ValueError):
        return expr
    if isinstance(out, sp.Add):
        out = _collect_in_parameters(out)
    if isinstance(out, sp.Mul):
        out = _merge_exp_pairs(out)
    if isinstance(out, sp.Expr):
        out = _sqrt_rules(out)
    return out


class _PaperPrinter(LatexPrinter):
    """sympy's LaTeX with words for the logic ("and", "or", "if"), \\arccos-style inverse functions
    and the project's symbol names."""

    def _print_And(self, e):
        return r" \quad\text{and}\quad ".join(self._logic_arg(a) for a in e.args)

    def _print_Or(self, e):
        return r" \quad\text{or}\quad ".join(self._logic_arg(a) for a in e.args)

    def _print_Not(self, e):
        return r"\text{not}\ " + self._logic_arg(e.args[0])

    def _logic_arg(self, a):
        body = self._print(a)
        return rf"\bigl({body}\bigr)" if isinstance(a, (sp.And, sp.Or)) else body

    def _print_Indexed(self, e):
        base = str(e.base.label)
        if base in ("norm_V", "norm_KtQ") and len(e.indices) == 1:
            h = self._print(e.indices[0])
            return rf"\|V_{{{h}}}\|" if base == "norm_V" else rf"\|K_{{{h}}}^{{\top}} Q_{{{h}}}\|"
        return super()._print_Indexed(e)

    def _print_Transpose(self, e):
        return rf"{self.parenthesize_super(self._print(e.arg))}^{{\top}}"      # one transpose sign (\top)

    def _print_BooleanTrue(self, e):
        return r"\text{true}"

    def _print_BooleanFalse(self, e):
        return r"\text{false}"

    def _print_Piecewise(self, expr):
        rows = [rf"{self._print(e)} & \text{{if }} {self._print(c)}" for e, c in expr.args[:-1]]
        last = expr.args[-1]
        rows.append(rf"{self._print(last.expr)} & \text{{otherwise}}" if last.cond == sp.true
                    else rf"{self._print(last.expr)} & \text{{if }} {self._print(last.cond)}")
        return r"\begin{cases} " + r" \\ ".join(rows) + r" \end{cases}"


def tex(expr: Any) -> str:
    """The LaTeX of `expr` as the documents show it: DISPLAY_RULES applied, the project's symbol
    names, words for the logic, \\arccos for acos."""
    expr = display_form(sp.sympify(expr))
    names = {}
    for sym in expr.atoms(sp.Symbol):
        ln = latex_name(sym.name)
        if ln is not None:
            names[sym] = ln
    # long_frac_ratio: a long numerator over a short denominator prints as (1/den) * (...), which
    # breqn can break across lines (it cannot break inside a \frac)
    return _PaperPrinter({"symbol_names": names, "long_frac_ratio": 2, "inv_trig_style": "full"}).doprint(expr)


def _is_zero(x) -> bool:
    return isinstance(x, sp.Basic) and x.is_number and x == 0 if not isinstance(x, sp.Tuple) else (
        len(x) > 0 and all(_is_zero(y) for y in x))


def _display(expr: Any) -> str:
    """A displayed formula: breqn's dmath* for an expression or an equation (it may break at
    + and =), equation* for relations, conditions and cases (never broken mid-relation)."""
    body = tex(expr)
    if isinstance(expr, (sp.Piecewise, sp.logic.boolalg.Boolean)) and not isinstance(expr, sp.Eq):
        return f"\\begin{{equation*}}\n{body}\n\\end{{equation*}}"
    return f"\\begin{{dmath*}}\n{body}\n\\end{{dmath*}}"


@dataclass(frozen=True)
class Step:
    """One step of a derivation: what was done (LaTeX prose, maths in $...$, code in `...`),
    and the sympy object it produced.  A step whose object is a verdict (true) or a residual
    (zero, or a tuple of zeros) is a sentence, not a displayed formula."""

    text: str
    expr: Any = None

    def latex(self) -> str:
        text = prose(self.text)
        if self.expr is None:
            return text
        e = sp.sympify(self.expr)
        if e is sp.true:
            return text + ": it holds."
        if _is_zero(e):
            return text + (": each is $0$." if isinstance(e, sp.Tuple) else ": it is $0$.")
        return f"{text}\n{_display(e)}"


def prose(text: str) -> str:
    """LaTeX of a prose string of ours: `...` spans (names, possibly the user's) become \texttt
    of their literal text, $...$ spans outside them are math only if safe (escape.check_math),
    else literal text; everything else is escaped text."""
    render = {"name": lambda x: f"\\texttt{{{latex_text(x)}}}", "math": _math_or_literal, "text": latex_text}
    return "".join(render[kind](part) for kind, part in prose_spans(text))


def _math_or_literal(part: str) -> str:
    """A $...$ span: math when it is safe math (nothing that can do I/O, define commands or leave
    math mode), else its literal text (it came from a name, not from us)."""
    try:
        return f"${check_math(part)}$"
    except UnsafeMathError:
        return latex_text(f"${part}$")




# ASCII on purpose: pdflatex compares label texts between runs, and UTF-8 there never settles
_PDF_STRING = {r"\bar\lambda": "lambda-bar", r"\mathrm{att}": "att", r"\lambda": "lambda", r"\beta": "beta",
               r"\rho": "rho", r"\phi": "phi", r"\sigma": "sigma", r"\mu": "mu", r"\infty": "infinity"}


def pdf_string(text: str) -> str:
    """A plain ASCII version of a title for PDF bookmarks (maths spelt out, then escape.pdf_string)."""
    out = []
    for j, piece in enumerate(str(text).split("`")):
        if j % 2:
            out.append(piece)
            continue
        for i, part in enumerate(piece.split("$")):
            if i % 2:
                for k in sorted(_PDF_STRING, key=len, reverse=True):
                    part = part.replace(k, _PDF_STRING[k])
                part = re.sub(r"\\[A-Za-z]+", "", part)
            out.append(part)
    return _pdf_string("".join(out))


_PLAIN_WORDS = {"langle": "<", "rangle": ">", "top": "T", "le": "<=", "ge": ">=", "leq": "<=", "geq": ">=",
                "to": "->", "mapsto": "->", "infty": "oo", "dots": "...", "cdot": "*", "iff": "<=>", "sim": "~",
                "wedge": "^", "in": "in", "nabla": "grad ", "partial": "d", "times": "x", "left": "", "right": "",
                "bigl": "", "bigr": "", "quad": " ", "varepsilon": "eps", "varphi": "phi"}


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
    # the left-hand side(s) the documents put before the result (LaTeX; a tuple for a tuple of
    # equations): "K(\rho)", "\lambda_{\mathrm{edge}} < 0 \iff"; None: an equation's own lhs
    lhs: Any = None

    def add(self, text: str, expr: Any = None) -> Any:
        self.steps.append(Step(text, expr))
        return expr

    def result_formulas(self) -> list[Any]:
        """The result as the documents state it: a list of sympy objects or LaTeX strings, one
        displayed formula each, every one with its left-hand side."""
        res = self.result if self.result_display is None else self.result_display
        parts = list(res) if isinstance(res, sp.Tuple) else [res]
        lhs = self.lhs if isinstance(self.lhs, tuple) else (self.lhs,) * len(parts)
        out = []
        for part, left in zip(parts, lhs):
            if left is None:
                out.append(part)
                continue
            rhs = part.rhs if isinstance(part, sp.Eq) else part
            joiner = " " if left.rstrip().endswith(("\\iff", "=", "<", ">", "\\le", "\\ge")) else " = "
            out.append(left + joiner + tex(rhs))
        return out

    @property
    def result_latex(self) -> str:
        return r",\quad ".join(f if isinstance(f, str) else tex(f) for f in self.result_formulas())

    def result_displays(self) -> list[str]:
        """Displayed LaTeX of the result, one environment per formula."""
        out = []
        for f in self.result_formulas():
            if isinstance(f, str):
                env = "equation*" if "\\begin{cases}" in f or "\\text{and}" in f or "\\iff" in f else "dmath*"
                out.append(f"\\begin{{{env}}}\n{f}\n\\end{{{env}}}")
            else:
                out.append(_display(f))
        return out

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
                  f"Under Assumption~\\ref{{asm:{k}}} (derived in Section~\\ref{{sec:{k}}}{steps}):"]
        lines += self.result_displays()
        checks = list(checked_by or [])
        if checks and all(linked for _, linked in checks):
            lines.append("Checked numerically by " + _join(
                [f"Claim~\\ref{{claim:{label_key(c)}}} (\\texttt{{{latex_text(c)}}})" for c, _ in checks]) + ".")
        elif checks:
            names = _join([f"\\texttt{{{latex_text(c)}}}" for c, _ in checks])
            lines.append(f"Checked numerically by the claim{'s' if len(checks) > 1 else ''} {names} of the "
                         "verification suite.")
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


# ---------------------------------------------------------------- MathML (report.html)
def _lhs_mathml(src: str) -> str:
    """Presentation MathML of a left-hand side of ours (Derivation.lhs: LaTeX math source)."""
    from ..tex_mathml import mathml_body
    return mathml_body(src)


_REL_MO = {"==": "=", "<": "<", ">": ">", "<=": "≤", ">=": "≥", "!=": "≠"}


def _mml(e) -> str:
    """sympy's presentation MathML, with the logic in words and relations/cases printed part by part
    (sympy's own printer cannot print relations between matrices)."""
    from sympy.printing.mathml import mathml as _sympy_mathml
    from ..escape import html
    if isinstance(e, (sp.And, sp.Or)):
        word = "and" if isinstance(e, sp.And) else "or"
        parts = [f"<mrow><mo>(</mo>{_mml(a)}<mo>)</mo></mrow>" if isinstance(a, (sp.And, sp.Or)) else _mml(a)
                 for a in e.args]
        return f'<mspace width="0.6em"></mspace><mtext>{word}</mtext><mspace width="0.6em"></mspace>'.join(parts)
    if isinstance(e, sp.Not):
        return f"<mtext>not </mtext>{_mml(e.args[0])}"
    if isinstance(e, sp.core.relational.Relational):
        return f"{_mml(e.lhs)}<mo>{html(_REL_MO.get(e.rel_op, e.rel_op))}</mo>{_mml(e.rhs)}"
    if isinstance(e, sp.Piecewise):
        rows = []
        for expr, cond in e.args:
            when = ("<mtext>otherwise</mtext>" if cond == sp.true    # an mtext's own edge spaces are dropped
                    else f'<mtext>if</mtext><mspace width="0.6em"></mspace>{_mml(cond)}')
            rows.append(f"<mtr><mtd>{_mml(expr)}</mtd><mtd>{when}</mtd></mtr>")
        return f'<mrow><mo>{{</mo><mtable columnalign="left">{"".join(rows)}</mtable></mrow>'
    if e is sp.true or e is sp.false:
        return f"<mtext>{'true' if e is sp.true else 'false'}</mtext>"
    if isinstance(e, sp.MatMul):            # c(x) = gamma x: the scalar factor, then the vector
        scalar = sp.Mul(*[a for a in e.args if not getattr(a, "is_Matrix", False)])
        vectors = [a for a in e.args if getattr(a, "is_Matrix", False)]
        return (_mml(display_form(scalar)) if scalar != 1 else "") + "".join(_mml(v) for v in vectors)
    from ..tex_mathml import mathml_body
    verbatim = {}
    reps = {}
    for k, sym in enumerate(sorted(e.atoms(sp.Symbol), key=str)):
        src = sym.name if "\\" in sym.name else latex_name(sym.name)    # the appendix's name of it
        if src is None:
            continue
        key = "zzverbatim" + "".join(chr(97 + int(c)) for c in str(k))     # letters only: no subscript
        verbatim[key] = f"<mrow>{mathml_body(src)}</mrow>"
        reps[sym] = sp.Symbol(key, **sym.assumptions0)
    out = _sympy_mathml(e.xreplace(reps), printer="presentation")
    for key, body in verbatim.items():
        out = re.sub(rf"<mi(?: [^>]*)?>{key}</mi>", lambda _m, body=body: body, out)
    return re.sub(r"(&#x?[0-9A-Fa-f]+)(?![0-9A-Fa-f;])", r"\1;", out)


def mathml(expr: Any, *, lhs: str | None = None, display: bool = False) -> str:
    """Presentation MathML of `expr` as the documents show it (DISPLAY_RULES applied, the
    project's symbol names), optionally after a left-hand side of ours; one <math> element."""
    body = ""
    if expr is not None:
        e = display_form(sp.sympify(expr))
        if isinstance(e, sp.Eq) and lhs is not None:
            e = e.rhs
        body = _mml(e)
    if lhs is not None:
        joiner = "" if lhs.rstrip().endswith(("\\iff", "=", "<", ">", "\\le", "\\ge")) else "<mo>=</mo>"
        body = _lhs_mathml(lhs) + (joiner + body if body else "")
    mode = ' display="block"' if display else ""
    return f'<math xmlns="http://www.w3.org/1998/Math/MathML"{mode}><mrow>{body}</mrow></math>'


def result_mathml(der: "Derivation", *, display: bool = True) -> list[str]:
    """The result of `der` as MathML, one <math> per formula, each with its left-hand side."""
    res = der.result if der.result_display is None else der.result_display
    parts = list(res) if isinstance(res, sp.Tuple) else [res]
    lhs = der.lhs if isinstance(der.lhs, tuple) else (der.lhs,) * len(parts)
    return [mathml(p, lhs=left, display=display) for p, left in zip(parts, lhs)]
