#include "codegen/format.h"

#if defined(MODELC_HAVE_CLANG_FORMAT)
#include <clang/Format/Format.h>
#include <clang/Tooling/Core/Replacement.h>
#include <llvm/Support/Error.h>
#endif

namespace modelc {

#if defined(MODELC_HAVE_CLANG_FORMAT)

bool have_formatter() { return true; }

std::string format_source(const std::string& code, const std::string& file_name) {
  clang::format::FormatStyle style = clang::format::getGoogleStyle(clang::format::FormatStyle::LK_Cpp);
  style.ColumnLimit = 110;
  style.SortIncludes = clang::format::FormatStyle::SI_Never;  // the runtime must come first
  style.Standard = clang::format::FormatStyle::LS_Cpp17;
  const std::vector<clang::tooling::Range> ranges{clang::tooling::Range(0, static_cast<unsigned>(code.size()))};
  const clang::tooling::Replacements replacements = clang::format::reformat(style, code, ranges, file_name);
  llvm::Expected<std::string> formatted = clang::tooling::applyAllReplacements(code, replacements);
  if (!formatted) {
    llvm::consumeError(formatted.takeError());
    return code;
  }
  return *formatted;
}

#else

bool have_formatter() { return false; }

std::string format_source(const std::string& code, const std::string&) { return code; }

#endif

}  // namespace modelc
