"""Small copies of KernelBench problems (/work/shared/kernelbench), at sizes a test captures in a second.

Each entry is a problem file's source: a `Model`, `get_init_inputs()` and `get_inputs()`. The classes
are the published ones (sometimes two problems in one where they exercise the same lowering); only the
sizes are new. The last entry is ours: lowerings KernelBench does not reach (integer selects and
division, fmod, NaN-ignoring fmax, repeat, padding, strided slices).
"""

HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n"

PROBLEMS = {
    "relu": """
class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)
def get_inputs(): return [torch.randn(16, 64)]
def get_init_inputs(): return []
""",
    "gemm_multiply_leakyrelu": """
class Model(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.leaky_relu = nn.LeakyReLU(negative_slope)
    def forward(self, x):
        return self.leaky_relu(self.gemm(x) * self.multiplier)
def get_inputs(): return [torch.randn(8, 32)]
def get_init_inputs(): return [32, 48, 2.0, 0.1]
""",
    "softmax_logsoftmax": """
class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=1), torch.log_softmax(x, dim=1)
def get_inputs(): return [torch.randn(4, 100)]
def get_init_inputs(): return []
""",
    "layernorm": """
class Model(nn.Module):
    def __init__(self, normalized_shape):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)
    def forward(self, x):
        return self.ln(x)
def get_inputs(): return [torch.randn(2, 4, 6, 8)]
def get_init_inputs(): return [(4, 6, 8)]
""",
    "groupnorm": """
class Model(nn.Module):
    def __init__(self, num_features, num_groups):
        super().__init__()
        self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=num_features)
    def forward(self, x):
        return self.gn(x)
def get_inputs(): return [torch.randn(2, 8, 5, 6)]
def get_init_inputs(): return [8, 4]
""",
    "batchnorm_train": """
class Model(nn.Module):
    def __init__(self, num_features):
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features=num_features)
    def forward(self, x):
        return self.bn(x)
def get_inputs(): return [torch.rand(4, 3, 5, 6)]
def get_init_inputs(): return [3]
""",
    "instancenorm": """
class Model(nn.Module):
    def __init__(self, num_features):
        super().__init__()
        self.inorm = nn.InstanceNorm2d(num_features=num_features)
    def forward(self, x):
        return self.inorm(x)
def get_inputs(): return [torch.randn(2, 3, 5, 6)]
def get_init_inputs(): return [3]
""",
    "rmsnorm_by_hand": """
class Model(nn.Module):
    def __init__(self, num_features, eps=1e-5):
        super().__init__()
        self.num_features, self.eps = num_features, eps
    def forward(self, x):
        rms = torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + self.eps)
        return x / rms
def get_inputs(): return [torch.randn(2, 16, 4, 4)]
def get_init_inputs(): return [16]
""",
    "argmax_argmin_max_min": """
class Model(nn.Module):
    def forward(self, x):
        return torch.argmax(x, dim=1), torch.argmin(x, dim=2), torch.max(x, dim=1)[0], torch.min(x, dim=0)[0]
def get_inputs(): return [torch.randn(3, 7, 5)]
def get_init_inputs(): return []
""",
    "cumsum_variants": """
class Model(nn.Module):
    def forward(self, x, mask):
        exclusive = torch.cat((torch.zeros_like(x.select(1, 0).unsqueeze(1)), x), dim=1)[:, :-1]
        return (torch.cumsum(x.flip(1), dim=1).flip(1), torch.cumsum(exclusive, dim=1),
                torch.cumprod(x, dim=1), torch.cumsum(x * mask, dim=1))
def get_inputs(): return [torch.rand(4, 10), torch.randint(0, 2, (4, 10)).bool()]
def get_init_inputs(): return []
""",
    "sdpa": """
class Model(nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v)
def get_inputs(): return [torch.randn(2, 4, 8, 16), torch.randn(2, 4, 8, 16), torch.randn(2, 4, 8, 16)]
def get_init_inputs(): return []
""",
    "losses": """
class Model(nn.Module):
    def forward(self, predictions, targets, labels):
        return (F.smooth_l1_loss(predictions, targets), F.mse_loss(predictions, targets),
                F.cross_entropy(predictions, labels),
                F.kl_div(torch.log(predictions.softmax(-1)), targets.softmax(-1), reduction='batchmean'))
def get_inputs(): return [torch.randn(8, 10), torch.randn(8, 10), torch.randint(0, 10, (8,))]
def get_init_inputs(): return []
""",
    "activations": """
class Model(nn.Module):
    def forward(self, x):
        return (torch.selu(x), F.softplus(x), F.hardsigmoid(x), F.hardtanh(x, -0.5, 0.5), F.elu(x, 0.7),
                x / (1 + torch.abs(x)), F.gelu(x, approximate='tanh'), F.mish(x), x * torch.sigmoid(x))
def get_inputs(): return [torch.randn(6, 20) * 3]
def get_init_inputs(): return []
""",
    "vector_norms": """
class Model(nn.Module):
    def forward(self, x):
        return (x / torch.norm(x, p='fro'), x / torch.norm(x, p=2, dim=1, keepdim=True),
                x / torch.sum(torch.abs(x), dim=1, keepdim=True))
def get_inputs(): return [torch.randn(4, 16)]
def get_init_inputs(): return []
""",
    "triangular_and_batched_matmul": """
class Model(nn.Module):
    def forward(self, A, B, C):
        return torch.tril(torch.matmul(A, B)), torch.triu(torch.matmul(A, B)), torch.einsum("bijl,lk->bijk", C, B)
def get_inputs(): return [torch.randn(12, 12), torch.randn(12, 12), torch.randn(2, 3, 5, 12)]
def get_init_inputs(): return []
""",
    "matmul_maxpool_sum_scale": """
class Model(nn.Module):
    def __init__(self, in_features, out_features, kernel_size, scale_factor):
        super().__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.max_pool = nn.MaxPool1d(kernel_size)
        self.avg_pool = nn.AvgPool1d(kernel_size)
        self.scale_factor = scale_factor
    def forward(self, x):
        x = self.matmul(x)
        a = self.max_pool(x.unsqueeze(1)).squeeze(1)
        b = self.avg_pool(x.unsqueeze(1)).squeeze(1)
        return torch.sum(a, dim=1) * self.scale_factor, b
def get_inputs(): return [torch.randn(4, 10)]
def get_init_inputs(): return [10, 7, 2, 0.5]
""",
    "gemm_batchnorm_gelu_groupnorm_mean": """
class Model(nn.Module):
    def __init__(self, in_features, out_features, num_groups):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.batch_norm = nn.BatchNorm1d(out_features)
        self.group_norm = nn.GroupNorm(num_groups, out_features)
    def forward(self, x):
        x = torch.nn.functional.gelu(self.batch_norm(self.gemm(x)))
        x = self.group_norm(x)
        return torch.logsumexp(x, dim=1, keepdim=True), torch.var(x, dim=1), x.std(), torch.mean(x, dim=1)
def get_inputs(): return [torch.randn(6, 12)]
def get_init_inputs(): return [12, 16, 4]
""",
    "dropout_softmax": """
class Model(nn.Module):
    def __init__(self, in_features, out_features, dropout_p):
        super().__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.dropout = nn.Dropout(dropout_p)
    def forward(self, x):
        return torch.softmax(self.dropout(self.matmul(x)), dim=1)
def get_inputs(): return [torch.randn(4, 8)]
def get_init_inputs(): return [8, 6, 0.2]
""",
    # Two dropouts (seeds 0 and 1 in program order; the second in place) and one with p = 1 (all zeros).
    "dropout_twice": """
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.first = nn.Dropout(0.1)
        self.linear = nn.Linear(16, 12)
        self.second = nn.Dropout(0.5, inplace=True)
        self.third = nn.Dropout(1.0)
    def forward(self, x):
        y = self.second(torch.relu(self.linear(self.first(x))))
        return y, self.third(y) + 1
def get_inputs(): return [torch.randn(8, 16)]
def get_init_inputs(): return []
""",
    # torch.randn_like, rand_like, bernoulli and rand in forward (the draws seeded in program order).
    "random_draws": """
class Model(nn.Module):
    def forward(self, x):
        noise = torch.randn_like(x) + torch.rand_like(x)
        gate = torch.bernoulli(torch.sigmoid(x))
        return x + 0.1 * noise * gate + torch.rand(x.shape[0], 4).sum(1, keepdim=True)
def get_inputs(): return [torch.randn(8, 16)]
def get_init_inputs(): return []
""",
    "lowering_edge_cases": """
class Model(nn.Module):
    def forward(self, x, i):
        y = torch.where(x > 1, torch.tensor(float("nan")), x)
        return (torch.clamp(i, -2, 5), torch.maximum(i, i.flip(0)), torch.div(i, 3, rounding_mode="floor"),
                torch.div(x, 0.3, rounding_mode="trunc"), torch.fmod(x, 0.7), x.remainder(0.7),
                torch.fmax(y, x.flip(0)), torch.fmin(x, y), x.repeat(2, 3), F.pad(x, (1, 2, 0, 1), value=0.5),
                x[:, ::2], torch.isinf(x / 0.0), torch.exp2(x), torch.log10(x.abs() + 1), torch.tan(x))
def get_inputs(): return [torch.randn(6, 5), torch.randint(-9, 9, (6, 5))]
def get_init_inputs(): return []
""",
}


def source(name: str) -> str:
    return HEADER + PROBLEMS[name].lstrip("\n")
