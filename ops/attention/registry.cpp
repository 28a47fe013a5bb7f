// The registry behind --attn (registry.h).
#include "ops/attention/registry.h"

#include <algorithm>
#include <array>

#include "runtime/error.h"

namespace attnscope::ops::attention {

namespace {

struct Alias {
  std::string_view alias;
  std::string_view name;
};
constexpr std::array kAliases = {Alias{"eager", "naive"}};

const std::array<const Backend*, 5>& registered_backends() {
  static const std::array<const Backend*, 5> backends = {
      &naive_backend(), &inplace_backend(), &math_backend(), &fused_backend(), &flash_backend()};
  return backends;
}

}  // namespace

const Backend& find_backend(std::string_view name) {
  for (const Alias& a : kAliases) {
    if (a.alias == name) name = a.name;
  }
  for (const Backend* backend : registered_backends()) {
    if (backend->name() == name) return *backend;
  }
  throw Error("--attn", "unknown attention backend '" + std::string(name) +
                            "' (valid: " + backend_list() + ")");
}

std::vector<const Backend*> resolve_backends(const std::vector<std::string>& requested) {
  std::vector<const Backend*> backends;
  auto add = [&](const Backend& backend) {
    if (std::find(backends.begin(), backends.end(), &backend) == backends.end()) {
      backends.push_back(&backend);
    }
  };
  for (const std::string& name : requested) {
    if (name == "all") {
      for (const Backend* backend : registered_backends()) add(*backend);
    } else {
      add(find_backend(name));
    }
  }
  return backends;
}

std::vector<std::string> backend_names() {
  std::vector<std::string> names;
  for (const Backend* backend : registered_backends()) names.emplace_back(backend->name());
  return names;
}

std::string backend_list() {
  std::string list;
  for (const std::string& name : backend_names()) list += (list.empty() ? "" : ", ") + name;
  for (const Alias& a : kAliases) {
    list += ", " + std::string(a.alias) + " (= " + std::string(a.name) + ")";
  }
  return list;
}

}  // namespace attnscope::ops::attention
