// cpu/conv2d/onednn.cpp — lesson 01 baseline: oneDNN's convolution_forward.
//
// What it is: Intel's oneDNN (2.x) direct convolution, f32, forward
// inference, on the harness's own NHWC activations — src and dst are handed to
// oneDNN as they are (format_tag::nhwc), never copied. oneDNN picks a JIT
// kernel for this CPU at run time (AVX2/AVX-512 "brgconv"/"jit" families, or
// a GEMM-based one; set ONEDNN_VERBOSE=1 to see which) and runs it on OpenMP
// threads, all cores.
//
// Weights: convlab's KRSC is, in oneDNN's logical (o, i, h, w) dimensions,
// format_tag::ohwi; grouped KRSC [G][K/G][R][S][C/G] is (g, o, i, h, w) with
// tag gohwi (NOT ghwio, which would be RSC·K per group). The fast kernels
// want their own blocked weight layout — on an AVX-512 machine brgconv asks
// for ohwi with K blocked by 16/32/64 (Acdb16a…, K zero-padded to the block),
// the depthwise kernel (brdgmm_dw) for G blocked by 16 — so the primitive is
// created with weights format_tag::any and, when its choice differs from
// KRSC, the weights are reordered into the harness workspace on every run:
// K·R·S·C/groups floats read and written, small next to the convolution and
// honestly inside the timing (a framework would do it once per model load).
// Scratchpad: user mode, also carved out of the workspace, so everything the
// primitive touches besides x, w and y is visible as workspace_bytes.
//
// Creating a primitive costs milliseconds (JIT code generation), so one is
// built per problem on first use and cached by the problem's spec; engine and
// stream are created once per process.
// Cost: 2·N·P·Q·K·R·S·C/groups flops; workspace = reordered weights + scratchpad.
// Run just this: build/convlab run conv2d/cpu/onednn
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "ops/conv2d.hpp"

namespace convlab {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

constexpr std::size_t kAlign = 64;  // each piece of the workspace starts on a cache line
std::size_t round_up(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

[[noreturn]] void fail(const std::string& what, const ConvProblem& p, const dnnl::error& e) {
  throw std::runtime_error("conv2d/cpu/onednn: " + what + " failed for " + OpTraits<ConvProblem>::spec(p) + ": " +
                           e.what() + " (dnnl_status_t " + std::to_string(int(e.status)) + ")");
}

struct Runtime {  // one engine and one stream per process
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
};
Runtime& runtime() {
  static Runtime rt;
  return rt;
}

// Everything that depends only on the problem's shape, built once.
struct Plan {
  memory::desc src_md, user_weights_md, dst_md;  // NHWC, KRSC, NHWC: the harness's buffers
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward conv;
  bool reorder_weights = false;
  dnnl::reorder weights_reorder;                 // KRSC -> pd.weights_desc(), when they differ
  std::size_t weights_bytes = 0, scratchpad_bytes = 0;
  std::size_t workspace_bytes() const { return round_up(weights_bytes) + scratchpad_bytes; }
};

std::unique_ptr<Plan> make_plan(const ConvProblem& p) {
  auto plan = std::make_unique<Plan>();
  dnnl::engine eng;
  try {
    eng = runtime().engine;
  } catch (const dnnl::error& e) {
    fail("creating the CPU engine and stream", p, e);
  }
  const memory::dim N = p.N, C = p.C, H = p.H, W = p.W, K = p.K, R = p.R, S = p.S, P = p.P(), Q = p.Q();
  const memory::dim G = p.groups, T = p.T(), Kg = p.K_per_group();
  const auto f32 = memory::data_type::f32;

  // oneDNN always lists dimensions logically as (N, C, H, W) and (g, o, i, h, w);
  // the format tag says how they sit in memory.
  plan->src_md = memory::desc({N, C, H, W}, f32, Tag::nhwc);  // x [N, H, W, C]
  plan->dst_md = memory::desc({N, K, P, Q}, f32, Tag::nhwc);  // y [N, P, Q, K]
  const memory::dims weight_dims = G == 1 ? memory::dims{K, C, R, S} : memory::dims{G, Kg, T, R, S};
  plan->user_weights_md = memory::desc(weight_dims, f32, G == 1 ? Tag::ohwi : Tag::gohwi);  // w KRSC
  const memory::desc any_weights_md(weight_dims, f32, Tag::any);

  try {
    // Symmetric padding as given; oneDNN checks P == (H + 2·pad − R)/stride + 1
    // with the same floor division as ConvProblem::P().
    const dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_inference,
                                               dnnl::algorithm::convolution_direct, plan->src_md, any_weights_md,
                                               plan->dst_md, {p.stride, p.stride}, {p.pad, p.pad}, {p.pad, p.pad});
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    plan->pd = dnnl::convolution_forward::primitive_desc(desc, attr, eng);
    plan->conv = dnnl::convolution_forward(plan->pd);
  } catch (const dnnl::error& e) {
    fail("creating the convolution primitive", p, e);
  }
  plan->scratchpad_bytes = plan->pd.scratchpad_desc().get_size();
  plan->reorder_weights = plan->pd.weights_desc() != plan->user_weights_md;
  if (plan->reorder_weights) {
    plan->weights_bytes = plan->pd.weights_desc().get_size();
    try {
      plan->weights_reorder = dnnl::reorder(dnnl::reorder::primitive_desc(
          eng, plan->user_weights_md, eng, plan->pd.weights_desc()));
    } catch (const dnnl::error& e) {
      fail("creating the weight reorder (KRSC -> oneDNN's layout)", p, e);
    }
  }
  return plan;
}

const Plan& plan_for(const ConvProblem& p) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<Plan>> plans;  // keyed by the problem's spec
  const std::string key = OpTraits<ConvProblem>::spec(p);
  std::lock_guard<std::mutex> lock(mutex);
  auto it = plans.find(key);
  if (it == plans.end()) it = plans.emplace(key, make_plan(p)).first;
  return *it->second;
}

bool supports(const ConvProblem& p) { return p.dtype == DType::f32; }

std::size_t workspace_bytes(const ConvProblem& p) { return plan_for(p).workspace_bytes(); }

void run(const ConvProblem& p, const Args<ConvProblem>& a) {
  // oneDNN takes void* handles; it only reads src and weights.
  void* x = const_cast<void*>(a.x);  // [N, H, W, C]        NHWC, f32
  void* w = const_cast<void*>(a.w);  // [K, R, S, C/groups] KRSC, f32
  void* y = a.y;                     // [N, P, Q, K]        NHWC, f32
  const Plan& plan = plan_for(p);
  Runtime& rt = runtime();
  char* ws = static_cast<char*>(a.workspace);  // [reordered weights | scratchpad], each 64-byte aligned
  if (plan.workspace_bytes() && !ws) throw std::runtime_error("conv2d/cpu/onednn: missing workspace");

  try {
    memory src(plan.src_md, rt.engine, x);
    memory dst(plan.dst_md, rt.engine, y);
    memory user_weights(plan.user_weights_md, rt.engine, w);
    memory weights = user_weights;
    if (plan.reorder_weights) {
      weights = memory(plan.pd.weights_desc(), rt.engine, ws);
      plan.weights_reorder.execute(rt.stream, user_weights, weights);
    }
    std::unordered_map<int, memory> conv_args{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst}};
    if (plan.scratchpad_bytes)
      conv_args.emplace(DNNL_ARG_SCRATCHPAD, memory(plan.pd.scratchpad_desc(), rt.engine,
                                                     ws + round_up(plan.weights_bytes)));
    plan.conv.execute(rt.stream, conv_args);
    rt.stream.wait();
  } catch (const dnnl::error& e) {
    fail("executing the convolution", p, e);
  }
}

const Register<ConvProblem> reg{{
    .name = "onednn",
    .device = Device::cpu,
    .lesson = 1,
    .supports = supports,
    .run = run,
    .workspace_bytes = workspace_bytes,
    .threads = Threads::all,
    .idea = "oneDNN convolution_forward on NHWC x/y; KRSC weights reordered to its blocked layout",
    .baseline = true,
}};

}  // namespace
}  // namespace convlab
