// tests/analysis/test_waterline.cpp — roofline, waterline and mediant on
// hand-computed kernel sequences; the Eq. 24 approximation on a large conv;
// Figure 4's curve; the efficiency-gap measures; the machine presets and the
// probe reader; and the report's JSON read back.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "analysis/json_lite.hpp"
#include "analysis/machine.hpp"
#include "analysis/models.hpp"
#include "analysis/report.hpp"
#include "analysis/waterline.hpp"
#include "tests/catch_compat.hpp"
#include "tests/support.hpp"

namespace an = convlab::analysis;
using convlab::DType;

namespace {

using convlab::testing::throws;

bool close(double a, double b, double rel = 1e-12) { return std::abs(a - b) <= rel * std::max(std::abs(a), std::abs(b)); }
}  // namespace

TEST_CASE("roofline of one kernel (Eq. 10-11), by hand", "[analysis][cpu]") {
  const an::Roof roof{100.0, 10.0};  // R = 100 OP/s, B = 10 B/s: op:byte 10
  CHECK(roof.op_byte() == 10.0);
  // Memory-bound: intensity 1 < 10. Attains B·n/b = 10 OP/s, takes 100/10 = 10 s.
  CHECK(an::attainable_ops_per_s(100, 100, roof) == 10.0);
  CHECK(an::roofline_time(100, 100, roof) == 10.0);
  CHECK(!(an::above_waterline(100, 100, roof)));
  // Compute-bound: intensity 100 > 10. Attains R, takes 1000/100 = 10 s.
  CHECK(an::attainable_ops_per_s(1000, 10, roof) == 100.0);
  CHECK(an::roofline_time(1000, 10, roof) == 10.0);
  CHECK(an::above_waterline(1000, 10, roof));
  // Exactly at the waterline both limits agree.
  CHECK(an::roofline_time(100, 10, roof) == 1.0);
  // No counted OPs (pooling): time of the traffic alone.
  CHECK(an::roofline_time(0, 50, roof) == 5.0);
}

TEST_CASE("one measured kernel: its rates and roofline point as the programs print them", "[analysis][cpu]") {
  // R = 100, B = 10 (any agreeing units): intensity 1, so attainable B·1 = 10; achieved 5 is half of it.
  const an::RooflinePoint p = an::roofline_point(5.0, 100, 100, an::Roof{100.0, 10.0});
  CHECK(p.ridge == 10.0);
  CHECK(p.attainable == 10.0);
  CHECK(p.pct_of_attainable == 50.0);
  CHECK(p.memory_bound);
  CHECK(!an::roofline_point(5.0, 1000, 10, an::Roof{100.0, 10.0}).memory_bound);

  // 2e9 OPs on 1e9 bytes in 0.1 s against 100 GFLOP/s and 10 GB/s: 20 GFLOP/s, 10 GB/s,
  // intensity 2, attainable min(100, 2·10) = 20 GFLOP/s, all of it reached.
  const an::KernelRates r = an::kernel_rates(2e9, 1e9, 0.1, 100, 10);
  CHECK(close(r.gflops, 20.0));
  CHECK(close(r.gbs, 10.0));
  CHECK(r.intensity == 2.0);
  CHECK(close(r.pct_peak, 20.0));
  CHECK(close(r.pct_bandwidth, 100.0));
  CHECK(close(r.attainable_gflops, 20.0));
  CHECK(close(r.pct_roofline, 100.0));

  // Not timed, no peaks: only the intensity; no bytes: no intensity, the roof is R.
  const an::KernelRates untimed = an::kernel_rates(2e9, 1e9, 0, 0, 0);
  CHECK(untimed.intensity == 2.0);
  CHECK(std::isnan(untimed.gflops));
  CHECK(std::isnan(untimed.pct_peak));
  CHECK(std::isnan(untimed.attainable_gflops));
  CHECK(std::isnan(untimed.pct_roofline));
  const an::KernelRates no_bytes = an::kernel_rates(2e9, 0, 0, 100, 10);
  CHECK(std::isnan(no_bytes.intensity));
  CHECK(no_bytes.attainable_gflops == 100.0);
  CHECK(std::isnan(no_bytes.pct_roofline));
}

TEST_CASE("waterline of a sequence (Eq. 12-13) and the mediant (Eq. 29), by hand", "[analysis][cpu]") {
  const an::Roof roof{100.0, 10.0};
  SECTION("one memory-bound and one compute-bound kernel") {
    const std::vector<an::KernelWork> seq{{100, 100}, {1000, 10}};
    // T_min = 10 + 10 = 20 s. N = 1100, N/R = 11 s, C_max = 11/20 = 0.55.
    CHECK(an::waterline_time(seq, roof) == 20.0);
    CHECK(close(an::waterline_efficiency(seq, roof), 0.55));
    // Mediant: 1100 / 110 = 10 OP/B, exactly the op:byte ratio, so roofline
    // on the mediant claims 100%: the compute-bound kernel's excess OPs hide
    // the memory-bound kernel's traffic, which sequential kernels cannot do.
    CHECK(close(an::mediant_intensity(seq), 10.0));
    CHECK(close(an::mediant_roofline_efficiency(seq, roof), 1.0));
    CHECK(an::mediant_roofline_efficiency(seq, roof) > an::waterline_efficiency(seq, roof));
  }
  SECTION("all compute-bound: mediant and waterline agree") {
    const std::vector<an::KernelWork> seq{{1000, 10}, {500, 20}, {3000, 1}};
    CHECK(close(an::waterline_efficiency(seq, roof), 1.0));
    CHECK(close(an::mediant_roofline_efficiency(seq, roof), an::waterline_efficiency(seq, roof)));
  }
  SECTION("all memory-bound: mediant and waterline agree") {
    const std::vector<an::KernelWork> seq{{100, 100}, {50, 20}, {30, 10}};
    // T_min = (100 + 20 + 10)/10 = 13 s; N/R = 1.8 s; C_max = 1.8/13.
    CHECK(close(an::waterline_time(seq, roof), 13.0));
    CHECK(close(an::waterline_efficiency(seq, roof), 1.8 / 13.0));
    CHECK(close(an::mediant_roofline_efficiency(seq, roof), 1.8 / 13.0));
  }
  SECTION("random mixed sequences: the mediant never underestimates") {
    std::mt19937 rng(20240521);
    std::lognormal_distribution<double> size(10.0, 2.0);
    for (int trial = 0; trial < 200; ++trial) {
      std::vector<an::KernelWork> seq;
      for (int i = 0; i < 1 + trial % 12; ++i) seq.push_back({size(rng), size(rng)});
      INFO("trial " << trial);
      CHECK(an::mediant_roofline_efficiency(seq, roof) >= an::waterline_efficiency(seq, roof) * (1 - 1e-12));
    }
  }
}

TEST_CASE("waterline report of real networks: consistent totals", "[analysis][cpu]") {
  const an::Machine a5000 = an::a5000();
  for (const char* name : {"resnet101", "efficientnet_b5", "convnext_s", "convfirstnet"}) {
    const an::WaterlineReport r = an::waterline(an::network_by_name(name), a5000, 128, DType::f16);
    INFO(name << ": C_max " << r.max_efficiency << ", mediant " << r.mediant_efficiency);
    double sum = 0;
    for (const an::KernelTime& k : r.kernels) sum += k.time_s;
    CHECK(close(sum, r.min_time_s, 1e-12));
    CHECK(r.min_time_s >= r.ideal_time_s);
    CHECK(r.max_efficiency > 0.0);
    CHECK(r.max_efficiency <= 1.0);
    CHECK(r.mediant_efficiency >= r.max_efficiency);  // Eq. 29 overestimates (Figure 4)
    CHECK(r.efficiency_gap() >= 0.0);
    CHECK(r.network.batch == 128);
  }
  // The paper's qualitative finding (Figure 3): the wide networks sit far
  // above the narrow one on the A5000.
  const double resnet = an::waterline(an::resnet(101), a5000).max_efficiency;
  const double effnet = an::waterline(an::efficientnet(5), a5000).max_efficiency;
  CHECK(resnet > 2 * effnet);
}

TEST_CASE("Figure 4: attainable efficiency against op:byte", "[analysis][cpu]") {
  const an::Network net = an::at_batch(an::convnext("S"), 128, 2.0);
  const std::vector<double> ratios = an::log_spaced(1.0, 1e6, 25);
  CHECK(ratios.front() == 1.0);
  CHECK(close(ratios.back(), 1e6, 1e-9));
  const auto curve = an::efficiency_vs_opbyte(net, ratios);
  REQUIRE(curve.size() == ratios.size());
  for (std::size_t i = 0; i < curve.size(); ++i) {
    INFO("op:byte " << curve[i].op_byte);
    CHECK(curve[i].mediant_efficiency >= curve[i].waterline_efficiency * (1 - 1e-12));
    if (i > 0) CHECK(curve[i].waterline_efficiency <= curve[i - 1].waterline_efficiency * (1 + 1e-12));
  }
  // Far above every kernel's intensity all kernels are memory-bound and the two models agree.
  CHECK(close(curve.back().mediant_efficiency, curve.back().waterline_efficiency, 1e-9));
}

TEST_CASE("Figure 2(e) and Eq. 24: conv intensity against channels", "[analysis][cpu]") {
  SECTION("a big dense conv: the approximation T·R·S/(1 + C/K) holds within 1%") {
    const auto pts = an::conv_intensity_vs_channels(an::ConvKind::dense3x3, {256});
    REQUIRE(pts.size() == 1);
    CHECK(pts[0].approx == 2304.0 / 2.0);
    CHECK(std::abs(pts[0].exact - pts[0].approx) / pts[0].approx < 0.01);
  }
  SECTION("each kind's approximate intensity") {
    const std::vector<int> channels{64, 128, 256, 512};
    const auto dense = an::conv_intensity_vs_channels(an::ConvKind::dense3x3, channels);
    const auto grouped = an::conv_intensity_vs_channels(an::ConvKind::grouped3x3, channels);
    const auto depthwise = an::conv_intensity_vs_channels(an::ConvKind::depthwise3x3, channels);
    const auto pointwise = an::conv_intensity_vs_channels(an::ConvKind::pointwise, channels);
    for (std::size_t i = 0; i < channels.size(); ++i) {
      const double C = channels[i];
      CHECK(dense[i].approx == 9 * C / 2);     // Eq. 25 with K = C
      CHECK(grouped[i].approx == 72.0 / 2);    // T = 8: flat in C
      CHECK(depthwise[i].approx == 9.0 / 2);   // Eq. 27: flat and tiny
      CHECK(pointwise[i].out_channels == 4 * channels[i]);
      CHECK(pointwise[i].approx == C / 1.25);  // Eq. 26 with K = 4C
      CHECK(depthwise[i].exact < grouped[i].exact);
      CHECK(grouped[i].exact < dense[i].exact);
      CHECK(std::abs(grouped[i].exact - grouped[i].approx) / grouped[i].approx < 0.01);
    }
  }
  CHECK(throws<std::invalid_argument>([&] { an::conv_intensity_vs_channels(an::ConvKind::grouped3x3, {12}); }));
}

TEST_CASE("efficiency gap (Eq. 1, 3, 7, 8)", "[analysis][cpu]") {
  const an::Machine m = an::a5000();
  CHECK(close(an::ideal_latency(76.7e12, m), 1.0));
  CHECK(close(an::actual_throughput(1e12, 0.5), 2e12));
  const an::EfficiencyGap g = an::efficiency_gap(76.7e12, 4.0, m, DType::f16, 80.0);
  CHECK(close(g.ideal_s, 1.0));
  CHECK(close(g.efficiency, 0.25));                 // t_i / t_a
  CHECK(close(g.actual_s, g.ideal_s / g.efficiency));  // Eq. 8
  CHECK(close(g.log10_gap, std::log10(4.0)));
  CHECK(g.accuracy == 80.0);
  // A whole network: N counted at the measured batch.
  const an::EfficiencyGap r = an::efficiency_gap(an::resnet(50), 128, 0.1, m);
  CHECK(close(r.ops, 128 * 2 * an::resnet(50).total_macs(), 1e-9));
  CHECK(throws<std::invalid_argument>([&] { an::actual_throughput(1.0, 0.0); }));
}

TEST_CASE("machine presets", "[analysis][cpu]") {
  const an::Machine a = an::a5000();
  CHECK(close(a.bandwidth_bytes_per_s, 480e9));  // 48 B × 8 × 1.25 GHz
  CHECK(a.peak_ops(DType::f16) == 76.7e12);
  CHECK(a.peak_ops(DType::bf16) == 76.7e12);
  CHECK(std::abs(a.op_byte(DType::f16) - 159.8) < 0.1);
  CHECK(an::h100_sxm().bandwidth_bytes_per_s == 3.35e12);
  CHECK(an::h200().bandwidth_bytes_per_s == 4.8e12);
  CHECK(std::abs(an::h200().peak_ops(DType::f16) - 989e12) < 1e12);
  CHECK(an::machine_by_name("H100").name == "h100");
  bool threw = false;
  try {
    an::machine_by_name("tpu");
  } catch (const std::invalid_argument& e) {
    threw = true;
    for (const std::string& n : an::machine_names()) CHECK(std::string(e.what()).find(n) != std::string::npos);
  }
  CHECK(threw);
  // roofline_time through a Machine uses the dtype's roof.
  CHECK(close(an::roofline_time(76.7e12, 1.0, a), 1.0));
  CHECK(close(an::roofline_time(0, 480e9, a, DType::f32), 1.0));
}

TEST_CASE("machine_from_probe_json reads the measured peaks", "[analysis][cpu]") {
  const std::filesystem::path dir = std::filesystem::temp_directory_path();
  const std::filesystem::path good = dir / "convlab_test_probe_good.json";
  const std::filesystem::path bad = dir / "convlab_test_probe_bad.json";
  {
    std::ofstream f(good);
    f << "{\"cpu_model\": \"x\", \"gpu_name\": \"NVIDIA H200\", \"gpu_hgemm_gflops\": 700000.5,\n"
         " \"gpu_copy_gbs\": 4100, \"gpu_sgemm_gflops\": 50000, \"gpu_sm_count\": 132}\n";
  }
  {
    std::ofstream f(bad);
    f << "{\"gpu_copy_gbs\": 4100}";
  }
  const an::Machine m = an::machine_from_probe_json(good.string());
  CHECK(m.name == "measured");
  CHECK(m.peak_ops(DType::f16) == 700000.5e9);
  CHECK(m.peak_ops(DType::f32) == 50000e9);
  CHECK(m.bandwidth_bytes_per_s == 4100e9);
  CHECK(m.description.find("NVIDIA H200") != std::string::npos);
  CHECK(an::machine_by_name("measured", good.string()).bandwidth_bytes_per_s == 4100e9);
  CHECK(throws<std::runtime_error>([&] { an::machine_from_probe_json(bad.string()); }));
  CHECK(throws<std::runtime_error>([&] { an::machine_from_probe_json((dir / "convlab_no_such_probe.json").string()); }));
  std::filesystem::remove(good);
  std::filesystem::remove(bad);
}

TEST_CASE("waterline_json reads back to the report's numbers; the table names every kernel", "[analysis][cpu]") {
  const an::WaterlineReport r = an::waterline(an::mobilenet_v2(), an::h200(), 64, DType::f16);
  const an::json::Value doc = an::json::parse(an::waterline_json(r));
  REQUIRE(doc.find("layers") != nullptr);
  CHECK(doc.find("layers")->items.size() == r.network.layers.size());
  const an::json::Value* totals = doc.find("totals");
  REQUIRE(totals != nullptr);
  CHECK(close(totals->find("min_time_s")->number, r.min_time_s, 1e-9));
  CHECK(close(totals->find("max_efficiency")->number, r.max_efficiency, 1e-9));
  CHECK(close(totals->find("mediant_efficiency")->number, r.mediant_efficiency, 1e-9));
  CHECK(doc.find("batch")->number == 64);

  const std::string table = an::waterline_table(r);
  for (const an::Layer& l : r.network.layers) CHECK(table.find(l.name) != std::string::npos);
  CHECK(table.find("C_max") != std::string::npos);
}

TEST_CASE("json reader: nesting, escapes, errors", "[analysis][cpu]") {
  const an::json::Value v = an::json::parse(R"({"a": [1, -2.5e3, true, null], "b": {"c": "x\"y\u00e9"}})");
  CHECK(v.find("a")->items.size() == 4);
  CHECK(v.find("a")->items[1].number == -2500.0);
  CHECK(v.find("b")->find("c")->text == "x\"y\xc3\xa9");
  CHECK(an::json::parse(an::json::quote("tab\there")).text == "tab\there");
  CHECK(throws<std::runtime_error>([&] { an::json::parse("{\"a\": }"); }));
  CHECK(throws<std::runtime_error>([&] { an::json::parse("[1, 2"); }));
}
