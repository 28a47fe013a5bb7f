// One generated token's log-probabilities as JSON (tools/attnscope/measure/token_log_probs.h).
#include "tools/attnscope/measure/token_log_probs.h"

#include "runtime/log_probs.h"

namespace attnscope::cli {

namespace {

nlohmann::json token_entry(std::int32_t id, double log_prob, const TextTokenizer* tokenizer) {
  nlohmann::json entry = {{"id", id}};
  if (tokenizer && tokenizer->has_token(id)) {
    const std::string& bytes = tokenizer->token_bytes(id);
    entry["token"] = bytes;
    nlohmann::json values = nlohmann::json::array();
    for (char byte : bytes) values.push_back(static_cast<unsigned char>(byte));
    entry["bytes"] = values;
  }
  entry["logprob"] = log_prob;
  return entry;
}

}  // namespace

nlohmann::json token_log_probs(std::span<const float> logits, std::int32_t chosen, std::int64_t top,
                               const TextTokenizer* tokenizer) {
  const std::vector<double> log_probs = log_softmax(logits);
  nlohmann::json entry =
      token_entry(chosen, log_probs[static_cast<std::size_t>(chosen)], tokenizer);
  nlohmann::json alternatives = nlohmann::json::array();
  for (const auto& [id, log_prob] : top_log_probs(log_probs, top)) {
    alternatives.push_back(token_entry(id, log_prob, tokenizer));
  }
  entry["top_logprobs"] = alternatives;
  return entry;
}

}  // namespace attnscope::cli
