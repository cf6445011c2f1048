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
    "field_stats",
    "errors",
    "cache",
    "render",
    "filtering",
    "discovery",
    "failure_log",
    "jsontext",
)
ADAPTERS = (
    "cli",
    "cli_fast",
    "mcp",
    "service",
    "service_discovery",
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
            if imported.split(".")[0] in ("litellm", "mcp", "jsonpath_ng", "tiktoken", "filelock"):
                assert not top_level, f"{module}:{line} imports {imported} at module level"


def test_cli_start_up_does_not_load_heavy_or_unneeded_modules() -> None:
    code = (
        "import sys, pflow_structure.cli, pflow_structure.service;"
        "print(','.join(sorted(m for m in ('litellm','jsonpath_ng','pocketflow','filelock','tiktoken','asyncio')"
        " if m in sys.modules)))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == ""


def test_the_read_path_does_not_load_click_or_dataclasses() -> None:
    """read-fields is what agents call most: click and dataclasses (which loads inspect) stay out."""
    code = (
        "import sys, pflow_structure.cli_fast, pflow_structure.service, pflow_structure.settings,"
        " pflow_structure.render.fields_text;"
        "print(','.join(sorted(m for m in ('click','dataclasses','inspect','pocketflow','jsonpath_ng')"
        " if m in sys.modules)))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == ""
