// cpu/conv_pool/07a_layer_by_layer.cpp — lesson 07, CPU rung 07a: three layers, three passes.
//
// The baseline every framework runs when nothing fuses: each layer is its own
// kernel and hands the next one a full tensor in memory.
//
//   pass 1  y_full = conv2d(x, w)                 the suite's best CPU conv, conv2d/cpu/04a_implicit_gemm,
//                                                 called through the registry (not copied)
//   pass 2  y_full = max(y_full·scale + bias, 0)  in place, one sweep
//   pass 3  y     = maxpool2x2(y_full)            one sweep, floor on odd P / Q
//
// y_full [N, P, Q, K] lives in this variant's workspace. Bytes moved, each pass
// at its own floor (ConvPoolProblem::unfused_bytes, reported as `model_bytes`):
//   x + w + y_full  |  2·y_full + scale + bias  |  y_full + y_pool
// = fused floor + 4·|y_full|. The passes 2 and 3 do ~4 flops per element of
// y_full for 12 bytes moved: they run at memory speed whatever the conv does.
// Run just this: build/convlab run conv_bias_relu_pool/cpu/07a_layer_by_layer
#include <algorithm>
#include <cstddef>
#include <stdexcept>

#include "ops/conv2d.hpp"
#include "ops/conv_pool.hpp"
#include "cpu/lib/layer_passes.hpp"

namespace convlab {
namespace {

constexpr const char* kConvVariant = "04a_implicit_gemm";  // conv2d/cpu/04a_implicit_gemm
constexpr std::size_t kAlign = 64;                         // the conv's workspace starts on a cache line

// The registered conv variant this rung calls. Looked up at run time, when
// every static registration has happened.
const Variant<ConvProblem>& conv_variant() {
  for (const Variant<ConvProblem>& v : Registry<ConvProblem>::variants())
    if (v.device == Device::cpu && v.name == kConvVariant) return v;
  throw std::logic_error(std::string("conv_bias_relu_pool/cpu/07a_layer_by_layer: conv2d/cpu/") + kConvVariant +
                         " is not registered");
}

std::size_t full_bytes(const ConvPoolProblem& p) {
  const std::size_t b = std::size_t(p.full_elems()) * sizeof(float);
  return (b + kAlign - 1) / kAlign * kAlign;
}

// Workspace: [ y_full (N·P·Q·K floats) | the conv variant's own workspace ].
std::size_t workspace_bytes(const ConvPoolProblem& p) {
  const Variant<ConvProblem>& conv = conv_variant();
  return full_bytes(p) + (conv.workspace_bytes ? conv.workspace_bytes(p.conv()) : 0);
}

bool supports(const ConvPoolProblem& p) {
  const Variant<ConvProblem>& conv = conv_variant();
  return p.dtype == DType::f32 && (!conv.supports || conv.supports(p.conv()));
}

double model_bytes(const ConvPoolProblem& p) { return p.unfused_bytes(); }

void run(const ConvPoolProblem& p, const Args<ConvPoolProblem>& a) {
  auto* y_full = static_cast<float*>(a.workspace);  // [N, P, Q, K] NHWC, the intermediate in memory
  void* conv_workspace = static_cast<char*>(a.workspace) + full_bytes(p);
  const ConvProblem c = p.conv();

  conv_variant().run(c, Args<ConvProblem>{a.x, a.w, y_full, conv_workspace});              // pass 1
  cpu_conv_pool::scale_bias_relu_pass(int64_t(p.N) * c.P() * c.Q(), p.K, static_cast<const float*>(a.scale),
                                      static_cast<const float*>(a.bias), y_full);          // pass 2
  cpu_conv_pool::maxpool2x2_pass(p.N, c.P(), c.Q(), p.K, y_full, static_cast<float*>(a.y));  // pass 3
}

const Register<ConvPoolProblem> reg{{
    .name = "07a_layer_by_layer",
    .device = Device::cpu,
    .lesson = 7,
    .supports = supports,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .threads = Threads::all,
    .idea = "conv2d/cpu/04a_implicit_gemm, then a scale/bias/ReLU pass, then a 2x2 max-pool pass; "
            "the full-resolution tensor goes through memory 4 times",
    .model_bytes = model_bytes,
}};

}  // namespace
}  // namespace convlab
