#include "ir/tensor.h"

#include <cmath>
#include <limits>
#include <type_traits>

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

namespace {

// ---- element storage -----------------------------------------------------------------------------
// Each DType's storage type (float16 and bfloat16 as tagged bit patterns), and the conversions
// between them, in one place: visit() calls a function with a value of the storage type.

struct Half {
  uint16_t bits;
};
struct BF16 {
  uint16_t bits;
};

template <class F>
decltype(auto) visit(DType t, F&& f) {
  switch (t) {
    case DType::float32: return f(float{});
    case DType::float16: return f(Half{});
    case DType::bfloat16: return f(BF16{});
    case DType::float64: return f(double{});
    case DType::int8: return f(int8_t{});
    case DType::uint8: return f(uint8_t{});
    case DType::int16: return f(int16_t{});
    case DType::uint16: return f(uint16_t{});
    case DType::int32: return f(int32_t{});
    case DType::uint32: return f(uint32_t{});
    case DType::int64: return f(int64_t{});
    case DType::uint64: return f(uint64_t{});
    case DType::boolean: return f(bool{});
    case DType::undefined: break;
  }
  throw Error("internal: an element of undefined type");
}

template <class T>
constexpr bool is_float_storage = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                                  std::is_same_v<T, Half> || std::is_same_v<T, BF16>;

template <class T>
T load(const uint8_t* p, int64_t i) {
  T v;
  std::memcpy(&v, p + static_cast<std::size_t>(i) * sizeof(T), sizeof(T));
  return v;
}
template <>
bool load<bool>(const uint8_t* p, int64_t i) {
  return p[i] != 0;
}

template <class T>
void put(uint8_t* p, std::size_t i, T v) {
  std::memcpy(p + i * sizeof(T), &v, sizeof(T));
}
template <>
void put<bool>(uint8_t* p, std::size_t i, bool v) {
  p[i] = v ? 1 : 0;
}

// A stored value as double (exact for every type but the 64-bit integers beyond 2^53).
template <class T>
double as_double(T v) {
  if constexpr (std::is_same_v<T, Half>) {
    return mc_half::half_bits_to_float(v.bits);
  } else if constexpr (std::is_same_v<T, BF16>) {
    return bfloat16_to_float(v.bits);
  } else if constexpr (std::is_same_v<T, bool>) {
    return v ? 1.0 : 0.0;
  } else {
    return static_cast<double>(v);
  }
}

// double -> integer the way a C cast of the float value would, without UB on
// out-of-range values (they saturate; NaN is 0).
template <class I>
I to_int(double d) {
  if (std::isnan(d)) return 0;
  const double lo = static_cast<double>(std::numeric_limits<I>::min());
  const double hi = static_cast<double>(std::numeric_limits<I>::max());  // 2^63, 2^64: >= catches them
  if (d <= lo) return std::numeric_limits<I>::min();
  if (d >= hi) return std::numeric_limits<I>::max();
  return static_cast<I>(d);
}

// double -> T: float types round once to nearest even, integers truncate and saturate, bool is != 0.
template <class T>
T from_double(double d) {
  if constexpr (std::is_same_v<T, Half>) {
    return Half{mc_half::float_to_half_bits(double_to_float_round_odd(d))};
  } else if constexpr (std::is_same_v<T, BF16>) {
    return BF16{float_to_bfloat16(double_to_float_round_odd(d))};
  } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    return static_cast<T>(d);
  } else if constexpr (std::is_same_v<T, bool>) {
    return d != 0.0;
  } else {
    return to_int<T>(d);
  }
}

// An integer (I: int64_t, or uint64_t for the unsigned types) -> T: integers wrap as a C cast,
// float types round to nearest even, bool is != 0.
template <class T, class I>
T from_integer(I x) {
  if constexpr (std::is_same_v<T, bool>) {
    return x != 0;
  } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    return static_cast<T>(x);
  } else if constexpr (is_float_storage<T>) {
    return from_double<T>(static_cast<double>(x));
  } else {
    return static_cast<T>(x);
  }
}

// One element of type S as type T: the reference interpreter's (and Cast's) conversion.
template <class T, class S>
T convert(S v) {
  if constexpr (std::is_same_v<S, T>) {
    return v;
  } else if constexpr (is_float_storage<S>) {
    return from_double<T>(as_double(v));
  } else if constexpr (std::is_same_v<S, bool>) {
    return from_integer<T>(int64_t{v ? 1 : 0});
  } else if constexpr (std::is_unsigned_v<S>) {
    return from_integer<T>(static_cast<uint64_t>(v));
  } else {
    return from_integer<T>(static_cast<int64_t>(v));
  }
}

}  // namespace

double Tensor::f64_at(int64_t i) const {
  const uint8_t* p = raw();
  return visit(dtype_, [&](auto tag) { return as_double(load<decltype(tag)>(p, i)); });
}

int64_t Tensor::i64_at(int64_t i) const {
  const uint8_t* p = raw();
  return visit(dtype_, [&](auto tag) -> int64_t {
    using T = decltype(tag);
    const T v = load<T>(p, i);
    if constexpr (is_float_storage<T>) {
      return to_int<int64_t>(as_double(v));
    } else if constexpr (std::is_same_v<T, bool>) {
      return v ? 1 : 0;
    } else {
      return static_cast<int64_t>(v);  // uint64 beyond INT64_MAX: its bit pattern (wraps)
    }
  });
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

Tensor Tensor::from_f64(DType dtype, Shape shape, const std::vector<double>& v) {
  if (dtype == DType::undefined) throw Error("from_f64: undefined dtype");
  Tensor t(dtype, std::move(shape));
  if (static_cast<int64_t>(v.size()) != t.numel()) {
    throw Error("from_f64: " + std::to_string(v.size()) + " values for shape " + shape_str(t.shape_));
  }
  uint8_t* p = t.mutable_raw();
  visit(dtype, [&](auto tag) {
    using T = decltype(tag);
    for (std::size_t i = 0; i < v.size(); ++i) put(p, i, from_double<T>(v[i]));
  });
  return t;
}

Tensor Tensor::from_i64(DType dtype, Shape shape, const std::vector<int64_t>& v) {
  if (dtype == DType::undefined) throw Error("from_i64: undefined dtype");
  Tensor t(dtype, std::move(shape));
  if (static_cast<int64_t>(v.size()) != t.numel()) {
    throw Error("from_i64: " + std::to_string(v.size()) + " values for shape " + shape_str(t.shape_));
  }
  uint8_t* p = t.mutable_raw();
  visit(dtype, [&](auto tag) {
    using T = decltype(tag);
    for (std::size_t i = 0; i < v.size(); ++i) put(p, i, from_integer<T>(v[i]));
  });
  return t;
}

Tensor Tensor::from_f32(Shape shape, const std::vector<float>& v) {
  std::vector<uint8_t> bytes(v.size() * 4);
  if (!v.empty()) std::memcpy(bytes.data(), v.data(), bytes.size());
  return Tensor(DType::float32, std::move(shape), std::move(bytes));
}

Tensor Tensor::cast(DType to) const {
  if (to == dtype_) return *this;
  if (to == DType::undefined) throw Error("cast: undefined dtype");
  Tensor t(to, shape_);
  const uint8_t* src = raw();
  uint8_t* dst = t.mutable_raw();
  const int64_t n = numel();
  visit(dtype_, [&](auto from) {
    using S = decltype(from);
    visit(to, [&](auto into) {
      using T = decltype(into);
      for (int64_t i = 0; i < n; ++i) put(dst, static_cast<std::size_t>(i), convert<T>(load<S>(src, i)));
    });
  });
  return t;
}

}  // namespace modelc
