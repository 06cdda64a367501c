"""What kaffinity reads in cel-cpp's checked syntax tree: the checks upstream makes on it that
cel-cpp does not (mixed literals, Kubernetes' list functions off their element types, constants
cel-go folds when building the program) and the ``sum``/``min``/``max`` calls whose element type
lets them answer in upstream's type (lists.py ``typed_declarations``).

Kubernetes refuses a list or map literal whose elements (keys, values) have different types:
``[1, 'a']``, ``[1, 2.0]``, ``[null, 1]``, ``{'a': 1, 'b': 'c'}``, ``[1, dyn('a')]``.

Upstream: ``staging/src/k8s.io/apiserver/pkg/cel/environment/base.go`` enables
``cel.HomogeneousAggregateLiterals()`` in every version (and 1.29 adds
``cel.ValidateHomogeneousAggregateLiterals()``); cel-go 0.29's ``cel/validator.go``
``homogeneousAggregateLiteralValidator.Validate`` compares, in the checked syntax tree, the type of
each element of a list literal with the first element's (``Type.IsEquivalentType``: ``dyn`` is a
type of its own, so ``[1, dyn('a')]`` is refused), and each key and value of a map literal with the
first entry's; an optional element (``[?x]``, ``{?k: v}``) counts as its optional's parameter. A
literal anywhere inside a call to ``format`` (strings version 2, ext/formatting_v2.go
``Configure``) is exempt. The message is "expected type '<first>' but found '<this>'" at the
element.

cel-cpp's checker has no such check, but cel-expr-python hands out the checked expression
(``Expression.serialize()``: a ``cel.expr.CheckedExpr`` protocol buffer with the type of every
node), read here with a small wire-format decoder. kaffinity refuses only what upstream provably
refuses: an element's type counts when cel-cpp's checker gave it a type without ``dyn`` or type
parameters, or when the element is provably ``dyn`` upstream too (``dyn(x)``, a ``dyn`` variable,
a field or index of one, a literal of such); a type kaffinity only approximates (its Python
functions declared to return ``dyn``, its opaque Kubernetes values typed ``map(string, dyn)``) is
not compared.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

#: Protocol buffer field numbers (cel/expr/checked.proto, syntax.proto).
_CHECKED_TYPE_MAP, _CHECKED_EXPR, _CHECKED_SOURCE = 3, 4, 5
_SOURCE_POSITIONS = 4
_EXPR_ID, _CONST, _IDENT, _SELECT, _CALL, _LIST, _STRUCT, _COMPREHENSION = 2, 3, 4, 5, 6, 7, 8, 9
_PRIMITIVES = {1: "bool", 2: "int", 3: "uint", 4: "double", 5: "string", 6: "bytes"}
_WRAPPERS = {
    1: "wrapper(bool)",
    2: "wrapper(int)",
    3: "wrapper(uint)",
    4: "wrapper(double)",
    5: "wrapper(string)",
    6: "wrapper(bytes)",
}
_WELL_KNOWN = {1: "any", 2: "timestamp", 3: "duration"}
#: A comprehension's expressions: iter_range, accu_init, loop_condition, loop_step, result.
_LOOP_EXPRS = (2, 4, 5, 6, 7)
#: Kubernetes' list functions and the element types each is declared for (library/lists.go
#: ``summableTypes``, ``comparableTypes``).
_COMPARABLE = frozenset({"int", "uint", "double", "bool", "duration", "timestamp", "string", "bytes"})
_LIST_FUNCTIONS = {
    "sum": frozenset({"int", "uint", "double", "duration"}),
    "min": _COMPARABLE,
    "max": _COMPARABLE,
    "isSorted": _COMPARABLE,
    "indexOf": None,  # list(A).indexOf(A)
    "lastIndexOf": None,
}
#: The element types lists.py has typed ``sum``/``min``/``max`` for (upstream's result types).
_TYPED_FUNCTIONS = {
    "sum": frozenset({"duration", "double", "uint"}),
    "min": frozenset({"duration", "timestamp", "double", "uint"}),
    "max": frozenset({"duration", "timestamp", "double", "uint"}),
}
_PLAIN = frozenset({"bool", "int", "uint", "double", "string", "bytes", "duration", "timestamp"})
#: A type that is not compared (kaffinity's answer may be less precise than cel-go's).
_UNKNOWN = "?"
#: Functions whose arguments the validator skips: ``format`` (formatting_v2.go ``Configure``).
_EXEMPT = frozenset({"format"})


@dataclass(frozen=True)
class Mixed:
    """A literal element of another type than the first: the message and the 0-based offset (in
    code points of the compiled text) of the element."""

    message: str
    offset: int


def _fields(data: bytes) -> Iterator[tuple[int, int | bytes]]:
    """(field number, value) of one protocol buffer message: an int for varints and fixed
    fields, bytes for length-delimited ones."""
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(data, i)
            yield number, value
        elif wire == 2:
            size, i = _varint(data, i)
            yield number, data[i : i + size]
            i += size
        elif wire == 1:
            yield number, int.from_bytes(data[i : i + 8], "little")
            i += 8
        elif wire == 5:
            yield number, int.from_bytes(data[i : i + 4], "little")
            i += 4
        else:
            raise ValueError(f"wire type {wire}")


def _varint(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, i


def _message(data: bytes) -> dict[int, list[int | bytes]]:
    found: dict[int, list[int | bytes]] = {}
    for number, value in _fields(data):
        found.setdefault(number, []).append(value)
    return found


def _bytes(message: dict[int, list[int | bytes]], number: int) -> bytes | None:
    values = message.get(number)
    value = values[-1] if values else None
    return value if isinstance(value, bytes) else None


def _int(message: dict[int, list[int | bytes]], number: int, default: int = 0) -> int:
    values = message.get(number)
    value = values[-1] if values else default
    return value if isinstance(value, int) else default


def _type(data: bytes) -> str:
    """A ``cel.expr.Type`` as cel-go's ``FormatCELType`` prints it; :data:`_UNKNOWN` inside it
    for ``dyn``, type parameters, errors and functions (``dyn`` is marked ``dyn?``)."""
    message = _message(data)
    if 1 in message:
        return "dyn?"
    if 2 in message:
        return "null"
    if 3 in message:
        return _PRIMITIVES.get(_int(message, 3), _UNKNOWN)
    if 4 in message:
        return _WRAPPERS.get(_int(message, 4), _UNKNOWN)
    if 5 in message:
        return _WELL_KNOWN.get(_int(message, 5), _UNKNOWN)
    if (inner := _bytes(message, 6)) is not None:
        return f"list({_type(_bytes(_message(inner), 1) or b'')})"
    if (inner := _bytes(message, 7)) is not None:
        parts = _message(inner)
        return f"map({_type(_bytes(parts, 1) or b'')}, {_type(_bytes(parts, 2) or b'')})"
    if (name := _bytes(message, 9)) is not None:
        return name.decode()
    if (inner := _bytes(message, 11)) is not None:
        return f"type({_type(inner)})" if inner else "type"
    if (inner := _bytes(message, 14)) is not None:
        parts = _message(inner)
        abstract = (_bytes(parts, 1) or b"").decode()
        parameters = [_type(p) for p in parts.get(2, []) if isinstance(p, bytes)]
        return f"{abstract}({', '.join(parameters)})" if parameters else abstract
    return _UNKNOWN


class _Checked:
    """The parts of a ``CheckedExpr`` the validator reads."""

    def __init__(
        self,
        data: bytes,
        dyn_variables: frozenset[str],
        inserted: Callable[[int], bool],
        fails: Callable[[bytes], str | None] | None = None,
    ) -> None:
        checked = _message(data)
        self.types: dict[int, str] = {}
        for entry in checked.get(_CHECKED_TYPE_MAP, []):
            if isinstance(entry, bytes):
                parts = _message(entry)
                self.types[_int(parts, 1)] = _type(_bytes(parts, 2) or b"")
        source = _message(_bytes(checked, _CHECKED_SOURCE) or b"")
        self.positions: dict[int, int] = {}
        for entry in source.get(_SOURCE_POSITIONS, []):
            if isinstance(entry, bytes):
                parts = _message(entry)
                self.positions[_int(parts, 1)] = _int(parts, 2)
        self.dyn_variables = dyn_variables
        self.inserted = inserted
        self.fails = fails
        #: The ids of the nodes cel-go's OptOptimize holds for constants.
        self.constant: set[int] = set()
        self.found: list[Mixed] = []
        #: ``sum``/``min``/``max`` calls on a list whose element type has a typed name in
        #: lists.py: (offset of the call's ``(``, the element type).
        self.typed: list[tuple[int, str]] = []

    def visit(self, data: bytes, exempt: bool = False) -> str:
        """Check the literals in one ``Expr`` (recursively); its type as far as it is known
        upstream (:data:`_UNKNOWN` inside it where not)."""
        expr = _message(data)
        id = _int(expr, _EXPR_ID)
        checked = self.types.get(id, _UNKNOWN)
        provable = self._provable(expr, exempt)
        if "?" not in checked:
            return checked
        return provable

    def _provable(self, expr: dict[int, list[int | bytes]], exempt: bool) -> str:
        if _CONST in expr:
            self.constant.add(_int(expr, _EXPR_ID))
        if (ident := _bytes(expr, _IDENT)) is not None:
            name = (_bytes(_message(ident), 1) or b"").decode()
            return "dyn" if name in self.dyn_variables else _UNKNOWN
        if (select := _bytes(expr, _SELECT)) is not None:
            parts = _message(select)
            operand = self.visit(_bytes(parts, 1) or b"", exempt)
            return "dyn" if operand == "dyn" and not _int(parts, 3) else _UNKNOWN
        if (call := _bytes(expr, _CALL)) is not None:
            return self._call(_int(expr, _EXPR_ID), _message(call), exempt)
        if (items := _bytes(expr, _LIST)) is not None:
            # kaffinity's respelling of transformMap inserts ``[key, value]``: not the author's
            inserted = self.inserted(self.positions.get(_int(expr, _EXPR_ID), -1))
            return self._list(_message(items), exempt, inserted, _int(expr, _EXPR_ID))
        if (entries := _bytes(expr, _STRUCT)) is not None:
            return self._map(_message(entries), exempt, _int(expr, _EXPR_ID))
        if (loop := _bytes(expr, _COMPREHENSION)) is not None:
            parts = _message(loop)
            for number in _LOOP_EXPRS:
                if (part := _bytes(parts, number)) is not None:
                    self.visit(part, exempt)
        return _UNKNOWN

    def _call(self, id: int, parts: dict[int, list[int | bytes]], exempt: bool) -> str:
        """A call: its arguments visited, Kubernetes' list functions checked, constants folded."""
        function = (_bytes(parts, 2) or b"").decode()
        inner = exempt or function in _EXEMPT
        target = _bytes(parts, 1)
        kinds = [self.visit(target, inner)] if target is not None else []
        kinds += [self.visit(arg, inner) for arg in parts.get(3, []) if isinstance(arg, bytes)]
        if target is not None and function in _LIST_FUNCTIONS:
            self._check_list_function(function, kinds, id)
        if function in _UNWRAP and len(kinds) == 1 and kinds[0].startswith("list("):
            element = kinds[0][len("list(") : -1]
            if _plain(element) and not element.startswith("optional_type("):
                applied = f"{kinds[0]}.()" if target is not None else f"({kinds[0]})"
                message = f"found no matching overload for '{function}' applied to '{applied}'"
                self.found.append(Mixed(message, self.positions.get(id, 0)))
        if target is not None and len(kinds) == 1 and function in _TYPED_FUNCTIONS:
            element = kinds[0][len("list(") : -1] if kinds[0].startswith("list(") else ""
            if element in _TYPED_FUNCTIONS[function]:
                self.typed.append((self.positions.get(id, -1), element))
        self._fold(id, function, target, [a for a in parts.get(3, []) if isinstance(a, bytes)])
        if function == "dyn" and target is None and len(kinds) == 1:
            return "dyn"
        if function == "_[_]" and target is None and kinds and kinds[0] == "dyn":
            return "dyn"
        return _UNKNOWN

    def _fold(self, id: int, function: str, target: bytes | None, args: list[bytes]) -> None:
        """cel-go's ``OptOptimize`` (base.go, every version; interpreter/decorators.go
        ``decOptimize``): a type conversion of a constant is evaluated when the program is built,
        and Kubernetes' ``find``/``findAll`` compile a constant pattern then (regex.go
        ``FindRegexOptimization``, ``RegexIndex: 1``); an error there refuses the expression."""
        if self.fails is None:
            return
        if target is None and function in _CONVERSIONS and len(args) == 1:
            argument = _int(_message(args[0]), _EXPR_ID)
            if argument not in self.constant:
                return
            failed = self.fails(
                _wire(4, _wire(_EXPR_ID, id) + _wire(_CALL, _call_wire(None, function, args)))
            )
            if failed is None:
                self.constant.add(id)
        elif function in _REGEX and (target is not None or function == "matches") and args:
            # the pattern is the call's second argument, the receiver counting (RegexIndex: 1)
            pattern = _int(_message(args[0] if target is not None else args[-1]), _EXPR_ID)
            if target is None and len(args) != 2:
                return
            if pattern not in self.constant or self.types.get(pattern) != "string":
                return
            empty = _wire(_EXPR_ID, 1) + _wire(_CONST, _wire(6, b""))
            pattern_expr = args[0] if target is not None else args[-1]
            failed = self.fails(
                _wire(4, _wire(_EXPR_ID, id) + _wire(_CALL, _call_wire(empty, "matches", [pattern_expr])))
            )
        else:
            return
        if failed is not None:
            self.found.append(Mixed(failed, self.positions.get(id, 0)))

    def _check_list_function(self, function: str, kinds: list[str], id: int) -> None:
        """Kubernetes' ``sum``/``min``/``max``/``isSorted`` on a list whose element type has no
        overload (``['a'].sum()``), ``indexOf``/``lastIndexOf`` of a value of another type than the
        elements (``['a'].indexOf(1)``): kaffinity declares them on ``list(dyn)`` (lists.py). Only
        types no other is assignable to are judged (not ``null``, ``any``, wrappers, messages)."""
        receiver, arguments = kinds[0], kinds[1:]
        if not receiver.startswith("list(") or not all(_plain(kind) for kind in kinds):
            return
        element = receiver[len("list(") : -1]
        if not _plain(element):
            return
        allowed = _LIST_FUNCTIONS[function]
        if allowed is None:
            refused = len(arguments) == 1 and arguments[0] != element
        else:
            refused = not arguments and element not in allowed
        if not refused:
            return
        applied = f"{receiver}.({', '.join(arguments)})"
        message = f"found no matching overload for '{function}' applied to '{applied}'"
        self.found.append(Mixed(message, self.positions.get(id, 0)))

    def _list(self, items: dict[int, list[int | bytes]], exempt: bool, inserted: bool, id: int) -> str:
        optional = set(_packed(items.get(2, [])))
        kinds: list[tuple[str, int]] = []
        for index, element in enumerate(v for v in items.get(1, []) if isinstance(v, bytes)):
            kind = self.visit(element, exempt)
            if index in optional:
                kind = _optional_parameter(kind)
            kinds.append((kind, _int(_message(element), _EXPR_ID)))
        if not exempt and not inserted:
            self._compare(kinds)
        if not optional and all(id in self.constant for _, id in kinds):
            self.constant.add(id)
        return _joined("list", [kind for kind, _ in kinds])

    def _map(self, struct: dict[int, list[int | bytes]], exempt: bool, id: int) -> str:
        if _bytes(struct, 1):  # a message, not a map
            return _UNKNOWN
        keys: list[tuple[str, int]] = []
        values: list[tuple[str, int]] = []
        for entry in (_message(e) for e in struct.get(2, []) if isinstance(e, bytes)):
            key, value = _bytes(entry, 3) or b"", _bytes(entry, 4) or b""
            keys.append((self.visit(key, exempt), _int(_message(key), _EXPR_ID)))
            kind = self.visit(value, exempt)
            if _int(entry, 5):
                kind = _optional_parameter(kind)
            values.append((kind, _int(_message(value), _EXPR_ID)))
        if not exempt:
            self._compare(keys, every=True)
            self._compare(values, every=True)
        optional = any(_int(_message(e), 5) for e in struct.get(2, []) if isinstance(e, bytes))
        if not optional and all(id in self.constant for _, id in keys + values):
            self.constant.add(id)
        if not keys:
            return _UNKNOWN
        key_list, value_list = _joined("list", [k for k, _ in keys]), _joined("list", [v for v, _ in values])
        if _UNKNOWN in (key_list, value_list):
            return _UNKNOWN
        return f"map({key_list[5:-1]}, {value_list[5:-1]})"

    def _compare(self, kinds: list[tuple[str, int]], every: bool = False) -> None:
        """cel-go compares each with the first; a list stops at its first mismatch."""
        if not kinds or _UNKNOWN in kinds[0][0]:
            return
        first = kinds[0][0]
        for kind, id in kinds[1:]:
            if _UNKNOWN in kind or kind == first:
                continue
            message = f"expected type '{first}' but found '{kind}'"
            self.found.append(Mixed(message, self.positions.get(id, 0)))
            if not every:
                return


#: Functions whose constant pattern is compiled with the program: Kubernetes' find/findAll
#: (regex.go ``OptimizeRegex``) and cel-go's matches (cel/program.go ``MatchesRegexOptimization``).
_REGEX = frozenset({"find", "findAll", "matches"})
#: cel-go's unwrap of a list of optionals (ext/optional), declared on list(dyn) (lists.py).
_UNWRAP = frozenset({"optional.unwrap", "unwrapOpt"})
#: cel-go's type conversion functions (common/overloads ``IsTypeConversionFunction``).
_CONVERSIONS = frozenset(
    {"bool", "bytes", "double", "duration", "dyn", "int", "string", "timestamp", "type", "uint"}
)


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _wire(number: int, value: int | bytes) -> bytes:
    """One protocol buffer field: a varint, or length-delimited bytes."""
    if isinstance(value, int):
        return _encode_varint(number << 3) + _encode_varint(value)
    return _encode_varint(number << 3 | 2) + _encode_varint(len(value)) + value


def _call_wire(target: bytes | None, function: str, args: list[bytes]) -> bytes:
    found = _wire(1, target) if target is not None else b""
    return found + _wire(2, function.encode()) + b"".join(_wire(3, arg) for arg in args)


def probe(checked_expr: bytes) -> bytes:
    """A ``CheckedExpr`` (its fields) as ``Expression.serialize()`` gives one (``Env.deserialize``
    takes it): an ``Any``."""
    return _wire(1, b"type.googleapis.com/cel.expr.CheckedExpr") + _wire(2, checked_expr)


def _packed(values: list[int | bytes]) -> Iterator[int]:
    for value in values:
        if isinstance(value, int):
            yield value
        else:
            i = 0
            while i < len(value):
                number, i = _varint(value, i)
                yield number


def _plain(kind: str) -> bool:
    """A known type only itself is assignable to (``dyn`` and ``null`` are not)."""
    if _UNKNOWN in kind or "dyn" in kind or "null" in kind or "wrapper" in kind or "any" in kind:
        return False
    return kind in _PLAIN or kind.startswith(("list(", "map(", "type(", "optional_type("))


def _optional_parameter(kind: str) -> str:
    if kind.startswith("optional_type(") and kind.endswith(")"):
        return kind[len("optional_type(") : -1]
    return _UNKNOWN


def _joined(name: str, kinds: list[str]) -> str:
    """The type of a literal whose elements are ``kinds``, when all are known and equal."""
    if not kinds or any(_UNKNOWN in kind for kind in kinds) or len(set(kinds)) > 1:
        return _UNKNOWN
    return f"{name}({kinds[0]})"


@dataclass(frozen=True)
class Checked:
    """What the checked syntax tree says: the first literal (by place) upstream refuses, and the
    typed ``sum``/``min``/``max`` calls (offset of the ``(``, element type)."""

    mixed: Mixed | None
    typed: list[tuple[int, str]]


def check(
    serialized: bytes,
    dyn_variables: frozenset[str],
    inserted: Callable[[int], bool],
    fails: Callable[[bytes], str | None] | None = None,
) -> Checked:
    """Read a serialized checked expression (``Expression.serialize()``: an ``Any`` holding a
    ``CheckedExpr``); ``dyn_variables`` are the variables declared ``dyn``, ``inserted`` tells
    offsets kaffinity's respelling inserted, ``fails`` evaluates a constant sub-expression (the
    fields of a ``CheckedExpr``): its error, if any."""
    any_message = _message(serialized)
    payload = _bytes(any_message, 2)
    if payload is None or b"CheckedExpr" not in (_bytes(any_message, 1) or b""):
        return Checked(None, [])
    checked = _Checked(payload, dyn_variables, inserted, fails)
    checked.visit(_bytes(_message(payload), _CHECKED_EXPR) or b"")
    return Checked(min(checked.found, key=lambda mixed: mixed.offset, default=None), checked.typed)
