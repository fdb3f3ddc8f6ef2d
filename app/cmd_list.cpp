// app/cmd_list.cpp — `convlab list`: every registered variant, in lesson order.
//
// Nothing here names a variant: the list is whatever registered itself at
// start-up (core/registry.hpp), so a new file in cpu/ or gpu/ appears here
// with no edit.
#include <algorithm>
#include <iostream>

#include "app/commands.hpp"
#include "app/common.hpp"
#include "convlab/build_info.hpp"

namespace convlab::app {
namespace {

void print_help(std::ostream& out) {
  out << "usage: convlab list\n"
         "\n"
         "Every registered variant, sorted by lesson, operation, device and name:\n"
         "its lesson, operation, device, name, the threads it uses (1 or all),\n"
         "whether it is a library baseline, and the idea it adds. Run one with\n"
         "`convlab run OP/DEVICE/NAME`. Optional baselines this build could not\n"
         "find (OpenBLAS, oneDNN, cuDNN) are listed last, each with the reason.\n";
}

// The optional baselines that configure could not find, one line each, so a
// missing library is visible rather than a silently shorter list.
void print_missing_baselines(std::ostream& out) {
  const std::string missing = build_info::missing_baselines;
  std::size_t start = 0;
  while (start < missing.size()) {
    std::size_t end = missing.find(';', start);
    if (end == std::string::npos) end = missing.size();
    if (end > start) out << "missing baseline, its variants left out of this build: " << missing.substr(start, end - start) << "\n";
    start = end + 1;
  }
}

int run(const std::vector<std::string>& args) {
  const ParsedArgs parsed = parse_args(args, {}, "list");
  if (!parsed.positional.empty()) throw UsageError("`convlab list` takes no arguments, got '" + parsed.positional[0] + "'");

  const std::vector<VariantRef> variants = all_variants();
  std::size_t op_width = 2, name_width = 4;
  for (const VariantRef& v : variants) {
    op_width = std::max(op_width, v.info.op.size());
    name_width = std::max(name_width, v.info.name.size());
  }
  StreamingTable table(std::cout, {{"lesson", 6, true},
                                   {"op", int(op_width)},
                                   {"device", 6},
                                   {"name", int(name_width)},
                                   {"threads", 7},
                                   {"baseline", 8},
                                   {"idea", 0}});
  table.print_header();
  for (const VariantRef& v : variants) {
    char lesson[8];
    std::snprintf(lesson, sizeof lesson, "%02d", v.info.lesson);
    table.print_row({lesson, v.info.op, device_name(v.info.device), v.info.name,
                     v.info.device == Device::gpu ? "-" : v.info.threads == Threads::all ? "all" : "1", v.info.baseline ? "yes" : "", v.info.idea});
  }
  if (variants.empty()) std::cout << "(no variants registered in this build)\n";
  else std::cout << "\n" << variants.size() << " variants; run one with `convlab run OP/DEVICE/NAME`\n";
  print_missing_baselines(std::cout);
  return 0;
}

}  // namespace

const Command list_command{"list", "every registered variant, by lesson", print_help, run};

}  // namespace convlab::app
