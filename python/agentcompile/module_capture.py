"""Captures a plain nn.Module (a KernelBench-style problem file) as one IR function `forward`.

The file defines the module class (default `Model`), `get_init_inputs()` and `get_inputs()`. The model
is built as `Model(*get_init_inputs())` and the inputs drawn by `get_inputs()`, each right after
`torch.manual_seed(seed)`, so a capture is reproducible. Shapes are static. The model stays in its
default (training) mode, as KernelBench runs it: batch norm normalizes with the batch's statistics and
its running-statistics updates are dropped (noted in the manifest); dropout would be random there, so
it is refused unless `--eval`. The example inputs and the eager outputs are written beside the IR
(inputs.safetensors, reference_outputs.safetensors) so a run can be checked without Python.
"""
from __future__ import annotations

import importlib.util
import pathlib
import re
import sys

import torch

from .capture_dir import node_count, signature, torch_version, write_capture
from .errors import CaptureError
from .exporting import export_core_aten
from .fx_to_ir import Converter, UserInput
from .ir_text import Module
from .weights import save_tensors


# Modules that compute differently in training mode.
MODE_DEPENDENT = (torch.nn.modules.batchnorm._BatchNorm, torch.nn.modules.instancenorm._InstanceNorm,
                  torch.nn.modules.dropout._DropoutNd)


def load_problem(path: pathlib.Path, class_name: str):
    """The problem file's module class, get_init_inputs and get_inputs."""
    if not path.is_file():
        raise CaptureError(f"{path} does not exist")
    name = "agentcompile_problem_" + re.sub(r"\W", "_", path.stem)
    spec = importlib.util.spec_from_file_location(name, path)
    problem = importlib.util.module_from_spec(spec)
    sys.modules[name] = problem  # dataclasses and pickling look the module up by name
    try:
        spec.loader.exec_module(problem)
    except Exception as e:
        raise CaptureError(f"importing {path.name} failed: {type(e).__name__}: {e}") from e
    missing = [n for n in (class_name, "get_inputs") if not hasattr(problem, n)]
    if missing:
        raise CaptureError(f"{path.name} defines no {' and no '.join(missing)}")
    return getattr(problem, class_name), getattr(problem, "get_init_inputs", lambda: []), problem.get_inputs


def _half(x):
    return x.half() if isinstance(x, torch.Tensor) and x.is_floating_point() else x


def build(path: pathlib.Path, class_name: str, dtype: str, seed: int, eval_mode: bool):
    """(model, example inputs) as the capture and its reference run see them."""
    cls, get_init_inputs, get_inputs = load_problem(path, class_name)
    try:
        torch.manual_seed(seed)
        model = cls(*get_init_inputs())
        torch.manual_seed(seed)
        inputs = list(get_inputs())
    except Exception as e:
        raise CaptureError(f"building {class_name} or its inputs failed: {type(e).__name__}: {e}") from e
    if dtype == "f16":
        model = model.half()  # floating parameters and buffers
        inputs = [_half(x) for x in inputs]
    if eval_mode:
        model.eval()
    return model, inputs


def _tensor_inputs(program, inputs) -> dict:
    """Placeholder name -> example tensor. Export lists the forward's arguments in order as user inputs
    and names each after its parameter; arguments that are not tensors were specialized away."""
    specs = [s for s in program.graph_signature.input_specs if s.kind.name == "USER_INPUT"]
    return {spec.arg.name: x for spec, x in zip(specs, inputs) if isinstance(x, torch.Tensor)}


def capture_module(path: pathlib.Path, out: pathlib.Path, class_name: str = "Model", dtype: str = "f32",
                   seed: int = 0, eval_mode: bool = False) -> str:
    model, inputs = build(path, class_name, dtype, seed, eval_mode)
    with torch.no_grad():
        program = export_core_aten(model, tuple(inputs), what=f"{path.name}:{class_name}")
    examples = _tensor_inputs(program, inputs)
    module = Module(re.sub(r"\W", "_", path.stem))
    converter = Converter(program, module, "forward", {name: UserInput(name) for name in examples})
    function = converter.run()
    module.functions.append(function)

    with torch.no_grad():
        outputs = _as_list(model(*inputs))
    if len(outputs) != len(function.results):
        raise CaptureError(f"the module returns {len(outputs)} tensors but the capture has {len(function.results)}")
    output_names = ["output"] if len(outputs) == 1 else [f"output_{i}" for i in range(len(outputs))]
    notes = list(converter.notes)
    if model.training and any(isinstance(m, MODE_DEPENDENT) for m in model.modules()):
        notes.insert(0, "captured in training mode (the module's default), as KernelBench runs it")
    manifest = {
        "kind": "module", "source": f"{path}:{class_name}", "torch": torch_version(), "dtype": dtype, "seed": seed,
        "functions": {"forward": signature(function, input_torch_dtypes={n: x.dtype for n, x in examples.items()},
                                           output_names=output_names, output_torch_dtypes=[o.dtype for o in outputs])},
        "notes": notes,
    }
    write_capture(out, module, manifest, converter.tensors)
    save_tensors(out / "inputs.safetensors", examples)
    save_tensors(out / "reference_outputs.safetensors", dict(zip(output_names, outputs)))
    return f"captured {path.name}:{class_name} ({node_count(module)}; {len(module.params)} params) -> {out}"


def _as_list(result) -> list:
    items = list(result) if isinstance(result, (tuple, list)) else [result]
    if not all(isinstance(t, torch.Tensor) for t in items):
        raise CaptureError("the module returns something other than tensors")
    return items
