#!/usr/bin/env python3
"""Write a random-weight checkpoint in Hugging Face's format, for peer benchmarks.

The peers (llama.cpp through its own convert_hf_to_gguf.py, PyTorch through transformers) and
attnscope must run the same weights; no real checkpoint can be downloaded here, so this makes
one, with transformers' own initialisation from a fixed seed, saved with ``save_pretrained`` in
float32:

- ``--model gpt2`` (default): ``GPT2LMHeadModel(GPT2Config())``, the 124M shape (12 layers, 12
  heads, width 768, context 1024), beside OpenAI's GPT-2 vocabulary from shared/fixtures
  (encoder.json as vocab.json, vocab.bpe as merges.txt).
- ``--model smollm2-135m``: ``LlamaForCausalLM`` with SmolLM2-135M's shape (torch_bench.py's
  model_config: 30 layers, width 576, 9 query and 3 key-value heads, tied head), but OpenAI's
  GPT-2 vocabulary (50257 tokens instead of SmolLM2's 49152: SmolLM2's own tokenizer cannot be
  downloaded here), saved as a tokenizer.json that llama.cpp's converter recognises as GPT-2's.
  The tied embedding is 0.6M parameters (1%) larger than SmolLM2's.

Both tokenizers are therefore a real one.

    python3 tools/peers/make_random_checkpoint.py OUT_DIR [--model gpt2|smollm2-135m] [--seed 0]

Needs torch and transformers (tools/requirements.txt). The text such a model writes is random
tokens; speed does not depend on it, and every benchmark here sets ignore_eos or a fixed length.
"""

import argparse
import json
import shutil
from pathlib import Path

import torch
from transformers import GPT2TokenizerFast

from torch_bench import model_config

REPO = Path(__file__).resolve().parents[2]
TOKENIZER = REPO.parent / "shared" / "fixtures" / "gpt2-tokenizer"
GPT2_VOCABULARY = 50257


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--model", choices=["gpt2", "smollm2-135m"], default="gpt2")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tokenizer", type=Path, default=TOKENIZER,
                        help="folder with OpenAI's encoder.json and vocab.bpe")
    args = parser.parse_args()

    for name in ("encoder.json", "vocab.bpe"):
        if not (args.tokenizer / name).is_file():
            parser.error(f"{args.tokenizer / name} not found")

    config, model_class, _ = model_config(args.model)
    config.vocab_size = GPT2_VOCABULARY
    if args.model != "gpt2":
        config.bos_token_id = config.eos_token_id = GPT2_VOCABULARY - 1  # <|endoftext|>
    torch.manual_seed(args.seed)
    model = model_class(config).eval()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(args.out_dir, safe_serialization=True)
    shutil.copyfile(args.tokenizer / "encoder.json", args.out_dir / "vocab.json")
    shutil.copyfile(args.tokenizer / "vocab.bpe", args.out_dir / "merges.txt")
    if args.model == "gpt2":
        # The published gpt2 config.json still carries n_ctx, which llama.cpp's converter reads;
        # transformers 5 no longer writes it.
        config_path = args.out_dir / "config.json"
        saved = json.loads(config_path.read_text())
        saved.setdefault("n_ctx", saved["n_positions"])
        config_path.write_text(json.dumps(saved, indent=2) + "\n")
    else:
        # A Llama folder names its tokenizer: GPT-2's, read from the files above and saved with
        # its tokenizer.json and tokenizer_config.json.
        tokenizer = GPT2TokenizerFast.from_pretrained(args.out_dir)
        if not tokenizer.encode("Hello world"):
            raise SystemExit("make_random_checkpoint: GPT-2's tokenizer did not load")
        tokenizer.save_pretrained(args.out_dir)
    parameters = sum(p.numel() for p in model.parameters())
    print(f"{args.out_dir}: {args.model} shape with {parameters / 1e6:.1f}M random parameters "
          f"(seed {args.seed})")


if __name__ == "__main__":
    main()
