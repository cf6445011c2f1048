"""(g) The MCP proxy on two real npm MCP servers: tokens the agent sees, and the latency it adds.

Two clients of the MCP Python SDK (``ClientSession`` over ``stdio_client``) are open at once on
each server: one connected to the npm server directly, one to ``python -m pflow_structure proxy
-- <the same command>``. Every call runs on both, interleaved (the order alternates), once
untimed and then ``repeats`` times timed; a call's latency is the median of its timed repeats,
and the proxy's is shown as a ratio to the direct one measured in the same run.

Tokens are ``visible_tokens`` of the result's JSON form (``model_dump(by_alias=True,
exclude_none=True, mode="json")``): every text block, plus structuredContent unless it
duplicates the text. Random parts are replaced before counting (execution ids by a fixed id of
the same length, the temporary directory by a fixed path), so counts repeat from run to run.

A cached answer is followed in practice by a ``read_fields`` call; one typical follow-up per
server is measured too, and its tokens are added to the proxy's side in the follow-up rows.

The servers come from ``$PFLOW_STRUCTURE_NPM_SERVERS/node_modules/.bin`` (default
``<repo>/.npm-servers``); without them (or without node) the benchmark reports how to install
them instead of failing. The memory server gets one file per client (``MEMORY_FILE_PATH``) and
both clients run the same sequence, so their graphs are equal. The proxy's cache and failure
log go to the run's temporary directory.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from common import CORPUS, FIXED_ID, REPO, Context, row

NPM_PACKAGES = "@modelcontextprotocol/server-filesystem@2026.8.31 @modelcontextprotocol/server-memory@2026.8.31"
SKIP_MESSAGE = f"skipped: run npm install --prefix .npm-servers {NPM_PACKAGES}"
SHARED_CORPUS = Path("/work/shared/corpus")  # the corpus's canonical copy; tests/corpus holds the same files
SHOWN_WORKDIR = "/tmp/pflow-structure-bench-0a1b2c3d"  # shown in place of the run's temporary directory
EXECUTION_ID = re.compile(r"exec-\d+-[0-9a-f]{8}")
CALL_TIMEOUT = 300.0  # seconds; a hung server fails the benchmark instead of hanging the run
SIDES = ("direct", "proxy")


def npm_bin() -> Path:
    base = os.environ.get("PFLOW_STRUCTURE_NPM_SERVERS") or str(REPO / ".npm-servers")
    return Path(base).expanduser() / "node_modules" / ".bin"


def _missing() -> str | None:
    """Why the benchmark cannot run here, or None."""
    binaries = [npm_bin() / name for name in ("mcp-server-filesystem", "mcp-server-memory")]
    if not all(path.exists() for path in binaries):
        return SKIP_MESSAGE
    if shutil.which("node") is None:
        return "skipped: node is not on PATH (the npm servers need it)"
    try:
        import mcp.client.stdio  # noqa: F401
    except ImportError:
        return "skipped: the MCP Python SDK is not installed (pip install mcp)"
    return None


# -- the inputs: a generated project tree, a flat directory, a corpus file, a knowledge graph -----

PACKAGES = [
    "accounts", "analytics", "api", "auth", "billing", "cache", "cli", "core", "db", "events",
    "export", "i18n", "jobs", "mail", "metrics", "notify", "search", "storage", "sync", "webhooks",
]  # fmt: skip
MODULES = [
    "__init__", "client", "config", "errors", "handlers", "models",
    "schemas", "service", "tasks", "utils", "validators", "views",
]  # fmt: skip
FIXTURE_KINDS = ["request", "response", "event", "record", "payload", "snapshot", "error"]
DOC_TOPICS = ["adr", "guide", "howto", "runbook", "reference", "rfc"]


def build_tree(root: Path, smoke: bool) -> int:
    """A Python project's layout: packages with modules, tests and JSON fixtures, plus docs; entries made."""
    packages = PACKAGES[:4] if smoke else PACKAGES
    fixtures = 10 if smoke else 70
    docs = 20 if smoke else 120
    entries = 0

    def write(path: Path, text: str) -> None:
        nonlocal entries
        path.write_text(text, encoding="utf-8")
        entries += 1

    def mkdir(path: Path) -> None:
        nonlocal entries
        path.mkdir()
        entries += 1

    root.mkdir(parents=True)
    for top in ("README.md", "pyproject.toml", "CHANGELOG.md"):
        write(root / top, f"# {top}\n")
    mkdir(root / "src")
    mkdir(root / "docs")
    for i in range(docs):
        write(root / "docs" / f"{DOC_TOPICS[i % len(DOC_TOPICS)]}-{i:03d}.md", f"# Document {i}\n")
    for package in packages:
        base = root / "src" / package
        mkdir(base)
        for module in MODULES:
            write(base / f"{module}.py", f'"""{package}.{module}"""\n')
        mkdir(base / "tests")
        for module in MODULES:
            write(base / "tests" / f"test_{module.strip('_') or 'init'}.py", "def test_it():\n    pass\n")
        mkdir(base / "fixtures")
        for i in range(fixtures):
            write(base / "fixtures" / f"{FIXTURE_KINDS[i % len(FIXTURE_KINDS)]}_{i:03d}.json", "{}\n")
    return entries


def build_flat(directory: Path, smoke: bool) -> int:
    """A downloads-like directory: one file per day's export, a few folders."""
    count = 60 if smoke else 300
    directory.mkdir(parents=True)
    for i in range(count):
        kind = ("invoice", "orders", "report", "usage")[i % 4]
        day = dt_string(i)
        ext = ("csv", "json", "pdf", "xlsx")[i % 4]
        (directory / f"{kind}-{day}.{ext}").write_text("x\n", encoding="utf-8")
    for folder in ("archive", "drafts", "shared"):
        (directory / folder).mkdir()
    return count + 3


def dt_string(i: int) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(1_735_689_600 + i * 86_400))  # from 2025-01-01


FIRST = [
    "Ada", "Amara", "Ben", "Carlos", "Chen", "Dana", "Elena", "Farah", "Gabriel", "Hana", "Ines", "Jonas",
    "Kai", "Lea", "Malik", "Maya", "Nikhil", "Olga", "Pedro", "Priya", "Quinn", "Rosa", "Sam", "Sofia",
    "Tariq", "Uma", "Victor", "Wen", "Yara", "Zoe",
]  # fmt: skip
LAST = [
    "Alvarez", "Baker", "Costa", "Dubois", "Eriksen", "Fischer", "Garcia", "Haddad", "Ibrahim", "Jensen",
    "Kowalski", "Lindqvist", "Moreau", "Nakamura", "Okafor", "Petrov", "Quintero", "Rossi", "Schmidt",
    "Tanaka", "Usman", "Varga", "Wagner", "Xu", "Yilmaz", "Zhang",
]  # fmt: skip
ROLES = [
    "Senior Backend Engineer", "Data Engineer", "Frontend Engineer", "Product Manager", "Product Designer",
    "Engineering Manager", "Site Reliability Engineer", "Sales Lead", "Customer Success Manager", "CTO",
]  # fmt: skip
SKILLS = ["PostgreSQL", "Kubernetes", "TypeScript", "Rust", "pricing", "user research", "Terraform", "Go", "Kafka"]
CITIES = [
    ("Lisbon", "Portugal", "Europe/Lisbon"), ("Berlin", "Germany", "Europe/Berlin"),
    ("Nairobi", "Kenya", "Africa/Nairobi"), ("Toronto", "Canada", "America/Toronto"),
    ("Singapore", "Singapore", "Asia/Singapore"), ("Austin", "United States", "America/Chicago"),
    ("Warsaw", "Poland", "Europe/Warsaw"), ("Osaka", "Japan", "Asia/Tokyo"),
    ("Sao Paulo", "Brazil", "America/Sao_Paulo"), ("Bangalore", "India", "Asia/Kolkata"),
]  # fmt: skip
ORG_WORDS = ["North", "Blue", "Bright", "Iron", "Silver", "Cedar", "Quantum", "Harbor", "Summit", "Atlas"]
ORG_NOUNS = ["wind", "field", "stone", "bridge", "leaf", "works", "path", "forge", "line", "gate"]
ORG_KINDS = ["Analytics", "Logistics", "Health", "Robotics", "Payments", "Energy", "Labs", "Media"]
CODENAMES = ["Aurora", "Basalt", "Comet", "Delta", "Ember", "Falcon", "Glacier", "Helix", "Ion", "Juniper"]
STATUSES = ["planning", "in progress", "blocked on security review", "shipped", "paused"]


def build_graph(count: int) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """``count`` made-up entities (people, organizations, projects, cities) and their relations."""
    rng = random.Random(20261122)
    cities = CITIES[: max(2, count // 50)]
    n_orgs = max(3, count // 6)
    n_projects = max(3, count // 8)
    n_people = count - len(cities) - n_orgs - n_projects
    orgs = [f"{w}{n} {k}" for w in ORG_WORDS for n in ORG_NOUNS for k in ORG_KINDS]
    rng.shuffle(orgs)
    orgs = orgs[:n_orgs]
    projects = [f"Project {c} {i + 1}" for i, c in enumerate(CODENAMES * (n_projects // len(CODENAMES) + 1))]
    projects = projects[:n_projects]
    people = [f"{f} {last}" for f in FIRST for last in LAST]
    rng.shuffle(people)
    people = people[:n_people]
    entities: list[dict[str, Any]] = []
    relations: list[dict[str, str]] = []
    for city, country, zone in cities:
        entities.append(
            {"name": city, "entityType": "city", "observations": [f"Country: {country}", f"Time zone: {zone}"]}
        )
    org_city: dict[str, str] = {}
    for org in orgs:
        city = rng.choice(cities)[0]
        org_city[org] = city
        entities.append(
            {
                "name": org,
                "entityType": "organization",
                "observations": [
                    f"Headquartered in {city}",
                    f"Founded in {rng.randint(1998, 2023)}",
                    f"About {rng.choice([12, 40, 85, 150, 400, 1200])} employees",
                    f"Customer since {rng.randint(2019, 2026)}; renews in {rng.choice(['Q1', 'Q2', 'Q3', 'Q4'])}",
                ],
            }
        )
        relations.append({"from": org, "to": city, "relationType": "headquartered_in"})
    for project in projects:
        owner = rng.choice(orgs)
        entities.append(
            {
                "name": project,
                "entityType": "project",
                "observations": [
                    f"Owned by {owner}",
                    f"Status: {rng.choice(STATUSES)}",
                    f"Built with {rng.choice(SKILLS)} and {rng.choice(SKILLS)}",
                ],
            }
        )
        relations.append({"from": project, "to": owner, "relationType": "owned_by"})
    for i, person in enumerate(people):
        org = rng.choice(orgs)
        role = rng.choice(ROLES)
        observations = [
            f"{role} at {org}",
            f"Based in {rng.choice(cities)[0]}",
            f"Knows {rng.choice(SKILLS)} well",
        ]
        if i % 3 == 0:
            observations.append(f"Prefers {rng.choice(['email', 'Slack', 'a call'])} for follow-ups")
        if i % 5 == 0:
            place = rng.choice(["conference", "meetup", "customer workshop"])
            observations.append(f"Met at a {place} in {2020 + i % 6}")
        entities.append({"name": person, "entityType": "person", "observations": observations})
        relations.append({"from": person, "to": org, "relationType": "works_at"})
        if i % 2 == 0:
            relations.append({"from": person, "to": rng.choice(projects), "relationType": "contributes_to"})
        if i % 4 == 1 and i > 0:
            relations.append({"from": person, "to": people[rng.randrange(i)], "relationType": "knows"})
    return entities, relations


# -- the calls ------------------------------------------------------------------------------------


@dataclass
class Call:
    server: str  # "filesystem" or "memory"
    label: str  # shown in the tables
    tool: str
    arguments: dict[str, Any]
    reset: tuple[str, dict[str, Any]] | None = None  # untimed call before every run but the first
    follow_up: tuple[str, int] | None = None  # (path, limit) read from the proxy's cached answer


@dataclass
class Server:
    name: str
    command: list[str]
    env: dict[str, dict[str, str]]  # per side: added to the environment
    setup: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # untimed, after the first call
    calls: list[Call] = field(default_factory=list)


def plan(ctx: Context) -> tuple[list[Server], dict[str, Any]]:
    """Build the inputs in the workdir; the servers with their calls, and what was built."""
    fs = ctx.workdir / "mcp-fs"
    project = fs / "project"
    entries = build_tree(project, ctx.smoke)
    flat = fs / "downloads"
    flat_entries = build_flat(flat, ctx.smoke)
    corpus = SHARED_CORPUS if SHARED_CORPUS.is_dir() else CORPUS
    data_name = "github__list_releases.json" if ctx.smoke else "github__list_issues.json"
    (fs / "data").mkdir()
    data = fs / "data" / data_name
    shutil.copyfile(corpus / data_name, data)  # a copy: the corpus is read-only and stays untouched
    count = 60 if ctx.smoke else 500
    entities, relations = build_graph(count)
    names = [e["name"] for e in entities]
    people = [e["name"] for e in entities if e["entityType"] == "person"]
    bin_dir = npm_bin()
    filesystem = Server(
        "filesystem",
        [str(bin_dir / "mcp-server-filesystem"), str(fs)],
        {side: {} for side in SIDES},
        calls=[
            Call(
                "filesystem",
                f"directory_tree ({entries:,} entries)",
                "directory_tree",
                {"path": str(project)},
                follow_up=("result[*].name", 20),
            ),
            Call("filesystem", f"list_directory ({flat_entries} entries)", "list_directory", {"path": str(flat)}),
            Call(
                "filesystem",
                f"search_files `**/test_*.py` ({entries:,}-entry tree)",
                "search_files",
                {"path": str(project), "pattern": "**/test_*.py"},
            ),
            Call(
                "filesystem",
                f"read_text_file {data_name} ({data.stat().st_size / 1000:,.0f} KB)",
                "read_text_file",
                {"path": str(data)},
            ),
            Call("filesystem", "list_allowed_directories", "list_allowed_directories", {}),
            Call("filesystem", "get_file_info", "get_file_info", {"path": str(data)}),
        ],
    )
    memory = Server(
        "memory",
        [str(bin_dir / "mcp-server-memory")],
        {side: {"MEMORY_FILE_PATH": str(ctx.workdir / f"memory-{side}.jsonl")} for side in SIDES},
        setup=[("create_relations", {"relations": relations})],
        calls=[
            Call(
                "memory",
                f"create_entities ({len(entities)} entities)",
                "create_entities",
                {"entities": entities},
                reset=("delete_entities", {"entityNames": names}),
            ),
            Call(
                "memory",
                f"read_graph ({len(entities)} entities, {len(relations)} relations)",
                "read_graph",
                {},
                follow_up=("result.entities[*].name", 20),
            ),
            Call("memory", "search_nodes `Lisbon`", "search_nodes", {"query": "Lisbon"}),
            Call("memory", "open_nodes (20 people)", "open_nodes", {"names": people[:20]}),
        ],
    )
    built = {
        "tree_entries": entries,
        "flat_entries": flat_entries,
        "data_file": data_name,
        "data_bytes": data.stat().st_size,
        "entities": len(entities),
        "relations": len(relations),
    }
    return [filesystem, memory], built


# -- measuring ------------------------------------------------------------------------------------


def _as_dict(result: Any) -> dict[str, Any]:
    found: dict[str, Any] = result.model_dump(by_alias=True, exclude_none=True, mode="json")
    return found


def _stable(result: dict[str, Any], workdir: Path) -> dict[str, Any]:
    """The result with its random parts (execution ids, the temporary directory) fixed."""
    text = json.dumps(result, ensure_ascii=False).replace(str(workdir), SHOWN_WORKDIR)
    stable: dict[str, Any] = json.loads(EXECUTION_ID.sub(FIXED_ID, text))
    return stable


def _kind(direct: dict[str, Any], proxied: dict[str, Any]) -> str:
    """What the proxy made of the result: cached (a structure), compacted (JSON), formatted, or passed."""
    if _cached(proxied) is not None:
        return "cached"
    if proxied.get("content") == direct.get("content"):
        return "passed"
    texts = [block.get("text", "") for block in proxied.get("content", [])]
    try:
        [json.loads(text) for text in texts]
    except ValueError:
        return "formatted"
    return "compacted"


def _cached(result: dict[str, Any]) -> dict[str, Any] | None:
    """The proxy's cached answer read back from its text (tests/structure_text.py), or None for another answer."""
    from tests.structure_text import CACHED_HEAD, cached

    content = result.get("content") or [{}]
    if result.get("isError") or not CACHED_HEAD.match(content[0].get("text", "")):
        return None
    return cached(result)


async def _connect(stack: AsyncExitStack, command: list[str], env: dict[str, str], errlog: TextIO) -> Any:
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    parameters = StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=str(REPO))
    read_stream, write_stream = await stack.enter_async_context(stdio_client(parameters, errlog=errlog))
    session = await stack.enter_async_context(ClientSession(read_stream, write_stream))
    with anyio.fail_after(CALL_TIMEOUT):
        await session.initialize()
    return session


async def _call(session: Any, tool: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], float]:
    import anyio

    start = time.perf_counter()
    with anyio.fail_after(CALL_TIMEOUT):
        result = await session.call_tool(tool, arguments)
    elapsed = time.perf_counter() - start
    answer = _as_dict(result)
    if answer.get("isError"):
        raise RuntimeError(f"{tool} answered with an error: {json.dumps(answer)[:2000]}")
    return answer, elapsed


async def _measure_server(
    server: Server, ctx: Context, repeats: int, errlog: TextIO, count: Callable[[str], int]
) -> dict[str, Any]:
    from pflow_structure.mcp.proxy.shaping import visible_tokens

    base_env = dict(os.environ)
    proxy_env = {
        "PFLOW_STRUCTURE_CACHE_DIR": str(ctx.workdir / "proxy-cache"),
        "PFLOW_STRUCTURE_FAILURE_LOG": str(ctx.workdir / "proxy-failures.jsonl"),
    }
    commands = {
        "direct": server.command,
        "proxy": [sys.executable, "-m", "pflow_structure", "proxy", "--", *server.command],
    }
    sessions: dict[str, Any] = {}
    startup: dict[str, float] = {}
    calls: list[dict[str, Any]] = []
    async with AsyncExitStack() as stack:
        for side in SIDES:
            env = {**base_env, **server.env[side], **(proxy_env if side == "proxy" else {})}
            start = time.perf_counter()
            sessions[side] = await _connect(stack, commands[side], env, errlog)
            startup[side] = time.perf_counter() - start
        listed = _as_dict(await sessions["proxy"].list_tools())
        listed_names = {tool["name"] for tool in listed["tools"]}
        # the proxy calls its tool pflow_structure_read_fields when the downstream has a read_fields
        read_tool = "pflow_structure_read_fields" if "pflow_structure_read_fields" in listed_names else "read_fields"
        if read_tool not in listed_names:
            raise RuntimeError(f"the proxy does not list read_fields: {sorted(listed_names)}")
        for index, call in enumerate(server.calls):
            first: dict[str, dict[str, Any]] = {}
            first_s: dict[str, float] = {}
            times: dict[str, list[float]] = {side: [] for side in SIDES}
            for run in range(1 + repeats):
                order = SIDES if run % 2 == 0 else SIDES[::-1]
                for side in order:
                    if run > 0 and call.reset is not None:
                        await _call(sessions[side], *call.reset)
                    answer, elapsed = await _call(sessions[side], call.tool, call.arguments)
                    if run == 0:
                        first[side], first_s[side] = answer, elapsed
                    else:
                        times[side].append(elapsed)
            if index == 0:
                for side in SIDES:
                    for tool, arguments in server.setup:
                        await _call(sessions[side], tool, arguments)
            shown = {side: _stable(first[side], ctx.workdir) for side in SIDES}
            tokens = {side: visible_tokens(shown[side], count) for side in SIDES}
            medians = {side: statistics.median(times[side]) for side in SIDES}
            entry: dict[str, Any] = {
                "server": server.name,
                "call": call.label,
                "tool": call.tool,
                "kind": _kind(first["direct"], first["proxy"]),
                "tokens_direct": tokens["direct"],
                "tokens_proxy": tokens["proxy"],
                "median_ms_direct": round(medians["direct"] * 1000, 2),
                "median_ms_proxy": round(medians["proxy"] * 1000, 2),
                "first_ms_direct": round(first_s["direct"] * 1000, 2),
                "first_ms_proxy": round(first_s["proxy"] * 1000, 2),
                "latency_ratio": round(medians["proxy"] / medians["direct"], 2),
                "repeats": repeats,
            }
            if call.follow_up is not None:
                entry["follow_up"] = await _follow_up(
                    sessions["proxy"], read_tool, first["proxy"], call.follow_up, repeats, ctx.workdir, count
                )
            calls.append(entry)
            print(
                f"   {server.name} {call.tool}: {tokens['direct']:,} -> {tokens['proxy']:,} tokens ({entry['kind']}); "
                f"{entry['median_ms_direct']:.1f} -> {entry['median_ms_proxy']:.1f} ms",
                flush=True,
            )
    return {"startup_ms": {side: round(s * 1000, 1) for side, s in startup.items()}, "calls": calls}


async def _follow_up(
    session: Any,
    read_tool: str,
    cached: dict[str, Any],
    follow_up: tuple[str, int],
    repeats: int,
    workdir: Path,
    count: Callable[[str], int],
) -> dict[str, Any]:
    """One read_fields call on the proxy's cached answer, as an agent would make next."""
    from pflow_structure.mcp.proxy.shaping import visible_tokens

    structured = _cached(cached)
    if structured is None:
        return {"skipped": "the proxy did not cache this result (it fit the budget)"}
    path, limit = follow_up
    template = path.replace("[*]", "[0]")
    if template not in structured["structure"]:
        raise RuntimeError(f"{template} is not in the structure the proxy gave: {list(structured['structure'])[:20]}")
    arguments = {"execution_id": structured["execution_id"], "field_paths": [path], "limit": limit}
    times = []
    answer: dict[str, Any] = {}
    for _ in range(max(1, repeats)):
        answer, elapsed = await _call(session, read_tool, arguments)
        times.append(elapsed)
    shown = _stable(answer, workdir)
    values = (answer.get("structuredContent") or {}).get(path)
    as_text, _ = await _call(session, read_tool, {**arguments, "format": "auto"})
    return {
        "tool": read_tool,
        "arguments": {"field_paths": [path], "limit": limit},
        "tokens": visible_tokens(shown, count),
        "tokens_format_auto": visible_tokens(_stable(as_text, workdir), count),
        "values_returned": len(values) if isinstance(values, list) else None,
        "median_ms": round(statistics.median(times) * 1000, 2),
    }


def _failure_lines(ctx: Context) -> list[dict[str, Any]]:
    """The proxy's failure log: one record per result it could not shape (and answered unchanged)."""
    log = ctx.workdir / "proxy-failures.jsonl"
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]


def bench_proxy(ctx: Context) -> dict[str, Any]:
    reason = _missing()
    if reason is not None:
        print(f"   {reason}", flush=True)
        return {
            "skipped": reason,
            "rows": [row("(g) MCP proxy, filesystem + memory npm servers", reason, "none", None)],
        }
    import anyio

    from pflow_structure.render.tokens import count_tokens
    from pflow_structure.render.tokens import method as count_method

    servers, built = plan(ctx)
    repeats = 2 if ctx.smoke else 7
    per_server: dict[str, Any] = {}
    with open(ctx.workdir / "mcp-servers-stderr.log", "w", encoding="utf-8") as errlog:
        for server in servers:
            try:
                per_server[server.name] = anyio.run(_measure_server, server, ctx, repeats, errlog, count_tokens)
            except Exception as exc:
                errlog.flush()
                tail = (ctx.workdir / "mcp-servers-stderr.log").read_text(encoding="utf-8")[-2000:]
                raise RuntimeError(f"{server.name}: {exc!r}; server stderr ends:\n{tail}") from exc
    failures = _failure_lines(ctx)
    calls = [entry for found in per_server.values() for entry in found["calls"]]
    for entry in calls:  # a result the proxy failed to shape was answered unchanged: say why
        errors = [record["error"] for record in failures if record.get("operation") == entry["tool"]]
        if errors:
            entry["proxy_failures"] = len(errors)
            entry["kind"] += f"; shaping failed {len(errors)}x and was logged: {errors[0].split(':')[0]}"
    return {
        "token_method": count_method(),
        "repeats": repeats,
        "built": built,
        "startup_ms": {name: found["startup_ms"] for name, found in per_server.items()},
        "calls": calls,
        "proxy_failure_log": failures,
        "rows": _rows(calls, per_server, repeats, failures),
    }


def _rows(
    calls: list[dict[str, Any]], per_server: dict[str, Any], repeats: int, failures: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    from pflow_structure.render.tokens import ENCODING, method

    unit = "tokens" if method() == ENCODING else f"tokens, {method()}"
    rows = []
    for entry in calls:
        direct, proxied = entry["tokens_direct"], entry["tokens_proxy"]
        rows.append(
            row(
                f"(g) proxy tokens, {entry['server']} {entry['call']}",
                f"{proxied:,} {unit} ({entry['kind']})",
                "none",
                None,
                reference=f"direct {direct:,} tokens",
                ratio=_times_less(direct, proxied),
            )
        )
    total_direct = sum(e["tokens_direct"] for e in calls)
    total_proxy = sum(e["tokens_proxy"] for e in calls)
    rows.append(
        row(
            f"(g) proxy tokens, all {len(calls)} calls",
            f"{total_proxy:,} {unit}",
            "none",
            None,
            reference=f"direct {total_direct:,} tokens",
            ratio=_times_less(total_direct, total_proxy),
        )
    )
    for entry in calls:
        follow = entry.get("follow_up")
        if not follow or "tokens" not in follow:
            continue
        both = entry["tokens_proxy"] + follow["tokens"]
        rows.append(
            row(
                f"(g) proxy answer + one `{follow['tool']}` follow-up ({follow['arguments']['field_paths'][0]}, "
                f"limit {follow['arguments']['limit']}), {entry['server']} {entry['tool']}",
                f"{both:,} {unit} ({entry['tokens_proxy']:,} + {follow['tokens']:,}); "
                f'with format="auto": {entry["tokens_proxy"] + follow["tokens_format_auto"]:,} '
                f"({entry['tokens_proxy']:,} + {follow['tokens_format_auto']:,})",
                "none",
                None,
                reference=f"direct {entry['tokens_direct']:,} tokens",
                ratio=_times_less(entry["tokens_direct"], both),
            )
        )
    sum_direct = sum(e["median_ms_direct"] for e in calls)
    sum_proxy = sum(e["median_ms_proxy"] for e in calls)
    per_call = ", ".join(f"{e['tool']} {e['latency_ratio']:.1f}x" for e in calls)
    rows.append(
        row(
            f"(g) proxy latency, sum of per-call medians ({repeats} repeats each)",
            f"{sum_proxy:,.0f} ms through the proxy",
            "none",
            None,
            reference=f"direct {sum_direct:,.0f} ms",
            ratio=f"{sum_proxy / max(sum_direct, 1e-9):.1f}x overall; per call: {per_call}",
        )
    )
    startup = {name: found["startup_ms"] for name, found in per_server.items()}
    rows.append(
        row(
            "(g) start-up, spawn to initialize answered (one start each)",
            "proxy " + "; ".join(f"{name} {ms['proxy']:,.0f} ms" for name, ms in startup.items()),
            "none",
            None,
            reference="direct " + "; ".join(f"{name} {ms['direct']:,.0f} ms" for name, ms in startup.items()),
            ratio="; ".join(f"{name} {ms['proxy'] / max(ms['direct'], 1e-9):.1f}x" for name, ms in startup.items()),
        )
    )
    if failures:
        by_tool: dict[str, int] = {}
        for record in failures:
            by_tool[str(record.get("operation"))] = by_tool.get(str(record.get("operation")), 0) + 1
        rows.append(
            row(
                "(g) proxy failure log: results it could not shape, answered unchanged",
                f"{len(failures)} lines: " + ", ".join(f"{tool} x{n}" for tool, n in by_tool.items()),
                "none (each line is a result the proxy did not shape)",
                None,
                reference=str(failures[0].get("error", ""))[:120],
            )
        )
    return rows


def _times_less(direct: int, proxied: int) -> str:
    if proxied <= 0:
        return "-"
    ratio = direct / proxied
    return f"direct/proxy {ratio:,.0f}x" if ratio >= 10 else f"direct/proxy {ratio:.2f}x"
