#!/usr/bin/env python3
"""KernelBench on captured modules (BENCHMARK.md, "KernelBench"): capture, compile, check, time.

For every problem file (Model, get_inputs, get_init_inputs) of the chosen levels and every dtype:
  1. capture   `python3 -m agentcompile.capture module FILE --dtype D --seed 0 --no-example-data -o WORK/cap/NAME-D`,
               all problems in one process first (bench/kernelbench_capture.py: torch is imported once)
  2. compile   `agentcompile compile WORK/cap/NAME-D -o WORK/art/NAME-D` (validated and timed on this GPU)
  Both run as subprocesses before this process touches CUDA (compiling forks GPU workers).
  3. check     KernelBench's rule: for each of --seeds seeds, inputs from get_inputs() under that seed, the
               outputs of PyTorch eager (the capture's own weights loaded into Model) against agentcompile's
               (python/agentcompile/runtime.py: the compiled kernels on torch's tensors and stream, outputs in
               fresh buffers), torch.allclose with atol = rtol = 1e-2; integer outputs exactly. In f16 a pair
               that misses eager is judged again against the model run in f32 on the same inputs: correct only
               where agentcompile matches it and eager does not (torch's CUDA cumsum adds in f16), noted.
  4. time      CUDA events on torch's current stream, --warmup calls then --trials timed calls, median:
               eager, torch.compile(model) (default mode) and agentcompile (one call = a CUDA-graph replay of
               the function's kernels; inputs already in its buffers), all in this process, one after another.
A problem that cannot be captured, compiled or checked counts as incorrect (never skipped); the reason is
recorded. A random draw (L2 66's dropout in training mode, as KernelBench runs its Model; torch.rand, randn,
bernoulli) is captured with the IR's own random numbers (python/agentcompile/random_ops.py: Philox4x32-10, the
same numbers every call), so the reference is eager run with those draws; how eager with torch's own RNG
compares is recorded beside it, not judged. A draw the IR has no form for (randint, multinomial, a generator
argument) is recorded as unsupported, which also counts as incorrect. Pairs are compiled and evaluated cheapest first (least data to validate), so a pass cut by its budget covers as many as it can. Runs resume: WORK keeps what was compiled and --out what was evaluated (an artifact evaluated once
is not evaluated again), so a benchmark can be spread over several calls with --budget. fast_p = share of problems that are correct and more than p times faster than the baseline
(fast_0: correct). Outputs in --out: results.json (merged with an earlier run's, per problem and dtype),
results.md (per level and dtype: fast_0, fast_1 over eager and over torch.compile, geometric-mean speedups)
and plot.png. TF32 stays off for torch (its default for matmuls); the table says so. agentcompile's f32
GEMMs may run as 3xTF32 (split operands, three TF32 tensor-core products: fp32-level error), a candidate
validated like any other; for every f32 pair the report gives eager's and agentcompile's error against the
model run in f64, so that accuracy is measured, not asserted.
"""
import argparse
import datetime
import importlib.util
import json
import math
import os
import pathlib
import re
import statistics
import subprocess
import sys
import time
import traceback

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))
TORCH_DTYPES = {"f32": "float32", "f16": "float16"}


def log(*args):
    print(*args, flush=True)


def problem_files(root: pathlib.Path, levels: list[int], only: str | None) -> list[tuple[int, pathlib.Path]]:
    files = []
    for level in levels:
        for path in sorted((root / f"level{level}").glob("*.py"), key=lambda p: int(p.name.split("_")[0])):
            if only and not re.search(only, path.name):
                continue
            files.append((level, path))
    return files


def run(cmd: list[str], timeout: float, log_path: pathlib.Path, env=None) -> tuple[bool, str, float]:
    start = time.time()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        output = proc.stdout + proc.stderr
        ok = proc.returncode == 0
    except subprocess.TimeoutExpired as e:
        output = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        output += f"\ntimed out after {timeout:.0f} s"
        ok = False
    log_path.write_text(" ".join(cmd) + "\n" + output)
    last = [line for line in output.strip().splitlines() if line.strip()]
    return ok, (last[-1] if last else ""), time.time() - start


# Capture refusals that no compiler change can lift: the problem's reference itself is random.
RANDOM_REFERENCE = re.compile(r"draws random numbers")


def capture_failure(message: str) -> dict:
    """The entry fields of a problem whose capture failed: unsupported (a random reference) or not."""
    if RANDOM_REFERENCE.search(message):
        where = re.search(r"\(([^()]*:\d+ in [^()]*)\)\s*$", message)
        return {"compiled": False, "unsupported": True,
                "reason": "unsupported: the reference is random (" + message.removeprefix("capture: ").split(";")[0] +
                          (f" at {where.group(1)}" if where else "") +
                          "); only dropout, rand, randn and bernoulli have an IR form (random_ops.py)"}
    return {"compiled": False, "reason": "capture failed: " + message}


def random_draws(cap: pathlib.Path) -> list[dict]:
    """The capture's random draws (its manifest's "random_draws": draw, site, seed), empty without one."""
    return json.loads((cap / "capture.json").read_text()).get("random_draws", [])


def load_problem(path: pathlib.Path):
    spec = importlib.util.spec_from_file_location(f"kb_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def median_cuda_ms(torch, fn, warmup: int, trials: int) -> float:
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(trials):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def as_list(outputs):
    if isinstance(outputs, (tuple, list)):
        return list(outputs)
    return [outputs]


def check_outputs(torch, expected, actual) -> tuple[bool, str]:
    expected, actual = as_list(expected), as_list(actual)
    if len(expected) != len(actual):
        return False, f"{len(actual)} outputs, eager gives {len(expected)}"
    for i, (e, a) in enumerate(zip(expected, actual)):
        if tuple(e.shape) != tuple(a.shape):
            return False, f"output {i}: shape {tuple(a.shape)}, eager {tuple(e.shape)}"
        if not e.is_floating_point():
            if not torch.equal(e.to(torch.int64), a.to(torch.int64)):
                return False, f"output {i}: {int((e.to(torch.int64) != a.to(torch.int64)).sum())} integer elements differ"
            continue
        a32, e32 = a.float(), e.float()
        if not torch.allclose(a32, e32, atol=1e-2, rtol=1e-2):
            diff = (a32 - e32).abs()
            return False, f"output {i}: max abs error {diff.nan_to_num(float('inf')).max().item():.3g}"
    return True, ""


def judge_by_f32_reference(torch, model, inputs, expected, actual, why: str) -> tuple[bool, str]:
    """A 16-bit pair that missed eager: eager's own 16-bit arithmetic may be what is off (torch's CUDA
    cumsum adds in f16, issue pytorch#180150). Both are then compared with the model run in f32 on the
    same inputs (upcast), its outputs rounded to the pair's dtype. The pair counts as correct only where
    agentcompile matches that reference and eager does not; otherwise eager's verdict stands."""
    import copy
    reference_model = copy.deepcopy(model).float()
    upcast = [v.float() if isinstance(v, torch.Tensor) and v.is_floating_point() else v for v in inputs]
    reference = [r.to(e.dtype) for r, e in zip(as_list(reference_model(*upcast)), as_list(expected))]
    del reference_model, upcast
    ours_ok, _ = check_outputs(torch, reference, actual)
    eager_ok, eager_why = check_outputs(torch, reference, expected)
    if ours_ok and not eager_ok:
        return True, (f"correct against eager in f32 (rounded to f16); eager f16 is not ({eager_why}), and differs "
                      f"from agentcompile by {why.split(': ', 1)[-1]}")
    return False, why


class Tf32Allowed:
    """torch's matmuls and convolutions on TF32 tensor cores inside the block (off outside it, as main sets)."""
    def __init__(self, torch):
        self.torch = torch

    def __enter__(self):
        self.saved = (self.torch.backends.cuda.matmul.allow_tf32, self.torch.backends.cudnn.allow_tf32)
        self.torch.backends.cuda.matmul.allow_tf32 = self.torch.backends.cudnn.allow_tf32 = True

    def __exit__(self, *exc):
        self.torch.backends.cuda.matmul.allow_tf32, self.torch.backends.cudnn.allow_tf32 = self.saved


def error_against_f64(torch, model, inputs, outputs: dict) -> dict | None:
    """How far each system's outputs (name -> outputs) are from the model run in f64 on the same inputs:
    the largest absolute error over the floating outputs, relative to the largest |f64 output|. It shows
    what an f32 kernel's arithmetic costs (cuBLAS's fp32 SGEMM, TF32, agentcompile's 3xTF32); None where
    the model cannot run in f64 or its outputs are not floating point."""
    import copy
    try:
        reference_model = copy.deepcopy(model).double()
        upcast = [v.double() if isinstance(v, torch.Tensor) and v.is_floating_point() else v for v in inputs]
        reference = as_list(reference_model(*upcast))
        del reference_model, upcast
    except Exception as e:  # an op without an f64 kernel: no figure, not a failure
        log("f64 reference failed:", str(e).splitlines()[0][:160])
        return None
    errors = {name: 0.0 for name in outputs}
    floating = False
    for i, r in enumerate(reference):
        if not r.is_floating_point():
            continue
        floating = True
        scale = max(r.abs().max().item(), 1e-30)
        for name, values in outputs.items():
            errors[name] = max(errors[name], (as_list(values)[i].double() - r).abs().max().item() / scale)
    del reference
    torch.cuda.empty_cache()
    return errors if floating else None


def evaluate(torch, args, level: int, path: pathlib.Path, dtype: str, cap: pathlib.Path, art: pathlib.Path) -> dict:
    """Check and time one compiled problem (CUDA is live in this process from here on)."""
    from safetensors.torch import load_file
    from agentcompile.random_ops import with_captured_random
    from agentcompile.runtime import FunctionRunner

    torch_dtype = getattr(torch, TORCH_DTYPES[dtype])
    problem = load_problem(path)
    torch.manual_seed(args.model_seed)
    model = problem.Model(*problem.get_init_inputs())
    weights = cap / "weights.safetensors"
    if weights.exists():
        state = load_file(str(weights))
        missing = model.load_state_dict({k: v for k, v in state.items()}, strict=False)
        del missing
    model = model.to(device="cuda", dtype=torch_dtype if dtype != "f32" else None)
    runner = FunctionRunner(cap, artifact=art)

    def inputs_for(seed: int):
        torch.manual_seed(seed)
        # Drawn on the GPU: torch.rand of 2^31 elements on the CPU took seconds per seed, six times per
        # problem. Other values than a CPU draw of the same seed, as random and as deterministic.
        with torch.device("cuda"):
            values = problem.get_inputs()
        # Python scalars (L1 5's `s = 3.14`) stay as they are: torch.export bakes them into the capture,
        # whose function takes the tensors alone.
        return [(v.to("cuda", dtype=torch_dtype) if v.is_floating_point() else v.to("cuda")) if isinstance(v, torch.Tensor) else v
                for v in values]

    def tensors(values):
        return [v for v in values if isinstance(v, torch.Tensor)]

    result = {"correct": True, "seeds": args.seeds}
    # The reference: eager, where a random draw (a dropout in training mode, torch.rand, ...) draws what the
    # capture's does (its k-th with random_ops' random_seed(0, k), as captured with --seed 0); without one it is
    # the model itself.
    draws = random_draws(cap)
    reference = with_captured_random(torch, model, 0) if draws else model
    with torch.no_grad():
        for seed in range(args.seeds):
            inputs = inputs_for(seed)
            expected = reference(*inputs)
            if draws and seed == 0:
                # KernelBench's own rule compares with eager's draws from torch's RNG: recorded, not judged
                # (a softmax over many features can hide any dropout mask within 1e-2).
                ok_torch_rng, why_torch_rng = check_outputs(torch, model(*inputs), runner(*tensors(inputs)))
                result["random"] = {"reference": "eager with the capture's draws (random_ops.captured_random)", "draws": draws,
                                    "vs_eager_torch_rng": "within tolerance" if ok_torch_rng else why_torch_rng}
            actual = runner(*tensors(inputs))
            torch.cuda.synchronize()
            ok, why = check_outputs(torch, expected, actual)
            if not ok and dtype != "f32":
                ok, why = judge_by_f32_reference(torch, reference, inputs, expected, actual, why)
                if ok:
                    result["note"] = f"seed {seed}: {why}"
            if not ok:
                result.update(correct=False, reason=f"seed {seed}: {why}")
                break
            if seed == 0 and dtype == "f32" and ok:
                with Tf32Allowed(torch):
                    eager_tf32 = reference(*inputs)
                result["error_vs_f64"] = error_against_f64(torch, reference, inputs,
                                                           {"eager": expected, "eager_tf32": eager_tf32, "agentcompile": actual})
                del eager_tf32
            del inputs, expected, actual
        inputs = inputs_for(args.seeds)
        result["eager_ms"] = median_cuda_ms(torch, lambda: model(*inputs), args.warmup, args.trials)
        try:
            compiled = torch.compile(model)
            result["torch_compile_ms"] = median_cuda_ms(torch, lambda: compiled(*inputs), args.warmup, args.trials)
        except Exception as e:  # a baseline that fails is recorded, not fatal
            result["torch_compile_error"] = str(e).splitlines()[0][:200]
        result["tf32_kernels"] = uses_tf32(art)
        if dtype == "f32" and result["tf32_kernels"]:
            # BENCHMARK.md: where agentcompile's f32 kernels run on TF32 tensor cores (a selected 3xTF32
            # GEMM), the baselines are timed with TF32 allowed too. Elsewhere TF32 changes nothing of
            # agentcompile's, and the pair's baselines stand as timed (the compile of each costs seconds).
            with Tf32Allowed(torch):
                result["eager_tf32_ms"] = median_cuda_ms(torch, lambda: model(*inputs), args.warmup, args.trials)
                try:
                    torch._dynamo.reset()  # compile again: the TF32 setting is read when kernels are chosen
                    compiled = torch.compile(model)
                    result["torch_compile_tf32_ms"] = median_cuda_ms(torch, lambda: compiled(*inputs), args.warmup, args.trials)
                except Exception as e:
                    result["torch_compile_tf32_error"] = str(e).splitlines()[0][:200]
        runner.set_inputs(*tensors(inputs))
        result["agentcompile_ms"] = median_cuda_ms(torch, runner.enqueue, args.warmup, args.trials)
    del runner, model, reference, inputs
    torch.cuda.empty_cache()
    return result


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def uses_tf32(artifact: pathlib.Path) -> bool:
    """Whether the artifact selected a kernel that runs on TF32 tensor cores (a 3xTF32 GEMM) for any bucket."""
    try:
        metadata = json.loads((artifact / "metadata.json").read_text())
    except (OSError, ValueError):
        return False
    return any(s.get("kernel", "").endswith("_3xtf32") for r in metadata.get("regions", []) for s in r.get("selection", []))


def summarize(entries: list[dict], tf32_baselines: bool = False) -> dict:
    """fast_0, fast_1 and geometric means; with tf32_baselines, over eager and torch.compile timed with
    TF32 allowed where they were (the f32 pairs whose selected kernels use TF32), as timed elsewhere."""
    n = len(entries)
    correct = [e for e in entries if e.get("correct")]
    def speedups(baseline):
        def base(e):
            return (tf32_baselines and e.get(baseline + "_tf32_ms")) or e.get(baseline + "_ms")
        return [base(e) / e["agentcompile_ms"] for e in correct if base(e) and e.get("agentcompile_ms")]
    over_eager, over_compile = speedups("eager"), speedups("torch_compile")
    return {"problems": n, "unsupported": sum(1 for e in entries if e.get("unsupported")), "fast_0": len(correct) / n if n else 0,
            "fast_1_eager": sum(1 for s in over_eager if s > 1) / n if n else 0,
            "fast_1_compile": sum(1 for s in over_compile if s > 1) / n if n else 0,
            "geomean_over_eager": geomean(over_eager), "geomean_over_compile": geomean(over_compile)}


def f64_error_text(errors: dict | None) -> str:
    if not errors:
        return "—"
    return " / ".join(f"{errors[k]:.1e}" if k in errors else "—" for k in ("eager", "eager_tf32", "agentcompile"))


def write_report(out: pathlib.Path, doc: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(doc, indent=1, sort_keys=True))
    entries = list(doc["problems"].values())
    lines = [f"# KernelBench on captured modules ({doc['environment'].get('gpu', '?')})", "",
             f"Commit {doc['environment'].get('commit', '?')}, torch {doc['environment'].get('torch', '?')}, "
             f"{doc['settings']['seeds']} seeds (atol = rtol = 1e-2), timing: {doc['settings']['warmup']} warm-ups, "
             f"{doc['settings']['trials']} trials, median of CUDA events on torch's stream. Eager and torch.compile run with "
             "TF32 off (torch's default); f32 pairs whose selected kernels use TF32 tensor cores (3xTF32 GEMMs) are timed "
             "again with TF32 allowed (BENCHMARK.md), which the rows marked \"TF32 on\" compare against (the other pairs "
             "as timed).", "",
             "| level | dtype | problems | fast_0 | fast_1 over eager | fast_1 over torch.compile | geomean over eager | geomean over torch.compile |",
             "|---|---|---|---|---|---|---|---|"]
    def fmt(x, pct=False):
        return "—" if x is None else (f"{100 * x:.0f}%" if pct else f"{x:.2f}×")
    for level in sorted({e["level"] for e in entries}):
        for dtype in sorted({e["dtype"] for e in entries}):
            group = [e for e in entries if e["level"] == level and e["dtype"] == dtype]
            if not group:
                continue
            tf32_timed = any(e.get("eager_tf32_ms") for e in group)
            for tf32 in (False, True) if tf32_timed else (False,):
                s = summarize(group, tf32)
                label = f"{dtype}, baselines TF32 on" if tf32 else dtype
                lines.append(f"| {level} | {label} | {s['problems']} | {fmt(s['fast_0'], True)} | {fmt(s['fast_1_eager'], True)} | "
                             f"{fmt(s['fast_1_compile'], True)} | {fmt(s['geomean_over_eager'])} | {fmt(s['geomean_over_compile'])} |")
    unsupported = sorted(f"L{e['level']} {e['problem']} ({e['dtype']})" for e in entries if e.get("unsupported"))
    if unsupported:
        lines += ["", f"Unsupported (counted as incorrect, in fast_0 too): {', '.join(unsupported)}: the reference draws random "
                      "numbers the IR has no form for (randint, multinomial, a generator argument)."]
    lines += ["", "f64 error: the largest error against the model run in f64 on seed 0's inputs, relative to the largest "
                  "|output| (f32 pairs; eager / eager with TF32 / agentcompile). TF32: the baselines' times with TF32 allowed "
                  "(eager / torch.compile); 3xTF32: agentcompile selected a 3xTF32 GEMM.", "",
              "| problem | dtype | correct | eager ms | torch.compile ms | agentcompile ms | vs eager | vs compile | TF32 ms | "
              "3xTF32 | f64 error | note |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    def ms(x):
        return f"{x:.4f}" if x else "—"
    for e in sorted(entries, key=lambda e: (e["level"], int(e["problem"].split("_")[0]), e["dtype"])):
        ac, eager, comp = e.get("agentcompile_ms"), e.get("eager_ms"), e.get("torch_compile_ms")
        tf32 = f"{ms(e.get('eager_tf32_ms'))} / {ms(e.get('torch_compile_tf32_ms'))}" if e.get("eager_tf32_ms") else "—"
        lines.append(f"| L{e['level']} {e['problem']} | {e['dtype']} | {'yes' if e.get('correct') else 'no'} | "
                     f"{ms(eager)} | {ms(comp)} | {ms(ac)} | "
                     f"{eager and ac and f'{eager / ac:.2f}×' or '—'} | {comp and ac and f'{comp / ac:.2f}×' or '—'} | {tf32} | "
                     f"{'yes' if e.get('tf32_kernels') else ''} | "
                     f"{f64_error_text(e.get('error_vs_f64'))} | {(e.get('reason') or e.get('note') or '')[:160]} |")
    (out / "results.md").write_text("\n".join(lines) + "\n")
    try:
        plot(out / "plot.png", entries)
    except Exception as e:  # a plot is a convenience; the numbers are in results.json
        log("plot failed:", e)


def plot(path: pathlib.Path, entries: list[dict]) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    groups = sorted({(e["level"], e["dtype"]) for e in entries})
    fig, axes = plt.subplots(len(groups), 1, figsize=(14, 3.2 * len(groups)), squeeze=False)
    for ax, (level, dtype) in zip(axes[:, 0], groups):
        group = sorted([e for e in entries if e["level"] == level and e["dtype"] == dtype],
                       key=lambda e: int(e["problem"].split("_")[0]))
        names = [e["problem"].split("_")[0] for e in group]
        def ratio(e, base):
            return e[base] / e["agentcompile_ms"] if e.get("correct") and e.get(base) and e.get("agentcompile_ms") else 0
        xs = range(len(group))
        ax.bar([x - 0.2 for x in xs], [ratio(e, "eager_ms") for e in group], 0.4, label="over eager")
        ax.bar([x + 0.2 for x in xs], [ratio(e, "torch_compile_ms") for e in group], 0.4, label="over torch.compile")
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_yscale("log")
        ax.set_xticks(list(xs), names, fontsize=7)
        ax.set_title(f"level {level}, {dtype}: agentcompile speedup (0 = incorrect)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def environment(args) -> dict:
    import torch
    # The commit the CLI was built from (its --version), which names the code measured; the checkout's own
    # commit only where the CLI predates the flag (a carried binary and the checkout beside it can differ).
    try:
        version = subprocess.run([args.cli, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        version = None  # no CLI at that path (a --merge run)
    if version is not None and version.returncode == 0 and version.stdout.startswith("agentcompile "):
        commit = version.stdout.split()[1]
    else:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    return {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "commit": commit,
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "driver": subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                     capture_output=True, text=True).stdout.strip()}


def validation_elements(capture: pathlib.Path) -> int:
    """Elements of a captured function's inputs and outputs at the size the compiler validates them (a symbolic
    dim is validated small: counted as 1): what admission draws, checks and runs the CPU reference on, which
    is most of a compile's time."""
    try:
        functions = json.loads((capture / "capture.json").read_text())["functions"]
    except (OSError, ValueError, KeyError):
        return 0  # not captured: recording the failure costs nothing
    total = 0
    for function in functions.values():
        for tensor in function.get("inputs", []) + function.get("outputs", []):
            count = 1
            for dim in tensor.get("shape", []):
                count *= 1 if isinstance(dim, str) else int(dim)
            total += count
    return total


def cheapest_first(problems, dtypes, work: pathlib.Path) -> list[tuple[int, pathlib.Path, str]]:
    """The shard's (level, file, dtype) pairs, those with the least data to validate first (file order among
    equals), so a pass cut by its time budget has covered as many pairs as it could: a 2^30-element norm takes
    minutes to compile, a GEMM of level 2 seconds."""
    pairs = [(level, path, dtype) for level, path in problems for dtype in dtypes]
    return sorted(pairs, key=lambda p: validation_elements(work / "cap" / f"L{p[0]}-{p[1].stem}-{p[2]}"))


def capture_all(args, problems, state, work: pathlib.Path, env) -> None:
    """Captures every problem not captured yet in one Python process (bench/kernelbench_capture.py),
    recording each outcome in `state`."""
    jobs, keys = [], []
    for level, path in problems:
        for dtype in args.dtypes:
            key = f"L{level}/{path.stem}/{dtype}"
            if not state.get(key, {}).get("compiled") and not state.get(key, {}).get("captured"):
                keys.append(key)
                jobs.append({"file": str(path), "dtype": dtype, "seed": args.model_seed,
                             "out": str(work / "cap" / f"L{level}-{path.stem}-{dtype}")})
    if not jobs:
        return
    jobs_path = work / "capture_jobs.json"
    jobs_path.write_text(json.dumps(jobs))
    done = {}
    start = time.time()
    try:
        proc = subprocess.run([sys.executable, str(ROOT / "bench" / "kernelbench_capture.py"), str(jobs_path)], capture_output=True,
                              text=True, env=env, timeout=args.capture_timeout + 20 * len(jobs))
        output, errors = proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as e:
        output = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        errors = "timed out"
    (work / "logs" / "capture-batch.log").write_text(output + "\n" + (errors or ""))
    for line in output.splitlines():
        try:
            item = json.loads(line)
            done[item["out"]] = item
        except (json.JSONDecodeError, KeyError):
            continue
    for key, job in zip(keys, jobs):
        if job["out"] in done:
            item = done[job["out"]]
            state[key] = {"captured": item["ok"], "capture_s": item["seconds"], "capture_message": item["message"]}
    log(f"captured {sum(1 for d in done.values() if d['ok'])} of {len(jobs)} problems in one process in {time.time() - start:.0f} s"
        f"{'' if len(done) == len(jobs) else f' ({len(jobs) - len(done)} left to capture one by one)'}")


def merge_results(out: pathlib.Path, parts: list[pathlib.Path], expected: list[tuple[int, str, str]]) -> int:
    """Joins the results of shards (each run on its own GPU of one machine) into one report. Every
    shard times eager, torch.compile and agentcompile of its problems on its own GPU, so each
    problem's ratios compare like with like."""
    doc = {"problems": {}}
    gpus = set()
    for part in parts:
        path = part / "results.json"
        if not path.exists():
            log(f"merge: {path} is missing (that shard wrote no results)")
            continue
        shard = json.loads(path.read_text())
        doc["problems"].update(shard["problems"])
        doc.setdefault("environment", shard["environment"])
        doc.setdefault("settings", shard["settings"])
        gpus.add(shard["environment"].get("gpu", "?"))
    if "environment" not in doc:
        log("merge: no shard wrote results")
        return 1
    doc["environment"] = dict(doc["environment"], gpu=" + ".join(sorted(gpus)), shards=len(parts))
    for level, problem, dtype in expected:  # a problem no shard reached counts as incorrect, never as absent
        doc["problems"].setdefault(f"L{level}/{problem}/{dtype}", {"level": level, "problem": problem, "dtype": dtype, "correct": False,
                                                                    "reason": "not run: no shard evaluated it"})
    write_report(out, doc)
    log(f"merged {len(doc['problems'])} results of {len(parts)} shards into {out}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cli", default=str(ROOT / "build" / "agentcompile"))
    parser.add_argument("--problems", default=str(ROOT.parent / "shared" / "kernelbench"))
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--dtypes", nargs="+", default=["f32", "f16"], choices=list(TORCH_DTYPES))
    parser.add_argument("--only", help="regular expression on the problem file name")
    parser.add_argument("--out", required=True)
    parser.add_argument("--work", default="/tmp/agentcompile-kernelbench")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--model-seed", type=int, default=0)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--capture-timeout", type=float, default=300)
    parser.add_argument("--compile-timeout", type=float, default=600)
    parser.add_argument("--compile-args", default="", help="extra arguments for agentcompile compile")
    parser.add_argument("--budget", type=float, default=0, help="stop starting new problems after this many seconds (0: none)")
    parser.add_argument("--phase", choices=["all", "compile", "evaluate"], default="all")
    parser.add_argument("--shard", help="K/N: only every N-th problem file from the K-th (0-based), so N processes, one per GPU, "
                                        "share the problems; --merge joins their results")
    parser.add_argument("--merge", nargs="+", metavar="DIR", help="join the results.json of these --out directories into --out and stop")
    parser.add_argument("--eval-budget", type=float, default=0,
                        help="stop starting evaluations after this many seconds of the evaluate phase (0: none); the rest wait for a later run")
    args = parser.parse_args()

    start = time.time()
    out, work = pathlib.Path(args.out), pathlib.Path(args.work)
    if args.merge:
        expected = [(level, path.stem, dtype) for level, path in problem_files(pathlib.Path(args.problems), args.levels, args.only)
                    for dtype in args.dtypes]
        return merge_results(out, [pathlib.Path(d) for d in args.merge], expected)
    (work / "logs").mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    problems = problem_files(pathlib.Path(args.problems), args.levels, args.only)
    if args.shard:
        k, n = (int(x) for x in args.shard.split("/"))
        if not 0 <= k < n:
            parser.error(f"--shard {args.shard}: K must be in [0, N)")
        problems = problems[k::n]
    state_path = work / "compile_state.json"
    state = json.loads(state_path.read_text()) if state_path.exists() else {}

    if args.phase in ("all", "compile"):
        capture_all(args, problems, state, work, env)
        state_path.write_text(json.dumps(state, indent=1))
        for level, path, dtype in cheapest_first(problems, args.dtypes, work):
            key = f"L{level}/{path.stem}/{dtype}"
            if state.get(key, {}).get("compiled"):
                continue
            if args.budget and time.time() - start > args.budget:
                state.setdefault(key, {"compiled": False, "reason": "not run: time budget spent before this problem"})
                continue
            cap, art = work / "cap" / f"L{level}-{path.stem}-{dtype}", work / "art" / f"L{level}-{path.stem}-{dtype}"
            entry = {"cap": str(cap), "art": str(art)}
            earlier = state.get(key, {})
            if "captured" in earlier:  # by the batch (or an earlier run)
                ok, last, seconds = earlier["captured"], earlier.get("capture_message", ""), earlier.get("capture_s", 0)
            else:
                ok, last, seconds = run([sys.executable, "-m", "agentcompile.capture", "module", str(path), "--dtype", dtype,
                                         "--seed", str(args.model_seed), "--no-example-data", "-o", str(cap)],
                                        args.capture_timeout, work / "logs" / f"{key.replace('/', '-')}-capture.log", env)
            entry["capture_s"] = round(seconds, 2)
            if not ok:
                entry.update(capture_failure(last))
            else:
                cmd = [args.cli, "compile", str(cap), "-o", str(art)] + args.compile_args.split()
                ok, last, seconds = run(cmd, args.compile_timeout, work / "logs" / f"{key.replace('/', '-')}-compile.log")
                entry["compile_s"] = round(seconds, 2)
                entry.update(compiled=ok, reason="" if ok else "compile failed: " + last, compiled_at=time.time())
            log(f"{key}: {'compiled' if entry['compiled'] else entry['reason']} ({entry.get('capture_s', 0)} + {entry.get('compile_s', 0)} s)")
            state[key] = entry
            state_path.write_text(json.dumps(state, indent=1))
    if args.phase == "compile":
        return 0

    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    results_path = out / "results.json"
    doc = json.loads(results_path.read_text()) if results_path.exists() else {"problems": {}}
    doc["environment"] = environment(args)
    doc["settings"] = {"seeds": args.seeds, "warmup": args.warmup, "trials": args.trials, "tf32": False}
    evaluate_start = time.time()
    for level, path, dtype in cheapest_first(problems, args.dtypes, work):
        key = f"L{level}/{path.stem}/{dtype}"
        if args.eval_budget and time.time() - evaluate_start > args.eval_budget:
            continue
        entry = {"level": level, "problem": path.stem, "dtype": dtype}
        compiled = state.get(key, {})
        entry.update({k: compiled[k] for k in ("capture_s", "compile_s", "compiled_at") if k in compiled})
        earlier = doc["problems"].get(key, {})
        if compiled.get("compiled") and earlier.get("compiled_at") == compiled.get("compiled_at") and "eager_ms" in earlier:
            continue  # evaluated by an earlier run on this very artifact
        if not compiled.get("compiled"):
            entry.update(correct=False, reason=compiled.get("reason", "not compiled"))
            if compiled.get("unsupported"):
                entry["unsupported"] = True
        else:
            try:
                entry.update(evaluate(torch, args, level, path, dtype, pathlib.Path(compiled["cap"]), pathlib.Path(compiled["art"])))
            except Exception as e:
                entry.update(correct=False, reason=f"evaluation failed: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}")
                (work / "logs" / f"{key.replace('/', '-')}-evaluate.log").write_text(traceback.format_exc())
                torch.cuda.empty_cache()
        doc["problems"][key] = entry
        log(f"{key}: {'correct' if entry.get('correct') else 'INCORRECT'} eager {entry.get('eager_ms')} compile "
            f"{entry.get('torch_compile_ms')} agentcompile {entry.get('agentcompile_ms')} {entry.get('reason', '')}")
        write_report(out, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
