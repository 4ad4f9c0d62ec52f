"""Presentation MathML of LaTeX math source of ours (claim statements, left-hand sides).

``tex_mathml(src)`` reads the small LaTeX subset our statements and left-hand sides use (letters,
numbers, ``{}`` groups, ``^``/``_``, ``\\frac``, ``\\sqrt``, ``\\bar``, ``\\text``, ``\\mathrm``,
``\\operatorname``, ``\\mathbb``, ``\\left``/``\\right``, Greek letters, relations, named operators
with limits such as ``\\sup_{\\rho}``) and returns one ``<math>`` element; any other command is a
``ValueError`` (the caller shows text instead).  Every character reaches the HTML through
``escape.html``.  ``prose_html(text)``: LaTeX prose of ours (maths in ``$...$``) as HTML.
"""
from __future__ import annotations

import re

from .escape import html

__all__ = ["tex_mathml", "mathml_body", "prose_html", "prose_spans", "GREEK"]

GREEK = {"alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "varepsilon": "ε",
         "lambda": "λ", "mu": "μ", "nu": "ν", "rho": "ρ", "sigma": "σ", "tau": "τ", "phi": "φ", "varphi": "φ",
         "theta": "θ", "xi": "ξ", "eta": "η", "kappa": "κ", "omega": "ω", "psi": "ψ", "chi": "χ", "zeta": "ζ",
         "pi": "π", "Lambda": "Λ", "Sigma": "Σ", "Delta": "Δ", "Gamma": "Γ", "Pi": "Π", "Phi": "Φ",
         "Omega": "Ω", "Theta": "Θ", "ell": "ℓ", "infty": "∞", "partial": "∂", "nabla": "∇"}
_MO = {"le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "ne": "≠", "neq": "≠", "to": "→", "mapsto": "↦",
       "cdot": "·", "iff": "⟺", "Rightarrow": "⇒", "implies": "⟹", "in": "∈", "notin": "∉", "langle": "⟨",
       "rangle": "⟩", "|": "‖", "Vert": "‖", "lVert": "‖", "rVert": "‖", "lvert": "|", "rvert": "|", "mid": "|",
       "top": "⊤", "pm": "±", "times": "×", "sim": "∼", "approx": "≈", "dots": "…", "ldots": "…", "cdots": "⋯",
       "{": "{", "}": "}", "circ": "∘", "setminus": "∖", "forall": "∀", "exists": "∃", "subset": "⊂",
       "cup": "∪", "cap": "∩", "perp": "⊥", "equiv": "≡", "propto": "∝", "ll": "≪", "gg": "≫"}
_SPACE = {",": "0.17em", ";": "0.28em", ":": "0.22em", " ": "0.25em", "quad": "1em", "qquad": "2em", "!": None}
_NAMED = {"log", "exp", "sin", "cos", "tan", "tanh", "arccos", "det", "tr", "Var", "Cov", "erf", "sgn", "deg"}
_LIMITS = {"sup": "sup", "inf": "inf", "lim": "lim", "max": "max", "min": "min", "sum": "∑", "prod": "∏",
           "liminf": "lim inf", "limsup": "lim sup"}
_ACCENT = {"bar": "¯", "overline": "¯", "hat": "^", "widehat": "^", "tilde": "~", "widetilde": "~", "dot": "˙",
           "vec": "→"}
_VARIANT = {"mathrm": "normal", "operatorname": "normal", "mathbb": "double-struck", "mathcal": "script",
            "mathbf": "bold", "mathsf": "sans-serif", "mathit": "italic"}
_SIZES = {"bigl", "bigr", "Bigl", "Bigr", "big", "Big", "biggl", "biggr"}
_ASCII_MO = {"-": "−", "*": "∗"}
_TOKEN = re.compile(r"\\[A-Za-z]+|\\.|[0-9]+(?:\.[0-9]+)?|\s+|.", re.S)


class _Parser:
    def __init__(self, src: str):
        self.toks = _TOKEN.findall(src)
        self.i = 0

    def peek(self, spaces: bool = False):
        while not spaces and self.i < len(self.toks) and self.toks[self.i].isspace():
            self.i += 1
        return self.toks[self.i] if self.i < len(self.toks) else None

    def next(self, spaces: bool = False):
        t = self.peek(spaces)
        if t is None:
            raise ValueError("unexpected end of formula")
        self.i += 1
        return t

    def seq(self, stop=None) -> str:
        out = []
        while self.peek() is not None and self.peek() != stop:
            if self.peek() == "}":
                raise ValueError("unbalanced }")
            item = self.atom()
            if item is not None:
                out.append(self.scripts(item))
        if stop is not None:
            self.next()
        return "".join(out)

    def group_text(self) -> str:
        """The raw text of a {...} argument (for \\text, \\mathrm)."""
        if self.next() != "{":
            raise ValueError("a text argument needs braces")
        depth, parts = 1, []
        while True:
            t = self.next(spaces=True)
            depth += {"{": 1, "}": -1}.get(t, 0)
            if depth == 0:
                return "".join(parts)
            parts.append(t[1:] if t.startswith("\\") and len(t) == 2 else t)

    def arg(self) -> str:
        t = self.peek()
        if t == "{":
            self.next()
            return f"<mrow>{self.seq('}')}</mrow>"
        item = self.atom()
        if item is None:
            raise ValueError("missing argument")
        return item

    def scripts(self, base: str) -> str:
        sub = sup = None
        primes = ""
        while self.peek() in ("_", "^", "'"):
            t = self.next()
            if t == "'":
                primes += "′"
            elif t == "_":
                sub = self.arg()
            else:
                sup = self.arg() if sup is None else f"<mrow>{sup}{self.arg()}</mrow>"
        if primes:                     # K'(1): the prime beside its base, not raised twice
            base = f"<mrow>{base}<mi>{primes}</mi></mrow>"
        if base.startswith("<mo movablelimits") and sub is not None and sup is None:
            return f"<munder>{base}{sub}</munder>"
        if sub is not None and sup is not None:
            return f"<msubsup>{base}{sub}{_row(sup)}</msubsup>"
        if sub is not None:
            return f"<msub>{base}{sub}</msub>"
        if sup is not None:
            return f"<msup>{base}{_row(sup)}</msup>"
        return base

    def fenced(self, opener: str, closers=(")", "]"), right: bool = False) -> str:
        """A bracketed group as one mrow (its brackets take no operator spacing and stretch only to
        it); an interval such as [0, 1) closes with either bracket; an unclosed one stays flat."""
        inner = []
        while self.peek() not in (None, "}", "\\right") and (right or self.peek() not in closers):
            item = self.atom()
            if item is not None:
                inner.append(self.scripts(item))
        body = "".join(inner)
        if right:
            if self.peek() != "\\right":
                raise ValueError("\\left without \\right")
            self.next()
            close = self._delimiter()
            return f"<mrow>{opener}{body}{close}</mrow>"
        if self.peek() in closers:
            return f"<mrow>{_fixed(opener)}{body}{_fixed(self.next())}</mrow>"
        return f"{_fixed(opener)}{body}"

    def _delimiter(self) -> str:
        d = self.next()
        if d == ".":
            return ""
        return f'<mo stretchy="true">{html(_MO.get(d[1:], d) if d.startswith(chr(92)) else d)}</mo>'

    def atom(self) -> str | None:
        t = self.next()
        if t == "{":
            return f"<mrow>{self.seq('}')}</mrow>"
        if t[0].isdigit():
            return f"<mn>{t}</mn>"
        if t.isalpha():
            return f"<mi>{html(t)}</mi>"
        if t in ("(", "["):
            return self.fenced(t)
        if not t.startswith("\\"):
            if t in "^_":
                raise ValueError(f"a script without a base: {t}")
            if t == "~":
                return '<mspace width="0.25em"></mspace>'
            return _fixed(t) if t in _DELIMITERS else f"<mo>{html(_ASCII_MO.get(t, t))}</mo>"
        name = t[1:]
        if name in _SPACE:
            return None if _SPACE[name] is None else f'<mspace width="{_SPACE[name]}"></mspace>'
        if name in ("frac", "tfrac", "dfrac"):
            return f"<mfrac>{self.arg()}{self.arg()}</mfrac>"
        if name == "sqrt":
            return f"<msqrt>{self.arg()}</msqrt>"
        if name in _ACCENT:
            return f'<mover accent="true">{self.arg()}<mo>{_ACCENT[name]}</mo></mover>'
        if name in ("text", "mbox", "textrm"):
            raw = self.group_text()                # its outer spaces kept (\text{ and }) as no-break spaces
            edge = ["&nbsp;" if end.isspace() else "" for end in (raw[:1], raw[-1:])] if raw.strip() else ["", ""]
            return f"<mtext>{edge[0]}{html(' '.join(raw.split()))}{edge[1]}</mtext>"
        if name in _VARIANT:
            return f'<mi mathvariant="{_VARIANT[name]}">{html(" ".join(self.group_text().split()))}</mi>'
        if name == "left":
            return self.fenced(self._delimiter(), right=True)
        if name == "right":
            raise ValueError("\\right without \\left")
        if name in _SIZES:
            return self._delimiter() or None
        if name in GREEK:
            return f"<mi>{GREEK[name]}</mi>"
        if name in _MO:
            return _fixed(_MO[name]) if _MO[name] in _DELIMITERS else f"<mo>{html(_MO[name])}</mo>"
        if name in _LIMITS:
            return f'<mo movablelimits="true" form="prefix">{_LIMITS[name]}</mo>'
        if name in _NAMED:
            return f'<mi mathvariant="normal">{name}</mi><mo>&#x2061;</mo><mspace width="0.17em"></mspace>'
        raise ValueError(f"the command \\{name} is not in the subset tex_mathml reads")


_DELIMITERS = frozenset("()[]|{}⟨⟩‖")


def _fixed(delimiter: str) -> str:
    """A bracket as LaTeX sets it without \\left/\\right: its natural size, never stretched."""
    return f'<mo stretchy="false" lspace="0" rspace="0">{html(delimiter)}</mo>'


def _row(x: str) -> str:
    return x if x.startswith("<mrow>") else f"<mrow>{x}</mrow>"


def mathml_body(src: str) -> str:
    """The MathML content (no ``<math>`` element) of the LaTeX math `src`."""
    return _Parser(str(src)).seq()


def tex_mathml(src: str, *, display: bool = False) -> str:
    """One ``<math>`` element for the LaTeX math `src` (no ``$``); ValueError outside the subset."""
    body = mathml_body(src)
    mode = ' display="block"' if display else ""
    return f'<math xmlns="http://www.w3.org/1998/Math/MathML"{mode}><mrow>{body}</mrow></math>'


def prose_spans(text: str):
    """The spans of LaTeX prose of ours, in order: ("name", `...` contents), ("math", $...$ contents)
    or ("text", the rest); the one reading of the format, for LaTeX (``prose``) and HTML alike."""
    for j, piece in enumerate(str(text).split("`")):
        if j % 2:
            yield "name", piece
            continue
        for i, part in enumerate(piece.split("$")):
            yield ("math" if i % 2 else "text"), part


def prose_html(text: str) -> str:
    """LaTeX prose of ours (maths in ``$...$``, names in backticks) as HTML: the text escaped, each
    math span as MathML (its escaped source if it is outside the subset)."""
    out = []
    for kind, part in prose_spans(text):
        if kind == "name":
            out.append(f"<code>{html(part)}</code>")
        elif kind == "text":
            out.append(html(part.replace("--", "–")).replace("~", "&nbsp;"))       # TeX's tie
        else:
            try:
                out.append(tex_mathml(part))
            except ValueError:
                out.append(f"<code>{html(part)}</code>")
    return "".join(out)
