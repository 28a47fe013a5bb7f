// What reports say about the machine (tools/attnscope/cli/machine_info.h).
#include "tools/attnscope/cli/machine_info.h"

#include <algorithm>
#include <fstream>

#include "runtime/cpu_features.h"
#include "tools/attnscope/report/report_json.h"

namespace attnscope::cli {

namespace {

// The load a run's own threads cannot explain: more than one core's worth of change.
constexpr double kLoadChange = 1.0;

}  // namespace

std::string cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (!line.starts_with("model name")) continue;
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) break;
    const std::size_t start = line.find_first_not_of(' ', colon + 1);
    return start == std::string::npos ? "unknown CPU" : line.substr(start);
  }
  return "unknown CPU";
}

std::string cpu_kernels() { return std::string(cpu_level_name(cpu_level())); }

double load_average() {
  std::ifstream loadavg("/proc/loadavg");
  double one_minute = -1;
  return loadavg >> one_minute ? one_minute : -1;
}

double cpu_mhz() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  double sum = 0;
  int cores = 0;
  while (std::getline(cpuinfo, line)) {
    if (!line.starts_with("cpu MHz")) continue;
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    try {
      sum += std::stod(line.substr(colon + 1));
      ++cores;
    } catch (const std::exception&) {
    }
  }
  return cores ? sum / cores : -1;
}

void RunConditions::start(int run_threads) {
  threads = run_threads;
  load_before = load_average();
  mhz_before = cpu_mhz();
}

void RunConditions::sample() { load_during.push_back(load_average()); }

void RunConditions::finish() {
  load_after = load_average();
  mhz_after = cpu_mhz();
}

std::string RunConditions::warning() const {
  std::vector<double> loads = load_during;
  loads.push_back(load_after);
  const auto [low, high] = std::minmax_element(loads.begin(), loads.end());
  if (*low < 0 || *high - *low <= kLoadChange) return "";
  return "the load average moved from " + fixed(*low, 2) + " to " + fixed(*high, 2) +
         " during the run: other processes competed for the CPU, so the intervals are wider "
         "and slow drifts may remain";
}

nlohmann::json RunConditions::to_json() const {
  const std::string text = warning();
  return {{"threads", threads},
          {"load_average_before", load_before},
          {"load_average_during", load_during},
          {"load_average_after", load_after},
          {"cpu_mhz_before", mhz_before},
          {"cpu_mhz_after", mhz_after},
          {"warning", text.empty() ? nlohmann::json() : nlohmann::json(text)},
          {"description", describe()}};
}

std::string RunConditions::describe() const {
  std::string text = "Load average (1 min) " + fixed(load_before, 2) + " before";
  if (!load_during.empty()) {
    const auto [low, high] = std::minmax_element(load_during.begin(), load_during.end());
    text += ", " + fixed(*low, 2) + " to " + fixed(*high, 2) + " between rounds";
  }
  text += ", " + fixed(load_after, 2) + " after (the run's own " + std::to_string(threads) +
          " threads add about " + std::to_string(threads) + "); CPU clock " + fixed(mhz_before, 0) +
          " MHz before, " + fixed(mhz_after, 0) + " MHz after.";
  return text;
}

}  // namespace attnscope::cli
