// The parts of the Markdown reports (tools/attnscope/report/markdown.h).
#include "tools/attnscope/report/markdown.h"

namespace attnscope::cli {

namespace {

// " CELL |", or " |" for an empty cell.
std::string cell_text(const std::string& cell) { return cell.empty() ? " |" : " " + cell + " |"; }

}  // namespace

MarkdownTable::MarkdownTable(std::vector<Column> columns) : columns_(columns.size()) {
  std::string rule = "|";
  text_ = "|";
  for (const Column& column : columns) {
    text_ += cell_text(column.header);
    rule += column.align == Align::Left ? "---|" : "---:|";
  }
  text_ += "\n" + rule + "\n";
}

void MarkdownTable::add_row(const std::vector<std::string>& cells) {
  text_ += "|";
  for (std::size_t i = 0; i < columns_; ++i) text_ += cell_text(i < cells.size() ? cells[i] : "");
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
