// runtime_stub/tune.h — the driver of a tuning folder (`modelc tune`, codegen/tune.h; copied into it
// as runtime/tune.h). NAME_tune.cu holds the tables, this file main():
//
//   ./NAME_tune [--runs N] [--warmup N] [-o times.json] [--device D]
//
// For each kernel signature: the scratch buffers are filled (operands with seeded random values of
// their type, zero where the kernel's layout pads them; workspaces with zeros), the cost model's
// choice (candidate 0) runs once and its outputs are the reference; every other candidate runs on
// the same buffers, refilled, and its outputs are compared element by element (|x - ref| <= rtol *
// |ref| + atol * max|ref|): one that differs is rejected, never timed, and can never win. Then each
// candidate that agreed runs `warmup` times and `runs` times with CUDA events around each launch
// (mc::KernelTimer), and its median is its time. The table goes to stdout, the times to a JSON
// file (read by `modelc tune --collect`):
//   {"modelc_tuning_times": 1, "model", "name", "arch", "runs", "warmup",
//    "device": {"name", "sm", "sm_count", "driver", "emulation"},
//    "kernels": [{"signature", "kernel", "candidates": [{"tactic", "estimate_us", "status": "ok" |
//                 "rejected" | "failed", "us" (ok only), "max_error", "error" (rejected, failed)}]}]}
// Exit status: 0 when every signature's reference ran (rejected candidates are reported, loudly),
// 1 when one could not run or the file could not be written, 2 for a usage error. On the host
// emulation (make emu) the times are host times: the flow runs, the figures say nothing of a GPU.
#pragma once

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "half_bits.h"
#include "profile.h"
#include "runtime.h"

namespace mc {
namespace tune {

/// One buffer of a signature's scratch arena. Elements outside the data runs are zero: element i
/// is data when (i % period) lies in [r * run_pitch, r * run_pitch + run_len) for some r < runs
/// (period 0: every element is data).
struct Region {
  size_t offset, bytes;
  int dtype;  ///< ONNX code
  int data;   ///< 1: seeded random values; 0: zeros (a workspace)
  int64_t period, runs, run_pitch, run_len;
};

/// One output of the kernel: a strided view of the scratch arena, compared with the reference at
/// |x - ref| <= rtol * |ref| + atol * max|ref| (atol 1 and rtol 0 for integers: one unit).
struct Output {
  size_t offset;
  int dtype;
  int rank;
  const int64_t* shape;
  const int64_t* strides;  ///< elements
  double rtol, atol;
};

struct Candidate {
  const char* tactic;
  double estimate_us;
  size_t workspace_bytes;
  EnqueueFn enqueue;
  PrepareFn prepare;
};

struct Signature {
  const char* signature;
  const char* kernel;  ///< the model's kernel (report.json id) it was taken from
  size_t arena_bytes;
  int num_regions;
  const Region* regions;
  int num_outputs;
  const Output* outputs;
  int num_candidates;  ///< the cost model's choice first
  const Candidate* candidates;
};

struct Tuning {
  const char* name;
  const char* model;
  const char* arch;  ///< "sm_80"
  int sm;
  int num_signatures;
  const Signature* signatures;
};

namespace detail {

// splitmix64: the same values for the same seed on every machine.
inline uint64_t next(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

inline uint16_t float_to_bf16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even (finite values only here)
  return static_cast<uint16_t>(u >> 16);
}

inline float bf16_bits_to_float(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Element i of a buffer of ONNX type `dtype` as a double (0 for a type the driver does not read).
inline double element(const unsigned char* p, int dtype, size_t i) {
  switch (dtype) {
    case 1: { float f; std::memcpy(&f, p + 4 * i, 4); return f; }
    case 10: { uint16_t h; std::memcpy(&h, p + 2 * i, 2); return mc_half::half_bits_to_float(h); }
    case 16: { uint16_t h; std::memcpy(&h, p + 2 * i, 2); return bf16_bits_to_float(h); }
    case 3: return static_cast<int8_t>(p[i]);
    case 2: return p[i];
    case 6: { int32_t v; std::memcpy(&v, p + 4 * i, 4); return v; }
    default: return 0;
  }
}

// The host image of a region: seeded values of its type (floats in [-1, 1], 8-bit integers in
// [-3, 3], 32-bit ones in [-64, 64]), zero outside its data runs.
inline std::vector<unsigned char> fill(const Region& r, uint64_t seed) {
  std::vector<unsigned char> b(r.bytes, 0);
  if (!r.data) return b;
  const size_t esize = dtype_bytes(r.dtype);
  if (esize == 0) return b;
  uint64_t s = seed;
  for (size_t i = 0; i < r.bytes / esize; ++i) {
    if (r.period > 0) {
      const int64_t at = static_cast<int64_t>(i % static_cast<size_t>(r.period));
      bool in = false;
      for (int64_t k = 0; k < r.runs && !in; ++k) in = at >= k * r.run_pitch && at < k * r.run_pitch + r.run_len;
      if (!in) continue;
    }
    const uint64_t x = next(s);
    const float u = static_cast<float>((x >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;  // [-1, 1)
    unsigned char* e = b.data() + i * esize;
    switch (r.dtype) {
      case 1: std::memcpy(e, &u, 4); break;
      case 10: { const uint16_t h = mc_half::float_to_half_bits(u); std::memcpy(e, &h, 2); break; }
      case 16: { const uint16_t h = float_to_bf16_bits(u); std::memcpy(e, &h, 2); break; }
      case 3: *e = static_cast<unsigned char>(static_cast<int8_t>(static_cast<int>(x % 7) - 3)); break;
      case 2: *e = static_cast<unsigned char>(x % 7); break;
      case 6: { const int32_t v = static_cast<int32_t>(x % 129) - 64; std::memcpy(e, &v, 4); break; }
      default: { for (size_t j = 0; j < esize; ++j) e[j] = static_cast<unsigned char>(next(s)); }
    }
  }
  return b;
}

struct Result {
  std::string status = "ok";  ///< ok | rejected | failed
  double us = 0;
  double max_error = 0;       ///< the largest |x - ref| over the outputs
  std::string error;
};

// The driver's device state for one signature: the scratch arena and the host images.
class Bench {
 public:
  Bench(const Signature& s, int sm) : s_(s), sm_(sm) {}
  ~Bench() {
    if (arena_) cudaFree(arena_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  int init(Status& mc_status) {
    MC_CHECK(cudaStreamCreate(&stream_));
    MC_CHECK(cudaMalloc(reinterpret_cast<void**>(&arena_), s_.arena_bytes > 0 ? s_.arena_bytes : 1));
    for (int i = 0; i < s_.num_regions; ++i) images_.push_back(fill(s_.regions[i], 0x6d6f64656c63ull + static_cast<uint64_t>(i)));
    return kOk;
  }

  // Every region back to its image (a kernel may write where it reads).
  int refill(Status& mc_status) {
    for (int i = 0; i < s_.num_regions; ++i) {
      const Region& r = s_.regions[i];
      MC_CHECK(cudaMemcpyAsync(arena_ + r.offset, images_[static_cast<size_t>(i)].data(), r.bytes,
                               cudaMemcpyHostToDevice, stream_));
    }
    MC_CHECK(cudaStreamSynchronize(stream_));
    return kOk;
  }

  // Candidate c once on refilled buffers; its outputs into `out`.
  int run_once(Status& mc_status, const Candidate& c, std::vector<std::vector<double>>& out) {
    if (const int r = refill(mc_status)) return r;
    if (const int r = c.prepare(mc_status)) return r;
    if (const int r = c.enqueue(mc_status, bindings(nullptr), stream_)) return r;
    MC_CHECK(cudaStreamSynchronize(stream_));
    MC_CHECK(cudaGetLastError());
    // Each output's elements, dense, as doubles.
    out.clear();
    std::vector<unsigned char> staging, dense;
    for (int o = 0; o < s_.num_outputs; ++o) {
      const Output& v = s_.outputs[o];
      size_t n = 1;
      for (int d = 0; d < v.rank; ++d) n *= static_cast<size_t>(v.shape[d]);
      dense.resize(n * dtype_bytes(v.dtype));
      MC_CHECK(copy_view_to_host(arena_ + v.offset, v.rank, v.shape, v.strides, dtype_bytes(v.dtype), staging, dense.data()));
      out.emplace_back(n);
      for (size_t i = 0; i < n; ++i) out.back()[i] = element(dense.data(), v.dtype, i);
    }
    return kOk;
  }

  // Candidate c `warmup` times untimed, then `runs` times timed; *us gets the median.
  int time(Status& mc_status, const Candidate& c, int warmup, int runs, double* us) {
    for (int i = 0; i < warmup; ++i) {
      if (const int r = c.enqueue(mc_status, bindings(nullptr), stream_)) return r;
    }
    MC_CHECK(cudaStreamSynchronize(stream_));
    KernelTimer timer;
    if (const int r = timer.init(mc_status, 1)) return r;
    for (int i = 0; i < runs; ++i) {
      if (const int r = c.enqueue(mc_status, bindings(&timer), stream_)) return r;
    }
    *us = timer.median(0);
    return kOk;
  }

 private:
  Bindings bindings(Probe* probe) const {
    Bindings b{};  // no weights, inputs or outputs: every operand is in the scratch arena
    b.arena = arena_;
    b.sm = sm_;
    b.probe = probe;
    return b;
  }

  const Signature& s_;
  int sm_;
  cudaStream_t stream_ = nullptr;
  unsigned char* arena_ = nullptr;
  std::vector<std::vector<unsigned char>> images_;
};

// The first element where `got` differs from `ref` beyond the output's tolerance: "" when none.
inline std::string compare(const Signature& s, const std::vector<std::vector<double>>& ref,
                           const std::vector<std::vector<double>>& got, double* max_error) {
  *max_error = 0;
  std::string first;
  for (int o = 0; o < s.num_outputs; ++o) {
    const Output& out = s.outputs[o];
    const std::vector<double>& a = ref[static_cast<size_t>(o)];
    const std::vector<double>& b = got[static_cast<size_t>(o)];
    double scale = 0;
    for (double v : a) scale = std::fmax(scale, std::fabs(v));
    const bool integer = out.dtype != 1 && out.dtype != 10 && out.dtype != 16;
    for (size_t i = 0; i < a.size(); ++i) {
      const double d = std::fabs(b[i] - a[i]);
      if (!(d <= *max_error)) *max_error = std::isnan(d) ? INFINITY : std::fmax(*max_error, d);
      const double limit = integer ? out.atol : out.rtol * std::fabs(a[i]) + out.atol * scale;
      if (first.empty() && !(d <= limit)) {
        char m[200];
        std::snprintf(m, sizeof m, "output %d element %zu is %.6g, the cost model's choice gives %.6g (limit %.3g)", o, i,
                      b[i], a[i], limit);
        first = m;
      }
    }
  }
  return first;
}

inline std::string fixed(double v, int digits) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}

inline int usage(const char* argv0, const char* error) {
  if (error) std::fprintf(stderr, "error: %s\n", error);
  std::fprintf(error ? stderr : stdout,
               "usage: %s [--runs N] [--warmup N] [-o FILE.json] [--device D]\n"
               "  times every candidate tactic of every kernel signature of this tuning folder and writes the\n"
               "  times (default times.json; modelc tune --collect FILE.json -o NAME.tuning.json makes a cache)\n"
               "  --runs N     timed runs per candidate, the median kept (default 50)\n"
               "  --warmup N   untimed runs before them (default 10)\n"
               "  --device D   the CUDA device (default 0)\n",
               argv0);
  return error ? 2 : 0;
}

inline bool parse_count(const char* s, int lo, int* out) {
  char* end = nullptr;
  const long v = std::strtol(s, &end, 10);
  if (!s[0] || *end || v < lo || v > 1000000) return false;
  *out = static_cast<int>(v);
  return true;
}

}  // namespace detail

/// \brief The driver: see the top of this file.
inline int main(const Tuning& t, int argc, char** argv) {
  using namespace detail;
  int runs = 50, warmup = 10, device = 0;
  std::string out = "times.json";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "-h" || a == "--help") return usage(argv[0], nullptr);
    if ((a == "--runs" || a == "--warmup" || a == "--device" || a == "-o") && !has_value) {
      return usage(argv[0], (a + " needs a value").c_str());
    }
    if (a == "--runs") {
      if (!parse_count(argv[++i], 1, &runs)) return usage(argv[0], "--runs takes a count of at least 1");
    } else if (a == "--warmup") {
      if (!parse_count(argv[++i], 0, &warmup)) return usage(argv[0], "--warmup takes a count of at least 0");
    } else if (a == "--device") {
      if (!parse_count(argv[++i], 0, &device)) return usage(argv[0], "--device takes a device number");
    } else if (a == "-o") {
      out = argv[++i];
    } else {
      return usage(argv[0], ("unknown argument '" + a + "'").c_str());
    }
  }
#if defined(MODELC_HOST_EMULATION)
  // The emulation takes the folder's arch (its shared memory limits), unless MODELC_EMU_SM says.
  if (!std::getenv("MODELC_EMU_SM")) host::set_emulated_arch(t.sm);
#endif
  if (cudaSetDevice(device) != cudaSuccess) {
    std::fprintf(stderr, "error: CUDA device %d is not usable: %s\n", device, cudaGetErrorString(cudaGetLastError()));
    return 1;
  }
  const mc_cli::DeviceFacts d = mc_cli::device_facts(device);
  if (d.sm != t.sm && !d.emulation) {
    std::fprintf(stderr,
                 "error: device %d (%s) is sm_%d; this tuning folder times %s's tactics for %s: run it on an sm_%d GPU, "
                 "or tune for this one (modelc tune ... --arch sm_%d)\n",
                 device, d.name.c_str(), d.sm, t.name, t.arch, t.sm, d.sm);
    return 1;
  }
  std::printf("tuning %s (%s) for %s on %s (sm_%d, %d SMs): %d kernel signatures, %d warm-up and %d timed runs each%s\n",
              t.name, t.model, t.arch, d.name.c_str(), d.sm, d.sm_count, t.num_signatures, warmup, runs,
              d.emulation ? "; host emulation: host times, not a GPU's" : "");
  using mc_cli::detail::json_number;
  using mc_cli::detail::json_string;
  std::string json = "{\n  \"modelc_tuning_times\": 1,\n  \"model\": " + json_string(t.model) +
                     ",\n  \"name\": " + json_string(t.name) + ",\n  \"arch\": " + json_string(t.arch) +
                     ",\n  \"runs\": " + std::to_string(runs) + ",\n  \"warmup\": " + std::to_string(warmup) +
                     ",\n  \"device\": {\"name\": " + json_string(d.name) + ", \"sm\": " + std::to_string(d.sm) +
                     ", \"sm_count\": " + std::to_string(d.sm_count) + ", \"driver\": " + std::to_string(d.driver) +
                     ", \"emulation\": " + (d.emulation ? "true" : "false") + "},\n  \"kernels\": [";
  int rejected = 0, failed_refs = 0;
  for (int si = 0; si < t.num_signatures; ++si) {
    const Signature& s = t.signatures[si];
    std::printf("\n%s (kernel %s)\n", s.signature, s.kernel);
    Status st;
    Bench bench(s, d.sm);
    std::vector<Result> results(static_cast<size_t>(s.num_candidates));
    std::vector<std::vector<double>> ref, got;
    if (bench.init(st) != kOk || bench.run_once(st, s.candidates[0], ref) != kOk) {
      ++failed_refs;
      for (Result& r : results) {
        r.status = "failed";
        r.error = "the cost model's choice did not run: " + st.message;
      }
      std::printf("  FAILED: the cost model's choice (%s) did not run: %s\n", s.candidates[0].tactic, st.message.c_str());
    } else {
      for (int c = 0; c < s.num_candidates; ++c) {
        Result& r = results[static_cast<size_t>(c)];
        Status cs;
        if (c > 0) {
          if (bench.run_once(cs, s.candidates[c], got) != kOk) {
            r.status = "failed";
            r.error = cs.message;
            continue;
          }
          r.error = compare(s, ref, got, &r.max_error);
          if (!r.error.empty()) {
            r.status = "rejected";
            ++rejected;
            continue;
          }
        }
        if (bench.refill(cs) != kOk || bench.time(cs, s.candidates[c], warmup, runs, &r.us) != kOk) {
          r.status = "failed";
          r.error = cs.message;
        }
      }
      const double ref_us = results[0].us;
      for (int c = 0; c < s.num_candidates; ++c) {
        const Result& r = results[static_cast<size_t>(c)];
        const Candidate& cand = s.candidates[c];
        std::string line = "  " + mc_cli::detail::pad(cand.tactic, 48) + " estimate " +
                           mc_cli::detail::pad(fixed(cand.estimate_us, 2), 8, true) + " us";
        if (r.status == "ok") {
          line += "  measured " + mc_cli::detail::pad(fixed(r.us, 2), 9, true) + " us";
          if (ref_us > 0) line += "  " + fixed(r.us / ref_us, 2) + "x the choice";
          if (c == 0) line += "  (the cost model's choice)";
        } else {
          line += "  " + std::string(r.status == "rejected" ? "REJECTED" : "FAILED") + ": " + r.error;
        }
        std::printf("%s\n", line.c_str());
      }
    }
    json += std::string(si ? "," : "") + "\n    {\"signature\": " + json_string(s.signature) + ", \"kernel\": " +
            json_string(s.kernel) + ", \"candidates\": [";
    for (int c = 0; c < s.num_candidates; ++c) {
      const Result& r = results[static_cast<size_t>(c)];
      json += std::string(c ? "," : "") + "\n      {\"tactic\": " + json_string(s.candidates[c].tactic) +
              ", \"estimate_us\": " + json_number(s.candidates[c].estimate_us) + ", \"status\": " + json_string(r.status);
      if (r.status == "ok") json += ", \"us\": " + json_number(r.us);
      if (r.status != "failed") json += ", \"max_error\": " + json_number(std::isfinite(r.max_error) ? r.max_error : 1e308);
      if (!r.error.empty()) json += ", \"error\": " + json_string(r.error);
      json += "}";
    }
    json += "\n    ]}";
  }
  json += "\n  ]\n}\n";
  FILE* f = std::fopen(out.c_str(), "wb");
  bool written = f && std::fwrite(json.data(), 1, json.size(), f) == json.size();
  if (f && std::fclose(f) != 0) written = false;
  if (!written) {
    std::fprintf(stderr, "error: cannot write %s: %s\n", out.c_str(), std::strerror(errno));
    return 1;
  }
  std::printf("\nwrote %s\n", out.c_str());
  if (rejected > 0) {
    std::printf("warning: %d candidate%s rejected: %s output differs from the cost model's choice (a modelc bug: "
                "please report it with this folder); rejected candidates are never chosen\n",
                rejected, rejected == 1 ? "" : "s", rejected == 1 ? "its" : "their");
  }
  if (failed_refs > 0) {
    std::fprintf(stderr, "error: %d signature%s could not run the cost model's choice (above)\n", failed_refs,
                 failed_refs == 1 ? "" : "s");
    return 1;
  }
  return 0;
}

}  // namespace tune
}  // namespace mc
