"""Usage counts for the adapters: one call where an agent is answered, and the report ``stats`` prints.

Recording never fails an answer: whatever goes wrong (a full disk, Redis down) becomes a line in
the failure log. The store follows the execution cache: Redis when ``PFLOW_STRUCTURE_CACHE_URL``
is set, else ``{cache directory}/usage/`` (see :mod:`pflow_structure.cache.usage`). Tokens are
o200k counts of the text the agent reads (a result's own count comes from whoever shaped it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from pflow_structure.cache.backend import CacheBackend
from pflow_structure.cache.urls import redact_url
from pflow_structure.cache.usage import UsageLog, report, usage_counts
from pflow_structure.service.reading import node_type_read
from pflow_structure.settings import Settings

__all__ = ["CountedRun", "record_read", "record_result", "usage_log", "usage_report"]

EXACT_COUNT_CHARS = 4_000_000  # as the proxy counts: exact up to here, then chars / 4


def usage_log(settings: Settings) -> Any:
    """The usage store beside the execution cache: Redis or the cache directory."""
    if settings.cache_url:
        from pflow_structure.cache.redis_usage import RedisUsageLog

        return RedisUsageLog(settings.cache_url)
    return UsageLog(settings.cache_dir / "usage")


def record_result(settings: Settings, tool: str, *, cached: bool, raw: int, answered: int) -> None:
    """One tool or node result answered: as structure (``cached``) or inline; never raises."""
    _record(settings, tool, usage_counts("structure" if cached else "inline", raw=raw, answered=answered))


def record_read(settings: Settings | None, execution_id: Any, answer: Mapping[str, Any]) -> None:
    """A read_fields or edit_fields answer (a result dict), counted for the tool whose cached result
    this process just read; nothing when it read none (an id that was not found). Never raises."""
    tool = node_type_read(execution_id)
    if tool is None:
        return
    try:
        settings = settings or Settings.from_env()
    except Exception:  # a bad setting: the answer itself said so
        return
    try:
        tokens = _text_tokens(answer)
    except Exception as exc:  # never fail an answer for a count
        _log_failure(settings, tool, exc)
        return
    _record(settings, tool, usage_counts("read", answered=tokens))


def _text_tokens(answer: Mapping[str, Any]) -> int:
    """Tokens of the text blocks an agent reads (structuredContent repeats them in our answers)."""
    return sum(count(block.get("text", "")) for block in answer.get("content", []) if block.get("type") == "text")


def count(text: str) -> int:
    """o200k tokens, exact up to a few megabytes (then chars / 4, as the proxy counts)."""
    from pflow_structure.render.tokens import count_tokens

    return count_tokens(text) if len(text) <= EXACT_COUNT_CHARS else (len(text) + 3) // 4


def _record(settings: Settings, tool: str, counts: Mapping[str, int]) -> None:
    try:
        usage_log(settings).record(tool, counts)
    except Exception as exc:  # recording must never turn an answer into an error
        _log_failure(settings, tool, exc)


def _log_failure(settings: Settings, tool: str, exc: BaseException) -> None:
    from pflow_structure.render.failure_log import append_failure, failure_record

    append_failure(settings.failure_log, failure_record(tool, 0, exc, stage="usage", source="stats"))


def usage_report(settings: Settings, days: int | None = None) -> dict[str, Any]:
    """What ``pflow-structure stats`` shows: a row per tool or node, and the total (see
    :func:`pflow_structure.cache.usage.report`)."""
    log = usage_log(settings)
    if not settings.cache_url:
        totals, full = log.totals(days)
        return report(totals, days=days, store="file", location=str(log.directory), full_days=full)
    from pflow_structure.cache.redis_store import redis_error
    from pflow_structure.errors import CacheUnavailableError

    try:
        totals, full = log.totals(days)
    except redis_error() as exc:
        raise CacheUnavailableError(redact_url(settings.cache_url), str(exc).rstrip(". ")) from None
    return report(totals, days=days, store="redis", location=redact_url(settings.cache_url), full_days=full)


class CountedRun:
    """``registry_run`` that also counts the tokens of the node's output (its compact JSON, as put in
    the cache), then records the answer: ``answer = run(...)``, then ``run.record(node_type, answer)``."""

    def __init__(self, settings: Settings | None) -> None:
        self.settings = settings
        self.raw_tokens: int | None = None

    def __call__(self, node_type: str, parameters: Mapping[str, Any], **options: Any) -> dict[str, Any]:
        """``registry_run(node_type, parameters, **options)`` on a cache that counts what is put in it."""
        from pflow_structure.service import registry_run

        self.settings = self.settings or Settings.from_env()
        cache = cast(CacheBackend, _CountingCache(self.settings.cache(), self))
        return registry_run(node_type, parameters, settings=self.settings, cache=cache, **options)

    def record(self, node_type: str, answer: Mapping[str, Any]) -> None:
        """Record the answer of a run that stored its output; never raises."""
        if self.settings is None or self.raw_tokens is None or answer.get("isError"):
            return
        try:
            answered = _text_tokens(answer)
        except Exception as exc:  # never fail an answer for a count
            _log_failure(self.settings, node_type, exc)
            return
        record_result(self.settings, node_type, cached=True, raw=self.raw_tokens, answered=answered)


class _CountingCache:
    """An execution cache that counts the tokens of what is put in it; the rest goes to ``inner``."""

    def __init__(self, inner: CacheBackend, run: CountedRun) -> None:
        self.inner = inner
        self.run = run

    def put(self, node_type: str, params: Any, outputs: Any, **options: Any) -> Any:
        from pflow_structure.render.output_text import format_json

        stored = self.inner.put(node_type, params, outputs, **options)
        self.run.raw_tokens = count(format_json(outputs, compact=True))
        return stored

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
