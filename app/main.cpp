// app/main.cpp — the `convlab` program: finds the command in the table below
// and runs it. Every error ends here as one line, `convlab: error: ...`, on
// stderr, with exit status 2 for a usage error and 1 for a failure; no
// exception escapes and nothing aborts.
//
// To add a command: write app/cmd_NAME.cpp defining `const Command NAME_command`,
// declare it in app/commands.hpp, and add it to kCommands.
#include <algorithm>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "app/commands.hpp"
#include "app/common.hpp"
#include "core/checked_size.hpp"
#include "core/harness.hpp"
#include "core/spec.hpp"

namespace convlab::app {
namespace {

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

const Command* const kCommands[] = {
    &list_command,
    &run_command,
    &tour_command,
    &probe_command,
    &waterline_command,
    &roofline_command,
    &grade_command,
    &plans_command,
    &tucker_command,
};

const Command* find_command(const std::string& name) {
  for (const Command* c : kCommands)
    if (name == c->name) return c;
  return nullptr;
}

std::string command_names() {
  std::string names;
  for (const Command* c : kCommands) names += (names.empty() ? "" : ", ") + std::string(c->name);
  return names;
}

void print_main_help(std::ostream& out) {
  out << "convlab: every rung of the convolution ladder, checked against one reference\n"
         "and measured against this machine's own limits.\n"
         "\n"
         "usage: convlab COMMAND [ARGS]   (convlab COMMAND --help, or convlab help COMMAND)\n"
         "\n"
         "commands:\n";
  std::size_t width = 0;
  for (const Command* c : kCommands) width = std::max(width, std::string(c->name).size());
  for (const Command* c : kCommands) {
    const std::string name = c->name;
    out << "  " << name << std::string(width + 2 - name.size(), ' ') << c->summary << "\n";
  }
  out << "\n"
         "Variants are named OP/DEVICE/NAME, e.g. conv2d/cpu/01b_openmp; `convlab list` shows them all.\n"
         "Exit status: 0 success, 1 a check failed or something could not be done, 2 a usage error.\n"
         "\n"
         "--max-bytes N (any command; default $CONVLAB_MAX_BYTES, else 16G): the most one run may\n"
         "allocate, all its tensors, workspace and reference copies together (K, M, G, T: powers of\n"
         "1024). A larger problem is refused before anything is allocated.\n";
}

bool asks_for_help(const std::vector<std::string>& args) {
  for (const std::string& a : args)
    if (a == "--help" || a == "-h") return true;
  return false;
}

// --max-bytes N (or --max-bytes=N), accepted anywhere on the line for every
// command: the allocation limit of core/checked_size.hpp, over CONVLAB_MAX_BYTES.
std::vector<std::string> take_max_bytes(const std::vector<std::string>& args) {
  std::vector<std::string> rest;
  bool seen = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string value;
    if (args[i] == "--max-bytes") {
      if (i + 1 >= args.size() || looks_like_option(args[i + 1]))
        throw UsageError("option --max-bytes needs a value (bytes, or with K, M, G or T, e.g. 16G)");
      value = args[++i];
    } else if (args[i].rfind("--max-bytes=", 0) == 0) {
      value = args[i].substr(12);
    } else {
      rest.push_back(args[i]);
      continue;
    }
    if (seen) throw UsageError("option --max-bytes given twice");
    seen = true;
    set_max_allocation_bytes(parse_byte_count(value, "--max-bytes"));
  }
  return rest;
}

int dispatch(const std::vector<std::string>& all_args) {
  const std::vector<std::string> args = take_max_bytes(all_args);
  if (args.empty()) throw UsageError("no command given (commands: " + command_names() + "; see `convlab help`)");
  const std::string& name = args[0];
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (name == "help" || name == "--help" || name == "-h") {
    if (rest.empty()) {
      print_main_help(std::cout);
      return 0;
    }
    const Command* c = find_command(rest[0]);
    if (!c) throw UsageError("no help for unknown command '" + rest[0] + "' (commands: " + command_names() + ")");
    c->print_help(std::cout);
    return 0;
  }
  const Command* c = find_command(name);
  if (!c) throw UsageError("unknown command '" + name + "' (commands: " + command_names() + "; see `convlab help`)");
  if (asks_for_help(rest)) {
    c->print_help(std::cout);
    return 0;
  }
  return c->run(rest);
}

// Messages print as one line, whatever their source put in them.
std::string one_line(std::string message) {
  for (char& ch : message)
    if (ch == '\n' || ch == '\r') ch = ' ';
  return message;
}

int report(const char* what, int status) {
  std::cout.flush();
  std::cerr << "convlab: error: " << one_line(what) << std::endl;
  return status;
}

}  // namespace
}  // namespace convlab::app

int main(int argc, char* argv[]) {
  using namespace convlab::app;
  try {
    return dispatch(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const UsageError& e) {
    return report(e.what(), kExitUsage);
  } catch (const convlab::SpecError& e) {  // a malformed --shape, or .npy shapes that do not fit the operation
    return report(e.what(), kExitUsage);
  } catch (const convlab::Unsupported& e) {  // a valid problem this variant does not handle
    return report(e.what(), kExitFailure);
  } catch (const std::invalid_argument& e) {  // other bad values on the command line, e.g. dtype=f64
    return report(e.what(), kExitUsage);
  } catch (const std::exception& e) {  // Unsupported, DeviceError, unreadable files, failed writes
    return report(e.what(), kExitFailure);
  } catch (...) {
    return report("unexpected non-standard exception", kExitFailure);
  }
}
