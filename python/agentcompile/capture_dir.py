"""Writes a capture directory (docs/capture.md): module.ir, capture.json and the weights.

The manifest's function signatures are read off the IR functions themselves, so they cannot disagree
with module.ir; `torch_dtype` is added where the IR narrowed a tensor's type (int64 -> i32).
"""
from __future__ import annotations

import json
import pathlib

import torch

from .ir_text import Module, format_module
from .weights import save_tensors

FORMAT = "agentcompile-capture/1"


def signature(function, input_torch_dtypes=None, output_names=None, output_torch_dtypes=None) -> dict:
    def entry(name, value, torch_dtype):
        item = {"name": name, "dtype": value.type.dtype, "shape": list(value.type.shape)}
        if torch_dtype is not None and _narrowed(torch_dtype, value.type.dtype):
            item["torch_dtype"] = str(torch_dtype).replace("torch.", "")
        return item
    input_torch_dtypes = input_torch_dtypes or {}
    output_names = output_names or [f"output_{i}" for i in range(len(function.results))]
    output_torch_dtypes = output_torch_dtypes or [None] * len(function.results)
    return {
        "inputs": [entry(v.name, v, input_torch_dtypes.get(v.name)) for v in function.args],
        "outputs": [entry(n, v, d) for n, v, d in zip(output_names, function.results, output_torch_dtypes)],
    }


def _narrowed(torch_dtype: torch.dtype, ir_dtype: str) -> bool:
    return {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16", torch.int32: "i32",
            torch.bool: "bool"}.get(torch_dtype) != ir_dtype


def write_capture(out: pathlib.Path, module: Module, manifest: dict, weights: dict) -> None:
    """module.ir, capture.json and (when any parameter is left to write) weights.safetensors."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "module.ir").write_text(format_module(module))
    if weights:
        save_tensors(out / "weights.safetensors", weights)
    elif (out / "weights.safetensors").exists():
        (out / "weights.safetensors").unlink()  # a stale file from an earlier capture into this directory
    manifest = {"format": FORMAT, **manifest}
    (out / "capture.json").write_text(format_json(manifest) + "\n")


def format_json(value, indent: str = "") -> str:
    """JSON with one line per leaf object (a tensor's name, dtype and shape), nested objects indented."""
    def is_leaf(v):
        return not isinstance(v, (dict, list)) or all(not isinstance(x, (dict, list)) or (
            isinstance(x, list) and all(not isinstance(y, (dict, list)) for y in x)) for x in (
            v.values() if isinstance(v, dict) else v))
    if is_leaf(value):
        return json.dumps(value)
    inner = indent + "  "
    if isinstance(value, dict):
        items = [f"{inner}{json.dumps(k)}: {format_json(v, inner)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    items = [inner + format_json(v, inner) for v in value]
    return "[\n" + ",\n".join(items) + "\n" + indent + "]"


def torch_version() -> str:
    return torch.__version__.split("+")[0]


def node_count(module: Module) -> str:
    return ", ".join(f"{f.name}: {len(f.nodes)} nodes" for f in module.functions)
