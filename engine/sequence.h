// A request as the engine carries it from step to step: its tokens so far, how many of them
// have their keys and values in the paged cache, and its own sampler.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/request.h"
#include "engine/token_picker.h"

namespace attnscope::engine {

struct Sequence {
  // `grammar_mask`: the engine's for the request's JSON schema, if it has one.
  Sequence(RequestId request_id, Request asked,
           std::shared_ptr<GrammarTokenMask> grammar_mask = nullptr)
      : id(request_id),
        tokens(asked.prompt),
        prompt_length(static_cast<std::int64_t>(asked.prompt.size())),
        picker(asked.sampling, asked.adjustments, std::move(grammar_mask), asked.json_prefix),
        request(std::move(asked)) {}

  RequestId id;
  // The prompt, then every generated token. The last one's keys and values are computed by the
  // next step that schedules the sequence (a decode step), so while it runs at least one token is
  // always waiting: tokens.size() > computed.
  std::vector<std::int32_t> tokens;
  std::int64_t prompt_length;
  // Leading tokens whose keys and values are in the cache (0 after a preemption: recomputed).
  std::int64_t computed = 0;
  // The request's own sampler (and penalties, logit bias, JSON grammar), untouched by a
  // preemption, so that what it draws never depends on the batch it ran in or on being
  // recomputed.
  TokenPicker picker;
  Request request;
  std::string text;  // the generated text so far, when stop strings are watched
  std::int64_t preemptions = 0;
  const char* phase = nullptr;  // the phase last shown on its profiler track (Engine::mark)

  std::int64_t generated() const {
    return static_cast<std::int64_t>(tokens.size()) - prompt_length;
  }
  std::int64_t pending() const { return static_cast<std::int64_t>(tokens.size()) - computed; }
};

}  // namespace attnscope::engine
