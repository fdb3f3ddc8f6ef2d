// cpu/tucker_conv/12b_three_stage.cpp — lesson 12, CPU rung 12b: the whole Tucker layer.
//
// Idea: a dense 3x3 conv C → K in Tucker form is three convs (ops/tucker_conv.hpp):
// z1 = x · u_in (1x1 C → D1), z2 = core3x3(z1) (D1 → D2, TDC's scheme, rung 12a's
// loop nest from cpu/lib/tdc_core_cpu.hpp), y = z2 · u_out_t (1x1 D2 → K).
// The 1x1 stages are the suite's pointwise kernel: a 1x1 conv over NHWC is a GEMM
// (rung 06c), run on the CPU GEMM library (cpu/lib/gemm_kernels.hpp, packed, AVX2
// micro-kernel, OpenMP), u_in and u_out_t already in its B [K, N] row-major form.
// Plain loop it replaces: ref::tucker_conv2d.
// Cost: 2·N·H·W·(C·D1 + 9·D1·D2 + D2·K) flops; z1 and z2 in the workspace.
// Tunables: the core tile below (the GEMM's are the library's).
// Supported: fp32, any shape.
// Run just this: build/convlab run tucker_conv/cpu/12b_three_stage
#include <algorithm>
#include <cstdint>

#include "cpu/lib/gemm_kernels.hpp"
#include "cpu/lib/tdc_core_cpu.hpp"
#include "cpu/lib/threads.hpp"
#include "ops/tucker_conv.hpp"

namespace convlab {
namespace {

constexpr TdcTile kCoreTile{4, 8, 16};
constexpr std::size_t kAlign = 64;  // the GEMM's packed buffers want 64-byte alignment
static_assert(kAlign % sizeof(float) == 0, "z1 and z2 start on a float boundary");

GemmProblem stage1(const TuckerConvProblem& p) { return {int(p.pixels()), p.D1, p.C, DType::f32}; }
GemmProblem stage3(const TuckerConvProblem& p) { return {int(p.pixels()), p.K, p.D2, DType::f32}; }

// Workspace: the GEMM's packing buffers (the larger of the two stages'), then z1, z2.
std::size_t packing_bytes(const TuckerConvProblem& p) {
  const std::size_t bytes = std::max(cpu_gemm::packed_workspace_bytes(stage1(p), cpu::thread_count()),
                                     cpu_gemm::packed_workspace_bytes(stage3(p), cpu::thread_count()));
  return (bytes + kAlign - 1) / kAlign * kAlign;
}

std::size_t workspace_bytes(const TuckerConvProblem& p) {
  return packing_bytes(p) + std::size_t(p.pixels()) * (p.D1 + p.D2) * sizeof(float);
}

// out [M, N] = a [M, Kd] · b [Kd, N], all row-major, on the GEMM library.
void pointwise(const GemmProblem& shape, const float* a, const float* b, float* out, void* packing) {
  cpu_gemm::StridedGemm g;
  g.M = shape.M, g.N = shape.N, g.K = shape.K;
  g.a = a, g.lda = shape.K;
  g.b = b, g.ldb = shape.N;
  g.c = out, g.ldc = shape.N;
  cpu_gemm::gemm_packed_parallel(g, packing, cpu::thread_count(), cpu_gemm::selected_micro_kernel().kernel);
}

bool supports(const TuckerConvProblem& p) { return p.dtype == DType::f32 && p.pixels() < 2147483647.0; }

void run(const TuckerConvProblem& p, const Args<TuckerConvProblem>& a) {
  const int64_t M = int64_t(p.pixels());
  char* base = static_cast<char*>(a.workspace);
  float* z1 = reinterpret_cast<float*>(base + packing_bytes(p));  // [N, H, W, D1]
  float* z2 = z1 + M * p.D1;                                       // [N, H, W, D2]
  pointwise(stage1(p), static_cast<const float*>(a.x), static_cast<const float*>(a.u_in), z1, base);
  cpu::tdc_core_cpu(p.core(), kCoreTile, z1, static_cast<const float*>(a.core), z2, true);
  pointwise(stage3(p), z2, static_cast<const float*>(a.u_out_t), static_cast<float*>(a.y), base);
}

const Register<TuckerConvProblem> reg{{
    .name = "12b_three_stage",
    .device = Device::cpu,
    .lesson = 12,
    .supports = supports,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .threads = Threads::all,
    .idea = "Tucker layer: packed-GEMM 1x1 C->D1, TDC core conv D1->D2, packed-GEMM 1x1 D2->K, through the workspace",
    .model_bytes = [](const TuckerConvProblem& p) { return p.layer_by_layer_bytes(); },
}};

}  // namespace
}  // namespace convlab
