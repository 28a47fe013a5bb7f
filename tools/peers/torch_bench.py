#!/usr/bin/env python3
"""PyTorch peer of `attnscope bench`: the same tests through Hugging Face's models, same JSON.

--op model: --model DIR loads a Hugging Face folder (make_random_checkpoint.py's, say); --model gpt2 is GPT2LMHeadModel built from GPT2Config() (the 124M shape, attnscope's
synthetic:gpt2); --model smollm2-135m is LlamaForCausalLM with SmolLM2-135M's shape (30 layers,
576 wide, 9 query / 3 key-value heads, tied head: attnscope's synthetic:smollm2-135m); --model
llama-3.2-1b is Llama 3.2 1B's shape (16 layers, 2048 wide, 32 / 8 heads, attnscope's
synthetic:llama-3.2-1b). Seeded random weights, attn_implementation "eager" and "sdpa", f32 (f16/bf16 too; on the CPU as in attnscope), torch.inference_mode().
A prefill test ppN is one forward pass over batch x N random ids that asks transformers for the
last position's logits only (logits_to_keep=1), which is the work attnscope's prefill does: the LM
head over all N positions would add ~20% to GPT-2's prefill FLOPs. A decode test tgN @ dD fills the cache with D random ids
per row (use_cache=True), then takes N greedy steps of one token per row, feeding
past_key_values back by hand (not generate()). Timed like attnscope: warm-up runs of every test,
then repetitions going round the whole grid; tokens/s = batch x tokens / time of the timed phase,
time to first token = the fill plus the first step.

--op attention: torch.nn.functional.scaled_dot_product_attention(is_causal=True) on random
q, k, v [B, H, T, D] (the study's shape by default). On CUDA each SDPA backend is also pinned
with torch.nn.attention.sdpa_kernel (MATH, EFFICIENT_ATTENTION, FLASH_ATTENTION,
CUDNN_ATTENTION; --sdpa picks some); a backend that cannot serve the case gets a row with the
reason.

Cost: model weights (~0.5 GB in f32) plus the cache and activations of the largest test.

    tools/peers/torch_bench.py --threads 2 -p 128,512 -n 128 -r 3 --output out.json
"""
import argparse
import datetime
import inspect
import json
import statistics
import sys
import time
from pathlib import Path

import torch
import transformers

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from cpu_model import cpu_model  # noqa: E402  (tools/bench/cpu_model.py)


TORCH_DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
DTYPE_BYTES = {"f32": 4, "f16": 2, "bf16": 2}


def int_list(text):
    return [int(x) for x in text.split(",") if x != ""]


def mean_stddev(values):
    if not values:
        return None, None
    return statistics.mean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def synchronize(device):
    if device == "cuda":
        torch.cuda.synchronize()


def reset_peak(device):
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()


def peak_bytes(device):
    # The CPU allocator keeps no peak counter: null there.
    return torch.cuda.max_memory_allocated() if device == "cuda" else None


def test_name(prompt_len, gen, depth):
    if prompt_len:
        return f"pp{prompt_len}"
    return f"tg{gen}" + (f" @ d{depth}" if depth else "")


def last_logits_only(model):
    """The keyword that makes transformers compute the LM head for the last position only:
    logits_to_keep (transformers >= 4.45) or num_logits_to_keep (4.43-4.44)."""
    parameters = inspect.signature(model.forward).parameters
    for name in ("logits_to_keep", "num_logits_to_keep"):
        if name in parameters:
            return {name: 1}
    sys.exit("torch_bench: error: this transformers cannot compute last-position logits only "
             "(no logits_to_keep); the prefill tests would do more work than attnscope's")


def run_model_test(model, test, device, vocab, samples):
    batch, prompt_len, gen, depth = test["batch"], test["prompt_len"], test["gen"], test["depth"]
    generator = torch.Generator().manual_seed(prompt_len * 7919 + depth)
    reset_peak(device)
    if prompt_len:
        ids = torch.randint(0, vocab, (batch, prompt_len), generator=generator).to(device)
        synchronize(device)
        start = time.perf_counter()
        model(input_ids=ids, use_cache=True, **last_logits_only(model))
        synchronize(device)
        samples["seconds"].append(time.perf_counter() - start)
    else:
        context = torch.randint(0, vocab, (batch, depth), generator=generator).to(device)
        next_ids = torch.full((batch, 1), vocab - 1, dtype=torch.long, device=device)
        past = None
        synchronize(device)
        start = time.perf_counter()
        if depth:
            out = model(input_ids=context, use_cache=True, **last_logits_only(model))
            past = out.past_key_values
            next_ids = out.logits[:, -1].argmax(-1, keepdim=True)
        synchronize(device)
        decode_start = time.perf_counter()
        for step in range(gen):
            out = model(input_ids=next_ids, past_key_values=past, use_cache=True)
            past = out.past_key_values
            next_ids = out.logits[:, -1].argmax(-1, keepdim=True)
            if step == 0:
                synchronize(device)
                samples["ttft_ms"].append((time.perf_counter() - start) * 1e3)
        synchronize(device)
        samples["seconds"].append(time.perf_counter() - decode_start)
    peak = peak_bytes(device)
    if peak is not None:
        samples["peak_bytes"] = max(samples["peak_bytes"] or 0, peak)


def model_config(name):
    """(config, model class, context length) of a --model shape, or of a Hugging Face folder."""
    if Path(name).is_dir():
        config = transformers.AutoConfig.from_pretrained(name)
        context = getattr(config, "max_position_embeddings", None) or config.n_positions
        return config, transformers.AutoModelForCausalLM, context
    if name == "gpt2":
        config = transformers.GPT2Config()
        return config, transformers.GPT2LMHeadModel, config.n_positions
    if name == "llama-3.2-1b":  # Llama 3.2 1B's config.json, its llama3 rope scaling included
        config = transformers.LlamaConfig(
            vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
            num_attention_heads=32, num_key_value_heads=8, head_dim=64,
            max_position_embeddings=131072, rms_norm_eps=1e-5, rope_theta=500000.0,
            tie_word_embeddings=True,
            rope_scaling={"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                          "high_freq_factor": 4.0, "original_max_position_embeddings": 8192})
    else:
        config = transformers.LlamaConfig(
            vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
            num_attention_heads=9, num_key_value_heads=3, head_dim=64,
            max_position_embeddings=8192, rms_norm_eps=1e-5, rope_theta=100000.0,
            tie_word_embeddings=True)
    return config, transformers.LlamaForCausalLM, config.max_position_embeddings


def model_rows(args, threads):
    device = args.device
    config, model_class, context = model_config(args.model)
    rows = []
    for backend in args.attn.split(","):
        if backend not in ("eager", "sdpa"):
            sys.exit(f"torch_bench: error: --attn {backend}: use eager and/or sdpa")
        torch.manual_seed(0)
        if Path(args.model).is_dir():
            model = model_class.from_pretrained(args.model, attn_implementation=backend)
        else:
            model = model_class._from_config(config, attn_implementation=backend)
        model = model.to(device=device, dtype=TORCH_DTYPES[args.dtype]).eval()
        parameters = sum(p.numel() for p in model.parameters())
        tests = []
        for batch in int_list(args.batch or "1"):
            tests += [dict(batch=batch, prompt_len=p, gen=0, depth=0)
                      for p in int_list(args.prompt_len) if p]
            tests += [dict(batch=batch, prompt_len=0, gen=n, depth=d)
                      for n in int_list(args.gen) if n for d in int_list(args.depth)]
        for test in tests:
            if max(test["prompt_len"], test["depth"] + test["gen"]) > context:
                name = test_name(test["prompt_len"], test["gen"], test["depth"])
                sys.exit(f"torch_bench: error: {name} exceeds the context length of "
                         f"{context}")
        samples = [dict(seconds=[], ttft_ms=[], peak_bytes=None) for _ in tests]
        with torch.inference_mode():
            for round_index in range(args.warmup + args.repetitions):
                warming = round_index < args.warmup
                for test, sample in zip(tests, samples):
                    name = test_name(test["prompt_len"], test["gen"], test["depth"])
                    what = "warm-up" if warming else f"rep {round_index - args.warmup + 1}/{args.repetitions}"
                    print(f"torch_bench: {backend} batch {test['batch']} {name}: {what}", file=sys.stderr)
                    scratch = dict(seconds=[], ttft_ms=[], peak_bytes=None)
                    run_model_test(model, test, device, config.vocab_size, scratch if warming else sample)
        for test, sample in zip(tests, samples):
            tokens = test["batch"] * (test["prompt_len"] or test["gen"])
            rates = [tokens / s for s in sample["seconds"]]
            rate_mean, rate_stddev = mean_stddev(rates)
            ttft_mean, ttft_stddev = mean_stddev(sample["ttft_ms"])
            decode = not test["prompt_len"]
            rows.append({
                "op": "model", "implementation": "torch", "model": (args.model if Path(args.model).is_dir()
                                            else "synthetic:" + args.model),
                "backend": backend, "device": device, "dtype": args.dtype, "threads": threads,
                "batch": test["batch"],
                "test": test_name(test["prompt_len"], test["gen"], test["depth"]),
                "prompt_tokens": test["prompt_len"], "gen_tokens": test["gen"],
                "depth": test["depth"], "samples_s": sample["seconds"],
                "samples_tokens_per_s": rates, "tokens_per_s_mean": rate_mean,
                "tokens_per_s_stddev": rate_stddev,
                "ttft_ms_mean": ttft_mean if decode else None,
                "ttft_ms_stddev": ttft_stddev if decode else None,
                "samples_ttft_ms": sample["ttft_ms"], "peak_bytes": sample["peak_bytes"],
                "logits": "last position" if test["prompt_len"] else "one position per step",
                "weights_gb_per_s_mean":
                    rate_mean / test["batch"] * DTYPE_BYTES[args.dtype] * parameters / 1e9
                    if decode else None,
            })
        del model
    return rows


SDPA_PINNED = ("MATH", "EFFICIENT_ATTENTION", "FLASH_ATTENTION", "CUDNN_ATTENTION")


def sdpa_backends(device, wanted):
    """(name, context manager factory) pairs: the default dispatch ("sdpa"), plus each pinned
    backend on CUDA ("sdpa-flash_attention", ...), those named in `wanted` ("all": every one)."""
    import contextlib
    choices = [("sdpa", contextlib.nullcontext)]
    if device == "cuda":
        from torch.nn.attention import SDPBackend, sdpa_kernel
        for name in SDPA_PINNED:
            backend = getattr(SDPBackend, name)
            choices.append((f"sdpa-{name.lower()}", lambda b=backend: sdpa_kernel(b)))
    if wanted == "all":
        return choices
    names = wanted.split(",")
    unknown = set(names) - {name for name, _ in choices}
    if unknown:
        sys.exit(f"torch_bench: error: --sdpa {','.join(sorted(unknown))}: not one of "
                 f"{', '.join(name for name, _ in choices)} on {device}")
    return [choice for choice in choices if choice[0] in names]


def attention_cases(args):
    """(batch, heads, seq_len, head_dim) of each case: every --shape, else -b x the rest."""
    if args.shape:
        cases = []
        for text in args.shape:
            fields = text.split("x")
            if len(fields) != 4 or not all(f.isdigit() and int(f) > 0 for f in fields):
                sys.exit(f"torch_bench: error: --shape {text}: not BxHxTxD, four positive ints")
            cases.append(tuple(int(f) for f in fields))
        return cases
    return [(batch, args.heads, args.seq_len, args.head_dim)
            for batch in int_list(args.batch or "8")]


def attention_rows(args, threads):
    device = args.device
    dtype = TORCH_DTYPES[args.dtype]
    generator = torch.Generator().manual_seed(args.seed)
    rows = []
    for batch, heads, seq_len, head_dim in attention_cases(args):
        q_len = 1 if args.decode else seq_len
        shape_q = (batch, heads, q_len, head_dim)
        shape_kv = (batch, heads, seq_len, head_dim)
        q, k, v = (torch.randn(s, generator=generator).to(device=device, dtype=dtype)
                   for s in (shape_q, shape_kv, shape_kv))
        visible = q_len * (seq_len - q_len) + q_len * (q_len + 1) / 2
        flops = 4.0 * batch * heads * head_dim * visible
        for name, pin in sdpa_backends(device, args.sdpa):
            row = {"op": "attention", "implementation": "torch", "backend": name,
                   "device": device, "dtype": args.dtype, "threads": threads, "batch": batch,
                   "heads": heads, "kv_heads": heads, "q_len": q_len,
                   "kv_len": seq_len, "head_dim": head_dim, "causal": True,
                   "test": "decode" if q_len == 1 else "prefill"}
            print(f"torch_bench: attention {name} {batch}x{heads}x{seq_len}x{head_dim}",
                  file=sys.stderr)
            # A decode query sits at the last position: SDPA's is_causal aligns the mask
            # top-left, so one query against the whole cache runs unmasked.
            causal = q_len > 1
            times = []
            try:
                with torch.inference_mode(), pin():
                    for index in range(args.warmup + args.repetitions):
                        synchronize(device)
                        start = time.perf_counter()
                        torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
                        synchronize(device)
                        if index >= args.warmup:
                            times.append((time.perf_counter() - start) * 1e3)
            except RuntimeError as error:
                row["error"] = str(error).splitlines()[0]
                rows.append(row)
                continue
            mean, stddev = mean_stddev(times)
            median = statistics.median(times)
            row.update({"samples_ms": times, "time_ms_mean": mean, "time_ms_stddev": stddev,
                        "time_ms_median": median, "gflops": flops / (median * 1e-3) / 1e9,
                        "peak_temporary_bytes": None, "predicted_temporary_bytes": None,
                        "steps_observed": None, "steps_predicted": None})
            rows.append(row)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--op", choices=["model", "attention"], default="model")
    parser.add_argument("--model", default="gpt2",
                        help="model op: gpt2, smollm2-135m or llama-3.2-1b (that shape, "
                             "random weights, as attnscope's synthetic:NAME), or a Hugging Face "
                             "folder")
    parser.add_argument("--attn", default="eager,sdpa", help="model op: eager,sdpa")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--dtype", choices=["f32", "f16", "bf16"], default="f32")
    parser.add_argument("-b", "--batch", help="comma list; default 1, 8 for --op attention")
    parser.add_argument("-p", "--prompt-len", default="512")
    parser.add_argument("-n", "--gen", default="128")
    parser.add_argument("-d", "--depth", default="0")
    parser.add_argument("-r", "--repetitions", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--threads", type=int, default=0, help="0: torch's default")
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--seq-len", type=int, default=1024)
    parser.add_argument("--head-dim", type=int, default=64)
    parser.add_argument("--decode", action="store_true")
    parser.add_argument("--shape", action="append", metavar="BxHxTxD",
                        help="attention op, repeatable: one case of batch x heads x seq-len x "
                             "head-dim, instead of -b, --heads, --seq-len and --head-dim")
    parser.add_argument("--sdpa", default="all",
                        help="attention op: comma list of sdpa (the default dispatch) and, on "
                             "cuda, sdpa-math, sdpa-efficient_attention, sdpa-flash_attention, "
                             "sdpa-cudnn_attention; all (default): every one")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", help="write the JSON here (default: stdout)")
    args = parser.parse_args()
    if args.model not in ("gpt2", "smollm2-135m", "llama-3.2-1b") and not Path(args.model).is_dir():
        parser.error(f"--model {args.model}: not gpt2, smollm2-135m, llama-3.2-1b or a folder")
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("torch_bench: error: --device cuda: no CUDA device is available")
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    threads = torch.get_num_threads()

    rows = model_rows(args, threads) if args.op == "model" else attention_rows(args, threads)
    gpu = torch.cuda.get_device_name() if args.device == "cuda" else None
    report = {
        "tool": "torch", "torch_version": torch.__version__,
        "transformers_version": transformers.__version__, "attnscope_revision": None,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "op": args.op, "repetitions": args.repetitions, "warmup": args.warmup,
        "machine": {"cpu": cpu_model(unknown="unknown CPU"), "threads": threads, "gpu": gpu,
                    "gpu_driver": torch.version.cuda if gpu else None},
        "results": rows,
    }
    text = json.dumps(report, indent=2)
    if args.output:
        with open(args.output, "w") as f:
            f.write(text + "\n")
    else:
        print(text)


if __name__ == "__main__":
    main()
