// tests/analysis/test_sweeps.cpp — the JSON that lesson 13's notebook reads:
// Figure 4's op:byte sweep, Figure 2(e)'s intensity-against-channels series and
// the efficiency-gap block of a measured latency, each read back and compared
// with the analysis function that computed it; then the same three through the
// `convlab waterline` program itself (run as a child process when it is built
// beside this test binary), with its usage errors.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "analysis/machine.hpp"
#include "analysis/models.hpp"
#include "analysis/report.hpp"
#include "analysis/waterline.hpp"
#include "core/json.hpp"
#include "tests/catch_compat.hpp"
#include "tests/support.hpp"

namespace an = convlab::analysis;
namespace json = convlab::json;
using convlab::DType;

namespace {

bool close(double a, double b, double rel = 1e-9) {
  return std::abs(a - b) <= rel * std::max(std::abs(a), std::abs(b));
}

double number_at(const json::Value& object, const char* key) {
  const json::Value* v = object.find(key);
  return v && v->is_number() ? v->number : std::nan("");
}

std::string text_at(const json::Value& object, const char* key) {
  const json::Value* v = object.find(key);
  return v && v->is_string() ? v->text : std::string();
}

}  // namespace

TEST_CASE("opbyte_sweep_json reads back to efficiency_vs_opbyte (Figure 4)", "[analysis][cpu]") {
  const an::Network net = an::efficientnet(0);
  const std::vector<double> ratios = an::log_spaced(10.0, 1e4, 13);
  const json::Value doc = json::parse(an::opbyte_sweep_json(net, ratios, an::h200(), 64, DType::f16));
  CHECK(text_at(doc, "kind") == "opbyte_sweep");
  CHECK(text_at(doc, "network") == "efficientnet_b0");
  CHECK(number_at(doc, "batch") == 64);
  CHECK(number_at(doc, "bytes_per_element") == 2);

  const std::vector<an::EfficiencyPoint> expected = an::efficiency_vs_opbyte(an::at_batch(net, 64, 2.0), ratios);
  const json::Value* points = doc.find("points");
  REQUIRE(points != nullptr);
  REQUIRE(points->items.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    INFO("point " << i);
    CHECK(close(number_at(points->items[i], "op_byte"), expected[i].op_byte));
    CHECK(close(number_at(points->items[i], "waterline_efficiency"), expected[i].waterline_efficiency));
    CHECK(close(number_at(points->items[i], "mediant_efficiency"), expected[i].mediant_efficiency));
  }

  // The marked machine is the waterline report of the same network on it.
  const an::WaterlineReport r = an::waterline(net, an::h200(), 64, DType::f16);
  const json::Value* mark = doc.find("at_machine");
  REQUIRE(mark != nullptr);
  CHECK(close(number_at(*mark, "op_byte"), an::h200().op_byte(DType::f16)));
  CHECK(close(number_at(*mark, "waterline_efficiency"), r.max_efficiency));
  CHECK(close(number_at(*mark, "mediant_efficiency"), r.mediant_efficiency));
  CHECK(close(number_at(doc, "mediant_intensity"), r.mediant_intensity));
  REQUIRE(doc.find("machine") != nullptr);
  CHECK(text_at(*doc.find("machine"), "name") == "h200");

  const std::string table = an::opbyte_sweep_table(net, ratios, an::h200(), 64, DType::f16);
  CHECK(table.find("C_max") != std::string::npos);
  CHECK(table.find("mediant") != std::string::npos);
}

TEST_CASE("intensity_vs_channels_json: one series per conv kind (Figure 2(e))", "[analysis][cpu]") {
  an::IntensitySweepSpec spec;
  spec.channels = {32, 64, 256};
  spec.group_widths = {8, 32};
  const json::Value doc = json::parse(an::intensity_vs_channels_json(spec, an::a5000()));
  CHECK(text_at(doc, "kind") == "intensity_vs_channels");
  CHECK(number_at(doc, "N") == 128);
  CHECK(number_at(doc, "H") == 56);
  REQUIRE(doc.find("machine") != nullptr);
  CHECK(close(number_at(*doc.find("machine"), "op_byte"), an::a5000().op_byte(DType::f16)));

  const json::Value* series = doc.find("series");
  REQUIRE(series != nullptr);
  REQUIRE(series->items.size() == 5);  // dense, grouped T = 8, grouped T = 32, depthwise, pointwise
  const std::vector<std::pair<an::ConvKind, int>> kinds{{an::ConvKind::dense3x3, 0},
                                                        {an::ConvKind::grouped3x3, 8},
                                                        {an::ConvKind::grouped3x3, 32},
                                                        {an::ConvKind::depthwise3x3, 1},
                                                        {an::ConvKind::pointwise, 0}};
  for (std::size_t s = 0; s < kinds.size(); ++s) {
    const json::Value& ser = series->items[s];
    INFO("series " << text_at(ser, "label"));
    CHECK(text_at(ser, "kind") == an::conv_kind_name(kinds[s].first));
    CHECK(number_at(ser, "group_width") == kinds[s].second);
    const int t = kinds[s].second > 0 ? kinds[s].second : 8;
    const auto expected = an::conv_intensity_vs_channels(kinds[s].first, spec.channels, 2.0, t, 4, 128, 56, 56);
    const json::Value* points = ser.find("points");
    REQUIRE(points != nullptr);
    REQUIRE(points->items.size() == expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
      CHECK(number_at(points->items[i], "channels") == expected[i].channels);
      CHECK(number_at(points->items[i], "out_channels") == expected[i].out_channels);
      CHECK(close(number_at(points->items[i], "exact"), expected[i].exact));
      CHECK(close(number_at(points->items[i], "approx"), expected[i].approx));
    }
  }
  // Grouped with T = 32 is flat at 9·32/2 = 144 OP/B (Eq. 24 with K = C), under the A5000's 160.
  CHECK(number_at(series->items[2].find("points")->items[2], "approx") == 144.0);

  spec.channels = {32, 36};  // 36 is not a multiple of 8 or 32
  bool threw = false;
  try {
    an::intensity_vs_channels_json(spec, an::a5000());
  } catch (const std::invalid_argument&) {
    threw = true;
  }
  CHECK(threw);
}

TEST_CASE("waterline_json with a measured latency adds the efficiency gap (Eq. 1, 3, 7-9)", "[analysis][cpu]") {
  const an::Machine m = an::h200();
  const an::WaterlineReport r = an::waterline(an::resnet(50), m, 128, DType::f16);
  const double measured_s = 0.025;
  const an::EfficiencyGap g = an::efficiency_gap(r.total_ops, measured_s, m, DType::f16);

  const json::Value plain = json::parse(an::waterline_json(r));
  CHECK(text_at(plain, "kind") == "waterline");
  CHECK(plain.find("measured") == nullptr);

  const json::Value doc = json::parse(an::waterline_json(r, &g));
  const json::Value* block = doc.find("measured");
  REQUIRE(block != nullptr);
  CHECK(number_at(*block, "latency_s") == measured_s);
  CHECK(close(number_at(*block, "ideal_s"), r.ideal_time_s));
  CHECK(close(number_at(*block, "efficiency"), r.ideal_time_s / measured_s));  // Eq. 8: C = t_i / t_a
  CHECK(close(number_at(*block, "actual_ops_per_s"), r.total_ops / measured_s));
  CHECK(close(number_at(*block, "log10_gap"), std::log10(measured_s / r.ideal_time_s)));
  CHECK(close(number_at(*block, "share_of_attainable"), r.min_time_s / measured_s));
  // C = C_max · T_min / t_a: the efficiency splits into what the waterline allows and how much of it was reached.
  CHECK(close(number_at(*block, "efficiency"), r.max_efficiency * number_at(*block, "share_of_attainable")));

  const std::string table = an::waterline_table(r, &g);
  CHECK(table.find("measured") != std::string::npos);
  CHECK(table.find("efficiency C (Eq. 7)") != std::string::npos);
  CHECK(an::waterline_table(r).find("efficiency C (Eq. 7)") == std::string::npos);
}

// ---- the program ------------------------------------------------------------------------------

namespace {

using Run = convlab::testing::ProgramResult;

Run run_waterline(const std::string& args) { return convlab::testing::run_convlab("waterline " + args); }

}  // namespace

TEST_CASE("convlab waterline: the notebook's three JSON reports and the usage errors", "[analysis][app][cpu]") {
  if (convlab::testing::skip_without_program("waterline CLI test")) return;
  SECTION("--sweep-opbyte --json") {
    const Run r = run_waterline("convnext_t --sweep-opbyte --opbyte-range 10:1000:5 --machine h200 --json");
    INFO(r.err);
    REQUIRE(r.status == 0);
    const json::Value doc = json::parse(r.out);
    CHECK(text_at(doc, "kind") == "opbyte_sweep");
    REQUIRE(doc.find("points") != nullptr);
    CHECK(doc.find("points")->items.size() == 5);
    CHECK(close(number_at(doc.find("points")->items[4], "op_byte"), 1000.0));
  }
  SECTION("--intensity-vs-channels --json") {
    const Run r = run_waterline("--intensity-vs-channels --channels 32:128:32 --group-width 8,32 --json");
    INFO(r.err);
    REQUIRE(r.status == 0);
    const json::Value doc = json::parse(r.out);
    REQUIRE(doc.find("series") != nullptr);
    CHECK(doc.find("series")->items.size() == 5);
    CHECK(doc.find("series")->items[0].find("points")->items.size() == 4);  // 32, 64, 96, 128
    CHECK(text_at(*doc.find("machine"), "name") == "a5000");                // the paper's GPU by default
  }
  SECTION("--latency-ms --json") {
    const Run r = run_waterline("resnet50 --machine h200 --latency-ms 25 --json");
    INFO(r.err);
    REQUIRE(r.status == 0);
    const json::Value doc = json::parse(r.out);
    REQUIRE(doc.find("measured") != nullptr);
    const double ideal = number_at(*doc.find("totals"), "ideal_time_s");
    CHECK(close(number_at(*doc.find("measured"), "efficiency"), ideal / 0.025));
  }
  SECTION("options of another report, bad lists and values: one error line, status 2") {
    for (const char* args : {"resnet50 --channels 32", "resnet50 --opbyte-range 1:10:3",
                             "--intensity-vs-channels resnet50", "resnet50 --sweep-opbyte --latency-ms 3",
                             "--intensity-vs-channels --sweep-opbyte", "--intensity-vs-channels --channels 12",
                             "--intensity-vs-channels --channels 32:x:32", "resnet50 --latency-ms 0",
                             "resnet50 --sweep-opbyte --opbyte-range 100:10:3"}) {
      const Run r = run_waterline(args);
      INFO(args << " -> " << r.err);
      CHECK(r.status == 2);
      CHECK(r.err.rfind("convlab: error: ", 0) == 0);
      CHECK(r.err.find('\n') == r.err.size() - 1);
      CHECK(r.out.empty());
    }
  }
}
