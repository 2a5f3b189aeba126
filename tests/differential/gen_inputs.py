#!/usr/bin/env python3
"""Random inputs for the example programs (programs/*.ab), for differential testing.

    gen_inputs.py PROGRAM --batch B --seed S [--output FILE]
        print (or write) a JSON inputs file for PROGRAM (a name such as `fib`, or a
        path to programs/NAME.ab): an object keyed by the entry's parameter names,
        batch first (docs/language.md, "Inputs and outputs"). Some parameters are given with batch 1
        (shared by every thread) to exercise broadcasting; when every parameter
        ends up shared the run needs `--batch B` (check_programs.py always passes it).
    gen_inputs.py --check [--programs DIR]
        verify that every program in DIR (default programs/, not programs/lowered/)
        has a spec here and that the spec matches its entry's parameters.
    gen_inputs.py --list [--programs DIR]
        print `NAME ENTRY` for every program.

Every program needs an entry in INPUT_TABLE below: the dtype, event shape and value
distribution of each parameter of its entry function, chosen so that the program
terminates quickly and never raises a runtime error. A program without a spec is
an error (exit 2), so a new program must get one. Python 3 standard library only.
"""

import argparse
import json
import math
import os
import random
import re
import sys
import zlib

I32_MIN, I32_MAX = -(2**31), 2**31 - 1
I64_MIN, I64_MAX = -(2**63), 2**63 - 1
INT_RANGE = {"i32": (I32_MIN, I32_MAX), "i64": (I64_MIN, I64_MAX)}

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_PROGRAMS = os.path.join(ROOT, "programs")


# ---------------------------------------------------------------------------
# Value distributions: each is a function (rng) -> one scalar element.

def ints(lo, hi, special=(), p_special=0.15, nonzero=False):
    """Uniform integers in [lo, hi]; with probability p_special one of `special`."""
    def draw(rng):
        while True:
            if special and rng.random() < p_special:
                v = rng.choice(special)
            else:
                v = rng.randint(lo, hi)
            if not (nonzero and v == 0):
                return v
    draw.desc = "ints[%d, %d]" % (lo, hi)
    draw.special = tuple(v for v in special if not (nonzero and v == 0))
    return draw


def wide(dtype, small=20, nonzero=False):
    """Any integer of the dtype: small ones, the whole range and the extremes (wrapping)."""
    lo, hi = INT_RANGE[dtype]
    special = (0, 1, -1, lo, lo + 1, hi, hi - 1)

    def draw(rng):
        while True:
            r = rng.random()
            if r < 0.45:
                v = rng.randint(-small, small)
            elif r < 0.8:
                v = rng.randint(lo, hi)
            else:
                v = rng.choice(special)
            if not (nonzero and v == 0):
                return v
    draw.desc = "wide %s" % dtype
    draw.special = tuple(v for v in special if not (nonzero and v == 0))
    return draw


def floats(lo, hi, special=(), p_special=0.15, dyadic=None):
    """Uniform floats in [lo, hi) (multiples of 2**-dyadic if given); sometimes a special."""
    def draw(rng):
        if special and rng.random() < p_special:
            return float(rng.choice(special))
        v = rng.uniform(lo, hi)
        if dyadic is not None:
            v = math.floor(v * 2**dyadic) / 2**dyadic
        return v
    draw.desc = "floats[%g, %g)" % (lo, hi)
    draw.special = tuple(float(v) for v in special)
    return draw


def bools():
    def draw(rng):
        return rng.random() < 0.5
    draw.desc = "bools"
    draw.special = ()
    return draw


class P:
    """One parameter: dtype, event shape, element distribution, may it be shared (batch 1)."""

    def __init__(self, dtype, draw, shape=(), shareable=True):
        assert dtype in ("bool", "i32", "i64", "f32", "f64")
        self.dtype, self.draw, self.shape, self.shareable = dtype, draw, tuple(shape), shareable

    def element(self, rng):
        return self.element_of(self.draw(rng))

    def element_of(self, v):
        if self.dtype in ("f32", "f64"):
            v = float(v)
        elif self.dtype == "bool":
            v = bool(v)
        else:
            lo, hi = INT_RANGE.get(self.dtype, (I64_MIN, I64_MAX))
            assert lo <= v <= hi, (v, self.dtype)
        return v

    def thread_value(self, rng, shape=None):
        shape = self.shape if shape is None else shape
        if not shape:
            return self.element(rng)
        return [self.thread_value(rng, shape[1:]) for _ in range(shape[0])]


class Resample:
    """Threads drawn jointly (a whole row at a time) from the program's own NAME.json,
    for inputs whose parts must fit together (a tree's arrays, a sampler's state);
    `draws` gives some parameters fresh random values instead. Parameters given
    with batch 1 there stay shared."""

    def __init__(self, draws=None):
        self.draws = draws or {}


INF, NAN = float("inf"), float("nan")

# ---------------------------------------------------------------------------
# The table: program name -> entry parameters in order (name, P). Ranges keep every
# program terminating and free of runtime errors, and keep it fast: the reference
# interpreter runs the threads one by one (and 20-30x slower in the sanitized Debug build
# of tools/test), so costly values (deep recursions, long loops) are rare `special`s
# rather than the bulk of a uniform range. A batch of 64 or more threads holds every
# special value at least once (in a random thread), whatever its probability.
INPUT_TABLE = {
    # n <= 1 stops at once (zero and negatives too); n <= 10^5 takes at most ~350 steps.
    "collatz": [("n", P("i64", ints(-3, 10**5, special=(0, 1, 2, 27, 97, 871, 77031))))],
    # Trip count n (wrapping i64 arithmetic): keep it short.
    "spin": [("n", P("i64", ints(-3, 3000, special=(0, 1, 2))))],
    "collatz_select": [("n", P("i64", ints(-3, 10**5, special=(0, 1, 2, 27, 97, 871, 77031))))],
    # Recursion depth n (unannotated: JSON integers make it i64); 2000 frames at most.
    "deep_recursion": [("n", P("i64", ints(-5, 150, special=(0, 1, 1000, 2000), p_special=0.02)))],
    # Mutual recursion counting n down to 0: n must not be negative.
    "even_odd": [("n", P("i64", ints(0, 150, special=(0, 1, 2, 400))))],
    # Exponential recursion: fib(18) is 8361 calls per thread; n in [0, 18].
    "fib": [("n", P("i64", ints(0, 13, special=(0, 1, 14, 15, 16, 17, 18), p_special=0.04)))],
    # Every IEEE corner: zeros of both signs, infinities, NaN, halves (round to even).
    "float_math": [("x", P("f64", floats(-10.0, 10.0, p_special=0.4, special=(
        0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, 4.0, -2.0, INF, -INF, NAN,
        1e308, -1e308, 5e-324, 1e-300))))],
    # Euclid with Python mod terminates for any signs (|r| < |b|); abs(INT32_MIN) wraps.
    "gcd": [("a", P("i32", ints(-1000, 10**6, special=(0, 1, -1, 48, I32_MIN, I32_MAX)))),
            ("b", P("i32", ints(-1000, 10**6, special=(0, 1, -1, 18, I32_MIN, I32_MAX))))],
    # Naive mutual recursion grows quickly (n = 30 is ~6 ms per thread): mostly n <= 17.
    "hofstadter": [("n", P("i64", ints(0, 17, special=(0, 1, 2, 20, 25, 30), p_special=0.03)))],
    # eps = 0.5 is stable for the oscillator; negative n_steps runs no step.
    "leapfrog": [("q0", P("f64", floats(-10.0, 10.0, special=(0.0, 1.0, -1.0, 0.5)))),
                 ("p0", P("f64", floats(-10.0, 10.0, special=(0.0, 1.0, -1.0, 0.5)))),
                 ("n_steps", P("i64", ints(-2, 40, special=(0, 1, 8))))],
    # Step 0.25 on A (eigenvalues 1, 1, 3) converges; max_steps bounds the loop anyway.
    "linalg": [("x", P("f64", floats(-10.0, 10.0, special=(0.0, 0.5, -0.25, 2.0)), shape=(3,))),
               ("max_steps", P("i64", ints(-1, 30, special=(0, 4, 10))))],
    "no_results": [("x", P("i64", wide("i64")))],
    # The rejection loop accepts with probability 1/4 per draw, for any key.
    "random_keys": [("key", P("i64", wide("i64")))],
    # prod(k) wraps for large n; non-finite x only flows through float arithmetic.
    "reductions": [("x", P("f64", floats(-10.0, 10.0, special=(0.0, -0.0, 0.25, -0.5, 2.5, INF, -INF, NAN)))),
                   ("n", P("i64", wide("i64")))],
    # cast(floor(clamped), i64) needs a finite clamp: x is never NaN, lo and hi are finite.
    "select_cast": [("x", P("f64", floats(-10.0, 10.0, p_special=0.3, special=(
                        -1.5, 0.25, 2.0, 3.75, 10.0, 5.0, 0.0, -0.0, 4.5, INF, -INF)))),
                    ("lo", P("f64", floats(-5.0, 1.0, special=(0.0, -1.0)))),
                    ("hi", P("f64", floats(1.0, 8.0, special=(5.0, 1.0))))],
    # y = scale * x grows to 10 only if scale > 1 and x > 0; both are floats in the JSON
    # (unannotated parameters take f64 from float literals).
    "shared_scale": [("scale", P("f64", floats(1.25, 4.0, special=(2.0, 1.5)))),
                     ("x", P("f64", floats(0.01, 20.0, special=(1.0, 2.0, 10.0, 9.999))))],
    "sum_squares": [("n", P("i64", ints(-3, 150, special=(0, 1, 3, 10, 300))))],
    # i32 arithmetic; the rare n = 65536 makes the sum wrap around in i32.
    # The loop stops at i = 50 whatever n (negatives run no iteration); any radius.
    "named_sums": [("n", P("i64", ints(-5, 200, special=(0, 1, 50, 51)))),
                   ("r", P("f64", floats(-10.0, 10.0, special=(0.0, 1.0, INF))))],
    "sum_to": [("n", P("i32", ints(-5, 400, special=(0, 1, 3000, 65536), p_special=0.004)))],
    "terminators": [("x", P("i64", wide("i64")))],
    # div and mod by b: b is never 0; div(MIN, -1) wraps to MIN.
    "tuples": [("a", P("i64", wide("i64"))),
               ("b", P("i64", wide("i64", small=10, nonzero=True)))],
    # sum_from(v, k) reads v[k], v[k+1], ... v[4]: k >= -5 keeps get in range.
    "vectors": [("v", P("i64", wide("i64", small=1000), shape=(5,))),
                ("k", P("i64", ints(-5, 7, special=(-5, 0, 5))))],
    # Points inside the set run max_iter iterations: keep max_iter small but for rare 256.
    "mandelbrot": [("cx", P("f64", floats(-2.2, 1.0, special=(0.0, -1.0, 0.25, -2.0)))),
                   ("cy", P("f64", floats(-1.3, 1.3, special=(0.0, 0.5)))),
                   ("max_iter", P("i64", ints(0, 60, special=(100, 256), p_special=0.02)))],
    # Any 10 numbers sort (at most 45 swaps); signed zeros and infinities too.
    "bubble_sort": [("x", P("f64", floats(-100.0, 100.0, special=(0.0, -0.0, 1.0, INF, -INF)), shape=(10,)))],
    # Any system: a singular one gives infinities or NaN alike in every VM, never an error.
    "gauss_solve": [("A", P("f64", floats(-5.0, 5.0, special=(0.0, 1.0)), shape=(4, 4))),
                    ("b", P("f64", floats(-5.0, 5.0, special=(0.0,)), shape=(4,)))],
    # Any 32 numbers sort; signed zeros and infinities test stability (no NaN: it is unordered).
    "mergesort": [("a", P("f64", floats(-100.0, 100.0, special=(0.0, -0.0, 1.0, INF, -INF)), shape=(32,)))],
    # n = 9 takes seconds under the sanitizers; n <= 8 (n = 8 rare).
    "nqueens": [("n", P("i64", ints(0, 7, special=(8,), p_special=0.01)))],
    # Any 5 x 5 grid: at most C(8, 4) = 70 paths, each call in range.
    "lattice_paths": [("grid", P("bool", bools(), shape=(5, 5)))],
    # Any matrix and start vector (a zero vector gives NaN in every VM alike).
    "power_iteration": [("A", P("f64", floats(-1.0, 1.0), shape=(4, 4))),
                        ("x", P("f64", floats(-1.0, 1.0, special=(0.0,)), shape=(4,))),
                        ("k", P("i64", ints(0, 20, special=(0, 1))))],
    # Any seed; rates and times keep the event count small ((b + d n) t_end, at most a few hundred).
    "birth_death": [("seed", P("i64", wide("i64"))),
                    ("b", P("f64", floats(0.0, 5.0, special=(0.0,)))),
                    ("d", P("f64", floats(0.0, 2.0, special=(0.0,)))),
                    ("n0", P("i64", ints(0, 20, special=(0,)))),
                    ("t_end", P("f64", floats(0.0, 5.0, special=(0.0,))))],
    # Any key; |bound| <= 10 keeps the walks short (mean bound^2 steps), bound <= 0 stops at once.
    "random_walk": [("key", P("i64", wide("i64"))),
                    ("bound", P("i64", ints(-2, 6, special=(0, 1, 10))))],
    # n iterations of a wrapping LCG; n <= 0 stops at once.
    "straggler": [("n", P("i64", ints(-3, 200, special=(0, 1, 5000), p_special=0.05))),
                  ("seed", P("i64", wide("i64")))],
    # Any matrix: an unstable step only grows the floats (IEEE, no runtime error).
    "leapfrog_matrix": [("A", P("f64", floats(-1.0, 1.0), shape=(3, 3))),
                        ("q0", P("f64", floats(-2.0, 2.0, special=(0.0, 1.0)), shape=(3,))),
                        ("p0", P("f64", floats(-2.0, 2.0, special=(0.0,)), shape=(3,))),
                        ("eps", P("f64", floats(0.0, 0.5, special=(0.5,)))),
                        ("n_steps", P("i64", ints(-1, 20, special=(0, 1))))],
    # Bisection and Newton are bounded by max_iter for any start; keep the golden problems.
    "roots": Resample(draws={"x0": P("f64", floats(-5.0, 5.0, special=(0.0, 1.0)))}),
    # Trees must be well formed: whole rows of the golden inputs.
    "tree_eval": Resample(),
    # The sampler's state must fit the target: golden rows, with fresh keys.
    "nuts": Resample(draws={"key": P("i64", wide("i64"))}),
    # Any interval (b < a too); tol >= 1e-9 over |b - a| <= 15 keeps it to a few hundred calls,
    # and max_depth bounds the recursion whatever tol is.
    "simpson": [("a", P("f64", floats(-5.0, 5.0, special=(0.0, 1.0)))),
                ("b", P("f64", floats(-5.0, 10.0, special=(0.0, 3.0)))),
                ("tol", P("f64", floats(1e-9, 1e-3, special=(1e-9, 0.5)))),
                ("max_depth", P("i64", ints(0, 30, special=(0, 1, 50))))],
    # An oscillator takes about w t_end / tol^(1/5) steps; w = 0 never errs (h grows by 5).
    "dopri": [("w", P("f64", floats(0.0, 5.0, special=(0.0, 1.0)))),
              ("t_end", P("f64", floats(-1.0, 10.0, special=(0.0,)))),
              ("tol", P("f64", floats(1e-8, 1e-3, special=(1e-8,)))),
              ("h0", P("f64", floats(1e-3, 1.0, special=(1e-3, 10.0))))],
    # Any seed; (b + d n) t_end stays at most a few hundred events.
    "gillespie": [("seed", P("i64", wide("i64"))),
                  ("b", P("f64", floats(0.0, 5.0, special=(0.0,)))),
                  ("d", P("f64", floats(0.0, 2.0, special=(0.0,)))),
                  ("n0", P("i64", ints(0, 20, special=(0,)))),
                  ("t_end", P("f64", floats(0.0, 5.0, special=(0.0,))))],
    # Any seed; |bound| <= 10 keeps the walks short (mean bound^2 steps), bound <= 0 stops at once.
    "walk": [("seed", P("i64", wide("i64"))),
             ("bound", P("i64", ints(-2, 6, special=(0, 1, 10))))],
    # The data set of the golden inputs, with fresh seeds and step sizes.
    "metropolis": Resample(draws={"seed": P("i64", wide("i64")),
                                  "scale": P("f64", floats(0.01, 2.0, special=(0.0,)))}),
    # The target of the golden inputs, with fresh seeds.
    "nuts_gauss": Resample(draws={"seed": P("i64", wide("i64"))}),
    # The target and starting points of the golden inputs, with fresh seeds, step sizes and
    # warm-up lengths (a negative n_warmup records from draw -n_warmup; below -200, none).
    "mh_gauss": Resample(draws={"seed": P("i64", wide("i64")),
                                "scale": P("f64", floats(0.0, 2.0, special=(0.0,))),
                                "n_warmup": P("i64", ints(-250, 50, special=(0, -200)))}),
}


# ---------------------------------------------------------------------------
# Programs and their entries.

def program_paths(programs_dir=DEFAULT_PROGRAMS):
    """programs/*.ab (not programs/lowered/), sorted."""
    return sorted(os.path.join(programs_dir, f) for f in os.listdir(programs_dir)
                  if f.endswith(".ab") and os.path.isfile(os.path.join(programs_dir, f)))


def program_name(path):
    return os.path.basename(path)[:-len(".ab")]


def entry_of(path):
    """The `# entry: NAME` line among the comments that open the file, else None."""
    with open(path) as f:
        for line in f:
            s = line.strip()
            if not s:
                continue
            if not s.startswith("#"):
                break
            m = re.match(r"#\s*entry:\s*([A-Za-z_][A-Za-z0-9_.]*)\s*$", s)
            if m:
                return m.group(1)
    return None


def entry_params(path):
    """[(name, dtype or None, shape or None)] of the entry function's parameters."""
    text = open(path).read()
    funcs = re.findall(r"^\s*(?:entry\s+)?func\s+([A-Za-z_]\w*)\s*\(([^)]*)\)", text, re.M)
    if not funcs:
        raise SpecError("%s: no function found" % path)
    entry = entry_of(path)
    if entry is None:
        names = [f for f, _ in funcs]
        entry = "main" if "main" in names else names[0] if len(names) == 1 else None
        if entry is None:
            raise SpecError("%s: no `# entry:` line and no main" % path)
    for name, params in funcs:
        if name != entry:
            continue
        out = []
        for p in filter(None, (x.strip() for x in split_params(params))):
            m = re.match(r"([A-Za-z_]\w*)\s*(?::\s*(bool|i32|i64|f32|f64)\s*(?:\[([^\]]*)\])?)?\s*$", p)
            if not m:  # a tuple-typed parameter or something this parser does not know
                raise SpecError("%s: cannot read parameter %r of %s" % (path, p, entry))
            shape = None
            if m.group(2):
                shape = tuple(int(d) for d in m.group(3).split(",") if d.strip()) if m.group(3) else ()
            out.append((m.group(1), m.group(2), shape))
        return entry, out
    raise SpecError("%s: entry function %s not found" % (path, entry))


def split_params(s):
    depth, cur, out = 0, "", []
    for ch in s:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return out


class SpecError(Exception):
    pass


def spec_for(path):
    """The spec of a program, checked against its entry's parameters (SpecError if not)."""
    name = program_name(path)
    if name not in INPUT_TABLE:
        raise SpecError(
            "%s has no input spec: add an entry %r to INPUT_TABLE in %s (dtype, event shape and a "
            "value range that keeps the program terminating and free of runtime errors)"
            % (path, name, os.path.relpath(__file__, os.getcwd())))
    spec = INPUT_TABLE[name]
    entry, params = entry_params(path)
    if isinstance(spec, Resample):
        own = own_inputs(path)
        missing = [p for p, _, _ in params if p not in own and p not in spec.draws]
        if missing:
            raise SpecError("%s: INPUT_TABLE[%r] resamples %s, which lacks %s"
                            % (path, name, own_path(path), missing))
        return entry, spec
    if [p for p, _, _ in params] != [n for n, _ in spec]:
        raise SpecError("%s: entry %s has parameters %s but its spec gives %s; update INPUT_TABLE[%r]"
                        % (path, entry, [p for p, _, _ in params], [n for n, _ in spec], name))
    for (pname, dtype, shape), (_, p) in zip(params, spec):
        if dtype is not None and (dtype != p.dtype or shape != p.shape):
            raise SpecError("%s: parameter %s is %s%s but its spec says %s%s; update INPUT_TABLE[%r]"
                            % (path, pname, dtype, list(shape), p.dtype, list(p.shape), name))
    return entry, spec


def check_all(programs_dir=DEFAULT_PROGRAMS):
    """SpecError listing every program without a valid spec."""
    errors = []
    for path in program_paths(programs_dir):
        try:
            spec_for(path)
        except SpecError as e:
            errors.append(str(e))
    if errors:
        raise SpecError("\n".join(errors))


# ---------------------------------------------------------------------------
# Generation.

FULL_COVERAGE_FROM = 64   # batches at least this large hold every special value


def stable_seed(*parts):
    """A seed from strings and integers that does not depend on PYTHONHASHSEED."""
    return zlib.crc32(repr(parts).encode())


def own_path(path):
    return path[:-len(".ab")] + ".json"


def own_inputs(path):
    if not os.path.isfile(own_path(path)):
        raise SpecError("%s: no %s to resample" % (path, own_path(path)))
    with open(own_path(path)) as f:
        return json.load(f)


def resample(path, spec, batch, rng):
    """Inputs for a Resample spec: each thread takes one row of the golden inputs."""
    own = own_inputs(path)
    _, params = entry_params(path)
    rows = max((len(v) for v in own.values() if isinstance(v, list) and len(v) > 1), default=1)
    picks = [rng.randrange(rows) for _ in range(batch)]
    out = {}
    for name, _, _ in params:
        if name in spec.draws:
            p = spec.draws[name]
            out[name] = [p.thread_value(rng) for _ in range(batch)]
            continue
        v = own[name]
        if isinstance(v, list) and len(v) > 1:
            out[name] = [v[i % len(v)] for i in picks]
        else:
            out[name] = v  # given once: shared by every thread
    return out


def generate(path, batch, seed, p_shared=0.25):
    """The inputs object for a program: {param: batch-first nested list}."""
    _, spec = spec_for(path)
    rng = random.Random(stable_seed(program_name(path), batch, seed))
    if isinstance(spec, Resample):
        return resample(path, spec, batch, rng)
    shared = [batch > 1 and p.shareable and rng.random() < p_shared for _, p in spec]
    if shared and all(shared) and batch >= FULL_COVERAGE_FROM:
        shared[0] = False   # every input shared (run with --batch) only in small batches
    out = {}
    for (name, p), shared in zip(spec, shared):
        if batch == 1 and not p.shape and rng.random() < 0.2:
            out[name] = p.thread_value(rng)  # a bare scalar is a batch of 1
            continue
        n = 1 if shared else batch
        values = [p.thread_value(rng) for _ in range(n)]
        if n >= FULL_COVERAGE_FROM:
            # every corner value once, in a random thread (and element), so that a large
            # batch surely holds the rare expensive or extreme cases
            threads = rng.sample(range(n), min(n, len(p.draw.special)))
            for v, t in zip(p.draw.special, threads):
                if p.shape:
                    values[t] = set_random_element(rng, values[t], p.element_of(v))
                else:
                    values[t] = p.element_of(v)
        out[name] = values
    return out


def set_random_element(rng, nested, v):
    if not isinstance(nested, list):
        return v
    i = rng.randrange(len(nested))
    nested[i] = set_random_element(rng, nested[i], v)
    return nested


def to_json_value(v):
    """Non-finite floats as the strings the tool reads: "NaN", "Infinity", "-Infinity"."""
    if isinstance(v, list):
        return [to_json_value(x) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
    return v


def dumps(inputs):
    return json.dumps({k: to_json_value(v) for k, v in inputs.items()}, allow_nan=False,
                      separators=(",", ":"))


def resolve_program(arg, programs_dir):
    if os.path.isfile(arg):
        return arg
    path = os.path.join(programs_dir, arg + ".ab")
    if os.path.isfile(path):
        return path
    raise SpecError("no program %r (looked for %s)" % (arg, path))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("program", nargs="?")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--output", "-o")
    ap.add_argument("--programs", default=DEFAULT_PROGRAMS, help="directory of programs")
    ap.add_argument("--check", action="store_true", help="check that every program has a spec")
    ap.add_argument("--list", action="store_true", help="print NAME ENTRY for every program")
    a = ap.parse_args(argv)
    try:
        if a.check or a.list:
            check_all(a.programs)
            if a.list:
                for path in program_paths(a.programs):
                    print(program_name(path), spec_for(path)[0])
            else:
                print("%d programs, all with input specs" % len(program_paths(a.programs)))
            return 0
        if not a.program:
            ap.error("give a program, --check or --list")
        if a.batch < 1:
            ap.error("--batch must be at least 1")
        text = dumps(generate(resolve_program(a.program, a.programs), a.batch, a.seed)) + "\n"
    except SpecError as e:
        print("gen_inputs.py: error: %s" % e, file=sys.stderr)
        return 2
    if a.output:
        with open(a.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
