#include "tests/support.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "tests/catch_compat.hpp"

namespace convlab::testing {

uint64_t base_seed() {
  static const uint64_t seed = [] {
    if (const char* env = std::getenv("CONVLAB_SEED")) return static_cast<uint64_t>(std::strtoull(env, nullptr, 10));
    return static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count() % 1000000007);
  }();
  return seed;
}

uint64_t seed_for(const std::string& spec) { return base_seed() ^ std::hash<std::string>{}(spec); }

bool skip_without_gpu() {
  if (cuda_device_count() > 0) return false;
  std::cout << "CONVLAB-SKIP: no CUDA device visible"
            << (cuda_compiled() ? "" : " (built without CUDA)") << "; GPU test not run\n";
  return true;
}

std::string describe_result(const CompareResult& r) {
  if (r.ok) return "ok (rel L2 " + std::to_string(r.rel_l2) + ")";
  // A NaN line has no meaningful L2 error: the message alone says what is wrong.
  return r.message;
}

namespace {
// The first failure of one case, or "" when both runs passed.
std::string first_failure_of_two_runs(ICase& c) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    const CompareResult r = checked_run(c);
    if (!r.ok) return "run " + std::to_string(attempt + 1) + ": " + describe_result(r);
  }
  return "";
}
}  // namespace

void check_twice(ICase& c, const std::string& what) {
  const std::string failure = first_failure_of_two_runs(c);
  INFO(what << ", " << failure << " (CONVLAB_SEED=" << base_seed() << ")");
  CHECK(failure.empty());
}

// CONVLAB_TEST_FLOP_LIMIT (set by bench/run_gpu.sh's sanitizer stage, where every
// kernel runs 10-1000x slower): cases above this many FLOPs are left out, except
// that a variant whose every supported case is above it still runs its smallest.
// Unset (the default, and in every ordinary test run): the whole table.
static double test_flop_limit() {
  const char* env = std::getenv("CONVLAB_TEST_FLOP_LIMIT");
  if (!env || !*env) return 0.0;
  char* end = nullptr;
  const double v = std::strtod(env, &end);
  if (end == env || *end != '\0' || !(v > 0.0)) {
    std::cerr << "convlab tests: CONVLAB_TEST_FLOP_LIMIT='" << env << "' is not a positive number; using the whole table\n";
    return 0.0;
  }
  return v;
}

TableFailures run_table(const std::vector<std::string>& specs,
                        const std::function<std::unique_ptr<ICase>(const std::string&)>& make) {
  TableFailures f;
  std::vector<std::string> run = specs;
  if (const double limit = test_flop_limit(); limit > 0.0) {
    // One pass to size the cases (each made and dropped: a table's cases never all live at once).
    std::vector<std::pair<std::string, double>> sized;
    for (const std::string& spec : specs)
      if (std::unique_ptr<ICase> c = make(spec)) sized.emplace_back(spec, c->flops());
    run.clear();
    std::size_t smallest = 0;
    for (std::size_t i = 1; i < sized.size(); ++i)
      if (sized[i].second < sized[smallest].second) smallest = i;
    for (std::size_t i = 0; i < sized.size(); ++i)
      if (i == smallest || sized[i].second <= limit) run.push_back(sized[i].first);
    f.left_out = int(sized.size() - run.size());
  }
  for (const std::string& spec : run) {
    std::unique_ptr<ICase> c = make(spec);
    if (!c) continue;  // not supported
    ++f.tested;
    const std::string failure = first_failure_of_two_runs(*c);
    if (failure.empty()) continue;
    if (++f.failed <= kMaxReportedFailures) f.shown.push_back(spec + ", " + failure);
    else f.unshown += (f.unshown.empty() ? "" : "; ") + spec;
  }
  return f;
}

void check_variant_on_table(const OpHandle& op, std::size_t index) {
  const VariantInfo v = op.variants().at(index);
  if (v.device == Device::gpu && skip_without_gpu()) return;
  const TableFailures f = run_table(op.shapes(ShapeTable::test, v.device), [&](const std::string& spec) {
    return op.unsupported_reason(index, spec).empty() ? op.make_case(index, spec, seed_for(spec))
                                                      : std::unique_ptr<ICase>();
  });
  for (const std::string& failure : f.shown) {
    INFO(v.id() << " on " << failure << " (replay: CONVLAB_SEED=" << base_seed() << ")");
    CHECK(failure.empty());
  }
  if (!f.unshown.empty()) {
    INFO(v.id() << " also fails on " << f.failed - kMaxReportedFailures << " more shape(s), not shown in full: "
                << f.unshown);
    CHECK(f.unshown.empty());
  }
  if (f.left_out > 0)
    std::cerr << v.id() << ": " << f.left_out << " of " << f.tested + f.left_out
              << " test shapes above CONVLAB_TEST_FLOP_LIMIT left out\n";
#ifdef CONVLAB_GPU_ONLY_BUILD
  // CONVLAB_GPU_ONLY left out GPU files: a rung built on other ops' rungs (lesson 11's 11a runs
  // lesson 06's and 03's) can find none of them. Skipped, with the first shape's reason, not failed.
  if (v.device == Device::gpu && f.tested == 0) {
    const std::vector<std::string> specs = op.shapes(ShapeTable::test, v.device);
    std::cout << "CONVLAB-SKIP: " << v.id() << " supports none of the " << op.name()
              << " test shapes in this partial GPU build (CONVLAB_GPU_ONLY='" << CONVLAB_GPU_ONLY_BUILD << "')"
              << (specs.empty() ? std::string() : "; the first says: " + op.unsupported_reason(index, specs.front())) << "\n";
    return;
  }
#endif
  INFO(v.id() << " supports none of the " << op.name() << " test shapes");
  CHECK(f.tested > 0);
}

std::size_t variant_index(const OpHandle& op, Device device, const std::string& name) {
  const std::vector<VariantInfo> variants = op.variants();
  for (std::size_t i = 0; i < variants.size(); ++i)
    if (variants[i].device == device && variants[i].name == name) return i;
  FAIL(op.name() << "/" << device_name(device) << "/" << name << " is not registered");
  return 0;
}

std::size_t workspace_of(const std::string& op, Device device, const std::string& name, const std::string& spec) {
  const OpHandle* handle = find_op(op);
  REQUIRE(handle != nullptr);
  return handle->make_case(variant_index(*handle, device, name), spec, 1)->workspace_bytes();
}

// ---- the convlab program ----------------------------------------------------------------

std::string sibling_program(const std::string& name) {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  const auto program = exe.parent_path() / name;
  return !ec && std::filesystem::exists(program) ? program.string() : "";
}

std::string convlab_program() { return sibling_program("convlab"); }

bool skip_without_program(const std::string& what) {
  if (!convlab_program().empty()) return false;
  std::cout << "CONVLAB-SKIP: the convlab program is not built beside the tests; " << what << " not run\n";
  return true;
}

ProgramResult run_convlab(const std::string& args, const std::string& env) {
  return run_program(convlab_program(), args, env);
}

void check_refused(const std::string& args, int status, const std::vector<std::string>& says) {
  const ProgramResult r = run_convlab(args);
  INFO("convlab " << args << "\nstatus " << r.status << "\nstderr: " << r.err);
  CHECK(r.status == status);
  CHECK(r.err.rfind("convlab: error: ", 0) == 0);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  for (const std::string& word : says) CHECK(r.err.find(word) != std::string::npos);
}

ProgramResult run_program(const std::string& program, const std::string& args, const std::string& env) {
  // The captured streams go to a folder of this process, removed again after the run.
  const auto dir = std::filesystem::temp_directory_path() / ("convlab_program_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string command = (env.empty() ? "" : env + " ") + program + " " + args + " >" + (dir / "stdout.txt").string() + " 2>" +
                              (dir / "stderr.txt").string();
  const int raw = std::system(command.c_str());
  ProgramResult r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.out = read_text(dir / "stdout.txt");
  r.err = read_text(dir / "stderr.txt");
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return r;
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}


bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

Tensor random_tensor(const Shape& shape, uint64_t seed, double scale) {
  Tensor t(shape, DType::f32);
  std::mt19937_64 rng(seed);
  t.fill_uniform(rng, -scale, scale);
  return t;
}

std::filesystem::path scratch_dir(const std::string& tag) {
  const auto dir = std::filesystem::temp_directory_path() / ("convlab_" + tag + "_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace convlab::testing
