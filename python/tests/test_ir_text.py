"""The IR writer: text the C++ parser reads back exactly (floats, names, attribute order), and type rules
that refuse what the C++ verifier would refuse."""
import math
import pathlib
import tempfile
import unittest

from helpers import check_ir  # (helpers also puts python/ on sys.path)

from agentcompile.ir_builder import FunctionBuilder
from agentcompile.ir_infer import IRTypeError
from agentcompile.ir_text import Dims, Module, ParamDecl, TensorType, format_float, format_module, quote


class FormatTest(unittest.TestCase):
    def test_floats_read_back_exactly(self):
        for value in (0.1, 1e-6, 1.0 / 3.0, 1e16, -2.5e-300, 5e-324, 3.4028234663852886e38, 0.0, -0.0, 7.0):
            text = format_float(value)
            self.assertTrue(any(c in text for c in ".e"), text)
            self.assertEqual(float(text), value)
        self.assertEqual(format_float(math.inf), "inf")
        self.assertEqual(format_float(-math.inf), "-inf")
        self.assertEqual(format_float(math.nan), "nan")

    def test_strings_escape_like_the_printer(self):
        self.assertEqual(quote('a "b" \\ c\n\t\x01'), '"a \\"b\\" \\\\ c\\n\\t\\x01"')

    def test_attributes_are_sorted_and_typed(self):
        module = Module("m")
        b = FunctionBuilder(module, "f")
        x = b.arg("x", TensorType("f32", ("T", 4)))
        b.loc = "model.py:3 in forward"
        y = b.op("slice", [x], {"start": -1, "length": 1, "axis": 1})
        b.result(y)
        module.functions.append(b.function)
        text = format_module(module)
        self.assertIn('%v.1 = slice(%x) {axis = 1, length = 1, start = -1} : f32[T, 1] loc "model.py:3 in forward"',
                      text)

    def test_names_that_are_not_plain_are_quoted(self):
        module = Module("19_relu")
        module.params["a b"] = ParamDecl("a b", TensorType("f16", (2,)))
        self.assertIn('module "19_relu" {', format_module(module))
        self.assertIn('param @"a b" : f16[2]', format_module(module))


class TypeRuleTest(unittest.TestCase):
    def builder(self):
        return FunctionBuilder(Module("m"), "f")

    def test_binary_ops_need_one_dtype(self):
        b = self.builder()
        x, y = b.arg("x", TensorType("f16", (4,))), b.arg("y", TensorType("f32", (4,)))
        with self.assertRaisesRegex(IRTypeError, "add: dtypes differ"):
            b.op("add", [x, y])

    def test_matmul_needs_equal_ranks(self):
        b = self.builder()
        x, w = b.arg("x", TensorType("f32", (2, 3, 4))), b.arg("w", TensorType("f32", (4, 5)))
        with self.assertRaisesRegex(IRTypeError, "equal rank"):
            b.op("matmul", [x, w])

    def test_reshape_keeps_symbols(self):
        b = self.builder()
        x = b.arg("x", TensorType("f32", ("T", 8)))
        self.assertEqual(b.reshape(x, (1, "T", 2, 4)).type.shape, (1, "T", 2, 4))
        with self.assertRaisesRegex(IRTypeError, "cannot reshape"):
            b.reshape(x, ("T", 4))

    def test_broadcast_stretches_only_ones(self):
        b = self.builder()
        x = b.arg("x", TensorType("bool", (1, "L")))
        self.assertEqual(b.broadcast(x, ("T", "L")).type.shape, ("T", "L"))
        with self.assertRaisesRegex(IRTypeError, "cannot broadcast"):
            b.broadcast(x, (3, 4))


class CheckerTest(unittest.TestCase):
    def test_a_module_of_every_attribute_kind_verifies_and_round_trips(self):
        module = Module("m")
        module.params["w"] = ParamDecl("w", TensorType("bf16", (4, 8)))
        module.states["kv.0.k"] = TensorType("bf16", ("L", 2, 4))
        b = FunctionBuilder(module, "prefill")
        tokens = b.arg("tokens", TensorType("i32", ("T",)))
        w = b.op("weight", [], {"name": "w"}, name="w")
        rows = b.op("embedding", [w, tokens])
        table = b.const_values([1.0, 0.5, math.inf, -0.0], "bf16", (4,))
        scaled = b.op("mul", [b.reshape(rows, ("T", 2, 4)), table])
        positions = b.op("arange", [], {"dtype": "i32", "start": 0.0, "step": 1.0, "length": Dims(("T",))})
        cache = b.op("index_copy", [scaled, positions], {"state": "kv.0.k", "axis": 0})
        nan = b.const(math.nan, "bf16")
        b.result(b.op("add", [b.op("reduce_sum", [cache], {"axis": 0, "keepdim": 0}), nan]))
        module.functions.append(b.function)
        with tempfile.TemporaryDirectory() as tmp:
            path = pathlib.Path(tmp) / "module.ir"
            path.write_text(format_module(module))
            check_ir(self, path)


if __name__ == "__main__":
    unittest.main()
