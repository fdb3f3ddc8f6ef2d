// cpu/ffn/08a_layer_by_layer.cpp — lesson 08, rung 08a: Eq. 30 as written, one layer at a time.
//
// The first rung of a new lesson is the plain algorithm done well: the two
// linear layers of FFN(X) = φ(X·U + a)·V + b are two calls of lesson 03's
// fastest CPU GEMM (rung 03f, OpenMP, packed, AVX2 micro-kernel), with an
// element-wise pass in between:
//
//   H = X·U                    GEMM 1: [P, C] · [C, hidden]      (gemm_packed_parallel)
//   H = φ(H + a)               bias + activation, in place       (one pass over P·hidden)
//   Z = H·V                    GEMM 2: [P, hidden] · [hidden, C_out]
//   Z = Z + b                  bias                              (one pass over P·C_out)
//
// Cost: the hidden tensor H lives in the workspace, P·hidden floats — α = 4
// times the input for Eq. 30. It is written by GEMM 1, read and written by
// the bias pass, and read by GEMM 2: 4·P·hidden·4 bytes of memory traffic,
// which for P = 6272, hidden = 256 is 25.7 MB against 3.2 MB for x and z.
// On 2 cores the GEMMs still dominate, but H no longer fits in any cache,
// so every pass over it goes to DRAM. Rung 08b removes it.
//
// Supported: f32, any sizes. Workspace: H plus the GEMM's packed panels.
// Run just this: build/convlab run ffn/cpu/08a_layer_by_layer
#include <omp.h>

#include <cstddef>

#include "ops/ffn.hpp"
#include "cpu/lib/threads.hpp"
#include "cpu/lib/ffn_cpu.hpp"
#include "cpu/lib/gemm_kernels.hpp"

namespace convlab {
namespace {

using namespace cpu_gemm;

using cpu::thread_count;

// Floats of H, rounded so the GEMM's panels after it stay 64-byte aligned.
std::size_t hidden_floats(const FfnProblem& p) { return round_up(std::size_t(p.P) * p.hidden, kAlignFloats); }

GemmProblem first_gemm(const FfnProblem& p) { return {p.P, p.hidden, p.C, DType::f32}; }
GemmProblem second_gemm(const FfnProblem& p) { return {p.P, p.C_out, p.hidden, DType::f32}; }

// Workspace: [ H: P × hidden floats | packed panels of whichever GEMM needs more ].
std::size_t workspace_bytes(const FfnProblem& p) {
  const int threads = thread_count();
  return hidden_floats(p) * sizeof(float) + std::max(packed_workspace_bytes(first_gemm(p), threads),
                                                     packed_workspace_bytes(second_gemm(p), threads));
}

void run(const FfnProblem& p, const Args<FfnProblem>& args) {
  const int threads = thread_count();
  float* h = static_cast<float*>(args.workspace);  // [P, hidden] row-major: the hidden tensor
  void* panels = h + hidden_floats(p);
  const auto* a = static_cast<const float*>(args.a);
  const auto* b = static_cast<const float*>(args.b);
  float* z = static_cast<float*>(args.z);
  const MicroKernel kernel = selected_micro_kernel().kernel;

  StridedGemm layer1;  // H = X·U
  layer1.M = p.P, layer1.N = p.hidden, layer1.K = p.C;
  layer1.a = static_cast<const float*>(args.x), layer1.lda = p.C;
  layer1.b = static_cast<const float*>(args.u), layer1.ldb = p.hidden;
  layer1.c = h, layer1.ldc = p.hidden;
  gemm_packed_parallel(layer1, panels, threads, kernel);

  // H = φ(H + a), rows split over threads.
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int i = 0; i < p.P; ++i) cpu_ffn::bias_activate(1, p.hidden, h + std::ptrdiff_t(i) * p.hidden, p.hidden, a, p.activation);

  StridedGemm layer2;  // Z = H·V
  layer2.M = p.P, layer2.N = p.C_out, layer2.K = p.hidden;
  layer2.a = h, layer2.lda = p.hidden;
  layer2.b = static_cast<const float*>(args.v), layer2.ldb = p.C_out;
  layer2.c = z, layer2.ldc = p.C_out;
  gemm_packed_parallel(layer2, panels, threads, kernel);

#pragma omp parallel for num_threads(threads) schedule(static)
  for (int i = 0; i < p.P; ++i) cpu_ffn::add_bias(1, p.C_out, z + std::ptrdiff_t(i) * p.C_out, p.C_out, b);
}

const Register<FfnProblem> reg{{
    .name = "08a_layer_by_layer",
    .device = Device::cpu,
    .lesson = 8,
    .supports = f32_only<FfnProblem>,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .threads = Threads::all,
    .idea = "two calls of lesson 03's OpenMP GEMM, bias+φ pass between; hidden tensor P·αC in the workspace",
    .model_bytes = [](const FfnProblem& p) { return p.layer_by_layer_bytes(); },  // H and z through DRAM
}};

}  // namespace
}  // namespace convlab
