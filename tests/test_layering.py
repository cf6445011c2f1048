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
    "jsonpath_ng": {"paths"},
    "pocketflow": {"nodes.base", "wrapper"},
    "filelock": {"cache.store"},
    "tiktoken": {"render"},
    "pflow": {"integrations.pflow"},
    "redis": {"cache.redis_store"},
    "wordllama": {"filtering.embedding"},
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


@pytest.mark.parametrize(("module", "tree"), _modules(), ids=lambda v: v if isinstance(v, str) else "")
def test_core_modules_import_no_adapter_and_no_framework(module: str, tree: ast.Module) -> None:
    if not _is_core(module):
        return
    for imported, line, _ in _imports(tree):
        parts = imported.split(".")
        assert parts[0] not in ("click", "mcp", "pocketflow", "pflow"), f"{module}:{line} imports {imported}"
        if parts[0] == "pflow_structure" and len(parts) > 1:
            assert parts[1] not in ADAPTERS, f"core module {module}:{line} imports adapter {imported}"


@pytest.mark.parametrize(("module", "tree"), _modules(), ids=lambda v: v if isinstance(v, str) else "")
def test_core_modules_never_print_exit_or_read_the_environment(module: str, tree: ast.Module) -> None:
    if not _is_core(module):
        return
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
