"""Converts one exported program (core ATen, after run_decompositions) into one IR function.

The walk follows the FX graph in order:
- placeholders: user inputs become function arguments or module states (the caller says which, and
  which dims are the symbols T and L); parameters, buffers and lifted constants become `weight` nodes of
  declared params, or inline `constant` nodes when they are small and not persistent. Both are emitted
  at their first use, so the IR declares only what the function reads.
- call_function: size computations (sym_size, operator.* on SymInts) stay Python values, asserts are
  dropped, every other op goes through the lowering table (aten_*.py); the value that stands for the
  node is checked against torch's own shape and dtype for it, so a wrong lowering fails at its node.
- output: user outputs become the function's results; a user-input mutation must be the index_copy the
  lowering wrote into its state; buffer mutations (batch-norm running statistics) are dropped, noted.
"""
from __future__ import annotations

import operator
import os
import re
from dataclasses import dataclass, field

import torch
from torch.export.graph_signature import InputKind, OutputKind

from . import aten_layout, aten_math, aten_nn, aten_random, aten_reduce
from .dtypes import ir_dtype
from .errors import CaptureError
from .ir_builder import FunctionBuilder, Lazy
from .ir_infer import IRTypeError
from .ir_text import Module, ParamDecl, TensorType, Value
from .random_ops import random_seed

INLINE_LIMIT = 4096  # elements: constants up to this size are written into the IR, not the weights
LOWERINGS = {**aten_layout.LOWERINGS, **aten_math.LOWERINGS, **aten_reduce.LOWERINGS, **aten_nn.LOWERINGS,
             **aten_random.LOWERINGS}
# Ops that only check what export already knows; they have no runtime meaning.
DROPPED = {"aten._assert_tensor_metadata.default", "aten._assert_scalar.default", "aten.sym_constrain_range.default",
           "aten.sym_constrain_range_for_size.default", "aten._assert_async.msg", "aten._assert_async.default"}
_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_OWN_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_FRAME = re.compile(r'File "(.+?)", line (\d+), in (\S+)')


@dataclass
class UserInput:
    """How one user input of the exported program enters the IR: an argument or a module state."""
    ir_name: str
    is_state: bool = False
    symbols: dict = field(default_factory=dict)  # dim index -> "T" | "L"


def source_location(node) -> str:
    """`file.py:LINE in FUNC` of the innermost frame outside torch and this package."""
    frames = _FRAME.findall(node.meta.get("stack_trace") or "")
    outside_torch = [f for f in frames if not f[0].startswith(_TORCH_DIR)]
    user = [f for f in outside_torch if not os.path.abspath(f[0]).startswith(_OWN_DIR)]
    for chosen in (user, outside_torch):
        if chosen:
            path, line, func = chosen[-1]
            return f"{os.path.basename(path)}:{line} in {func}"
    return ""


class Converter:
    def __init__(self, ep, module: Module, function_name: str, user_inputs: dict, param_name=lambda target: target,
                 random_seed: int = 0):
        self.ep = ep
        self.random_seed = random_seed  # the capture's --seed: random draw k gets random_ops.random_seed(it, k)
        # Every node that draws random numbers, by its rank in program order, counted whether or not it is
        # live: eager draws for every such call, so a dead draw still takes its seed.
        draws = [n for n in ep.graph.nodes if n.op == "call_function" and aten_random.draws_random(self.target_name(n), n)]
        self._draw_index = {n: k for k, n in enumerate(draws)}
        self.draw_sites = [source_location(n) for n in draws]
        self.random_draws = []  # the draws lowered: {"draw", "site", "seed"} each (aten_random.py)
        self.module = module
        self.user_inputs = user_inputs
        self.param_name = param_name
        self.notes = []
        self.tensors = {}  # param name -> torch.Tensor, for the weights file
        self.node = None
        self._symbols = {}
        self._env = {}
        self._state_of = {}  # placeholder name -> state name
        self._written = {}   # state name -> the IR value of its index_copy
        names = [n.name for n in ep.graph.nodes]
        self.b = FunctionBuilder(module, function_name, names)

    def draw_seed(self) -> int:
        """The seed of the random draw being lowered: its rank among the program's draws (random_ops.py)."""
        try:
            return random_seed(self.random_seed, self._draw_index[self.node])
        except (KeyError, ValueError) as e:
            self.fail(f"random draw: {e}")

    # -- the walk -------------------------------------------------------------------------------------
    def run(self):
        specs = {s.arg.name: s for s in self.ep.graph_signature.input_specs if hasattr(s.arg, "name")}
        live = self._live_nodes()
        for node in self.ep.graph.nodes:
            if node.op == "call_function" and node not in live:
                continue
            self.node = node
            self.b.loc = source_location(node)
            self.b.base = node.name
            try:
                if node.op == "placeholder":
                    self._placeholder(node, specs[node.name])
                elif node.op == "call_function":
                    self._call(node)
                elif node.op == "output":
                    self._output(node)
                else:
                    self.fail(f"FX node kind '{node.op}' is not expected in an exported program")
            except IRTypeError as e:
                self.fail(f"lowering {self.target_name(node)}: {e}")
        return self.b.function

    def _placeholder(self, node, spec):
        if spec.kind == InputKind.USER_INPUT:
            if node.name not in self.user_inputs:
                return  # a Python number the export specialized: it has no users
            binding = self.user_inputs[node.name]
            val = node.meta["val"]
            for dim, symbol in binding.symbols.items():
                expr = val.shape[dim].node.expr if isinstance(val.shape[dim], torch.SymInt) else None
                if expr is None or not expr.is_Symbol:
                    self.fail(f"input {node.name} dim {dim} should be the symbol {symbol} "
                              f"but export made it {val.shape[dim]}")
                self._symbols[expr] = symbol
            if binding.is_state:
                self._state_of[node.name] = binding.ir_name
                self.module.states[binding.ir_name] = self.type_of(node)
                self._env[node] = _StateRef(binding.ir_name)
            else:
                self._env[node] = self.b.arg(binding.ir_name, self.type_of(node))
        elif spec.kind in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR):
            self._env[node] = Lazy(lambda: self._tensor_source(node, spec))
        else:
            self.fail(f"input {node.name} of kind {spec.kind.name} is not supported")

    def _tensor_source(self, node, spec) -> Value:
        tensor = self.ep.state_dict.get(spec.target)
        if tensor is None:
            tensor = self.ep.constants[spec.target]
        tensor = tensor.detach()
        persistent = spec.kind == InputKind.PARAMETER or (spec.kind == InputKind.BUFFER and spec.persistent)
        if not persistent and tensor.numel() <= INLINE_LIMIT:
            return self.constant_tensor(tensor)
        name = self.param_name(spec.target)
        type_ = TensorType(ir_dtype(tensor.dtype), tuple(tensor.shape))
        if name not in self.module.params:
            self.module.params[name] = ParamDecl(name, type_)
        self.tensors[name] = tensor
        return self.b.op("weight", [], {"name": name}, name=name)

    def _call(self, node):
        target = self.target_name(node)
        if target in DROPPED:
            return
        val = node.meta.get("val")
        if node.target is operator.getitem:
            item = self._env[node.args[0]][node.args[1]]
            if isinstance(item, Lazy):  # made, checked and named at its first use
                self._env[node] = Lazy(lambda: self._checked(node, item.get()))
            else:
                self._env[node] = item
                if isinstance(item, Value):
                    self._check(node, item)
            return
        if isinstance(val, (torch.SymInt, torch.SymFloat, torch.SymBool, int, float, bool)):
            self._env[node] = val  # a size computation: consumers read the number from torch's metadata
            return
        if isinstance(val, torch.Tensor) and any(isinstance(d, int) and d == 0 for d in val.shape):
            self._env[node] = EMPTY  # a zero-size tensor computes nothing; concat leaves it out
            return
        lower = LOWERINGS.get(target) or LOWERINGS.get(target.rsplit(".", 1)[0])
        if lower is None:
            self.fail(f"{target} has no IR equivalent")
        result = lower(self, node, self.bind(node))
        self._env[node] = result
        if isinstance(result, Value):
            self._check(node, result)

    def _output(self, node):
        results = node.args[0]
        for spec, out in zip(self.ep.graph_signature.output_specs, results):
            if spec.kind == OutputKind.USER_OUTPUT:
                value = self.value(out)
                self.b.result(value)
            elif spec.kind == OutputKind.USER_INPUT_MUTATION and spec.target in self._state_of:
                state = self._state_of[spec.target]
                if self._written.get(state) is not self._env.get(out):
                    self.fail(f"state {state} ({spec.target}) is changed by something other than one index_copy")
            elif spec.kind == OutputKind.BUFFER_MUTATION:
                self.note(f"the in-place update of buffer {spec.target} is not captured (batch norm's running "
                          "statistics in training mode: the outputs do not depend on it)")
            else:
                self.fail(f"output {out} of kind {spec.kind.name} ({spec.target}) is not supported: "
                          "the capture does not write a module's inputs in place")
        if not self.b.function.results:
            self.fail("the function returns no tensor")

    # -- what lowerings use ------------------------------------------------------------------------------
    def bind(self, node) -> dict:
        """The node's arguments by schema name, defaults filled in."""
        schema = node.target._schema
        bound = {}
        for i, arg in enumerate(schema.arguments):
            if i < len(node.args):
                bound[arg.name] = node.args[i]
            elif arg.name in node.kwargs:
                bound[arg.name] = node.kwargs[arg.name]
            else:
                bound[arg.name] = arg.default_value if arg.has_default_value() else None
        return bound

    def value(self, x) -> Value:
        """The IR value of an FX node (a tensor)."""
        v = self._env.get(x) if isinstance(x, torch.fx.Node) else None
        if isinstance(v, Lazy):
            v = v.get()
        if v is EMPTY:
            self.fail("a zero-size tensor is used; the IR has no zero-size dims")
        if isinstance(v, _StateRef):
            self.fail(f"the cache {v.name} is read before this function writes it "
                      "(only index_copy into it is supported)")
        if not isinstance(v, Value):
            self.fail(f"expected a tensor argument, got {x!r}")
        return v

    def is_empty(self, x) -> bool:
        return isinstance(x, torch.fx.Node) and self._env.get(x) is EMPTY

    def state_of(self, x) -> str | None:
        v = self._env.get(x) if isinstance(x, torch.fx.Node) else None
        return v.name if isinstance(v, _StateRef) else None

    def wrote_state(self, state: str, value: Value) -> None:
        if state in self._written:
            self.fail(f"state {state} is written twice in one function")
        self._written[state] = value

    def meta(self, x):
        return x.meta["val"]

    def dim(self, d):
        """An IR dim for a torch size: an int, T or L; any other symbolic expression is refused."""
        if isinstance(d, torch.SymInt):
            expr = d.node.expr
            if expr.is_number:
                return int(expr)
            if expr in self._symbols:
                return self._symbols[expr]
            names = ", ".join(f"{s}={n}" for s, n in self._symbols.items()) or "none"
            self.fail(f"the shape needs the symbolic size {expr}, which is not T or L (symbols: {names})")
        return int(d)

    def shape(self, sizes) -> tuple:
        return tuple(self.dim(d) for d in sizes)

    def type_of(self, x) -> TensorType:
        val = self.meta(x) if isinstance(x, torch.fx.Node) else x
        return TensorType(ir_dtype(val.dtype), self.shape(val.shape))

    def scalar(self, x):
        """A Python number argument; a symbolic size used as a number cannot be represented."""
        if isinstance(x, torch.fx.Node):
            x = self._env.get(x)
        if isinstance(x, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            if x.node.expr.is_number:
                return int(x.node.expr) if x.node.expr.is_integer else float(x.node.expr)
            self.fail(f"the symbolic size {x} is used as a number, which the IR cannot express")
        return x

    def constant_tensor(self, tensor: torch.Tensor) -> Value:
        dtype = ir_dtype(tensor.dtype)
        flat = tensor.detach().reshape(-1)
        if dtype == "i32" and flat.numel() and (flat.min() < -2**31 or flat.max() >= 2**31):
            self.fail(f"an integer constant does not fit in int32 (range {int(flat.min())}..{int(flat.max())})")
        wide = flat.double()
        if flat.numel() and bool(torch.all((wide == wide[0]) | (wide.isnan() & wide[0].isnan()))):
            return self.b.const(float(wide[0]), dtype, tuple(tensor.shape))  # one value, NaN included
        return self.b.const_values(wide.tolist(), dtype, tuple(tensor.shape))

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def fail(self, message: str):
        where = source_location(self.node) if self.node is not None else ""
        raise CaptureError(message + (f" ({where})" if where else ""))

    # -- internals ------------------------------------------------------------------------------------
    def _live_nodes(self) -> set:
        """Nodes the results or the state writes depend on; the rest (buffer updates such as batch
        norm's running statistics and num_batches_tracked) is not converted at all."""
        output = next(n for n in self.ep.graph.nodes if n.op == "output")
        wanted = (OutputKind.USER_OUTPUT, OutputKind.USER_INPUT_MUTATION)
        stack = [out for spec, out in zip(self.ep.graph_signature.output_specs, output.args[0])
                 if spec.kind in wanted and isinstance(out, torch.fx.Node)]
        live = set()
        while stack:
            node = stack.pop()
            if node not in live:
                live.add(node)
                stack.extend(node.all_input_nodes)
        return live

    def _checked(self, node, value: Value) -> Value:
        self._check(node, value)
        return value

    def _check(self, node, value: Value) -> None:
        val = node.meta.get("val")
        if not isinstance(val, torch.Tensor):
            return
        expected = self.type_of(node)
        if value.type != expected:
            self.fail(f"lowering {self.target_name(node)} gives {value.type} where torch has {expected}")
        self.b.adopt_name(value, node.name)

    @staticmethod
    def target_name(node) -> str:
        target = node.target
        if isinstance(target, torch._ops.OpOverload):
            return str(target)  # "aten.add.Tensor"
        return getattr(target, "__name__", str(target))


EMPTY = object()  # what a zero-size tensor converts to (Phi-3's empty pass-through half of RoPE)


class _StateRef:
    """A user input that is a module state: only index_copy may take it, as the tensor it writes into."""

    def __init__(self, name: str):
        self.name = name
