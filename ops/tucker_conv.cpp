#include "ops/tucker_conv.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "reference/conv2d.hpp"
#include "reference/tucker.hpp"
#include <utility>

namespace convlab {

template void register_op_handle<TuckerCoreProblem>();
template void register_op_handle<TuckerConvProblem>();

// ---- HOSVD ------------------------------------------------------------------------------

namespace {

// The `rank` leading left singular vectors of m, row-major into out[rows, rank], signed
// so that each vector's largest-magnitude entry (the first, on ties) is positive.
void leading_vectors(const Eigen::MatrixXd& m, int rank, std::vector<double>& out) {
  const Eigen::BDCSVD<Eigen::MatrixXd> svd(m, Eigen::ComputeFullU);
  const Eigen::MatrixXd& U = svd.matrixU();
  const Eigen::Index rows = m.rows();
  out.assign(size_t(rows) * rank, 0.0);
  for (int j = 0; j < rank; ++j) {
    Eigen::Index big = 0;
    for (Eigen::Index i = 1; i < rows; ++i)
      if (std::abs(U(i, j)) > std::abs(U(big, j))) big = i;
    const double sign = U(big, j) < 0 ? -1.0 : 1.0;
    for (Eigen::Index i = 0; i < rows; ++i) out[size_t(i) * rank + j] = sign * U(i, j);
  }
}

}  // namespace

TuckerFactors tucker_hosvd_f32(int K, int R, int S, int C, int d1, int d2, const float* w) {
  if (K < 1 || R < 1 || S < 1 || C < 1 || !w) throw std::invalid_argument("tucker_hosvd_f32: empty kernel");
  if (d1 < 1 || d1 > C)
    throw std::invalid_argument("tucker_hosvd_f32: d1 must be in [1, C = " + std::to_string(C) + "], got " +
                                std::to_string(d1));
  if (d2 < 1 || d2 > K)
    throw std::invalid_argument("tucker_hosvd_f32: d2 must be in [1, K = " + std::to_string(K) + "], got " +
                                std::to_string(d2));
  const Eigen::Index RS = Eigen::Index(R) * S;
  // Mode-K unfolding [K, RS·C] (KRSC rows are whole filters) and mode-C unfolding [C, K·RS].
  Eigen::MatrixXd unfold_k(K, RS * C), unfold_c(C, K * RS);
  for (Eigen::Index k = 0; k < K; ++k)
    for (Eigen::Index rs = 0; rs < RS; ++rs)
      for (Eigen::Index c = 0; c < C; ++c) {
        const double v = w[(k * RS + rs) * C + c];
        unfold_k(k, rs * C + c) = v;
        unfold_c(c, k * RS + rs) = v;
      }
  std::vector<double> u_in, u_out;
  leading_vectors(unfold_c, d1, u_in);
  leading_vectors(unfold_k, d2, u_out);
  // core[j, rs, i] = Σ_k Σ_c u_out[k, j] · w[k, rs, c] · u_in[c, i], as two matrix products:
  //   P [K·RS, d1] = W_(rows k·rs, cols c) · U_in,   core [d2, RS·d1] = U_outᵀ · P viewed [K, RS·d1].
  const Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> Uin(u_in.data(), C,
                                                                                                      d1);
  const Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> Uout(u_out.data(),
                                                                                                       K, d2);
  const Eigen::MatrixXd Wc = unfold_c.transpose();  // [K·RS, C]
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> partial = Wc * Uin;  // [K·RS, d1]
  const Eigen::Map<Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> P(partial.data(), K,
                                                                                              RS * d1);
  const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> core = Uout.transpose() * P;

  TuckerFactors f;
  f.C = C, f.K = K, f.R = R, f.S = S, f.d1 = d1, f.d2 = d2;
  f.u_in.assign(u_in.begin(), u_in.end());
  f.u_out.assign(u_out.begin(), u_out.end());
  f.core.assign(core.data(), core.data() + core.size());
  return f;
}

std::vector<float> tucker_reconstruct_f32(const TuckerFactors& f) {
  const int64_t RS = int64_t(f.R) * f.S;
  std::vector<float> w(size_t(f.K) * RS * f.C);
  std::vector<double> t(size_t(RS) * f.C);  // for one k: Σ_j u_out[k,j] core[j, rs, i] then × u_inᵀ
  std::vector<double> g(size_t(RS) * f.d1);
  for (int k = 0; k < f.K; ++k) {
    std::fill(g.begin(), g.end(), 0.0);
    for (int j = 0; j < f.d2; ++j) {
      const double u = f.u_out[size_t(k) * f.d2 + j];
      for (int64_t e = 0; e < RS * f.d1; ++e) g[e] += u * f.core[size_t(j) * RS * f.d1 + e];
    }
    for (int64_t rs = 0; rs < RS; ++rs)
      for (int c = 0; c < f.C; ++c) {
        double acc = 0;
        for (int i = 0; i < f.d1; ++i) acc += g[rs * f.d1 + i] * f.u_in[size_t(c) * f.d1 + i];
        w[(size_t(k) * RS + rs) * f.C + c] = float(acc);
      }
  }
  return w;
}

double relative_error(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) throw std::invalid_argument("relative_error: sizes differ");
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = double(a[i]) - double(b[i]);
    num += d * d;
    den += double(b[i]) * double(b[i]);
  }
  if (den == 0) return num == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return std::sqrt(num / den);
}

// ---- the core-conv problem --------------------------------------------------------------

std::string TuckerCoreProblem::invalid_reason() const {
  if (N < 1 || H < 1 || W < 1 || C < 1 || K < 1) return "N, H, W, C and K must all be at least 1";
  if (double(N) * H * W * std::max(C, K) >= 2147483647.0) return "N·H·W·max(C, K) must stay below 2^31";
  if (double(C) * 9 * K >= 2147483647.0) return "C·9·K must stay below 2^31";
  return "";
}

std::vector<TensorSpec> OpTraits<TuckerCoreProblem>::inputs(const TuckerCoreProblem& p) {
  return {{"x", {p.N, p.H, p.W, p.C}, p.dtype, "NHWC"}, {"w", {p.C, 3, 3, p.K}, p.dtype, "CRSN"}};
}

std::vector<TensorSpec> OpTraits<TuckerCoreProblem>::outputs(const TuckerCoreProblem& p) {
  return {{"y", {p.N, p.H, p.W, p.K}, p.dtype, "NHWC"}};
}

Args<TuckerCoreProblem> OpTraits<TuckerCoreProblem>::bind(std::vector<Tensor>& in, std::vector<Tensor>& out,
                                                           void* ws) {
  return {in.at(0).data(), in.at(1).data(), out.at(0).data(), ws};
}

void OpTraits<TuckerCoreProblem>::reference(const TuckerCoreProblem& p, const std::vector<std::vector<double>>& in,
                                            std::vector<std::vector<double>>& out) {
  // CRSN -> KRSC, then the dense reference conv with pad 1.
  const std::vector<double>& crsn = in.at(1);
  std::vector<double> krsc(crsn.size());
  for (int c = 0; c < p.C; ++c)
    for (int rs = 0; rs < 9; ++rs)
      for (int k = 0; k < p.K; ++k) krsc[(size_t(k) * 9 + rs) * p.C + c] = crsn[(size_t(c) * 9 + rs) * p.K + k];
  ref::conv2d(p.conv_shape(), in.at(0).data(), krsc.data(), out.at(0).data());
}

namespace {

TuckerCoreProblem core(int N, int H, int W, int C, int K) { return {N, H, W, C, K, DType::f32}; }

// Correctness table: odd H and W (every tile size leaves a ragged edge somewhere), channel
// counts off every power-of-two TC, C smaller than the largest TC, batch 1 and 3, K above
// and below one warp and past 128 threads.
std::vector<TuckerCoreProblem> test_shapes() {
  return {
      core(1, 1, 1, 1, 1),     // everything 1
      core(1, 7, 7, 32, 32),   // TDC's smallest spatial size
      core(3, 5, 9, 3, 5),     // batch 3, C < every TC > 2, K < a warp
      core(1, 13, 11, 17, 31), // primes
      core(3, 9, 7, 20, 33),   // batch 3, K one past a warp
      core(1, 15, 17, 40, 64), // odd, C not a multiple of 16 or 32
      core(1, 11, 12, 72, 96), // C past 64 (two tiles of the largest TC)
      core(2, 6, 19, 9, 130),  // K past 128 threads, wide and short
  };
}

}  // namespace

std::vector<TuckerCoreProblem> tdc_paper_shapes() {
  std::vector<TuckerCoreProblem> t;
  for (int hw : {224, 112, 56, 28, 14, 7}) t.push_back(core(1, hw, hw, 64, 32));
  for (int hw : {56, 28, 14, 7}) t.push_back(core(1, hw, hw, 32, 32));
  t.push_back(core(1, 56, 56, 64, 64));
  t.push_back(core(1, 28, 28, 96, 64));
  t.push_back(core(1, 7, 7, 96, 64));
  t.push_back(core(1, 14, 14, 128, 96));
  t.push_back(core(1, 28, 28, 160, 96));
  t.push_back(core(1, 28, 28, 192, 96));
  t.push_back(core(1, 14, 14, 192, 96));
  t.push_back(core(1, 7, 7, 192, 160));
  return t;
}

std::vector<TuckerCoreProblem> OpTraits<TuckerCoreProblem>::shapes(ShapeTable table, Device device) {
  switch (table) {
    case ShapeTable::test: return test_shapes();
    case ShapeTable::tour: return {core(1, 56, 56, 64, 32)};
    case ShapeTable::bench:
      if (device == Device::gpu) return tdc_paper_shapes();
      return {core(1, 56, 56, 64, 32), core(1, 28, 28, 160, 96), core(1, 7, 7, 192, 160)};
  }
  return {};
}

std::string OpTraits<TuckerCoreProblem>::spec(const TuckerCoreProblem& p) {
  return "N=" + std::to_string(p.N) + ",H=" + std::to_string(p.H) + ",W=" + std::to_string(p.W) +
         ",C=" + std::to_string(p.C) + ",K=" + std::to_string(p.K) + ",dtype=" + dtype_name(p.dtype);
}

std::string OpTraits<TuckerCoreProblem>::label(const TuckerCoreProblem& p) {
  return "n" + std::to_string(p.N) + "_" + std::to_string(p.H) + "x" + std::to_string(p.W) + "_c" +
         std::to_string(p.C) + "_k" + std::to_string(p.K) + "_" + dtype_name(p.dtype);
}

namespace {
void validate(const TuckerCoreProblem& p) {
  if (!p.valid()) throw SpecError("invalid tucker_core problem: " + p.invalid_reason());
}
}  // namespace

TuckerCoreProblem OpTraits<TuckerCoreProblem>::parse(const std::string& text) {
  const KeyValues kv(text);
  kv.require_only({"N", "H", "W", "C", "K", "dtype"}, "tucker_core");
  TuckerCoreProblem p;
  p.N = kv.get_int("N", 1);
  p.H = kv.get_int("H", 8);
  p.W = kv.get_int("W", p.H);
  p.C = kv.get_int("C", 8);
  p.K = kv.get_int("K", p.C);
  p.dtype = parse_dtype(kv.get("dtype", "f32"));
  validate(p);
  return p;
}

TuckerCoreProblem OpTraits<TuckerCoreProblem>::from_input_shapes(const std::vector<Shape>& shapes, DType dtype,
                                                                 const KeyValues& options) {
  options.require_only({}, "tucker_core with --in (shapes come from the files)");
  if (shapes.size() != 2 || shapes[0].size() != 4 || shapes[1].size() != 4)
    throw SpecError("tucker_core takes x [N,H,W,C] (NHWC) and w [C,3,3,K] (CRSN)");
  const Shape& x = shapes[0];
  const Shape& w = shapes[1];
  if (w[0] != x[3] || w[1] != 3 || w[2] != 3)
    throw SpecError("tucker_core: w must be [C,3,3,K] (CRSN) with C = x's channels (" + std::to_string(x[3]) + ")");
  for (int64_t d : {x[0], x[1], x[2], x[3], w[3]})
    if (d < 1 || d > 2147483647) throw SpecError("tucker_core: every dimension must be in [1, 2^31)");
  const TuckerCoreProblem p{int(x[0]), int(x[1]), int(x[2]), int(x[3]), int(w[3]), dtype};
  validate(p);
  return p;
}

// ---- the whole layer --------------------------------------------------------------------

std::string TuckerConvProblem::invalid_reason() const {
  if (N < 1 || H < 1 || W < 1 || C < 1 || K < 1) return "N, H, W, C and K must all be at least 1";
  if (D1 < 1 || D1 > C) return "D1 must be in [1, C]";
  if (D2 < 1 || D2 > K) return "D2 must be in [1, K]";
  if (pixels() * std::max(C, K) >= 2147483647.0) return "N·H·W·max(C, K) must stay below 2^31";
  return "";
}

std::vector<TensorSpec> OpTraits<TuckerConvProblem>::inputs(const TuckerConvProblem& p) {
  // Orthonormal factors have entries ~1/sqrt(rows); the core carries the kernel's scale.
  return {{"x", {p.N, p.H, p.W, p.C}, p.dtype, "NHWC"},
          {"u_in", {p.C, p.D1}, p.dtype, "row-major [C, D1]", 1.0 / std::sqrt(double(p.C))},
          {"core", {p.D1, 3, 3, p.D2}, p.dtype, "CRSN", 1.0 / std::sqrt(9.0 * p.D1)},
          {"u_out_t", {p.D2, p.K}, p.dtype, "row-major [D2, K]", 1.0 / std::sqrt(double(p.D2))}};
}

std::vector<TensorSpec> OpTraits<TuckerConvProblem>::outputs(const TuckerConvProblem& p) {
  return {{"y", {p.N, p.H, p.W, p.K}, p.dtype, "NHWC"}};
}

Args<TuckerConvProblem> OpTraits<TuckerConvProblem>::bind(std::vector<Tensor>& in, std::vector<Tensor>& out,
                                                           void* ws) {
  return {in.at(0).data(), in.at(1).data(), in.at(2).data(), in.at(3).data(), out.at(0).data(), ws};
}

void OpTraits<TuckerConvProblem>::reference(const TuckerConvProblem& p, const std::vector<std::vector<double>>& in,
                                            std::vector<std::vector<double>>& out) {
  // The reference's factor forms: core KRSC [D2,3,3,D1], u_out [K, D2].
  const std::vector<double>& crsn = in.at(2);
  const std::vector<double>& u_out_t = in.at(3);
  std::vector<double> core_krsc(crsn.size()), u_out(u_out_t.size());
  for (int i = 0; i < p.D1; ++i)
    for (int rs = 0; rs < 9; ++rs)
      for (int j = 0; j < p.D2; ++j) core_krsc[(size_t(j) * 9 + rs) * p.D1 + i] = crsn[(size_t(i) * 9 + rs) * p.D2 + j];
  for (int j = 0; j < p.D2; ++j)
    for (int k = 0; k < p.K; ++k) u_out[size_t(k) * p.D2 + j] = u_out_t[size_t(j) * p.K + k];
  const ref::ConvShape shape{p.N, p.H, p.W, p.C, p.K, 3, 3, 1, 1, 1};
  ref::tucker_conv2d(shape, p.D1, p.D2, in.at(0).data(), in.at(1).data(), core_krsc.data(), u_out.data(),
                     out.at(0).data());
}

namespace {
TuckerConvProblem layer(int N, int H, int W, int C, int K, int D1, int D2) { return {N, H, W, C, K, D1, D2}; }
}  // namespace

std::vector<TuckerConvProblem> tucker_layer_shapes() {
  std::vector<TuckerConvProblem> t;
  for (const auto& [c, hw] : {std::pair{64, 56}, std::pair{128, 28}, std::pair{256, 14}, std::pair{512, 7}})
    for (int d : {c / 4, c / 2}) t.push_back(layer(1, hw, hw, c, c, d, d));
  return t;
}

std::vector<TuckerConvProblem> OpTraits<TuckerConvProblem>::shapes(ShapeTable table, Device device) {
  switch (table) {
    case ShapeTable::test:
      return {layer(1, 1, 1, 1, 1, 1, 1),      layer(3, 5, 7, 6, 9, 2, 5),     layer(1, 13, 11, 17, 31, 9, 4),
              layer(2, 9, 9, 40, 24, 33, 24),  layer(1, 7, 7, 64, 64, 16, 16), layer(1, 6, 10, 130, 70, 65, 35)};
    case ShapeTable::tour: return {layer(1, 56, 56, 64, 64, 16, 16)};
    case ShapeTable::bench:
      if (device == Device::gpu) return tucker_layer_shapes();
      return {layer(1, 56, 56, 64, 64, 16, 16), layer(1, 14, 14, 256, 256, 64, 64)};
  }
  return {};
}

std::string OpTraits<TuckerConvProblem>::spec(const TuckerConvProblem& p) {
  return "N=" + std::to_string(p.N) + ",H=" + std::to_string(p.H) + ",W=" + std::to_string(p.W) +
         ",C=" + std::to_string(p.C) + ",K=" + std::to_string(p.K) + ",D1=" + std::to_string(p.D1) +
         ",D2=" + std::to_string(p.D2) + ",dtype=" + dtype_name(p.dtype);
}

std::string OpTraits<TuckerConvProblem>::label(const TuckerConvProblem& p) {
  return "n" + std::to_string(p.N) + "_" + std::to_string(p.H) + "x" + std::to_string(p.W) + "_c" +
         std::to_string(p.C) + "_k" + std::to_string(p.K) + "_d" + std::to_string(p.D1) + "x" +
         std::to_string(p.D2) + "_" + dtype_name(p.dtype);
}

TuckerConvProblem OpTraits<TuckerConvProblem>::parse(const std::string& text) {
  const KeyValues kv(text);
  kv.require_only({"N", "H", "W", "C", "K", "D1", "D2", "dtype"}, "tucker_conv");
  TuckerConvProblem p;
  p.N = kv.get_int("N", 1);
  p.H = kv.get_int("H", 8);
  p.W = kv.get_int("W", p.H);
  p.C = kv.get_int("C", 8);
  p.K = kv.get_int("K", p.C);
  p.D1 = kv.get_int("D1", std::max(1, p.C / 4));
  p.D2 = kv.get_int("D2", std::min(p.D1, std::max(p.K, 1)));
  p.dtype = parse_dtype(kv.get("dtype", "f32"));
  if (!p.valid()) throw SpecError("invalid tucker_conv problem: " + p.invalid_reason());
  return p;
}

TuckerConvProblem OpTraits<TuckerConvProblem>::from_input_shapes(const std::vector<Shape>& shapes, DType dtype,
                                                                 const KeyValues& options) {
  options.require_only({}, "tucker_conv with --in (shapes come from the files)");
  if (shapes.size() != 4 || shapes[0].size() != 4 || shapes[1].size() != 2 || shapes[2].size() != 4 ||
      shapes[3].size() != 2)
    throw SpecError("tucker_conv takes x [N,H,W,C], u_in [C,D1], core [D1,3,3,D2] (CRSN), u_out_t [D2,K]");
  const Shape &x = shapes[0], &ui = shapes[1], &g = shapes[2], &uo = shapes[3];
  if (ui[0] != x[3] || g[0] != ui[1] || g[1] != 3 || g[2] != 3 || uo[0] != g[3])
    throw SpecError("tucker_conv: the factors' shapes do not chain (x's C = u_in's rows, u_in's D1 = core's first, "
                    "core's D2 = u_out_t's rows, core 3x3)");
  for (int64_t d : {x[0], x[1], x[2], x[3], ui[1], g[3], uo[1]})
    if (d < 1 || d > 2147483647) throw SpecError("tucker_conv: every dimension must be in [1, 2^31)");
  const TuckerConvProblem p{int(x[0]), int(x[1]), int(x[2]), int(x[3]), int(uo[1]), int(ui[1]), int(g[3]), dtype};
  if (!p.valid()) throw SpecError("invalid tucker_conv problem: " + p.invalid_reason());
  return p;
}

// ---- tiles, candidates, model -----------------------------------------------------------

std::string tile_name(const TdcTile& t) {
  return std::to_string(t.th) + "x" + std::to_string(t.tw) + "x" + std::to_string(t.tc);
}

int tdc_threads(const TuckerCoreProblem& p) { return (p.K + 31) / 32 * 32; }

int tdc_register_width(int tw) { return tw <= 2 ? 2 : tw <= 4 ? 4 : tw <= 8 ? 8 : 16; }

double tdc_smem_bytes(const TdcTile& t) { return double(t.th + 2) * (t.tw + 2) * t.tc * 4.0; }

int tdc_channel_tiles(const TuckerCoreProblem& p, const TdcTile& t) { return (p.C + t.tc - 1) / t.tc; }

double tdc_blocks(const TuckerCoreProblem& p, const TdcTile& t) {
  return double(p.N) * ((p.H + t.th - 1) / t.th) * ((p.W + t.tw - 1) / t.tw) * tdc_channel_tiles(p, t);
}

namespace {
std::vector<int> spatial_sizes(int extent) {
  std::vector<int> out;
  for (int v : {1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16})
    if (v <= extent) out.push_back(v);
  if (extent < 16 && std::find(out.begin(), out.end(), extent) == out.end()) out.push_back(extent);
  return out;
}
}  // namespace

std::vector<TdcTile> tdc_candidates(const TuckerCoreProblem& p) {
  int c_cap = 1;
  while (c_cap < p.C && c_cap < 64) c_cap *= 2;
  std::vector<TdcTile> out;
  for (int th : spatial_sizes(p.H))
    for (int tw : spatial_sizes(p.W))
      for (int tc = 1; tc <= c_cap; tc *= 2) {
        const TdcTile t{th, tw, tc};
        if (tdc_smem_bytes(t) <= kTdcMaxCandidateSmem) out.push_back(t);
      }
  return out;
}

// What ptxas allots the four instances for sm_90 (-Xptxas -v): 32 registers for 2 and 4
// accumulators, 40 for 8 and 16 (the compiler rematerialises the 16-wide row).
int tdc_model_registers(int register_width) { return register_width <= 4 ? 32 : 40; }

TdcPrediction tdc_predict(const TuckerCoreProblem& p, const TdcTile& t, const TdcMachine& m) {
  TdcPrediction r;
  r.tile = t;
  const int threads = tdc_threads(p);
  const int warps = threads / 32;
  const int rw = tdc_register_width(t.tw);
  const double smem = tdc_smem_bytes(t);
  // Occupancy: the tightest of block slots, threads, shared memory and registers.
  const int regs = tdc_model_registers(rw);
  int bps = m.max_blocks_per_sm;
  bps = std::min(bps, m.max_threads_per_sm / threads);
  bps = std::min(bps, int(m.smem_per_sm / (smem + m.smem_reserved_per_block)));
  bps = std::min(bps, m.regs_per_sm / (regs * threads));
  r.blocks_per_sm = bps;
  r.blocks = tdc_blocks(p, t);
  if (bps < 1 || threads > kTdcMaxThreads) {
    r.total_s = std::numeric_limits<double>::infinity();
    return r;
  }
  const double concurrent = double(bps) * m.sms;
  r.waves = std::ceil(r.blocks / concurrent);

  // One block's work in warp instructions. Per output row, input channel and filter
  // row (an "iteration"), a computing warp issues 3 weight loads, rw + 2 shared loads,
  // 3·rw FMAs (the instance's full register row: lanes past TW are predicated off, not
  // skipped) and a couple of address/loop instructions. Staging the cube costs each
  // warp ~6 instructions per element it loads.
  const int tc_eff = std::min(t.tc, p.C);
  const double compute_warps = std::ceil(p.K / 32.0);
  const double iterations = double(t.th) * tc_eff * 3.0;
  const double per_iteration = 3.0 + (rw + 2) + 3.0 * rw + 2.0;
  const double loads_per_iteration = 3.0 + (rw + 2);
  const double cube = double(t.th + 2) * (t.tw + 2) * tc_eff;
  const double stage_instr = 6.0 * std::ceil(cube / threads);
  const double warp_instr = iterations * per_iteration + stage_instr + 4.0 * t.th * rw;
  const double warp_loads = iterations * loads_per_iteration + 2.0 * std::ceil(cube / threads);
  // Latency of one block on its own: the cube's round trip, then the iterations one
  // after another (each waits on its weight loads: the FMAs of one iteration depend on
  // them, and few warps per SM leave nothing else to issue meanwhile).
  const double latency_cycles = m.stage_cycles + iterations * m.iter_cycles;
  r.latency_s = latency_cycles / m.clock_hz;

  // Waves: the full ones hold bps blocks on every SM, the last one the rest, spread evenly.
  auto wave_cycles = [&](double blocks_in_wave) {
    const double per_sm = std::ceil(blocks_in_wave / m.sms);  // blocks on the busiest SM
    const double issue =
        per_sm * (compute_warps * warp_instr + (warps - compute_warps) * stage_instr) / m.issue_per_sm_clk;
    const double lsu = per_sm * compute_warps * warp_loads / m.lsu_per_sm_clk;
    return std::max({latency_cycles, issue, lsu});
  };
  const double full_waves = std::floor(r.blocks / concurrent);
  const double rest = r.blocks - full_waves * concurrent;
  const double cycles = full_waves * wave_cycles(concurrent) + (rest > 0 ? wave_cycles(rest) : 0.0);
  r.compute_s = cycles / m.clock_hz;

  // Data movement. DRAM: the compulsory x, w, y (y twice when zeroed and then
  // accumulated). L2: every block's cube and weight slice, and one read-modify-write
  // of y per channel tile.
  const int ct = tdc_channel_tiles(p, t);
  const double y_bytes = p.output_elems() * 4.0;
  const double dram = (p.input_elems() + p.weight_elems()) * 4.0 + y_bytes * (ct > 1 ? 2.0 : 1.0);
  const double l2 = r.blocks * (cube + double(tc_eff) * 9 * p.K) * 4.0 + y_bytes * ct * (ct > 1 ? 2.0 : 1.0);
  r.memory_s = std::max(dram / m.dram_bytes_per_s, l2 / m.l2_bytes_per_s);

  r.overhead_s = m.launch_s + (ct > 1 ? m.memset_s : 0.0);
  r.total_s = r.overhead_s + std::max(r.compute_s, r.memory_s);
  return r;
}

std::vector<TdcPrediction> tdc_predict_all(const TuckerCoreProblem& p, const TdcMachine& m) {
  std::vector<TdcPrediction> out;
  for (const TdcTile& t : tdc_candidates(p)) out.push_back(tdc_predict(p, t, m));
  return out;
}

TdcTile tdc_choose(const TuckerCoreProblem& p, const TdcMachine& m) {
  const std::vector<TdcPrediction> all = tdc_predict_all(p, m);
  if (all.empty()) throw std::invalid_argument("tdc_choose: no candidate tile for " +
                                               OpTraits<TuckerCoreProblem>::spec(p));
  const TdcPrediction* best = &all.front();
  for (const TdcPrediction& r : all)
    if (r.total_s < best->total_s) best = &r;
  return best->tile;
}

}  // namespace convlab
