#include "vm/slots.h"

#include "vm/literal.h"

namespace ab {

Type known_or_default(const std::optional<Type>& t) { return t.value_or(Type::scalar(DType::I64)); }

Value literal_constant(const Literal& lit, const std::optional<Type>& type) {
  return literal_value(lit, known_or_default(type));
}

std::optional<Type> operand_type(const FunctionTypes& types, size_t b, size_t i, size_t a) {
  if (b >= types.operand_types.size() || i >= types.operand_types[b].size() ||
      a >= types.operand_types[b][i].size())
    return std::nullopt;
  return types.operand_types[b][i][a];
}

std::optional<Type> return_type(const FunctionTypes& types, size_t b, size_t v) {
  if (b >= types.return_types.size() || v >= types.return_types[b].size()) return std::nullopt;
  return types.return_types[b][v];
}

Slots compile_slots(const std::vector<Block>& blocks, const std::vector<std::string>& params,
                    const FunctionTypes& types, const std::vector<VarDecl>* declared) {
  Slots s;
  auto add = [&](const std::string& name, const Type& t) {
    if (s.index.count(name)) return;
    s.index.emplace(name, static_cast<uint32_t>(s.types.size()));
    s.names.push_back(name);
    s.types.push_back(t);
    s.first_leaf.push_back(static_cast<uint32_t>(s.leaf_types.size()));
    size_t before = s.leaf_types.size();
    t.leaves(s.leaf_types);
    s.leaf_count.push_back(static_cast<uint32_t>(s.leaf_types.size() - before));
  };
  if (declared) {
    for (const auto& v : *declared) {
      auto it = types.vars.find(v.name.name);
      add(v.name.name, it != types.vars.end() ? it->second : known_or_default(v.type));
    }
  } else {
    for (const auto& [name, t] : types.vars) add(name, t);
  }
  // Names without a type: only in code inference never reached.
  auto untyped = [&](const std::string& name) { add(name, known_or_default(std::nullopt)); };
  for (const auto& p : params) untyped(p);
  for (const auto& b : blocks) {
    for (const auto& in : b.instrs) {
      std::vector<const Pattern*> names;
      in.out.names(names);
      for (const Pattern* p : names) untyped(p->name);
      for (const auto& a : in.args)
        if (a.is_var) untyped(a.name);
      for (const auto& n : in.popped) untyped(n.name);
    }
    if (b.term.kind == TermKind::Branch) untyped(b.term.cond.name);
    for (const auto& v : b.term.values)
      if (v.is_var) untyped(v.name);
  }
  return s;
}

}  // namespace ab
