#!/usr/bin/env python3
"""Hugging Face reference logits for a token sequence: one forward over the whole sequence (teacher
forcing), float32 logits [len, vocab] saved as .npy; row i = the logits after token i (predicting i+1),
the same rows `agentcompile run --dump-logits` writes.
  python3 python/hf_teacher_forced.py --checkpoint DIR --tokens 1,2,3 --out ref.npy [--device cuda] [--dtype auto|f32]
--dtype auto computes in the checkpoint's dtype (what the engine runs); f32 upcasts the weights, a reference
for the reference. Also reads GGUF files (--checkpoint path/to/model.gguf; needs the `gguf` package).
"""
import argparse
import json
import pathlib
import sys
import time

import numpy as np
import torch
import transformers

DTYPES = {"auto": "auto", "f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def read_tokens(args) -> list[int]:
    text = args.tokens if args.tokens is not None else pathlib.Path(args.tokens_file).read_text()
    text = text.strip()
    if text.startswith("["):
        return [int(t) for t in json.loads(text)]
    return [int(t) for t in text.replace(",", " ").split()]


def load(checkpoint: pathlib.Path, dtype, device: str, attn: str):
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    kwargs = {"dtype": dtype, "attn_implementation": attn}
    if checkpoint.suffix == ".gguf":
        kwargs["gguf_file"] = checkpoint.name
        checkpoint = checkpoint.parent
        if dtype == "auto":  # GGUF tensors are dequantized; compute in float32 unless told otherwise
            kwargs["dtype"] = torch.float32
    return transformers.AutoModelForCausalLM.from_pretrained(checkpoint, **kwargs).to(device).eval()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", required=True, help="HF checkpoint directory (or a .gguf file)")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--tokens", help="comma- or space-separated token ids")
    group.add_argument("--tokens-file", help="a file of ids (comma/space/newline separated, or a JSON list)")
    parser.add_argument("--out", required=True, help="output .npy, float32 [len, vocab]")
    parser.add_argument("--device", default="auto", help="cuda, cpu, or auto (cuda where present)")
    parser.add_argument("--dtype", default="auto", choices=DTYPES, help="auto = the checkpoint's dtype")
    parser.add_argument("--attn", default="eager", choices=["eager", "sdpa"])
    args = parser.parse_args()
    device = ("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device
    tokens = read_tokens(args)
    if not tokens:
        raise SystemExit("hf_teacher_forced.py: no tokens")
    started = time.perf_counter()
    model = load(pathlib.Path(args.checkpoint), DTYPES[args.dtype], device, args.attn)
    vocab = model.config.vocab_size
    bad = [t for t in tokens if not 0 <= t < vocab]
    if bad:
        raise SystemExit(f"hf_teacher_forced.py: token ids {bad[:5]} are outside the vocabulary of {vocab}")
    with torch.inference_mode():
        logits = model(torch.tensor([tokens], device=device)).logits[0].float().cpu().numpy()  # [T, V]
    np.save(args.out, np.ascontiguousarray(logits, dtype=np.float32))
    print(json.dumps({"out": args.out, "shape": list(logits.shape), "device": device, "dtype": str(model.dtype),
                      "attn": args.attn, "finite": bool(np.isfinite(logits).all()), "torch": torch.__version__,
                      "transformers": transformers.__version__, "seconds": round(time.perf_counter() - started, 2)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
