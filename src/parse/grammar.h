// The PEGTL grammar of `.ab` files: the source language (docs/language.md) and the
// lowered forms (docs/language.md, "The lowered form"). grammar/autobatch.peg is the readable
// version of this file; keep the two in step.
//
// Newlines end instructions, except inside (...) and [...]. A function body
// is parsed as a flat sequence of lines (labels, instructions, terminators);
// the tree builder groups them into blocks, which gives clearer messages for
// a missing terminator than the grammar could.
#pragma once
#include <tao/pegtl.hpp>

namespace ab::grammar {

namespace p = tao::pegtl;

// ---- lexical -------------------------------------------------------------
struct blank : p::one<' ', '\t'> {};
struct comment : p::seq<p::one<'#'>, p::star<p::not_one<'\n', '\r'>>> {};
struct sp : p::star<blank> {};
struct sp1 : p::plus<blank> {};
// Whitespace that may span lines: inside brackets, and between top-level items.
struct ws : p::star<p::sor<blank, p::eol, comment>> {};

struct ident_first : p::ranges<'a', 'z', 'A', 'Z', '_'> {};
struct ident_other : p::ranges<'a', 'z', 'A', 'Z', '0', '9', '_'> {};
struct ident : p::seq<ident_first, p::star<ident_other>> {};

template <typename Str>
struct kw : p::seq<Str, p::not_at<ident_other>> {};
#define AB_KW(name, text) \
  struct kw_##name : kw<TAO_PEGTL_STRING(text)> {}
AB_KW(func, "func");
AB_KW(call, "call");
AB_KW(pop, "pop");
AB_KW(true_, "true");
AB_KW(false_, "false");
AB_KW(inf, "inf");
AB_KW(nan, "nan");
// The terminators' keywords (kw_branch, kw_goto, ...) from the one list.
#define AB_TERM(kind, rule, text, lowered) AB_KW(rule, text);
#include "ir/terminators.def"
#undef AB_TERM
AB_KW(var, "var");
AB_KW(program, "program");
AB_KW(import, "import");
AB_KW(bool_, "bool");
AB_KW(i32, "i32");
AB_KW(i64, "i64");
AB_KW(f32, "f32");
AB_KW(f64, "f64");
AB_KW(if_, "if");
AB_KW(else_, "else");
AB_KW(while_, "while");
AB_KW(break_, "break");
AB_KW(continue_, "continue");
AB_KW(for_, "for");
AB_KW(in_, "in");
AB_KW(entry_, "entry");
AB_KW(elif_, "elif");
AB_KW(and_, "and");
AB_KW(or_, "or");
AB_KW(not_, "not");
#undef AB_KW

struct dtype : p::sor<kw_bool_, kw_i32, kw_i64, kw_f32, kw_f64> {};
struct reserved : p::sor<kw_func, kw_call, kw_pop, kw_true_, kw_false_, kw_inf, kw_nan,
#define AB_TERM(kind, rule, text, lowered) kw_##rule,
#include "ir/terminators.def"
#undef AB_TERM
                         kw_if_, kw_else_, kw_while_, kw_for_, kw_break_, kw_continue_, dtype> {
};

// Names; `.` joins the parts of qualified names in lowered programs. Parts
// after the first may start with a digit (`fib.ret.0`), so names the
// compiler makes up never collide with a user's.
struct name_part : p::plus<ident_other> {};
struct name : p::seq<p::not_at<reserved>, ident, p::star<p::one<'.'>, name_part>> {};

// ---- literals --------------------------------------------------------------
struct digits : p::plus<p::digit> {};
struct number
    : p::seq<p::opt<p::one<'-'>>, digits, p::opt<p::one<'.'>, digits>,
             p::opt<p::one<'e', 'E'>, p::opt<p::one<'+', '-'>>, digits>, p::not_at<ident_other>> {};
struct special_float : p::seq<p::opt<p::one<'-'>>, p::sor<kw_inf, kw_nan>> {};
struct true_lit : kw_true_ {};
struct false_lit : kw_false_ {};
struct scalar_lit : p::sor<special_float, number, true_lit, false_lit> {};
struct tensor_lit;
struct lit_elem : p::sor<tensor_lit, scalar_lit> {};
struct tensor_close : p::one<']'> {};
struct tensor_lit
    : p::seq<p::one<'['>, ws,
             p::opt<lit_elem, p::star<ws, p::one<','>, ws, lit_elem>, ws, p::opt<p::one<','>>>, ws,
             p::must<tensor_close>> {};
struct literal : p::sor<tensor_lit, scalar_lit> {};
struct operand : p::sor<literal, name> {};

// ---- types -----------------------------------------------------------------
struct dim : digits {};
struct shape_close : p::one<']'> {};
struct shape : p::seq<p::one<'['>, ws, p::opt<dim, p::star<ws, p::one<','>, ws, dim>>, ws,
                      p::must<shape_close>> {};
struct type_elem;
struct type_tensor : p::seq<dtype, p::opt<shape>> {};
struct type_close : p::one<')'> {};
struct type_tuple
    : p::seq<p::one<'('>, ws, p::must<type_elem>, p::star<ws, p::one<','>, ws, p::must<type_elem>>,
             ws, p::must<type_close>> {};
struct type : p::sor<type_tuple, type_tensor> {};
struct type_elem : type {};

// ---- function headers --------------------------------------------------------
// A parameter's declared constraint after its type, for autobatch sample:
// `tau: f64 positive`, `x: f64 bounded(0.0, 1.0)`, `s: f64 lower(lo)`,
// `b: f64 bounded(0.0, 1.0 - a)` (a bound is an expression of numbers, data
// arguments and parameters declared before it). Which names are constraints
// is checked after parsing, where the message can list them.
struct constraint_name : ident {};
struct expr;
struct constraint_arg : p::seq<expr> {};
struct constraint_close : p::one<')'> {};
struct constraint_args
    : p::seq<p::one<'('>, ws, p::must<constraint_arg>,
             p::star<ws, p::one<','>, ws, p::must<constraint_arg>>, ws,
             p::must<constraint_close>> {};
struct constraint : p::seq<constraint_name, p::opt<sp, constraint_args>> {};
struct colon_type : p::seq<sp, p::one<':'>, sp, p::must<type_elem>> {};
// `x = ...`, `f(x: ...)` and the like where x is a reserved word: say so
// instead of giving a vague syntax error.
struct reserved_probe : p::seq<reserved, sp, p::one<'=', ',', ':', ')'>> {};
struct reserved_name : reserved_probe {};  // only raised, never tried
struct reserved_here : p::seq<p::at<reserved_probe>, p::raise<reserved_name>> {};
struct param : p::seq<name, p::opt<colon_type, p::opt<sp, constraint>>> {};
struct param_next : param {};
struct params_close : p::one<')'> {};
struct params
    : p::seq<
          p::one<'('>, ws, p::opt<reserved_here>,
          p::opt<param, p::star<ws, p::one<','>, ws, p::opt<reserved_here>, p::must<param_next>>>,
          ws, p::must<params_close>> {};
// A result may be named: `-> (total: f64, n: i64)`, `-> total: f64`.
struct result_name : name {};
struct result_label : p::seq<result_name, sp, p::one<':'>, sp> {};
struct result_elem : p::sor<p::seq<result_label, p::must<type_elem>>, type> {};
struct result_next : result_elem {};
struct results_paren
    : p::seq<p::one<'('>, ws, p::opt<result_elem, p::star<ws, p::one<','>, ws, p::must<result_next>>>,
             ws, p::must<type_close>> {};
struct result_types : p::sor<results_paren, result_elem> {};
struct results : p::seq<p::string<'-', '>'>, sp, p::must<result_types>> {};

// ---- instructions ------------------------------------------------------------
struct bang : p::one<'!'> {};
struct pat_elem;
struct pat_name : p::seq<name, p::opt<bang>> {};
struct pat_tuple
    : p::seq<p::one<'('>, ws, pat_elem, p::star<ws, p::one<','>, ws, pat_elem>, ws, p::one<')'>> {};
struct pat_elem : p::sor<pat_tuple, pat_name> {};
struct pattern : p::seq<pat_elem, p::star<sp, p::one<','>, sp, pat_elem>> {};

// ---- expressions (docs/language.md, "The structured form")
// ---------------------------------------------------- Loosest first: or; and; prefix not;
// comparisons (not chained); + -; * / %; prefix -; ** (right-associative). Operators may be
// followed by a newline (the expression continues on the next line); they may not begin one.
struct expr;
struct expr_req : p::seq<expr> {};  // an expression that must be there
// An attribute's value is a literal; a list holding anything else
// (shape=[size(x)]) gets a sentence of its own, not a syntax error inside it.
struct lit_probe;
struct lit_probe_elem : p::sor<lit_probe, scalar_lit> {};
struct lit_probe
    : p::seq<p::one<'['>, ws,
             p::opt<lit_probe_elem, p::star<ws, p::one<','>, ws, lit_probe_elem>, ws,
                    p::opt<p::one<','>>>,
             ws, p::one<']'>> {};
struct attr_computed : p::one<'['> {};  // only raised
struct attr_value
    : p::sor<dtype, p::seq<p::at<p::one<'['>>, p::not_at<lit_probe>, p::raise<attr_computed>>,
             literal> {};
struct arg_attr : p::seq<name, sp, p::one<'='>, p::not_at<p::one<'='>>, sp, p::must<attr_value>> {};
struct arg : p::sor<arg_attr, expr> {};
struct arg_next : arg {};
struct args_close : p::one<')'> {};
struct args : p::seq<ws, p::opt<arg, p::star<ws, p::one<','>, ws, p::must<arg_next>>>, ws> {};
struct callee : name {};
struct call_open : p::one<'('> {};
struct call_kw : kw_call {};
struct fn_name : name {};  // a primitive or a function, called without 'call'
struct e_call
    : p::sor<
          p::seq<call_kw, sp, p::must<callee>, sp, p::must<call_open>, args, p::must<args_close>>,
          p::seq<fn_name, sp, p::one<'('>, args, p::must<args_close>>> {};
struct paren_close : p::one<')'> {};
struct e_paren : p::seq<p::one<'('>, ws, p::must<expr_req>, ws, p::must<paren_close>> {};
struct e_tensor
    : p::seq<p::one<'['>, ws,
             p::opt<expr, p::star<ws, p::one<','>, ws, p::must<expr_req>>, ws, p::opt<p::one<','>>>,
             ws, p::must<tensor_close>> {};
// `1.` and `.5` are not literals; say what to write instead.
struct bad_float_shape
    : p::sor<p::seq<digits, p::one<'.'>, p::not_at<p::digit>>, p::seq<p::one<'.'>, digits>> {};
struct bad_float : bad_float_shape {};  // only raised, never tried
struct e_var : p::seq<p::not_at<p::sor<kw_and_, kw_or_, kw_not_>>, name> {};
struct e_primary : p::sor<p::seq<p::at<bad_float_shape>, p::raise<bad_float>>, e_paren, e_tensor,
                          e_call, special_float, number, true_lit, false_lit, e_var> {};
struct index_close : p::one<']'> {};
struct e_index : p::seq<p::one<'['>, ws, p::must<expr_req>, ws, p::must<index_close>> {};
// x[a:b], x[a:], x[:b]: integer literals (the `slice` primitive).
struct slice_int : p::seq<p::opt<p::one<'-'>>, p::plus<p::digit>> {};
struct slice_start : slice_int {};
struct slice_stop : slice_int {};
struct e_slice : p::seq<p::one<'['>, ws, p::opt<slice_start>, ws, p::one<':'>, ws,
                        p::opt<slice_stop>, ws, p::must<index_close>> {};
// x[p, q, ...]: several positions in one bracket, each an index or a
// slice (`a:b`, `:`): X[i, j] is X[i][j], X[:, j] column j of a matrix.
// Tried first, and without `must` up to its first comma, so that x[i] and
// x[a:b] fall through to the rules above.
struct slice_pos : p::seq<p::opt<slice_start>, ws, p::one<':'>, ws, p::opt<slice_stop>> {};
struct index_pos : p::sor<slice_pos, expr> {};
struct index_pos_req : index_pos {};
struct e_multi : p::seq<p::one<'['>, ws, index_pos, ws, p::one<','>, ws, p::must<index_pos_req>,
                        p::star<ws, p::one<','>, ws, p::must<index_pos_req>>, ws,
                        p::must<index_close>> {};
struct e_postfix : p::seq<e_primary, p::star<p::sor<e_multi, e_slice, e_index>>> {};
struct e_unary;
struct op_pow : p::string<'*', '*'> {};
struct e_unary_req : p::seq<e_unary> {};
struct e_pow : p::seq<e_postfix, p::opt<sp, op_pow, ws, p::must<e_unary_req>>> {};
struct op_neg : p::one<'-'> {};
struct e_unary : p::sor<p::seq<op_neg, sp, p::must<e_unary_req>>, e_pow> {};
struct op_mul : p::sor<p::seq<p::one<'*'>, p::not_at<p::one<'*'>>>, p::one<'/', '%'>> {};
struct e_mul : p::seq<e_unary, p::star<sp, op_mul, ws, p::must<e_unary_req>>> {};
struct e_mul_req : p::seq<e_mul> {};
struct op_add : p::one<'+', '-'> {};
struct e_add : p::seq<e_mul, p::star<sp, op_add, ws, p::must<e_mul_req>>> {};
struct e_add_req : p::seq<e_add> {};
struct op_cmp : p::sor<p::string<'=', '='>, p::string<'!', '='>, p::string<'<', '='>,
                       p::string<'>', '='>, p::one<'<', '>'>> {};
struct chained_cmp : op_cmp {};  // only raised, never tried
struct e_cmp : p::seq<e_add, p::opt<sp, op_cmp, ws, p::must<e_add_req>,
                                    p::opt<sp, p::at<op_cmp>, p::raise<chained_cmp>>>> {};
struct op_not : kw_not_ {};
struct e_not;
struct e_not_req : p::seq<e_not> {};
struct e_not : p::sor<p::seq<op_not, p::not_at<p::one<'('>>, sp, p::must<e_not_req>>, e_cmp> {};
struct op_and : kw_and_ {};
struct e_and;
struct e_and_req : p::seq<e_and> {};
struct e_and : p::seq<e_not, p::star<sp, op_and, ws, p::must<e_not_req>>> {};
struct op_or : kw_or_ {};
struct e_or : p::seq<e_and, p::star<sp, op_or, ws, p::must<e_and_req>>> {};
struct expr : p::seq<e_or> {};

// ---- statements and instructions ----------------------------------------------
struct rhs : expr {};
struct instr_assign : p::seq<pattern, sp, p::one<'='>, p::not_at<p::one<'='>>, sp, p::must<rhs>> {};
struct index_target : name {};
struct s_index_assign : p::seq<index_target, p::plus<p::sor<e_multi, e_index>>, sp, p::one<'='>,
                               p::not_at<p::one<'='>>, sp, p::must<rhs>> {};
struct s_eval : expr {};  // a call whose results, if any, are discarded
// `x += e`, `x[i] *= e`: x = x + e, x[i] = x[i] * e.
struct op_compound : p::sor<p::string<'*', '*', '='>, p::string<'+', '='>, p::string<'-', '='>,
                            p::string<'*', '='>, p::string<'/', '='>, p::string<'%', '='>> {};
struct s_compound
    : p::seq<index_target, p::star<p::sor<e_multi, e_index>>, sp, op_compound, sp, p::must<rhs>> {};
struct popped : name {};
struct instr_pop
    : p::seq<kw_pop, sp, p::must<popped>, p::star<sp, p::one<','>, sp, p::must<popped>>> {};

// ---- terminators ---------------------------------------------------------------
struct label_ref : name {};
struct comma : p::seq<sp, p::one<','>, sp> {};
struct comma_req : comma {};  // a ',' that must be there
struct cond_ref : name {};
struct term_branch : p::seq<kw_branch, sp, p::must<cond_ref>, p::must<comma_req>,
                            p::must<label_ref>, p::must<comma_req>, p::must<label_ref>> {};
struct term_goto : p::seq<kw_goto, sp, p::must<label_ref>> {};
struct ret_next : expr {};
struct term_return : p::seq<kw_return, p::opt<sp1, expr, p::star<comma, p::must<ret_next>>>> {};
struct term_push_goto
    : p::seq<kw_push_goto, sp, p::must<label_ref>, p::must<comma_req>, p::must<label_ref>> {};
struct term_indirect_goto : kw_indirect_goto {};
struct term_halt : kw_halt {};
// One rule per terminator of ir/terminators.def (term_<rule>), tried in its order.
struct terminator : p::sor<
#define AB_TERM(kind, rule, text, lowered) term_##rule,
#include "ir/terminators.def"
#undef AB_TERM
                        p::failure> {
};

// ---- bodies ----------------------------------------------------------------------
struct label_def : p::seq<name, sp, p::one<':'>> {};
struct stmt_block;
// `else` may also begin the line after the `}` (fmt puts it back on that line).
struct else_if : p::seq<ws, kw_else_, sp, kw_if_, sp, p::must<expr_req>, sp, p::must<stmt_block>> {
};
struct else_block : p::seq<ws, kw_else_, sp, p::must<stmt_block>> {};
// Python's `elif` where `else if` belongs: say so.
struct elif_probe : p::seq<kw_elif_, sp1, p::not_at<p::one<'=', ',', ':'>>> {};
struct elif_word : elif_probe {};  // only raised, never tried
struct elif_here : p::seq<p::at<elif_probe>, p::raise<elif_word>> {};
struct s_if : p::seq<kw_if_, sp, p::must<expr_req>, sp, p::must<stmt_block>, p::star<else_if>,
                     p::opt<else_block>, p::opt<ws, elif_here>> {};
struct s_while : p::seq<kw_while_, sp, p::must<expr_req>, sp, p::must<stmt_block>> {};
// `for i in range(n) {`, `for i in range(a, b) {` (the front end checks the range).
struct for_var : name {};
struct for_in : kw_in_ {};
struct s_for : p::seq<kw_for_, sp, p::must<for_var>, sp, p::must<for_in>, sp, p::must<expr_req>,
                      sp, p::must<stmt_block>> {};
// An `else` that follows no if's `}`.
struct stray_else : kw_else_ {};  // only raised, never tried
struct else_here : p::seq<p::at<kw_else_>, p::raise<stray_else>> {};
struct s_break : kw_break_ {};
struct s_continue : kw_continue_ {};
struct line_content
    : p::sor<reserved_here, else_here, elif_here, s_if, s_while, s_for, s_break, s_continue,
             terminator, instr_pop, label_def, s_compound, s_index_assign, instr_assign, s_eval> {};
struct line_tail : p::seq<sp, p::opt<comment>, p::sor<p::eol, p::eof, p::at<p::one<'}'>>>> {};
struct blank_line : p::seq<sp, p::opt<comment>, p::eol> {};
struct content_line : p::seq<sp, line_content, p::must<line_tail>> {};
struct block_close : p::one<'}'> {};
struct stmt_block
    : p::seq<p::one<'{'>, p::star<p::sor<blank_line, content_line>>, sp, p::must<block_close>> {};
struct body_close : p::one<'}'> {};
struct body
    : p::seq<p::one<'{'>, p::star<p::sor<blank_line, content_line>>, sp, p::must<body_close>> {};

// ---- top level ---------------------------------------------------------------------
struct func_name : name {};
// `entry func main(...)` marks the entry function.
struct entry_mark : kw_entry_ {};
struct entry_func : kw_func {};
// `inline func f(...)`: every call is replaced by the function's blocks.
struct inline_mark : kw<TAO_PEGTL_STRING("inline")> {};
struct inline_func : kw_func {};
struct func_def : p::sor<p::seq<entry_mark, sp, p::must<entry_func>, sp, p::must<func_name>, sp,
                                p::must<params>, sp, p::opt<results>, ws, p::must<body>>,
                         p::seq<inline_mark, sp, p::must<inline_func>, sp, p::must<func_name>,
                                sp, p::must<params>, sp, p::opt<results>, ws, p::must<body>>,
                         p::seq<kw_func, sp, p::must<func_name>, sp, p::must<params>, sp,
                                p::opt<results>, ws, p::must<body>>> {};
struct storage : p::sor<kw<TAO_PEGTL_STRING("null")>, kw<TAO_PEGTL_STRING("temporary")>,
                        kw<TAO_PEGTL_STRING("register")>, kw<TAO_PEGTL_STRING("full")>> {};
struct var_name : name {};
struct var_decl : p::seq<kw_var, sp, p::must<var_name>, p::opt<colon_type>, sp, p::must<storage>> {
};
struct prog_var : name {};
struct prog_var_next : prog_var {};
struct prog_vars_close : p::one<')'> {};
struct prog_vars : p::seq<p::one<'('>, ws,
                          p::opt<prog_var, p::star<ws, p::one<','>, ws, p::must<prog_var_next>>>,
                          ws, p::must<prog_vars_close>> {};
struct prog_inputs : prog_vars {};
// An output may carry its result's name: `-> (total: main.ret.0, main.ret.1)`.
struct prog_out_name : name {};
struct prog_out_label : p::seq<prog_out_name, sp, p::one<':'>, sp> {};
struct prog_outputs
    : p::seq<p::one<'('>, ws,
             p::opt<p::opt<prog_out_label>, prog_var,
                    p::star<ws, p::one<','>, ws, p::opt<prog_out_label>, p::must<prog_var_next>>>,
             ws, p::must<prog_vars_close>> {};
struct arrow : p::string<'-', '>'> {};
struct program_def : p::seq<kw_program, sp, p::must<func_name>, sp, p::must<prog_inputs>, sp,
                            p::must<arrow>, sp, p::must<prog_outputs>, ws, p::must<body>> {};
// `import NAME` (NAME.ab beside the file, else the shipped library) or
// `import "PATH"` (relative to the file).
struct import_name : ident {};
struct import_path : p::plus<p::not_one<'"', '\n', '\r'>> {};
struct import_quoted : p::seq<p::one<'"'>, import_path, p::one<'"'>> {};
struct import_target : p::sor<import_quoted, import_name> {};
struct import_def : p::seq<kw_import, sp, p::must<import_target>> {};
struct top_item : p::sor<import_def, func_def, var_decl, program_def> {};
struct file_end : p::eof {};
struct file : p::seq<ws, p::star<top_item, ws>, p::must<file_end>> {};

// ---- error messages for the points where the grammar commits ----------------------
template <typename Rule>
inline constexpr const char* error_message = nullptr;
#define AB_ERR(rule, text) \
  template <>              \
  inline constexpr const char* error_message<rule> = text
AB_ERR(tensor_close, "expected ',' or ']' in tensor literal");
AB_ERR(shape_close, "expected ',' or ']' in shape");
AB_ERR(type_elem,
       "expected a type: bool, i32, i64, f32, f64 (with an optional shape such as f64[3]) or a "
       "tuple (A, B)");
AB_ERR(type_close, "expected ',' or ')' in type list");
AB_ERR(param_next, "expected a parameter name");
AB_ERR(params_close, "expected ',' or ')' after a parameter");
AB_ERR(constraint_arg, "expected a bound: a number, a name or an expression of them, as in lower(0.0) or upper(1.0 - a)");
AB_ERR(constraint_close, "expected ',' or ')' after a bound");
AB_ERR(result_types, "expected result types after '->'");
AB_ERR(result_next, "expected a result type, or a name and its type (total: f64)");
AB_ERR(elif_word, "write 'else if': the language has no 'elif'");
AB_ERR(stray_else, "'else' must follow the '}' that closes an if");
AB_ERR(for_var, "expected the loop variable: for i in range(n) {");
AB_ERR(for_in, "expected 'in' after the loop variable: for i in range(n) {");
AB_ERR(entry_func, "expected 'func' after 'entry': entry func main(...) { ... }");
AB_ERR(attr_value, "expected a literal or a dtype after '=' (an attribute is fixed when the program is compiled: shape=[3, 2], dtype=f32)");
AB_ERR(attr_computed, "an attribute's value is a literal, fixed when the program is compiled (shape=[3, 2]); it cannot be computed from values such as size(x): write the number, which the types fix");
AB_ERR(arg_next, "expected an argument (an expression or key=value)");
AB_ERR(expr_req, "expected an expression");
AB_ERR(paren_close, "expected ')' to close the parenthesis");
AB_ERR(index_close, "expected ']' after the index");
AB_ERR(index_pos_req, "expected an index or a slice (a:b, or ':' for all) after ','");
AB_ERR(e_unary_req, "expected an operand after the operator");
AB_ERR(e_mul_req, "expected an operand after the operator");
AB_ERR(e_add_req, "expected an operand after the comparison");
AB_ERR(e_not_req, "expected an operand after the operator");
AB_ERR(e_and_req, "expected an operand after 'or'");
AB_ERR(chained_cmp, "comparisons do not chain: write 'a < b and b < c' instead of 'a < b < c'");
AB_ERR(bad_float, "float literals need digits on both sides of the point");
AB_ERR(stmt_block, "expected '{' to open the block");
AB_ERR(block_close, "expected a statement or '}' to close the block");
AB_ERR(args_close, "expected ',' or ')' in argument list");
AB_ERR(callee, "expected a function name after 'call'");
AB_ERR(call_open, "expected '(' after the function name");
AB_ERR(rhs, "expected an expression after '='");
AB_ERR(popped, "expected a variable name after 'pop'");
AB_ERR(label_ref, "expected a label name");
AB_ERR(comma_req, "expected ','");
AB_ERR(cond_ref, "expected a condition variable after 'branch' (a bool variable, not a literal)");
AB_ERR(ret_next, "expected a value to return");
AB_ERR(reserved_name, "a reserved word cannot be used as a name");
AB_ERR(line_tail, "unexpected text; expected the end of the line");
AB_ERR(body_close, "expected a statement or '}' to close the body");
AB_ERR(func_name, "expected a name");
AB_ERR(import_target, "expected a module name or a quoted path after 'import'");
AB_ERR(params, "expected '(' to open the parameter list");
AB_ERR(body, "expected '{' to open the body");
AB_ERR(storage, "expected a storage class: null, temporary, register or full");
AB_ERR(var_name, "expected a variable name after 'var'");
AB_ERR(prog_var_next, "expected a variable name");
AB_ERR(prog_vars_close, "expected ',' or ')' in variable list");
AB_ERR(prog_inputs, "expected '(' and the program's input variables");
AB_ERR(prog_outputs, "expected '(' and the program's output variables");
AB_ERR(arrow, "expected '->' and the program's output variables");
AB_ERR(file_end,
       "expected 'func' or 'entry func' (or, in a lowered program, 'var' or 'program') at the top "
       "level");
#undef AB_ERR

struct errors {
  template <typename Rule>
  static constexpr const char* message = error_message<Rule>;
};

template <typename Rule>
struct control : p::must_if<errors, p::normal, false>::control<Rule> {};

}  // namespace ab::grammar
