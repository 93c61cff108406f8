"""pipeline/ has no import circles and no upward imports between layers (CONTRIBUTING.md, "Layers").

The module graph is read with ``ast``, not by importing: every ``import`` / ``from ... import``
statement counts, including those inside functions (a lazy import is still a dependency), and so does
``importlib.import_module("...")`` with a literal name.
"""

from __future__ import annotations

import ast
from collections.abc import Collection
from pathlib import Path

PIPELINE = Path(__file__).resolve().parents[1] / "pipeline"

# Bottom to top. A unit is a folder of pipeline/ or a top-level module (``pipeline`` is the package's
# own __init__, the public API). A module may import its own unit and units of lower layers only;
# units that share a layer may not import each other.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "oserrors", "codec", "arrays", "libc", "bundled", "compression"),
    ("storage",),
    ("schema",),
    ("losses",),
    ("fingerprint",),
    ("formats",),
    ("sources",),
    ("transforms",),
    ("encoders",),
    ("io", "catalog"),
    ("jobs",),
    ("engine",),
    ("audit", "sinks"),
    ("synth",),
    ("cli",),
    ("__main__", "pipeline"),
)

# Modules whose imports are not checked: none, and nothing may be added here (the last one, the old
# `chatlake transform` runner, went with the move of `transform` onto the engine).
ALLOWED: frozenset[str] = frozenset()

Graph = dict[str, dict[str, int]]  # module -> {imported module: line of the first such import}


def module_names(root: Path) -> dict[str, Path]:
    """Dotted name -> file for every module of the package at ``root`` (``pkg/__init__.py`` is ``pkg``)."""
    names = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


def _imported_names(node: ast.AST, package: str, modules: Collection[str]) -> list[str]:
    """The dotted names one AST node imports (``package`` resolves relative imports); [] for others."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            base = f"{anchor}.{base}" if base else anchor
        # `from pkg import name` imports the module pkg.name when there is one, else a name of pkg
        return [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
    if (
        isinstance(node, ast.Call)
        and (getattr(node.func, "attr", None) or getattr(node.func, "id", None)) == "import_module"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        return [node.args[0].value]
    return []


def compiled_modules(root: Path) -> set[str]:
    """Compiled extensions of the package at ``root``: a folder of C sources without ``__init__.py``
    (``pipeline/_native``; the built ``.so`` sits beside it). They import nothing of ours."""
    return {
        ".".join(d.relative_to(root.parent).parts)
        for d in root.rglob("*")
        if d.is_dir() and not (d / "__init__.py").exists() and any(d.glob("*.c"))
    }


def module_graph(root: Path) -> Graph:
    """The import graph among the modules of the package at ``root``; imports from outside are dropped."""
    names = module_names(root)
    compiled = compiled_modules(root)
    graph: Graph = {}
    for name, path in names.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: dict[str, int] = {}
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            for imported in _imported_names(node, package, names.keys() | compiled):
                target = imported
                if target in compiled:
                    continue
                while target and target not in names:  # `import a.b.c` where c is a name in a.b
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges[target] = min(edges.get(target, node.lineno), node.lineno)
        graph[name] = edges
    return graph


def import_circles(graph: Graph) -> list[list[str]]:
    """Every strongly connected component of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(circles)


def unit_of(module: str) -> str:
    """The layer unit of a dotted module name: its folder under the package, or the module itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def upward_imports(graph: Graph, layers: tuple[tuple[str, ...], ...]) -> list[str]:
    """Every import of a unit that is not lower than the importer's, as 'a (line n) -> b'."""
    rank = {unit: i for i, layer in enumerate(layers) for unit in layer}
    found = []
    for module, edges in sorted(graph.items()):
        for target, line in sorted(edges.items()):
            src, dst = unit_of(module), unit_of(target)
            if src != dst and rank[dst] >= rank[src]:
                found.append(f"{module} (line {line}) -> {target}")
    return found


def _checked(graph: Graph) -> Graph:
    return {m: edges for m, edges in graph.items() if m not in ALLOWED}


def test_every_unit_of_pipeline_has_a_layer() -> None:
    layered = {unit for layer in LAYERS for unit in layer}
    units = {unit_of(m) for m in module_names(PIPELINE)}
    assert not units - layered, f"add {sorted(units - layered)} to LAYERS (and CONTRIBUTING.md)"
    assert not layered - units, f"LAYERS names units that do not exist: {sorted(layered - units)}"


def test_no_import_circles() -> None:
    circles = import_circles(_checked(module_graph(PIPELINE)))
    assert not circles, "import circles (move the shared code down): " + "; ".join(map(" <-> ".join, circles))


def test_no_upward_imports() -> None:
    found = upward_imports(_checked(module_graph(PIPELINE)), LAYERS)
    assert not found, "imports of a higher or same-layer unit:\n" + "\n".join(found)


def test_allowlist_names_existing_modules() -> None:
    # Once transforms/job.py is deleted its entry must go too, so the exception cannot outlive it.
    gone = ALLOWED - set(module_names(PIPELINE))
    assert not gone, f"remove {sorted(gone)} from ALLOWED: the module no longer exists"


def test_checker_finds_lazy_relative_and_importlib_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "low").mkdir(parents=True)
    (pkg / "high").mkdir()
    files = {
        "__init__.py": "",
        "low/__init__.py": "X = 1\n",
        "low/a.py": "def f():\n    from pkg.high import b  # lazy\n    return b\n",
        "low/c.py": "from . import a\nimport os\n",
        "high/__init__.py": "import importlib\nimportlib.import_module('pkg.low.c')\n",
        "high/b.py": "import pkg.low.a\nfrom ..low.c import a as x\nfrom pkg.low import X, c\n",
    }
    for rel, text in files.items():
        (pkg / rel).write_text(text)
    graph = module_graph(pkg)
    assert graph == {
        "pkg": {},
        "pkg.low": {},
        "pkg.low.a": {"pkg.high.b": 2},
        "pkg.low.c": {"pkg.low.a": 1},
        "pkg.high": {"pkg.low.c": 2},
        "pkg.high.b": {"pkg.low.a": 1, "pkg.low.c": 2, "pkg.low": 3},
    }
    assert import_circles(graph) == [["pkg.high.b", "pkg.low.a", "pkg.low.c"]]
    layers = (("low",), ("high",), ("pkg",))
    assert upward_imports(graph, layers) == ["pkg.low.a (line 2) -> pkg.high.b"]
    assert upward_imports(graph, (("low", "high"), ("pkg",))) == [
        "pkg.high (line 2) -> pkg.low.c",
        "pkg.high.b (line 3) -> pkg.low",
        "pkg.high.b (line 1) -> pkg.low.a",
        "pkg.high.b (line 2) -> pkg.low.c",
        "pkg.low.a (line 2) -> pkg.high.b",
    ]


def test_checker_finds_a_circle_of_three_and_ignores_a_chain() -> None:
    ring = {"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}
    assert import_circles(ring) == [["a", "b", "c"]]
    assert import_circles({"a": {"b": 1}, "b": {"c": 1}, "c": {}}) == []
