"""Builds one IR function node by node, typing each node as it is added (the mirror of ir::FunctionBuilder).

The converter sets `loc` (the source line every new node carries) and `base` (the FX node being
converted) before it lowers an ATen node; helper values are named `<base>.<n>` and the value that ends
up standing for the FX node is renamed to the FX node's own name, so the IR reads like the FX graph.
FX names never contain '.', so helper names cannot collide with them.
"""
from __future__ import annotations

import math

from .ir_infer import IRTypeError, infer
from .ir_text import Dims, Floats, Function, Module, Node, TensorType, Value


class Lazy:
    """A value made on first use (a parameter's weight node, a layer norm's mean): unused, never made."""

    def __init__(self, make):
        self.make, self.value = make, None

    def get(self):
        if self.value is None:
            self.value = self.make()
        return self.value


class FunctionBuilder:
    def __init__(self, module: Module, name: str, reserved_names=()):
        self.module = module
        self.function = Function(name)
        self.loc = ""
        self.base = ""
        self._reserved = set(reserved_names)  # FX node names: kept for the values that stand for them
        self._used = set()
        self._helpers = set()  # ids of values named `<base>.<n>`, which may take their FX node's name
        self._counter = {}

    # -- values -------------------------------------------------------------------------------------
    def arg(self, name: str, type_: TensorType) -> Value:
        value = Value(self._claim(name), type_)
        self.function.args.append(value)
        return value

    def op(self, op: str, operands, attrs=None, name: str | None = None) -> Value:
        """Adds `op(operands) {attrs}`; raises IRTypeError (naming the op) when it would not verify."""
        attrs = dict(attrs or {})
        params = {n: p.type for n, p in self.module.params.items()}
        result_type = infer(op, [v.type for v in operands], attrs, params, self.module.states)
        value = Value(self._claim(name) if name else self._helper_name(), result_type)
        if not name:
            self._helpers.add(id(value))
        self.function.nodes.append(Node(op, list(operands), attrs, value, self.loc))
        return value

    def adopt_name(self, value: Value, name: str) -> None:
        """Gives a helper value the name of the FX node it stands for (once; later uses keep it)."""
        if id(value) in self._helpers and name not in self._used:
            self._helpers.discard(id(value))
            value.name = name
            self._used.add(name)

    def result(self, value: Value) -> None:
        self.function.results.append(value)

    # -- helpers that skip no-op nodes ------------------------------------------------------------------
    def const(self, value, dtype: str, shape=()) -> Value:
        if math.isnan(value):
            # The C++ module equality compares attributes as doubles, where NaN != NaN, so a NaN attribute
            # breaks parse(print(m)) == m; 0 / 0 computes the same NaN.
            zero = self.const(0.0, dtype, shape)
            return self.op("div", [zero, zero])
        if dtype == "i32" and not -2**31 <= value < 2**31:
            raise IRTypeError(f"constant: {value} does not fit in int32 (torch's int64 is narrowed to i32)")
        return self.op("constant", [], {"dtype": dtype, "shape": Dims(shape), "value": float(value)})

    def const_values(self, values, dtype: str, shape) -> Value:
        values = Floats(float(v) for v in values)
        if any(math.isnan(v) for v in values):
            raise IRTypeError("constant: a constant tensor holding NaN cannot be written (see const)")
        return self.op("constant", [], {"dtype": dtype, "shape": Dims(shape), "values": values})

    def cast(self, value: Value, dtype: str) -> Value:
        return value if value.type.dtype == dtype else self.op("cast", [value], {"dtype": dtype})

    def reshape(self, value: Value, shape) -> Value:
        shape = tuple(shape)
        return value if value.type.shape == shape else self.op("reshape", [value], {"shape": Dims(shape)})

    def broadcast(self, value: Value, shape) -> Value:
        shape = tuple(shape)
        return value if value.type.shape == shape else self.op("broadcast", [value], {"shape": Dims(shape)})

    def transpose(self, value: Value, perm) -> Value:
        perm = tuple(perm)
        if perm == tuple(range(len(perm))):
            return value
        return self.op("transpose", [value], {"perm": Dims(perm)})

    # -- names --------------------------------------------------------------------------------------------
    def _claim(self, name: str) -> str:
        """`name`, or `name.<n>` when a value already has it (a parameter named like a helper)."""
        candidate, n = name, 0
        while candidate in self._used:
            n += 1
            candidate = f"{name}.{n}"
        self._used.add(candidate)
        return candidate

    def _helper_name(self) -> str:
        base = self.base or "v"
        while True:
            n = self._counter.get(base, 0) + 1
            self._counter[base] = n
            name = f"{base}.{n}"
            if name not in self._used and name not in self._reserved:
                self._used.add(name)
                return name
