#!/usr/bin/env python3
"""Produce greedy reference outputs for a GGUF model with llama.cpp.

llama.cpp (through the PyPI package llama-cpp-python) is an independent
implementation; pagoda's tests compare their greedy token ids against the
file this writes. It is used only to make reference data, never at run time.

    pip install llama-cpp-python==0.3.36 jinja2
    python3 scripts/make_reference.py MODEL.gguf OUT.json [--repack]
        [--n-predict N] [--n-batch N] [--top K] [--threads N]

--repack keeps llama.cpp's default extra buffer types (its repacked Q4_0
arithmetic on x86 with AVX2); without it the plain CPU path is the
reference. --n-predict is the number of greedy steps (default 48; fewer when
the model ends with EOS), --top the number of [id, logprob] pairs kept per
step (default 5), --threads llama.cpp's threads (default 2; its results do
not depend on them). --n-batch (default 1) is llama.cpp's batch size: 1 sends
every token through its single-token decode path, the path pagoda's exact
arithmetic reproduces bit for bit; 512 is llama.cpp's default, with which
the prompt is computed in one batch (its own batched matmul), as
llama-server and llama-cli run it. Chat cases are skipped for models without
a chat template.

llama-cpp-python can run the llama.cpp that scripts/build-llama-cpp.sh
builds (the same pinned sources) instead of compiling its own: install it
with CMAKE_ARGS="-DLLAMA_BUILD=OFF -DLLAVA_BUILD=OFF" and run this script
with LLAMA_CPP_LIB_PATH set to the directory that script prints.

Format (the same as testdata/reference/stories260K.public.json): for
each prompt, the prompt's token ids as llama.cpp tokenizes them (special
tokens parsed, BOS per the model's add_bos_token), then N greedy steps, each
with the chosen id, its log-probability and the top-5 [id, logprob] pairs.
Chat cases are rendered with the model's own chat template, the way Hugging
Face renders it (jinja2, trim_blocks, lstrip_blocks).
"""
import json
import sys

import jinja2.sandbox
import llama_cpp
import numpy as np
from llama_cpp import Llama, __version__ as llama_cpp_version


def use_extra_bufts(on):
    """Makes every Llama created afterwards load with llama.cpp's extra buffer types
    (weight repacking, AMX tiles) or, when not on, without them: the plain CPU path.
    They crash with a general-protection fault on machines whose kernel does not
    grant AMX tile state to the process."""
    default = llama_cpp.llama_model_default_params

    def params():
        p = default()
        p.use_extra_bufts = on
        return p

    llama_cpp.llama_model_default_params = params
    llama_cpp.llama.llama_cpp.llama_model_default_params = params


def _flag(name, default):
    """The integer value of --name N among the options, or default."""
    opts = sys.argv[3:]
    if name in opts:
        return int(opts[opts.index(name) + 1])
    return default


REPACK = "--repack" in sys.argv[3:]

N_PREDICT = _flag("--n-predict", 48)
N_BATCH = _flag("--n-batch", 1)
TOP = _flag("--top", 5)
N_THREADS = _flag("--threads", 2)

PROMPTS = [
    ("text", "The capital of France is"),
    ("text", "Once upon a time, in a small village,"),
    ("text", "def fibonacci(n):"),
    ("text", "The three primary colors are"),
    ("text", "Water boils at a temperature of"),
    ("text", "In 1492, Christopher Columbus"),
    ("text", "Here is a list of fruits: apple, banana,"),
    ("text", "1, 2, 3, 4, 5,"),
    ("chat", [
        {"role": "system", "content": "You are a concise assistant."},
        {"role": "user", "content": "What is the largest planet in the solar system?"},
    ]),
    ("chat", [{"role": "user", "content": "Write a haiku about the sea."}]),
]


def render_chat(template, messages, bos, eos):
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)

    def raise_exception(msg):
        raise jinja2.exceptions.TemplateError(msg)

    env.globals["raise_exception"] = raise_exception
    return env.from_string(template).render(
        messages=messages, add_generation_prompt=True, bos_token=bos, eos_token=eos)


def log_softmax(x):
    x = x.astype(np.float64)
    m = x.max()
    return x - (m + np.log(np.exp(x - m).sum()))


def greedy(llm, toks, n, top=5):
    """Evaluates the prompt toks from a reset state, then greedy-decodes up to n
    tokens (stopping after EOS): the ids, and each step's chosen id, its
    log-probability and the top [id, logprob] pairs (top of them)."""
    llm.reset()
    llm.eval(toks)
    steps, ids = [], []
    for _ in range(n):
        lp = log_softmax(np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32))
        order = np.argsort(-lp, kind="stable")[:top]
        tid = int(order[0])
        steps.append({"id": tid, "logprob": float(lp[tid]),
                      "top": [[int(i), float(lp[i])] for i in order]})
        ids.append(tid)
        if tid == llm.token_eos():
            break
        llm.eval([tid])
    return ids, steps


def main():
    path, out = sys.argv[1], sys.argv[2]
    use_extra_bufts(REPACK)
    # n_batch 1 (the default): every token, prompt included, goes through
    # llama.cpp's decode path. Its batched prompt path sums in another order
    # (tinyBLAS), and on SmolLM2 (activations ~2e4, int8-quantized between
    # layers) such last-bit differences flip activation roundings and change
    # greedy choices; llama.cpp's own batched and token-by-token runs disagree.
    llm = Llama(model_path=path, n_ctx=512, n_threads=N_THREADS, n_batch=N_BATCH, n_ubatch=N_BATCH,
                logits_all=True, verbose=False, flash_attn=False)
    meta = llm.metadata
    add_bos = meta.get("tokenizer.ggml.add_bos_token", "true") == "true"
    template = meta.get("tokenizer.chat_template", "")
    bos = llm.detokenize([llm.token_bos()]).decode("utf-8", "replace")
    eos = llm.detokenize([llm.token_eos()]).decode("utf-8", "replace")
    cases = []
    for kind, p in PROMPTS:
        if kind == "chat" and not template:
            continue
        text = p if kind == "text" else render_chat(template, p, bos, eos)
        toks = llm.tokenize(text.encode("utf-8"), add_bos=add_bos, special=True)
        ids, steps = greedy(llm, toks, N_PREDICT, TOP)
        case = {"kind": kind, "prompt": text, "prompt_tokens": [int(t) for t in toks],
                "completion": llm.detokenize(ids).decode("utf-8", "replace"),
                "completion_tokens": ids, "steps": steps}
        if kind == "chat":
            case["messages"] = p
        cases.append(case)
    doc = {"generator": f"llama-cpp-python {llama_cpp_version}, greedy, n_threads {N_THREADS}, use_extra_bufts {'on (repacking)' if REPACK else 'off'}, n_batch {N_BATCH}, F16 KV cache, flash attention off, "
                        f"command: python3 scripts/make_reference.py {path.split('/')[-1]} {out} {' '.join(sys.argv[3:])}".rstrip(),
           "n_predict": N_PREDICT, "cases": cases}
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
