// core/harness.hpp — the one harness: builds a problem's tensors, runs a
// variant on them, and checks the result against the scalar reference.
//
// The app, the tests and the benchmarks all go through ICase and OpHandle, so
// there is exactly one place where inputs are drawn, outputs poisoned, data
// moved to the GPU, and results compared. The typed side (Case<P>,
// OpHandleImpl<P>) is compiled once per operation, in ops/<op>.cpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/checked_size.hpp"
#include "core/compare.hpp"
#include "core/registry.hpp"
#include "core/spec.hpp"
#include "core/tensor.hpp"

namespace convlab {

// A tensor an operation takes or produces, with its layout for humans.
struct TensorSpec {
  std::string name;    // "x"
  Shape shape;         // {N, H, W, C}
  DType dtype;
  std::string layout;  // "NHWC"
  double scale = 1.0;  // random inputs are drawn uniform(-scale, scale) (weights: ~1/sqrt(fan-in))
};

// The problem is outside what the variant supports (wrong dtype, stride, ...).
struct Unsupported : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// One variant bound to one problem, with its tensors allocated and filled.
class ICase {
 public:
  virtual ~ICase() = default;
  virtual const VariantInfo& variant() const = 0;
  virtual std::string spec() const = 0;        // "N=8,H=56,..." (parseable)
  virtual std::string label() const = 0;       // "n8_56x56_c64_k64_3x3_s1p1g1_f32" (for names)
  virtual double flops() const = 0;
  virtual double min_bytes() const = 0;        // compulsory DRAM traffic (Eq. 23)
  virtual double model_bytes() const = 0;      // what this variant moves by design (>= min_bytes)
  virtual int64_t reduction_depth() const = 0;
  virtual std::size_t workspace_bytes() const = 0;
  virtual void poison_outputs() = 0;           // NaN into every output element (GPU: and shared memory)
  virtual void launch() = 0;                   // queue one run (GPU: asynchronous)
  virtual void run() = 0;                      // one run, finished, device errors raised
  virtual CompareResult verify() = 0;          // outputs against the double reference
  virtual std::vector<Tensor> host_outputs() = 0;
  virtual std::vector<TensorSpec> output_specs() const = 0;
};

// The one correctness check: poison every output (and, for a GPU variant, every
// SM's shared memory: core/device.hpp), run once, compare with the reference.
// Tests, benchmarks (before and after timing) and the app all use it.
inline CompareResult checked_run(ICase& c) {
  c.poison_outputs();
  c.run();
  return c.verify();
}

class OpHandle {
 public:
  virtual ~OpHandle() = default;
  virtual std::string name() const = 0;
  virtual std::vector<VariantInfo> variants() const = 0;
  virtual std::vector<std::string> shapes(ShapeTable table, Device device) const = 0;  // specs
  virtual std::string canonical(const std::string& spec) const = 0;    // parse, validate, print
  virtual std::string label(const std::string& spec) const = 0;
  // "" when supported, otherwise why not.
  virtual std::string unsupported_reason(std::size_t variant, const std::string& spec) const = 0;
  virtual std::unique_ptr<ICase> make_case(std::size_t variant, const std::string& spec, uint64_t seed) const = 0;
  // On the user's own tensors (from .npy); `options` holds what the shapes do not say (stride=2,pad=1).
  virtual std::unique_ptr<ICase> make_case_from(std::size_t variant, std::vector<Tensor> inputs,
                                                const std::string& options) const = 0;
  virtual std::vector<TensorSpec> input_specs(const std::string& spec) const = 0;
  // Whether `count` input files can make a problem: the number of inputs of the
  // default problem, or any count OpTraits<P>::input_counts() lists (an op whose
  // optional inputs depend on the shape, e.g. convfirst's stride-2 projection).
  virtual bool accepts_input_count(std::size_t count) const = 0;
  // SizeError when the problem's own tensors (whatever variant runs it) are
  // over the allocation limit or overflow: checked once before a table of variants.
  virtual void check_sizes(const std::string& spec) const = 0;
};

// Every operation with at least one variant, sorted by name.
const std::vector<OpHandle*>& all_ops();
void add_op(OpHandle* op);
OpHandle* find_op(const std::string& name);  // nullptr when unknown

// ---- the typed implementation ------------------------------------------------

template <class P> class Case final : public ICase {
 public:
  // `ref_key` names the inputs ("spec#seed") so cases built from the same
  // inputs share one reference; empty for the user's own tensors.
  Case(const Variant<P>& v, VariantInfo info, const P& p, std::vector<Tensor> host_inputs, std::string ref_key)
      : v_(v), info_(std::move(info)), p_(p), host_in_(std::move(host_inputs)), ref_key_(std::move(ref_key)) {
    using Traits = OpTraits<P>;
    if (v_.device == Device::gpu) require_cuda_device();
    for (const Tensor& t : host_in_) in_.push_back(t.to(v_.device));
    for (const TensorSpec& s : Traits::outputs(p_)) out_.emplace_back(s.shape, s.dtype, v_.device);
    out_specs_ = Traits::outputs(p_);
    ws_bytes_ = v_.workspace_bytes ? v_.workspace_bytes(p_) : 0;
    if (ws_bytes_) workspace_ = Tensor({int64_t((ws_bytes_ + 3) / 4)}, DType::f32, v_.device);  // raw bytes
    args_ = Traits::bind(in_, out_, ws_bytes_ ? workspace_.data() : nullptr);
  }

  const VariantInfo& variant() const override { return info_; }
  std::string spec() const override { return OpTraits<P>::spec(p_); }
  std::string label() const override { return OpTraits<P>::label(p_); }
  double flops() const override { return p_.flops(); }
  double min_bytes() const override { return p_.min_bytes(); }
  double model_bytes() const override { return v_.model_bytes ? v_.model_bytes(p_) : p_.min_bytes(); }
  int64_t reduction_depth() const override { return p_.reduction_depth(); }
  std::size_t workspace_bytes() const override { return ws_bytes_; }
  std::vector<TensorSpec> output_specs() const override { return out_specs_; }

  void poison_outputs() override {
    for (Tensor& t : out_) t.poison();
    if (v_.device == Device::gpu) poison_shared_memory();  // and what the kernel finds in shared memory
  }
  void launch() override { v_.run(p_, args_); }
  void run() override {
    launch();
    if (v_.device == Device::gpu) device_synchronize(info_.id().c_str());
  }

  CompareResult verify() override {
    if (v_.device == Device::gpu) device_synchronize(info_.id().c_str());
    compute_reference();
    CompareResult worst;
    for (std::size_t i = 0; i < out_.size(); ++i) {
      const OutputPlace place{out_specs_[i].name, out_specs_[i].shape, out_specs_[i].layout};
      static const std::vector<double> none;
      const std::vector<double>& magnitude = ref_->magnitude.empty() ? none : ref_->magnitude[i];
      CompareResult r = compare(out_[i], ref_->value[i], p_.dtype, p_.reduction_depth(), place, magnitude);
      if (!r.ok) {
        r.message = "output '" + out_specs_[i].name + "': " + r.message;
        return r;
      }
      if (i == 0 || r.rel_l2 > worst.rel_l2) worst = r;
    }
    return worst;
  }

  std::vector<Tensor> host_outputs() override {
    std::vector<Tensor> h;
    for (const Tensor& t : out_) h.push_back(t.to(Device::cpu));
    return h;
  }

 private:
  // The reference's outputs and, for an op whose OpTraits has error_magnitude
  // (an affine epilogue: core/compare.hpp), each output's error magnitude.
  struct Reference {
    std::vector<std::vector<double>> value, magnitude;
  };

  // Large benchmark shapes take seconds in the double reference, and every
  // variant of a benchmark run checks the same inputs: keep the last one.
  void compute_reference() {
    if (ref_) return;
    static std::string cached_key;
    static std::shared_ptr<const Reference> cached;
    if (!ref_key_.empty() && ref_key_ == cached_key) {
      ref_ = cached;
      return;
    }
    std::vector<std::vector<double>> in;
    for (const Tensor& t : host_in_) in.push_back(t.to_double());
    auto ref = std::make_shared<Reference>();
    for (const Tensor& t : out_) ref->value.emplace_back(t.numel());
    OpTraits<P>::reference(p_, in, ref->value);
    if constexpr (requires { OpTraits<P>::error_magnitude(p_, in, ref->magnitude); }) {
      ref->magnitude = ref->value;  // sized as the outputs
      OpTraits<P>::error_magnitude(p_, in, ref->magnitude);
    }
    ref_ = ref;
    if (!ref_key_.empty()) {
      cached_key = ref_key_;
      cached = ref_;
    }
  }

  const Variant<P>& v_;
  VariantInfo info_;
  P p_;
  std::vector<Tensor> host_in_, in_, out_;
  std::vector<TensorSpec> out_specs_;
  Tensor workspace_;
  std::size_t ws_bytes_ = 0;
  Args<P> args_{};
  std::string ref_key_;
  std::shared_ptr<const Reference> ref_;
};

// Everything a Case of variant v on problem p will allocate, checked before
// any of it is: each input and output (twice for a GPU variant: the host copy
// and the device buffer), its workspace, and the double-precision copies the
// reference computes on (8 bytes per input and output element, 16 per output
// where the op also works out error magnitudes). SizeError,
// naming the tensor, the variant and the problem, when a product overflows or
// a buffer or the total is over the limit (core/checked_size.hpp).
template <class P> uint64_t check_case_bytes(const Variant<P>& v, const std::string& id, const P& p) {
  const std::string who = id + " on " + OpTraits<P>::spec(p);
  const uint64_t copies = v.device == Device::cpu ? 1 : 2;
  uint64_t total = 0;
  auto add = [&](const TensorSpec& s, const char* role, uint64_t reference_copies) {
    const std::string what = std::string(role) + " '" + s.name + "' (" + shape_string(s.shape) + " " +
                             dtype_name(s.dtype) + ", " + s.layout + ") of " + who;
    const uint64_t bytes = checked_bytes(s.shape, dtype_size(s.dtype), what);
    check_allocation(bytes, what);
    const uint64_t reference = checked_mul(bytes / dtype_size(s.dtype), reference_copies * sizeof(double), what);
    total = checked_add(total, checked_add(checked_mul(bytes, copies, what), reference, what), who);
  };
  constexpr bool magnitudes =
      requires(const P& q, const std::vector<std::vector<double>>& in, std::vector<std::vector<double>>& m) {
        OpTraits<P>::error_magnitude(q, in, m);
      };
  for (const TensorSpec& s : OpTraits<P>::inputs(p)) add(s, "input", 1);
  for (const TensorSpec& s : OpTraits<P>::outputs(p)) add(s, "output", magnitudes ? 2 : 1);
  // Scratch the double reference itself allocates (ffn: its hidden tensor), where the op declares one.
  if constexpr (requires { OpTraits<P>::reference_scratch_bytes(p); })
    total = checked_add(total, OpTraits<P>::reference_scratch_bytes(p), who);
  // Only now (every tensor known to be within the limit) is the variant's own formula asked.
  const uint64_t workspace = v.workspace_bytes ? uint64_t(v.workspace_bytes(p)) : 0;
  check_allocation(workspace, "the workspace of " + who);
  total = checked_add(total, workspace, who);
  check_allocation(total, who + " (inputs, outputs, workspace and the reference's double copies together)");
  return total;
}

// Fresh uniform(-scale, scale) inputs for problem p (TensorSpec::scale, 1 unless an op
// scales its weights), drawn in order from one seed.
template <class P> std::vector<Tensor> random_inputs(const P& p, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Tensor> inputs;
  for (const TensorSpec& s : OpTraits<P>::inputs(p)) {
    Tensor t(s.shape, s.dtype);
    t.fill_uniform(rng, -s.scale, s.scale);
    inputs.push_back(std::move(t));
  }
  return inputs;
}

template <class P> class OpHandleImpl final : public OpHandle {
  using Traits = OpTraits<P>;

 public:
  std::string name() const override { return Traits::name; }

  std::vector<VariantInfo> variants() const override {
    std::vector<VariantInfo> out;
    for (const Variant<P>& v : Registry<P>::variants()) out.push_back(info(v));
    return out;
  }

  std::vector<std::string> shapes(ShapeTable table, Device device) const override {
    std::vector<std::string> out;
    for (const P& p : Traits::shapes(table, device)) out.push_back(Traits::spec(p));
    return out;
  }
  std::string canonical(const std::string& spec) const override { return Traits::spec(Traits::parse(spec)); }
  std::string label(const std::string& spec) const override { return Traits::label(Traits::parse(spec)); }

  std::string unsupported_reason(std::size_t variant, const std::string& spec) const override {
    const Variant<P>& v = Registry<P>::variants().at(variant);
    const P p = Traits::parse(spec);
    if (v.supports && !v.supports(p)) return info(v).id() + " does not support " + Traits::spec(p);
    return "";
  }

  std::unique_ptr<ICase> make_case(std::size_t variant, const std::string& spec, uint64_t seed) const override {
    const P p = Traits::parse(spec);
    check_supported(variant, p);
    check_bytes(variant, p);
    return make(variant, p, random_inputs(p, seed), Traits::spec(p) + "#" + std::to_string(seed));
  }

  std::unique_ptr<ICase> make_case_from(std::size_t variant, std::vector<Tensor> inputs,
                                        const std::string& options) const override {
    std::vector<Shape> shapes;
    for (const Tensor& t : inputs) shapes.push_back(t.shape());
    const DType dtype = inputs.empty() ? DType::f32 : inputs[0].dtype();
    const P p = Traits::from_input_shapes(shapes, dtype, KeyValues(options));
    const std::vector<TensorSpec> expected = Traits::inputs(p);
    if (inputs.size() != expected.size())
      throw SpecError(std::string(Traits::name) + " with these shapes takes " + std::to_string(expected.size()) +
                      " inputs, got " + std::to_string(inputs.size()));
    for (std::size_t i = 0; i < expected.size(); ++i)
      if (inputs[i].shape() != expected[i].shape || inputs[i].dtype() != expected[i].dtype)
        throw SpecError("input " + std::to_string(i + 1) + " ('" + expected[i].name + "', " + expected[i].layout +
                        ") should be " + shape_string(expected[i].shape) + " " + dtype_name(expected[i].dtype) +
                        ", got " + shape_string(inputs[i].shape()) + " " + dtype_name(inputs[i].dtype()));
    check_supported(variant, p);
    check_bytes(variant, p);
    return make(variant, p, std::move(inputs), "");
  }

  std::vector<TensorSpec> input_specs(const std::string& spec) const override {
    return Traits::inputs(Traits::parse(spec));
  }
  void check_sizes(const std::string& spec) const override {
    const Variant<P> any_cpu_variant;  // no workspace, host buffers only: what every variant needs at least
    check_case_bytes(any_cpu_variant, Traits::name, Traits::parse(spec));
  }

  bool accepts_input_count(std::size_t count) const override {
    if constexpr (requires { Traits::input_counts(); }) {
      for (std::size_t n : Traits::input_counts())
        if (n == count) return true;
      return false;
    } else {
      return count == Traits::inputs(Traits::parse("")).size();
    }
  }

 private:
  static VariantInfo info(const Variant<P>& v) {
    return {Traits::name, v.name, v.device, v.lesson, v.threads, v.idea, v.baseline};
  }
  void check_supported(std::size_t variant, const P& p) const {
    const Variant<P>& v = Registry<P>::variants().at(variant);
    if (v.supports && !v.supports(p)) throw Unsupported(info(v).id() + " does not support " + Traits::spec(p));
  }
  void check_bytes(std::size_t variant, const P& p) const {
    const Variant<P>& v = Registry<P>::variants().at(variant);
    check_case_bytes(v, info(v).id(), p);
  }
  std::unique_ptr<ICase> make(std::size_t variant, const P& p, std::vector<Tensor> inputs, std::string key) const {
    const Variant<P>& v = Registry<P>::variants().at(variant);
    return std::make_unique<Case<P>>(v, info(v), p, std::move(inputs), std::move(key));
  }
};

template <class P> void register_op_handle() {
  static OpHandleImpl<P> handle;
  static const bool added = (add_op(&handle), true);
  (void)added;
}

}  // namespace convlab
