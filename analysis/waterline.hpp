// analysis/waterline.hpp — roofline for one kernel, waterline for a sequence
// of kernels, mediant operational intensity, and the efficiency-gap measures
// (Lavin 2024, Eq. 1–14 and 24–29).
//
// Units throughout: OPs (one MAC = 2 OPs), bytes, seconds, OP/s, bytes/s.
//
//   roofline (Eq. 10–11)  one kernel with n OPs and b bytes attains
//                         min(R, B·n/b) OP/s, so it takes at least
//                         t = n / min(R, B·n/b) = max(n/R, b/B) seconds.
//                         The max() form is used: it also covers kernels with
//                         no counted OPs (pooling, element-wise), whose time
//                         is pure data movement b/B.
//   waterline (Eq. 12–14) kernels run one after another, so their minimum
//                         times add: T_min = Σ t_i. The best computational
//                         efficiency is C_max = (N/R) / T_min, N = Σ n_i.
//                         A kernel whose intensity n/b reaches the machine's
//                         op:byte ratio R/B is "above the waterline"
//                         (compute-bound); below it, it is memory-bound.
//   mediant (Eq. 29)      Σ n_i / Σ b_i, the intensity of the whole sequence
//                         treated as one kernel; its roofline efficiency
//                         min(1, B·I/R) never falls below C_max, and equals
//                         it when every kernel sits on the same side of the
//                         waterline.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "analysis/machine.hpp"
#include "analysis/network.hpp"
#include "core/dtype.hpp"

namespace convlab::analysis {

// The two numbers of a roofline.
struct Roof {
  double peak_ops_per_s = 0;  // R
  double bytes_per_s = 0;     // B
  double op_byte() const { return peak_ops_per_s / bytes_per_s; }
};
Roof roof_of(const Machine& machine, DType dtype);

// The work of one kernel.
struct KernelWork {
  double ops = 0;
  double bytes = 0;
};

// ---- one kernel: roofline (Eq. 10–11) -----------------------------------------
double attainable_ops_per_s(double ops, double bytes, const Roof& roof);  // Eq. 10
double roofline_time(double ops, double bytes, const Roof& roof);          // Eq. 11
double roofline_time(double ops, double bytes, const Machine& machine, DType dtype = DType::f16);
bool above_waterline(double ops, double bytes, const Roof& roof);          // n/b >= R/B

// ---- one measured kernel under its roof: what the programs print ------------------------
// `convlab run`, the benchmarks' counters and `convlab roofline` all judge a
// measured kernel through these two functions, so the three cannot drift apart.

// Where an achieved rate stands on the roofline of a kernel with `ops` OPs
// and `bytes` bytes. Any units that agree with each other do: OP/s and bytes/s,
// or GFLOP/s and GB/s (`convlab roofline`, which knows only the intensity I,
// passes ops = I, bytes = 1).
struct RooflinePoint {
  double ridge = 0;              // R/B: below this intensity a kernel is memory-bound
  double attainable = 0;         // Eq. 10: min(R, B·ops/bytes), in the units of R
  double pct_of_attainable = 0;  // 100 · achieved / attainable
  bool memory_bound = false;     // below the waterline (not above_waterline)
};
RooflinePoint roofline_point(double achieved_ops_per_s, double ops, double bytes, const Roof& roof);

// A kernel that did `ops` OPs on `bytes` compulsory bytes in `seconds`, against
// the peaks `peak_gflops` and `peak_gbs` (the units every program prints). A
// number that cannot be formed is NaN: a rate without a time (seconds 0: not
// timed), the intensity without bytes, a percentage without its peak or of a
// zero rate, the roofline without both peaks. Each program shows NaN its own
// way (`convlab run`: "-" and null; benchmark counters: 0 or no counter).
struct KernelRates {
  double gflops = NAN, gbs = NAN;                      // achieved: ops / seconds, bytes / seconds
  double intensity = NAN;                              // ops / bytes, OPs per compulsory byte
  double pct_peak = NAN, pct_bandwidth = NAN;          // 100 · achieved / peak
  double attainable_gflops = NAN, pct_roofline = NAN;  // Eq. 10 for this shape, and the share reached
};
KernelRates kernel_rates(double ops, double bytes, double seconds, double peak_gflops, double peak_gbs);

// ---- a sequence of kernels: waterline (Eq. 12–14) and mediant (Eq. 29) -----------
double waterline_time(const std::vector<KernelWork>& kernels, const Roof& roof);        // T_min, Eq. 12
double waterline_efficiency(const std::vector<KernelWork>& kernels, const Roof& roof);  // C_max, Eq. 13
double mediant_intensity(const std::vector<KernelWork>& kernels);                       // Eq. 29
// Roofline applied to the whole sequence at the mediant intensity:
// min(1, B·I_mediant / R). An overestimate of C_max for mixed sequences.
double mediant_roofline_efficiency(const std::vector<KernelWork>& kernels, const Roof& roof);

std::vector<KernelWork> kernel_work(const Network& network);  // one entry per layer, in order

// ---- a network on a machine ----------------------------------------------------------
struct KernelTime {
  double time_s = 0;         // Eq. 11
  bool compute_bound = false; // above the waterline
};

struct WaterlineReport {
  Network network;           // at the requested batch and element size
  Machine machine;
  DType dtype = DType::f16;
  Roof roof;
  std::vector<KernelTime> kernels;  // parallel to network.layers

  double total_ops = 0;             // N, Eq. 14
  double total_bytes = 0;
  double ideal_time_s = 0;          // N / R, Eq. 1
  double min_time_s = 0;            // T_min, Eq. 12
  double max_efficiency = 0;        // C_max, Eq. 13
  double memory_bound_time_s = 0;   // the part of T_min spent below the waterline
  int memory_bound_kernels = 0;
  double mediant_intensity = 0;     // Eq. 29
  double mediant_time_s = 0;        // roofline time of the sequence as one kernel
  double mediant_efficiency = 0;    // roofline estimate from the mediant
  double efficiency_gap() const { return mediant_efficiency - max_efficiency; }  // ≥ 0
};

// The network rebuilt at `batch` with dtype_size(dtype) bytes per element,
// every layer timed on the roof for `dtype`.
WaterlineReport waterline(const Network& network, const Machine& machine, int batch = 128,
                          DType dtype = DType::f16);

// ---- Figure 4: attainable efficiency against the machine's op:byte ratio ---------------
struct EfficiencyPoint {
  double op_byte = 0;
  double waterline_efficiency = 0;  // C_max
  double mediant_efficiency = 0;    // roofline on the mediant intensity
};
// Uses the network's own batch and element size (use at_batch first: the
// paper uses batch 128, 2 bytes). Only the ratio R/B matters.
std::vector<EfficiencyPoint> efficiency_vs_opbyte(const Network& network, const std::vector<double>& op_byte_ratios);
// n points spaced evenly in log between lo and hi (inclusive).
std::vector<double> log_spaced(double lo, double hi, int n);

// ---- Figure 2(e): conv operational intensity against channel count ----------------------
enum class ConvKind {
  dense3x3,      // T = C, K = C
  grouped3x3,    // T = group_width, K = C
  depthwise3x3,  // T = 1, K = C
  pointwise,     // 1x1, K = expansion · C
};
const char* conv_kind_name(ConvKind kind);

struct IntensityPoint {
  int channels = 0;      // C
  int out_channels = 0;  // K
  double exact = 0;      // Eq. 24, first line (bias included), OPs per byte
  double approx = 0;     // Eq. 24, last line: T·R·S / (1 + C/K) with 2-byte elements
};
// N·H·W defaults to 128 · 56 · 56 (large, as Eq. 24's approximation assumes).
std::vector<IntensityPoint> conv_intensity_vs_channels(ConvKind kind, const std::vector<int>& channels,
                                                        double bytes_per_element = 2.0, int group_width = 8,
                                                        int pointwise_expansion = 4, int N = 128, int H = 56,
                                                        int W = 56);

// ---- efficiency gap for measured latencies (Eq. 1, 3, 7, 8) --------------------------------
double ideal_latency(double ops, const Machine& machine, DType dtype = DType::f16);  // Eq. 1: n / R
double actual_throughput(double ops, double measured_s);                           // Eq. 3: n / t_a
double computational_efficiency(double ops, double measured_s, const Machine& machine,
                                DType dtype = DType::f16);                          // Eq. 7 = t_i / t_a (Eq. 8)

struct EfficiencyGap {
  double ops = 0;
  double ideal_s = 0;           // t_i, Eq. 1
  double actual_s = 0;          // t_a, measured
  double actual_ops_per_s = 0;  // R_a, Eq. 3
  double efficiency = 0;        // C, Eq. 7
  double log10_gap = 0;         // log10 t_a − log10 t_i = −log10 C, the gap's width (Eq. 9)
  double accuracy = 0;          // E_m(n) = E_a(t_a) (Eq. 4–5): the point (t_a, accuracy) when given
};
EfficiencyGap efficiency_gap(double ops, double measured_s, const Machine& machine, DType dtype = DType::f16,
                             double accuracy = 0);
// For a network at `batch` images per measured run.
EfficiencyGap efficiency_gap(const Network& network, int batch, double measured_s, const Machine& machine,
                             DType dtype = DType::f16, double accuracy = 0);

}  // namespace convlab::analysis
