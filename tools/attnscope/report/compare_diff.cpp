// `compare --diff` (see compare_diff.h). When both summaries come from GPU runs (every row has a
// device time), the table compares device time, which is what the GPU spent; the host times of
// a GPU run only say how long queuing the work took.
#include "tools/attnscope/report/compare_diff.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "runtime/error.h"
#include "runtime/input_file.h"
#include "runtime/strict_json.h"

namespace attnscope::cli {

namespace {

struct Side {
  double total_ms = 0;
  std::int64_t calls = 0;
  double device_ms = -1;  // -1: not measured (a CPU run)
};

std::map<std::string, Side> read_summary(const std::string& path) {
  const nlohmann::json json = parse_json_refusing_duplicates(
      read_input_file(path, kMaxConfigBytes, "a profile summary"), path, "");
  check(json.is_object() && json.value("format", "") == "attnscope-profile-summary" &&
            json.contains("rows") && json["rows"].is_array(),
        path, "not a summary written by `attnscope profile --json`");
  std::map<std::string, Side> rows;
  try {
    for (const nlohmann::json& row : json["rows"]) {
      const nlohmann::json device = row.value("device_total_ns", nlohmann::json());
      rows[row.at("name").get<std::string>()] = {
          static_cast<double>(row.at("total_ns").get<std::int64_t>()) / 1e6,
          row.at("calls").get<std::int64_t>(),
          device.is_number() ? static_cast<double>(device.get<std::int64_t>()) / 1e6 : -1.0};
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(path, std::string("bad summary row: ") + e.what());
  }
  return rows;
}

}  // namespace

std::string diff_profiles(const std::string& path_a, const std::string& path_b) {
  std::map<std::string, Side> a = read_summary(path_a), b = read_summary(path_b);
  auto all_on_device = [](const std::map<std::string, Side>& rows) {
    return !rows.empty() && std::all_of(rows.begin(), rows.end(), [](const auto& entry) {
      return entry.second.device_ms >= 0;
    });
  };
  const bool device = all_on_device(a) && all_on_device(b);
  if (device) {
    for (auto* rows : {&a, &b}) {
      for (auto& [name, side] : *rows) side.total_ms = side.device_ms;
    }
  }
  std::vector<std::string> names;
  for (const auto& [name, side] : a) names.push_back(name);
  for (const auto& [name, side] : b) {
    if (!a.contains(name)) names.push_back(name);
  }
  auto side_of = [](const std::map<std::string, Side>& rows, const std::string& name) {
    const auto found = rows.find(name);
    return found == rows.end() ? Side{} : found->second;
  };
  auto change = [&](const std::string& name) {
    return side_of(b, name).total_ms - side_of(a, name).total_ms;
  };
  std::stable_sort(names.begin(), names.end(), [&](const std::string& x, const std::string& y) {
    return std::abs(change(x)) > std::abs(change(y));
  });
  std::ostringstream md;
  const std::string time = device ? "device ms" : "total ms";
  md << "A: " << path_a << "\nB: " << path_b << "\n\n"
     << (device ? "Both are GPU profiles: the times are device times.\n\n" : "")
     << "| name | A calls | A " << time << " | B calls | B " << time
     << " | change ms | change % |\n"
     << "|---|---:|---:|---:|---:|---:|---:|\n"
     << std::fixed << std::setprecision(3);
  for (const std::string& name : names) {
    const Side x = side_of(a, name), y = side_of(b, name);
    md << "| " << name << " | " << x.calls << " | " << x.total_ms << " | " << y.calls << " | "
       << y.total_ms << " | " << std::showpos << y.total_ms - x.total_ms << " | ";
    if (x.total_ms > 0) {
      md << std::setprecision(1) << 100.0 * (y.total_ms - x.total_ms) / x.total_ms
         << std::setprecision(3) << "%";
    } else {
      md << "new";
    }
    md << std::noshowpos << " |\n";
  }
  return md.str();
}

}  // namespace attnscope::cli
