"""Tensors in and out of safetensors files: the capture's weights, inputs and reference outputs.

Tensors are written in their IR dtype (torch integers narrowed to int32, float64 to float32), so the
C++ side reads exactly the types module.ir declares. Checkpoint headers are read without loading the
tensors, to decide which parameters a `--link-weights` capture can take from the checkpoint.
"""
from __future__ import annotations

import pathlib

import torch
from safetensors import safe_open
from safetensors.torch import save_file

from .dtypes import TORCH_DTYPES, ir_dtype
from .errors import CaptureError

_HEADER_DTYPES = {"F32": "f32", "F16": "f16", "BF16": "bf16", "I32": "i32", "BOOL": "bool", "I64": "i64",
                  "F64": "f64", "U8": "u8", "I8": "i8", "I16": "i16"}


def as_ir_tensor(tensor: torch.Tensor) -> torch.Tensor:
    """The tensor in its IR dtype, contiguous and on the CPU (int32 narrowing is range-checked)."""
    tensor = tensor.detach().cpu()
    dtype = TORCH_DTYPES[ir_dtype(tensor.dtype)]
    if dtype == torch.int32 and tensor.dtype != torch.int32 and tensor.numel():
        if tensor.min() < -2**31 or tensor.max() >= 2**31:
            raise CaptureError("an integer tensor holds values outside int32 "
                               f"({int(tensor.min())}..{int(tensor.max())})")
    return tensor.to(dtype).contiguous()


def save_tensors(path: pathlib.Path, tensors: dict) -> None:
    # safetensors refuses tensors that share storage (tied weights); clones make each one its own.
    save_file({name: as_ir_tensor(t).clone() for name, t in tensors.items()}, str(path))


def checkpoint_index(directory: pathlib.Path) -> dict:
    """name -> (dtype, shape) of every tensor in the checkpoint's *.safetensors files."""
    index = {}
    files = sorted(directory.glob("*.safetensors"))
    if not files:
        raise CaptureError(f"{directory} has no *.safetensors files")
    for path in files:
        with safe_open(str(path), framework="pt") as f:
            for name in f.keys():
                piece = f.get_slice(name)
                index[name] = (_HEADER_DTYPES.get(piece.get_dtype(), piece.get_dtype()), tuple(piece.get_shape()))
    return index


def checkpoint_float_dtype(index: dict) -> str:
    """The dtype most of a checkpoint's float tensors have (what the model was saved in)."""
    counts = {}
    for dtype, _ in index.values():
        if dtype in ("f32", "f16", "bf16"):
            counts[dtype] = counts.get(dtype, 0) + 1
    if not counts:
        raise CaptureError("the checkpoint holds no float tensors")
    return max(counts, key=counts.get)
