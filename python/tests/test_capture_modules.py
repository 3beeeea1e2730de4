"""`capture module` on small KernelBench problems: the IR verifies in C++, and evaluating it reproduces the
eager outputs the capture wrote (reference_outputs.safetensors) from its example inputs."""
import json
import pathlib
import tempfile
import unittest

from helpers import assert_close, build_dir, check_ir, cli_supports, quiet_torch, requires_torch, run_function_command
from kernelbench_small import PROBLEMS, source


def _load(path):
    from safetensors.torch import load_file
    return load_file(str(path))


@requires_torch
class ModuleCaptureTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        quiet_torch()
        cls._tmp = tempfile.TemporaryDirectory()
        cls.tmp = pathlib.Path(cls._tmp.name)

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def capture(self, name, dtype="f32", eval_mode=False, example_data=True) -> pathlib.Path:
        from agentcompile.module_capture import capture_module
        problem = self.tmp / f"{name}.py"
        problem.write_text(source(name))
        out = self.tmp / f"{name}-{dtype}{'-eval' if eval_mode else ''}{'' if example_data else '-bare'}"
        capture_module(problem, out, dtype=dtype, seed=0, eval_mode=eval_mode, example_data=example_data)
        return out

    def evaluate(self, out: pathlib.Path) -> dict:
        """The captured forward run by the tests' IR evaluator on the captured example inputs."""
        import ir_eval
        module = ir_eval.parse_module((out / "module.ir").read_text())
        weights = _load(out / "weights.safetensors") if (out / "weights.safetensors").exists() else {}
        manifest = json.loads((out / "capture.json").read_text())
        T = manifest["functions"]["forward"].get("symbols", {}).get("T", 1)
        results = ir_eval.run_function(module, "forward", _load(out / "inputs.safetensors"), weights, {}, T=T)
        names = list(_load(out / "reference_outputs.safetensors"))
        return dict(zip(sorted(names, key=lambda n: int(n.rsplit("_", 1)[1]) if "_" in n else 0), results))

    def test_problems_verify_and_match_eager(self):
        for name in PROBLEMS:
            with self.subTest(name):
                out = self.capture(name)
                check_ir(self, out / "module.ir")
                assert_close(self, self.evaluate(out), _load(out / "reference_outputs.safetensors"), 1e-5, 1e-4)

    def test_f16_capture_casts_params_and_inputs(self):
        for name in ("gemm_multiply_leakyrelu", "layernorm", "sdpa", "batchnorm_train",
                     "gemm_batchnorm_gelu_groupnorm_mean"):
            with self.subTest(name):
                out = self.capture(name, dtype="f16")
                check_ir(self, out / "module.ir")
                self.assertIn("f16[", (out / "module.ir").read_text())
                assert_close(self, self.evaluate(out), _load(out / "reference_outputs.safetensors"), 2e-3, 2e-2)

    def test_training_batch_norm_drops_running_stats_with_a_note(self):
        out = self.capture("batchnorm_train")
        manifest = json.loads((out / "capture.json").read_text())
        self.assertTrue(any("running_mean" in note for note in manifest["notes"]), manifest["notes"])
        self.assertNotIn("running_mean", (out / "module.ir").read_text())

    def test_dropout_in_training_mode_draws_the_captures_masks_and_eval_mode_turns_it_off(self):
        out = self.capture("dropout_softmax")
        text = (out / "module.ir").read_text()
        check_ir(self, out / "module.ir")
        self.assertIn("random_uniform {seed = 0,", text)
        manifest = json.loads((out / "capture.json").read_text())
        self.assertTrue(any("dropout (p=0.2)" in note and "dropout_softmax.py:" in note for note in manifest["notes"]),
                        manifest["notes"])
        # The reference outputs are eager's under the capture's draws (random_ops.captured_random).
        train = self.evaluate(out)
        assert_close(self, train, _load(out / "reference_outputs.safetensors"), 1e-5, 1e-4)
        eval_out = self.capture("dropout_softmax", eval_mode=True)
        self.assertNotIn("random_uniform", (eval_out / "module.ir").read_text())
        evaluated = self.evaluate(eval_out)
        assert_close(self, evaluated, _load(eval_out / "reference_outputs.safetensors"), 1e-5, 1e-4)
        # The mask matters: training and eval mode part where elements were dropped.
        differ = [not bool((train[k] - evaluated[k]).abs().max() < 1e-3) for k in train]
        self.assertTrue(all(differ))

    def test_a_draw_that_export_drops_is_an_error(self):
        from agentcompile.errors import CaptureError
        from agentcompile.module_capture import capture_module
        problem = self.tmp / "dead_draw.py"
        problem.write_text(source("random_draws").replace("noise = torch.randn_like(x) + torch.rand_like(x)",
                                                          "noise = torch.randn_like(x)\n        unused = torch.rand_like(x)"))
        with self.assertRaises(CaptureError) as caught:
            capture_module(problem, self.tmp / "dead-draw", seed=0)
        message = str(caught.exception)
        self.assertIn("forward makes 4 random draws but the exported program keeps 3", message)
        self.assertIn("dead_draw.py:", message)
        self.assertIn("remove the unused draw", message)

    def test_captured_random_draws_what_the_capture_does(self):
        import torch
        from agentcompile.random_ops import captured_random
        x = torch.ones(256, 1024)
        with captured_random(torch, 3) as calls:
            first = torch.nn.functional.dropout(x, 0.25)
            again = torch.nn.functional.dropout(x, 0.25)
            self.assertIs(torch.nn.functional.dropout(x, 0.25, training=False), x)
            uniform = torch.rand_like(x)
            normal = torch.randn(512, 512)
            coins = torch.bernoulli(torch.full((256, 1024), 0.3))
        self.assertEqual(calls[0], 5)
        kept = (first != 0).float().mean().item()
        self.assertLess(abs(kept - 0.75), 0.005)  # 262144 draws: the standard error is 0.0008
        self.assertTrue(torch.equal(first[first != 0], torch.full_like(first[first != 0], 1 / 0.75)))
        self.assertFalse(torch.equal(first, again))  # the second draw has a seed of its own
        self.assertTrue(bool(((uniform >= 0) & (uniform < 1)).all()))
        self.assertLess(abs(uniform.mean().item() - 0.5), 0.005)
        self.assertLess(abs(normal.mean().item()), 0.01)  # 262144 normals: standard error 0.002
        self.assertLess(abs(normal.std().item() - 1), 0.01)
        self.assertLess(abs(coins.mean().item() - 0.3), 0.005)
        with captured_random(torch, 3):  # entered again: the same draws from the first
            self.assertTrue(torch.equal(torch.nn.functional.dropout(x, 0.25), first))

    def test_without_example_data_only_the_module_and_weights_are_written(self):
        out = self.capture("gemm_multiply_leakyrelu", example_data=False)
        self.assertEqual(sorted(p.name for p in out.iterdir()), ["capture.json", "module.ir", "weights.safetensors"])
        check_ir(self, out / "module.ir")

    def test_manifest_records_narrowed_integer_types(self):
        out = self.capture("argmax_argmin_max_min")
        outputs = json.loads((out / "capture.json").read_text())["functions"]["forward"]["outputs"]
        self.assertEqual(outputs[0], {"name": "output_0", "dtype": "i32", "shape": [3, 5], "torch_dtype": "int64"})

    def test_a_batch_dim_that_does_not_lead_every_value_stays_static(self):
        # argmax over dim 0 folds the batch away: validating at a smaller T would not test the same thing.
        out = self.capture("argmax_argmin_max_min")
        notes = json.loads((out / "capture.json").read_text())["notes"]
        self.assertTrue(notes[0].startswith("static shapes: ") and "T" in notes[0], notes)

    def test_batch_dim_becomes_T_with_the_captured_size(self):
        out = self.capture("relu")
        manifest = json.loads((out / "capture.json").read_text())
        self.assertEqual(manifest["functions"]["forward"]["symbols"], {"T": 16})
        self.assertIn("%x: f32[T, 64]", (out / "module.ir").read_text())
        self.assertTrue(manifest["notes"][0].startswith("dim 0 of x is the symbol T, captured at T=16"), manifest["notes"])

    def test_a_module_that_fixes_its_batch_size_is_captured_static_with_the_reason(self):
        problem = self.tmp / "fixed_batch.py"
        problem.write_text("import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n"
                           "    def forward(self, x):\n        return x.reshape(16 * 64) * 2.0\n"
                           "def get_inputs(): return [torch.randn(16, 64)]\ndef get_init_inputs(): return []\n")
        from agentcompile.module_capture import capture_module
        out = self.tmp / "fixed_batch"
        capture_module(problem, out)
        manifest = json.loads((out / "capture.json").read_text())
        self.assertNotIn("symbols", manifest["functions"]["forward"])
        self.assertTrue(manifest["notes"][0].startswith("static shapes: "), manifest["notes"])
        self.assertIn("%x: f32[16, 64]", (out / "module.ir").read_text())
        assert_close(self, self.evaluate(out), _load(out / "reference_outputs.safetensors"), 1e-6, 1e-6)

    def test_static_shapes_flag_keeps_every_dim(self):
        from agentcompile.module_capture import capture_module
        problem = self.tmp / "relu_static.py"
        problem.write_text(source("relu"))
        out = self.tmp / "relu-static"
        capture_module(problem, out, static_shapes=True)
        manifest = json.loads((out / "capture.json").read_text())
        self.assertNotIn("symbols", manifest["functions"]["forward"])
        self.assertEqual(manifest["notes"][0], "static shapes: --static-shapes")
        self.assertIn("%x: f32[16, 64]", (out / "module.ir").read_text())

    @unittest.skipUnless(cli_supports("capture"), "agentcompile is not built: its capture command is not tested")
    def test_agentcompile_capture_runs_the_python_tool(self):
        import subprocess
        problem = self.tmp / "relu.py"
        problem.write_text(source("relu"))
        out = self.tmp / "relu-cli"
        result = subprocess.run([str(build_dir() / "agentcompile"), "capture", "module", str(problem), "-o", str(out)],
                                capture_output=True, text=True)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertTrue(result.stdout.startswith("captured relu.py:Model"), result.stdout)
        check_ir(self, out / "module.ir")
        result = subprocess.run([str(build_dir() / "agentcompile"), "capture", "module", str(self.tmp / "nowhere.py"),
                                 "-o", str(out)], capture_output=True, text=True)
        self.assertEqual((result.returncode, result.stderr.strip()),
                         (1, f"capture: {self.tmp / 'nowhere.py'} does not exist"))

    @unittest.skipUnless(cli_supports("run-function"), "agentcompile run-function is not built: C++ comparison skipped")
    def test_cpp_reference_interpreter_matches_eager(self):
        for name in PROBLEMS:
            with self.subTest(name):
                out = self.capture(name)
                outputs = run_function_command(out, "forward", _load(out / "inputs.safetensors"))
                assert_close(self, outputs, _load(out / "reference_outputs.safetensors"), 1e-5, 1e-4)


if __name__ == "__main__":
    unittest.main()
