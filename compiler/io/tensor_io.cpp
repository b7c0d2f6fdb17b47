// compiler/io/tensor_io.cpp — .npy and ONNX TensorProto (.pb) files.
//
// The .npy format (numpy/lib/format.py): "\x93NUMPY", major and minor
// version bytes, the header length (uint16 LE in 1.0, uint32 LE in 2.0/3.0),
// then a Python dict literal {'descr': ..., 'fortran_order': ..., 'shape': (...)}
// padded with spaces and ended by '\n', then the raw C-order data.
#include "io/tensor_io.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "frontend/onnx_import.h"
#include "onnx/onnx_pb.h"
#include "support/error.h"

namespace modelc {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicLen = 6;

Error file_error(const std::string& file, const std::string& message, const std::string& hint = {}) {
  Error::Where w;
  w.file = file;
  return Error(w, message, hint);
}

// ---- header parsing: a tiny reader for the Python literal numpy writes ------

class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& what) : s_(text), what_(what) {}

  std::map<std::string, std::string> strings;
  std::map<std::string, bool> bools;
  std::map<std::string, Shape> tuples;

  void parse() {
    skip_ws();
    expect('{');
    skip_ws();
    while (peek() != '}') {
      const std::string key = parse_string();
      if (strings.count(key) || bools.count(key) || tuples.count(key)) fail("key '" + key + "' repeats");
      skip_ws();
      expect(':');
      skip_ws();
      const char c = peek();
      if (c == '\'' || c == '"') {
        strings[key] = parse_string();
      } else if (c == '(') {
        tuples[key] = parse_tuple();
      } else if (starts_with("True")) {
        pos_ += 4;
        bools[key] = true;
      } else if (starts_with("False")) {
        pos_ += 5;
        bools[key] = false;
      } else {
        fail(std::string("unexpected value for key '") + key + "'");
      }
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        skip_ws();
      } else if (peek() != '}') {
        fail("expected ',' or '}'");
      }
    }
    ++pos_;
    skip_ws();
    if (pos_ != s_.size()) fail("text after the closing '}'");
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw file_error(what_, "malformed .npy header (" + why + " at offset " + std::to_string(pos_) + ")");
  }
  char peek() const {
    if (pos_ >= s_.size()) fail("unexpected end of header");
    return s_[pos_];
  }
  bool starts_with(const char* w) const { return s_.compare(pos_, std::strlen(w), w) == 0; }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string parse_string() {
    const char q = peek();
    if (q != '\'' && q != '"') fail("expected a quoted string");
    ++pos_;
    std::string r;
    while (peek() != q) {
      if (s_[pos_] == '\\') fail("escapes are not supported in header strings");
      r += s_[pos_++];
    }
    ++pos_;
    return r;
  }
  Shape parse_tuple() {
    expect('(');
    Shape dims;
    skip_ws();
    while (peek() != ')') {
      if (peek() < '0' || peek() > '9') fail("expected a non-negative integer in the shape");
      int64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        const int d = s_[pos_++] - '0';
        if (v > (std::numeric_limits<int64_t>::max() - d) / 10) fail("shape dimension too large");
        v = v * 10 + d;
      }
      if (peek() == 'L') ++pos_;  // Python 2 longs
      dims.push_back(v);
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        skip_ws();
      } else if (peek() != ')') {
        fail("expected ',' or ')' in the shape");
      }
    }
    ++pos_;
    return dims;
  }

  const std::string& s_;
  const std::string& what_;
  std::size_t pos_ = 0;
};

// descr <-> DType. One-byte types carry no byte order: numpy writes '|', and
// '<' / '>' mean the same for them.
DType dtype_from_descr(const std::string& descr, const std::string& what) {
  if (descr.size() >= 2) {
    const char order = descr[0];
    const std::string code = descr.substr(1);
    if (code == "i1" || code == "u1" || code == "b1") {
      if (order == '|' || order == '<' || order == '>') {
        return code == "i1" ? DType::int8 : code == "u1" ? DType::uint8 : DType::boolean;
      }
    } else if (order == '<') {
      if (code == "f4") return DType::float32;
      if (code == "f2") return DType::float16;
      if (code == "i4") return DType::int32;
      if (code == "i8") return DType::int64;
    } else if (order == '>') {
      throw file_error(what, "big-endian data ('" + descr + "') is not supported",
                       "save the array little-endian: np.save(f, a.astype(a.dtype.newbyteorder('<')))");
    }
  }
  throw file_error(what, "dtype '" + descr + "' is not supported (supported: <f4 <f2 |i1 |u1 <i4 <i8 |b1)",
                   descr.find("f8") != std::string::npos ? "convert float64 arrays to float32: a.astype(np.float32)"
                                                         : "");
}

const char* descr_of(DType t) {
  switch (t) {
    case DType::float32: return "<f4";
    case DType::float16: return "<f2";
    case DType::int8: return "|i1";
    case DType::uint8: return "|u1";
    case DType::int32: return "<i4";
    case DType::int64: return "<i8";
    case DType::boolean: return "|b1";
    default: return nullptr;
  }
}

uint32_t read_le(const std::string& b, std::size_t at, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(b[at + i]);
  return v;
}

std::string read_file(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    throw file_error(path, std::string("cannot open: ") + std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) throw file_error(path, "is a directory, not a file");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw file_error(path, std::string("cannot open: ") + std::strerror(errno));
  std::ostringstream os;
  os << f.rdbuf();
  if (f.bad()) throw file_error(path, "read error");
  return os.str();
}

std::string lower_ext(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  const std::size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  std::string e = path.substr(dot);
  for (char& c : e) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return e;
}

}  // namespace

// ---- .npy --------------------------------------------------------------------

std::string encode_npy(const Tensor& t) {
  const char* descr = descr_of(t.dtype());
  if (!descr) {
    throw Error(std::string("cannot write a ") + dtype_name(t.dtype()) + " tensor as .npy: numpy has no such dtype",
                t.dtype() == DType::bfloat16 ? "cast the tensor to float32 first" : "");
  }
  std::string shape = "(";
  for (std::size_t i = 0; i < t.shape().size(); ++i) {
    if (i) shape += ", ";
    shape += std::to_string(t.shape()[i]);
  }
  if (t.shape().size() == 1) shape += ",";
  shape += ")";
  std::string dict = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Version 1.0 while the header fits a uint16, 2.0 beyond; total header a multiple of 64.
  const bool v2 = dict.size() + 1 + kMagicLen + 2 + 2 > 65535;
  const std::size_t prefix = kMagicLen + 2 + (v2 ? 4 : 2);
  const std::size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - prefix - dict.size() - 1, ' ');
  dict += '\n';

  std::string out(kMagic, kMagicLen);
  out += static_cast<char>(v2 ? 2 : 1);
  out += static_cast<char>(0);
  const uint32_t hl = static_cast<uint32_t>(dict.size());
  for (int i = 0; i < (v2 ? 4 : 2); ++i) out += static_cast<char>((hl >> (8 * i)) & 0xff);
  out += dict;
  const std::size_t data_at = out.size();
  out.append(reinterpret_cast<const char*>(t.raw()), t.nbytes());
  if (t.dtype() == DType::boolean) {
    for (std::size_t i = data_at; i < out.size(); ++i) out[i] = out[i] ? 1 : 0;
  }
  return out;
}

Tensor decode_npy(const std::string& b, const std::string& what) {
  const std::size_t head = std::min(b.size(), kMagicLen);
  if (b.compare(0, head, kMagic, head) != 0) throw file_error(what, "not a .npy file (no \\x93NUMPY magic)");
  if (b.size() < kMagicLen + 4) {
    throw file_error(what, "truncated .npy file (" + std::to_string(b.size()) + " bytes)");
  }
  const int major = static_cast<uint8_t>(b[kMagicLen]);
  if (major < 1 || major > 3) {
    throw file_error(what, ".npy format version " + std::to_string(major) + "." +
                               std::to_string(static_cast<uint8_t>(b[kMagicLen + 1])) +
                               " is not supported (1.0, 2.0 and 3.0 are)");
  }
  const int len_bytes = major == 1 ? 2 : 4;
  const std::size_t header_at = kMagicLen + 2 + len_bytes;
  if (b.size() < header_at) throw file_error(what, "truncated .npy file (in the header length)");
  const std::size_t header_len = read_le(b, kMagicLen + 2, len_bytes);
  if (b.size() - header_at < header_len) {
    throw file_error(what, "truncated .npy file: the header says " + std::to_string(header_len) + " bytes, " +
                               std::to_string(b.size() - header_at) + " follow");
  }
  const std::string header = b.substr(header_at, header_len);
  for (char c : header) {
    if (c == 0 || (major < 3 && static_cast<unsigned char>(c) >= 0x80)) {
      throw file_error(what, "malformed .npy header (non-ASCII bytes)");
    }
  }
  HeaderParser p(header, what);
  p.parse();
  if (p.strings.size() != 1 || !p.strings.count("descr") || p.bools.size() != 1 || !p.bools.count("fortran_order") ||
      p.tuples.size() != 1 || !p.tuples.count("shape")) {
    throw file_error(what, "malformed .npy header: expected exactly the keys 'descr', 'fortran_order' and 'shape'");
  }
  const DType dtype = dtype_from_descr(p.strings["descr"], what);
  const Shape& shape = p.tuples["shape"];
  if (p.bools["fortran_order"]) {
    // With at most one dim other than 1 the two orders lay out the same bytes.
    int non_one = 0;
    for (int64_t d : shape) non_one += d != 1;
    if (non_one > 1) {
      throw file_error(what, "Fortran-order arrays are not supported",
                       "save a C-order array: np.save(f, np.ascontiguousarray(a))");
    }
  }
  // Size with overflow checks: the shape comes from the file.
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (d != 0 && n > std::numeric_limits<uint64_t>::max() / 16 / static_cast<uint64_t>(d)) {
      throw file_error(what, "shape " + shape_str(shape) + " is too large");
    }
    n *= static_cast<uint64_t>(d);
  }
  const uint64_t want = n * dtype_size(dtype);
  const uint64_t have = b.size() - header_at - header_len;
  if (have != want) {
    throw file_error(what, std::string(have < want ? "truncated .npy file" : "malformed .npy file") + ": " +
                               dtype_name(dtype) + "[" + shape_str(shape) + "] needs " + std::to_string(want) +
                               " data bytes, the file has " + std::to_string(have));
  }
  const auto* data = reinterpret_cast<const uint8_t*>(b.data() + header_at + header_len);
  std::vector<uint8_t> bytes(data, data + want);
  if (dtype == DType::boolean) {
    for (uint8_t& x : bytes) x = x ? 1 : 0;
  }
  return Tensor(dtype, shape, std::move(bytes));
}

Tensor read_npy(const std::string& path) { return decode_npy(read_file(path), path); }

void write_file_atomic(const std::string& path, const std::string& bytes) {
  const std::size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  std::string tmpl = (dir == "/" ? "" : dir) + "/." +
                     (slash == std::string::npos ? path : path.substr(slash + 1)) + ".tmp.XXXXXX";
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());
  if (fd < 0) throw file_error(path, std::string("cannot create a file in '") + dir + "': " + std::strerror(errno));
  const std::string tmp(name.data());
  auto fail = [&](const std::string& what) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    ::unlink(tmp.c_str());
    throw file_error(path, what + ": " + why);
  };
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      fail("write failed");
    }
    done += static_cast<std::size_t>(w);
  }
  // mkstemp creates 0600; give the file the usual permissions (umask applies).
  const mode_t mask = ::umask(0);
  ::umask(mask);
  if (::fchmod(fd, 0666 & ~mask) != 0) fail("chmod failed");
  if (::close(fd) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw file_error(path, "write failed: " + why);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw file_error(path, "cannot write: " + why);
  }
}

void write_npy(const std::string& path, const Tensor& t) {
  std::string bytes;
  try {
    bytes = encode_npy(t);
  } catch (const Error& e) {
    throw file_error(path, e.message(), e.hint());
  }
  write_file_atomic(path, bytes);
}

// ---- .pb -------------------------------------------------------------------------

Tensor read_tensor_pb(const std::string& path) {
  const std::string bytes = read_file(path);
  onnx::TensorProto t;
  google::protobuf::io::ArrayInputStream in(bytes.data(), static_cast<int>(std::min<std::size_t>(
                                                               bytes.size(), std::numeric_limits<int>::max())));
  google::protobuf::io::CodedInputStream cis(&in);
  cis.SetTotalBytesLimit(std::numeric_limits<int>::max());
  if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()) || !t.ParseFromCodedStream(&cis) ||
      !cis.ConsumedEntireMessage()) {
    throw file_error(path, "not a valid serialized onnx.TensorProto (malformed or truncated)");
  }
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    throw file_error(path, "tensor files with external data are not supported");
  }
  if (t.dims_size() == 0 && !t.has_raw_data() && t.float_data_size() == 0 && t.int32_data_size() == 0 &&
      t.int64_data_size() == 0 && t.data_type() == 0) {
    // An empty message parses fine; say what it most likely is.
    throw file_error(path, "not a valid serialized onnx.TensorProto (no data type, no data)");
  }
  try {
    return tensor_from_proto(t, t.name().empty() ? "tensor" : "tensor '" + t.name() + "'");
  } catch (const Error& e) {
    throw file_error(path, e.message(), e.hint());
  }
}

Tensor read_tensor_file(const std::string& path) {
  const std::string ext = lower_ext(path);
  if (ext == ".npy") return read_npy(path);
  if (ext == ".pb") return read_tensor_pb(path);
  throw file_error(path, "unknown tensor file type '" + ext + "' (expected .npy or .pb)");
}

std::string sanitize_file_name(const std::string& name) {
  std::string r;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '-' || c == '.';
    r += ok ? c : '_';
  }
  // "", "." and ".." are not names a file can have; keep well below NAME_MAX
  // once an extension is added.
  if (r.empty() || r == "." || r == "..") r = std::string(r.size() + 1, '_');
  if (r.size() > 200) r.resize(200);
  return r;
}

}  // namespace modelc
