// attnscope: a from-scratch GPT-2 inference runtime with swappable attention backends.
//
// Exit codes: 0 success, 1 a runtime error (bad file, bad input), 2 a usage error (unknown flag,
// bad value). Every error is one line on stderr: "attnscope: error: <what>".
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "runtime/cpu_features.h"
#include "runtime/error.h"
#include "tools/attnscope/cli/flags.h"
#include "tools/attnscope/cli/output_files.h"
#include "tools/attnscope/commands/commands.h"

namespace {

// The edit distance (insertions, deletions, substitutions) between two words.
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// "unknown command 'generat' (did you mean 'generate'?; commands: ...)" for a first word that
// names no command; empty when it does (or is a flag).
std::string unknown_command_message(const CLI::App& app, const std::string& word) {
  if (word.empty() || word.front() == '-') return {};
  std::string nearest, names;
  std::size_t nearest_distance = word.size();
  for (const CLI::App* sub : app.get_subcommands({})) {
    const std::string& name = sub->get_name();
    if (name == word) return {};
    names += (names.empty() ? "" : ", ") + name;
    const std::size_t distance = edit_distance(word, name);
    if (distance < nearest_distance) {
      nearest_distance = distance;
      nearest = name;
    }
  }
  const bool close = !nearest.empty() && nearest_distance <= 2;
  return "unknown command '" + word + "'" + (close ? " (did you mean '" + nearest + "'?)" : "") +
         "; the commands are " + names;
}

// `exit_code` once the help or version text printed reached standard output; 1 when it was lost
// (a full disk, /dev/full).
int help_printed(int exit_code) {
  try {
    attnscope::cli::flush_standard_output();
  } catch (const attnscope::Error& e) {
    std::cerr << "attnscope: error: " << e.what() << "\n";
    return 1;
  }
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace attnscope;
  CLI::App app{
      "attnscope: a teaching-grade inference runtime for GPT-2 and Llama-family models, with "
      "swappable attention backends.\n"
      "Run `attnscope COMMAND --help` for the flags of a command."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "attnscope 0.1.0");
  const std::vector<cli::Subcommand> subcommands = {
      cli::add_generate(app), cli::add_tokenize(app),   cli::add_detokenize(app),
      cli::add_inspect(app),  cli::add_bench(app),      cli::add_bench_attention(app),
      cli::add_profile(app),  cli::add_explain(app),    cli::add_compare(app),
      cli::add_diverge(app),  cli::add_perplexity(app), cli::add_study(app),
      cli::add_serve(app)};

  // `attnscope help` and `attnscope help COMMAND` are --help; a mistyped command is named.
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args.front() == "help") {
    args.front() = "--help";
    if (args.size() > 1) std::swap(args[0], args[1]);
  }
  if (const std::string unknown = args.empty() ? "" : unknown_command_message(app, args.front());
      !unknown.empty()) {
    std::cerr << "attnscope: error: " << unknown << " (see --help)\n";
    return 2;
  }

  try {
    cli::refuse_empty_list_items(app, args);
    std::reverse(args.begin(), args.end());  // CLI11 takes the arguments last first
    app.parse(args);
    cli::refuse_out_of_range_integers(app);
  } catch (const CLI::CallForHelp& e) {
    return help_printed(app.exit(e));
  } catch (const CLI::CallForAllHelp& e) {
    return help_printed(app.exit(e));
  } catch (const CLI::CallForVersion& e) {
    return help_printed(app.exit(e));
  } catch (const CLI::ParseError& e) {
    std::cerr << "attnscope: error: " << e.what() << " (see --help)\n";
    return 2;
  }

  try {
    cpu_level();  // an unknown ATTNSCOPE_CPU_LEVEL fails here, before any work is done
    for (const cli::Subcommand& subcommand : subcommands) {
      if (!subcommand.app->parsed()) continue;
      const int exit_code = subcommand.run();
      cli::flush_standard_output();
      return exit_code;
    }
    return 2;
  } catch (const Error& e) {
    std::cerr << "attnscope: error: " << e.what() << "\n";
  } catch (const std::bad_alloc&) {
    std::cerr << "attnscope: error: out of memory\n";
  } catch (const std::exception& e) {
    std::cerr << "attnscope: error: " << e.what() << "\n";
  }
  return 1;
}
