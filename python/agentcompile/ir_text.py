"""The IR's text form, written from Python: a small module/function/node model and its printer.

The C++ parser (src/ir/parser.cpp) is the judge; this printer follows src/ir/printer.cpp line for line:
one declaration or node per line, names made of [A-Za-z0-9_.] bare after their sigil (anything else
quoted), attributes sorted by key as std::map orders them, `loc "..."` after the type. Attribute values
are ints, floats (repr of a Python float: shortest text that reads back exactly, always with '.', 'e',
inf or nan), strings, dim lists (`Dims`) and float lists (`Floats`, every element written as a float).
A dim is an int or one of the symbols "T" (tokens of this call) and "L" (cache rows).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

SYMBOLS = ("T", "L")
DTYPES = ("f32", "f16", "bf16", "i32", "bool")
FLOAT_DTYPES = ("f32", "f16", "bf16")
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_.]+\Z")


class Dims(tuple):
    """A dim-list attribute: `[T, 16]` (shapes, permutations, arange lengths)."""


class Floats(tuple):
    """A float-list attribute: a constant's elements, written so each reads back as the same double."""


@dataclass(frozen=True)
class TensorType:
    dtype: str
    shape: tuple  # of int | "T" | "L"

    def __str__(self) -> str:
        return f"{self.dtype}[{', '.join(str(d) for d in self.shape)}]"

    @property
    def rank(self) -> int:
        return len(self.shape)

    def is_static(self) -> bool:
        return all(isinstance(d, int) for d in self.shape)

    def static_elements(self) -> int:
        return math.prod(d for d in self.shape if isinstance(d, int))


@dataclass(eq=False)
class Value:
    name: str
    type: TensorType


@dataclass(eq=False)
class Node:
    op: str
    operands: list
    attrs: dict
    result: Value
    loc: str = ""


@dataclass
class Function:
    name: str
    args: list = field(default_factory=list)     # of Value
    nodes: list = field(default_factory=list)    # of Node, in execution order
    results: list = field(default_factory=list)  # of Value


@dataclass
class ParamDecl:
    name: str
    type: TensorType


@dataclass
class Module:
    name: str
    params: dict = field(default_factory=dict)  # name -> ParamDecl, in declaration order
    states: dict = field(default_factory=dict)  # name -> TensorType
    functions: list = field(default_factory=list)


def format_float(value: float) -> str:
    """The shortest text that the C++ lexer reads back as this exact double."""
    value = float(value)
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)  # Python's repr is already shortest-round-trip and always has '.' or 'e'


def quote(text: str) -> str:
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def is_plain_name(name: str) -> bool:
    return bool(_PLAIN_NAME.match(name))


def _sigil(sigil: str, name: str) -> str:
    return sigil + (name if is_plain_name(name) else quote(name))


def _plain_word(word: str) -> bool:
    return is_plain_name(word) and not word[0].isdigit() and word[0] != "."


def format_attr(value) -> str:
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format_float(value)
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, Dims):
        return "[" + ", ".join(str(d) for d in value) + "]"
    if isinstance(value, Floats):
        return "[" + ", ".join(format_float(v) for v in value) + "]"
    raise TypeError(f"attribute value {value!r} has no IR text form")


def _format_attrs(attrs: dict) -> str:
    # std::map<std::string, ...> orders keys bytewise, as sorted() does for ASCII keys.
    parts = [f"{k if _plain_word(k) else quote(k)} = {format_attr(attrs[k])}" for k in sorted(attrs)]
    return "{" + ", ".join(parts) + "}"


def format_node(node: Node) -> str:
    text = f"{_sigil('%', node.result.name)} = {node.op}"
    if node.operands:
        text += "(" + ", ".join(_sigil("%", v.name) for v in node.operands) + ")"
    if node.attrs:
        text += " " + _format_attrs(node.attrs)
    text += f" : {node.result.type}"
    if node.loc:
        text += f" loc {quote(node.loc)}"
    return text


def format_function(function: Function, indent: str = "  ") -> str:
    args = ", ".join(f"{_sigil('%', v.name)}: {v.type}" for v in function.args)
    results = ", ".join(str(v.type) for v in function.results)
    lines = [f"{indent}func {_sigil('@', function.name)}({args}) -> ({results}) {{"]
    body = indent + "  "
    lines += [body + format_node(node) for node in function.nodes]
    lines.append(body + "return " + ", ".join(_sigil("%", v.name) for v in function.results))
    lines.append(indent + "}")
    return "\n".join(lines) + "\n"


def format_module(module: Module) -> str:
    name = module.name if _plain_word(module.name) else quote(module.name)
    out = [f"module {name} {{\n"]
    out += [f"  param {_sigil('@', p.name)} : {p.type}\n" for p in module.params.values()]
    out += [f"  state {_sigil('@', n)} : {t}\n" for n, t in module.states.items()]
    out += [format_function(f) for f in module.functions]
    out.append("}\n")
    return "".join(out)
