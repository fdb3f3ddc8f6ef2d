// app/cmd_waterline.cpp — `convlab waterline NETWORK ...`: lesson 13's
// waterline analysis of one network on one machine (synopsis in
// analysis/cli.hpp), and the two sweeps its notebook draws: efficiency against
// op:byte (`--sweep-opbyte`, Figure 4) and conv intensity against channels
// (`--intensity-vs-channels`, Figure 2(e)). Everything it prints is computed
// by analysis/; this file only reads the command line and finds the probe
// file of the "measured" machine.
//
// Two entry points, one behaviour:
//   * waterline_command, a Command for app/main.cpp's table (errors are
//     thrown: UsageError → exit 2, anything else → exit 1, printed by main);
//   * cmd_waterline(argc, argv), the plain function declared in
//     analysis/cli.hpp, which prints the same one-line errors itself.
#include <cmath>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "analysis/cli.hpp"
#include "analysis/machine.hpp"
#include "analysis/models.hpp"
#include "analysis/report.hpp"
#include "app/commands.hpp"
#include "app/common.hpp"
#include "core/dtype.hpp"
#include "core/probe.hpp"

namespace convlab::app {
namespace {

constexpr const char* kDefaultOpbyteRange = "1:100000:101";  // 20 points per decade
// Multiples of 32, so that every group width up to 32 divides them.
constexpr const char* kDefaultChannels = "32:2048:32";

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

void print_help(std::ostream& out) {
  out << "usage: convlab waterline NETWORK [--machine NAME] [--probe FILE] [--batch N]\n"
         "                         [--dtype fp16|bf16|fp32] [--block-fusion] [--latency-ms T] [--json]\n"
         "       convlab waterline NETWORK --sweep-opbyte [--opbyte-range LO:HI:N] [--batch N]\n"
         "                         [--dtype T] [--block-fusion] [--machine NAME] [--json]\n"
         "       convlab waterline --intensity-vs-channels [--channels LIST] [--group-width LIST]\n"
         "                         [--expansion E] [--batch N] [--dtype T] [--machine NAME] [--json]\n"
         "\n"
         "Per-kernel roofline of a network run layer by layer (conv + bias + activation\n"
         "+ residual fused, Lavin 2024 Sec. 4.2): each kernel's OPs, compulsory DRAM bytes,\n"
         "operational intensity, whether it is above the machine's op:byte waterline, and\n"
         "its attainable time (Eq. 11); then T_min (Eq. 12), C_max (Eq. 13), and the\n"
         "mediant intensity (Eq. 29) with the roofline estimate built on it.\n"
         "\n"
         "NETWORK         " << joined(analysis::network_names()) << "\n"
         "--machine NAME  " << joined(analysis::machine_names()) << " (default a5000, the paper's GPU)\n"
         "--probe FILE    probe JSON for --machine measured (default: $CONVLAB_PROBE_FILE,\n"
         "                else probe.json beside the convlab program; `convlab probe` writes it)\n"
         "--batch N       images per batch (default 128, as in the paper)\n"
         "--dtype T       element type: 2 bytes and the tensor-core rate for fp16/bf16,\n"
         "                4 bytes and the fp32 rate for fp32 (default fp16)\n"
         "--block-fusion  count each residual block as one kernel (block fusion, Sec. 5)\n"
         "--latency-ms T  a measured latency of one batch: adds the efficiency gap (Eq. 1, 3, 7-9):\n"
         "                ideal time N/R, actual OP/s, computational efficiency C = t_i/t_a, the\n"
         "                gap in decades, and T_min/t_a, the share of the attainable speed reached\n"
         "--json          JSON instead of the table\n"
         "\n"
         "--sweep-opbyte  Figure 4: C_max (waterline) and the roofline estimate on the mediant\n"
         "                intensity at op:byte ratios from LO to HI, N points spaced evenly in\n"
         "                log (--opbyte-range, default " << kDefaultOpbyteRange << "); --machine only marks where\n"
         "                that machine's R/B falls\n"
         "--intensity-vs-channels\n"
         "                Figure 2(e), no NETWORK: OP/B of 3x3 dense, 3x3 grouped (group width T),\n"
         "                3x3 depthwise and 1x1 (K = E*C) convs over N x 56 x 56 pixels (N = --batch),\n"
         "                exact (Eq. 24) and approximate; --machine gives the waterline\n"
         "  --channels LIST     C values: 'a,b,c' or 'LO:HI:STEP' (default " << kDefaultChannels << ")\n"
         "  --group-width LIST  T of the grouped series, e.g. '8,32' (default 8)\n"
         "  --expansion E       K/C of the pointwise series (default 4)\n";
}

// ---- value parsing ----------------------------------------------------------------------

// A positive integer; `what` names the option in the error.
int positive_int(const std::string& text, const std::string& what) {
  std::size_t used = 0;
  long value = 0;
  try {
    value = std::stol(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || value < 1 || value > (1 << 24))
    throw UsageError(what + ": '" + text + "' is not a positive integer");
  return int(value);
}

double positive_number(const std::string& text, const std::string& what) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !std::isfinite(value) || !(value > 0))
    throw UsageError(what + ": '" + text + "' is not a positive number");
  return value;
}

// "8,32" or "32:2048:32" (LO to HI inclusive in steps of STEP).
std::vector<int> int_list(const std::string& text, const std::string& what) {
  std::vector<int> out;
  const std::vector<std::string> range = split(text, ':');
  if (range.size() == 3) {
    const int lo = positive_int(range[0], what), hi = positive_int(range[1], what),
              step = positive_int(range[2], what);
    if (hi < lo) throw UsageError(what + ": range '" + text + "' ends before it starts");
    for (int v = lo; v <= hi; v += step) out.push_back(v);
    return out;
  }
  if (range.size() != 1) throw UsageError(what + ": expected 'a,b,c' or 'LO:HI:STEP', got '" + text + "'");
  for (const std::string& item : split(text, ',')) out.push_back(positive_int(item, what));
  return out;
}

// "LO:HI:N": N op:byte ratios spaced evenly in log from LO to HI.
std::vector<double> log_range(const std::string& text, const std::string& what) {
  const std::vector<std::string> parts = split(text, ':');
  if (parts.size() != 3) throw UsageError(what + ": expected LO:HI:N, got '" + text + "'");
  const double lo = positive_number(parts[0], what), hi = positive_number(parts[1], what);
  const int n = positive_int(parts[2], what);
  if (hi < lo) throw UsageError(what + ": '" + text + "' ends before it starts");
  if (n > 10000) throw UsageError(what + ": at most 10000 points");
  return analysis::log_spaced(lo, hi, n);
}

// UsageError when an option of another mode was given.
void reject(const ParsedArgs& parsed, const std::vector<std::string>& options, const std::string& mode) {
  for (const std::string& o : options)
    if (parsed.has(o)) throw UsageError("option " + o + " does not apply to " + mode);
}

// The machine (--machine, --probe) and element type (--dtype) every report needs.
struct MachineAndType {
  analysis::Machine machine;
  DType dtype = DType::f16;
};

MachineAndType machine_and_type(const ParsedArgs& parsed) {
  MachineAndType m;
  try {
    m.dtype = parse_dtype(parsed.get("--dtype", "fp16"));
    m.machine =
        analysis::machine_by_name(parsed.get("--machine", "a5000"), parsed.get("--probe", probe_file_path()));
    m.machine.peak_ops(m.dtype);  // fail now if this machine has no rate for the dtype
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());  // unknown machine or dtype: the message lists the valid names
  }
  return m;  // an unreadable probe file (std::runtime_error) goes on: exit status 1
}

// `convlab waterline --intensity-vs-channels ...` (Figure 2(e)).
int run_intensity(const ParsedArgs& parsed, bool json) {
  reject(parsed, {"--block-fusion", "--latency-ms"}, "--intensity-vs-channels");
  if (!parsed.positional.empty())
    throw UsageError("--intensity-vs-channels takes no network, got '" + parsed.positional[0] + "'");
  analysis::IntensitySweepSpec spec;
  spec.channels = int_list(parsed.get("--channels", kDefaultChannels), "--channels");
  spec.group_widths = int_list(parsed.get("--group-width", "8"), "--group-width");
  spec.pointwise_expansion = positive_int(parsed.get("--expansion", "4"), "--expansion");
  spec.batch = int(parsed.get_int("--batch", 128, 1, 1 << 20));
  const MachineAndType m = machine_and_type(parsed);
  spec.dtype = m.dtype;
  std::string text;
  try {
    text = json ? analysis::intensity_vs_channels_json(spec, m.machine)
                : analysis::intensity_vs_channels_table(spec, m.machine);
  } catch (const std::invalid_argument& e) {  // a C that no conv of that kind can have
    throw UsageError(std::string(e.what()) + " (every --channels value must be a multiple of every --group-width)");
  }
  std::cout << text;
  return 0;
}

// `convlab waterline NETWORK ...`: the per-kernel table, or with --sweep-opbyte Figure 4's curves.
int run_network(const ParsedArgs& parsed, bool json, bool sweep) {
  if (parsed.positional.empty())
    throw UsageError("`convlab waterline` needs a network (valid: " + joined(analysis::network_names()) +
                     "), or --intensity-vs-channels");
  if (parsed.positional.size() > 1)
    throw UsageError("`convlab waterline` takes one network, got '" + parsed.positional[1] + "' as well");
  if (sweep) reject(parsed, {"--latency-ms"}, "--sweep-opbyte");

  analysis::Network network;
  try {
    network = analysis::network_by_name(parsed.positional[0]);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());  // the message lists the valid names
  }
  const MachineAndType m = machine_and_type(parsed);
  const int batch = int(parsed.get_int("--batch", 128, 1, 1 << 20));
  if (parsed.has("--block-fusion")) network = analysis::block_fused(network);

  if (sweep) {
    const std::vector<double> ratios = log_range(parsed.get("--opbyte-range", kDefaultOpbyteRange), "--opbyte-range");
    std::cout << (json ? analysis::opbyte_sweep_json(network, ratios, m.machine, batch, m.dtype)
                       : analysis::opbyte_sweep_table(network, ratios, m.machine, batch, m.dtype));
    return 0;
  }

  const analysis::WaterlineReport report = analysis::waterline(network, m.machine, batch, m.dtype);
  if (parsed.has("--latency-ms")) {
    const double seconds = positive_number(parsed.get("--latency-ms"), "--latency-ms") * 1e-3;
    const analysis::EfficiencyGap gap = analysis::efficiency_gap(report.total_ops, seconds, m.machine, m.dtype);
    std::cout << (json ? analysis::waterline_json(report, &gap) : analysis::waterline_table(report, &gap));
    return 0;
  }
  std::cout << (json ? analysis::waterline_json(report) : analysis::waterline_table(report));
  return 0;
}

int run(const std::vector<std::string>& args) {
  const ParsedArgs parsed = parse_args(args,
                                       {{"--machine", true},
                                        {"--probe", true},
                                        {"--batch", true},
                                        {"--dtype", true},
                                        {"--block-fusion", false},
                                        {"--latency-ms", true},
                                        {"--json", false},
                                        {"--sweep-opbyte", false},
                                        {"--opbyte-range", true},
                                        {"--intensity-vs-channels", false},
                                        {"--channels", true},
                                        {"--group-width", true},
                                        {"--expansion", true}},
                                       "waterline");
  const bool json = parsed.has("--json");
  const bool sweep = parsed.has("--sweep-opbyte");
  const bool intensity = parsed.has("--intensity-vs-channels");
  if (sweep && intensity)
    throw UsageError("--sweep-opbyte and --intensity-vs-channels are two different reports: give one");
  if (!intensity)
    reject(parsed, {"--channels", "--group-width", "--expansion"}, "a network (they go with --intensity-vs-channels)");
  if (!sweep) reject(parsed, {"--opbyte-range"}, "this report (it goes with --sweep-opbyte)");
  return intensity ? run_intensity(parsed, json) : run_network(parsed, json, sweep);
}

}  // namespace

// `extern` gives the object external linkage on its own, so main.cpp's table
// can name it once app/commands.hpp declares it.
extern const Command waterline_command;
const Command waterline_command{"waterline", "roofline and waterline of a real network's layers (lesson 13)",
                                print_help, run};

}  // namespace convlab::app

namespace convlab {

int cmd_waterline(int argc, char** argv) {
  const std::vector<std::string> args(argv + (argc > 0 ? 1 : 0), argv + argc);  // argv[0] is "waterline"
  const auto fail = [](const std::exception& e, int status) {
    std::string line = e.what();
    for (char& c : line)
      if (c == '\n' || c == '\r') c = ' ';
    std::cerr << "convlab: error: " << line << std::endl;
    return status;
  };
  try {
    for (const std::string& a : args)
      if (a == "--help" || a == "-h") {
        app::print_help(std::cout);
        return 0;
      }
    return app::run(args);
  } catch (const std::invalid_argument& e) {  // UsageError included
    return fail(e, 2);
  } catch (const std::exception& e) {
    return fail(e, 1);
  }
}

}  // namespace convlab
