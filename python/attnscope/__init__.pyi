from dataclasses import dataclass
from typing import Any, Optional, Sequence, Union

import numpy as np

Ids = Union[Sequence[int], np.ndarray]

class Error(RuntimeError): ...

def backends() -> list[str]: ...

@dataclass
class Generation:
    prompt_ids: list[int]
    ids: list[int]
    text: Optional[str]
    stop_reason: str
    prefill_seconds: float
    decode_seconds: float
    decode_steps: int
    logits: Optional[np.ndarray]
    @property
    def decode_tokens_per_s(self) -> float: ...

class Tokenizer:
    def encode(self, text: str) -> list[int]: ...
    def decode(self, ids: Ids) -> str: ...

class Model:
    attn: str
    @property
    def config(self) -> dict[str, Any]: ...
    @property
    def tokenizer(self) -> Tokenizer: ...
    def logits(self, ids: Union[str, Ids]) -> np.ndarray: ...
    def generate(self, prompt: Union[str, Ids], max_new_tokens: int = ..., temperature: float = ...,
                 top_k: int = ..., top_p: float = ..., seed: int = ...,
                 ignore_eos: bool = ..., logits: bool = ...) -> Generation: ...
    def attention_maps(self, ids: Union[str, Ids], layers: Optional[Sequence[int]] = ...,
                       heads: Optional[Sequence[int]] = ...) -> np.ndarray: ...

@dataclass
class Profile:
    rows: list[dict[str, Any]]
    steps: list[dict[str, Any]]
    trace: dict[str, Any]
    summary: dict[str, Any]
    def write_chrome_trace(self, path: str) -> None: ...

def load(model: str, device: str = ..., dtype: str = ..., attn: str = ..., threads: int = ...,
         tokenizer: Optional[str] = ...) -> Model: ...
def bench_attention(attn: str, batch: int = ..., heads: int = ..., kv_heads: Optional[int] = ...,
                    seq_len: int = ..., head_dim: int = ..., decode: bool = ..., dtype: str = ...,
                    device: str = ..., threads: int = ..., reps: int = ...,
                    seed: int = ...) -> dict[str, Any]: ...
def profile(model: Model, prompt_len: int = ..., gen: int = ..., batch: int = ...) -> Profile: ...
