#!/usr/bin/env python3
"""The benchmark harness of BENCHMARK.md: every system on the same GPU, the same weights, the same run.

Systems (one process, one after another; agentcompile first, as a subprocess, before this process has a
CUDA context, then the HF baselines, each freed before the next is loaded):
  agentcompile     `agentcompile bench MODEL --workload iI/oN --json` (2 warm-ups + 10 reps on the three
                   short workloads, 1 + 3 on the two long ones; the engine reports medians)
  eager            HF AutoModelForCausalLM, SDPA, DynamicCache, greedy generate(min_new_tokens=N)
  compile-dynamic  the same with model.forward = torch.compile(model.forward)
  compile-static   generate(..., cache_implementation="static", max_cache_len=I+N)

How a baseline is timed (torch.cuda.synchronize() before and after, host clock in between):
  total       median over 3 timed generate(prompt, N) after 1 warm-up with the same shapes
  prefill     median over 3 timed generate(prompt, 1) after 1 warm-up (the prompt's forward plus
              generate's per-call setup, which the total pays once too)
  decode      (total - prefill) / (N - 1) ms per token
On the two long workloads (and on those named by --once) a baseline is run once, after a warm-up that
generates 8 tokens from the same prompt and cache length (which compiles what the full run compiles). With
--estimate-long the long ones are estimated instead: the timed prefill as above plus decode steps timed at 5
context positions spread over the output (a cache filled to position p untimed, then generate continuing
from it for 8 and for 40 tokens: ms/step = the difference / 32, so generate's per-call setup cancels),
interpolated linearly and summed over the N - 1 steps.

Ceilings: the device-to-device copy bandwidth is measured in the same run (1 GiB, dst.copy_(src), bytes
read + written over the median of 10); the decode floor per token is (weight bytes read by one step + KV
bytes read at the workload's mean context) / that bandwidth; efficiency = floor / measured ms per token.

results.json in --out is merged with what is there (a new result replaces the same system x workload), so
runs split across device calls accumulate; results.md and plot.png are rendered by bench/report.py after
every measurement, so a call cut off by its time limit still leaves what it measured.
"""
import argparse
import datetime
import gc
import json
import os
import pathlib
import platform
import random
import re
import statistics
import struct
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import report  # noqa: E402  (bench/report.py)

WORKLOADS = ["i128/o128", "i2048/o512", "i8192/o4096", "i12288/o8192", "i20480/o16384"]
GROUPS = {"short": WORKLOADS[:3], "long": WORKLOADS[3:], "all": WORKLOADS}
SYSTEMS = ["eager", "compile-dynamic", "compile-static", "agentcompile"]
TORCH_DTYPES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32"}
DTYPE_BYTES = {"F64": 8, "I64": 8, "U64": 8, "F32": 4, "I32": 4, "U32": 4, "F16": 2, "BF16": 2, "I16": 2,
               "U16": 2, "I8": 1, "U8": 1, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1}
# (warm-ups, repetitions) of BENCHMARK.md's timing rules.
AGENTCOMPILE_RUNS = {"short": (2, 10), "long": (1, 3)}
BASELINE_RUNS = (1, 3)
ESTIMATE_POSITIONS = 5
ESTIMATE_STEPS = (8, 40)
# Rough costs to decide whether a measurement fits the time budget before one of its kind was seen:
# decode ms/token = a + b * context (fitted to BENCHMARK.md's H200 leads), one-time preparation seconds.
COST_MODEL = {"eager": (16.0, 2.5e-3, 15), "compile-dynamic": (6.0, 1e-3, 120),
              "compile-static": (6.0, 2e-4, 120), "agentcompile": (2.5, 1e-4, 120)}


def parse_workload(name: str) -> tuple[int, int]:
    match = re.fullmatch(r"i(\d+)/o(\d+)", name)
    if not match or int(match.group(2)) < 2:
        raise SystemExit(f"compare.py: bad workload '{name}' (expected iINPUT/oOUTPUT with OUTPUT >= 2)")
    return int(match.group(1)), int(match.group(2))


def select_workloads(spec: str) -> list[str]:
    names = []
    for item in spec.split(","):
        for name in GROUPS.get(item.strip(), [item.strip()]):
            parse_workload(name)
            if name not in names:
                names.append(name)
    return names


def is_long(workload: str) -> bool:
    return workload in GROUPS["long"]


# ---- the model: what one decode step must read -------------------------------------------------------

def safetensors_tensors(checkpoint: pathlib.Path) -> dict:
    """name -> (dtype, shape) from the headers of every shard, without loading a weight."""
    index = checkpoint / "model.safetensors.index.json"
    files = sorted(set(json.loads(index.read_text())["weight_map"].values())) if index.exists() else ["model.safetensors"]
    tensors = {}
    for name in files:
        with open(checkpoint / name, "rb") as f:
            header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
        tensors.update({k: (v["dtype"], v["shape"]) for k, v in header.items() if k != "__metadata__"})
    return tensors


def model_traffic(checkpoint: pathlib.Path, config: dict, dtype: str) -> dict:
    """Bytes one decode step reads: every weight once (tied embeddings are read once, by the LM head; the
    embedding gather reads one row), plus the KV cache of the context."""
    tensors = safetensors_tensors(checkpoint)
    nbytes = lambda dt, shape: DTYPE_BYTES[dt] * _prod(shape)  # noqa: E731
    params = sum(_prod(s) for _, s in tensors.values())
    weight_bytes = sum(nbytes(dt, s) for dt, s in tensors.values())
    embed = next((k for k in tensors if k.endswith("embed_tokens.weight")), None)
    tied = not any(k.endswith("lm_head.weight") for k in tensors)
    read = weight_bytes
    if embed is not None:
        dt, shape = tensors[embed]
        read += nbytes(dt, shape[1:])  # the gathered row
        if not tied:
            read -= nbytes(dt, shape)  # the table itself is not streamed
    heads = config["num_attention_heads"]
    head_dim = config.get("head_dim") or config["hidden_size"] // heads
    kv_per_token = 2 * config["num_hidden_layers"] * config.get("num_key_value_heads", heads) * head_dim * (
        4 if dtype == "f32" else 2)
    return {"parameters": params, "weight_bytes": weight_bytes, "tied_embeddings": tied,
            "weight_bytes_read_per_step": read, "kv_bytes_per_token": kv_per_token}


def _prod(shape) -> int:
    out = 1
    for d in shape:
        out *= int(d)
    return out


def mean_decode_context(workload: str) -> float:
    # decode step j (1..N-1) attends over I + j positions
    i, n = parse_workload(workload)
    return i + n / 2


# ---- the machine ------------------------------------------------------------------------------------

def nvidia_smi(fields: str) -> list[str] | None:
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return [x.strip() for x in out.stdout.splitlines()[0].split(",")] if out.returncode == 0 and out.stdout else None


def clocks(label: str) -> dict:
    fields = "clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,temperature.gpu,power.draw,pstate"
    values = nvidia_smi(fields)
    return {"when": label, **(dict(zip(fields.split(","), values)) if values else {"nvidia-smi": "unavailable"})}


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        if out.returncode == 0:
            dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                                   capture_output=True, text=True, timeout=30).stdout.strip()
            return out.stdout.strip() + ("-dirty" if dirty else "")
    except (OSError, subprocess.TimeoutExpired):
        pass
    return "unknown"


def environment(device: str) -> dict:
    import torch
    import transformers
    env = {"host": platform.node(), "python": platform.python_version(), "torch": torch.__version__,
           "torch_cuda": torch.version.cuda, "transformers": transformers.__version__, "commit": git_commit(),
           "device": device}
    gpu = nvidia_smi("name,driver_version,memory.total,pci.bus_id") if device == "cuda" else None
    if gpu:
        env.update(gpu=gpu[0], driver=gpu[1], gpu_memory=gpu[2])
        try:
            header = subprocess.run(["nvidia-smi"], capture_output=True, text=True, timeout=30).stdout
            found = re.search(r"CUDA Version:\s*([\d.]+)", header)
            env["driver_cuda"] = found.group(1) if found else None
        except (OSError, subprocess.TimeoutExpired):
            pass
    else:
        env["gpu"] = "cpu" if device == "cpu" else "unknown"
    return env


def gpu_slug(name: str) -> str:
    words = [w for w in re.split(r"[^a-z0-9]+", name.lower()) if w and w not in ("nvidia", "tesla", "geforce")]
    return words[0] if words else "unknown"


def copy_bandwidth(device: str) -> dict:
    """Device-to-device copy of 1 GiB (64 MiB on the CPU): (bytes read + bytes written) / median of 10."""
    import torch
    nbytes = (1 << 30) if device == "cuda" else (64 << 20)
    src = torch.randint(0, 255, (nbytes,), dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    seconds = []
    for rep in range(13):
        if device == "cuda":
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            dst.copy_(src)
            stop.record()
            stop.synchronize()
            elapsed = start.elapsed_time(stop) / 1e3
        else:
            t0 = time.perf_counter()
            dst.copy_(src)
            elapsed = time.perf_counter() - t0
        if rep >= 3:
            seconds.append(elapsed)
    del src, dst
    if device == "cuda":
        torch.cuda.empty_cache()
    samples = [2 * nbytes / s / 1e9 for s in seconds]
    return {"bytes": nbytes, "median_gb_s": statistics.median(samples), "samples_gb_s": samples}


# ---- timing helpers ---------------------------------------------------------------------------------

class OutOfBudget(Exception):
    pass


class Budget:
    def __init__(self, seconds: float | None):
        self.start, self.seconds = time.monotonic(), seconds

    def left(self) -> float:
        return float("inf") if self.seconds is None else self.seconds - (time.monotonic() - self.start)

    def check(self, what: str) -> None:
        if self.left() <= 0:
            raise OutOfBudget(f"time budget of {self.seconds:.0f} s ran out {what}")


def predicted_seconds(system: str, workload: str, decode_tokens: int, prefill_tokens: int, seen: dict,
                      prepared: bool) -> float:
    """A deliberately rough forecast; a measurement of the same system in this run rescales the guess."""
    a, b, prep = COST_MODEL[system]
    per_token = a + b * mean_decode_context(workload)
    if system in seen:  # (workload, measured decode ms/token)
        seen_workload, seen_ms = seen[system]
        per_token *= seen_ms / (a + b * mean_decode_context(seen_workload))
    return (decode_tokens * per_token + prefill_tokens * 0.05) / 1e3 + (0 if prepared else prep)


def planned_tokens(system: str, workload: str, method: str) -> tuple[int, int]:
    """(decode steps, prefill tokens) a measurement runs, warm-ups included."""
    i, n = parse_workload(workload)
    if system == "agentcompile":
        runs = sum(AGENTCOMPILE_RUNS["long" if is_long(workload) else "short"])
        return runs * n, runs * i
    prefill_runs = sum(BASELINE_RUNS) * i
    if method == "estimated":
        short, long = ESTIMATE_STEPS
        fills = 1 + 2 * BASELINE_RUNS[1]
        return (ESTIMATE_POSITIONS * (short + BASELINE_RUNS[1] * (short + long)),
                prefill_runs + ESTIMATE_POSITIONS * fills * int(mean_decode_context(workload)))
    if method == "once":
        return n + 8, prefill_runs + 2 * i
    return sum(BASELINE_RUNS) * n, prefill_runs + sum(BASELINE_RUNS) * i


# ---- the HF baselines -------------------------------------------------------------------------------

class HFBaseline:
    """One HF transformers system loaded on the device: eager, compile-dynamic or compile-static."""

    def __init__(self, system: str, checkpoint: pathlib.Path, dtype: str, device: str):
        import torch
        import transformers
        transformers.logging.set_verbosity_error()
        transformers.logging.disable_progress_bar()
        self.torch, self.system, self.device = torch, system, device
        self.model = transformers.AutoModelForCausalLM.from_pretrained(
            checkpoint, dtype=getattr(torch, TORCH_DTYPES[dtype]), attn_implementation="sdpa").to(device).eval()
        config = self.model.generation_config
        if config.pad_token_id is None:  # random checkpoints carry no generation_config.json
            config.pad_token_id = config.eos_token_id if isinstance(config.eos_token_id, int) else 0
        self.vocab = self.model.config.vocab_size
        self.raw_forward = self.model.forward
        if system == "compile-dynamic":
            self.model.forward = torch.compile(self.model.forward)

    def prompt(self, length: int, seed: int):
        rng = random.Random(seed * 1_000_003 + length)
        return self.torch.tensor([[rng.randrange(self.vocab) for _ in range(length)]], device=self.device)

    def generate(self, ids, new_tokens: int, max_cache_len: int, cache=None):
        kwargs = {}
        if cache is not None:
            kwargs["past_key_values"] = cache
        elif self.system == "compile-static":
            kwargs.update(cache_implementation="static", max_cache_len=max_cache_len)
        out = self.model.generate(ids, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False, **kwargs)
        if out.shape[1] != ids.shape[1] + new_tokens:
            raise RuntimeError(f"{self.system}: generate stopped after {out.shape[1] - ids.shape[1]} of {new_tokens} tokens")

    def timed_ms(self, fn) -> float:
        self.sync()
        t0 = time.perf_counter()
        fn()
        self.sync()
        return (time.perf_counter() - t0) * 1e3

    def sync(self) -> None:
        if self.device == "cuda":
            self.torch.cuda.synchronize()

    def runs(self, fn, warmup: int, reps: int, budget: Budget, what: str) -> list[float]:
        for _ in range(warmup):
            fn()
            budget.check(f"during the warm-up of {what}")
        samples = []
        for rep in range(reps):
            samples.append(self.timed_ms(fn))
            if rep + 1 < reps:
                budget.check(f"after {rep + 1} of {reps} repetitions of {what}")
        return samples

    def measure(self, workload: str, seed: int, budget: Budget, once: bool) -> dict:
        i, n = parse_workload(workload)
        ids, what = self.prompt(i, seed), f"{self.system} {workload}"
        if once:  # a short generate from the same prompt and cache length compiles what the full run needs
            self.generate(ids, min(8, n), i + n)
            budget.check(f"during the warm-up of {what}")
            totals = [self.timed_ms(lambda: self.generate(ids, n, i + n))]
            warmup, reps = 1, 1
        else:
            warmup, reps = BASELINE_RUNS
            totals = self.runs(lambda: self.generate(ids, n, i + n), warmup, reps, budget, what)
        budget.check(f"before the prefill runs of {what}")
        prefills = self.runs(lambda: self.generate(ids, 1, i + n), *BASELINE_RUNS, budget, f"{what} prefill")
        total, prefill = statistics.median(totals), statistics.median(prefills)
        return {"method": "once" if once else "measured", "total_ms": total, "prefill_ms": prefill,
                "decode_ms_per_token": (total - prefill) / (n - 1), "warmup": warmup, "reps": reps,
                "samples": [{"total_ms": t} for t in totals], "prefill_samples_ms": prefills}

    def filled_cache(self, ids, position: int, max_cache_len: int, cache=None):
        """A cache holding the first `position` tokens of ids, filled by the uncompiled forward (untimed).
        no_grad, not inference_mode: generate writes into it later, outside inference mode."""
        import transformers
        with self.torch.no_grad():
            if cache is not None:
                cache.reset()
            else:
                cache = (transformers.StaticCache(config=self.model.config, max_cache_len=max_cache_len)
                         if self.system == "compile-static" else transformers.DynamicCache(config=self.model.config))
            self.raw_forward(input_ids=ids[:, :position], past_key_values=cache, use_cache=True, logits_to_keep=1)
        self.sync()
        return cache

    def decode_step_ms(self, ids, position: int, max_cache_len: int, budget: Budget, cache=None) -> tuple[float, object]:
        """ms of one generate decode step with `position` tokens cached: the difference of generate calls of
        ESTIMATE_STEPS tokens continuing from the same filled cache, so the per-call setup cancels."""
        short, long = ESTIMATE_STEPS
        context = ids[:, :position + 1]
        # The static cache is reused (reset), so the compiled decode graph sees one cache; a DynamicCache
        # is made afresh (its reset() keeps the length in some transformers versions).
        reuse = (lambda c: c) if self.system == "compile-static" else (lambda c: None)
        cache = self.filled_cache(ids, position, max_cache_len, reuse(cache))
        self.generate(context, short, max_cache_len, cache)  # warm-up (compile-static compiles here, once)
        times = {short: [], long: []}
        for _ in range(BASELINE_RUNS[1]):
            for steps in (short, long):
                cache = self.filled_cache(ids, position, max_cache_len, reuse(cache))
                times[steps].append(self.timed_ms(
                    lambda steps=steps, cache=cache: self.generate(context, steps, max_cache_len, cache)))
                budget.check(f"while timing decode steps of {self.system} at context {position}")
        step = (statistics.median(times[long]) - statistics.median(times[short])) / (long - short)
        return step, cache

    def estimate(self, workload: str, seed: int, budget: Budget) -> dict:
        i, n = parse_workload(workload)
        short, long = ESTIMATE_STEPS
        what = f"{self.system} {workload} (estimate)"
        cache_len = max(i + n, i + long + 1)
        ids = self.prompt(cache_len, seed)  # the first i ids are the prompt, the rest stand in for the output
        ids[:, :i] = self.prompt(i, seed)
        prefills = self.runs(lambda: self.generate(ids[:, :i], 1, cache_len), *BASELINE_RUNS, budget, f"{what} prefill")
        # Decode step j (1..N-1) runs with I + j - 1 tokens cached. A window filled to p and timed over steps
        # short..long-1 measures the steps with about p + (short + long) / 2 tokens cached; the last window
        # must still fit the cache of I + N.
        span = max(n - long - 1, 0)
        fills = [i + round(k * span / (ESTIMATE_POSITIONS - 1)) for k in range(ESTIMATE_POSITIONS)]
        steps, cache = [], None
        for position in fills:
            ms, cache = self.decode_step_ms(ids, position, cache_len, budget, cache)
            steps.append(ms)
        del cache
        cached = [p + (short + long) / 2 for p in fills]
        decode_total = sum(_interpolate(cached, steps, i + j - 1) for j in range(1, n))
        prefill = statistics.median(prefills)
        return {"method": "estimated", "total_ms": prefill + decode_total, "prefill_ms": prefill,
                "decode_ms_per_token": decode_total / (n - 1), "warmup": 1, "reps": BASELINE_RUNS[1],
                "prefill_samples_ms": prefills,
                "decode_steps": [{"cached_tokens": c, "ms": ms} for c, ms in zip(cached, steps)]}

    def close(self) -> None:
        del self.model, self.raw_forward
        gc.collect()
        if self.system != "eager":
            self.torch._dynamo.reset()
        if self.device == "cuda":
            self.torch.cuda.empty_cache()


def _interpolate(xs: list[int], ys: list[float], x: float) -> float:
    if x <= xs[0]:
        return ys[0]
    for (x0, y0), (x1, y1) in zip(zip(xs, ys), zip(xs[1:], ys[1:])):
        if x <= x1:
            return y0 + (y1 - y0) * (x - x0) / max(x1 - x0, 1)
    return ys[-1]


# ---- agentcompile -----------------------------------------------------------------------------------

ENGINE_FIELDS = ("prefill_ms", "decode_ms_per_token", "total_ms", "samples")


def run_agentcompile(binary: str, checkpoint: pathlib.Path, workload: str, budget: Budget, log: pathlib.Path) -> dict:
    i, n = parse_workload(workload)
    warmup, reps = AGENTCOMPILE_RUNS["long" if is_long(workload) else "short"]
    cmd = [binary, "bench", str(checkpoint), "--workload", workload, "--reps", str(reps), "--warmup", str(warmup),
           "--json", "--max-context", str(i + n)]
    timeout = None if budget.seconds is None else max(1.0, budget.left())
    started = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        log.write_text(f"$ {' '.join(cmd)}\n(killed after {timeout:.0f} s)\n{_text(e.stdout)}\n{_text(e.stderr)}")
        raise OutOfBudget(f"time budget ran out while agentcompile ran {workload} (killed after {timeout:.0f} s)")
    log.write_text(f"$ {' '.join(cmd)}\nexit {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}")
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no stderr)"])[-1]
        raise RuntimeError(f"agentcompile bench exited {proc.returncode}: {last} (log: {log.name})")
    lines = [x for x in proc.stdout.splitlines() if x.strip().startswith("{")]
    if not lines:
        raise RuntimeError(f"agentcompile bench printed no JSON line (log: {log.name})")
    engine = json.loads(lines[-1])
    missing = [k for k in ENGINE_FIELDS if k not in engine]
    if missing:
        raise RuntimeError(f"agentcompile bench JSON lacks {', '.join(missing)} (log: {log.name})")
    return {"method": "engine", "total_ms": engine["total_ms"], "prefill_ms": engine["prefill_ms"],
            "decode_ms_per_token": engine["decode_ms_per_token"], "warmup": engine.get("warmup", warmup),
            "reps": engine.get("reps", reps), "samples": engine["samples"], "wall_s": time.monotonic() - started,
            "engine": {k: v for k, v in engine.items() if k not in ENGINE_FIELDS}}


def _text(data) -> str:
    return data.decode(errors="replace") if isinstance(data, bytes) else (data or "")


# ---- results.json -----------------------------------------------------------------------------------

def load_results(path: pathlib.Path, model: dict) -> dict:
    if not path.exists():
        return {"schema": 1, "model": model, "runs": [], "results": [], "skipped": []}
    doc = json.loads(path.read_text())
    for key in ("name", "dtype", "model_type", "parameters"):
        if doc["model"].get(key) != model.get(key):
            raise SystemExit(f"compare.py: {path} holds results for {doc['model'].get('name')} {doc['model'].get('dtype')} "
                             f"({key} {doc['model'].get(key)!r} != {model.get(key)!r}); choose another --out")
    return doc


def record(doc: dict, entry: dict) -> None:
    key = (entry["system"], entry["workload"])
    doc["results"] = [r for r in doc["results"] if (r["system"], r["workload"]) != key] + [entry]
    doc["skipped"] = [s for s in doc["skipped"] if (s["system"], s["workload"]) != key]


def record_skip(doc: dict, skip: dict) -> None:
    key = (skip["system"], skip["workload"])
    doc["skipped"] = [s for s in doc["skipped"] if (s["system"], s["workload"]) != key] + [skip]


def save(out: pathlib.Path, doc: dict) -> None:
    order = {name: k for k, name in enumerate(WORKLOADS)}
    doc["results"].sort(key=lambda r: (order.get(r["workload"], 99), r["workload"], SYSTEMS.index(r["system"])))
    tmp = out / "results.json.tmp"
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    os.replace(tmp, out / "results.json")
    report.write(out, doc)


# ---- main -------------------------------------------------------------------------------------------

def ensure_checkpoint(args) -> pathlib.Path:
    checkpoint = pathlib.Path(args.checkpoint)
    if (checkpoint / "config.json").exists():
        return checkpoint
    cmd = [args.binary, "init-random", "--config", args.config, "--dtype", args.dtype, "--seed", "0", "--out", str(checkpoint)]
    print("compare.py:", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return checkpoint


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", required=True, help="the preset the checkpoint was made from (configs/*.json)")
    parser.add_argument("--dtype", choices=TORCH_DTYPES, default="f16")
    parser.add_argument("--checkpoint", required=True, help="HF checkpoint dir (init-random --seed 0 writes it if missing)")
    parser.add_argument("--binary", default="build-gpu/agentcompile")
    parser.add_argument("--workloads", default="short", help="names (i128/o128,...) or groups short, long, all")
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--out", help="results folder (default bench/results/<date>-<gpu>/); results.json there is merged")
    parser.add_argument("--time-budget-s", type=float, help="start no measurement that would not end within this")
    parser.add_argument("--estimate-long", action="store_true", help="estimate baselines on the long workloads")
    parser.add_argument("--once", default="", help="workloads (or groups) on which a baseline runs once after a short "
                        "warm-up instead of 1 + 3 runs (eager i8192/o4096 takes ~3 min a run); the table says so")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"], help="cpu only tests the plumbing")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random prompt ids")
    args = parser.parse_args()
    budget = Budget(args.time_budget_s)
    workloads = select_workloads(args.workloads)
    once_workloads = set(select_workloads(args.once)) if args.once else set()
    systems = [s.strip() for s in args.systems.split(",")]
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown:
        raise SystemExit(f"compare.py: unknown systems {unknown}; known: {SYSTEMS}")
    checkpoint = ensure_checkpoint(args)
    config = json.loads((checkpoint / "config.json").read_text())
    model = {"name": pathlib.Path(args.config).stem, "config": args.config, "model_type": config.get("model_type"),
             "dtype": args.dtype, "checkpoint": str(checkpoint), "init": "agentcompile init-random --seed 0",
             **model_traffic(checkpoint, config, args.dtype)}
    env = environment(args.device)
    out = pathlib.Path(args.out or ROOT / "bench" / "results" /
                       f"{datetime.date.today().isoformat()}-{gpu_slug(env['gpu'])}")
    (out / "logs").mkdir(parents=True, exist_ok=True)
    doc = load_results(out / "results.json", model)
    run = {"id": max([r["id"] for r in doc["runs"]], default=-1) + 1,
           "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "argv": sys.argv[1:], "env": env, "clocks": [clocks("start")], "time_budget_s": args.time_budget_s}
    doc["runs"].append(run)
    save(out, doc)
    seen, prepared = {}, set()

    def attempt(system: str, workload: str, method: str, measure) -> None:
        i, n = parse_workload(workload)
        forecast = predicted_seconds(system, workload, *planned_tokens(system, workload, method), seen,
                                     system in prepared)
        base = {"system": system, "workload": workload, "input_tokens": i, "output_tokens": n, "run": run["id"]}
        if forecast > budget.left():
            record_skip(doc, {**base, "reason": f"would not fit the time budget (forecast {forecast:.0f} s, "
                                                 f"{max(budget.left(), 0):.0f} s left)"})
            print(f"compare.py: skip {system} {workload}: forecast {forecast:.0f} s > {budget.left():.0f} s left", flush=True)
            return save(out, doc)
        print(f"compare.py: {system} {workload} ...", flush=True)
        started = time.monotonic()
        try:
            entry = {**base, **measure()}
        except OutOfBudget as e:
            record_skip(doc, {**base, "reason": str(e)})
            print(f"compare.py: {e}", flush=True)
            return save(out, doc)
        except Exception as e:  # a failed system must not cost the others their measurements
            record_skip(doc, {**base, "reason": f"failed: {type(e).__name__}: {e}"})
            print(f"compare.py: {system} {workload} failed: {e}", flush=True)
            return save(out, doc)
        finally:
            prepared.add(system)
        entry["wall_s"] = round(time.monotonic() - started, 1)
        seen[system] = (workload, entry["decode_ms_per_token"])
        record(doc, entry)
        print(f"compare.py:   total {entry['total_ms']:.1f} ms, prefill {entry['prefill_ms']:.1f} ms, "
              f"decode {entry['decode_ms_per_token']:.3f} ms/token ({entry['method']})", flush=True)
        save(out, doc)

    if "agentcompile" in systems:  # before this process has a CUDA context
        for workload in workloads:
            attempt("agentcompile", workload, "engine", lambda w=workload: run_agentcompile(
                args.binary, checkpoint, w, budget, out / "logs" / f"agentcompile-{w.replace('/', '-')}.log"))
            if doc["runs"][-1]["env"]["commit"] == "unknown":
                engine_commit = next((r.get("engine", {}).get("commit") for r in doc["results"]
                                      if r["system"] == "agentcompile" and r["run"] == run["id"]), None)
                if engine_commit:
                    run["env"]["commit"] = f"{engine_commit} (reported by agentcompile)"
        run["clocks"].append(clocks("after agentcompile"))
    run["copy_bandwidth"] = copy_bandwidth(args.device)
    print(f"compare.py: copy bandwidth {run['copy_bandwidth']['median_gb_s']:.0f} GB/s", flush=True)
    save(out, doc)
    for system in [s for s in SYSTEMS[:3] if s in systems]:
        baseline = None
        for workload in workloads:
            estimate = args.estimate_long and is_long(workload)
            once = (is_long(workload) or workload in once_workloads) and not estimate
            method = "estimated" if estimate else "once" if once else "measured"

            def measure(system=system, workload=workload, estimate=estimate, once=once):
                nonlocal baseline
                if baseline is None:
                    baseline = HFBaseline(system, checkpoint, args.dtype, args.device)
                if estimate:
                    return baseline.estimate(workload, args.seed, budget)
                return baseline.measure(workload, args.seed, budget, once)
            attempt(system, workload, method, measure)
        if baseline is not None:
            baseline.close()
        run["clocks"].append(clocks(f"after {system}"))
    run["finished"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    save(out, doc)
    print((out / "results.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
