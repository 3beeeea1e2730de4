"""torch.export to core ATen, with scaled_dot_product_attention kept whole, and its failures in words.

Non-strict export traces the Python code as it runs (so registered attention functions and module-level
state work); the default decomposition table then lowers to core ATen, minus SDPA, which the IR has as
one node. When export fails, the user gets torch's own explanation, shortened, not a traceback.
"""
from __future__ import annotations

import contextlib
import io
import os
import traceback

import torch

from .errors import CaptureError

_NOISE = ("For more information", "The error above occurred", "from user code:", "Set TORCH_LOGS",
          "Explanation:", "Hint:", "Developer debug context", "Caused by:")
_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_OWN_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def core_aten_table() -> dict:
    table = torch.export.default_decompositions()
    table.pop(torch.ops.aten.scaled_dot_product_attention.default, None)
    return table


def export_core_aten(model: torch.nn.Module, args: tuple, dynamic_shapes=None, what: str = "the module"):
    printed = io.StringIO()  # a failed export prints its partial graph to stderr: kept for --debug
    try:
        with contextlib.redirect_stderr(printed):
            program = torch.export.export(model, args, dynamic_shapes=dynamic_shapes, strict=False)
    except CaptureError:
        raise
    except Exception as e:  # torch raises many types here; all of them mean "cannot trace"
        raise CaptureError(f"torch.export cannot trace {what}: {shorten(e)}{user_frame(e)}",
                           details=printed.getvalue()) from e
    try:
        return program.run_decompositions(core_aten_table())
    except Exception as e:
        raise CaptureError(f"decomposing {what} to core ATen failed: {shorten(e)}") from e


def user_frame(error: Exception) -> str:
    """` (file.py:LINE in FUNC)` of the innermost traceback frame in the user's code, if any."""
    frames = [f for f in traceback.extract_tb(error.__traceback__)
              if not f.filename.startswith(_TORCH_DIR) and not os.path.abspath(f.filename).startswith(_OWN_DIR)
              and "site-packages" not in f.filename]
    if not frames:
        return ""
    frame = frames[-1]
    return f" ({os.path.basename(frame.filename)}:{frame.lineno} in {frame.name})"


def shorten(error: Exception, limit: int = 600) -> str:
    """The first lines of torch's message that explain something, without links and debug context."""
    lines = []
    for line in str(error).strip().splitlines():
        if any(line.strip().startswith(noise) for noise in _NOISE):
            break
        if line.strip():
            lines.append(line.strip())
    text = " ".join(lines) or type(error).__name__
    if len(text) > limit:
        text = text[:limit].rsplit(" ", 1)[0] + " ..."
    return f"{type(error).__name__}: {text}"
