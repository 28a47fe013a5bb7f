"""The seed study's comparison from Python: causal attention at B=8, H=16, T=1024, D=64, every
backend timed alone beside its cost model, then a bar chart when matplotlib is installed.

    PYTHONPATH=build/python python3 docs/examples/study_in_python.py   (or after pip install .)
"""
import statistics

import attnscope

results = {name: attnscope.bench_attention(name, reps=3) for name in attnscope.backends()}
naive_ms = statistics.median(results["naive"]["times_ms"])
for name, r in results.items():
    ms = statistics.median(r["times_ms"])
    print(f"{name:8s} {ms:9.1f} ms  {naive_ms / ms:5.2f}x naive  "
          f"{r['flops'] / ms / 1e6:7.1f} GFLOP/s  temporaries {r['temporary_bytes'] / 2**20:7.1f} MiB")

try:
    import matplotlib.pyplot as plt
except ImportError:
    print("(pip install matplotlib for the chart)")
else:
    plt.bar(list(results), [statistics.median(r["times_ms"]) for r in results.values()])
    plt.ylabel("ms per call (median)")
    plt.title("causal attention B=8 H=16 T=1024 D=64")
    plt.savefig("study.png", dpi=120)
    print("wrote study.png")
