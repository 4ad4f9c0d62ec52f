"""escape.py: every target prints hostile text exactly as given (made visible), and runs nothing.

Each target is checked by an independent reader of that format: pdflatex -shell-escape and
pdftotext for LaTeX, Python's html.parser for HTML, markdown-it for Markdown, matplotlib's
own text layout for plot titles.
"""
from __future__ import annotations

import html.parser
import shutil
import subprocess

import pytest
from hypothesis import given, settings, strategies as st

from sssn_verify import escape

HOSTILE = [
    r"sin(u) # $\immediate\write18{touch PWNED}$",
    r"\input{/etc/hostname}",
    r"a\b{c}d\\e",
    "$ % # & ~ ^ _ { } \\",
    "x^^5cinput{/etc/passwd}",
    "new\nline\r\n\x0c blank\n\nparagraph",
    "esc \x1b[31mred\x1b[0m bell\x07 back\x08space del\x7f c1\x9b",
    "bidi \u202egnp.exe\u202c zero\u200bwidth \u2066iso\u2069 \ufeffbom",
    "back`tick`` and ``quotes''",
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)"> & &amp; &#60;',
    "-- --- ! ?` !` << >>",
    "[link](javascript:alert(1)) *em* _u_ | pipe | ~~s~~ # h",
    "\\end{document}\\begin{filecontents}{x}",
    "Itô é ÿ Ł",
]
# characters that every target must show as <U+XXXX> (they hide or reorder text)
HIDDEN = "\x1b\x07\x08\x7f\x9b\r\x0c\u202e\u202c\u200b\u2066\u2069\ufeff\u2028\u2029\x00"


def test_visible_names_every_hidden_character():
    for ch in HIDDEN:
        assert escape.visible(ch) == f"<U+{ord(ch):04X}>"
    assert escape.visible("a\tb\nc") == "a b c"
    assert escape.visible("a\nb", newlines=True) == "a\nb"
    assert escape.visible("\x1b", newlines=True) == "<U+001B>"


@pytest.mark.parametrize("text", HOSTILE)
def test_terminal_has_no_control_characters(text):
    out = escape.terminal(text)
    assert all(ch == " " or (ch.isprintable() and ch not in HIDDEN) for ch in out)
    assert "\n" not in out


@pytest.mark.parametrize("text", HOSTILE)
def test_pdf_string_is_plain_ascii(text):
    out = escape.pdf_string(text)
    assert all(ch.isalnum() and ch.isascii() or ch in " .,:;!?()+-=*/<>'@" for ch in out)
    assert not set("\\{}$%#&~^_`") & set(out)


class _Text(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.data, self.tags = [], []

    def handle_data(self, data):
        self.data.append(data)

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    handle_startendtag = handle_starttag


def _html_text(source: str) -> tuple[str, list[str]]:
    p = _Text()
    p.feed(source)
    p.close()
    return "".join(p.data), p.tags


@pytest.mark.parametrize("text", HOSTILE)
def test_html_reads_back_as_text(text):
    data, tags = _html_text(f"<p title=\"{escape.html(text)}\">{escape.html(text)}</p>")
    assert tags == ["p"]
    assert data == escape.visible(text)


@given(st.text(max_size=40))
@settings(max_examples=200, deadline=None)
def test_html_any_text(text):
    data, tags = _html_text(f"<td>{escape.html(text)}</td>")
    assert tags == ["td"] and data == escape.visible(text)


def _markdown_text(source: str) -> tuple[str, list[str]]:
    from markdown_it import MarkdownIt
    rendered = MarkdownIt("commonmark").enable("table").enable("strikethrough").render(source)
    return _html_text(rendered)


@pytest.mark.parametrize("text", HOSTILE)
def test_markdown_reads_back_as_text(text):
    pytest.importorskip("markdown_it")
    data, tags = _markdown_text("text: " + escape.markdown(text))
    assert tags == ["p"]
    assert data.strip() == ("text: " + escape.visible(text)).strip()


@given(st.text(alphabet=st.characters(codec="ascii"), max_size=30))
@settings(max_examples=200, deadline=None)
def test_markdown_any_ascii_text(text):
    pytest.importorskip("markdown_it")
    data, tags = _markdown_text("x " + escape.markdown(text))
    assert tags == ["p"]
    assert " ".join(data.split()) == " ".join(("x " + escape.visible(text)).split())


def test_markdown_table_cell_stays_one_cell():
    pytest.importorskip("markdown_it")
    from markdown_it import MarkdownIt
    cell = escape.markdown("a | b\nc `|` d")
    out = MarkdownIt("commonmark").enable("table").render(f"| h | k |\n|---|---|\n| {cell} | z |\n")
    assert out.count("<td>") == 2


@pytest.mark.parametrize("text", HOSTILE)
def test_plot_text_draws_literally(text):
    import matplotlib
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots()
    try:
        t = ax.set_title(escape.plot_text(text))
        fig.canvas.draw()          # raises on bad mathtext
        assert not t._text.replace(r"\$", "").count("$")
    finally:
        plt.close(fig)


def test_check_math_accepts_sympy_latex():
    import sympy as sp
    u, r = sp.symbols("u rho")
    for e in (sp.Piecewise((u, u > 0), (0, True)), sp.erf(u) / sp.sqrt(2), sp.Matrix([[1, u], [2, r]]),
              sp.Heaviside(u), sp.Max(u, 0), sp.asinh(u) ** 2, sp.exp(-u ** 2 / 2) * sp.cosh(u),
              sp.Abs(u) ** sp.Rational(1, 3), sp.Eq(r, sp.oo)):
        src = sp.latex(e)
        assert escape.check_math(src) == src


@pytest.mark.parametrize("src", [
    r"\immediate\write18{touch F}", r"\input{/etc/hostname}", r"\include{x}", "x^^5cinput", r"a$b",
    r"x \\$ y", r"\end{document}", r"\begin{filecontents}{f}", "{", "}{", r"\csname x\endcsname",
    "a % b", "#1", r"\makeatletter", r"\def\x{1}", "a\n\nb", "a\x1bb", r"\catcode`\^^M=13",
    r"\openout3=f", r"\directlua{os.execute('id')}", r"\@input{x}", r"\string\x", r"\expandafter",
])
def test_check_math_refuses_dangerous_source(src):
    with pytest.raises(escape.UnsafeMathError):
        escape.check_math(src)


@pytest.mark.skipif(not shutil.which("pdflatex") or not shutil.which("pdftotext"),
                    reason="needs pdflatex and pdftotext (installed in CI)")
def test_latex_text_and_math_compile_under_shell_escape_and_print_the_input(tmp_path):
    body = []
    for i, text in enumerate(HOSTILE):
        body.append(f"\\section{{\\texorpdfstring{{{escape.latex_text(text)}}}{{{escape.pdf_string(text)}}}}}")
        body.append(f"START{i}:{escape.latex_text(text)}:END{i}\n")
        body.append(f"$x = {escape.latex_math(text)}$\n")
    doc = ("\\documentclass{article}\n\\usepackage[T1]{fontenc}\n\\usepackage{lmodern}\n"
           "\\usepackage{amsmath}\n\\usepackage[hidelinks]{hyperref}\n\\begin{document}\n\\sloppy\n"
           + "\n".join(body) + "\n\\end{document}\n")
    (tmp_path / "t.tex").write_text(doc, encoding="utf-8")
    run = subprocess.run(["pdflatex", "-shell-escape", "-interaction=nonstopmode", "-halt-on-error", "t.tex"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-2000:]
    assert not (tmp_path / "PWNED").exists()
    assert not (tmp_path / "x").exists()          # the filecontents name
    log = (tmp_path / "t.log").read_text(errors="replace")
    assert "/etc/hostname" not in log.split("\n", 2)[-1].replace(r"\input{/etc/hostname}", "")
    text = subprocess.run(["pdftotext", "-raw", "-enc", "UTF-8", "t.pdf", "-"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60).stdout
    flat = " ".join(text.split())
    for i, t in enumerate(HOSTILE):
        want = " ".join(escape.visible(t).split())
        got = flat.split(f"START{i}:", 1)[1].split(f":END{i}", 1)[0]
        # pdftotext may render the quote characters typographically: compare them loosely
        norm = str.maketrans({"\u2019": "'", "\u2018": "`", "\u201c": '"', "\u201d": '"', "\u2212": "-"})
        assert " ".join(got.translate(norm).split()) == want, (t, got)
