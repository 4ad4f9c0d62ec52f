"""The LaTeX appendix of all registered derivations (``derivations/sssn_derivations.tex``).

Sections follow ``symbolic.MODULES`` order; the kernel gets one subsection per activation in
``KERNEL_ACTIVATIONS``.  Each section states its assumptions (an ``assumption``
environment), numbers its derivation steps, and ends with a ``result`` environment that
refers back to the assumptions and steps and forward to the claims of the verification
suite that check it (a last section lists the claims; ``build_document(report=DIR)`` adds
each claim's latest verdict from ``DIR/report.json``).  Every formula is sympy output printed by
``symbolic.derivation.tex`` (its DISPLAY_RULES are stated in the introduction); prose holds maths
only inside ``$...$``; every string from outside (report.json, names) goes through
``escape.latex_text``.  ``section()`` is the one rendering of a derivation, shared by the
appendix, ``derive --format latex`` and ``--standalone``.  Without a report the text is
deterministic (no date), so a test can compare the committed file with what the code generates.

Packages: fontenc (T1), lmodern, amsmath, amssymb, amsthm, breqn, geometry, microtype, hyperref.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from .errors import ParameterError
from .escape import latex_math, latex_text
from .outputs import check_folder, write_atomic
from .symbolic import DERIVATIONS, MODULES, derivation_names, derivation_parameters, derive
from .symbolic.derivation import DISPLAY_RULES, heading, label_key, prose

FILENAME = "sssn_derivations.tex"
KERNEL_ACTIVATIONS = ("relu", "leaky_relu:0.1", "abs", "heaviside", "identity", "erf", "sin:3", "cos:1",
                      "tanh")
# claims that check a derivation besides the one named in their `derivation` field
ALSO_CHECKED_BY = {"lyapunov": ("relu_rates",), "coercivity": ("relu_rates",),
                   "attention_bound": ("dissipation",)}

PACKAGES = r"""\usepackage[T1]{fontenc}
\usepackage{lmodern}
\usepackage[margin=2.2cm]{geometry}
\usepackage{amsmath}
\usepackage{amssymb}
\usepackage{amsthm}
\usepackage{breqn}
\usepackage{microtype}
\usepackage[hidelinks,bookmarksnumbered]{hyperref}
\theoremstyle{definition}
\newtheorem{assumption}{Assumptions}[section]
\theoremstyle{plain}
\newtheorem{result}{Result}[section]
\theoremstyle{definition}
\newtheorem{claimenv}{Claim}
\setlength{\emergencystretch}{3em}
\allowdisplaybreaks
"""

PREAMBLE = (r"""\documentclass[11pt]{article}
""" + PACKAGES + r"""\title{Stochastic scaling limits and synchronization by noise\\
in deep transformers: derivations}
\author{generated from the derivations of \texttt{sssn\_verify}; do not edit}
\date{}
\begin{document}
\maketitle
\noindent Every displayed formula below is computed by computer algebra from the stated
assumptions; none is typed in, and the prose around it says what was computed. Each section
states its assumptions, numbers its derivation steps and ends with the result as an equation,
which refers back to them and to the numerical checks that confirm it
(Section~\ref{sec:claims}). A displayed formula differs from the computed expression only by
these rules, each of which keeps its value: """ + "; ".join(f"({i}) {r}" for i, r in enumerate(DISPLAY_RULES, 1))
            + r""". Conventions: sections 1--5 of the project's mathematical reference,
\texttt{docs/mathematics.md}.
\tableofcontents
""")


def ordered_names() -> list[str]:
    """Registered derivation names, in MODULES order (then registration order)."""
    names = derivation_names()

    def key(item):
        i, name = item
        module = DERIVATIONS[name].__module__.rsplit(".", 1)[-1]
        return (MODULES.index(module) if module in MODULES else len(MODULES), i)
    return [name for _, name in sorted(enumerate(names), key=key)]


def _claims():
    """The claims registry (None when the numeric side cannot be imported)."""
    try:
        from .claims import CLAIMS
    except ImportError:  # pragma: no cover - the symbolic side works alone
        return None
    return CLAIMS


def checked_by(name: str) -> list[str]:
    """Names of the claims that check derivation `name` numerically."""
    claims = _claims() or {}
    out = [c.name for c in claims.values() if c.derivation == name]
    out += [c for c in ALSO_CHECKED_BY.get(name, ()) if c in claims and c not in out]
    return out


def number_math(x) -> str:
    """A number as LaTeX math source (no $): 7.43 \\times 10^{-16}, +\\infty, \\text{not a number}."""
    if isinstance(x, bool):
        return r"\text{yes}" if x else r"\text{no}"
    try:
        v = float(x)
    except (TypeError, ValueError, OverflowError):
        return latex_math(x)
    if v != v:
        return r"\text{not a number}"
    if v in (float("inf"), float("-inf")):
        return r"+\infty" if v > 0 else r"-\infty"
    text = f"{v:.4g}"
    if "e" in text:
        mantissa, exponent = text.split("e")
        return ("" if mantissa == "1" else f"{mantissa} \\times ") + f"10^{{{int(exponent)}}}"
    return text


def _num(x) -> str:
    """A value from the report in the text: a number in math mode ("inf" strings included),
    anything else as escaped text."""
    if x is None:
        return "--"
    if isinstance(x, str) and x not in ("inf", "-inf"):
        return latex_text(x)
    if not isinstance(x, (int, float, str)):
        return latex_text(x)
    return f"${number_math(x)}$"


def _date_text(iso: str) -> str:
    """'2026-12-02T18:00:00+00:00' -> '2026-12-02, 18:00 UTC' (no + or : pseudo-maths in prose)."""
    import datetime as _dt
    try:
        when = _dt.datetime.fromisoformat(str(iso)).astimezone(_dt.timezone.utc)
    except ValueError:
        return "at an unreadable date"
    return when.strftime("%Y-%m-%d, %H:%M UTC")


def load_report(directory) -> dict[str, Any]:
    """DIR/report.json as written by ``sssn-verify verify --report DIR`` (ParameterError if absent
    or not a report): a regular file of at most ``limits.MAX_REPORT_BYTES``, valid against the whole
    ``report.schema.json`` (``inputs.report_schema``: every required field, every type; jsonschema, before
    any use)."""
    from .inputs import load_json, report_schema
    from .limits import MAX_REPORT_BYTES
    data = load_json(Path(directory) / "report.json", what="with-report", max_bytes=MAX_REPORT_BYTES,
                     schema=report_schema())
    if not isinstance(data, dict) or not isinstance(data.get("claims"), list):
        raise ParameterError("with-report", str(directory), "report.json is not an sssn_verify report")
    return data


def _verdicts_paragraph(report: dict[str, Any]) -> str:
    prov = report.get("provenance") or {}
    git = (prov.get("git") or {}).get("commit")
    bits = [f"mode \\texttt{{{latex_text(report.get('mode', '?'))}}}", f"seed {_num(report.get('seed'))}"]
    if prov.get("date"):
        bits.append(f"written {_date_text(prov['date'])}")
    if prov.get("version"):
        bits.append(f"\\texttt{{sssn\\_verify}} {latex_text(prov['version'])}")
    if git:
        bits.append(f"commit \\texttt{{{latex_text(str(git)[:12])}}}")
    fw = report.get("familywise") or {}
    text = ("The verdicts below are those of the report given to \\texttt{sssn-verify latex --with-report} ("
            + ", ".join(bits) + ").")
    if fw.get("alpha") is not None:
        text += (f" Family-wise false-alarm probability at most {_num(fw['alpha'])} (Holm over "
                 f"{_num(fw.get('n_checks'))} statistical checks).")
    return text


def claims_section(report: dict[str, Any] | None = None) -> str:
    """The last section: one ``claimenv`` per claim, with the results it checks and, given a
    report, its latest verdict."""
    claims = _claims()
    lines = [heading("section", "Numerical checks of the results", "sec:claims"),
             "Each claim below is run by \\texttt{sssn-verify verify}: its statistic, tolerance policy, "
             "level and budget are stated in the report (\\texttt{report.json}, \\texttt{report.html}) "
             "together with every individual check."]
    if report is not None:
        lines.append(_verdicts_paragraph(report))
    if not claims:
        return "\n\n".join(lines) + "\n"
    verdicts = {c.get("name"): c for c in (report or {}).get("claims", []) if isinstance(c, dict)}
    checks_of: dict[str, list[str]] = {}
    for name in ordered_names():
        for c in checked_by(name):
            checks_of.setdefault(c, []).append(name)
    for c in claims.values():
        k = label_key(c.name)
        body = [f"\\begin{{claimenv}}[\\texttt{{{latex_text(c.name)}}}]\\label{{claim:{k}}}",
                f"\\emph{{{prose(c.title)}.}} {prose(c.statement)}"]
        targets = checks_of.get(c.name, [])
        if targets:
            refs = [f"Result~\\ref{{res:{label_key(t)}}}" for t in targets if t != "kernel"]
            if "kernel" in targets:
                refs.insert(0, "the kernel results of Section~\\ref{sec:kernel}")
            body.append("It checks " + ", ".join(refs) + ".")
        else:
            body.append("It checks a stated bound that is not derived symbolically; the report marks it as "
                        "stated, not derived.")
        v = verdicts.get(c.name)
        if v is not None and isinstance(v.get("error"), dict):
            body.append("Latest run: \\textbf{not checked}: an internal numerical failure of the checker, not a "
                        "verdict on the formula.")
        elif v is not None:
            ci = v.get("ci")
            est = _num(v.get("estimate"))
            if isinstance(ci, list) and len(ci) == 2:
                est += f" (interval {_num(ci[0])} to {_num(ci[1])})"
            body.append(f"Latest verdict: \\textbf{{{'pass' if v.get('passed') else 'FAIL'}}}; "
                        f"headline estimate {est}, expected {_num(v.get('expected'))}; "
                        f"{_num(len(v['checks']) if isinstance(v.get('checks'), list) else None)} checks "
                        f"at level {_num(v.get('level'))}.")
        elif report is not None:
            body.append("Not run in the given report.")
        body.append("\\end{claimenv}")
        lines.append("\n".join(body))
    return "\n\n".join(lines) + "\n"


# what a number given to `derive` means, for its sentence in the fragment
_NUMBER_NAMES = {"sigma_w": r"\sigma_w", "sigma_b": r"\sigma_b", "sigma_a": r"\sigma_a", "k0": "k_0", "k1": "k_1",
                 "rho": r"\rho", "value": r"K(\rho)", "d": "d", "lambda1_value": r"\lambda_1"}


def numbers_paragraph(numbers: dict[str, Any]) -> str:
    """The numbers `derive` adds (kernel, lyapunov) as a sentence with the values set as math."""
    if not numbers:
        return ""
    given = [f"${_NUMBER_NAMES[k]} = {number_math(numbers[k])}$" for k in ("d", "sigma_w", "sigma_b", "sigma_a", "rho")
             if k in numbers]
    found = [f"${_NUMBER_NAMES[k]} = {number_math(numbers[k])}$" for k in ("k0", "k1", "value", "lambda1_value")
             if k in numbers]
    text = "\\paragraph{Numbers.} At " + _join(given) + ": " + _join(found)
    if "method" in numbers:
        how = "the closed form" if numbers["method"] == "closed form" else "deterministic quadrature"
        text += f", evaluated by {how}"
        if numbers.get("error_bound") is not None:
            text += f" with error at most ${number_math(numbers['error_bound'])}$"
    return text + ".\n"


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1] if items else ""


def section(name: str, *, activation=None, level: str = "section", linked: bool = True, **kwargs) -> str:
    """The one LaTeX rendering of derivation `name` (the appendix, ``derive --format latex`` and
    ``--standalone`` all use it): its section, with the claims that check it (as references
    to the claims section when `linked`, else by name)."""
    takes = derivation_parameters(name)
    if activation is not None:
        kwargs["activation"] = activation
    der = derive(name, **{k: v for k, v in kwargs.items() if k in takes and v is not None})
    key = f"{name}-{der.extras['activation']}" if name == "kernel" else name
    return der.latex(level=level, key=key, checked_by=[(c, linked) for c in checked_by(name)])


def _kernel_sections(links: bool) -> list[str]:
    # no sub- or superscripts in headings: breqn makes _ and ^ active, and a label's stored title
    # then never compares equal between runs ("Label(s) may have changed")
    parts = [heading("section", "Covariance kernel $K(\\rho)$ and its constants", "sec:kernel")]
    parts += [section("kernel", activation=act, level="subsection", linked=links) for act in KERNEL_ACTIVATIONS]
    return parts


def implementation_table() -> str:
    """The optional last section: which module computes each derivation (``latex --implementation-map``)."""
    rows = [f"{latex_text(n)} & \\texttt{{{latex_text(DERIVATIONS[n].__module__)}}} \\\\"
            for n in ordered_names()]
    return "\n".join([heading("section", "Implementation map", "sec:implementation"),
                      "The derivation of each section is computed by the module below.", "",
                      "\\begin{center}\\begin{tabular}{ll}", "derivation & module \\\\ \\hline", *rows,
                      "\\end{tabular}\\end{center}", ""])


def build_document(report: dict[str, Any] | str | os.PathLike | None = None, *,
                   implementation_map: bool = False) -> str:
    """The full .tex source; `report` (a folder with report.json, or its loaded data) adds the
    latest verdicts to the claims section; `implementation_map` adds the table of modules."""
    if report is not None and not isinstance(report, dict):
        report = load_report(report)
    parts = [PREAMBLE]
    for name in ordered_names():
        parts += _kernel_sections(True) if name == "kernel" else [section(name)]
        parts.append("\n")
    parts.append(claims_section(report))
    if implementation_map:
        parts.append(implementation_table())
    parts.append("\\end{document}\n")
    return "".join(parts)


def fragment(name: str, numbers: dict[str, Any] | None = None, **kwargs) -> str:
    """``derive NAME --format latex``: the appendix's section of `name`, claims named, plus the
    numbers computed at the given parameters."""
    return section(name, linked=False, **kwargs) + numbers_paragraph(numbers or {})


def standalone_document(names: list[str], numbers: dict[str, dict] | None = None, **kwargs) -> str:
    """A compilable short note with the derivations `names` alone (``derive NAME --format latex
    --standalone``); keyword arguments go to ``derive`` (activation, sigmas)."""
    titles = [derive(n, **{k: v for k, v in kwargs.items() if k in derivation_parameters(n) and v is not None}).title
              for n in names]
    title = titles[0] if len(titles) == 1 else "Derivations"
    intro = ("Every displayed formula is computed by computer algebra from the stated assumptions; "
             "a displayed formula differs from the computed expression only by rules that keep its value.")
    parts = ["\\documentclass[11pt]{article}\n", PACKAGES, f"\\title{{{prose(title)}}}\n\\date{{}}\n",
             "\\begin{document}\n\\maketitle\n", f"\\noindent {intro}\n\n"]
    for name in names:
        parts.append(fragment(name, (numbers or {}).get(name), **kwargs))
        parts.append("\n")
    parts.append("\\end{document}\n")
    return "".join(parts)


# ---------------------------------------------------------------- compiling
def tex_engine() -> str | None:
    """pdflatex or lualatex on PATH (None when no TeX is installed)."""
    return shutil.which("pdflatex") or shutil.which("lualatex")


_RERUN = re.compile(r"Rerun to get|Label\(s\) may have changed|There were undefined references|"
                    r"Package rerunfilecheck Warning")


def _first_error(log: str, stdout: str) -> str:
    """The first TeX error line ("! ...") and the line number after it, else the output's tail."""
    lines = (log or stdout).splitlines()
    for i, line in enumerate(lines):
        if line.startswith("!"):
            where = next((x.strip() for x in lines[i + 1:i + 8] if re.match(r"l\.\d+", x)), "")
            return f"{line.strip()} {where}".strip()
    return (stdout or log)[-400:].strip()


def compile_tex(tex_path, *, runs: int = 5, timeout: float = 300) -> dict[str, Any]:
    """Compile `tex_path` in a fresh temporary folder (latexmk when present, else the engine
    repeated until no "Rerun"/"Label(s) may have changed" remains, at most `runs` passes) and
    copy only the PDF back beside it.  Returns pdf path (or None), engine, passes, pages,
    overfull boxes, undefined references, rerun_needed, and `error` (the first TeX error line)."""
    import tempfile
    tex_path = Path(tex_path)
    engine = tex_engine()
    result: dict[str, Any] = {"pdf": None, "engine": None, "pages": None, "overfull": None,
                              "undefined_references": None, "rerun_needed": None, "passes": 0}
    if engine is None:
        return result
    result["engine"] = Path(engine).name
    latexmk = shutil.which("latexmk")
    with tempfile.TemporaryDirectory(prefix="sssn-latex-") as tmp:
        work = Path(tmp) / tex_path.name
        shutil.copyfile(tex_path, work)
        log_path = work.with_suffix(".log")
        proc, log = None, ""
        # no -shell-escape, and restricted file access: a document never runs or reads anything
        env = dict(os.environ, shell_escape="f", openout_any="p", openin_any="p")
        if latexmk:
            flag = "-lualatex" if result["engine"] == "lualatex" else "-pdf"
            proc = subprocess.run([latexmk, flag, "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape",
                                   f"-e", f"$max_repeat={runs}", work.name], cwd=tmp, capture_output=True,
                                  text=True, timeout=timeout * runs, errors="replace", env=env)
            result["passes"] = len(re.findall(r"Run number \d+ of rule", proc.stdout + proc.stderr))
            log = log_path.read_text(errors="replace") if log_path.exists() else ""
        else:
            for _ in range(runs):
                proc = subprocess.run([engine, "-no-shell-escape", "-interaction=nonstopmode", "-halt-on-error",
                                       work.name], cwd=tmp, capture_output=True, text=True, timeout=timeout,
                                      errors="replace", env=env)
                result["passes"] += 1
                log = log_path.read_text(errors="replace") if log_path.exists() else ""
                if proc.returncode != 0 or not _RERUN.search(log):
                    break
        pdf = work.with_suffix(".pdf")
        if proc is not None and proc.returncode == 0 and pdf.exists():
            target = tex_path.with_suffix(".pdf")
            shutil.copyfile(pdf, target)
            result["pdf"] = str(target)
            m = re.search(r"Output written on .*?\((\d+) pages?", log, re.S)
            result["pages"] = int(m.group(1)) if m else None
        else:
            result["error"] = _first_error(log, proc.stdout if proc else "")
    result["overfull"] = len(re.findall(r"^Overfull \\[hv]box", log, re.M))
    result["undefined_references"] = len(re.findall(r"LaTeX Warning: (Reference|Citation) .* undefined", log))
    result["rerun_needed"] = bool(_RERUN.search(log))
    return result


def write_document(out_dir, *, compile_pdf: bool = True, report=None, implementation_map: bool = False) -> dict[str, Any]:
    """Write out_dir/sssn_derivations.tex (atomically) and, if a TeX engine is on PATH, the PDF
    (compiled elsewhere: only the .tex and the .pdf land in out_dir)."""
    out = check_folder(out_dir, what="latex --out", create=True)
    if report is not None and not isinstance(report, dict):
        report = load_report(report)          # a bad --with-report fails before the long build
    tex = write_atomic(out / FILENAME, build_document(report, implementation_map=implementation_map),
                       what="latex --out")
    result: dict[str, Any] = {"tex": str(tex), "pdf": None, "engine": None}
    if compile_pdf:
        result.update(compile_tex(tex))
    return result


# ---------------------------------------------------------------- pseudo-maths scan
_MATH = re.compile(r"\$[^$]*\$|\\\[.*?\\\]|\\\(.*?\\\)|\\begin\{(dmath\*?|equation\*?|align\*?)\}.*?\\end\{\1\}",
                   re.S)
_ARG_COMMANDS = re.compile(r"\\(texttt|label|ref|eqref|hyperref\[[^\]]*\]|usepackage(\[[^\]]*\])?|"
                           r"documentclass(\[[^\]]*\])?|begin|end|newtheorem|theoremstyle|setlength)\{[^{}]*\}")
_PSEUDO_MATHS = {
    "comparison or angle bracket": r"[<>]|\\textless|\\textgreater",
    "caret": r"\^|\\\^",
    "underscore outside \\texttt": r"_|\\_",
    "equals sign outside math": r"=",
    "arrow": r"->|=>",
    "norm or absolute-value bar": r"\|",
    "plus or times": r"[+*]",
    "Greek letter spelt out": r"\b(lambda|sigma|rho|beta|gamma|alpha|delta|epsilon|eps|phi|varphi|mu|nu|"
                              r"Sigma|Delta|Pi|Lambda|theta|nabla)\b",
    "indexed name such as k0": r"\b[A-Za-z][0-9]\b",
    "function call such as K(rho)": r"[A-Za-z]\(",
    "range such as 2..7": r"\.\.",
    "sqrt/log/exp spelt out": r"\b(sqrt|exp|log|sup|lim|tr)\b(?!-)",
}


def prose_outside_math(tex: str) -> str:
    """The prose of a .tex source: math, comments, the preamble and command arguments that are
    not prose (\\texttt, \\label, \\ref, ...) removed; command names dropped."""
    body = tex.split("\\begin{document}", 1)[-1]
    body = re.sub(r"(?<!\\)%.*", "", body)
    body = _MATH.sub(" ", body)
    body = re.sub(r"\\texorpdfstring\{((?:[^{}]|\{[^{}]*\})*)\}\{[^{}]*\}", r" \1 ", body)  # keep the TeX title
    prev = None
    while prev != body:
        prev = body
        body = _ARG_COMMANDS.sub(" ", body)
    body = re.sub(r"\\item\b|\\\\", " ", body)
    body = re.sub(r"\\[A-Za-z]+\*?", " ", body)          # remaining command names (their text stays)
    body = re.sub(r"\\[&%#{}$ ,;!]", " ", body)          # escaped specials that are text
    body = body.replace("{", " ").replace("}", " ").replace("~", " ")
    return body


def pseudo_maths(tex: str) -> list[tuple[str, str]]:
    """(kind, context) of every ASCII pseudo-maths found in the prose of `tex`."""
    text = prose_outside_math(tex)
    found = []
    for kind, pattern in _PSEUDO_MATHS.items():
        for m in re.finditer(pattern, text):
            found.append((kind, " ".join(text[max(0, m.start() - 40): m.end() + 40].split())))
    return found


__all__ = ["build_document", "standalone_document", "fragment", "section", "numbers_paragraph", "number_math",
           "implementation_table", "write_document", "compile_tex", "tex_engine",
           "ordered_names", "checked_by", "claims_section", "load_report", "prose_outside_math",
           "pseudo_maths", "FILENAME", "KERNEL_ACTIVATIONS", "PACKAGES", "PREAMBLE"]
