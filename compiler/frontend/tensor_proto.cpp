// compiler/frontend/tensor_proto.cpp — onnx.TensorProto -> Tensor, and --shape parsing.
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>

#include "frontend/import_detail.h"
#include "frontend/onnx_import.h"
#include "onnx/onnx_pb.h"
#include "support/error.h"

namespace modelc {

namespace {

// What onnx.proto says about each TensorProto.DataType code libonnx knows (1 to 16): the bytes
// of one element in raw_data, and the typed field that holds the values otherwise (float16,
// bfloat16 and the small integers live in int32_data; complex numbers take two values each).
struct OnnxType {
  const char* name;
  int64_t size;  ///< bytes per element in raw_data (0: string, which has no raw form)
  const char* field;
  int64_t values_per_element;
};

const OnnxType* onnx_type(int code) {
  static const OnnxType types[] = {
      {"float32", 4, "float_data", 1},   {"uint8", 1, "int32_data", 1},      {"int8", 1, "int32_data", 1},
      {"uint16", 2, "int32_data", 1},    {"int16", 2, "int32_data", 1},      {"int32", 4, "int32_data", 1},
      {"int64", 8, "int64_data", 1},     {"string", 0, "string_data", 1},    {"bool", 1, "int32_data", 1},
      {"float16", 2, "int32_data", 1},   {"float64", 8, "double_data", 1},   {"uint32", 4, "uint64_data", 1},
      {"uint64", 8, "uint64_data", 1},   {"complex64", 8, "float_data", 2},  {"complex128", 16, "double_data", 2},
      {"bfloat16", 2, "int32_data", 1},
  };
  if (code < 1 || code > static_cast<int>(sizeof(types) / sizeof(types[0]))) return nullptr;
  return &types[code - 1];
}

// The data fields `t` uses, with their value counts, in onnx.proto's order.
std::vector<std::pair<const char*, int64_t>> data_fields(const onnx::TensorProto& t) {
  std::vector<std::pair<const char*, int64_t>> r;
  if (t.has_raw_data()) r.emplace_back("raw_data", static_cast<int64_t>(t.raw_data().size()));
  if (t.float_data_size()) r.emplace_back("float_data", t.float_data_size());
  if (t.int32_data_size()) r.emplace_back("int32_data", t.int32_data_size());
  if (t.string_data_size()) r.emplace_back("string_data", t.string_data_size());
  if (t.int64_data_size()) r.emplace_back("int64_data", t.int64_data_size());
  if (t.double_data_size()) r.emplace_back("double_data", t.double_data_size());
  if (t.uint64_data_size()) r.emplace_back("uint64_data", t.uint64_data_size());
  return r;
}

template <class T>
void put(std::vector<uint8_t>& b, std::size_t i, T v) {
  std::memcpy(b.data() + i * sizeof(T), &v, sizeof(T));
}

}  // namespace

void detail::check_tensor_proto(const onnx::TensorProto& t, const std::string& what) {
  const OnnxType* type = onnx_type(t.data_type());
  if (!type) {
    throw Error(what + " has data_type " + std::to_string(t.data_type()) + ", which is not an ONNX tensor type");
  }
  const Shape shape(t.dims().begin(), t.dims().end());
  check_shape(shape, t.data_type(), what);
  const std::string typed = what + " (" + type->name + "[" + shape_str(shape) + "])";
  const int64_t numel = num_elements(shape);
  const auto fields = data_fields(t);
  if (fields.size() > 1) {
    throw Error(what + " stores its data in both " + fields[0].first + " and " + fields[1].first);
  }
  // External data: its file and length are find_external_data's to check.
  if (t.data_location() == onnx::TensorProto::EXTERNAL) return;
  if (fields.empty()) {
    if (numel != 0) throw Error(typed + " has no data");
    return;
  }
  const auto& [field, count] = fields[0];
  if (t.has_raw_data()) {
    if (type->size == 0) throw Error(what + " is a string tensor, which cannot store its data in raw_data");
    if (count != numel * type->size) {
      throw Error(typed + " needs " + std::to_string(numel * type->size) + " bytes of raw_data, it has " +
                  std::to_string(count));
    }
    return;
  }
  if (std::strcmp(field, type->field) != 0) {
    throw Error(what + " is " + type->name + " but stores its data in " + field + " (expected " + type->field +
                (type->size ? " or raw_data)" : ")"));
  }
  if (count != numel * type->values_per_element) {
    throw Error(typed + " needs " + std::to_string(numel * type->values_per_element) + " values in " + field +
                ", it has " + std::to_string(count));
  }
}

void detail::check_shape(const Shape& shape, int data_type, const std::string& what) {
  for (int64_t d : shape) {
    if (d < 0) throw Error(what + " has a negative dimension in its shape " + shape_str(shape));
  }
  const OnnxType* type = onnx_type(data_type);
  check_size_limit(shape, what + " (" + (type ? type->name : onnx_dtype_name(data_type)) + "[" + shape_str(shape) + "])");
}

DType detail::checked_dtype(int code, const std::string& what) {
  const DType t = dtype_from_onnx(code);
  if (t == DType::undefined) {
    throw Error(what + " has type " + onnx_dtype_name(code) + ", which modelc does not support");
  }
  return t;
}

Tensor tensor_from_proto(const onnx::TensorProto& t, const std::string& what) {
  // Everything about the sizes is checked before anything is allocated.
  detail::check_tensor_proto(t, what);
  const DType dtype = detail::checked_dtype(t.data_type(), what);
  if (t.has_segment()) throw Error(what + " is segmented, which modelc does not support");
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    throw Error(what + " has external data that was not loaded");
  }
  Shape shape(t.dims().begin(), t.dims().end());
  std::vector<uint8_t> bytes(static_cast<std::size_t>(num_elements(shape)) * dtype_size(dtype));
  if (t.has_raw_data()) {
    if (!bytes.empty()) std::memcpy(bytes.data(), t.raw_data().data(), bytes.size());
    if (dtype == DType::boolean) {
      for (uint8_t& b : bytes) b = b ? 1 : 0;
    }
    return Tensor(dtype, std::move(shape), std::move(bytes));
  }
  // The typed field of the dtype, with as many values as elements (check_tensor_proto).
  switch (dtype) {
    case DType::float32:
      for (int i = 0; i < t.float_data_size(); ++i) put(bytes, i, t.float_data(i));
      break;
    case DType::int64:
      for (int i = 0; i < t.int64_data_size(); ++i) put(bytes, i, static_cast<int64_t>(t.int64_data(i)));
      break;
    case DType::float64:
      for (int i = 0; i < t.double_data_size(); ++i) put(bytes, i, t.double_data(i));
      break;
    case DType::uint64:
      for (int i = 0; i < t.uint64_data_size(); ++i) put(bytes, i, static_cast<uint64_t>(t.uint64_data(i)));
      break;
    case DType::uint32:
      for (int i = 0; i < t.uint64_data_size(); ++i) {
        const uint64_t v = t.uint64_data(i);
        if (v > UINT32_MAX) {
          throw Error(what + ": uint64_data value " + std::to_string(v) + " at " + std::to_string(i) +
                      " is out of range for uint32");
        }
        put(bytes, i, static_cast<uint32_t>(v));
      }
      break;
    default:
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
          case DType::int16: range(-32768, 32767); put(bytes, i, static_cast<int16_t>(v)); break;
          case DType::uint16: range(0, 65535); put(bytes, i, static_cast<uint16_t>(v)); break;
          case DType::boolean: put(bytes, i, static_cast<uint8_t>(v != 0)); break;
          case DType::float16:
          case DType::bfloat16: range(0, 65535); put(bytes, i, static_cast<uint16_t>(v)); break;
          default: throw Error("internal: unexpected dtype for int32_data");
        }
      }
      break;
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
