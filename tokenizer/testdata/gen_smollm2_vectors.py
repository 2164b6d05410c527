#!/usr/bin/env python3
"""Generates smollm2.vectors.json: SmolLM2-135M-Instruct token ids computed by Hugging Face's
`tokenizers` (pip install tokenizers), an implementation independent of pagoda's, from the
model's tokenizer.json in testdata/models/smollm2-135m-instruct-tokenizer. Ids are without added BOS/EOS; special-token texts
in the input are recognised (the library's default), which is pagoda's
Encode(text, addSpecial=false, parseSpecial=true).

Run from anywhere: python3 tokenizer/testdata/gen_smollm2_vectors.py
"""
import json
import os

from tokenizers import Tokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
TOKENIZER_JSON = os.path.join(
    HERE, "..", "..", "testdata", "models", "smollm2-135m-instruct-tokenizer", "tokenizer.json")

INPUTS = [
    "",
    " ",
    "   ",
    "\n",
    "\n\n\n",
    "\t",
    "Hello world",
    " Hello world",
    "Hello,   world!  ",
    "The quick brown fox jumps over the lazy dog.",
    "I'm sure you'll love it; they've said we'd DON'T WON'T.",
    "Numbers: 1234567 and 3.14159, -42, 1e-5, $1,000,000.00",
    "0123456789",
    "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
    "for (int i = 0; i < 10; ++i) { printf(\"%d\\n\", i); }",
    "func main() {\n\tfmt.Println(\"héllo\")\n}\n",
    '{"key": [1, 2, 3], "nested": {"a": null, "b": true}}',
    "<div class=\"x\">Hello &amp; welcome</div>",
    "https://example.com/path?query=1&other=two#frag",
    "Multiple    spaces   and\t\ttabs\n\n\nand newlines\r\nCRLF",
    "   leading and trailing spaces   ",
    "Ünïcödé: naïve café, Straße, Ærø, œuvre",
    "Русский текст: привет, мир!",
    "中文：我想在苹果工作。日本語：こんにちは世界",
    "한국어 문장입니다. العربية: مرحبا بالعالم. हिन्दी: नमस्ते",
    "Emoji: 😀👍🏽 🚀 (rocket) 😶‍🌫️ family 👨‍👩‍👧‍👦 ✅",
    "Math: ∑ᵢ xᵢ² ≤ ∞, ∀x ∈ ℝ, α+β=γ",
    "Combining: e\u0301 a\u0308 n\u0303",
    "No-break\u00a0space and\u2028line separator and\u3000ideographic space",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
    "text<|endoftext|>more text",
    "<|im_start|<|im_end|>>< |im_start| >",
    "<repo_name>pagoda<file_sep>main.go",
    "!!!!!!! ??? ... --- ___ ***",
    "'s 't 're 've 'm 'll 'd ' era",
    "camelCaseIdentifier snake_case_identifier SCREAMING_CASE",
    "Ⅻ ½ ² ³ ① ٣ ४",
    "a" * 300,
    "word " * 40,
    "Line one\nLine two\n\n  Indented line\n\t\tTabbed line",
]


def main():
    tok = Tokenizer.from_file(TOKENIZER_JSON)
    cases = []
    for text in INPUTS:
        ids = tok.encode(text, add_special_tokens=False).ids
        cases.append({"text": text, "ids": ids})
    out = {
        "generator": "tokenizers " + __import__("tokenizers").__version__
                     + ", Tokenizer.encode(text, add_special_tokens=False)",
        "tokenizer": "testdata/models/smollm2-135m-instruct-tokenizer/tokenizer.json",
        "cases": cases,
    }
    path = os.path.join(HERE, "smollm2.vectors.json")
    with open(path, "w", encoding="utf-8") as f:
        # One case per line keeps diffs readable.
        f.write("{\n")
        for key in ("generator", "tokenizer"):
            f.write(" %s: %s,\n" % (json.dumps(key), json.dumps(out[key], ensure_ascii=False)))
        f.write(' "cases": [\n')
        lines = [json.dumps(c, ensure_ascii=False) for c in cases]
        f.write(",\n".join("  " + line for line in lines))
        f.write("\n ]\n}\n")
    print("wrote", len(cases), "cases to", path)


if __name__ == "__main__":
    main()
