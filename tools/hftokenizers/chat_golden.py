#!/usr/bin/env python3
"""Golden renderings of real chat templates, as transformers' apply_chat_template renders them.

Writes models/testdata/chat/golden.json, which models/chat_test.go checks byte for byte
(TestChatTemplateGolden). Run from the repository root with a Python that has jinja2 (3.1.6 was used):

    python3 tools/hftokenizers/chat_golden.py
    python3 tools/hftokenizers/chat_golden.py --bench   # render times, for docs/chat.md

The environment is built exactly as transformers builds it (utils/chat_template_utils.py,
_compile_jinja_template, 4.4x to 5.x):

    ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                  extensions=[AssistantTracker, jinja2.ext.loopcontrols])
    filters["tojson"] = json.dumps with ensure_ascii=False, indent, separators, sort_keys
    globals["raise_exception"] raises TemplateError(message)
    globals["strftime_now"] = datetime.now().strftime(format)

and rendered as render_jinja_template does: messages, tools=None, documents=None,
add_generation_prompt, and the tokenizer's special_tokens_map (bos_token, eos_token, ... where set).
AssistantTracker only serves {% generation %} blocks (return_assistant_tokens_mask), which none of
these templates has, so it is left out. strftime_now reads a fixed clock (NOW) instead of the real
one, as the Go side's ChatOptions.Now does, so that Llama 3.2's date is reproducible.

The templates (models/testdata/chat/*.jinja) are the chat_template strings of the checkpoints'
tokenizer_config.json; models/testdata/chat/README.md says where each came from.
"""
import json
import os
from datetime import datetime

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "..", "models", "testdata", "chat")
NOW = datetime(2025, 3, 7, 9, 30, 0)  # ChatOptions.Now in the Go test

# The special tokens of each checkpoint's tokenizer_config.json (special_tokens_map: those set).
TEMPLATES = {
    "meta-llama-Llama-3.1-8B-Instruct": {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
    "meta-llama-Llama-3.2-3B-Instruct": {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
    "Qwen-Qwen2.5-7B-Instruct": {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"},
    "Qwen-Qwen2-0.5B-Instruct": {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"},
    "HuggingFaceTB-SmolLM2-135M-Instruct": {"bos_token": "<|im_start|>", "eos_token": "<|im_end|>",
                                            "unk_token": "<|endoftext|>", "pad_token": "<|im_end|>"},
}

CONVERSATIONS = {
    "user": [{"role": "user", "content": "What is the capital of France?"}],
    "system_user": [
        {"role": "system", "content": "You are a terse assistant."},
        {"role": "user", "content": "Name three primes."},
    ],
    "multi_turn": [
        {"role": "system", "content": "  Answer in French.  \n"},
        {"role": "user", "content": "Hello!"},
        {"role": "assistant", "content": "Bonjour !"},
        {"role": "user", "content": "How are you?\n\n"},
    ],
    "unicode": [
        {"role": "user", "content": "Grüße, 世界 🌍 — \"quotes\", <tags> & \\backslash\ttab {{ not jinja }} {% raw %}"},
        {"role": "assistant", "content": "ça va ✓"},
    ],
    "empty": [{"role": "user", "content": ""}],
    "assistant_last": [
        {"role": "user", "content": "Say hi."},
        {"role": "assistant", "content": "hi"},
    ],
}


def compile_template(source):
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return NOW.strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env.from_string(source)


def bench(reps=20):
    """Median render time of a 1,000-turn conversation, as models' BenchmarkChatTemplateApply."""
    import time
    msgs = [{"role": ("user", "assistant")[i % 2], "content": "word " * 50} for i in range(1000)]
    for name in ("meta-llama-Llama-3.2-3B-Instruct", "Qwen-Qwen2.5-7B-Instruct", "HuggingFaceTB-SmolLM2-135M-Instruct"):
        with open(os.path.join(DATA, name + ".jinja"), encoding="utf-8") as f:
            tmpl = compile_template(f.read())
        times = []
        for _ in range(reps):
            t = time.perf_counter()
            tmpl.render(messages=msgs, tools=None, documents=None, add_generation_prompt=True, bos_token="<s>")
            times.append(time.perf_counter() - t)
        times.sort()
        print(f"{name}: {times[len(times) // 2] * 1e3:.2f} ms (min {times[0] * 1e3:.2f}, max {times[-1] * 1e3:.2f})")


def main():
    import sys
    if sys.argv[1:] == ["--bench"]:
        bench()
        return
    cases = []
    for name, specials in TEMPLATES.items():
        with open(os.path.join(DATA, name + ".jinja"), encoding="utf-8") as f:
            tmpl = compile_template(f.read())
        for conv, messages in CONVERSATIONS.items():
            for agp in (True, False):
                text = tmpl.render(messages=messages, tools=None, documents=None, add_generation_prompt=agp, **specials)
                cases.append({"template": name, "conversation": conv, "add_generation_prompt": agp, "text": text})
    out = {
        "jinja2": jinja2.__version__,
        "now": NOW.isoformat(),
        "special_tokens": TEMPLATES,
        "conversations": CONVERSATIONS,
        "cases": cases,
    }
    with open(os.path.join(DATA, "golden.json"), "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"{len(cases)} renderings written to {os.path.relpath(os.path.join(DATA, 'golden.json'))}")


if __name__ == "__main__":
    main()
