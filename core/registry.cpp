#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "core/harness.hpp"

namespace convlab {

namespace {
std::vector<OpHandle*>& op_list() {
  static std::vector<OpHandle*> ops;
  return ops;
}
}  // namespace

void add_op(OpHandle* op) {
  auto& ops = op_list();
  ops.push_back(op);
  std::sort(ops.begin(), ops.end(), [](OpHandle* a, OpHandle* b) { return a->name() < b->name(); });
}

void refuse_duplicate_variant(const std::string& id, const char* first_file, const char* second_file) {
  std::fprintf(stderr,
               "convlab: duplicate variant id '%s': registered by %s and again by %s "
               "(every variant needs its own name; rename one of them)\n",
               id.c_str(), first_file, second_file);
  std::fflush(stderr);
  std::_Exit(2);
}

const std::vector<OpHandle*>& all_ops() { return op_list(); }

OpHandle* find_op(const std::string& name) {
  for (OpHandle* op : op_list())
    if (op->name() == name) return op;
  return nullptr;
}

}  // namespace convlab
