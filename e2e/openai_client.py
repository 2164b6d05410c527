"""Drives a running `pagoda serve` with the official OpenAI Python client.

Run by e2e_test.go (TestServeEndToEnd) inside a throwaway virtual environment:

    python openai_client.py --base-url http://127.0.0.1:PORT/v1 --model NAME --max-model-len N

Every check asserts on real outputs of the default model (SmolLM2-135M-Instruct);
generations are short (max_tokens <= 12) because the reference kernels are slow.
Exits non-zero on the first failed assertion.
"""

import json
import sys
import urllib.request

import openai

from client_common import connect, expect_bad_requests, parse_args

PROMPT = "The capital of France is"
QUESTION = [{"role": "user", "content": "What is the capital of France?"}]


def tokenize(base_url, text):
    """Token ids of text through pagoda's /tokenize (outside the OpenAI API)."""
    root = base_url.rsplit("/v1", 1)[0]
    req = urllib.request.Request(root + "/tokenize", data=json.dumps({"prompt": text}).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req) as resp:
        return json.load(resp)["tokens"]


def check_models(client, model):
    ids = [m.id for m in client.models.list().data]
    assert ids == [model], ids


def check_completion(client, model, base_url):
    c = client.completions.create(model=model, prompt=PROMPT, max_tokens=8, temperature=0)
    ch = c.choices[0]
    assert c.object == "text_completion" and c.id.startswith("cmpl-"), c
    assert "Paris" in ch.text, ch.text
    assert ch.finish_reason in ("stop", "length"), ch.finish_reason
    assert c.usage.prompt_tokens == len(tokenize(base_url, PROMPT)), c.usage
    assert 1 <= c.usage.completion_tokens <= 8, c.usage
    assert c.usage.total_tokens == c.usage.prompt_tokens + c.usage.completion_tokens, c.usage
    return ch.text


def check_chat(client, model):
    r = client.chat.completions.create(model=model, messages=QUESTION, max_tokens=12, temperature=0)
    ch = r.choices[0]
    assert r.object == "chat.completion" and ch.message.role == "assistant", r
    assert ch.message.content, r
    assert ch.finish_reason in ("stop", "length"), ch.finish_reason
    assert r.usage.prompt_tokens > 20, r.usage  # the template adds SmolLM2's system prompt
    assert 1 <= r.usage.completion_tokens <= 12, r.usage
    return r


def check_streaming_chat(client, model, whole):
    chunks = list(client.chat.completions.create(model=model, messages=QUESTION, max_tokens=12, temperature=0,
                                                 stream=True, stream_options={"include_usage": True}))
    assert chunks[0].choices[0].delta.role == "assistant", chunks[0]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content, (text, whole.choices[0].message.content)
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishes == [whole.choices[0].finish_reason], finishes
    last = chunks[-1]
    assert last.choices == [] and last.usage is not None, last
    assert last.usage.completion_tokens == whole.usage.completion_tokens, (last.usage, whole.usage)
    assert last.usage.prompt_tokens == whole.usage.prompt_tokens, (last.usage, whole.usage)
    assert all(c.usage is None for c in chunks[:-1])
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) >= 2, "not streamed"


def check_n2(client, model):
    r = client.completions.create(model=model, prompt="Once upon a time", n=2, max_tokens=8, temperature=1.0, seed=11)
    assert sorted(c.index for c in r.choices) == [0, 1], r.choices
    assert all(c.text for c in r.choices), r.choices
    assert r.usage.completion_tokens <= 16, r.usage
    # A streamed n=2 request interleaves both indices.
    seen = {0: "", 1: ""}
    for chunk in client.completions.create(model=model, prompt="Once upon a time", n=2, max_tokens=8,
                                           temperature=1.0, seed=11, stream=True):
        for c in chunk.choices:
            seen[c.index] += c.text
    assert seen == {c.index: c.text for c in r.choices}, (seen, r.choices)


def check_logprobs(client, model):
    c = client.completions.create(model=model, prompt=PROMPT, max_tokens=4, temperature=0, logprobs=2)
    lp = c.choices[0].logprobs
    assert len(lp.tokens) == c.usage.completion_tokens == len(lp.token_logprobs) == len(lp.top_logprobs), lp
    assert "".join(lp.tokens) == c.choices[0].text, (lp.tokens, c.choices[0].text)
    for tok, v, top in zip(lp.tokens, lp.token_logprobs, lp.top_logprobs):
        assert v <= 0 and len(top) >= 2 and abs(top[tok] - v) < 1e-6, (tok, v, top)
        assert max(top.values()) <= v + 1e-6, (tok, v, top)  # greedy: the chosen token is the likeliest
    r = client.chat.completions.create(model=model, messages=QUESTION, max_tokens=4, temperature=0,
                                       logprobs=True, top_logprobs=2)
    content = r.choices[0].logprobs.content
    assert len(content) == r.usage.completion_tokens, content
    for e in content:
        assert len(e.top_logprobs) == 2 and e.top_logprobs[0].token == e.token, e
        assert bytes(e.bytes).decode("utf-8", "replace") == e.token or e.token.startswith("bytes:"), e


def check_stop(client, model, full):
    words = full.split()
    assert len(words) >= 2, full
    stop = words[1]
    c = client.completions.create(model=model, prompt=PROMPT, max_tokens=8, temperature=0, stop=[stop])
    ch = c.choices[0]
    assert ch.text == full[:full.index(stop)], (ch.text, full, stop)
    assert ch.finish_reason == "stop", ch.finish_reason


def check_seed(client, model):
    def sample(seed):
        return client.completions.create(model=model, prompt="Once upon a time", max_tokens=6, temperature=1.0,
                                         seed=seed).choices[0].text
    a, b = sample(42), sample(42)
    assert a == b, (a, b)
    others = {sample(s) for s in (1, 2, 3)}
    assert len(others | {a}) >= 2, others  # different seeds draw different texts


def check_errors(client, model, max_model_len):
    cases = [
        (dict(model=model, prompt=PROMPT, max_tokens=4, temperature=-1), ["temperature"]),
        (dict(model="no-such-model", prompt=PROMPT, max_tokens=4), ["no-such-model"]),
        (dict(model=model, prompt=PROMPT, max_tokens=max_model_len + 100), [str(max_model_len + 100), str(max_model_len)]),
    ]

    def check(e, words):
        msg = str(e)
        assert all(w in msg for w in words), (words, msg)

    expect_bad_requests(client.completions.create, cases, check)


def main():
    args = parse_args("--max-model-len")
    client = connect(args)
    checks = [
        ("models", lambda: check_models(client, args.model)),
        ("errors", lambda: check_errors(client, args.model, args.max_model_len)),
    ]
    for name, fn in checks:
        fn()
        print("ok", name, flush=True)
    full = check_completion(client, args.model, args.base_url)
    print("ok completion:", repr(full), flush=True)
    whole = check_chat(client, args.model)
    print("ok chat:", repr(whole.choices[0].message.content), flush=True)
    for name, fn in [
        ("streaming chat with include_usage", lambda: check_streaming_chat(client, args.model, whole)),
        ("n=2", lambda: check_n2(client, args.model)),
        ("logprobs", lambda: check_logprobs(client, args.model)),
        ("stop strings", lambda: check_stop(client, args.model, full)),
        ("seed reproducibility", lambda: check_seed(client, args.model)),
    ]:
        fn()
        print("ok", name, flush=True)
    print("openai client version", openai.__version__, "- all checks passed", flush=True)


if __name__ == "__main__":
    sys.exit(main())
