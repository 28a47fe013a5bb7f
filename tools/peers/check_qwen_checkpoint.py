#!/usr/bin/env python3
"""Qwen2 and Qwen3 end to end: a checkpoint of a real shape with Qwen2's real tokenizer,
attnscope beside transformers.

No Qwen checkpoint can be downloaded here, so this makes one, by --model:
  qwen2.5-0.5b  transformers' Qwen2ForCausalLM with Qwen2.5-0.5B-Instruct's config.json (24
                layers, width 896, 14 query and 2 key/value heads, tied head, rope_theta 1e6),
                the q, k and v biases drawn from N(0, 0.5^2) (transformers starts them at zero,
                where they would test nothing);
  qwen3-0.6b    Qwen3ForCausalLM with Qwen3-0.6B's config.json (28 layers, width 1024, 16 query
                and 8 key/value heads of width 128, tied head), the q_norm and k_norm gains drawn
                from 1 + N(0, 0.5^2) (transformers starts them at one);
otherwise transformers' initialisation from a fixed seed, saved in float32 beside the
tokenizer.json that tools/peers/check_real_vocab.py --vocab qwen2 made (Qwen2's real vocabulary,
NFC normalizer and split regex; Qwen3 keeps that vocabulary) and Qwen2.5's chat template
(tools/fixtures/make_chat_template_cases.py's copy; Qwen3's own adds thinking blocks). Then, for
each prompt:
  - `attnscope generate --prompt TEXT --json`: its prompt ids must be transformers' encode(TEXT),
    its 16 greedy ids transformers' generate(do_sample=False);
  - `attnscope generate --chat --system S --prompt TEXT --json`: its prompt ids must be
    apply_chat_template(..., add_generation_prompt=True), its greedy ids transformers'.
A greedy step whose top-two logits lie within 1e-3 in transformers is reported, not failed (the
two runtimes round f32 sums differently). Prints one line per prompt; exits 1 on a mismatch.

Run from the repository root, after check_real_vocab.py --vocab qwen2 --out TOKENIZER_DIR, with
torch and transformers 5 (e.g. /tmp/hf: pip install torch transformers safetensors):
    /tmp/hf/bin/python tools/peers/check_qwen_checkpoint.py --model qwen2.5-0.5b \\
        --tokenizer TOKENIZER_DIR --out /tmp/qwen2-random
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CONFIGS = {  # their config.json files' values
    "qwen2.5-0.5b": dict(
        vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
        num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=32768,
        max_window_layers=21, rms_norm_eps=1e-6, rope_theta=1000000.0, sliding_window=32768,
        use_sliding_window=False, tie_word_embeddings=True, bos_token_id=151643,
        eos_token_id=151645, hidden_act="silu"),
    "qwen3-0.6b": dict(
        vocab_size=151936, hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
        num_attention_heads=16, num_key_value_heads=8, head_dim=128,
        max_position_embeddings=40960, max_window_layers=28, rms_norm_eps=1e-6,
        rope_theta=1000000.0, use_sliding_window=False, tie_word_embeddings=True,
        attention_bias=False, bos_token_id=151643, eos_token_id=151645, hidden_act="silu"),
}
PROMPTS = ["The capital of France is", "Cafe\u0301 au lait, s'il vous pla\u00eet \u2014 2024!",
           "def add(a, b):\n    return", "\u65e5\u672c\u8a9e\u306e\u6587\u7ae0\u3067\u3059\u3002"]
SYSTEM = "You are a terse assistant."
NEW_TOKENS = 16
NEAR_TIE = 1e-3


def qwen25_chat_template():
    sys.path.insert(0, str(REPO / "tools" / "fixtures"))
    import make_chat_template_cases

    return make_chat_template_cases.QWEN25


def make_checkpoint(name, tokenizer_dir, out, seed):
    import torch
    from transformers import (AutoTokenizer, Qwen2Config, Qwen2ForCausalLM, Qwen3Config,
                              Qwen3ForCausalLM)

    config_class, model_class = ((Qwen2Config, Qwen2ForCausalLM) if name == "qwen2.5-0.5b"
                                 else (Qwen3Config, Qwen3ForCausalLM))
    torch.manual_seed(seed)
    model = model_class(config_class(**CONFIGS[name])).eval()
    with torch.no_grad():
        for parameter_name, parameter in model.named_parameters():
            if parameter_name.endswith("_proj.bias"):
                parameter.normal_(0.0, 0.5)
            if parameter_name.endswith(("q_norm.weight", "k_norm.weight")):
                parameter.normal_(1.0, 0.5)
    shutil.rmtree(out, ignore_errors=True)
    model.save_pretrained(out)
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    tokenizer.chat_template = qwen25_chat_template()
    tokenizer.save_pretrained(out)
    return model, AutoTokenizer.from_pretrained(out)


def greedy(model, ids):
    """transformers' greedy continuation and its smallest top-1 margin."""
    import torch

    generated, margin = [], float("inf")
    with torch.no_grad():
        context = torch.tensor([ids])
        for _ in range(NEW_TOKENS):
            logits = model(context).logits[0, -1]
            top = torch.topk(logits, 2)
            margin = min(margin, float(top.values[0] - top.values[1]))
            generated.append(int(top.indices[0]))
            context = torch.cat([context, top.indices[:1].view(1, 1)], dim=1)
    return generated, margin


def attnscope(binary, *args):
    result = subprocess.run([binary, "generate", *args, "--max-new-tokens", str(NEW_TOKENS),
                             "--json"], capture_output=True, check=True, text=True)
    return json.loads(result.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(CONFIGS), required=True)
    parser.add_argument("--tokenizer", type=Path, required=True,
                        help="the folder check_real_vocab.py --vocab qwen2 wrote")
    parser.add_argument("--out", type=Path, required=True, help="where the checkpoint goes")
    parser.add_argument("--attnscope", default=str(REPO / "build" / "tools" / "attnscope"))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_VERBOSITY="error")

    model, tokenizer = make_checkpoint(args.model, args.tokenizer, args.out, args.seed)
    failed = False
    for prompt in PROMPTS:
        for chat in (False, True):
            if chat:
                messages = [{"role": "system", "content": SYSTEM},
                            {"role": "user", "content": prompt}]
                ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True,
                                                    tokenize=True, return_dict=False)
                ours = attnscope(args.attnscope, "--model", str(args.out), "--chat", "--system",
                                 SYSTEM, "--prompt", prompt)
            else:
                ids = tokenizer.encode(prompt)
                ours = attnscope(args.attnscope, "--model", str(args.out), "--prompt", prompt)
            expected, margin = greedy(model, ids)
            same_prompt = ours["prompt_ids"] == ids
            same_tokens = ours["generated_ids"] == expected
            tie = not same_tokens and margin < NEAR_TIE
            failed |= not same_prompt or (not same_tokens and not tie)
            print(f"{'chat' if chat else 'text'} {json.dumps(prompt)}: {len(ids)} prompt ids "
                  f"{'equal' if same_prompt else 'DIFFER'}, {NEW_TOKENS} greedy ids "
                  f"{'equal' if same_tokens else 'DIFFER at a near tie' if tie else 'DIFFER'} "
                  f"(smallest top-1 margin {margin:.4f})")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
