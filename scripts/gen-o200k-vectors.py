#!/usr/bin/env python3
"""Generates tokenizer/testdata/o200k.vectors.json: llama.cpp's token ids for a set of texts on
gpt-oss's o200k_harmony vocabulary (byte-level BPE, pre-tokenizer "gpt-4o", 201088 tokens), the
reference that tokenizer's TestO200kHarmonyVectors checks pagoda against. Test data only; it
needs Python 3's standard library, Go and llama.cpp's llama-tokenize.

    make vocab                                     # o200k_base ranks into the model cache
    scripts/build-llama-cpp.sh                     # llama.cpp (llama-cpp-python 0.3.36's copy)
    (cd $PAGODA_CACHE/llama.cpp-0.3.36/build && ninja llama-tokenize)
    python3 scripts/gen-o200k-vectors.py [--llama-tokenize PATH] [--out PATH]

The vocabulary-only GGUF is written by the tokenizer test helper (TestWriteHarmonyGGUF with
PAGODA_WRITE_HARMONY_GGUF set): o200k_base's ranks as tokens, merges derived from the ranks as
llama.cpp's converter derives them, harmony's special tokens; so llama.cpp and pagoda read the
same file. Each text is tokenized without BOS, with and without special-token parsing
(llama-tokenize --ids --no-bos [--no-parse-special]).
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.environ.get("PAGODA_CACHE", os.path.expanduser("~/.cache/pagoda"))
MODELS = os.environ.get("PAGODA_MODELS", os.path.join(CACHE, "models"))

TEXTS = [
    "Hello world", " Hello world", "Hello World", "hello world!", "HELLO WORLD", "helloWORLD",
    "HELLOworld", "camelCaseVariableName", "XMLHttpRequest", "iPhone", "McDonald's", "ABC def GHI",
    "don't", "DON'T", "I'M here", "they'll we've you're she'd it's", "O'Neil's", "rock'n'roll",
    "'s 't 're", "café", "Café", "CAFÉ", "ÀB ", "abcÀ", "ÀÉÈàé", "naïve résumé", "Straße", "ǅungla",
    "e\u0301 a\u0300b", "नमस्ते दुनिया", "สวัสดีครับ", "Привет, мир! ПРИВЕТ", "Γειά σου Κόσμε",
    "مرحبا بالعالم", "שלום עולם", "你好，世界！", "こんにちは世界。カタカナ", "안녕하세요 세계",
    "日本語のテキストと English mixed", "1", "12", "123", "1234", "1234567890", "3.14159",
    "1,000,000", "-42", "v1.2.3", "2026-11-27T15:44:35Z", "٣٤٥٦", "①②③", "Ⅻ", "½ ¾",
    "😀", "👍🏽", "👨‍👩‍👧‍👦", "🇫🇷🇯🇵", "I ❤️ Go", "✓ done ✗ failed",
    " ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n", "  \n\n  ", "a  b", "a   b", "a\tb", "a\n\nb",
    "   leading", "trailing   ", "\u00a0nbsp\u00a0", "\u3000全角", "line1\r\nline2\r\n",
    "x\u2028y", "a\u000bb\u000cc",
    "def main():\n    print(\"hi\")\n\tif x == 1:\n\t\treturn None\n",
    "for (int i = 0; i < n; ++i) { sum += a[i]; }",
    "const f = (x) => x ** 2; // square",
    "SELECT id, name FROM users WHERE age >= 18;",
    "<div class=\"x\">Hi</div>", "https://example.com/path/to//file.txt?q=1&r=2#frag",
    "C:\\Users\\me\\file", "a/b/c//d/\n", "path/\r\n/next", "// comment\n/* block */",
    "!!!", "...", "?!?", "#include <stdio.h>", "@user #tag $100 50% ^_^ ~~", "`code`", "***bold***",
    "{\"key\": [1, 2, {\"n\": null}]}", "x = y + z * (w - v) / u",
    "<|start|>assistant<|channel|>analysis<|message|>Think.<|end|>",
    "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>",
    "<|channel|>final<|message|>Done.<|return|>", "<|endoftext|><|startoftext|>", "<|reserved_200013|>",
    "text<|message|>more", "<|return", "<|constrain|>json",
]


def tokenize(tool, gguf, text, parse_special):
    with tempfile.NamedTemporaryFile("wb", delete=False) as f:
        f.write(text.encode("utf-8"))
        path = f.name
    try:
        args = [tool, "-m", gguf, "-f", path, "--ids", "--no-bos", "--log-disable"]
        if not parse_special:
            args.append("--no-parse-special")
        out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    finally:
        os.unlink(path)
    line = out.strip().splitlines()[-1]
    return json.loads(line)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--llama-tokenize", default=os.path.join(CACHE, "llama.cpp-0.3.36/build/bin/llama-tokenize"))
    ap.add_argument("--out", default=os.path.join(REPO, "tokenizer/testdata/o200k.vectors.json"))
    args = ap.parse_args()
    ranks = os.path.join(MODELS, "ggml-vocab", "o200k_base.js")
    with open(ranks, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    with tempfile.TemporaryDirectory() as tmp:
        gguf = os.path.join(tmp, "o200k_harmony.gguf")
        env = dict(os.environ, PAGODA_WRITE_HARMONY_GGUF=gguf)
        subprocess.run(["go", "test", "./tokenizer", "-count=1", "-run", "^TestWriteHarmonyGGUF$"],
                       cwd=REPO, env=env, check=True, stdout=sys.stderr)
        cases = []
        for text in TEXTS:
            for ps in (False, True):
                cases.append({"text": text, "parse_special": ps, "ids": tokenize(args.llama_tokenize, gguf, text, ps)})
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump({"ranks_sha256": sha, "cases": cases}, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {len(cases)} cases to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
