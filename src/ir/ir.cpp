#include "ir/ir.h"

#include <cstring>

namespace ab {

bool Scalar::operator==(const Scalar& o) const {
  if (kind != o.kind) return false;
  switch (kind) {
    case Kind::Int:
      return i == o.i;
    case Kind::Bool:
      return b == o.b;
    case Kind::Float:
      return std::memcmp(&f, &o.f, sizeof f) == 0 || (f != f && o.f != o.f);
  }
  return false;
}

void Pattern::names(std::vector<const Pattern*>& out) const {
  if (!is_tuple) {
    out.push_back(this);
    return;
  }
  for (const auto& e : elems) e.names(out);
}

namespace {
struct TermInfo {
  const char* keyword;
  bool lowered_only;
};
constexpr TermInfo kTerms[] = {
#define AB_TERM(kind, rule, text, lowered) {text, lowered},
#include "ir/terminators.def"
#undef AB_TERM
};
}  // namespace

const char* term_keyword(TermKind k) { return kTerms[static_cast<size_t>(k)].keyword; }

bool term_lowered_only(TermKind k) { return kTerms[static_cast<size_t>(k)].lowered_only; }

const char* storage_class_name(StorageClass c) {
  switch (c) {
    case StorageClass::Null:
      return "null";
    case StorageClass::Temporary:
      return "temporary";
    case StorageClass::Register:
      return "register";
    case StorageClass::Full:
      return "full";
  }
  return "?";
}

std::optional<StorageClass> parse_storage_class(std::string_view s) {
  if (s == "null") return StorageClass::Null;
  if (s == "temporary") return StorageClass::Temporary;
  if (s == "register") return StorageClass::Register;
  if (s == "full") return StorageClass::Full;
  return std::nullopt;
}

const Block* Function::find_block(const std::string& label) const {
  for (const auto& b : blocks)
    if (b.label.name == label) return &b;
  return nullptr;
}

const Function* Module::find_func(const std::string& name) const {
  for (const auto& f : funcs)
    if (f.name.name == name) return &f;
  return nullptr;
}

}  // namespace ab
