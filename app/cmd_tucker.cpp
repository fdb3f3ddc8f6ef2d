// app/cmd_tucker.cpp — `convlab tucker`: lesson 12's two host-side tables.
//
//   convlab tucker hosvd [--C N] [--K N] [--ranks A,B,...] [--seed S]
//       relative approximation error of the truncated HOSVD against rank, on a random
//       kernel and on a low-rank-plus-noise one, with the parameter and FLOP ratios
//   convlab tucker model [--shape SPEC]
//       the analytical model's prediction for every TDC tile of one core conv, and its choice
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "app/commands.hpp"
#include "app/common.hpp"
#include "ops/tucker_conv.hpp"

namespace convlab::app {
namespace {

void print_help(std::ostream& out) {
  out << "usage: convlab tucker hosvd [--C N] [--K N] [--ranks A,B,...] [--seed S]\n"
         "       convlab tucker model [--shape SPEC]\n"
         "\n"
         "Lesson 12 (Tucker-format convolution, TDC), host side.\n"
         "hosvd: the truncated HOSVD of a 3x3 KRSC kernel [K,3,3,C] at ranks d1 = d2 = d (capped at C\n"
         "       and K): relative error ||W - W_d|| / ||W|| on a uniform random kernel and on a kernel\n"
         "       of Tucker ranks (C/4, K/4) plus 1% noise; params and FLOPs of the three-stage form\n"
         "       over the dense conv's. Defaults: C = K = 64, ranks 4,8,16,24,32,48,64, seed 12.\n"
         "model: every candidate tile (TH x TW x TC) of the core conv SPEC (tucker_core keys N, H, W,\n"
         "       C, K; default N=1,H=56,W=56,C=64,K=32) with the model's blocks per SM, waves,\n"
         "       compute, memory and overhead terms and predicted time, fastest first; the choice first.\n";
}

std::vector<int> parse_list(const std::string& text) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      std::size_t used = 0;
      const int v = std::stoi(item, &used);
      if (used != item.size() || v < 1) throw std::invalid_argument("");
      out.push_back(v);
    } catch (const std::exception&) {
      throw UsageError("--ranks takes positive integers separated by commas, got '" + text + "'");
    }
  }
  if (out.empty()) throw UsageError("--ranks is empty");
  return out;
}

std::vector<float> uniform(std::size_t n, std::mt19937_64& rng, float scale) {
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float& e : v) e = u(rng);
  return v;
}

int run_hosvd(const ParsedArgs& a) {
  const int C = int(a.get_int("--C", 64, 1, 1024)), K = int(a.get_int("--K", 64, 1, 1024));
  const std::vector<int> ranks = parse_list(a.get("--ranks", "4,8,16,24,32,48,64"));
  std::mt19937_64 rng(uint64_t(a.get_int("--seed", 12, 0, 1 << 30)));
  const std::vector<float> random_w = uniform(size_t(K) * 9 * C, rng, 1.f);
  // Tucker ranks (C/4, K/4) exactly, then 1% noise (relative, in norm).
  const int t1 = std::max(1, C / 4), t2 = std::max(1, K / 4);
  TuckerFactors g;
  g.C = C, g.K = K, g.R = 3, g.S = 3, g.d1 = t1, g.d2 = t2;
  g.u_in = uniform(size_t(C) * t1, rng, 1.f), g.u_out = uniform(size_t(K) * t2, rng, 1.f);
  g.core = uniform(size_t(t2) * 9 * t1, rng, 1.f);
  std::vector<float> structured = tucker_reconstruct_f32(g);
  double norm = 0;
  for (float v : structured) norm += double(v) * v;
  const float h = float(0.01 * std::sqrt(norm / double(structured.size())) * std::sqrt(3.0));
  const std::vector<float> noise = uniform(structured.size(), rng, h);
  for (size_t i = 0; i < structured.size(); ++i) structured[i] += noise[i];

  std::printf("| d1 = d2 | params / dense | FLOPs / dense | rel. error, random | rel. error, ranks (%d,%d) + 1%% noise |\n",
              t1, t2);
  std::printf("|---:|---:|---:|---:|---:|\n");
  for (int d : ranks) {
    const int d1 = std::min(d, C), d2 = std::min(d, K);
    const double params = double(C) * d1 + 9.0 * d1 * d2 + double(d2) * K;  // per pixel: FLOPs scale the same
    const double dense = 9.0 * C * K;
    const double e_random =
        relative_error(tucker_reconstruct_f32(tucker_hosvd_f32(K, 3, 3, C, d1, d2, random_w.data())), random_w);
    const double e_struct =
        relative_error(tucker_reconstruct_f32(tucker_hosvd_f32(K, 3, 3, C, d1, d2, structured.data())), structured);
    std::printf("| %d | %.3f | %.3f | %.4f | %.4f |\n", d, params / dense, params / dense, e_random, e_struct);
  }
  return 0;
}

int run_model(const ParsedArgs& a) {
  TuckerCoreProblem p;
  try {
    p = OpTraits<TuckerCoreProblem>::parse(a.get("--shape", "N=1,H=56,W=56,C=64,K=32"));
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  std::vector<TdcPrediction> all = tdc_predict_all(p);
  std::stable_sort(all.begin(), all.end(), [](const TdcPrediction& x, const TdcPrediction& y) {
    return x.total_s < y.total_s;
  });
  std::printf("%s: %zu candidates, choice %s\n", OpTraits<TuckerCoreProblem>::spec(p).c_str(), all.size(),
              tile_name(tdc_choose(p)).c_str());
  std::printf("%-10s %8s %6s %6s %10s %10s %10s %10s\n", "tile", "blocks", "b/SM", "waves", "compute_us", "memory_us",
              "overhead", "total_us");
  for (const TdcPrediction& r : all)
    std::printf("%-10s %8.0f %6d %6.0f %10.2f %10.2f %10.2f %10.2f\n", tile_name(r.tile).c_str(), r.blocks,
                r.blocks_per_sm, r.waves, r.compute_s * 1e6, r.memory_s * 1e6, r.overhead_s * 1e6, r.total_s * 1e6);
  return 0;
}

int run(const std::vector<std::string>& args) {
  const ParsedArgs parsed =
      parse_args(args, {{"--C", true}, {"--K", true}, {"--ranks", true}, {"--seed", true}, {"--shape", true}}, "tucker");
  if (parsed.positional.size() != 1 || (parsed.positional[0] != "hosvd" && parsed.positional[0] != "model"))
    throw UsageError("tucker takes one of: hosvd, model (convlab tucker --help)");
  return parsed.positional[0] == "hosvd" ? run_hosvd(parsed) : run_model(parsed);
}

}  // namespace

const Command tucker_command{"tucker", "lesson 12: HOSVD error against rank, TDC's tile model", print_help, run};

}  // namespace convlab::app
