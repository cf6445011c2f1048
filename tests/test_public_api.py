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


def test_old_paths_of_moved_modules_import_with_a_deprecation_warning() -> None:
    import importlib
    import sys
    import warnings

    from pflow_structure import _moved

    for old, new in _moved.MOVED.items():
        sys.modules.pop(old, None)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            module = importlib.import_module(old)
        assert [str(w.message) for w in caught] == [f"{old} moved to {new}; import it from there"]
        assert caught[0].category is DeprecationWarning
        home = importlib.import_module(new)
        for name in getattr(home, "__all__", []):
            assert getattr(module, name) is getattr(home, name)


def test_names_that_left_cli_fast_for_a_neighbour_still_import_from_it() -> None:
    import warnings

    from pflow_structure.cli.read_fields import ReadFieldsArgs, read_fields_output
    from pflow_structure.render.output_text import format_json, safe_text

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from pflow_structure import cli_fast  # type: ignore[attr-defined]

    assert (cli_fast.ReadFieldsArgs, cli_fast.read_fields_output) == (ReadFieldsArgs, read_fields_output)
    assert (cli_fast.format_json, cli_fast.safe_text) == (format_json, safe_text)
    with pytest.raises(AttributeError) as raised:
        cli_fast.no_such_name  # noqa: B018
    assert str(raised.value) == (
        "module 'pflow_structure.cli_fast' (now pflow_structure.cli.entry) has no attribute 'no_such_name'"
    )


def test_a_name_that_is_no_moved_module_is_not_found() -> None:
    import importlib

    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("pflow_structure.no_such_module")
