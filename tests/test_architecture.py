"""The shape of the house (docs/architecture.md): no import circles in optlang/, no private names taken
across modules, one backends/ wing per problem kind, and no test or benchmark code inside the library."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

from optlang.backends import registry

PKG = Path(__file__).resolve().parents[1] / "optlang"
# every circle fails (compare ↔ bench ↔ report was split into statistics / orchestration / rendering)
KNOWN_CIRCLES: list[set[str]] = [
]


def _modules() -> dict[str, Path]:
    mods = {}
    for p in PKG.rglob("*.py"):
        parts = list(p.relative_to(PKG.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = p
    return mods


def _imports(mods: dict[str, Path]):
    """(importer, imported module, names) for every import in optlang/, lazy and TYPE_CHECKING ones too."""
    for m, p in mods.items():
        pkg = m if p.name == "__init__.py" else m.rsplit(".", 1)[0]
        for n in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(n, ast.Import):
                for a in n.names:
                    yield m, a.name, ()
            elif isinstance(n, ast.ImportFrom):
                base = n.module or ""
                if n.level:
                    b = pkg.split(".")[: len(pkg.split(".")) - n.level + 1]
                    base = ".".join(b + ([n.module] if n.module else []))
                for a in n.names:
                    sub = f"{base}.{a.name}"
                    yield (m, sub, ()) if sub in mods else (m, base, (a.name,))


def _graph() -> nx.DiGraph:
    mods = _modules()
    g = nx.DiGraph()
    g.add_nodes_from(mods)
    for m, target, _ in _imports(mods):
        while target and target not in mods:
            target = target.rsplit(".", 1)[0] if "." in target else ""
        if target and target != m:
            g.add_edge(m, target)
    return g


def test_no_import_circles() -> None:
    circles = [c for c in nx.strongly_connected_components(_graph()) if len(c) > 1]
    assert [sorted(c) for c in circles if c not in KNOWN_CIRCLES] == []


def test_the_graph_sees_a_circle() -> None:
    """The check above is not vacuous: verify and latex once imported api, which imports verify."""
    g = _graph()
    assert g.has_edge("optlang.api", "optlang.verify")
    g.add_edge("optlang.verify", "optlang.api")
    assert any("optlang.verify" in c and len(c) > 1 for c in nx.strongly_connected_components(g))


def test_no_private_names_across_modules() -> None:
    bad = [
        f"{m} imports {name} from {target}"
        for m, target, names in _imports(_modules())
        if target.startswith("optlang")
        for name in names
        if name.startswith("_") and name != "__version__"
    ]
    assert bad == []


def test_the_library_imports_no_tests_benchmarks_or_scripts() -> None:
    bad = [(m, t) for m, t, _ in _imports(_modules()) if t.split(".")[0] in ("tests", "benchmarks", "scripts")]
    assert bad == []


def test_each_backend_lives_in_a_wing_of_a_kind_it_solves() -> None:
    for name, (target, _) in registry.BACKENDS.items():
        parts = target.split(":")[0].split(".")
        assert parts[:2] == ["optlang", "backends"] and len(parts) >= 4, f"{name}: {target} is not in a wing"
        wing = parts[2]
        assert wing in registry.get(name).kinds, f"{name} sits in backends/{wing} but solves {registry.get(name).kinds}"


def test_result_and_status_sit_below_the_backends() -> None:
    g = _graph()
    assert not any(t.startswith("optlang.backends") for t in g.successors("optlang.result"))
    assert not any(t == "optlang.api" for t in g.successors("optlang.verify"))
    assert not any(t == "optlang.api" for t in g.successors("optlang.latex"))


def test_kinds_wings_and_registry_agree() -> None:
    """problem.KINDS is the one list of kinds: each has a wing, every backend solves only listed kinds,
    and the registry's kind strings (read without importing) match the classes'."""
    from optlang.problem import KINDS

    wings = {p.name for p in (PKG / "backends").iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert set(KINDS) <= wings, f"kinds without a backends/ wing: {set(KINDS) - wings}"
    for name in registry.BACKENDS:
        assert registry.get(name).kinds <= set(KINDS), name
    for kind in KINDS:
        assert any(kind in registry.get(n).kinds for n in registry.BACKENDS), f"no backend solves {kind}"


def test_every_model_classifies_into_a_listed_kind() -> None:
    import optlang
    from optlang.problem import KINDS

    for path in sorted((PKG.parent / "models").glob("*.opt")):
        assert optlang.load(str(path)).kind in KINDS, path.name
