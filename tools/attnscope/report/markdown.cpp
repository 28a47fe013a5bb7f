// The parts of the Markdown reports (tools/attnscope/report/markdown.h).
#include "tools/attnscope/report/markdown.h"

namespace attnscope::cli {

namespace {

// Appends " CELL |", or " |" for an empty cell. (The table's strings are built by appending
// characters: GCC 12 warns falsely (-Wrestrict) on string operator+ and literal assignment here.)
void append_cell(std::string& text, const std::string& cell) {
  if (!cell.empty()) {
    text += ' ';
    text += cell;
  }
  text += " |";
}

}  // namespace

MarkdownTable::MarkdownTable(std::vector<Column> columns)
    : columns_(columns.size()), text_(1, '|') {
  std::string rule(1, '|');
  for (const Column& column : columns) {
    append_cell(text_, column.header);
    rule += column.align == Align::Left ? "---|" : "---:|";
  }
  text_ += '\n';
  text_ += rule;
  text_ += '\n';
}

void MarkdownTable::add_row(const std::vector<std::string>& cells) {
  text_ += "|";
  for (std::size_t i = 0; i < columns_; ++i) append_cell(text_, i < cells.size() ? cells[i] : "");
  text_ += "\n";
}

std::string conditions_markdown(const nlohmann::json& report) {
  if (!report.contains("conditions") || !report["conditions"].is_object()) return "";
  const nlohmann::json& conditions = report["conditions"];
  std::string text = "Conditions: " + conditions.value("description", std::string()) + "\n\n";
  if (conditions["warning"].is_string()) {
    text += "**Warning:** " + conditions["warning"].get<std::string>() + ".\n\n";
  }
  return text;
}

std::string findings_markdown(const nlohmann::json& report) {
  std::string text;
  for (const nlohmann::json& finding : report["findings"]) {
    text += "- " + finding.get<std::string>() + "\n";
  }
  return text;
}

}  // namespace attnscope::cli
