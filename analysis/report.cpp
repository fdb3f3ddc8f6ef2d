// analysis/report.cpp — formatting of a WaterlineReport and of the two sweeps
// (Figures 4 and 2(e)); no arithmetic here beyond unit conversions and the
// ratios of numbers that all come from waterline.cpp.
#include "analysis/report.hpp"

#include <cstdarg>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/json.hpp"

namespace convlab::analysis {

namespace {

std::string format(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  std::string out(std::size_t(n > 0 ? n : 0), '\0');
  if (n > 0) std::vsnprintf(out.data(), out.size() + 1, fmt, args);
  va_end(args);
  return out;
}

// "3x3/2 g32": kernel extent, stride when not 1, groups when not 1.
std::string kernel_string(const Layer& l) {
  if (l.type == LayerType::fused_block) return l.stride > 1 ? format("block/%d", l.stride) : "block";
  if (l.type == LayerType::linear || l.type == LayerType::elementwise) return "-";
  std::string s = format("%dx%d", l.R, l.S);
  if (l.stride != 1) s += format("/%d", l.stride);
  if (l.groups != 1) s += format(" g%d", l.groups);
  return s;
}

// Every number of the reports: 10 significant digits, so the notebooks read back what was computed.
std::string number(double v) { return json::number(v, 10); }

std::string shape_json(const ActivationShape& s) { return format("[%d, %d, %d, %d]", s.N, s.H, s.W, s.C); }

// The "machine" object every document carries: the roof its numbers were computed on.
std::string machine_json(const Machine& machine, const Roof& roof) {
  return "{\"name\": " + json::quote(machine.name) + ", \"description\": " + json::quote(machine.description) +
         ", \"peak_ops_per_s\": " + number(roof.peak_ops_per_s) +
         ", \"bandwidth_bytes_per_s\": " + number(roof.bytes_per_s) + ", \"op_byte\": " + number(roof.op_byte()) +
         "}";
}

// T_min / t_a: the share of the attainable (waterline) speed that a measured run reached.
double share_of_attainable(const WaterlineReport& r, const EfficiencyGap& g) {
  return g.actual_s > 0 ? r.min_time_s / g.actual_s : 0.0;
}

}  // namespace

std::string waterline_table(const WaterlineReport& r, const EfficiencyGap* measured) {
  const Network& net = r.network;
  std::string out;
  out += format("waterline: %s on %s, batch %d, %s (%g bytes/element), input %dx%d\n", net.name.c_str(),
                r.machine.name.c_str(), net.batch, dtype_name(r.dtype), net.bytes_per_element, net.resolution,
                net.resolution);
  out += format("machine:   %s\n", r.machine.description.c_str());
  out += format("roof:      R = %.1f TOP/s, B = %.1f GB/s, op:byte waterline = %.1f OP/B\n\n",
                r.roof.peak_ops_per_s / 1e12, r.roof.bytes_per_s / 1e9, r.roof.op_byte());

  out += format("%4s  %-30s %-11s %-17s %-17s %-10s %10s %10s %8s %-6s %10s %6s\n", "#", "layer", "type", "input",
                "output", "kernel", "GOPs", "MB", "OP/B", "bound", "time us", "%T");
  for (std::size_t i = 0; i < net.layers.size(); ++i) {
    const Layer& l = net.layers[i];
    const KernelTime& k = r.kernels[i];
    out += format("%4zu  %-30s %-11s %-17s %-17s %-10s %10.3f %10.3f %8.1f %-6s %10.2f %6.2f\n", i,
                  l.name.c_str(), layer_type_name(l.type), shape_string(l.input).c_str(),
                  shape_string(l.output).c_str(), kernel_string(l).c_str(), l.ops() / 1e9, l.bytes / 1e6,
                  l.intensity(), k.compute_bound ? "above" : "below", k.time_s * 1e6,
                  r.min_time_s > 0 ? 100.0 * k.time_s / r.min_time_s : 0.0);
  }

  out += "\ntotals\n";
  out += format("  kernels                 %zu, %d below the waterline (%.1f%% of T_min)\n", net.layers.size(),
                r.memory_bound_kernels, r.min_time_s > 0 ? 100.0 * r.memory_bound_time_s / r.min_time_s : 0.0);
  out += format("  MACs                    %.4g G per image, %.4g G per batch\n", net.total_macs() / net.batch / 1e9,
                net.total_macs() / 1e9);
  out += format("  parameters              %.4g M\n", net.total_params() / 1e6);
  out += format("  OPs N (Eq. 14)          %.4g G\n", r.total_ops / 1e9);
  out += format("  DRAM bytes              %.4g MB\n", r.total_bytes / 1e6);
  out += format("  ideal time N/R (Eq. 1)  %.4f ms\n", r.ideal_time_s * 1e3);
  out += format("  T_min (Eq. 12)          %.4f ms\n", r.min_time_s * 1e3);
  out += format("  C_max (Eq. 13)          %.1f%%\n", 100.0 * r.max_efficiency);
  out += format("  mediant intensity       %.1f OP/B (Eq. 29; waterline %.1f)\n", r.mediant_intensity, r.roof.op_byte());
  out += format("  roofline on mediant     %.4f ms, efficiency %.1f%%\n", r.mediant_time_s * 1e3,
                100.0 * r.mediant_efficiency);
  out += format("  mediant overestimate    %.1f points of efficiency (%.2fx C_max)\n", 100.0 * r.efficiency_gap(),
                r.max_efficiency > 0 ? r.mediant_efficiency / r.max_efficiency : 0.0);
  if (measured) {
    const EfficiencyGap& g = *measured;
    out += "\nmeasured\n";
    out += format("  latency t_a             %.4f ms per batch of %d\n", g.actual_s * 1e3, net.batch);
    out += format("  throughput R_a (Eq. 3)  %.1f TOP/s\n", g.actual_ops_per_s / 1e12);
    out += format("  efficiency C (Eq. 7)    %.1f%% (t_i / t_a; C_max is %.1f%%)\n", 100.0 * g.efficiency,
                  100.0 * r.max_efficiency);
    out += format("  gap (Eq. 9)             %.3f decades of latency (t_a / t_i = %.1f)\n", g.log10_gap,
                  g.actual_s / g.ideal_s);
    out += format("  T_min / t_a             %.1f%% of the attainable speed\n", 100.0 * share_of_attainable(r, g));
  }
  return out;
}

std::string waterline_json(const WaterlineReport& r, const EfficiencyGap* measured) {
  const Network& net = r.network;
  std::string out = "{\n";
  out += "  \"kind\": \"waterline\",\n";
  out += "  \"network\": " + json::quote(net.name) + ",\n";
  out += format("  \"resolution\": %d,\n  \"batch\": %d,\n", net.resolution, net.batch);
  out += "  \"dtype\": " + json::quote(dtype_name(r.dtype)) + ",\n";
  out += "  \"bytes_per_element\": " + number(net.bytes_per_element) + ",\n";
  out += "  \"machine\": " + machine_json(r.machine, r.roof) + ",\n";
  out += "  \"layers\": [\n";
  for (std::size_t i = 0; i < net.layers.size(); ++i) {
    const Layer& l = net.layers[i];
    const KernelTime& k = r.kernels[i];
    out += "    {\"name\": " + json::quote(l.name) + ", \"type\": " + json::quote(layer_type_name(l.type)) +
           ", \"block\": " + json::quote(l.block) + ", \"input\": " + shape_json(l.input) +
           ", \"output\": " + shape_json(l.output) + format(", \"R\": %d, \"S\": %d, \"stride\": %d, \"groups\": %d", l.R, l.S, l.stride, l.groups) +
           ", \"macs\": " + number(l.macs) + ", \"params\": " + number(l.params) + ", \"ops\": " + number(l.ops()) +
           ", \"bytes\": " + number(l.bytes) + ", \"intensity\": " + number(l.intensity()) +
           ", \"above_waterline\": " + (k.compute_bound ? "true" : "false") + ", \"time_s\": " + number(k.time_s) +
           "}" + (i + 1 < net.layers.size() ? "," : "") + "\n";
  }
  out += "  ],\n";
  out += "  \"totals\": {\n";
  out += "    \"kernels\": " + std::to_string(net.layers.size()) + ",\n";
  out += "    \"memory_bound_kernels\": " + std::to_string(r.memory_bound_kernels) + ",\n";
  out += "    \"macs\": " + number(net.total_macs()) + ",\n";
  out += "    \"macs_per_image\": " + number(net.total_macs() / net.batch) + ",\n";
  out += "    \"params\": " + number(net.total_params()) + ",\n";
  out += "    \"ops\": " + number(r.total_ops) + ",\n";
  out += "    \"bytes\": " + number(r.total_bytes) + ",\n";
  out += "    \"ideal_time_s\": " + number(r.ideal_time_s) + ",\n";
  out += "    \"min_time_s\": " + number(r.min_time_s) + ",\n";
  out += "    \"memory_bound_time_s\": " + number(r.memory_bound_time_s) + ",\n";
  out += "    \"max_efficiency\": " + number(r.max_efficiency) + ",\n";
  out += "    \"mediant_intensity\": " + number(r.mediant_intensity) + ",\n";
  out += "    \"mediant_time_s\": " + number(r.mediant_time_s) + ",\n";
  out += "    \"mediant_efficiency\": " + number(r.mediant_efficiency) + ",\n";
  out += "    \"efficiency_gap\": " + number(r.efficiency_gap()) + "\n";
  out += "  }";
  if (measured) {
    const EfficiencyGap& g = *measured;
    out += ",\n  \"measured\": {\n";
    out += "    \"latency_s\": " + number(g.actual_s) + ",\n";
    out += "    \"ideal_s\": " + number(g.ideal_s) + ",\n";
    out += "    \"actual_ops_per_s\": " + number(g.actual_ops_per_s) + ",\n";
    out += "    \"efficiency\": " + number(g.efficiency) + ",\n";
    out += "    \"log10_gap\": " + number(g.log10_gap) + ",\n";
    out += "    \"share_of_attainable\": " + number(share_of_attainable(r, g)) + "\n";
    out += "  }";
  }
  out += "\n}\n";
  return out;
}

std::string waterline_table(const Network& network, const Machine& machine, int batch, DType dtype) {
  return waterline_table(waterline(network, machine, batch, dtype));
}

std::string waterline_json(const Network& network, const Machine& machine, int batch, DType dtype) {
  return waterline_json(waterline(network, machine, batch, dtype));
}

// ---- Figure 4 ------------------------------------------------------------------------------

namespace {

struct Sweep {
  Network network;      // at the requested batch and element size
  DType dtype = DType::f16;
  Machine machine;
  WaterlineReport at_machine;  // the marked point
  std::vector<EfficiencyPoint> points;
};

Sweep opbyte_sweep(const Network& network, const std::vector<double>& ratios, const Machine& machine, int batch,
                   DType dtype) {
  Sweep s;
  s.network = at_batch(network, batch, double(dtype_size(dtype)));
  s.dtype = dtype;
  s.machine = machine;
  s.at_machine = waterline(network, machine, batch, dtype);
  s.points = efficiency_vs_opbyte(s.network, ratios);
  return s;
}

}  // namespace

std::string opbyte_sweep_table(const Network& network, const std::vector<double>& op_byte_ratios,
                               const Machine& machine, int batch, DType dtype) {
  const Sweep s = opbyte_sweep(network, op_byte_ratios, machine, batch, dtype);
  const WaterlineReport& m = s.at_machine;
  std::string out;
  out += format("efficiency against op:byte: %s, batch %d, %s (%g bytes/element), %zu kernels\n",
                s.network.name.c_str(), s.network.batch, dtype_name(dtype), s.network.bytes_per_element,
                s.network.layers.size());
  out += format("mediant intensity %.1f OP/B (Eq. 29): the mediant roofline estimate is 100%% from there down\n",
                m.mediant_intensity);
  out += format("%s (op:byte %.1f): C_max %.1f%%, mediant estimate %.1f%%\n\n", machine.name.c_str(),
                m.roof.op_byte(), 100.0 * m.max_efficiency, 100.0 * m.mediant_efficiency);
  out += format("%12s %12s %12s %14s\n", "op:byte", "C_max %", "mediant %", "overestimate");
  for (const EfficiencyPoint& p : s.points)
    out += format("%12.1f %12.2f %12.2f %13.2fx\n", p.op_byte, 100.0 * p.waterline_efficiency,
                  100.0 * p.mediant_efficiency,
                  p.waterline_efficiency > 0 ? p.mediant_efficiency / p.waterline_efficiency : 0.0);
  return out;
}

std::string opbyte_sweep_json(const Network& network, const std::vector<double>& op_byte_ratios,
                              const Machine& machine, int batch, DType dtype) {
  const Sweep s = opbyte_sweep(network, op_byte_ratios, machine, batch, dtype);
  const WaterlineReport& m = s.at_machine;
  std::string out = "{\n";
  out += "  \"kind\": \"opbyte_sweep\",\n";
  out += "  \"network\": " + json::quote(s.network.name) + ",\n";
  out += format("  \"resolution\": %d,\n  \"batch\": %d,\n  \"kernels\": %zu,\n", s.network.resolution,
                s.network.batch, s.network.layers.size());
  out += "  \"dtype\": " + json::quote(dtype_name(dtype)) + ",\n";
  out += "  \"bytes_per_element\": " + number(s.network.bytes_per_element) + ",\n";
  out += "  \"mediant_intensity\": " + number(m.mediant_intensity) + ",\n";
  out += "  \"machine\": " + machine_json(machine, m.roof) + ",\n";
  out += "  \"at_machine\": {\"op_byte\": " + number(m.roof.op_byte()) +
         ", \"waterline_efficiency\": " + number(m.max_efficiency) +
         ", \"mediant_efficiency\": " + number(m.mediant_efficiency) + "},\n";
  out += "  \"points\": [\n";
  for (std::size_t i = 0; i < s.points.size(); ++i) {
    const EfficiencyPoint& p = s.points[i];
    out += "    {\"op_byte\": " + number(p.op_byte) + ", \"waterline_efficiency\": " +
           number(p.waterline_efficiency) + ", \"mediant_efficiency\": " + number(p.mediant_efficiency) + "}" +
           (i + 1 < s.points.size() ? "," : "") + "\n";
  }
  out += "  ]\n}\n";
  return out;
}

// ---- Figure 2(e) -----------------------------------------------------------------------------

namespace {

struct IntensitySeries {
  std::string label;      // "dense 3x3", "grouped 3x3, T = 8", ...
  std::string kind;       // conv_kind_name()
  int group_width = 0;    // T: channels per group (C for dense, 1 for depthwise)
  std::vector<IntensityPoint> points;
};

constexpr int kSweepHW = 56;  // H = W of every conv in the sweep (Eq. 24 assumes N·H·W large)

std::vector<IntensitySeries> intensity_series(const IntensitySweepSpec& spec) {
  if (spec.channels.empty()) throw std::invalid_argument("intensity against channels: no channel counts given");
  const double bpe = double(dtype_size(spec.dtype));
  const auto sweep = [&](ConvKind kind, int group_width) {
    return conv_intensity_vs_channels(kind, spec.channels, bpe, group_width, spec.pointwise_expansion, spec.batch,
                                      kSweepHW, kSweepHW);
  };
  std::vector<IntensitySeries> out;
  out.push_back({"dense 3x3", conv_kind_name(ConvKind::dense3x3), 0, sweep(ConvKind::dense3x3, 8)});
  for (const int t : spec.group_widths)
    out.push_back({format("grouped 3x3, T = %d", t), conv_kind_name(ConvKind::grouped3x3), t,
                   sweep(ConvKind::grouped3x3, t)});
  out.push_back({"depthwise 3x3", conv_kind_name(ConvKind::depthwise3x3), 1, sweep(ConvKind::depthwise3x3, 8)});
  out.push_back({format("pointwise, K = %dC", spec.pointwise_expansion), conv_kind_name(ConvKind::pointwise), 0,
                 sweep(ConvKind::pointwise, 8)});
  return out;
}

}  // namespace

std::string intensity_vs_channels_table(const IntensitySweepSpec& spec, const Machine& machine) {
  const std::vector<IntensitySeries> series = intensity_series(spec);
  const Roof roof = roof_of(machine, spec.dtype);
  std::string out;
  out += format("conv operational intensity (OP/B) against channels C: N x H x W = %d x %d x %d, %s\n", spec.batch,
                kSweepHW, kSweepHW, dtype_name(spec.dtype));
  out += "exact (Eq. 24, first line) and, in parentheses, T*R*S/(1 + C/K) (its last line)\n";
  out += format("%s op:byte waterline: %.1f OP/B\n\n", machine.name.c_str(), roof.op_byte());
  out += format("%6s", "C");
  for (const IntensitySeries& s : series) out += format("  %22s", s.label.c_str());
  out += "\n";
  for (std::size_t i = 0; i < spec.channels.size(); ++i) {
    out += format("%6d", spec.channels[i]);
    for (const IntensitySeries& s : series)
      out += format("  %22s", format("%.1f (%.1f)", s.points[i].exact, s.points[i].approx).c_str());
    out += "\n";
  }
  return out;
}

std::string intensity_vs_channels_json(const IntensitySweepSpec& spec, const Machine& machine) {
  const std::vector<IntensitySeries> series = intensity_series(spec);
  const Roof roof = roof_of(machine, spec.dtype);
  std::string out = "{\n";
  out += "  \"kind\": \"intensity_vs_channels\",\n";
  out += format("  \"N\": %d,\n  \"H\": %d,\n  \"W\": %d,\n  \"R\": 3,\n  \"S\": 3,\n", spec.batch, kSweepHW,
                kSweepHW);
  out += "  \"dtype\": " + json::quote(dtype_name(spec.dtype)) + ",\n";
  out += "  \"bytes_per_element\": " + number(double(dtype_size(spec.dtype))) + ",\n";
  out += format("  \"pointwise_expansion\": %d,\n", spec.pointwise_expansion);
  out += "  \"machine\": " + machine_json(machine, roof) + ",\n";
  out += "  \"series\": [\n";
  for (std::size_t s = 0; s < series.size(); ++s) {
    const IntensitySeries& ser = series[s];
    out += "    {\"label\": " + json::quote(ser.label) + ", \"kind\": " + json::quote(ser.kind) +
           format(", \"group_width\": %d, \"points\": [\n", ser.group_width);
    for (std::size_t i = 0; i < ser.points.size(); ++i) {
      const IntensityPoint& p = ser.points[i];
      out += format("      {\"channels\": %d, \"out_channels\": %d, ", p.channels, p.out_channels) +
             "\"exact\": " + number(p.exact) + ", \"approx\": " + number(p.approx) + "}" +
             (i + 1 < ser.points.size() ? "," : "") + "\n";
    }
    out += std::string("    ]}") + (s + 1 < series.size() ? "," : "") + "\n";
  }
  out += "  ]\n}\n";
  return out;
}

}  // namespace convlab::analysis
