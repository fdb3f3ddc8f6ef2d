// analysis/machine.hpp — the two numbers a roofline needs: peak arithmetic
// throughput R (OP/s, one MAC = 2 OPs) and DRAM bandwidth B (bytes/s).
//
// Presets:
//   a5000     the paper's NVIDIA RTX A5000 at the clocks Lavin fixed (§3.2):
//             76.7 TFLOP/s fp16 tensor at the 1.17 GHz base clock, and memory
//             at 1.25 GHz instead of 2.0 GHz. Bandwidth is derived from the
//             bus: GDDR6 moves 8 bits per pin per memory clock (the datasheet's
//             768 GB/s at 2.0 GHz on a 384-bit bus is 48 B × 8 × 2.0 GHz), so
//             at 1.25 GHz:  384 bit / 8 = 48 B per transfer × 8 transfers per
//             clock × 1.25e9 clocks/s = 480 GB/s, and op:byte = 76.7e12 /
//             480e9 ≈ 160 (at full clocks 111.1 TFLOP/s / 768 GB/s ≈ 145).
//   h100      H100 SXM5 datasheet: 989 TFLOP/s dense fp16/bf16 tensor,
//             67 TFLOP/s fp32 (non-tensor), HBM3 3.35 TB/s.
//   h200      H200 SXM datasheet: the same compute as H100 SXM, HBM3e 4.8 TB/s.
//   measured  numbers passed in, e.g. `convlab probe`'s JSON (cuBLAS fp16 GEMM
//             rate and device copy bandwidth) via machine_from_probe_json.
#pragma once

#include <string>
#include <vector>

#include "core/dtype.hpp"

namespace convlab::analysis {

struct Machine {
  std::string name;                 // "a5000"
  std::string description;          // one line: where the numbers come from
  double peak_ops_fp16 = 0;         // OP/s, fp16/bf16 inputs on tensor cores, fp32 accumulate
  double peak_ops_fp32 = 0;         // OP/s, fp32 (CUDA cores; 0 when unknown)
  double bandwidth_bytes_per_s = 0; // DRAM bytes/s (reads + writes)

  // R for a data type: the fp16 rate for f16 and bf16, the fp32 rate for f32.
  // Throws std::invalid_argument if that rate is unknown (0).
  double peak_ops(DType dtype) const;
  double op_byte(DType dtype) const { return peak_ops(dtype) / bandwidth_bytes_per_s; }
};

Machine a5000();
Machine h100_sxm();
Machine h200();

// Built from numbers: R in GFLOP/s, B in GB/s (the units `convlab probe` writes).
Machine measured_machine(double fp16_gflops, double copy_gbs, double fp32_gflops = 0,
                         const std::string& gpu_name = "");

// Reads a flat JSON object (as `convlab probe` writes) and builds the
// "measured" preset from keys gpu_hgemm_gflops and gpu_copy_gbs (required,
// > 0) and gpu_sgemm_gflops, gpu_name (optional). Throws std::runtime_error
// naming the file and the missing key.
Machine machine_from_probe_json(const std::string& path);

// The preset names machine_by_name accepts: "a5000", "h100", "h200", "measured".
std::vector<std::string> machine_names();
// A preset by name (case ignored; "h100_sxm" is an alias of "h100"). "measured"
// reads probe_json_path (see machine_from_probe_json). Throws
// std::invalid_argument listing the valid names for anything else.
Machine machine_by_name(const std::string& name, const std::string& probe_json_path = "");

}  // namespace convlab::analysis
