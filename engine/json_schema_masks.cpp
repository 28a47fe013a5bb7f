// The masks of the JSON schemas asked of one vocabulary (json_schema_masks.h).
#include "engine/json_schema_masks.h"

#include "engine/json_grammar.h"

namespace attnscope::engine {

std::shared_ptr<GrammarTokenMask> JsonSchemaMasks::mask(const std::string& schema) {
  if (const auto known = masks_.find(schema); known != masks_.end()) return known->second;
  Grammar grammar = json_schema_grammar(schema);
  if (!sorted_) sorted_ = std::make_shared<const SortedVocabulary>(vocabulary_, model_);
  if (masks_.size() >= kRememberedSchemas) masks_.clear();
  auto made = std::make_shared<GrammarTokenMask>(std::move(grammar), sorted_);
  masks_.emplace(schema, made);
  return made;
}

}  // namespace attnscope::engine
