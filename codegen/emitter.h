// codegen/emitter.h — Schedule -> the generated folder (README.md, "The generated program").
//
//   NAME.h          the C API (Doxygen comments)
//   NAME.cu         the API, the model description, and, up to kMaxKernelsPerFile kernels, the
//                   kernels and the run function; beyond that the kernels go in NAME_part0.cu,
//                   NAME_part1.cu, ... (parallel builds). With batch profiles (emit_profiles), each
//                   profile's kernels go in NAME_b<batch>.cu (or NAME_b<batch>_partK.cu)
//   NAME_main.cu    the CLI program: a table of the API for runtime/cli.h
//   NAME_weights.h  the weights table: a named offset per tensor (kW_fc_weight), which the
//                   kernels' pointers use
//   NAME_weights.bin + NAME_weights.S (.incbin), or with --weights-file the .bin read at create
//   runtime/ kernels/ Makefile report.md report.json
//   CMakeLists.txt NAME.pc NAME_emu.pc NAME.map NAME.py README.md: embedding (codegen/embed.h)
// Each kernel's launches (the families' KernelLaunches, codegen/launch.h) become an entry point
// per distinct instantiation, NAME_<kernel id> (extern "C": the symbol ptxas and the report name),
// and a block of the enqueue function that sets the Params fields and launches it.
// The folder is written into a temporary sibling folder and renamed into place, so an error
// leaves no partial output. The same Schedule and options give byte-identical files.
// The kernels' code is codegen/emitter.cpp's (kernel_code.h); the folder around it, filled into
// the data folder's embed/*.in templates, is codegen/package.cpp's; the C API's functions come from
// their one table, runtime_stub/c_api.def (codegen/c_api.h).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "codegen/family.h"
#include "schedule/schedule.h"

namespace modelc {

/// Above this many kernels, they are split into NAME_partK.cu files (about this many each).
constexpr int kMaxKernelsPerFile = 40;

struct EmitOptions {
  std::string source;              ///< the model file (only its file name appears in the output)
  bool weights_file = false;       ///< --weights-file: the .bin is read at create instead of embedded
  int max_kernels_per_file = kMaxKernelsPerFile;
  bool format = true;              ///< format with libFormat (when built in)
  std::string data_dir;            ///< holds templates/, runtime_stub/, embed/, Makefile.gen ("": data_dir())
};

/// What was written.
struct EmitResult {
  std::string dir;                        ///< the folder
  std::vector<std::string> files;         ///< every file, relative to dir, sorted
  /// NAME.cu, then the parts (NAME_partK.cu) or, with batch profiles, each profile's file
  /// (NAME_b8.cu, or its parts NAME_b8_partK.cu); NAME_main.cu not included.
  std::vector<std::string> cuda_sources;
  int parts = 0;                          ///< the sources after NAME.cu
};

/// \brief The generated text files, by path relative to the folder (everything but the weights
/// .bin, which emit_model streams from the Schedule). Throws Error (an emit function that fails
/// names the kernel's node).
std::map<std::string, std::string> render_model(const Schedule& s, const EmitOptions& o);

/// \brief Writes the folder `dir` (replacing a previous modelc output there; refusing to replace
/// anything else). Files identical to the previous ones keep their time stamps, and the previous
/// build/ folder and products are kept, so `make` only rebuilds what changed.
EmitResult emit_model(const Schedule& s, const std::string& dir, const EmitOptions& o);

/// \brief Batch profiles (schedule/profiles.h): one folder and one library for the schedules of a
/// model at several batch sizes, ascending, their weights one blob already (share_weights) and
/// their inputs and outputs marked batched (mark_batched). Each profile's kernels go into
/// NAME_b<batch>.cu (or its parts NAME_b<batch>_partK.cu), their entry points NAME_b<batch>_kN;
/// NAME.cu holds the API and the profile table the runtime picks from; report.json has a
/// "profiles" array. One schedule: exactly emit_model / render_model.
EmitResult emit_profiles(const std::vector<const Schedule*>& profiles, const std::string& dir, const EmitOptions& o);
std::map<std::string, std::string> render_profiles(const std::vector<const Schedule*>& profiles, const EmitOptions& o);

/// The weights blob's bytes (entries at their offsets, zero padding), for tests.
std::string weights_blob(const Schedule& s);

/// Where modelc's templates/, runtime_stub/, embed/ and Makefile.gen are: $MODELC_DATA_DIR, else the
/// source tree modelc was built from. Throws Error when they are not there.
std::string data_dir();

/// \brief The names of the weights' offsets (NAME_weights.h): per WeightEntry, in order, `kW_` and
/// its value's name as an identifier ("fc.weight" -> kW_fc_weight; runs of other characters become
/// one '_'), with _2, _3, ... after a name already taken.
class WeightNames {
 public:
  explicit WeightNames(const std::vector<WeightEntry>& weights);  ///< keeps a reference
  const std::vector<std::string>& names() const { return names_; }
  /// The offset of a weights view in the blob: "kW_fc_weight", or "kW_fc_weight + 64" for a view
  /// inside it (the entry of the view's own value where several share the bytes). Throws an
  /// internal Error for a view outside every entry.
  std::string offset(const TensorView& v) const;

 private:
  const std::vector<WeightEntry>* weights_;
  std::vector<std::string> names_;
};

/// The EmitContext of the generated run functions: pointers are expressions over `arena`,
/// `weights` (at the named offsets), `inputs` and `outputs` (see codegen/emitter.cpp).
class ViewPointers : public EmitContext {
 public:
  explicit ViewPointers(const WeightNames& weights) : weights_(weights) {}
  std::string ptr(const TensorView& v, bool is_const) const override;
  std::string ctype(DType t) const override;

 private:
  const WeightNames& weights_;
};

/// The bytes of a file (the data folder's, a generated folder's report); Error when it cannot be read.
std::string read_text_file(const std::filesystem::path& p);

/// A C string literal of `s` (escaped; bytes outside printable ASCII as octal escapes).
std::string c_string(const std::string& s);

}  // namespace modelc
