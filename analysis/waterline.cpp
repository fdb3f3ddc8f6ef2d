// analysis/waterline.cpp — the performance models of waterline.hpp. Each
// function is the equation it names, written out; nothing is fitted.
#include "analysis/waterline.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "ops/conv2d.hpp"

namespace convlab::analysis {

namespace {
void check_roof(const Roof& roof) {
  if (!(roof.peak_ops_per_s > 0) || !(roof.bytes_per_s > 0))
    throw std::invalid_argument("roofline: peak throughput and bandwidth must be positive");
}
}  // namespace

Roof roof_of(const Machine& machine, DType dtype) {
  Roof r{machine.peak_ops(dtype), machine.bandwidth_bytes_per_s};
  check_roof(r);
  return r;
}

// Eq. 10: R_max = min(R, B · n/b).
double attainable_ops_per_s(double ops, double bytes, const Roof& roof) {
  check_roof(roof);
  if (!(bytes > 0)) return roof.peak_ops_per_s;  // no traffic: only arithmetic limits it
  return std::min(roof.peak_ops_per_s, roof.bytes_per_s * ops / bytes);
}

// Eq. 11: t_min = n / min(R, B·n/b), written as max(n/R, b/B) so that a kernel
// with no counted OPs still takes the time of its data movement.
double roofline_time(double ops, double bytes, const Roof& roof) {
  check_roof(roof);
  return std::max(ops / roof.peak_ops_per_s, bytes / roof.bytes_per_s);
}

double roofline_time(double ops, double bytes, const Machine& machine, DType dtype) {
  return roofline_time(ops, bytes, roof_of(machine, dtype));
}

bool above_waterline(double ops, double bytes, const Roof& roof) {
  return ops / roof.peak_ops_per_s >= bytes / roof.bytes_per_s;  // n/b >= R/B without dividing by b
}

// Eq. 10 and the ridge for one measured kernel; the classification is
// above_waterline's, so a kernel is memory-bound here exactly where the
// waterline report says so.
RooflinePoint roofline_point(double achieved_ops_per_s, double ops, double bytes, const Roof& roof) {
  RooflinePoint p;
  p.ridge = roof.op_byte();
  p.attainable = attainable_ops_per_s(ops, bytes, roof);
  p.pct_of_attainable = 100.0 * achieved_ops_per_s / p.attainable;
  p.memory_bound = !above_waterline(ops, bytes, roof);
  return p;
}

// The roof in OP/s and bytes/s, as everywhere in this file; the programs' GFLOP/s
// and GB/s in and out.
KernelRates kernel_rates(double ops, double bytes, double seconds, double peak_gflops, double peak_gbs) {
  KernelRates r;
  if (bytes > 0) r.intensity = ops / bytes;
  const double ops_per_s = seconds > 0 ? ops / seconds : 0.0;
  if (seconds > 0) {
    r.gflops = ops_per_s / 1e9;
    r.gbs = bytes / seconds / 1e9;
  }
  if (peak_gflops > 0 && r.gflops > 0) r.pct_peak = 100 * r.gflops / peak_gflops;
  if (peak_gbs > 0 && r.gbs > 0) r.pct_bandwidth = 100 * r.gbs / peak_gbs;
  if (peak_gflops > 0 && peak_gbs > 0) {  // the roofline of the shape, whether or not it was timed
    const RooflinePoint p = roofline_point(ops_per_s, ops, bytes, {peak_gflops * 1e9, peak_gbs * 1e9});
    r.attainable_gflops = p.attainable / 1e9;
    if (r.gflops > 0) r.pct_roofline = p.pct_of_attainable;
  }
  return r;
}

// Eq. 12: T_min = Σ_i t_i.
double waterline_time(const std::vector<KernelWork>& kernels, const Roof& roof) {
  double sum = 0;
  for (const KernelWork& k : kernels) sum += roofline_time(k.ops, k.bytes, roof);
  return sum;
}

// Eq. 13–14: C_max = (N / R) / T_min.
double waterline_efficiency(const std::vector<KernelWork>& kernels, const Roof& roof) {
  double total_ops = 0;
  for (const KernelWork& k : kernels) total_ops += k.ops;
  const double t_min = waterline_time(kernels, roof);
  return t_min > 0 ? (total_ops / roof.peak_ops_per_s) / t_min : 0.0;
}

// Eq. 29: Σ n_i / Σ b_i.
double mediant_intensity(const std::vector<KernelWork>& kernels) {
  double ops = 0, bytes = 0;
  for (const KernelWork& k : kernels) ops += k.ops, bytes += k.bytes;
  return bytes > 0 ? ops / bytes : 0.0;
}

double mediant_roofline_efficiency(const std::vector<KernelWork>& kernels, const Roof& roof) {
  check_roof(roof);
  return std::min(1.0, roof.bytes_per_s * mediant_intensity(kernels) / roof.peak_ops_per_s);
}

std::vector<KernelWork> kernel_work(const Network& network) {
  std::vector<KernelWork> work;
  work.reserve(network.layers.size());
  for (const Layer& l : network.layers) work.push_back({l.ops(), l.bytes});
  return work;
}

WaterlineReport waterline(const Network& network, const Machine& machine, int batch, DType dtype) {
  WaterlineReport r;
  r.network = at_batch(network, batch, double(dtype_size(dtype)));
  r.machine = machine;
  r.dtype = dtype;
  r.roof = roof_of(machine, dtype);
  for (const Layer& l : r.network.layers) {
    KernelTime k;
    k.time_s = roofline_time(l.ops(), l.bytes, r.roof);
    k.compute_bound = above_waterline(l.ops(), l.bytes, r.roof);
    r.kernels.push_back(k);
    r.total_ops += l.ops();
    r.total_bytes += l.bytes;
    r.min_time_s += k.time_s;
    if (!k.compute_bound) {
      r.memory_bound_time_s += k.time_s;
      ++r.memory_bound_kernels;
    }
  }
  r.ideal_time_s = r.total_ops / r.roof.peak_ops_per_s;
  r.max_efficiency = r.min_time_s > 0 ? r.ideal_time_s / r.min_time_s : 0.0;
  r.mediant_intensity = r.total_bytes > 0 ? r.total_ops / r.total_bytes : 0.0;
  r.mediant_time_s = roofline_time(r.total_ops, r.total_bytes, r.roof);
  r.mediant_efficiency = r.mediant_time_s > 0 ? r.ideal_time_s / r.mediant_time_s : 0.0;
  return r;
}

std::vector<EfficiencyPoint> efficiency_vs_opbyte(const Network& network, const std::vector<double>& op_byte_ratios) {
  const std::vector<KernelWork> work = kernel_work(network);
  std::vector<EfficiencyPoint> points;
  for (const double ratio : op_byte_ratios) {
    if (!(ratio > 0)) throw std::invalid_argument("efficiency_vs_opbyte: op:byte ratios must be positive");
    const Roof roof{ratio, 1.0};  // R = ratio OP/s, B = 1 byte/s: efficiencies depend on R/B only
    points.push_back({ratio, waterline_efficiency(work, roof), mediant_roofline_efficiency(work, roof)});
  }
  return points;
}

std::vector<double> log_spaced(double lo, double hi, int n) {
  if (!(lo > 0) || !(hi >= lo) || n < 1) throw std::invalid_argument("log_spaced: need 0 < lo <= hi and n >= 1");
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(n == 1 ? lo : lo * std::pow(hi / lo, double(i) / (n - 1)));
  return v;
}

const char* conv_kind_name(ConvKind kind) {
  switch (kind) {
    case ConvKind::dense3x3: return "dense 3x3";
    case ConvKind::grouped3x3: return "grouped 3x3";
    case ConvKind::depthwise3x3: return "depthwise 3x3";
    case ConvKind::pointwise: return "pointwise";
  }
  return "?";
}

std::vector<IntensityPoint> conv_intensity_vs_channels(ConvKind kind, const std::vector<int>& channels,
                                                        double bytes_per_element, int group_width,
                                                        int pointwise_expansion, int N, int H, int W) {
  std::vector<IntensityPoint> points;
  for (const int C : channels) {
    ConvProblem p;
    p.N = N, p.H = H, p.W = W, p.C = C, p.K = C;
    p.R = p.S = 3, p.pad = 1, p.stride = 1, p.groups = 1;
    switch (kind) {
      case ConvKind::dense3x3: break;
      case ConvKind::grouped3x3: p.groups = C / std::max(1, group_width); break;
      case ConvKind::depthwise3x3: p.groups = C; break;
      case ConvKind::pointwise:
        p.K = pointwise_expansion * C;
        p.R = p.S = 1, p.pad = 0;
        break;
    }
    if (!p.valid() || (kind == ConvKind::grouped3x3 && C % group_width != 0))
      throw std::invalid_argument(std::string("conv_intensity_vs_channels: ") + conv_kind_name(kind) +
                                  " with C = " + std::to_string(C) + " is not a valid conv");
    IntensityPoint pt;
    pt.channels = C;
    pt.out_channels = p.K;
    // Eq. 22–24 with the bias: n = 2·NHWK·TRS + K, b = (NHWK + NHWC + KTRS + K) elements.
    const double ops = p.flops() + p.K;
    const double bytes = (p.input_elems() + p.output_elems() + p.weight_elems() + p.K) * bytes_per_element;
    pt.exact = ops / bytes;
    // Eq. 24's last line, scaled from its 2-byte form to bytes_per_element: (2/bpe)·TRS/(1 + C/K).
    pt.approx = (2.0 / bytes_per_element) * double(p.reduction_depth()) / (1.0 + double(p.C) / p.K);
    points.push_back(pt);
  }
  return points;
}

double ideal_latency(double ops, const Machine& machine, DType dtype) { return ops / machine.peak_ops(dtype); }

double actual_throughput(double ops, double measured_s) {
  if (!(measured_s > 0)) throw std::invalid_argument("actual_throughput: the measured latency must be positive");
  return ops / measured_s;
}

double computational_efficiency(double ops, double measured_s, const Machine& machine, DType dtype) {
  return actual_throughput(ops, measured_s) / machine.peak_ops(dtype);
}

EfficiencyGap efficiency_gap(double ops, double measured_s, const Machine& machine, DType dtype, double accuracy) {
  EfficiencyGap g;
  g.ops = ops;
  g.ideal_s = ideal_latency(ops, machine, dtype);
  g.actual_s = measured_s;
  g.actual_ops_per_s = actual_throughput(ops, measured_s);
  g.efficiency = computational_efficiency(ops, measured_s, machine, dtype);
  g.log10_gap = g.efficiency > 0 ? -std::log10(g.efficiency) : 0.0;
  g.accuracy = accuracy;
  return g;
}

EfficiencyGap efficiency_gap(const Network& network, int batch, double measured_s, const Machine& machine,
                             DType dtype, double accuracy) {
  const Network at = at_batch(network, batch, double(dtype_size(dtype)));
  return efficiency_gap(at.total_ops(), measured_s, machine, dtype, accuracy);
}

}  // namespace convlab::analysis
