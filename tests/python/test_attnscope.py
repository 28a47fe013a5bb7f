"""`import attnscope` (python/), tested as a Python user would use it, against independent
references: Hugging Face transformers' logits and greedy tokens (tests/fixtures/hf*), the
`attnscope` command line's own --logits-out (bit for bit: the same loop through two front
ends), and a float64 softmax for the attention maps. Run by ctest (test_python) with the build
tree's package on PYTHONPATH and the binary in ATTNSCOPE_BINARY."""

import json
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import attnscope
from references import FIXTURES, max_relative_difference, reference

BINARY = os.environ.get("ATTNSCOPE_BINARY", "")


@pytest.mark.parametrize("fixture", ["hf/tiny-a", "hf/tiny-b", "hf-llama/gqa-tied-llama3"])
def test_logits_match_hugging_face(fixture):
    ref = reference(fixture)
    model = attnscope.load(str(FIXTURES / fixture), threads=1)
    for row, ids in enumerate(ref["input_ids"]):
        logits = model.logits(ids)
        assert logits.dtype == np.float32
        assert logits.shape == (len(ids), model.config["vocab_size"])
        assert max_relative_difference(logits, ref["logits"][row]) < 1e-4


def test_greedy_generation_matches_hugging_face():
    ref = reference("hf/tiny-a")
    greedy = ref["greedy"]
    model = attnscope.load(str(FIXTURES / "hf/tiny-a"), threads=1)
    out = model.generate(greedy["prompt_ids"], max_new_tokens=greedy["max_new_tokens"])
    assert out.ids == greedy["generated_ids"]
    assert out.stop_reason == "length"
    assert out.decode_steps == len(out.ids) - 1
    assert out.prefill_seconds > 0 and out.decode_tokens_per_s > 0


@pytest.mark.skipif(not BINARY, reason="ATTNSCOPE_BINARY is not set (ctest sets it)")
def test_logits_equal_the_command_lines_logits_out_bit_for_bit(tmp_path):
    fixture = str(FIXTURES / "hf/tiny-a")
    prompt = [11, 108, 205, 302, 399]
    saved = tmp_path / "logits.npy"
    subprocess.run([BINARY, "generate", "--model", fixture, "--prompt-ids",
                    ",".join(map(str, prompt)), "-n", "6", "--threads", "1", "--json",
                    "--logits-out", str(saved)], check=True, capture_output=True)
    model = attnscope.load(fixture, threads=1)
    out = model.generate(prompt, max_new_tokens=6, logits=True)
    from_cli = np.load(saved)
    assert from_cli.shape == out.logits.shape == (6, model.config["vocab_size"])
    assert np.array_equal(from_cli, out.logits)


def test_every_backend_is_selectable_and_agrees_with_naive():
    model = attnscope.load("synthetic:llama-tiny", threads=1)
    ids = list(range(1, 40))
    model.attn = "naive"
    expected = model.logits(ids)
    for name in attnscope.backends():
        model.attn = name
        assert model.attn == name
        assert max_relative_difference(model.logits(ids), expected) < 1e-5


def test_logits_on_the_cpu_are_the_models_own_tensor():
    model = attnscope.load("synthetic:llama-tiny", threads=1)
    logits = model.logits([1, 2, 3])
    assert not logits.flags["OWNDATA"]  # a view of the model's output, kept alive by its base
    assert logits.base is not None
    del model
    assert np.isfinite(logits).all()  # still readable after the model is gone


def test_attention_maps_are_softmax_of_qk_for_eager_and_flash():
    model = attnscope.load("synthetic:tiny", threads=1, attn="naive")
    ids = [5, 17, 3, 42, 8, 19, 23]
    eager = model.attention_maps(ids, layers=[0, 1], heads=[0, 3])
    assert eager.shape == (2, 2, len(ids), len(ids))
    # Each query's probabilities sum to 1 over the keys it sees, and are 0 beyond them.
    np.testing.assert_allclose(eager.sum(axis=-1), 1.0, atol=1e-6)
    assert np.all(np.triu(eager, k=1) == 0)
    model.attn = "flash"
    with pytest.warns(UserWarning, match="recomputed"):
        recomputed = model.attention_maps(ids, layers=[0, 1], heads=[0, 3])
    np.testing.assert_allclose(recomputed, eager, atol=1e-5)


def test_profile_returns_rows_steps_per_layer_and_a_chrome_trace(tmp_path):
    model = attnscope.load("synthetic:tiny", threads=1)
    profile = attnscope.profile(model, prompt_len=8, gen=2)
    names = {row["name"] for row in profile.rows}
    assert {"forward", "layer", "linear", "attention.flash"} <= names
    profiled = [s for s in profile.steps if s["profiled"]]
    assert [s["phase"] for s in profiled] == ["prefill", "decode", "decode"]
    assert [s["phase"] for s in profile.steps[:2]] == ["warm-up prefill", "warm-up decode"]
    for step in profiled:
        assert step["observed"]["steps_min"] == step["predicted"]["steps"]
        layers = step["attention_by_layer"]
        assert [l["layer"] for l in layers] == list(range(model.config["n_layers"]))
        assert sum(l["attention_ms"] for l in layers) == pytest.approx(step["attention_ms"])
    path = tmp_path / "trace.json"
    profile.write_chrome_trace(str(path))
    events = json.loads(path.read_text())["traceEvents"]
    assert any(e.get("name") == "layer 1" for e in events)


def test_tokenizer_round_trips_openais_vocabulary():
    model = attnscope.load("synthetic:tiny", threads=1)
    if not model._native.has_tokenizer():
        pytest.skip("SKIPPED: the shared GPT-2 vocabulary is not in this build's fixtures")
    ids = model.tokenizer.encode("Hello world")
    assert ids == [15496, 995]  # OpenAI's GPT-2 ids
    assert model.tokenizer.decode(ids) == "Hello world"
    out = model.generate("Hello world", max_new_tokens=3, temperature=1.0, top_k=50, seed=7)
    again = model.generate("Hello world", max_new_tokens=3, temperature=1.0, top_k=50, seed=7)
    assert out.ids == again.ids and out.text == model.tokenizer.decode(out.ids)


def test_chat_template_renders_as_transformers_does(tmp_path):
    model = attnscope.load("synthetic:tiny", threads=1)
    if not model._native.has_tokenizer():
        pytest.skip("SKIPPED: the shared GPT-2 vocabulary is not in this build's fixtures")
    cases = json.loads((FIXTURES / "chat_templates" / "cases.json").read_text(encoding="utf-8"))
    case = next(c for c in cases if c["name"] == "smollm2: non-ascii, add_generation_prompt=True")
    template = tmp_path / "smollm2.jinja"
    template.write_text(case["template"], encoding="utf-8")
    messages = case["variables"]["messages"]
    text = model.tokenizer.apply_chat_template(messages, tokenize=False,
                                               chat_template=str(template))
    assert text == case["rendered"]  # transformers' own rendering
    ids = model.tokenizer.apply_chat_template(messages, chat_template=str(template))
    assert ids == model.tokenizer.encode(case["rendered"])  # GPT-2's vocabulary adds no tokens
    out = model.generate(ids, max_new_tokens=2)
    assert len(out.ids) == 2
    # A tool call, its result and the tools' schemas, as transformers renders Qwen2.5's template.
    case = next(c for c in cases if c["name"] == "qwen2.5: tools, tools_in_user_message=True")
    template = tmp_path / "qwen2.5.jinja"
    template.write_text(case["template"], encoding="utf-8")
    text = model.tokenizer.apply_chat_template(case["variables"]["messages"],
                                               tools=case["variables"]["tools"], tokenize=False,
                                               chat_template=str(template))
    assert text == case["rendered"]
    # The final message left open, as transformers' continue_final_message leaves it.
    case = next(c for c in cases if c["name"].startswith("continue_final_message: qwen2.5"))
    text = model.tokenizer.apply_chat_template(case["variables"]["messages"], tokenize=False,
                                               continue_final_message=True,
                                               chat_template=str(template))
    assert text == case["rendered"]
    # Keyword arguments are the template's variables, as transformers passes them.
    case = next(c for c in cases if c["name"] == "thinking switch: enable_thinking=False")
    template.write_text(case["template"], encoding="utf-8")
    text = model.tokenizer.apply_chat_template(case["variables"]["messages"], tokenize=False,
                                               chat_template=str(template),
                                               enable_thinking=False)
    assert text == case["rendered"]
    with pytest.raises(ValueError, match="continue_final_message"):
        model.tokenizer.apply_chat_template(messages, add_generation_prompt=True,
                                            continue_final_message=True,
                                            chat_template=str(template))
    with pytest.raises(TypeError, match="tools must be a list"):
        model.tokenizer.apply_chat_template(messages, tools="get_weather",
                                            chat_template=str(template))
    with pytest.raises(attnscope.Error, match=r"messages\[0\] must be an object"):
        model.tokenizer.apply_chat_template([{"content": "no role"}], chat_template=str(template))
    with pytest.raises(attnscope.Error, match="no chat template"):
        model.tokenizer.apply_chat_template(messages)  # GPT-2 has none
    with pytest.raises(TypeError, match="list of dicts"):
        model.tokenizer.apply_chat_template("hello", chat_template=str(template))


TRIP_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"},
                                               "n": {"type": "integer"}},
               "required": ["name", "n"], "additionalProperties": False}


@pytest.mark.skipif(not BINARY, reason="ATTNSCOPE_BINARY is not set (ctest sets it)")
@pytest.mark.parametrize("flags,kwargs", [
    (["--json-object"], dict(json_object=True)),
    (["--json-schema", "SCHEMA_FILE"], dict(json_schema=TRIP_SCHEMA)),
    (["--presence-penalty", "0.8", "--frequency-penalty", "0.5", "--ignore-eos",
      "--logit-bias", "7:3.5,100:-100"],
     dict(presence_penalty=0.8, frequency_penalty=0.5, ignore_eos=True,
          logit_bias={7: 3.5, 100: -100})),
])
def test_json_mode_and_penalties_pick_what_the_command_line_picks(flags, kwargs, tmp_path):
    # The command line's picks are checked against the raw log-probabilities in test_cli.
    fixture, tokenizer = str(FIXTURES / "hf/tiny-a"), str(FIXTURES / "hf/perplexity")
    prompt = [11, 108, 205, 302, 399]
    (tmp_path / "schema.json").write_text(json.dumps(TRIP_SCHEMA))
    flags = [str(tmp_path / "schema.json") if f == "SCHEMA_FILE" else f for f in flags]
    cli = json.loads(subprocess.run(
        [BINARY, "generate", "--model", fixture, "--tokenizer", tokenizer, "--prompt-ids",
         ",".join(map(str, prompt)), "-n", "24", "--threads", "1", "--json", *flags],
        check=True, capture_output=True, text=True).stdout)
    model = attnscope.load(fixture, threads=1, tokenizer=tokenizer)
    out = model.generate(prompt, max_new_tokens=24, **kwargs)
    assert out.ids == cli["generated_ids"]
    assert out.stop_reason == cli["stop_reason"]
    if out.stop_reason == "stop":
        assert isinstance(json.loads(out.text), dict)
    if "json_schema" in kwargs:
        if out.stop_reason == "stop":
            reply = json.loads(out.text)
            assert list(reply) == ["name", "n"] and isinstance(reply["n"], int), reply
        else:
            assert out.text.startswith('{"name"') or out.text.lstrip().startswith('{')
        with pytest.raises(ValueError, match="root must be an object"):
            model.generate(prompt, json_schema={"type": "string"})
        with pytest.raises(ValueError, match="not both"):
            model.generate(prompt, json_object=True, json_schema=TRIP_SCHEMA)
        with pytest.raises(TypeError, match="json_schema must be a dict or a str"):
            model.generate(prompt, json_schema=5)


def test_bad_arguments_raise_the_right_exceptions(tmp_path):
    with pytest.raises(ValueError, match="attn"):
        attnscope.load("synthetic:tiny", attn="fastest")
    with pytest.raises(ValueError, match="device"):
        attnscope.load("synthetic:tiny", device="tpu")
    with pytest.raises(TypeError):
        attnscope.load(42)
    with pytest.raises(attnscope.Error, match="unknown synthetic model"):
        attnscope.load("synthetic:nope")
    (tmp_path / "config.json").write_text("{ not json")
    with pytest.raises(attnscope.Error, match="config.json"):
        attnscope.load(str(tmp_path))
    model = attnscope.load("synthetic:llama-tiny", threads=1)
    with pytest.raises(ValueError, match="token ids"):
        model.logits([1, 2, 10**6])
    with pytest.raises(TypeError):
        model.logits([1.5, 2.0])
    with pytest.raises(ValueError, match="no tokens"):
        model.logits([])
    with pytest.raises(ValueError, match="temperature"):
        model.generate([1], temperature=-1)
    with pytest.raises(ValueError, match="top_p"):
        model.generate([1], top_p=0)
    with pytest.raises(ValueError, match="max_new_tokens"):
        model.generate([1], max_new_tokens=-1)
    with pytest.raises(attnscope.Error, match="context length"):
        model.generate([1] * 10, max_new_tokens=model.config["context_length"])
    # The runtime's own refusals name Python's arguments, not the command line's flags.
    with pytest.raises(attnscope.Error, match=r"^prompt_len: .* exceed the context length"):
        attnscope.profile(model, prompt_len=model.config["context_length"], gen=1)
    # 2^20 rows of GPT-2's vocabulary: ~200 GiB of logits, refused before any is allocated.
    with pytest.raises(attnscope.Error, match=r"^batch: .*\(lower batch, prompt_len or gen\)$"):
        attnscope.profile(attnscope.load("synthetic:tiny", threads=1), prompt_len=8, gen=1,
                          batch=1 << 20)
    with pytest.raises(attnscope.Error, match="tokenizer"):
        model.generate("text needs a tokenizer")  # synthetic Llama shapes have none
    with pytest.raises(attnscope.Error, match="tokenizer"):
        model.generate([1], json_object=True)
    with pytest.raises(ValueError, match="presence_penalty"):
        model.generate([1], presence_penalty=3)
    with pytest.raises(TypeError, match="frequency_penalty"):
        model.generate([1], frequency_penalty="high")
    with pytest.raises(ValueError, match="logit_bias"):
        model.generate([1], logit_bias={1: 101})
    with pytest.raises(ValueError, match="logit_bias key must be at most"):
        model.generate([1], logit_bias={10**6: 1})
    with pytest.raises(TypeError, match="logit_bias must be a dict"):
        model.generate([1], logit_bias=[(1, 2.0)])
    # The command line's ceilings hold here too, before anything runs.
    with pytest.raises(ValueError, match="threads must be at most 4096"):
        attnscope.load("synthetic:tiny", threads=100000)
    with pytest.raises(ValueError, match="max_new_tokens must be at most"):
        model.generate([1], max_new_tokens=2**63 - 1)
    with pytest.raises(ValueError, match="seed must be at most"):
        model.generate([1], seed=2**64)
    with pytest.raises(ValueError, match="temperature"):
        model.generate([1], temperature=1e308)
    with pytest.raises(ValueError, match="gen must be at most"):
        attnscope.profile(model, prompt_len=8, gen=2**62)
    with pytest.raises(ValueError, match="json_schema is empty"):
        model.generate([1], json_schema="")
    with_vocabulary = attnscope.load(str(FIXTURES / "hf/tiny-a"), threads=1,
                                     tokenizer=str(FIXTURES / "hf/perplexity"))
    deep = '{"type":"object","properties":{"a":' * 60000 + '{}' + '}}' * 60000
    with pytest.raises(ValueError, match="nests deeper than 256 JSON levels"):
        with_vocabulary.generate([1], json_schema=deep)
    # layers and heads: any sequence of ints, NumPy's included, within the model.
    assert model.attention_maps([1, 2], layers=np.array([0])).shape[0] == 1
    with pytest.raises(TypeError, match="layers must be a sequence"):
        model.attention_maps([1, 2], layers=0)
    with pytest.raises(ValueError, match="layers\\[i\\] must be at most"):
        model.attention_maps([1, 2], layers=[5])
    assert issubclass(attnscope.Error, RuntimeError)


def test_threads_sharing_a_model_take_turns():
    # attention_maps and profile attach to the model's context for a whole pass: run beside
    # other calls on the same model, they must neither crash nor see the other's steps.
    model = attnscope.load("synthetic:tiny", threads=1)
    stop = threading.Event()

    def other():
        while not stop.is_set():
            model.logits(list(range(1, 60)))

    thread = threading.Thread(target=other)
    thread.start()
    try:
        for _ in range(5):
            assert model.attention_maps(list(range(1, 50))).shape == (2, 4, 49, 49)
            attnscope.profile(model, prompt_len=16, gen=2)
    finally:
        stop.set()
        thread.join()


def resident_kib():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def test_no_leak_over_a_thousand_load_generate_cycles():
    def cycle():
        model = attnscope.load("synthetic:llama-tiny", threads=1)
        model.generate([1, 2, 3], max_new_tokens=4)
        model.logits([1, 2, 3])

    for _ in range(100):  # warm: the allocator's arenas and the import settle
        cycle()
    before = resident_kib()
    for _ in range(1000):
        cycle()
    # Each cycle makes and frees about 0.6 MB of weights: a leak of any of it would be 600 MB.
    assert resident_kib() - before < 16 * 1024


def test_generate_releases_the_gil():
    model = attnscope.load("synthetic:tiny", threads=1)
    ticks = 0
    done = threading.Event()

    def count():
        nonlocal ticks
        while not done.is_set():
            ticks += 1
            time.sleep(0.001)

    counter = threading.Thread(target=count)
    counter.start()
    start = time.perf_counter()
    model.generate([1, 2, 3], max_new_tokens=60, ignore_eos=True)
    elapsed = time.perf_counter() - start
    done.set()
    counter.join()
    # A GIL held for the whole call would leave the counter at a tick or two.
    assert ticks > 0.2 * elapsed / 0.001


def test_ctrl_c_stops_a_long_generate_with_keyboard_interrupt():
    script = (
        "import attnscope, sys\n"
        "m = attnscope.load('synthetic:gpt2', threads=1)\n"
        "print('ready', flush=True)\n"
        "try:\n"
        "    m.generate([1, 2, 3], max_new_tokens=1000, ignore_eos=True)\n"
        "except KeyboardInterrupt:\n"
        "    print('interrupted', flush=True)\n"
        "    sys.exit(3)\n")
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                             env=os.environ.copy())
    try:
        assert child.stdout.readline().strip() == "ready"
        time.sleep(0.5)
        child.send_signal(signal.SIGINT)
        start = time.perf_counter()
        out, _ = child.communicate(timeout=60)
        assert child.returncode == 3
        assert "interrupted" in out
        assert time.perf_counter() - start < 10  # between two tokens, not after 1000 of them
    finally:
        if child.poll() is None:  # a failed check never leaves the child running
            child.kill()
            child.wait()


def test_bench_attention_times_the_op_beside_its_cost_model():
    b, h, t, d = 2, 4, 64, 16
    for name in attnscope.backends():
        result = attnscope.bench_attention(name, batch=b, heads=h, seq_len=t, head_dim=d,
                                           reps=3, threads=1)
        assert len(result["times_ms"]) == 3 and min(result["times_ms"]) > 0
        assert result["flops"] == 4 * b * h * d * t * (t + 1) / 2  # FlashAttention's causal count
        assert result["bytes"] == 4 * b * h * t * d * 4  # q, k, v read and out written, f32
    decode = attnscope.bench_attention("flash", batch=1, heads=2, seq_len=300, head_dim=8,
                                       decode=True, reps=1, threads=1)
    assert decode["flops"] == 4 * 2 * 8 * 300
    # bf16_products: the same work; where the cpu has AMX, flash packs K and V for its tiles.
    plain = attnscope.bench_attention("flash", batch=1, heads=2, seq_len=64, reps=1, threads=1)
    rounded = attnscope.bench_attention("flash", batch=1, heads=2, seq_len=64, reps=1, threads=1,
                                        bf16_products=True)
    assert rounded["flops"] == plain["flops"]
    assert rounded["temporary_bytes"] >= plain["temporary_bytes"]
    with pytest.raises(attnscope.Error, match="bf16"):
        attnscope.bench_attention("naive", dtype="bf16", seq_len=8, reps=1)
    with pytest.raises(ValueError, match="multiple"):
        attnscope.bench_attention("flash", heads=6, kv_heads=4)
