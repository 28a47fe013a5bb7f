#!/usr/bin/env python3
"""attnscope's tokenizer on Llama 2's real vocabulary, beside transformers and llama.cpp.

The llama-cpp-python sdist on PyPI carries llama.cpp's tokenizer test files: the vocabulary of
Llama 2 (models/ggml-vocab-llama-spm.gguf: 32,000 SentencePiece pieces with their scores) and
47 texts with the ids llama.cpp expects (.inp / .out, written from Hugging Face's tokenizer).
This script
  1. converts that vocabulary to a tokenizer.json with transformers' GGUF converter (the merges
     rebuilt from the scores, as transformers does when loading a GGUF file), saved by
     LlamaTokenizerFast;
  2. checks, for each of the 47 texts, that transformers' ids are llama.cpp's, and that
     `attnscope tokenize` (with and without <s>) and `attnscope detokenize` give transformers'
     ids and text;
  3. encodes the repository's README.md and docs/*.md whole (with no pre-tokenizer each file is
     one BPE word of up to ~60 KB) with attnscope and with the `tokenizers` library, and compares
     ids and decoded text.
It prints one line per check and exits 1 if any differs. Nothing of the vocabulary is committed.

Run from the repository root, after building attnscope (transformers 4: its LlamaConverter-era
converters; see tools/fixtures/make_sentencepiece_tokenizer_cases.py):
    python3 -m venv /tmp/tok4
    /tmp/tok4/bin/pip install "transformers<5" sentencepiece protobuf gguf
    /tmp/tok4/bin/pip download --no-binary :all: --no-deps llama-cpp-python -d /tmp/lcpp
    /tmp/tok4/bin/python tools/peers/check_sentencepiece_vocab.py \
        --sdist /tmp/lcpp/llama_cpp_python-*.tar.gz --out /tmp/lcpp/llama-spm
"""

import argparse
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VOCAB = "ggml-vocab-llama-spm.gguf"


def extract(sdist, out):
    """The vocabulary and its test files out of the sdist, into `out`."""
    with tarfile.open(sdist) as archive:
        for member in archive.getmembers():
            if member.name.endswith((f"models/{VOCAB}", f"models/{VOCAB}.inp",
                                     f"models/{VOCAB}.out")):
                member.name = Path(member.name).name
                archive.extract(member, out)


def convert(out):
    """tokenizer.json from the GGUF vocabulary, as transformers builds it."""
    from gguf import GGUFReader
    from transformers import LlamaTokenizerFast
    from transformers.integrations.ggml import convert_gguf_tokenizer

    reader = GGUFReader(str(out / VOCAB))
    fields = {key[len("tokenizer.ggml."):]: reader.fields[key].contents()
              for key in reader.fields if key.startswith("tokenizer.ggml.")}
    tokenizer, extra = convert_gguf_tokenizer("llama", fields)
    options = dict(bos_token="<s>", eos_token="</s>", unk_token="<unk>", add_bos_token=True,
                   clean_up_tokenization_spaces=False)
    options.update(extra)
    LlamaTokenizerFast(tokenizer_object=tokenizer, **options).save_pretrained(out)
    return LlamaTokenizerFast.from_pretrained(out)


def attnscope(binary, *args, text=None):
    result = subprocess.run([binary, *args], input=text, capture_output=True, check=True)
    return result.stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sdist", type=Path, required=True, help="llama-cpp-python's sdist")
    parser.add_argument("--out", type=Path, required=True, help="a scratch folder")
    parser.add_argument("--attnscope", default=str(REPO / "build" / "tools" / "attnscope"))
    args = parser.parse_args()
    os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_VERBOSITY="error", TQDM_DISABLE="1")
    import tokenizers

    args.out.mkdir(parents=True, exist_ok=True)
    extract(args.sdist, args.out)
    loaded = convert(args.out)
    folder = str(args.out)
    texts = (args.out / f"{VOCAB}.inp").read_text(encoding="utf-8").split("\n__ggml_vocab_test__\n")
    expected = (args.out / f"{VOCAB}.out").read_text().split("\n")
    counts = {"transformers == llama.cpp": 0, "ids": 0, "ids with <s>": 0, "decoded": 0}
    for text, line in zip(texts, expected):
        ids = loaded.encode(text, add_special_tokens=False)
        counts["transformers == llama.cpp"] += ids == [int(x) for x in line.split()]
        ours = json.loads(attnscope(args.attnscope, "tokenize", "--no-special-tokens",
                                    "--tokenizer", folder, text=text.encode()))
        counts["ids"] += ours == ids
        with_bos = json.loads(attnscope(args.attnscope, "tokenize", "--tokenizer", folder,
                                        text=text.encode()))
        counts["ids with <s>"] += with_bos == loaded.encode(text)
        decoded = loaded.decode(ids, skip_special_tokens=False)
        ours_text = attnscope(args.attnscope, "detokenize", "--tokenizer", folder,
                              ",".join(map(str, ids))).decode("utf-8", "replace")[:-1] if ids else ""
        counts["decoded"] += ours_text == decoded
    failed = False
    for what, count in counts.items():
        print(f"{what}: {count} of {len(texts)} texts")
        failed |= count != len(texts)

    library = tokenizers.Tokenizer.from_file(str(args.out / "tokenizer.json"))
    files = [REPO / "README.md"] + sorted((REPO / "docs").glob("*.md"))
    same = 0
    total = 0
    for path in files:
        text = path.read_text(encoding="utf-8")
        ids = library.encode(text, add_special_tokens=False).ids
        ours = json.loads(attnscope(args.attnscope, "tokenize", "--no-special-tokens",
                                    "--tokenizer", folder, text=text.encode()))
        ours_text = attnscope(args.attnscope, "detokenize", "--tokenizer", folder,
                              ",".join(map(str, ours))).decode("utf-8", "replace")[:-1]
        same += ours == ids and ours_text == library.decode(ids, skip_special_tokens=False)
        total += len(ids)
    print(f"whole files: {same} of {len(files)} ({total} ids) with tokenizers "
          f"{tokenizers.__version__}'s ids and text")
    failed |= same != len(files)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
