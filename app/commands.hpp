// app/commands.hpp — what a `convlab` command is, and the list of them.
//
// Each command lives in its own file (app/cmd_NAME.cpp) and defines one
// `const Command` object. main.cpp lists those objects in a table. To add a
// command: write app/cmd_waterline.cpp defining `const Command waterline_command{...}`,
// declare it below, and add `&waterline_command` to the table in main.cpp.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace convlab::app {

struct Command {
  const char* name;                       // "run"
  const char* summary;                    // one line for `convlab help`
  void (*print_help)(std::ostream& out);  // `convlab NAME --help`
  // The arguments after the command's name; returns the exit status. Throws
  // UsageError (exit 2) for a bad command line, anything else for a failure (exit 1).
  int (*run)(const std::vector<std::string>& args);
};

extern const Command list_command;   // app/cmd_list.cpp
extern const Command run_command;    // app/cmd_run.cpp
extern const Command tour_command;   // app/cmd_tour.cpp
extern const Command probe_command;  // app/cmd_probe.cpp
extern const Command waterline_command;  // app/cmd_waterline.cpp
extern const Command roofline_command;   // app/cmd_roofline.cpp
extern const Command grade_command;      // app/cmd_grade.cpp
extern const Command plans_command;      // app/cmd_plans.cpp
extern const Command tucker_command;     // app/cmd_tucker.cpp

}  // namespace convlab::app
