"""OpenAI's own Python client's chat API against `attnscope serve --chat-template` (run by
tests/test_serve.cpp with the server's base URL, a file holding the conversation as JSON and a
file holding the greedy text its rendered prompt gives through /v1/completions). Exits non-zero,
saying why, on any difference.

    python3 serve_openai_chat_client.py http://127.0.0.1:PORT/v1 MESSAGES_FILE EXPECTED_FILE
"""
import json
import sys

import openai

base_url, messages_file, expected_file = sys.argv[1], sys.argv[2], sys.argv[3]
with open(messages_file, encoding="utf-8") as f:
    messages = json.load(f)
with open(expected_file, encoding="utf-8") as f:
    expected = f.read()
client = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=30)
extra = {"ignore_eos": True}

whole = client.chat.completions.create(model="synthetic:tiny", messages=messages, max_tokens=8,
                                       temperature=0, extra_body=extra)
assert whole.choices[0].message.role == "assistant", whole
assert whole.choices[0].message.content == expected, (whole.choices[0].message.content, expected)
assert whole.choices[0].finish_reason == "length", whole
assert whole.usage.completion_tokens == 8, whole.usage

streamed = client.chat.completions.create(model="synthetic:tiny", messages=messages,
                                          max_completion_tokens=8, temperature=0, stream=True,
                                          stream_options={"include_usage": True},
                                          extra_body=extra)
text, roles, usage = "", [], None
for chunk in streamed:
    if chunk.choices:
        delta = chunk.choices[0].delta
        text += delta.content or ""
        if delta.role:
            roles.append(delta.role)
    if chunk.usage:
        usage = chunk.usage
assert text == expected, (text, expected)
assert roles == ["assistant"], roles
assert usage is not None and usage.completion_tokens == 8, usage
print("openai chat client: ok")
