"""attnscope from Python: load a model, swap its attention backend, generate, read logits and
attention maps as NumPy arrays, and profile it, without a subprocess.

    import attnscope
    m = attnscope.load("synthetic:gpt2")            # or a checkpoint directory
    m.attn = "naive"                                 # any of attnscope.backends()
    out = m.generate("The quick brown fox", max_new_tokens=16)
    logits = m.logits(out.ids)                       # float32 [tokens, vocab]
    p = attnscope.profile(m, prompt_len=128, gen=8)  # summary rows, steps, Chrome trace

The work runs in attnscope's C++ libraries (the same ones the `attnscope` command line runs),
with the GIL released; Ctrl-C stops a long generate between two tokens (KeyboardInterrupt).
Bad arguments raise ValueError or TypeError here, before anything runs; what fails inside the
runtime (a malformed checkpoint, a prompt longer than the context, memory) raises
attnscope.Error, a RuntimeError with the command line's one-line message.
"""

from __future__ import annotations

import json
import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence, Union

import numpy as np

from . import _attnscope
from ._attnscope import Error

__all__ = ["Error", "Model", "Generation", "Profile", "Tokenizer", "backends", "bench_attention",
           "load", "profile"]

_DEVICES = ("cpu", "cuda")
_DTYPES = ("f32", "f16", "bf16", "q8_0")


def backends() -> list[str]:
    """The attention backends, by their --attn names, in the study's order."""
    return list(_attnscope.backends())


def _check_choice(name: str, value: Any, choices: Sequence[str]) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, got {value!r}")
    return value


# The command line's ceilings: --threads, -n/--gen and --prompt-len, a 64-bit seed.
_MAX_THREADS = 4096
_MAX_TOKENS = 1 << 20
_MAX_SEED = (1 << 64) - 1


def _check_int(name: str, value: Any, low: int, high: Optional[int] = None) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < low:
        raise ValueError(f"{name} must be at least {low}, got {value}")
    if high is not None and value > high:
        raise ValueError(f"{name} must be at most {high}, got {value}")
    return int(value)


def _check_ints(name: str, values: Any, high: int) -> list[int]:
    """A sequence (list, tuple, NumPy array) of ints in [0, high], or [] for None."""
    if values is None:
        return []
    if isinstance(values, (str, bytes, numbers.Number)) or not hasattr(values, "__iter__"):
        raise TypeError(f"{name} must be a sequence of ints, got {type(values).__name__}")
    return [_check_int(f"{name}[i]", v, 0, high) for v in values]


@dataclass
class Generation:
    """What Model.generate returned: the new ids (and text when the model has a tokenizer),
    why it stopped ("length", "eos", or "stop": the JSON reply closed), and the timings."""

    prompt_ids: list[int]
    ids: list[int]
    text: Optional[str]
    stop_reason: str
    prefill_seconds: float
    decode_seconds: float
    decode_steps: int
    logits: Optional[np.ndarray] = None  # float32 [len(ids), vocab] with logits=True

    @property
    def decode_tokens_per_s(self) -> float:
        return self.decode_steps / self.decode_seconds if self.decode_seconds > 0 else 0.0


class Tokenizer:
    """The model's tokenizer (GPT-2's vocab.json + merges.txt, or a tokenizer.json)."""

    def __init__(self, model: "Model") -> None:
        self._model = model

    def encode(self, text: str) -> list[int]:
        """The ids of `text` (a tokenizer.json adds its special tokens, as transformers does)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        return list(self._model._native.encode(text))

    def decode(self, ids: Sequence[int]) -> str:
        """The text of `ids`."""
        return self._model._native.decode(self._model._ids(ids))

    def apply_chat_template(self, messages: Sequence[dict], tools: Optional[Sequence[dict]] = None,
                            add_generation_prompt: Optional[bool] = None,
                            continue_final_message: bool = False, tokenize: bool = True,
                            chat_template: Optional[str] = None,
                            **template_kwargs: Any) -> Union[list[int], str]:
        """A conversation ([{"role": ..., "content": ...}, ...]) and its tools (OpenAI's function
        schemas) as the model's chat template renders them, as transformers' apply_chat_template
        does: its ids (tokenized without adding special tokens: the template writes them), or its
        text with tokenize=False. The assistant's turn is opened (add_generation_prompt, the
        default) unless continue_final_message leaves the final message open for the model to
        continue. `chat_template` is a Jinja file to use instead of the checkpoint's own; other
        keyword arguments are more variables for the template (enable_thinking=False)."""
        if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
            raise TypeError(f"messages must be a list of dicts, got {type(messages).__name__}")
        if tools is not None and (isinstance(tools, (str, bytes)) or
                                  not isinstance(tools, Sequence)):
            raise TypeError(f"tools must be a list of dicts, got {type(tools).__name__}")
        if add_generation_prompt is None:
            add_generation_prompt = not continue_final_message
        if add_generation_prompt and continue_final_message:
            raise ValueError("continue_final_message cannot be set with add_generation_prompt")
        conversation = {"messages": list(messages),
                        "tools": None if tools is None else list(tools),
                        "chat_template_kwargs": template_kwargs}
        text = self._model._native.apply_chat_template(json.dumps(conversation),
                                                       bool(add_generation_prompt),
                                                       bool(continue_final_message),
                                                       chat_template or "")
        return list(self._model._native.encode(text, False)) if tokenize else text


class Model:
    """A model on its device, made by attnscope.load(). `attn` selects the attention backend."""

    def __init__(self, native: Any) -> None:
        self._native = native

    @property
    def attn(self) -> str:
        """The attention backend every call uses; assign any name of attnscope.backends()."""
        return self._native.attn

    @attn.setter
    def attn(self, name: str) -> None:
        self._native.attn = _check_choice("attn", name, backends())

    @property
    def config(self) -> dict[str, Any]:
        """Vocabulary, context length, layers, heads, head dim, parameters, device and dtype."""
        return dict(self._native.config())

    @property
    def tokenizer(self) -> Tokenizer:
        """The tokenizer; raises attnscope.Error when the model has none."""
        if not self._native.has_tokenizer():
            raise Error(f"tokenizer: no tokenizer for {self.config['model']}: pass tokenizer=DIR "
                        "to attnscope.load, or give token ids")
        return Tokenizer(self)

    def _ids(self, ids: Union[Sequence[int], np.ndarray]) -> list[int]:
        if isinstance(ids, str):
            raise TypeError("ids must be a sequence of ints, not a str")
        values = np.asarray(ids)
        if values.ndim != 1 or (values.size and not np.issubdtype(values.dtype, np.integer)):
            raise TypeError("ids must be a 1-D sequence of ints")
        vocab = self._native.config()["vocab_size"]
        if values.size and (values.min() < 0 or values.max() >= vocab):
            raise ValueError(f"token ids must lie in [0, {vocab}), got {values.min()}..{values.max()}")
        return [int(i) for i in values]

    def _prompt(self, prompt: Union[str, Sequence[int], np.ndarray]) -> list[int]:
        ids = self.tokenizer.encode(prompt) if isinstance(prompt, str) else self._ids(prompt)
        if not ids:
            raise ValueError("the prompt has no tokens")
        return ids

    def logits(self, ids: Union[str, Sequence[int], np.ndarray]) -> np.ndarray:
        """float32 logits [len(ids), vocab] of every position, from an empty cache. On the CPU
        the array is the model's own output (no copy); on a GPU one copy to the host."""
        return np.asarray(self._native.logits(self._prompt(ids)))

    def generate(self, prompt: Union[str, Sequence[int], np.ndarray], max_new_tokens: int = 32,
                 temperature: float = 0.0, top_k: int = 0, top_p: float = 1.0, seed: int = 0,
                 ignore_eos: bool = False, logits: bool = False, presence_penalty: float = 0.0,
                 frequency_penalty: float = 0.0, logit_bias: Optional[dict] = None,
                 json_object: bool = False,
                 json_schema: Union[None, str, dict] = None) -> Generation:
        """Prefill `prompt` (text, or token ids), then pick up to `max_new_tokens` tokens:
        greedy at temperature 0, else sampled (top_k 0 and top_p 1 mean no limit) from a
        generator seeded by `seed`, so the same call gives the same tokens. It stops at the
        model's eos token unless `ignore_eos`. `presence_penalty` and `frequency_penalty`
        (in [-2, 2]) and `logit_bias` ({token id: bias in [-100, 100]}) are OpenAI's. With
        `json_object` (JSON mode, needs the tokenizer) the reply is one JSON object, every token
        that cannot continue one masked; with `json_schema` (a dict, or its JSON text) one JSON
        object valid under that schema (structured outputs; the keywords enforced are listed in
        docs/SERVER.md, others raise ValueError); either stops at the object's closing brace,
        stop_reason "stop". With `logits`, Generation.logits holds the float32 logits each new
        token was chosen from (what `attnscope generate --logits-out` saves), before penalties
        and the JSON mask."""
        ids = self._prompt(prompt)
        options = _attnscope.SamplingOptions()
        if isinstance(temperature, bool) or not isinstance(temperature, numbers.Real):
            raise TypeError(f"temperature must be a float, got {type(temperature).__name__}")
        if not math.isfinite(temperature) or not 0 <= temperature <= np.finfo(np.float32).max:
            raise ValueError(f"temperature must be a finite float32 of at least 0, got {temperature}")
        if isinstance(top_p, bool) or not isinstance(top_p, numbers.Real):
            raise TypeError(f"top_p must be a float, got {type(top_p).__name__}")
        if not 0 < top_p <= 1:
            raise ValueError(f"top_p must lie in (0, 1], got {top_p}")
        options.temperature = float(temperature)
        options.top_k = _check_int("top_k", top_k, 0)
        options.top_p = float(top_p)
        options.seed = _check_int("seed", seed, 0, _MAX_SEED)
        for name, penalty in (("presence_penalty", presence_penalty),
                              ("frequency_penalty", frequency_penalty)):
            if isinstance(penalty, bool) or not isinstance(penalty, numbers.Real):
                raise TypeError(f"{name} must be a float, got {type(penalty).__name__}")
            if not -2 <= penalty <= 2:
                raise ValueError(f"{name} must lie in [-2, 2], got {penalty}")
        if logit_bias is not None and not isinstance(logit_bias, dict):
            raise TypeError(f"logit_bias must be a dict of token id: bias, got "
                            f"{type(logit_bias).__name__}")
        biases = []
        for token, bias in (logit_bias or {}).items():
            if isinstance(bias, bool) or not isinstance(bias, numbers.Real):
                raise TypeError(f"logit_bias values must be floats, got {type(bias).__name__}")
            if not -100 <= bias <= 100:
                raise ValueError(f"logit_bias values must lie in [-100, 100], got {bias}")
            biases.append((_check_int("logit_bias key", token, 0,
                                      self.config["vocab_size"] - 1), float(bias)))
        if json_object and json_schema is not None:
            raise ValueError("pass json_object or json_schema, not both")
        if isinstance(json_schema, dict):
            json_schema = json.dumps(json_schema)  # keeps the properties' order
        elif json_schema is not None and not isinstance(json_schema, str):
            raise TypeError(f"json_schema must be a dict or a str, got {type(json_schema).__name__}")
        if json_schema == "":
            raise ValueError("json_schema is empty: pass a schema, or None for none")
        schema = _attnscope.JSON_OBJECT_SCHEMA if json_object else (json_schema or "")
        result = self._native.generate(ids, _check_int("max_new_tokens", max_new_tokens, 0,
                                                       _MAX_TOKENS),
                                       options, bool(ignore_eos), bool(logits),
                                       float(presence_penalty), float(frequency_penalty), biases,
                                       schema)
        new_ids = list(result["ids"])
        text = self._native.decode(new_ids) if self._native.has_tokenizer() else None
        return Generation(ids, new_ids, text, result["stop_reason"], result["prefill_seconds"],
                          result["decode_seconds"], result["decode_steps"],
                          np.asarray(result["logits"]) if logits else None)

    def attention_maps(self, ids: Union[str, Sequence[int], np.ndarray],
                       layers: Optional[Sequence[int]] = None,
                       heads: Optional[Sequence[int]] = None) -> np.ndarray:
        """The softmax probabilities float32 [layer, head, query, key] of one prefill of `ids`
        (every layer and head unless chosen), 0 beyond each query's position. The eager
        backends' are their own; flash never materialises them, so they are recomputed from its
        q and k (and a warning says so)."""
        chosen_layers = _check_ints("layers", layers, self.config["n_layers"] - 1)
        chosen_heads = _check_ints("heads", heads, self.config["n_heads"] - 1)
        maps, recomputed = self._native.attention_maps(self._prompt(ids), chosen_layers,
                                                       chosen_heads)
        if recomputed:
            import warnings
            warnings.warn("flash never materialises the attention probabilities: these were "
                          "recomputed from its q and k", stacklevel=2)
        return np.asarray(maps)

    def __repr__(self) -> str:
        c = self.config
        return (f"attnscope.Model({c['model']!r}, attn={self.attn!r}, {c['device']}, "
                f"{c['dtype']})")


@dataclass
class Profile:
    """What attnscope.profile measured: the summary table's rows (one per scope name, as
    `attnscope profile --json` writes them), every step with the cost model's predictions and
    the attention time per layer, and the Chrome trace as a dict."""

    rows: list[dict[str, Any]]
    steps: list[dict[str, Any]]
    trace: dict[str, Any]
    summary: dict[str, Any] = field(repr=False)

    def write_chrome_trace(self, path: str) -> None:
        """Writes the trace for https://ui.perfetto.dev or chrome://tracing."""
        with open(path, "w", encoding="utf-8") as out:
            json.dump(self.trace, out)


def load(model: str, device: str = "cpu", dtype: str = "f32", attn: str = "flash",
         threads: int = 0, tokenizer: Optional[str] = None) -> Model:
    """Opens `model`: a checkpoint directory (GPT-2 or Llama family, Hugging Face safetensors)
    or a built-in synthetic shape ("synthetic:gpt2", "synthetic:tiny", "synthetic:llama-tiny",
    ...) with seeded random weights. `device` "cpu" or "cuda"; `dtype` the storage of the
    weights (and on cuda of activations); `threads` 0 for every hardware thread; `tokenizer` a
    directory with the vocabulary when the model's own has none."""
    if not isinstance(model, str):
        raise TypeError(f"model must be a str, got {type(model).__name__}")
    _check_choice("device", device, _DEVICES)
    _check_choice("dtype", dtype, _DTYPES)
    _check_choice("attn", attn, backends())
    _check_int("threads", threads, 0, _MAX_THREADS)
    if tokenizer is not None and not isinstance(tokenizer, str):
        raise TypeError(f"tokenizer must be a str, got {type(tokenizer).__name__}")
    return Model(_attnscope.Model(model, device, dtype, attn, threads, tokenizer or ""))


def bench_attention(attn: str, batch: int = 8, heads: int = 16, kv_heads: Optional[int] = None,
                    seq_len: int = 1024, head_dim: int = 64, decode: bool = False,
                    dtype: str = "f32", device: str = "cpu", threads: int = 0, reps: int = 5,
                    seed: int = 0, bf16_products: bool = False) -> dict[str, Any]:
    """Times the attention op alone, as `attnscope bench-attention` does: causal attention of
    `seq_len` queries (one with `decode`) against `seq_len` keys, `heads` query heads on
    `kv_heads` (default: as many) key/value heads, random inputs. One untimed call, then `reps`
    timed ones. Returns the times (ms) beside the backend's cost model: flops (4 D per visible
    query-key pair), bytes it must move at least, temporary_bytes, steps. The defaults are the
    study's shape (B=8, H=16, T=1024, D=64). `bf16_products`: the calls may round q, k, v and
    the softmax weights to bf16, as a bf16 model's do (flash then multiplies on AMX tiles where
    the cpu has them). attnscope.Error when the backend refuses the shape (e.g. bf16 on the cpu
    for all but math)."""
    _check_choice("attn", attn, backends())
    _check_choice("device", device, _DEVICES)
    _check_choice("dtype", dtype, ("f32", "f16", "bf16"))
    heads = _check_int("heads", heads, 1)
    kv_heads = heads if kv_heads is None else _check_int("kv_heads", kv_heads, 1)
    if heads % kv_heads:
        raise ValueError(f"heads ({heads}) must be a multiple of kv_heads ({kv_heads})")
    return dict(_attnscope.bench_attention(
        attn, _check_int("batch", batch, 1), heads, kv_heads, _check_int("seq_len", seq_len, 1),
        _check_int("head_dim", head_dim, 1), bool(decode), dtype, device,
        _check_int("threads", threads, 0, _MAX_THREADS), _check_int("reps", reps, 1, 100000),
        _check_int("seed", seed, 0, _MAX_SEED), bool(bf16_products)))


def profile(model: Model, prompt_len: Optional[int] = None, gen: int = 16,
            batch: int = 1) -> Profile:
    """Profiles `model` as `attnscope profile` does: after an unprofiled warm-up prefill and
    decode step (steps "warm-up prefill" and "warm-up decode"), a prefill of `prompt_len` random
    ids (by default 128, fewer when the context holds less beside the decode steps), then 2 x
    `gen` decode steps of which `gen` are profiled (the others measure the overhead)."""
    if not isinstance(model, Model):
        raise TypeError(f"model must be an attnscope.Model, got {type(model).__name__}")
    result = model._native.profile(0 if prompt_len is None else
                                   _check_int("prompt_len", prompt_len, 1, _MAX_TOKENS),
                                   _check_int("gen", gen, 0, _MAX_TOKENS),
                                   _check_int("batch", batch, 1, _MAX_TOKENS))
    summary = result["summary"]
    return Profile(summary["rows"], result["steps"], result["trace"], summary)
