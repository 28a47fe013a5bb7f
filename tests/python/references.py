"""What the Python suites (test_attnscope.py, test_attnscope_gpu.py) compare against: the
committed Hugging Face fixtures (tests/fixtures/hf*) and the C++ parity suites' measure."""

import json
from pathlib import Path

import numpy as np

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def reference(name):
    """A fixture's reference.json: input ids, transformers' logits, greedy tokens."""
    return json.loads((FIXTURES / name / "reference.json").read_text())


def max_relative_difference(actual, expected):
    """The C++ parity suites' measure: |a - e| / max(|e|, 1), at its largest."""
    expected = np.asarray(expected, dtype=np.float64)
    return float(np.max(np.abs(np.asarray(actual, np.float64) - expected) /
                        np.maximum(np.abs(expected), 1.0)))
