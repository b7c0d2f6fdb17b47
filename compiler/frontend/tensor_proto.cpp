// compiler/frontend/tensor_proto.cpp — onnx.TensorProto -> Tensor, and --shape parsing.
#include <cstring>
#include <limits>

#include "frontend/import_detail.h"
#include "frontend/onnx_import.h"
#include "onnx/onnx_pb.h"
#include "support/error.h"

namespace modelc {

namespace {

// Which typed field carries a dtype's values when raw_data is not used
// (onnx.proto: float16/bfloat16 bit patterns, int8/uint8 and bool live in int32_data).
enum class Field { float_data, int32_data, int64_data };

Field field_of(DType t) {
  switch (t) {
    case DType::float32: return Field::float_data;
    case DType::int64: return Field::int64_data;
    default: return Field::int32_data;
  }
}

const char* field_name(Field f) {
  switch (f) {
    case Field::float_data: return "float_data";
    case Field::int32_data: return "int32_data";
    case Field::int64_data: return "int64_data";
  }
  return "?";
}

template <class T>
void put(std::vector<uint8_t>& b, std::size_t i, T v) {
  std::memcpy(b.data() + i * sizeof(T), &v, sizeof(T));
}

}  // namespace

int64_t detail::checked_num_bytes(const Shape& shape, DType dtype, const std::string& what) {
  // Limit to what a size_t and protobuf can possibly hold; the shape comes from the file.
  constexpr int64_t kLimit = int64_t{1} << 52;
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw Error(what + " has a negative dimension in its shape " + shape_str(shape));
    if (d != 0 && n > kLimit / d) throw Error(what + " is too large (shape " + shape_str(shape) + ")");
    n *= d;
  }
  if (n > kLimit / 8) throw Error(what + " is too large (shape " + shape_str(shape) + ")");
  return n * static_cast<int64_t>(dtype_size(dtype));
}

DType detail::checked_dtype(int code, const std::string& what) {
  const DType t = dtype_from_onnx(code);
  if (t == DType::undefined) {
    throw Error(what + " has type " + onnx_dtype_name(code) + ", which modelc does not support",
                code == 11 ? "re-export the model with float32 instead of DOUBLE" : "");
  }
  return t;
}

Tensor tensor_from_proto(const onnx::TensorProto& t, const std::string& what) {
  const DType dtype = detail::checked_dtype(t.data_type(), what);
  Shape shape(t.dims().begin(), t.dims().end());
  const int64_t nbytes = detail::checked_num_bytes(shape, dtype, what);
  const int64_t numel = num_elements(shape);
  if (t.has_segment()) throw Error(what + " is segmented, which modelc does not support");
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    throw Error(what + " has external data that was not loaded");
  }

  // Exactly one place holds the data (or none, for an empty tensor).
  std::vector<std::string> sources;
  if (t.has_raw_data()) sources.push_back("raw_data");
  if (t.float_data_size()) sources.push_back("float_data");
  if (t.int32_data_size()) sources.push_back("int32_data");
  if (t.int64_data_size()) sources.push_back("int64_data");
  if (t.double_data_size()) sources.push_back("double_data");
  if (t.uint64_data_size()) sources.push_back("uint64_data");
  if (t.string_data_size()) sources.push_back("string_data");
  if (sources.size() > 1) {
    throw Error(what + " stores its data in both " + sources[0] + " and " + sources[1]);
  }

  std::vector<uint8_t> bytes(static_cast<std::size_t>(nbytes));
  if (t.has_raw_data()) {
    const std::string& raw = t.raw_data();
    if (static_cast<int64_t>(raw.size()) != nbytes) {
      throw Error(what + " (" + dtype_name(dtype) + "[" + shape_str(shape) + "]) needs " + std::to_string(nbytes) +
                  " bytes of raw_data, it has " + std::to_string(raw.size()));
    }
    if (nbytes) std::memcpy(bytes.data(), raw.data(), raw.size());
    if (dtype == DType::boolean) {
      for (uint8_t& b : bytes) b = b ? 1 : 0;
    }
    return Tensor(dtype, std::move(shape), std::move(bytes));
  }
  if (sources.empty()) {
    if (numel != 0) throw Error(what + " (" + dtype_name(dtype) + "[" + shape_str(shape) + "]) has no data");
    return Tensor(dtype, std::move(shape), std::move(bytes));
  }

  const Field want = field_of(dtype);
  if (sources[0] != field_name(want)) {
    throw Error(what + " is " + dtype_name(dtype) + " but stores its data in " + sources[0] + " (expected " +
                field_name(want) + " or raw_data)");
  }
  auto check_count = [&](int count) {
    if (count != numel) {
      throw Error(what + " (" + dtype_name(dtype) + "[" + shape_str(shape) + "]) needs " + std::to_string(numel) +
                  " values in " + field_name(want) + ", it has " + std::to_string(count));
    }
  };
  switch (want) {
    case Field::float_data:
      check_count(t.float_data_size());
      for (int i = 0; i < t.float_data_size(); ++i) put(bytes, i, t.float_data(i));
      break;
    case Field::int64_data:
      check_count(t.int64_data_size());
      for (int i = 0; i < t.int64_data_size(); ++i) put(bytes, i, static_cast<int64_t>(t.int64_data(i)));
      break;
    case Field::int32_data: {
      check_count(t.int32_data_size());
      for (int i = 0; i < t.int32_data_size(); ++i) {
        const int32_t v = t.int32_data(i);
        auto range = [&](int64_t lo, int64_t hi) {
          if (v < lo || v > hi) {
            throw Error(what + ": int32_data value " + std::to_string(v) + " at " + std::to_string(i) +
                        " is out of range for " + dtype_name(dtype));
          }
        };
        switch (dtype) {
          case DType::int32: put(bytes, i, v); break;
          case DType::int8: range(-128, 127); put(bytes, i, static_cast<int8_t>(v)); break;
          case DType::uint8: range(0, 255); put(bytes, i, static_cast<uint8_t>(v)); break;
          case DType::boolean: put(bytes, i, static_cast<uint8_t>(v != 0)); break;
          case DType::float16:
          case DType::bfloat16: range(0, 65535); put(bytes, i, static_cast<uint16_t>(v)); break;
          default: throw Error("internal: unexpected dtype for int32_data");
        }
      }
      break;
    }
  }
  return Tensor(dtype, std::move(shape), std::move(bytes));
}

Shape parse_shape(const std::string& s) {
  const std::string bad = "shape '" + s + "' is not a list of positive dims like 1x3x224x224";
  if (s.empty()) throw Error(bad);
  Shape r;
  std::size_t i = 0;
  while (true) {
    if (i >= s.size() || s[i] < '0' || s[i] > '9') throw Error(bad);
    int64_t v = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      const int d = s[i++] - '0';
      if (v > (std::numeric_limits<int32_t>::max() - d) / 10) throw Error("shape '" + s + "': dim too large");
      v = v * 10 + d;
    }
    if (v <= 0) throw Error(bad);
    r.push_back(v);
    if (i == s.size()) break;
    if (s[i] != 'x' && s[i] != 'X' && s[i] != ',') throw Error(bad);
    ++i;
  }
  return r;
}

}  // namespace modelc
