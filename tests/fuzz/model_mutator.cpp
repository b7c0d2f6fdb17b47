// tests/fuzz/model_mutator.cpp — see model_mutator.h.
//
// One mutation per call (libFuzzer stacks calls itself): every field of the parsed model is a
// site, nested messages included (a field that is set, and now and then a singular scalar that is
// not); one site is drawn and changed by its kind. Strings are drawn from the model's own strings
// (so an input can be rewired to another value, an op_type swapped for another op's) or made
// hostile (non-UTF-8, quotes, paths); numbers from boundary values or by a small step; raw_data is
// cut, grown or resized by a few bytes (a length that no longer matches the dims); repeated
// fields lose, gain, duplicate or swap an element (a node, an initializer, a dim, an input name).
#include "tests/fuzz/model_mutator.h"

#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "onnx/onnx_pb.h"

namespace modelc::fuzz {

namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// Op types to swap in: the supported families' ops, and control flow modelc refuses.
const char* const kOpTypes[] = {
    "Conv", "ConvTranspose", "Gemm", "MatMul", "Einsum", "Reshape", "Flatten", "Squeeze", "Unsqueeze",
    "Transpose", "Concat", "Split", "Slice", "Gather", "Pad", "Tile", "Expand", "Resize", "DepthToSpace",
    "Relu", "Clip", "Add", "Mul", "Div", "Pow", "Where", "Cast", "Softmax", "LayerNormalization",
    "BatchNormalization", "InstanceNormalization", "MaxPool", "AveragePool", "GlobalAveragePool", "ReduceSum",
    "ReduceMean", "ArgMax", "TopK", "Constant", "ConstantOfShape", "Shape", "Range", "Identity", "Dropout",
    "If", "Loop", "Scan"};

// Names and domains a hostile model may carry.
const char* const kHostileStrings[] = {"", "..", "../x", "/etc/passwd", "a/b", "\xff\xfe", "\xc3(", "x\"y",
                                       "x\ny", "x\\y", "%s%n", "ai.onnx", "modelc", "com.microsoft", "N"};

const int64_t kBoundaries[] = {0, 1, -1, 2, 3, 4, 8, 16, 255, 256, 65535, 65536,
                               std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min(),
                               int64_t{1} << 31, int64_t{1} << 32, int64_t{1} << 40, int64_t{1} << 53,
                               std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()};

const double kFloats[] = {0.0, 1.0, -1.0, 0.5, 1e-7, 65504.0, 1e30, -1e30,
                          std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()};

struct Site {
  Message* msg;
  const FieldDescriptor* field;
};

// Reflection's accessors of one scalar type: a singular field, element i of a repeated one, append.
template <class T>
struct Accessors {
  T (Reflection::*get)(const Message&, const FieldDescriptor*) const;
  T (Reflection::*get_at)(const Message&, const FieldDescriptor*, int) const;
  void (Reflection::*set)(Message*, const FieldDescriptor*, T) const;
  void (Reflection::*set_at)(Message*, const FieldDescriptor*, int, T) const;
  void (Reflection::*add)(Message*, const FieldDescriptor*, T) const;
};

#define MC_ACCESSORS(T, Name) \
  Accessors<T> { &Reflection::Get##Name, &Reflection::GetRepeated##Name, &Reflection::Set##Name, \
                 &Reflection::SetRepeated##Name, &Reflection::Add##Name }

// Calls fn with the accessors of f's scalar type (enums as their int value); false for a message.
template <class Fn>
bool with_accessors(const FieldDescriptor* f, Fn&& fn) {
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: fn(MC_ACCESSORS(int32_t, Int32)); return true;
    case FieldDescriptor::CPPTYPE_INT64: fn(MC_ACCESSORS(int64_t, Int64)); return true;
    case FieldDescriptor::CPPTYPE_UINT32: fn(MC_ACCESSORS(uint32_t, UInt32)); return true;
    case FieldDescriptor::CPPTYPE_UINT64: fn(MC_ACCESSORS(uint64_t, UInt64)); return true;
    case FieldDescriptor::CPPTYPE_FLOAT: fn(MC_ACCESSORS(float, Float)); return true;
    case FieldDescriptor::CPPTYPE_DOUBLE: fn(MC_ACCESSORS(double, Double)); return true;
    case FieldDescriptor::CPPTYPE_BOOL: fn(MC_ACCESSORS(bool, Bool)); return true;
    case FieldDescriptor::CPPTYPE_ENUM: fn(MC_ACCESSORS(int, EnumValue)); return true;
    case FieldDescriptor::CPPTYPE_STRING: fn(MC_ACCESSORS(std::string, String)); return true;
    case FieldDescriptor::CPPTYPE_MESSAGE: return false;
  }
  return false;
}
#undef MC_ACCESSORS

class Mutator {
 public:
  Mutator(unsigned seed, const ByteMutator& bytes) : rng_(seed), bytes_(bytes) {}

  // One mutation of m; false when it has no site.
  bool mutate(Message& m) {
    sites_.clear();
    strings_.clear();
    collect(m);
    if (sites_.empty()) return false;
    const Site s = sites_[below(sites_.size())];
    if (s.field->is_repeated()) {
      mutate_repeated(*s.msg, s.field);
    } else {
      mutate_singular(*s.msg, s.field);
    }
    return true;
  }

 private:
  std::size_t below(std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_); }
  bool one_in(std::size_t n) { return below(n) == 0; }

  void collect(Message& m) {
    const Reflection* r = m.GetReflection();
    const auto* d = m.GetDescriptor();
    for (int i = 0; i < d->field_count(); ++i) {
      const FieldDescriptor* f = d->field(i);
      const bool message = f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE;
      if (f->is_repeated()) {
        const int n = r->FieldSize(m, f);
        if (n > 0 || !message) sites_.push_back({&m, f});
        for (int k = 0; k < n; ++k) {
          if (message) {
            collect(*r->MutableRepeatedMessage(&m, f, k));
          } else if (f->type() == FieldDescriptor::TYPE_STRING) {
            strings_.push_back(r->GetRepeatedString(m, f, k));
          }
        }
      } else if (r->HasField(m, f)) {
        sites_.push_back({&m, f});
        if (message) {
          collect(*r->MutableMessage(&m, f));
        } else if (f->type() == FieldDescriptor::TYPE_STRING) {
          strings_.push_back(r->GetString(m, f));
        }
      } else if (!message && one_in(4)) {
        sites_.push_back({&m, f});  // an unset scalar: setting it (a dim_value for a dim_param, ...)
      }
    }
  }

  int64_t number(int64_t old) {
    switch (below(4)) {
      case 0: return kBoundaries[below(std::size(kBoundaries))];
      case 1: return static_cast<int64_t>(below(24)) - 2;  // small values: dtype codes, axes, ranks
      case 2: return static_cast<int64_t>(static_cast<uint64_t>(old) + below(7) - 3);
      // In unsigned arithmetic: doubling or negating INT64_MIN wraps instead of being UB.
      default: return static_cast<int64_t>(one_in(2) ? static_cast<uint64_t>(old) * 2 : 0 - static_cast<uint64_t>(old));
    }
  }

  double real(double old) { return one_in(2) ? kFloats[below(std::size(kFloats))] : old * (one_in(2) ? -2.0 : 0.5); }

  std::string text(const std::string& old) {
    switch (below(6)) {
      case 0:
      case 1:
        if (!strings_.empty()) return strings_[below(strings_.size())];
        return old;
      case 2: return kOpTypes[below(std::size(kOpTypes))];
      case 3: return kHostileStrings[below(std::size(kHostileStrings))];
      case 4: return old + static_cast<char>(below(256));
      default: return old.substr(0, old.empty() ? 0 : below(old.size()));
    }
  }

  // raw_data and other bytes fields: a length that no longer matches, or changed contents.
  std::string blob(std::string b) {
    switch (below(5)) {
      case 0: b.resize(b.empty() ? 0 : below(b.size())); break;                         // cut
      case 1: b.resize(b.size() + 1 + below(16), static_cast<char>(below(256))); break;  // grow
      case 2: {  // off by a few bytes, either way
        const std::size_t d = std::size_t{1} << below(4);
        b.resize(one_in(2) || b.size() < d ? b.size() + d : b.size() - d);
        break;
      }
      case 3:
        if (!b.empty()) b[below(b.size())] = static_cast<char>(below(256));
        break;
      default: {  // libFuzzer's byte mutations, within twice the length
        const std::size_t max = b.size() * 2 + 16;
        std::string buf = b;
        buf.resize(max);
        buf.resize(bytes_(reinterpret_cast<uint8_t*>(buf.data()), b.size(), max));
        b = buf;
        break;
      }
    }
    return b;
  }

  // A new value for field f (its value `old`), by the field's kind.
  template <class T>
  T changed(const FieldDescriptor* f, const T& old) {
    if constexpr (std::is_same_v<T, std::string>) {
      return f->type() == FieldDescriptor::TYPE_BYTES ? blob(old) : text(old);
    } else if constexpr (std::is_same_v<T, bool>) {
      return !old;
    } else if constexpr (std::is_floating_point_v<T>) {
      return static_cast<T>(real(old));
    } else {
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_ENUM) {  // a value the enum has
        const auto* e = f->enum_type();
        return static_cast<T>(e->value(static_cast<int>(below(static_cast<std::size_t>(e->value_count()))))->number());
      }
      return static_cast<T>(number(static_cast<int64_t>(old)));
    }
  }

  // Changes field f of m (element `index` of a repeated field; -1 for a singular one).
  void set_value(Message& m, const FieldDescriptor* f, int index) {
    const Reflection* r = m.GetReflection();
    with_accessors(f, [&](const auto& a) {
      if (index >= 0) {
        (r->*a.set_at)(&m, f, index, changed(f, (r->*a.get_at)(m, f, index)));
      } else {
        (r->*a.set)(&m, f, changed(f, (r->*a.get)(m, f)));
      }
    });
  }

  void mutate_singular(Message& m, const FieldDescriptor* f) {
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE || one_in(8)) {
      m.GetReflection()->ClearField(&m, f);
    } else {
      set_value(m, f, -1);
    }
  }

  // Moves the last element of a repeated field to `to`, keeping the others' order.
  void move_last_to(Message& m, const FieldDescriptor* f, int to) {
    const Reflection* r = m.GetReflection();
    for (int k = r->FieldSize(m, f) - 1; k > to; --k) r->SwapElements(&m, f, k - 1, k);
  }

  // Appends a copy of element i of a repeated field.
  void append_copy(Message& m, const FieldDescriptor* f, int i) {
    const Reflection* r = m.GetReflection();
    if (!with_accessors(f, [&](const auto& a) { (r->*a.add)(&m, f, (r->*a.get_at)(m, f, i)); })) {
      r->AddMessage(&m, f)->CopyFrom(r->GetRepeatedMessage(m, f, i));
    }
  }

  void mutate_repeated(Message& m, const FieldDescriptor* f) {
    const Reflection* r = m.GetReflection();
    const int n = r->FieldSize(m, f);
    const bool message = f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE;
    if (n == 0) {  // a scalar field with no element: give it one
      append_new(m, f);
      return;
    }
    const int i = static_cast<int>(below(static_cast<std::size_t>(n)));
    switch (below(message ? 3 : 5)) {
      case 0:  // drop element i
        for (int k = i; k + 1 < n; ++k) r->SwapElements(&m, f, k, k + 1);
        r->RemoveLast(&m, f);
        break;
      case 1:  // duplicate element i (the copy right after it)
        append_copy(m, f, i);
        move_last_to(m, f, i + 1);
        break;
      case 2:  // swap two elements
        r->SwapElements(&m, f, i, static_cast<int>(below(static_cast<std::size_t>(n))));
        break;
      case 3:  // a new element at a random place
        append_new(m, f);
        move_last_to(m, f, static_cast<int>(below(static_cast<std::size_t>(n) + 1)));
        break;
      default:  // change element i
        set_value(m, f, i);
        break;
    }
  }

  // Appends an element to a repeated scalar field and gives it a value.
  void append_new(Message& m, const FieldDescriptor* f) {
    const Reflection* r = m.GetReflection();
    with_accessors(f, [&](const auto& a) {
      using T = std::decay_t<decltype((r->*a.get)(m, f))>;
      T first{};  // for an enum, a value it has (another would go to the unknown fields)
      if constexpr (std::is_same_v<T, int>) {
        if (f->cpp_type() == FieldDescriptor::CPPTYPE_ENUM) first = f->enum_type()->value(0)->number();
      }
      (r->*a.add)(&m, f, first);
    });
    set_value(m, f, r->FieldSize(m, f) - 1);
  }

  std::mt19937 rng_;
  const ByteMutator& bytes_;
  std::vector<Site> sites_;
  std::vector<std::string> strings_;  // every string of the model, to draw names from
};

}  // namespace

std::size_t mutate_model(uint8_t* data, std::size_t size, std::size_t max_size, unsigned seed,
                         const ByteMutator& bytes) {
  std::mt19937 rng(seed);
  onnx::ModelProto m;
  const bool structured = rng() % 8 != 0 && size <= static_cast<std::size_t>(std::numeric_limits<int>::max()) &&
                          m.ParseFromArray(data, static_cast<int>(size));
  if (structured && Mutator(rng(), bytes).mutate(m)) {
    const std::string out = m.SerializeAsString();
    if (out.size() <= max_size) {
      std::memcpy(data, out.data(), out.size());
      return out.size();
    }
  }
  return bytes(data, size, max_size);
}

}  // namespace modelc::fuzz
