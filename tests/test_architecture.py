"""The package's shape (issue 20, deliverable 4): no import cycle, no claim importing another claim.

The import graph is built from the source with ``ast`` (every ``import`` and ``from ... import``,
at module level and inside functions), so a cycle hidden in a function-level import counts too.
An edge also goes to every parent package of the imported module (importing ``a.b.c`` runs
``a/__init__.py`` and ``a/b/__init__.py``).
"""
from __future__ import annotations

import ast
from pathlib import Path

import sssn_verify

ROOT = Path(sssn_verify.__file__).resolve().parent
PACKAGE = ROOT.name


def _name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in ROOT.rglob("*.py")}


def imports(module: str, source: str) -> set[str]:
    """The package's modules that `module` (with text `source`) imports, anywhere in its body."""
    pkg = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - (node.level - 1)]
                base = ".".join(base + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in MODULES:         # sssn_verify.x.function -> sssn_verify.x
                t = t.rpartition(".")[0]
            while t:                              # the module and the packages it runs
                if t != module and not module.startswith(t + "."):
                    found.add(t)
                t = t.rpartition(".")[0]
    return found


GRAPH = {m: imports(m, p.read_text(encoding="utf-8")) for m, p in MODULES.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_the_graph_sees_the_package():
    assert f"{PACKAGE}.report" in GRAPH[f"{PACKAGE}.cli.verify"]            # function-level import
    assert f"{PACKAGE}.stats" in GRAPH[f"{PACKAGE}.claims._util"]           # relative, two dots
    assert f"{PACKAGE}.numeric" in GRAPH[f"{PACKAGE}.claims.lyapunov"]      # parent package of an import
    assert len(GRAPH) > 60


def test_the_cycle_finder_finds_cycles():
    """An independent small case: the old explore <-> report circle, and a longer one."""
    g = {"a": {"b"}, "b": {"a", "c"}, "c": set(), "x": {"y"}, "y": {"z"}, "z": {"x"}, "w": {"w2"}, "w2": set()}
    assert sorted(cycles(g)) == [["a", "b"], ["x", "y", "z"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_import_graph_is_acyclic():
    assert cycles(GRAPH) == []


def test_no_claim_imports_another_claim():
    from sssn_verify.claims import CLAIM_MODULES
    claims = {f"{PACKAGE}.claims.{m}" for m in CLAIM_MODULES}
    assert claims <= set(MODULES)
    bad = {m: sorted(GRAPH[m] & claims) for m in sorted(claims) if GRAPH[m] & claims}
    assert bad == {}


MOVED_TO_DOCS = {"numeric.fields": "Fields", "numeric.kernels": "Kernels", "numeric.driver": "The driver and the model interface",
                 "numeric.rates": "Rates", "numeric.layer_rates": "Layer rates", "numeric.models.coupled": "The width coupling",
                 "numeric.models.sde": "The limiting SDE", "explore": "Search", "stats": "Statistics"}


def test_long_module_docstrings_live_in_docs():
    """Issue 20.5: these modules keep a summary of at most 15 lines; the long form is a section of
    docs/numerics.md that the summary names."""
    numerics = (ROOT.parent / "docs" / "numerics.md").read_text(encoding="utf-8")
    for module, section in MOVED_TO_DOCS.items():
        doc = ast.get_docstring(ast.parse(MODULES[f"{PACKAGE}.{module}"].read_text(encoding="utf-8")), clean=False)
        assert len(doc.splitlines()) <= 15, module
        assert "docs/numerics.md" in doc and f"\n## {section}\n" in numerics, module


def test_every_module_docstring_stays_short_and_its_long_form_is_in_docs():
    """Issue 20.5, for the whole package: a module docstring is a summary of about 15 lines (at most
    18); a module whose note was longer points to its section of docs/modules.md, which exists."""
    modules = (ROOT.parent / "docs" / "modules.md").read_text(encoding="utf-8")
    for name, path in MODULES.items():
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")), clean=False) or ""
        assert len(doc.splitlines()) <= 18, (name, len(doc.splitlines()))
        if "docs/modules.md" in doc:
            assert f"``{name}``" in doc and f"\n## `{name}`\n" in modules, name
