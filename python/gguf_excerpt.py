#!/usr/bin/env python3
"""Writes an excerpt of a llama-architecture GGUF file: its first N blocks and the first V rows of its token
table, every tensor's bytes copied as stored (same GGML types), its llama.* metadata with the block count
and vocabulary changed, and no tokenizer. A real model's quantized weights small enough to carry to the GPU
machine in one call (scripts/gpu-gguf-native-check runs it natively and dequantized).

  python3 python/gguf_excerpt.py SmolLM2-135M-Instruct.Q4_1.gguf out.gguf --blocks 3 --vocab 2048

Needs numpy and the `gguf` package.
"""
from __future__ import annotations

import argparse
import re

import numpy as np
from gguf import GGUFReader, GGUFValueType
from gguf_files import new_gguf


def scalar(field):
    value = field.parts[field.data[0]]
    return value.tolist()[0] if hasattr(value, "tolist") else value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("src")
    parser.add_argument("dst")
    parser.add_argument("--blocks", type=int, default=3)
    parser.add_argument("--vocab", type=int, default=2048)
    args = parser.parse_args()
    reader = GGUFReader(args.src)
    arch = bytes(reader.fields["general.architecture"].parts[-1]).decode()
    if arch != "llama":
        raise SystemExit(f"{args.src}: architecture {arch!r}; this excerpt writes llama files only")
    with new_gguf(args.dst, arch) as writer:
        for name, field in reader.fields.items():
            if not name.startswith(arch + ".") or name == f"{arch}.vocab_size":
                continue
            kind = field.types[0]
            if kind == GGUFValueType.ARRAY:
                continue
            value = scalar(field)
            if name == f"{arch}.block_count":
                value = args.blocks
            if kind == GGUFValueType.STRING:
                writer.add_string(name, bytes(field.parts[-1]).decode())
            else:
                writer.add_key_value(name, value, kind)
        writer.add_vocab_size(args.vocab)
        for tensor in reader.tensors:
            block = re.match(r"blk\.(\d+)\.", tensor.name)
            if block and int(block.group(1)) >= args.blocks:
                continue
            data = np.asarray(tensor.data)
            if tensor.name in ("token_embd.weight", "output.weight"):
                data = data[: args.vocab]
            # Quantized tensors come as bytes per row; plain ones as their values.
            writer.add_tensor(tensor.name, np.ascontiguousarray(data), raw_dtype=tensor.tensor_type)


if __name__ == "__main__":
    main()
