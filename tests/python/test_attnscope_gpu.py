"""`import attnscope` with device="cuda" (ctest test_python_gpu, label gpu): the same
references as test_attnscope.py (Hugging Face's logits and greedy tokens; the CPU's attention
maps of the same seeded model), through the GPU path a Python user takes. Every test skips
loudly ("SKIPPED: why") on a machine without a usable GPU."""

import numpy as np
import pytest

import attnscope
from references import FIXTURES, max_relative_difference, reference


def cuda_model_or_skip(spec, **options):
    """attnscope.load(spec, device="cuda"), or a loud skip when this machine has no usable GPU
    or the build no CUDA path (those errors only: any other is a failure)."""
    try:
        return attnscope.load(spec, device="cuda", **options)
    except attnscope.Error as error:
        if "no usable CUDA device" not in str(error) and "no CUDA path" not in str(error):
            raise
        pytest.skip(f"SKIPPED: {error}")


def test_on_the_gpu_logits_tokens_and_attention_maps_match_the_references():
    ref = reference("hf/tiny-a")
    model = cuda_model_or_skip(str(FIXTURES / "hf/tiny-a"))
    assert model.config["device"].startswith("cuda")
    for row, ids in enumerate(ref["input_ids"]):
        logits = model.logits(ids)  # one copy to the host
        assert logits.dtype == np.float32
        assert logits.shape == (len(ids), model.config["vocab_size"])
        assert max_relative_difference(logits, ref["logits"][row]) < 1e-4
    greedy = ref["greedy"]  # decode steps as CUDA graphs, flash's replayed unchanged
    out = model.generate(greedy["prompt_ids"], max_new_tokens=greedy["max_new_tokens"])
    assert out.ids == greedy["generated_ids"]

    ids = [5, 17, 3, 42, 8, 19, 23]
    chosen = {"layers": [0, 1], "heads": [0, 3]}
    expected = attnscope.load("synthetic:tiny", threads=1, attn="naive").attention_maps(ids,
                                                                                        **chosen)
    on_gpu = cuda_model_or_skip("synthetic:tiny", attn="naive")
    np.testing.assert_allclose(on_gpu.attention_maps(ids, **chosen), expected, atol=1e-5)
    on_gpu.attn = "flash"
    with pytest.warns(UserWarning, match="recomputed"):
        recomputed = on_gpu.attention_maps(ids, **chosen)
    np.testing.assert_allclose(recomputed, expected, atol=1e-5)
