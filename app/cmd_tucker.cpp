// app/cmd_tucker.cpp — `convlab tucker`: lesson 12's two host-side tables.
//
//   convlab tucker hosvd [--C N] [--K N] [--ranks A,B,...] [--seed S]
//       relative approximation error of the truncated HOSVD against rank, on a random
//       kernel and on a low-rank-plus-noise one, with the parameter and FLOP ratios
//   convlab tucker model [--shape SPEC]
//       the analytical model's prediction for every TDC tile of one core conv, and its choice
//   convlab tucker fit --oracle FILE [--grid] [--csv LABEL]
//       the model against a measured sweep (bench/tdc_oracle.cu's JSON): its choice per shape,
//       that tile's measured time over the oracle's; --grid fits the model's kernel constants
//       to the sweep and scores the fit on each shape left out of it; --csv prints one shape's
//       candidates (measured, predicted) for a plot
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
#include "core/json.hpp"
#include "ops/tucker_conv.hpp"

namespace convlab::app {
namespace {

void print_help(std::ostream& out) {
  out << "usage: convlab tucker hosvd [--C N] [--K N] [--ranks A,B,...] [--seed S]\n"
         "       convlab tucker model [--shape SPEC]\n"
         "       convlab tucker fit --oracle FILE [--grid] [--csv LABEL]\n"
         "\n"
         "Lesson 12 (Tucker-format convolution, TDC), host side.\n"
         "hosvd: the truncated HOSVD of a 3x3 KRSC kernel [K,3,3,C] at ranks d1 = d2 = d (capped at C\n"
         "       and K): relative error ||W - W_d|| / ||W|| on a uniform random kernel and on a kernel\n"
         "       of Tucker ranks (C/4, K/4) plus 1% noise; params and FLOPs of the three-stage form\n"
         "       over the dense conv's. Defaults: C = K = 64, ranks 4,8,16,24,32,48,64, seed 12.\n"
         "model: every candidate tile (TH x TW x TC) of the core conv SPEC (tucker_core keys N, H, W,\n"
         "       C, K; default N=1,H=56,W=56,C=64,K=32) with the model's blocks per SM, waves,\n"
         "       compute, memory and overhead terms and predicted time, fastest first; the choice first.\n"
         "fit:   --oracle FILE (bench/tdc_oracle.cu's JSON): for each shape the model's tile (current\n"
         "       constants) and its measured time in the sweep over the fastest's, as a markdown table;\n"
         "       --grid also searches the kernel constants (issue rate, iteration and staging latency,\n"
         "       launch and memset cost) for the least geomean ratio, in-sample and leave-one-shape-out;\n"
         "       --csv LABEL prints LABEL's candidates as th,tw,tc,measured_us,predicted_us.\n";
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

struct SweepShape {
  std::string label;
  TuckerCoreProblem p;
  std::vector<TdcTile> tiles;
  std::vector<double> measured_us;
  double best_us = 0;
  TdcTile best;
};

std::vector<SweepShape> read_sweep(const std::string& path) {
  const json::Value root = json::parse_file(path);
  const json::Value* shapes = root.find("shapes");
  if (!shapes || shapes->kind != json::Value::Kind::array) throw UsageError(path + ": no \"shapes\" array");
  std::vector<SweepShape> out;
  for (const json::Value& s : shapes->items) {
    SweepShape sw;
    const json::Value* spec = s.find("spec");
    const json::Value* cand = s.find("candidates");
    if (!spec || !spec->is_string() || !cand) throw UsageError(path + ": a shape without spec or candidates");
    sw.label = s.find("label") ? s.find("label")->text : spec->text;
    sw.p = OpTraits<TuckerCoreProblem>::parse(spec->text);
    sw.best_us = 1e300;
    for (const json::Value& c : cand->items) {
      if (c.items.size() < 4 || !c.items[3].is_number()) continue;
      const TdcTile t{int(c.items[0].number), int(c.items[1].number), int(c.items[2].number)};
      sw.tiles.push_back(t);
      sw.measured_us.push_back(c.items[3].number);
      if (c.items[3].number < sw.best_us) sw.best_us = c.items[3].number, sw.best = t;
    }
    if (sw.tiles.empty()) throw UsageError(path + ": shape " + sw.label + " has no measured candidate");
    out.push_back(std::move(sw));
  }
  return out;
}

// The model's pick among the measured candidates, its measured time over the best's,
// and the rms log error of its predictions over all of them.
struct Score {
  TdcTile choice;
  double ratio = 0, rms_log = 0;
};
Score score(const SweepShape& s, const TdcMachine& m) {
  Score r;
  double best_pred = 1e300, chosen_us = 0, sq = 0;
  for (std::size_t i = 0; i < s.tiles.size(); ++i) {
    const double pred = tdc_predict(s.p, s.tiles[i], m).total_s * 1e6;
    if (pred < best_pred) best_pred = pred, chosen_us = s.measured_us[i], r.choice = s.tiles[i];
    const double e = std::log(pred / s.measured_us[i]);
    sq += e * e;
  }
  r.ratio = chosen_us / s.best_us;
  r.rms_log = std::sqrt(sq / double(s.tiles.size()));
  return r;
}

double geomean(const std::vector<double>& v) {
  double acc = 0;
  for (double x : v) acc += std::log(x);
  return std::exp(acc / double(v.size()));
}

int run_fit(const ParsedArgs& a) {
  if (!a.has("--oracle")) throw UsageError("tucker fit needs --oracle FILE (bench/tdc_oracle.cu's JSON)");
  const std::vector<SweepShape> sweep = read_sweep(a.get("--oracle"));
  if (a.has("--csv")) {
    const std::string label = a.get("--csv");
    for (const SweepShape& s : sweep)
      if (s.label == label) {
        std::printf("th,tw,tc,measured_us,predicted_us\n");
        for (std::size_t i = 0; i < s.tiles.size(); ++i)
          std::printf("%d,%d,%d,%.4f,%.4f\n", s.tiles[i].th, s.tiles[i].tw, s.tiles[i].tc, s.measured_us[i],
                      tdc_predict(s.p, s.tiles[i]).total_s * 1e6);
        return 0;
      }
    throw UsageError("no shape labelled " + label + " in the sweep");
  }
  std::vector<TdcMachine> machines{TdcMachine{}};
  if (a.has("--grid")) {
    for (double issue : {1.0, 2.0, 3.0, 4.0})
      for (double lsu : {0.25, 0.5, 1.0})
        for (double iter : {30.0, 60.0, 100.0, 150.0, 200.0, 300.0, 450.0})
          for (double stage : {1000.0, 2000.0, 3000.0, 4500.0, 6000.0})
            for (double memset : {0.0, 0.5e-6, 1.0e-6, 2.0e-6})
              for (double launch : {2.0e-6, 3.0e-6}) {
                TdcMachine m;
                m.issue_per_sm_clk = issue, m.lsu_per_sm_clk = lsu, m.iter_cycles = iter, m.stage_cycles = stage,
                m.memset_s = memset, m.launch_s = launch;
                machines.push_back(m);
              }
  }
  // scores[machine][shape]
  std::vector<std::vector<Score>> scores(machines.size());
  for (std::size_t mi = 0; mi < machines.size(); ++mi)
    for (const SweepShape& s : sweep) scores[mi].push_back(score(s, machines[mi]));
  // The objective: mean log choice ratio over the shapes kept, plus a tenth of the mean rms log
  // error (among fits that choose equally well, the one that predicts times best).
  auto objective = [&](std::size_t mi, int left_out) {
    double acc = 0;
    int n = 0;
    for (std::size_t si = 0; si < sweep.size(); ++si)
      if (int(si) != left_out) acc += std::log(scores[mi][si].ratio) + 0.1 * scores[mi][si].rms_log, ++n;
    return acc / n;
  };
  auto best_machine = [&](int left_out) {
    std::size_t best = 0;
    for (std::size_t mi = 1; mi < machines.size(); ++mi)
      if (objective(mi, left_out) < objective(best, left_out)) best = mi;
    return best;
  };
  const std::size_t fitted = a.has("--grid") ? best_machine(-1) : 0;
  const TdcMachine& fm = machines[fitted];
  if (a.has("--grid"))
    std::printf("fitted (%zu constant sets tried): issue_per_sm_clk %.2f, lsu_per_sm_clk %.2f, iter_cycles %.0f, "
                "stage_cycles %.0f, memset_s %.2g, launch_s %.2g\n\n",
                machines.size() - 1, fm.issue_per_sm_clk, fm.lsu_per_sm_clk, fm.iter_cycles, fm.stage_cycles,
                fm.memset_s, fm.launch_s);
  std::printf("| shape | oracle tile | oracle µs | model tile | its µs | model / oracle | rms log error |%s\n",
              a.has("--grid") ? " left-out fit: tile | ratio |" : "");
  std::printf("|---|---|---:|---|---:|---:|---:|%s\n", a.has("--grid") ? "---|---:|" : "");
  std::vector<double> ratios, loo;
  for (std::size_t si = 0; si < sweep.size(); ++si) {
    const SweepShape& s = sweep[si];
    const Score& sc = scores[fitted][si];
    ratios.push_back(sc.ratio);
    std::printf("| %s | %s | %.2f | %s | %.2f | %.2f | %.2f |", s.label.c_str(), tile_name(s.best).c_str(), s.best_us,
                tile_name(sc.choice).c_str(), sc.ratio * s.best_us, sc.ratio, sc.rms_log);
    if (a.has("--grid")) {
      const Score& l = scores[best_machine(int(si))][si];
      loo.push_back(l.ratio);
      std::printf(" %s | %.2f |", tile_name(l.choice).c_str(), l.ratio);
    }
    std::printf("\n");
  }
  std::printf("| geomean | | | | | %.3f | |", geomean(ratios));
  if (a.has("--grid")) std::printf(" | %.3f |", geomean(loo));
  std::printf("\n");
  return 0;
}

int run(const std::vector<std::string>& args) {
  const ParsedArgs parsed =
      parse_args(args, {{"--C", true}, {"--K", true}, {"--ranks", true}, {"--seed", true}, {"--shape", true},
                        {"--oracle", true}, {"--grid", false}, {"--csv", true}}, "tucker");
  const std::string what = parsed.positional.size() == 1 ? parsed.positional[0] : "";
  if (what == "hosvd") return run_hosvd(parsed);
  if (what == "model") return run_model(parsed);
  if (what == "fit") return run_fit(parsed);
  throw UsageError("tucker takes one of: hosvd, model, fit (convlab tucker --help)");
}

}  // namespace

const Command tucker_command{"tucker", "lesson 12: HOSVD error against rank, TDC's tile model", print_help, run};

}  // namespace convlab::app
