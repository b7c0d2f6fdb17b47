// runtime_stub/npy.h — tensor files: .npy read/write and ONNX TensorProto (.pb) read, header-only
// and standalone (the C++17 standard library and POSIX only: it ships in every generated folder,
// with no modelc or protobuf behind it). It is modelc's one codec: the generated program uses it,
// and the compiler's compiler/io/tensor_io.cpp is a thin adapter over it.
//
//   mc_npy::Array a = mc_npy::read("x.npy");      // or "input_0.pb" (by extension)
//   a = mc_npy::read("x.npy", kFloat32, {2, 3});   // refused unread when larger than such a file
//   mc_npy::write_npy("out/y.npy", a);             // atomic: temp file in out/, then rename
//
// Files are read through regular_file.h: regular files only (a FIFO, /dev/zero or a directory is
// refused at once), never more than their size when opened, and, where the tensor a file must
// hold is known, never more than such a file can be. The decoders (decode_npy, decode_pb: bytes
// in, Array out) allocate nothing for data before the bytes are known to hold it.
//
// .npy: format versions 1.0, 2.0 and 3.0, C order (Fortran order only where it lays out the same
// bytes: at most one dimension other than 1), little-endian, dtypes float32 '<f4', float16 '<f2',
// float64 '<f8', int64 '<i8', int32 '<i4', int16 '<i2', int8 '|i1', uint64 '<u8', uint32 '<u4',
// uint16 '<u2', uint8 '|u1', bool '|b1'. Writes version 1.0 (2.0 when the header needs it), header
// padded to a multiple of 64 bytes as numpy does, byte-identical to np.save.
// bfloat16 has no numpy dtype: it is neither read nor written as .npy itself; a bfloat16 tensor
// travels as float32 .npy instead (widen_bfloat16: exact; read_input: a float32 .npy for a
// bfloat16 input, rounded to nearest even).
// .pb: a serialized onnx.TensorProto, decoded by hand (protobuf wire format) from the fields
// dims (1), data_type (2), float_data (4), int32_data (5), int64_data (7), name (8), raw_data (9),
// double_data (10) and uint64_data (11), packed or not, for the dtypes above and bfloat16; the
// data in exactly one of raw_data or the dtype's typed field (float_data for float32, double_data
// for float64, int64_data for int64, uint64_data for uint32/uint64, int32_data for the rest:
// float16/bfloat16 bit patterns, 8- and 16-bit integers in range, bools); segments, external
// data, string data and other dtypes (string, complex) are refused.
// Both: at most 64 dimensions (numpy's limit), at most 2^49 elements.
// Every problem (unreadable, malformed, truncated, unsupported) throws mc_npy::Error, whose
// message names the file and says what is wrong (and, where there is one, what to do).
//
// dtype codes are ONNX's TensorProto.DataType numbers, as in the generated C API.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "half_bits.h"
#include "regular_file.h"

namespace mc_npy {

/// \brief ONNX TensorProto.DataType codes of the supported element types.
enum DTypeCode : int {
  kFloat32 = 1,
  kUint8 = 2,
  kInt8 = 3,
  kUint16 = 4,
  kInt16 = 5,
  kInt32 = 6,
  kInt64 = 7,
  kBool = 9,
  kFloat16 = 10,
  kFloat64 = 11,
  kUint32 = 12,
  kUint64 = 13,
  kBfloat16 = 16,  ///< read from .pb files only: numpy has no bfloat16
};

/// \brief A file problem. what() is "FILE: MESSAGE; HINT" (without the parts that are empty);
/// the parts are kept apart for callers that print them their own way (the compiler does).
class Error : public std::runtime_error {
 public:
  Error(std::string file, std::string message, std::string hint = {})
      : std::runtime_error((file.empty() ? "" : file + ": ") + message + (hint.empty() ? "" : "; " + hint)),
        file_(std::move(file)),
        message_(std::move(message)),
        hint_(std::move(hint)) {}
  /// \brief The file (or what was decoded); "" when the problem is not about one (encode_npy).
  const std::string& file() const { return file_; }
  /// \brief What is wrong.
  const std::string& message() const { return message_; }
  /// \brief What to do about it; "" when there is nothing to suggest.
  const std::string& hint() const { return hint_; }

 private:
  std::string file_, message_, hint_;
};

/// \brief Bytes per element of a supported dtype code; 0 for any other code.
inline std::size_t dtype_size(int code) {
  switch (code) {
    case kFloat32: case kInt32: case kUint32: return 4;
    case kInt64: case kUint64: case kFloat64: return 8;
    case kFloat16: case kBfloat16: case kInt16: case kUint16: return 2;
    case kUint8: case kInt8: case kBool: return 1;
    default: return 0;
  }
}

/// \brief "float32", "int64", ... (the names modelc prints), for unsupported codes too.
inline std::string dtype_name(int code) {
  switch (code) {
    case kFloat32: return "float32";
    case kUint8: return "uint8";
    case kInt8: return "int8";
    case kInt32: return "int32";
    case kInt64: return "int64";
    case kBool: return "bool";
    case kFloat16: return "float16";
    case kBfloat16: return "bfloat16";
    case kUint16: return "uint16";
    case kInt16: return "int16";
    case kFloat64: return "float64";
    case kUint32: return "uint32";
    case kUint64: return "uint64";
    case 0: return "undefined";
    case 8: return "string";
    case 14: return "complex64";
    case 15: return "complex128";
    default: return "code " + std::to_string(code);
  }
}

/// \brief "1x3x224x224"; "" for a scalar.
inline std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s;
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
  return s;
}

/// \brief "float32[1x3x224x224]", "int64[]" for a scalar.
inline std::string type_str(int dtype, const std::vector<int64_t>& shape) {
  return dtype_name(dtype) + "[" + shape_str(shape) + "]";
}

/// \brief A dense C-order tensor: dtype code, shape, little-endian element bytes (bool as 0/1).
struct Array {
  int dtype = 0;
  std::vector<int64_t> shape;
  std::vector<unsigned char> data;
  std::string name;  ///< the TensorProto's name when read from a .pb ("" otherwise)

  /// \brief The number of elements (1 for a scalar).
  std::size_t numel() const {
    std::size_t n = 1;
    for (int64_t d : shape) n *= static_cast<std::size_t>(d);
    return n;
  }
};

namespace detail {

[[noreturn]] inline void fail(const std::string& what, const std::string& message, const std::string& hint = {}) {
  throw Error(what, message, hint);
}

// The most dimensions a tensor file may give (numpy's own limit).
constexpr std::size_t kMaxRank = 64;

[[noreturn]] inline void too_many_dims(const std::string& what) {
  fail(what, "the shape has more than " + std::to_string(kMaxRank) + " dimensions, which is not supported");
}

// numel * dtype size with overflow checks (the shape comes from a file): at most kMaxRank dims,
// every partial product of the dims at most 2^52 and the element count at most 2^49, far beyond
// any file there can be.
inline uint64_t byte_count(const std::vector<int64_t>& shape, int dtype, const std::string& what) {
  constexpr uint64_t kLimit = uint64_t{1} << 52;
  if (shape.size() > kMaxRank) too_many_dims(what);
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) fail(what, "negative dimension in shape " + shape_str(shape));
    if (d != 0 && n > kLimit / static_cast<uint64_t>(d)) fail(what, "shape " + shape_str(shape) + " is too large");
    n *= static_cast<uint64_t>(d);
  }
  if (n > kLimit / 8) fail(what, "shape " + shape_str(shape) + " is too large");
  return n * dtype_size(dtype);
}

// The extension of the file `path` names, lower-cased ("" when it has none): ".npy".
inline std::string extension(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  const std::size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  std::string e = path.substr(dot);
  for (char& c : e) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return e;
}

// The Python dict literal of a .npy header: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

class HeaderReader {
 public:
  HeaderReader(const std::string& s, const std::string& what) : s_(s), what_(what) {}

  NpyHeader parse() {
    NpyHeader h;
    bool has_descr = false, has_order = false, has_shape = false;
    ws();
    expect('{');
    ws();
    while (peek() != '}') {
      const std::string key = str();
      ws();
      expect(':');
      ws();
      if (key == "descr") {
        if (has_descr) bad("key 'descr' repeats");
        has_descr = true;
        h.descr = str();
      } else if (key == "fortran_order") {
        if (has_order) bad("key 'fortran_order' repeats");
        has_order = true;
        if (s_.compare(pos_, 4, "True") == 0) {
          h.fortran_order = true;
          pos_ += 4;
        } else if (s_.compare(pos_, 5, "False") == 0) {
          pos_ += 5;
        } else {
          bad("'fortran_order' is not True or False");
        }
      } else if (key == "shape") {
        if (has_shape) bad("key 'shape' repeats");
        has_shape = true;
        h.shape = tuple();
      } else {
        bad("unexpected key '" + key + "'");
      }
      ws();
      if (peek() == ',') {
        ++pos_;
        ws();
      } else if (peek() != '}') {
        bad("expected ',' or '}'");
      }
    }
    ++pos_;
    ws();
    if (pos_ != s_.size()) bad("text after the closing '}'");
    if (!has_descr || !has_order || !has_shape) bad("the keys 'descr', 'fortran_order' and 'shape' are required");
    return h;
  }

 private:
  [[noreturn]] void bad(const std::string& why) const {
    fail(what_, "malformed .npy header (" + why + " at offset " + std::to_string(pos_) + ")");
  }
  char peek() const {
    if (pos_ >= s_.size()) bad("unexpected end of header");
    return s_[pos_];
  }
  void ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  void expect(char c) {
    if (peek() != c) bad(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string str() {
    const char q = peek();
    if (q != '\'' && q != '"') bad("expected a quoted string");
    ++pos_;
    std::string r;
    while (peek() != q) {
      if (s_[pos_] == '\\') bad("escapes are not supported in header strings");
      r += s_[pos_++];
    }
    ++pos_;
    return r;
  }
  std::vector<int64_t> tuple() {
    expect('(');
    std::vector<int64_t> dims;
    ws();
    while (peek() != ')') {
      if (peek() < '0' || peek() > '9') bad("expected a non-negative integer in the shape");
      int64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        const int d = s_[pos_++] - '0';
        if (v > (std::numeric_limits<int64_t>::max() - d) / 10) bad("shape dimension too large");
        v = v * 10 + d;
      }
      if (peek() == 'L') ++pos_;  // Python 2 longs
      dims.push_back(v);
      ws();
      if (peek() == ',') {
        ++pos_;
        ws();
      } else if (peek() != ')') {
        bad("expected ',' or ')' in the shape");
      }
    }
    ++pos_;
    return dims;
  }

  const std::string& s_;
  const std::string& what_;
  std::size_t pos_ = 0;
};

// descr -> dtype code. One-byte types carry no byte order: numpy writes '|', and '<' / '>' mean the
// same for them.
inline int dtype_from_descr(const std::string& d, const std::string& what) {
  if (d.size() >= 2) {
    const char order = d[0];
    const std::string code = d.substr(1);
    if ((code == "i1" || code == "u1" || code == "b1") && (order == '|' || order == '<' || order == '>')) {
      return code == "i1" ? kInt8 : code == "u1" ? kUint8 : kBool;
    }
    if (order == '<') {
      if (code == "f4") return kFloat32;
      if (code == "f2") return kFloat16;
      if (code == "f8") return kFloat64;
      if (code == "i2") return kInt16;
      if (code == "i4") return kInt32;
      if (code == "i8") return kInt64;
      if (code == "u2") return kUint16;
      if (code == "u4") return kUint32;
      if (code == "u8") return kUint64;
    }
    if (order == '>') {
      fail(what, "big-endian data ('" + d + "') is not supported",
           "save the array little-endian: np.save(f, a.astype(a.dtype.newbyteorder('<')))");
    }
  }
  fail(what, "dtype '" + d + "' is not supported (supported: <f4 <f2 <f8 <i8 <i4 <i2 |i1 <u8 <u4 <u2 |u1 |b1)");
}

inline const char* descr_of(int dtype) {
  switch (dtype) {
    case kFloat32: return "<f4";
    case kFloat16: return "<f2";
    case kFloat64: return "<f8";
    case kInt64: return "<i8";
    case kInt32: return "<i4";
    case kInt16: return "<i2";
    case kInt8: return "|i1";
    case kUint64: return "<u8";
    case kUint32: return "<u4";
    case kUint16: return "<u2";
    case kUint8: return "|u1";
    case kBool: return "|b1";
    default: return nullptr;
  }
}

// ---- protobuf wire format (the subset a TensorProto needs) ---------------------------------------

class Wire {
 public:
  Wire(const unsigned char* p, std::size_t n, const std::string& what) : p_(p), end_(p + n), what_(what) {}
  bool done() const { return p_ == end_; }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (p_ == end_) truncated("a varint");
      const unsigned char b = *p_++;
      if (shift == 63 && (b & 0x7e)) fail(what_, "not a valid serialized onnx.TensorProto (varint overflows 64 bits)");
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    fail(what_, "not a valid serialized onnx.TensorProto (varint longer than 10 bytes)");
  }
  // A length-delimited field's payload: (pointer, size).
  std::pair<const unsigned char*, std::size_t> bytes() {
    const uint64_t n = varint();
    if (n > static_cast<uint64_t>(end_ - p_)) truncated("a length-delimited field");
    const unsigned char* at = p_;
    p_ += n;
    return {at, static_cast<std::size_t>(n)};
  }
  uint32_t fixed32() {
    if (end_ - p_ < 4) truncated("a 32-bit field");
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = (v << 8) | p_[i];
    p_ += 4;
    return v;
  }
  uint64_t fixed64() {
    if (end_ - p_ < 8) truncated("a 64-bit field");
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | p_[i];
    p_ += 8;
    return v;
  }
  void skip(int wire_type, uint64_t field) {
    switch (wire_type) {
      case 0: varint(); return;
      case 1:
        if (end_ - p_ < 8) truncated("a 64-bit field");
        p_ += 8;
        return;
      case 2: bytes(); return;
      case 5: fixed32(); return;
      default:
        fail(what_, "not a valid serialized onnx.TensorProto (field " + std::to_string(field) + " has wire type " +
                        std::to_string(wire_type) + ")");
    }
  }
  [[noreturn]] void truncated(const char* in) const {
    fail(what_, std::string("not a valid serialized onnx.TensorProto (truncated in ") + in + ")");
  }

 private:
  const unsigned char* p_;
  const unsigned char* end_;
  const std::string& what_;
};

// How a repeated numeric field's values are encoded: varints (int32/int64/uint64_data, dims),
// fixed32 (float_data) or fixed64 (double_data).
enum class Encoding { varint, fixed32, fixed64 };

// The values of one occurrence of the repeated numeric field `name`, packed (wire type 2) or one
// value (wire type 0 for varints, 5 for fixed32, 1 for fixed64), each passed to
// on_value(uint64_t) in order (a fixed32/fixed64 value as its bits); Error for any other wire type.
template <class F>
inline void read_values(Wire& w, int wire_type, const char* name, Encoding enc, const std::string& what,
                        F&& on_value) {
  const int width = enc == Encoding::fixed32 ? 4 : enc == Encoding::fixed64 ? 8 : 0;
  auto one = [&](Wire& from) {
    return enc == Encoding::fixed32 ? uint64_t{from.fixed32()} : enc == Encoding::fixed64 ? from.fixed64() : from.varint();
  };
  if (wire_type == 2) {
    const auto [p, n] = w.bytes();
    if (width && n % static_cast<std::size_t>(width)) {
      fail(what, "not a valid serialized onnx.TensorProto (packed " + std::string(name) + " of " +
                     std::to_string(n) + " bytes)");
    }
    Wire inner(p, n, what);
    while (!inner.done()) on_value(one(inner));
  } else if (wire_type == (width == 4 ? 5 : width == 8 ? 1 : 0)) {
    on_value(one(w));
  } else {
    fail(what, "not a valid serialized onnx.TensorProto (" + std::string(name) + " has wire type " +
                   std::to_string(wire_type) + ")");
  }
}

// A TensorProto's typed data fields (onnx.proto): number, name, encoding.
struct TypedField {
  int number;
  const char* name;
  Encoding encoding;
};

inline const TypedField& typed_field(int number) {
  static const TypedField fields[] = {{4, "float_data", Encoding::fixed32},  {5, "int32_data", Encoding::varint},
                                      {7, "int64_data", Encoding::varint},   {10, "double_data", Encoding::fixed64},
                                      {11, "uint64_data", Encoding::varint}};
  for (const TypedField& f : fields) {
    if (f.number == number) return f;
  }
  return fields[1];  // not reached: callers pass one of the numbers above
}

// The field that holds a dtype's values when not in raw_data.
inline int typed_field_of(int dtype) {
  switch (dtype) {
    case kFloat32: return 4;
    case kFloat64: return 10;
    case kInt64: return 7;
    case kUint32: case kUint64: return 11;
    default: return 5;
  }
}

}  // namespace detail

// ---- .npy ---------------------------------------------------------------------------------------

/// \brief The bytes of a .npy file holding `a` (version 1.0, or 2.0 for a header over 64 KiB).
/// Error (with no file) for a dtype numpy cannot hold or data that does not fit the shape.
inline std::string encode_npy(const Array& a) {
  const char* descr = detail::descr_of(a.dtype);
  if (!descr) {
    throw Error("", "cannot write a " + dtype_name(a.dtype) + " tensor as .npy: numpy has no such dtype",
                a.dtype == kBfloat16 ? "cast the tensor to float32 first" : "");
  }
  if (a.data.size() != detail::byte_count(a.shape, a.dtype, "array")) {
    throw Error("", "cannot write an array of " + std::to_string(a.data.size()) + " bytes as " +
                        type_str(a.dtype, a.shape));
  }
  std::string shape = "(";
  for (std::size_t i = 0; i < a.shape.size(); ++i) shape += (i ? ", " : "") + std::to_string(a.shape[i]);
  if (a.shape.size() == 1) shape += ",";
  shape += ")";
  std::string dict = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Version 1.0 while the header length fits a uint16, 2.0 beyond; the whole header (magic,
  // version, length, dict, '\n') a multiple of 64 bytes.
  const bool v2 = dict.size() + 1 + 10 > 65535;
  const std::size_t prefix = 6 + 2 + (v2 ? 4 : 2);
  const std::size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict += '\n';
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  const uint32_t hl = static_cast<uint32_t>(dict.size());
  for (int i = 0; i < (v2 ? 4 : 2); ++i) out += static_cast<char>((hl >> (8 * i)) & 0xff);
  out += dict;
  const std::size_t at = out.size();
  out.append(reinterpret_cast<const char*>(a.data.data()), a.data.size());
  if (a.dtype == kBool) {
    for (std::size_t i = at; i < out.size(); ++i) out[i] = out[i] ? 1 : 0;
  }
  return out;
}

/// \brief Decodes the bytes of a .npy file; `what` (the file name) is the file of every error.
inline Array decode_npy(const std::string& b, const std::string& what) {
  if (b.empty()) detail::fail(what, "empty file (not a .npy file)");
  const std::size_t head = b.size() < 6 ? b.size() : 6;
  if (b.compare(0, head, "\x93NUMPY", head) != 0) detail::fail(what, "not a .npy file (no \\x93NUMPY magic)");
  if (b.size() < 10) detail::fail(what, "truncated .npy file (" + std::to_string(b.size()) + " bytes)");
  const int major = static_cast<unsigned char>(b[6]);
  if (major < 1 || major > 3) {
    detail::fail(what, ".npy format version " + std::to_string(major) + "." +
                           std::to_string(static_cast<unsigned char>(b[7])) +
                           " is not supported (1.0, 2.0 and 3.0 are)");
  }
  const int len_bytes = major == 1 ? 2 : 4;
  const std::size_t header_at = 8 + static_cast<std::size_t>(len_bytes);
  if (b.size() < header_at) detail::fail(what, "truncated .npy file (in the header length)");
  std::size_t header_len = 0;
  for (int i = len_bytes - 1; i >= 0; --i) header_len = (header_len << 8) | static_cast<unsigned char>(b[8 + i]);
  if (b.size() - header_at < header_len) {
    detail::fail(what, "truncated .npy file: the header says " + std::to_string(header_len) + " bytes, " +
                           std::to_string(b.size() - header_at) + " follow");
  }
  const std::string header = b.substr(header_at, header_len);
  for (char c : header) {
    if (c == 0 || (major < 3 && static_cast<unsigned char>(c) >= 0x80)) {
      detail::fail(what, "malformed .npy header (non-ASCII bytes)");
    }
  }
  const detail::NpyHeader h = detail::HeaderReader(header, what).parse();
  Array a;
  a.dtype = detail::dtype_from_descr(h.descr, what);
  a.shape = h.shape;
  if (h.fortran_order) {
    // With at most one dim other than 1 the two orders lay out the same bytes.
    int non_one = 0;
    for (int64_t d : a.shape) non_one += d != 1;
    if (non_one > 1) {
      detail::fail(what, "Fortran-order arrays are not supported",
                   "save a C-order array: np.save(f, np.ascontiguousarray(a))");
    }
  }
  const uint64_t want = detail::byte_count(a.shape, a.dtype, what);
  const uint64_t have = b.size() - header_at - header_len;
  if (have != want) {
    detail::fail(what, std::string(have < want ? "truncated .npy file" : "malformed .npy file (extra bytes)") + ": " +
                           type_str(a.dtype, a.shape) + " needs " + std::to_string(want) + " data bytes, the file has " +
                           std::to_string(have));
  }
  const auto* p = reinterpret_cast<const unsigned char*>(b.data() + header_at + header_len);
  a.data.assign(p, p + want);
  if (a.dtype == kBool) {
    for (unsigned char& x : a.data) x = x ? 1 : 0;
  }
  return a;
}

// ---- .pb ----------------------------------------------------------------------------------------

/// \brief Decodes a serialized onnx.TensorProto; `what` (the file name) is the file of every error.
/// Nothing is allocated for the data before the bytes are known to hold it: a first walk over the
/// fields checks them all and counts the values of the typed data fields, a second walk decodes
/// the one that holds the data once its count is the shape's.
inline Array decode_pb(const std::string& bytes, const std::string& what) {
  const auto* begin = reinterpret_cast<const unsigned char*>(bytes.data());
  detail::Wire w(begin, bytes.size(), what);
  std::vector<uint64_t> dims;
  // Values in the typed data fields float_data (4), int32_data (5), int64_data (7), double_data (10),
  // uint64_data (11), by field number.
  uint64_t counts[12] = {};
  const unsigned char* raw = nullptr;
  std::size_t raw_size = 0;
  bool has_raw = false;
  std::vector<std::string> other_data;  // string_data: present, never read
  auto skip_data = [&](int wt, uint64_t field, const char* name) {
    w.skip(wt, field);
    bool seen = false;
    for (const std::string& s : other_data) seen = seen || s == name;
    if (!seen) other_data.push_back(name);
  };
  uint64_t data_type = 0;
  Array a;
  const std::string bad = "not a valid serialized onnx.TensorProto";
  while (!w.done()) {
    const uint64_t key = w.varint();
    const uint64_t field = key >> 3;
    const int wt = static_cast<int>(key & 7);
    if (field == 0) detail::fail(what, bad + " (field number 0)");
    switch (field) {
      case 1:
        detail::read_values(w, wt, "dims", detail::Encoding::varint, what, [&](uint64_t d) {
          if (dims.size() == detail::kMaxRank) detail::too_many_dims(what);
          dims.push_back(d);
        });
        break;
      case 2:
        if (wt != 0) detail::fail(what, bad + " (data_type is not a varint)");
        data_type = w.varint();
        break;
      case 3: detail::fail(what, "segmented tensors (TensorProto.segment) are not supported");
      case 4: case 5: case 7: case 10: case 11: {
        const detail::TypedField& f = detail::typed_field(static_cast<int>(field));
        detail::read_values(w, wt, f.name, f.encoding, what, [&](uint64_t) { ++counts[field]; });
        break;
      }
      case 6: skip_data(wt, field, "string_data"); break;
      case 8: {
        if (wt != 2) detail::fail(what, bad + " (name is not length-delimited)");
        const auto [p, n] = w.bytes();
        a.name.assign(reinterpret_cast<const char*>(p), n);
        break;
      }
      case 9: {
        if (wt != 2) detail::fail(what, bad + " (raw_data is not length-delimited)");
        const auto [p, n] = w.bytes();
        raw = p;
        raw_size = n;
        has_raw = true;
        break;
      }
      case 13: w.skip(wt, field); break;  // external_data entries: data_location says whether they apply
      case 14: {
        if (wt != 0) detail::fail(what, bad + " (data_location is not a varint)");
        if (w.varint() == 1) detail::fail(what, "tensor files with external data are not supported");
        break;
      }
      default: w.skip(wt, field); break;  // doc_string, metadata_props, future fields
    }
  }
  uint64_t all_counts = 0;
  for (uint64_t c : counts) all_counts += c;
  if (data_type == 0 && dims.empty() && !has_raw && all_counts == 0) {
    detail::fail(what, bad + " (no data type, no data)");
  }
  const std::string tensor = a.name.empty() ? "tensor" : "tensor '" + a.name + "'";
  if (data_type > 1000 || dtype_size(static_cast<int>(data_type)) == 0) {  // no dtype code is near 1000
    const std::string dtype =
        data_type > 1000 ? "code " + std::to_string(data_type) : dtype_name(static_cast<int>(data_type));
    detail::fail(what,
                 tensor + " has dtype " + dtype +
                     ", which is not supported (float32, float16, bfloat16, float64, the 8-, 16-, 32- and 64-bit "
                     "integers and bool are)");
  }
  a.dtype = static_cast<int>(data_type);
  for (uint64_t d : dims) a.shape.push_back(static_cast<int64_t>(d));  // int64 in the proto
  const uint64_t nbytes = detail::byte_count(a.shape, a.dtype, what);
  const std::size_t esize = dtype_size(a.dtype);
  const uint64_t numel = nbytes / esize;
  const std::string tstr = type_str(a.dtype, a.shape);
  // The typed fields that hold data: the data must be in exactly one place.
  std::vector<std::string> sources;
  for (int f : {4, 5, 7, 10, 11}) {
    if (counts[f]) sources.push_back(detail::typed_field(f).name);
  }
  sources.insert(sources.end(), other_data.begin(), other_data.end());
  if (has_raw) {
    if (!sources.empty()) detail::fail(what, tensor + " stores its data in both raw_data and " + sources[0]);
    if (raw_size != nbytes) {
      detail::fail(what, std::string(raw_size < nbytes ? "truncated " : "malformed ") + tensor + ": " + tstr +
                             " needs " + std::to_string(nbytes) + " bytes of raw_data, the file has " +
                             std::to_string(raw_size));
    }
    a.data.assign(raw, raw + raw_size);
    if (a.dtype == kBool) {
      for (unsigned char& x : a.data) x = x ? 1 : 0;
    }
    return a;
  }
  if (sources.size() > 1) {
    detail::fail(what, tensor + " stores its data in both " + sources[0] + " and " + sources[1]);
  }
  // The typed field of the dtype (onnx.proto): float_data for float32, double_data for float64,
  // int64_data for int64, uint64_data for uint32 and uint64, int32_data for the rest (float16 and
  // bfloat16 as their bit patterns, bool as 0/1).
  const int field_number = detail::typed_field_of(a.dtype);
  const detail::TypedField& field = detail::typed_field(field_number);
  if (!sources.empty() && sources[0] != field.name) {
    detail::fail(what, tensor + " is " + dtype_name(a.dtype) + " but stores its data in " + sources[0] +
                           " (expected " + field.name + " or raw_data)");
  }
  const uint64_t count = counts[field_number];
  if (count != numel) {
    detail::fail(what, std::string(count < numel ? "truncated " : "malformed ") + tensor + ": " + tstr + " needs " +
                           std::to_string(numel) + " values in " + field.name + ", the file has " +
                           std::to_string(count));
  }
  a.data.resize(static_cast<std::size_t>(nbytes));  // `count` values in the file back it
  std::size_t i = 0;
  auto store = [&](uint64_t v) {
    if (field_number == 5 || (field_number == 11 && a.dtype == kUint32)) {
      // int32_data is an int32 field: protobuf keeps the low 32 bits of each varint. uint64_data
      // holding uint32s: the values must fit.
      const int64_t x = field_number == 5 ? static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(v)))
                                          : (v > UINT32_MAX ? -1 : static_cast<int64_t>(v));
      int64_t lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
      if (a.dtype == kInt8) {
        lo = -128;
        hi = 127;
      } else if (a.dtype == kUint8) {
        lo = 0;
        hi = 255;
      } else if (a.dtype == kInt16) {
        lo = -32768;
        hi = 32767;
      } else if (a.dtype == kFloat16 || a.dtype == kBfloat16 || a.dtype == kUint16) {  // bit patterns, values
        lo = 0;
        hi = 65535;
      } else if (a.dtype == kUint32) {
        lo = 0;
        hi = UINT32_MAX;
      }
      if (x < lo || x > hi) {
        detail::fail(what, tensor + ": " + field.name + " value " +
                               (field_number == 5 ? std::to_string(x) : std::to_string(v)) + " at " +
                               std::to_string(i) + " is out of range for " + dtype_name(a.dtype));
      }
      v = a.dtype == kBool ? (x != 0) : static_cast<uint64_t>(x);
    }
    unsigned char* dst = a.data.data() + i * esize;
    for (std::size_t k = 0; k < esize; ++k) dst[k] = static_cast<unsigned char>(v >> (8 * k));
    ++i;
  };
  // The second walk: every field was read once already, so it cannot fail but on a value.
  detail::Wire again(begin, bytes.size(), what);
  while (!again.done()) {
    const uint64_t key = again.varint();
    const int wt = static_cast<int>(key & 7);
    if ((key >> 3) == static_cast<uint64_t>(field_number)) {
      detail::read_values(again, wt, field.name, field.encoding, what, store);
    } else {
      again.skip(wt, key >> 3);
    }
  }
  return a;
}

// ---- files --------------------------------------------------------------------------------------

namespace detail {

enum class Format { npy, pb };

// The tensor file format `path` names by its extension (case-insensitive); Error for anything else.
inline Format format_of(const std::string& path) {
  const std::string ext = extension(path);
  if (ext == ".npy") return Format::npy;
  if (ext == ".pb") return Format::pb;
  fail(path, "unknown tensor file type " + (ext.empty() ? std::string("(no extension)") : "'" + ext + "'") +
                 ": expected a .npy or .pb file");
}

// What a tensor file holds besides its data, at most: a .npy file's magic, version, length and
// largest version 1.0 header; a .pb file's name, dims and other fields.
constexpr uint64_t kMaxHeaderBytes = 10 + 65535;

}  // namespace detail

/// \brief The whole file as bytes, at most `max_bytes` of them; Error naming the file when it
/// cannot be read. Only a regular file is read (regular_file.h: a FIFO, a device, a socket or a
/// directory is refused without blocking), only the size it has when opened, and a larger file
/// than `max_bytes` is refused before a byte of it is read: "PATH: is N bytes, more than LIMIT
/// (max_bytes bytes)", where `limit` says what limits it ("a .npy file of a float32[2x3] tensor
/// can be").
inline std::string read_file(const std::string& path, uint64_t max_bytes, const std::string& limit) {
  mc_io::File f;
  std::string why = mc_io::open_regular(path, f);
  if (!why.empty()) detail::fail(path, why);
  if (f.size > max_bytes) {
    detail::fail(path, "is " + std::to_string(f.size) + " bytes, more than " + limit + " (" +
                           std::to_string(max_bytes) + " bytes)");
  }
  std::string r(static_cast<std::size_t>(f.size), '\0');
  why = mc_io::read_exactly(f, &r[0], r.size());
  if (!why.empty()) detail::fail(path, why);
  return r;
}

/// \brief The whole file as bytes (the same, with no limit but the file's size when opened).
inline std::string read_file(const std::string& path) {
  return read_file(path, std::numeric_limits<uint64_t>::max(), "");
}

inline Array read_npy(const std::string& path) { return decode_npy(read_file(path), path); }
inline Array read_pb(const std::string& path) { return decode_pb(read_file(path), path); }

/// \brief .npy or .pb by the file's extension (case-insensitive); Error for anything else.
inline Array read(const std::string& path) {
  return detail::format_of(path) == detail::Format::npy ? read_npy(path) : read_pb(path);
}

/// \brief The most bytes a tensor file (.npy or .pb by `path`'s extension) of a `dtype`[`shape`]
/// tensor can take: its data, .pb's typed data fields at their widest (11 bytes a value: a field
/// key and a 10-byte varint), and 65545 bytes for the rest (the largest version 1.0 .npy header;
/// a .pb file's name, dims and other fields).
inline uint64_t max_file_bytes(const std::string& path, int dtype, const std::vector<int64_t>& shape) {
  const uint64_t data = detail::byte_count(shape, dtype, path);
  if (detail::format_of(path) == detail::Format::npy) return detail::kMaxHeaderBytes + data;
  const uint64_t values = dtype_size(dtype) ? data / dtype_size(dtype) : 0;
  return detail::kMaxHeaderBytes + (11 * values > data ? 11 * values : data);
}

/// \brief Reads the tensor file `path` (as read does) meant to hold a `dtype`[`shape`] tensor (a
/// model's input): a file larger than max_file_bytes is refused before it is read, so a file of
/// any size costs no more memory than the tensor. The caller compares the dtype and shape read
/// with its own (and says what to do when they differ).
inline Array read(const std::string& path, int dtype, const std::vector<int64_t>& shape) {
  const bool npy = detail::format_of(path) == detail::Format::npy;
  const std::string bytes = read_file(path, max_file_bytes(path, dtype, shape),
                                      std::string("a ") + (npy ? ".npy" : ".pb") + " file of a " +
                                          type_str(dtype, shape) + " tensor can be");
  return npy ? decode_npy(bytes, path) : decode_pb(bytes, path);
}

// ---- bfloat16 through float32 .npy files ---------------------------------------------------------

/// \brief A bfloat16 array as float32 (exact: a bfloat16 is the upper half of a float32); any other
/// array unchanged. How a bfloat16 tensor is written as .npy.
inline Array widen_bfloat16(Array a) {
  if (a.dtype != kBfloat16) return a;
  std::vector<unsigned char> f(a.data.size() * 2);
  for (std::size_t i = 0; i < a.data.size() / 2; ++i) {
    const uint32_t bits = (static_cast<uint32_t>(a.data[2 * i]) | static_cast<uint32_t>(a.data[2 * i + 1]) << 8) << 16;
    std::memcpy(&f[4 * i], &bits, 4);
  }
  a.dtype = kFloat32;
  a.data = std::move(f);
  return a;
}

/// \brief A float32 array as bfloat16, each value rounded to nearest even (a NaN stays a quiet NaN
/// of its sign: compiler/ir/dtype.cpp's float_to_bfloat16 and the kernels' mc::bf16, bit for bit).
inline Array narrow_to_bfloat16(const Array& a) {
  Array r;
  r.dtype = kBfloat16;
  r.shape = a.shape;
  r.name = a.name;
  r.data.resize(a.data.size() / 2);
  for (std::size_t i = 0; i < a.data.size() / 4; ++i) {
    uint32_t x;
    std::memcpy(&x, &a.data[4 * i], 4);
    const uint16_t b = (x & 0x7fffffffu) > 0x7f800000u ? static_cast<uint16_t>((x >> 16) | 0x40u)
                                                        : static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
    r.data[2 * i] = static_cast<unsigned char>(b & 0xffu);
    r.data[2 * i + 1] = static_cast<unsigned char>(b >> 8);
  }
  return r;
}

/// \brief Reads the file of a model input of `dtype`[`shape`] (as read(path, dtype, shape) does):
/// for a bfloat16 input, a .npy file holds float32 (numpy has no bfloat16), rounded here to
/// nearest even (exact for values a bfloat16 program wrote); a .pb file holds bfloat16 itself. The
/// caller compares the dtype and shape read with its own.
inline Array read_input(const std::string& path, int dtype, const std::vector<int64_t>& shape) {
  if (dtype == kBfloat16 && detail::format_of(path) == detail::Format::npy) {
    Array a = read(path, kFloat32, shape);
    return a.dtype == kFloat32 ? narrow_to_bfloat16(a) : a;
  }
  return read(path, dtype, shape);
}

/// \brief Writes `bytes` to `path` atomically: a temporary file in the same folder, renamed over
/// `path` once complete, so a reader never sees a partial file. Error naming the file.
inline void write_file_atomic(const std::string& path, const std::string& bytes) {
  const std::size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  std::string tmpl = (dir == "/" ? "" : dir) + "/." + base + ".tmp.XXXXXX";
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());
  if (fd < 0) detail::fail(path, "cannot create a file in '" + dir + "': " + std::strerror(errno));
  const std::string tmp(name.data());
  auto give_up = [&](const std::string& what, int err, bool close_fd) {
    if (close_fd) ::close(fd);
    ::unlink(tmp.c_str());
    detail::fail(path, what + ": " + std::strerror(err));
  };
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      give_up("write failed", errno, true);
    }
    done += static_cast<std::size_t>(n);
  }
  const mode_t mask = ::umask(0);  // mkstemp makes 0600 files: give the usual permissions
  ::umask(mask);
  if (::fchmod(fd, 0666 & ~mask) != 0) give_up("chmod failed", errno, true);
  if (::close(fd) != 0) give_up("write failed", errno, false);
  if (::rename(tmp.c_str(), path.c_str()) != 0) give_up("cannot write", errno, false);
}

/// \brief Writes `a` as a .npy file, atomically; Error naming the file (nothing is written when
/// `a` cannot be encoded).
inline void write_npy(const std::string& path, const Array& a) {
  std::string bytes;
  try {
    bytes = encode_npy(a);
  } catch (const Error& e) {
    throw Error(path, e.message(), e.hint());
  }
  write_file_atomic(path, bytes);
}

/// \brief The file name an output gets (as `modelc run-reference` names them): every character
/// other than letters, digits, '_', '-' and '.' becomes '_'; "", "." and ".." become underscores;
/// at most 200 characters.
inline std::string sanitize_file_name(const std::string& name) {
  std::string r;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '-' || c == '.';
    r += ok ? c : '_';
  }
  if (r.empty() || r == "." || r == "..") r = std::string(r.size() + 1, '_');
  if (r.size() > 200) r.resize(200);
  return r;
}

/// \brief The .npy file names of a model's outputs, in order: sanitize_file_name(name) + ".npy",
/// with "_1", "_2", ... before the extension when two names sanitize alike (as run-reference does).
inline std::vector<std::string> output_file_names(const std::vector<std::string>& names) {
  std::vector<std::string> files, used;
  for (const std::string& n : names) {
    const std::string base = sanitize_file_name(n);
    std::string f = base + ".npy";
    for (int k = 1;; ++k) {
      bool taken = false;
      for (const std::string& u : used) taken = taken || u == f;
      if (!taken) break;
      f = base + "_" + std::to_string(k) + ".npy";
    }
    used.push_back(f);
    files.push_back(f);
  }
  return files;
}

}  // namespace mc_npy
