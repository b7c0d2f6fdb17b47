// codegen/embed.h — the files of the generated folder that embed the model in other programs
// (README.md, "Embedding"): how a C, C++ or Python program links it.
//
//   CMakeLists.txt   the target NAME::NAME, by add_subdirectory or as an installed package
//                    (find_package(NAME)); CUDA, or the host emulation with -DMODELC_EMULATION=ON
//   NAME.pc          pkg-config of the CUDA library of the folder (make so / make lib)
//   NAME_emu.pc      pkg-config of the emulated library (make emu-so / make emu-lib)
//   NAME.map         the linker version script of the shared libraries: the C API is exported
//   NAME.py          the Python module: ctypes over libNAME.so / libNAME_emu.so, numpy, DLPack
//   NAME_dask.py     NAME.py on a Dask cluster: a worker plugin (the model once per worker), predict()
//                    over dask arrays or .npy files, python3 -m NAME_dask (docs/CLUSTER.md)
//   README.md        the folder's own guide: build, and the three ways to link
// The texts are rendered from the data folder's embed/ (CMakeLists.txt.in, model.pc.in,
// model_emu.pc.in, model.map.in, model.py, model_dask.py, README.md.in) with @NAME@-style
// placeholders; NAME.py's ctypes prototypes come from the table of the C API (codegen/c_api.h).
// Nothing in them depends on more than the model's name, source, archs, files and tensors: the
// wrappers read shapes, dtypes and batch profiles from the C API's functions at run time.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "schedule/schedule.h"

namespace modelc {

/// \brief What the embedding files say about the model.
struct EmbedInfo {
  std::string name;                  ///< the symbol prefix and file stem
  std::string source;                ///< the model's file name
  std::vector<int> archs;            ///< ascending compute capabilities (75, 90)
  std::vector<std::string> parts;    ///< the sources beside NAME.cu (the Makefile's: NAME_part0.cu, ...)
  bool weights_file = false;         ///< --weights-file: no NAME_weights.S, the .bin read at create
  std::vector<ModelTensor> inputs, outputs;
};

/// \brief Adds CMakeLists.txt, NAME.pc, NAME_emu.pc, NAME.map, NAME.py, NAME_dask.py and README.md to
/// `files`.
/// `embed_dir` holds the templates (the data folder's embed/); Error when one is missing.
void add_embedding_files(const EmbedInfo& info, const std::filesystem::path& embed_dir,
                         std::map<std::string, std::string>& files);

/// \brief The words of `s` (separated by blanks): the Makefile's source list as the CMake one.
std::vector<std::string> split_words(const std::string& s);

/// \brief Replaces every "@KEY@" of `text` by its value; Error (naming `what`) when a placeholder is
/// left, so a template and its renderer cannot drift apart silently.
std::string render_template(const std::string& text, const std::map<std::string, std::string>& values,
                            const std::string& what);

/// \brief The template `file` of `embed_dir` (the data folder's embed/) rendered with `values`;
/// Error when it is missing or has a placeholder `values` lacks.
std::string render_embed_template(const std::filesystem::path& embed_dir, const std::string& file,
                                  const std::map<std::string, std::string>& values);

}  // namespace modelc
