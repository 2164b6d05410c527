#!/usr/bin/env python3
"""Greedy reference for stories260K from llama.cpp's flash-attention decode path.

The stories260K reference in testdata/reference was made by a llama-server build on another
machine; this one is made on the AVX-512 machine the kernels reproduce, with
llama-cpp-python 0.3.36: flash attention on, F16 KV cache, n_batch 1 (every
token through the single-token decode path), 2 threads, weight repacking off.
The prompts are that reference's prompt tokens. It shares the decoding loop of
scripts/make_reference.py, and its requirements (llama-cpp-python, jinja2, numpy). Run
from the repository root:

    python3 model/llama/testdata/make_stories_flash_reference.py \
        testdata/models/stories260K/stories260K.gguf \
        testdata/reference/stories260K.public.json \
        model/llama/testdata/stories260k-flash.json
"""
import json
import os
import sys

from llama_cpp import Llama, __version__ as llama_cpp_version

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "scripts"))
from make_reference import greedy, use_extra_bufts  # noqa: E402


def main():
    model, public_ref, out = sys.argv[1], sys.argv[2], sys.argv[3]
    use_extra_bufts(False)  # no weight repacking: the plain CPU path
    ref = json.load(open(public_ref))
    llm = Llama(model_path=model, n_ctx=512, n_threads=2, n_batch=1, n_ubatch=1,
                logits_all=True, verbose=False, flash_attn=True)
    cases = []
    for c in ref["cases"]:
        toks = c["prompt_tokens"]
        ids, steps = greedy(llm, toks, len(c["steps"]))
        cases.append({"prompt": c["prompt"], "prompt_tokens": toks, "completion_tokens": ids, "steps": steps})
    doc = {"generator": f"llama-cpp-python {llama_cpp_version}, greedy, n_threads 2, use_extra_bufts off, "
                        "n_batch 1, F16 KV cache, flash attention on, AVX-512 build",
           "cases": cases}
    with open(out, "w") as f:
        json.dump(doc, f, indent=None, separators=(",", ":"))


if __name__ == "__main__":
    main()
