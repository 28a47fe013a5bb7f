// The two ceilings of a roofline, measured by attnscope itself on this machine, and cached so
// that `explain`, `profile --roofline` and `study` do not pay for them on every run.
//
//   compute roof   the best FLOP/s of ops::linear on a square GEMM (N = M = K = 1024 on the
//                  cpu, 4096 on a GPU) in the dtype asked for: on the cpu, f32 activations times
//                  weights stored in it (f32: the project's packed f32 GEMM; bf16: at the amx
//                  level the bf16 tiles, which flash's products use too for bf16 models,
//                  ops/attention/cpu/query_tile_amx.h), cublasLt on a GPU.
//                  2 N M K FLOPs per call, best of `repetitions` after a warm-up.
//   memory roof    on the cpu the read-bandwidth probe's best way (measure/read_bandwidth.h,
//                  512 MiB); on a GPU a device-to-device copy of 1 GiB, counted as 2 bytes moved
//                  (read + write) per byte copied.
//
// An op of F FLOPs moving B bytes in t seconds sits at arithmetic intensity I = F / B and
// performance P = F / t; it can reach at most min(peak, I x bandwidth) (the roofline), and its
// share of that is how close to the machine it runs. The ridge, peak / bandwidth FLOP per byte,
// divides the ops that memory bounds (left) from those the arithmetic bounds (right).
//
// The cache is one JSON file, ceilings.json, in $ATTNSCOPE_CACHE_DIR, else
// $XDG_CACHE_HOME/attnscope, else ~/.cache/attnscope; one entry per (machine, threads, device,
// dtype). A cache that cannot be read or written costs a warning and a fresh measurement, never
// the run. Cost of a measurement: about a second on the cpu, less on a GPU.
#pragma once

#include <string>

#include "runtime/context.h"
#include "runtime/dtype.h"

namespace attnscope::cli {

struct Ceilings {
  double flops_per_s = 0;     // the compute roof
  double bytes_per_s = 0;     // the memory roof
  std::string compute_probe;  // "f32 GEMM 1024^3 (ops::linear)"
  std::string memory_probe;   // "read 512 MiB, streams" / "device copy 1 GiB"
  std::string machine;        // the cache key's machine: CPU model and threads, or the GPU
  std::string source;         // "measured now" or "cached in PATH (measured DATE)"

  // Where compute and memory bound meet, in FLOP per byte.
  double ridge() const { return flops_per_s / bytes_per_s; }
  // min(peak, intensity x bandwidth): the most an op of that intensity can reach.
  double attainable(double intensity) const;
  // "PROBE; PROBE; MACHINE", for a roofline's caption.
  std::string caption() const { return compute_probe + "; " + memory_probe + "; " + machine; }
};

// The ceilings of ctx's device for `dtype` (on the cpu: of the weights): from the cache, or
// measured (and cached) when absent or when `refresh`.
Ceilings machine_ceilings(Context& ctx, DType dtype, bool refresh);

}  // namespace attnscope::cli
