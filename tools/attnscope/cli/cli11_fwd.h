// The CLI11 classes that flag-adding functions take, declared without CLI11 itself: a header
// that declares such a function includes this, and only the files that add or read flags include
// <CLI/CLI.hpp>. CLI11 2.1 is header-only and defines its validators (CLI::ExistingFile, ...) in
// every file that includes it, ~5-10 s of compile each.
#pragma once

namespace CLI {
class App;
class Option;
class Validator;
}  // namespace CLI
