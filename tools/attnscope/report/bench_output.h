// The output formats of `attnscope bench`: md (a Markdown table under a one-line caption), csv
// (every column, one row per result), json (the whole report: every repetition and the machine)
// and jsonl (one object per result, each carrying the report's provenance).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace attnscope::cli {

// Prints `report` to stdout in `format` (md, csv, json or jsonl). The report is bench's object:
// tool, attnscope_revision, date, op, repetitions, warmup, machine and results (rows whose keys
// depend on the op: model, attention or membw).
void print_bench_report(const nlohmann::json& report, const std::string& format);

}  // namespace attnscope::cli
