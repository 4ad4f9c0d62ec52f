"""One escaping function per output target, for every string that is not ours.

Text that may hold user characters (activation and candidate names, folder names, values
read back from ``report.json``, messages quoting user input) reaches a ``.tex``, ``.md``,
``.html``, a plot title or the terminal only through the function of its target: :func:`latex_text`, :func:`latex_math`, :func:`check_math`
(our or sympy's math source, refused if it can do I/O), :func:`pdf_string`, :func:`html`,
:func:`markdown`, :func:`plot_text`, :func:`terminal`.  Hiding characters print as ``<U+XXXX>``.

More (moved from this docstring): docs/modules.md, ``sssn_verify.escape``.
"""
from __future__ import annotations

import re
import unicodedata

__all__ = ["latex_text", "latex_math", "check_math", "pdf_string", "html", "markdown", "plot_text",
           "terminal", "visible", "UnsafeMathError"]

_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


class UnsafeMathError(ValueError):
    """LaTeX math source holds a construct that could do I/O or escape math mode."""


def _hidden(ch: str) -> bool:
    if ch in " ":
        return False
    return unicodedata.category(ch) in _HIDDEN_CATEGORIES or (ch.isspace() and ch != " ")


def visible(text, *, newlines: bool = False) -> str:
    """`text` with every hidden or control character written ``<U+XXXX>``; tabs and newlines
    become spaces (kept with ``newlines=True``; a CR is always shown)."""
    out = []
    for ch in str(text):
        if newlines and ch in "\n\t":
            out.append(ch)
        elif ch in "\n\t":
            out.append(" ")
        elif _hidden(ch):
            out.append(f"<U+{ord(ch):04X}>")
        else:
            out.append(ch)
    return "".join(out)


# ---------------------------------------------------------------- LaTeX
_LATEX_TEXT = {
    "\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "%": r"\%", "#": r"\#",
    "&": r"\&", "_": r"\_", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
    "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}", "`": r"\textasciigrave{}",
    "'": r"\textquotesingle{}", '"': r"\textquotedbl{}", "-": "-{}",
}
# non-ASCII letters pdflatex sets with T1 fontenc and the default UTF-8 input (Latin-1 and
# Latin Extended-A); anything else is spelt <U+XXXX> so that a document always compiles
_LATEX_UNICODE = re.compile(r"[\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u017f]")


def latex_text(text) -> str:
    """`text` for LaTeX text mode: prints exactly as given (one pass, so the braces of
    ``\\textbackslash{}`` are never escaped again), on one line."""
    out = []
    for ch in visible(text):
        if ch in _LATEX_TEXT:
            out.append(_LATEX_TEXT[ch])
        elif " " <= ch <= "~" or _LATEX_UNICODE.fullmatch(ch):
            out.append(ch)
        else:
            out.append("".join(_LATEX_TEXT.get(c, c) for c in f"<U+{ord(ch):04X}>"))
    return "".join(out)


def latex_math(text) -> str:
    """User text shown literally inside LaTeX math: ``\\mbox{...}`` of :func:`latex_text`."""
    return f"\\mbox{{{latex_text(text)}}}"


# control words that can read or write files, run programs, redefine or build commands,
# change catcodes or end the document; checked after any character escape
_DANGEROUS = re.compile(
    r"\\(?:write|immediate|input|include|openin|openout|read|closein|closeout|catcode|def|edef|gdef|"
    r"xdef|let|futurelet|csname|endcsname|expandafter|noexpand|newcommand|renewcommand|providecommand|"
    r"DeclareRobustCommand|newenvironment|renewenvironment|special|directlua|latelua|luaexec|"
    r"usepackage|RequirePackage|documentclass|endinput|end\s*\{\s*document|scantokens|detokenize|"
    r"everypar|everymath|everydisplay|output|shipout|openout|pdfshellescape|ShellEscape|"
    r"IfFileExists|InputIfFileExists|lstinputlisting|verbatiminput|includegraphics|href|url|"
    r"makeatletter|uppercase|lowercase|string|char|mathcode|lccode|uccode|sfcode|delcode|"
    r"jobname|pdffilesize|pdffiledump|pdfmdfivesum|filemodDate|pdfprimitive|primitive|"
    r"begingroup|endgroup|aftergroup|afterassignment|globaldefs|errhelp|message|typeout|"
    r"filecontents|newwrite|newread|loop|repeat|iterate|halt|batchmode|nonstopmode|scrollmode)")


_ENVIRONMENTS = frozenset({"cases", "matrix", "pmatrix", "bmatrix", "vmatrix", "Vmatrix", "smallmatrix",
                           "array", "aligned", "split", "gathered"})


def check_math(source) -> str:
    """LaTeX math source (ours or sympy's) returned unchanged once checked; raises
    :class:`UnsafeMathError` if it holds ``$``, ``%``, ``#``, ``^^`` (TeX's character codes),
    a control character or blank line, unbalanced braces, an environment other than the
    matrix/cases ones, or a control word that can do I/O, define commands or change catcodes."""
    s = str(source)
    why = None
    tokens = re.findall(r"\\[A-Za-z@]+|\\.|.", s, flags=re.S)
    depth = 0
    for i, t in enumerate(tokens):
        if t in ("$", "%", "#"):
            why = f"{t!r} (it would leave math mode, start a comment or a macro parameter)"
        elif t == "^" and i + 1 < len(tokens) and tokens[i + 1] == "^":
            why = "^^ (a TeX character code)"
        elif len(t) == 1 and (_hidden(t) and t not in "\n\t"):
            why = "a control character"
        elif "@" in t[1:] and t.startswith("\\"):
            why = f"the internal control word {t}"
        elif _DANGEROUS.fullmatch(t):
            why = f"the control word {t}"
        elif t in ("\\begin", "\\end"):
            m = re.match(r"\s*\{([A-Za-z]+)\*?\}", "".join(tokens[i + 1:i + 40]))
            if not m or m[1] not in _ENVIRONMENTS:
                why = f"an environment other than {', '.join(sorted(_ENVIRONMENTS))}"
        depth += {"{": 1, "}": -1}.get(t, 0)
        if depth < 0:
            why = "unbalanced braces"
        if why:
            break
    if why is None and depth:
        why = "unbalanced braces"
    if why is None and re.search(r"\n[ \t]*\n", s):
        why = "a blank line"
    if why:
        raise UnsafeMathError(f"unsafe LaTeX math {terminal(s)[:60]!r}: {why}")
    return s


_PDF_SAFE = re.compile(r"[^A-Za-z0-9 .,:;!?()+\-=*/<>'@]")


def pdf_string(text) -> str:
    """A PDF bookmark string: printable ASCII letters, digits and plain punctuation only
    (TeX specials and everything else dropped), spaces collapsed."""
    s = visible(text)
    s = _PDF_SAFE.sub(" ", s)
    return " ".join(s.split())


# ---------------------------------------------------------------- HTML, Markdown
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;", "`": "&#x60;"}


def html(text) -> str:
    """`text` for HTML text or a quoted attribute value (``& < > " ' ` `` as entities)."""
    return "".join(_HTML.get(ch, ch) for ch in visible(text))


_MD_SPECIAL = frozenset("\\`*_{}[]()<>#+-.!|&~^$=:\"'%@/;?,")


def markdown(text) -> str:
    """`text` for Markdown text or a table cell: every ASCII punctuation character that
    Markdown (CommonMark, GFM tables, HTML blocks, autolinks, entities) could read is
    backslash-escaped, on one line."""
    return "".join("\\" + ch if ch in _MD_SPECIAL else ch for ch in visible(text))


# ---------------------------------------------------------------- plots, terminal
def plot_text(text) -> str:
    """`text` for a matplotlib title or label: ``$`` escaped (no mathtext is parsed), one line."""
    return visible(text).replace("$", r"\$")


def terminal(text, *, newlines: bool = False) -> str:
    """`text` for the terminal: escape sequences (ESC, CSI), carriage returns, backspaces, bells,
    bidi overrides and zero-width characters shown as ``<U+XXXX>``; one line unless `newlines`."""
    return visible(text, newlines=newlines)
