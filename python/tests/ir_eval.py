"""Test support: reads the IR text the capture writes and evaluates it with torch, op by op, per ops.h.

This is the tests' own reading of the op semantics, used to check that every lowering computes what
the ATen op computed (captures against torch eager). The C++ reference interpreter is the project's
ground truth; tests that run it live beside these (see helpers.run_function_command).
The parser accepts the printer's output (one node per line), not every text the C++ parser does.
"""
from __future__ import annotations

import re

import torch
import torch.nn.functional as F

TORCH = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "i32": torch.int32, "bool": torch.bool}
_NAME = r'(?:[A-Za-z0-9_.]+|"(?:[^"\\]|\\.)*")'
_TYPE = re.compile(r"(\w+)\[([^\]]*)\]")
_NODE = re.compile(rf"%({_NAME}) = (\w+)(?:\((.*?)\))?(?: \{{(.*)\}})? : (\w+\[[^\]]*\])(?: loc .*)?$")
_ATTR = re.compile(r'(\w+) = ("(?:[^"\\]|\\.)*"|\[[^\]]*\]|[^,]+)')


def _unquote(name: str) -> str:
    return name[1:-1].encode().decode("unicode_escape") if name.startswith('"') else name


def parse_type(text: str):
    dtype, dims = _TYPE.fullmatch(text.strip()).groups()
    return dtype, tuple(d if d in ("T", "L") else int(d) for d in (x.strip() for x in dims.split(",")) if d)


def _attr_value(text: str):
    text = text.strip()
    if text.startswith('"'):
        return _unquote(text)
    if text.startswith("["):
        items = [x.strip() for x in text[1:-1].split(",") if x.strip()]
        if items and any(c in items[0] for c in ".en") and items[0] not in ("T", "L"):
            return [float(x) for x in items]
        return [x if x in ("T", "L") else int(x) for x in items]
    return float(text) if any(c in text for c in ".en") else int(text)


def parse_module(text: str) -> dict:
    """{"params": {name: type}, "states": {name: type}, "functions": {name: (args, nodes, results)}}."""
    module = {"params": {}, "states": {}, "functions": {}}
    function = None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith(("param ", "state ")):
            kind, rest = line.split(" ", 1)
            name, type_ = rest.rsplit(" : ", 1)
            module[kind + "s"][_unquote(name[1:])] = parse_type(type_)
        elif line.startswith("func "):
            name, rest = line[6:].split("(", 1)
            args_text = rest.split(") -> (")[0]
            args = [(_unquote(a.split(":")[0].strip()[1:]), parse_type(a.split(":", 1)[1]))
                    for a in re.findall(r"%\S+: \w+\[[^\]]*\]", args_text)]
            function = (args, [], [])
            module["functions"][_unquote(name)] = function
        elif line.startswith("return"):
            function[2].extend(_unquote(r.strip()[1:]) for r in line[len("return"):].split(","))
        elif line.startswith("%"):
            m = _NODE.match(line)
            result, op, operands, attrs, type_ = m.groups()
            operands = [_unquote(o.strip()[1:]) for o in operands.split(",")] if operands else []
            attrs = {k: _attr_value(v) for k, v in _ATTR.findall(attrs or "")}
            function[1].append((_unquote(result), op, operands, attrs, parse_type(type_)))
    return module


UNARY = {"silu": F.silu, "exp": torch.exp, "neg": torch.neg, "log": torch.log, "log1p": torch.log1p,
         "expm1": torch.expm1, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "abs": torch.abs, "tanh": torch.tanh,
         "sigmoid": torch.sigmoid, "relu": torch.relu, "erf": torch.erf, "sin": torch.sin, "cos": torch.cos,
         "reciprocal": torch.reciprocal, "floor": torch.floor, "ceil": torch.ceil, "round": torch.round,
         "sign": torch.sign, "logical_not": torch.logical_not}
BINARY = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "pow": torch.pow, "maximum": torch.maximum,
          "minimum": torch.minimum, "eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt,
          "ge": torch.ge, "logical_and": torch.logical_and, "logical_or": torch.logical_or}
REDUCE = {"reduce_sum": torch.sum, "reduce_mean": torch.mean, "reduce_prod": torch.prod, "reduce_max": torch.amax,
          "reduce_min": torch.amin}


def run_function(module: dict, name: str, inputs: dict, params: dict, states: dict, T: int = 1, L: int = 1) -> list:
    """Evaluates function `name`; `states` (name -> tensor) are written in place by index_copy."""
    args, nodes, results = module["functions"][name]
    env = {arg: inputs[arg] for arg, _ in args}

    def size(d):
        return T if d == "T" else L if d == "L" else d

    for result, op, operands, attrs, (dtype, shape) in nodes:
        xs = [env[o] for o in operands]
        shape = tuple(size(d) for d in shape)
        out = _eval(op, xs, attrs, params, states, size)
        out = out.to(TORCH[dtype])
        assert tuple(out.shape) == shape, f"%{result} = {op}: got {tuple(out.shape)}, declared {shape}"
        env[result] = out
    return [env[r] for r in results]


def _eval(op, xs, a, params, states, size):
    if op == "weight":
        return params[a["name"]]
    if op == "constant":
        shape = [size(d) for d in a["shape"]]
        if "value" in a:
            return torch.full(shape, float(a["value"]), dtype=torch.float64)
        return torch.tensor(a["values"], dtype=torch.float64).reshape(shape)
    if op == "random_uniform":  # the kernels' Philox numbers (src/kernels/random.cuh), in numpy
        from agentcompile.random_ops import random_uniform
        shape = [size(d) for d in a["shape"]]
        count = 1
        for d in shape:
            count *= d
        return torch.from_numpy(random_uniform(a["seed"], count)).reshape(shape).to(torch.float64)
    if op == "arange":
        return torch.arange(size(a["length"][0]), dtype=torch.float64) * a["step"] + a["start"]
    if op in UNARY:
        return UNARY[op](xs[0])
    if op == "div":
        if xs[0].dtype == torch.int32:
            return torch.div(xs[0], xs[1], rounding_mode="trunc")
        return xs[0] / xs[1]
    if op in BINARY:
        return BINARY[op](xs[0], xs[1])
    if op == "where":
        return torch.where(xs[0], xs[1], xs[2])
    if op == "gelu":
        return F.gelu(xs[0], approximate=a.get("approximate", "none"))
    if op == "leaky_relu":
        return F.leaky_relu(xs[0], a["slope"])
    if op == "clamp":
        return torch.clamp(xs[0], a.get("lo"), a.get("hi"))
    if op == "cast":
        return xs[0] != 0 if a["dtype"] == "bool" else xs[0]
    if op == "embedding":
        return xs[0][xs[1].long()]
    if op == "index_select":
        return torch.index_select(xs[0], a["axis"], xs[1].long())
    if op == "gather":
        return torch.gather(xs[0], a["axis"], xs[1].long())
    if op == "matmul":
        return torch.matmul(xs[0], xs[1])
    if op == "linear":
        return F.linear(*xs)
    if op == "layer_norm":
        return F.layer_norm(xs[0], xs[0].shape[-1:], *(xs[1:] + [None, None])[:2], eps=a["eps"])
    if op == "rmsnorm":
        x = xs[0].float()
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + a["eps"]) * xs[1].float()
    if op in ("reshape", "view"):
        return xs[0].reshape([size(d) for d in a["shape"]])
    if op == "transpose":
        return xs[0].permute(a["perm"])
    if op == "slice":
        dim = xs[0].shape[a["axis"]]
        start = a["start"] + dim if a["start"] < 0 else a["start"]
        return xs[0].narrow(a["axis"], start, a["length"])
    if op == "broadcast":
        return torch.broadcast_to(xs[0], [size(d) for d in a["shape"]])
    if op == "concat":
        return torch.cat(xs, a["axis"])
    if op == "flip":
        return torch.flip(xs[0], [a["axis"]])
    if op == "index_copy":
        state = states[a["state"]]
        state.index_copy_(a["axis"], xs[1].long(), xs[0].to(state.dtype))
        return state.clone()
    if op == "sdpa":
        scale, causal, gqa = a["scale"], bool(a.get("causal", 0)), bool(a.get("gqa", 0))
        mask = xs[3] if len(xs) == 4 else None
        return F.scaled_dot_product_attention(xs[0], xs[1], xs[2], attn_mask=mask, is_causal=causal, scale=scale,
                                              enable_gqa=gqa)
    if op == "softmax":
        return torch.softmax(xs[0], a.get("axis", -1))
    if op == "log_softmax":
        return torch.log_softmax(xs[0], a.get("axis", -1))
    if op in REDUCE:
        return REDUCE[op](xs[0], dim=a.get("axis", -1), keepdim=bool(a.get("keepdim", 0)))
    if op in ("argmax", "argmin"):
        fn = torch.argmax if op == "argmax" else torch.argmin
        return fn(xs[0], dim=a.get("axis", -1), keepdim=bool(a.get("keepdim", 0)))
    if op == "cumsum":
        return torch.cumsum(xs[0], a["axis"])
    if op == "cumprod":
        return torch.cumprod(xs[0], a["axis"])
    raise NotImplementedError(f"ir_eval has no rule for {op}")
