#!/usr/bin/env python3
"""Generates pretokenize.vectors.json: how each pre-tokenizer pipeline splits a set of tricky
strings, computed with the original regular expressions (llama.cpp's llama-vocab.cpp lists
them per tokenizer.ggml.pre value) on Python's `regex` module (pip install regex), which
supports \\p{..} classes and lookahead. pagoda hand-codes the lookahead patterns, so this checks
the hand-written scanners against a real regex engine.

Each pipeline step splits every current piece into its matches and the gaps between them.

Run from anywhere: python3 tokenizer/testdata/gen_pretokenize_vectors.py
"""
import json
import os

import regex

HERE = os.path.dirname(os.path.abspath(__file__))

GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
          r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2 = LLAMA3.replace(r"\p{N}{1,3}", r"\p{N}")
BLOOM = LLAMA3.replace(r"\p{N}{1,3}", r"\p{N}+")

# GPT-4o's o200k pattern as llama.cpp rewrites it (LLAMA_VOCAB_PRE_TYPE_GPT4O): tiktoken's case
# classes become "a letter that is not a-z" / "not A-Z", which is what pagoda reproduces.
GPT4O = (r"[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?"
         r"|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?"
         r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")

PIPELINES = {
    "gpt-4o": [GPT4O],
    "gpt-2": [GPT2],
    "smollm": [r"\p{N}", GPT2],
    "llama3": [LLAMA3],
    "qwen2": [QWEN2],
    "bloom": [BLOOM],
    "default": [r"[\p{P}\$\+<=>\^~\|]+", GPT2, r"\p{N}+", r"[0-9][0-9][0-9]"],
    "falcon": [r"[\p{P}\$\+<=>\^~\|`]+", GPT2, r"[0-9][0-9][0-9]"],
    "deepseek-coder": [r"[\r\n]", r"\s?\p{L}+", r"\s?\p{P}+", r"[一-龥ࠀ-一가-퟿]+", r"\p{N}"],
}

INPUTS = [
    "", " ", "  ", "\n", "\n\n", " \n", "\t", "Hello world", " Hello  world ", "Hello   world",
    "  leading", "trailing   ", "a\n\nb", "x \n y", "x  \n\n  y", "\r\n\r\nz", "line\r\nnext",
    "I'm GOING, you'LL see; he'D, she'S, we'RE, they'VE", "'s 'S 'Re 're' 'x", "don't won't",
    "1234567 12 1 123456789", "3.14159 -42 1e-5 $1,000", "٣٤٥ ①②③ ½",
    "a\u00a0b", "\u3000x\u2003y", "tab\t\tx", "punct!!! ?? ... --", "!!!\n\nx", "  \n  \n",
    "e\u0301 n\u0303", "😀😀 x 😶‍🌫️", "foo_bar-baz.qux", "<|im_start|>user", "{\"a\": [1, 2]}",
    "def f(x):\n    return x  # comment\n", "中文字符 and 日本語のテキスト 한국어",
    "Привет, мир!", "mixedCASE123abc", "a.b,c;d:e", "  ?!", "x ?!\n", " 1 22 333 4444",
    "ÀB abcÀ ÉTÉ été", "helloWORLD HELLOworld", "path/to//x/\r\n/y", "ǅungla ʰa",
]


def split(text, pipeline):
    pieces = [text] if text else []
    for expr in pipeline:
        pat = regex.compile(expr)
        out = []
        for piece in pieces:
            prev = 0
            for m in pat.finditer(piece):
                if m.start() > prev:
                    out.append(piece[prev:m.start()])
                if m.end() > m.start():
                    out.append(m.group())
                prev = m.end()
            if prev < len(piece):
                out.append(piece[prev:])
        pieces = out
    return pieces


def main():
    out = {"generator": "python regex " + regex.__version__, "pipelines": {}}
    for name, pipeline in PIPELINES.items():
        out["pipelines"][name] = [{"text": t, "pieces": split(t, pipeline)} for t in INPUTS]
    path = os.path.join(HERE, "pretokenize.vectors.json")
    with open(path, "w", encoding="utf-8") as f:
        f.write("{\n")
        f.write(' "generator": %s,\n "pipelines": {\n' % json.dumps(out["generator"]))
        blocks = []
        for name, cases in out["pipelines"].items():
            lines = ",\n".join("   " + json.dumps(c, ensure_ascii=False) for c in cases)
            blocks.append("  %s: [\n%s\n  ]" % (json.dumps(name), lines))
        f.write(",\n".join(blocks))
        f.write("\n }\n}\n")
    print("wrote", len(PIPELINES), "pipelines x", len(INPUTS), "inputs to", path)


if __name__ == "__main__":
    main()
