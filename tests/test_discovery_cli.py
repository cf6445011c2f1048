"""``pflow-structure nodes`` (discovery, then planning with --describe) and ``workflows`` (the store).

conftest points PFLOW_STRUCTURE_WORKFLOWS_DIR at an empty temporary directory and
PFLOW_STRUCTURE_PFLOW_REGISTRY at a file that does not exist; the ``pflow_registry`` fixture
points it at the fake registry in tests/data/discovery/registry.json instead.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import Result

from pflow_structure.cli import main
from pflow_structure.settings import Settings
from tests.conftest import REPO, cli_runner
from tests.test_cli import python_m

DISCOVERY_DATA = REPO / "tests" / "data" / "discovery"
BUILTIN_LINES = (
    "http       Send an HTTP request and capture the response.\n"
    "read-json  Read a JSON or JSON Lines file into the shared store.\n"
    "shell      Run a shell command and capture its output.\n"
)
READ_JSON_PLANNING = (
    "## Selected Nodes\n\n### read-json\nRead a JSON or JSON Lines file into the shared store.\n\n"
    "**Inputs**: none\n**Outputs**:\n- `result: any` - The parsed JSON value; a list of values for JSON Lines\n"
    "**Parameters**:\n- `path: str` - File to read (.json, or .jsonl/.ndjson for JSON Lines)\n"
    "- `encoding: str` - Text encoding of the file (optional, default: utf-8)\n**Actions**: default\n"
)
MISSING_SHEL = (
    "Error: Missing components detected:\n"
    "- Unknown nodes: shel (did you mean shell?)\n"
    "  (Check spelling, use hyphens not underscores)\n"
    "Choose again from the names in the discovery context.\n"
)
TITLES_IR = {
    "ir_version": "0.1.0",
    "nodes": [{"id": "read", "type": "read-json", "params": {"path": "${path}"}}],
    "edges": [],
    "inputs": {"path": {"type": "str", "description": "File to read"}},
    "outputs": {},
}
TITLES_SHOWN = (
    "## Selected Workflows\n\n### titles (workflow)\nRead a file\n\n**Inputs**:\n- `path: str` - File to read\n"
    "**Outputs**: none\n**Nodes**: read-json\n**Version**: 1.0.0\n"
)
INVALID_NAME = (
    "Error: Invalid workflow name '../x': names are 1 to 100 letters, digits, hyphens and underscores, "
    "starting with a letter or digit (for example fix-github-issue); '/', '..' and NUL are refused.\n"
)


def invoke(*args: str, input: str | None = None) -> Result:
    runner = cli_runner()
    return runner.invoke(main, list(args), input=input, prog_name="pflow-structure")


@pytest.fixture
def workflows_dir() -> Path:
    return Path(os.environ["PFLOW_STRUCTURE_WORKFLOWS_DIR"])


@pytest.fixture
def pflow_registry(monkeypatch: pytest.MonkeyPatch) -> Path:
    path = DISCOVERY_DATA / "registry.json"
    monkeypatch.setenv("PFLOW_STRUCTURE_PFLOW_REGISTRY", str(path))
    return path


@pytest.fixture
def ir_file(tmp_path: Path) -> Path:
    path = tmp_path / "titles.ir.json"
    path.write_text(json.dumps(TITLES_IR), encoding="utf-8")
    return path


def save_titles(ir_file: Path, *extra: str) -> Result:
    outcome = invoke("workflows", "save", "titles", str(ir_file), "--description", "Read a file", *extra)
    assert outcome.exit_code == 0, outcome.stderr
    return outcome


# -- settings ---------------------------------------------------------------------------------


def test_settings_default_to_pflow_s_own_directories() -> None:
    settings = Settings.from_env({})
    assert settings.workflows_dir == Path.home() / ".pflow" / "workflows"
    assert settings.pflow_registry == Path.home() / ".pflow" / "registry.json"


def test_settings_read_the_workflow_and_registry_variables_with_tilde_expanded() -> None:
    settings = Settings.from_env(
        {"PFLOW_STRUCTURE_WORKFLOWS_DIR": "~/flows", "PFLOW_STRUCTURE_PFLOW_REGISTRY": "/opt/pflow/registry.json"}
    )
    assert (settings.workflows_dir, settings.pflow_registry) == (
        Path.home() / "flows",
        Path("/opt/pflow/registry.json"),
    )


# -- nodes: discovery -------------------------------------------------------------------------


def test_nodes_without_a_pflow_registry_lists_the_built_in_nodes() -> None:
    outcome = invoke("nodes")
    assert (outcome.exit_code, outcome.stdout, outcome.stderr) == (0, BUILTIN_LINES, "")


def test_nodes_adds_pflow_s_nodes_marked_with_their_source(pflow_registry: Path) -> None:
    lines = invoke("nodes").stdout.splitlines()
    assert lines[0] == "code                Execute Python code with typed inputs and result capture.  [pflow]"
    assert "read-json           Read a JSON or JSON Lines file into the shared store." in lines
    assert len(lines) == 9


def test_nodes_lists_saved_workflows_after_the_nodes(ir_file: Path) -> None:
    save_titles(ir_file)
    outcome = invoke("nodes")
    assert outcome.stdout == BUILTIN_LINES + "\nSaved workflows:\ntitles  Read a file\n"


def test_nodes_markdown_prints_the_discovery_context_agents_get(ir_file: Path) -> None:
    save_titles(ir_file)
    outcome = invoke("nodes", "--markdown")
    assert outcome.stdout == (
        "## Available Nodes\n\n"
        "- http: Send an HTTP request and capture the response.\n"
        "- read-json: Read a JSON or JSON Lines file into the shared store.\n"
        "- shell: Run a shell command and capture its output.\n\n"
        "## Available Workflows\n\n- titles: Read a file\n"
    )


def test_nodes_json_includes_pflow_nodes_with_source_pflow(pflow_registry: Path) -> None:
    listing = json.loads(invoke("nodes", "--json").stdout)
    assert [node["name"] for node in listing] == [
        "code",
        "github-get-issue",
        "github-list-issues",
        "http",
        "legacy-fetch",
        "read-file",
        "read-json",
        "shell",
        "slack-post-message",
    ]
    assert listing[0] == {
        "name": "code",
        "description": "Execute Python code with typed inputs and result capture.",
        "source": "pflow",
    }


def test_nodes_warns_on_stderr_about_an_unreadable_pflow_registry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = tmp_path / "registry.json"
    broken.write_text("[1,", encoding="utf-8")
    monkeypatch.setenv("PFLOW_STRUCTURE_PFLOW_REGISTRY", str(broken))
    outcome = invoke("nodes")
    assert (outcome.exit_code, outcome.stdout) == (0, BUILTIN_LINES)
    assert outcome.stderr == (
        f"Warning: pflow registry {broken} is not valid JSON (Expecting value: line 1 column 4 (char 3)); "
        "run `pflow registry list` to rebuild it.\n"
    )


def test_nodes_markdown_and_json_together_are_a_usage_error() -> None:
    outcome = invoke("nodes", "--markdown", "--json")
    assert outcome.exit_code == 2
    assert outcome.stderr.endswith("Error: --markdown and --json cannot be combined; choose one.\n")


# -- nodes --describe: planning ---------------------------------------------------------------


def test_describe_prints_the_full_interface_of_one_node() -> None:
    outcome = invoke("nodes", "--describe", "read-json")
    assert (outcome.exit_code, outcome.stdout) == (0, READ_JSON_PLANNING)


def test_describe_twice_prints_both_nodes_in_the_order_given() -> None:
    stdout = invoke("nodes", "--describe", "read-json", "--describe", "shell").stdout
    assert stdout.startswith(READ_JSON_PLANNING + "\n### shell\nRun a shell command and capture its output.\n")


def test_describe_a_pflow_node_shows_its_nested_outputs(pflow_registry: Path) -> None:
    stdout = invoke("nodes", "--describe", "github-list-issues").stdout
    assert stdout.startswith("## Selected Nodes\n\n### github-list-issues\nList GitHub repository issues.\n")
    assert "  Structure of each item in issues:\n" in stdout


def test_describe_an_unknown_node_exits_1_with_close_matches_on_stderr() -> None:
    outcome = invoke("nodes", "--describe", "shel")
    assert (outcome.exit_code, outcome.stdout, outcome.stderr) == (1, "", MISSING_SHEL)


def test_describe_json_of_an_unknown_node_prints_the_suggestions_and_exits_1() -> None:
    outcome = invoke("nodes", "--describe", "shel", "--json")
    assert outcome.exit_code == 1
    assert json.loads(outcome.stdout) == {
        "error": MISSING_SHEL.removeprefix("Error: "),
        "missing_nodes": ["shel"],
        "missing_workflows": [],
        "suggestions": {"shel": ["shell"]},
        "warnings": [],
    }


def test_describe_json_prints_the_context_and_the_names() -> None:
    result = json.loads(invoke("nodes", "--describe", "read-json", "--json").stdout)
    assert result == {
        "context": READ_JSON_PLANNING.removesuffix("\n"),
        "nodes": ["read-json"],
        "workflows": [],
        "warnings": [],
    }


def test_workflow_option_describes_a_workflow_saved_with_the_cli(ir_file: Path) -> None:
    save_titles(ir_file)
    outcome = invoke("nodes", "--workflow", "titles")
    assert (outcome.exit_code, outcome.stdout) == (0, TITLES_SHOWN)


def test_workflow_option_with_a_hostile_name_is_an_unknown_workflow() -> None:
    outcome = invoke("nodes", "--workflow", "../x")
    assert (outcome.exit_code, outcome.stdout) == (1, "")
    assert outcome.stderr == (
        "Error: Missing components detected:\n- Unknown workflows: ../x\n"
        "Choose again from the names in the discovery context.\n"
    )


def test_workflow_option_suggests_a_close_workflow_name(ir_file: Path) -> None:
    save_titles(ir_file)
    outcome = invoke("nodes", "--workflow", "title")
    assert outcome.exit_code == 1
    assert "- Unknown workflows: title (did you mean titles?)\n" in outcome.stderr


# -- workflows --------------------------------------------------------------------------------


def test_workflows_list_on_an_empty_store_says_where_it_looked(workflows_dir: Path) -> None:
    outcome = invoke("workflows", "list")
    assert (outcome.exit_code, outcome.stdout) == (0, f"No saved workflows in {workflows_dir}\n")


def test_workflows_save_writes_name_json_and_says_where(ir_file: Path, workflows_dir: Path) -> None:
    outcome = save_titles(ir_file)
    assert outcome.stdout == f"Saved workflow 'titles' in {workflows_dir / 'titles.json'}\n"
    stored = json.loads((workflows_dir / "titles.json").read_text(encoding="utf-8"))
    assert (stored["name"], stored["description"], stored["inputs"], stored["ir"]) == (
        "titles",
        "Read a file",
        ["path"],
        TITLES_IR,
    )


def test_workflows_save_again_replaces_and_says_so(ir_file: Path, workflows_dir: Path) -> None:
    save_titles(ir_file)
    outcome = save_titles(ir_file, "--tag", "files")
    assert outcome.stdout == f"Replaced workflow 'titles' in {workflows_dir / 'titles.json'}\n"
    assert json.loads(invoke("workflows", "list", "--json").stdout)[0]["tags"] == ["files"]


def test_workflows_save_reads_stdin_and_takes_the_ir_of_a_saved_record() -> None:
    record = (DISCOVERY_DATA / "workflows" / "issue-report.json").read_text(encoding="utf-8")
    outcome = invoke("workflows", "save", "report", "-", "--description", "A report", input=record)
    assert outcome.exit_code == 0, outcome.stderr
    shown = json.loads(invoke("workflows", "show", "report", "--json").stdout)
    assert shown["ir"] == json.loads(record)["ir"]
    assert (shown["name"], shown["description"]) == ("report", "A report")


def test_workflows_save_refuses_a_hostile_name_and_writes_nothing(ir_file: Path, workflows_dir: Path) -> None:
    outcome = invoke("workflows", "save", "../x", str(ir_file), "--description", "d")
    assert (outcome.exit_code, outcome.stderr) == (1, INVALID_NAME)
    assert not (workflows_dir.parent / "x.json").exists()


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (
            "{",
            "Error: stdin: invalid JSON (Expecting property name enclosed in double quotes: line 1 column 2 "
            "(char 1)); a workflow file holds a JSON object.\n",
        ),
        ("[1]", "Error: stdin: a workflow IR is a JSON object with a nodes list, not list.\n"),
        (
            '{"nodes": [{"id": "a"}]}',
            "Error: workflow 'x': invalid IR: nodes[0] lacks a string id or type; an IR is an object with a "
            "list of nodes, each an object with string id and type.\n",
        ),
    ],
)
def test_workflows_save_of_an_invalid_ir_exits_1_with_the_reason(text: str, error: str) -> None:
    outcome = invoke("workflows", "save", "x", "-", "--description", "d", input=text)
    assert (outcome.exit_code, outcome.stderr) == (1, error)


def test_workflows_save_without_a_description_is_a_usage_error(ir_file: Path) -> None:
    outcome = invoke("workflows", "save", "titles", str(ir_file))
    assert outcome.exit_code == 2
    assert outcome.stderr.endswith("Error: Missing option '--description'.\n")


def test_workflows_list_shows_name_and_description(ir_file: Path) -> None:
    save_titles(ir_file)
    invoke("workflows", "save", "a-longer-name", str(ir_file), "--description", "Another")
    outcome = invoke("workflows", "list")
    assert outcome.stdout == "a-longer-name  Another\ntitles         Read a file\n"


def test_workflows_list_json_leaves_out_the_ir(ir_file: Path) -> None:
    save_titles(ir_file)
    (row,) = json.loads(invoke("workflows", "list", "--json").stdout)
    assert sorted(row) == ["description", "inputs", "name", "outputs", "tags", "updated_at", "version"]


def test_workflows_list_skips_a_broken_file_with_a_warning(ir_file: Path, workflows_dir: Path) -> None:
    save_titles(ir_file)
    (workflows_dir / "broken.json").write_text("{", encoding="utf-8")
    outcome = invoke("workflows", "list")
    assert (outcome.exit_code, outcome.stdout) == (0, "titles  Read a file\n")
    assert outcome.stderr == (
        f"Warning: Skipped {workflows_dir / 'broken.json'}: invalid JSON (Expecting property name enclosed in "
        "double quotes: line 1 column 2 (char 1)); fix the file or delete it.\n"
    )


def test_workflows_show_prints_the_workflow_interface(ir_file: Path) -> None:
    save_titles(ir_file)
    outcome = invoke("workflows", "show", "titles")
    assert (outcome.exit_code, outcome.stdout) == (0, TITLES_SHOWN)


@pytest.mark.parametrize("command", ["show", "delete"])
def test_workflows_show_and_delete_refuse_a_hostile_name(command: str) -> None:
    outcome = invoke("workflows", command, "../x", "--yes" if command == "delete" else "--json")
    assert (outcome.exit_code, outcome.stdout, outcome.stderr) == (1, "", INVALID_NAME)


@pytest.mark.parametrize("command", ["show", "delete"])
def test_workflows_show_and_delete_of_a_missing_workflow_exit_1(command: str, workflows_dir: Path) -> None:
    outcome = invoke("workflows", command, "nope")
    assert (outcome.exit_code, outcome.stderr) == (
        1,
        f"Error: Workflow 'nope' not found in {workflows_dir}. Save it first, or list the saved workflows "
        "to check the name.\n",
    )


def test_workflows_delete_yes_removes_the_file(ir_file: Path, workflows_dir: Path) -> None:
    save_titles(ir_file)
    outcome = invoke("workflows", "delete", "titles", "--yes")
    assert (outcome.exit_code, outcome.stdout) == (0, "Deleted workflow 'titles'.\n")
    assert list(workflows_dir.iterdir()) == []


def test_workflows_delete_asks_first_and_no_keeps_the_file(ir_file: Path, workflows_dir: Path) -> None:
    save_titles(ir_file)
    outcome = invoke("workflows", "delete", "titles", input="n\n")
    assert outcome.exit_code == 1
    assert outcome.stdout == f"Delete workflow 'titles' ({workflows_dir / 'titles.json'})? [y/N]: n\n"
    assert (workflows_dir / "titles.json").is_file()


# -- a real subprocess, as a shell or an agent runs it ----------------------------------------


def test_python_m_nodes_lists_pflow_nodes_then_describes_two(pflow_registry: Path) -> None:
    listed = python_m("nodes")
    assert listed.returncode == 0, listed.stderr
    assert "slack-post-message  Post a message to a Slack channel (MCP tool).  [pflow]\n" in listed.stdout
    described = python_m("nodes", "--describe", "read-json", "--describe", "code")
    assert described.returncode == 0, described.stderr
    assert described.stdout.startswith(READ_JSON_PLANNING + "\n### code\n")


def test_python_m_nodes_describe_of_a_missing_node_exits_1() -> None:
    result = python_m("nodes", "--describe", "shel")
    assert (result.returncode, result.stdout, result.stderr) == (1, "", MISSING_SHEL)


# -- defects found in review: bad text, odd files, filters, the name a file is known by -------


def _write_workflow(directory: Path, file_name: str, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{file_name}.json"
    path.write_text(text, encoding="utf-8")
    return path


SURROGATE_WORKFLOW = '{"name": "sur", "description": "bad \\ud800 desc", "ir": {"nodes": []}}'


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        (("nodes",), "sur     bad \ufffd desc"),
        (("nodes", "--markdown"), "- sur: bad \ufffd desc"),
        (("nodes", "--workflow", "sur"), "### sur (workflow)\nbad \ufffd desc\n"),
        (("workflows", "show", "sur"), "### sur (workflow)\nbad \ufffd desc\n"),
        (("workflows", "list"), "sur     bad \ufffd desc"),
    ],
)
def test_a_lone_surrogate_in_a_saved_workflow_is_shown_as_u_fffd_with_a_warning(
    workflows_dir: Path, ir_file: Path, args: tuple[str, ...], shown: str
) -> None:
    path = _write_workflow(workflows_dir, "sur", SURROGATE_WORKFLOW)
    save_titles(ir_file)
    outcome = invoke(*args)
    assert outcome.exit_code == 0, outcome.stderr
    assert shown in outcome.stdout
    assert f"Warning: {path} holds 1 text value(s) that are not valid Unicode" in outcome.stderr


def test_a_lone_surrogate_in_pflow_s_registry_is_shown_as_u_fffd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = tmp_path / "registry.json"
    registry.write_text(
        '{"nodes":{"y":{"interface":{"description":"ok","inputs":[{"key":"k","type":"str","description":"\\udfff"}]}}}}',
        encoding="utf-8",
    )
    monkeypatch.setenv("PFLOW_STRUCTURE_PFLOW_REGISTRY", str(registry))
    outcome = invoke("nodes", "--describe", "y")
    assert outcome.exit_code == 0, outcome.stderr
    assert "- `k: str` - \ufffd\n" in outcome.stdout
    assert "they are shown as U+FFFD" in outcome.stderr


def test_a_fifo_at_the_registry_path_is_a_warning_not_a_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "registry.json"
    os.mkfifo(fifo)
    completed = python_m("nodes", env={"PFLOW_STRUCTURE_PFLOW_REGISTRY": str(fifo)})  # times out if it blocks
    assert (completed.returncode, completed.stdout) == (0, BUILTIN_LINES)
    assert (
        completed.stderr
        == f"Warning: pflow registry {fifo} cannot be read (not a regular file); its nodes are left out.\n"
    )


def test_nodes_query_and_kind_narrow_the_list(ir_file: Path) -> None:
    save_titles(ir_file)
    assert invoke("nodes", "--query", "JSON file").stdout == (
        "read-json  Read a JSON or JSON Lines file into the shared store.\n"
    )
    assert invoke("nodes", "--query", "read").stdout == (
        "read-json  Read a JSON or JSON Lines file into the shared store.\n\nSaved workflows:\ntitles  Read a file\n"
    )
    assert invoke("nodes", "--kind", "workflows").stdout == "Saved workflows:\ntitles  Read a file\n"
    assert invoke("nodes", "--kind", "nodes").stdout == BUILTIN_LINES
    assert invoke("nodes", "--kind", "workflows", "--json").stdout == (
        '[\n  {\n    "name": "titles",\n    "description": "Read a file"\n  }\n]\n'
    )
    assert invoke("nodes", "--query", "nothing-like-this").stdout == (
        "Nothing matches 'nothing-like-this'; try fewer or other words.\n"
    )
    refused = invoke("nodes", "--describe", "shell", "--query", "x")
    assert refused.exit_code == 2 and "--query and --kind narrow the list" in refused.stderr


def test_a_cut_markdown_list_names_the_option_that_narrows_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    registry = tmp_path / "registry.json"
    nodes = {f"pflow-node-{index:04d}": {"docstring": f"Pflow node number {index}."} for index in range(1500)}
    registry.write_text(json.dumps({"nodes": nodes}), encoding="utf-8")
    monkeypatch.setenv("PFLOW_STRUCTURE_PFLOW_REGISTRY", str(registry))
    for index in range(20):
        _write_workflow(
            Path(os.environ["PFLOW_STRUCTURE_WORKFLOWS_DIR"]),
            f"flow-{index:02d}",
            json.dumps({"name": f"flow-{index:02d}", "description": "A flow", "ir": {"nodes": []}}),
        )
    text = invoke("nodes", "--markdown").stdout
    assert len(text.encode()) <= 10 * 1024 + 1  # the newline click adds
    assert "- flow-19" in text  # every saved workflow still shown: the nodes cannot take all the room
    assert (
        text.rstrip("\n")
        .splitlines()[-1]
        .endswith(
            "Run `pflow-structure nodes --markdown --query WORDS` (found in names and descriptions) or add "
            "`--kind nodes` or `--kind workflows` to see the rest.]"
        )
    )
    narrowed = invoke("nodes", "--markdown", "--query", "number 1499").stdout
    assert narrowed == "## Available Nodes\n\n- pflow-node-1499: Pflow node number 1499.\n"


@pytest.mark.parametrize(
    ("content", "extra", "error"),
    [
        (b"\xff{}", (), "Error: {file}: not UTF-8 text (byte 0xff at offset 0); save the file as UTF-8 JSON.\n"),
        (b"[" * 100_000 + b"]" * 100_000, (), "Error: {file}: invalid JSON (nested too deeply); flatten the IR.\n"),
        (
            b'{"nodes": [{"id": "a", "type": "b", "params": {"x": "\\ud800"}}]}',
            (),
            "Error: {file}: the IR (at nodes[0].params.x) holds a lone surrogate escape such as \\ud800, which is "
            "not valid Unicode text; fix the file.\n",
        ),
        (
            b'{"nodes": []}',
            ("--description", "bad\udcff"),
            "Error: workflow 'w': the description is not valid Unicode text: it holds a byte that is not UTF-8 or a "
            "lone surrogate escape such as \\ud800. Pass UTF-8 text.\n",
        ),
        (
            b'{"nodes": []}',
            ("--tag", "x\udcff"),
            "Error: workflow 'w': a tag is not valid Unicode text: it holds a byte that is not UTF-8 or a lone "
            "surrogate escape such as \\ud800. Pass UTF-8 text.\n",
        ),
        (
            b'{"nodes": []}',
            ("--description", " \t"),
            "Error: workflow 'w': the description is empty; give one line saying what the workflow does.\n",
        ),
        (
            None,
            (),
            "Error: {file}: cannot be read (No such file or directory); pass a JSON file with the workflow IR, "
            "or - for stdin.\n",
        ),
    ],
)
def test_workflows_save_refuses_bad_input_with_one_error_line_and_writes_nothing(
    tmp_path: Path, workflows_dir: Path, content: bytes | None, extra: tuple[str, ...], error: str
) -> None:
    file = tmp_path / "in.json"
    if content is not None:
        file.write_bytes(content)
    options = extra if "--description" in extra else ("--description", "d", *extra)
    outcome = invoke("workflows", "save", "w", str(file), *options)
    assert (outcome.exit_code, outcome.stdout, outcome.stderr) == (1, "", error.format(file=file))
    assert not workflows_dir.exists()


def test_workflows_save_with_stdin_closed_is_an_error_line(workflows_dir: Path) -> None:
    completed = subprocess.run(
        f"exec {shlex.quote(sys.executable)} -m pflow_structure workflows save w6 - --description d <&-",
        shell=True,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (completed.returncode, completed.stdout) == (1, "")
    assert completed.stderr == "Error: stdin is closed; pass the workflow IR as FILE, or pipe it into stdin.\n"
    assert not workflows_dir.exists()


def test_workflows_list_shows_the_first_line_of_a_multi_line_description(workflows_dir: Path) -> None:
    record = {"name": "multi", "description": "First line\nsecond line\nthird", "ir": {"nodes": []}}
    _write_workflow(workflows_dir, "multi", json.dumps(record))
    assert invoke("workflows", "list").stdout == "multi  First line\n"
    assert json.loads(invoke("workflows", "list", "--json").stdout)[0]["description"] == record["description"]


@pytest.mark.parametrize("args", [("nodes",), ("nodes", "--markdown"), ("workflows", "list")])
def test_read_only_commands_create_no_directory(workflows_dir: Path, args: tuple[str, ...]) -> None:
    assert not workflows_dir.parent.exists() or not workflows_dir.exists()
    outcome = invoke(*args)
    assert outcome.exit_code == 0, outcome.stderr
    assert not workflows_dir.exists()


def test_a_record_named_unlike_its_file_is_listed_shown_described_and_deleted_by_the_file_name(
    workflows_dir: Path,
) -> None:
    path = _write_workflow(
        workflows_dir, "mismatch", json.dumps({"name": "other", "description": "Mismatched", "ir": {"nodes": []}})
    )
    warning = (
        f"Warning: {path} names its workflow 'other'; it is listed as 'mismatch', its file name, which show, "
        "delete and describe use. Set its name to 'mismatch' (or save it again) to silence this warning.\n"
    )
    listed = invoke("workflows", "list")
    assert (listed.stdout, listed.stderr) == ("mismatch  Mismatched\n", warning)
    assert invoke("nodes").stdout.endswith("Saved workflows:\nmismatch  Mismatched\n")
    for args in (("workflows", "show", "mismatch"), ("nodes", "--workflow", "mismatch")):
        shown = invoke(*args)
        assert (shown.exit_code, shown.stderr) == (0, warning)
        assert "### mismatch (workflow)\nMismatched\n" in shown.stdout
    assert invoke("workflows", "show", "other").exit_code == 1
    assert invoke("workflows", "delete", "mismatch", "--yes").stdout == "Deleted workflow 'mismatch'.\n"
    assert not path.exists()


def test_close_matches_ignore_case(ir_file: Path) -> None:
    save_titles(ir_file)
    outcome = invoke("nodes", "--workflow", "TITLES", "--describe", "SHELL")
    assert outcome.exit_code == 1
    assert "- Unknown nodes: SHELL (did you mean shell?)" in outcome.stderr
    assert "- Unknown workflows: TITLES (did you mean titles?)" in outcome.stderr
