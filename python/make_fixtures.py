#!/usr/bin/env python3
"""Writes the tiny random checkpoints under tests/fixtures/models/ and their Hugging Face reference.

For each config in tests/fixtures/configs/, `agentcompile init-random` writes the checkpoint; then
transformers (float32, eager attention) computes, for a fixed prompt, the logits of every prompt
position and 8 greedy steps (full recompute each step, no cache, so nothing but the model is trusted).
Outputs per model, next to the checkpoint:
  reference.json         prompt, greedy tokens, versions
  reference.safetensors  prompt_logits [P, V] and step_logits [8, V] (f32)
Run from the repository root after building: python3 python/make_fixtures.py --cli build/agentcompile
"""
import argparse
import json
import pathlib
import subprocess

import torch
import transformers
from safetensors.torch import save_file

ROOT = pathlib.Path(__file__).resolve().parent.parent
PROMPT = [1, 17, 300, 42, 7, 511, 256, 99]
STEPS = 8
MODELS = {  # name -> (dtype, seed)
    "tiny-llama": ("bf16", 11),
    "tiny-qwen2": ("f16", 12),
    "tiny-qwen3": ("f32", 13),
}


def reference(model_dir: pathlib.Path) -> None:
    model = transformers.AutoModelForCausalLM.from_pretrained(
        model_dir, dtype=torch.float32, attn_implementation="eager")
    model.eval()
    ids = torch.tensor([PROMPT])
    with torch.no_grad():
        prompt_logits = model(ids).logits[0].float()
        step_logits, tokens = [], []
        for _ in range(STEPS):
            last = model(ids).logits[0, -1].float()
            step_logits.append(last)
            token = int(torch.argmax(last))
            tokens.append(token)
            ids = torch.cat([ids, torch.tensor([[token]])], dim=1)
    save_file({"prompt_logits": prompt_logits.contiguous(), "step_logits": torch.stack(step_logits).contiguous()},
              str(model_dir / "reference.safetensors"))
    (model_dir / "reference.json").write_text(json.dumps({
        "prompt": PROMPT, "greedy_tokens": tokens, "steps": STEPS,
        "transformers": transformers.__version__, "torch": torch.__version__,
        "note": "float32, eager attention, full recompute per step"}, indent=2) + "\n")
    print(f"{model_dir.name}: greedy {tokens}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", default=str(ROOT / "build" / "agentcompile"))
    args = parser.parse_args()
    for name, (dtype, seed) in MODELS.items():
        out = ROOT / "tests" / "fixtures" / "models" / name
        subprocess.run([args.cli, "init-random", "--config", str(ROOT / "tests" / "fixtures" / "configs" / f"{name}.json"),
                        "--dtype", dtype, "--seed", str(seed), "--out", str(out), "--force"], check=True)  # beside reference.*
        reference(out)


if __name__ == "__main__":
    main()
