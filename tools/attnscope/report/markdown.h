// The parts every Markdown report is made of, so that `compare`, `study` and `bench-attention`
// write them alike: a table (header, alignment row, rows), the run's conditions with their
// warning, and the list of findings.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace attnscope::cli {

// A Markdown table: "| a | b |", then "|---|---:|", then one line per row.
class MarkdownTable {
 public:
  enum class Align { Left, Right };
  struct Column {
    std::string header;
    Align align = Align::Right;
  };
  explicit MarkdownTable(std::vector<Column> columns);

  // One row; the cells it leaves out at the end stay empty.
  void add_row(const std::vector<std::string>& cells);
  // The table, every line ending in a newline.
  const std::string& text() const { return text_; }

 private:
  std::size_t columns_ = 0;
  std::string text_;
};

// "Conditions: SENTENCE\n\n" and, when the run's load moved, "**Warning:** ...\n\n", from a
// report's "conditions" (RunConditions::to_json(); "" when the report has none).
std::string conditions_markdown(const nlohmann::json& report);

// "- FINDING\n" for each of a report's "findings".
std::string findings_markdown(const nlohmann::json& report);

}  // namespace attnscope::cli
