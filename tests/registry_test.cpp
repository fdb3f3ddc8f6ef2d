// tests/registry_test.cpp — the registry refuses a second variant with an id
// that is already taken, at start-up, naming both files; and every id the
// suite registers is unique (op/device/name).
#include <algorithm>
#include <iostream>
#include <set>
#include <string>

#include "core/harness.hpp"
#include "tests/catch_compat.hpp"
#include "tests/support.hpp"

namespace convlab::testing {

TEST_CASE("registry: a duplicate id stops the program before main, naming both files", "[registry]") {
  const std::string program = sibling_program("convlab_duplicate_id");
  if (program.empty()) {
    std::cout << "CONVLAB-SKIP: convlab_duplicate_id is not built beside the tests\n";
    return;
  }
  const ProgramResult r = run_program(program, "");
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.status == 2);
  CHECK(r.out.find("main() reached") == std::string::npos);
  CHECK(r.err.find("duplicate variant id 'gemm/cpu/duplicate_probe'") != std::string::npos);
  CHECK(r.err.find("tests/duplicate_id/first.cpp") != std::string::npos);
  CHECK(r.err.find("tests/duplicate_id/second.cpp") != std::string::npos);
  // One line, so a student sees the whole reason at once.
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}

TEST_CASE("registry: every registered id is unique and names its device gpu or cpu", "[registry]") {
  std::set<std::string> ids;
  for (const OpHandle* op : all_ops())
    for (const VariantInfo& v : op->variants()) {
      INFO(v.id());
      CHECK(ids.insert(v.id()).second);
      CHECK((v.id().find("/cpu/") != std::string::npos || v.id().find("/gpu/") != std::string::npos));
    }
  CHECK(!ids.empty());
}

}  // namespace convlab::testing
