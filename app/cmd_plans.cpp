// app/cmd_plans.cpp — `convlab plans convfirst|mbconv --shape SPEC`: the tensor
// machines of lessons 10 and 11 as text. For one block it prints each execution
// plan the op's descriptor lists (ops/convfirst.hpp: layer by layer, fused,
// large-C cut by output channel and by hidden column; ops/mbconv.hpp: layer by layer, two-pass recompute, two-pass store,
// single pass without SE): where every tensor lives (DRAM, global = L2/DSMEM, local =
// shared memory/registers), the plan's kernels with their MACs and DRAM
// bytes, the on-chip global traffic, the fused plans' grid against the SM
// count (CTAs per SM: below 1 the chip is not filled), and the waterline-attainable time on
// a machine (Eq. 12: the kernels run one after another, so their roofline
// times max(ops/R, bytes/B) add). The numbers all come from the descriptor;
// this file only prints them.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "analysis/machine.hpp"
#include "analysis/waterline.hpp"
#include "app/commands.hpp"
#include "app/common.hpp"
#include "core/json.hpp"
#include "ops/convfirst.hpp"
#include "ops/mbconv.hpp"
#include "core/probe.hpp"

namespace convlab::app {
namespace {

void print_help(std::ostream& out) {
  out << "usage: convlab plans convfirst|mbconv [--shape SPEC] [--machine NAME] [--probe FILE] [--tile N] [--split K] [--sms N] [--json]\n"
         "\n"
         "Lesson 10's and 11's tensor machines (Lavin Sec. 5.1, Fig. 7) for one ConvFirst or MBConv block:\n"
         "for each execution plan, where each tensor lives (DRAM, global = L2/DSMEM,\n"
         "local = shared memory/registers), its kernels' MACs and compulsory DRAM bytes,\n"
         "the estimated on-chip global-memory traffic, and the waterline-attainable\n"
         "time on the machine (Eq. 12: the sum of max(2*MACs/R, bytes/B) over the plan's kernels).\n"
         "\n"
         "--shape SPEC    a convfirst spec: keys N, H, W, C, hidden, C_out, stride, gw, act, dtype\n"
         "                (default N=128,H=56,W=56,C=64,dtype=f16)\n"
         "                or an mbconv spec: keys N, H, W, C, e, k, stride, se, C_out, act, dtype\n"
         "                (default N=128,H=56,W=56,C=24,e=6,k=3,se=0.25,dtype=f16)\n"
         "--machine NAME  measured (the probe file; the default when it holds GPU rates), h200 (the\n"
         "                default otherwise), h100, a5000\n"
         "--probe FILE    probe JSON for --machine measured (default: $CONVLAB_PROBE_FILE or probe.json\n"
         "                beside the program)\n"
         "--tile N        output pixels per CTA in the fused plans (default 128 for convfirst: 10b_fused's\n"
         "                tile; 64 for mbconv)\n"
         "--split K       CTAs sharing a tile in convfirst's two large-C plans (default 2)\n"
         "--sms N         multiprocessors, for the fused plans' CTAs per SM (default 132: H200 and H100 SXM);\n"
         "                below 1 the grid cannot fill the chip, and a fractional part is a partly idle last wave\n"
         "--json          the same as one JSON object (scripts/draw_plans.py draws Fig. 7 from it)\n"
         "\n"
         "example: convlab plans convfirst --shape N=128,H=28,C=128,dtype=f16 --machine h200\n"
         "         convlab plans mbconv --shape N=128,H=56,C=24,e=6,se=0.25,dtype=f16 --machine h200\n";
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

int run(const std::vector<std::string>& args) {
  const ParsedArgs parsed = parse_args(
      args, {{"--shape", true}, {"--machine", true}, {"--probe", true}, {"--tile", true}, {"--split", true}, {"--sms", true}, {"--json", false}}, "plans");
  const std::string op = parsed.positional.size() == 1 ? parsed.positional[0] : "";
  if (op != "convfirst" && op != "mbconv")
    throw UsageError("plans takes one operation, convfirst or mbconv (the blocks with execution plans), e.g. "
                     "`convlab plans convfirst --shape N=128,H=56,C=64,dtype=f16`");
  const bool mb = op == "mbconv";
  // What the printing needs from either op: the canonical spec, the dtype, the MACs and their split, the plans.
  std::string spec, split_line;
  DType dtype = DType::f16;
  double block_macs = 0;
  std::vector<ConvFirstPlan> plans;
  const int tile = int(parsed.get_int("--tile", mb ? 64 : 128, 1, 1 << 20));
  const int split = int(parsed.get_int("--split", 2, 1, 16));
  try {
    if (mb) {
      const MBConvProblem p = OpTraits<MBConvProblem>::parse(parsed.get("--shape", "N=128,H=56,W=56,C=24,e=6,k=3,se=0.25,dtype=f16"));
      spec = OpTraits<MBConvProblem>::spec(p), dtype = p.dtype, block_macs = p.macs();
      split_line = "expand " + fixed(100 * p.expand_macs() / p.macs(), 1) + "%, depthwise " +
                   fixed(100 * p.depthwise_macs() / p.macs(), 1) + "%, SE " + fixed(100 * p.se_macs() / p.macs(), 2) +
                   "%, project " + fixed(100 * p.project_macs() / p.macs(), 1) + "%";
      plans = mbconv_plans(p, tile);
    } else {
      const ConvFirstProblem p = OpTraits<ConvFirstProblem>::parse(parsed.get("--shape", "N=128,H=56,W=56,C=64,dtype=f16"));
      spec = OpTraits<ConvFirstProblem>::spec(p), dtype = p.dtype, block_macs = p.macs();
      split_line = "conv " + fixed(100 * p.conv_macs() / p.macs(), 1) + "%, FFN " + fixed(100 * p.ffn_macs() / p.macs(), 1) +
                   "%, shortcut " + fixed(100 * p.shortcut_macs() / p.macs(), 1) + "%";
      plans = convfirst_plans(p, tile, split);
    }
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  const int sms = int(parsed.get_int("--sms", 132, 1, 1 << 16));
  const std::string probe = parsed.get("--probe", probe_file_path());
  // The default: this machine's probe when it holds GPU rates (a probe taken without a GPU has
  // none, and these plans are GPU plans), else the H200 preset.
  const auto probe_has_gpu = [&] {
    try {
      analysis::machine_from_probe_json(probe);
      return true;
    } catch (const std::exception&) {
      return false;
    }
  };
  const std::string machine_name =
      parsed.get("--machine", std::filesystem::exists(probe) && probe_has_gpu() ? "measured" : "h200");
  analysis::Machine m;
  try {
    m = analysis::machine_by_name(machine_name, probe);
    m.peak_ops(dtype);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  const double R = m.peak_ops(dtype), B = m.bandwidth_bytes_per_s;
  const auto kernel_seconds = [&](const PlanKernel& k) {
    return analysis::roofline_time(2.0 * k.macs, k.dram_bytes, analysis::Roof{R, B});
  };
  if (parsed.has("--json")) {
    using json::number;
    using json::quote;
    std::cout << "{\"op\": " << quote(op) << ", \"spec\": " << quote(spec) << ", \"machine\": " << quote(m.name)
              << ", \"peak_ops_per_s\": " << number(R) << ", \"bytes_per_s\": " << number(B)
              << ", \"macs\": " << number(block_macs) << ", \"plans\": [";
    for (std::size_t i = 0; i < plans.size(); ++i) {
      const ConvFirstPlan& plan = plans[i];
      double total = 0;
      std::cout << (i ? ", " : "") << "{\"name\": " << quote(plan.name) << ", \"figure\": " << quote(plan.figure)
                << ", \"summary\": " << quote(plan.summary) << ", \"tensors\": [";
      for (std::size_t j = 0; j < plan.tensors.size(); ++j) {
        const PlanTensor& t = plan.tensors[j];
        std::cout << (j ? ", " : "") << "{\"name\": " << quote(t.name) << ", \"place\": " << quote(place_name(t.place))
                  << ", \"bytes\": " << number(t.elems * dtype_size(dtype)) << ", \"note\": " << quote(t.note) << "}";
      }
      std::cout << "], \"kernels\": [";
      for (std::size_t j = 0; j < plan.kernels.size(); ++j) {
        const PlanKernel& k = plan.kernels[j];
        total += kernel_seconds(k);
        std::cout << (j ? ", " : "") << "{\"name\": " << quote(k.name) << ", \"macs\": " << number(k.macs)
                  << ", \"dram_bytes\": " << number(k.dram_bytes) << ", \"seconds\": " << number(kernel_seconds(k)) << "}";
      }
      std::cout << "], \"dram_bytes\": " << number(plan.dram_bytes()) << ", \"global_bytes\": " << number(plan.global_bytes)
                << ", \"ctas\": " << number(plan.ctas) << ", \"waterline_seconds\": " << number(total) << "}";
    }
    std::cout << "], \"sms\": " << sms << "}\n";
    return 0;
  }

  std::cout << (mb ? "mbconv    " : "convfirst ") << spec << "\n"
            << "machine   " << m.name << ": " << fixed(R / 1e12, 1) << " TFLOP/s (" << dtype_name(dtype) << "), "
            << fixed(B / 1e9, 0) << " GB/s, op:byte " << fixed(R / B, 0) << "  (" << m.description << ")\n"
            << "block     " << fixed(block_macs / 1e9, 3) << " GMAC = " << fixed(2 * block_macs / 1e9, 2) << " GFLOP ("
            << split_line << ")\n";
  for (const ConvFirstPlan& plan : plans) {
    std::cout << "\nplan " << plan.name << " (" << plan.figure << "): " << plan.summary << "\n";
    std::cout << "  tensors:\n";
    for (const PlanTensor& t : plan.tensors) {
      char line[256];
      std::snprintf(line, sizeof line, "    %-15s %-18s %10.2f MB  ", t.name.c_str(), place_name(t.place),
                    t.elems * dtype_size(dtype) / 1e6);
      std::cout << line << t.note << "\n";
    }
    std::cout << "  kernels (waterline, Eq. 12):\n";
    double total = 0;
    for (const PlanKernel& k : plan.kernels) {
      const double seconds = kernel_seconds(k);
      total += seconds;
      char line[256];
      std::snprintf(line, sizeof line, "    %-40s %9.3f GMAC %10.2f MB DRAM  %8.4f ms  %s\n", k.name.c_str(),
                    k.macs / 1e9, k.dram_bytes / 1e6, seconds * 1e3,
                    2.0 * k.macs / std::max(k.dram_bytes, 1.0) >= R / B ? "compute-bound" : "memory-bound");
      std::cout << line;
    }
    std::cout << "  total: " << fixed(plan.macs() / 1e9, 3) << " GMAC, " << fixed(plan.dram_bytes() / 1e6, 1)
              << " MB DRAM, ~" << fixed(plan.global_bytes / 1e6, 1) << " MB global (L2/DSMEM); attainable "
              << fixed(total * 1e3, 4) << " ms = " << fixed(2.0 * plan.macs() / total / 1e12, 1) << " TFLOP/s ("
              << fixed(100.0 * 2.0 * plan.macs() / total / R, 1) << "% of R)\n";
    if (plan.ctas > 0)
      std::cout << "  grid: " << fixed(plan.ctas, 0) << " CTAs (" << tile << "-pixel tiles"
                << (plan.name.rfind("large_c", 0) == 0 ? " × " + std::to_string(split) + " CTAs each" : std::string())
                << ") on " << sms << " SMs = " << fixed(plan.ctas / sms, 2) << " CTAs per SM\n";
  }
  return 0;
}

}  // namespace

const Command plans_command{"plans",
                            "lessons 10-11's tensor machines: each ConvFirst/MBConv plan's tensors, bytes, MACs, attainable time",
                            print_help, run};

}  // namespace convlab::app
