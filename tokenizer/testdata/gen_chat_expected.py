#!/usr/bin/env python3
"""Generates chat_expected.json: chat templates rendered by Python jinja2 configured exactly as
Hugging Face transformers' apply_chat_template configures it (chat_template_utils.py):

  ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                extensions=[jinja2.ext.loopcontrols])
  filters["tojson"]        = json.dumps(x, ensure_ascii=False, indent, separators, sort_keys)
  globals["raise_exception"], globals["strftime_now"]
  render(messages=..., tools=None, documents=None, add_generation_prompt=..., bos_token, eos_token, **vars)

strftime_now uses a fixed clock (FIXED_NOW) so that the output is reproducible; the Go test
passes the same clock. SmolLM2's template is read from the default model's GGUF
($PAGODA_MODELS or ~/.cache/pagoda/models/SmolLM2-135M-Instruct.Q4_1.gguf, needs `pip install
gguf`); the others are testdata/templates/*.jinja.

Run from anywhere: python3 tokenizer/testdata/gen_chat_expected.py
"""
import datetime
import json
import os

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
FIXED_NOW = datetime.datetime(2024, 9, 3, 14, 5, 9)  # must match fixedNow in chat_test.go
SMOLLM2_GGUF = os.path.join(
    os.environ.get("PAGODA_MODELS", os.path.expanduser("~/.cache/pagoda/models")),
    "SmolLM2-135M-Instruct.Q4_1.gguf")


def make_env():
    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def strftime_now(fmt):
        return FIXED_NOW.strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def smollm2_template():
    from gguf import GGUFReader
    reader = GGUFReader(SMOLLM2_GGUF)
    field = reader.fields["tokenizer.chat_template"]
    return bytes(field.parts[field.data[0]]).decode("utf-8")


SYS_CONV = [
    {"role": "system", "content": "You are a concise assistant."},
    {"role": "user", "content": "What is the capital of France?"},
    {"role": "assistant", "content": "Paris."},
    {"role": "user", "content": "  And of Italy? Answer in one word 🙂\n"},
]
NO_SYS_CONV = SYS_CONV[1:]
ODD_CONV = [
    {"role": "user", "content": "Quotes \" ' and <tags> & {{ braces }} {% raw %}"},
    {"role": "assistant", "content": "\n\nLeading newlines, trailing spaces   "},
    {"role": "user", "content": "Unicode: naïve café 中文 😶‍🌫️"},
]
# Keys in sorted order at every level: Go maps reach tojson with sorted keys, Python dicts in
# insertion order, so sorted input makes both agree.
TOOLS = [{
    "function": {
        "description": "Get the current weather in a city",
        "name": "get_weather",
        "parameters": {
            "properties": {
                "city": {"description": "City name", "type": "string"},
                "unit": {"enum": ["celsius", "fahrenheit"], "type": "string"},
            },
            "required": ["city"],
            "type": "object",
        },
    },
    "type": "function",
}]

# (name, template, messages, add_generation_prompt, vars)
CASES = [
    ("smollm2/system", "gguf:smollm2", SYS_CONV, True, {}),
    ("smollm2/no-system", "gguf:smollm2", NO_SYS_CONV, True, {}),
    ("smollm2/no-generation-prompt", "gguf:smollm2", ODD_CONV, False, {}),
    ("llama-3.1/system", "llama-3.1-instruct.jinja", SYS_CONV, True, {}),
    ("llama-3.1/no-system", "llama-3.1-instruct.jinja", NO_SYS_CONV, False, {}),
    ("llama-3.1/tools", "llama-3.1-instruct.jinja", NO_SYS_CONV, True, {"tools": TOOLS}),
    ("qwen2.5/system", "qwen2.5-instruct.jinja", SYS_CONV, True, {}),
    ("qwen2.5/no-system", "qwen2.5-instruct.jinja", ODD_CONV, True, {}),
    ("qwen2.5/tools", "qwen2.5-instruct.jinja", SYS_CONV, True, {"tools": TOOLS}),
    ("phi-3.5/system", "phi-3.5-mini-instruct.jinja", SYS_CONV, True, {}),
    ("phi-3.5/no-generation-prompt", "phi-3.5-mini-instruct.jinja", ODD_CONV, False, {}),
    ("gemma-2/no-system", "gemma-2-it.jinja", NO_SYS_CONV, True, {}),
    ("gemma-2/system-raises", "gemma-2-it.jinja", SYS_CONV, True, {}),
    ("mistral-nemo/system", "mistral-nemo-instruct.jinja", SYS_CONV, True, {}),
    ("mistral-nemo/not-alternating-raises", "mistral-nemo-instruct.jinja",
     [NO_SYS_CONV[0], NO_SYS_CONV[0]], True, {}),
    ("granite-3.3/no-system", "granite-3.3-instruct.jinja", NO_SYS_CONV, True, {}),
    ("smollm3/system", "smollm3.jinja", SYS_CONV, True, {}),
    ("smollm3/no-think", "smollm3.jinja", NO_SYS_CONV, True, {"enable_thinking": False}),
    ("features/system", "features.jinja", SYS_CONV, True, {}),
    ("features/odd", "features.jinja", ODD_CONV, False, {}),
]


def main():
    env = make_env()
    sources = {"gguf:smollm2": smollm2_template()}
    out = []
    for name, template, messages, agp, extra in CASES:
        if template not in sources:
            with open(os.path.join(HERE, "templates", template), encoding="utf-8") as f:
                sources[template] = f.read()
        case = {"name": name, "template": template, "messages": messages,
                "add_generation_prompt": agp, "bos_token": "<s>", "eos_token": "</s>", "vars": extra}
        if template == "gguf:smollm2":
            case["bos_token"], case["eos_token"] = "<|im_start|>", "<|im_end|>"
        try:
            variables = {"tools": None, "documents": None}
            variables.update(extra)
            case["expected"] = env.from_string(sources[template]).render(
                messages=messages, add_generation_prompt=agp,
                bos_token=case["bos_token"], eos_token=case["eos_token"], **variables)
        except jinja2.exceptions.TemplateError as e:
            case["error"] = str(e)
        out.append(case)
    path = os.path.join(HERE, "chat_expected.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"generator": "jinja2 " + jinja2.__version__ + ", configured as HF apply_chat_template",
                   "now": FIXED_NOW.isoformat(), "cases": out}, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("wrote", len(out), "cases to", path)


if __name__ == "__main__":
    main()
