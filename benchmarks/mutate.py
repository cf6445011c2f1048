"""A small mutation run: plant one bug at a time in a module and see whether its own tests notice.

    python benchmarks/mutate.py --module pflow_structure/cache/ids.py --tests tests/test_cache.py tests/test_security.py

Works on a copy of the repository in a temporary directory (the checkout is never touched), so it
can run beside other work. Each mutant changes one node of the module's syntax tree: a comparison
(``<`` ↔ ``<=``, ``==`` ↔ ``!=``, ``in`` ↔ ``not in``, ``is`` ↔ ``is not``), an arithmetic operator
(``+`` ↔ ``-``, ``*`` → ``//``), ``and`` ↔ ``or``, a dropped ``not``, an integer ``n`` → ``n + 1``,
``True`` ↔ ``False``, or a ``return x`` → ``return None``. The module is written back with
``ast.unparse`` (the unmutated unparse must pass first). A mutant is killed when the tests fail
(``pytest -x``) or time out. ``--sample N`` takes N mutants spread evenly over the module; the
default is all. Prints one line per survivor and the score; not part of CI (minutes per module).
"""

from __future__ import annotations

import argparse
import ast
import copy
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SWAPS: dict[type, type] = {
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq,
    ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
    ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.FloorDiv, ast.And: ast.Or, ast.Or: ast.And,
}  # fmt: skip


def _sites(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """(index of the node in ast.walk order, what the mutation does) for every mutable node."""
    for index, node in enumerate(ast.walk(tree)):
        if isinstance(node, ast.Compare) and type(node.ops[0]) in SWAPS:
            yield index, f"{type(node.ops[0]).__name__} -> {SWAPS[type(node.ops[0])].__name__}"
        elif isinstance(node, (ast.BinOp, ast.BoolOp)) and type(node.op) in SWAPS:
            yield index, f"{type(node.op).__name__} -> {SWAPS[type(node.op)].__name__}"
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            yield index, "drop not"
        elif isinstance(node, ast.Constant) and type(node.value) in (int, bool):
            yield index, f"{node.value!r} -> {(not node.value) if isinstance(node.value, bool) else node.value + 1!r}"
        elif isinstance(node, ast.Return) and node.value is not None and not _is_none(node.value):
            yield index, "return None"


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _mutant(tree: ast.Module, index: int) -> ast.Module:
    mutated = copy.deepcopy(tree)
    node = list(ast.walk(mutated))[index]
    if isinstance(node, ast.Compare):
        node.ops[0] = SWAPS[type(node.ops[0])]()
    elif isinstance(node, (ast.BinOp, ast.BoolOp)):
        node.op = SWAPS[type(node.op)]()  # type: ignore[assignment]
    elif isinstance(node, ast.UnaryOp):
        mutated = ast.fix_missing_locations(_DropNot(index).visit(mutated))  # `x` where `not x` was
    elif isinstance(node, ast.Constant):
        node.value = (not node.value) if isinstance(node.value, bool) else node.value + 1
    elif isinstance(node, ast.Return):
        node.value = ast.Constant(None)
    return mutated


class _DropNot(ast.NodeTransformer):
    """Replace the ``not x`` at walk index ``index`` by ``x`` (its operand)."""

    def __init__(self, index: int) -> None:
        self.target: ast.AST | None = None
        self.index = index

    def visit(self, node: ast.AST) -> ast.AST:
        if self.target is None:
            self.target = list(ast.walk(node))[self.index]
        return super().visit(node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        return node.operand if node is self.target else node


def _run_tests(copy_root: Path, tests: list[str], timeout: float) -> bool:
    """True when the tests pass (the mutant survived)."""
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *tests]
    try:
        done = subprocess.run(command, cwd=copy_root, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return False
    return done.returncode == 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--module", action="append", required=True, help="a module to mutate (repeatable)")
    parser.add_argument("--tests", nargs="+", required=True, help="the test files that should catch the mutants")
    parser.add_argument("--sample", type=int, default=0, help="at most N mutants per module, spread evenly")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per test run (a hang kills)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="pflow-structure-mutate-") as work:
        root = Path(work) / "repo"
        shutil.copytree(REPO, root, ignore=shutil.ignore_patterns(".venv*", ".git", ".npm-servers", "__pycache__"))
        (root / ".npm-servers").symlink_to(REPO / ".npm-servers")
        killed = total = 0
        for module in args.module:
            target = root / module
            original = target.read_text(encoding="utf-8")
            tree = ast.parse(original)
            target.write_text(ast.unparse(tree), encoding="utf-8")
            if not _run_tests(root, args.tests, args.timeout):
                print(f"{module}: the tests fail on the unmutated (unparsed) module; fix that first")
                return 1
            sites = list(_sites(tree))
            if args.sample and len(sites) > args.sample:
                sites = [sites[i * len(sites) // args.sample] for i in range(args.sample)]
            module_killed = 0
            for index, what in sites:
                target.write_text(ast.unparse(_mutant(tree, index)), encoding="utf-8")
                if _run_tests(root, args.tests, args.timeout):
                    line = getattr(list(ast.walk(tree))[index], "lineno", "?")
                    print(f"survived  {module}:{line}  {what}", flush=True)
                else:
                    module_killed += 1
            target.write_text(original, encoding="utf-8")
            print(f"{module}: {module_killed}/{len(sites)} killed", flush=True)
            killed, total = killed + module_killed, total + len(sites)
        print(f"total: {killed}/{total} killed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
