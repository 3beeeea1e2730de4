"""bench/kernelbench.py's record of a problem the capture refuses: a random reference other than dropout
(torch.rand_like in forward) is unsupported and counts as incorrect; any other refusal is a capture failure.
Dropout in training mode (KernelBench L2 66) is captured with the IR's random numbers and checked against
eager run with the same masks (random_ops.captured_dropout)."""
import importlib.util
import json
import pathlib
import tempfile
import unittest

from helpers import capture_cli, requires_torch

ROOT = pathlib.Path(__file__).resolve().parents[2]

RANDOM = """\
import torch

class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x + torch.randint_like(x, 4), dim=1)

def get_inputs(): return [torch.randn(4, 8)]
def get_init_inputs(): return []
"""


def harness():
    spec = importlib.util.spec_from_file_location("kernelbench_harness", ROOT / "bench" / "kernelbench.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@requires_torch
class KernelBenchHarnessTest(unittest.TestCase):
    def test_a_random_reference_is_unsupported_and_incorrect(self):
        with tempfile.TemporaryDirectory() as tmp:
            problem = pathlib.Path(tmp) / "noisy.py"
            problem.write_text(RANDOM)
            result = capture_cli("module", str(problem), "-o", str(pathlib.Path(tmp) / "out"))
        self.assertEqual(result.returncode, 1)
        kb = harness()
        entry = kb.capture_failure(result.stderr.strip())
        self.assertTrue(entry["unsupported"])
        self.assertFalse(entry["compiled"])
        self.assertTrue(entry["reason"].startswith("unsupported: the reference is random (aten.randint_like."), entry)
        self.assertIn("noisy.py:8 in forward", entry["reason"])
        summary = kb.summarize([{"level": 2, "problem": "99_noisy", "dtype": "f32", "correct": False, **entry}])
        self.assertEqual(summary["unsupported"], 1)
        self.assertEqual(summary["fast_0"], 0)

    def test_another_refusal_is_a_capture_failure(self):
        entry = harness().capture_failure("capture: aten.sort.default has no IR equivalent (sorter.py:5 in forward)")
        self.assertNotIn("unsupported", entry)
        self.assertTrue(entry["reason"].startswith("capture failed: "))

    def test_an_f16_pair_is_judged_against_f32_only_where_eager_f16_is_the_one_off(self):
        import torch

        class HalfAddingCumsum(torch.nn.Module):  # what torch's CUDA cumsum does in f16: it adds in f16
            def forward(self, x):
                if x.dtype != torch.float16:
                    return torch.cumsum(x, dim=1)
                out, acc = torch.empty_like(x), torch.zeros(x.shape[0], dtype=torch.float16)
                for j in range(x.shape[1]):
                    acc = acc + x[:, j]
                    out[:, j] = acc
                return out

        kb = harness()
        model = HalfAddingCumsum()
        torch.manual_seed(0)
        # 16384 values of mean 0.5: a running f16 sum stalls at 2048 (its spacing there is 2), the true one
        # reaches ~8192, far outside check_outputs' 1% tolerance whatever the draw.
        x = torch.rand(2, 16384).half()
        eager = model(x)
        accurate = torch.cumsum(x.float(), dim=1).half()  # an f32 accumulation, as agentcompile's scan
        ok, why = kb.check_outputs(torch, eager, accurate)
        self.assertFalse(ok)
        ok, note = kb.judge_by_f32_reference(torch, model, [x], eager, accurate, why)
        self.assertTrue(ok, note)
        self.assertIn("correct against eager in f32", note)
        wrong = accurate + 8
        ok, why = kb.judge_by_f32_reference(torch, model, [x], eager, wrong, kb.check_outputs(torch, eager, wrong)[1])
        self.assertFalse(ok)
        self.assertTrue(why.startswith("output 0: max abs error"), why)
        # Where eager f16 agrees with the f32 model, eager's verdict stands.
        plain = torch.nn.Identity()
        y = torch.rand(3, 5).half()
        ok, _ = kb.judge_by_f32_reference(torch, plain, [y], plain(y), y + 1, "output 0: max abs error 1")
        self.assertFalse(ok)


if __name__ == "__main__":
    unittest.main()


@requires_torch
class F64ErrorTest(unittest.TestCase):
    def test_errors_against_f64_tell_an_exact_result_from_a_coarse_one(self):
        import torch

        kb = harness()
        torch.manual_seed(0)
        model = torch.nn.Linear(256, 64)
        x = torch.randn(32, 256)
        with torch.no_grad():
            exact = model(x)
            coarse = exact + 1e-3 * exact.abs().max()  # a kernel off by 1e-3 of the output scale
            errors = kb.error_against_f64(torch, model, [x], {"eager": exact, "agentcompile": coarse})
        self.assertLess(errors["eager"], 1e-5)
        self.assertAlmostEqual(errors["agentcompile"], 1e-3, delta=1e-4)
        self.assertEqual(kb.f64_error_text(errors), f"{errors['eager']:.1e} / — / {errors['agentcompile']:.1e}")
        self.assertEqual(kb.f64_error_text(None), "—")

    def test_speedups_over_tf32_baselines_are_summarized_apart(self):
        kb = harness()
        entry = {"level": 2, "problem": "12_gemm", "dtype": "f32", "correct": True, "agentcompile_ms": 1.0,
                 "eager_ms": 2.0, "torch_compile_ms": 2.0, "eager_tf32_ms": 0.5, "torch_compile_tf32_ms": 0.4}
        self.assertAlmostEqual(kb.summarize([entry])["geomean_over_eager"], 2.0)
        over_tf32 = kb.summarize([entry], tf32_baselines=True)
        self.assertAlmostEqual(over_tf32["geomean_over_eager"], 0.5)
        self.assertAlmostEqual(over_tf32["geomean_over_compile"], 0.4)
        self.assertEqual(over_tf32["fast_1_eager"], 0)
        # A pair whose kernels use no TF32 has no TF32 baselines: its own stand in the TF32 summary.
        plain = {"level": 2, "problem": "19_relu", "dtype": "f32", "correct": True, "agentcompile_ms": 1.0,
                 "eager_ms": 4.0, "torch_compile_ms": 1.0}
        both = kb.summarize([entry, plain], tf32_baselines=True)
        self.assertAlmostEqual(both["geomean_over_eager"], 2 ** 0.5)  # sqrt(0.5 * 4.0)
        self.assertAlmostEqual(both["fast_1_eager"], 0.5)

    def test_integer_outputs_have_no_f64_error(self):
        import torch

        class Argmax(torch.nn.Module):
            def forward(self, x):
                return torch.argmax(x, dim=1)

        x = torch.randn(4, 8)
        out = Argmax()(x)
        self.assertIsNone(harness().error_against_f64(torch, Argmax(), [x], {"eager": out, "agentcompile": out}))


class Tf32SelectionTest(unittest.TestCase):
    def test_only_a_selected_3xtf32_kernel_counts(self):
        kb = harness()
        with tempfile.TemporaryDirectory() as tmp:
            art = pathlib.Path(tmp)
            region = {"candidates": [{"name": "cublas_mm_f32_x_3xtf32"}, {"name": "cublas_mm_f32_x"}],
                      "selection": [{"bucket": "forward", "kernel": "cublas_mm_f32_x"}]}
            (art / "metadata.json").write_text(json.dumps({"regions": [region]}))
            self.assertFalse(kb.uses_tf32(art))
            region["selection"].append({"bucket": "forward-t65", "kernel": "cublas_mm_f32_x_3xtf32"})
            (art / "metadata.json").write_text(json.dumps({"regions": [region]}))
            self.assertTrue(kb.uses_tf32(art))
            (art / "metadata.json").write_text("{truncated")
            self.assertFalse(kb.uses_tf32(art))
