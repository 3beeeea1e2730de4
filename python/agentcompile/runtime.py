"""Run a compiled captured module on tensors torch holds on the GPU.

Binds libagentcompile_runtime.so (include/agentcompile/runtime_c.h) with ctypes, so it works with any
Python that has torch, with no extension module to build. The runner never compiles: compile the capture
first (`agentcompile compile CAPTURE_DIR`), then

    runner = FunctionRunner("captured/relu", artifact="artifacts/relu")
    (y,) = runner(x)                 # torch CUDA tensors in, torch CUDA tensors out
    runner.enqueue()                 # one call on the runner's stream, for timing with torch CUDA events

Inputs are copied into the runner's own buffers on the stream (device to device); outputs are copied
into fresh torch tensors. The library is found through $AGENTCOMPILE_LIB, else next to the `agentcompile`
binary in build/ of this repository.
"""
from __future__ import annotations

import ctypes
import os
import pathlib

_DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "i32": "int32", "bool": "bool"}
_lib = None


def library_path() -> pathlib.Path:
    env = os.environ.get("AGENTCOMPILE_LIB")
    if env:
        return pathlib.Path(env)
    root = pathlib.Path(__file__).resolve().parent.parent.parent
    for build in ("build", "build-release"):
        candidate = root / build / "libagentcompile_runtime.so"
        if candidate.exists():
            return candidate
    raise FileNotFoundError("libagentcompile_runtime.so not found: build the repository (cmake --build build) "
                            "or set AGENTCOMPILE_LIB to the library's path")


def _load():
    global _lib
    if _lib is not None:
        return _lib
    lib = ctypes.CDLL(str(library_path()))
    runner = ctypes.c_void_p
    lib.ac_function_runner_load.restype = runner
    lib.ac_function_runner_load.argtypes = [ctypes.c_char_p] * 4 + [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.ac_function_runner_free.argtypes = [runner]
    lib.ac_free_string.argtypes = [ctypes.c_void_p]
    lib.ac_function_runner_count.argtypes = [runner, ctypes.c_int]
    for name in ("ac_function_runner_name", "ac_function_runner_dtype"):
        getattr(lib, name).restype = ctypes.c_char_p
        getattr(lib, name).argtypes = [runner, ctypes.c_int, ctypes.c_int]
    lib.ac_function_runner_rank.argtypes = [runner, ctypes.c_int, ctypes.c_int]
    lib.ac_function_runner_dim.restype = ctypes.c_int64
    lib.ac_function_runner_dim.argtypes = [runner, ctypes.c_int, ctypes.c_int, ctypes.c_int]
    for name in ("ac_function_runner_copy_input", "ac_function_runner_copy_output"):
        getattr(lib, name).argtypes = [runner, ctypes.c_int, ctypes.c_uint64, ctypes.c_uint64, ctypes.POINTER(ctypes.c_void_p)]
    for name in ("ac_function_runner_prepare_graph", "ac_function_runner_enqueue", "ac_function_runner_synchronize"):
        getattr(lib, name).argtypes = [runner, ctypes.POINTER(ctypes.c_void_p)]
    lib.ac_function_runner_artifact.restype = ctypes.c_char_p
    lib.ac_function_runner_artifact.argtypes = [runner]
    _lib = lib
    return lib


class AgentcompileError(RuntimeError):
    pass


def _check(lib, status: int, error: ctypes.c_void_p) -> None:
    if status == 0:
        return
    message = ctypes.cast(error, ctypes.c_char_p).value.decode("utf-8", "replace") if error.value else "unknown error"
    lib.ac_free_string(error)
    raise AgentcompileError(message)


class FunctionRunner:
    """One function of a compiled capture, bound to torch's current CUDA stream at construction."""

    def __init__(self, model: str | os.PathLike, function: str = "forward", artifact: str | os.PathLike | None = None,
                 cache_dir: str | os.PathLike | None = None, cuda_graph: bool = True):
        import torch

        self._torch = torch
        self._lib = _load()
        torch.cuda.init()
        self.stream = torch.cuda.current_stream()
        error = ctypes.c_void_p()
        handle = self._lib.ac_function_runner_load(str(model).encode(), function.encode(),
                                                   str(artifact or "").encode(), str(cache_dir or "").encode(),
                                                   ctypes.c_void_p(self.stream.cuda_stream), ctypes.byref(error))
        if not handle:
            _check(self._lib, -1, error)
        self._handle = ctypes.c_void_p(handle)
        self.inputs = [self._spec(0, i) for i in range(self._lib.ac_function_runner_count(self._handle, 0))]
        self.outputs = [self._spec(1, i) for i in range(self._lib.ac_function_runner_count(self._handle, 1))]
        self.artifact = self._lib.ac_function_runner_artifact(self._handle).decode()
        if cuda_graph:
            self._call(self._lib.ac_function_runner_prepare_graph)

    def _spec(self, which: int, index: int) -> dict:
        lib, h = self._lib, self._handle
        rank = lib.ac_function_runner_rank(h, which, index)
        return {"name": lib.ac_function_runner_name(h, which, index).decode(),
                "dtype": lib.ac_function_runner_dtype(h, which, index).decode(),
                "shape": tuple(lib.ac_function_runner_dim(h, which, index, a) for a in range(rank))}

    def _call(self, fn, *args) -> None:
        error = ctypes.c_void_p()
        _check(self._lib, fn(self._handle, *args, ctypes.byref(error)), error)

    def set_inputs(self, *tensors) -> None:
        """Copies the inputs (CUDA tensors of the specs' dtypes and shapes) into the runner's buffers."""
        torch = self._torch
        if len(tensors) != len(self.inputs):
            raise AgentcompileError(f"the function takes {len(self.inputs)} inputs, {len(tensors)} were given")
        for i, (t, spec) in enumerate(zip(tensors, self.inputs)):
            want = getattr(torch, _DTYPES[spec["dtype"]])
            if t.dtype == torch.int64 and want == torch.int32:
                t = t.to(torch.int32)
            if t.dtype != want or tuple(t.shape) != spec["shape"]:
                raise AgentcompileError(f"input {spec['name']}: {t.dtype}{tuple(t.shape)}, the function takes "
                                        f"{want}{spec['shape']}")
            t = t.contiguous()
            if not t.is_cuda:
                t = t.cuda()
            self._call(self._lib.ac_function_runner_copy_input, i, t.data_ptr(), t.numel() * t.element_size())
            # Keep the source alive until the copy ran (the stream orders it before any later use).
            t.record_stream(self.stream)

    def enqueue(self) -> None:
        """One call on the runner's stream (a CUDA graph replay unless cuda_graph=False)."""
        self._call(self._lib.ac_function_runner_enqueue)

    def get_outputs(self) -> list:
        torch = self._torch
        outs = []
        for i, spec in enumerate(self.outputs):
            out = torch.empty(spec["shape"], dtype=getattr(torch, _DTYPES[spec["dtype"]]), device="cuda")
            self._call(self._lib.ac_function_runner_copy_output, i, out.data_ptr(), out.numel() * out.element_size())
            outs.append(out)
        return outs

    def __call__(self, *tensors) -> list:
        self.set_inputs(*tensors)
        self.enqueue()
        return self.get_outputs()

    def synchronize(self) -> None:
        self._call(self._lib.ac_function_runner_synchronize)

    def __del__(self):
        handle = getattr(self, "_handle", None)
        if handle and handle.value:
            self._lib.ac_function_runner_free(handle)
            self._handle = None
