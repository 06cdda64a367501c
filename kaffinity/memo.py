"""One memo interface for what a run derives once and reads many times.

Before this module, six modules kept their own module-level ``WeakKeyDictionary`` keyed by a
run's ``Context``, ``AffinityGraph`` or ``Simulation``. A :class:`Memo` is owned by the object
whose life it shares (an attribute of it), so a derived value lives exactly as long as the run
state it was derived from, is found by name, and no module holds run state.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


class Memo:
    """Values built on first use, by name: ``owner.memo.get("explain.pending", build)``.

    The name says who derived the value (``<module>.<what>``); two modules never share a name.
    """

    __slots__ = ("_values",)

    def __init__(self) -> None:
        self._values: dict[str, Any] = {}

    def get(self, name: str, build: Callable[[], T]) -> T:
        """The value of ``name``, built with ``build()`` the first time it is asked for."""
        try:
            value: T = self._values[name]
        except KeyError:
            value = build()
            self._values[name] = value
        return value

    def peek(self, name: str) -> Any | None:
        """The value of ``name`` if it was built, else ``None`` (never builds)."""
        return self._values.get(name)

    def put(self, name: str, value: T) -> T:
        """Set ``name`` (a value derived elsewhere, handed over), and return it."""
        self._values[name] = value
        return value

    def __contains__(self, name: object) -> bool:
        return name in self._values
