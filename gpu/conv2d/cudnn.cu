// gpu/conv2d/cudnn.cu — baseline: NVIDIA's cuDNN, the yardstick for every GPU conv rung.
//
// What it is: cudnnConvolutionForward from cuDNN 9's legacy API, on the very
// same NHWC activations and KRSC weights the other variants take (cuDNN calls
// the KRSC filter layout "CUDNN_TENSOR_NHWC": K, then R, S, C/groups innermost),
// grouped and depthwise convolutions through cudnnSetConvolutionGroupCount,
// cross-correlation (no filter flip) as in Eq. 15.
//
// Arithmetic rules, the same as every variant's:
//   fp32: fp32 in, fp32 FMA, fp32 out. CUDNN_FMA_MATH forbids tensor cores,
//         and with them TF32, whose 10-bit mantissa the fp32 tolerance rejects.
//   fp16: fp16 in and out, fp32 accumulation (compute type float), tensor
//         cores allowed (CUDNN_TENSOR_OP_MATH).
// Which algorithm: cudnnFindConvolutionForwardAlgorithm times every algorithm
// cuDNN has for the problem, once per problem shape (cached for the process);
// we take the fastest whose math obeys the rules above and whose workspace is
// at most kMaxWorkspaceBytes. Its workspace is handed to the harness through
// .workspace_bytes, so timed runs allocate nothing. A problem for which cuDNN
// has no such algorithm (or whose descriptors it rejects) is unsupported.
// Cost: whatever NVIDIA's engineers made it — that is the point of a baseline.
// Run just this: build/convlab run conv2d/gpu/cudnn
#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <string>

#include "ops/conv2d.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/cudnn_handle.cuh"

namespace convlab {
namespace {

using gpu::check_cudnn;
using gpu::cudnn_handle;
using gpu::cudnn_rejects_problem;
using gpu::cudnn_status_text;

// ---- tunables ----------------------------------------------------------------
constexpr std::size_t kMaxWorkspaceBytes = std::size_t(1) << 30;  // 1 GiB: ignore algorithms that want more
static_assert(kMaxWorkspaceBytes >= (std::size_t(64) << 20),
              "a too-small cap would leave only the slowest, workspace-free algorithms");

// Everything cuDNN needs to run one problem shape, decided once.
struct Plan {
  gpu::TensorDescriptor x, y;        // x [N, H, W, C], y [N, P, Q, K], both NHWC
  gpu::FilterDescriptor w;           // w [K, R, S, C/groups], KRSC ("NHWC" to cuDNN)
  gpu::ConvolutionDescriptor conv;   // pad, stride, groups, compute type, math type
  std::string rejected;              // why cuDNN cannot do it; empty when it can
  bool algorithm_chosen = false;     // false only where no GPU was there to ask
  cudnnConvolutionFwdAlgo_t algorithm{};
  std::size_t workspace_bytes = 0;
};

cudnnDataType_t cudnn_type(DType t) { return t == DType::f16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT; }

// The math an fp32 or fp16 problem is allowed (see the header).
cudnnMathType_t allowed_math(DType t) { return t == DType::f16 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH; }

// Runs one descriptor call; a status by which cuDNN rejects the problem is
// recorded in plan.rejected (and returns false), any other failure throws.
bool accepted(Plan& plan, cudnnStatus_t status, const char* what) {
  if (status == CUDNN_STATUS_SUCCESS) return true;
  if (!cudnn_rejects_problem(status)) check_cudnn(status, what);
  plan.rejected = std::string(what) + ": " + cudnn_status_text(status);
  return false;
}

// Step 1: describe the tensors and the convolution. Host-side only.
bool describe(Plan& plan, const ConvProblem& p) {
  const cudnnDataType_t type = cudnn_type(p.dtype);
  if (!accepted(plan, cudnnSetTensor4dDescriptor(plan.x.get(), CUDNN_TENSOR_NHWC, type, p.N, p.C, p.H, p.W),
                "cudnnSetTensor4dDescriptor (x)"))
    return false;
  if (!accepted(plan, cudnnSetFilter4dDescriptor(plan.w.get(), type, CUDNN_TENSOR_NHWC, p.K, p.T(), p.R, p.S),
                "cudnnSetFilter4dDescriptor (w)"))
    return false;
  // Compute type float for both fp32 and fp16: the accumulator is always fp32.
  if (!accepted(plan, cudnnSetConvolution2dDescriptor(plan.conv.get(), p.pad, p.pad, p.stride, p.stride, 1, 1,
                                                      CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                "cudnnSetConvolution2dDescriptor"))
    return false;
  if (!accepted(plan, cudnnSetConvolutionGroupCount(plan.conv.get(), p.groups), "cudnnSetConvolutionGroupCount"))
    return false;
  if (!accepted(plan, cudnnSetConvolutionMathType(plan.conv.get(), allowed_math(p.dtype)),
                "cudnnSetConvolutionMathType"))
    return false;

  int n = 0, k = 0, out_h = 0, out_w = 0;
  if (!accepted(plan,
                cudnnGetConvolution2dForwardOutputDim(plan.conv.get(), plan.x.get(), plan.w.get(), &n, &k, &out_h,
                                                      &out_w),
                "cudnnGetConvolution2dForwardOutputDim"))
    return false;
  if (n != p.N || k != p.K || out_h != p.P() || out_w != p.Q()) {
    plan.rejected = "cuDNN computes a different output shape";
    return false;
  }
  return accepted(plan, cudnnSetTensor4dDescriptor(plan.y.get(), CUDNN_TENSOR_NHWC, type, p.N, p.K, p.P(), p.Q()),
                  "cudnnSetTensor4dDescriptor (y)");
}

bool math_allowed(cudnnMathType_t used, DType t) {
  if (t == DType::f16) return true;  // fp16 data, fp32 compute type: tensor cores or not, both fine
  // fp32: only plain FMA arithmetic. DEFAULT_MATH could mean TF32 on tensor cores.
  return used == CUDNN_FMA_MATH;
}

// Why an algorithm cudnnFind timed cannot be used; nullptr when it can.
const char* unusable(const cudnnConvolutionFwdAlgoPerf_t& r, DType t) {
  if (r.status != CUDNN_STATUS_SUCCESS) return cudnnGetErrorString(r.status);
  if (r.memory > kMaxWorkspaceBytes) return "workspace above kMaxWorkspaceBytes";
  if (!math_allowed(r.mathType, t)) return "math type not allowed (TF32?)";
  return nullptr;
}

// Step 2 (needs the GPU): time cuDNN's algorithms and keep the fastest that obeys the rules.
void choose_algorithm(Plan& plan, const ConvProblem& p) {
  cudnnHandle_t handle = cudnn_handle();
  int max_count = 0;
  check_cudnn(cudnnGetConvolutionForwardAlgorithmMaxCount(handle, &max_count),
              "cudnnGetConvolutionForwardAlgorithmMaxCount");
  std::array<cudnnConvolutionFwdAlgoPerf_t, 32> results{};
  int returned = 0;
  const cudnnStatus_t found =
      cudnnFindConvolutionForwardAlgorithm(handle, plan.x.get(), plan.w.get(), plan.conv.get(), plan.y.get(),
                                           std::min<int>(max_count, int(results.size())), &returned, results.data());
  if (!accepted(plan, found, "cudnnFindConvolutionForwardAlgorithm")) return;

  std::string tried;  // for the message if nothing is usable
  for (int i = 0; i < returned; ++i) {  // sorted fastest first
    const cudnnConvolutionFwdAlgoPerf_t& r = results[i];
    if (const char* why = unusable(r, p.dtype)) {
      tried += " algo " + std::to_string(int(r.algo)) + ": " + why + ";";
      continue;
    }
    check_cudnn(cudnnSetConvolutionMathType(plan.conv.get(), r.mathType), "cudnnSetConvolutionMathType");
    std::size_t bytes = 0;
    check_cudnn(cudnnGetConvolutionForwardWorkspaceSize(handle, plan.x.get(), plan.w.get(), plan.conv.get(),
                                                        plan.y.get(), r.algo, &bytes),
                "cudnnGetConvolutionForwardWorkspaceSize");
    plan.algorithm = r.algo;
    plan.workspace_bytes = bytes;
    plan.algorithm_chosen = true;
    return;
  }
  plan.rejected = "no cuDNN algorithm within the rules:" + tried;
}

// The plan for p's shape, built on first request and kept for the process
// (the harness is single-threaded, so a plain map is enough).
Plan& plan_for(const ConvProblem& p) {
  using Key = std::array<int, 11>;
  static std::map<Key, std::unique_ptr<Plan>> plans;
  const Key key{p.N, p.H, p.W, p.C, p.K, p.R, p.S, p.stride, p.pad, p.groups, int(p.dtype)};
  std::unique_ptr<Plan>& plan = plans[key];
  if (!plan) {
    auto fresh = std::make_unique<Plan>();
    if (describe(*fresh, p) && cuda_device_count() > 0) choose_algorithm(*fresh, p);
    plan = std::move(fresh);  // only a finished plan is cached: a throw above leaves the slot empty
  }
  return *plan;
}

bool supports(const ConvProblem& p) {
  if (p.dtype != DType::f32 && p.dtype != DType::f16) return false;
  // Without a GPU cuDNN cannot be asked which algorithms exist; nothing runs
  // there anyway, so claim the dtypes and let the device decide when there is one.
  if (cuda_device_count() == 0) return true;
  return plan_for(p).rejected.empty();
}

std::size_t workspace_bytes(const ConvProblem& p) { return plan_for(p).workspace_bytes; }

void run(const ConvProblem& p, const Args<ConvProblem>& a) {
  const Plan& plan = plan_for(p);
  if (!plan.rejected.empty()) throw DeviceError("cuDNN cannot run this problem: " + plan.rejected);
  if (!plan.algorithm_chosen) throw DeviceError("cuDNN: no algorithm chosen (no GPU?)");
  const float alpha = 1.f, beta = 0.f;  // y = 1·conv(x, w) + 0·y: y is not read, so its NaN poison is harmless
  check_cudnn(cudnnConvolutionForward(cudnn_handle(), &alpha, plan.x.get(), a.x, plan.w.get(), a.w, plan.conv.get(),
                                      plan.algorithm, a.workspace, plan.workspace_bytes, &beta, plan.y.get(), a.y),
              "cudnnConvolutionForward");
  gpu::check_launch("cudnnConvolutionForward");
}

const Register<ConvProblem> reg{{
    .name = "cudnn",
    .device = Device::gpu,
    .lesson = 1,
    .supports = supports,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .idea = "cuDNN 9 cudnnConvolutionForward, fastest algorithm found per shape (fp32 without TF32)",
    .baseline = true,
}};

}  // namespace
}  // namespace convlab
