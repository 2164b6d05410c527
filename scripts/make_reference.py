#!/usr/bin/env python3
"""Produce greedy reference outputs for a GGUF model with llama.cpp.

llama.cpp (through the PyPI package llama-cpp-python) is an independent
implementation; pagoda's tests compare their greedy token ids against the
file this writes. It is used only to make reference data, never at run time.

    pip install llama-cpp-python==0.3.36 jinja2
    python3 scripts/make_reference.py MODEL.gguf OUT.json [--repack]
        [--n-predict N] [--n-batch N] [--top K] [--threads N] [--n-ctx N]
        [--long] [--no-swa-full] [--flash-attn] [--override-kv KEY=TYPE:VALUE ...]
        [--chat-template FILE]

scripts/make-references.sh makes a model's three files (n_batch 1, the
default path, the long case) with the settings testdata/reference/README.md
records.

--repack keeps llama.cpp's default extra buffer types (its repacked Q4_0
arithmetic on x86 with AVX2); without it the plain CPU path is the
reference. --n-predict is the number of greedy steps (default 48; fewer when
the model ends with EOS), --top the number of [id, logprob] pairs kept per
step (default 5), --threads llama.cpp's threads (default 2; its results do
not depend on them). --n-batch (default 1) is llama.cpp's batch size: 1 sends
every token through its single-token decode path, the path pagoda's exact
arithmetic reproduces bit for bit; 512 is llama.cpp's default, with which
the prompt is computed in one batch (its own batched matmul), as
llama-server and llama-cli run it (llama-server splits the prompts of
sliding-window models for its context checkpoints unless --ctx-checkpoints 0). Chat cases are skipped for models without
a chat template. --n-ctx is the context size (default 512; 1024 with --long).
--long replaces the 10 prompts with one long text prompt (about 700 tokens
with Gemma 3's tokenizer, more than a 512-position sliding window; default
32 steps). Models with a sliding window (Gemma 3) get llama.cpp's SWA KV
cache; llama-cpp-python creates it full size (swa_full, the C API's default)
unless --no-swa-full (llama-server's default: the SWA layers keep only
n_swa + n_ubatch cells, padded to 256); the attention masks are the same
either way, and so are the outputs.
--flash-attn runs llama.cpp's flash attention (llama-server's default) instead
of its unfused attention: the path pagoda's exact arithmetic reproduces with
engine.Config.FlashAttention while a sequence holds fewer than 256 tokens.
--chat-template renders the chat cases with the Jinja template in FILE instead
of the model's tokenizer.chat_template (llama-server's --chat-template-file,
pagoda serve's --chat-template), for GGUFs that lack one, such as the Gemma 3
270M conversion (tokenizer/templates/gemma3.jinja).
--override-kv overrides a GGUF metadata value as llama.cpp's own option of
that name does (TYPE int, float, bool or str), e.g.
gemma3.attention.sliding_window=int:4096 to check that a window matters.

llama-cpp-python can run the llama.cpp that scripts/build-llama-cpp.sh
builds (the same pinned sources) instead of compiling its own: install it
with CMAKE_ARGS="-DLLAMA_BUILD=OFF -DLLAVA_BUILD=OFF" and run this script
with LLAMA_CPP_LIB_PATH set to the directory that script prints.

Format (the same as testdata/reference/stories260K.public.json): for
each prompt, the prompt's token ids as llama.cpp tokenizes them (special
tokens parsed, BOS per the model's add_bos_token), then N greedy steps, each
with the chosen id, its log-probability and the top-5 [id, logprob] pairs.
Chat cases are rendered with the model's own chat template, the way Hugging
Face renders it (jinja2, trim_blocks, lstrip_blocks). When the rendered text
starts with the BOS token (Gemma's template writes {{ bos_token }}) and the
model adds BOS, that leading BOS text is dropped before tokenizing, as
llama.cpp's own chat handling (common_chat_templates_apply) does, so the
prompt has one BOS; "prompt" keeps the text as rendered. Greedy decoding
stops after any end-of-generation token (llama.cpp's llama_vocab_is_eog:
EOS, and e.g. Gemma's <end_of_turn>), as llama-server stops.
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


OPTS = sys.argv[3:]
_VALUED = {"--n-predict", "--n-batch", "--top", "--threads", "--n-ctx", "--override-kv",
           "--chat-template"}
_SWITCHES = {"--repack", "--long", "--no-swa-full", "--flash-attn"}


def _check_opts():
    i = 0
    while i < len(OPTS):
        if OPTS[i] in _VALUED and i + 1 < len(OPTS):
            i += 2
        elif OPTS[i] in _SWITCHES:
            i += 1
        else:
            sys.exit(f"make_reference.py: unknown or incomplete option {OPTS[i]!r}")


def _flag(name, default):
    """The integer value of --name N among the options, or default."""
    if name in OPTS:
        return int(OPTS[OPTS.index(name) + 1])
    return default


def _overrides():
    """The --override-kv KEY=TYPE:VALUE options as llama-cpp-python's kv_overrides."""
    conv = {"int": int, "float": float, "str": str,
            "bool": lambda v: {"true": True, "false": False}[v.lower()]}
    out = {}
    for i, o in enumerate(OPTS):
        if o == "--override-kv":
            key, _, tv = OPTS[i + 1].partition("=")
            typ, _, val = tv.partition(":")
            out[key] = conv[typ](val)
    return out


_check_opts()
REPACK = "--repack" in OPTS
LONG = "--long" in OPTS
SWA_FULL = "--no-swa-full" not in OPTS
FLASH = "--flash-attn" in OPTS
KV_OVERRIDES = _overrides()

N_PREDICT = _flag("--n-predict", 32 if LONG else 48)
N_BATCH = _flag("--n-batch", 1)
TOP = _flag("--top", 5)
N_THREADS = _flag("--threads", 2)
N_CTX = _flag("--n-ctx", 1024 if LONG else 512)
CHAT_TEMPLATE = OPTS[OPTS.index("--chat-template") + 1] if "--chat-template" in OPTS else ""

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

# --long: one prompt longer than a 512-position sliding window (Gemma 3 270M's),
# the opening of the United States Declaration of Independence (1776, public
# domain), cut off where a grievance begins.
LONG_PROMPTS = [
    ("text", """When in the Course of human events, it becomes necessary for one people to dissolve the political bands which have connected them with another, and to assume among the powers of the earth, the separate and equal station to which the Laws of Nature and of Nature's God entitle them, a decent respect to the opinions of mankind requires that they should declare the causes which impel them to the separation.

We hold these truths to be self-evident, that all men are created equal, that they are endowed by their Creator with certain unalienable Rights, that among these are Life, Liberty and the pursuit of Happiness.--That to secure these rights, Governments are instituted among Men, deriving their just powers from the consent of the governed, --That whenever any Form of Government becomes destructive of these ends, it is the Right of the People to alter or to abolish it, and to institute new Government, laying its foundation on such principles and organizing its powers in such form, as to them shall seem most likely to effect their Safety and Happiness. Prudence, indeed, will dictate that Governments long established should not be changed for light and transient causes; and accordingly all experience hath shewn, that mankind are more disposed to suffer, while evils are sufferable, than to right themselves by abolishing the forms to which they are accustomed. But when a long train of abuses and usurpations, pursuing invariably the same Object evinces a design to reduce them under absolute Despotism, it is their right, it is their duty, to throw off such Government, and to provide new Guards for their future security.--Such has been the patient sufferance of these Colonies; and such is now the necessity which constrains them to alter their former Systems of Government. The history of the present King of Great Britain is a history of repeated injuries and usurpations, all having in direct object the establishment of an absolute Tyranny over these States. To prove this, let Facts be submitted to a candid world.

He has refused his Assent to Laws, the most wholesome and necessary for the public good.

He has forbidden his Governors to pass Laws of immediate and pressing importance, unless suspended in their operation till his Assent should be obtained; and when so suspended, he has utterly neglected to attend to them.

He has refused to pass other Laws for the accommodation of large districts of people, unless those people would relinquish the right of Representation in the Legislature, a right inestimable to them and formidable to tyrants only.

He has called together legislative bodies at places unusual, uncomfortable, and distant from the depository of their public Records, for the sole purpose of fatiguing them into compliance with his measures.

He has dissolved Representative Houses repeatedly, for opposing with manly firmness his invasions on the rights of the people.

He has refused for a long time, after such dissolutions, to cause others to be elected; whereby the Legislative powers, incapable of Annihilation, have returned to the People at large for their exercise; the State remaining in the mean time exposed to all the dangers of invasion from without, and convulsions within.

He has endeavoured to prevent the population of these States; for that purpose obstructing the Laws for Naturalization of Foreigners; refusing to pass others to encourage their migrations hither, and raising the conditions of new Appropriations of Lands.

He has obstructed the Administration of Justice, by refusing his Assent to Laws for establishing Judiciary powers.

He has made Judges dependent on his Will alone, for the tenure of their offices, and the amount and payment of their salaries.

He has"""),
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
        if llama_cpp.llama_vocab_is_eog(llm._model.vocab, tid):
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
    llm = Llama(model_path=path, n_ctx=N_CTX, n_threads=N_THREADS, n_batch=N_BATCH, n_ubatch=N_BATCH,
                logits_all=True, verbose=False, flash_attn=FLASH, swa_full=SWA_FULL,
                kv_overrides=KV_OVERRIDES or None)
    meta = llm.metadata
    arch = meta.get("general.architecture", "")
    swa = int(KV_OVERRIDES.get(f"{arch}.attention.sliding_window",
                               meta.get(f"{arch}.attention.sliding_window", 0)))
    add_bos = meta.get("tokenizer.ggml.add_bos_token", "true") == "true"
    template = meta.get("tokenizer.chat_template", "")
    if CHAT_TEMPLATE:
        with open(CHAT_TEMPLATE) as f:
            template = f.read()
    # bos_token and eos_token as Hugging Face passes them: the tokens' text
    # ("<bos>"), which a plain detokenize leaves out as special.
    bos = llm.detokenize([llm.token_bos()], special=True).decode("utf-8", "replace")
    eos = llm.detokenize([llm.token_eos()], special=True).decode("utf-8", "replace")
    cases = []
    for kind, p in (LONG_PROMPTS if LONG else PROMPTS):
        if kind == "chat" and not template:
            continue
        text = p if kind == "text" else render_chat(template, p, bos, eos)
        # A template that writes BOS itself: llama.cpp drops it and lets the
        # tokenizer add it (common_chat_templates_apply), so BOS is not doubled.
        lead = bos if kind == "chat" and add_bos and bos and text.startswith(bos) else ""
        toks = llm.tokenize(text[len(lead):].encode("utf-8"), add_bos=add_bos, special=True)
        if len(toks) > 1 and toks[0] == toks[1] == llm.token_bos():
            sys.exit(f"make_reference.py: doubled BOS in {text[:60]!r}")
        if len(toks) + N_PREDICT > N_CTX:
            sys.exit(f"make_reference.py: {len(toks)} prompt tokens + {N_PREDICT} steps exceed n_ctx {N_CTX}")
        ids, steps = greedy(llm, toks, N_PREDICT, TOP)
        case = {"kind": kind, "prompt": text, "prompt_tokens": [int(t) for t in toks],
                "completion": llm.detokenize(ids).decode("utf-8", "replace"),
                "completion_tokens": ids, "steps": steps}
        if kind == "chat":
            case["messages"] = p
        cases.append(case)
    extra = ""
    if N_CTX != 512:
        extra += f"n_ctx {N_CTX}, "
    if swa:
        extra += f"sliding window {swa} (SWA KV cache, swa_full {'on' if SWA_FULL else 'off'}), "
    if KV_OVERRIDES:
        extra += f"kv overrides {KV_OVERRIDES}, "
    if CHAT_TEMPLATE and any(c["kind"] == "chat" for c in cases):
        extra += f"chat template {CHAT_TEMPLATE.split('/')[-1]} (the GGUF's replaced), "
    doc = {"generator": f"llama-cpp-python {llama_cpp_version}, greedy, n_threads {N_THREADS}, use_extra_bufts {'on (repacking)' if REPACK else 'off'}, n_batch {N_BATCH}, F16 KV cache, flash attention {'on' if FLASH else 'off'}, {extra}"
                        f"command: python3 scripts/make_reference.py {path.split('/')[-1]} {out} {' '.join(sys.argv[3:])}".rstrip(),
           "n_predict": N_PREDICT, "cases": cases}
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
