// tests/app_test.cpp — the `convlab` program end to end: it is run as a child
// process (it sits beside this test binary), on small shapes with --reps 0 so
// no timing or machine probe is involved. Checked: `list` names every
// registered variant; `run --in/--out` computes the same convolution as the
// reference on the user's own tensors; every bad input ends in one line on
// stderr and the documented exit status.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "core/harness.hpp"
#include "core/json.hpp"
#include "core/npy.hpp"
#include "ops/conv2d.hpp"
#include "reference/conv2d.hpp"
#include "tests/catch_compat.hpp"
#include "tests/support.hpp"

namespace {

using namespace convlab;

using testing::ProgramResult;
using testing::run_convlab;

// The app test's own files (inputs it writes for the program, outputs it reads back).
std::filesystem::path work_dir() {
  const auto dir = std::filesystem::temp_directory_path() / ("convlab_app_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

// Removes this process's scratch folder when the test program ends.
struct ScratchCleanup {
  ~ScratchCleanup() {
    std::error_code ec;
    std::filesystem::remove_all(std::filesystem::temp_directory_path() /
                                    ("convlab_app_test_" + std::to_string(::getpid())),
                                ec);
  }
} scratch_cleanup;

bool skip_without_program() { return testing::skip_without_program("app test"); }

using convlab::testing::contains;

bool near(double value, double expected) { return std::abs(value - expected) <= 1e-9 * std::abs(expected); }

Tensor random_tensor(const Shape& shape, uint64_t seed) {
  Tensor t(shape, DType::f32);
  std::mt19937_64 rng(seed);
  t.fill_uniform(rng);
  return t;
}

}  // namespace

TEST_CASE("app: list names every registered variant", "[app][cpu]") {
  if (skip_without_program()) return;
  const ProgramResult r = run_convlab("list");
  INFO(r.err);
  CHECK(r.status == 0);
  CHECK(contains(r.out, "lesson"));
  for (const OpHandle* op : all_ops())
    for (const VariantInfo& v : op->variants()) {
      INFO(v.id());
      CHECK(contains(r.out, v.name));
    }
}

TEST_CASE("app: run --in/--out computes the reference convolution on the user's tensors", "[app][cpu]") {
  if (skip_without_program()) return;
  const auto dir = work_dir();
  // Grouped (2 groups of 4 channels), stride 2, pad 1, odd sizes.
  const ConvProblem p{2, 9, 7, 8, 6, 3, 3, 2, 1, 2, DType::f32};
  const Tensor x = random_tensor({p.N, p.H, p.W, p.C}, 11);  // NHWC
  const Tensor w = random_tensor({p.K, p.R, p.S, p.T()}, 12);  // KRSC, C/groups channels
  write_npy((dir / "x.npy").string(), x);
  write_npy((dir / "w.npy").string(), w);

  const ProgramResult r = run_convlab("run conv2d --in " + (dir / "x.npy").string() + "," + (dir / "w.npy").string() +
                                      " --shape stride=2,pad=1 --out " + (dir / "y.npy").string() + " --reps 0");
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK(contains(r.out, " ok "));
  const Tensor y = read_npy((dir / "y.npy").string());
  REQUIRE(y.shape() == Shape{p.N, p.P(), p.Q(), p.K});

  std::vector<double> expected(y.numel());
  const std::vector<double> xd = x.to_double(), wd = w.to_double();
  ref::conv2d(p, xd.data(), wd.data(), expected.data());
  double max_err = 0, max_ref = 0;
  for (int64_t i = 0; i < y.numel(); ++i) {
    max_err = std::max(max_err, std::abs(y.get(i) - expected[i]));
    max_ref = std::max(max_ref, std::abs(expected[i]));
  }
  INFO("max abs error " << max_err << ", max |ref| " << max_ref);
  CHECK(max_err <= 1e-5 * max_ref);
}

TEST_CASE("app: a shape run writes its output and reports ok", "[app][cpu]") {
  if (skip_without_program()) return;
  const auto dir = work_dir();
  const ProgramResult r = run_convlab("run conv2d/cpu/01a_seven_loop --shape N=2,H=7,W=5,C=3,K=4,pad=1 --reps 0 --out " +
                                      (dir / "y.npy").string());
  INFO(r.out << r.err);
  CHECK(r.status == 0);
  CHECK(contains(r.out, "conv2d/cpu/01a_seven_loop"));
  CHECK(contains(r.out, "N=2,H=7,W=5,C=3,K=4"));
  CHECK(read_npy((dir / "y.npy").string()).shape() == Shape{2, 7, 5, 4});
}

TEST_CASE("app: bad input gives one error line and the documented exit status", "[app][cpu]") {
  if (skip_without_program()) return;
  const auto dir = work_dir();
  write_npy((dir / "x.npy").string(), random_tensor({1, 6, 6, 4}, 1));
  write_npy((dir / "w.npy").string(), random_tensor({3, 3, 3, 4}, 2));
  write_npy((dir / "x3.npy").string(), random_tensor({6, 6, 4}, 3));
  std::ofstream(dir / "junk.npy") << "not an array";
  const std::string x = (dir / "x.npy").string(), w = (dir / "w.npy").string();

  struct Case {
    std::string args;
    int status;
    std::string says;
  };
  std::vector<Case> cases = {
      {"", 2, "no command"},
      {"frobnicate", 2, "unknown command 'frobnicate'"},
      {"run", 2, "convlab list"},
      {"run conv9d", 2, "unknown operation 'conv9d'"},
      {"run conv2d/cpu/99_nothing", 2, "convlab list"},
      {"run conv2d/tpu", 2, "unknown device"},
      {"run conv2d/cpu/01a_seven_loop --shape H=abc", 2, "not an integer"},
      {"run conv2d/cpu/01a_seven_loop --shape bogus=1", 2, "unknown key 'bogus'"},
      {"run conv2d/cpu/01a_seven_loop --shape H", 2, "malformed"},
      {"run conv2d/cpu/01a_seven_loop --shape dtype=f16 --reps 0", 1, "does not support"},
      {"run conv2d/cpu/01a_seven_loop --frob", 2, "unknown option '--frob'"},
      {"run conv2d --in " + x, 2, "takes 2 input files"},
      {"run conv2d --in " + x + "," + w + "," + w, 2, "takes 2 input files"},
      {"run conv2d --in " + (dir / "missing.npy").string() + "," + w, 1, "cannot open"},
      {"run conv2d --in " + (dir / "junk.npy").string() + "," + w, 1, "bad magic"},
      {"run conv2d --in " + (dir / "x3.npy").string() + "," + w, 2, "4-d"},
      {"tour --device tpu", 2, "--device"},
      {"help frobnicate", 2, "unknown command"},
  };
  if (cuda_device_count() == 0)
    for (const OpHandle* op : all_ops())
      for (const VariantInfo& v : op->variants())
        if (v.device == Device::gpu) {
          cases.push_back({"run " + v.id() + " --reps 0", 1, "CUDA"});
          break;
        }

  for (const Case& c : cases) testing::check_refused(c.args, c.status, {c.says});
}

TEST_CASE("app: roofline reads benchmark JSON and puts each row under its roof", "[app][cpu]") {
  if (skip_without_program()) return;
  const auto dir = work_dir();
  // Peaks of the run: R = 10 000 GFLOP/s, B = 1 000 GB/s, ridge 10 FLOP/B.
  //   mem: I = 2, 1 000 GFLOP/s achieved → roof 2 000 (memory), 50%
  //   cmp: I = 100, repeated: iterations at 4 and 6 TFLOP/s, median 5 → roof 10 000 (compute), 50%
  //   bad: an error row, counted and left out
  std::ofstream(dir / "bench.json") << R"({"context": {}, "benchmarks": [
    {"name": "conv2d/gpu/mem/n1_f16/manual_time", "run_type": "iteration", "real_time": 2.0, "time_unit": "ms",
     "FLOP/s": 1e12, "intensity": 2, "peak_gflops": 10000, "peak_gbs": 1000},
    {"name": "gemm/gpu/cmp/64x64x64_f32/manual_time", "run_name": "gemm/gpu/cmp/64x64x64_f32/manual_time",
     "run_type": "iteration", "real_time": 1.0, "time_unit": "ms", "FLOP/s": 4e12, "intensity": 100,
     "peak_gflops": 10000, "peak_gbs": 1000},
    {"name": "gemm/gpu/cmp/64x64x64_f32/manual_time", "run_name": "gemm/gpu/cmp/64x64x64_f32/manual_time",
     "run_type": "iteration", "real_time": 1.0, "time_unit": "ms", "FLOP/s": 6e12, "intensity": 100,
     "peak_gflops": 10000, "peak_gbs": 1000},
    {"name": "gemm/gpu/cmp/64x64x64_f32/manual_time_median", "run_name": "gemm/gpu/cmp/64x64x64_f32/manual_time",
     "run_type": "aggregate", "aggregate_name": "median", "real_time": 1.0, "time_unit": "ms", "FLOP/s": 5e12,
     "intensity": 100, "peak_gflops": 10000, "peak_gbs": 1000},
    {"name": "gemm/gpu/bad/64x64x64_f32/manual_time", "run_type": "iteration", "error_occurred": true,
     "error_message": "boom"}]})";
  const std::string file = (dir / "bench.json").string();

  const ProgramResult r = run_convlab("roofline " + file + " --json");
  INFO(r.err);
  REQUIRE(r.status == 0);
  const json::Value doc = json::parse(r.out);
  const json::Value* rows = doc.find("rows");
  REQUIRE(rows != nullptr);
  REQUIRE(rows->items.size() == 2);
  const json::Value& mem = rows->items[0];
  const json::Value& cmp = rows->items[1];
  CHECK(mem.find("name")->text == "conv2d/gpu/mem/n1_f16");
  CHECK(mem.find("dtype")->text == "f16");
  CHECK(mem.find("bound")->text == "memory");
  CHECK(near(mem.find("ridge")->number, 10.0));
  CHECK(near(mem.find("attainable_gflops")->number, 2000.0));
  CHECK(near(mem.find("pct_of_attainable")->number, 50.0));
  CHECK(cmp.find("bound")->text == "compute");
  CHECK(near(cmp.find("gflops")->number, 5000.0));  // the median, not the first repetition
  CHECK(near(cmp.find("attainable_gflops")->number, 10000.0));
  CHECK(doc.find("failed")->number == 1);

  // A preset replaces the run's peaks: the H200 datasheet's 4.8 TB/s.
  const ProgramResult h = run_convlab("roofline " + file + " --machine h200 --filter mem --json");
  INFO(h.err);
  REQUIRE(h.status == 0);
  const json::Value hdoc = json::parse(h.out);
  REQUIRE(hdoc.find("rows")->items.size() == 1);
  CHECK(near(hdoc.find("rows")->items[0].find("peak_gbs")->number, 4800.0));

  for (const auto& [args, status] : std::vector<std::pair<std::string, int>>{
           {"roofline", 2},
           {"roofline " + file + " --machine nosuch", 2},
           {"roofline " + file + " --filter '('", 2},  // quoted: the program, not the shell, must reject it
           {"roofline " + file + " --filter nothing_matches", 1},
           {"roofline " + (dir / "missing.json").string(), 1}})
    testing::check_refused(args, status);
}

TEST_CASE("app: help for the program and for each command", "[app][cpu]") {
  if (skip_without_program()) return;
  for (const std::string args :
       {"help", "--help", "run --help", "help tour", "list -h", "probe --help", "roofline --help"}) {
    const ProgramResult r = run_convlab(args);
    INFO("convlab " << args << ": " << r.err);
    CHECK(r.status == 0);
    CHECK(contains(r.out, "usage"));
    CHECK(r.err.empty());
  }
}

namespace {

// With CUDA compiled the GPU rungs are registered and skipped, each row with the
// snapshot's figure; without CUDA the tour lists the snapshot's GPU ladder.
TEST_CASE("app: without a GPU the tour shows the committed H200 figure beside a skipped GPU row, marked", "[app][cpu]") {
  if (skip_without_program()) return;
  if (cuda_device_count() > 0) {
    std::cout << "CONVLAB-SKIP: a GPU is present, the tour measures the GPU rows instead\n";
    return;
  }
  // A snapshot of one row, for the tour shape of gemm/gpu/03a_naive.
  OpHandle* gemm = find_op("gemm");
  REQUIRE(gemm);
  const std::vector<std::string> tour = gemm->shapes(ShapeTable::tour, Device::gpu);
  REQUIRE(!tour.empty());
  const std::string name = "gemm/gpu/03a_naive/" + gemm->label(tour[0]);
  const auto dir = work_dir();
  std::ofstream(dir / "bench-gpu.json")
      << R"({"context": {"date": "2031-02-03T04:05:06+00:00", "git_rev": "feedbeef1234"}, "benchmarks": [)"
      << R"({"name": ")" << name << R"(/manual_time", "run_name": ")" << name
      << R"(/manual_time", "run_type": "iteration", "real_time": 12.5, "time_unit": "ms", "FLOP/s": 4.0e12}]})";
  const ProgramResult r = run_convlab("tour --device gpu --reps 0", "CONVLAB_GPU_RESULTS=" + dir.string());
  INFO(r.out << r.err);
  CHECK(r.status == 0);
  CHECK(contains(r.out, "[H200 rev feedbee 2031-02-03]"));
  CHECK(contains(r.out, "12.50"));
  CHECK(contains(r.out, "GPU rows show the last committed H200 figure"));
}

}  // namespace
