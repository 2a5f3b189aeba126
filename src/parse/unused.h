// Warnings about variables a function assigns and never reads, and about
// parameters of the entry function it never reads (docs/language.md,
// "Warnings"). Found on the syntax tree of the user's own file, before its
// imports join it: the shipped library and imported files are never warned
// about. Warnings never change what a program computes.
#pragma once
#include <string>
#include <vector>

#include "parse/syntax.h"

namespace ab::syntax {

// The unused variables of every function of `f` (none for a lowered
// program), and for each function its unused parameters, each tagged with
// the function's name: those apply only when that function is the entry.
void unused_variables(const File& f, std::vector<ModuleWarning>& out);

}  // namespace ab::syntax
