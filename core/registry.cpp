#include <algorithm>

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

const std::vector<OpHandle*>& all_ops() { return op_list(); }

OpHandle* find_op(const std::string& name) {
  for (OpHandle* op : op_list())
    if (op->name() == name) return op;
  return nullptr;
}

}  // namespace convlab
