// JsonSchemaMasks: the token masks (grammar_token_mask.h) of the JSON schemas asked of one model's
// vocabulary, each compiled (json_grammar.h) on its first request and kept for the next ones with
// the same schema, so that their remembered walks are reused: an agent sends the same schema
// again and again. The vocabulary is sorted once, on the first schema, and shared by every mask.
// Up to kRememberedSchemas are kept, then forgotten all at once (a request holds on to its own).
// Used by the engine, `attnscope generate` and the Python module, one thread at a time.
// Cost: the first schema sorts the vocabulary (O(V log V)); each new one compiles its grammar.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "engine/grammar_token_mask.h"
#include "engine/sorted_vocabulary.h"
#include "engine/token_vocabulary.h"
#include "models/model_config.h"

namespace attnscope::engine {

class JsonSchemaMasks {
 public:
  // Over `model`'s vocabulary (`model` must outlive this).
  JsonSchemaMasks(TokenVocabulary vocabulary, const ModelConfig& model)
      : vocabulary_(std::move(vocabulary)), model_(model) {}

  // The mask of `schema` (JSON text). Throws Error when json_schema_grammar refuses it.
  std::shared_ptr<GrammarTokenMask> mask(const std::string& schema);

  static constexpr std::size_t kRememberedSchemas = 16;

 private:
  TokenVocabulary vocabulary_;
  const ModelConfig& model_;
  std::shared_ptr<const SortedVocabulary> sorted_;
  std::map<std::string, std::shared_ptr<GrammarTokenMask>> masks_;  // by schema text
};

}  // namespace attnscope::engine
