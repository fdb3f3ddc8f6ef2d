// app/cmd_waterline.cpp — `convlab waterline NETWORK ...`: lesson 13's
// waterline analysis of one network on one machine (synopsis in
// analysis/cli.hpp). Everything it prints is computed by analysis/; this file
// only reads the command line and finds the probe file of the "measured"
// machine.
//
// Two entry points, one behaviour:
//   * waterline_command, a Command for app/main.cpp's table (errors are
//     thrown: UsageError → exit 2, anything else → exit 1, printed by main);
//   * cmd_waterline(argc, argv), the plain function declared in
//     analysis/cli.hpp, which prints the same one-line errors itself.
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "analysis/cli.hpp"
#include "analysis/machine.hpp"
#include "analysis/models.hpp"
#include "analysis/report.hpp"
#include "app/commands.hpp"
#include "app/common.hpp"
#include "core/dtype.hpp"

namespace convlab::app {
namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

void print_help(std::ostream& out) {
  out << "usage: convlab waterline NETWORK [--machine NAME] [--probe FILE] [--batch N]\n"
         "                         [--dtype fp16|bf16|fp32] [--block-fusion] [--json]\n"
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
         "--json          JSON instead of the table\n";
}

// Where `convlab probe` caches its JSON: $CONVLAB_PROBE_FILE, else probe.json
// beside the executable (core/probe.hpp).
std::string default_probe_path() {
  if (const char* env = std::getenv("CONVLAB_PROBE_FILE"); env && *env) return env;
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec || exe.empty()) return "probe.json";
  return (exe.parent_path() / "probe.json").string();
}

int run(const std::vector<std::string>& args) {
  const ParsedArgs parsed = parse_args(args,
                                       {{"--machine", true},
                                        {"--probe", true},
                                        {"--batch", true},
                                        {"--dtype", true},
                                        {"--block-fusion", false},
                                        {"--json", false}},
                                       "waterline");
  if (parsed.positional.empty())
    throw UsageError("`convlab waterline` needs a network (valid: " + joined(analysis::network_names()) + ")");
  if (parsed.positional.size() > 1)
    throw UsageError("`convlab waterline` takes one network, got '" + parsed.positional[1] + "' as well");

  analysis::Network network;
  analysis::Machine machine;
  DType dtype = DType::f16;
  try {
    network = analysis::network_by_name(parsed.positional[0]);
    dtype = parse_dtype(parsed.get("--dtype", "fp16"));
    const std::string machine_name = parsed.get("--machine", "a5000");
    machine = analysis::machine_by_name(machine_name, parsed.get("--probe", default_probe_path()));
    machine.peak_ops(dtype);  // fail now if this machine has no rate for the dtype
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());  // unknown network, machine or dtype: the message lists the valid names
  }
  const int batch = int(parsed.get_int("--batch", 128, 1, 1 << 20));

  if (parsed.has("--block-fusion")) network = analysis::block_fused(network);
  const analysis::WaterlineReport report = analysis::waterline(network, machine, batch, dtype);
  std::cout << (parsed.has("--json") ? analysis::waterline_json(report) : analysis::waterline_table(report));
  return 0;
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
