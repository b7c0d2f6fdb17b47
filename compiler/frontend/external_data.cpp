// compiler/frontend/external_data.cpp — tensors whose bytes live in files beside
// the model (TensorProto.data_location = EXTERNAL, external_data keys
// location / offset / length / checksum).
//
// The model names the files, so they are treated as untrusted paths: only
// plain relative paths inside the model's folder, no symlinks on the way
// (a link could point anywhere), nothing read outside the declared range.
#include <cctype>
#include <cerrno>
#include <cstring>
#include <limits>
#include <set>

#include <sys/stat.h>
#include <unistd.h>

#include "frontend/import_detail.h"
#include "onnx/onnx_pb.h"
#include "support/error.h"

namespace modelc::detail {

namespace {

Error file_error(const std::string& file, const std::string& message, const std::string& hint = {}) {
  Error::Where w;
  w.file = file;
  return Error(w, message, hint);
}

uint64_t parse_size(const std::string& value, const std::string& key, const std::string& what,
                    const std::string& file) {
  if (value.empty() || value.size() > 19 || value.find_first_not_of("0123456789") != std::string::npos) {
    throw file_error(file, what + ": external data '" + key + "' is '" + value + "', not a byte count");
  }
  return std::stoull(value);
}

// Checks `location` as a path relative to base_dir and returns the joined path.
std::string checked_path(const std::string& base_dir, const std::string& location, const std::string& what,
                         const std::string& file) {
  const std::string where = what + ": external data file '" + location + "'";
  const std::string hint = "external data must be a plain file inside the model's folder (" + base_dir + ")";
  if (location.empty()) throw file_error(file, what + ": external data has an empty 'location'");
  if (location.find('\0') != std::string::npos) throw file_error(file, where + " contains a NUL byte");
  const bool drive = location.size() >= 2 && location[1] == ':' &&
                     std::isalpha(static_cast<unsigned char>(location[0]));
  if (location[0] == '/' || location[0] == '\\' || drive) {
    throw file_error(file, where + " is an absolute path", hint);
  }
  // Components; '\\' counts as a separator too, so Windows-style "..\\x" is refused.
  std::vector<std::string> parts;
  std::string cur;
  for (char c : location + "/") {
    if (c == '/' || c == '\\') {
      if (cur == "..") throw file_error(file, where + " has a '..' component (it would leave the model's folder)", hint);
      if (!cur.empty() && cur != ".") parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (parts.empty()) throw file_error(file, where + " does not name a file");
  std::string path = base_dir.empty() ? "." : base_dir;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    path += "/" + parts[i];
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) {
      throw file_error(file, where + " cannot be opened: " + std::strerror(errno) + " (looked for " + path + ")");
    }
    if (S_ISLNK(st.st_mode)) {
      throw file_error(file, where + ": '" + path + "' is a symbolic link, which is refused", hint);
    }
    const bool last = i + 1 == parts.size();
    if (!last && !S_ISDIR(st.st_mode)) throw file_error(file, where + ": '" + path + "' is not a folder");
    if (last && !S_ISREG(st.st_mode)) throw file_error(file, where + " is not a regular file");
  }
  return path;
}

void add_ref(onnx::TensorProto& t, const std::string& what, bool initializer, const std::string& base_dir,
             const std::string& file, std::vector<ExternalRef>& out) {
  if (t.data_location() != onnx::TensorProto::EXTERNAL) return;
  ExternalRef r;
  r.tensor = &t;
  r.what = what;
  r.initializer = initializer;
  bool has_length = false, has_location = false;
  std::set<std::string> seen;
  for (const auto& kv : t.external_data()) {
    if (!seen.insert(kv.key()).second) {
      throw file_error(file, what + ": external data key '" + kv.key() + "' is given twice");
    }
    if (kv.key() == "location") {
      r.location = kv.value();
      has_location = true;
    } else if (kv.key() == "offset") {
      r.offset = parse_size(kv.value(), "offset", what, file);
    } else if (kv.key() == "length") {
      r.length = parse_size(kv.value(), "length", what, file);
      has_length = true;
    }
    // "checksum" (a SHA-1 digest) is optional and not verified, like ONNX's own loader;
    // other keys are ignored.
  }
  if (!has_location) throw file_error(file, what + ": external data has no 'location'");
  if (t.has_raw_data() || t.float_data_size() || t.int32_data_size() || t.int64_data_size() ||
      t.double_data_size() || t.uint64_data_size() || t.string_data_size()) {
    throw file_error(file, what + " has external data and embedded data at once");
  }
  const std::string subject = what + ": external data file '" + r.location + "'";
  int64_t want = 0;
  try {
    // The dims are check_model_tensors's: >= 0, at most kMaxTensorElements elements.
    want = num_elements(Shape(t.dims().begin(), t.dims().end())) *
           static_cast<int64_t>(dtype_size(checked_dtype(t.data_type(), what)));
  } catch (const Error& e) {
    throw file_error(file, e.message(), e.hint());
  }
  r.path = checked_path(base_dir, r.location, what, file);
  struct stat st;
  if (::stat(r.path.c_str(), &st) != 0) {
    throw file_error(file, subject + " cannot be opened: " + std::strerror(errno));
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (r.offset > size) {
    throw file_error(file, subject + ": offset " + std::to_string(r.offset) + " is past the end of the file (" +
                               std::to_string(size) + " bytes)");
  }
  if (!has_length) r.length = size - r.offset;  // as ONNX: the rest of the file
  if (r.length > size - r.offset) {
    throw file_error(file, subject + ": offset " + std::to_string(r.offset) + " + length " +
                               std::to_string(r.length) + " is past the end of the file (" + std::to_string(size) +
                               " bytes)");
  }
  if (r.length != static_cast<uint64_t>(want)) {
    throw file_error(file, subject + ": " + (has_length ? "length is " : "the data from offset " +
                                                                             std::to_string(r.offset) + " is ") +
                               std::to_string(r.length) + " bytes, the tensor (" +
                               dtype_name(dtype_from_onnx(t.data_type())) + "[" +
                               shape_str(Shape(t.dims().begin(), t.dims().end())) + "]) needs " +
                               std::to_string(want));
  }
  out.push_back(r);
}

}  // namespace

std::vector<ExternalRef> find_external_data(onnx::ModelProto& m, const std::string& base_dir, const std::string& file) {
  std::vector<ExternalRef> refs;
  onnx::GraphProto* g = m.mutable_graph();
  for (auto& t : *g->mutable_initializer()) add_ref(t, "initializer '" + t.name() + "'", true, base_dir, file, refs);
  for (int k = 0; k < g->node_size(); ++k) {
    onnx::NodeProto& n = *g->mutable_node(k);
    for (auto& a : *n.mutable_attribute()) {
      const std::string what = "node '" + node_name(n, k) + "' (" + n.op_type() + ") attribute '" + a.name() + "'";
      if (a.has_t()) add_ref(*a.mutable_t(), what, false, base_dir, file, refs);
      for (auto& t : *a.mutable_tensors()) add_ref(t, what, false, base_dir, file, refs);
    }
  }
  return refs;
}

void open_regular_file(const std::string& path, const std::string& what, mc_io::File& f) {
  const std::string why = mc_io::open_regular(path, f);
  if (!why.empty()) throw Error(what + (why.rfind("is ", 0) == 0 ? " " : ": ") + why);
}

void read_external_data(const ExternalRef& r, const std::string& file, char* dst) {
  const std::string subject = r.what + ": external data file '" + r.location + "'";
  mc_io::File f;
  try {
    open_regular_file(r.path, subject, f);
  } catch (const Error& e) {
    throw file_error(file, e.message(), e.hint());
  }
  uint64_t done = 0;
  while (done < r.length) {
    const ssize_t n = ::pread(f.fd, dst + done, static_cast<std::size_t>(r.length - done),
                              static_cast<off_t>(r.offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<uint64_t>(n);
  }
  if (done != r.length) {
    throw file_error(file, subject + ": could not read " + std::to_string(r.length) + " bytes at offset " +
                               std::to_string(r.offset));
  }
}

void load_external_data(const std::vector<ExternalRef>& refs, const std::string& file) {
  for (const ExternalRef& r : refs) {
    std::string bytes(static_cast<std::size_t>(r.length), '\0');
    if (r.length) read_external_data(r, file, &bytes[0]);
    r.tensor->set_raw_data(std::move(bytes));
    r.tensor->clear_external_data();
    r.tensor->clear_data_location();
  }
}

}  // namespace modelc::detail
