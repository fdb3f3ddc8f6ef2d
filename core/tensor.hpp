// core/tensor.hpp — an owning, typed, n-dimensional buffer on the host or a GPU.
//
// Host memory is 64-byte aligned (a cache line, and enough for any SIMD load).
// A Tensor knows its shape and element type but not its layout: layouts are a
// contract of each operation (NHWC, KRSC, row-major), stated where the buffers
// are made. Tensors move but never copy implicitly; use to() or copy_from().
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/device.hpp"
#include "core/dtype.hpp"

namespace convlab {

using Shape = std::vector<int64_t>;
std::string shape_string(const Shape& s);  // "8x56x56x64"

class Tensor {
 public:
  Tensor() = default;
  Tensor(Shape shape, DType dtype, Device device = Device::cpu);
  ~Tensor();
  Tensor(Tensor&& other) noexcept;
  Tensor& operator=(Tensor&& other) noexcept;
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;

  const Shape& shape() const { return shape_; }
  int64_t dim(int i) const { return shape_.at(i); }
  int64_t numel() const { return numel_; }
  std::size_t bytes() const { return numel_ * dtype_size(dtype_); }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  void* data() { return data_; }
  const void* data() const { return data_; }
  template <class T> T* data_as() { return static_cast<T*>(data_); }
  template <class T> const T* data_as() const { return static_cast<const T*>(data_); }

  Tensor to(Device device) const;       // a copy on `device`
  void copy_from(const Tensor& other);  // same shape and dtype, any devices

  // Fills every byte with 0xFF: NaN in f32, f16 and bf16 alike, so an element a
  // kernel forgets to write can never pass a comparison.
  void poison();

  // Host-side value access, converting through double (host tensors only).
  double get(int64_t i) const;
  void set(int64_t i, double v);  // rounds to the tensor's dtype
  std::vector<double> to_double() const;
  // Uniform in [lo, hi), rounded to the dtype: fresh random data, never zeros.
  void fill_uniform(std::mt19937_64& rng, double lo = -1.0, double hi = 1.0);

 private:
  void release() noexcept;
  Shape shape_;
  int64_t numel_ = 0;
  DType dtype_ = DType::f32;
  Device device_ = Device::cpu;
  void* data_ = nullptr;
};

}  // namespace convlab
