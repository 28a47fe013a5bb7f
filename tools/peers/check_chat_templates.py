#!/usr/bin/env python3
"""attnscope's chat templates on real models' templates, beside transformers.

The llama-cpp-python sdist on PyPI carries llama.cpp's collection of real chat templates
(models/templates/*.jinja: Qwen2.5, Qwen3, Llama 3.x, Mistral, Gemma, DeepSeek, Phi, ...). For
each, this script renders two conversations, the assistant's turn opened, two ways and compares
the token ids:
  - "plain": a system message and a user message;
  - "tools": the tools' schemas, a user message, the assistant's tool call (arguments as a dict,
    as transformers' documentation writes them), the tool's result, the assistant's answer and a
    follow-up question;
each by transformers' apply_chat_template (its jinja2 sandbox) with the template as
chat_template, and by `attnscope generate --chat --chat-template FILE --messages CONVERSATION
--max-new-tokens 1 --json`, whose prompt_ids are the rendered conversation encoded (the
conversation file written as a chat completions request writes it).
Both use one tokenizer (--tokenizer, e.g. the Qwen2 one tools/peers/check_real_vocab.py writes),
so its special tokens (bos_token, eos_token) are what each template sees. A conversation
attnscope refuses prints attnscope's one-line reason; one transformers cannot render either is
skipped (a template that refuses tools, or system messages, raises there too).
Prints one line per template and the counts; exits 0 (a survey, not a gate).

Run from the repository root, after building attnscope, with transformers 5 (/tmp/hf):
    /tmp/hf/bin/python tools/peers/check_chat_templates.py --tokenizer /tmp/lcpp/qwen2 \\
        --sdist /tmp/lcpp/llama_cpp_python-*.tar.gz --out /tmp/lcpp/templates
"""

import argparse
import json
import os
import subprocess
from pathlib import Path

from check_real_vocab import extract

REPO = Path(__file__).resolve().parents[2]
SYSTEM = "You are a terse assistant."
USER = "What is 2 + 2? R\u00e9ponds en fran\u00e7ais."
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "The current weather in a city",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "The city's name"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city"]}}}]
CONVERSATIONS = {
    "plain": {"messages": [{"role": "system", "content": SYSTEM},
                           {"role": "user", "content": USER}]},
    "tools": {"messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call12345", "type": "function",
             "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
        {"role": "tool", "tool_call_id": "call12345", "name": "get_weather",
         "content": "18 C, sunny"},
        {"role": "assistant", "content": "Sunny, 18 \u00b0C."},
        {"role": "user", "content": "And in \u00c9vry?"}], "tools": TOOLS},
}


def extract_templates(sdist, out):
    extract(sdist, out, lambda name: "/models/templates/" in name and name.endswith(".jinja"))
    return sorted(out.glob("*.jinja"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizer", type=Path, required=True)
    parser.add_argument("--sdist", type=Path, required=True, help="llama-cpp-python's sdist")
    parser.add_argument("--out", type=Path, required=True, help="a scratch folder")
    parser.add_argument("--model", default="synthetic:qwen2.5-0.5b",
                        help="any model whose vocabulary holds the tokenizer's ids")
    parser.add_argument("--attnscope", default=str(REPO / "build" / "tools" / "attnscope"))
    args = parser.parse_args()
    os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_VERBOSITY="error")
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)
    counts = {"equal": 0, "differ": 0, "refused by attnscope": 0, "transformers failed": 0}
    for path in extract_templates(args.sdist, args.out):
        template = path.read_text(encoding="utf-8")
        for name, conversation in CONVERSATIONS.items():
            where = f"{path.name} ({name})"
            try:
                expected = tokenizer.apply_chat_template(
                    conversation["messages"], tools=conversation.get("tools"),
                    chat_template=template, add_generation_prompt=True, tokenize=True,
                    return_dict=False)
            except Exception as error:  # noqa: BLE001 (a survey: any failure is reported)
                counts["transformers failed"] += 1
                print(f"{where}: transformers failed ({type(error).__name__}), skipped")
                continue
            conversation_file = args.out / f"{name}.json"
            conversation_file.write_text(json.dumps(conversation), encoding="utf-8")
            result = subprocess.run(
                [args.attnscope, "generate", "--model", args.model, "--tokenizer",
                 str(args.tokenizer), "--chat", "--chat-template", str(path), "--messages",
                 str(conversation_file), "--max-new-tokens", "1", "--json"],
                capture_output=True, text=True)
            if result.returncode != 0:
                counts["refused by attnscope"] += 1
                reason = (result.stderr.strip().splitlines() or ["(no message)"])[-1]
                print(f"{where}: refused by attnscope: {reason}")
                continue
            ours = json.loads(result.stdout)["prompt_ids"]
            same = ours == expected
            counts["equal" if same else "differ"] += 1
            print(f"{where}: {len(expected)} ids {'equal' if same else 'DIFFER'}")
            if not same:
                print(f"    transformers: {tokenizer.decode(expected)!r}")
                print(f"    attnscope:    {tokenizer.decode(ours)!r}")
    print(", ".join(f"{what}: {count}" for what, count in counts.items()))


if __name__ == "__main__":
    main()
