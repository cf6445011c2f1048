"""The pflow plugin against a real pflow-cli 0.16 (see conftest.py for how CI provides it).

What 0.16 users run: ``pflow probe`` and ``pflow read-fields`` (through ``pflow-structure
pflow``), pflow's MCP server through the official MCP client, and saved ``.pflow.md``
workflows with a structure-only step, run by pflow's own engine.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.pflow.conftest import require_pflow_line

require_pflow_line("v16")

from pflow_structure.errors import PflowVersionError  # noqa: E402
from pflow_structure.integrations import pflow as plugin  # noqa: E402
from pflow_structure.wrapper import CachedOutputs  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
ISSUES = REPO / "examples" / "data" / "github_issues.json"
WORKFLOW_MD = REPO / "examples" / "pflow16" / "issue_titles.pflow.md"
FIRST_LINE = "Different results from Betamax vs Requests | workflow | hroncok"


def _cli(*args: str, executable: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "PYTHONIOENCODING": "utf-8"}
    return subprocess.run(
        [executable, *args], capture_output=True, text=True, env=env, timeout=300, cwd=REPO, check=False
    )


def _execution_id(text: str) -> str:
    return next(line.split()[-1] for line in text.splitlines() if line.startswith("Execution ID: "))


def _entries(cache_dir: Path) -> list[Path]:
    return sorted(cache_dir.glob("exec-*.json")) if cache_dir.exists() else []


def _run_workflow(markdown: str, **params: Any) -> Any:
    """A .pflow.md workflow run by pflow's own runner, in this process (its shared store inspectable)."""
    from pflow.core.markdown_parser import parse_markdown
    from pflow.execution.result import RunnerConfig
    from pflow.execution.runner import WorkflowRunner

    ir = parse_markdown(markdown).ir
    return WorkflowRunner().run(ir, params, RunnerConfig(trace_enabled=False, cache_enabled=False))


# -- version, install, uninstall ---------------------------------------------------------------


def test_the_installed_release_is_served_by_the_016_adapter() -> None:
    assert plugin.check_version().startswith("0.16.")
    assert plugin.adapter_name(plugin.check_version()) == "v16"


def test_uninstall_restores_every_original_function() -> None:
    import pflow.cli.commands._probe_impl as probe_impl
    import pflow.core.execution_cache as execution_cache
    import pflow.runtime.compilation.compiler as compiler
    from pflow.runtime.engine.engine import WorkflowEngine

    def names() -> tuple[Any, ...]:
        return (
            compiler._create_node_and_config,
            WorkflowEngine.__dict__["_execute_node"],
            execution_cache.ExecutionCache,
            probe_impl.ExecutionCache,
            probe_impl._display_results,
        )

    before = names()
    plugin.install()
    assert plugin.installed()
    assert all(a is not b for a, b in zip(names(), before, strict=True))
    plugin.install()  # a second install patches nothing twice
    plugin.uninstall()
    assert names() == before


def test_a_016_build_whose_seams_moved_is_refused_by_name_and_nothing_stays_patched(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import pflow.core.execution_cache as execution_cache
    from pflow.runtime.engine.engine import WorkflowEngine

    original = execution_cache.ExecutionCache
    monkeypatch.delattr(WorkflowEngine, "_execute_node")
    with pytest.raises(PflowVersionError) as caught:
        plugin.install()
    assert "pflow.runtime.engine.engine.WorkflowEngine._execute_node is missing" in str(caught.value)
    assert "pip install 'pflow-cli==0.16.0'" in str(caught.value)
    assert not plugin.installed()
    assert execution_cache.ExecutionCache is original


# -- pflow probe and pflow read-fields ---------------------------------------------------------


def test_probe_prints_our_structure_and_read_fields_reads_its_id(
    isolated_cache: Path, pflow_structure_executable: str
) -> None:
    ran = _cli("pflow", "probe", "read-file", f"file_path={ISSUES}", executable=pflow_structure_executable)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith("✓ Node executed successfully\n")
    assert "  ✓ ${content} (str, ~472892 chars, JSON list, 100 items)\n" in ran.stdout
    assert "  ✓ ${content[0].title} (str, " in ran.stdout
    assert "(heuristic filter; " in ran.stdout  # over 50 fields: the ones that matter
    assert "fields hidden: PFLOW_STRUCTURE_FILTER=off lists them, read-fields reads any path)\n" in ran.stdout
    execution_id = _execution_id(ran.stdout)
    entry = isolated_cache / f"{execution_id}.json"
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600
    read = _cli(
        "pflow", "read-fields", execution_id, "content[0].title", "content[*].number", "content_is_binary",
        executable=pflow_structure_executable,
    )  # fmt: skip
    assert read.returncode == 0, read.stderr
    assert "content[0].title: Different results from Betamax vs Requests\n" in read.stdout
    assert "content[*].number:\n  [\n    150,\n    149,\n" in read.stdout
    assert "content_is_binary: False\n" in read.stdout  # pflow's own value format


def test_probe_lists_every_field_when_the_filter_is_off(
    isolated_cache: Path, pflow_structure_executable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PFLOW_STRUCTURE_FILTER", "off")
    ran = _cli("pflow", "probe", "read-file", f"file_path={ISSUES}", executable=pflow_structure_executable)
    assert ran.returncode == 0, ran.stderr
    assert "  ✓ ${content[0].html_url} (str, " in ran.stdout
    assert "not filtered" in ran.stdout


def test_probe_json_output_is_our_structure_dict(isolated_cache: Path, pflow_structure_executable: str) -> None:
    ran = _cli(
        "pflow", "probe", "read-file", f"file_path={ISSUES}", "--output-format", "json",
        executable=pflow_structure_executable,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    result = json.loads(ran.stdout)
    assert result["node_type"] == "read-file"
    assert result["structure"]["content"] == {"type": "str", "length": 100, "avg_length": 472892, "json": "list"}
    assert result["structure"]["content[0].title"] == {"type": "str", "avg_length": 41}
    assert (result["field_count"], result["original_field_count"], result["filter"]) == (25, 111, "heuristic")
    assert (isolated_cache / f"{result['execution_id']}.json").exists()
    assert "outputs" not in result  # pflow's own JSON carries every value


def test_read_fields_speaks_our_path_grammar_with_suggestions(
    isolated_cache: Path, pflow_structure_executable: str
) -> None:
    ran = _cli("pflow", "probe", "read-file", f"file_path={ISSUES}", executable=pflow_structure_executable)
    execution_id = _execution_id(ran.stdout)
    read = _cli(
        "pflow", "read-fields", execution_id,
        "content[-1].number", "$.content_is_binary", "$..nope", "content[0].titel",
        executable=pflow_structure_executable,
    )  # fmt: skip
    assert read.returncode == 0, read.stderr
    assert "content[-1].number: 51\n" in read.stdout
    assert "$.content_is_binary:\n  [\n    false\n  ]\n" in read.stdout  # JSONPath: every match, as a list
    assert "$..nope: (not found)\n" in read.stdout  # RFC 9535: no match is a miss, with its reason
    assert "content[0].titel: (not found)\n" in read.stdout
    assert read.stderr == (
        "note: $..nope: ..['nope'] matched nothing at any depth. Keys there: content, content_is_binary.\n"
        "note: content[0].titel: no key 'titel' here. Did you mean content[0].title, content[0].state?\n"
    )


# pflow read-fields refusing a malformed execution id: tests/pflow/test_pflow_ids.py (every pflow line).


def test_read_fields_still_reads_an_execution_pflow_cached_itself(pflow_home: Path) -> None:
    from pflow.core.execution_cache import ExecutionCache as PflowCache

    own = PflowCache()
    execution_id = own.generate_execution_id()
    own.store(execution_id=execution_id, node_type="shell", params={}, outputs={"stdout": "from pflow"})
    plugin.install()
    from pflow.mcp_server.services.field_service import FieldService

    assert FieldService.read_fields(execution_id, ["stdout"]) == "stdout: from pflow"


def test_the_pflow_cli_still_reads_an_execution_pflow_cached_itself(
    pflow_home: Path, pflow_structure_executable: str
) -> None:
    from pflow.core.execution_cache import ExecutionCache as PflowCache

    own = PflowCache()
    execution_id = own.generate_execution_id()
    own.store(execution_id=execution_id, node_type="shell", params={}, outputs={"stdout": "old id"})
    read = _cli("pflow", "read-fields", execution_id, "stdout", executable=pflow_structure_executable)
    assert read.returncode == 0, read.stderr
    assert read.stdout == "stdout: old id\n"


# -- pflow's MCP server, started for real over stdio, through the official client -------------


def test_pflows_mcp_tools_answer_with_our_structure_and_read_our_cache(
    pflow_home: Path, isolated_cache: Path, pflow_structure_executable: str
) -> None:
    import asyncio

    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def session() -> tuple[str, str, str]:
        server = StdioServerParameters(
            command=pflow_structure_executable, args=["pflow", "mcp", "serve"], env=dict(os.environ)
        )
        async with stdio_client(server) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            ran = await client.call_tool(
                "registry_run", {"node_type": "read-file", "parameters": {"file_path": str(ISSUES)}}
            )
            text = "".join(block.text for block in ran.content if hasattr(block, "text"))
            execution_id = _execution_id(text)
            read = await client.call_tool(
                "read_fields", {"execution_id": execution_id, "field_paths": ["content[*].number", "content[1].state"]}
            )
            refused = await client.call_tool("read_fields", {"execution_id": "../x", "field_paths": ["a"]})
            return (
                text,
                "".join(block.text for block in read.content if hasattr(block, "text")),
                "".join(block.text for block in refused.content if hasattr(block, "text")),
            )

    structure, values, refused = asyncio.run(asyncio.wait_for(session(), timeout=120))
    assert "  ✓ ${content[0].title} (str, " in structure
    assert "(heuristic filter; " in structure
    assert len(_entries(isolated_cache)) == 1
    assert values.startswith("content[*].number:\n  [\n    150,\n    149,\n")  # pflow's own value format
    assert values.endswith("content[1].state: open")
    assert "is not a valid execution id" in refused


# -- workflows: a structure-only step in pflow's engine ----------------------------------------


def test_a_structure_only_step_keeps_no_values_and_the_next_step_gets_them(isolated_cache: Path) -> None:
    plugin.install()
    result = _run_workflow(WORKFLOW_MD.read_text(encoding="utf-8"), issues_file=str(ISSUES))
    assert result.success, result.errors
    # the second step received the real values through its templates
    assert result.shared_after["first"]["stdout"] == FIRST_LINE
    # the first step's namespace holds its structure and execution id, and no value
    load = result.shared_after["load"]
    assert isinstance(load, CachedOutputs)
    assert sorted(dict.keys(load)) == ["_execution_id", "_structure"]
    assert load["_structure"]["content[0].title"]["type"] == "str"
    entries = _entries(isolated_cache)
    assert [entry.stem for entry in entries] == [load["_execution_id"]]
    cached = json.loads(entries[0].read_text(encoding="utf-8"))
    assert cached["node_type"] == "read-file"
    assert cached["outputs"]["content_is_binary"] is False
    assert cached["params"] == {"file_path": str(ISSUES)}


BATCH_MD = """# Batch

A structure-only batch step and a step that reads one item's result.

## Steps

### each

Echo each item.

- type: shell
- structure_only: true
- batch:
    items: ["a", "b", "c"]

```shell command
echo ${item}
```

### after

Use the second result.

- type: shell
- stdin: ${each.results[1].stdout}

```shell command
cat
```
"""


def test_a_structure_only_batch_step_is_cached_once_with_every_item_result(isolated_cache: Path) -> None:
    plugin.install()
    result = _run_workflow(BATCH_MD)
    assert result.success, result.errors
    assert result.shared_after["after"]["stdout"] == "b"
    each = result.shared_after["each"]
    assert sorted(dict.keys(each)) == ["_execution_id", "_structure"]
    entries = _entries(isolated_cache)
    assert len(entries) == 1
    cached = json.loads(entries[0].read_text(encoding="utf-8"))["outputs"]
    assert [item["stdout"] for item in cached["results"]] == ["a", "b", "c"]  # as pflow keeps them


def test_the_same_workflow_without_structure_only_gives_the_same_outputs(isolated_cache: Path) -> None:
    plugin.install()
    markdown = WORKFLOW_MD.read_text(encoding="utf-8").replace("- structure_only: true\n", "")
    result = _run_workflow(markdown, issues_file=str(ISSUES))
    assert result.success, result.errors
    assert result.shared_after["first"]["stdout"] == FIRST_LINE
    assert not isinstance(result.shared_after["load"], CachedOutputs)
    assert _entries(isolated_cache) == []


def test_a_path_that_does_not_exist_fails_with_pflows_template_error(isolated_cache: Path) -> None:
    plugin.install()
    markdown = WORKFLOW_MD.read_text(encoding="utf-8")
    markdown = markdown.replace("${load.content[1].user.login}", "${load.content[1].nope}")
    failed = _run_workflow(markdown, issues_file=str(ISSUES))
    assert not failed.success
    expected = "Unresolved variables in parameter 'stdin': ${load.content[1].nope}"
    assert [error.message for error in failed.errors] == [expected]
    # the same error pflow gives when the step is not structure-only
    plain = _run_workflow(markdown.replace("- structure_only: true\n", ""), issues_file=str(ISSUES))
    assert [error.message for error in plain.errors] == [expected]


def test_a_structure_only_value_other_than_true_or_false_is_a_compilation_error(isolated_cache: Path) -> None:
    plugin.install()
    markdown = WORKFLOW_MD.read_text(encoding="utf-8").replace("- structure_only: true", "- structure_only: maybe")
    result = _run_workflow(markdown, issues_file=str(ISSUES))
    assert not result.success
    messages = " ".join(error.message for error in result.errors)
    assert "the structure_only param of node 'load' must be true or false, not 'maybe'" in messages


def test_a_saved_workflow_runs_through_the_pflow_command(
    isolated_cache: Path, pflow_home: Path, pflow_structure_executable: str
) -> None:
    saved = _cli("pflow", "save", str(WORKFLOW_MD), "--name", "issue-titles", "--force",
                 executable=pflow_structure_executable)  # fmt: skip
    assert saved.returncode == 0, saved.stderr + saved.stdout
    ran = _cli("pflow", "--output-format", "json", "issue-titles", f"issues_file={ISSUES}",
               executable=pflow_structure_executable)  # fmt: skip
    assert ran.returncode == 0, ran.stderr + ran.stdout
    assert json.loads(ran.stdout)["result"] == {"first_line": FIRST_LINE}
    assert len(_entries(isolated_cache)) == 1
