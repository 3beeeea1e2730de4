#!/usr/bin/env python3
"""Writes a Hugging Face Qwen3 / Qwen2 checkpoint (safetensors, e.g. from `agentcompile init-random`) as a
GGUF file with its 2-D weights in one GGML type (Q8_0, Q4_0, Q4_1 or F16 through gguf-py's own quantizer;
Q4_K through python/gguf_kquants.py, as gguf-py has none) and
every other tensor in F32, with llama.cpp's tensor names and the metadata agentcompile's GGUF frontend
reads, and no tokenizer. For measuring a GGUF model's decode in its own formats on the GPU machine
(scripts/gpu-gguf-native-check); not a general converter (no llama q/k permutation, no tokenizer).

  python3 python/hf_to_gguf.py CHECKPOINT_DIR out.gguf --type q8_0

Needs numpy, safetensors and the `gguf` package.
"""
from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType as QT
from gguf.quants import quantize
from gguf_files import new_gguf
from gguf_kquants import QK_K, quantize_q4_k
from safetensors.numpy import load_file

NAMES = {
    "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output", "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm",
    "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
    "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down",
}


def gguf_name(hf: str) -> str:
    if hf == "model.embed_tokens.weight":
        return "token_embd.weight"
    if hf == "model.norm.weight":
        return "output_norm.weight"
    if hf == "lm_head.weight":
        return "output.weight"
    m = re.match(r"model\.layers\.(\d+)\.(.+)\.(weight|bias)$", hf)
    if not m or m.group(2) not in NAMES:
        raise SystemExit(f"no GGUF name for tensor {hf!r}")
    return f"blk.{m.group(1)}.{NAMES[m.group(2)]}.{m.group(3)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--type", choices=["q8_0", "q4_0", "q4_1", "q4_k", "f16"], default="q8_0")
    args = parser.parse_args()
    config = json.loads((args.checkpoint / "config.json").read_text())
    arch = config["model_type"]
    if arch not in ("qwen3", "qwen2"):
        raise SystemExit(f"{args.checkpoint}: model_type {arch!r}; this writer handles qwen3 and qwen2")
    qtype = {"q8_0": QT.Q8_0, "q4_0": QT.Q4_0, "q4_1": QT.Q4_1, "q4_k": QT.Q4_K, "f16": QT.F16}[args.type]
    tensors = {}
    for shard in sorted(args.checkpoint.glob("model*.safetensors")):
        tensors.update(load_file(str(shard)))
    if qtype == QT.Q4_K:
        # Every 2-D weight's rows must be whole super-blocks; refuse before writing anything.
        for hf, t in tensors.items():
            if t.ndim == 2 and t.shape[1] % QK_K != 0:
                raise SystemExit(f"--type q4_k: {hf} has rows of {t.shape[1]} values, not a multiple of {QK_K}")
    with new_gguf(args.out, arch) as writer:
        heads = config["num_attention_heads"]
        head_dim = config.get("head_dim") or config["hidden_size"] // heads
        writer.add_context_length(config.get("max_position_embeddings", 4096))
        writer.add_embedding_length(config["hidden_size"])
        writer.add_block_count(config["num_hidden_layers"])
        writer.add_feed_forward_length(config["intermediate_size"])
        writer.add_head_count(heads)
        writer.add_head_count_kv(config.get("num_key_value_heads", heads))
        writer.add_key_length(head_dim)
        writer.add_value_length(head_dim)
        writer.add_rope_freq_base(float(config.get("rope_theta", 10000.0)))
        writer.add_layer_norm_rms_eps(float(config["rms_norm_eps"]))
        if config.get("bos_token_id") is not None:
            writer.add_bos_token_id(config["bos_token_id"])
        if config.get("eos_token_id") is not None:
            writer.add_eos_token_id(config["eos_token_id"] if isinstance(config["eos_token_id"], int) else config["eos_token_id"][0])
        for hf in sorted(tensors):
            data = tensors[hf].astype(np.float32)
            name = gguf_name(hf)
            if data.ndim == 2 and qtype == QT.Q4_K:
                writer.add_tensor(name, quantize_q4_k(data), raw_dtype=qtype)
            elif data.ndim == 2 and qtype != QT.F16:
                writer.add_tensor(name, quantize(data, qtype), raw_dtype=qtype)
            elif data.ndim == 2:
                writer.add_tensor(name, data.astype(np.float16))
            else:
                writer.add_tensor(name, data)
            del tensors[hf]


if __name__ == "__main__":
    main()
