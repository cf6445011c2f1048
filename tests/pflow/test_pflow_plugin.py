"""The pflow plugin against a real pflow-cli 0.8 to 0.10 (see conftest.py for how CI provides it)."""

from __future__ import annotations

import copy
import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.pflow.conftest import require_pflow_line

require_pflow_line("v08")

from pflow_structure.integrations import pflow as plugin  # noqa: E402
from pflow_structure.wrapper import CachedOutputs, StructureOnlyNodeWrapper  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
ISSUES = EXAMPLES / "data" / "github_issues.json"
WORKFLOW_MD = EXAMPLES / "pflow" / "issue_titles.pflow.md"
WORKFLOW_IR = EXAMPLES / "pflow" / "issue_titles.json"
FIRST_LINE = "Different results from Betamax vs Requests | workflow | hroncok"


def _ir(structure_only: bool = True) -> dict[str, Any]:
    ir: dict[str, Any] = json.loads(WORKFLOW_IR.read_text(encoding="utf-8"))
    if not structure_only:
        for node in ir["nodes"]:
            node["params"].pop("structure_only", None)
    return ir


def _compile(ir: dict[str, Any], **params: Any) -> Any:
    from pflow.registry import Registry
    from pflow.runtime.compiler import compile_ir_to_flow

    return compile_ir_to_flow(ir, registry=Registry(), initial_params=params)


def _run_ir(ir: dict[str, Any], **params: Any) -> tuple[Any, dict[str, Any]]:
    shared: dict[str, Any] = {}
    action = _compile(ir, **params).run(shared)
    return action, shared


def _entries(cache_dir: Path) -> list[Path]:
    return sorted(cache_dir.glob("exec-*.json")) if cache_dir.exists() else []


def _cli(*args: str, executable: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "PYTHONIOENCODING": "utf-8"}
    return subprocess.run(
        [executable, *args], capture_output=True, text=True, env=env, timeout=300, cwd=cwd or REPO, check=False
    )


# -- version check and install/uninstall ------------------------------------------------------


def test_the_installed_release_is_supported() -> None:
    version = plugin.check_version()
    assert version.startswith(("0.8.", "0.9.", "0.10."))


def test_uninstall_restores_every_original_function() -> None:
    import pflow.core.execution_cache as execution_cache
    import pflow.runtime.compiler as compiler
    from pflow.runtime.template_resolver import TemplateResolver

    before = (compiler._create_single_node, TemplateResolver.__dict__["resolve_value"], execution_cache.ExecutionCache)
    plugin.install()
    assert plugin.installed()
    assert compiler._create_single_node is not before[0]
    assert execution_cache.ExecutionCache is not before[2]
    plugin.install()  # a second install patches nothing twice
    plugin.uninstall()
    assert not plugin.installed()
    after = (compiler._create_single_node, TemplateResolver.__dict__["resolve_value"], execution_cache.ExecutionCache)
    assert after == before


# -- workflows: same results, values served from the cache ------------------------------------


def test_a_structure_only_workflow_gives_the_same_shared_values_and_action_as_without(isolated_cache: Path) -> None:
    plain_action, plain = _run_ir(_ir(structure_only=False), issues_file=str(ISSUES))
    plugin.install()
    action, shared = _run_ir(_ir(), issues_file=str(ISSUES))
    assert action == plain_action
    assert shared["first"]["stdout"].strip() == FIRST_LINE
    assert shared["first"]["stdout"] == plain["first"]["stdout"]
    assert shared["count"]["result"] == plain["count"]["result"] == "100 issues (exit code 0)"
    view = shared["load"]
    assert isinstance(view, CachedOutputs)
    assert view["stdout"] == plain["load"]["stdout"]  # read through the view
    assert view["exit_code"] == 0
    assert view["_execution_id"] == _entries(isolated_cache)[0].stem
    assert view["_structure"]["stdout"]["json"] == "list"


def test_downstream_templates_are_resolved_with_read_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    from pflow_structure import service

    asked: list[str] = []
    real = service.read_fields_detailed

    def counting(execution_id: str, paths: list[str], **kwargs: Any) -> Any:
        asked.extend(paths)
        return real(execution_id, paths, **kwargs)

    monkeypatch.setattr(service, "read_fields_detailed", counting)
    plugin.install()
    _run_ir(_ir(), issues_file=str(ISSUES))
    # each template read once (pflow asks "does it exist?" and then "what is it?": one read)
    assert sorted(asked) == ["stdout", "stdout[0].title", "stdout[1].user.login", "stdout[2].labels[0].name"]


def test_the_cache_holds_the_execution_as_a_private_file(isolated_cache: Path) -> None:
    plugin.install()
    _run_ir(_ir(), issues_file=str(ISSUES))
    (entry,) = _entries(isolated_cache)
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600
    assert stat.S_IMODE(isolated_cache.stat().st_mode) == 0o700
    stored = json.loads(entry.read_text(encoding="utf-8"))
    assert stored["node_type"] == "shell"
    assert "structure_only" not in stored["params"]
    assert stored["outputs"]["stdout"] == ISSUES.read_text(encoding="utf-8")


def test_only_the_flagged_node_is_cached_and_the_flag_never_reaches_the_node(isolated_cache: Path) -> None:
    plugin.install()
    flow_nodes = _compile(_ir(), issues_file=str(ISSUES))
    _, shared = _run_ir(_ir(), issues_file=str(ISSUES))
    assert len(_entries(isolated_cache)) == 1
    assert not isinstance(shared["first"], CachedOutputs)
    chain = _chain(flow_nodes.start_node)
    assert [type(n).__name__ for n in chain] == [
        "InstrumentedNodeWrapper",
        "StructureOnlyNodeWrapper",
        "NamespacedNodeWrapper",
        "TemplateAwareNodeWrapper",
        "ShellNode",
    ]
    assert chain[3].static_params == {}
    assert chain[4].params == {}


def _chain(node: Any) -> list[Any]:
    """The wrapper chain from the outside in, as pflow's instrumented wrapper walks it."""
    found = [node]
    while "inner_node" in vars(found[-1]) or "_inner_node" in vars(found[-1]):
        found.append(vars(found[-1]).get("inner_node") or vars(found[-1])["_inner_node"])
    return found


def test_the_pflow_command_runs_a_workflow_file_with_the_same_outputs(
    tmp_path: Path, isolated_cache: Path, pflow_executable: str, pflow_structure_executable: str
) -> None:
    plain = tmp_path / "plain.pflow.md"
    plain.write_text(WORKFLOW_MD.read_text(encoding="utf-8").replace("- structure_only: true\n", ""), "utf-8")
    args = ["--output-format", "json"]
    without = _cli(*args, str(plain), f"issues_file={ISSUES}", executable=pflow_executable)
    with_flag = _cli("pflow", *args, str(WORKFLOW_MD), f"issues_file={ISSUES}", executable=pflow_structure_executable)
    assert without.returncode == 0, without.stderr
    assert with_flag.returncode == 0, with_flag.stderr
    outputs = json.loads(with_flag.stdout)
    assert outputs["result"] == json.loads(without.stdout)["result"]
    assert outputs["result"]["first_line"].strip() == FIRST_LINE
    assert outputs["result"]["total"] == "100 issues (exit code 0)"
    (entry,) = _entries(isolated_cache)
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600


def test_the_debug_trace_records_the_execution_id_not_the_values(tmp_path: Path, pflow_home: Path) -> None:
    from pflow.runtime.workflow_trace import WorkflowTraceCollector

    plugin.install()
    from pflow.registry import Registry
    from pflow.runtime.compiler import compile_ir_to_flow

    trace = WorkflowTraceCollector("issue-titles")
    flow = compile_ir_to_flow(
        _ir(), registry=Registry(), initial_params={"issues_file": str(ISSUES)}, trace_collector=trace
    )
    shared: dict[str, Any] = {}
    flow.run(shared)
    written = json.dumps(trace.events, default=str)
    execution_id = shared["load"]["_execution_id"]
    assert f"template paths in execution {execution_id}>" in written
    last_title = json.loads(ISSUES.read_text(encoding="utf-8"))[-1]["title"]
    assert last_title not in written
    assert len(written) < 50_000  # the loaded file alone is 472,922 characters


def test_a_batch_node_is_cached_once_with_every_item_result(isolated_cache: Path) -> None:
    ir = {
        "ir_version": "0.1.0",
        "nodes": [
            {
                "id": "echo",
                "type": "shell",
                "batch": {"items": ["alpha", "beta", "gamma"], "as": "word", "parallel": True},
                "params": {"command": "echo ${word}", "structure_only": True},
            },
            {"id": "pick", "type": "shell", "params": {"command": "cat", "stdin": "${echo.results[1].stdout}"}},
        ],
        "edges": [{"from": "echo", "to": "pick"}],
    }
    _, plain = _run_ir(json.loads(json.dumps(ir).replace(', "structure_only": true', "")))
    plugin.install()
    _, shared = _run_ir(ir)
    assert shared["pick"]["stdout"] == plain["pick"]["stdout"] == "beta"
    view = shared["echo"]
    assert isinstance(view, CachedOutputs)
    assert view["results"] == plain["echo"]["results"]
    assert [r["stdout"].strip() for r in view["results"]] == ["alpha", "beta", "gamma"]
    assert view["count"] == 3
    assert len(_entries(isolated_cache)) == 1


def test_a_structure_only_value_other_than_true_or_false_is_a_compilation_error() -> None:
    from pflow.runtime.compiler import CompilationError

    ir = _ir()
    ir["nodes"][0]["params"]["structure_only"] = "sometimes"
    plugin.install()
    with pytest.raises(CompilationError) as caught:
        _compile(ir, issues_file=str(ISSUES))
    assert "structure_only param of node 'load' must be true or false, not 'sometimes'" in str(caught.value)


def test_structure_only_without_namespacing_is_a_compilation_error() -> None:
    from pflow.runtime.compiler import CompilationError

    ir = _ir()
    ir["nodes"], ir["edges"], ir["outputs"] = ir["nodes"][:1], [], {}
    ir["enable_namespacing"] = False
    plugin.install()
    with pytest.raises(CompilationError) as caught:
        _compile(ir, issues_file=str(ISSUES))
    assert "structure_only on node 'load' needs namespacing" in str(caught.value)


def test_read_fields_reads_keys_the_way_pflow_writes_them() -> None:
    from pflow.mcp_server.services.field_service import FieldService

    plugin.install()
    from pflow.core.execution_cache import ExecutionCache

    cache = ExecutionCache()
    execution_id = cache.generate_execution_id()
    cache.store(execution_id, "shell", {}, {"stdout": {"9lives": 1, "k": {"0": "zero"}, "a b": 2}})
    text = FieldService.read_fields(execution_id, ["stdout.9lives", "stdout.k.0", "stdout.a b"])
    assert text.splitlines() == ["stdout.9lives: 1", "stdout.k.0: zero", "stdout.a b: 2"]


NO_PARAM_CHECK = "this pflow release has no unknown-param check (0.10 added it): pip install pflow-cli==0.10.0 'mcp<2'"


def test_pflow_does_not_warn_that_structure_only_is_an_unknown_parameter() -> None:
    validator = pytest.importorskip(
        "pflow.core.workflow.validator",
        reason=NO_PARAM_CHECK,
    )
    check = getattr(validator.WorkflowValidator, "_validate_unknown_params", None)
    if check is None:
        pytest.skip(
            "this pflow release has no unknown-param check (0.10 added it): pip install pflow-cli==0.10.0 'mcp<2'"
        )
    from pflow.registry import Registry

    plugin.install()
    warnings = check(_ir(), Registry())
    assert not [w for w in warnings if "structure_only" in str(w)]


# -- pflow's wrapper-chain contract ------------------------------------------------------------


def test_the_instrumented_wrapper_finds_the_inner_node_through_ours() -> None:
    plugin.install()
    outer = _compile(_ir(), issues_file=str(ISSUES)).start_node
    assert type(outer).__name__ == "InstrumentedNodeWrapper"
    assert isinstance(outer.inner_node, StructureOnlyNodeWrapper)
    assert outer._get_actual_node_class().__name__ == "ShellNode"
    assert outer._get_node_param("structure_only") is None  # pflow reads params through the chain
    assert outer._compute_node_config()  # walks the chain for its config hash


@pytest.mark.parametrize("copier", [copy.copy, copy.deepcopy], ids=["copy", "deepcopy"])
def test_copies_of_the_chain_keep_our_wrapper(copier: Any) -> None:
    plugin.install()
    outer = _compile(_ir(), issues_file=str(ISSUES)).start_node
    clone = copier(outer)
    assert isinstance(clone.inner_node, StructureOnlyNodeWrapper)
    assert clone.inner_node is not outer.inner_node
    assert clone.inner_node.node_id == "load"
    assert type(clone.inner_node.inner_node).__name__ == "NamespacedNodeWrapper"
    assert clone.successors["default"] is not None


# -- registry run and read-fields --------------------------------------------------------------


def test_registry_run_prints_our_structure_and_read_fields_reads_it(
    isolated_cache: Path, pflow_structure_executable: str
) -> None:
    command = f"command=cat {ISSUES}"
    ran = _cli("pflow", "registry", "run", "shell", command, executable=pflow_structure_executable)
    assert ran.returncode == 0, ran.stderr
    assert "  ✓ ${stdout} (str, ~472892 chars, JSON list, 100 items)\n" in ran.stdout
    assert "  ✓ ${stdout[0].title} (str, " in ran.stdout
    # more than 50 fields: the fields that matter, and how to see the rest
    assert "  ✓ ${stdout[0].html_url}" not in ran.stdout
    assert "(heuristic filter; " in ran.stdout
    execution_id = next(line.split()[-1] for line in ran.stdout.splitlines() if line.startswith("Execution ID: "))
    assert (isolated_cache / f"{execution_id}.json").exists()
    read = _cli(
        "pflow", "read-fields", execution_id, "stdout[0].title", "exit_code", executable=pflow_structure_executable
    )
    assert read.returncode == 0, read.stderr
    assert "stdout[0].title: Different results from Betamax vs Requests" in read.stdout
    assert "exit_code: 0" in read.stdout


# pflow read-fields refusing a malformed execution id: tests/pflow/test_pflow_ids.py (every pflow line).


def test_read_fields_still_reads_an_execution_pflow_cached_itself(pflow_home: Path) -> None:
    from pflow.core.execution_cache import ExecutionCache as PflowCache

    own = PflowCache()
    execution_id = own.generate_execution_id()
    own.store(execution_id=execution_id, node_type="shell", params={}, outputs={"stdout": "from pflow"})
    plugin.install()
    from pflow.mcp_server.services.field_service import FieldService

    assert FieldService.read_fields(execution_id, ["stdout"]) == "stdout: from pflow"


def test_pflows_mcp_registry_run_and_read_fields_use_our_cache(isolated_cache: Path) -> None:
    plugin.install()
    from pflow.mcp_server.services.execution_service import ExecutionService
    from pflow.mcp_server.services.field_service import FieldService

    text = ExecutionService.run_registry_node("shell", {"command": f"cat {ISSUES}"})
    assert "  ✓ ${stdout[0].title} (str, " in text
    execution_id = next(line.split()[-1] for line in text.splitlines() if line.startswith("Execution ID: "))
    assert (isolated_cache / f"{execution_id}.json").exists()
    assert FieldService.read_fields(execution_id, ["stdout[0].number"]) == "stdout[0].number: 150"
    with pytest.raises(ValueError) as caught:
        FieldService.read_fields("../x", ["a"])
    assert str(caught.value) == (
        "Execution not found: '../x' is not a valid execution id. "
        "Ids look like exec-1763463202-0cd0c8fe; copy the one printed by `pflow-structure run`."
    )


# -- the examples ------------------------------------------------------------------------------


def test_the_ir_example_runs(pflow_home: Path) -> None:
    ran = subprocess.run(
        [sys.executable, str(EXAMPLES / "pflow" / "run_ir.py")], capture_output=True, text=True, timeout=300
    )
    assert ran.returncode == 0, ran.stderr
    assert f"first: {FIRST_LINE}\n" in ran.stdout
    assert "count: 100 issues (exit code 0)\n" in ran.stdout


# -- pflow's MCP server, started for real over stdio -------------------------------------------


def test_pflows_mcp_server_started_through_the_plugin_serves_our_structure(
    pflow_home: Path, isolated_cache: Path, pflow_structure_executable: str
) -> None:
    import asyncio

    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def session() -> tuple[str, str]:
        server = StdioServerParameters(
            command=pflow_structure_executable, args=["pflow", "mcp", "serve"], env=dict(os.environ)
        )
        async with stdio_client(server) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            ran = await client.call_tool(
                "registry_run", {"node_type": "shell", "parameters": {"command": f"cat {ISSUES}"}}
            )
            text = "".join(block.text for block in ran.content if hasattr(block, "text"))
            execution_id = next(line.split()[-1] for line in text.splitlines() if line.startswith("Execution ID: "))
            read = await client.call_tool(
                "read_fields", {"execution_id": execution_id, "field_paths": ["stdout[*].number"]}
            )
            return text, "".join(block.text for block in read.content if hasattr(block, "text"))

    structure, values = asyncio.run(asyncio.wait_for(session(), timeout=120))
    assert "  ✓ ${stdout[0].title} (str, " in structure
    assert "(heuristic filter; " in structure
    assert len(_entries(isolated_cache)) == 1
    assert values.startswith("stdout[*].number:\n  [\n    150,\n    149,\n")  # pflow's own value format
