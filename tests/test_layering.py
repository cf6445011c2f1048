"""The dependency rule of DESIGN.md, checked by parsing every module's imports."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "pflow_structure"
CORE = (
    "paths",
    "encoding",
    "structure",
    "errors",
    "cache",
    "render",
    "filtering",
    "discovery",
    "values",
)
ADAPTERS = (
    "cli",
    "mcp",
    "service",
    "wrapper",
    "integrations",
    "settings",
    "registry",
    "nodes",
)
THIRD_PARTY_HOME = {
    "click": {"cli"},
    "mcp": {"mcp"},
    "litellm": {"filtering"},
    "jsonpath_ng": {"paths.jsonpath"},
    "jsonpath_rfc9535": {"paths.jsonpath"},
    "pocketflow": {"nodes.base", "wrapper"},
    "filelock": {"cache.store"},
    "tiktoken": {"render"},
    "pflow": {"integrations.pflow"},
    "redis": {"cache.redis_store"},
    "orjson": {"encoding.jsonio"},
    "wordllama": {"filtering.embedding"},
    "tomlkit": {"cli.toml_configs"},
}


def _modules() -> list[tuple[str, ast.Module]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        dotted = ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
        found.append((dotted.removesuffix(".__init__"), ast.parse(path.read_text(encoding="utf-8"))))
    return found


def _imports(tree: ast.Module) -> list[tuple[str, int, bool]]:
    """(module imported, line, at top level) for every import statement."""
    top_level = {id(node) for node in tree.body}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.extend((alias.name, node.lineno, id(node) in top_level) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.module, node.lineno, id(node) in top_level))
    return out


def _runtime_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement that can run: top level, in functions (lazy), in try/else; not
    under ``if TYPE_CHECKING:``, which only the type checker reads."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            skipped.update(id(inner) for child in node.body for inner in ast.walk(child))
    return [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) and id(n) not in skipped]


def _import_graph() -> dict[str, set[str]]:
    """Module → the modules of ours it imports. ``from pkg import sub`` points at the submodule
    ``pkg.sub`` when there is one (importing it runs ``pkg/__init__`` first, but as a parent, not
    as a dependency); any other name points at the module that defines it."""
    trees = {("pflow_structure." + name).removesuffix(".__init__"): tree for name, tree in _modules()}
    graph: dict[str, set[str]] = {name: set() for name in trees}
    for name, tree in trees.items():
        package = name if _is_package(name) else name.rpartition(".")[0]
        for node in _runtime_imports(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:  # relative: from . import x, from ..a import b
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in trees else base for a in node.names]
            for target in targets:
                while target and target not in trees:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def _is_package(dotted: str) -> bool:
    relative = dotted.removeprefix("pflow_structure").lstrip(".").replace(".", "/")
    return (PACKAGE / relative / "__init__.py").exists()


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _a_path(graph: dict[str, set[str]], members: list[str]) -> list[str]:
    """One circle through the first member, for the failure message: a -> b -> a."""
    start, inside = members[0], set(members)
    previous: dict[str, str] = {}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for child in sorted(graph[node] & inside):
            if child == start:
                path = [node]
                while path[-1] != start:
                    path.append(previous[path[-1]])
                return [*reversed(path), start]
            if child not in previous:
                previous[child] = node
                queue.append(child)
    return members


def test_no_import_circle_between_modules() -> None:
    """No module reaches itself through imports, lazy ones (inside functions) included: a
    circle makes import order matter and means two modules are one concept, or share a third."""
    graph = _import_graph()
    circles = [" -> ".join(_a_path(graph, members)) for members in _circles(graph)]
    assert circles == []


def test_the_circle_check_finds_a_circle_and_names_it() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert _circles(graph) == [["a", "b", "c"]]
    assert _a_path(graph, ["a", "b", "c"]) == ["a", "b", "c", "a"]
    assert _circles({"a": {"b"}, "b": set()}) == []


def test_the_import_graph_sees_lazy_imports_and_skips_type_checking_ones() -> None:
    graph = _import_graph()
    assert "pflow_structure.mcp.server" in graph["pflow_structure.cli.app"]  # inside the serve command
    assert "pflow_structure.wrapper" not in graph["pflow_structure"]  # under TYPE_CHECKING only
    assert "pflow_structure.cli.cache_commands" in graph["pflow_structure.cli.app"]  # from pkg import sub


def _is_core(module: str) -> bool:
    return module.split(".")[0] in CORE


def _core_modules() -> list[tuple[str, ast.Module]]:
    return [(module, tree) for module, tree in _modules() if _is_core(module)]


def test_the_core_is_the_modules_of_the_core_packages() -> None:
    """The two core tests below run over these modules and no other: one case a module they check."""
    core = [module for module, _ in _core_modules()]
    assert {module.split(".")[0] for module in core} == set(CORE)  # each core package has its modules checked
    assert "filtering.tree" in core and "cli.app" not in core and "service" not in core


@pytest.mark.parametrize(("module", "tree"), _core_modules(), ids=lambda v: v if isinstance(v, str) else "")
def test_core_modules_import_no_adapter_and_no_framework(module: str, tree: ast.Module) -> None:
    for imported, line, _ in _imports(tree):
        parts = imported.split(".")
        assert parts[0] not in ("click", "mcp", "pocketflow", "pflow"), f"{module}:{line} imports {imported}"
        if parts[0] == "pflow_structure" and len(parts) > 1:
            assert parts[1] not in ADAPTERS, f"core module {module}:{line} imports adapter {imported}"


@pytest.mark.parametrize(("module", "tree"), _core_modules(), ids=lambda v: v if isinstance(v, str) else "")
def test_core_modules_never_print_exit_or_read_the_environment(module: str, tree: ast.Module) -> None:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            assert node.func.id not in ("print", "exit", "input"), f"{module}:{node.lineno} calls {node.func.id}"
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            pair = (node.value.id, node.attr)
            assert pair not in {("sys", "exit"), ("os", "environ"), ("os", "getenv"), ("sys", "stdout")}, (
                f"{module}:{node.lineno} uses {pair[0]}.{pair[1]}"
            )


def test_each_third_party_library_lives_behind_one_module() -> None:
    for module, tree in _modules():
        for imported, line, _ in _imports(tree):
            library = imported.split(".")[0]
            homes = THIRD_PARTY_HOME.get(library)
            if homes is None:
                continue
            assert any(module == home or module.startswith(home + ".") for home in homes), (
                f"{module}:{line} imports {library}; only {sorted(homes)} may"
            )


def test_heavy_libraries_are_imported_lazily() -> None:
    for module, tree in _modules():
        for imported, line, top_level in _imports(tree):
            if imported.split(".")[0] in (
                "litellm",
                "mcp",
                "jsonpath_ng",
                "jsonpath_rfc9535",
                "tiktoken",
                "filelock",
                "redis",
                "wordllama",
            ):
                assert not top_level, f"{module}:{line} imports {imported} at module level"


def test_cli_start_up_does_not_load_heavy_or_unneeded_modules() -> None:
    code = (
        "import sys, pflow_structure.cli.app, pflow_structure.service;"
        "print(','.join(sorted(m for m in ('litellm','jsonpath_ng','pocketflow','filelock','tiktoken','asyncio')"
        " if m in sys.modules)))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == ""


def test_the_read_path_does_not_load_click_or_dataclasses() -> None:
    """read-fields is what agents call most: click and dataclasses (which loads inspect) stay out."""
    code = (
        "import sys, pflow_structure.cli.entry, pflow_structure.service, pflow_structure.settings,"
        " pflow_structure.render.fields_text;"
        "print(','.join(sorted(m for m in ('click','dataclasses','inspect','pocketflow','jsonpath_ng')"
        " if m in sys.modules)))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == ""


# -- what a module keeps to itself ---------------------------------------------------------------

BENCHMARKS = PACKAGE.parent / "benchmarks"
MAX_MODULE_LINES = 450


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _absolute(node: ast.ImportFrom, package: str) -> str:
    """The module an ``import from`` names, relative ones resolved against ``package``."""
    if not node.level:
        return node.module or ""
    parts = package.split(".")
    return ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))


def _private_imports(where: str, tree: ast.Module, package: str, modules: set[str]) -> list[str]:
    """``where:LINE imports NAME from MODULE`` for each underscore name a module takes from a module
    of ours (``from m import _x``, a private module ``m._y``, or ``m._x`` on an imported module ``m``).
    ``package``: the importer's package, for relative imports; ``modules``: our dotted modules."""
    found: list[str] = []
    bound: dict[str, str] = {}  # local name -> our module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "pflow_structure":
                    private = [part for part in alias.name.split(".") if _is_private(part)]
                    found += [f"{where}:{node.lineno} imports {name} from {alias.name}" for name in private]
                    # import a.b binds a; import a.b as c binds c to a.b
                    bound[alias.asname or "pflow_structure"] = alias.name if alias.asname else "pflow_structure"
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, package)
            if base.split(".")[0] != "pflow_structure":
                continue
            private = [part for part in base.split(".") if _is_private(part)]
            found += [f"{where}:{node.lineno} imports {name} from {base}" for name in private]
            for alias in node.names:
                if _is_private(alias.name):
                    found.append(f"{where}:{node.lineno} imports {alias.name} from {base}")
                elif f"{base}.{alias.name}" in modules:
                    bound[alias.asname or alias.name] = f"{base}.{alias.name}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _is_private(node.attr):
            module = _dotted(node.value, bound)
            if module in modules:
                found.append(f"{where}:{node.lineno} imports {node.attr} from {module}")
    return found


def _dotted(expr: ast.expr, bound: dict[str, str]) -> str:
    """``store`` or ``pflow_structure.cache.store`` as the dotted module it names ("" if none)."""
    attributes: list[str] = []
    while isinstance(expr, ast.Attribute):
        attributes.insert(0, expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name) or expr.id not in bound:
        return ""
    return ".".join([bound[expr.id], *attributes])


def _checked_for_private_imports() -> list[tuple[str, ast.Module, str]]:
    """(file, tree, package) for every module of the package and every script of benchmarks/."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        dotted = ".".join(("pflow_structure", *path.relative_to(PACKAGE).with_suffix("").parts))
        package = dotted.removesuffix(".__init__") if path.name == "__init__.py" else dotted.rpartition(".")[0]
        found.append(
            (path.relative_to(PACKAGE.parent).as_posix(), ast.parse(path.read_text(encoding="utf-8")), package)
        )
    for path in sorted(BENCHMARKS.glob("*.py")):
        found.append((path.relative_to(PACKAGE.parent).as_posix(), ast.parse(path.read_text(encoding="utf-8")), ""))
    return found


def _our_modules() -> set[str]:
    return {("pflow_structure." + name).removesuffix(".__init__") for name, _ in _modules()}


def test_no_module_imports_another_module_s_underscore_names() -> None:
    """What two modules share has a public name where it belongs; an underscore name stays in its
    module. Checked over the package and benchmarks/ (tests may look inside a module they test)."""
    modules = _our_modules()
    found = [
        line
        for where, tree, package in _checked_for_private_imports()
        for line in _private_imports(where, tree, package, modules)
    ]
    assert found == []


def test_the_private_import_check_names_the_importer_the_line_and_the_name() -> None:
    source = (
        "from pflow_structure.filtering.tree import _nodes, fields_of\n"
        "from .store import _HELD\n"
        "from pflow_structure import _moved\n"
        "from pflow_structure.cache import store\n"
        "import pflow_structure.paths.grammar as grammar\n"
        "import os\n"
        "store._lock, grammar._Wildcard, os._exit, store.__name__, store.x._y\n"
        "from json import _default_decoder\n"
        "import pflow_structure.render.tables\n"
        "pflow_structure.render.tables._quote, pflow_structure.render._other._z\n"
    )
    modules = {
        "pflow_structure",
        "pflow_structure.cache.store",
        "pflow_structure.paths.grammar",
        "pflow_structure.filtering.tree",
        "pflow_structure.render.tables",
    }
    assert _private_imports("x.py", ast.parse(source), "pflow_structure.cache", modules) == [
        "x.py:1 imports _nodes from pflow_structure.filtering.tree",
        "x.py:2 imports _HELD from pflow_structure.cache.store",
        "x.py:3 imports _moved from pflow_structure",
        "x.py:7 imports _lock from pflow_structure.cache.store",
        "x.py:7 imports _Wildcard from pflow_structure.paths.grammar",
        "x.py:10 imports _quote from pflow_structure.render.tables",
    ]


def test_the_private_import_check_reads_the_package_and_the_benchmarks() -> None:
    files = [where for where, _, _ in _checked_for_private_imports()]
    assert "pflow_structure/filtering/heuristic.py" in files and "benchmarks/filter_learn.py" in files
    assert len(files) == len(list(PACKAGE.rglob("*.py"))) + len(list(BENCHMARKS.glob("*.py")))


def test_no_code_module_is_over_450_lines() -> None:
    """Split by concept before a module gets this long (STYLE.md: most modules under 400)."""
    sizes = {
        path.relative_to(PACKAGE.parent).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in PACKAGE.rglob("*.py")
    }
    assert sorted(f"{name}: {lines} lines" for name, lines in sizes.items() if lines > MAX_MODULE_LINES) == []
