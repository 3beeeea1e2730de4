#!/usr/bin/env python3
"""How far apart do two correct f16/bf16 computations of the same decoder land? A forward pass of a
Llama/Qwen2/Qwen3 checkpoint in float32 that rounds to the model's dtype exactly at the points a
rounding policy names: `emulated-hf` is transformers' eager forward op by op (every op's output rounded
as PyTorch rounds it), `emulated-ours-before` the rounding points of agentcompile's kernels. With --hf
it also runs Hugging Face itself (eager and sdpa in the checkpoint's dtype, and float32) and prints
the teacher-forced comparison of every pair (per-row max |a - b| / max |b|, top-1 agreement), the
numbers issue 5's bounds are stated in. Runs on the CPU or a GPU (--device).

  python3 python/rounding_study.py --checkpoint DIR [--device cuda] [--hf] [--ref more.npy] [--json OUT]

The 64 token ids are scripts/gpu-runtime-check's (random.Random(0) over the vocabulary).
Policy switches (True = round as HF does):
  norm_twice      RMSNorm rounds the normalized row, then rounds weight * row  (else one rounding)
  qk_norm_round   QK-norm's output is rounded before RoPE                       (else kept in f32)
  rope_hf         cos/sin rounded to the dtype, q*cos and rotate(q)*sin rounded, then their sum
  mlp_round       gate, up, silu(gate) and silu*up each rounded                  (else one rounding)
  residual_round  a projection's output is rounded before the residual add       (else one rounding)
  logits_round    logits rounded to the dtype before the cast to float32
  attention       eager: scores rounded, scaled and rounded, normalized P rounded, O rounded
                  flash: fp32 scores, P = exp(s - rowmax) rounded for P·V, O = rounded (P·V / l)
                  f32:   everything fp32, O rounded
  decode_attention  the attention of rows from --decode-from on (agentcompile's decode kernel: f32)
"""
import argparse
import json
import pathlib
import random
import sys

import numpy as np
import torch
from safetensors import safe_open

import compare_logits  # python/, beside this script

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}

HF = dict(norm_twice=True, qk_norm_round=True, rope_hf=True, mlp_round=True, residual_round=True,
          logits_round=True, attention="eager", decode_attention="eager")
# agentcompile before reference-faithful rounding: prefill rows through the flash kernel, decode rows f32.
OURS_BEFORE = dict(norm_twice=False, qk_norm_round=False, rope_hf=False, mlp_round=False, residual_round=False,
                   logits_round=False, attention="flash", decode_attention="f32")


class Model:
    def __init__(self, ckpt: pathlib.Path, device: str):
        self.config = json.loads((ckpt / "config.json").read_text())
        c = self.config
        self.dtype = DTYPES[c.get("torch_dtype") or c.get("dtype") or "float32"]
        self.w = {}
        for path in sorted(ckpt.glob("*.safetensors")):
            with safe_open(str(path), framework="pt") as f:
                for name in f.keys():
                    self.w[name] = f.get_tensor(name).to(device=device, dtype=torch.float32)
        self.qk_norm = c["model_type"] == "qwen3"
        self.heads, self.kv_heads = c["num_attention_heads"], c["num_key_value_heads"]
        self.head_dim = c.get("head_dim") or c["hidden_size"] // self.heads
        self.eps = c["rms_norm_eps"]
        self.tied = c.get("tie_word_embeddings", False)
        self.device = device

    def rd(self, x):
        return x.to(self.dtype).to(torch.float32) if self.dtype != torch.float32 else x

    def inv_freq(self):
        c, d = self.config, self.head_dim
        inv = 1.0 / (c.get("rope_theta", 10000.0) ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))
        rs = c.get("rope_scaling") or {}
        if rs.get("rope_type", rs.get("type")) == "llama3":
            import math
            factor, low, high, old = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"], rs["original_max_position_embeddings"]
            low_wl, high_wl = old / low, old / high
            wavelen = 2 * math.pi / inv
            inv_l = torch.where(wavelen > low_wl, inv / factor, inv)
            smooth = (old / wavelen - low) / (high - low)
            smoothed = (1 - smooth) * inv_l / factor + smooth * inv_l
            medium = ~(wavelen < high_wl) * ~(wavelen > low_wl)
            inv = torch.where(medium, smoothed, inv_l)
        return inv.to(self.device)

    def norm(self, x, w, p):
        y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.rd(w * self.rd(y)) if p["norm_twice"] else self.rd(w * y)

    def qk_norm_rows(self, x, w, p):  # per-head RMSNorm; agentcompile keeps its output in f32 up to RoPE
        y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        y = w * self.rd(y) if p["norm_twice"] else w * y
        return self.rd(y) if p["qk_norm_round"] else y

    def rope(self, x, cos, sin, p):  # x [T, H, D]; cos/sin [T, 1, D]
        half = x.shape[-1] // 2
        rot = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
        if p["rope_hf"]:
            c, s = self.rd(cos), self.rd(sin)
            return self.rd(self.rd(x * c) + self.rd(rot * s))
        return self.rd(x * cos + rot * sin)

    def attention(self, q, k, v, mode):  # q [T, NH, D], k/v [T, KV, D] -> [T, NH, D]
        T = q.shape[0]
        g = self.heads // self.kv_heads
        k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
        q, k, v = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)  # [NH, T, D]
        scale = self.head_dim ** -0.5
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool, device=q.device), 1)
        if mode == "eager":
            s = self.rd(self.rd(q @ k.transpose(1, 2)) * scale).masked_fill(mask, float("-inf"))
            out = self.rd(self.rd(torch.softmax(s, dim=-1)) @ v)
        elif mode == "flash":
            s = ((q @ k.transpose(1, 2)) * scale).masked_fill(mask, float("-inf"))
            pr = torch.exp(s - s.amax(-1, keepdim=True))
            out = self.rd((self.rd(pr) @ v) / pr.sum(-1, keepdim=True))
        else:
            s = ((q @ k.transpose(1, 2)) * scale).masked_fill(mask, float("-inf"))
            out = self.rd(torch.softmax(s, dim=-1) @ v)
        return out.transpose(0, 1)

    def forward(self, tokens, p, decode_from):
        T = len(tokens)
        x = self.rd(self.w["model.embed_tokens.weight"][torch.tensor(tokens, device=self.device)])
        pos = torch.arange(T, dtype=torch.float32, device=self.device)
        freqs = pos[:, None] * self.inv_freq()[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)[:, None, :]
        cos, sin = emb.cos(), emb.sin()
        D = self.head_dim
        for i in range(self.config["num_hidden_layers"]):
            pre = f"model.layers.{i}."
            lin = lambda t, name: self.rd(t @ self.w[pre + name + ".weight"].T + self.w.get(pre + name + ".bias", 0))
            h = self.norm(x, self.w[pre + "input_layernorm.weight"], p)
            q = lin(h, "self_attn.q_proj").view(T, -1, D)
            k = lin(h, "self_attn.k_proj").view(T, -1, D)
            v = lin(h, "self_attn.v_proj").view(T, -1, D)
            if self.qk_norm:
                q = self.qk_norm_rows(q, self.w[pre + "self_attn.q_norm.weight"], p)
                k = self.qk_norm_rows(k, self.w[pre + "self_attn.k_norm.weight"], p)
            q, k = self.rope(q, cos, sin, p), self.rope(k, cos, sin, p)
            a = self.attention(q, k, v, p["attention"])
            if decode_from < T and p["decode_attention"] != p["attention"]:
                a[decode_from:] = self.attention(q, k, v, p["decode_attention"])[decode_from:]
            o = a.reshape(T, -1) @ self.w[pre + "self_attn.o_proj.weight"].T + self.w.get(pre + "self_attn.o_proj.bias", 0)
            x = self.rd(x + self.rd(o)) if p["residual_round"] else self.rd(x + o)
            h = self.norm(x, self.w[pre + "post_attention_layernorm.weight"], p)
            gate = h @ self.w[pre + "mlp.gate_proj.weight"].T
            up = h @ self.w[pre + "mlp.up_proj.weight"].T
            if p["mlp_round"]:
                act = self.rd(self.rd(torch.nn.functional.silu(self.rd(gate))) * self.rd(up))
            else:
                act = self.rd(torch.nn.functional.silu(gate) * up)
            d = act @ self.w[pre + "mlp.down_proj.weight"].T
            x = self.rd(x + self.rd(d)) if p["residual_round"] else self.rd(x + d)
        h = self.norm(x, self.w["model.norm.weight"], p)
        head = self.w["model.embed_tokens.weight" if self.tied else "lm_head.weight"]
        logits = h @ head.T
        return self.rd(logits) if p["logits_round"] else logits


def compare(ours, ref):
    """The worst row's max |a - b| / max |b|, and how many rows agree on top-1 (compare_logits.py's measures)."""
    r = compare_logits.compare(ours, ref, max_rel=0.0)
    return r["max_rel_row"], r["shape"][0] - r["top1_disagree_rows"]


def hf_logits(ckpt: pathlib.Path, tokens, dtype, attn: str, device: str) -> np.ndarray:
    from hf_teacher_forced import load  # the reference loader the runtime check uses
    model = load(ckpt, dtype, device, attn)
    with torch.inference_mode():
        out = model(torch.tensor([tokens], device=device)).logits[0].float().cpu().numpy()
    del model
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--count", type=int, default=64)
    ap.add_argument("--tokens-seed", type=int, default=0)
    ap.add_argument("--decode-from", type=int, default=32, help="rows from here on use the decode attention")
    ap.add_argument("--device", default="cpu", help="where the emulated policies and the HF runs compute")
    ap.add_argument("--hf", action="store_true", help="also run HF itself: eager and sdpa in the dtype, and float32")
    ap.add_argument("--ref", action="append", default=[], help="more reference logits, .npy (repeatable)")
    ap.add_argument("--policy", action="append", default=[], help="NAME=json overrides of the hf policy (repeatable)")
    ap.add_argument("--json", help="write the matrix of comparisons here")
    args = ap.parse_args()
    ckpt = pathlib.Path(args.checkpoint)
    model = Model(ckpt, args.device)
    r = random.Random(args.tokens_seed)
    tokens = [r.randrange(model.config["vocab_size"]) for _ in range(args.count)]
    policies = {"emulated-hf": HF, "emulated-ours-before": OURS_BEFORE}
    for spec in args.policy:
        name, _, body = spec.partition("=")
        policies[name] = dict(HF, **json.loads(body))
    results = {}
    with torch.inference_mode():
        for name, p in policies.items():
            results[name] = model.forward(tokens, p, args.decode_from).cpu().numpy()
    del model
    if args.hf:
        results["hf-eager"] = hf_logits(ckpt, tokens, "auto", "eager", args.device)
        results["hf-sdpa"] = hf_logits(ckpt, tokens, "auto", "sdpa", args.device)
        results["hf-f32"] = hf_logits(ckpt, tokens, torch.float32, "eager", args.device)
    for path in args.ref:
        results[pathlib.Path(path).stem] = np.load(path)
    names = list(results)
    matrix = {a: {b: compare(results[a], results[b]) for b in names if b != a} for a in names}
    width = max(map(len, names))
    print(f"{ckpt.name} on {args.device}: per-row max |a - b| / max |b|, and top-1 agreement of a with b (b = column)")
    print(" " * width + "".join(f"  {b:>{width}}" for b in names))
    for a in names:
        cells = "".join(f"  {'-':>{width}}" if a == b else f"  {matrix[a][b][0]:.2e} {matrix[a][b][1]:>2}/{args.count}".rjust(width + 2)
                        for b in names)
        print(f"{a:>{width}}{cells}")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"checkpoint": str(ckpt), "device": args.device, "tokens": tokens,
                                                       "torch": torch.__version__, "matrix": matrix}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
