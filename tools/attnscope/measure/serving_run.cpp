// The offline serving benchmark (tools/attnscope/measure/serving_run.h).
#include "tools/attnscope/measure/serving_run.h"

#include <chrono>
#include <iostream>
#include <map>
#include <random>
#include <sstream>

#include "runtime/error.h"
#include "runtime/input_file.h"
#include "runtime/strict_json.h"
#include "tools/attnscope/cli/elapsed.h"

namespace attnscope::cli {

namespace {

std::string range_text(LengthRange range) {
  return range.min == range.max ? std::to_string(range.min)
                                : std::to_string(range.min) + "-" + std::to_string(range.max);
}

}  // namespace

ServingWorkload random_workload(std::int64_t count, LengthRange input, LengthRange output,
                                std::int64_t shared_prefix, std::int64_t vocab_size,
                                std::uint64_t seed) {
  check(1 <= input.min && input.min <= input.max, "--input-len", "needs 1 <= MIN <= MAX");
  check(1 <= output.min && output.min <= output.max, "--output-len", "needs 1 <= MIN <= MAX");
  check(0 <= shared_prefix && shared_prefix < input.min, "--shared-prefix",
        "must be shorter than the shortest prompt (--input-len MIN)");
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::int32_t> id(0, static_cast<std::int32_t>(vocab_size - 1));
  std::uniform_int_distribution<std::int64_t> prompt_length(input.min, input.max);
  std::uniform_int_distribution<std::int64_t> new_tokens(output.min, output.max);
  std::vector<std::int32_t> prefix(static_cast<std::size_t>(shared_prefix));
  for (std::int32_t& x : prefix) x = id(rng);
  ServingWorkload workload;
  for (std::int64_t r = 0; r < count; ++r) {
    engine::Request request;
    request.prompt = prefix;
    request.prompt.resize(static_cast<std::size_t>(prompt_length(rng)));
    for (std::size_t i = prefix.size(); i < request.prompt.size(); ++i) request.prompt[i] = id(rng);
    request.max_tokens = new_tokens(rng);
    request.ignore_eos = true;
    workload.requests.push_back(std::move(request));
  }
  workload.description =
      std::to_string(count) + " requests, random prompts of " + range_text(input) + " tokens" +
      (shared_prefix ? " (the first " + std::to_string(shared_prefix) + " shared)"
                     : std::string()) +
      ", " + range_text(output) + " new tokens each, greedy";
  return workload;
}

ServingWorkload dataset_workload(const std::string& path, std::int64_t count,
                                 std::int64_t default_max_tokens) {
  std::istringstream lines(read_input_file(path, kMaxTextBytes, "a dataset"));
  ServingWorkload workload;
  std::string line;
  for (std::int64_t number = 1; std::getline(lines, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (count > 0 && static_cast<std::int64_t>(workload.requests.size()) == count) break;
    const std::string where = path + ":" + std::to_string(number);
    const nlohmann::json object = parse_json_refusing_duplicates(line, where, "the line");
    check(object.is_object() && object.contains("prompt_ids") && object["prompt_ids"].is_array(),
          where, "expected {\"prompt_ids\": [ids...], \"max_tokens\": N}");
    engine::Request request;
    for (const nlohmann::json& value : object["prompt_ids"]) {
      check(value.is_number_integer() && value.get<std::int64_t>() >= 0 &&
                value.get<std::int64_t>() <= INT32_MAX,
            where, [&] { return "prompt id " + json_excerpt(value) + " is not a token id"; });
      request.prompt.push_back(value.get<std::int32_t>());
    }
    request.max_tokens = default_max_tokens;
    if (object.contains("max_tokens")) {
      const nlohmann::json& value = object["max_tokens"];
      check(value.is_number_integer() && value.get<std::int64_t>() >= 1, where,
            [&] { return "max_tokens " + json_excerpt(value) + " must be an integer >= 1"; });
      request.max_tokens = value.get<std::int64_t>();
    }
    request.ignore_eos = true;
    workload.requests.push_back(std::move(request));
  }
  check(!workload.requests.empty(), path, "the dataset holds no request");
  workload.description = std::to_string(workload.requests.size()) + " requests from " + path;
  return workload;
}

ServingResult run_serving(const LanguageModel& model, Context& ctx,
                          const engine::EngineOptions& options, const ServingWorkload& workload,
                          std::int64_t concurrency, const engine::TokenVocabulary& vocabulary) {
  using Clock = std::chrono::steady_clock;
  engine::Engine engine(model, ctx, options, vocabulary);
  const std::size_t position_bytes = engine.cache().geometry().position_bytes();
  const double context_bytes =
      static_cast<double>(model.config().context_length) * static_cast<double>(position_bytes);
  struct Timing {
    Clock::time_point submitted, last;
    std::int64_t tokens = 0;
    double first_ms = 0;
  };
  std::map<engine::RequestId, Timing> open;
  ServingResult result;
  result.concurrency = concurrency;
  std::size_t next = 0;
  const Clock::time_point start = Clock::now();
  const auto ms_between = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  while (next < workload.requests.size() || !engine.idle()) {
    while (next < workload.requests.size() &&
           static_cast<std::int64_t>(open.size()) < concurrency) {
      const engine::Request& request = workload.requests[next++];
      result.prompt_tokens += static_cast<std::int64_t>(request.prompt.size());
      open[engine.submit(request)].submitted = Clock::now();
    }
    const engine::StepReport report = engine.step();
    const Clock::time_point now = Clock::now();
    ++result.steps;
    const PagedKVCache::Usage usage = engine.kv_usage();
    result.reserved_bytes += static_cast<double>(usage.reserved_bytes);
    result.paged_used_bytes += static_cast<double>(usage.used_bytes);
    result.paged_wasted_bytes += static_cast<double>(usage.wasted_bytes);
    result.contiguous_bytes += static_cast<double>(engine.scheduler().running()) * context_bytes;
    result.held_position_bytes +=
        static_cast<double>(engine.running_positions()) * static_cast<double>(position_bytes);
    result.peak_used_bytes =
        std::max(result.peak_used_bytes, static_cast<std::int64_t>(usage.used_bytes));
    for (const engine::Event& e : report.events) {
      Timing& t = open.at(e.id);
      check(!(e.finished && (e.reason == engine::FinishReason::refused ||
                             e.reason == engine::FinishReason::failed)),
            "bench --op serving", [&] {
              return "a request " + std::string(finish_reason_name(e.reason)) + ": " + e.error;
            });
      if (e.has_token) {
        if (t.tokens == 0) {
          t.first_ms = ms_between(t.submitted, now);
          result.ttft_ms.push_back(t.first_ms);
        } else {
          result.itl_ms.push_back(ms_between(t.last, now));
        }
        t.last = now;
        ++t.tokens;
        ++result.output_tokens;
      }
      if (e.finished) {
        if (t.tokens > 1) {
          result.tpot_ms.push_back((ms_between(t.submitted, t.last) - t.first_ms) /
                                   static_cast<double>(t.tokens - 1));
        }
        ++result.requests;
        open.erase(e.id);
      }
    }
  }
  result.seconds = seconds_since(start);
  const auto steps = static_cast<double>(std::max<std::int64_t>(result.steps, 1));
  for (double* average :
       {&result.reserved_bytes, &result.paged_used_bytes, &result.paged_wasted_bytes,
        &result.contiguous_bytes, &result.held_position_bytes}) {
    *average /= steps;
  }
  result.preemptions = engine.scheduler().preemptions();
  result.prefix_hits = engine.kv_usage().blocks.prefix_hits;
  result.prefix_lookups = engine.kv_usage().blocks.prefix_lookups;
  return result;
}

}  // namespace attnscope::cli
