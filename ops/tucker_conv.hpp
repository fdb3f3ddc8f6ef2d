// ops/tucker_conv.hpp — lesson 12, Tucker-format convolution (TDC, PPoPP 2023).
//
// A dense 3x3 conv C → K with KRSC kernel W is approximated in Tucker-2 form
// along its two channel modes (reference/tucker.hpp has the algebra):
//
//   W[k, r, s, c] ≈ Σ_{j<D2} Σ_{i<D1} u_out[k, j] · core[j, r, s, i] · u_in[c, i]
//
// and the conv becomes three: a 1x1 C → D1, the "core" 3x3 D1 → D2, a 1x1
// D2 → K. This file holds
//   - the truncated HOSVD that produces the factors (fp32 out, Eigen's SVD);
//   - the core-conv problem `tucker_core` (3x3, stride 1, pad 1, fp32), whose
//     weights are stored CRSN ([C, 3, 3, K], output channel innermost) as TDC's
//     kernel wants them: it is a layout chosen once, offline, at decomposition;
//   - TDC's tile (TH, TW, TC), its candidates and the analytical model that
//     predicts each candidate's time and picks one (the "oracle" is the
//     exhaustive measured sweep, bench/tdc_oracle.cu).
#pragma once

#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/harness.hpp"
#include "reference/conv2d.hpp"

namespace convlab {

// ---- the truncated HOSVD (Tucker-2 over the channel modes) -----------------------------
// Factors of a KRSC kernel [K, R, S, C] at ranks d1 (input side) and d2 (output side):
//   u_in  [C, d1]           orthonormal columns: leading left singular vectors of W_(C) [C, K·R·S]
//   core  [d2, R, S, d1]    KRSC: W projected onto both subspaces
//   u_out [K, d2]           orthonormal columns: leading left singular vectors of W_(K) [K, R·S·C]
// Each singular vector is signed so that its largest-magnitude entry is positive.
struct TuckerFactors {
  int C = 0, K = 0, R = 0, S = 0, d1 = 0, d2 = 0;
  std::vector<float> u_in, core, u_out;
};
// Computed in double with Eigen's BDCSVD of the unfoldings themselves (no Gram matrix, so
// no squared condition number), stored in fp32.
// Throws std::invalid_argument for a rank outside [1, C] / [1, K] or an empty kernel.
TuckerFactors tucker_hosvd_f32(int K, int R, int S, int C, int d1, int d2, const float* w_krsc);
// w[k, r, s, c] = Σ u_out[k, j] · core[j, r, s, i] · u_in[c, i], KRSC [K, R, S, C], accumulated in double.
std::vector<float> tucker_reconstruct_f32(const TuckerFactors& f);
// ‖a − b‖ / ‖b‖ in double (0 when both are 0).
double relative_error(const std::vector<float>& a, const std::vector<float>& b);

// ---- the core conv ---------------------------------------------------------------------
// y = conv3x3(x, w), stride 1, pad 1 (output H×W), no bias.
//   x: [N, H, W, C]   NHWC
//   w: [C, 3, 3, K]   CRSN: w[c][r][s][k] is the dense KRSC w[k][r][s][c]
//   y: [N, H, W, K]   NHWC
struct TuckerCoreProblem {
  int N = 1, H = 1, W = 1;
  int C = 1;  // D1 of the Tucker form: the core conv's input channels
  int K = 1;  // D2: its output channels
  DType dtype = DType::f32;

  ref::ConvShape conv_shape() const { return {N, H, W, C, K, 3, 3, 1, 1, 1}; }
  double input_elems() const { return double(N) * H * W * C; }
  double weight_elems() const { return double(C) * 9 * K; }
  double output_elems() const { return double(N) * H * W * K; }
  double flops() const { return 2.0 * output_elems() * 9.0 * C; }
  double min_bytes() const { return dtype_size(dtype) * (input_elems() + weight_elems() + output_elems()); }
  int reduction_depth() const { return 9 * C; }
  bool valid() const { return invalid_reason().empty(); }
  std::string invalid_reason() const;  // "" when valid
};

template <> struct Args<TuckerCoreProblem> {
  const void* x;    // [N, H, W, C]  NHWC
  const void* w;    // [C, 3, 3, K]  CRSN
  void* y;          // [N, H, W, K]  NHWC; poisoned before each run
  void* workspace;  // workspace_bytes(problem) bytes, or nullptr
};

template <> struct OpTraits<TuckerCoreProblem> {
  static constexpr const char* name = "tucker_core";
  static std::vector<TensorSpec> inputs(const TuckerCoreProblem& p);
  static std::vector<TensorSpec> outputs(const TuckerCoreProblem& p);
  static Args<TuckerCoreProblem> bind(std::vector<Tensor>& in, std::vector<Tensor>& out, void* workspace);
  static void reference(const TuckerCoreProblem& p, const std::vector<std::vector<double>>& in,
                        std::vector<std::vector<double>>& out);
  // test: odd sizes, channels off every TC, batch 1 and 3; bench (GPU): TDC's 18 core shapes.
  static std::vector<TuckerCoreProblem> shapes(ShapeTable table, Device device);
  // spec "N=1,H=56,W=56,C=64,K=32,dtype=f32" (W defaults to H, K to C, N to 1); label "n1_56x56_c64_k32_f32".
  static std::string spec(const TuckerCoreProblem& p);
  static std::string label(const TuckerCoreProblem& p);
  static TuckerCoreProblem parse(const std::string& spec);
  // From x [N,H,W,C] and w [C,3,3,K].
  static TuckerCoreProblem from_input_shapes(const std::vector<Shape>& shapes, DType dtype, const KeyValues& options);
};

// TDC's 18 core-conv shapes (batch 1, fp32): (C_in, N_out) @ H = W, in the issue's order.
std::vector<TuckerCoreProblem> tdc_paper_shapes();

// ---- the whole Tucker layer --------------------------------------------------------------
// y = 1x1(D2 → K) ∘ conv3x3(D1 → D2, stride 1, pad 1) ∘ 1x1(C → D1) of x: the dense 3x3
// conv C → K whose kernel is the Tucker form of the factors (ref::tucker_conv2d).
//   x:       [N, H, W, C]    NHWC
//   u_in:    [C, D1]         row-major: the first 1x1 as the B operand of a GEMM (x · u_in)
//   core:    [D1, 3, 3, D2]  CRSN, as the core-conv kernel wants it
//   u_out_t: [D2, K]         row-major: u_outᵀ, the last 1x1 as a GEMM's B operand
//   y:       [N, H, W, K]    NHWC
// Every layout is the factors' storage, chosen once when the kernel is decomposed.
struct TuckerConvProblem {
  int N = 1, H = 1, W = 1, C = 1, K = 1, D1 = 1, D2 = 1;
  DType dtype = DType::f32;

  TuckerCoreProblem core() const { return {N, H, W, D1, D2, dtype}; }
  double pixels() const { return double(N) * H * W; }
  double weight_elems() const { return double(C) * D1 + 9.0 * D1 * D2 + double(D2) * K; }
  double flops() const { return 2.0 * pixels() * weight_elems(); }
  double min_bytes() const { return dtype_size(dtype) * (pixels() * (C + K) + weight_elems()); }
  // Three chained fp32 reductions, errors adding in quadrature (as FfnProblem's).
  int reduction_depth() const { return C + 9 * D1 + D2; }
  // z1 [N,H,W,D1] and z2 [N,H,W,D2] in DRAM between the stages.
  double layer_by_layer_bytes() const { return min_bytes() + dtype_size(dtype) * 2.0 * pixels() * (D1 + D2); }
  bool valid() const { return invalid_reason().empty(); }
  std::string invalid_reason() const;
};

template <> struct Args<TuckerConvProblem> {
  const void* x;        // [N, H, W, C]    NHWC
  const void* u_in;     // [C, D1]         row-major
  const void* core;     // [D1, 3, 3, D2]  CRSN
  const void* u_out_t;  // [D2, K]         row-major
  void* y;              // [N, H, W, K]    NHWC; poisoned before each run
  void* workspace;      // workspace_bytes(problem) bytes, or nullptr
};

template <> struct OpTraits<TuckerConvProblem> {
  static constexpr const char* name = "tucker_conv";
  static std::vector<TensorSpec> inputs(const TuckerConvProblem& p);
  static std::vector<TensorSpec> outputs(const TuckerConvProblem& p);
  static Args<TuckerConvProblem> bind(std::vector<Tensor>& in, std::vector<Tensor>& out, void* workspace);
  static void reference(const TuckerConvProblem& p, const std::vector<std::vector<double>>& in,
                        std::vector<std::vector<double>>& out);
  // bench (GPU): C = K ∈ {64, 128, 256, 512} at ResNet's 56, 28, 14, 7, ranks C/4 and C/2.
  static std::vector<TuckerConvProblem> shapes(ShapeTable table, Device device);
  // spec "N=1,H=56,W=56,C=64,K=64,D1=16,D2=16,dtype=f32" (W = H, K = C, D1 = C/4, D2 = D1 by default);
  // label "n1_56x56_c64_k64_d16x16_f32".
  static std::string spec(const TuckerConvProblem& p);
  static std::string label(const TuckerConvProblem& p);
  static TuckerConvProblem parse(const std::string& spec);
  // From x [N,H,W,C], u_in [C,D1], core [D1,3,3,D2], u_out_t [D2,K].
  static TuckerConvProblem from_input_shapes(const std::vector<Shape>& shapes, DType dtype, const KeyValues& options);
};
// The end-to-end layers of lesson 12 (batch 1, fp32): C = K and H of ResNet's stages, with d = C/4 and C/2.
std::vector<TuckerConvProblem> tucker_layer_shapes();

// ---- TDC's tiling and its analytical model --------------------------------------------
// One thread block per (TH × TW output pixels, TC input channels, image); it stages
// the (TH+2)×(TW+2)×TC input cube in shared memory and runs one thread per output
// channel; partial sums over the C/TC channel tiles meet in y by atomicAdd (y zeroed
// first) when there is more than one channel tile, by plain stores otherwise.
struct TdcTile {
  int th = 1, tw = 1, tc = 1;
  bool operator==(const TdcTile&) const = default;
};
std::string tile_name(const TdcTile& t);  // "4x8x16" (TH x TW x TC)

// The limits every tile of the GPU kernel obeys (gpu/lib/tdc_core.hpp checks them too).
inline constexpr int kTdcMaxTileWidth = 16;        // TW: the register row of one thread's accumulators
inline constexpr int kTdcMaxThreads = 1024;        // K ≤ 1024: one thread per output channel
inline constexpr int kTdcMaxCandidateSmem = 48 * 1024;  // candidates stay in the default shared-memory window
int tdc_threads(const TuckerCoreProblem& p);       // K rounded up to a warp
int tdc_register_width(int tw);                    // the kernel instance for TW: 2, 4, 8 or 16 accumulators
double tdc_smem_bytes(const TdcTile& t);           // (TH+2)·(TW+2)·TC·4
int tdc_channel_tiles(const TuckerCoreProblem& p, const TdcTile& t);   // ⌈C/TC⌉
double tdc_blocks(const TuckerCoreProblem& p, const TdcTile& t);       // N·⌈H/TH⌉·⌈W/TW⌉·⌈C/TC⌉

// Every tile the oracle sweeps and the model may return: TH and TW from
// {1..8, 10, 12, 14, 16} up to the image's size (H or W itself is added when smaller
// than 16 and absent), TC a power of two from 1 up to min(C rounded up to a power of 2, 64),
// shared memory ≤ kTdcMaxCandidateSmem.
std::vector<TdcTile> tdc_candidates(const TuckerCoreProblem& p);

// The machine the model reasons about. The first group is the H200's datasheet (SM
// count, per-SM limits, clock); the second, round bandwidth figures of the kind
// bench/results/h200/probe.json measures; the third, this kernel's own latencies and
// overheads, which no datasheet gives: they were fitted by `convlab tucker fit` to the
// measured sweep in bench/results/h200-tdc/tdc_oracle.json (lessons/12-tdc/NOTES.md
// says how, and how well the fit does on shapes left out of it). Kept as data so a
// test, the fit or a lesson exercise can vary them.
struct TdcMachine {
  int sms = 132;
  int max_threads_per_sm = 2048;
  int max_blocks_per_sm = 32;
  double smem_per_sm = 228.0 * 1024;
  double smem_reserved_per_block = 1024;  // the runtime's own share of each block
  int regs_per_sm = 65536;
  double clock_hz = 1.98e9;

  double dram_bytes_per_s = 4.0e12;
  double l2_bytes_per_s = 9.0e12;

  double issue_per_sm_clk = 4.0;   // warp instructions per SM per clock this kernel sustains
  double lsu_per_sm_clk = 1.0;     // shared/global load warp instructions per SM per clock
  double iter_cycles = 300;        // one warp's (row, channel, filter row) step: its weight loads' latency
  double stage_cycles = 2000;      // a block's cube load (a round trip to L2/DRAM) and barrier
  double launch_s = 3.0e-6;        // one kernel node's fixed cost, graph-launched
  double memset_s = 1.0e-6;        // zeroing y before the atomics (one more node)
};

struct TdcPrediction {
  TdcTile tile;
  int blocks_per_sm = 0;          // occupancy from threads, registers, shared memory, block slots
  double blocks = 0, waves = 0;
  double latency_s = 0;           // one block, start to end, alone: staging + its serial loop
  double compute_s = 0;           // Σ over waves of max(block latency, the busiest SM's issue time)
  double memory_s = 0;            // data movement: DRAM compulsory vs L2 traffic (cube, weights, atomics)
  double overhead_s = 0;          // launch (+ memset)
  double total_s = 0;             // overhead + max(compute, memory)
};
// Registers per thread the model assumes for a kernel instance of register width `rw`.
int tdc_model_registers(int register_width);
TdcPrediction tdc_predict(const TuckerCoreProblem& p, const TdcTile& t, const TdcMachine& m = {});
// Every candidate's prediction, in tdc_candidates order.
std::vector<TdcPrediction> tdc_predict_all(const TuckerCoreProblem& p, const TdcMachine& m = {});
// The candidate of least predicted time (ties: the first in candidate order).
TdcTile tdc_choose(const TuckerCoreProblem& p, const TdcMachine& m = {});

}  // namespace convlab
