// The `autobatch._autobatch` extension: the public C++ API
// (include/autobatch/autobatch.h, nothing else) seen from Python. The
// Python-facing layer (argument binding, dtype conversion, result objects)
// is python/autobatch/__init__.py; this file does what needs C++:
// - inputs: C-contiguous NumPy arrays of a supported dtype are given to the
//   VMs as borrowed ArrayViews (no copy); outputs become NumPy arrays that
//   own the library's Array (no copy either);
// - Python callables as custom primitives: the kernel takes the GIL, gathers
//   the active lanes' operands into fresh arrays (batch first), calls the
//   function and scatters its result back;
// - the GIL is released while a program runs (a Python primitive or a trace
//   callback takes it back for its own call only), so other Python threads
//   run meanwhile and several runs go in parallel;
// - errors become autobatch.CompileError / InputError / ExecutionError
//   (classes defined in autobatch/_errors.py).
#include <csignal>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "autobatch/autobatch.h"

namespace py = pybind11;
using autobatch::DType;

namespace {

// ---------------------------------------------------------------- errors

py::object error_class(const char* name) {
  return py::module_::import("autobatch._errors").attr(name);
}

py::list diagnostics_list(const std::vector<autobatch::Diagnostic>& ds) {
  py::list out;
  for (const auto& d : ds) out.append(py::cast(d));
  return out;
}

std::string joined(const std::vector<autobatch::Diagnostic>& ds) {
  std::string out;
  for (const auto& d : ds) out += d.rendered;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

[[noreturn]] void raise(const py::object& cls, const py::object& exc) {
  PyErr_SetObject(cls.ptr(), exc.ptr());
  throw py::error_already_set();
}

// Diagnostics of compile() are CompileError; later, those about the source (a
// file and a line: type errors may show only once the inputs' types are
// known) too, and the rest (inputs, options) InputError.
[[noreturn]] void raise_diagnostics(const std::vector<autobatch::Diagnostic>& ds,
                                    bool compiling = false) {
  bool located = compiling;
  for (const auto& d : ds) located = located || (!d.file.empty() && d.line > 0);
  py::object cls = error_class(located ? "CompileError" : "InputError");
  raise(cls, cls(joined(ds), diagnostics_list(ds)));
}

[[noreturn]] void raise_input(const std::string& message) {
  py::object cls = error_class("InputError");
  raise(cls, cls(message, py::list()));
}

[[noreturn]] void raise_runtime(const autobatch::RuntimeError& e) {
  py::object cls = error_class("ExecutionError");
  std::string text = e.rendered;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  py::object exc = cls(text);
  exc.attr("message") = e.message;
  exc.attr("file") = e.file;
  exc.attr("line") = e.line;
  exc.attr("column") = e.column;
  exc.attr("function") = e.function;
  exc.attr("block") = e.block;
  exc.attr("thread") = e.thread >= 0 ? py::object(py::int_(e.thread)) : py::none();
  exc.attr("batch") = e.batch;
  raise(cls, exc);
}

template <typename T>
T value_or_raise(autobatch::Result<T> r, bool compiling = false) {
  if (!r) raise_diagnostics(r.diagnostics(), compiling);
  return std::move(*r);
}

// ---------------------------------------------------------------- arrays

py::dtype numpy_dtype(DType d) {
  switch (d) {
    case DType::Bool:
      return py::dtype::of<bool>();
    case DType::I32:
      return py::dtype::of<int32_t>();
    case DType::I64:
      return py::dtype::of<int64_t>();
    case DType::F32:
      return py::dtype::of<float>();
    case DType::F64:
      return py::dtype::of<double>();
  }
  return py::dtype::of<double>();
}

std::optional<DType> dtype_of_numpy(const py::dtype& dt) {
  char kind = dt.kind();
  auto size = dt.itemsize();
  if (kind == 'b' && size == 1) return DType::Bool;
  if (kind == 'i' && size == 4) return DType::I32;
  if (kind == 'i' && size == 8) return DType::I64;
  if (kind == 'f' && size == 4) return DType::F32;
  if (kind == 'f' && size == 8) return DType::F64;
  return std::nullopt;
}

// A borrowed view of `a` (the caller keeps `a` alive during the run). The
// Python layer has already made it C-contiguous and of a supported dtype.
autobatch::ArrayView view_of(const py::array& a, size_t index) {
  auto dt = dtype_of_numpy(a.dtype());
  if (!dt)
    raise_input("input " + std::to_string(index) + ": unsupported dtype " +
                py::str(a.dtype()).cast<std::string>());
  if (!(a.flags() & py::array::c_style)) raise_input("internal: input is not C-contiguous");
  autobatch::ArrayView v;
  v.dtype = *dt;
  for (py::ssize_t i = 0; i < a.ndim(); ++i) v.shape.push_back(a.shape(i));
  v.data = a.data();
  return v;
}

// The library's (immutable, shared) output as a NumPy array that owns it.
py::array to_numpy(const autobatch::Array& a) {
  auto* held = new autobatch::Array(a);
  py::capsule owner(held, [](void* p) { delete static_cast<autobatch::Array*>(p); });
  std::vector<py::ssize_t> shape(a.shape().begin(), a.shape().end());
  // The data is the library's, but nothing else refers to it once the run
  // has returned: the array may be written like any other.
  return py::array(numpy_dtype(a.dtype()), shape, a.data(), owner);
}

std::vector<autobatch::ArrayView> views_of(const std::vector<py::array>& arrays) {
  std::vector<autobatch::ArrayView> out;
  for (size_t i = 0; i < arrays.size(); ++i) out.push_back(view_of(arrays[i], i));
  return out;
}

// ---------------------------------------------------------------- Python callables

bool finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing();
#else
  return _Py_IsFinalizing();
#endif
}

// A Python object referred to from the library's threads: copies of the
// shared_ptr never touch Python reference counts, and the last one lets the
// object go under the GIL (or leaks it when the interpreter is already gone,
// e.g. a primitive registered for the whole process).
struct PyRef {
  PyObject* obj;
  explicit PyRef(py::object o) : obj(o.release().ptr()) {}
  ~PyRef() {
    if (Py_IsInitialized() && !finalizing()) {
      py::gil_scoped_acquire gil;
      Py_DECREF(obj);
    }
  }
  py::handle get() const { return py::handle(obj); }
};

struct NumpyFns {
  py::object asarray, can_cast, broadcast_to, ascontiguousarray;
};
// Created once under the GIL and never destroyed (no Python call at exit).
const NumpyFns& numpy_fns() {
  static NumpyFns* fns = [] {
    py::module_ np = py::module_::import("numpy");
    return new NumpyFns{np.attr("asarray"), np.attr("can_cast"), np.attr("broadcast_to"),
                        np.attr("ascontiguousarray")};
  }();
  return *fns;
}

// "ValueError: bad value (raised at prims.py:12, in logp)": the exception and
// the innermost frame of its traceback (where fn's code raised it).
std::string exception_text(py::error_already_set& e) {
  std::string type = py::str(e.type().attr("__name__"));
  std::string what = py::str(e.value());
  std::string text = what.empty() ? type : type + ": " + what;
  py::object tb = e.trace();
  if (tb.is_none()) return text;
  while (!tb.attr("tb_next").is_none()) tb = tb.attr("tb_next");
  py::object code = tb.attr("tb_frame").attr("f_code");
  std::string file = py::str(code.attr("co_filename"));
  return text + " (raised at " + file + ":" + py::str(tb.attr("tb_lineno")).cast<std::string>() +
         ", in " + py::str(code.attr("co_name")).cast<std::string>() + ")";
}

// "(4, 3)", as NumPy prints a shape.
std::string shape_text(const std::vector<py::ssize_t>& shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + (shape.size() == 1 ? ",)" : ")");
}

std::vector<py::ssize_t> shape_of(const py::array& a) {
  return std::vector<py::ssize_t>(a.shape(), a.shape() + a.ndim());
}

// NumPy's broadcasting rule: `from` fits `to` aligned at the right, each
// dimension equal or 1.
bool broadcastable(const std::vector<py::ssize_t>& from, const std::vector<py::ssize_t>& to) {
  if (from.size() > to.size()) return false;
  for (size_t i = 0; i < from.size(); ++i) {
    py::ssize_t f = from[from.size() - 1 - i], t = to[to.size() - 1 - i];
    if (f != t && f != 1) return false;
  }
  return true;
}

// Writes one returned value into result `o` of the call; "" or why it does
// not fit: its dtype and shape against those the result needs.
std::string write_result(const py::object& value, const autobatch::KernelOut& o, int64_t n) {
  const NumpyFns& np = numpy_fns();
  py::dtype want = numpy_dtype(o.dtype);
  std::vector<py::ssize_t> want_shape{n};
  want_shape.insert(want_shape.end(), o.shape, o.shape + o.rank);
  py::array got;
  try {
    got = np.asarray(value);
  } catch (py::error_already_set& e) {
    return "returned a value that is not an array (" + exception_text(e) + ")";
  }
  std::vector<py::ssize_t> got_shape = shape_of(got);
  bool dtype_ok = dtype_of_numpy(got.dtype()) == o.dtype ||
                  np.can_cast(got.dtype(), want, "same_kind").cast<bool>();
  bool shape_ok = broadcastable(got_shape, want_shape);
  if (!dtype_ok || !shape_ok) {
    autobatch::TensorType t{o.dtype, std::vector<int64_t>(o.shape, o.shape + o.rank)};
    std::string why = dtype_ok
                          ? ""
                          : "; " + py::str(got.dtype()).cast<std::string>() + " does not cast to " +
                                py::str(want).cast<std::string>() + " within its kind";
    return "returned " + py::str(got.dtype()).cast<std::string>() + " of shape " +
           shape_text(got_shape) + ", expected " + py::str(want).cast<std::string>() +
           " of shape " + shape_text(want_shape) + " (" + t.str() + " for " + std::to_string(n) +
           " calling thread" + (n == 1 ? "" : "s") + why + ")";
  }
  py::array out = np.ascontiguousarray(np.broadcast_to(got, py::cast(want_shape)), want);
  size_t eb = static_cast<size_t>(o.event_size) * autobatch::dtype_size(o.dtype);
  const auto* src = static_cast<const char*>(out.data());
  auto* dst = static_cast<char*>(o.data);
  if (eb && o.access == autobatch::Access::Dense) {
    std::memcpy(dst, src, static_cast<size_t>(n) * eb);
  } else if (eb) {
    for (int64_t j = 0; j < n; ++j)
      std::memcpy(dst + o.slot(j) * static_cast<int64_t>(eb), src + j * eb, eb);
  }
  return "";
}

// The kernel of a Python primitive: fn(*operands) with each operand an array
// of the n active lanes (batch first). Its value (a tuple of one value per
// result when the primitive has several) is converted to each result's dtype
// (same kind, or a safe cast) and broadcast to (n, *event shape); a value
// that does not fit is an error naming the expected and the returned dtype
// and shape.
bool call_python(const std::string& name, const PyRef& fn, const autobatch::KernelCall& c,
                 autobatch::KernelError* err) {
  py::gil_scoped_acquire gil;
  const std::string who = "Python primitive '" + name + "'";
  try {
    py::tuple args(c.nargs);
    for (int i = 0; i < c.nargs; ++i) {
      const autobatch::KernelArg& a = c.args[i];
      std::vector<py::ssize_t> shape{c.n};
      shape.insert(shape.end(), a.shape, a.shape + a.rank);
      py::array arr(numpy_dtype(a.dtype), shape);
      size_t eb = static_cast<size_t>(a.event_size) * autobatch::dtype_size(a.dtype);
      auto* dst = static_cast<char*>(arr.mutable_data());
      const auto* src = static_cast<const char*>(a.data);
      if (eb && a.access == autobatch::Access::Dense) {
        std::memcpy(dst, src, static_cast<size_t>(c.n) * eb);
      } else if (eb) {
        for (int64_t j = 0; j < c.n; ++j)
          std::memcpy(dst + j * eb, src + a.slot(j) * static_cast<int64_t>(eb), eb);
      }
      args[i] = std::move(arr);
    }
    py::object r = fn.get()(*args);
    err->lane = 0;
    if (c.nouts == 1) {
      err->message = write_result(r, c.outs[0], c.n);
      if (!err->message.empty()) err->message = who + " " + err->message;
      return err->message.empty();
    }
    std::string types = "(";
    for (int k = 0; k < c.nouts; ++k) {
      const autobatch::KernelOut& o = c.outs[k];
      types +=
          (k ? ", " : "") +
          autobatch::TensorType{o.dtype, std::vector<int64_t>(o.shape, o.shape + o.rank)}.str();
    }
    types += ")";
    if (!py::isinstance<py::tuple>(r) && !py::isinstance<py::list>(r)) {
      err->message = who + " returned one " +
                     py::str(py::type::of(r).attr("__name__")).cast<std::string>() +
                     ", expected a tuple of " + std::to_string(c.nouts) +
                     " arrays (one per result of " + types + ")";
      return false;
    }
    py::sequence seq = py::reinterpret_borrow<py::sequence>(r);
    if (static_cast<int>(py::len(seq)) != c.nouts) {
      size_t got = py::len(seq);
      err->message = who + " returned " + std::to_string(got) + " value" + (got == 1 ? "" : "s") +
                     ", expected a tuple of " + std::to_string(c.nouts) +
                     " arrays (one per result of " + types + ")";
      return false;
    }
    for (int k = 0; k < c.nouts; ++k) {
      std::string e = write_result(seq[k], c.outs[k], c.n);
      if (!e.empty())
        err->message += (err->message.empty() ? who : ";") + " result " + std::to_string(k + 1) +
                        " of " + std::to_string(c.nouts) + " " + e;
    }
    return err->message.empty();
  } catch (py::error_already_set& e) {
    err->lane = 0;
    err->message = who + " raised " + exception_text(e);
    return false;
  }
}

// A set of Python primitives for one compile (CompileOptions::primitives).
struct PyPrimitives {
  autobatch::Primitives set;
  void add(const std::string& name, int arity, const std::string& result, py::object fn,
           const std::string& doc) {
    auto ref = std::make_shared<PyRef>(std::move(fn));
    autobatch::Primitive p;
    p.name = name;
    p.arity = arity;
    p.result = result;
    p.doc = doc.empty() ? "Python primitive" : doc;
    p.kernel = [name, ref](const autobatch::KernelCall& c, autobatch::KernelError* err) {
      return call_python(name, *ref, c, err);
    };
    autobatch::Status s = set.add(std::move(p));
    if (!s) raise_input(joined(s.diagnostics));
  }
};

// ---------------------------------------------------------------- run

// `on_error`: "abort" (default) stops the run at the first runtime error
// (ExecutionError); "record" keeps the other threads going and returns the
// failed threads in the result's `errors` (docs/language.md, "Runtime errors").
void apply_on_error(autobatch::RunOptions& ro, const std::string& mode) {
  if (mode == "abort") {
    ro.on_error = autobatch::OnError::Abort;
    return;
  }
  if (mode == "record") {
    ro.on_error = autobatch::OnError::Record;
    return;
  }
  raise_input("on_error must be 'abort' or 'record', not '" + mode + "'");
}

// Ctrl-C while a run holds the main thread (the GIL released, Python's own
// handler only notes the signal for later): a handler of ours, installed for
// the run when it is called from Python's main thread, sets the run's cancel
// flag, so the run stops within a few steps (in every VM, at any number of
// OS threads); then KeyboardInterrupt is raised as for Python code.
std::atomic<bool> g_sigint{false};

class SigintDuringRun {
 public:
  explicit SigintDuringRun(autobatch::RunOptions& ro) {
    py::module_ threading = py::module_::import("threading");
    const py::object main_ident = threading.attr("main_thread")().attr("ident");
    const py::object ident = threading.attr("get_ident")();
    const bool main = main_ident.equal(ident);
    if (!main || ro.cancel) return;
    g_sigint.store(false);
    struct sigaction sa {};
    sa.sa_handler = [](int) { g_sigint.store(true); };
    sigemptyset(&sa.sa_mask);
    installed_ = sigaction(SIGINT, &sa, &old_) == 0;
    if (installed_) ro.cancel = &g_sigint;
  }
  ~SigintDuringRun() {
    if (installed_) sigaction(SIGINT, &old_, nullptr);
  }
  SigintDuringRun(const SigintDuringRun&) = delete;
  SigintDuringRun& operator=(const SigintDuringRun&) = delete;
  // With the GIL held, after the run.
  void raise_if_interrupted() {
    if (!installed_ || !g_sigint.load()) return;
    sigaction(SIGINT, &old_, nullptr);
    installed_ = false;
    PyErr_SetNone(PyExc_KeyboardInterrupt);
    throw py::error_already_set();
  }

 private:
  bool installed_ = false;
  struct sigaction old_ {};
};

struct RunArgs {
  std::string vm = "stack";
  std::string schedule = "persistent";
  bool jit = true;
  bool jit_wait = false;
  int64_t lanes = 0;
  int threads = 0;
  int64_t max_steps = 0;
  int64_t max_stack_depth = 100000;
  double time_limit = 0;
  int64_t batch = 0;
  std::string trace_path;
  py::object trace_callback;  // None or a callable taking one str
  std::string trace_mask = "bits";
  std::string trace_format = "auto";
  bool stats = false;
  std::string on_error = "abort";
  std::string output;  // "" : none; else as --output
};

// (outputs, stats JSON or None, errors or None, the outputs' names)
py::tuple run_program(const autobatch::Program& prog, const std::vector<py::array>& arrays,
                      const RunArgs& a) {
  autobatch::RunOptions ro;
  ro.vm = a.vm;
  ro.schedule = a.schedule;
  ro.jit = a.jit;
  ro.jit_wait = a.jit_wait;
  ro.lanes = a.lanes;
  ro.threads = a.threads;
  ro.max_steps = a.max_steps;
  ro.max_stack_depth = a.max_stack_depth;
  ro.time_limit = a.time_limit;
  ro.batch = a.batch;
  ro.trace_path = a.trace_path;
  ro.trace_mask = a.trace_mask;
  ro.trace_format = a.trace_format;
  ro.stats = a.stats;
  apply_on_error(ro, a.on_error);
  // A trace callback runs on the library's thread: it takes the GIL for its
  // call; the first exception it raises is raised after the run.
  auto callback_error = std::make_shared<std::optional<py::error_already_set>>();
  if (!a.trace_callback.is_none()) {
    auto ref = std::make_shared<PyRef>(a.trace_callback);
    ro.trace_callback = [ref, callback_error](std::string_view line) {
      py::gil_scoped_acquire gil;
      if (*callback_error) return;
      try {
        ref->get()(py::str(line.data(), line.size()));
      } catch (py::error_already_set& e) {
        *callback_error = std::move(e);
      }
    };
  }
  if (auto s = prog.check(ro); !s) raise_diagnostics(s.diagnostics);
  if (!a.output.empty())
    if (auto s = autobatch::check_output_target(a.output); !s) raise_diagnostics(s.diagnostics);
  std::vector<autobatch::ArrayView> views = views_of(arrays);
  autobatch::RunResult r;
  {
    SigintDuringRun sigint(ro);
    {
      py::gil_scoped_release release;
      r = prog.run(views, ro);
      ro.trace_callback = nullptr;  // its captures go while the GIL is free
    }
    sigint.raise_if_interrupted();
  }
  if (*callback_error) {
    py::error_already_set e = std::move(**callback_error);
    callback_error->reset();
    throw e;
  }
  if (!r.diagnostics.empty()) raise_diagnostics(r.diagnostics);
  if (r.runtime_error) raise_runtime(*r.runtime_error);
  if (!a.output.empty())
    if (auto s = autobatch::write_outputs(r, a.output, a.stats); !s)
      raise_diagnostics(s.diagnostics);
  py::tuple outputs(r.outputs.size());
  for (size_t i = 0; i < r.outputs.size(); ++i) outputs[i] = to_numpy(r.outputs[i]);
  py::object stats = r.stats ? py::object(py::str(r.stats->json())) : py::object(py::none());
  py::object errors = py::none();
  if (r.recorded) {
    py::list list;
    for (const auto& e : r.errors) {
      py::dict d;
      d["thread"] = e.thread;
      d["message"] = e.message;
      d["function"] = e.error.function;
      list.append(d);
    }
    errors = list;
  }
  py::tuple names(r.names.size());
  for (size_t i = 0; i < r.names.size(); ++i) names[i] = py::str(r.names[i]);
  return py::make_tuple(outputs, stats, errors, names);
}

const std::vector<autobatch::ArrayView>* optional_views(
    const std::optional<std::vector<py::array>>& arrays, std::vector<autobatch::ArrayView>& out) {
  if (!arrays) return nullptr;
  out = views_of(*arrays);
  return &out;
}

}  // namespace

PYBIND11_MODULE(_autobatch, m) {
  m.doc() = "The autobatch library's bindings (use the `autobatch` package).";
  m.def("version", &autobatch::version, "The library's version (\"0.1.0\").");

  py::class_<autobatch::Diagnostic>(m, "Diagnostic",
                                    "One located message: file, line, column (1-based; 0 when "
                                    "unknown), severity, message, rendered (with the source line).")
      .def_readonly("file", &autobatch::Diagnostic::file)
      .def_readonly("line", &autobatch::Diagnostic::line)
      .def_readonly("column", &autobatch::Diagnostic::column)
      .def_property_readonly("severity",
                             [](const autobatch::Diagnostic& d) {
                               return d.severity == autobatch::Severity::Error     ? "error"
                                      : d.severity == autobatch::Severity::Warning ? "warning"
                                                                                   : "note";
                             })
      .def_readonly("message", &autobatch::Diagnostic::message)
      .def_readonly("rendered", &autobatch::Diagnostic::rendered)
      .def("__repr__", [](const autobatch::Diagnostic& d) {
        return "Diagnostic(" + d.file + ":" + std::to_string(d.line) + ":" +
               std::to_string(d.column) + ": " + d.message + ")";
      });

  py::class_<autobatch::OpInfo>(m, "OpInfo",
                                "One row of the primitive table: name, min_args, max_args (-1: "
                                "any), attrs ('!' marks a required one), group, doc, custom, effects, "
                                "speculate, compiles (ops.def's specification columns).")
      .def_readonly("name", &autobatch::OpInfo::name)
      .def_readonly("min_args", &autobatch::OpInfo::min_args)
      .def_readonly("max_args", &autobatch::OpInfo::max_args)
      .def_readonly("attrs", &autobatch::OpInfo::attrs)
      .def_readonly("group", &autobatch::OpInfo::group)
      .def_readonly("doc", &autobatch::OpInfo::doc)
      .def_readonly("custom", &autobatch::OpInfo::custom)
      .def_readonly("effects", &autobatch::OpInfo::effects)
      .def_readonly("speculate", &autobatch::OpInfo::speculate)
      .def_readonly("compiles", &autobatch::OpInfo::compiles)
      .def("__repr__", [](const autobatch::OpInfo& o) {
        return "OpInfo(" + o.name + ", group=" + o.group + ")";
      });

  py::class_<PyPrimitives>(m, "_Primitives")
      .def(py::init<>())
      .def("add", &PyPrimitives::add, py::arg("name"), py::arg("arity"), py::arg("result"),
           py::arg("fn"), py::arg("doc"));

  py::class_<autobatch::Program>(m, "_Program")
      .def_property_readonly("entry", &autobatch::Program::entry)
      .def_property_readonly("is_lowered", &autobatch::Program::is_lowered)
      .def_property_readonly(
          "warnings", [](const autobatch::Program& p) { return diagnostics_list(p.warnings()); })
      .def_property_readonly(
          "parameters",
          [](const autobatch::Program& p) {
            py::list out;
            for (const auto& q : p.parameters())
              out.append(py::make_tuple(
                  q.name, q.type ? py::object(py::str(q.type->str())) : py::object(py::none())));
            return out;
          })
      .def(
          "signature",
          [](const autobatch::Program& p, std::optional<std::vector<py::array>> arrays) {
            std::vector<autobatch::ArrayView> views;
            const auto* v = optional_views(arrays, views);
            autobatch::Result<std::vector<std::string>> r{std::vector<std::string>{}};
            {
              py::gil_scoped_release release;
              r = p.signature(v);
            }
            return value_or_raise(std::move(r));
          },
          py::arg("arrays") = py::none())
      .def(
          "lower",
          [](const autobatch::Program& p, const std::string& print_after,
             std::optional<std::vector<py::array>> arrays) {
            if (!print_after.empty())
              if (auto s = autobatch::check_pass_name(print_after); !s)
                raise_diagnostics(s.diagnostics);
            std::vector<autobatch::ArrayView> views;
            const auto* v = optional_views(arrays, views);
            autobatch::Result<std::string> r{std::string()};
            {
              py::gil_scoped_release release;
              r = p.lower(print_after, v);
            }
            return value_or_raise(std::move(r));
          },
          py::arg("print_after") = "", py::arg("arrays") = py::none())
      .def(
          "load_inputs",
          [](const autobatch::Program& p, const std::vector<std::string>& args,
             std::optional<int64_t> batch) {
            autobatch::Inputs in = value_or_raise(p.load_inputs(args, batch));
            py::list out;
            for (const auto& a : in.arrays) out.append(to_numpy(a));
            return py::make_tuple(out, in.batch);
          },
          py::arg("args"), py::arg("batch") = py::none())
      .def(
          "run",
          [](const autobatch::Program& p, const std::vector<py::array>& arrays,
             const std::string& vm, const std::string& schedule, bool jit, bool jit_wait,
             int64_t lanes, int threads, int64_t max_steps, int64_t max_stack_depth,
             double time_limit, int64_t batch,
             const std::string& trace_path, py::object trace_callback,
             const std::string& trace_mask, const std::string& trace_format, bool stats,
             const std::string& on_error, const std::string& output) {
            RunArgs a{vm,
                      schedule,
                      jit,
                      jit_wait,
                      lanes,
                      threads,
                      max_steps,
                      max_stack_depth,
                      time_limit,
                      batch,
                      trace_path,
                      std::move(trace_callback),
                      trace_mask,
                      trace_format,
                      stats,
                      on_error,
                      output};
            return run_program(p, arrays, a);
          },
          py::arg("arrays"), py::arg("vm"), py::arg("schedule"), py::arg("jit"),
          py::arg("jit_wait"), py::arg("lanes"), py::arg("threads"), py::arg("max_steps"),
          py::arg("max_stack_depth"), py::arg("time_limit"), py::arg("batch"),
          py::arg("trace_path"),
          py::arg("trace_callback"), py::arg("trace_mask"), py::arg("trace_format"),
          py::arg("stats"), py::arg("on_error"), py::arg("output"));

  auto compile_options = [](const std::string& entry, const std::string& name,
                            const std::vector<std::string>& passes, const std::string& schedule,
                            PyPrimitives* prims) {
    autobatch::CompileOptions co;
    co.entry = entry;
    co.name = name;
    co.passes = passes;
    co.schedule = schedule;
    if (prims) co.primitives = prims->set;
    return co;
  };
  m.def(
      "compile",
      [compile_options](const std::string& text, const std::string& entry, const std::string& name,
                        const std::vector<std::string>& passes, const std::string& schedule,
                        PyPrimitives* prims) {
        auto co = compile_options(entry, name, passes, schedule, prims);
        autobatch::Result<autobatch::Program> r{std::vector<autobatch::Diagnostic>{}};
        {
          py::gil_scoped_release release;
          r = autobatch::compile(text, co);
        }
        return value_or_raise(std::move(r), true);
      },
      py::arg("text"), py::arg("entry"), py::arg("name"), py::arg("passes"), py::arg("schedule"),
      py::arg("primitives").none(true));
  m.def(
      "compile_file",
      [compile_options](const std::string& path, const std::string& entry,
                        const std::vector<std::string>& passes, const std::string& schedule,
                        PyPrimitives* prims) {
        auto co = compile_options(entry, "", passes, schedule, prims);
        autobatch::Result<autobatch::Program> r{std::vector<autobatch::Diagnostic>{}};
        {
          py::gil_scoped_release release;
          r = autobatch::compile_file(path, co);
        }
        return value_or_raise(std::move(r), true);
      },
      py::arg("path"), py::arg("entry"), py::arg("passes"), py::arg("schedule"),
      py::arg("primitives").none(true));
  m.def(
      "ops", [](PyPrimitives* prims) { return autobatch::ops(prims ? &prims->set : nullptr); },
      py::arg("primitives").none(true));
  // The summary of Markov chains' draws: (its JSON, its table). The Python
  // layer has made every array C-contiguous and of a supported dtype.
  m.def(
      "summarize",
      [](const std::vector<std::string>& names, const std::vector<py::array>& arrays,
         int64_t skip) {
        std::vector<std::pair<std::string, autobatch::ArrayView>> draws;
        for (size_t i = 0; i < arrays.size(); ++i)
          draws.emplace_back(names.at(i), view_of(arrays[i], i));
        autobatch::Summary s = value_or_raise(autobatch::summarize(draws, skip));
        return py::make_tuple(s.json(), s.table());
      },
      py::arg("names"), py::arg("arrays"), py::arg("skip"));
  // autobatch sample: the draws and statistics as NumPy arrays (chains first)
  // and the summary; the Python layer makes the result object.
  m.def(
      "sample",
      [](const std::string& model, const std::string& data, int64_t chains, int64_t warmup,
         int64_t samples, std::optional<uint64_t> seed, int64_t max_depth, double target_accept,
         const std::string& init, int threads, PyPrimitives* prims, const std::string& csv,
         const std::string& metric) {
        if (metric != "diag" && metric != "dense")
          raise_input("sample: metric must be \"diag\" or \"dense\", not \"" + metric + "\"");
        autobatch::SampleOptions o;
        o.metric =
            metric == "dense" ? autobatch::SampleMetric::Dense : autobatch::SampleMetric::Diag;
        o.model = model;
        if (prims) o.primitives = prims->set;
        o.data = data;
        o.chains = chains;
        o.warmup = warmup;
        o.samples = samples;
        o.seed = seed;
        o.max_depth = max_depth;
        o.target_accept = target_accept;
        o.init = init;
        o.run.threads = threads;
        // The API's two halves around the run, so that a runtime error (in
        // the model, or a Python primitive's exception) is an ExecutionError.
        autobatch::Result<autobatch::SampleJob> job{std::vector<autobatch::Diagnostic>{}};
        autobatch::RunResult run;
        double seconds = 0;
        {
          SigintDuringRun sigint(o.run);
          {
            py::gil_scoped_release release;
            job = autobatch::prepare_sample(o);
            if (job) {
              auto t0 = std::chrono::steady_clock::now();
              run = autobatch::run_sample(*job, o.run, nullptr);
              seconds =
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            }
          }
          sigint.raise_if_interrupted();
        }
        if (!job) raise_diagnostics(job.diagnostics());
        if (!run.diagnostics.empty()) raise_diagnostics(run.diagnostics);
        if (run.runtime_error) raise_runtime(*run.runtime_error);
        if (auto e = autobatch::sample_start_error(*job, run)) raise_runtime(*e);
        autobatch::SampleResult s = value_or_raise(autobatch::finish_sample(*job, run, seconds));
        if (!csv.empty())
          if (auto w = autobatch::write_cmdstan_csv(s, o, csv); !w) raise_diagnostics(w.diagnostics);
        py::dict draws, stats;
        for (const auto& [name, a] : s.draws) draws[py::str(name)] = to_numpy(a);
        for (const auto& [name, a] : s.stats) stats[py::str(name)] = to_numpy(a);
        py::dict out;
        out["draws"] = draws;
        out["stats"] = stats;
        out["step_size"] = to_numpy(s.step_size);
        out["inv_metric"] = to_numpy(s.inv_metric);
        out["summary"] = py::make_tuple(s.summary.json(), s.summary.table());
        out["warnings"] = s.warnings;
        out["seed"] = s.seed;
        out["divergent"] = s.divergent;
        out["warmup_divergent"] = s.warmup_divergent;
        out["max_depth_hits"] = s.max_depth_hits;
        out["nonfinite"] = s.nonfinite_total;
        out["warmup_nonfinite"] = s.warmup_nonfinite_total;
        out["nonfinite_at"] = to_numpy(s.nonfinite_at);
        out["nonfinite_theta"] = to_numpy(s.nonfinite_theta);
        out["seconds"] = s.seconds;
        out["program"] = s.driver;
        return out;
      },
      py::arg("model"), py::arg("data"), py::arg("chains"), py::arg("warmup"),
      py::arg("samples"), py::arg("seed").none(true), py::arg("max_depth"),
      py::arg("target_accept"), py::arg("init"), py::arg("threads"),
      py::arg("primitives").none(true), py::arg("csv"), py::arg("metric") = "diag");
  m.def(
      "wait_for_background_compiles",
      [] {
        py::gil_scoped_release release;
        autobatch::wait_for_background_compiles();
      },
      "Waits for the JIT's background compilations (registered with atexit).");
  m.def("pass_names", &autobatch::pass_names);
  m.def("log_level_names", &autobatch::log_level_names);
  m.def("set_log_level", [](const std::string& level) {
    if (!autobatch::set_log_level(level)) raise_input("unknown log level '" + level + "'");
  });
  m.def(
      "format",
      [](const std::string& text, const std::string& name) {
        return value_or_raise(autobatch::format(text, name));
      },
      py::arg("text"), py::arg("name"));
  m.def("parse_result_types",
        [](const std::string& s) -> std::optional<std::vector<std::string>> {
          auto types = autobatch::parse_result_types(s);
          if (!types) return std::nullopt;
          std::vector<std::string> out;
          for (const auto& t : *types) out.push_back(t.str());
          return out;
        });
}
