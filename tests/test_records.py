"""pflow_structure.records.NamedTuple builds the class typing.NamedTuple builds, without typing."""

from __future__ import annotations

import inspect
import pickle
import subprocess
import sys
import typing

import pytest

from pflow_structure.records import NamedTuple


class Ours(NamedTuple):
    """A record."""

    name: str
    items: list[int]
    total: int = 0
    note: str | None = None

    @property
    def size(self) -> int:
        return len(self.items)

    def doubled(self) -> int:
        return self.total * 2


class Typing(typing.NamedTuple):
    """A record."""

    name: str
    items: list[int]
    total: int = 0
    note: str | None = None

    @property
    def size(self) -> int:
        return len(self.items)

    def doubled(self) -> int:
        return self.total * 2


def test_it_is_a_named_tuple_like_typing_builds() -> None:
    ours, theirs = Ours("a", [1, 2], 3), Typing("a", [1, 2], 3)
    assert isinstance(ours, tuple) and Ours.__mro__ == (Ours, tuple, object)
    assert tuple(ours) == tuple(theirs) == ("a", [1, 2], 3, None)
    assert Ours.__eq__ is Typing.__eq__ is tuple.__eq__ and Ours.__hash__ is Typing.__hash__ is tuple.__hash__
    assert repr(ours) == repr(theirs).replace("Typing", "Ours") == "Ours(name='a', items=[1, 2], total=3, note=None)"
    assert (Ours._fields, Ours._field_defaults) == (Typing._fields, Typing._field_defaults)
    assert ours[1] is ours.items and list(ours) == list(theirs)
    name, items, total, note = ours
    assert (name, items, total, note) == ("a", [1, 2], 3, None)
    assert ours._replace(total=5) == Ours("a", [1, 2], 5) and ours._asdict() == theirs._asdict()
    assert Ours._make(["b", [], 1, "x"]) == ("b", [], 1, "x")
    assert (ours.size, ours.doubled()) == (2, 6)
    assert (Ours.__doc__, Ours.__name__, Ours.__qualname__, Ours.__module__) == ("A record.", "Ours", "Ours", __name__)
    ours_parameters = inspect.signature(Ours).parameters.values()
    typing_parameters = inspect.signature(Typing).parameters.values()
    assert [(p.name, p.default) for p in ours_parameters] == [(p.name, p.default) for p in typing_parameters]
    signature = "(name: 'str', items: 'list[int]', total: 'int' = 0, note: 'str | None' = None)"
    assert str(inspect.signature(Ours)) == signature  # the annotations as written, as strings
    assert list(Ours.__annotations__) == list(Typing.__annotations__) == ["name", "items", "total", "note"]


def test_it_pickles_and_refuses_wrong_arguments_as_typing_does() -> None:
    record = Ours("a", [1], note="n")
    assert pickle.loads(pickle.dumps(record)) == record and type(pickle.loads(pickle.dumps(record))) is Ours
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'items'"):
        Ours("a")  # type: ignore[call-arg]
    with pytest.raises(AttributeError):
        record.total = 2  # type: ignore[misc]


def test_it_refuses_the_class_bodies_typing_refuses() -> None:
    with pytest.raises(TypeError, match="without a default follows"):

        class Misordered(NamedTuple):
            a: int = 0
            b: int  # type: ignore[misc]

    with pytest.raises(AttributeError, match="Cannot overwrite NamedTuple attribute _replace"):

        class Overwrites(NamedTuple):
            a: int

            def _replace(self) -> None:  # type: ignore[misc]
                pass


def test_the_records_module_does_not_import_typing() -> None:
    code = "import sys; import pflow_structure.records; print('typing' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout == "False\n"
