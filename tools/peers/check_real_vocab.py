#!/usr/bin/env python3
"""attnscope's tokenizer on real vocabularies (Llama 2's, Qwen2's), beside transformers and llama.cpp.

The llama-cpp-python sdist on PyPI carries llama.cpp's tokenizer test files: real vocabularies
(models/ggml-vocab-NAME.gguf) and 47 texts with the ids llama.cpp expects (.inp / .out, written
from Hugging Face's tokenizer of that model). Two of them, by --vocab:
  llama-spm  Llama 2's 32,000 SentencePiece pieces with their scores (byte fallback, Metaspace
             written by the normalizer and decoder);
  qwen2      Qwen2's 151,936 byte-level BPE tokens and 151,387 merges (an NFC normalizer, Qwen2's
             split regex).
This script
  1. converts that vocabulary to a tokenizer.json with transformers' GGUF converter (for
     llama-spm the merges rebuilt from the scores, as transformers does when loading a GGUF
     file), saved by a transformers tokenizer;
  2. checks, for each of the 47 texts, that transformers' ids are llama.cpp's, and that
     `attnscope tokenize` (with and without special tokens) and `attnscope detokenize` give
     transformers' ids and text;
  3. encodes the repository's README.md and docs/*.md whole with attnscope and with the
     `tokenizers` library (for llama-spm, with no pre-tokenizer, each file is one BPE word of up to
     ~60 KB), and compares ids and decoded text.
It prints one line per check and exits 1 if any differs. Nothing of the vocabulary is committed.

Run from the repository root, after building attnscope (transformers 4: its LlamaConverter-era
converters; see tools/fixtures/make_sentencepiece_tokenizer_cases.py):
    python3 -m venv /tmp/tok4
    /tmp/tok4/bin/pip install "transformers<5" sentencepiece protobuf gguf
    /tmp/tok4/bin/pip download --no-binary :all: --no-deps llama-cpp-python -d /tmp/lcpp
    /tmp/tok4/bin/python tools/peers/check_real_vocab.py --vocab llama-spm \
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
# Each vocabulary: its converter's architecture name and the special tokens its tokenizer names.
VOCABS = {
    "llama-spm": ("llama", dict(bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                                add_bos_token=True)),
    "qwen2": ("qwen2", dict(eos_token="<|endoftext|>", pad_token="<|endoftext|>")),
}


def extract(sdist, out, wanted):
    """The sdist's files whose path `wanted` accepts, into `out` (flat, by file name)."""
    out.mkdir(parents=True, exist_ok=True)
    with tarfile.open(sdist) as archive:
        for member in archive.getmembers():
            if wanted(member.name):
                member.name = Path(member.name).name
                archive.extract(member, out)


def convert(name, vocab, out):
    """tokenizer.json from the GGUF vocabulary, as transformers builds it."""
    from gguf import GGUFReader
    from transformers import LlamaTokenizerFast, PreTrainedTokenizerFast
    from transformers.integrations.ggml import convert_gguf_tokenizer

    architecture, options = VOCABS[name]
    reader = GGUFReader(str(out / vocab))
    fields = {key[len("tokenizer.ggml."):]: reader.fields[key].contents()
              for key in reader.fields if key.startswith("tokenizer.ggml.")}
    tokenizer, extra = convert_gguf_tokenizer(architecture, fields)
    options = {**options, "clean_up_tokenization_spaces": False, **extra}
    tokenizer_class = LlamaTokenizerFast if name == "llama-spm" else PreTrainedTokenizerFast
    tokenizer_class(tokenizer_object=tokenizer, **options).save_pretrained(out)
    return tokenizer_class.from_pretrained(out)


def attnscope(binary, *args, text=None):
    result = subprocess.run([binary, *args], input=text, capture_output=True, check=True)
    return result.stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vocab", choices=sorted(VOCABS), required=True)
    parser.add_argument("--sdist", type=Path, required=True, help="llama-cpp-python's sdist")
    parser.add_argument("--out", type=Path, required=True, help="a scratch folder")
    parser.add_argument("--attnscope", default=str(REPO / "build" / "tools" / "attnscope"))
    args = parser.parse_args()
    os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_VERBOSITY="error", TQDM_DISABLE="1")
    import tokenizers

    vocab = f"ggml-vocab-{args.vocab}.gguf"
    extract(args.sdist, args.out, lambda name: name.endswith(
        (f"models/{vocab}", f"models/{vocab}.inp", f"models/{vocab}.out")))
    loaded = convert(args.vocab, vocab, args.out)
    folder = str(args.out)
    texts = (args.out / f"{vocab}.inp").read_text(encoding="utf-8").split("\n__ggml_vocab_test__\n")
    expected = (args.out / f"{vocab}.out").read_text().split("\n")
    counts = {"transformers == llama.cpp": 0, "ids": 0, "ids with special tokens": 0,
              "decoded": 0}
    for text, line in zip(texts, expected):
        ids = loaded.encode(text, add_special_tokens=False)
        counts["transformers == llama.cpp"] += ids == [int(x) for x in line.split()]
        ours = json.loads(attnscope(args.attnscope, "tokenize", "--no-special-tokens",
                                    "--tokenizer", folder, text=text.encode()))
        counts["ids"] += ours == ids
        with_special = json.loads(attnscope(args.attnscope, "tokenize", "--tokenizer", folder,
                                            text=text.encode()))
        counts["ids with special tokens"] += with_special == loaded.encode(text)
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
