// ParseAndRun: CLI11's parse, its errors, and a last word on exceptions.
#include "cli/program/program_main.h"

#include <iostream>

namespace shmguard::cli {

int ParseAndRun(CLI::App& app, int argc, char** argv, const int& code) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 checks for a subcommand before it reports unexpected words, so a mistyped one
    // ("shmguard audti") would only read "A subcommand is required": name it, and the table's.
    const std::vector<std::string> words = app.remaining();
    if (dynamic_cast<const CLI::RequiredError*>(&e) && app.get_subcommands().empty() && !words.empty()) {
      std::string names;
      for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
        names += (names.empty() ? "" : ", ") + sub->get_name();
      }
      std::cerr << app.get_name() << ": unknown subcommand '" << words.front() << "': use one of " << names << "\n"
                << "Run with --help for more information.\n";
      return ToInt(ExitCode::kUsage);
    }
    return app.exit(e) == 0 ? 0 : ToInt(ExitCode::kUsage);
  } catch (const std::exception& e) {  // a bug: say so instead of terminating
    std::cerr << app.get_name() << ": internal error: " << e.what() << "\n";
    return ToInt(ExitCode::kUsage);
  }
  return code;
}

}  // namespace shmguard::cli
