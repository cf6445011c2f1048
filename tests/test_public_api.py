"""The public surface is pinned: a change to it must be deliberate (httpx's test_exported_members)."""

from __future__ import annotations

import pytest

import pflow_structure

EXPECTED = [
    "CacheEntry",
    "CacheWriteError",
    "CachedOutputs",
    "ExecutionCache",
    "ExecutionExpiredError",
    "ExecutionNotFoundError",
    "InferredStructure",
    "InvalidExecutionIdError",
    "NodeExecutionError",
    "NodeNotFoundError",
    "ParameterError",
    "PathNotFoundError",
    "PathSyntaxError",
    "PflowVersionError",
    "Settings",
    "StructureError",
    "StructureOnlyNodeWrapper",
    "__version__",
    "encode_value",
    "format_path",
    "infer_structure",
    "list_nodes",
    "mask_secrets",
    "parse_path",
    "read_fields",
    "read_fields_detailed",
    "registry_run",
    "store_outputs",
    "wrap_if_structure_only",
]


def test_all_is_sorted_and_pinned() -> None:
    assert pflow_structure.__all__ == sorted(pflow_structure.__all__)
    assert pflow_structure.__all__ == EXPECTED


def test_every_exported_name_resolves() -> None:
    for name in pflow_structure.__all__:
        assert getattr(pflow_structure, name) is not None, name


def test_errors_share_one_base_and_are_catchable_as_builtins() -> None:
    from pflow_structure import errors

    assert issubclass(errors.ExecutionNotFoundError, LookupError)
    assert issubclass(errors.ExecutionExpiredError, LookupError)
    assert issubclass(errors.PathSyntaxError, ValueError)
    assert issubclass(errors.NodeExecutionError, RuntimeError)
    for name in pflow_structure.__all__:
        value = getattr(pflow_structure, name)
        if isinstance(value, type) and issubclass(value, Exception):
            assert issubclass(value, pflow_structure.StructureError), name


def test_unknown_attribute_raises_attribute_error() -> None:
    try:
        pflow_structure.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("expected AttributeError")


@pytest.mark.parametrize(
    "old",
    [
        "pflow_structure.binary",
        "pflow_structure.cli_fast",
        "pflow_structure.failure_log",
        "pflow_structure.jsontext",
        "pflow_structure.service_discovery",
    ],
)
def test_the_old_paths_of_moved_modules_are_gone(old: str) -> None:
    """The package was never released, so the paths modules had before they moved are not kept."""
    import importlib

    with pytest.raises(ModuleNotFoundError) as raised:
        importlib.import_module(old)
    assert str(raised.value) == f"No module named {old!r}"
