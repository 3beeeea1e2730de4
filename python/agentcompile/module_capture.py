"""Captures a plain nn.Module (a KernelBench-style problem file) as one IR function `forward`.

The file defines the module class (default `Model`), `get_init_inputs()` and `get_inputs()`. The model
is built as `Model(*get_init_inputs())` and the inputs drawn by `get_inputs()`, each right after
`torch.manual_seed(seed)`, so a capture is reproducible.

The leading (batch) dim is kept symbolic where torch.export and the IR allow it: dim 0 of the inputs that
share the first input's leading size (3 or more) becomes the IR symbol T (a `torch.export.Dim` from 2 to the
example's size), and the manifest records the example's size, at which the function runs (`symbols: {"T": n}`). The
compiler then checks candidates against its CPU reference at a small T and times them at n, so problems of
billions of elements compile in seconds. Where the module fixes that dim (a view of a constant batch size,
an op that needs the size as a number, ...) the capture is static, and a note says why. The model stays in its
default (training) mode, as KernelBench runs it: batch norm normalizes with the batch's statistics and
its running-statistics updates are dropped (noted in the manifest); a dropout, torch.rand / randn (and
their _like forms) and torch.bernoulli draw from the IR's counter-based random numbers (random_ops.py: the
k-th draw's seed follows --seed, the same numbers in every call), and `--eval` turns dropout off. The
example inputs and the eager outputs, computed with the capture's draws, are written beside the IR
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
from .random_ops import captured_random, count_draws
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


def build(path: pathlib.Path, class_name: str, dtype: str, seed: int, eval_mode: bool, example_data: bool = True):
    """(model, example inputs) as the capture and its reference run see them. Without example data the
    inputs are only shapes and dtypes to trace with: drawn on the meta device, then allocated and never
    written (the pages of an untouched torch.empty cost nothing, at any KernelBench size)."""
    cls, get_init_inputs, get_inputs = load_problem(path, class_name)
    try:
        torch.manual_seed(seed)
        model = cls(*get_init_inputs())
        torch.manual_seed(seed)
        if example_data:
            inputs = list(get_inputs())
        else:
            with torch.device("meta"):
                inputs = [torch.empty(x.shape, dtype=x.dtype, device="cpu") if isinstance(x, torch.Tensor) else x
                          for x in get_inputs()]
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


def _batch_dim_choices(inputs) -> list:
    """Sets of input positions whose dim 0 may become T, most inclusive first: every tensor input whose
    leading size equals the first's, then the first alone. None when the first leading size is under 3
    (torch.export specializes sizes 0 and 1, and T ranges from 2 to the example's size)."""
    tensors = [i for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) and x.dim() >= 1]
    if not tensors or inputs[tensors[0]].shape[0] < 3:
        return []
    size = inputs[tensors[0]].shape[0]
    shared = tuple(i for i in tensors if inputs[i].shape[0] == size)
    return [shared] if shared == (tensors[0],) else [shared, (tensors[0],)]


def _convert(program, inputs, name: str, symbolic: tuple, seed: int = 0):
    """(module, function, converter) of one exported program; dim 0 of the inputs at `symbolic` is T."""
    position = {spec.arg.name: i for i, spec in enumerate(s for s in program.graph_signature.input_specs
                                                               if s.kind.name == "USER_INPUT")}
    examples = _tensor_inputs(program, inputs)
    module = Module(name)
    converter = Converter(program, module, "forward",
                          {n: UserInput(n, symbols={0: "T"} if position[n] in symbolic else {}) for n in examples},
                          random_seed=seed)
    function = converter.run()
    module.functions.append(function)
    return module, function, converter


def _batch_symbol_problem(function) -> str:
    """Why T cannot stay the batch dim of this function, or "": the compiler validates at a smaller T,
    which is sound where T only counts independent rows, so T must lead every value that has it and
    every output, and no op may fold it away (a reduction over the batch, a product contracting it)."""
    for v in function.results:
        if not v.type.shape or v.type.shape[0] != "T":
            return f"output {v.name} is {v.type}: T does not lead it"
    for node in function.nodes:
        shape = node.result.type.shape
        if node.op == "arange" and "T" in shape:
            return f"arange at {node.loc or '?'} makes row indices of T (the compiler's row programs take them static)"
        if "T" in shape[1:]:
            return f"{node.op} at {node.loc or '?'} moves T off the leading dim ({node.result.type})"
        if (not shape or shape[0] != "T") and any(o.type.shape and o.type.shape[0] == "T" for o in node.operands
                                                  if hasattr(o, "type")):
            return f"{node.op} at {node.loc or '?'} folds T away ({node.result.type})"
    return ""


def _export_and_convert(model, inputs, name: str, what: str, static: bool, seed: int = 0):
    """The first capture that works: with a symbolic batch dim (each choice of _batch_dim_choices), else
    static. Returns (program, module, function, converter, T's example size or 0, why it is static)."""
    why = "--static-shapes" if static else "the first input has no leading dim of size 3 or more"
    for symbolic in ([] if static else _batch_dim_choices(inputs)):
        size = inputs[symbolic[0]].shape[0]
        batch = torch.export.Dim("T", min=2, max=size)
        dynamic = tuple({0: batch} if i in symbolic else None for i in range(len(inputs)))
        try:
            with torch.no_grad():
                program = export_core_aten(model, tuple(inputs), dynamic_shapes=dynamic, what=what)
            converted = _convert(program, inputs, name, symbolic, seed)
            why = _batch_symbol_problem(converted[1])
            if not why:
                return (program, *converted, size, "")
        except CaptureError as e:  # the module fixes the size somewhere: try fewer symbolic inputs, then none
            why = str(e)
    with torch.no_grad():
        program = export_core_aten(model, tuple(inputs), what=what)
    return (program, *_convert(program, inputs, name, (), seed), 0, why)


def capture_module(path: pathlib.Path, out: pathlib.Path, class_name: str = "Model", dtype: str = "f32",
                   seed: int = 0, eval_mode: bool = False, example_data: bool = True, static_shapes: bool = False) -> str:
    """Captures the problem into `out`; `example_data` also writes the example inputs and eager outputs
    (at KernelBench's published sizes those are gigabytes, so a benchmark leaves them out)."""
    model, inputs = build(path, class_name, dtype, seed, eval_mode, example_data)
    program, module, function, converter, batch, why_static = _export_and_convert(
        model, inputs, re.sub(r"\W", "_", path.stem), f"{path.name}:{class_name}", static_shapes, seed)
    examples = _tensor_inputs(program, inputs)
    if converter.draw_sites:
        # Eager must draw what the capture does, k-th for k-th (random_ops.py); torch.export drops a draw whose
        # result is unused, which would shift every later seed.
        eager_draws = count_draws(torch, model, inputs)
        if eager_draws != len(converter.draw_sites):
            raise CaptureError(f"forward makes {eager_draws} random draws but the exported program keeps "
                               f"{len(converter.draw_sites)} ({', '.join(converter.draw_sites)}): torch.export drops a "
                               "draw whose result is unused, so the captured draws cannot be matched with eager's; "
                               "remove the unused draw")

    output_dtypes = _output_dtypes(program)
    output_names = ["output"] if len(output_dtypes) == 1 else [f"output_{i}" for i in range(len(output_dtypes))]
    notes = list(converter.notes)
    if batch:
        symbolic = [v.name for v in function.args if v.type.shape and v.type.shape[0] == "T"]
        notes.insert(0, f"dim 0 of {', '.join(symbolic)} is the symbol T, captured at T={batch}: the function runs at "
                        f"that size; the compiler validates at a smaller T")
    else:
        notes.insert(0, f"static shapes: {why_static}")
    if model.training and any(isinstance(m, MODE_DEPENDENT) for m in model.modules()):
        notes.insert(0, "captured in training mode (the module's default), as KernelBench runs it")
    manifest = {
        "kind": "module", "source": f"{path}:{class_name}", "torch": torch_version(), "dtype": dtype, "seed": seed,
        "functions": {"forward": {**signature(function, input_torch_dtypes={n: x.dtype for n, x in examples.items()},
                                              output_names=output_names, output_torch_dtypes=output_dtypes),
                                  **({"symbols": {"T": batch}} if batch else {})}},
        "notes": notes,
        **({"random_draws": converter.random_draws} if converter.random_draws else {}),
    }
    write_capture(out, module, manifest, converter.tensors)
    if example_data:
        with torch.no_grad(), captured_random(torch, seed):  # eager with the capture's random draws
            outputs = _as_list(model(*inputs))
        save_tensors(out / "inputs.safetensors", examples)
        save_tensors(out / "reference_outputs.safetensors", dict(zip(output_names, outputs)))
    return f"captured {path.name}:{class_name} ({node_count(module)}; {len(module.params)} params) -> {out}"


def _output_dtypes(program) -> list:
    """torch's dtype of each user output (the IR may have narrowed it)."""
    output = next(n for n in program.graph.nodes if n.op == "output")
    specs = program.graph_signature.output_specs
    return [out.meta["val"].dtype for spec, out in zip(specs, output.args[0]) if spec.kind.name == "USER_OUTPUT"]


def _as_list(result) -> list:
    items = list(result) if isinstance(result, (tuple, list)) else [result]
    if not all(isinstance(t, torch.Tensor) for t in items):
        raise CaptureError("the module returns something other than tensors")
    return items
