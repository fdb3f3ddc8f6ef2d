// app/cmd_run.cpp — `convlab run`: check and time one variant (or every
// variant of an operation) on a shape, or run one on the user's own .npy
// tensors and write its output, so the answer can be checked in NumPy too.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <limits>

#include "app/commands.hpp"
#include "app/common.hpp"
#include "app/measure.hpp"
#include "core/load.hpp"
#include "core/npy.hpp"
#include "core/probe.hpp"

namespace convlab::app {
namespace {

constexpr uint64_t kDefaultSeed = 1;

void print_help(std::ostream& out) {
  out << "usage: convlab run TARGET [--shape SPEC] [--seed N] [--reps N] [--out Y.npy]\n"
         "       convlab run TARGET --in A.npy,B.npy [--shape OPTIONS] [--out Y.npy] [--reps N]\n"
         "\n"
         "Checks TARGET against the double-precision reference and times it: one line per\n"
         "variant with the shape, ok/FAIL, relative L2 error, median time and its spread\n"
         "(coefficient of variation of the repetitions; 'noisy' above 5%, '(cap)' when the\n"
         "median had not settled within 2% at the cap), GFLOP/s, GB/s\n"
         "(compulsory bytes / time), % of this machine's measured peak, operational\n"
         "intensity (flop per compulsory byte), the roofline's attainable rate for that\n"
         "intensity (min(peak, intensity x bandwidth), Eq. 10) and the % of it reached,\n"
         "and workspace.\n"
         "\n"
         "TARGET   OP/DEVICE/NAME  one variant, e.g. conv2d/cpu/01b_openmp\n"
         "         OP/DEVICE       every variant of OP on DEVICE (cpu or gpu), e.g. conv2d/cpu\n"
         "         OP              every variant of OP, e.g. conv2d\n"
         "\n"
         "--shape SPEC   the problem as key=value pairs; missing keys take the operation's\n"
         "               defaults. Without it: the first of the operation's tour shapes\n"
         "               for the variant's device that it supports.\n"
         "--seed N       seed of the random inputs (default 1; printed with any failure)\n"
         "--reps N       timed repetitions; default: at least 3 and 100 ms, then doubled until\n"
         "               the median moves less than 2% (or 1 s is spent); 0: check only\n"
         "--in FILES     comma-separated .npy inputs (float32 '<f4' or float16 '<f2', C order)\n"
         "               in the operation's order and layouts. The shape comes from the files;\n"
         "               --shape then gives only what they cannot say (conv2d: stride=2,pad=1;\n"
         "               groups = C / w's last dimension). With OP or OP/DEVICE, the first\n"
         "               variant in lesson order that supports the inputs is used (on the CPU\n"
         "               unless DEVICE says gpu).\n"
         "--out FILE     write the first output as .npy (needs --in or a single variant)\n"
         "\n"
         "Operations, their inputs, and their full default spec:\n";
  for (const OpHandle* op : all_ops()) {
    const std::string spec = op->canonical("");
    out << "  " << op->name() << ":";
    for (const TensorSpec& t : op->input_specs(spec)) out << " " << t.name << " [" << t.layout << "]";
    out << "\n      " << spec << "\n";
  }
  out << "\n"
         "Examples:\n"
         "  convlab run conv2d/cpu/01b_openmp --shape N=8,H=28,W=28,C=128,K=128\n"
         "  convlab run conv2d --in x.npy,w.npy --shape stride=2,pad=1 --out y.npy\n"
         "\n"
         "Exit status: 0 all checks passed, 1 a check failed or a run could not be done,\n"
         "2 a usage error (unknown variant, malformed --shape, wrong number of --in files).\n";
}

Tensor host_copy(const Tensor& t) {
  Tensor copy(t.shape(), t.dtype());
  std::memcpy(copy.data(), t.data(), t.bytes());
  return copy;
}

// --out is checked before any work, so a long run cannot end in "cannot open":
// an existing path must be a regular, writable file; a new one needs an
// existing, writable folder.
void check_output_path(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (fs::exists(st)) {
    if (fs::is_directory(st))
      throw UsageError("--out '" + path + "' is a directory; give a file name, e.g. " +
                       (fs::path(path) / "y.npy").string());
    if (!fs::is_regular_file(st))
      throw UsageError("--out '" + path + "' exists and is not a regular file (the output is written as a .npy file)");
    if (::access(path.c_str(), W_OK) != 0)
      throw std::runtime_error("--out '" + path + "': cannot write it (" + std::strerror(errno) + ")");
    return;
  }
  fs::path folder = fs::path(path).parent_path();
  if (folder.empty()) folder = ".";
  if (!fs::is_directory(folder, ec))
    throw UsageError("--out '" + path + "': the folder '" + folder.string() + "' does not exist");
  if (::access(folder.c_str(), W_OK) != 0)
    throw std::runtime_error("--out '" + path + "': cannot create a file in '" + folder.string() + "' (" +
                             std::strerror(errno) + ")");
}

// The reference check needs finite inputs: a NaN or Inf in a file is the
// file's problem, not a failure of the variant that would run on it.
void require_finite(const Tensor& t, const std::string& path) {
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < t.numel(); ++i)
    if (!std::isfinite(t.get(i))) {
      if (first < 0) first = i;
      ++bad;
    }
  if (bad == 0) return;
  const double v = t.get(first);
  throw SpecError(path + ": holds " + std::to_string(bad) + " non-finite value(s), the first (" +
                  (std::isnan(v) ? std::string("NaN") : v > 0 ? "+Inf" : "-Inf") + ") at flat index " +
                  std::to_string(first) + "; convlab runs and checks variants on finite inputs only "
                  "(in NumPy: np.isfinite(a).all())");
}

std::string describe(const Tensor& t) { return shape_string(t.shape()) + " " + dtype_name(t.dtype()); }

StreamingTable make_table(std::size_t id_width, std::size_t spec_width) {
  return StreamingTable(std::cout, {{"variant", int(id_width)},
                                    {"shape", int(spec_width)},
                                    {"check", 5},
                                    {"rel L2", 7, true},
                                    {"median ms", 9, true},
                                    {"spread", 6, true},
                                    {"GFLOP/s", 7, true},
                                    {"GB/s", 6, true},
                                    {"% peak", 6, true},
                                    {"flop/B", 6, true},
                                    {"roof GF/s", 9, true},
                                    {"% roof", 6, true},
                                    {"workspace", 9, true}});
}

void print_row(StreamingTable& table, const Measurement& m) {
  const std::vector<std::string> lead = {m.variant.id(), m.spec, status_name(m.status)};
  if (m.status == Status::skipped || m.status == Status::unsupported || m.status == Status::error) {
    table.print_row(lead, m.message);
    return;
  }
  std::vector<std::string> cells = lead;
  for (const std::string& cell :
       {format_sci(m.rel_l2), format_ms(m.median_ms), spread_cell(m), format_rate(m.rates.gflops), format_rate(m.rates.gbs),
        format_percent(m.rates.pct_peak), format_fixed(m.rates.intensity, 1), format_rate(m.rates.attainable_gflops),
        format_percent(m.rates.pct_roofline), format_bytes(double(m.workspace_bytes))})
    cells.push_back(cell);
  table.print_row(cells);
  if (m.status == Status::fail)
    table.print_note(m.message + (m.seed ? " (inputs: --seed " + std::to_string(m.seed) + ")" : ""));
  else if (m.noisy)
    table.print_note("the repetitions disagree (" + format_ms(m.min_ms) + " to " + format_ms(m.max_ms) + " ms over " +
                     std::to_string(m.reps) + " runs): the median is not to be trusted");
}

// Before timing: one line if the cores look busy, one per sign that the
// cached probe was disturbed. The numbers themselves are left as measured.
void print_load_notes() {
  if (const std::string note = busy_note(sample_load()); !note.empty()) std::cout << note << "\n";
  for (const std::string& note : probe_notes(machine_peaks())) std::cout << note << "\n";
}

bool failed(const Measurement& m) { return m.status == Status::fail || m.status == Status::error; }

RepetitionPolicy repetition_policy(const ParsedArgs& args) {
  RepetitionPolicy p;
  p.exact_reps = int(args.get_int("--reps", -1, 0, 1000000));
  return p;
}

// Random inputs: every variant of the target on --shape or its device's tour shape.
int run_on_shapes(const Target& target, const ParsedArgs& args) {
  const uint64_t seed = uint64_t(args.get_int("--seed", kDefaultSeed, 0, std::numeric_limits<int64_t>::max()));
  const RepetitionPolicy reps = repetition_policy(args);
  if (args.has("--out") && !target.single)
    throw UsageError("--out writes one output: name a single variant (OP/DEVICE/NAME) or use --in");

  // The problem of each variant, all parsed before anything runs (a bad --shape is a usage error).
  std::vector<std::string> specs;
  const std::string given = args.has("--shape") ? target.op->canonical(args.get("--shape")) : "";
  if (!given.empty()) target.op->check_sizes(given);  // tensors too large for any variant: one error, no table
  std::size_t id_width = 7, spec_width = 5;
  for (const VariantRef& v : target.variants) {
    std::string spec = given;
    if (spec.empty()) {
      spec = tour_shape_for(v);
      if (spec.empty()) throw UsageError(v.info.id() + " has no tour shape: give one with --shape");
    }
    specs.push_back(spec);
    id_width = std::max(id_width, v.info.id().size());
    spec_width = std::max(spec_width, spec.size());
  }
  // One named variant: a missing GPU or an unsupported shape is an error
  // (raised before any output), and --out needs the case afterwards.
  std::unique_ptr<ICase> single_case;
  if (target.single) single_case = target.op->make_case(target.variants[0].index, specs[0], seed);
  if (reps.timing_wanted()) print_load_notes();  // peaks measured (once) before the table, not in the middle of it

  StreamingTable table = make_table(id_width, spec_width);
  table.print_header();
  bool any_failed = false;
  for (std::size_t i = 0; i < target.variants.size(); ++i) {
    const VariantRef& v = target.variants[i];
    if (target.single) {
      ICase* c = single_case.get();
      Measurement m;
      m.seed = seed;
      check_and_time(*c, reps, m);
      print_row(table, m);
      any_failed |= failed(m);
      if (args.has("--out")) {
        const std::string out = args.get("--out");
        write_npy(out, c->host_outputs().at(0));
        std::cout << "wrote " << out << ": " << c->output_specs().at(0).name << " "
                  << shape_string(c->output_specs().at(0).shape) << " " << dtype_name(c->output_specs().at(0).dtype)
                  << " (" << c->output_specs().at(0).layout << ")\n";
      }
    } else {
      const Measurement m = measure_variant(v, specs[i], seed, reps, false);
      print_row(table, m);
      any_failed |= failed(m);
    }
  }
  return any_failed ? 1 : 0;
}

// The user's tensors: one variant (named, or the first that supports them).
int run_on_files(const Target& target, const ParsedArgs& args) {
  if (args.has("--seed")) throw UsageError("--seed has no meaning with --in: the inputs come from the files");
  const RepetitionPolicy reps = repetition_policy(args);
  const std::vector<std::string> paths = split(args.get("--in"), ',');
  for (const std::string& p : paths)
    if (p.empty()) throw UsageError("--in wants comma-separated .npy paths, got '" + args.get("--in") + "'");

  const std::vector<TensorSpec> wanted = target.op->input_specs(target.op->canonical(""));
  if (!target.op->accepts_input_count(paths.size())) {
    std::string names;
    for (const TensorSpec& t : wanted) names += (names.empty() ? "" : ", ") + t.name + " [" + t.layout + "]";
    throw UsageError(target.op->name() + " takes " + std::to_string(wanted.size()) + " input files (" + names +
                     "), got " + std::to_string(paths.size()));
  }
  std::vector<Tensor> inputs;
  for (const std::string& p : paths) {
    inputs.push_back(read_npy(p));
    require_finite(inputs.back(), p);
  }
  const std::string options = args.get("--shape");

  // The named variant, or the candidates of the op on the CPU (or the given device) in lesson order.
  std::vector<VariantRef> candidates;
  for (const VariantRef& v : target.variants)
    if (target.single || v.info.device == (target.device_given ? target.device : Device::cpu)) candidates.push_back(v);
  if (candidates.empty())
    throw UsageError(target.op->name() + " has no " + device_name(target.device_given ? target.device : Device::cpu) +
                     " variant to run on --in files (see `convlab list`)");

  std::unique_ptr<ICase> c;
  std::string first_refusal, others;
  for (const VariantRef& v : candidates) {
    std::vector<Tensor> copies;
    for (const Tensor& t : inputs) copies.push_back(host_copy(t));
    try {
      c = v.op->make_case_from(v.index, std::move(copies), options);
      break;
    } catch (const Unsupported& e) {
      if (target.single) throw;
      if (first_refusal.empty()) first_refusal = e.what();
      else others += (others.empty() ? "" : ", ") + v.info.name;
    }
  }
  if (!c) throw Unsupported(first_refusal + (others.empty() ? "" : "; nor do " + others));

  std::cout << c->variant().id();
  if (!target.single) std::cout << " (the first " << device_name(c->variant().device) << " variant in lesson order that supports these inputs)";
  std::cout << " on";
  const std::vector<TensorSpec> in_specs = target.op->input_specs(c->spec());
  for (std::size_t i = 0; i < paths.size(); ++i)
    std::cout << (i ? ", " : " ") << in_specs[i].name << " = " << paths[i] << " (" << describe(inputs[i]) << ", "
              << in_specs[i].layout << ")";
  std::cout << "\n\n";

  if (reps.timing_wanted()) print_load_notes();
  Measurement m;
  check_and_time(*c, reps, m);
  StreamingTable table = make_table(m.variant.id().size(), m.spec.size());
  table.print_header();
  print_row(table, m);
  if (args.has("--out")) {
    const std::string out = args.get("--out");
    const Tensor y = std::move(c->host_outputs().at(0));
    write_npy(out, y);
    std::cout << "\nwrote " << out << ": " << c->output_specs().at(0).name << " " << describe(y) << " ("
              << c->output_specs().at(0).layout << ")\n";
  }
  return failed(m) ? 1 : 0;
}

int run(const std::vector<std::string>& args) {
  const ParsedArgs parsed = parse_args(
      args, {{"--shape", true}, {"--seed", true}, {"--in", true}, {"--out", true}, {"--reps", true}}, "run");
  if (parsed.positional.empty()) throw UsageError("`convlab run` needs a variant or operation (see `convlab list`)");
  if (parsed.positional.size() > 1)
    throw UsageError("`convlab run` takes one variant or operation, got '" + parsed.positional[0] + "' and '" +
                     parsed.positional[1] + "'");
  const Target target = resolve_target(parsed.positional[0]);
  if (parsed.has("--out")) check_output_path(parsed.get("--out"));
  return parsed.has("--in") ? run_on_files(target, parsed) : run_on_shapes(target, parsed);
}

}  // namespace

const Command run_command{"run", "check and time a variant or an operation, on a shape or on your .npy files",
                          print_help, run};

}  // namespace convlab::app
