// tests/grading/grade_class_test.cpp — `convlab grade` on a planted class
// (tests/grading/class/: one folder per student, each a known kind of
// submission) in one command, and the report checked: every row's verdict,
// flags, rank and first failure; the files a submission tried to write do not
// exist; a failing row's replay command reproduces its failure. Then the HTML
// page is rendered by a real headless browser and its screenshot inspected
// (skipped, visibly, when no Chromium is installed).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/json.hpp"
#include "tests/catch_compat.hpp"
#include "tests/support.hpp"

namespace {

namespace fs = std::filesystem;
namespace json = convlab::json;
using convlab::testing::read_text;
using convlab::testing::run_convlab;

const fs::path kHere = fs::path(CONVLAB_SOURCE_DIR) / "tests" / "grading";

fs::path scratch(const std::string& what) {
  const fs::path dir = fs::temp_directory_path() / ("convlab_grade_test_" + std::to_string(::getpid())) / what;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

struct Cleanup {
  ~Cleanup() {
    std::error_code ec;
    fs::remove_all(fs::temp_directory_path() / ("convlab_grade_test_" + std::to_string(::getpid())), ec);
  }
} cleanup;

std::string str(const json::Value& v, const char* key) {
  const json::Value* f = v.find(key);
  return f && f->is_string() ? f->text : "";
}
double num(const json::Value& v, const char* key) {
  const json::Value* f = v.find(key);
  return f && f->is_number() ? f->number : -1;
}
bool has_flag(const json::Value& s, const std::string& flag) {
  const json::Value* f = s.find("flags");
  if (!f) return false;
  return std::any_of(f->items.begin(), f->items.end(), [&](const json::Value& x) { return x.text == flag; });
}
using convlab::testing::contains;

// Output of a shell command (stdout and stderr).
std::string capture(const std::string& command) {
  std::string out;
  if (std::FILE* p = popen((command + " 2>&1").c_str(), "r")) {
    char buf[4096];
    for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    pclose(p);
  }
  return out;
}

std::string shq(const fs::path& p) { return "'" + p.string() + "'"; }

}  // namespace

TEST_CASE("grading/class: one command grades a planted class, ranks and flags every kind of submission",
          "[grading][app]") {
  if (convlab::testing::skip_without_program("grading test")) return;
  const fs::path out = scratch("class") / "report";
  const convlab::testing::ProgramResult r =
      run_convlab("grade " + shq(kHere / "class") + " --assignment " + shq(kHere / "assignment.txt") +
                  " --out " + shq(out) + " --jobs 2");
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  REQUIRE(r.status == 0);
  REQUIRE(fs::exists(out / "report.json"));
  const json::Value report = json::parse(read_text(out / "report.json"));
  std::map<std::string, const json::Value*> row;
  for (const json::Value& s : report.find("submissions")->items) row[str(s, "name")] = &s;
  REQUIRE(row.size() == 10);
  INFO(read_text(out / "report.json"));

  // The baselines, timed in the same run.
  const json::Value& baselines = *report.find("baselines");
  REQUIRE(baselines.items.size() == 2);
  CHECK(str(baselines.items[0], "id") == "gemm/cpu/03b_loop_reorder");
  CHECK(str(baselines.items[1], "id") == "gemm/cpu/03e_microkernel");
  for (const json::Value& b : baselines.items) CHECK(num(b, "median_ms") > 0);
  CHECK(num(report, "hidden_shapes") == 4);

  auto all_passed = [](const json::Value& s, const char* table) {
    const json::Value* t = s.find(table);
    return t && str(*t, "status") == "pass" && num(*t, "passed") == num(*t, "shapes") && num(*t, "shapes") > 0;
  };
  // Correct ones are ranked, the fast one first; bob's row shows his fast variant of two.
  const json::Value &alice = *row["alice"], &bob = *row["bob"], &gina = *row["gina"];
  for (const json::Value* s : {&alice, &bob, &gina}) {
    CHECK(str(*s, "verdict") == "ranked");
    CHECK(all_passed(*s, "public_tests"));
    CHECK(all_passed(*s, "hidden_tests"));
    CHECK(num(*s, "gflops") > 0);
    CHECK(num(*s, "speedup_over_start") > 0);
  }
  CHECK(num(bob, "rank") == 1);
  CHECK(str(bob, "variant") == "gemm/cpu/bob_fast");
  CHECK(bob.find("variants")->items.size() == 2);
  CHECK(num(alice, "rank") == 3);  // the (i, j, k) dot products: far slower than the two (i, k, j) ones
  CHECK(num(gina, "rank") == 2);

  // Wrong on a hidden shape only: the public table passes, the hidden one names a K > 560 shape.
  const json::Value& carol = *row["carol"];
  CHECK(str(carol, "verdict") == "wrong (hidden tests)");
  CHECK(has_flag(carol, "wrong_hidden"));
  CHECK_FALSE(has_flag(carol, "wrong_public"));
  CHECK(all_passed(carol, "public_tests"));
  CHECK(num(carol, "rank") == 0);
  const json::Value& carol_failure = *carol.find("hidden_tests")->find("first_failure");
  const std::string spec = str(carol_failure, "spec");
  CHECK(std::stoi(spec.substr(spec.find("K=") + 2)) > 560);
  CHECK(contains(str(carol_failure, "where"), "c["));
  CHECK(contains(str(carol_failure, "error"), "error too large"));
  // Its replay command reproduces exactly that failure.
  const std::string replay = str(carol, "replay");
  REQUIRE(contains(replay, " check gemm/cpu/carol_k_blocked --shape "));
  const std::string replayed = capture(replay);
  INFO("replay output: " << replayed);
  CHECK(contains(replayed, "\"status\": \"FAIL\""));
  CHECK(contains(replayed, spec));

  const json::Value& dave = *row["dave"];
  CHECK(str(dave, "verdict") == "build failed");
  CHECK(has_flag(dave, "build_failed"));
  CHECK(dave.find("builds")->boolean == false);
  CHECK(contains(str(dave, "build_log"), "accumulator"));
  CHECK(str(dave, "replay").rfind("sh ", 0) == 0);

  CHECK(has_flag(*row["erin"], "crashed"));
  CHECK(contains(str(*row["erin"], "summary"), "SIGSEGV"));
  CHECK(has_flag(*row["frank"], "timed_out"));
  CHECK(has_flag(*row["hank"], "out_of_memory"));
  CHECK(has_flag(*row["ivan"], "output_flood"));
  CHECK(has_flag(*row["judy"], "no_variant"));
  for (const char* name : {"erin", "frank", "hank", "ivan"}) {
    INFO(name);
    CHECK(num(*row[name], "rank") == 0);
    CHECK(contains(str(*row[name], "replay"), " check "));
  }

  // The writes were refused and reported, and nothing was written.
  CHECK(has_flag(gina, "blocked_write"));
  CHECK(contains(str(gina, "summary"), "gina-debug.txt"));
  CHECK_FALSE(fs::exists(out / "submissions" / "gina" / "scratch" / "gina-debug.txt"));
  CHECK_FALSE(fs::exists(out.parent_path() / "gina-escaped.txt"));

  // CSV: a header and one row per submission; HTML: a chart with a bar per ranked row and baseline.
  const std::string csv = read_text(out / "report.csv");
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 11);
  const std::string html = read_text(out / "report.html");
  CHECK(contains(html, "<svg"));
  std::size_t bars = 0;
  for (std::size_t at = 0; (at = html.find("<rect class=\"bar", at)) != std::string::npos; ++at) ++bars;
  CHECK(bars == 5);
  CHECK_FALSE(contains(html, "<script"));  // self-contained: nothing fetched, nothing run
  CHECK_FALSE(contains(html, "src="));
  CHECK_FALSE(contains(html, "href="));
}

TEST_CASE("grading/report_in_browser: the HTML report renders in headless Chromium", "[grading][app]") {
  if (convlab::testing::skip_without_program("browser test")) return;
  std::string browser;
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"})
    if (browser.empty() && std::system(("command -v " + std::string(name) + " >/dev/null 2>&1").c_str()) == 0)
      browser = name;
  if (browser.empty()) {
    std::cout << "CONVLAB-SKIP: no headless browser (Debian: apt-get install chromium); HTML report not rendered\n";
    return;
  }
  const fs::path dir = scratch("browser"), out = dir / "report";
  const convlab::testing::ProgramResult r =
      run_convlab("grade " + shq(kHere / "class") + " --assignment " + shq(kHere / "assignment.txt") +
                  " --only alice,bob,carol,dave --time-budget 150 --out " + shq(out) + " --jobs 2");
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  REQUIRE(r.status == 0);
  // Kept beside the programs, for a person to look at.
  const fs::path png = fs::path(convlab::testing::convlab_program()).parent_path() / "grading-report-screenshot.png";
  fs::remove(png);
  const std::string shot = capture(browser + " --headless --no-sandbox --disable-gpu --hide-scrollbars "
                                   "--user-data-dir=" + shq(dir / "profile") +
                                   " --window-size=1280,1100 --screenshot=" + shq(png) + " " +
                                   shq("file://" + (out / "report.html").string()));
  INFO("browser: " << shot);
  REQUIRE(fs::exists(png));
  // The student bars (#3867d6), the baseline bars (#9aa0a6) and the red failed verdicts (#b3261e) are on screen.
  const std::string pixels = capture("python3 " + shq(kHere / "png_pixels.py") + " " + shq(png) +
                                     " 3867d6 9aa0a6 b3261e");
  INFO("pixels: " << pixels);
  CHECK(contains(pixels, "size 1280 1100"));
  auto count = [&](const std::string& colour) {
    const std::size_t at = pixels.find("colour " + colour + " ");
    return at == std::string::npos ? -1L : std::stol(pixels.substr(at + 14));
  };
  CHECK(count("3867d6") > 2000);  // two student bars of at least a few hundred pixels each
  CHECK(count("9aa0a6") > 2000);  // two baseline bars
  CHECK(count("b3261e") > 50);    // "wrong (hidden tests)", "build failed" in red
}

TEST_CASE("grading/bad_input: a bad grading command line is one error line and exit status 2", "[grading][app]") {
  if (convlab::testing::skip_without_program("grading usage test")) return;
  const fs::path dir = scratch("usage");
  const std::string cls = shq(kHere / "class"), out = " --out " + shq(dir / "report");
  {
    std::ofstream bad(dir / "hidden.txt");
    bad << "# fine\nM=7,N=5,K=3\nM=seven\n";
  }
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"grade " + shq(dir / "no-such-class") + " --start gemm/cpu/03b_loop_reorder" + out, "is not a folder"},
      {"grade " + cls + out, "--start"},
      {"grade " + cls + " --start gemm/cpu/no_such_rung" + out, "no_such_rung"},
      {"grade " + cls + " --start gemm/cpu" + out, "one rung"},
      {"grade " + cls + " --start gemm/cpu/03b_loop_reorder --best conv2d/cpu/01a_seven_loop" + out, "--best"},
      {"grade " + cls + " --start gemm/cpu/03b_loop_reorder --shape M=0" + out, "M, N and K must be positive"},
      {"grade " + cls + " --start gemm/cpu/03b_loop_reorder --hidden " + shq(dir / "hidden.txt") + out, "hidden.txt:3:"},
      {"grade " + cls + " --start gemm/cpu/03b_loop_reorder --jobs 0" + out, "--jobs"},
      {"grade " + cls + " --assignment " + shq(dir / "hidden.txt") + out, "unknown key 'M'"},
  };
  for (const auto& [args, expected] : cases) {
    const convlab::testing::ProgramResult r = run_convlab(args);
    INFO(args << "\nstdout: " << r.out << "\nstderr: " << r.err);
    CHECK(r.status == 2);
    CHECK(contains(r.err, expected));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
}
