#include "ir/tensor.h"

#include <cmath>
#include <limits>

#include "runtime_stub/half_bits.h"
#include "support/error.h"

namespace modelc {

int64_t num_elements(const Shape& s) {
  for (int64_t d : s) {
    if (d == 0) return 0;
  }
  int64_t n = 1;
  for (int64_t d : s) {
    if (__builtin_mul_overflow(n, d, &n)) return std::numeric_limits<int64_t>::max();
  }
  return n;
}

void check_size_limit(const Shape& s, const std::string& what) {
  int64_t n = 1;
  for (int64_t d : s) {
    if (d == 0) return;
    n = n > kMaxTensorElements / d ? kMaxTensorElements + 1 : n * d;
  }
  if (n > kMaxTensorElements) {
    throw Error(what + " has more than " + std::to_string(kMaxTensorElements) +
                    " elements (2^31 - 1), modelc's limit for one tensor",
                "the generated GEMM, convolution and reduction kernels index a tensor with 32-bit ints");
  }
}

std::string shape_str(const Shape& s) {
  if (s.empty()) return "scalar";
  std::string r;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i) r += 'x';
    r += std::to_string(s[i]);
  }
  return r;
}

std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int64_t i = static_cast<int64_t>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

Tensor::Tensor(DType dtype, Shape shape)
    : dtype_(dtype),
      shape_(std::move(shape)),
      data_(std::make_shared<std::vector<uint8_t>>(
          static_cast<std::size_t>(num_elements(shape_)) * dtype_size(dtype_))) {}

Tensor::Tensor(DType dtype, Shape shape, std::vector<uint8_t> bytes)
    : dtype_(dtype), shape_(std::move(shape)) {
  const std::size_t want = static_cast<std::size_t>(num_elements(shape_)) * dtype_size(dtype_);
  if (bytes.size() != want) {
    throw Error("tensor of " + std::string(dtype_name(dtype_)) + " " + shape_str(shape_) + " needs " +
                std::to_string(want) + " bytes, got " + std::to_string(bytes.size()));
  }
  data_ = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
}

uint8_t* Tensor::mutable_raw() {
  if (!data_) return nullptr;
  if (data_.use_count() > 1) data_ = std::make_shared<std::vector<uint8_t>>(*data_);
  return data_->data();
}

Tensor Tensor::reshaped(Shape shape) const {
  if (num_elements(shape) != numel()) {
    throw Error("cannot reshape " + shape_str(shape_) + " to " + shape_str(shape));
  }
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

double Tensor::f64_at(int64_t i) const {
  const uint8_t* p = raw();
  switch (dtype_) {
    case DType::float32: { float v; std::memcpy(&v, p + 4 * i, 4); return v; }
    case DType::float16: { uint16_t v; std::memcpy(&v, p + 2 * i, 2); return mc_half::half_bits_to_float(v); }
    case DType::bfloat16: { uint16_t v; std::memcpy(&v, p + 2 * i, 2); return bfloat16_to_float(v); }
    case DType::int8: return static_cast<int8_t>(p[i]);
    case DType::uint8: return p[i];
    case DType::boolean: return p[i] ? 1.0 : 0.0;
    case DType::int32: { int32_t v; std::memcpy(&v, p + 4 * i, 4); return v; }
    case DType::int64: { int64_t v; std::memcpy(&v, p + 8 * i, 8); return static_cast<double>(v); }
    case DType::undefined: break;
  }
  throw Error("reading an element of an undefined tensor");
}

int64_t Tensor::i64_at(int64_t i) const {
  const uint8_t* p = raw();
  switch (dtype_) {
    case DType::int64: { int64_t v; std::memcpy(&v, p + 8 * i, 8); return v; }
    case DType::int32: { int32_t v; std::memcpy(&v, p + 4 * i, 4); return v; }
    case DType::int8: return static_cast<int8_t>(p[i]);
    case DType::uint8: return p[i];
    case DType::boolean: return p[i] ? 1 : 0;
    default: {
      const double d = f64_at(i);
      if (std::isnan(d)) return 0;
      if (d >= 9.2233720368547758e18) return INT64_MAX;
      if (d <= -9.2233720368547758e18) return INT64_MIN;
      return static_cast<int64_t>(d);
    }
  }
}

std::vector<double> Tensor::to_f64() const {
  std::vector<double> v(static_cast<std::size_t>(numel()));
  if (dtype_ == DType::float32) {
    const float* f = data<float>();
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = f[i];
    return v;
  }
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = f64_at(static_cast<int64_t>(i));
  return v;
}

std::vector<int64_t> Tensor::to_i64() const {
  std::vector<int64_t> v(static_cast<std::size_t>(numel()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = i64_at(static_cast<int64_t>(i));
  return v;
}

namespace {

template <class T>
void put(uint8_t* p, std::size_t i, T v) { std::memcpy(p + i * sizeof(T), &v, sizeof(T)); }

// double -> integer the way a C cast of the float value would, without UB on
// out-of-range values (they saturate).
template <class I>
I to_int(double d) {
  if (std::isnan(d)) return 0;
  const double lo = static_cast<double>(std::numeric_limits<I>::min());
  const double hi = static_cast<double>(std::numeric_limits<I>::max());
  if (d <= lo) return std::numeric_limits<I>::min();
  if (d >= hi) return std::numeric_limits<I>::max();
  return static_cast<I>(d);
}

}  // namespace

Tensor Tensor::from_f64(DType dtype, Shape shape, const std::vector<double>& v) {
  Tensor t(dtype, std::move(shape));
  if (static_cast<int64_t>(v.size()) != t.numel()) {
    throw Error("from_f64: " + std::to_string(v.size()) + " values for shape " + shape_str(t.shape_));
  }
  uint8_t* p = t.mutable_raw();
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double d = v[i];
    switch (dtype) {
      case DType::float32: put(p, i, static_cast<float>(d)); break;
      case DType::float16: put(p, i, mc_half::float_to_half_bits(static_cast<float>(d))); break;
      case DType::bfloat16: put(p, i, float_to_bfloat16(static_cast<float>(d))); break;
      case DType::int8: put(p, i, to_int<int8_t>(d)); break;
      case DType::uint8: put(p, i, to_int<uint8_t>(d)); break;
      case DType::int32: put(p, i, to_int<int32_t>(d)); break;
      case DType::int64: put(p, i, to_int<int64_t>(d)); break;
      case DType::boolean: put(p, i, static_cast<uint8_t>(d != 0.0)); break;
      case DType::undefined: throw Error("from_f64: undefined dtype");
    }
  }
  return t;
}

Tensor Tensor::from_i64(DType dtype, Shape shape, const std::vector<int64_t>& v) {
  Tensor t(dtype, std::move(shape));
  if (static_cast<int64_t>(v.size()) != t.numel()) {
    throw Error("from_i64: " + std::to_string(v.size()) + " values for shape " + shape_str(t.shape_));
  }
  uint8_t* p = t.mutable_raw();
  for (std::size_t i = 0; i < v.size(); ++i) {
    const int64_t x = v[i];
    switch (dtype) {
      case DType::int64: put(p, i, x); break;
      case DType::int32: put(p, i, static_cast<int32_t>(x)); break;  // wraps, as a C cast
      case DType::int8: put(p, i, static_cast<int8_t>(x)); break;
      case DType::uint8: put(p, i, static_cast<uint8_t>(x)); break;
      case DType::boolean: put(p, i, static_cast<uint8_t>(x != 0)); break;
      case DType::float32: put(p, i, static_cast<float>(x)); break;
      case DType::float16: put(p, i, mc_half::float_to_half_bits(static_cast<float>(x))); break;
      case DType::bfloat16: put(p, i, float_to_bfloat16(static_cast<float>(x))); break;
      case DType::undefined: throw Error("from_i64: undefined dtype");
    }
  }
  return t;
}

Tensor Tensor::from_f32(Shape shape, const std::vector<float>& v) {
  std::vector<uint8_t> bytes(v.size() * 4);
  if (!v.empty()) std::memcpy(bytes.data(), v.data(), bytes.size());
  return Tensor(DType::float32, std::move(shape), std::move(bytes));
}

Tensor Tensor::cast(DType to) const {
  if (to == dtype_) return *this;
  if (!is_float(dtype_) && !is_float(to)) return from_i64(to, shape_, to_i64());
  if (!is_float(dtype_)) return from_i64(to, shape_, to_i64());
  return from_f64(to, shape_, to_f64());
}

}  // namespace modelc
