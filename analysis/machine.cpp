// analysis/machine.cpp — machine presets and the "measured" machine read from
// `convlab probe`'s JSON. The derivations of the preset numbers are in
// machine.hpp; here they are written as the arithmetic itself.
#include "analysis/machine.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "core/json.hpp"

namespace convlab::analysis {

double Machine::peak_ops(DType dtype) const {
  const double r = dtype == DType::f32 ? peak_ops_fp32 : peak_ops_fp16;
  if (!(r > 0))
    throw std::invalid_argument("machine '" + name + "' has no known " + dtype_name(dtype) + " peak throughput");
  return r;
}

Machine a5000() {
  // Compute: the datasheet's 111.1 TFLOP/s dense fp16 tensor rate is at the
  // 1.695 GHz boost clock; Lavin fixed the 1.17 GHz base clock and quotes
  // 76.7 TFLOP/s (111.1 × 1.17 / 1.695 = 76.7). fp32 on the 8192 CUDA cores:
  // 8192 × 2 OPs × 1.17 GHz = 19.2 TFLOP/s.
  const double base_clock_hz = 1.17e9;
  // Memory: 384-bit GDDR6 bus, 8 transfers per pin per (reported) memory
  // clock, clock fixed at 1.25 GHz: 48 B × 8 × 1.25e9 = 480 GB/s.
  const double bus_bytes = 384.0 / 8.0;
  const double transfers_per_clock = 8.0;
  const double memory_clock_hz = 1.25e9;
  Machine m;
  m.name = "a5000";
  m.description = "NVIDIA RTX A5000 at base clock 1.17 GHz, memory 1.25 GHz (Lavin 2024, Sec. 3.2)";
  m.peak_ops_fp16 = 76.7e12;
  m.peak_ops_fp32 = 8192.0 * 2.0 * base_clock_hz;
  m.bandwidth_bytes_per_s = bus_bytes * transfers_per_clock * memory_clock_hz;
  return m;
}

Machine h100_sxm() {
  Machine m;
  m.name = "h100";
  m.description = "NVIDIA H100 SXM5 datasheet: 989 TFLOP/s dense fp16 tensor, 67 TFLOP/s fp32, HBM3 3.35 TB/s";
  m.peak_ops_fp16 = 989.4e12;
  m.peak_ops_fp32 = 66.9e12;
  m.bandwidth_bytes_per_s = 3.35e12;
  return m;
}

Machine h200() {
  Machine m;
  m.name = "h200";
  m.description = "NVIDIA H200 SXM datasheet: 989 TFLOP/s dense fp16 tensor, 67 TFLOP/s fp32, HBM3e 4.8 TB/s";
  m.peak_ops_fp16 = 989.4e12;
  m.peak_ops_fp32 = 66.9e12;
  m.bandwidth_bytes_per_s = 4.8e12;
  return m;
}

Machine measured_machine(double fp16_gflops, double copy_gbs, double fp32_gflops, const std::string& gpu_name) {
  if (!(fp16_gflops > 0) || !(copy_gbs > 0))
    throw std::invalid_argument("measured machine: fp16 GFLOP/s and copy GB/s must both be positive");
  Machine m;
  m.name = "measured";
  m.description = "measured" + (gpu_name.empty() ? std::string() : " on " + gpu_name) +
                  ": cuBLAS fp16 GEMM rate and device copy bandwidth";
  m.peak_ops_fp16 = fp16_gflops * 1e9;
  m.peak_ops_fp32 = fp32_gflops > 0 ? fp32_gflops * 1e9 : 0.0;
  m.bandwidth_bytes_per_s = copy_gbs * 1e9;
  return m;
}

Machine machine_from_probe_json(const std::string& path) {
  json::Value root;
  try {
    root = json::parse_file(path);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(std::string("machine 'measured': ") + e.what() + " (`convlab probe` writes this file)");
  }
  if (root.kind != json::Value::Kind::object) throw std::runtime_error(path + ": expected a JSON object");
  const auto required = [&](const char* key) {
    const json::Value* v = root.find(key);
    if (!v || !v->is_number() || !(v->number > 0))
      throw std::runtime_error(path + ": missing or non-positive number '" + key +
                               "' (a probe taken without a GPU has no GPU rates: name a preset, e.g. h200)");
    return v->number;
  };
  const double hgemm = required("gpu_hgemm_gflops");
  const double copy = required("gpu_copy_gbs");
  const json::Value* sgemm = root.find("gpu_sgemm_gflops");
  const json::Value* name = root.find("gpu_name");
  return measured_machine(hgemm, copy, sgemm && sgemm->is_number() ? sgemm->number : 0.0,
                          name && name->is_string() ? name->text : "");
}

std::vector<std::string> machine_names() { return {"a5000", "h100", "h200", "measured"}; }

Machine machine_by_name(const std::string& name, const std::string& probe_json_path) {
  std::string key = name;
  std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  if (key == "a5000") return a5000();
  if (key == "h100" || key == "h100_sxm" || key == "h100-sxm") return h100_sxm();
  if (key == "h200") return h200();
  if (key == "measured") {
    if (probe_json_path.empty()) throw std::invalid_argument("machine 'measured' needs a probe JSON file");
    return machine_from_probe_json(probe_json_path);
  }
  std::string valid;
  for (const std::string& n : machine_names()) valid += (valid.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown machine '" + name + "' (valid: " + valid + ")");
}

}  // namespace convlab::analysis
