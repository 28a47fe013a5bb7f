// The formats `attnscope bench` prints its report in (tools/attnscope/report/bench_output.h): a
// Markdown table, CSV, one JSON object, or one JSON object per result row.
#include "tools/attnscope/report/bench_output.h"

#include <functional>
#include <iostream>
#include <vector>

#include "tools/attnscope/report/report_json.h"

namespace attnscope::cli {

namespace {

using nlohmann::json;

// "3.0 KiB", "512.0 MiB", "1.25 GiB": bytes in binary units.
std::string binary_bytes(double bytes) {
  constexpr double kKiB = 1024.0, kMiB = kKiB * 1024.0, kGiB = kMiB * 1024.0;
  if (bytes >= kGiB) return fixed(bytes / kGiB, 2) + " GiB";
  if (bytes >= kMiB) return fixed(bytes / kMiB, 1) + " MiB";
  return fixed(bytes / kKiB, 1) + " KiB";
}

// One column of the Markdown and CSV tables: its JSON key (the CSV header) and how Markdown
// shows it.
struct Column {
  std::string key;
  std::string header;
  std::function<std::string(const json&)> markdown;
};

std::string plain(const json& value) {
  if (value.is_null()) return "";
  if (value.is_string()) return value.get<std::string>();
  return value.dump();
}

std::string plus_minus(const json& row, const std::string& stem, int decimals) {
  if (row.value(stem + "_mean", json()).is_null()) return "-";
  return fixed(row[stem + "_mean"].get<double>(), decimals) + " ± " +
         fixed(row[stem + "_stddev"].get<double>(), decimals);
}

// "12.30 [11.90, 12.80]": the median and its 95% interval (STEM_median_low/high).
std::string median_interval(const json& row, const std::string& stem, int decimals) {
  if (row.value(stem + "_median", json()).is_null()) return "-";
  return fixed(row[stem + "_median"].get<double>(), decimals) + " [" +
         fixed(row[stem + "_median_low"].get<double>(), decimals) + ", " +
         fixed(row[stem + "_median_high"].get<double>(), decimals) + "]";
}

// The median column; its interval's two columns (CSV only) follow it.
Column median_column(const std::string& stem, const std::string& header, int decimals) {
  return {stem + "_median", header,
          [stem, decimals](const json& r) { return median_interval(r, stem, decimals); }};
}

Column text_column(const std::string& key, const std::string& header) {
  return {key, header, [key](const json& row) { return plain(row.value(key, json())); }};
}

std::vector<Column> columns_for(const std::string& op) {
  if (op == "model") {
    return {text_column("model", "model"),
            text_column("backend", "attn"),
            text_column("dtype", "dtype"),
            text_column("threads", "threads"),
            text_column("batch", "batch"),
            text_column("test", "test"),
            {"tokens_per_s_mean", "tokens/s",
             [](const json& r) { return plus_minus(r, "tokens_per_s", 2); }},
            {"tokens_per_s_stddev", "", nullptr},
            median_column("tokens_per_s", "median tokens/s [95% CI]", 2),
            {"tokens_per_s_median_low", "", nullptr},
            {"tokens_per_s_median_high", "", nullptr},
            {"ttft_ms_mean", "TTFT ms", [](const json& r) { return plus_minus(r, "ttft_ms", 2); }},
            {"ttft_ms_stddev", "", nullptr},
            median_column("ttft_ms", "median TTFT ms [95% CI]", 2),
            {"ttft_ms_median_low", "", nullptr},
            {"ttft_ms_median_high", "", nullptr},
            {"peak_bytes", "peak memory",
             [](const json& r) { return binary_bytes(r["peak_bytes"].get<double>()); }},
            {"weights_gb_per_s_mean", "weights GB/s",
             [](const json& r) {
               const json& v = r["weights_gb_per_s_mean"];
               return v.is_null() ? std::string("-") : fixed(v.get<double>(), 1);
             }},
            {"weights_share_of_read_roof", "% of read roof", [](const json& r) {
               return r.contains("weights_share_of_read_roof")
                          ? fixed(100 * r["weights_share_of_read_roof"].get<double>(), 0) + "%"
                          : std::string("-");
             }}};
  }
  if (op == "attention") {
    auto number = [](const std::string& key, int decimals) {
      return [key, decimals](const json& r) {
        return r.contains(key) ? fixed(r[key].get<double>(), decimals) : "-";
      };
    };
    return {text_column("backend", "attn"),
            {"dtype", "dtype",
             [](const json& r) {
               const std::string dtype = r["dtype"].get<std::string>();
               return r.value("bf16_products", false) ? dtype + " (bf16 products)" : dtype;
             }},
            {"bf16_products", "", nullptr},
            text_column("threads", "threads"),
            text_column("batch", "batch"),
            text_column("heads", "heads"),
            text_column("q_len", "q_len"),
            text_column("kv_len", "kv_len"),
            text_column("head_dim", "head_dim"),
            {"time_ms_mean", "ms",
             [](const json& r) {
               return r.contains("error") ? "unsupported: " + r["error"].get<std::string>()
                                          : plus_minus(r, "time_ms", 3);
             }},
            {"time_ms_stddev", "", nullptr},
            median_column("time_ms", "median ms [95% CI]", 3),
            {"time_ms_median_low", "", nullptr},
            {"time_ms_median_high", "", nullptr},
            {"gflops", "GFLOP/s", number("gflops", 1)},
            {"steps_observed", "kernels/call",
             [](const json& r) {
               return r.contains("error") ? std::string("-")
                                          : plain(r["steps_observed"]) + " (model " +
                                                plain(r["steps_predicted"]) + ")";
             }},
            {"steps_predicted", "", nullptr},
            {"peak_temporary_bytes", "temporaries",
             [](const json& r) {
               return r.contains("error") ? std::string("-")
                                          : binary_bytes(r["peak_temporary_bytes"].get<double>());
             }},
            {"predicted_temporary_bytes", "", nullptr}};
  }
  if (op == "serving") {
    auto number = [](const std::string& key, int decimals) {
      return [key, decimals](const json& r) {
        return r.value(key, json()).is_null() ? std::string("-")
                                              : fixed(r[key].get<double>(), decimals);
      };
    };
    auto percent = [](const std::string& key) {
      return [key](const json& r) { return fixed(100.0 * r[key].get<double>(), 1) + "%"; };
    };
    return {text_column("model", "model"),
            text_column("backend", "attn"),
            text_column("dtype", "dtype"),
            text_column("threads", "threads"),
            text_column("concurrency", "concurrency"),
            median_column("output_tokens_per_s", "output tokens/s [95% CI]", 1),
            {"output_tokens_per_s_median_low", "", nullptr},
            {"output_tokens_per_s_median_high", "", nullptr},
            {"speedup_vs_one_at_a_time", "vs one at a time", number("speedup_vs_one_at_a_time", 2)},
            {"requests_per_s_median", "requests/s", number("requests_per_s_median", 2)},
            {"ttft_ms_median", "TTFT ms p50", number("ttft_ms_median", 1)},
            {"ttft_ms_p99", "TTFT ms p99", number("ttft_ms_p99", 1)},
            {"tpot_ms_median", "TPOT ms p50", number("tpot_ms_median", 2)},
            {"tpot_ms_p99", "TPOT ms p99", number("tpot_ms_p99", 2)},
            {"kv_used_bytes_peak", "KV used peak",
             [](const json& r) { return binary_bytes(r["kv_used_bytes_peak"].get<double>()); }},
            {"kv_paged_waste", "paged waste", percent("kv_paged_waste")},
            {"kv_contiguous_waste", "contiguous waste", percent("kv_contiguous_waste")},
            text_column("preemptions", "preempted"),
            text_column("prefix_hits", "prefix hits")};
  }
  return {text_column("test", "test"),
          text_column("variant", "variant"),
          {"best", "best", [](const json& r) { return r["best"].get<bool>() ? "best" : ""; }},
          text_column("threads", "threads"),
          median_column("gb_per_s", "median GB/s [95% CI]", 1),
          {"gb_per_s_median_low", "", nullptr},
          {"gb_per_s_median_high", "", nullptr},
          {"gb_per_s_mean", "GB/s", [](const json& r) { return plus_minus(r, "gb_per_s", 1); }},
          {"gb_per_s_stddev", "", nullptr}};
}

void print_markdown(const json& report) {
  const std::vector<Column> columns = columns_for(report["op"]);
  std::string header = "|", rule = "|";
  for (const Column& column : columns) {
    if (!column.markdown) continue;  // folded into the column before it ("mean ± stddev")
    header += " " + column.header + " |";
    rule +=
        column.key == "model" || column.key == "test" || column.key == "backend" ? "---|" : "---:|";
  }
  const json& machine = report["machine"];
  std::cout << "attnscope bench --op " << report["op"].get<std::string>() << ": "
            << machine["cpu"].get<std::string>() << " (cpu kernels "
            << machine["cpu_kernels"].get<std::string>() << "), " << machine["threads"]
            << " threads, " << report["repetitions"] << " repetitions after " << report["warmup"]
            << " warm-up (± is the standard deviation, brackets the median's 95% bootstrap "
               "interval), revision "
            << report["attnscope_revision"].get<std::string>() << "\n\n"
            << header << "\n"
            << rule << "\n";
  for (const json& row : report["results"]) {
    std::cout << "|";
    for (const Column& column : columns) {
      if (column.markdown) std::cout << " " << column.markdown(row) << " |";
    }
    std::cout << "\n";
  }
  if (report["op"] == "serving" && !report["results"].empty()) {
    std::cout << "\nWorkload: " << report["results"][0]["workload"].get<std::string>()
              << ". TTFT: submission to first token; TPOT: the time per output token after the "
                 "first; percentiles over every request of every repetition. KV waste: of the "
                 "paged cache's used blocks, the positions not yet written; of a contiguous "
                 "cache reserving the whole context per running request, the positions not "
                 "held (time-averaged over the steps).\n";
  }
}

std::string csv_field(const json& value) {
  std::string text = plain(value);
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

void print_csv(const json& report) {
  const std::vector<Column> columns = columns_for(report["op"]);
  for (std::size_t i = 0; i < columns.size(); ++i) {
    std::cout << (i ? "," : "") << columns[i].key;
  }
  std::cout << "\n";
  for (const json& row : report["results"]) {
    for (std::size_t i = 0; i < columns.size(); ++i) {
      std::cout << (i ? "," : "") << csv_field(row.value(columns[i].key, json()));
    }
    std::cout << "\n";
  }
}

// Every row alone, with the report's provenance (tool, revision, date, machine) copied in.
void print_jsonl(const json& report) {
  for (json row : report["results"]) {
    for (const char* key : {"tool", "attnscope_revision", "date", "machine"}) {
      row[key] = report[key];
    }
    std::cout << row.dump() << "\n";
  }
}

}  // namespace

void print_bench_report(const json& report, const std::string& format) {
  if (format == "json") {
    std::cout << report.dump(2) << "\n";
  } else if (format == "jsonl") {
    print_jsonl(report);
  } else if (format == "csv") {
    print_csv(report);
  } else {
    print_markdown(report);
  }
}

}  // namespace attnscope::cli
