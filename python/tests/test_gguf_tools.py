"""The GGUF writers used for GPU checks of GGUF files read at their own size (scripts/gpu-gguf-native-check):
python/hf_to_gguf.py (a checkpoint as GGUF blocks), python/gguf_kquants.py (its Q4_K quantizer) and
python/gguf_excerpt.py (a few blocks of a real file, bytes as stored). Skipped where numpy, safetensors or the gguf package is missing (scripts/setup installs
them with the reference tools)."""
import importlib.util
import json
import pathlib
import subprocess
import sys
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
MISSING = [m for m in ("numpy", "safetensors", "gguf") if importlib.util.find_spec(m) is None]


@unittest.skipIf(MISSING, f"needs {', '.join(MISSING)}")
class GgufToolsTest(unittest.TestCase):
    def run_tool(self, *args):
        done = subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True)
        self.assertEqual(done.returncode, 0, done.stderr)

    def test_a_checkpoint_becomes_blocks_with_llama_cpp_names(self):
        import numpy as np
        from gguf import GGMLQuantizationType as QT
        from gguf import GGUFReader
        from gguf.quants import dequantize
        from safetensors.numpy import load_file

        checkpoint = ROOT / "tests/fixtures/models/tiny-qwen3"
        config = json.loads((checkpoint / "config.json").read_text())
        hf = load_file(str(checkpoint / "model.safetensors"))
        with tempfile.TemporaryDirectory() as tmp:
            for kind, qtype, bound in (("q8_0", QT.Q8_0, 1 / 254 + 1 / 1024), ("q4_1", QT.Q4_1, 1 / 15 + 1 / 256)):
                out = pathlib.Path(tmp) / f"tiny-{kind}.gguf"
                self.run_tool(ROOT / "python/hf_to_gguf.py", checkpoint, out, "--type", kind)
                reader = GGUFReader(str(out))
                tensors = {t.name: t for t in reader.tensors}
                self.assertEqual(len(tensors), len(hf))
                block_count = reader.fields["qwen3.block_count"]
                self.assertEqual(int(block_count.parts[block_count.data[0]][0]), config["num_hidden_layers"])
                for hf_name, gguf_name in (("model.layers.1.self_attn.k_proj.weight", "blk.1.attn_k.weight"),
                                           ("model.layers.0.mlp.down_proj.weight", "blk.0.ffn_down.weight"),
                                           ("model.embed_tokens.weight", "token_embd.weight"),
                                           ("lm_head.weight", "output.weight")):
                    tensor = tensors[gguf_name]
                    self.assertEqual(tensor.tensor_type, qtype, gguf_name)
                    want = hf[hf_name].astype(np.float32)
                    got = dequantize(np.asarray(tensor.data), qtype).reshape(want.shape)
                    # Round to nearest within each block of 32: half a step (max|x| / 127, or the block's
                    # range / 15 <= 2 max|x| / 15) plus the f16 rounding of the scale, times the largest step.
                    blocks = np.abs(want).reshape(-1, 32).max(axis=1, keepdims=True)
                    err = np.abs(got - want).reshape(-1, 32)
                    self.assertTrue(np.all(err <= blocks * bound + 1e-7), f"{kind} {gguf_name}: worst {err.max()}")
                norm = tensors["blk.0.attn_q_norm.weight"]
                self.assertEqual(norm.tensor_type, QT.F32)
                np.testing.assert_array_equal(np.asarray(norm.data), hf["model.layers.0.self_attn.q_norm.weight"].astype(np.float32))

    def test_q4_k_rounds_each_value_within_half_its_step(self):
        import numpy as np
        from gguf import GGMLQuantizationType as QT
        from gguf.quants import Q4_K, dequantize

        sys.path.insert(0, str(ROOT / "python"))
        from gguf_kquants import quantize_q4_k

        rng = np.random.default_rng(0)
        for scale in (1.0, 0.02, 1e-4):
            x = (rng.standard_normal((6, 512)) * scale).astype(np.float32)
            x[0, :32] = np.abs(x[0, :32])    # a sub-block above zero (no offset)
            x[1, 32:64] = -np.abs(x[1, 32:64])  # one below zero
            x[2, 64:96] = 0                  # one all zeros
            x[3, :256] = 0                   # a whole block of zeros (d = dmin = 0)
            blocks = quantize_q4_k(x)
            self.assertEqual(blocks.shape, (6, 2 * 144))
            got = dequantize(blocks, QT.Q4_K).reshape(x.shape)
            # The step of each sub-block, read back from the blocks as gguf does: d * sc.
            raw = blocks.reshape(-1, 144)
            d = raw[:, 0:2].copy().view(np.float16).astype(np.float32)
            sc, _ = Q4_K.get_scale_min(raw[:, 4:16].copy())
            step = (d * sc.astype(np.float32)).reshape(-1)
            err = np.abs(got - x).reshape(-1, 32).max(axis=1)
            self.assertTrue(np.all(err <= 0.5 * step * (1 + 1e-5) + 1e-12), f"scale {scale}: worst {(err - 0.5 * step).max()}")
            self.assertTrue(np.all(got[3, :256] == 0))
        with self.assertRaises(ValueError):
            quantize_q4_k(np.zeros((2, 100), dtype=np.float32))
        with self.assertRaises(ValueError):
            quantize_q4_k(np.full((1, 256), np.nan, dtype=np.float32))

    def test_q4_k_refuses_rows_that_are_not_whole_super_blocks(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = pathlib.Path(tmp) / "tiny-q4_k.gguf"
            done = subprocess.run([sys.executable, str(ROOT / "python/hf_to_gguf.py"), str(ROOT / "tests/fixtures/models/tiny-qwen3"), str(out),
                                   "--type", "q4_k"], capture_output=True, text=True)
            self.assertNotEqual(done.returncode, 0)
            self.assertIn("not a multiple of 256", done.stderr)
            self.assertFalse(out.exists())

    def test_an_excerpt_keeps_the_bytes_it_keeps(self):
        import numpy as np
        from gguf import GGUFReader

        source = ROOT / "tests/fixtures/gguf/tiny_llama_q8_0.gguf"
        with tempfile.TemporaryDirectory() as tmp:
            out = pathlib.Path(tmp) / "excerpt.gguf"
            self.run_tool(ROOT / "python/gguf_excerpt.py", source, out, "--blocks", 1, "--vocab", 8)
            before = {t.name: t for t in GGUFReader(str(source)).tensors}
            reader = GGUFReader(str(out))
            after = {t.name: t for t in reader.tensors}
            self.assertEqual(set(after), set(before))
            for name, tensor in after.items():
                self.assertEqual(tensor.tensor_type, before[name].tensor_type, name)
                want = np.asarray(before[name].data)
                if name == "token_embd.weight":
                    want = want[:8]
                np.testing.assert_array_equal(np.asarray(tensor.data), want, name)
            vocab = reader.fields["llama.vocab_size"]
            self.assertEqual(int(vocab.parts[vocab.data[0]][0]), 8)
            self.assertFalse(any(name.startswith("tokenizer.") for name in reader.fields))
            # A second run does not write over the file, and leaves no temporary behind.
            before_bytes = out.read_bytes()
            again = subprocess.run([sys.executable, str(ROOT / "python/gguf_excerpt.py"), str(source), str(out)], capture_output=True, text=True)
            self.assertNotEqual(again.returncode, 0)
            self.assertIn("exists; not overwriting it", again.stderr)
            self.assertEqual(out.read_bytes(), before_bytes)
            self.assertEqual(sorted(p.name for p in pathlib.Path(tmp).iterdir()), ["excerpt.gguf"])


if __name__ == "__main__":
    unittest.main()
