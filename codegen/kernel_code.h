// codegen/kernel_code.h — the emitter's kernel code (codegen/emitter.cpp) for the folder's
// packaging (codegen/package.cpp): for the kernels of one file, their entry points, the body of the
// function that enqueues them, and what the file includes. Internal to codegen/.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "codegen/emitter.h"

namespace modelc {

/// \brief The code of the kernels of one file (NAME.cu, a part, or a batch profile's file).
struct KernelCode {
  std::set<std::string> headers;          // kernels/ headers the file includes
  std::map<std::string, std::string> own_headers;  // kernels/ headers that are not templates (plugins'): path -> text
  std::vector<std::string> declarations;  // the families' declarations: deduplicated, in order of first use
  std::string entries;                    // per distinct instantiation: its alias and entry point
  std::string body;                       // the statements of the enqueue function
  std::string prepare;                    // the statements of the prepare function (run at create)
  std::map<std::string, std::vector<std::string>> launches;  // kernel id -> the entry points it launches
};

/// \brief The code of `kernels`, whose entry points are named `name`_<kernel id> (the file's
/// prefix: NAME, or NAME_b8 for a batch profile); `first` is the first one's index in its profile
/// (the kernels of a part follow the parts before). Each kernel's launches are between
/// MC_KERNEL_BEGIN and MC_KERNEL_END (runtime.h: a probe's, outside the CUDA graph). Throws Error
/// naming a kernel's node when its family cannot emit it.
KernelCode kernel_code(const std::string& name, const std::vector<const Kernel*>& kernels, const ViewPointers& pointers,
                       int first);

/// \brief `#include "kernels/H"` for each header.
std::string includes_of(const std::set<std::string>& headers);

/// \brief The families' declarations in an unnamed namespace, then the entry points.
std::string declarations_of(const KernelCode& code);

/// \brief With several streams, the statements before the first kernel (the fork of the other
/// streams from the caller's) and after the last (their join); empty with one stream.
struct ForkJoin {
  std::string fork, join;
};
ForkJoin fork_join(const Schedule& s);

/// \brief `int FN(mc::Status&, const mc::Bindings&, cudaStream_t)`: the code's kernels in order.
std::string enqueue_function(const std::string& fn, const KernelCode& code, bool is_static, const ForkJoin& fj = {});

/// \brief `int FN(mc::Status&)` with `body`: run at create, before the capture.
std::string prepare_function(const std::string& fn, const std::string& body, bool is_static);

/// \brief Text for a // comment: one line, no backslash that could continue it, valid UTF-8.
std::string comment(const std::string& s);

/// "float32[1x3x8x8]"
std::string type_text(DType t, const Shape& s);

// ---- the folder (codegen/package.cpp) -----------------------------------------------------------

/// \brief Adds copies of the templates/ headers `todo` (and the templates they include,
/// transitively) to `files` as kernels/NAME; Error for one that is not in `templates`.
void add_kernel_headers(const std::filesystem::path& templates, std::set<std::string> todo,
                        std::map<std::string, std::string>& files);
/// \brief Adds every file of the runtime folder `stub` (runtime_stub/) to `files` as runtime/PATH.
void add_runtime(const std::filesystem::path& stub, std::map<std::string, std::string>& files);

/// \brief True when `dir`/`file` is a JSON object whose "generator" is "modelc": a folder modelc
/// wrote (report.json of a model's folder, tuning.json of a tuning folder).
bool has_marker(const std::filesystem::path& dir, const std::string& file);

/// What write_folder wrote: the folder, and its files relative to it, sorted.
struct FolderWrite {
  std::string dir;
  std::vector<std::string> files;
};
/// Writes further files into the new folder `tmp` (the previous folder, or an empty path when there
/// is none); returns their names relative to it.
using MoreFiles = std::function<std::vector<std::string>(const std::filesystem::path& tmp,
                                                         const std::filesystem::path& previous)>;
/// \brief Writes the folder `dir` atomically: `files` (and `more`'s) into a temporary sibling, renamed
/// into place, so an error leaves no partial output. A folder already there is replaced only when it
/// is empty or `replaceable` says it is a previous output; its entries named in `keep` (the build
/// folder, the products) move into the new one. Files identical to the previous ones keep their
/// time stamps (make rebuilds only what changed).
FolderWrite write_folder(const std::string& dir, const std::map<std::string, std::string>& files,
                         const std::function<bool(const std::filesystem::path&)>& replaceable,
                         const std::vector<std::string>& keep, const MoreFiles& more = {});

}  // namespace modelc
