// analysis/report.cpp — formatting of a WaterlineReport; no arithmetic here
// beyond unit conversions (every number comes from waterline.cpp).
#include "analysis/report.hpp"

#include <cstdarg>
#include <cstdio>
#include <string>

#include "analysis/json_lite.hpp"

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

std::string number(double v) { return format("%.10g", v); }

std::string shape_json(const ActivationShape& s) { return format("[%d, %d, %d, %d]", s.N, s.H, s.W, s.C); }

}  // namespace

std::string waterline_table(const WaterlineReport& r) {
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
  return out;
}

std::string waterline_json(const WaterlineReport& r) {
  const Network& net = r.network;
  std::string out = "{\n";
  out += "  \"network\": " + json::quote(net.name) + ",\n";
  out += format("  \"resolution\": %d,\n  \"batch\": %d,\n", net.resolution, net.batch);
  out += "  \"dtype\": " + json::quote(dtype_name(r.dtype)) + ",\n";
  out += "  \"bytes_per_element\": " + number(net.bytes_per_element) + ",\n";
  out += "  \"machine\": {\"name\": " + json::quote(r.machine.name) +
         ", \"description\": " + json::quote(r.machine.description) +
         ", \"peak_ops_per_s\": " + number(r.roof.peak_ops_per_s) +
         ", \"bandwidth_bytes_per_s\": " + number(r.roof.bytes_per_s) + ", \"op_byte\": " + number(r.roof.op_byte()) +
         "},\n";
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
  out += "  }\n}\n";
  return out;
}

std::string waterline_table(const Network& network, const Machine& machine, int batch, DType dtype) {
  return waterline_table(waterline(network, machine, batch, dtype));
}

std::string waterline_json(const Network& network, const Machine& machine, int batch, DType dtype) {
  return waterline_json(waterline(network, machine, batch, dtype));
}

}  // namespace convlab::analysis
