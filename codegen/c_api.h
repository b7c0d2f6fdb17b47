// codegen/c_api.h — the C API of a generated model, from its one table, runtime_stub/c_api.def
// (an X-macro the generated folder's runtime/model_api.h includes too). Everything the folder says
// about the API's functions is printed from that table: NAME.h's declarations, NAME.cu's
// definitions, NAME_main.cu's table for runtime/cli.h and NAME.py's ctypes prototypes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace modelc {

/// \brief One parameter of a C API function: its C type as the table spells it ("void* ctx" has
/// type "void*"; the context's type is said as void) and its name.
struct ApiParam {
  std::string type, name;
};

/// \brief One function of the C API (an entry of runtime_stub/c_api.def).
struct ApiFunction {
  std::string ret;                 ///< the C return type ("int", "const char*")
  std::string name;                ///< without the model's prefix: "run_batch"
  std::vector<ApiParam> params;    ///< none for (): printed (void) in C
  bool weights_file_only = false;  ///< only in a model compiled with --weights-file
  std::string doc;                 ///< NAME.h's comment ("\n" between lines); "": the previous one's
  std::string body;                ///< the statements of its definition in NAME.cu
};

/// \brief The table, in NAME.h's order.
const std::vector<ApiFunction>& c_api_table();

/// \brief The facts of a model the table's texts depend on.
struct ApiModel {
  std::string name;           ///< the symbol prefix
  bool weights_file = false;  ///< --weights-file: create_with_weights, and no embedded weights
  bool profiles = false;      ///< several batch profiles (--batch 1,8,...)
  int64_t largest_batch = 1;  ///< the largest profile's batch
};

/// \brief The functions the model's API has: the table's, without the --weights-file ones unless
/// it was compiled so.
std::vector<const ApiFunction*> api_functions(const ApiModel& m);

/// \brief NAME.h's declarations, each (or each group sharing one) under its Doxygen comment,
/// groups separated by a blank line.
std::string api_declarations(const ApiModel& m);

/// \brief NAME.cu's definitions of the functions (inside its extern "C" block).
std::string api_definitions(const ApiModel& m);

/// \brief NAME_main.cu's wrappers: for each function that takes the context, one of the table's
/// type over void* (runtime/model_api.h's mc_cli::Model), in an unnamed namespace.
std::string cli_wrappers(const ApiModel& m);

/// \brief NAME_main.cu's initializer lines of mc_cli::Model after its name: one per field, in the
/// table's order (the wrapper, the NAME_ function itself, or nullptr for a function the model lacks).
std::string cli_table(const ApiModel& m);

/// \brief NAME.py's `_c_api()`: a dict, function -> (restype, argtypes), of ctypes types.
std::string python_prototypes(const ApiModel& m);

}  // namespace modelc
