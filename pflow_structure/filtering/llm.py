"""The LLM field filter: a small model picks the fields a person would use, from the structure alone.

Only paths, types and statistics are sent (a whitelist of the structure's statistic keys), never a
value. The model answers ``{"keep": [paths...]}``; :func:`parse_answer` keeps the paths that are
fields of the structure and raises :class:`LLMFilterError` when nothing usable is left, so the
caller falls back to the heuristic filter.

litellm is imported lazily, here only (it takes seconds to import). The caller sets
``LITELLM_LOCAL_MODEL_COST_MAP=True`` first, else litellm fetches its price map from the network
while importing. Deadline: :func:`llm_choose_fields` returns at most ``timeout`` + 0.25 s after
the request starts, whether or not litellm honours its own timeout (the request runs in a daemon
thread that is abandoned when late). The one-time import and warm-up of litellm in a process
(about 5 s and 1 s) come before that clock starts; call :func:`preload` early, for instance in a
background thread while the node runs, to take them off the critical path.

Model: the spec names Haiku 3.5 (``claude-3-5-haiku-20241022``). litellm 1.106 no longer lists
that id for the Anthropic API (only Bedrock and Vertex variants remain; Anthropic retired the
model), so :data:`MODEL_ALIASES` maps it, and the spec's own spelling, to :data:`DEFAULT_MODEL`,
Claude Haiku 4.5. Core module: no environment, no printing, no adapters.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pflow_structure.errors import StructureError

PROMPT_VERSION = "1"  # bump when the prompt changes: it is part of the decision-cache key
DEFAULT_MODEL = "anthropic/claude-haiku-4-5"
_RETIRED_HAIKU = DEFAULT_MODEL  # what the spec's Haiku 3.5 ids resolve to (litellm no longer knows them)
MODEL_ALIASES: dict[str, str] = {
    "claude-3-5-haiku-20241022": _RETIRED_HAIKU,
    "anthropic/claude-3-5-haiku-20241022": _RETIRED_HAIKU,
    "claude-3-5-haiku-latest": _RETIRED_HAIKU,
    "anthropic/claude-3-5-haiku-latest": _RETIRED_HAIKU,
    "haiku-3-5-latest-20241022": _RETIRED_HAIKU,  # the spelling in the spec's constraints
    "haiku": DEFAULT_MODEL,
}
MAX_TOKENS = 1000  # an answer of 25 paths is about 300 tokens
DEADLINE_GRACE = 0.25  # seconds past ``timeout`` before the request is abandoned
EXTRA_PATHS = 5  # parse_answer keeps at most target + EXTRA_PATHS paths

# The statistics a structure entry may carry; nothing else of an entry is sent.
_SENT_STATISTICS = (
    "type",
    "length",
    "min_length",
    "max_length",
    "avg_length",
    "json",
    "present",
    "of",
    "keys",
    "dynamic_keys",
    "same_as",
    "truncated",
)
_MESSAGE_LIMIT = 200
# litellm wraps each message as "litellm.X: ... Handle with `litellm.X`"; the type is said once.
_LITELLM_NOISE = re.compile(r"\Alitellm\.\w+:\s*|\s*Handle with `litellm\.\w+`\.?\s*\Z")


class LLMFilterError(StructureError):
    """Why the LLM gave no usable answer: timeout, HTTP error, malformed JSON, no valid paths.

    The message says which, in one line; ``kind`` is one of ``"timeout"``, ``"request"``,
    ``"empty"``, ``"json"``, ``"no_keep"`` and ``"no_paths"``.
    """

    def __init__(self, message: str, kind: str = "request") -> None:
        super().__init__(message)
        self.kind = kind


# --- models and keys -------------------------------------------------------------------------

# Provider prefix (``provider/model``) → the variable litellm reads that provider's key from.
_PROVIDER_KEYS = {
    "anthropic": "ANTHROPIC_API_KEY",
    "openai": "OPENAI_API_KEY",
    "text-completion-openai": "OPENAI_API_KEY",
    "gemini": "GEMINI_API_KEY",
    "groq": "GROQ_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "cohere": "COHERE_API_KEY",
    "cohere_chat": "COHERE_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "xai": "XAI_API_KEY",
    "together_ai": "TOGETHERAI_API_KEY",
    "fireworks_ai": "FIREWORKS_AI_API_KEY",
    "perplexity": "PERPLEXITYAI_API_KEY",
    "azure": "AZURE_API_KEY",
}
# Bare model names litellm routes by their spelling.
_BARE_PREFIXES = (
    ("claude-", "ANTHROPIC_API_KEY"),
    ("gpt-", "OPENAI_API_KEY"),
    ("chatgpt-", "OPENAI_API_KEY"),
    ("o1", "OPENAI_API_KEY"),
    ("o3", "OPENAI_API_KEY"),
    ("o4", "OPENAI_API_KEY"),
    ("gemini-", "GEMINI_API_KEY"),
    ("mistral-", "MISTRAL_API_KEY"),
    ("command-", "COHERE_API_KEY"),
)


def resolve_model(model: str) -> str:
    """The litellm model id for ``model``: an alias resolved, a bare ``claude-*`` given its
    ``anthropic/`` prefix, anything else unchanged (litellm routes it). ``""`` is the default."""
    name = model.strip()
    if not name:
        return DEFAULT_MODEL
    if name in MODEL_ALIASES:
        return MODEL_ALIASES[name]
    if name.startswith("claude-"):
        return "anthropic/" + name
    return name


def provider_key_env(model: str) -> str | None:
    """The environment variable litellm reads this model's API key from, or None when unknown
    (or when the provider needs none, such as ``ollama/``). A pure function of the string."""
    name = resolve_model(model)
    provider, slash, _ = name.partition("/")
    if slash:
        return _PROVIDER_KEYS.get(provider.lower())
    for prefix, variable in _BARE_PREFIXES:
        if name.lower().startswith(prefix):
            return variable
    return None


# --- the prompt ------------------------------------------------------------------------------

_SYSTEM = (
    "You choose which fields of a tool's output an AI agent is shown. You see only the output's "
    "structure: template paths, where [0] stands for every item of a list, with each field's type and "
    "statistics. You never see values. Answer with one JSON object and nothing else: "
    '{"keep": ["path", ...]}, copying each path exactly as it is written.'
)


def _describe(path: str, entry: Mapping[str, Any]) -> str:
    parts = []
    for key in _SENT_STATISTICS:
        if key not in entry or key == "of":
            continue
        value = entry[key]
        if key == "type":
            parts.append(str(value))
        elif key == "present":
            of = entry.get("of")
            parts.append(f"present in {value} of {of}" if isinstance(of, int) else f"present {value}")
        elif key == "same_as":
            parts.append(f"same shape as {value}")
        elif key == "dynamic_keys":
            parts.append("keys are data")
        elif isinstance(value, (int, float, str)) and not isinstance(value, bool):
            parts.append(f"{key} {value}")
    return f"{path}: " + ", ".join(parts)


def build_messages(
    structure: Mapping[str, Mapping[str, Any]],
    fields: Sequence[str],
    *,
    node_type: str,
    target: int,
    want: str | None = None,
) -> list[dict[str, str]]:
    """The system and user messages: the node's name, the agent's ``want`` when given, the rules,
    and one line per field (path, type, statistics from a fixed whitelist; no values)."""
    lines = [_describe(path, structure.get(path, {})) for path in fields]
    wanted = (
        f"The agent asked for: {_one_line(want, 300)}\nKeep first the fields that answer this, then at most a "
        "few others.\n"
        if want
        else ""
    )
    user = (
        f"Node: {node_type}\n{wanted}"
        f"Its output has {len(fields)} fields. Keep at most {target} of them: the fields a person reads "
        "or acts on, such as titles, names, bodies, descriptions and other text, states and statuses, "
        "amounts, prices and counts, labels, authors.\n"
        "Leave out URLs and links, ids, hashes and tokens, timestamps, and API metadata (pagination, "
        "permissions, avatars, node ids, etags).\n"
        "For every list whose items you keep fields of, keep 2 to 5 fields of its items so its shape shows.\n"
        "\n"
        "Fields (path: type, statistics):\n" + "\n".join(lines) + "\n\n"
        f'Answer with {{"keep": [...]}} holding at most {target} of the paths above.'
    )
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}]


# --- the answer ------------------------------------------------------------------------------

_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)```", re.DOTALL)
_WRAPPED_PATH = re.compile(r"\A\$\{(.*)\}\Z", re.DOTALL)


def _one_line(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _json_object(text: str) -> dict[str, Any]:
    """The answer's JSON object: the whole text, a fenced block, or the first object in prose."""
    stripped = text.strip()
    candidates = [stripped, *(block.strip() for block in _FENCE.findall(text))]
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    decoder = json.JSONDecoder()
    found: dict[str, Any] | None = None
    for match in re.finditer(r"\{", text):
        try:
            value, _ = decoder.raw_decode(text, match.start())
        except ValueError:
            continue
        if isinstance(value, dict):
            if "keep" in value:
                return value
            found = found if found is not None else value
    if found is not None:
        return found
    raise LLMFilterError(f"LLM filter answer is not a JSON object: {_one_line(text)!r}", "json")


def parse_answer(text: str, fields: Sequence[str], *, target: int) -> list[str]:
    """The valid paths of an answer ``{"keep": [...]}`` (also fenced or inside prose), in the
    order of ``fields``, without repeats, at most ``target`` + 5. Raises :class:`LLMFilterError`
    when the answer is not JSON, has no ``keep`` list, or names no field of ``fields``."""
    if not text or not text.strip():
        raise LLMFilterError("LLM filter answer was empty", "empty")
    answer = _json_object(text)
    keep = answer.get("keep")
    if not isinstance(keep, list):
        raise LLMFilterError('LLM filter answer has no "keep" list', "no_keep")
    wanted = set()
    for item in keep:
        if isinstance(item, str):
            path = item.strip()
            wrapped = _WRAPPED_PATH.match(path)
            wanted.add(wrapped.group(1).strip() if wrapped else path)
    chosen: list[str] = []
    seen: set[str] = set()
    for path in fields:
        if path in wanted and path not in seen:
            seen.add(path)
            chosen.append(path)
    if not chosen:
        raise LLMFilterError(f"LLM filter answer named no field of the structure ({len(keep)} paths given)", "no_paths")
    return chosen[: max(target, 1) + EXTRA_PATHS]


# --- the call --------------------------------------------------------------------------------

_warm_lock = threading.Lock()
_warmed: set[str] = set()


def _litellm(model: str) -> Any:
    """Import litellm (seconds, once per process) and load what its first request for ``model``
    would: provider code and the token encoding, about a second, once per model. Best effort: a
    failed warm-up only makes the first request slower. Sends nothing (a mock response)."""
    import litellm as module

    litellm: Any = module  # typed loosely: attributes differ between litellm releases
    with _warm_lock:
        if model not in _warmed:
            litellm.suppress_debug_info = True  # else every failure prints a "Give Feedback" banner
            with contextlib.suppress(Exception):
                litellm.completion(
                    model=model,
                    messages=[{"role": "user", "content": "warm-up"}],
                    mock_response='{"keep": []}',
                    api_key="warm-up",
                )
            with contextlib.suppress(Exception):
                _ = litellm.encoding  # loaded lazily by the first real request (about 0.8 s)
            _warmed.add(model)
    return litellm


def preload(model: str = DEFAULT_MODEL) -> None:
    """Import and warm up litellm for ``model`` now (safe from any thread, e.g. a background one
    started while the node runs), so :func:`llm_choose_fields` spends its budget on the request."""
    _litellm(resolve_model(model))


def _run_with_deadline(call: Callable[[], Any], deadline: float) -> tuple[bool, Any]:
    """(finished, result or exception) of ``call`` in a daemon thread, waiting at most
    ``deadline`` seconds; a late call keeps running unobserved and cannot keep a process alive."""
    box: list[Any] = []
    done = threading.Event()

    def run() -> None:
        try:
            box.append(call())
        except BaseException as exc:  # handed to the caller
            box.append(exc)
        finally:
            done.set()

    threading.Thread(target=run, name="pflow-structure-llm-filter", daemon=True).start()
    if not done.wait(max(deadline, 0.0)):
        return False, None
    return True, box[0]


def _failure(exc: BaseException, litellm: Any, model: str, timeout: float, api_key: str | None) -> LLMFilterError:
    timeout_types = tuple(t for t in (getattr(litellm, "Timeout", None),) if isinstance(t, type))
    if isinstance(exc, (TimeoutError, *timeout_types)) or "timeout" in type(exc).__name__.lower():
        return LLMFilterError(f"LLM filter ({model}) timed out after {round(float(timeout), 2)} s", "timeout")
    message = " ".join(str(exc).split())
    message = _LITELLM_NOISE.sub("", message).strip() or "no message"
    if api_key:
        message = message.replace(api_key, "***")
    if len(message) > _MESSAGE_LIMIT:
        message = message[: _MESSAGE_LIMIT - 3] + "..."
    return LLMFilterError(f"LLM filter ({model}) failed: {type(exc).__name__}: {message}", "request")


def llm_choose_fields(
    structure: Mapping[str, Mapping[str, Any]],
    fields: Sequence[str],
    *,
    node_type: str,
    model: str,
    timeout: float = 2.0,
    api_base: str | None = None,
    api_key: str | None = None,
    target: int = 20,
    want: str | None = None,
) -> list[str]:
    """Ask the model which of ``fields`` to keep; the valid paths, in the order of ``fields``.
    ``want``: the agent's words, put in the prompt (:func:`build_messages`).

    One request, no retries, at temperature 0. Raises :class:`LLMFilterError` on a timeout
    (at most ``timeout`` + 0.25 s after the request starts), an HTTP or network error, or an
    answer without valid paths. litellm's import and warm-up come first (see :func:`preload`).
    """
    resolved = resolve_model(model)
    litellm = _litellm(resolved)
    messages = build_messages(structure, fields, node_type=node_type, target=target, want=want)
    started = time.monotonic()

    def call() -> Any:
        return litellm.completion(
            model=resolved,
            messages=messages,
            temperature=0,
            max_tokens=MAX_TOKENS,
            timeout=timeout,
            api_base=api_base,
            api_key=api_key,
            num_retries=0,
            max_retries=0,
        )

    finished, outcome = _run_with_deadline(call, timeout + DEADLINE_GRACE - (time.monotonic() - started))
    if not finished:
        raise LLMFilterError(f"LLM filter ({resolved}) timed out after {round(float(timeout), 2)} s", "timeout")
    if isinstance(outcome, BaseException):
        if not isinstance(outcome, Exception):
            raise outcome  # KeyboardInterrupt, SystemExit: not ours to swallow
        raise _failure(outcome, litellm, resolved, timeout, api_key) from outcome
    try:
        text = outcome.choices[0].message.content
    except (AttributeError, IndexError, KeyError, TypeError) as exc:
        raise LLMFilterError(f"LLM filter ({resolved}) gave a response without a message", "empty") from exc
    if not isinstance(text, str):
        raise LLMFilterError(f"LLM filter ({resolved}) answer was empty", "empty")
    return parse_answer(text, fields, target=target)


__all__ = [
    "DEFAULT_MODEL",
    "MODEL_ALIASES",
    "PROMPT_VERSION",
    "LLMFilterError",
    "build_messages",
    "llm_choose_fields",
    "parse_answer",
    "preload",
    "provider_key_env",
    "resolve_model",
]
