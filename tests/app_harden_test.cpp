// tests/app_harden_test.cpp — issue 16's hostile inputs, one regression test
// per case: each must end in one error line on stderr ("convlab: error: ..."),
// naming the input, what was wrong and what is accepted, with a non-zero exit
// status, quickly, and without allocating what the input asks for.
// (Case 3, a use-after-free in tests/analysis/test_networks.cpp, is covered by
// running that test under AddressSanitizer: `make test-sanitize`.)
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/npy.hpp"
#include "core/tensor.hpp"
#include "tests/catch_compat.hpp"
#include "tests/support.hpp"

namespace {

using convlab::testing::ProgramResult;
using convlab::testing::run_convlab;

std::filesystem::path scratch() {
  const auto dir = std::filesystem::temp_directory_path() / ("convlab_harden_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

struct ScratchCleanup {
  ~ScratchCleanup() {
    std::error_code ec;
    std::filesystem::remove_all(std::filesystem::temp_directory_path() /
                                    ("convlab_harden_test_" + std::to_string(::getpid())),
                                ec);
  }
} cleanup;

using convlab::testing::contains;

struct Expect {
  std::string args;
  int status;                      // the documented exit status
  std::vector<std::string> says;   // every one of these in the error line
  std::vector<std::string> not_says = {};
};

// One error line, the status, the words; every byte printable; a few seconds at most.
void check_refused(const Expect& e) {
  const auto start = std::chrono::steady_clock::now();
  const ProgramResult r = run_convlab(e.args);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO("convlab " << e.args << "\nstatus " << r.status << "\nstderr: " << r.err << "\nstdout: " << r.out.substr(0, 2000));
  CHECK(r.status == e.status);
  CHECK(r.err.rfind("convlab: error: ", 0) == 0);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.err.size() < 1000);
  for (unsigned char c : r.err) CHECK(((c >= 0x20 && c < 0x7F) || c == '\n'));
  for (const std::string& s : e.says) CHECK(contains(r.err, s));
  for (const std::string& s : e.not_says) CHECK(!contains(r.err, s));
  CHECK(seconds < 20);
}

void write_text(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
}

void write_matrix(const std::filesystem::path& p, const convlab::Shape& shape, double nan_at = -1) {
  convlab::Tensor t(shape, convlab::DType::f32);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, 0.5 - 0.125 * double(i % 9));
  if (nan_at >= 0) t.set(int64_t(nan_at), std::numeric_limits<double>::quiet_NaN());
  convlab::write_npy(p.string(), t);
}

}  // namespace

TEST_CASE("harden 1, 4, 5, 6: huge shapes are refused by the checked sizes before allocating", "[app][cpu]") {
  if (convlab::testing::skip_without_program("harden test")) return;
  const std::string big = "1073741824";
  for (const Expect& e : std::vector<Expect>{
           // 1: element counts that wrap 64 bits
           {"run conv2d/cpu/01a_seven_loop --shape N=" + big + ",H=" + big + ",W=4,C=1,K=1,R=1 --reps 0", 2,
            {"input 'x'", "1073741824x1073741824x4x1", "64 bits"}},
           {"run conv2d/cpu/01a_seven_loop --shape N=" + big + ",H=" + big + ",W=" + big + ",C=1,K=1,R=1 --reps 0", 2,
            {"input 'x'", "64 bits"}},
           {"run attention/cpu/09a_naive --shape B=" + big + ",H=" + big + ",Nq=4,Nk=4,d=1 --reps 0", 2,
            {"input 'q'", "64 bits"}},
           // 4: pad near the int range
           {"run conv2d/cpu/01a_seven_loop --shape pad=" + big + " --reps 0", 2, {"H + 2*pad", "2147483647"},
            {"filter is larger"}},
           // 5: ffn's default hidden = 4*C
           {"run ffn/cpu/08a_layer_by_layer --shape P=" + big + ",C=" + big + " --reps 0", 2, {"4*C", "hidden="},
            {"must be positive"}},
           // 6: sizes that fit 64 bits but not the limit: refused at once, naming tensor and size
           {"run attention/cpu/09b_fused_online --shape B=1,H=1,Nq=" + big + ",Nk=" + big + ",d=1 --reps 0", 2,
            {"attention on B=1", "GiB", "over the limit", "CONVLAB_MAX_BYTES"}, {"bad_alloc"}},
           {"run softmax/cpu --shape rows=" + big + ",cols=" + big + " --reps 0", 2, {"over the limit"}},
           {"run conv2d/cpu/01a_seven_loop --shape N=64,H=4096,W=4096,C=64,K=64,R=1 --reps 0", 2,
            {"input 'x'", "over the limit"}},
           {"--max-bytes 1K run conv2d/cpu/01a_seven_loop --shape N=2,H=9,W=9,C=4 --reps 0", 2,
            {"over the limit of 1.0 KiB"}},
           {"run gemm/cpu/03a_naive --max-bytes=abc --shape M=4", 2, {"--max-bytes", "'abc'", "16G"}},
       })
    check_refused(e);

  // The limit from the environment, and a malformed one named.
  ::setenv("CONVLAB_MAX_BYTES", "2K", 1);
  check_refused({"run gemm/cpu/03a_naive --shape M=64,N=64,K=64 --reps 0", 2, {"over the limit of 2.0 KiB"}});
  ::setenv("CONVLAB_MAX_BYTES", "lots", 1);
  check_refused({"run gemm/cpu/03a_naive --shape M=4,N=4,K=4 --reps 0", 2, {"CONVLAB_MAX_BYTES", "'lots'"}});
  ::unsetenv("CONVLAB_MAX_BYTES");
  const ProgramResult ok = run_convlab("run gemm/cpu/03a_naive --shape M=4,N=4,K=4 --reps 0 --max-bytes 1M");
  INFO(ok.err);
  CHECK(ok.status == 0);
}

TEST_CASE("harden 2, 9, 11, 12: JSON inputs of roofline and waterline", "[app][cpu]") {
  if (convlab::testing::skip_without_program("harden test")) return;
  const auto dir = scratch();
  write_text(dir / "deep.json", std::string(20000, '[') + std::string(20000, ']'));
  const std::string deep = (dir / "deep.json").string();
  auto bench = [&](const std::string& name, const std::string& fields) {
    write_text(dir / name, R"({"benchmarks": [{"name": "gemm/cpu/x/4x4x4_f32", "run_type": "iteration", )" + fields + "}]}");
    return (dir / name).string();
  };
  const std::string good_fields = R"("real_time": 2.0, "time_unit": "ms", "FLOP/s": 1e9, "intensity": 2, "peak_gflops": 100, "peak_gbs": 10)";
  write_matrix(dir / "x.npy", {2, 3});
  for (const Expect& e : std::vector<Expect>{
           // 2: nesting
           {"roofline " + deep, 1, {deep, "nesting deeper than"}},
           {"waterline efficientnet_b0 --machine measured --probe " + deep, 1, {"nesting deeper than"}},
           // 9: wrong schema
           {"roofline " + bench("fast.json", R"("real_time": "fast", "time_unit": "ms", "FLOP/s": 1e9)"), 1,
            {"fast.json", "real_time", "must be a number", "a string"}},
           {"roofline " + bench("nocounters.json", R"("real_time": 2.0, "time_unit": "ms")"), 1,
            {"no benchmark", "without a FLOP/s counter"}},
           {"roofline " + bench("negtime.json", R"("real_time": -2.0, "time_unit": "ms", "FLOP/s": 1e9)"), 1,
            {"negtime.json", "real_time", "positive"}},
           {"roofline " + bench("negrate.json", R"("real_time": 2.0, "time_unit": "ms", "FLOP/s": -1e9)"), 1,
            {"negrate.json", "FLOP/s", "non-negative"}},
           {"roofline " + bench("negpeak.json", R"("real_time": 2.0, "FLOP/s": 1e9, "peak_gbs": -5)"), 1,
            {"peak_gbs", "non-negative"}},
           // 12: time_unit names the file
           {"roofline " + bench("unit.json", R"("real_time": 2.0, "time_unit": "fortnights", "FLOP/s": 1e9)"), 1,
            {"unit.json", "time_unit", "fortnights", "ns, us, ms or s"}},
           // 11: a directory
           {"roofline " + dir.string(), 1, {"is a directory"}, {"unexpected end of input"}},
           // 12: a raw byte in a JSON error is printed as its value
           {"roofline " + (dir / "x.npy").string(), 1, {"byte 0x93"}},
           // 12: waterline --dtype: the help's names are accepted, the error lists them
           {"waterline efficientnet_b0 --dtype fp64", 2, {"fp64", "fp16", "fp32", "bf16"}},
       })
    check_refused(e);
  const ProgramResult good = run_convlab("roofline " + bench("good.json", good_fields));
  INFO(good.err);
  CHECK(good.status == 0);
  for (const char* dtype : {"fp16", "bf16", "fp32"}) {
    const ProgramResult w = run_convlab(std::string("waterline efficientnet_b0 --machine h200 --dtype ") + dtype);
    INFO(dtype << ": " << w.err);
    CHECK(w.status == 0);
  }
}

TEST_CASE("harden 7, 8, 10, 12: options, --shape keys and --out are checked before any work", "[app][cpu]") {
  if (convlab::testing::skip_without_program("harden test")) return;
  const auto dir = scratch();
  const std::string run = "run conv2d/cpu/01a_seven_loop --shape N=1,H=5,W=5,C=2,K=2 --reps 0";
  for (const Expect& e : std::vector<Expect>{
           // 7: an option's value may not be another option
           {"run conv2d/cpu/01a_seven_loop --reps 0 --out --shape", 2, {"--out", "got the option '--shape'", "--out=VALUE"}},
           {"run conv2d/cpu/01a_seven_loop --shape --reps 0", 2, {"--shape", "got the option '--reps'"}},
           // 8: repeated keys
           {"run conv2d/cpu/01a_seven_loop --shape N=1,N=2 --reps 0", 2, {"key 'N' given twice", "N=1,N=2"}},
           {"run gemm/cpu/03a_naive --shape M=4,M=5 --reps 0", 2, {"key 'M' given twice"}},
           {"run conv2d/cpu/01a_seven_loop --shape stride=2,stride=3 --reps 0", 2, {"key 'stride' given twice"}},
           // 10: --out before the work
           {run + " --out /nonexistent/dir/y.npy", 2, {"/nonexistent/dir", "does not exist"}},
           {run + " --out /dev/full", 2, {"/dev/full", "not a regular file"}},
           {run + " --out ''", 2, {"--out", "empty"}},
           {run + " --out " + dir.string(), 2, {"is a directory", "y.npy"}},
           // 12: an empty --shape
           {"run conv2d/cpu/01a_seven_loop --shape '' --reps 0", 2, {"--shape", "empty"}},
       }) {
    check_refused(e);
  }
  // Nothing ran: no table was printed before the refusal of --out.
  const ProgramResult r = run_convlab(run + " --out /nonexistent/dir/y.npy");
  CHECK(r.out.empty());
  // A value that starts with '-' is still possible, written with '='.
  const ProgramResult neg = run_convlab("run conv2d/cpu/01a_seven_loop --shape=N=1,H=5,W=5,C=2,K=2 --reps 0 --out=" +
                                        (dir / "-y.npy").string());
  INFO(neg.err);
  CHECK(neg.status == 0);
}

TEST_CASE("harden 11, 12: .npy inputs: directories, long headers, NaN, keys with --in", "[app][cpu]") {
  if (convlab::testing::skip_without_program("harden test")) return;
  const auto dir = scratch();
  write_matrix(dir / "s.npy", {3, 5});
  write_matrix(dir / "nan.npy", {3, 5}, 7);
  // A malformed header of 100 KB (version 2.0, so the length fits), with a raw byte in it.
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 5), 'junk': '" +
                       std::string(100000, 'z') + "\x93'}";
  header += '\n';
  std::string file = "\x93NUMPY";
  file += '\x02';
  file += '\x00';
  for (int i = 0; i < 4; ++i) file += char((header.size() >> (8 * i)) & 0xFF);
  write_text(dir / "long.npy", file + header + std::string(60, '\0'));
  const std::string s = (dir / "s.npy").string();
  for (const Expect& e : std::vector<Expect>{
           {"run softmax --in " + dir.string() + " --reps 0", 1, {"is a directory"}, {"it is empty"}},
           {"run softmax --in " + (dir / "long.npy").string() + " --reps 0", 1, {"malformed .npy header", "characters in all"}},
           {"run softmax --in " + s + " --shape rows=3 --reps 0", 2, {"unknown key 'rows'", "takes no keys"}, {"(valid: )"}},
           {"run softmax --in " + (dir / "nan.npy").string() + " --reps 0", 2, {"nan.npy", "NaN", "flat index 7", "finite"},
            {"FAIL", "unwritten"}},
       })
    check_refused(e);
  const ProgramResult ok = run_convlab("run softmax --in " + s + " --reps 0");
  INFO(ok.err);
  CHECK(ok.status == 0);
}
