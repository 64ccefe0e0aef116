"""The one way code dispatches an op to the method that serves it: an :class:`OpTable`.

A class that serves ops holds a table and marks each method with the op (or ops) it serves::

    class FsOps:
        handles: OpTable[FsOps] = OpTable()

        @handles("fs.list")
        def list_op(self, args): ...

:meth:`OpTable.call` runs the method for an op, or raises :func:`rio.protocol.ops.unknown_op`
(the same answer the hub and every service give). What a method receives is the table's
owner's choice: the logic layer passes the checked arguments (``FsOps``, ``OpenBuffer``), an
actor passes the request itself (``actors.bus.service.OpTable``, which also answers it). The
table's :attr:`~OpTable.names` let a test hold it to the op catalogue, so a misspelt op name
fails the suite instead of never being served.
"""

from __future__ import annotations

from typing import Any, Callable, Generic, TypeVar

from rio.protocol.ops import unknown_op

Owner = TypeVar("Owner")
Method = TypeVar("Method", bound=Callable[..., Any])
Table = TypeVar("Table", bound="OpTable[Any]")


class OpTable(Generic[Owner]):
    """Op name → the owner's method that serves it (see the module docstring)."""

    def __init__(self) -> None:
        self._methods: dict[str, Callable[..., Any]] = {}

    def __call__(self, *names: str) -> Callable[[Method], Method]:
        """Decorator: the method serves ``names``; an op has one method per table."""
        def register(method: Method) -> Method:
            for name in names:
                if name in self._methods:
                    raise ValueError(f"{name} has two methods")
                self._methods[name] = method
            return method
        return register

    def copy(self: Table) -> Table:
        """For a subclass that adds ops: ``handles = Base.handles.copy()``."""
        table = type(self)()
        table._methods = dict(self._methods)
        return table

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self._methods)

    def method(self, owner: Owner, op: str) -> Callable[..., Any] | None:
        """``owner``'s method for ``op``, or None when it serves no such op."""
        method = self._methods.get(op)
        return None if method is None else method.__get__(owner)

    def call(self, owner: Owner, op: str, *args: Any) -> Any:
        """Run ``owner``'s method for ``op`` with ``args``; ``protocol.unknown_op`` if none."""
        method = self.method(owner, op)
        if method is None:
            raise unknown_op(op)
        return method(*args)
