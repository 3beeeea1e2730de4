"""What the capture refuses, and how it says so: one line naming the op or the cause and the source line,
never a Python traceback (unless --debug)."""
import pathlib
import tempfile
import unittest

from helpers import capture_cli, quiet_torch, requires_torch

UNCONVERTIBLE = """\
import torch

class Model(torch.nn.Module):
    def forward(self, x):
        values, _ = torch.sort(x, dim=1)
        return values

def get_inputs(): return [torch.randn(4, 8)]
def get_init_inputs(): return []
"""

UNTRACEABLE = """\
import torch

class Model(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x * 2
        return x

def get_inputs(): return [torch.randn(4, 8)]
def get_init_inputs(): return []
"""


@requires_torch
class CaptureErrorTest(unittest.TestCase):
    def setUp(self):
        quiet_torch()
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = pathlib.Path(self._tmp.name)

    def tearDown(self):
        self._tmp.cleanup()

    def problem(self, name: str, text: str) -> pathlib.Path:
        path = self.tmp / f"{name}.py"
        path.write_text(text)
        return path

    def test_op_without_conversion_names_the_op_and_the_line(self):
        result = capture_cli("module", str(self.problem("sorter", UNCONVERTIBLE)), "-o", str(self.tmp / "out"))
        self.assertEqual(result.returncode, 1)
        self.assertEqual(result.stderr.strip(),
                         "capture: aten.sort.default has no IR equivalent (sorter.py:5 in forward)")

    def test_untraceable_module_gives_torchs_reason_without_a_traceback(self):
        result = capture_cli("module", str(self.problem("branchy", UNTRACEABLE)), "-o", str(self.tmp / "out"))
        self.assertEqual(result.returncode, 1)
        self.assertTrue(result.stderr.startswith("capture: torch.export cannot trace branchy.py:Model:"), result.stderr)
        self.assertIn("data-dependent", result.stderr.lower())
        self.assertNotIn("Traceback", result.stderr)
        self.assertEqual(len(result.stderr.strip().splitlines()), 1)

    def test_debug_shows_the_traceback(self):
        result = capture_cli("--debug", "module", str(self.problem("sorter", UNCONVERTIBLE)), "-o", str(self.tmp / "o"))
        self.assertEqual(result.returncode, 1)
        self.assertIn("Traceback", result.stderr)

    def test_symbolic_shape_expression_is_refused(self):
        import torch
        from agentcompile.errors import CaptureError
        from agentcompile.exporting import export_core_aten
        from agentcompile.fx_to_ir import Converter, UserInput
        from agentcompile.ir_text import Module

        class Doubler(torch.nn.Module):
            def forward(self, x):  # x[T, 4] -> 2*T rows, which no IR dim can hold
                return torch.cat([x, x], dim=0) * 2

        program = export_core_aten(Doubler(), (torch.randn(3, 4),),
                                   dynamic_shapes=({0: torch.export.Dim("T", min=2, max=64)},))
        converter = Converter(program, Module("m"), "f", {"x": UserInput("x", symbols={0: "T"})})
        with self.assertRaises(CaptureError) as caught:
            converter.run()
        message = str(caught.exception)
        self.assertIn("2*s", message)
        self.assertIn("not T or L", message)
        self.assertIn("test_capture_errors.py:", message)

    def test_missing_class_and_file(self):
        path = self.problem("empty", "x = 1\n")
        result = capture_cli("module", str(path), "-o", str(self.tmp / "out"))
        self.assertEqual(result.stderr.strip(), "capture: empty.py defines no Model and no get_inputs")
        result = capture_cli("module", str(self.tmp / "nowhere.py"), "-o", str(self.tmp / "out"))
        self.assertIn("does not exist", result.stderr)

    def test_missing_packages_are_named_with_what_to_install(self):
        import importlib.util
        from unittest import mock
        from agentcompile import capture
        from agentcompile.errors import CaptureError
        real = importlib.util.find_spec
        with mock.patch("importlib.util.find_spec", lambda name: None if name == "torch" else real(name)):
            with self.assertRaisesRegex(CaptureError, r"^torch is not installed for .*: pip install torch$"):
                capture._check_installed("module")

    def test_hf_arguments_are_checked(self):
        result = capture_cli("hf", "--config", "c.json", "-o", str(self.tmp / "out"))
        self.assertIn("add --random-weights", result.stderr)
        result = capture_cli("hf", "-o", str(self.tmp / "out"))
        self.assertIn("give a checkpoint directory or --config", result.stderr)
        config = self.tmp / "config.json"
        config.write_text('{"model_type": "llama", "hidden_size": 8}')
        result = capture_cli("hf", "--config", str(config), "--random-weights", "--link-weights",
                             "-o", str(self.tmp / "o"))
        self.assertIn("--link-weights needs a checkpoint directory", result.stderr)


if __name__ == "__main__":
    unittest.main()
