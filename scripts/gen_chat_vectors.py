#!/usr/bin/env python3
"""Renders real chat templates with Python jinja2, configured as Hugging Face's
apply_chat_template configures it, and writes the outputs as test vectors for pagoda's
renderer (tokenizer/chat_vectors_test.go compares byte for byte).

The environment is transformers' (utils/chat_template_utils.py):

  ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                extensions=[jinja2.ext.loopcontrols])
  filters["tojson"]        = json.dumps(x, ensure_ascii=False, indent, separators, sort_keys)
  globals["raise_exception"] raises TemplateError(message)
  globals["strftime_now"]    formats the current time; here a fixed clock (FIXED_NOW)
  render(messages=..., tools=..., documents=None, add_generation_prompt=...,
         bos_token=..., eos_token=..., **extra)      # extra: enable_thinking, date_string, ...

Templates are read from tokenizer/testdata/templates/ (their sources, licences and sha256
sums are in that folder's README.md); each vector records the sha256 of the template it was
rendered from, and the Go test checks it, so a template edited without regenerating fails.
FEATURES adds small inline templates ("source" instead of "template"), one per Jinja feature
where pagoda's renderer departs from gonja to follow jinja2.

Dicts keep their insertion order, as Python's do: tool schemas are written in the order
OpenAI-style clients send them (type, function{name, description, parameters}), not sorted.
Message content is always a string (pagoda's Message.Content is one).

    python3 -m venv /tmp/jinja && /tmp/jinja/bin/pip install jinja2
    /tmp/jinja/bin/python scripts/gen_chat_vectors.py

jinja2 is needed only here, never at run time.
"""
import datetime
import hashlib
import json
import os

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEMPLATES = os.path.join(ROOT, "tokenizer", "testdata", "templates")
OUT = os.path.join(ROOT, "tokenizer", "testdata", "chat_templates.vectors.json")
FIXED_NOW = datetime.datetime(2024, 9, 3, 14, 5, 9)  # must match vectorsNow in chat_vectors_test.go


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


# ---------------------------------------------------------------- conversations

SYSTEM = {"role": "system", "content": "You are a concise assistant."}
CONV = [
    SYSTEM,
    {"role": "user", "content": "What is the capital of France?"},
    {"role": "assistant", "content": "Paris."},
    {"role": "user", "content": "  And of Italy? Answer in one word 🙂\n"},
]
NO_SYS = CONV[1:]
ODD = [
    {"role": "user", "content": "Quotes \" ' and <tags> & {{ braces }} {% raw %}\t"},
    {"role": "assistant", "content": "\n\nLeading newlines, trailing spaces   "},
    {"role": "user", "content": "Unicode: naïve café 中文 😶‍🌫️"},
]

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "City name, e.g. São Paulo"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer", "minimum": 1, "maximum": 7, "default": 1},
                "threshold": {"type": "number", "default": 0.5},
                "verbose": {"type": "boolean", "default": False},
                "extra": {"type": ["string", "null"], "default": None},
            },
            "required": ["location"],
        },
    },
}
TIME = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "Current time in a time zone",
        "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}, "required": []},
    },
}
TOOLS = [WEATHER, TIME]

ASK = {"role": "user", "content": "Weather in São Paulo and the time in Tokyo?"}


def call(name, arguments, call_id):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


TOOL_TURNS = [
    SYSTEM,
    ASK,
    {"role": "assistant", "content": "",
     "tool_calls": [call("get_weather", {"location": "São Paulo", "unit": "celsius", "days": 2,
                                         "threshold": 0.25, "verbose": True, "extra": None}, "call_1"),
                    call("get_time", {"tz": "Asia/Tokyo"}, "call_2")]},
    {"role": "tool", "tool_call_id": "call_1", "name": "get_weather",
     "content": "{\"temperature\": 23.5, \"sky\": \"clear\"}"},
    {"role": "tool", "tool_call_id": "call_2", "name": "get_time", "content": "21:04"},
    {"role": "assistant", "content": "It is 23.5 °C and clear in São Paulo; 21:04 in Tokyo."},
    {"role": "user", "content": "Thanks! And tomorrow?"},
]

# Qwen3: reasoning in history, both as reasoning_content and inline <think> blocks.
QWEN_REASONING = [
    {"role": "user", "content": "2+2?"},
    {"role": "assistant", "content": "4", "reasoning_content": "Simple arithmetic."},
    {"role": "user", "content": "Times 3?"},
    {"role": "assistant", "content": "\n\n12", "reasoning_content": "\n4 * 3 = 12\n"},
]
QWEN_INLINE_THINK = [
    {"role": "user", "content": "Name a prime."},
    {"role": "assistant", "content": "<think>\nSmall primes: 2, 3.\n</think>\n\n2"},
    {"role": "user", "content": "Another?"},
    {"role": "assistant", "content": "<think>\n\n5 is prime.\n\n</think>\n\n\n5"},
]
QWEN_TOOL_THINK = [
    ASK,
    {"role": "assistant", "content": "Let me look both up.",
     "reasoning_content": "Two tools are needed.",
     "tool_calls": [{"type": "function", "function": {
         "name": "get_weather", "arguments": "{\"location\": \"São Paulo\"}"}},
         {"name": "get_time", "arguments": {"tz": "Asia/Tokyo"}}]},
    {"role": "tool", "content": "{\"temperature\": 23.5}"},
    {"role": "tool", "content": "21:04"},
    {"role": "assistant", "content": "23.5 °C; 21:04.", "reasoning_content": "Both answered."},
]
QWEN_USER_TOOL_RESPONSE = [
    {"role": "user", "content": "Look it up."},
    {"role": "assistant", "content": "", "reasoning_content": "Call it.",
     "tool_calls": [call("get_time", {"tz": "UTC"}, "c0")]},
    {"role": "user", "content": "<tool_response>\n12:00\n</tool_response>"},
    {"role": "assistant", "content": "It is noon.", "reasoning_content": "Got it."},
]

# Llama 3.x: one tool call per assistant turn; results as ipython or tool turns.
LLAMA_TOOL_TURNS = [
    SYSTEM,
    ASK,
    {"role": "assistant", "content": "",
     "tool_calls": [call("get_weather", {"location": "São Paulo", "days": 2, "threshold": 0.25}, "c1")]},
    {"role": "ipython", "content": "{\"temperature\": 23.5}"},
    {"role": "assistant", "content": "",
     "tool_calls": [call("get_time", {"tz": "Asia/Tokyo"}, "c2")]},
    {"role": "tool", "content": "21:04"},
    {"role": "assistant", "content": "23.5 °C and 21:04."},
]
LLAMA_BUILTIN = [
    {"role": "user", "content": "Search for the weather in Paris."},
    {"role": "assistant", "content": "",
     "tool_calls": [call("brave_search", {"query": "weather Paris"}, "b1")]},
    {"role": "ipython", "content": "Sunny, 21 °C"},
]
TWO_CALLS = [ASK, {"role": "assistant", "content": "",
                   "tool_calls": [call("get_weather", {"location": "Rome"}, "a"),
                                  call("get_time", {"tz": "UTC"}, "b")]}]

# Phi-4-mini: tools travel as a JSON string in the system message's "tools" field.
PHI_TOOLS = json.dumps([{"name": "get_weather", "description": "Get the current weather",
                         "parameters": {"location": {"type": "str", "description": "City"}}}])
PHI_TOOL_TURNS = [
    {"role": "system", "content": "You are a helpful assistant with some tools.", "tools": PHI_TOOLS},
    {"role": "user", "content": "Weather in Oslo?"},
    {"role": "assistant", "content": "<|tool_call|>[{\"name\": \"get_weather\", "
                                     "\"arguments\": {\"location\": \"Oslo\"}}]<|/tool_call|>"},
    {"role": "tool", "content": "{\"temperature\": -3}"},
    {"role": "assistant", "content": "It is -3 °C in Oslo."},
]

# gpt-oss (OpenAI harmony): developer instructions, reasoning effort, tools as a TypeScript
# namespace, an earlier call with its thinking and result.
GPTOSS_DEV = [SYSTEM, {"role": "developer", "content": "Answer in French."}, NO_SYS[0]]
GPTOSS_TOOL_TURNS = [
    {"role": "developer", "content": "Use the tools."},
    ASK,
    {"role": "assistant", "content": "", "thinking": "Need the weather tool.",
     "tool_calls": [call("get_weather", {"location": "São Paulo"}, "call_1")]},
    {"role": "tool", "tool_call_id": "call_1", "content": "{\"temperature\": 23.5}"},
]
# (gonja's "is defined" is false for an explicit None, jinja2's true: the template's
# "// default: null" for "default": None is not reproduced, so these tools have no null default.)
GPTOSS_TOOLS = json.loads(json.dumps(TOOLS))
del GPTOSS_TOOLS[0]["function"]["parameters"]["properties"]["extra"]
GPTOSS_HISTORY = [
    {"role": "user", "content": "2+2?"},
    {"role": "assistant", "content": "4", "thinking": "Simple arithmetic."},
    {"role": "user", "content": "Times 3?"},
]

Q3, G3, P4, L32, L31, GO = ("qwen3.jinja", "gemma-3-it.jinja", "phi-4-mini-instruct.jinja",
                            "llama-3.2-instruct.jinja", "llama-3.1-instruct.jinja", "gpt-oss.jinja")
SPECIAL = {
    GO: ("<|startoftext|>", "<|return|>"),
    Q3: ("", "<|im_end|>"),
    G3: ("<bos>", "<eos>"),
    P4: ("<|endoftext|>", "<|endoftext|>"),
    L32: ("<|begin_of_text|>", "<|eot_id|>"),
    L31: ("<|begin_of_text|>", "<|eot_id|>"),
}

# (name, template, messages, add_generation_prompt, extra variables)
CASES = [
    ("gpt-oss/system", GO, CONV, True, {}),
    ("gpt-oss/developer-effort-low", GO, GPTOSS_DEV, True, {"reasoning_effort": "low"}),
    ("gpt-oss/tools-high", GO, GPTOSS_TOOL_TURNS, True, {"tools": GPTOSS_TOOLS, "reasoning_effort": "high"}),
    ("gpt-oss/history", GO, GPTOSS_HISTORY, True, {}),
    ("gpt-oss/final-message", GO, GPTOSS_HISTORY[:2], False, {}),
    ("qwen3/system", Q3, CONV, True, {}),
    ("qwen3/no-system", Q3, NO_SYS, False, {}),
    ("qwen3/odd", Q3, ODD, True, {}),
    ("qwen3/thinking-on", Q3, NO_SYS, True, {"enable_thinking": True}),
    ("qwen3/thinking-off", Q3, CONV, True, {"enable_thinking": False}),
    ("qwen3/reasoning-history", Q3, QWEN_REASONING, False, {}),
    ("qwen3/reasoning-history-then-ask", Q3, QWEN_REASONING + [{"role": "user", "content": "Thanks"}],
     True, {"enable_thinking": False}),
    ("qwen3/inline-think", Q3, QWEN_INLINE_THINK, False, {}),
    ("qwen3/tools", Q3, CONV, True, {"tools": TOOLS}),
    ("qwen3/tools-no-system", Q3, [ASK], True, {"tools": TOOLS, "enable_thinking": False}),
    ("qwen3/tool-calls", Q3, TOOL_TURNS, True, {"tools": TOOLS}),
    ("qwen3/tool-calls-thinking", Q3, QWEN_TOOL_THINK, False, {"tools": [WEATHER]}),
    ("qwen3/tool-response-as-user", Q3, QWEN_USER_TOOL_RESPONSE, True, {"enable_thinking": True}),
    ("qwen3/empty-tools", Q3, CONV, True, {"tools": []}),
    ("gemma-3/system", G3, CONV, True, {}),
    ("gemma-3/no-system", G3, NO_SYS, False, {}),
    ("gemma-3/odd", G3, ODD, True, {}),
    ("gemma-3/system-only", G3, [SYSTEM], True, {}),
    ("gemma-3/two-users-raises", G3, [NO_SYS[0], NO_SYS[0]], True, {}),
    ("gemma-3/assistant-first-raises", G3, [SYSTEM, NO_SYS[1]], True, {}),
    ("gemma-3/tool-role-raises", G3, TOOL_TURNS, True, {}),
    ("phi-4-mini/system", P4, CONV, True, {}),
    ("phi-4-mini/no-generation-prompt", P4, ODD, False, {}),
    ("phi-4-mini/tools", P4, PHI_TOOL_TURNS, True, {}),
    ("phi-4-mini/tools-none", P4, [dict(SYSTEM, tools=None)] + NO_SYS, True, {}),
    ("llama-3.2/system", L32, CONV, True, {}),
    ("llama-3.2/no-system", L32, NO_SYS, False, {}),
    ("llama-3.2/odd", L32, ODD, True, {}),
    ("llama-3.2/date-string", L32, NO_SYS, True, {"date_string": "26 Jul 2024"}),
    ("llama-3.2/tools", L32, CONV, True, {"tools": TOOLS}),
    ("llama-3.2/tools-in-system", L32, CONV, True, {"tools": TOOLS, "tools_in_user_message": False}),
    ("llama-3.2/custom-tools", L32, NO_SYS, True, {"custom_tools": [TIME]}),
    ("llama-3.2/tool-calls", L32, LLAMA_TOOL_TURNS, True, {"tools": TOOLS}),
    ("llama-3.2/two-calls-raises", L32, TWO_CALLS, True, {"tools": TOOLS}),
    ("llama-3.2/tools-without-user-raises", L32, [SYSTEM], True, {"tools": TOOLS}),
    ("llama-3.1/tool-calls", L31, LLAMA_TOOL_TURNS, True, {"tools": TOOLS}),
    ("llama-3.1/builtin-tools", L31, LLAMA_BUILTIN, True,
     {"builtin_tools": ["brave_search", "code_interpreter", "wolfram_alpha"]}),
    ("llama-3.1/builtin-and-custom-tools", L31, NO_SYS, True,
     {"builtin_tools": ["wolfram_alpha"], "tools": [TIME], "tools_in_user_message": False}),
]


# Small templates that exercise, one by one, the places where pagoda's renderer departs from gonja
# to follow jinja2 (inline conditionals, lstrip_blocks, dict order, dict methods and filters,
# is true/false, str methods, tojson of request JSON). (name, source, messages, agp, extra)
FEATURES = [
    ("features/inline-if", "{{ ('a' if true else \"b\") }}|{{ 'x' + ('a' if false else 'b') + 'c' }}|"
     "{{ 'a' if false else 'b' if false else 'c' }}|{% set x = [1 if true else 2, 3, 4 if false] %}{{ x | length }}"
     "|{{ 'b' if [] else 'c' }}{{ ([0] if true else 1)[0] }}{{ 0 if true else 1 }}"
     "|{{ 'n' if messages[-1].role == 'user' and not add_generation_prompt else ('g' if add_generation_prompt) }}",
     CONV, True, {}),
    ("features/inline-if-args", "{% set ns = namespace(v=('x' if messages|length > 1 else 'y'), w=1 if false else 2) %}"
     "{{ ns.v }}{{ ns.w }}{{ {'k': 'v' if true else 'w'}['k'] }}{{ messages[1 if true else 0].role }}"
     "{{ raise_exception('no') if false }}{{ [1, 2, 3][(0 if false else 1):] }}"
     "{% macro f(a, b='q' if true else 'r') %}{{ a }}{{ b }}{% endmacro %}{{ f('p' if true else 's') }}",
     CONV, True, {}),
    ("features/lstrip-blocks", "x {% if true %}y{% endif %}\n  {% if true %}z{% endif %} {#- c #} {# d #}w\n"
     "{% for m in messages %}{{ m.role }} {% endfor %}|{% for m in messages %}{{ m.role }}\t{% if true %}!"
     "{% endif %}{% endfor %}\n\t{% if true %}t{% endif %}\n  {{ 'v' }} {%+ if true %}+{% endif %}"
     "{{ 'x' -}}   {% if true %}-{% endif %}", CONV, True, {}),
    ("features/dict-order", "{% set d = {'b': 1, 'a': 2, 'C': 3} %}{{ d }}|{{ d | tojson }}|{{ d.items() | list }}|"
     "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}|{% for k, v in d | items %}{{ k }}{{ v }}{% endfor %}|"
     "{{ d.keys() | list }}{{ d.values() | list }}|{{ d | dictsort }}{{ d | dictsort(by='value', reverse=true) }}"
     "{{ d | dictsort(case_sensitive=true) }}|{{ d.get('a') }}{{ d.get('z', 'dflt') }}{{ d.get('z') is none }}",
     CONV, True, {}),
    ("features/request-json", "{{ tools | tojson }}\n{{ tools[0] | tojson(indent=2) }}\n"
     "{% for t in tools %}{% for k, v in t.function.parameters.properties.items() %}{{ k }}:{{ v.type }} {% endfor %}"
     "{% endfor %}\n{{ tools | map(attribute='function') | map(attribute='name') | join(', ') }}\n"
     "{{ tools[0].function.get('parameters').required }}{{ 'name' in tools[0].function }}{{ tools[0] is mapping }}"
     "{{ tools[0].function | length }}\n{% for k, v in tools[0].function | items %}{{ k }} {% endfor %}\n"
     "{{ messages[2].tool_calls[0].function.arguments | tojson }}|{{ (messages[2].tool_calls[0] | dictsort | first)[0] }}",
     TOOL_TURNS, True, {"tools": TOOLS}),
    ("features/empty-object", "{% for t in tools %}{{ t.function.name }}:{{ 'args' if t.function.parameters "
     "else 'none' }}{{ t.function.parameters | tojson }}{{ t.function.parameters | length }} {% endfor %}",
     CONV, True, {"tools": [{"type": "function", "function": {"name": "now", "parameters": {}}}, TIME]}),
    ("features/loop", "{% for m in messages %}{{ loop.previtem.role if loop.previtem else '-' }}>"
     "{{ loop.nextitem.role if loop.nextitem is defined else '-' }} {{ loop.index }}{{ loop.index0 }}"
     "{{ loop.revindex }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.cycle('a', 'b') }};{% endfor %}"
     "{% for m in messages if m.role != 'system' %}{% if loop.index > 2 %}{% break %}{% endif %}{{ m.role }}"
     "{% endfor %}{% for m in messages %}{% if loop.first %}{% continue %}{% endif %}{{ loop.index }}{% endfor %}",
     CONV, True, {}),
    ("features/tests", "{{ 0 is false }}{{ false is false }}{{ 1 is true }}{{ true is true }}{{ none is false }}"
     "{{ enable_thinking is false }}{{ tools is none }}{{ messages[0] is mapping }}{{ 's' is string }}{{ 1 is string }}",
     CONV, True, {"enable_thinking": False}),
    ("features/str-methods", "{{ 'a  b c'.rsplit() }}{{ ' a b '.rsplit(none, 1) }}{{ 'a,b,,c'.rsplit(',') }}"
     "{{ 'x'.rsplit('x') }}{{ 'a-b-c'.rsplit('-', 1) }}{{ 'a-b-c'.split('-', 1) }}{{ ' x\n'.split() }}"
     "{{ '<think>a</think>b'.split('</think>')[-1].lstrip('\\n') }}{{ 'x\n\n'.rstrip('\\n') }}"
     "{{ 'abc'[::-1] }}{{ messages[::-1] | map(attribute='role') | join(',') }}{{ 'abcdef'[1:5:2] }}"
     "{{ 'hello'.startswith(('x', 'he')) }}{{ 'hello'.endswith('lo') }}{{ 'a b'.title() }}",
     CONV, True, {}),
]


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def main():
    env = make_env()
    sources, out = {}, []
    for name, template, messages, agp, extra in CASES:
        if template not in sources:
            with open(os.path.join(TEMPLATES, template), "rb") as f:
                raw = f.read()
            sources[template] = (raw.decode("utf-8"), sha256(raw))
        src, digest = sources[template]
        for m in messages:
            assert isinstance(m["content"], str), (name, m)
        bos, eos = SPECIAL[template]
        case = {"name": name, "template": template, "template_sha256": digest, "messages": messages,
                "add_generation_prompt": agp, "bos_token": bos, "eos_token": eos, "vars": extra}
        variables = {"tools": None, "documents": None}
        variables.update(extra)
        try:
            case["expected"] = env.from_string(src).render(
                messages=messages, add_generation_prompt=agp, bos_token=bos, eos_token=eos,
                **variables)
        except jinja2.exceptions.TemplateError as e:
            case["error"] = str(e)
        out.append(case)
    for name, source, messages, agp, extra in FEATURES:
        case = {"name": name, "source": source, "messages": messages, "add_generation_prompt": agp,
                "bos_token": "<s>", "eos_token": "</s>", "vars": extra}
        variables = {"tools": None, "documents": None}
        variables.update(extra)
        case["expected"] = env.from_string(source).render(
            messages=messages, add_generation_prompt=agp, bos_token="<s>", eos_token="</s>", **variables)
        out.append(case)
    with open(OUT, "w", encoding="utf-8", newline="\n") as f:
        json.dump({"generator": "jinja2 " + jinja2.__version__ + ", configured as HF apply_chat_template "
                                "(scripts/gen_chat_vectors.py)",
                   "now": FIXED_NOW.isoformat(), "cases": out}, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("wrote", len(out), "cases to", os.path.relpath(OUT, ROOT))


if __name__ == "__main__":
    main()
