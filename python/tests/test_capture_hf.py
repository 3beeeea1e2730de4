"""`capture hf` on the tiny configs of every supported family: the IR verifies in C++, and running its
prefill and decode functions (with the KV-cache states they write) gives the logits of Hugging Face's
eager model recomputing the whole sequence."""
import json
import pathlib
import tempfile
import unittest

from helpers import ROOT, assert_close, check_ir, cli_supports, quiet_torch, reference_tokens, requires_torch

FAMILIES = ("tiny-llama", "tiny-qwen2", "tiny-qwen3", "tiny-gemma3", "tiny-phi3", "tiny-olmo2")
PROMPT = [1, 17, 300, 42, 7, 511, 256, 99]  # longer than the tiny Gemma-3 and Phi-3 windows (4 and 6)
CACHE_ROWS = 16
# prefill(PROMPT), decode(5), then a chunked prefill of 3 more tokens at position 9.
# Gemma-2 soft-caps attention logits (tanh(s / 50) * 50), which SDPA cannot: the capture spells it out.
SOFTCAP_CONFIG = {
    "architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "hidden_size": 64, "intermediate_size": 128,
    "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
    "query_pre_attn_scalar": 16, "vocab_size": 512, "max_position_embeddings": 256, "rms_norm_eps": 1e-06,
    "rope_theta": 10000.0, "sliding_window": 4, "attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0,
    "hidden_activation": "gelu_pytorch_tanh", "initializer_range": 0.15, "bos_token_id": 2, "eos_token_id": 1,
    "pad_token_id": 0, "torch_dtype": "float32"}
STEPS = [("prefill", PROMPT, 0), ("decode", [5], len(PROMPT)), ("prefill", [9, 33, 2], len(PROMPT) + 1)]


def config_path(name: str) -> pathlib.Path:
    return ROOT / "tests" / "fixtures" / "configs" / f"{name}.json"


@requires_torch
class HFCaptureTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        quiet_torch()
        cls._tmp = tempfile.TemporaryDirectory()
        cls.tmp = pathlib.Path(cls._tmp.name)

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def capture(self, name, dtype=None, **kwargs) -> pathlib.Path:
        from agentcompile.hf_causal_lm import capture_hf
        out = self.tmp / f"{name}-{dtype}-{len(list(self.tmp.iterdir()))}"
        if "checkpoint" not in kwargs:
            kwargs["config_path"] = config_path(name)
        capture_hf(out, dtype=dtype, seed=0, **kwargs)
        return out

    def test_every_family_verifies_in_its_config_dtype(self):
        for name in FAMILIES:
            with self.subTest(name):
                out = self.capture(name)
                check_ir(self, out / "module.ir")
                manifest = json.loads((out / "capture.json").read_text())
                self.assertEqual(list(manifest["functions"]), ["prefill", "decode"])
                self.assertEqual(manifest["functions"]["prefill"]["inputs"][0]["shape"], ["T"])
                self.assertEqual(manifest["causal_lm"]["num_layers"], 2)
                for file in ("config.json", "generation_config.json", "weights.safetensors"):
                    self.assertTrue((out / file).is_file(), file)

    def test_every_family_matches_hugging_face(self):
        for name in FAMILIES:
            with self.subTest(name):
                out = self.capture(name, dtype="f32")
                check_ir(self, out / "module.ir")
                self.check_against_hugging_face(out, run_ir)

    def test_soft_capped_attention_matches_hugging_face(self):
        from agentcompile.hf_causal_lm import capture_hf
        config = self.tmp / "tiny-gemma2.json"
        config.write_text(json.dumps(SOFTCAP_CONFIG))
        out = self.tmp / "gemma2"
        capture_hf(out, config_path=config, seed=0)
        check_ir(self, out / "module.ir")
        self.assertNotIn("= sdpa(", (out / "module.ir").read_text())
        self.check_against_hugging_face(out, run_ir)

    def test_sliding_windows_are_masked(self):
        text = (self.capture("tiny-gemma3").joinpath("module.ir")).read_text()
        prefill = text.split("func @decode")[0]
        self.assertEqual(prefill.count("= sdpa("), 2)
        self.assertEqual(prefill.count("logical_and("), 1)  # one of the two layers has a window

    def test_link_weights_writes_only_what_the_checkpoint_lacks(self):
        for name in ("tiny-qwen3", "tiny-qwen2"):  # qwen2 ties its embeddings: the tied weight is named once
            with self.subTest(name):
                checkpoint = ROOT / "tests" / "fixtures" / "models" / name
                out = self.capture(name, checkpoint=checkpoint, link_weights=True)
                check_ir(self, out / "module.ir")
                manifest = json.loads((out / "capture.json").read_text())
                self.assertEqual((out / manifest["weights_from"][0]).resolve(), checkpoint.resolve())
                self.assertFalse((out / "weights.safetensors").exists())
                text = (out / "module.ir").read_text()
                self.assertIn("param @model.embed_tokens.weight", text)
                self.assertEqual("param @lm_head.weight" in text, name == "tiny-qwen3")

    # run-function came with capture directories as a model format: its presence says `reference` reads them.
    @unittest.skipUnless(cli_supports("run-function"), "agentcompile does not read captures: C++ comparison skipped")
    def test_cpp_reference_interpreter_generates_hugging_face_tokens(self):
        import torch
        for name in FAMILIES:
            with self.subTest(name):
                out = self.capture(name, dtype="f32")
                tokens = reference_tokens(out, PROMPT, 6)
                model, ids = eager_model(out), list(PROMPT)
                with torch.no_grad():
                    for _ in range(6):
                        ids.append(int(model(input_ids=torch.tensor([ids])).logits[0, -1].argmax()))
                self.assertEqual(tokens, ids[len(PROMPT):])

    def check_against_hugging_face(self, out: pathlib.Path, run):
        """Each step's logits against the eager model recomputing every token so far."""
        import torch
        model = eager_model(out)
        states = None
        seen = []
        for function, tokens, pos in STEPS:
            seen += tokens
            logits, states = run(out, function, tokens, pos, states)
            with torch.no_grad():
                reference = model(input_ids=torch.tensor([seen])).logits[0, -1:].float()
            assert_close(self, {"logits": logits}, {"logits": reference}, 1e-4, 1e-3)


def eager_model(out: pathlib.Path):
    """Hugging Face's model with eager attention and the capture's own weights."""
    import torch
    import transformers
    from safetensors.torch import load_file
    config = transformers.AutoConfig.from_pretrained(out)
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32, attn_implementation="eager")
    missing, unexpected = model.load_state_dict(load_file(str(out / "weights.safetensors")), strict=False)
    assert not unexpected, unexpected
    assert all(name == "lm_head.weight" and config.tie_word_embeddings for name in missing), missing
    return model.eval()


def run_ir(out: pathlib.Path, function: str, tokens: list, pos: int, states):
    """One call of a captured function with the tests' IR evaluator; states carry over between calls."""
    import torch
    import ir_eval
    from safetensors.torch import load_file
    module = ir_eval.parse_module((out / "module.ir").read_text())
    if states is None:
        states = {name: torch.zeros((CACHE_ROWS, *shape[1:]), dtype=ir_eval.TORCH[dtype])
                  for name, (dtype, shape) in module["states"].items()}
    inputs = {"tokens": torch.tensor(tokens, dtype=torch.int32), "pos": torch.tensor(pos, dtype=torch.int32)}
    (logits,) = ir_eval.run_function(module, function, inputs, load_file(str(out / "weights.safetensors")), states,
                                     T=len(tokens), L=CACHE_ROWS)
    return logits, states


if __name__ == "__main__":
    unittest.main()
