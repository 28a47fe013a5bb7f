// Saving and comparing against a perplexity baseline (tools/attnscope/measure/logit_baseline.h).
#include "tools/attnscope/measure/logit_baseline.h"

#include <algorithm>
#include <cmath>

#include "runtime/error.h"
#include "runtime/input_file.h"
#include "runtime/log_probs.h"
#include "runtime/strict_json.h"
#include "tools/attnscope/cli/output_files.h"

namespace attnscope::cli {

namespace {

std::string source_path(const std::string& path) { return path + ".json"; }

}  // namespace

BaselineWriter::BaselineWriter(const std::string& path, const BaselineSource& source,
                               std::int64_t vocab)
    : rows_(path, vocab) {
  const nlohmann::json sidecar = {
      {"tokens", source.tokens}, {"ctx", source.ctx}, {"stride", source.stride}};
  write_text_file(source_path(path), sidecar.dump() + "\n");
}

BaselineComparison::BaselineComparison(const std::string& path, const BaselineSource& source,
                                       std::int64_t scored, std::int64_t vocab)
    : path_(path), rows_(path), baseline_row_(static_cast<std::size_t>(vocab)) {
  const std::string sidecar = source_path(path);
  const nlohmann::json json =
      parse_json_refusing_duplicates(read_input_file(sidecar, kMaxConfigBytes,
                                                     "a baseline description (written by "
                                                     "--save-logits next to the baseline)"),
                                     sidecar, "");
  BaselineSource saved;
  try {
    saved.tokens = json.at("tokens").get<std::vector<std::int32_t>>();
    saved.ctx = json.at("ctx").get<std::int64_t>();
    saved.stride = json.at("stride").get<std::int64_t>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(sidecar, std::string("not a baseline description: ") + json_parser_message(e));
  }
  check(saved.tokens == source.tokens, path,
        "the baseline was computed on another text or tokenizer (" +
            std::to_string(saved.tokens.size()) + " tokens, this run " +
            std::to_string(source.tokens.size()) + ")");
  check(saved.ctx == source.ctx && saved.stride == source.stride, path,
        "the baseline used --ctx " + std::to_string(saved.ctx) + " --stride " +
            std::to_string(saved.stride) + "; this run --ctx " + std::to_string(source.ctx) +
            " --stride " + std::to_string(source.stride));
  check(rows_.rows() == scored && rows_.cols() == vocab, path,
        "holds logits [" + std::to_string(rows_.rows()) + ", " + std::to_string(rows_.cols()) +
            "], this run scores [" + std::to_string(scored) + ", " + std::to_string(vocab) + "]");
}

void BaselineComparison::add(std::span<const float> logits) {
  rows_.read_row(baseline_row_);
  for (const float logit : baseline_row_) {
    check(std::isfinite(logit), path_,
          "holds a logit that is not finite (row " + std::to_string(count_) +
              "): a KL divergence against it means nothing");
  }
  const std::vector<double> log_p = log_softmax(baseline_row_);
  const std::vector<double> log_q = log_softmax(logits);
  const double kl = kl_divergence(log_p, log_q);
  kl_sum_ += kl;
  max_kl_ = std::max(max_kl_, kl);
  if (arg_max(baseline_row_) == arg_max(logits)) ++top1_agreements_;
  for (std::size_t i = 0; i < logits.size(); ++i) {
    max_abs_diff_ =
        std::max(max_abs_diff_, std::abs(static_cast<double>(logits[i]) - baseline_row_[i]));
  }
  ++count_;
}

double BaselineComparison::mean_kl() const {
  return count_ ? kl_sum_ / static_cast<double>(count_) : 0.0;
}

double BaselineComparison::top1_agreement_percent() const {
  return count_ ? 100.0 * static_cast<double>(top1_agreements_) / static_cast<double>(count_) : 0.0;
}

nlohmann::json BaselineComparison::to_json() const {
  return {{"baseline", path_},
          {"tokens", count_},
          {"mean_kl", mean_kl()},
          {"max_kl", max_kl()},
          {"top1_agreement_percent", top1_agreement_percent()},
          {"max_abs_logit_diff", max_abs_logit_diff()}};
}

}  // namespace attnscope::cli
