"""OpenAI's own Python client against `attnscope serve`, as a user would drive it (run by
tests/test_serve.cpp with the server's base URL and a file holding the greedy text that
`attnscope generate` gives for the prompt below). Exits non-zero, saying why, on any difference.

    python3 serve_openai_client.py http://127.0.0.1:PORT/v1 EXPECTED_FILE
"""
import sys

import openai

base_url, expected_file = sys.argv[1], sys.argv[2]
with open(expected_file, encoding="utf-8") as f:
    expected = f.read()
client = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=30)
prompt = [464, 2068, 7586, 21831]
extra = {"ignore_eos": True}

models = client.models.list()
assert models.data[0].id == "synthetic:tiny", models

whole = client.completions.create(model="synthetic:tiny", prompt=prompt, max_tokens=12,
                                  temperature=0, extra_body=extra)
assert whole.choices[0].text == expected, (whole.choices[0].text, expected)
assert whole.choices[0].finish_reason == "length", whole
assert whole.usage.completion_tokens == 12, whole.usage

streamed = client.completions.create(model="synthetic:tiny", prompt=prompt, max_tokens=12,
                                     temperature=0, stream=True,
                                     stream_options={"include_usage": True}, extra_body=extra)
text, usage = "", None
for chunk in streamed:
    if chunk.choices:
        text += chunk.choices[0].text
    if chunk.usage:
        usage = chunk.usage
assert text == expected, (text, expected)
assert usage is not None and usage.completion_tokens == 12, usage

# n choices: greedy ones are all the greedy text; sampled ones follow seed, seed + 1, ...
greedy = client.completions.create(model="synthetic:tiny", prompt=prompt, max_tokens=12,
                                   temperature=0, n=2, extra_body=extra)
assert [c.index for c in greedy.choices] == [0, 1], greedy
assert all(c.text == expected for c in greedy.choices), greedy
assert greedy.usage.completion_tokens == 24, greedy.usage
sampled = client.completions.create(model="synthetic:tiny", prompt=prompt, max_tokens=8,
                                    temperature=1, seed=9, n=2, extra_body=extra)
second = client.completions.create(model="synthetic:tiny", prompt=prompt, max_tokens=8,
                                   temperature=1, seed=10, extra_body=extra)
assert sampled.choices[1].text == second.choices[0].text, (sampled, second)

try:
    client.completions.create(model="synthetic:tiny", prompt=prompt, max_tokens=0)
    raise AssertionError("max_tokens=0 was accepted")
except openai.BadRequestError as error:
    assert "max_tokens" in str(error), error
print("openai client: ok")
