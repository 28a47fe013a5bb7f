// A perplexity run's logits saved as a baseline (`perplexity --save-logits FILE`), and another
// run compared against it (`--kl-divergence FILE`), to see what a backend, a dtype or a device
// changes in the numbers rather than only in the perplexity.
//
// Files: FILE is a .npy array [scored tokens, vocab] of f32 logits (runtime/npy.h), row i the
// logits that predicted the i-th scored token; FILE.json says what they were computed from
// ({"tokens": the text's ids, "ctx": N, "stride": S}), so a run on another text or with other
// windows is refused rather than compared.
// Per scored token, with P the baseline's distribution and Q this run's (runtime/log_probs.h):
//   KL(P || Q) in nats (mean and max over tokens), whether the arg maxes agree (top-1 agreement
//   %), and the largest |z_base - z_run| over all logits.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/npy.h"

namespace attnscope::cli {

// What the baseline's logits were computed from; a comparison needs all three to be equal.
struct BaselineSource {
  std::vector<std::int32_t> tokens;
  std::int64_t ctx = 0;
  std::int64_t stride = 0;
};

// Writes FILE.json, then FILE row by row.
class BaselineWriter {
 public:
  BaselineWriter(const std::string& path, const BaselineSource& source, std::int64_t vocab);
  void add(std::span<const float> logits) { rows_.append_row(logits); }
  void finish() { rows_.finish(); }

 private:
  NpyWriter rows_;
};

// Reads FILE row by row, comparing each with this run's logits.
class BaselineComparison {
 public:
  // Throws Error when FILE or FILE.json cannot be read, or when they were made from another
  // source or hold another number of rows than `scored` of `vocab` logits.
  BaselineComparison(const std::string& path, const BaselineSource& source, std::int64_t scored,
                     std::int64_t vocab);
  void add(std::span<const float> logits);

  std::int64_t count() const { return count_; }
  double mean_kl() const;
  double max_kl() const { return max_kl_; }
  double top1_agreement_percent() const;
  double max_abs_logit_diff() const { return max_abs_diff_; }
  nlohmann::json to_json() const;

 private:
  std::string path_;
  NpyReader rows_;
  std::vector<float> baseline_row_;
  std::int64_t count_ = 0, top1_agreements_ = 0;
  double kl_sum_ = 0.0, max_kl_ = 0.0, max_abs_diff_ = 0.0;
};

}  // namespace attnscope::cli
