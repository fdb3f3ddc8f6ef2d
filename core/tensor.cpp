#include "core/tensor.hpp"

#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "core/checked_size.hpp"

namespace convlab {

std::string shape_string(const Shape& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? "x" : "") + std::to_string(s[i]);
  return out.empty() ? "scalar" : out;
}

Tensor::Tensor(Shape shape, DType dtype, Device device) : shape_(std::move(shape)), dtype_(dtype), device_(device) {
  // The one checked size (core/checked_size.hpp): no product wraps, nothing over the limit is asked for.
  const std::string what = std::string("a ") + shape_string(shape_) + " " + dtype_name(dtype_) + " tensor";
  const uint64_t exact = checked_bytes(shape_, dtype_size(dtype_), what);
  const uint64_t n = exact == 0 ? 1 : exact;
  check_allocation(n, what);
  numel_ = int64_t(exact / dtype_size(dtype_));
  if (device_ == Device::cpu) {
    data_ = std::aligned_alloc(64, (n + 63) / 64 * 64);
    if (!data_)
      throw std::runtime_error("cannot allocate " + describe_bytes(n) + " of host memory for " + what +
                               " (out of memory)");
  } else {
    data_ = device_malloc(n);
  }
}

Tensor::~Tensor() { release(); }

void Tensor::release() noexcept {
  if (!data_) return;
  if (device_ == Device::cpu) std::free(data_);
  else device_free(data_);
  data_ = nullptr;
}

Tensor::Tensor(Tensor&& o) noexcept
    : shape_(std::move(o.shape_)), numel_(o.numel_), dtype_(o.dtype_), device_(o.device_), data_(o.data_) {
  o.data_ = nullptr;
  o.numel_ = 0;
}

Tensor& Tensor::operator=(Tensor&& o) noexcept {
  if (this != &o) {
    release();
    shape_ = std::move(o.shape_);
    numel_ = o.numel_;
    dtype_ = o.dtype_;
    device_ = o.device_;
    data_ = o.data_;
    o.data_ = nullptr;
    o.numel_ = 0;
  }
  return *this;
}

Tensor Tensor::to(Device device) const {
  Tensor t(shape_, dtype_, device);
  t.copy_from(*this);
  return t;
}

void Tensor::copy_from(const Tensor& o) {
  if (o.shape_ != shape_ || o.dtype_ != dtype_)
    throw std::invalid_argument("copy_from: " + shape_string(o.shape_) + " " + dtype_name(o.dtype_) + " into " +
                                shape_string(shape_) + " " + dtype_name(dtype_));
  copy_bytes(data_, device_, o.data_, o.device_, bytes());
}

void Tensor::poison() {
  if (device_ == Device::cpu) std::memset(data_, 0xFF, bytes());
  else device_memset(data_, 0xFF, bytes());
}

double Tensor::get(int64_t i) const {
  switch (dtype_) {
    case DType::f32: return data_as<float>()[i];
    case DType::f16: return half_to_float(data_as<uint16_t>()[i]);
    case DType::bf16: return bf16_to_float(data_as<uint16_t>()[i]);
  }
  return 0;
}

void Tensor::set(int64_t i, double v) {
  const float f = static_cast<float>(v);
  switch (dtype_) {
    case DType::f32: data_as<float>()[i] = f; break;
    case DType::f16: data_as<uint16_t>()[i] = float_to_half(f); break;
    case DType::bf16: data_as<uint16_t>()[i] = float_to_bf16(f); break;
  }
}

std::vector<double> Tensor::to_double() const {
  if (device_ != Device::cpu) return to(Device::cpu).to_double();
  std::vector<double> v(numel_);
  for (int64_t i = 0; i < numel_; ++i) v[i] = get(i);
  return v;
}

void Tensor::fill_uniform(std::mt19937_64& rng, double lo, double hi) {
  if (device_ != Device::cpu) throw std::logic_error("fill_uniform needs a host tensor");
  std::uniform_real_distribution<double> dist(lo, hi);
  for (int64_t i = 0; i < numel_; ++i) set(i, dist(rng));
}

}  // namespace convlab
