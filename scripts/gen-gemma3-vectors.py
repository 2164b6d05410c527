#!/usr/bin/env python3
"""Generates tokenizer/testdata/gemma3.vectors.json: how llama.cpp tokenizes and detokenizes
a set of inputs with Gemma 3's vocabulary (SentencePiece, 262144 tokens), the reference that
tokenizer's TestGemma3Vectors checks pagoda against. It is used only to make test data,
never at run time; it needs nothing but Python 3's standard library.

    make gemma3                                   # the model, into the model cache
    scripts/build-llama-cpp.sh                    # llama.cpp (llama-cpp-python 0.3.36's copy)
    python3 scripts/gen-gemma3-vectors.py [--llama-server PATH] [--model PATH] [--out PATH]

It starts the llama-server that scripts/build-llama-cpp.sh built (--llama-server, default
$PAGODA_CACHE/llama.cpp-0.3.36/build/bin/llama-server, PAGODA_CACHE defaulting to
~/.cache/pagoda) on a free loopback port with the Gemma 3 GGUF from the model cache
(--model, default $PAGODA_MODELS/gemma-3-270m-q4_k_m.gguf), and asks it, for every input and
each of the four modes (add_special, parse_special false or true):

  - POST /tokenize {"content", "add_special", "parse_special"}: the ids, which llama.cpp's
    common_tokenize (llama_tokenize) computes;
  - POST /detokenize {"tokens"}: the text those ids give back (the pieces concatenated,
    special tokens rendered as their text).

add_special=false, parse_special=false is llama.cpp's test-tokenizer-0 (no BOS, control-token
texts are plain text), add_special=true, parse_special=true what llama-server does with a
prompt (BOS, control-token texts become those tokens). The inputs
are llama.cpp's own tokenizer test inputs (testdata/ggml-vocab/ggml-vocab-llama-spm.gguf.inp:
multilingual text, whitespace, emoji, code) and the EXTRA inputs below (Gemma's chat markers
and other special texts, whitespace runs, byte fallback, HTML, code).
"""
import argparse
import hashlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
VOCAB_INP = os.path.join(ROOT, "testdata", "ggml-vocab", "ggml-vocab-llama-spm.gguf.inp")
OUT = os.path.join(ROOT, "tokenizer", "testdata", "gemma3.vectors.json")
MODEL_FILE = "gemma-3-270m-q4_k_m.gguf"
LLAMA_CPP_PYTHON_VERSION = "0.3.36"

EXTRA = [
    # Gemma's chat format: control tokens <start_of_turn>, <end_of_turn>, <bos>, <eos>.
    "<start_of_turn>user\nHi<end_of_turn>\n",
    "<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n",
    "<start_of_turn>user\nYou are terse.\n\nName three colours.<end_of_turn>\n"
    "<start_of_turn>model\nRed, green, blue.<end_of_turn>\n<start_of_turn>user\nMore?<end_of_turn>\n"
    "<start_of_turn>model\n",
    "<bos><start_of_turn>user\nHello<end_of_turn>\n",
    "Hi<eos>",
    "<start_of_turn><end_of_turn>",
    "<start_of_turn> user",
    "<start_of_turn",
    "start_of_turn>",
    "<<start_of_turn>>",
    # Other special texts: control (<pad>, <unk>, <mask>, <unusedN>), user-defined
    # ([multimodal], <start_of_image>, HTML tags, whitespace runs).
    "<pad><unk><mask><unused0><unused99>",
    "[multimodal] <start_of_image><end_of_image>",
    "<table><tr><td>1</td><td>2</td></tr></table>",
    "<h1>Title</h1>\n<p>Some <b>bold</b> and <i>italic</i> text.</p>",
    "<div class=\"x\">Hello &amp; welcome</div>",
    # Whitespace: runs of spaces, tabs and newlines are user-defined tokens.
    "a  b   c    d     e",
    "a\tb\t\tc\t\t\td",
    "line1\nline2\n\nline3\n\n\n\nline4",
    "\r\n",
    "crlf\r\nline\r\n\r\n",
    " leading space",
    "trailing space ",
    "                                 many spaces",
    "\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n",
    "\u00a0non-breaking\u00a0space\u2009thin\u3000ideographic",
    # SentencePiece's own space mark, as text.
    "a\u2581b \u2581\u2581c",
    # Byte fallback: characters that are not tokens.
    "\U00013000\U00013001 hieroglyphs",
    "\U0001d518\U0001d52b\U0001d526\U0001d520\U0001d52c\U0001d521\U0001d522",
    "\ue000\uf8ff private use",
    "\x01\x02\x7f control bytes",
    "\u0000nul",
    "\ufeffbyte order mark",
    # Scripts and emoji.
    "\u4eca\u5929\u5929\u6c14\u5f88\u597d\uff0c\u6211\u4eec\u53bb\u516c\u56ed\u5427\u3002",
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3068\u30ab\u30bf\u30ab\u30ca",
    "\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8",
    "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645",
    "\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e",
    "\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd",
    "\u0394\u03b9\u03b1\u03b2\u03ac\u03b6\u03c9 \u03b5\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac",
    "Stra\u00dfe, caf\u00e9, na\u00efve, \u00c5ngstr\u00f6m, e\u0301 (combining)",
    "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466 family, \U0001f1eb\U0001f1f7 flag, "
    "\U0001f44d\U0001f3fd skin tone",
    "\U0001f600\U0001f603\U0001f604\U0001f601\U0001f606\U0001f605\U0001f923\U0001f602",
    # Numbers and code.
    "1234567890 3.14159 -42 1e-5 $1,000,000.00",
    "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
    "func main() {\n\tfmt.Println(\"h\u00e9llo\")\n}\n",
    '{"key": [1, 2, 3], "nested": {"a": null, "b": true}}',
    "https://example.com/path?query=1&other=two#frag",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name;",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "The quick brown fox jumps over the lazy dog.",
    "I'm sure you'll love it; they've said we'd DON'T WON'T.",
]

MODES = [(False, False), (False, True), (True, False), (True, True)]


def vocab_inputs():
    with open(VOCAB_INP, encoding="utf-8") as f:
        parts = f.read().split("\n__ggml_vocab_test__\n")
    if parts[-1] != "":
        sys.exit(f"{VOCAB_INP} does not end with the separator")
    return parts[:-1]


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(base, path, body):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read().decode("utf-8"))


def wait_ready(base, proc, log):
    deadline = time.time() + 120
    while time.time() < deadline:
        if proc.poll() is not None:
            log.seek(0)
            sys.exit("llama-server exited:\n" + log.read().decode(errors="replace")[-3000:])
        try:
            with urllib.request.urlopen(base + "/health", timeout=2) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.2)
    sys.exit("llama-server did not become ready within 120 s")


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def main():
    cache = os.environ.get("PAGODA_CACHE", os.path.expanduser("~/.cache/pagoda"))
    models = os.environ.get("PAGODA_MODELS", os.path.join(cache, "models"))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--llama-server", default=os.path.join(
        cache, f"llama.cpp-{LLAMA_CPP_PYTHON_VERSION}", "build", "bin", "llama-server"))
    ap.add_argument("--model", default=os.path.join(models, MODEL_FILE))
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args()
    for p, how in [(args.llama_server, "scripts/build-llama-cpp.sh"), (args.model, "make gemma3")]:
        if not os.path.exists(p):
            sys.exit(f"{p} is missing: run {how}")

    version = subprocess.run([args.llama_server, "--version"], capture_output=True, text=True)
    version = (version.stdout + version.stderr).strip().splitlines()
    version = next((l for l in version if l.startswith("version")), "version unknown")

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen([args.llama_server, "-m", args.model, "--host", "127.0.0.1",
                             "--port", str(port), "-c", "512", "-np", "1", "-t", "1"],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_ready(base, proc, log)
        cases = []
        for text in vocab_inputs() + EXTRA:
            for add_special, parse_special in MODES:
                ids = post(base, "/tokenize", {"content": text, "add_special": add_special,
                                               "parse_special": parse_special})["tokens"]
                decoded = post(base, "/detokenize", {"tokens": ids})["content"]
                cases.append({"text": text, "add_special": add_special,
                              "parse_special": parse_special, "ids": ids, "decoded": decoded})
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()

    doc = {
        "generator": f"llama.cpp vendored by llama-cpp-python {LLAMA_CPP_PYTHON_VERSION} "
                     f"(llama-server {version}): POST /tokenize "
                     "{content, add_special, parse_special}, then POST /detokenize {tokens}; "
                     "scripts/gen-gemma3-vectors.py",
        "model": MODEL_FILE,
        "model_sha256": sha256(args.model),
    }
    with open(args.out, "w", encoding="utf-8") as f:
        f.write("{\n")
        for k, v in doc.items():
            f.write(f" {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)},\n")
        f.write(' "cases": [\n')
        f.write(",\n".join("  " + json.dumps(c, ensure_ascii=False) for c in cases))
        f.write("\n ]\n}\n")
    print(f"{args.out}: {len(cases)} cases", file=sys.stderr)


if __name__ == "__main__":
    main()
