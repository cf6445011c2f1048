"""``NamedTuple`` classes without importing :mod:`typing` when the program runs.

Importing ``typing`` costs about 3 ms, and ``typing.NamedTuple`` compiles each annotation (a
string, under ``from __future__ import annotations``) into a ``ForwardRef``: together about a
sixth of ``read-fields``' start-up. The modules that command loads write their records as::

    from pflow_structure.records import NamedTuple

    class Point(NamedTuple):
        \"\"\"A point.\"\"\"

        x: int
        y: int = 0

The type checker sees :class:`typing.NamedTuple`. At run time the class is the
``collections.namedtuple`` that ``typing`` would build (the same fields, defaults, methods,
properties and docstring, ``__annotations__`` as written), so unpacking, indexing, ``_replace``,
``_asdict``, equality, repr and pickling behave the same; only the annotations stay strings.
"""

from __future__ import annotations

TYPE_CHECKING = False

if TYPE_CHECKING:
    from typing import NamedTuple as NamedTuple
else:
    import collections

    # What typing.NamedTuple refuses to take from a class body, and what it does not copy.
    _PROHIBITED = frozenset(
        ("__new__", "__init__", "__slots__", "__getnewargs__", "_fields", "_field_defaults", "_make", "_replace")
    ) | frozenset(("_asdict", "_source"))
    _SPECIAL = frozenset(("__module__", "__name__", "__annotations__"))

    class _NamedTupleMeta(type):
        def __new__(mcs, name, bases, namespace):
            if bases != (NamedTuple,):
                raise TypeError("a NamedTuple class can only inherit from NamedTuple")
            if "__annotations__" not in namespace:
                raise TypeError(f"{name}: declare its fields under `from __future__ import annotations`")
            fields = list(namespace["__annotations__"])
            with_defaults = [field for field in fields if field in namespace]
            if with_defaults != fields[len(fields) - len(with_defaults) :]:
                raise TypeError(f"{name}: a field without a default follows one with a default")
            record = collections.namedtuple(
                name, fields, defaults=[namespace[field] for field in with_defaults], module=namespace["__module__"]
            )
            record.__annotations__ = record.__new__.__annotations__ = dict(namespace["__annotations__"])
            for key, value in namespace.items():
                if key in _PROHIBITED:
                    raise AttributeError(f"Cannot overwrite NamedTuple attribute {key}")
                if key not in _SPECIAL and key not in record._fields:
                    setattr(record, key, value)
            return record

    NamedTuple = type.__new__(
        _NamedTupleMeta, "NamedTuple", (), {"__module__": __name__, "__doc__": "Base of a typed named tuple."}
    )
