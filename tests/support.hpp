// tests/support.hpp — what the tests share: the seed, the GPU skip, "run one
// variant over its operation's test table" (registered or one-off), finding a
// registered variant, and running the convlab program.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/harness.hpp"
#include "tests/catch_compat.hpp"

namespace convlab::testing {

// True when `part` occurs in `text` (for checking messages and program output).
bool contains(const std::string& text, const std::string& part);

// An f32 tensor of `shape` drawn uniformly from [-scale, scale] with its own seed.
Tensor random_tensor(const Shape& shape, uint64_t seed, double scale = 1.0);

// A fresh folder for one test program's files, under the system's temp folder, named
// for `tag` and this process (so parallel ctest runs do not share it).
std::filesystem::path scratch_dir(const std::string& tag);

// The run's base seed: $CONVLAB_SEED if set, otherwise fresh from the clock.
// It is printed with every failure, so any failure can be replayed exactly.
uint64_t base_seed();
// The seed of one shape's inputs: base_seed() mixed with the shape's text, so
// each shape draws different data and a failure replays with CONVLAB_SEED.
uint64_t seed_for(const std::string& spec);

// True (and prints CONVLAB-SKIP, which CTest reports as skipped) when a GPU
// test cannot run here.
bool skip_without_gpu();

// How many failing shapes of one variant are reported in full; the rest are
// named on one line, so one broken variant prints a screenful, not a thousand lines.
inline constexpr int kMaxReportedFailures = 3;

// "ok (rel L2 ...)" or the failure's message (coordinates in the output's layout).
std::string describe_result(const CompareResult& r);

// checked_run twice (a run must not lean on the previous run's output),
// failing the Catch test with `what` and the replay seed on a mismatch.
void check_twice(ICase& c, const std::string& what);

// Each spec's case (`make` returns nullptr for an unsupported one) checked
// twice; the first kMaxReportedFailures failures are kept in full ("spec,
// why"), the rest only named. With CONVLAB_TEST_FLOP_LIMIT set (the sanitizer
// stage of bench/run_gpu.sh), cases above that many FLOPs are left out, except
// each table's smallest supported case.
struct TableFailures {
  int tested = 0, failed = 0, left_out = 0;
  std::vector<std::string> shown;  // "spec, run 1: why"
  std::string unshown;             // "spec; spec; ..."
};
TableFailures run_table(const std::vector<std::string>& specs,
                        const std::function<std::unique_ptr<ICase>(const std::string&)>& make);

// Runs variant `index` of `op` on every supported test shape: poison, run,
// verify; fails the Catch test on any mismatch, and if the variant supports
// none of the shapes (a variant must be tested on something).
void check_variant_on_table(const OpHandle& op, std::size_t index);

// What run_on_f32_table found: shapes passed and tried, and one line per shape
// (accepted, why not, or left out) with the replay seed. Callers INFO(report)
// beside their checks, so a failure names its shapes.
struct TableRun {
  int passed = 0, tried = 0;
  std::string report;
};

// Runs a one-off variant `v` (not registered: the checker's deliberately wrong
// variants) through the harness on every f32 shape of its operation's CPU test
// table. `min_nonzero` > 0 leaves out the draws whose reference has fewer
// non-zero outputs: a precision defect can hide in one output by chance (fp16
// inputs at M = N = K = 1 round within the fp32 bound about one draw in 150),
// and ReLU may zero a tiny output whole; in four outputs at once it cannot.
template <class P> TableRun run_on_f32_table(const Variant<P>& v, std::ptrdiff_t min_nonzero = 0) {
  const VariantInfo info{OpTraits<P>::name, v.name, v.device, 0, v.threads, "", false};
  TableRun run;
  run.report = v.name + " (replay: CONVLAB_SEED=" + std::to_string(base_seed()) + ")";
  int drawn = 0;
  for (const P& p : OpTraits<P>::shapes(ShapeTable::test, Device::cpu)) {
    if (p.dtype != DType::f32) continue;
    const uint64_t seed = base_seed() + uint64_t(drawn++);
    std::vector<Tensor> inputs = random_inputs(p, seed);
    if (min_nonzero > 0) {
      std::vector<std::vector<double>> in, ref;
      for (const Tensor& t : inputs) in.push_back(t.to_double());
      for (const TensorSpec& s : OpTraits<P>::outputs(p)) {
        std::size_t count = 1;
        for (const int64_t extent : s.shape) count *= std::size_t(extent);
        ref.emplace_back(count);
      }
      OpTraits<P>::reference(p, in, ref);
      std::ptrdiff_t nonzero = 0;
      for (const std::vector<double>& r : ref)
        nonzero += std::count_if(r.begin(), r.end(), [](double y) { return y != 0.0; });
      if (nonzero < min_nonzero) {
        run.report += "\n  " + OpTraits<P>::spec(p) + ": left out (" + std::to_string(nonzero) + " non-zero outputs)";
        continue;
      }
    }
    Case<P> c(v, info, p, std::move(inputs), "");
    const CompareResult r = checked_run(c);
    run.report += "\n  " + OpTraits<P>::spec(p) + ": " + (r.ok ? std::string("accepted") : r.message);
    run.passed += r.ok;
    ++run.tried;
  }
  return run;
}

// The shapes of P's f32 CPU test table on which the one-off variant `v` is
// rejected, as specs.
template <class P> std::vector<std::string> rejected_shapes(const Variant<P>& v) {
  const VariantInfo info{OpTraits<P>::name, v.name, v.device, 0, v.threads, "", false};
  std::vector<std::string> rejected;
  uint64_t n = 0;
  for (const P& p : OpTraits<P>::shapes(ShapeTable::test, Device::cpu)) {
    if (p.dtype != DType::f32) continue;
    Case<P> c(v, info, p, random_inputs(p, base_seed() + n++), "");
    if (!checked_run(c).ok) rejected.push_back(OpTraits<P>::spec(p));
  }
  return rejected;
}

// The index of `op`'s variant `name` on `device`; fails the test if none is registered.
std::size_t variant_index(const OpHandle& op, Device device, const std::string& name);
// The workspace the registered variant `op`/`device`/`name` asks for on `spec`.
std::size_t workspace_of(const std::string& op, Device device, const std::string& name, const std::string& spec);

// True when f() throws an Exception (the Catch macros the tests use are only
// TEST_CASE, SECTION, REQUIRE, CHECK and INFO, common to Catch2 v2 and v3).
template <class Exception, class F> bool throws(F&& f) {
  try {
    f();
  } catch (const Exception&) {
    return true;
  } catch (...) {
    return false;
  }
  return false;
}

// ---- the convlab program ----------------------------------------------------------------

// The convlab program built beside this test binary; "" when it is not there.
std::string convlab_program();
// True (and prints CONVLAB-SKIP, naming `what` was not run) when it is not there.
bool skip_without_program(const std::string& what);

struct ProgramResult {
  int status = -1;  // exit status; -1 if it did not exit normally
  std::string out, err;
};
// Runs `convlab ARGS` through the shell, its stdout and stderr captured; `env`
// ("NAME=value ...") is set for that run only.
ProgramResult run_convlab(const std::string& args, const std::string& env = "");
// Runs `convlab ARGS` and checks the refusal every bad input gets: exit status `status` and one
// line on stderr, starting "convlab: error: " and containing each of `says`.
void check_refused(const std::string& args, int status, const std::vector<std::string>& says = {});
// A program built beside this test binary (e.g. "convlab_duplicate_id"); "" when absent.
std::string sibling_program(const std::string& name);
// Runs `PROGRAM ARGS` through the shell, its stdout and stderr captured.
ProgramResult run_program(const std::string& program, const std::string& args, const std::string& env = "");

// The whole text of a file ("" when it cannot be read).
std::string read_text(const std::filesystem::path& path);

}  // namespace convlab::testing
