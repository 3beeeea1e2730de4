"""Shared test support: the repository's paths, the C++ IR checker, numerical comparisons and the hook for
running captured functions through the C++ CLI.

Environment:
  AGENTCOMPILE_BUILD  a CMake build directory holding libac_ir.a, libac_support.a and agentcompile
                      (default: <repo>/build). Without it, checks that need C++ skip with a message.
"""
from __future__ import annotations

import functools
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import unittest
import warnings

ROOT = pathlib.Path(__file__).resolve().parents[2]
PYTHON_DIR = ROOT / "python"
if str(PYTHON_DIR) not in sys.path:
    sys.path.insert(0, str(PYTHON_DIR))

try:
    import torch  # noqa: F401
    import transformers  # noqa: F401
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False

def quiet_torch() -> None:
    """Keeps torch's deprecation warnings out of test logs (unittest resets filters before running, so
    test classes call this in setUpClass)."""
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=UserWarning)


requires_torch = unittest.skipUnless(HAVE_TORCH, "torch and transformers are not installed: capture tests skipped")


def build_dir() -> pathlib.Path:
    return pathlib.Path(os.environ.get("AGENTCOMPILE_BUILD", ROOT / "build"))


@functools.lru_cache(maxsize=None)
def checker() -> str | None:
    """Path of check_ir (python/tests/check_ir.cpp built against the build's IR library, kept in the build
    directory and rebuilt when the library or the source is newer), or None without a build."""
    build = build_dir()
    libs = [build / "libac_ir.a", build / "libac_support.a"]
    source = ROOT / "python" / "tests" / "check_ir.cpp"
    compiler = shutil.which("g++")
    if compiler is None or not all(lib.is_file() for lib in libs):
        return None
    out = build / "python-tests" / "check_ir"
    newest = max(path.stat().st_mtime for path in [*libs, source])
    if not out.is_file() or out.stat().st_mtime < newest:
        out.parent.mkdir(exist_ok=True)
        subprocess.run([compiler, "-std=c++20", "-O1", f"-I{ROOT / 'src'}", f"-I{ROOT / 'include'}", str(source),
                        *map(str, libs), "-lpthread", "-o", str(out)], check=True)
    return str(out)


def check_ir(test: unittest.TestCase, path: pathlib.Path) -> None:
    """Asserts that the C++ parser reads `path`, the verifier accepts it and it round-trips."""
    tool = checker()
    if tool is None:
        test.skipTest(f"no C++ IR library in {build_dir()} (set AGENTCOMPILE_BUILD): verification skipped")
    result = subprocess.run([tool, str(path)], capture_output=True, text=True)
    test.assertEqual(result.returncode, 0, f"{path}:\n{result.stdout}{result.stderr}")


def assert_close(test: unittest.TestCase, ours: dict, reference: dict, atol: float, rtol: float) -> None:
    """Every reference tensor has a match in `ours` within atol + rtol * |ref| (integers exactly)."""
    import torch
    for name, ref in reference.items():
        test.assertIn(name, ours)
        got = ours[name]
        test.assertEqual(tuple(got.shape), tuple(ref.shape), name)
        if not ref.is_floating_point():
            test.assertTrue(torch.equal(got.to(ref.dtype), ref), f"{name}: integer outputs differ")
            continue
        got, ref = got.double(), ref.double()
        ok = torch.isclose(got, ref, atol=atol, rtol=rtol, equal_nan=True)
        worst = float((got - ref).abs().nan_to_num(0).max()) if got.numel() else 0.0
        test.assertTrue(bool(ok.all()), f"{name}: {int((~ok).sum())} of {ok.numel()} elements differ "
                                        f"(max abs diff {worst:.3g}, atol {atol}, rtol {rtol})")


def cli_supports(subcommand: str) -> bool:
    """Whether the build's agentcompile has `subcommand` (listed in its --help; `X --help` of an unknown X
    prints the main help and succeeds, so it cannot tell)."""
    cli = build_dir() / "agentcompile"
    if not cli.is_file():
        return False
    listing = subprocess.run([str(cli), "--help"], capture_output=True, text=True).stdout
    return any(line.split()[:1] == [subcommand] for line in listing.splitlines())


def run_function_command(capture_dir: pathlib.Path, function: str, inputs: dict, extra=("--cpu",)) -> dict:
    """Runs one captured function through `agentcompile run-function` on `inputs` (name -> tensor) and
    returns its outputs (name -> tensor). Tests call it only when cli_supports("run-function")."""
    from safetensors.torch import load_file, save_file
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        save_file({k: v.contiguous() for k, v in inputs.items()}, str(tmp / "inputs.safetensors"))
        command = [str(build_dir() / "agentcompile"), "run-function", str(capture_dir), "--function", function,
                   "--inputs", str(tmp / "inputs.safetensors"), "--outputs", str(tmp / "outputs.safetensors"), *extra]
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            raise AssertionError(f"{' '.join(command)} failed:\n{result.stderr}")
        return load_file(str(tmp / "outputs.safetensors"))


def reference_tokens(capture_dir: pathlib.Path, prompt: list, count: int) -> list:
    """Greedy tokens of `agentcompile reference CAPTURE --tokens PROMPT -n COUNT` (the CPU interpreter
    running prefill once and decode per token, its states carried between the calls)."""
    cli = build_dir() / "agentcompile"
    command = [str(cli), "reference", str(capture_dir), "--tokens", ",".join(map(str, prompt)), "-n", str(count)]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise AssertionError(f"{' '.join(command)} failed:\n{result.stderr}")
    line = next(l for l in result.stdout.splitlines() if l.startswith("tokens:"))
    return [int(t) for t in line.split()[1:]]


def capture_cli(*args: str) -> subprocess.CompletedProcess:
    """`python3 -m agentcompile.capture ARGS` as a user runs it."""
    env = {**os.environ, "PYTHONPATH": str(PYTHON_DIR)}
    return subprocess.run([sys.executable, "-m", "agentcompile.capture", *args], capture_output=True, text=True,
                          env=env)
