"""Captures a Hugging Face causal LM as the IR's `prefill` and `decode` functions.

Both functions run the model once over this call's tokens with a static KV cache (hf_attention.py):
  prefill(%tokens: i32[T], %pos: i32[]) -> (f32[1, V])    T symbolic (torch.export.Dim)
  decode(%tokens: i32[1], %pos: i32[]) -> (f32[1, V])
The caches are extra inputs [L, KV, D] (L a second Dim), one k and one v per layer; their in-place
writes become index_copy side effects on the module states kv.<layer>.k / kv.<layer>.v. The model is
called without its own cache (use_cache=False), with position_ids = pos + arange(T) and
logits_to_keep=1, so only the last position's logits are computed; they are returned as f32.
"""
from __future__ import annotations

import json
import os
import pathlib
import shutil

import torch

from . import hf_attention
from .capture_dir import node_count, signature, torch_version, write_capture
from .dtypes import TORCH_DTYPES
from .errors import CaptureError
from .exporting import export_core_aten
from .fx_to_ir import Converter, UserInput
from .ir_text import Module
from .weights import checkpoint_float_dtype, checkpoint_index

WRAPPER_PREFIX = "lm."  # the wrapper holds the model as `lm`; parameter names drop it
EXAMPLE_T, EXAMPLE_L = 5, 16  # sizes the export traces with; both stay symbolic
SIDE_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "tokenizer.model",
              "vocab.json", "merges.txt", "added_tokens.json", "chat_template.jinja", "chat_template.json",
              "generation_config.json")


class _CausalLMStep(torch.nn.Module):
    """tokens i32[T], pos i32[], caches [L, KV, D] x 2 * layers -> logits f32[1, V] of the last token."""

    def __init__(self, lm):
        super().__init__()
        self.lm = lm

    def forward(self, tokens, pos, *caches):
        positions = pos + torch.arange(tokens.shape[0], dtype=torch.int32)  # i32[T]
        with hf_attention.active_step(caches, positions):
            out = self.lm(input_ids=tokens.unsqueeze(0), position_ids=positions.unsqueeze(0), use_cache=False,
                          logits_to_keep=1)
        return out.logits[0].float()  # [1, V]


def _text_config(config):
    return config.get_text_config() if hasattr(config, "get_text_config") else config


def _cache_shape(config) -> tuple:
    text = _text_config(config)
    heads = text.num_attention_heads
    head_dim = getattr(text, "head_dim", None) or text.hidden_size // heads
    kv_heads = getattr(text, "num_key_value_heads", None) or heads
    return text.num_hidden_layers, kv_heads, head_dim


def load_model(checkpoint: pathlib.Path | None, config_path: pathlib.Path | None, dtype: str | None, seed: int):
    """(model in eval mode, its IR dtype); random weights (seeded) when there is no checkpoint."""
    import transformers
    transformers.utils.logging.disable_progress_bar()
    hf_attention.register()
    if checkpoint is not None:
        config = transformers.AutoConfig.from_pretrained(checkpoint)
    else:
        raw = json.loads(config_path.read_text())
        if "model_type" not in raw:
            raise CaptureError(f"{config_path} has no model_type")
        config = transformers.AutoConfig.for_model(**raw)
    dtype = dtype or _config_dtype(config)
    torch.manual_seed(seed)
    kwargs = {"dtype": TORCH_DTYPES[dtype], "attn_implementation": hf_attention.IMPLEMENTATION}
    try:
        if checkpoint is not None:
            model = transformers.AutoModelForCausalLM.from_pretrained(checkpoint, **kwargs)
        else:
            model = transformers.AutoModelForCausalLM.from_config(config, **kwargs)
    except ValueError as e:
        raise CaptureError(f"transformers cannot build this model: {e}") from e
    model.config._attn_implementation = hf_attention.IMPLEMENTATION
    return model.eval(), dtype


def _config_dtype(config) -> str:
    dtype = getattr(config, "dtype", None) or getattr(config, "torch_dtype", None) or torch.float32
    if isinstance(dtype, str):
        dtype = getattr(torch, dtype)
    return {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}.get(dtype, "f32")


def export_functions(model, dtype: str) -> tuple:
    """(IR module with prefill and decode, parameter tensors by name, notes)."""
    layers, kv_heads, head_dim = _cache_shape(model.config)
    step = _CausalLMStep(model)
    max_len = _text_config(model.config).max_position_embeddings
    T = torch.export.Dim("T", min=1, max=max_len)
    L = torch.export.Dim("L", min=2, max=max(max_len, EXAMPLE_L))
    module = Module(model.config.model_type)
    tensors, notes = {}, []
    hf_attention.windows_seen.clear()
    for name, count in (("prefill", EXAMPLE_T), ("decode", 1)):
        caches = tuple(torch.zeros(EXAMPLE_L, kv_heads, head_dim, dtype=TORCH_DTYPES[dtype]) for _ in range(2 * layers))
        args = (torch.zeros(count, dtype=torch.int32), torch.tensor(0, dtype=torch.int32), *caches)
        shapes = ({0: T} if name == "prefill" else None, None, tuple({0: L} for _ in caches))
        with torch.no_grad():
            program = export_core_aten(step, args, shapes, what=f"the {model.config.model_type} model's {name}")
        user = [s.arg.name for s in program.graph_signature.input_specs if s.kind.name == "USER_INPUT"]
        inputs = {user[0]: UserInput("tokens", symbols={0: "T"} if name == "prefill" else {}),
                  user[1]: UserInput("pos")}
        for i, placeholder in enumerate(user[2:]):
            inputs[placeholder] = UserInput(f"kv.{i // 2}.{'kv'[i % 2]}", is_state=True, symbols={0: "L"})
        converter = Converter(program, module, name, inputs, param_name=_parameter_names(model))
        module.functions.append(converter.run())
        tensors.update(converter.tensors)
        notes += [n for n in converter.notes if n not in notes]
    if hf_attention.windows_seen:
        notes.append("sliding-window attention on layers " +
                     ", ".join(f"{i} (window {w})" for i, w in sorted(hf_attention.windows_seen.items())))
    return module, tensors, notes


def _parameter_names(model):
    """target -> the name the checkpoint knows: the wrapper's prefix dropped, and a tied weight named
    as its first owner (model.embed_tokens.weight, not lm_head.weight, whichever export kept)."""
    first, names = {}, {}
    for name, tensor in [*model.named_parameters(remove_duplicate=False), *model.named_buffers(remove_duplicate=False)]:
        names[WRAPPER_PREFIX + name] = first.setdefault(id(tensor), name)

    def param_name(target: str) -> str:
        return names.get(target, target[len(WRAPPER_PREFIX):] if target.startswith(WRAPPER_PREFIX) else target)
    return param_name


def capture_hf(out: pathlib.Path, checkpoint: pathlib.Path | None = None, config_path: pathlib.Path | None = None,
               dtype: str | None = None, seed: int = 0, link_weights: bool = False) -> str:
    """Captures the model into `out`; returns a one-line summary."""
    import transformers
    index = None
    if link_weights:
        if checkpoint is None:
            raise CaptureError("--link-weights needs a checkpoint directory to link to")
        index = checkpoint_index(checkpoint)
        stored = checkpoint_float_dtype(index)
        if dtype is not None and dtype != stored:
            raise CaptureError(f"--link-weights keeps the checkpoint's dtype {stored}; "
                               f"drop --dtype {dtype} or --link-weights")
        dtype = stored
    model, dtype = load_model(checkpoint, config_path, dtype, seed)
    module, tensors, notes = export_functions(model, dtype)
    notes.insert(0, "attention: scaled_dot_product_attention over the whole cache with the boolean mask "
                    "arange(L) <= pos + arange(T); logits of the last position only")

    manifest = {"kind": "causal_lm", "source": str(checkpoint or config_path)}
    if link_weights:
        linked = {n for n, t in tensors.items()
                  if n in index and index[n] == (module.params[n].type.dtype, module.params[n].type.shape)}
        tensors = {n: t for n, t in tensors.items() if n not in linked}
        manifest["weights_from"] = [os.path.relpath(checkpoint.resolve(), out.resolve())]
    text = _text_config(model.config)
    manifest.update({
        "torch": torch_version(), "transformers": transformers.__version__, "dtype": dtype,
        "functions": {f.name: signature(f, output_names=["logits"]) for f in module.functions},
        "causal_lm": {"vocab_size": text.vocab_size, "max_position_embeddings": text.max_position_embeddings,
                      "eos_token_ids": _eos_ids(model), "bos_token_id": text.bos_token_id,
                      "num_layers": text.num_hidden_layers, "model_type": model.config.model_type},
        "notes": notes,
    })
    write_capture(out, module, manifest, tensors)
    _write_side_files(out, model, checkpoint, config_path, dtype)
    weights = f"{len(tensors)} tensors written"
    if link_weights:
        weights += f", {len(module.params) - len(tensors)} linked"
    return f"captured {model.config.model_type} ({node_count(module)}; {len(module.params)} params, {weights}) -> {out}"


def _eos_ids(model) -> list:
    eos = getattr(model.generation_config, "eos_token_id", None)
    if eos is None:
        eos = _text_config(model.config).eos_token_id
    if eos is None:
        return []
    return list(eos) if isinstance(eos, (list, tuple)) else [eos]


def _write_side_files(out, model, checkpoint, config_path, dtype) -> None:
    """config.json with the capture's dtype; the checkpoint's tokenizer and generation files."""
    source = (checkpoint / "config.json") if checkpoint is not None else config_path
    config = json.loads(source.read_text())
    torch_name = str(TORCH_DTYPES[dtype]).replace("torch.", "")
    for key in ("torch_dtype", "dtype"):
        if key in config or key == "torch_dtype":
            config[key] = torch_name
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    copied = set()
    if checkpoint is not None:
        for name in SIDE_FILES:
            if (checkpoint / name).is_file():
                shutil.copyfile(checkpoint / name, out / name)
                copied.add(name)
    if "generation_config.json" not in copied:
        model.generation_config.to_json_file(str(out / "generation_config.json"))
