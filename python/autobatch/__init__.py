"""autobatch: run a program on a batch of inputs, NumPy arrays in and out.

    import numpy as np, autobatch
    prog = autobatch.load("programs/fib.ab", entry="fib")
    (out,) = prog.run(n=np.array([6, 7, 8, 7]))     # array([13, 21, 34, 21])

A program is written in the autobatch language (docs/language.md); every input
array is a batch (its first axis: one thread per row) and every output
comes back batch first. Python functions can be primitives of the
language (see Primitive). Errors raise CompileError, InputError or
ExecutionError.
"""

import atexit
import inspect
import json
import tempfile
import os
import re
import threading
import warnings as _warnings

import numpy as np

from . import _autobatch as _ab
from ._errors import AutobatchError, CompileError, ExecutionError, InputError

__all__ = [
    "AutobatchError", "CompileError", "Diagnostic", "ExecutionError", "InputError", "OpInfo",
    "Outputs", "Primitive", "Program", "RunResult", "Summary", "compile", "format", "load", "ops",
    "pass_names", "set_log_level", "summary", "version", "__version__",
]

# A run that ends before its code is compiled leaves the compilation running
# on a background thread; exiting while it runs can crash the interpreter in
# LLVM's static destructors. Python's atexit handlers run before those.
atexit.register(_ab.wait_for_background_compiles)

Diagnostic = _ab.Diagnostic
OpInfo = _ab.OpInfo
version = _ab.version
__version__ = _ab.version()

_DTYPES = {
    "bool": np.dtype(np.bool_),
    "i32": np.dtype(np.int32),
    "i64": np.dtype(np.int64),
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
}
_SUPPORTED = set(_DTYPES.values())
# The keywords of run(), lower() and check() besides the inputs: a misspelt
# one arrives as an unknown input, and its message suggests the option.
_RUN_OPTIONS = ("vm", "schedule", "jit", "lanes", "threads", "max_steps", "max_stack_depth",
                "time_limit", "batch", "trace", "trace_mask", "trace_format", "stats", "on_error", "output",
                "inputs")
_LOWER_OPTIONS = ("print_after", "inputs", "batch")
_CHECK_OPTIONS = ("inputs", "batch")


# ---------------------------------------------------------------- primitives

class Primitive:
    """A Python function as a primitive of the language.

    Primitive(fn, result="f64", arity=None, doc=None)

    Used from a program like any primitive, under the name it is given in
    ``compile(..., primitives={"logp": Primitive(fn, result="f64")})``, in
    every VM. The VM calls ``fn`` with one NumPy array per operand, holding
    the operands of the threads that execute the call (batch first: shape
    ``(n, *event shape)``, fresh arrays ``fn`` may keep), and ``fn`` returns
    their results: an array (or anything ``numpy.asarray`` takes) of shape
    ``(n, *result shape)`` or broadcastable to it, whose dtype casts to the
    result's within its kind (an int64 array for an "f64" result is fine, a
    float array for an "i64" one is an error). A primitive with several
    results returns a tuple of such arrays, one per result, in order. A
    value that does not fit stops the run with an ExecutionError naming the
    expected and the returned dtype and shape (of each result that does not
    fit).

    result: the result's type for one thread, a type of the language:
        "f64", "i64", "bool", "f64[3]", "f32[2,2]"; several results in
        parentheses: "(f64, f64[3])", which a program binds as
        ``lp, g = logp_grad(q)``.
    arity: the number of operands (default: fn's positional parameters).
    doc: one line for ops() (default: the first line of fn's docstring).

    An exception raised by fn stops the run with an ExecutionError naming
    the primitive and the exception. The GIL is held only during fn's own
    call; programs run with it released. Each distinct set of primitives
    given to compile() registers them once in the library (at most 1024
    primitives per process).
    """

    __slots__ = ("_fn", "_result", "_arity", "_doc")

    def __init__(self, fn, result="f64", arity=None, doc=None):
        if not callable(fn):
            raise TypeError("Primitive: fn must be callable")
        if _ab.parse_result_types(str(result)) is None:
            raise InputError(f"Primitive: result type '{result}' is not a type such as "
                             "\"f64\" or \"f64[3]\", nor several in parentheses such as "
                             "\"(f64, f64[3])\"")
        if arity is None:
            arity = _positional_arity(fn)
        if doc is None:
            doc = (inspect.getdoc(fn) or "").strip().split("\n")[0]
        self._fn, self._result, self._arity, self._doc = fn, str(result), int(arity), doc

    fn = property(lambda self: self._fn, doc="The Python function.")
    result = property(lambda self: self._result,
                      doc="The result type (\"f64\", \"f64[3]\", \"(f64, f64[3])\").")
    arity = property(lambda self: self._arity, doc="The number of operands.")
    doc = property(lambda self: self._doc, doc="The line ops() shows.")

    def __repr__(self):
        name = getattr(self._fn, "__name__", repr(self._fn))
        return f"Primitive({name}, result={self._result!r}, arity={self._arity})"


def _positional_arity(fn):
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        raise TypeError("Primitive: cannot read fn's parameters; give arity=") from None
    n = 0
    for p in params:
        if p.kind == p.VAR_POSITIONAL:
            raise TypeError("Primitive: fn takes *args; give arity=")
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty:
            n += 1
    return n


_sets = {}
_sets_lock = threading.Lock()


def _primitive_set(primitives):
    """The library's set for a {name: Primitive} dict, registered once per
    distinct dict contents (the library never unregisters a primitive)."""
    if not primitives:
        return None
    items = sorted(primitives.items(), key=lambda kv: kv[0])
    for name, p in items:
        if not isinstance(p, Primitive):
            raise TypeError(f"primitives[{name!r}] must be an autobatch.Primitive, "
                            f"not {type(p).__name__}")
    key = tuple((name, id(p)) for name, p in items)
    with _sets_lock:
        hit = _sets.get(key)
        if hit is not None:
            return hit[0]
        s = _ab._Primitives()
        for name, p in items:
            s.add(name, p.arity, p.result, p.fn, p.doc)
        _sets[key] = (s, [p for _, p in items])  # keeps the ids valid
        return s


# ---------------------------------------------------------------- inputs

def _name_given_files(error, made):
    """Rewrites an error of sample() that names a temporary file sample()
    wrote (the model text, the data or init dict) or a CLI flag, in the
    caller's terms."""
    def rename(text):
        for file, given in made.items():
            text = text.replace(file, given)
        return text.replace("give --data DATA.json", "give data= (a dict, or a CmdStan JSON file)")
    if error.args and isinstance(error.args[0], str):
        error.args = (rename(error.args[0]),) + error.args[1:]
    error.file = made.get(error.file, error.file)
    if isinstance(getattr(error, "message", None), str):
        error.message = rename(error.message)


def _convert(name, value, declared):
    """`value` as a C-contiguous array of a supported dtype (batch first):
    the same array when it is one already (no copy)."""
    arr = value if isinstance(value, np.ndarray) else np.asarray(value)
    if arr.ndim == 0:
        arr = arr.reshape(1)  # a scalar is a batch of 1
    want = _DTYPES.get(declared.split("[")[0]) if declared else None
    src = arr.dtype
    if want is None:
        if src in _SUPPORTED:
            want = src
        elif src.kind in "iu" and np.can_cast(src, np.int64):
            want = np.dtype(np.int64)
        elif src.kind == "f" and np.can_cast(src, np.float64):
            want = np.dtype(np.float64) if src.itemsize > 4 else np.dtype(np.float32)
        else:
            raise InputError(f"input '{name}': dtype {src} is not supported "
                             "(bool, int32, int64, float32, float64)")
    elif src != want:
        # The CLI's JSON rules: booleans and numbers do not convert; an
        # integer must fit; a float given for an integer must be integral.
        def out_of_range(v):
            raise InputError(f"input '{name}': {v} is out of range for {declared}")
        if src.kind == "O" and want.kind == "i":
            # Python ints too large for any NumPy integer.
            for v in arr.ravel():
                if isinstance(v, int) and not isinstance(v, bool):
                    info = np.iinfo(want)
                    if not info.min <= v <= info.max:
                        out_of_range(v)
            raise InputError(f"input '{name}': the entry declares {declared}, "
                             f"the input has dtype {src}")
        if src.kind == "b" and want.kind != "b":
            raise InputError(f"input '{name}': the entry declares {declared}, the input holds "
                             "booleans (booleans and numbers do not convert: give 0 and 1)")
        if src.kind in "iu" and want.kind == "i":
            if arr.size:
                info = np.iinfo(want)
                lo, hi = int(arr.min()), int(arr.max())  # Python ints: exact
                if lo < info.min or hi > info.max:
                    out_of_range(lo if lo < info.min else hi)
        elif src.kind == "f" and want.kind == "i":
            if arr.size:
                bad = ~np.isfinite(arr) | (arr != np.trunc(arr))
                if bad.any():
                    raise InputError(f"input '{name}': the entry declares {declared}, and "
                                     f"{arr[bad].ravel()[0]!r} is not an integer")
                info = np.iinfo(want)
                lo, hi = float(arr.min()), float(arr.max())
                # the bounds as floats: -2^63 is exact, 2^63 - 1 rounds up to 2^63
                if lo < float(info.min) or hi >= float(info.max) + 1.0:
                    out_of_range(lo if lo < float(info.min) else hi)
        elif src.kind == "f" and want == np.float32:
            if arr.size:
                with np.errstate(over="ignore"):
                    narrowed = arr.astype(np.float32)
                bad = np.isinf(narrowed) & np.isfinite(arr)
                if bad.any():
                    out_of_range(arr[bad].ravel()[0])
                return np.ascontiguousarray(narrowed)
        elif not (src.kind in "iuf" and np.can_cast(src, want, "same_kind")):
            raise InputError(f"input '{name}': the entry declares {declared}, "
                             f"the input has dtype {src}")
    return np.ascontiguousarray(arr, dtype=want)


def _edit_distance(a, b):
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def _closest(name, candidates):
    """The candidate close enough to `name` to be what a typo meant, or None:
    the CLI's rule (about one edit per three characters; a one- or
    two-letter name only as a prefix of a longer one or the reverse)."""
    short = len(name) <= 2
    limit = 1 if short else max(1, (len(name) + 1) // 3)
    best, best_d = None, None
    for c in candidates:
        prefix = c.startswith(name) or name.startswith(c)
        if c == name or (short and not prefix):
            continue
        d = _edit_distance(name, c)
        if best_d is None or d < best_d:
            best, best_d = c, d
    return best if best_d is not None and best_d <= limit else None


def _unknown_inputs(unknown, params, options, entry):
    """"unknown input 'stp'; did you mean 'step'? (the entry 'main' takes q,
    step)": each unknown name with the parameter (or else the option) it is
    closest to."""
    parts = []
    for name in unknown:
        near = _closest(name, params)
        if near is not None:
            parts.append(f"unknown input '{name}'; did you mean '{near}'?")
            continue
        near = _closest(name, options)
        parts.append(f"unknown input '{name}'" +
                     (f"; did you mean the option '{near}'?" if near is not None else ""))
    takes = ", ".join(params) if params else "no inputs"
    return "; ".join(parts) + f" (the entry '{entry}' takes {takes})"


def _is_forms(inputs):
    return isinstance(inputs, (str, os.PathLike)) or (
        isinstance(inputs, (list, tuple)) and inputs
        and all(isinstance(x, (str, os.PathLike)) for x in inputs))


# ---------------------------------------------------------------- programs

class Outputs(tuple):
    """What run() returns: a tuple of arrays, one per output (batch first),
    whose items also have names.

        out = prog.run(...)          # func integrate(...) -> (total: f64, leaves: i64)
        total, leaves = out          # by position, as any tuple
        out["total"], out.leaves     # by name
        out.names                    # ("total", "leaves")

    A result is named by the program's signature or by what it returns
    (docs/language.md, "Result names"); a result of tuple type gives one
    output per leaf, NAME.0, NAME.1, ...; an output without a name is out0,
    out1, ... by position. A name that is also a tuple method (count,
    index) or not an identifier is reached with out["name"].
    """

    def __new__(cls, arrays, names):
        self = super().__new__(cls, arrays)
        self._names = tuple(names)
        return self

    def __getnewargs__(self):
        return tuple(self), self._names

    @property
    def names(self):
        """The outputs' names, in order."""
        return self._names

    def __getitem__(self, key):
        if isinstance(key, str):
            try:
                return tuple.__getitem__(self, self._names.index(key))
            except ValueError:
                raise KeyError(f"no output named {key!r}; the outputs are "
                               f"{', '.join(self._names) or 'none'}") from None
        return tuple.__getitem__(self, key)

    def __getattr__(self, name):
        names = self.__dict__.get("_names", ())
        if name in names:
            return tuple.__getitem__(self, names.index(name))
        raise AttributeError(f"no output named {name!r}; the outputs are "
                             f"{', '.join(names) or 'none'}")

    def keys(self):
        """The names (as a dict's keys: dict(out) maps names to arrays)."""
        return self._names

    def items(self):
        """(name, array) pairs, in order."""
        return list(zip(self._names, self))

    def __repr__(self):
        return "Outputs(" + ", ".join(f"{n}={a!r}" for n, a in zip(self._names, self)) + ")"


class RunResult:
    """What run() returns with stats=True or on_error="record".

    outputs: the Outputs (a tuple of arrays, one per output leaf, batch
        first, also reachable by name); names: their names.
    stats: with stats=True, the dict `autobatch run --stats` prints (steps,
        block_executions, primitive_executions, lane_operations,
        mean_utilization, peak_stack_depth, seconds, and execution: per
        block {"mode": ..., "reason": ...}, how the VM ran it), else None.
    errors: with on_error="record", the failed threads, else None.
    """

    __slots__ = ("outputs", "stats", "errors")

    def __init__(self, outputs, stats, errors):
        self.outputs, self.stats, self.errors = outputs, stats, errors

    @property
    def names(self):
        """The outputs' names, in order."""
        return self.outputs.names

    def __repr__(self):
        return f"RunResult(outputs={self.outputs!r}, stats={self.stats!r}, errors={self.errors!r})"


class Program:
    """A compiled program (from compile() or load()); immutable, and safe to
    run from several Python threads at once.

    entry: the entry function's name; parameters: its (name, declared type
    or None) pairs; signature: one line per function. run() runs it on a
    batch, lower() shows it after the compiler's passes, check() infers
    the types for given inputs.
    """

    __slots__ = ("_p", "_schedule", "_params")

    def __init__(self, impl, schedule):
        self._p = impl
        self._schedule = schedule
        self._params = impl.parameters if impl.entry else []

    @property
    def entry(self):
        """The entry function's name ("" if none could be chosen)."""
        return self._p.entry

    @property
    def is_lowered(self):
        """True when the source was a lowered program (autobatch lower's output)."""
        return self._p.is_lowered

    @property
    def warnings(self):
        """The compile-time warnings about the program's own file (a list of
        Diagnostic, severity "warning"): variables assigned and never used,
        unused parameters of the entry (docs/language.md, "Warnings")."""
        return list(self._p.warnings)

    @property
    def parameters(self):
        """The entry's inputs: a list of (name, declared type or None)."""
        return list(self._params)

    @property
    def signature(self):
        """One line per function, as `autobatch check` prints it:
        "func fib(n: i64) -> i64" ('?' where a type depends on the inputs)."""
        return self._p.signature()

    def check(self, *args, inputs=None, batch=None, **named):
        """The signature lines with the types these inputs give (inputs as for
        run()); raises CompileError or InputError when they do not type."""
        if not args and not named and inputs is None:
            return self._p.signature(None)  # as `autobatch check` without --inputs
        arrays, _ = self._bind(args, named, inputs, batch, _CHECK_OPTIONS)
        return self._p.signature(arrays)

    def lower(self, *args, print_after=None, inputs=None, batch=None, **named):
        """The program after every compiler pass (or after the pass
        `print_after`; pass_names() lists them), as text that load() and
        compile() accept: `autobatch lower`. Inputs (optional, as for run())
        fix the types of unannotated parameters."""
        arrays = None
        if args or named or inputs is not None:
            arrays, _ = self._bind(args, named, inputs, batch, _LOWER_OPTIONS)
        return self._p.lower(print_after or "", arrays)

    def run(self, *args, vm="stack", schedule=None, jit=True, lanes=0, threads=0, max_steps=0,
            max_stack_depth=100000, time_limit=0, batch=None, trace=None, trace_mask="bits",
            trace_format="auto", stats=False, on_error="abort", output=None, inputs=None, **named):
        """Runs the entry on a batch; returns the Outputs (a tuple of arrays,
        one per output leaf, batch first, also reachable by name: out["total"],
        out.total), or a RunResult with stats=True or on_error="record".

        Inputs: by position (in parameter order) or by name, each a NumPy
        array (bool, int32, int64, float32, float64; a C-contiguous one is
        handed to the library without a copy; other layouts and convertible
        dtypes are converted), a list or a Python scalar. The first axis is the
        batch: every input has the same batch or 1 (a batch of 1 is shared
        by every thread). `inputs=` takes them as a dict or list instead (for
        a parameter named like an option), or as `autobatch run --inputs`
        forms: a JSON text or file name, "NAME=FILE.npy", or a list of them.

        Options (those of `autobatch run`):
          vm: "stack" (default), "stackless" or "reference".
          schedule: "persistent" or "min-pc" (default: compile()'s).
          jit: stack VM: compile blocks to native code (True or "on",
            default: the run starts interpreted and switches to the code
            when it is ready), "wait" (compile first, then run) or False
            ("off").
          lanes: > 0: streaming mode on this many lanes.
          threads: OS threads (0: automatic).
          max_steps: stop with ExecutionError after this many steps (0: no bound).
          max_stack_depth: frames per thread (default 100000).
          time_limit: seconds the run may take (0: no limit); past them it
            stops with ExecutionError saying how far it got.
          batch: number of threads when the entry takes no batched input.
          trace: a file name for the JSON Lines trace, or a callable
            called with each line (str).
          trace_mask: "bits" (default), "ranges" or "none".
          trace_format: "auto" (default: JSON Lines up to 64 threads, else
            compact), "jsonl", "compact" or "chrome" (as --trace-format).
          stats: return a RunResult whose .stats is `--stats`'s dict.
          on_error: "abort" (default: raise ExecutionError at the first
            runtime error) or "record" (keep the other threads going).
          output: also write the outputs as `--output` does ("X.json",
            "X.npy", "DIR/").

        Raises InputError (bad inputs or options), CompileError (the program
        does not type for these inputs) or ExecutionError (a runtime error).
        The GIL is released while the program runs; Ctrl-C (from the main
        thread) stops it within a few steps and raises KeyboardInterrupt.
        """
        if batch is not None and (isinstance(batch, bool) or int(batch) < 1):
            raise InputError(f"batch must be at least 1, not {batch}")
        arrays, given_batch = self._bind(args, named, inputs, batch, _RUN_OPTIONS)
        if batch is None:
            batch = given_batch
        for option, value in (("lanes", lanes), ("threads", threads), ("max_steps", max_steps),
                              ("max_stack_depth", max_stack_depth)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise InputError(f"{option} must be an integer, not {value!r}")
        if isinstance(time_limit, bool) or not isinstance(time_limit, (int, float, np.number)):
            raise InputError(f"time_limit must be a number of seconds, not {time_limit!r}")
        for option, value in (("vm", vm), ("trace_mask", trace_mask),
                              ("trace_format", trace_format), ("on_error", on_error)):
            if not isinstance(value, str):
                raise InputError(f"{option} must be a string, not {value!r}")
        if not isinstance(jit, (bool, str)):
            raise InputError(f"jit must be True/False (or 'on'/'off'/'wait'), not {jit!r}")
        jit_wait = False
        if isinstance(jit, str):
            if jit not in ("on", "off", "wait"):
                raise InputError(f"jit must be True/False (or 'on'/'off'/'wait'), not '{jit}'")
            jit_wait = jit == "wait"
            jit = jit != "off"
        trace_path, trace_callback = "", None
        if callable(trace):
            trace_callback = trace
        elif trace is not None:
            trace_path = os.fspath(trace)
        outputs, stats_json, errors, names = self._p.run(
            arrays, vm=vm, schedule=schedule or self._schedule, jit=bool(jit), jit_wait=jit_wait,
            lanes=int(lanes),
            threads=int(threads), max_steps=int(max_steps), max_stack_depth=int(max_stack_depth),
            time_limit=float(time_limit), batch=int(batch or 0), trace_path=trace_path, trace_callback=trace_callback,
            trace_mask=trace_mask, trace_format=trace_format, stats=bool(stats), on_error=on_error,
            output=os.fspath(output) if output is not None else "")
        outputs = Outputs(outputs, names)
        if stats or on_error == "record":
            return RunResult(outputs, json.loads(stats_json) if stats_json else None, errors)
        return outputs

    def _bind(self, args, named, inputs, batch, options=()):
        """(arrays in parameter order, the batch the inputs set or None)."""
        if inputs is not None:
            if args or named:
                raise InputError("give the inputs either as arguments or as inputs=, not both")
            if _is_forms(inputs):
                forms = [inputs] if isinstance(inputs, (str, os.PathLike)) else list(inputs)
                arrays, b = self._p.load_inputs([os.fspath(f) for f in forms],
                                                None if batch is None else int(batch))
                return arrays, (b or None)
            if isinstance(inputs, dict):
                named = dict(inputs)
            elif isinstance(inputs, (list, tuple)):
                args = tuple(inputs)
            else:
                raise InputError("inputs= takes a dict, a list, a JSON text or a file name")
        params = self._params
        if len(args) > len(params):
            raise InputError(f"the entry '{self.entry}' takes {len(params)} input"
                             f"{'' if len(params) == 1 else 's'}, but {len(args)} were given")
        named = dict(named)
        names = [n for n, _ in params]
        unknown = [k for k in named if k not in names]
        if unknown:
            raise InputError(_unknown_inputs(unknown, names, options, self.entry))
        arrays = []
        for i, (name, declared) in enumerate(params):
            if i < len(args):
                if name in named:
                    raise InputError(f"input '{name}' given twice (by position and by name)")
                value = args[i]
            elif name in named:
                value = named.pop(name)
            else:
                raise InputError(f"missing input '{name}' (the entry '{self.entry}' takes "
                                 f"{', '.join(n for n, _ in params)})")
            arrays.append(_convert(name, value, declared))
        return arrays, None

    def __repr__(self):
        return f"<autobatch.Program entry={self.entry!r}>"


def _passes(passes):
    if passes is None:
        return []
    if isinstance(passes, str):
        return [p.strip() for p in passes.split(",") if p.strip()]
    return list(passes)


def _warn(program, warn):
    """Each of the program's warnings as a Python UserWarning (its rendered
    text, source line and caret included), unless `warn` is false."""
    if warn:
        for d in program.warnings:
            _warnings.warn(d.rendered.rstrip("\n"), UserWarning, stacklevel=3)
    return program


def compile(text, entry="", *, name="<input>", primitives=None, passes=None,
            schedule="persistent", warnings=True):
    """Compiles a program from its text; returns a Program.

    entry: the entry function (default: main, or the only function).
    name: the file name messages show.
    primitives: {name: Primitive} usable from the program (see Primitive).
    passes: the compiler's pipeline, a list or "a,b,c" of pass_names()
        (default: every pass).
    schedule: the default schedule of run(): "persistent" or "min-pc".
    warnings: issue the program's warnings (Program.warnings: variables
        assigned and never used, unused parameters of the entry) as Python
        UserWarnings; False leaves them in Program.warnings only. They
        never change what a run computes.

    Raises CompileError (with .diagnostics) when the program does not parse,
    verify or type-check (types that depend on the inputs are checked when
    it runs).
    """
    prims = _primitive_set(primitives)
    return _warn(Program(_ab.compile(text, entry=entry, name=name, passes=_passes(passes),
                                     schedule=schedule, primitives=prims), schedule), warnings)


def load(path, entry="", *, primitives=None, passes=None, schedule="persistent",
         warnings=True):
    """Compiles the program in the file `path` (an .ab file, or a lowered
    program); returns a Program. Options as for compile()."""
    prims = _primitive_set(primitives)
    return _warn(Program(_ab.compile_file(os.fspath(path), entry=entry, passes=_passes(passes),
                                          schedule=schedule, primitives=prims), schedule),
                 warnings)


def ops(primitives=None):
    """The primitive table (`autobatch ops`): a list of OpInfo (name,
    min_args, max_args, attrs, group, doc, custom), the built-ins first,
    then those of `primitives` ({name: Primitive})."""
    return _ab.ops(_primitive_set(primitives))


class Summary:
    """The convergence summary of Markov chains' draws (`autobatch summary`):
    `chains`, `draws` (per chain, after `skip`), `rows` (one dict per scalar
    quantity: name, mean, mcse, sd, q5, q50, q95, ess_bulk, ess_tail, rhat;
    NaN where undefined), `warnings` (R-hat above 1.01, ESS below 400);
    `summary["theta[1]"]` is a row by name, and str() the table."""

    def __init__(self, text, table):
        j = json.loads(text)
        self.chains = j["chains"]
        self.draws = j["draws"]
        self.rows = [{k: (float("nan") if v is None else v) for k, v in r.items()}
                     for r in j["rows"]]
        self.warnings = list(j["warnings"])
        self._table = table

    def __getitem__(self, name):
        for r in self.rows:
            if r["name"] == name:
                return r
        raise KeyError(name)

    def __str__(self):
        return self._table

    def __repr__(self):
        return "Summary(%d chains of %d draws, %d quantities)" % (self.chains, self.draws,
                                                                  len(self.rows))


def summary(draws, skip=0):
    """Summarizes Markov chains' draws: an array shaped [chains, draws, ...]
    (named "x") or a dict {name: such an array}; the first `skip` draws of
    every chain are left out. Returns a Summary (its rows are named as the
    language indexes, 0-based: "theta[2]")."""
    items = draws.items() if isinstance(draws, dict) else [("x", draws)]
    names, arrays = [], []
    for name, value in items:
        a = np.asarray(value)
        if a.dtype not in _DTYPES.values():
            a = a.astype(np.float64)
        names.append(str(name))
        arrays.append(np.ascontiguousarray(a))
    return Summary(*_ab.summarize(names, arrays, int(skip)))


class SampleResult:
    """What sample() returns: `draws` ({"theta": ..., and each quantity of
    the model's constrain}, NumPy arrays shaped [chains, draws, ...], the
    layout ArviZ's from_dict takes as posterior=), `stats` (lp__,
    accept_stat__, treedepth__, n_leapfrog__, divergent__, energy__:
    [chains, draws]), `step_size` [chains], `inv_metric` [chains, D]
    ([chains, D, D] with metric="dense"), `summary` (a Summary),
    `warnings`, `seed`, `divergent` (after warm-up), `warmup_divergent`,
    `max_depth_hits`, `nonfinite` and `warmup_nonfinite` (transitions
    whose trajectory met a log density that is not finite: NaN, or -inf
    outside the model's support),
    `nonfinite_at` ([chains]: each chain's first such iteration, warm-up's
    first and sampling's numbered on from them, -1 if none) and
    `nonfinite_theta` ([chains, D]: its unconstrained point), `seconds`, and
    `program` (the program that ran)."""

    def __init__(self, d):
        self.draws = dict(d["draws"])
        self.stats = dict(d["stats"])
        self.step_size = d["step_size"]
        self.inv_metric = d["inv_metric"]
        self.summary = Summary(*d["summary"])
        self.warnings = list(d["warnings"])
        self.seed = d["seed"]
        self.divergent = d["divergent"]
        self.warmup_divergent = d["warmup_divergent"]
        self.max_depth_hits = d["max_depth_hits"]
        self.nonfinite = d["nonfinite"]
        self.warmup_nonfinite = d["warmup_nonfinite"]
        self.nonfinite_at = d["nonfinite_at"]
        self.nonfinite_theta = d["nonfinite_theta"]
        self.seconds = d["seconds"]
        self.program = d["program"]

    # ArviZ's names for the sampler's statistics (those of its from_cmdstan).
    _ARVIZ_STATS = {"lp__": "lp", "accept_stat__": "acceptance_rate",
                    "treedepth__": "tree_depth", "n_leapfrog__": "n_steps",
                    "divergent__": "diverging", "energy__": "energy"}

    def to_arviz(self):
        """The draws as an arviz.InferenceData: `posterior` (every entry of
        `draws`, [chains, draws, ...]), `sample_stats` (the statistics under
        ArviZ's names: lp, acceptance_rate, tree_depth, n_steps, diverging
        (bool), energy, and step_size, each [chains, draws]) and the
        sampler's settings in its attributes. Needs ArviZ installed (it is
        imported here, not by autobatch)."""
        try:
            import arviz
        except ImportError as e:
            raise ImportError("SampleResult.to_arviz needs ArviZ (import arviz failed: %s)"
                              % e) from e
        stats = {}
        for name, a in self.stats.items():
            a = np.asarray(a)
            stats[self._ARVIZ_STATS.get(name, name)] = (
                a.astype(bool) if name == "divergent__" else a)
        chains, draws = self.summary.chains, self.summary.draws
        stats["step_size"] = np.repeat(np.asarray(self.step_size, dtype=np.float64)[:, None],
                                       draws, axis=1)
        attrs = {"inference_library": "autobatch", "inference_library_version": __version__,
                 "sampling_time": float(self.seconds), "num_chains": chains,
                 "num_draws": draws}
        attrs.update({k: v for k, v in getattr(self, "settings", {}).items() if v is not None})
        return arviz.from_dict(posterior=dict(self.draws), sample_stats=stats, attrs=attrs)

    def __getitem__(self, name):
        return self.draws[name]

    def __repr__(self):
        c, n = self.summary.chains, self.summary.draws
        return "SampleResult(%d chains of %d draws: %s)" % (c, n, ", ".join(self.draws))


def _cmdstan_value(v):
    a = np.asarray(v)
    if a.dtype == np.bool_:
        a = a.astype(np.int64)
    return a.tolist()


_LP_GRAD_RESULT = re.compile(r"^\(\s*f64\s*,\s*f64\s*\[\s*(\d+)\s*\]\s*\)$")


def sample(model, data=None, *, chains=4, warmup=1000, samples=1000, seed=None, max_depth=10,
           target_accept=0.8, init=None, threads=0, primitives=None, csv=None, metric="diag"):
    """Bayesian inference with the shipped NUTS sampler (README, "Bayesian
    inference"): `model` is the path of a .ab file (or its text) defining
    log_density(theta: f64[D], DATA...) and optionally constrain(theta,
    DATA...), or a log_density that declares its parameters with their
    constraints (log_density(mu: f64, tau: f64 positive, DATA...), recorded
    under their names; docs/sampling.md), or log_density_and_grad(theta: f64[D], DATA...) returning the
    log density and its gradient, which may call `primitives` ({name:
    Primitive}). `model` may also be a Primitive itself: fn(theta) returns the
    log densities [n] and gradients [n, D] of n chains' theta [n, D], with
    result="(f64, f64[D])"; it takes no data (close over them). `data`: a
    dict {name: value} (arrays or numbers, each shared by every chain) or the
    path of a CmdStan JSON data file. `init`: None (uniform in (-2, 2)), a
    radius R, or start values, one vector for every chain or one row per
    chain, or, for a model that declares its parameters, a dict of their
    values by name. `csv`: a folder that also gets the draws as CmdStan's CSV files,
    output_N.csv for chain N from 1 (arviz.from_cmdstan reads them).
    `metric`: the inverse metric warm-up adapts, "diag" (the draws'
    variances, Stan's diag_e) or "dense" (their covariance, Stan's dense_e,
    for strongly correlated parameters; inv_metric is then [chains, D, D]).
    Returns a SampleResult."""
    if metric not in ("diag", "dense"):
        raise InputError(f"sample: metric must be \"diag\" or \"dense\", not {metric!r}")
    primitives = dict(primitives or {})
    with tempfile.TemporaryDirectory(prefix="autobatch_sample_") as tmp:
        if isinstance(model, Primitive):
            m = _LP_GRAD_RESULT.match(model.result)
            if m is None or model.arity != 1:
                raise InputError("sample: a Primitive model takes theta alone and returns the "
                                 "log density and its gradient: result=\"(f64, f64[D])\" "
                                 f"and one operand, not result={model.result!r} with "
                                 f"{model.arity} operands")
            if data is not None:
                raise InputError("sample: a Primitive model takes no data; let its function "
                                 "use them directly")
            name = "python_log_density_and_grad"
            primitives[name] = model
            model = (f"func log_density_and_grad(theta: f64[{m.group(1)}]) {{\n"
                     f"  return {name}(theta)\n}}\n")
        path = os.fspath(model)
        if "\n" in path or not os.path.exists(path):
            if "func" not in path:
                raise InputError("sample: no model file '%s'" % path)
            path = os.path.join(tmp, "model.ab")
            with open(path, "w") as f:
                f.write(model)
        data_path = ""
        if isinstance(data, dict):
            data_path = os.path.join(tmp, "data.json")
            with open(data_path, "w") as f:
                json.dump({str(k): _cmdstan_value(v) for k, v in data.items()}, f)
        elif data is not None:
            data_path = os.fspath(data)
        init_arg = ""
        if isinstance(init, dict):
            # A declared model's starting values by name (docs/sampling.md).
            init_arg = os.path.join(tmp, "init.json")
            with open(init_arg, "w") as f:
                json.dump({str(k): _cmdstan_value(v) for k, v in init.items()}, f)
        elif init is not None:
            if np.ndim(init) == 0:
                init_arg = repr(float(init))
            else:
                init_arg = os.path.join(tmp, "init.json")
                with open(init_arg, "w") as f:
                    json.dump({"theta": np.asarray(init, dtype=np.float64).tolist()}, f)
        # The files written here are named in messages by what the caller gave.
        made = {}
        if path.startswith(tmp):
            made[path] = "<model text>"
        if data_path.startswith(tmp):
            made[data_path] = "data"
        if init_arg.startswith(tmp):
            made[init_arg] = "init"
        try:
            r = SampleResult(_ab.sample(path, data_path, int(chains), int(warmup), int(samples),
                                        None if seed is None else int(seed), int(max_depth),
                                        float(target_accept), init_arg, int(threads),
                                        _primitive_set(primitives),
                                        "" if csv is None else os.path.join(os.fspath(csv), ""),
                                        metric))
        except AutobatchError as e:
            _name_given_files(e, made)
            raise
        # The settings, for to_arviz's attributes.
        r.settings = {"num_warmup": int(warmup), "max_depth": int(max_depth),
                      "target_accept": float(target_accept), "metric": str(metric),
                      "seed": r.seed}
        return r


def pass_names():
    """The compiler's passes, in pipeline order (for lower(print_after=...)
    and compile(passes=...))."""
    return _ab.pass_names()


def set_log_level(level):
    """Logging on stderr, as the CLI's --log-level: one of
    "off" (default), "info", "debug"... (the names the library lists)."""
    _ab.set_log_level(level)


def format(text, name="<input>"):
    """The program's text in canonical form (`autobatch fmt`)."""
    return _ab.format(text, name)
