#!/usr/bin/env python3
"""Writes the capture directories under tests/fixtures/captured/ that CI (which has no torch) reads.

Causal LMs (prefill + decode):
  tiny-qwen3, tiny-llama     from the checkpoints in tests/fixtures/models/, --link-weights (no copy of
                             the weights: capture.json's weights_from points at the checkpoint)
  tiny-gemma3, tiny-phi3,    from tests/fixtures/configs/, seeded random weights in the config's dtype
  tiny-olmo2
Modules (one forward, with inputs.safetensors and reference_outputs.safetensors):
  relu, softmax, layernorm, gemm_bias_gelu, cumsum, argmax, sdpa, rmsnorm, triu_matmul, gemm_batchnorm_f16,
  cross_entropy, triplet_margin, sdpa_batched, mse_loss, instance_norm_f16, batch_norm, gemm_dropout_softmax_f16,
  random_draws -- KernelBench-style problems at small sizes; each directory keeps its problem file (<name>.py).
Run from anywhere: python3 python/make_capture_fixtures.py [NAME ...] (paths in the manifests are
repository-relative); with names, only those directories are written again and the others are kept.
"""
import argparse
import os
import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = pathlib.Path("tests/fixtures/captured")
CHECKPOINTS = ("tiny-qwen3", "tiny-llama")
RANDOM_CONFIGS = ("tiny-gemma3", "tiny-phi3", "tiny-olmo2")

sys.path.insert(0, str(ROOT / "python" / "tests"))
import kernelbench_small  # noqa: E402  (the Python tests' small KernelBench problems, a data module)

PROBLEM_HEADER = kernelbench_small.HEADER
PROBLEMS = {
    "relu": """
class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)

def get_inputs(): return [torch.randn(8, 64)]
def get_init_inputs(): return []
""",
    "softmax": """
class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=1)

def get_inputs(): return [torch.randn(4, 128) * 4]
def get_init_inputs(): return []
""",
    "layernorm": """
class Model(nn.Module):
    def __init__(self, normalized_shape):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape)
        with torch.no_grad():  # affine parameters away from 1 and 0, so the test sees them applied
            self.ln.weight.uniform_(0.5, 1.5)
            self.ln.bias.uniform_(-0.5, 0.5)

    def forward(self, x):
        return self.ln(x)

def get_inputs(): return [torch.randn(4, 8, 32)]
def get_init_inputs(): return [(8, 32)]
""",
    "gemm_bias_gelu": """
class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)

    def forward(self, x):
        return F.gelu(self.gemm(x))

def get_inputs(): return [torch.randn(8, 64)]
def get_init_inputs(): return [64, 48]
""",
    "cumsum": """
class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.cumsum(x, dim=self.dim)

def get_inputs(): return [torch.rand(4, 100)]
def get_init_inputs(): return [1]
""",
    "argmax": """
class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.argmax(x, dim=self.dim)

def get_inputs(): return [torch.randn(4, 16, 8)]
def get_init_inputs(): return [1]
""",
    "sdpa": """
class Model(nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v)

def get_inputs(): return [torch.randn(2, 4, 16, 32), torch.randn(2, 4, 16, 32), torch.randn(2, 4, 16, 32)]
def get_init_inputs(): return []
""",
    "rmsnorm": """
class Model(nn.Module):
    def __init__(self, num_features, eps=1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(num_features) + 0.5)
        self.eps = eps

    def forward(self, x):
        rms = torch.sqrt(torch.mean(x * x, dim=-1, keepdim=True) + self.eps)
        return x / rms * self.weight

def get_inputs(): return [torch.randn(4, 8, 64)]
def get_init_inputs(): return [64]
""",
    # KernelBench level 1, 14: torch.triu's mask is arange(N)[None, :] - arange(N)[:, None] >= 0, an
    # index-dependent epilogue of the matmul.
    "triu_matmul": """
class Model(nn.Module):
    def forward(self, A, B):
        return torch.triu(torch.matmul(A, B))

def get_inputs(): return [torch.triu(torch.rand(32, 32)), torch.triu(torch.rand(32, 32))]
def get_init_inputs(): return []
""",
    # KernelBench level 2, 41 in f16: BatchNorm in training mode reads the linear's f16 result and its
    # f32 copy, so the matmul region has two outputs.
    "gemm_batchnorm_f16": """
class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.batch_norm = nn.BatchNorm1d(out_features)

    def forward(self, x):
        return torch.relu(F.gelu(self.batch_norm(self.gemm(x))))

def get_inputs(): return [torch.randn(64, 32)]
def get_init_inputs(): return [32, 48]
""",
    # KernelBench level 1, 95: log_softmax, an ignore-index mask and two sums over a 1-D axis (an
    # integer count of the kept targets and the f16/f32 sum of their losses); targets include the
    # ignored index so the mask is exercised.
    "cross_entropy": """
class Model(nn.Module):
    def forward(self, predictions, targets):
        return F.cross_entropy(predictions, targets)

def get_inputs():
    targets = torch.randint(0, 40, (64,))
    targets[::5] = -100
    return [torch.randn(64, 40), targets]
def get_init_inputs(): return []
""",
    # KernelBench level 1, 99: two row norms of differences, then a clamp and a mean over the rows;
    # the second norm's region must not take the first norm's sqrt (another iteration space).
    "triplet_margin": """
class Model(nn.Module):
    def __init__(self, margin=1.0):
        super().__init__()
        self.loss_fn = torch.nn.TripletMarginLoss(margin=margin)

    def forward(self, anchor, positive, negative):
        return self.loss_fn(anchor, positive, negative)

def get_inputs(): return [torch.rand(16, 64) * 0.5, torch.rand(16, 64), torch.rand(16, 64)]
def get_init_inputs(): return [1.0]
""",
    # KernelBench level 1, 97 at a small size: the batch is the symbol T, so the lowered attention's
    # matmuls are [T, heads, S, D] products (a batched cuBLAS call of T * heads matrices).
    "sdpa_batched": """
class Model(nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v)

def get_inputs(): return [torch.randn(4, 8, 16, 32), torch.randn(4, 8, 16, 32), torch.randn(4, 8, 16, 32)]
def get_init_inputs(): return []
""",
    # KernelBench level 1, 94 at a small size: the mean of (p - t) ** 2 over every element reads the squares
    # through a flattening reshape, which recognition moves onto p and t (one reduction region), and pow
    # of a negative base must keep its sign under fast math.
    "mse_loss": """
class Model(nn.Module):
    def forward(self, predictions, targets):
        return torch.mean((predictions - targets) ** 2)

def get_inputs(): return [torch.rand(64, 256) * 0.5, torch.rand(64, 256)]
def get_init_inputs(): return []
""",
    # KernelBench level 1, 34 in f16 (the Python tests' small copy): the statistics over each (n, c) row
    # read an f32 copy of x through a reshape, which recognition moves onto x (mean and variance each one
    # reduction region reading the f16 input, the variance's per-row mean a broadcast operand).
    "instance_norm_f16": kernelbench_small.PROBLEMS["instancenorm"],
    # KernelBench level 1, 33 (the Python tests' small copy): BatchNorm2d in training mode reduces every
    # axis but the channels, captured through a transpose that moves them to the front; recognition
    # reduces the trailing axes, then the batch, moving no data.
    "batch_norm": kernelbench_small.PROBLEMS["batchnorm_train"],
    # KernelBench L2 66 in miniature (the Python tests' small copy): dropout in training mode, random_uniform in
    # the linear's epilogue
    "gemm_dropout_softmax_f16": kernelbench_small.PROBLEMS["dropout_softmax"],
    # torch.randn_like, rand_like, bernoulli and rand in forward (the Python tests' small copy): Box-Muller and
    # comparisons over random_uniform loads in the row programs
    "random_draws": kernelbench_small.PROBLEMS["random_draws"],
}
# Extra capture arguments per problem (default: f32, training mode like KernelBench's Model).
PROBLEM_ARGS = {"gemm_batchnorm_f16": ["--dtype", "f16"], "instance_norm_f16": ["--dtype", "f16"],
                "gemm_dropout_softmax_f16": ["--dtype", "f16"]}


def capture(*args: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    result = subprocess.run([sys.executable, "-m", "agentcompile.capture", *args], cwd=ROOT, env=env,
                            capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(result.stderr.strip())
    print(result.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="fixtures to write again (default: all, after removing the folder)")
    names = set(parser.parse_args().names)
    unknown = names - set(CHECKPOINTS) - set(RANDOM_CONFIGS) - set(PROBLEMS)
    if unknown:
        sys.exit(f"unknown fixtures: {', '.join(sorted(unknown))}")
    wanted = lambda name: not names or name in names
    if names:
        for name in names:
            shutil.rmtree(ROOT / OUT / name, ignore_errors=True)
    else:
        shutil.rmtree(ROOT / OUT, ignore_errors=True)
    for name in filter(wanted, CHECKPOINTS):
        capture("hf", str(pathlib.Path("tests/fixtures/models") / name), "--link-weights", "-o", str(OUT / name))
    for name in filter(wanted, RANDOM_CONFIGS):
        capture("hf", "--config", str(pathlib.Path("tests/fixtures/configs") / f"{name}.json"), "--random-weights",
                "--seed", "0", "-o", str(OUT / name))
    for name, body in PROBLEMS.items():
        if not wanted(name):
            continue
        problem = OUT / name / f"{name}.py"
        (ROOT / problem).parent.mkdir(parents=True)
        (ROOT / problem).write_text(PROBLEM_HEADER + body.lstrip("\n"))
        capture("module", str(problem), "--seed", "0", *PROBLEM_ARGS.get(name, []), "-o", str(OUT / name))


if __name__ == "__main__":
    main()
