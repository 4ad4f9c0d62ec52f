"""``sssn-verify derive [NAME]`` and ``sssn-verify latex --out DIR``.

``derive`` without NAME lists the registered derivations (every module of
``sssn_verify.symbolic`` registers its own, so new ones appear here automatically);
``derive all`` prints every one.  The options a derivation takes are passed to it
(``--activation`` for kernel and lyapunov).  For ``kernel`` the output also carries the
numeric k0, k1, method and error bound at the given sigmas (``sssn_verify.numeric.kernels``)
and, with ``--rho R``, ``value`` = K(R); for ``lyapunov`` the numeric k0, k1 and
``lambda1_value`` = lambda_1 at ``--d`` and the sigmas.

JSON conventions: valid JSON (no NaN); an infinite number (k1 of a jump activation) is
the string ``"inf"`` (``"-inf"`` for minus infinity); k0/k1 are numbers, their symbolic
forms are ``k0_symbolic``/``k1_symbolic``.
"""
from __future__ import annotations

import argparse
import inspect
import math

from ..errors import ParameterError
from ..params import MODEL_DEFAULTS, check_int, check_real
from .common import (add_field_options, add_format_options, add_kernel_options, epilog, hidden_from_args,
                     params_from_args, print_json)

EXAMPLES = [
    "sssn-verify derive",
    "sssn-verify derive kernel --activation relu --sigma-b 0.5 --rho 0.3 --json",
    "sssn-verify derive general_field --field rqf --sigma-q 1.5 --json",
]
LATEX_EXAMPLES = [
    "sssn-verify latex --out /tmp/derivations --no-pdf",
    "sssn-verify latex --out derivations",
]

FORMATS = ("text", "latex", "json")


def register(sub) -> None:
    p = sub.add_parser("derive", help="print a sympy derivation (kernel, ito_drift, ...)",
                       description="Print a derivation (assumptions, steps, result). Without NAME: list "
                                   "them; NAME 'all' prints every one. For 'kernel' also the numeric k0, "
                                   "k1 (and K(rho) with --rho) at the given sigmas; for 'general_field' with "
                                   "--field rqf the rqf rates at --sigma-q (a(1), the one-point rate, lambda_1, "
                                   "lambda_bar(beta) at --beta with its argmax rho and its edge and antipodal "
                                   "values, lambda_bar_proj, lambda_proj, the rate of E log sin(theta), the log-distance "
                                   "variance rate, the Lyapunov spectrum at --d). In JSON an infinite number is the string \"inf\".",
                       epilog=epilog(EXAMPLES))
    p.add_argument("name", nargs="?", metavar="NAME", help="derivation name (omit to list them, 'all')")
    add_kernel_options(p)
    p.add_argument("--rho", type=float, default=None, help="also evaluate K(rho), rho in [-1, 1] (kernel)")
    p.add_argument("--d", type=int, default=3, help="dimension for the value of lambda_1 (lyapunov) and the spectrum (general_field --field rqf)")
    p.add_argument("--beta", type=float, default=MODEL_DEFAULTS["beta"],
                   help="beta of lambda_bar(beta) (general_field --field rqf only)")
    add_field_options(p, sigma_q_help="general_field's numbers at this sigma_q (with --field rqf)")
    add_format_options(p, FORMATS, default="text")
    p.add_argument("--standalone", action="store_true",
                   help="with --format latex: a complete, compilable LaTeX document")
    p.set_defaults(func=run)

    q = sub.add_parser("latex", help="write derivations/sssn_derivations.tex (and the PDF if TeX is installed)",
                       description="Write DIR/sssn_derivations.tex with every registered derivation, and "
                                   "compile it when pdflatex or lualatex is on PATH.",
                       epilog=epilog(LATEX_EXAMPLES))
    q.add_argument("--out", default="derivations", metavar="DIR", help="output folder")
    q.add_argument("--no-pdf", action="store_true", help="do not run a TeX engine")
    q.add_argument("--implementation-map", action="store_true",
                   help="end the document with a table of the modules that compute each derivation")
    q.add_argument("--with-report", metavar="DIR", default=None,
                   help="add each claim's latest verdict from DIR/report.json (sssn-verify verify --report DIR)")
    q.set_defaults(func=run_latex)


def jsonable(obj):
    """Replace non-finite floats by "inf"/"-inf"/None (JSON has no NaN/Infinity)."""
    if isinstance(obj, float):
        if math.isnan(obj):
            return None
        if math.isinf(obj):
            return "inf" if obj > 0 else "-inf"
        return obj
    if isinstance(obj, dict):
        return {k: jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    return obj


def _kernel_numbers(args) -> dict:
    from ..numeric.kernels import kernel
    kf = kernel(args.activation, args.sigma_w, args.sigma_b, args.sigma_a, hidden=hidden_from_args(args))
    out = {"activation": kf.activation.name, "sigma_w": kf.sigma_w, "sigma_b": kf.sigma_b,
           "sigma_a": kf.sigma_a, **_hidden_number(kf), "k0": kf.k0, "k1": kf.k1, "method": kf.method,
           "error_bound": kf.error_bound}
    if args.rho is not None:
        rho = check_real("rho", args.rho, -1.0, maximum=1.0)
        out["rho"] = rho
        out["value"] = kf.value(rho)
    return out


def _hidden_number(kf) -> dict:
    """{"hidden": "ACT SW SB; ..."} for a deep block's kernel, {} for the one-layer block."""
    from ..params import hidden_spec
    return {"hidden": hidden_spec(kf.hidden)} if kf.hidden else {}


def _lyapunov_numbers(args) -> dict:
    """k0, k1 (numeric kernel) and lambda_1 at --d and the sigmas, for the chosen activation."""
    from ..numeric.kernels import kernel
    from ..numeric.rates import lambda1
    kf = kernel(args.activation, args.sigma_w, args.sigma_b, args.sigma_a, hidden=hidden_from_args(args))
    return {"activation": kf.activation.name, "d": args.d, "sigma_w": kf.sigma_w, "sigma_b": kf.sigma_b,
            "sigma_a": kf.sigma_a, **_hidden_number(kf), "k0": kf.k0, "k1": kf.k1, "method": kf.method,
            "lambda1_value": lambda1(args.d, kf.k0, kf.k1)}


def _general_field_numbers(args) -> dict:
    """With --field rqf: the rqf rates of the general_field derivation at --sigma-q (through the bridge:
    regime's a(1), lambda_1, lambda_bar(beta) at --beta with its argmax and edge value, and projective rates,
    sync_time's log-distance rates; the value at rho = -1 and the log sin rate)."""
    if args.field != "rqf":
        return {}
    from ..bridge import function
    from ..params import ModelParams
    from ..regime import regime
    r = regime(ModelParams(field="rqf", sigma_q=args.sigma_q, d=args.d, beta=args.beta))
    return {"field": "rqf", "sigma_q": r.sigma_q, "d": r.d, "a1": r.k0, "one_point_rate": r.k0 / 2,
            "lambda1": r.lambda1, "beta": r.beta, "lambda_bar": r.lambda_bar,
            "lambda_bar_argmax": r.lambda_bar_argmax, "lambda_bar_edge": r.lambda_bar_edge,
            "lambda_bar_anti": float(function("general_field.rqf_lambda_bar_anti", "math")(r.beta, r.sigma_q)),
            "lambda_bar_proj": r.lambda_bar_proj, "lambda_proj": r.lambda_proj,
            "log_sin_rate": float(function("general_field.rqf_log_sin_rate", "math")(r.sigma_q)),
            "log_distance_variance": r.log_distance_variance, "lyapunov_spectrum": list(r.lyapunov_spectrum)}


_NUMBERS = {"kernel": _kernel_numbers, "lyapunov": _lyapunov_numbers, "general_field": _general_field_numbers}


def _one(name: str, args) -> dict:
    from ..symbolic import derivation_parameters, derive
    given = {"activation": args.activation, "sigma_w": args.sigma_w, "sigma_b": args.sigma_b,
             "sigma_a": args.sigma_a}
    der = derive(name, **{k: v for k, v in given.items() if k in derivation_parameters(name)})
    numbers = _NUMBERS[name](args) if name in _NUMBERS else {}
    return {"derivation": der, "numbers": numbers, "given": given}


#: the rqf numbers of general_field as LaTeX symbols (derive --format latex)
_RQF_TEX = {"a1": "a_1", "one_point_rate": "a_1/2", "lambda1": "\\lambda_1",
            "lambda_bar": "\\bar\\lambda(\\beta)", "lambda_bar_edge": "\\lim_{\\rho \\to 1} \\frac{L_2 f}{f}",
            "lambda_bar_anti": "\\frac{L_2 f}{f}(-1)",
            "lambda_bar_proj": "\\bar\\lambda_{\\mathrm{proj}}", "lambda_proj": "\\lambda_{\\mathrm{proj}}",
            "log_sin_rate": "\\tfrac{d}{dt} E \\log\\sin\\theta",
            "log_distance_variance": "\\sigma^2"}


def _rqf_paragraph(numbers: dict) -> str:
    """The rqf numbers of general_field (--field rqf) as a LaTeX sentence (latex_doc's number format)."""
    if not numbers:
        return ""
    from ..latex_doc import number_math
    found = [f"${tex} = {number_math(numbers[k])}$" for k, tex in _RQF_TEX.items()]
    found.append(f"the spectrum at $d = {numbers['d']}$: " + ", ".join(
        f"$\\lambda_{{{i}}} = {number_math(x)}$" for i, x in enumerate(numbers["lyapunov_spectrum"], 1)))
    return (f"\\paragraph{{Numbers.}} For the rqf field at $\\sigma_q = {number_math(numbers['sigma_q'])}$, "
            f"$\\beta = {number_math(numbers['beta'])}$: "
            + ", ".join(found[:-1]) + " and " + found[-1] + ".\n")


def _check_field(args) -> None:
    """--field rqf (with --sigma-q) gives numbers to general_field only; the other field's options keep their
    defaults (ModelParams' rule, its error)."""
    params_from_args(args)
    beta = check_real("beta", args.beta, 0.0)
    if beta != MODEL_DEFAULTS["beta"] and (args.field != "rqf" or args.name != "general_field"):
        raise ParameterError("beta", beta, "gives lambda_bar(beta) of derive general_field --field rqf only")
    if args.field == "rqf" and args.name not in (None, "general_field"):
        raise ParameterError("field", "rqf", f"applies to the general_field derivation only (derive general_field "
                             f"--field rqf --sigma-q S); {args.name!r} is not evaluated for the rqf field")


def _render(item: dict, fmt: str):
    import sympy as sp
    der, numbers = item["derivation"], item["numbers"]
    if fmt == "json":
        out = der.to_dict()
        if numbers:
            for key in ("k0", "k1"):
                if key in der.extras:
                    out[f"{key}_symbolic"] = sp.sstr(der.extras[key])
            out.update(numbers)
        return jsonable(out)
    if fmt == "latex":
        from ..latex_doc import fragment
        if der.name == "general_field":
            return fragment(der.name, None, **item["given"]) + _rqf_paragraph(numbers)
        return fragment(der.name, numbers, **item["given"])
    text = der.text()
    if numbers:
        text += "\nNumeric (" + ", ".join(f"{k}={v}" for k, v in numbers.items()) + ")"
    return text


def run(args: argparse.Namespace) -> int:
    from ..activations import get_activation
    from ..numeric.kernels import check_sigmas
    from ..symbolic import DERIVATIONS, derivation_names
    from ..errors import DerivationError

    # ActivationError -> exit 2; from here on the name is the canonical text of the parsed tree
    args.activation = get_activation(args.activation).name
    check_sigmas(args.sigma_w, args.sigma_b, args.sigma_a)
    if args.rho is not None:
        check_real("rho", args.rho, -1.0, maximum=1.0)
    check_int("d", args.d, 2)
    _check_field(args)
    if args.json:
        args.format = "json"
    names = derivation_names()
    if args.name is None:
        listing = [{"name": n, "summary": (inspect.getdoc(DERIVATIONS[n]) or "").splitlines()[0]} for n in names]
        if args.format == "json":
            print_json({"derivations": listing})
        else:
            for item in listing:
                print(f"{item['name']:18s} {item['summary']}")
        return 0
    if args.name != "all" and args.name not in names:
        raise DerivationError(f"unknown derivation {args.name!r}; known: {', '.join(names)}, all")
    chosen = names if args.name == "all" else [args.name]
    if args.standalone:
        if args.format != "latex":
            raise ParameterError("standalone", True, "only with --format latex")
        from ..latex_doc import standalone_document
        numbers = {n: _NUMBERS[n](args) for n in chosen if n in _NUMBERS and n != "general_field"}
        text = standalone_document(chosen, numbers, activation=args.activation, sigma_w=args.sigma_w,
                                   sigma_b=args.sigma_b, sigma_a=args.sigma_a)
        if "general_field" in chosen:          # its rqf numbers (--field rqf) end the note
            head, _, tail = text.rpartition("\\end{document}")
            text = head + _rqf_paragraph(_general_field_numbers(args)) + "\\end{document}" + tail
        print(text, end="")
        return 0
    rendered = [_render(_one(n, args), args.format) for n in chosen]
    if args.format == "json":
        print_json(rendered[0] if args.name != "all" else rendered)
    else:
        print("\n\n".join(rendered))
    return 0


def run_latex(args: argparse.Namespace) -> int:
    from ..escape import terminal
    from ..latex_doc import write_document
    if not str(args.out).strip():
        raise ParameterError("out", args.out, "must be a folder path")
    result = write_document(args.out, compile_pdf=not args.no_pdf, report=args.with_report,
                            implementation_map=args.implementation_map)
    print(f"wrote {terminal(result['tex'])}")
    if result["pdf"]:
        print(f"wrote {terminal(result['pdf'])} ({result['engine']}: {result['pages']} pages, "
              f"{result['overfull']} overfull boxes)")
    elif result.get("engine"):
        print(f"{result['engine']} failed: {terminal(result.get('error', ''))}")
        return 1
    elif not args.no_pdf:
        print("no pdflatex/lualatex on PATH: PDF not built")
    return 0
