// tests/embed/consumer.cpp — the C++ twin of consumer.c (same files, same exit statuses): NAME.h
// included from C++ with nothing defined, the context held by a unique_ptr, buffers in vectors.
//
//   consumer DIR      reads DIR/input_<i>.bin, runs NAME_run_host, writes DIR/output_<i>.bin
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#define MC_STR2(x) #x
#define MC_STR(x) MC_STR2(x)
#define MC_CAT2(a, b) a##b
#define MC_CAT(a, b) MC_CAT2(a, b)
#define API(f) MC_CAT(MODEL, MC_CAT(_, f))

#include MC_STR(MODEL.h)

namespace {

size_t dtype_size(int dtype) {
  switch (dtype) {
    case 7: case 11: case 13: return 8;
    case 1: case 6: case 12: return 4;
    case 4: case 5: case 10: case 16: return 2;
    case 2: case 3: case 9: return 1;
    default: return 0;
  }
}

size_t tensor_bytes(int dtype, int rank, const int64_t* shape) {
  size_t n = dtype_size(dtype);
  for (int d = 0; d < rank; ++d) n *= static_cast<size_t>(shape[d]);
  return n;
}

struct Destroy {
  void operator()(API(ctx) * c) const { API(destroy)(c); }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " DIR\n";
    return 10;
  }
  const std::string dir = argv[1];
  API(ctx)* raw = nullptr;
  const int created = API(create)(&raw, 0);
  std::unique_ptr<API(ctx), Destroy> ctx(raw);
  if (created != 0) {
    std::cerr << MC_STR(MODEL) "_create failed (" << created << "): " << API(error)(ctx.get()) << "\n";
    return created;
  }
  std::vector<std::vector<unsigned char>> in(static_cast<size_t>(API(num_inputs)()));
  std::vector<std::vector<unsigned char>> out(static_cast<size_t>(API(num_outputs)()));
  std::vector<const void*> in_ptrs;
  std::vector<void*> out_ptrs;
  for (size_t i = 0; i < in.size(); ++i) {
    const int k = static_cast<int>(i);
    const std::string path = dir + "/input_" + std::to_string(i) + ".bin";
    std::ifstream f(path, std::ios::binary);
    in[i].assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    const size_t want = tensor_bytes(API(input_dtype)(k), API(input_rank)(k), API(input_shape)(k));
    if (!f.is_open() || in[i].size() != want) {
      std::cerr << path << ": " << in[i].size() << " bytes, input '" << API(input_name)(k) << "' takes " << want << "\n";
      return 10;
    }
    in_ptrs.push_back(in[i].data());
  }
  for (size_t i = 0; i < out.size(); ++i) {
    const int k = static_cast<int>(i);
    out[i].resize(tensor_bytes(API(output_dtype)(k), API(output_rank)(k), API(output_shape)(k)));
    out_ptrs.push_back(out[i].data());
  }
  if (const int rc = API(run_host)(ctx.get(), in_ptrs.data(), out_ptrs.data())) {
    std::cerr << MC_STR(MODEL) "_run_host failed (" << rc << "): " << API(error)(ctx.get()) << "\n";
    return 12;
  }
  for (size_t i = 0; i < out.size(); ++i) {
    const std::string path = dir + "/output_" + std::to_string(i) + ".bin";
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(out[i].data()), static_cast<std::streamsize>(out[i].size()));
    if (!f) {
      std::cerr << "cannot write " << path << "\n";
      return 10;
    }
    std::cout << "output " << i << " '" << API(output_name)(static_cast<int>(i)) << "': " << out[i].size()
              << " bytes\n";
  }
  std::cout << "ok\n";
  return 0;
}
