"""Ollama's official Python client, and the OpenAI client's embeddings, against pagoda.

Run by ollama_test.go (TestOllamaEndToEnd) against `pagoda serve` on the default model:

    python ollama_client.py --base-url http://127.0.0.1:PORT --model NAME

The calls are the ones Ollama's README shows, unchanged but for the host: list, show, ps,
chat (streamed and not, options, format as a schema, a tool round trip in the history),
generate (streamed, raw, the context continued), embed, the older embeddings, pull of the
served name, and the OpenAI client's embeddings.create (floats, base64, token ids). SmolLM2-135M
is a weak model: the protocol's shape is checked, not the quality of the answers. Exits non-zero
on the first failed assertion.
"""

import base64
import json
import math
import struct
import sys
from importlib import metadata

import ollama
from openai import OpenAI

from client_common import parse_args


def norm(v):
    return math.sqrt(sum(x * x for x in v))


def cosine(a, b):
    return sum(x * y for x, y in zip(a, b)) / (norm(a) * norm(b))


def main():
    args = parse_args()
    base, model = args.base_url, args.model
    print("ollama", metadata.version("ollama"), "openai", metadata.version("openai"))
    client = ollama.Client(host=base, timeout=600)

    # Models: what UIs probe first.
    listed = client.list()
    names = [m.model for m in listed.models]
    assert model in names, names
    m = listed.models[names.index(model)]
    assert m.details.format == "gguf" and m.details.family == "llama" and m.size > 0, m
    print("list:", names, m.details)
    shown = client.show(model)
    assert shown.modelinfo["general.architecture"] == "llama", shown.modelinfo
    assert "completion" in shown.capabilities and "embedding" in shown.capabilities, shown.capabilities
    print("show:", shown.details.parameter_size, shown.details.quantization_level, shown.capabilities)
    running = client.ps()
    assert [p.model for p in running.models] == names and running.models[0].context_length > 0, running
    print("ps:", running.models[0].model, running.models[0].context_length)

    # Chat, not streamed, with options.
    messages = [{"role": "user", "content": "What is the capital of France?"}]
    r = client.chat(model=model, messages=messages, options={"temperature": 0, "num_predict": 24, "seed": 1})
    assert r.done and r.done_reason in ("stop", "length") and r.message.role == "assistant", r
    assert r.message.content and r.eval_count > 0 and r.prompt_eval_count > 0, r
    assert r.total_duration > 0 and r.eval_duration >= 0, r
    print("chat:", repr(r.message.content), r.done_reason, r.prompt_eval_count, r.eval_count)

    # The same, streamed: the same text, the counts on the last part.
    parts = list(client.chat(model=model, messages=messages, stream=True,
                             options={"temperature": 0, "num_predict": 24, "seed": 1}))
    text = "".join(p.message.content or "" for p in parts)
    assert text == r.message.content, (text, r.message.content)
    assert all(not p.done for p in parts[:-1]) and parts[-1].done and parts[-1].eval_count == r.eval_count, parts[-1]
    print("chat stream:", len(parts), "parts")

    # Structured output: format as a JSON Schema (the grammar engine).
    schema = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20},
                                               "country": {"type": "string", "maxLength": 20}},
              "required": ["city", "country"], "additionalProperties": False}
    r = client.chat(model=model, messages=[{"role": "user", "content": "Name a city and its country as JSON."}],
                    format=schema, options={"temperature": 0, "num_predict": 64})
    obj = json.loads(r.message.content)
    assert set(obj) == {"city", "country"}, obj
    print("chat format:", obj)

    # Tools: a round trip in the history (an earlier call and its result), then an answer.
    def get_weather(city: str) -> str:
        """Get the current weather in a city.

        Args:
          city: The name of the city
        """
        return "sunny, 24 C"

    history = [
        {"role": "user", "content": "What is the weather like in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
        {"role": "tool", "content": "sunny, 24 C", "tool_name": "get_weather"},
    ]
    r = client.chat(model=model, messages=history, tools=[get_weather], options={"temperature": 0, "num_predict": 32})
    assert r.done and (r.message.content or r.message.tool_calls), r
    for call in r.message.tool_calls or []:
        assert call.function.name and isinstance(call.function.arguments, dict), call
    print("chat tools:", repr(r.message.content), r.message.tool_calls)

    # Generate: streamed, templated; then raw with the context continued.
    parts = list(client.generate(model=model, prompt="Write one word.", stream=True, options={"num_predict": 8}))
    assert parts[-1].done and parts[-1].context and all(isinstance(p.response, str) for p in parts), parts[-1]
    print("generate stream:", repr("".join(p.response for p in parts)))
    g = client.generate(model=model, prompt="The capital of France is", raw=True,
                        options={"temperature": 0, "num_predict": 6})
    g2 = client.generate(model=model, prompt=" and of Italy", raw=True, context=g.context,
                         options={"temperature": 0, "num_predict": 6})
    assert g2.prompt_eval_count > len(g.context), (g2.prompt_eval_count, len(g.context))
    print("generate raw:", repr(g.response), "then", repr(g2.response))

    # Embeddings: /api/embed normalised, /api/embeddings raw, the same direction.
    e = client.embed(model=model, input=["The capital of France is Paris.", "hello"])
    assert len(e.embeddings) == 2 and all(abs(norm(v) - 1) < 1e-3 for v in e.embeddings), [norm(v) for v in e.embeddings]
    assert e.prompt_eval_count > 0
    one = client.embed(model=model, input="hello", dimensions=64)
    assert len(one.embeddings[0]) == 64 and abs(norm(one.embeddings[0]) - 1) < 1e-3
    old = client.embeddings(model=model, prompt="hello")
    assert abs(cosine(old.embedding, e.embeddings[1]) - 1) < 1e-4, cosine(old.embedding, e.embeddings[1])
    print("embed:", len(e.embeddings[0]), "dimensions")

    # Pull of the served name: already there.
    statuses = [p.status for p in client.pull(model, stream=True)]
    assert statuses[-1] == "success", statuses
    print("pull:", statuses)

    # Errors in Ollama's shape.
    try:
        client.chat(model="no-such-model", messages=messages)
    except ollama.ResponseError as err:
        assert err.status_code == 404, err
        print("unknown model:", err)
    else:
        raise AssertionError("no error for an unknown model")

    # The OpenAI client's embeddings.
    oa = OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0, timeout=600)
    res = oa.embeddings.create(model=model, input=["The capital of France is Paris.", "hello"])
    assert len(res.data) == 2 and res.usage.prompt_tokens > 0 and res.model, res
    v = res.data[1].embedding
    assert abs(norm(v) - 1) < 1e-3 and abs(cosine(v, e.embeddings[1]) - 1) < 1e-4
    b64 = oa.embeddings.create(model=model, input="hello", encoding_format="base64")  # asked for: left encoded
    floats = list(struct.unpack(f"<{len(v)}f", base64.b64decode(b64.data[0].embedding)))
    assert abs(cosine(floats, v) - 1) < 1e-5
    ids = oa.embeddings.create(model=model, input=[[28120, 905]])
    assert len(ids.data[0].embedding) == len(v)
    print("openai embeddings:", len(v), "dimensions,", res.usage.prompt_tokens, "tokens")
    print("ok")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print("assertion failed:", e, file=sys.stderr)
        raise
