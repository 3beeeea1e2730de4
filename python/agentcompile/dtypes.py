"""Torch dtypes as IR dtypes, and the dtype torch computes a binary op in.

The IR has f32, f16, bf16, i32 and bool. Every torch integer type is narrowed to i32 (int64 index
arithmetic; constants that do not fit are refused where they are written) and float64 to f32.
"""
from __future__ import annotations

import torch

from .errors import CaptureError

IR_DTYPES = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16", torch.bool: "bool",
             torch.int64: "i32", torch.int32: "i32", torch.int16: "i32", torch.int8: "i32", torch.uint8: "i32",
             torch.float64: "f32"}
TORCH_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "i32": torch.int32,
                "bool": torch.bool}


def ir_dtype(dtype: torch.dtype) -> str:
    if dtype not in IR_DTYPES:
        raise CaptureError(f"tensors of dtype {dtype} have no IR equivalent")
    return IR_DTYPES[dtype]


def _proxy(x):
    """What torch.result_type needs of an operand: its dtype and whether it is 0-dim (or a number)."""
    val = x.meta.get("val") if isinstance(x, torch.fx.Node) else x
    if isinstance(val, torch.Tensor):
        return torch.empty([] if val.dim() == 0 else [1], dtype=val.dtype)
    if isinstance(val, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return {torch.SymInt: 1, torch.SymFloat: 1.0, torch.SymBool: True}[type(val)]
    return val


def promoted_dtype(a, b) -> str:
    """The IR dtype torch computes `a op b` in (FX nodes or Python numbers), by torch's own promotion."""
    return ir_dtype(torch.result_type(_proxy(a), _proxy(b)))
