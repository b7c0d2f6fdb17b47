// compiler/io/tensor_io.cpp — Tensors through runtime_stub/npy.h: the conversions between Tensor and
// mc_npy::Array, and mc_npy::Error (file, message, hint) as modelc's Error.
#include "io/tensor_io.h"

#include <utility>

#include "support/error.h"

namespace modelc {

namespace {

// Runs `f`, an mc_npy call, with its errors as Errors (Error::Where::file set when it names one).
template <class F>
auto npy_call(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const mc_npy::Error& e) {
    Error::Where w;
    w.file = e.file();
    throw Error(w, e.message(), e.hint());
  }
}

}  // namespace

mc_npy::Array to_array(const Tensor& t) {
  mc_npy::Array a;
  a.dtype = static_cast<int>(t.dtype());
  a.shape = t.shape();
  a.data.assign(t.raw(), t.raw() + t.nbytes());
  return a;
}

Tensor from_array(mc_npy::Array a) {
  return Tensor(static_cast<DType>(a.dtype), std::move(a.shape), std::move(a.data));
}

std::string encode_npy(const Tensor& t) {
  return npy_call([&] { return mc_npy::encode_npy(to_array(t)); });
}

Tensor decode_npy(const std::string& bytes, const std::string& what) {
  return from_array(npy_call([&] { return mc_npy::decode_npy(bytes, what); }));
}

Tensor read_npy(const std::string& path) {
  return from_array(npy_call([&] { return mc_npy::read_npy(path); }));
}

void write_npy(const std::string& path, const Tensor& t) {
  npy_call([&] { mc_npy::write_npy(path, to_array(t)); });
}

Tensor read_tensor_pb(const std::string& path) {
  return from_array(npy_call([&] { return mc_npy::read_pb(path); }));
}

Tensor read_tensor_file(const std::string& path) {
  return from_array(npy_call([&] { return mc_npy::read(path); }));
}

Tensor read_tensor_file(const std::string& path, DType dtype, const Shape& shape) {
  return from_array(npy_call([&] { return mc_npy::read_input(path, static_cast<int>(dtype), shape); }));
}

void write_file_atomic(const std::string& path, const std::string& bytes) {
  npy_call([&] { mc_npy::write_file_atomic(path, bytes); });
}

}  // namespace modelc
