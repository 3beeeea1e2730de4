"""The strings, conversations and NFC cases python/make_tokenizer_fixtures.py feeds the reference tokenizers.

Hand-picked cases for each thing a byte-level BPE tokenizer can get wrong (scripts, combining marks and
their NFC/NFD forms, emoji sequences, white-space runs, digits, contractions, special tokens written in
text, invalid UTF-8), then seeded random mixtures of the same material. Deterministic.
"""
from __future__ import annotations

import random
import unicodedata

ENGLISH = [
    "The quick brown fox jumps over the lazy dog.",
    "Hello, world!",
    "It was the best of times, it was the worst of times.",
    "Tokenizers split text into pieces before the model ever sees it.",
    "Dr. Smith's office (Room 4B) opens at 9:30 a.m. on weekdays.",
    "She said, \"Don't worry -- we'll fix it tomorrow.\"",
    "E-mail me at someone@example.com or visit https://example.org/path?q=1&r=2#frag.",
    "Prices rose 3.5% in Q3 2024; analysts expected 2.9%.",
    "ALL CAPS SENTENCE WITH SHOUTING!!!",
    "mIxEd CaSe WoRdS aRe OdD",
    "Well... that's unexpected?!",
    "A list: apples, oranges; bananas -- and pears.",
    "The year 1999 ended, and 2000 began at 00:00:00 UTC.",
    "   leading spaces and trailing spaces   ",
    "Tabs\tbetween\twords\tand\ttrailing\t",
    "Line one\nLine two\n\nLine four after a blank line\n",
    "Windows line endings\r\nare\r\ndifferent\r\n",
    "Mac classic\rcarriage\rreturns",
    "snake_case_identifier and camelCaseIdentifier and PascalCase",
    "#hashtag @mention $dollar %percent ^caret &amp *star",
    "Quotes: 'single' \"double\" `backtick` \u2018curly\u2019 \u201ccurly\u201d \u00abguillemets\u00bb",
    "Dashes: - \u2013 \u2014 and ellipsis \u2026",
    "Math: 2 + 2 = 4, x^2 - y^2 = (x - y)(x + y), \u221a2 \u2248 1.414, \u2211 \u222b \u221e \u2260 \u2264 \u2265",
    "Currencies: $100, \u20ac50, \u00a330, \u00a51000, \u20b9500, \u20bf0.01",
]

CONTRACTIONS = [
    "I'm", "you're", "he's", "she'd", "we've", "they'll", "it's", "can't", "won't", "shouldn't've",
    "I'M", "YOU'RE", "IT'S", "We'Re", "THEY'LL", "I'D", "We'VE",
    "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Ll", "'D",
    "John's car", "the dogs' bowls", "rock'n'roll", "o'clock", "y'all'd've",
    "it\u2019s curly", "don\u2019t", "'\u017f", "x'\u017ft", "' s", "''s", "'''", "'", "''",
    "'\u212a", "'\u0130", "l'homme", "aujourd'hui", "'123", "'\U0001F600",
]

MULTILINGUAL = [
    "\u4eca\u5929\u5929\u6c14\u5f88\u597d\uff0c\u6211\u4eec\u53bb\u516c\u56ed\u6563\u6b65\u5427\u3002",
    "\u673a\u5668\u5b66\u4e60\u662f\u4eba\u5de5\u667a\u80fd\u7684\u4e00\u4e2a\u5206\u652f\u3002",
    "\u65e5\u672c\u8a9e\u306e\u6587\u7ae0\u3067\u3059\u3002\u30ab\u30bf\u30ab\u30ca\u3068\u3072\u3089\u304c\u306a\u3002",
    "\u6771\u4eac\u30bf\u30ef\u30fc\u306f333\u30e1\u30fc\u30c8\u30eb\u3067\u3059\u3002",
    "\ud55c\uad6d\uc5b4 \ubb38\uc7a5\uc744 \ud1a0\ud070\ud654\ud569\ub2c8\ub2e4.",
    "\u0627\u0644\u0633\u0644\u0627\u0645 \u0639\u0644\u064a\u0643\u0645 \u0648\u0631\u062d\u0645\u0629 \u0627\u0644\u0644\u0647",
    "\u0627\u064e\u0644\u0652\u0639\u064e\u0631\u064e\u0628\u0650\u064a\u064e\u0651\u0629\u064f \u0645\u0639 \u0627\u0644\u062a\u0634\u0643\u064a\u0644",
    "\u0627\u0644\u0639\u062f\u062f \u0661\u0662\u0663 \u0648 456",
    "\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd",
    "\u05d1\u05bc\u05b0\u05e8\u05b5\u05d0\u05e9\u05b4\u05c1\u05d9\u05ea",
    "\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e",
    "\u0939\u093f\u0928\u094d\u0926\u0940 \u092e\u0947\u0902 \u0915\u094d\u0937 \u0924\u094d\u0930 \u091c\u094d\u091e \u0936\u094d\u0930\u0940",
    "\u0915\u094d\u200d\u0937 \u0915\u094d\u200c\u0937",
    "\u0986\u09ae\u09bf \u09ac\u09be\u0982\u09b2\u09be\u09af\u09bc \u0995\u09a5\u09be \u09ac\u09b2\u09bf",
    "\u0bb5\u0ba3\u0b95\u0bcd\u0b95\u0bae\u0bcd \u0ba4\u0bae\u0bbf\u0bb4\u0bcd",
    "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35\u0e04\u0e23\u0e31\u0e1a \u0e20\u0e32\u0e29\u0e32\u0e44\u0e17\u0e22",
    "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440! \u041a\u0430\u043a \u0434\u0435\u043b\u0430?",
    "\u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac: \u1f08\u03c1\u03c7\u1f74 \u03c3\u03bf\u03c6\u03af\u03b1\u03c2",
    "\u0130stanbul \u0131\u015f\u0131k \u00c7\u00d6\u011e\u00dc\u015e",
    "Stra\u00dfe, GRO\u1e9e, \u00e4\u00f6\u00fc \u00c4\u00d6\u00dc",
    "Fran\u00e7ais: \u00e9l\u00e8ve, \u00e7a, c\u0153ur, No\u00ebl",
    "Polski: \u017c\u00f3\u0142\u0107 g\u0119\u015bl\u0105 ja\u017a\u0144",
    "\u12a0\u121b\u122d\u129b \u134a\u12f0\u120d",
    "\u10e5\u10d0\u10e0\u10d7\u10e3\u10da\u10d8 \u10d4\u10dc\u10d0",
    "\u0540\u0561\u0575\u0565\u0580\u0565\u0576",
    "\u182e\u1823\u1829\u182d\u1823\u182f \u1828\u180e\u1822",
    "\u0f56\u0f7c\u0f51\u0f0b\u0f66\u0f90\u0f51\u0f0d",
    "\u1797\u17b6\u179f\u17b6\u1781\u17d2\u1798\u17c2\u179a",
    "\u1019\u103c\u1014\u103a\u1019\u102c\u1018\u102c\u101e\u102c",
    "\u0dc3\u0dd2\u0d82\u0dc4\u0dbd",
    "Ti\u1ebfng Vi\u1ec7t c\u00f3 nhi\u1ec1u d\u1ea5u",
    "Ti\u00ea\u0301ng Vi\u00ea\u0323t co\u0301 nhi\u00ea\u0300u d\u00e2\u0301u",
    "\U00020000\U0002A6D6 \U0002B740 CJK extensions",
    "\u2f00\u2f01 Kangxi radicals, \u3300 \u32ff squared",
    "\uff21\uff22\uff23 \uff11\uff12\uff13 fullwidth",
    "\u2460\u2461\u2462 circled, \u2160\u2161\u216b Roman",
]

NFC_NFD_WORDS = [
    "caf\u00e9", "na\u00efve", "\u00c5ngstr\u00f6m", "r\u00e9sum\u00e9", "\u00fcber", "ma\u00f1ana", "\u00e7a va",
    "\ud55c\uad6d\uc5b4", "\uac01", "\u1e9b\u0323", "\u00c5", "\u01fa", "\u1ec7", "\u1e69", "\u0390",
    "\u0958", "\u2126", "\u212b", "\u00e9\u0323", "\u1e17", "\uac00\u11a8",
]

CODE = [
    "def fibonacci(n):\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)\n",
    "for (int i = 0; i < n; ++i) {\n\tsum += a[i] * b[i];\n}\n",
    "template <typename T>\nstd::vector<T> concat(const std::vector<T>& a, const std::vector<T>& b);\n",
    "const add = (a, b) => a + b;\nconsole.log(`sum: ${add(1, 2)}`);\n",
    "{\"name\": \"agentcompile\", \"version\": \"0.1.0\", \"tags\": [\"llm\", \"gpu\"], \"nested\": {\"a\": null}}",
    "<html>\n  <body>\n    <div class=\"main\" id='x'>Hello &amp; welcome</div>\n  </body>\n</html>\n",
    "SELECT id, name FROM users WHERE age >= 18 AND name LIKE 'A%' ORDER BY id DESC;",
    "grep -rn \"TODO\" src/ | awk -F: '{print $1}' | sort | uniq -c | sort -rn > todo.txt 2>&1",
    "fn main() {\n    let v: Vec<u32> = (0..10).map(|x| x * x).collect();\n    println!(\"{:?}\", v);\n}\n",
    "if __name__ == \"__main__\":\n\tmain()\n",
    "x=1;y=2;z=x+y*3-4/5%6**7//8",
    "#include <stdio.h>\nint main(void){printf(\"%d\\n\",42);return 0;}",
    "    indented by four\n        by eight\n\t\tby two tabs\n",
    "| col a | col b |\n|-------|-------|\n| 1     | 2     |\n",
    "regex: ^[a-zA-Z0-9._%+-]+@[a-zA-Z0-9.-]+\\.[a-zA-Z]{2,}$",
    "a->b; c::d; e=>f; g<=h; i!=j; k===l; m??n; o?.p; q||r; s&&t; u<<v; w>>x;",
    "// comment\n/* block\n   comment */\n# shell comment\n-- sql comment\n",
    "base64: QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=",
    "0xDEADBEEF 0b1010 0o777 1_000_000 3.14e-10 6.022E23",
    "    \n    \n\n\n    return\n",
]

WHITESPACE = [
    " ", "  ", "   ", "    ", " " * 8, " " * 17, "\t", "\t\t", "\n", "\n\n", "\n\n\n", "\r\n", "\r\n\r\n", "\r",
    " \n", "\n ", " \n ", "\t\n", "\n\t", " \t \t ", "a  b", "a   b", "a\n\nb", "a \n b", "a\t\tb",
    "word ", "word  ", "  word", "word\n", "\nword", "  \n  word  \n  ", "x" + " " * 30 + "y",
    "\u00a0", "a\u00a0b", "a \u00a0b", "\u3000x\u3000", "\u2003em\u2002en\u2009thin", "\u200b", "a\u200bb",
    "\u2028line\u2029para", "\u0085next", "\u180e", "a\u180eb", "\ufeffbom", "a\u00ad b", "\u000b\u000c",
    "\u001c\u001d\u001e\u001f", "\u202f\u205f", "end with spaces    ", "\n\n\nmany\n\n\n\nnewlines\n\n",
    "mixed \t\n\r\n \u00a0\u3000 white", "\u1680ogham",
]

NUMBERS = [
    "0", "7", "12", "123", "1234", "12345", "123456789", "12345678901234567890", "3.14159", "-42", "+7",
    "1,234,567", "1.234.567,89", "1e-10", "2^64", "0x1F", "50%", "$3.99", "3/4", "10:45", "2024-01-31",
    "\u0661\u0662\u0663", "\u0967\u0968\u0969", "\uff11\uff12\uff13", "\u00b2\u00b3", "\u00bd\u00be", "\u216b",
    "\u2460", " 1", "  1", "   12", "a 1", "a  1", "x  12 y   345", "1 2 3  4   5", "\t1\n2", "version 2.0.1",
    "call 555-0100", "IPv4 192.168.0.1", "123abc456", "abc123def", "\U0001D7D8\U0001D7D9",
]

EMOJI = [
    "\U0001F600", "\U0001F44D\U0001F3FD", "\U0001F468\u200d\U0001F469\u200d\U0001F467\u200d\U0001F466",
    "\U0001F3F3\ufe0f\u200d\U0001F308", "\U0001F1FA\U0001F1F8\U0001F1EF\U0001F1F5", "1\ufe0f\u20e3",
    "\u2764\ufe0f", "\U0001F9D1\U0001F3FB\u200d\U0001F4BB", "emoji\U0001F600text", "\U0001F600 \U0001F600  \U0001F600",
    "\U0001F602\U0001F602\U0001F602", "\u263a\ufe0e \u263a\ufe0f", "\U0001F469\u200d\u2764\ufe0f\u200d\U0001F48B\u200d\U0001F468",
    "\U0001FAE0\U0001FAE8", "I \u2764\ufe0f NY", "\U0001F4A9!", "#\ufe0f\u20e3*\ufe0f\u20e3",
    "\U000E0067\U000E0062\U000E0065\U000E006E\U000E0067\U000E007F", "\U0001F3F4\U000E0067\U000E0062\U000E0073\U000E0063\U000E0074\U000E007F",
]

SPECIAL_TOKENS = [
    "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>", "<tool_call>", "</tool_call>",
    "<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>",
    "<|reserved_special_token_5|>", "<|finetune_right_pad_id|>", "<|python_tag|>", "<repo_name>", "<file_sep>",
    "<jupyter_code>", "<|fim_prefix|>", "<|vision_pad|>",
]

SPECIAL_IN_TEXT = [
    "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n",
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
    " <|im_end|> ", "a<|im_end|>b", "<|im_end|><|im_end|>", "<<|im_end|>>", "<|im_", "<|im_end", "im_end|>",
    "<|im_end |>", "< |im_end|>", "<think>\nreasoning\n</think>\n\nanswer", "text <|endoftext|> more text",
    "<|eot_id|><|eot_id|> <|eot_id|>", "<|reserved_special_token_250|>", "<|reserved_special_token_999|>",
    "<repo_name>agentcompile<file_sep>main.cpp", "  <think>  ", "\n<|im_start|>\n", "<|endoftext|>\U0001F600",
    "<|im_start|><|im_start|>system", "x<tool_call>{\"a\":1}</tool_call>y",
]

INVALID_UTF8 = [
    b"\x80", b"\xbf", b"\x80\x80\x80", b"\xc0\xaf", b"\xc1\xbf", b"\xc2", b"\xc2\x41", b"\xc3\x28", b"\xe0\x80\x80",
    b"\xe0\xa0", b"\xe0\xa0\x41", b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xed\x9f\xbf", b"\xf0\x80\x80\x80",
    b"\xf0\x9f\x98", b"\xf0\x9f\x98A", b"\xf0\x9fA\x80", b"\xf4\x90\x80\x80", b"\xf4\x8f\xbf\xbf", b"\xf5\x80\x80\x80",
    b"\xf8\x88\x80\x80\x80", b"\xfc\x84\x80\x80\x80\x80", b"\xfe", b"\xff", b"\xff\xfe", b"\xfe\xff\x00",
    b"abc\xe4\xb8", b"\xe4\xb8\xe4\xb8\xad", b"hello\x80world", b"caf\xe9", b"\xe9t\xe9", b"\xc3\xa9\xc3",
    b"<|im_end|>\xff", b"\xff<|im_end|>\xfe", b"<|im_\xffend|>", b"\x00\x01\x02 control \x7f", b"a\x00b",
    b"\xef\xbb\xbfBOM", b"\xef\xbf\xbd real replacement", b"\xe2\x80\xa8\xe2\x80", b"  \x80  ", b"\n\xff\n",
    b"123\xff456", b"\xf0\x9f\x98\x80\xf0\x9f\x98", b"\xc2\xa0\xc2", b"'\xffs", b"\xed\xb2\x80\xed\xa0\x80",
]

# Small pools for the random mixtures.
WORDS = {
    "en": ["the", "model", "token", "running", "quickly", "GPU", "kernel", "attention", "is", "a", "of", "Hello"],
    "zh": ["\u6211\u4eec", "\u6a21\u578b", "\u8ba1\u7b97", "\u7684", "\u4e2d\u6587", "\u5206\u8bcd"],
    "ja": ["\u3053\u3093\u306b\u3061\u306f", "\u30c8\u30fc\u30af\u30f3", "\u65e5\u672c", "\u3067\u3059"],
    "ko": ["\uc548\ub155\ud558\uc138\uc694", "\ud1a0\ud070", "\ubaa8\ub378"],
    "ar": ["\u0645\u0631\u062d\u0628\u0627", "\u0646\u0645\u0648\u0630\u062c", "\u0643\u0644\u0645\u0629"],
    "hi": ["\u0928\u092e\u0938\u094d\u0924\u0947", "\u092e\u0949\u0921\u0932", "\u0936\u092c\u094d\u0926"],
    "ru": ["\u043f\u0440\u0438\u0432\u0435\u0442", "\u043c\u043e\u0434\u0435\u043b\u044c", "\u0441\u043b\u043e\u0432\u043e"],
    "de": ["Gr\u00fc\u00dfe", "Stra\u00dfe", "M\u00e4dchen", "\u00dcbung"],
    "vi": ["Vi\u1ec7t", "ti\u1ebfng", "ng\u01b0\u1eddi"],
}
PUNCTUATION = list(".,;:!?-()[]{}<>\"'/\\|@#$%^&*_+=~`") + ["...", "--", "->", "::", "\u2014", "\u3002", "\uff0c", "\u00bf", "\u00a1"]
SPACES = [" ", " ", " ", "  ", "\n", "\n\n", "\t", "\r\n", " \n", "\u3000", "\u00a0", "   "]
COMBINING = ["\u0300", "\u0301", "\u0302", "\u0303", "\u0308", "\u0323", "\u0327", "\u031b", "\u0345", "\u05b4", "\u093c"]


def nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


def random_mixture(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(1, 24)):
        r = rng.random()
        if r < 0.45:
            lang = rng.choice(list(WORDS))
            word = rng.choice(WORDS[lang])
            if rng.random() < 0.1:
                word = word.upper() if rng.random() < 0.5 else word.capitalize()
            if rng.random() < 0.08:
                word = nfd(word)
            parts.append(word)
        elif r < 0.6:
            parts.append(rng.choice(SPACES))
        elif r < 0.72:
            parts.append(rng.choice(PUNCTUATION))
        elif r < 0.8:
            parts.append(str(rng.randint(0, 10 ** rng.randint(1, 9))))
        elif r < 0.85:
            parts.append(rng.choice(EMOJI))
        elif r < 0.88:
            parts.append(rng.choice(SPECIAL_TOKENS))
        elif r < 0.92:
            parts.append(rng.choice(CONTRACTIONS))
        elif r < 0.96:
            parts.append(rng.choice("aeiouAEIOU") + rng.choice(COMBINING) + (rng.choice(COMBINING) if rng.random() < 0.3 else ""))
        else:
            parts.append(chr(rng.choice([rng.randint(0x20, 0x7E), rng.randint(0xA0, 0x2FFF), rng.randint(0x3000, 0x9FFF),
                                         rng.randint(0xAC00, 0xD7A3), rng.randint(0x1F300, 0x1FAFF)])))
    return "".join(parts)


def random_bytes_case(rng: random.Random) -> bytes:
    if rng.random() < 0.5:
        return bytes(rng.randint(0, 255) for _ in range(rng.randint(1, 40)))
    text = bytearray(random_mixture(rng).encode("utf-8"))
    for _ in range(rng.randint(1, 3)):  # cut or corrupt a few bytes
        if not text:
            break
        i = rng.randrange(len(text))
        if rng.random() < 0.5:
            del text[i]
        else:
            text[i] = rng.randint(0x80, 0xFF)
    return bytes(text)


def build_corpus() -> list[tuple[str, bytes]]:
    rng = random.Random(20240917)
    cases: list[tuple[str, bytes]] = [("empty", b"")]

    def add(category: str, items) -> None:
        for item in items:
            cases.append((category, item if isinstance(item, bytes) else item.encode("utf-8")))

    add("english", ENGLISH)
    add("contractions", CONTRACTIONS)
    add("multilingual", MULTILINGUAL)
    add("nfc", NFC_NFD_WORDS)
    add("nfd", [nfd(w) for w in NFC_NFD_WORDS] + [nfd(s) for s in MULTILINGUAL[:12]])
    add("nfc", ["e\u0301\u0323", "e\u0323\u0301", "a\u0308\u0301", "\u00c5\u0301", "\u1100\u1161\u11a8",
                "\u1100\u1161", "\u0041\u030a\u0327", "\u0041\u0327\u030a", "o\u031b\u0323", "\u0344", "\u0f73"])
    add("code", CODE)
    add("whitespace", WHITESPACE)
    add("numbers", NUMBERS)
    add("emoji", EMOJI)
    add("special_tokens", SPECIAL_TOKENS)
    add("special_in_text", SPECIAL_IN_TEXT)
    add("special_in_text", [" " + s for s in SPECIAL_TOKENS] + [s + " " for s in SPECIAL_TOKENS] +
        ["\n" + s + "\n" for s in SPECIAL_TOKENS])
    add("invalid_utf8", INVALID_UTF8)
    # Each English sentence and code snippet with a space, newline or digit run in front.
    add("prefixed", [p + s for s in ENGLISH[:12] + CODE[:6] for p in (" ", "\n", "  ", "42 ")])
    add("long", [
        " ".join(ENGLISH) * 4,
        "a" * 5000,
        "ab" * 2000,
        " " * 1000 + "x",
        "\n" * 300,
        "".join(chr(0x4E00 + (i * 37) % 20000) for i in range(1500)),
        "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") for _ in range(3000)),
        "\U0001F600" * 400,
        "1234567890" * 200,
        "\n".join(CODE) * 3,
        "e\u0301" * 800,
    ])
    for _ in range(1300):
        add("random_mixture", [random_mixture(rng)])
    for _ in range(300):
        cases.append(("random_invalid_utf8", random_bytes_case(rng)))
    for _ in range(150):  # random code points from all planes (no surrogates)
        cps = []
        while len(cps) < rng.randint(1, 16):
            cp = rng.randint(0x20, 0x10FFFF) if rng.random() < 0.3 else rng.randint(0x20, 0x2FFFF)
            if not (0xD800 <= cp <= 0xDFFF):
                cps.append(chr(cp))
        add("random_code_points", ["".join(cps)])
    return cases


def build_nfc_cases() -> list[list[str]]:
    rng = random.Random(7)
    decomposable = [chr(cp) for cp in range(0x110000)
                    if not 0xD800 <= cp <= 0xDFFF and unicodedata.decomposition(chr(cp))
                    and not unicodedata.decomposition(chr(cp)).startswith("<")]
    marks = [chr(cp) for cp in range(0x300, 0x3000) if unicodedata.combining(chr(cp))]
    jamo = [chr(cp) for cp in list(range(0x1100, 0x1113)) + list(range(0x1161, 0x1176)) + list(range(0x11A8, 0x11C3))]
    cases = []
    for i in range(0, len(decomposable), 8):  # every canonically decomposable code point, NFC and NFD
        chunk = "".join(decomposable[i:i + 8])
        cases.append(chunk)
        cases.append(nfd(chunk))
    pool = decomposable + marks * 3 + jamo * 2 + list("aeiouAEIOU \u00e0") + [chr(cp) for cp in range(0xAC00, 0xAC40)]
    for _ in range(1500):
        cases.append("".join(rng.choice(pool) for _ in range(rng.randint(1, 12))))
    return [[text, unicodedata.normalize("NFC", text)] for text in cases]


def conversations() -> list[list[dict]]:
    return [
        [{"role": "user", "content": "Hello!"}],
        [{"role": "system", "content": "You are a terse assistant."}, {"role": "user", "content": "What is 2+2?"}],
        [{"role": "user", "content": "Name a prime."}, {"role": "assistant", "content": "7"},
         {"role": "user", "content": "Another one?"}],
        [{"role": "system", "content": "Answer in French."}, {"role": "user", "content": "Good morning"},
         {"role": "assistant", "content": "Bonjour"}, {"role": "user", "content": "Good night"}],
        [{"role": "user", "content": "Think first."},
         {"role": "assistant", "content": "<think>\nThe user wants thinking.\n</think>\n\nDone."},
         {"role": "user", "content": "Again."}],
        [{"role": "user", "content": "Why?"},
         {"role": "assistant", "content": "<think>\nreason one\n\n</think>\n\nBecause."}],
        [{"role": "user", "content": "  padded content \n\n"}, {"role": "assistant", "content": " spaced answer "},
         {"role": "user", "content": "\tand tabs\t"}],
        [{"role": "user", "content": "\u4f60\u597d\uff0c\u4e16\u754c \U0001F600"}],
        [{"role": "system", "content": "sys"}, {"role": "user", "content": "q1"}, {"role": "assistant", "content": "a1"},
         {"role": "user", "content": "q2"}, {"role": "assistant", "content": "a2"}, {"role": "user", "content": "q3"}],
        [{"role": "user", "content": "Weather?"}, {"role": "assistant", "content": "Let me check."},
         {"role": "tool", "content": "{\"temp\": 21}"}, {"role": "tool", "content": "{\"sky\": \"clear\"}"},
         {"role": "assistant", "content": "21 degrees and clear."}],
        [{"role": "user", "content": "first"}, {"role": "user", "content": "second"}],
        [{"role": "assistant", "content": "I speak first."}, {"role": "user", "content": "ok"}],
        [{"role": "user", "content": "Final answer only."}, {"role": "assistant", "content": "42"}],
    ]
