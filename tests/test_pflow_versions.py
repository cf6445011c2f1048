"""Which pflow-cli releases the pflow plugin serves, and how it refuses the others (no pflow needed)."""

from __future__ import annotations

import pytest

from pflow_structure.errors import PflowVersionError
from pflow_structure.integrations import pflow as plugin


@pytest.mark.parametrize(
    ("version", "adapter"),
    [("0.8.1", "v08"), ("0.9.0", "v08"), ("0.10.0", "v08"), ("0.10.3", "v08"), ("0.16.0", "v16"), ("0.16.2", "v16")],
)
def test_each_supported_release_has_its_adapter(version: str, adapter: str) -> None:
    assert plugin.adapter_name(version) == adapter
    assert plugin.check_version(version) == version


@pytest.mark.parametrize("version", ["0.7.3", "0.11.0", "0.12.0", "0.15.4", "0.17.0", "1.0.0", "dev", ""])
def test_unknown_releases_are_refused_with_the_supported_lines_and_the_fix(version: str) -> None:
    with pytest.raises(PflowVersionError) as caught:
        plugin.check_version(version)
    message = str(caught.value)
    assert f"pflow-cli {version} is installed" in message
    assert "0.8.x to 0.10.x (the wrapper-chain compiler) or 0.16.x (the workflow engine)" in message
    assert "pip install 'pflow-cli==0.16.0', or pip install 'pflow-cli>=0.8,<0.11' 'mcp<2'" in message


def test_a_missing_pflow_is_named_with_the_install_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plugin, "pflow_version", lambda: None)
    with pytest.raises(PflowVersionError) as caught:
        plugin.check_version()
    assert str(caught.value) == (
        "pflow-cli is not installed; the pflow plugin needs pflow-cli 0.8.x to 0.10.x (the wrapper-chain compiler) "
        "or 0.16.x (the workflow engine): pip install 'pflow-cli==0.16.0', or pip install 'pflow-cli>=0.8,<0.11' "
        "'mcp<2'"
    )
