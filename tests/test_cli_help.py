"""Help that teaches: every sub-command's --help ends with runnable examples and shows the default of
every option that has one; one spelling per concept across sub-commands; claim aliases everywhere;
derive lists what the README lists."""
from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

import pytest

from sssn_verify.cli import build_parser, main
from sssn_verify.cli.common import HelpFormatter

README = Path(__file__).resolve().parents[1] / "README.md"


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


SUBCOMMANDS = _subcommands()


def _examples(text: str) -> list[str]:
    assert "\nexamples:\n" in text, "no examples block"
    block = text.rsplit("\nexamples:\n", 1)[1]
    return [line.strip() for line in block.strip().splitlines()]


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_help_ends_with_examples_that_parse(name):
    sub = SUBCOMMANDS[name]
    examples = _examples(sub.format_help())
    assert 2 <= len(examples) <= 3, examples
    for example in examples:
        argv = shlex.split(example)
        if ">" in argv:                                  # a shell redirection ends the command
            argv = argv[:argv.index(">")]
        assert argv[:2] == ["sssn-verify", name], example
        args = build_parser().parse_args(argv[1:])       # SystemExit (exit 2) on a bad example
        assert args.command == name and callable(args.func)


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_every_option_has_help_and_shows_its_default(name):
    fmt = HelpFormatter(prog=f"sssn-verify {name}")
    for action in SUBCOMMANDS[name]._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        assert action.help, f"{name} {action.option_strings or action.dest}: no help"
        has_default = (action.option_strings and action.nargs != 0 and not action.required
                       and action.default not in (None, False, argparse.SUPPRESS))
        if has_default:
            shown = fmt._get_help_string(action) % dict(default=action.default)
            assert "default" in shown, f"{name} {action.option_strings}: default {action.default!r} not shown"
    # the formatter really prints it: one option with a default appears with it in the --help text
    text = " ".join(SUBCOMMANDS[name].format_help().split())
    assert "(default:" in text or name in ("latex", "warmup"), name


@pytest.mark.parametrize("argv", [
    ["derive"],
    ["verify", "--list"],
    ["scan", "--activation", "relu", "--d", "6", "--sigma-b", "1", "--attention-scale=-0.5", "--json"],
    ["regime", "--activation", "relu", "--d", "8", "--sigma-b", "1", "--attention-scale=-0.5", "--json"],
])
def test_cheap_examples_run(argv, capsys):
    assert " ".join(["sssn-verify", *argv]).replace("'", "") in " ".join(
        " ".join(_examples(SUBCOMMANDS[argv[0]].format_help())).split()) or argv == ["derive"]
    assert main(argv) == 0
    assert capsys.readouterr().out.strip()


def test_one_spelling_per_concept():
    for name, sub in SUBCOMMANDS.items():
        options = {o: a for a in sub._actions for o in a.option_strings}
        if name not in ("simulate", "latex", "warmup"):
            assert "--json" in options, f"{name} has no --json"
        if "--format" in options:
            assert "json" in options["--format"].choices and "--json" in options
        if "--alpha" in options:            # the family-wise level; sync-time keeps it only as an old alias
            assert name == "verify" or options["--alpha"].option_strings[0] == "--tail-prob", name
        assert "--max-examples" not in options or options["--max-examples"].option_strings[0] == "--explore"
        assert "--confidence" not in options
    for name in ("check", "find", "verify"):
        assert "--explore" in {o for a in SUBCOMMANDS[name]._actions for o in a.option_strings}
    args = build_parser().parse_args(["sync-time", "--eps0", "0.1", "--eps", "0.01", "--alpha", "0.2"])
    assert args.alpha == 0.2                 # the deprecated spelling still works
    args = build_parser().parse_args(["find", "lambda1 < 0", "--max-examples", "7"])
    assert args.max_examples == 7


def test_claim_aliases_everywhere(capsys):
    from sssn_verify.check import checkable
    from sssn_verify.claims import get_claim
    from sssn_verify.verify import _selected
    for alias, name in checkable().items():
        assert get_claim(alias).name == name
    assert _selected("quick", ["lambda1", "lyapunov", "lambda_bar"]) == ["lyapunov", "dissipation"]
    assert main(["verify", "--claim", "nope"]) == 2
    assert "aliases: lambda1 (lyapunov)" in capsys.readouterr().err


def test_derive_lists_what_the_readme_lists(capsys):
    from sssn_verify.symbolic import derivation_names
    row = next(line for line in README.read_text().splitlines() if line.startswith("| `sssn-verify derive"))
    listed = re.search(r"one derivation \(([^)]*)\)", row).group(1)
    assert [n.strip() for n in listed.split(",")] == list(derivation_names())
    assert main(["derive"]) == 0
    assert [line.split()[0] for line in capsys.readouterr().out.strip().splitlines()] == list(derivation_names())
