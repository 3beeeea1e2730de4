#!/usr/bin/env python3
"""Writes the small GGUF files tests/unit/gguf_test.cpp reads, with gguf-py as the reference.

tests/fixtures/gguf/
  quant_types.gguf          one tensor per supported storage type (F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q4_K Q5_K Q6_K)
  quant_types.<name>.f32    what gguf.quants.dequantize makes of each, raw little-endian f32
  metadata.gguf             a metadata value of every type (nested arrays too), general.alignment = 64
  tiny_llama.gguf           a 1-layer llama whose HF weights are known patterns; q/k (and their biases)
                            are written through llama.cpp's permute, as convert_hf_to_gguf.py does
  tiny_llama_q8_0.gguf      the same model with every matrix stored as Q8_0 (the permute applies to
                            whole rows of blocks), for running GGUF blocks natively
  tiny_llama_q4_k.gguf      a 256-wide model of the same patterns with every matrix stored as Q4_K (rows of
                            whole 256-element super-blocks; python/gguf_kquants.py, gguf-py having no Q4_K
                            quantizer), its head tied to the table: the GPU path's transcoding of Q4_K
tests/fuzz/corpus/gguf/     two tiny seeds for fuzz_gguf_header

Needs numpy and the `gguf` package. Deterministic: rerunning rewrites identical bytes.
  python3 python/make_gguf_fixtures.py [--root REPO]
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType as QT
from gguf import GGUFReader, GGUFValueType, GGUFWriter
from gguf.quants import dequantize, quantize
from gguf_files import write
from gguf_kquants import quantize_q4_k


def random_k_blocks(rng: np.random.Generator, n_blocks: int, qtype: QT) -> np.ndarray:
    """Random Q4_K / Q5_K / Q6_K blocks whose f16 super-block scales are small and finite."""
    size = {QT.Q4_K: 144, QT.Q5_K: 176, QT.Q6_K: 210}[qtype]
    blocks = rng.integers(0, 256, size=(n_blocks, size), dtype=np.uint8)
    scales = rng.uniform(-0.05, 0.05, size=(n_blocks, 2)).astype(np.float16).view(np.uint8)
    if qtype in (QT.Q4_K, QT.Q5_K):
        blocks[:, 0:4] = scales  # d, dmin
    else:
        blocks[:, 208:210] = scales[:, 0:2]  # d
    return blocks


def quant_types(out: Path, rng: np.random.Generator) -> None:
    special = np.array([0.0, -0.0, 6e-8, -6.1e-5, 65504.0, -65504.0, np.inf, -np.inf], dtype=np.float32)
    plain = rng.standard_normal((2, 64)).astype(np.float32)
    plain[0, :8] = special
    tensors = {
        "f32": plain,
        "f16": plain.astype(np.float16),
        "bf16": quantize(plain, QT.BF16),
    }
    dense = (rng.standard_normal((4, 64)) * rng.uniform(0.1, 3.0, size=(4, 1))).astype(np.float32)
    for name, qtype in [("q8_0", QT.Q8_0), ("q4_0", QT.Q4_0), ("q4_1", QT.Q4_1)]:
        tensors[name] = quantize(dense, qtype)
    tensors["q4_k"] = random_k_blocks(rng, 4, QT.Q4_K).reshape(2, 2 * 144)
    tensors["q6_k"] = random_k_blocks(rng, 4, QT.Q6_K).reshape(2, 2 * 210)
    tensors["q5_k"] = random_k_blocks(rng, 4, QT.Q5_K).reshape(2, 2 * 176)
    raw_types = {"bf16": QT.BF16, "q8_0": QT.Q8_0, "q4_0": QT.Q4_0, "q4_1": QT.Q4_1, "q4_k": QT.Q4_K, "q5_k": QT.Q5_K,
                 "q6_k": QT.Q6_K}

    path = out / "quant_types.gguf"
    writer = GGUFWriter(path, "test")
    for name, data in tensors.items():
        writer.add_tensor(name, data, raw_dtype=raw_types.get(name))
    write(writer)

    # The reference is what gguf-py makes of the bytes as read back from the file.
    for tensor in GGUFReader(path).tensors:
        values = dequantize(tensor.data, tensor.tensor_type).astype("<f4", copy=False)
        values.tofile(out / f"quant_types.{tensor.name}.f32")


def metadata(out: Path) -> None:
    writer = GGUFWriter(out / "metadata.gguf", "test")
    writer.add_custom_alignment(64)
    writer.add_uint8("test.u8", 200)
    writer.add_int8("test.i8", -100)
    writer.add_uint16("test.u16", 60000)
    writer.add_int16("test.i16", -30000)
    writer.add_uint32("test.u32", 4000000000)
    writer.add_int32("test.i32", -2000000000)
    writer.add_float32("test.f32", 0.1)
    writer.add_bool("test.bool", True)
    writer.add_string("test.string", "h\u00e9llo w\u00f6rld")
    writer.add_uint64("test.u64", 2**63 + 5)
    writer.add_int64("test.i64", -(2**40))
    writer.add_float64("test.f64", 3.141592653589793)
    writer.add_key_value("test.array.i32", [1, -2, 3], GGUFValueType.ARRAY, sub_type=GGUFValueType.INT32)
    writer.add_key_value("test.array.f32", [0.5, -1.5], GGUFValueType.ARRAY, sub_type=GGUFValueType.FLOAT32)
    writer.add_array("test.array.string", ["a", "bc", ""])
    writer.add_array("test.array.nested", [[1, 2], [3]])
    writer.add_tensor("a", np.arange(3, dtype=np.float32))
    writer.add_tensor("b", np.arange(10, dtype=np.float32).reshape(2, 5))
    write(writer)


def llama_permute(weights: np.ndarray, n_head: int) -> np.ndarray:
    """convert_hf_to_gguf.py's LlamaModel.permute: per head, rotate-half rows -> interleaved pairs."""
    head_dim = weights.shape[0] // n_head
    grouped = weights.reshape(n_head, 2, head_dim // 2, *weights.shape[1:])
    return grouped.swapaxes(1, 2).reshape(weights.shape)


def pattern(base: float, rows: int, cols: int | None = None) -> np.ndarray:
    """HF-order values a test can recompute: base + row (+ col / 64); exact in f32."""
    r = np.arange(rows, dtype=np.float32)[:, None]
    if cols is None:
        return (base + r[:, 0]).astype(np.float32)
    c = np.arange(cols, dtype=np.float32)[None, :]
    return (base + r + c / 64).astype(np.float32)


def tiny_llama(path: Path, hidden: int, heads: int, kv_heads: int, ffn: int, vocab: int, dtype, matrices=None) -> None:
    """`matrices`, when given, is the GGML type every 2-D tensor is quantized to (gguf.quants.quantize)."""
    head_dim = hidden // heads
    writer = GGUFWriter(path, "llama")
    writer.add_context_length(256)
    writer.add_embedding_length(hidden)
    writer.add_block_count(1)
    writer.add_feed_forward_length(ffn)
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_rope_dimension_count(head_dim)
    writer.add_rope_freq_base(500000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    q_rows, kv_rows = heads * head_dim, kv_heads * head_dim
    tensors = {
        "token_embd.weight": pattern(0, vocab, hidden),
        "blk.0.attn_norm.weight": pattern(1, hidden),
        "blk.0.attn_q.weight": llama_permute(pattern(1000, q_rows, hidden), heads),
        "blk.0.attn_q.bias": llama_permute(pattern(100, q_rows), heads),
        "blk.0.attn_k.weight": llama_permute(pattern(2000, kv_rows, hidden), kv_heads),
        "blk.0.attn_k.bias": llama_permute(pattern(200, kv_rows), kv_heads),
        "blk.0.attn_v.weight": pattern(3000, kv_rows, hidden),
        "blk.0.attn_v.bias": pattern(300, kv_rows),
        "blk.0.attn_output.weight": pattern(4000, hidden, q_rows),
        "blk.0.attn_output.bias": pattern(400, hidden),
        "blk.0.ffn_norm.weight": pattern(2, hidden),
        "blk.0.ffn_gate.weight": pattern(5000, ffn, hidden),
        "blk.0.ffn_up.weight": pattern(6000, ffn, hidden),
        "blk.0.ffn_down.weight": pattern(7000, hidden, ffn),
        "output_norm.weight": pattern(3, hidden),
    }
    for name, data in tensors.items():
        if matrices == QT.Q4_K and data.ndim == 2:
            writer.add_tensor(name, quantize_q4_k(data / 512), raw_dtype=matrices)
        elif matrices is not None and data.ndim == 2:
            writer.add_tensor(name, quantize(data / 512, matrices), raw_dtype=matrices)  # scaled into a sane range
        else:
            writer.add_tensor(name, data.astype(dtype))
    write(writer)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    args = parser.parse_args()
    out = args.root / "tests" / "fixtures" / "gguf"
    seeds = args.root / "tests" / "fuzz" / "corpus" / "gguf"
    out.mkdir(parents=True, exist_ok=True)
    seeds.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(20240611)
    quant_types(out, rng)
    metadata(out)
    tiny_llama(out / "tiny_llama.gguf", hidden=32, heads=4, kv_heads=2, ffn=32, vocab=16, dtype=np.float32)
    tiny_llama(out / "tiny_llama_q8_0.gguf", hidden=32, heads=4, kv_heads=2, ffn=32, vocab=16, dtype=np.float32, matrices=QT.Q8_0)
    tiny_llama(out / "tiny_llama_q4_k.gguf", hidden=256, heads=4, kv_heads=2, ffn=256, vocab=16, dtype=np.float32, matrices=QT.Q4_K)
    tiny_llama(seeds / "tiny_llama_f16.gguf", hidden=8, heads=2, kv_heads=1, ffn=8, vocab=4, dtype=np.float16)
    (seeds / "metadata.gguf").write_bytes((out / "metadata.gguf").read_bytes())
    total = sum(f.stat().st_size for f in out.iterdir())
    print(f"wrote {len(list(out.iterdir()))} files under {out} ({total} bytes) and seeds under {seeds}")


if __name__ == "__main__":
    main()
