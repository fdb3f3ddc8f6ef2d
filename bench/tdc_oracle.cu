// bench/tdc_oracle.cu — lesson 12's oracle: every legal TDC tile timed on TDC's 18
// core-conv shapes, beside the model's choice, cuDNN and the suite's implicit GEMM.
//
//   build/convlab_tdc_oracle [--out FILE] [--shapes N]       (default FILE: tdc_oracle.json)
//   build/convlab_tdc_oracle --layers --out FILE             lesson 12's end-to-end table
//
// For each shape (batch 1, fp32, 3x3, pad 1; x NHWC; w CRSN for TDC, the same weights
// KRSC for cuDNN and 04a):
//   - every tile of tdc_candidates(p) is timed kernel-only: L calls captured in one
//     CUDA graph, the graph replayed 3 times, the median replay divided by L (L chosen
//     so that a replay lasts ~150 µs, 1 ≤ L ≤ 20). Each call of a multi-channel-tile
//     tile is a memset node and a kernel node, as the rung launches it.
//   - the fastest is the oracle; the model's choice (tdc_choose) is read off the sweep;
//   - cuDNN (conv2d/gpu/cudnn: the fastest algorithm cudnnFind returns within the fp32,
//     no-TF32 rule) and conv2d/gpu/04a's implicit GEMM are timed the same way, on the
//     same stream;
//   - "isolated": one call between two host clock reads, from an idle GPU to its
//     completion (cudaStreamSynchronize), median of 30: what one call costs a program;
//   - the oracle's, the model's, cuDNN's and 04a's outputs are checked against the
//     double reference after their timing runs.
// Inputs stay resident in L2 between replays (every shape's x, w and y together are under
// 20 MB, the H200's L2 is 50 MB): the times are hot-cache kernel times.
// JSON: one object per shape with every candidate's measured and predicted time.
// --layers: the three-kernel Tucker layer (gpu/lib/tdc_core.hpp, tucker_layer_launch, the
// model's core tile) on the HOSVD factors of a random dense kernel, against that dense
// 3x3 conv on cuDNN and 04a, at tucker_layer_shapes(); with the approximation error.
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/compare.hpp"
#include "core/registry.hpp"
#include "gpu/lib/check.cuh"
#include "gpu/lib/conv_geometry.cuh"
#include "gpu/lib/cudnn_handle.cuh"
#include "gpu/lib/implicit_gemm_f32.cuh"
#include "gpu/lib/tdc_core.hpp"
#include "ops/conv2d.hpp"
#include "ops/tucker_conv.hpp"

namespace convlab {
namespace {

using gpu::check_cuda;
using Call = std::function<void(cudaStream_t)>;

struct Timing {
  double kernel_us = 0;    // per call, graph-replayed (or back to back, see method)
  std::string method;      // "graph" or "back_to_back" (when capture failed)
  int calls_per_replay = 0;
};

double event_ms(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0;
  check_cuda(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
  return ms;
}

Timing time_kernel(const Call& call, cudaStream_t s) {
  cudaEvent_t e0, e1;
  check_cuda(cudaEventCreate(&e0), "cudaEventCreate");
  check_cuda(cudaEventCreate(&e1), "cudaEventCreate");
  call(s);  // warm-up (and lazy set-up outside the timing)
  check_cuda(cudaStreamSynchronize(s), "warm-up");
  check_cuda(cudaEventRecord(e0, s), "cudaEventRecord");
  call(s);
  check_cuda(cudaEventRecord(e1, s), "cudaEventRecord");
  check_cuda(cudaStreamSynchronize(s), "first timing");
  const double one_us = std::max(1.0, event_ms(e0, e1) * 1e3);
  Timing t;
  t.calls_per_replay = int(std::clamp(std::lround(150.0 / one_us), 1L, 20L));
  const int L = t.calls_per_replay;
  std::vector<double> per_call;

  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  bool captured = cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess;
  if (captured) {
    try {
      for (int i = 0; i < L; ++i) call(s);
    } catch (const std::exception&) {
      captured = false;
    }
    const cudaError_t end = cudaStreamEndCapture(s, &graph);
    captured = captured && end == cudaSuccess && graph != nullptr &&
               cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess;
  }
  (void)cudaGetLastError();  // a failed capture leaves its error behind: clear it
  if (captured) {
    t.method = "graph";
    check_cuda(cudaGraphLaunch(exec, s), "cudaGraphLaunch");
    check_cuda(cudaStreamSynchronize(s), "graph warm-up");
    for (int rep = 0; rep < 3; ++rep) {
      check_cuda(cudaEventRecord(e0, s), "cudaEventRecord");
      check_cuda(cudaGraphLaunch(exec, s), "cudaGraphLaunch");
      check_cuda(cudaEventRecord(e1, s), "cudaEventRecord");
      check_cuda(cudaStreamSynchronize(s), "graph replay");
      per_call.push_back(event_ms(e0, e1) * 1e3 / L);
    }
  } else {
    t.method = "back_to_back";
    for (int rep = 0; rep < 3; ++rep) {
      check_cuda(cudaEventRecord(e0, s), "cudaEventRecord");
      for (int i = 0; i < L; ++i) call(s);
      check_cuda(cudaEventRecord(e1, s), "cudaEventRecord");
      check_cuda(cudaStreamSynchronize(s), "back-to-back calls");
      per_call.push_back(event_ms(e0, e1) * 1e3 / L);
    }
  }
  if (exec) cudaGraphExecDestroy(exec);
  if (graph) cudaGraphDestroy(graph);
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  std::sort(per_call.begin(), per_call.end());
  t.kernel_us = per_call[per_call.size() / 2];
  return t;
}

double time_isolated_us(const Call& call, cudaStream_t s) {
  std::vector<double> us;
  for (int i = 0; i < 30; ++i) {
    check_cuda(cudaStreamSynchronize(s), "idle");
    const auto t0 = std::chrono::steady_clock::now();
    call(s);
    check_cuda(cudaStreamSynchronize(s), "isolated call");
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

std::string check_output(const float* dy, const TuckerCoreProblem& p, const std::vector<double>& ref) {
  std::vector<float> y(ref.size());
  check_cuda(cudaMemcpy(y.data(), dy, y.size() * 4, cudaMemcpyDeviceToHost), "cudaMemcpy(y)");
  const CompareResult r = compare(std::vector<double>(y.begin(), y.end()), ref, DType::f32, p.reduction_depth());
  return r.ok ? "ok" : "FAILED: " + r.message;
}

std::string json_tile(const TdcTile& t) {
  return "[" + std::to_string(t.th) + "," + std::to_string(t.tw) + "," + std::to_string(t.tc) + "]";
}

std::string num(double v) {
  if (!std::isfinite(v)) return "null";
  std::ostringstream o;
  o.precision(6);
  o << v;
  return o.str();
}

// Dense conv timings through conv2d's cuDNN baseline and 04a's kernel, on stream s.
struct DenseTimes {
  Timing cudnn, igemm;
  double iso_cudnn = NAN, iso_igemm = NAN;
};
DenseTimes time_dense(const ConvProblem& dense, const float* dx, const float* dwk, float* dy, cudaStream_t s) {
  DenseTimes d;
  const Variant<ConvProblem>* cudnn = find_variant<ConvProblem>(Device::gpu, "cudnn");
  if (cudnn && cudnn->supports(dense)) {
    const std::size_t bytes = cudnn->workspace_bytes ? cudnn->workspace_bytes(dense) : 0;
    void* ws = nullptr;
    if (bytes) check_cuda(cudaMalloc(&ws, bytes), "cudaMalloc(cudnn workspace)");
    const Args<ConvProblem> a{dx, dwk, dy, ws};
    const Call call = [&, a](cudaStream_t) { cudnn->run(dense, a); };
    d.cudnn = time_kernel(call, s);
    d.iso_cudnn = time_isolated_us(call, s);
    if (ws) cudaFree(ws);
  }
  const gpu::ConvGeometry cg = gpu::geometry_of(dense);
  const bool vec = dense.C % 4 == 0 && dense.K % 4 == 0;
  const Call igemm = [&](cudaStream_t st) {
    gpu::igemm_f32::launch(cg, dense.N * dense.H * dense.W, dx, dwk, gpu::igemm_f32::StoreY{dy}, vec, st);
  };
  d.igemm = time_kernel(igemm, s);
  d.iso_igemm = time_isolated_us(igemm, s);
  return d;
}

// End to end: the three-kernel Tucker layer against the dense 3x3 conv it approximates.
int run_layers(const std::string& out_path, cudaStream_t s) {
  std::ostringstream js;
  js << "{\n\"timing\": \"kernel_us: graph replay of L calls / L, median of 3; isolated_us: host clock around "
        "one call + sync, median of 30\",\n\"layers\": [\n";
  int failures = 0;
  const std::vector<TuckerConvProblem> layers = tucker_layer_shapes();
  for (std::size_t li = 0; li < layers.size(); ++li) {
    const TuckerConvProblem p = layers[li];
    std::mt19937_64 rng(13000 + li);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    // A random dense kernel and its HOSVD at (D1, D2): the factors the layer runs.
    std::vector<float> x(size_t(p.pixels()) * p.C), w(size_t(p.K) * 9 * p.C);
    for (float& v : x) v = u(rng);
    const float ws = float(1.0 / std::sqrt(9.0 * p.C));
    for (float& v : w) v = ws * u(rng);
    const TuckerFactors f = tucker_hosvd_f32(p.K, 3, 3, p.C, p.D1, p.D2, w.data());
    const double err_random = relative_error(tucker_reconstruct_f32(f), w);
    std::vector<float> core_crsn(f.core.size()), u_out_t(f.u_out.size());
    for (int j = 0; j < p.D2; ++j)
      for (int rs = 0; rs < 9; ++rs)
        for (int i = 0; i < p.D1; ++i) core_crsn[(size_t(i) * 9 + rs) * p.D2 + j] = f.core[(size_t(j) * 9 + rs) * p.D1 + i];
    for (int k = 0; k < p.K; ++k)
      for (int j = 0; j < p.D2; ++j) u_out_t[size_t(j) * p.K + k] = f.u_out[size_t(k) * p.D2 + j];
    std::vector<std::vector<double>> in{{x.begin(), x.end()}, {f.u_in.begin(), f.u_in.end()},
                                        {core_crsn.begin(), core_crsn.end()}, {u_out_t.begin(), u_out_t.end()}},
        ref(1);
    ref[0].resize(size_t(p.pixels()) * p.K);
    OpTraits<TuckerConvProblem>::reference(p, in, ref);

    auto upload = [](const std::vector<float>& h) {
      float* d = nullptr;
      check_cuda(cudaMalloc(&d, h.size() * 4), "cudaMalloc");
      check_cuda(cudaMemcpy(d, h.data(), h.size() * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
      return d;
    };
    float *dx = upload(x), *dw = upload(w), *dui = upload(f.u_in), *dg = upload(core_crsn), *duo = upload(u_out_t);
    float* dy = nullptr;
    void* work = nullptr;
    check_cuda(cudaMalloc(&dy, ref[0].size() * 4), "cudaMalloc");
    check_cuda(cudaMalloc(&work, gpu::tucker_layer_workspace_bytes(p)), "cudaMalloc");
    const TdcTile tile = tdc_choose(p.core());
    const Call layer = [&](cudaStream_t st) { gpu::tucker_layer_launch(p, tile, dx, dui, dg, duo, dy, work, st); };
    check_cuda(cudaMemset(dy, 0xff, ref[0].size() * 4), "poison");
    const Timing t_layer = time_kernel(layer, s);
    const TuckerCoreProblem cp = p.core();
    std::vector<float> yh(ref[0].size());
    check_cuda(cudaMemcpy(yh.data(), dy, yh.size() * 4, cudaMemcpyDeviceToHost), "cudaMemcpy");
    const CompareResult r = compare(std::vector<double>(yh.begin(), yh.end()), ref[0], DType::f32, p.reduction_depth());
    if (!r.ok) ++failures;
    const double iso_layer = time_isolated_us(layer, s);
    const Call core_only = [&](cudaStream_t st) { gpu::tdc_core_launch(cp, tile, dx, dg, dy, st); };  // timing only
    const Timing t_core = time_kernel(core_only, s);
    const ConvProblem dense{p.N, p.H, p.W, p.C, p.K, 3, 3, 1, 1, 1, DType::f32};
    const DenseTimes d = time_dense(dense, dx, dw, dy, s);
    const std::string label = OpTraits<TuckerConvProblem>::label(p);
    std::fprintf(stderr, "%-28s tucker %8.2f us (core %7.2f)  cudnn %8.2f us  04a %8.2f us  err %.3f  [%s]\n",
                 label.c_str(), t_layer.kernel_us, t_core.kernel_us, d.cudnn.kernel_us, d.igemm.kernel_us, err_random,
                 r.ok ? "ok" : r.message.c_str());
    js << (li ? ",\n" : "") << "{\"label\": \"" << label << "\", \"C\": " << p.C << ", \"K\": " << p.K
       << ", \"H\": " << p.H << ", \"D1\": " << p.D1 << ", \"D2\": " << p.D2 << ", \"flops\": " << num(p.flops())
       << ", \"dense_flops\": " << num(dense.flops()) << ", \"rel_error_random_kernel\": " << num(err_random)
       << ", \"core_tile\": " << json_tile(tile) << ", \"tucker_kernel_us\": " << num(t_layer.kernel_us)
       << ", \"tucker_isolated_us\": " << num(iso_layer) << ", \"core_kernel_us\": " << num(t_core.kernel_us)
       << ", \"cudnn_kernel_us\": " << num(d.cudnn.kernel_us > 0 ? d.cudnn.kernel_us : NAN)
       << ", \"cudnn_isolated_us\": " << num(d.iso_cudnn) << ", \"igemm_04a_kernel_us\": " << num(d.igemm.kernel_us)
       << ", \"igemm_04a_isolated_us\": " << num(d.iso_igemm) << ", \"method\": \"" << t_layer.method << "/"
       << d.cudnn.method << "\", \"check\": \"" << (r.ok ? "ok" : "FAILED") << "\"}";
    for (float* ptr : {dx, dw, dui, dg, duo, dy}) cudaFree(ptr);
    cudaFree(work);
  }
  js << "\n],\n\"check_failures\": " << failures << "\n}\n";
  std::ofstream(out_path) << js.str();
  std::fprintf(stderr, "wrote %s (%d check failures)\n", out_path.c_str(), failures);
  return failures ? 1 : 0;
}

int run(int argc, char** argv) {
  std::string out_path = "tdc_oracle.json";
  int max_shapes = 1 << 30;
  bool layers = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--out" && i + 1 < argc) out_path = argv[++i];
    else if (a == "--layers") layers = true;
    else if (a == "--shapes" && i + 1 < argc) max_shapes = std::atoi(argv[++i]);
    else {
      std::cerr << "usage: convlab_tdc_oracle [--layers] [--out FILE] [--shapes N]\n";
      return 2;
    }
  }
  require_cuda_device();
  const auto started = std::chrono::steady_clock::now();
  cudaStream_t s;
  check_cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  gpu::check_cudnn(cudnnSetStream(gpu::cudnn_handle(), s), "cudnnSetStream");
  if (layers) {
    const int rc = run_layers(out_path, s);
    gpu::check_cudnn(cudnnSetStream(gpu::cudnn_handle(), nullptr), "cudnnSetStream");
    return rc;
  }
  const Variant<ConvProblem>* cudnn = find_variant<ConvProblem>(Device::gpu, "cudnn");

  cudaDeviceProp prop{};
  check_cuda(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  std::ostringstream js;
  js << "{\n\"context\": {\"device\": \"" << prop.name << "\", \"sms\": " << prop.multiProcessorCount
     << ", \"timing\": \"kernel_us: graph replay of L calls / L, median of 3; isolated_us: host clock around one "
        "call + sync, median of 30\"},\n\"shapes\": [\n";

  std::vector<TuckerCoreProblem> shapes = tdc_paper_shapes();
  if (int(shapes.size()) > max_shapes) shapes.resize(max_shapes);
  int failures = 0;
  for (std::size_t si = 0; si < shapes.size(); ++si) {
    const TuckerCoreProblem p = shapes[si];
    const ConvProblem dense{p.N, p.H, p.W, p.C, p.K, 3, 3, 1, 1, 1, DType::f32};
    std::mt19937_64 rng(12000 + si);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    std::vector<float> x(size_t(p.input_elems())), w_crsn(size_t(p.weight_elems())), w_krsc(w_crsn.size());
    for (float& v : x) v = u(rng);
    const float ws = float(1.0 / std::sqrt(9.0 * p.C));
    for (float& v : w_crsn) v = ws * u(rng);
    for (int c = 0; c < p.C; ++c)
      for (int rs = 0; rs < 9; ++rs)
        for (int k = 0; k < p.K; ++k) w_krsc[(size_t(k) * 9 + rs) * p.C + c] = w_crsn[(size_t(c) * 9 + rs) * p.K + k];
    std::vector<std::vector<double>> in{{x.begin(), x.end()}, {w_crsn.begin(), w_crsn.end()}}, ref(1);
    ref[0].resize(size_t(p.output_elems()));
    OpTraits<TuckerCoreProblem>::reference(p, in, ref);

    float *dx, *dwc, *dwk, *dy;
    check_cuda(cudaMalloc(&dx, x.size() * 4), "cudaMalloc");
    check_cuda(cudaMalloc(&dwc, w_crsn.size() * 4), "cudaMalloc");
    check_cuda(cudaMalloc(&dwk, w_krsc.size() * 4), "cudaMalloc");
    check_cuda(cudaMalloc(&dy, ref[0].size() * 4), "cudaMalloc");
    check_cuda(cudaMemcpy(dx, x.data(), x.size() * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
    check_cuda(cudaMemcpy(dwc, w_crsn.data(), w_crsn.size() * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
    check_cuda(cudaMemcpy(dwk, w_krsc.data(), w_krsc.size() * 4, cudaMemcpyHostToDevice), "cudaMemcpy");
    auto poison = [&] { check_cuda(cudaMemset(dy, 0xff, ref[0].size() * 4), "poison y"); };
    auto tdc = [&](const TdcTile& t) -> Call {
      return [&, t](cudaStream_t st) { gpu::tdc_core_launch(p, t, dx, dwc, dy, st); };
    };

    // The sweep.
    const std::vector<TdcTile> cand = tdc_candidates(p);
    std::vector<double> measured;
    for (const TdcTile& t : cand) measured.push_back(time_kernel(tdc(t), s).kernel_us);
    const std::size_t best = std::min_element(measured.begin(), measured.end()) - measured.begin();
    const TdcTile choice = tdc_choose(p);
    const std::size_t chosen = std::find(cand.begin(), cand.end(), choice) - cand.begin();

    poison();
    const Timing t_best = time_kernel(tdc(cand[best]), s);
    const std::string ok_best = check_output(dy, p, ref[0]);
    poison();
    const Timing t_model = time_kernel(tdc(choice), s);
    const std::string ok_model = check_output(dy, p, ref[0]);
    const double iso_best = time_isolated_us(tdc(cand[best]), s), iso_model = time_isolated_us(tdc(choice), s);

    // cuDNN through the registered baseline (its plan: cudnnFind's fastest fp32 FMA algorithm).
    Timing t_cudnn;
    double iso_cudnn = NAN;
    std::string ok_cudnn = "absent";
    void* cudnn_ws = nullptr;
    if (cudnn && cudnn->supports(dense)) {
      const std::size_t bytes = cudnn->workspace_bytes ? cudnn->workspace_bytes(dense) : 0;
      if (bytes) check_cuda(cudaMalloc(&cudnn_ws, bytes), "cudaMalloc(cudnn workspace)");
      const Args<ConvProblem> a{dx, dwk, dy, cudnn_ws};
      const Call call = [&, a](cudaStream_t) { cudnn->run(dense, a); };  // on the handle's stream, s
      poison();
      t_cudnn = time_kernel(call, s);
      ok_cudnn = check_output(dy, p, ref[0]);
      iso_cudnn = time_isolated_us(call, s);
    }
    // The suite's fp32 implicit GEMM (conv2d 04a's kernel, launched on s).
    const gpu::ConvGeometry cg = gpu::geometry_of(dense);
    const int M = p.N * p.H * p.W;
    const bool vec = p.C % 4 == 0 && p.K % 4 == 0;
    const Call igemm = [&](cudaStream_t st) {
      gpu::igemm_f32::launch(cg, M, dx, dwk, gpu::igemm_f32::StoreY{dy}, vec, st);
    };
    poison();
    const Timing t_igemm = time_kernel(igemm, s);
    const std::string ok_igemm = check_output(dy, p, ref[0]);
    const double iso_igemm = time_isolated_us(igemm, s);

    for (const std::string* ok : std::initializer_list<const std::string*>{&ok_best, &ok_model, &ok_cudnn, &ok_igemm})
      if (ok->starts_with("FAILED")) ++failures;

    const std::string label = OpTraits<TuckerCoreProblem>::label(p);
    std::fprintf(stderr,
                 "%-22s oracle %-9s %8.2f us  model %-9s %8.2f us (%.2fx)  cudnn %8.2f us  04a %8.2f us  [%s %s %s %s]\n",
                 label.c_str(), tile_name(cand[best]).c_str(), t_best.kernel_us, tile_name(choice).c_str(),
                 t_model.kernel_us, t_model.kernel_us / t_best.kernel_us, t_cudnn.kernel_us, t_igemm.kernel_us,
                 ok_best.c_str(), ok_model.c_str(), ok_cudnn.c_str(), ok_igemm.c_str());

    js << (si ? ",\n" : "") << "{\"label\": \"" << label << "\", \"spec\": \"" << OpTraits<TuckerCoreProblem>::spec(p)
       << "\", \"C\": " << p.C << ", \"K\": " << p.K << ", \"H\": " << p.H << ", \"W\": " << p.W
       << ", \"flops\": " << num(p.flops()) << ",\n \"oracle\": {\"tile\": " << json_tile(cand[best])
       << ", \"kernel_us\": " << num(t_best.kernel_us) << ", \"isolated_us\": " << num(iso_best)
       << ", \"method\": \"" << t_best.method << "\", \"check\": \"" << ok_best << "\"},\n \"model\": {\"tile\": "
       << json_tile(choice) << ", \"kernel_us\": " << num(t_model.kernel_us) << ", \"isolated_us\": " << num(iso_model)
       << ", \"predicted_us\": " << num(tdc_predict(p, choice).total_s * 1e6)
       << ", \"sweep_us\": " << num(chosen < measured.size() ? measured[chosen] : NAN) << ", \"method\": \""
       << t_model.method << "\", \"check\": \"" << ok_model << "\"},\n \"cudnn\": {\"kernel_us\": "
       << num(t_cudnn.kernel_us > 0 ? t_cudnn.kernel_us : NAN) << ", \"isolated_us\": " << num(iso_cudnn)
       << ", \"method\": \"" << t_cudnn.method << "\", \"check\": \"" << ok_cudnn
       << "\"},\n \"igemm_04a\": {\"kernel_us\": " << num(t_igemm.kernel_us) << ", \"isolated_us\": "
       << num(iso_igemm) << ", \"method\": \"" << t_igemm.method << "\", \"check\": \"" << ok_igemm
       << "\"},\n \"candidates\": [";
    for (std::size_t i = 0; i < cand.size(); ++i)
      js << (i ? "," : "") << "[" << cand[i].th << "," << cand[i].tw << "," << cand[i].tc << "," << num(measured[i])
         << "," << num(tdc_predict(p, cand[i]).total_s * 1e6) << "]";
    js << "]}";

    cudaFree(dx), cudaFree(dwc), cudaFree(dwk), cudaFree(dy);
    if (cudnn_ws) cudaFree(cudnn_ws);
    // What is done so far, as valid JSON, in case the run is cut short.
    std::ofstream(out_path) << js.str() << "\n], \"partial\": true, \"check_failures\": " << failures << "\n}\n";
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  js << "\n],\n\"candidate_columns\": [\"th\", \"tw\", \"tc\", \"measured_us\", \"predicted_us\"],\n\"seconds\": "
     << num(seconds) << ", \"check_failures\": " << failures << "\n}\n";
  std::ofstream(out_path) << js.str();
  std::fprintf(stderr, "wrote %s (%.1f s, %d check failures)\n", out_path.c_str(), seconds, failures);
  gpu::check_cudnn(cudnnSetStream(gpu::cudnn_handle(), nullptr), "cudnnSetStream");
  return failures ? 1 : 0;
}

}  // namespace
}  // namespace convlab

int main(int argc, char** argv) {
  try {
    return convlab::run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "convlab_tdc_oracle: error: " << e.what() << "\n";
    return 1;
  }
}
