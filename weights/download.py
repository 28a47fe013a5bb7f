#!/usr/bin/env python3
"""Download a pretrained GPT-2 in Hugging Face safetensors form, for attnscope.

    python3 weights/download.py                 # gpt2 (124M) into weights/gpt2/
    python3 weights/download.py gpt2-medium     # into weights/gpt2-medium/
    python3 weights/download.py gpt2-xl --out /data/gpt2-xl

Fetches only config.json, model.safetensors, vocab.json and merges.txt (never the pickle
pytorch_model.bin), then prints each file's size and sha256 and the attnscope command to run it.
Needs internet access and the `huggingface_hub` package (python3 -m pip install huggingface_hub).
The usual Hugging Face environment variables apply (HF_TOKEN, HF_ENDPOINT, HF_HUB_OFFLINE, proxies).
See weights/README.md for what the files contain.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from pathlib import Path

# Short name -> Hugging Face repository id.
MODELS = {
    "gpt2": "openai-community/gpt2",
    "gpt2-medium": "openai-community/gpt2-medium",
    "gpt2-large": "openai-community/gpt2-large",
    "gpt2-xl": "openai-community/gpt2-xl",
    "distilgpt2": "distilbert/distilgpt2",
}

# Approximate model.safetensors sizes, for the "this will take a while" message.
APPROX_SIZE = {
    "gpt2": "0.55 GB",
    "gpt2-medium": "1.5 GB",
    "gpt2-large": "3.2 GB",
    "gpt2-xl": "6.4 GB",
    "distilgpt2": "0.35 GB",
}

FILES = ["config.json", "model.safetensors", "vocab.json", "merges.txt"]

WEIGHTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = WEIGHTS_DIR.parent


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def human(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1000
    return f"{n} B"


def shown_path(path: Path) -> str:
    """The path as the user should type it from the repository root (where attnscope runs)."""
    try:
        return str(path.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


def download(repo_id: str, out: Path, revision: str | None) -> None:
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        sys.exit(
            "error: the Python package 'huggingface_hub' is not installed.\n"
            "       install it with:  python3 -m pip install huggingface_hub\n"
            "       (or all helper-script packages: python3 -m pip install -r tools/requirements.txt)"
        )
    out.mkdir(parents=True, exist_ok=True)
    try:
        snapshot_download(
            repo_id=repo_id,
            revision=revision,
            local_dir=str(out),
            allow_patterns=FILES,
        )
    except KeyboardInterrupt:
        sys.exit("\ninterrupted; rerun the same command to resume")
    except Exception as e:  # network, DNS, proxy, 401/404, disk full... report them all plainly
        kind = type(e).__name__
        if os.environ.get("HF_HUB_OFFLINE", "0").lower() not in ("", "0", "false", "no"):
            hint = "       HF_HUB_OFFLINE is set: unset it to allow downloads.\n"
        elif kind in ("RepositoryNotFoundError", "RevisionNotFoundError", "GatedRepoError"):
            hint = f"       check the repository id '{repo_id}', the revision and HF_TOKEN.\n"
        else:  # LocalEntryNotFoundError is what an unreachable Hub gives; also HTTP/OS errors
            hint = ("       is this machine online? (proxy: HTTPS_PROXY; mirror: HF_ENDPOINT)\n"
                    "       rerunning resumes an interrupted download.\n")
        sys.exit(f"error: downloading {repo_id} failed ({kind}): {e}\n{hint}")


def report(out: Path) -> None:
    missing = [f for f in FILES if not (out / f).is_file()]
    if missing:
        msg = f"error: {out} lacks {', '.join(missing)} after the download."
        if "model.safetensors" in missing:
            msg += ("\n       this repository has no model.safetensors; attnscope refuses pickle "
                    "checkpoints.\n       see weights/README.md for converting pytorch_model.bin "
                    "to safetensors.")
        sys.exit(msg)
    print(f"\nfiles in {out}:")
    for name in FILES:
        p = out / name
        print(f"  {sha256_of(p)}  {human(p.stat().st_size):>10}  {name}")
    print("\nrun it (from the repository root, after building):")
    print(f'  build/tools/attnscope generate --model {shown_path(out)} --prompt "Hello"')


def main() -> None:
    ap = argparse.ArgumentParser(
        description="Download a pretrained GPT-2 (safetensors) for attnscope.",
        epilog="Models: " + ", ".join(f"{k} ({v}, ~{APPROX_SIZE[k]})" for k, v in MODELS.items()),
    )
    ap.add_argument("model", nargs="?", default="gpt2", choices=sorted(MODELS),
                    help="which model (default: gpt2)")
    ap.add_argument("--out", type=Path, metavar="DIR",
                    help="destination folder (default: weights/<model>)")
    ap.add_argument("--revision", default=None,
                    help="branch, tag or commit of the Hugging Face repository (default: main)")
    args = ap.parse_args()

    out: Path = args.out if args.out is not None else WEIGHTS_DIR / args.model
    repo_id = MODELS[args.model]
    print(f"downloading {args.model} ({repo_id}, model.safetensors ~{APPROX_SIZE[args.model]}) "
          f"into {out}")
    download(repo_id, out, args.revision)
    report(out)


if __name__ == "__main__":
    main()
