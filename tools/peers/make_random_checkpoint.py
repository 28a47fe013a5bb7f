#!/usr/bin/env python3
"""Write a random-weight GPT-2 124M checkpoint in Hugging Face's format, for peer benchmarks.

The peers (llama.cpp through its own convert_hf_to_gguf.py, PyTorch through transformers) and
attnscope must run the same weights; no real checkpoint can be downloaded here, so this makes
one: ``GPT2LMHeadModel(GPT2Config())`` (124M: 12 layers, 12 heads, width 768, context 1024)
with transformers' own initialisation from a fixed seed, saved with ``save_pretrained`` in
float32, beside OpenAI's GPT-2 vocabulary from shared/fixtures (encoder.json as vocab.json,
vocab.bpe as merges.txt) so both tokenizers are the real one.

    python3 tools/peers/make_random_checkpoint.py OUT_DIR [--seed 0]

Needs torch and transformers (tools/requirements.txt). The text such a model writes is random
tokens; speed does not depend on it, and every benchmark here sets ignore_eos or a fixed length.
"""

import argparse
import json
import shutil
from pathlib import Path

import torch
from transformers import GPT2Config, GPT2LMHeadModel

REPO = Path(__file__).resolve().parents[2]
TOKENIZER = REPO.parent / "shared" / "fixtures" / "gpt2-tokenizer"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tokenizer", type=Path, default=TOKENIZER,
                        help="folder with OpenAI's encoder.json and vocab.bpe")
    args = parser.parse_args()

    for name in ("encoder.json", "vocab.bpe"):
        if not (args.tokenizer / name).is_file():
            parser.error(f"{args.tokenizer / name} not found")

    torch.manual_seed(args.seed)
    model = GPT2LMHeadModel(GPT2Config()).eval()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(args.out_dir, safe_serialization=True)
    # The published gpt2 config.json still carries n_ctx, which llama.cpp's converter reads;
    # transformers 5 no longer writes it.
    config_path = args.out_dir / "config.json"
    config = json.loads(config_path.read_text())
    config.setdefault("n_ctx", config["n_positions"])
    config_path.write_text(json.dumps(config, indent=2) + "\n")
    shutil.copyfile(args.tokenizer / "encoder.json", args.out_dir / "vocab.json")
    shutil.copyfile(args.tokenizer / "vocab.bpe", args.out_dir / "merges.txt")
    parameters = sum(p.numel() for p in model.parameters())
    print(f"{args.out_dir}: GPT-2 with {parameters / 1e6:.1f}M random parameters (seed {args.seed})")


if __name__ == "__main__":
    main()
