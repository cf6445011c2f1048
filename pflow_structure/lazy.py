"""Names a package offers but loads on first use (PEP 562), so importing the package stays cheap.

``__getattr__ = lazy_names(__name__, {"name": "home.module"}, globals())`` in a package's
``__init__``: the first ``package.name`` imports its home module, keeps the value in the
package's namespace (later lookups never come back here) and returns it.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, MutableMapping
    from typing import Any


def lazy_names(package: str, homes: Mapping[str, str], namespace: MutableMapping[str, Any]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that loads each name of ``homes`` (name -> module) from its module."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        namespace[name] = value
        return value

    return __getattr__
