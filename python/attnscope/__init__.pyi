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
    def apply_chat_template(self, messages: Sequence[dict], tools: Optional[Sequence[dict]] = ...,
                            add_generation_prompt: Optional[bool] = ...,
                            continue_final_message: bool = ..., tokenize: bool = ...,
                            chat_template: Optional[str] = ...,
                            **template_kwargs: Any) -> Union[list[int], str]: ...

class Model:
    attn: str
    @property
    def config(self) -> dict[str, Any]: ...
    @property
    def tokenizer(self) -> Tokenizer: ...
    def logits(self, ids: Union[str, Ids]) -> np.ndarray: ...
    def generate(self, prompt: Union[str, Ids], max_new_tokens: int = ..., temperature: float = ...,
                 top_k: int = ..., top_p: float = ..., seed: int = ...,
                 ignore_eos: bool = ..., logits: bool = ..., presence_penalty: float = ...,
                 frequency_penalty: float = ..., logit_bias: Optional[dict[int, float]] = ...,
                 json_object: bool = ...,
                 json_schema: Union[None, str, dict[str, Any]] = ...) -> Generation: ...
    def attention_maps(self, ids: Union[str, Ids], layers: Optional[Ids] = ...,
                       heads: Optional[Ids] = ...) -> np.ndarray: ...

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
def profile(model: Model, prompt_len: Optional[int] = ..., gen: int = ...,
            batch: int = ...) -> Profile: ...
