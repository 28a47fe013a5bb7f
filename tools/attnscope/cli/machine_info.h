// What reports say about the machine they were measured on, and the conditions of a run: the
// load other processes put on it and the CPU's clock, sampled while the run goes on.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace attnscope::cli {

// The CPU's model name from /proc/cpuinfo ("unknown CPU" when it cannot be read).
std::string cpu_model();
// The instruction-set level the cpu kernels for 16-bit and q8_0 weights run at
// (runtime/cpu_features.h: "portable", "avx2", "avx512", "avx512vnni" or "amx").
std::string cpu_kernels();
// The 1-minute load average from /proc/loadavg (-1 when it cannot be read).
double load_average();
// The mean "cpu MHz" over the cores in /proc/cpuinfo (-1 when it cannot be read).
double cpu_mhz();

// Load and clock before, between the rounds of, and after a timed run. The run's own threads
// add about `threads` to the load while it runs, so "before" is not comparable with the rest;
// what signals interference is the load moving during the run.
struct RunConditions {
  int threads = 0;
  double load_before = -1, load_after = -1;
  std::vector<double> load_during;  // one per round
  double mhz_before = -1, mhz_after = -1;

  void start(int run_threads);  // samples "before"
  void sample();                // once per round
  void finish();                // samples "after"
  // The warning a report prints when the load moved by more than one core's worth during the
  // run ("" when it did not).
  std::string warning() const;
  nlohmann::json to_json() const;  // includes "warning" (null when none)
  // One sentence for a report's preamble.
  std::string describe() const;
};

}  // namespace attnscope::cli
