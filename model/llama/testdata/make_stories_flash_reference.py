#!/usr/bin/env python3
"""Greedy reference for stories260K from llama.cpp's flash-attention decode path.

The stories260K reference in testdata/reference was made by a llama-server build on another
machine; this one is made on the AVX-512 machine the kernels reproduce, with
llama-cpp-python 0.3.36: flash attention on, F16 KV cache, n_batch 1 (every
token through the single-token decode path), 2 threads, weight repacking off.
The prompts are that reference's prompt tokens. Run from the repository root:

    python3 model/llama/testdata/make_stories_flash_reference.py \
        testdata/models/stories260K/stories260K.gguf \
        testdata/reference/stories260K.public.json \
        model/llama/testdata/stories260k-flash.json
"""
import json
import sys

import llama_cpp
import numpy as np
from llama_cpp import Llama, __version__ as llama_cpp_version

_default_model_params = llama_cpp.llama_model_default_params


def _model_params_without_extra_bufts():
    p = _default_model_params()
    p.use_extra_bufts = False  # no weight repacking: the plain CPU path
    return p


llama_cpp.llama_model_default_params = _model_params_without_extra_bufts
llama_cpp.llama.llama_cpp.llama_model_default_params = _model_params_without_extra_bufts


def log_softmax(x):
    x = x.astype(np.float64)
    m = x.max()
    return x - (m + np.log(np.exp(x - m).sum()))


def main():
    model, public_ref, out = sys.argv[1], sys.argv[2], sys.argv[3]
    ref = json.load(open(public_ref))
    llm = Llama(model_path=model, n_ctx=512, n_threads=2, n_batch=1, n_ubatch=1,
                logits_all=True, verbose=False, flash_attn=True)
    cases = []
    for c in ref["cases"]:
        toks = c["prompt_tokens"]
        llm.reset()
        llm.eval(toks)
        steps, ids = [], []
        for _ in range(len(c["steps"])):
            lp = log_softmax(np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32))
            order = np.argsort(-lp, kind="stable")[:5]
            tid = int(order[0])
            steps.append({"id": tid, "logprob": float(lp[tid]),
                          "top": [[int(i), float(lp[i])] for i in order]})
            ids.append(tid)
            if tid == llm.token_eos():
                break
            llm.eval([tid])
        cases.append({"prompt": c["prompt"], "prompt_tokens": toks, "completion_tokens": ids, "steps": steps})
    doc = {"generator": f"llama-cpp-python {llama_cpp_version}, greedy, n_threads 2, use_extra_bufts off, "
                        "n_batch 1, F16 KV cache, flash attention on, AVX-512 build",
           "cases": cases}
    with open(out, "w") as f:
        json.dump(doc, f, indent=None, separators=(",", ":"))


if __name__ == "__main__":
    main()
