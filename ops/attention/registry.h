// The registry behind --attn: every backend under its name, in the order a user should read
// them (the study's: the baseline, the small change, the library path, the fused ones).
// `eager` is an alias of `naive`.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ops/attention/backend.h"

namespace attnscope::ops::attention {

// The backend registered under `name` (or an alias). An unknown name throws Error listing the
// valid ones.
const Backend& find_backend(std::string_view name);
// The backends a `--attn` list names, each once, in the list's order: "all" stands for every
// registered backend in registry order and an alias for the backend it names (so "naive,eager"
// is one backend). An unknown name throws Error as find_backend does.
std::vector<const Backend*> resolve_backends(const std::vector<std::string>& requested);
// Registered names, in the order a user should read them.
std::vector<std::string> backend_names();
// "naive, inplace, ..." for help texts.
std::string backend_list();

}  // namespace attnscope::ops::attention
