"""Settings, built at the edge from environment variables (core modules take arguments).

==================================  =======================================  ==============
variable                            meaning                                  default
==================================  =======================================  ==============
``PFLOW_STRUCTURE_CACHE_DIR``       execution cache directory                ~/.pflow/cache/node-executions
``PFLOW_STRUCTURE_CACHE_URL``       shared cache in Redis (redis://...)       unset: the directory
``PFLOW_STRUCTURE_TTL_HOURS``       hours an execution stays readable        24
``PFLOW_STRUCTURE_MAX_CACHE_SIZE``  cache size cap (bytes, or 500MB, 2GB)      1GB
``PFLOW_STRUCTURE_MAX_PATHS``       most paths listed in one structure        500
``PFLOW_STRUCTURE_FAILURE_LOG``     failure log, JSON lines (failure_log.py)  ~/.pflow/logs/...
``PFLOW_STRUCTURE_WORKFLOWS_DIR``   saved workflows, one ``{name}.json`` each  ~/.pflow/workflows
``PFLOW_STRUCTURE_PFLOW_REGISTRY``  pflow's node registry (read only)         ~/.pflow/registry.json
``PFLOW_STRUCTURE_MAX_REFERENCE_SIZE`` most bytes ``${exec-ID:PATH}`` puts     20MB
                                    into one call's arguments
``PFLOW_STRUCTURE_MAX_MESSAGE_SIZE`` longest JSON-RPC line the proxy reads  256MB
                                    (from its client or a stdio server)
``PFLOW_STRUCTURE_WANT_MODEL``      ``wordllama``: embeddings help ``want``  unset: names only
                                    (pip install 'pflow-structure[want]')
``PFLOW_STRUCTURE_ANSWER_BUDGET``   most o200k tokens in one answer          8000, or the
                                    (read_fields, fields, run; pages past it)  MCP client's
                                                                             (docs/budgets.md)
``PFLOW_STRUCTURE_WANT_BUDGET``     most o200k tokens in a ``want`` answer     1500
                                    (its values and map; max_tokens per call)
``PFLOW_STRUCTURE_PROXY_KEEP_TEXT`` ``1``: the proxy passes a small JSON text   unset: compact
                                    on as the server wrote it
==================================  =======================================  ==============
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from pflow_structure.cache.store import DEFAULT_MAX_BYTES, DEFAULT_TTL_HOURS, ExecutionCache, default_cache_dir
from pflow_structure.cache.urls import SCHEMES, redact_url
from pflow_structure.errors import ParameterError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from pflow_structure.cache.backend import CacheBackend
    from pflow_structure.filtering.options import FilterOptions

_INFINITY = float("inf")  # not math.inf: importing math is about 0.3 ms of read-fields' start-up
ENV_CACHE_DIR = "PFLOW_STRUCTURE_CACHE_DIR"
ENV_CACHE_URL = "PFLOW_STRUCTURE_CACHE_URL"
ENV_TTL_HOURS = "PFLOW_STRUCTURE_TTL_HOURS"
ENV_MAX_CACHE_SIZE = "PFLOW_STRUCTURE_MAX_CACHE_SIZE"
ENV_MAX_PATHS = "PFLOW_STRUCTURE_MAX_PATHS"
ENV_FAILURE_LOG = "PFLOW_STRUCTURE_FAILURE_LOG"
ENV_WORKFLOWS_DIR = "PFLOW_STRUCTURE_WORKFLOWS_DIR"
ENV_PFLOW_REGISTRY = "PFLOW_STRUCTURE_PFLOW_REGISTRY"
ENV_MAX_REFERENCE_SIZE = "PFLOW_STRUCTURE_MAX_REFERENCE_SIZE"
ENV_MAX_MESSAGE_SIZE = "PFLOW_STRUCTURE_MAX_MESSAGE_SIZE"
ENV_ANSWER_BUDGET = "PFLOW_STRUCTURE_ANSWER_BUDGET"
ENV_WANT_BUDGET = "PFLOW_STRUCTURE_WANT_BUDGET"
ENV_PROXY_KEEP_TEXT = "PFLOW_STRUCTURE_PROXY_KEEP_TEXT"
DEFAULT_WANT_BUDGET = 1500  # o200k tokens: a want answer's values and map (issue 35: values a question needs ~100)
DEFAULT_ANSWER_BUDGET = 8000  # o200k tokens: under Claude Code's 10,000 warning and Codex's ~10 KiB
DEFAULT_MAX_MESSAGE_BYTES = 256 * 1024**2
# The defaults of the core modules, written out so that building settings (every read-fields
# call) does not import the structure inference, the filter and the reference resolver for five
# numbers; tests/test_service.py checks that each equals its source.
DEFAULT_MAX_PATHS = 500  # pflow_structure.structure.DEFAULT_MAX_PATHS
DEFAULT_MAX_REFERENCE_BYTES = 20 * 1024**2  # pflow_structure.values.references.DEFAULT_MAX_REFERENCE_BYTES
FILTER_MODES = ("auto", "llm", "heuristic", "off")  # pflow_structure.filtering.options.MODES
DEFAULT_FILTER_THRESHOLD = 50  # pflow_structure.filtering.options.DEFAULT_THRESHOLD
DEFAULT_FILTER_TARGET = 40  # pflow_structure.filtering.options.DEFAULT_TARGET
DEFAULT_FILTER_TIMEOUT = 2.0  # pflow_structure.filtering.options.DEFAULT_TIMEOUT
ENV_FILTER = "PFLOW_STRUCTURE_FILTER"
ENV_FILTER_THRESHOLD = "PFLOW_STRUCTURE_FILTER_THRESHOLD"
ENV_FILTER_TARGET = "PFLOW_STRUCTURE_FILTER_TARGET"
ENV_FILTER_MODEL = "PFLOW_STRUCTURE_FILTER_MODEL"
ENV_FILTER_TIMEOUT = "PFLOW_STRUCTURE_FILTER_TIMEOUT"
ENV_FILTER_API_BASE = "PFLOW_STRUCTURE_FILTER_API_BASE"
ENV_WANT_MODEL = "PFLOW_STRUCTURE_WANT_MODEL"
_FIELDS = (
    "cache_dir",
    "ttl_hours",
    "max_cache_bytes",
    "max_paths",
    "failure_log",
    "filtering",
    "workflows_dir",
    "pflow_registry",
    "cache_url",
    "max_reference_bytes",
    "answer_budget",
    "answer_max_bytes",
    "answer_max_lines",
    "answer_budget_set",
    "want_budget",
    "keep_upstream_text",
)
_UNITS = {"": 1, "b": 1, "kb": 1024, "mb": 1024**2, "gb": 1024**3, "tb": 1024**4}


class Settings:
    """Configuration for one service call; adapters build it once.

    A plain class rather than a dataclass: ``dataclasses`` imports ``inspect``, which is a
    tenth of ``read-fields``' start-up.
    """

    __slots__ = (
        "_filter_values",
        "_filtering",
        "answer_budget",
        "answer_budget_set",
        "answer_max_bytes",
        "answer_max_lines",
        "cache_dir",
        "cache_url",
        "failure_log",
        "keep_upstream_text",
        "max_cache_bytes",
        "max_paths",
        "max_reference_bytes",
        "pflow_registry",
        "ttl_hours",
        "want_budget",
        "workflows_dir",
    )

    def __init__(
        self,
        cache_dir: Path | None = None,
        ttl_hours: float = DEFAULT_TTL_HOURS,
        max_cache_bytes: int = DEFAULT_MAX_BYTES,
        max_paths: int = DEFAULT_MAX_PATHS,
        failure_log: Path | None = None,
        filtering: FilterOptions | None = None,
        workflows_dir: Path | None = None,
        pflow_registry: Path | None = None,
        cache_url: str | None = None,
        max_reference_bytes: int = DEFAULT_MAX_REFERENCE_BYTES,
        answer_budget: int = DEFAULT_ANSWER_BUDGET,
        answer_max_bytes: int | None = None,
        answer_max_lines: int | None = None,
        answer_budget_set: bool | None = None,
        want_budget: int = DEFAULT_WANT_BUDGET,
        keep_upstream_text: bool = False,
    ) -> None:
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.ttl_hours = ttl_hours
        self.max_cache_bytes = max_cache_bytes
        self.max_paths = max_paths
        self.failure_log = Path(failure_log) if failure_log is not None else default_failure_log()
        self._filtering = filtering  # None: FilterOptions() (of _filter_values), built on first use
        self._filter_values: dict[str, Any] = {}
        self.workflows_dir = Path(workflows_dir) if workflows_dir is not None else default_workflows_dir()
        self.pflow_registry = Path(pflow_registry) if pflow_registry is not None else default_pflow_registry()
        self.cache_url = cache_url or None
        self.max_reference_bytes = max_reference_bytes
        self.answer_budget = answer_budget  # most o200k tokens in one answer (render/budget.py)
        # A client that cuts by bytes or lines (service/clients.py) bounds them too (render/limits.py).
        self.answer_max_bytes = answer_max_bytes
        self.answer_max_lines = answer_max_lines
        if answer_budget_set is None:  # chosen by a setting or the caller: a client's row does not replace it
            answer_budget_set = answer_budget != DEFAULT_ANSWER_BUDGET
        self.answer_budget_set = answer_budget_set
        self.want_budget = want_budget  # most o200k tokens in a want answer (service/want_answer.py)
        self.keep_upstream_text = keep_upstream_text  # the proxy passes small JSON text on byte for byte

    def _fields(self) -> tuple[Any, ...]:
        return (
            self.cache_dir,
            self.ttl_hours,
            self.max_cache_bytes,
            self.max_paths,
            self.failure_log,
            self.filtering,
            self.workflows_dir,
            self.pflow_registry,
            self.cache_url,
            self.max_reference_bytes,
            self.answer_budget,
            self.answer_max_bytes,
            self.answer_max_lines,
            self.answer_budget_set,
            self.want_budget,
            self.keep_upstream_text,
        )

    @property
    def filtering(self) -> FilterOptions:
        """How to filter; built when first asked for, so that reading values never imports the filter."""
        if self._filtering is None:
            from pflow_structure.filtering.options import FilterOptions

            self._filtering = FilterOptions(**self._filter_values)
        return self._filtering

    def filter_options(self) -> FilterOptions:
        """The filter options, with the decision cache beside the execution cache unless set."""
        options = self.filtering
        if options.decisions_dir is None:
            options = options._replace(decisions_dir=self.cache_dir.parent / "filter-decisions")
        if self.cache_url and options.decision_store is None and options.mode in ("auto", "llm"):
            from pflow_structure.cache.redis_decisions import RedisDecisionCache
            from pflow_structure.filtering.decisions import DEFAULT_TTL_DAYS

            options = options._replace(decision_store=RedisDecisionCache(self.cache_url, ttl_days=DEFAULT_TTL_DAYS))
        return options

    def replace(self, **changes: Any) -> Settings:
        """A copy with some fields changed: ``settings.replace(max_paths=50)``."""
        fields = dict(zip(_FIELDS, self._fields(), strict=True))
        unknown = set(changes) - set(fields)
        if unknown:
            raise TypeError(f"Settings has no field {sorted(unknown)[0]!r}")
        if "answer_budget" in changes:  # chosen by the caller, unless it says otherwise
            changes.setdefault("answer_budget_set", True)
        return Settings(**{**fields, **changes})

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Settings) and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return (
            f"Settings(cache_dir={self.cache_dir!r}, ttl_hours={self.ttl_hours!r}, "
            f"max_cache_bytes={self.max_cache_bytes!r}, max_paths={self.max_paths!r}, "
            f"failure_log={self.failure_log!r}, filtering={self.filtering!r}, "
            f"workflows_dir={self.workflows_dir!r}, pflow_registry={self.pflow_registry!r}, "
            f"cache_url={redact_url(self.cache_url) if self.cache_url else None!r}, "
            f"max_reference_bytes={self.max_reference_bytes!r}, answer_budget={self.answer_budget!r}, "
            f"answer_max_bytes={self.answer_max_bytes!r}, answer_max_lines={self.answer_max_lines!r}, "
            f"answer_budget_set={self.answer_budget_set!r}, "
            f"want_budget={self.want_budget!r}, keep_upstream_text={self.keep_upstream_text!r})"
        )

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, *, cache_dir: str | None = None) -> Settings:
        """Settings from the environment; ``cache_dir`` (the CLI's --cache-dir) wins over the variable."""
        env = os.environ if env is None else env
        base = cls()
        cls.max_message_bytes(env)  # a bad value is said at start, not when the first long line comes
        chosen_dir = cache_dir or env.get(ENV_CACHE_DIR)
        # Checked in this order (the first bad variable is the one an error names).
        ttl_hours = _number(env, ENV_TTL_HOURS, base.ttl_hours)
        max_cache_bytes = (
            parse_size(env[ENV_MAX_CACHE_SIZE], ENV_MAX_CACHE_SIZE)
            if env.get(ENV_MAX_CACHE_SIZE)
            else base.max_cache_bytes
        )
        max_paths = _whole_number(env, ENV_MAX_PATHS, base.max_paths)
        filter_values = _filter_values(env)  # checked now; FilterOptions is built on first use
        settings = cls(
            cache_dir=Path(chosen_dir).expanduser() if chosen_dir else base.cache_dir,
            ttl_hours=ttl_hours,
            max_cache_bytes=max_cache_bytes,
            max_paths=max_paths,
            failure_log=Path(env[ENV_FAILURE_LOG]).expanduser() if env.get(ENV_FAILURE_LOG) else base.failure_log,
            workflows_dir=_path(env, ENV_WORKFLOWS_DIR, base.workflows_dir),
            pflow_registry=_path(env, ENV_PFLOW_REGISTRY, base.pflow_registry),
            cache_url=_cache_url(env),
            max_reference_bytes=parse_size(env[ENV_MAX_REFERENCE_SIZE], ENV_MAX_REFERENCE_SIZE)
            if env.get(ENV_MAX_REFERENCE_SIZE)
            else base.max_reference_bytes,
            answer_budget=_whole_number(env, ENV_ANSWER_BUDGET, base.answer_budget),
            answer_budget_set=bool(env.get(ENV_ANSWER_BUDGET)),
            want_budget=_whole_number(env, ENV_WANT_BUDGET, base.want_budget),
            keep_upstream_text=_flag(env, ENV_PROXY_KEEP_TEXT),
        )
        settings._filter_values = filter_values
        return settings

    @staticmethod
    def max_message_bytes(env: Mapping[str, str] | None = None) -> int:
        """The longest line of JSON-RPC the proxy reads over stdio (``PFLOW_STRUCTURE_MAX_MESSAGE_SIZE``)."""
        env = os.environ if env is None else env
        text = env.get(ENV_MAX_MESSAGE_SIZE)
        return parse_size(text, ENV_MAX_MESSAGE_SIZE) if text else DEFAULT_MAX_MESSAGE_BYTES

    def cache(self) -> CacheBackend:
        """The execution cache: Redis when ``cache_url`` is set (this host's directory keeps what Redis
        cannot take), else the directory. Only then is redis-py imported."""
        local = ExecutionCache(self.cache_dir, ttl_hours=self.ttl_hours, max_bytes=self.max_cache_bytes)
        if not self.cache_url:
            return local
        from pflow_structure.cache.redis_store import RedisExecutionCache

        return RedisExecutionCache(self.cache_url, local=local)


def _cache_url(env: Mapping[str, str]) -> str | None:
    """``PFLOW_STRUCTURE_CACHE_URL``, checked for a scheme we know (the message never shows the password)."""
    url = (env.get(ENV_CACHE_URL) or "").strip()
    if not url:
        return None
    scheme = url.partition("://")[0].lower()
    if scheme not in SCHEMES or "://" not in url:
        raise ParameterError(
            f"{ENV_CACHE_URL}={redact_url(url) if '://' in url else '(not a URL)'} is not a Redis URL; "
            "use redis://[user:password@]host:port/db, rediss:// for TLS, or redis+cluster:// for a cluster"
        )
    import importlib.util

    if importlib.util.find_spec("redis") is None:  # said here, naming the extra, rather than as a traceback later
        raise ParameterError(
            f"{ENV_CACHE_URL} is set but redis-py is not installed; pip install 'pflow-structure[redis]'"
        )
    return url


def _filter_values(env: Mapping[str, str]) -> dict[str, Any]:
    """The filter settings, checked: FilterOptions' arguments (whether the LLM can run is decided
    when a structure needs filtering)."""
    mode = (env.get(ENV_FILTER) or "auto").strip().lower()
    if mode not in FILTER_MODES:
        choices = ", ".join(FILTER_MODES)
        raise ParameterError(f"{ENV_FILTER}={env.get(ENV_FILTER)!r} is not a filter mode; use one of {choices}")
    want_model = (env.get(ENV_WANT_MODEL) or "").strip().lower()
    if want_model not in ("", "wordllama"):
        raise ParameterError(
            f"{ENV_WANT_MODEL}={env.get(ENV_WANT_MODEL)!r} is not a want model; use wordllama or unset it"
        )
    return {
        "mode": mode,
        "threshold": _whole_number(env, ENV_FILTER_THRESHOLD, DEFAULT_FILTER_THRESHOLD),
        "target": _whole_number(env, ENV_FILTER_TARGET, DEFAULT_FILTER_TARGET),
        "model": (env.get(ENV_FILTER_MODEL) or "").strip(),
        "timeout": _number(env, ENV_FILTER_TIMEOUT, DEFAULT_FILTER_TIMEOUT),
        "api_base": (env.get(ENV_FILTER_API_BASE) or "").strip() or None,
        "keys_set": frozenset(name for name, value in env.items() if name.endswith("_API_KEY") and value),
        "want_model": want_model,
    }


def default_failure_log() -> Path:
    """``~/.pflow/logs/pflow-structure-failures.jsonl``: beside pflow's own data."""
    return Path.home() / ".pflow" / "logs" / "pflow-structure-failures.jsonl"


def default_workflows_dir() -> Path:
    """``~/.pflow/workflows``: where pflow keeps saved workflows."""
    return Path.home() / ".pflow" / "workflows"


def default_pflow_registry() -> Path:
    """``~/.pflow/registry.json``: pflow's node registry; a missing file means no pflow nodes."""
    return Path.home() / ".pflow" / "registry.json"


def _path(env: Mapping[str, str], name: str, default: Path) -> Path:
    text = env.get(name)
    return Path(text).expanduser() if text else default


def _number(env: Mapping[str, str], name: str, default: float) -> float:
    text = env.get(name)
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        raise ParameterError(f"{name}={text!r} is not a number; unset it or set a positive number") from None
    if not 0 < value < _INFINITY:  # NaN is neither
        raise ParameterError(f"{name}={text!r} must be a positive finite number; unset it or set one")
    return value


def _whole_number(env: Mapping[str, str], name: str, default: int) -> int:
    value = float(_number(env, name, default))
    if not value.is_integer():
        raise ParameterError(f"{name}={env.get(name)!r} must be a whole number of at least 1, e.g. 500")
    return int(value)


def _flag(env: Mapping[str, str], name: str) -> bool:
    text = (env.get(name) or "").strip().lower()
    if text not in ("", "0", "1", "true", "false"):
        raise ParameterError(f"{name}={env.get(name)!r} is not a flag; set 1 or unset it")
    return text in ("1", "true")


def parse_size(text: str, name: str = "size") -> int:
    """``"1GB"`` → 1073741824; plain numbers are bytes."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?b?)\s*", text.lower())
    if not match or float(match.group(1)) <= 0:
        raise ParameterError(f"{name}={text!r} is not a size; use bytes or a unit, e.g. 500MB or 2GB")
    unit = match.group(2)
    if len(unit) == 1 and unit != "b":
        unit += "b"  # "2g" means 2GB
    size = int(float(match.group(1)) * _UNITS[unit])
    if size < 1:
        raise ParameterError(f"{name}={text!r} is less than one byte; use e.g. 500MB or 2GB")
    return size
