#!/usr/bin/env python3
"""Differential test on random terminating integer programs.

    random_programs.py [--count N] [--seed S] [--only K] [--jobs J] [--failures DIR]
    random_programs.py --print K [--seed S]     print program K and its inputs, run nothing

Program K of seed S is a pure function of (S, K). Each program is a module of
several functions over i64, i32 and bool scalars: random control-flow graphs with
branches on comparisons, loops bounded by a counter (count-down, count-up and
do-while forms, with break and continue edges), calls along a DAG of functions,
self-recursion on an explicitly decreasing depth argument with a base case, tail
calls (`r = call g(...)` then `return r`), early returns, several results and
tuple results (`q, p = call f(...)`, `-> ((A, B))`, `tuple` and unpacking),
select, min/max, casts between i64, i32 and bool, wrapping arithmetic with large
constants, pow with a bounded exponent, and div/mod on divisors made safe
(max(abs(y), 1), a select that replaces 0) or guarded by a branch that the threads
with a zero divisor skip.

Every variable is defined on every path before it is read. Operands are mostly
values that depend on the entry's inputs, so threads take different paths; the entry
folds every variable it holds into a checksum, its last result. Each program is first
checked with `autobatch check` (a rejection is a bug of this generator, or of the
tool's inference: it is reported and saved), then run on inputs of batch 1 and of a
random batch in [2, 300] in the nine configurations of common.py; all must print
the reference's outputs exactly. A failing program is saved with its inputs under
--failures (default build/differential-failures/) with the commands to reproduce it.
Ends with `N passed, M failed`; exit 1 on any failure.
"""

import argparse
import json
import os
import random
import re
import shutil
import sys
import tempfile
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

I32 = (-(2**31), 2**31 - 1)
I64 = (-(2**63), 2**63 - 1)
RANGE = {"i32": I32, "i64": I64}

ENTRY_BUDGET = 4000      # block executions per thread, an upper bound for the entry
FUNC_BUDGET = 500        # for a helper (a recursive one: its whole recursion)
FRAME_BUDGET = 25        # one frame of a recursive helper


def lit(rng, dtype):
    """A literal of the dtype: mostly small, sometimes large (arithmetic wraps)."""
    if dtype == "bool":
        return rng.choice(["true", "false"])
    lo, hi = RANGE[dtype]
    r = rng.random()
    if r < 0.6:
        v = rng.randint(-9, 9)
    elif r < 0.8:
        v = rng.randint(-1000, 1000)
    elif r < 0.93:
        v = rng.randint(lo, hi)
    else:
        v = rng.choice([lo, hi, lo + 1, hi - 1, 2**31 - 1 if dtype == "i64" else 65535])
    return str(v)


class Sig:
    """A function's signature as the generator decided it."""

    def __init__(self, name, params, results, tuple_result, annotate_params, annotate_results,
                 recursive=False, max_depth=0, self_calls=0):
        self.name, self.params, self.results = name, params, results
        self.tuple_result = tuple_result          # one result of tuple type: -> ((A, B))
        self.annotate_params, self.annotate_results = annotate_params, annotate_results
        self.recursive, self.max_depth, self.self_calls = recursive, max_depth, self_calls
        self.cost = 1                             # block executions per call, upper bound
        self.called = False

    def header(self):
        ps = ", ".join("%s: %s" % (n, t) if self.annotate_params else n for n, t in self.params)
        s = "func %s(%s)" % (self.name, ps)
        if self.annotate_results:
            if self.tuple_result:
                s += " -> ((%s))" % ", ".join(self.results)
            elif len(self.results) == 1:
                s += " -> %s" % self.results[0]
            else:
                s += " -> (%s)" % ", ".join(self.results)
        return s


class Loop:
    def __init__(self, exit_label, latch_label):
        self.exit_label, self.latch_label = exit_label, latch_label
        self.exit_envs, self.latch_envs = [], []


class FuncGen:
    """Builds the blocks of one function while tracking which variables are defined."""

    def __init__(self, rng, sig, sigs, budget):
        self.rng, self.sig, self.sigs, self.budget = rng, sig, sigs, budget
        self.blocks = []          # (label, [instr], terminator)
        self.label = None         # the open block, None after a terminator
        self.instrs = []
        self.env = {}             # variables defined on every path here: name -> dtype
        self.types = {}           # every variable of the function: name -> dtype
        self.protected = set()    # loop counters and bounds in scope, the depth parameter
        self.mult = 1             # how often the current block runs per call (bound)
        self.cost = 0
        self.counter = 0
        self.loops = []           # enclosing loops, innermost last
        self.loop_depth = self.if_depth = 0
        self.self_calls_left = 0
        self.tainted = set()      # variables that may depend on the inputs (a may-analysis)
        for n, t in sig.params:
            self.env[n] = t
            self.types[n] = t
            self.tainted.add(n)

    # -- names and blocks ---------------------------------------------------
    def fresh(self, prefix):
        self.counter += 1
        return "%s%d" % (prefix, self.counter)

    def new_var(self, dtype):
        name = self.fresh({"bool": "b", "i32": "w", "i64": "v", "tuple": "t"}[dtype])
        self.types[name] = dtype
        return name

    def start(self, label, env):
        assert self.label is None
        self.label, self.instrs, self.env = label, [], dict(env)
        self.cost += self.mult

    def end(self, term):
        assert self.label is not None
        self.blocks.append((self.label, self.instrs, term))
        self.label = None

    def emit(self, s):
        self.instrs.append(s)
        if " = " in s:
            lhs, rhs = s.split(" = ", 1)
            if any(x in self.tainted for x in IDENT.findall(rhs) if x in self.types):
                self.tainted.update(IDENT.findall(lhs))
            else:  # a guess (other paths may differ); it only steers the choice of operands
                self.tainted.difference_update(IDENT.findall(lhs))

    def define(self, name, dtype):
        self.env[name] = dtype
        self.types[name] = dtype

    def affordable(self, units):
        return self.cost + self.mult * units <= self.budget

    # -- operands -----------------------------------------------------------
    def vars_of(self, dtype):
        return [n for n, t in self.env.items() if t == dtype]

    def var(self, dtype):
        """A defined variable of the dtype, made if there is none. Mostly one that
        depends on the inputs, so that threads take different paths."""
        vs = self.vars_of(dtype)
        tv = [v for v in vs if v in self.tainted]
        if not tv and self.tainted_of(("i64", "i32", "bool")) and self.rng.random() < 0.6:
            return self.make(dtype)      # from an input-dependent value of another dtype
        if vs:
            if tv and self.rng.random() < 0.75:
                vs = tv
            recent = vs[-6:]
            return self.rng.choice(recent if self.rng.random() < 0.5 else vs)
        return self.make(dtype)

    def tainted_of(self, dtypes):
        return [n for n, t in self.env.items() if t in dtypes and n in self.tainted]

    def make(self, dtype):
        """Define a new variable of the dtype from what is defined (input-dependent if any)."""
        d = self.new_var(dtype)
        pick = lambda vs: self.rng.choice([v for v in vs if v in self.tainted] or vs)
        if dtype == "bool":
            ints = self.tainted_of(("i64", "i32")) or [n for n, t in self.env.items() if t in ("i64", "i32")]
            if ints:
                x = self.rng.choice(ints)
                self.emit("%s = %s(%s, %s)" % (d, self.rng.choice(CMPS), x, lit(self.rng, self.env[x])))
            else:
                self.emit("%s = %s" % (d, lit(self.rng, "bool")))
        else:
            other = "i32" if dtype == "i64" else "i64"
            src = self.vars_of(other) + self.vars_of("bool")
            if src and self.rng.random() < 0.9:
                self.emit("%s = cast(%s, dtype=%s)" % (d, pick(src), dtype))
            else:
                self.emit("%s = %s" % (d, lit(self.rng, dtype)))
        self.define(d, dtype)
        return d

    def operand(self, dtype, p_lit=0.25):
        if self.rng.random() < p_lit:
            return lit(self.rng, dtype)
        return self.var(dtype)

    def dest(self, dtype, p_reuse=0.35):
        """Where to write a value: a fresh variable or an unprotected one of the dtype."""
        if self.rng.random() < p_reuse:
            keep = self.protected
            if self.sig.name == "main" and self.rng.random() < 0.85:
                keep = keep | {n for n, _ in self.sig.params}   # mostly keep the inputs around
            old = [n for n, t in self.types.items() if t == dtype and n not in keep]
            if old:
                return self.rng.choice(old)
        return self.new_var(dtype)

    def int_dtype(self):
        return "i64" if self.rng.random() < 0.65 else "i32"

    # -- expressions (one or a few instructions, no control flow) -------------
    def assign(self):
        """One value-producing statement; returns nothing."""
        r = self.rng.random()
        if r < 0.30:
            self.arith()
        elif r < 0.45:
            self.compare_or_logic()
        elif r < 0.55:
            self.select()
        elif r < 0.70:
            self.safe_division()
        elif r < 0.76:
            self.bounded_pow()
        elif r < 0.82:
            self.cast()
        elif r < 0.90:
            self.copy()
        else:
            self.tuples()

    def binop_args(self, dtype):
        a = self.var(dtype)
        b = self.operand(dtype, 0.4)
        return (a, b) if self.rng.random() < 0.7 else (b, a)

    def arith(self):
        t = self.int_dtype()
        op = self.rng.choice(["add", "sub", "mul", "min", "max", "add", "mul", "neg", "abs"])
        if op in ("neg", "abs"):
            expr = "%s(%s)" % (op, self.var(t))
        else:
            expr = "%s(%s, %s)" % ((op,) + self.binop_args(t))
        d = self.dest(t)
        self.emit("%s = %s" % (d, expr))
        self.define(d, t)

    def compare_or_logic(self):
        if self.vars_of("bool") and self.rng.random() < 0.4:
            op = self.rng.choice(["and", "or", "xor", "not"])
            if op == "not":
                expr = "not(%s)" % self.var("bool")
            else:
                expr = "%s(%s, %s)" % ((op,) + self.binop_args("bool"))
        else:
            t = self.int_dtype()
            expr = "%s(%s, %s)" % ((self.rng.choice(CMPS),) + self.binop_args(t))
        d = self.dest("bool")
        self.emit("%s = %s" % (d, expr))
        self.define(d, "bool")

    def select(self):
        t = self.rng.choice(["i64", "i32", "i64", "bool"])
        c = self.var("bool")
        a = self.operand(t, 0.3)
        b = self.operand(t, 0.3)
        d = self.dest(t)
        self.emit("%s = select(%s, %s, %s)" % (d, c, a, b))
        self.define(d, t)

    def zeroish(self, t):
        """A divisor candidate that is often 0: a variable, or mod(x, K) for a small K."""
        if self.rng.random() < 0.5:
            return self.var(t)
        y = self.new_var(t)
        self.emit("%s = mod(%s, %d)" % (y, self.var(t), self.rng.randint(2, 4)))
        self.define(y, t)
        return y

    def safe_division(self):
        """div/mod whose divisor can never be 0: max(abs(y), 1), select(y == 0, ...), a literal."""
        t = self.int_dtype()
        op = self.rng.choice(["div", "mod"])
        form = self.rng.random()
        if form < 0.4:
            y = self.zeroish(t)
            a = self.new_var(t)
            self.emit("%s = abs(%s)" % (a, y))      # abs(MIN) = MIN < 0, so max is still needed
            self.define(a, t)
            s = self.new_var(t)
            self.emit("%s = max(%s, 1)" % (s, a))
            self.define(s, t)
        elif form < 0.8:
            y = self.zeroish(t)
            z = self.new_var("bool")
            self.emit("%s = eq(%s, 0)" % (z, y))
            self.define(z, "bool")
            s = self.new_var(t)
            k = self.rng.choice(["1", "-1", "3", "-7"])
            self.emit("%s = select(%s, %s, %s)" % (s, z, k, y) if self.rng.random() < 0.5
                      else "%s = select(%s, %s, %s)" % (s, self.negate(z), y, k))
            self.define(s, t)
        else:
            s = self.rng.choice(["1", "-1", "2", "-3", "7", "1000", str(RANGE[t][0]), str(RANGE[t][1])])
        x = self.operand(t, 0.15)
        d = self.dest(t)
        self.emit("%s = %s(%s, %s)" % (d, op, x, s))
        self.define(d, t)

    def negate(self, b):
        n = self.new_var("bool")
        self.emit("%s = not(%s)" % (n, b))
        self.define(n, "bool")
        return n

    def bounded_pow(self):
        t = self.int_dtype()
        if self.rng.random() < 0.3:
            e = str(self.rng.randint(0, 5))
        else:
            e = self.new_var(t)
            self.emit("%s = mod(%s, %d)" % (e, self.var(t), self.rng.randint(2, 6)))  # in [0, K)
            self.define(e, t)
        d = self.dest(t)
        self.emit("%s = pow(%s, %s)" % (d, self.operand(t, 0.2), e))
        self.define(d, t)

    def cast(self):
        src_t = self.rng.choice(["i64", "i32", "bool"])
        t = self.rng.choice([x for x in ("i64", "i32") if x != src_t])
        d = self.dest(t)
        self.emit("%s = cast(%s, dtype=%s)" % (d, self.var(src_t), t))
        self.define(d, t)

    def copy(self):
        t = self.rng.choice(["i64", "i32", "bool"])
        src = self.operand(t, 0.4)
        d = self.dest(t, 0.5)
        if d == src:
            return
        self.emit("%s = %s" % (d, src))
        self.define(d, t)

    def tuples(self):
        """Pack with tuple() (sometimes nested) and unpack into variables again."""
        ts = [self.rng.choice(["i64", "i32", "bool"]) for _ in range(self.rng.randint(2, 3))]
        vals = [self.operand(t, 0.2) for t in ts]
        tv = self.new_var("tuple")
        if len(ts) == 3 and self.rng.random() < 0.5:
            inner = self.new_var("tuple")
            self.emit("%s = tuple(%s, %s)" % (inner, vals[1], vals[2]))
            self.emit("%s = tuple(%s, %s)" % (tv, vals[0], inner))
            shape = "%s, (%s, %s)"
        else:
            self.emit("%s = tuple(%s)" % (tv, ", ".join(vals)))
            shape = ", ".join(["%s"] * len(ts))
            if self.rng.random() < 0.5:
                shape = "(" + shape + ")"
        outs = self.distinct_dests(ts)
        self.emit("%s = %s" % (shape % tuple(outs), tv))
        for o, t in zip(outs, ts):
            self.define(o, t)

    def distinct_dests(self, ts):
        outs = []
        for t in ts:
            d = self.dest(t, 0.3)
            while d in outs:
                d = self.new_var(t)
            outs.append(d)
        return outs

    # -- calls --------------------------------------------------------------
    def callees(self):
        me = self.sigs.index(self.sig)
        return [s for s in self.sigs[me + 1:] if self.affordable(s.cost + 1)]

    def call(self, callee=None):
        if callee is None:
            cs = self.callees()
            if not cs:
                self.assign()
                return
            uncalled = [c for c in cs if not c.called]
            callee = self.rng.choice(uncalled if uncalled and self.rng.random() < 0.7 else cs)
        self.bind_results(callee, self.call_rhs(callee))
        # the call returns into a new block in the lowered program; sometimes also here
        if self.rng.random() < 0.15:
            self.split()

    def call_rhs(self, callee):
        """`call f(args)`, counting its cost; a recursive callee gets a bounded depth, or
        depth - k when it is this function calling itself."""
        args = []
        if callee is self.sig:
            depth, t = callee.params[0]
            d = self.new_var(t)
            self.emit("%s = sub(%s, %d)" % (d, depth, self.rng.choice([1, 1, 1, 2])))
            self.define(d, t)
            args.append(d)
            self.self_calls_left -= 1
        else:
            callee.called = True
            self.cost += self.mult * callee.cost
            if callee.recursive:
                args.append(self.depth_arg(callee.params[0][1], callee.max_depth))
        args += [self.operand(t, 0.2) for _, t in callee.params[len(args):]]
        return "call %s(%s)" % (callee.name, ", ".join(args))

    def depth_arg(self, t, max_depth):
        """A depth in (-inf, max_depth]: the callee recurses at most max_depth deep."""
        r = self.rng.random()
        if r < 0.15:
            return str(self.rng.randint(-2, max_depth))
        d = self.new_var(t)
        if r < 0.6:
            self.emit("%s = mod(%s, %d)" % (d, self.var(t), max_depth + 1))
        else:
            self.emit("%s = min(%s, %d)" % (d, self.var(t), max_depth))
        self.define(d, t)
        return d

    def bind_results(self, callee, rhs):
        rs = callee.results
        if not rs or self.rng.random() < 0.1:
            self.emit(rhs)                               # results not wanted
            return
        if len(rs) == 1 and not callee.tuple_result:
            d = self.dest(rs[0])
            self.emit("%s = %s" % (d, rhs))
            self.define(d, rs[0])
            return
        outs = self.distinct_dests(rs)
        r = self.rng.random()
        if r < 0.6:
            pat = ", ".join(outs) if self.rng.random() < 0.6 else "(%s)" % ", ".join(outs)
            self.emit("%s = %s" % (pat, rhs))
        else:                                            # the call's value is a tuple
            tv = self.new_var("tuple")
            self.emit("%s = %s" % (tv, rhs))
            if self.rng.random() < 0.3:
                self.split()
            self.emit("%s = %s" % (", ".join(outs), tv))
        for o, t in zip(outs, rs):
            self.define(o, t)

    def self_call(self):
        self.bind_results(self.sig, self.call_rhs(self.sig))

    def tail_call(self, force_self=False):
        """Return what a call returns, unchanged (the lowering may make it a plain goto).
        False if no callee has this function's results."""
        sig = self.sig
        same = [s for s in self.callees() if s.results == sig.results and s.tuple_result == sig.tuple_result]
        can_self = sig.recursive and self.self_calls_left > 0 and self.loop_depth == 0
        if can_self and (force_self or not same or self.rng.random() < 0.5):
            callee = sig
        elif same:
            callee = self.rng.choice(same)
        else:
            return False
        rhs = self.call_rhs(callee)
        if not sig.results:
            self.emit(rhs)
            self.end("return")
        elif sig.tuple_result or len(sig.results) == 1:
            r = self.new_var("tuple" if sig.tuple_result else sig.results[0])
            self.emit("%s = %s" % (r, rhs))
            self.end("return %s" % r)
        else:
            outs = [self.new_var(t) for t in sig.results]
            self.emit("%s = %s" % (", ".join(outs), rhs))
            self.end("return %s" % ", ".join(outs))
        return True

    # -- control flow ---------------------------------------------------------
    def split(self):
        """End the block with a goto to a new one."""
        l = self.fresh("blk")
        env = self.env
        self.end("goto %s" % l)
        self.start(l, env)

    def condition(self):
        """A bool variable to branch on: mostly a fresh comparison."""
        if self.vars_of("bool") and self.rng.random() < 0.3:
            return self.var("bool")
        t = self.int_dtype()
        c = self.new_var("bool")
        self.emit("%s = %s(%s, %s)" % ((c, self.rng.choice(CMPS)) + self.binop_args(t)))
        self.define(c, "bool")
        return c

    def branch(self, c, t, f):
        if self.rng.random() < 0.5:
            return "branch %s, %s, %s" % (c, t, f)
        n = self.negate(c)
        return "branch %s, %s, %s" % (n, f, t)

    def if_else(self, may_diverge):
        c = self.condition()
        lt, lf, lj = self.fresh("then"), self.fresh("else"), self.fresh("join")
        has_else = self.rng.random() < 0.7
        env0 = dict(self.env)
        self.end(self.branch(c, lt, lf if has_else else lj))
        joins = [] if has_else else [env0]
        self.if_depth += 1
        self.start(lt, env0)
        div_then = self.seq(self.rng.randint(1, 3), may_diverge=self.rng.random() < 0.4)
        if not div_then:
            joins.append(self.env)
            self.end("goto %s" % lj)
        if has_else:
            self.start(lf, env0)
            div_else = self.seq(self.rng.randint(1, 3), may_diverge=not div_then and self.rng.random() < 0.3)
            if not div_else:
                joins.append(self.env)
                self.end("goto %s" % lj)
        self.if_depth -= 1
        assert joins
        self.start(lj, intersect(joins))

    def guarded_division(self):
        """div, mod or pow that may fail, behind a branch that the failing threads skip."""
        t = self.int_dtype()
        op = self.rng.choice(["div", "mod", "pow"])
        y = self.zeroish(t)
        g = self.new_var("bool")
        self.emit("%s = %s(%s, 0)" % (g, "ge" if op == "pow" else self.rng.choice(["ne", "gt", "lt"]), y))
        self.define(g, "bool")
        lt_, lf, lj = self.fresh("safe"), self.fresh("unsafe"), self.fresh("join")
        d = self.dest(t, 0.3)
        # without an else when d is already defined: the skipping threads keep their d
        no_else = d in self.env and self.rng.random() < 0.5
        env0 = dict(self.env)
        self.end(self.branch(g, lt_, lj if no_else else lf))
        self.start(lt_, env0)
        if self.rng.random() < 0.3:
            saved = set(self.protected)
            self.protected.add(y)          # what the guard tested must still hold
            self.assign()
            self.protected = saved
        x = self.operand(t, 0.15)
        self.emit("%s = %s(%s, %s)" % (d, op, x, y))
        self.define(d, t)
        envs = [self.env]
        self.end("goto %s" % lj)
        if not no_else:
            self.start(lf, env0)
            self.emit("%s = %s" % (d, self.operand(t, 0.5)))
            self.define(d, t)
            envs.append(self.env)
            self.end("goto %s" % lj)
        else:
            envs.append(env0)
        self.start(lj, intersect(envs))

    def loop(self):
        """A loop bounded by a counter that only the latch changes."""
        kind = self.rng.choice(["down", "up", "dowhile"])
        k = self.rng.randint(1, 6)
        t = self.int_dtype()
        c = self.new_var(t)
        bound = None
        r = self.rng.random()
        if kind == "dowhile":
            self.emit("%s = mod(%s, %d)" % (c, self.var(t), k))   # in [0, k)
            self.emit("%s = add(%s, 1)" % (c, c))                   # in [1, k]
        elif kind == "down":
            if r < 0.4:
                self.emit("%s = mod(%s, %d)" % (c, self.var(t), k + 1))
            elif r < 0.8:
                self.emit("%s = min(%s, %d)" % (c, self.var(t), k))  # may be very negative
            else:
                self.emit("%s = %d" % (c, k))
        else:
            bound = self.new_var(t)
            self.emit("%s = min(%s, %d)" % (bound, self.var(t), k))
            self.define(bound, t)
            self.emit("%s = 0" % c if r < 0.7 else "%s = %s" % (c, self.rng.choice(["0", "1", "-1"])))
        self.define(c, t)
        protected_before = set(self.protected)
        self.protected |= {c} | ({bound} if bound else set())
        head, body, latch, exit_ = (self.fresh(p) for p in ("head", "body", "latch", "exit"))
        lp = Loop(exit_, latch)
        env_pre = dict(self.env)
        mult_before = self.mult
        if kind == "dowhile":
            self.end("goto %s" % body)
        else:
            self.end("goto %s" % head)
            self.start(head, env_pre)
            if kind == "down":
                g = self.new_var("bool")
                self.emit("%s = gt(%s, 0)" % (g, c))
            else:
                g = self.new_var("bool")
                self.emit("%s = lt(%s, %s)" % (g, c, bound))
            self.define(g, "bool")
            lp.exit_envs.append(dict(self.env))
            self.end(self.branch(g, body, exit_))
        self.mult *= (k + 2)
        self.loops.append(lp)
        self.loop_depth += 1
        self.start(body, env_pre)
        diverged = self.seq(self.rng.randint(1, 4), may_diverge=False)
        assert not diverged
        lp.latch_envs.append(self.env)
        self.end("goto %s" % latch)
        self.loop_depth -= 1
        self.loops.pop()
        self.start(latch, intersect(lp.latch_envs))
        if kind == "up":
            self.emit("%s = add(%s, 1)" % (c, c))
            self.end("goto %s" % head)
        elif kind == "down":
            self.emit("%s = sub(%s, 1)" % (c, c))
            self.end("goto %s" % head)
        else:
            self.emit("%s = sub(%s, 1)" % (c, c))
            g = self.new_var("bool")
            self.emit("%s = gt(%s, 0)" % (g, c))
            self.define(g, "bool")
            lp.exit_envs.append(dict(self.env))
            self.end(self.branch(g, body, exit_))
        self.mult = mult_before
        self.protected = protected_before
        self.start(exit_, intersect(lp.exit_envs))

    def seq(self, n, may_diverge):
        """n statements; with may_diverge the last may leave (return, break, continue).
        Returns True if the sequence left (no open block at its end)."""
        for i in range(n):
            last = i == n - 1
            if last and may_diverge and self.rng.random() < 0.6:
                self.diverge()
                return True
            self.stmt()
        return False

    def stmt(self):
        r = self.rng.random()
        nested = self.if_depth + self.loop_depth
        if r < 0.12 and nested < 3 and self.affordable(6):
            self.if_else(may_diverge=True)
        elif r < 0.20 and self.loop_depth < 2 and nested < 3 and self.affordable(8 * 7):
            self.loop()
        elif r < 0.27 and self.affordable(4):
            self.guarded_division()
        elif r < 0.40:
            self.call()
        elif r < 0.46 and self.self_calls_left > 0 and self.loop_depth == 0:
            self.self_call()
        elif r < 0.50:
            self.split()
        elif r < 0.58 and nested < 4 and (self.loops or self.rng.random() < 0.3):
            self.early_exit()
        else:
            self.assign()

    def early_exit(self):
        """if (c) { ...; break | continue | return }: the other threads go on."""
        c = self.condition()
        lt_, lj = self.fresh("leave"), self.fresh("stay")
        env0 = dict(self.env)
        self.end(self.branch(c, lt_, lj))
        self.start(lt_, env0)
        self.if_depth += 1
        self.seq(self.rng.randint(0, 1), may_diverge=False)
        self.if_depth -= 1
        self.diverge()
        self.start(lj, env0)

    def diverge(self):
        if self.loops and self.rng.random() < 0.6:
            lp = self.loops[-1]
            if self.rng.random() < 0.5:
                lp.exit_envs.append(dict(self.env))
                self.end("goto %s" % lp.exit_label)          # break
            else:
                lp.latch_envs.append(dict(self.env))
                self.end("goto %s" % lp.latch_label)         # continue
        else:
            self.ret()

    def ret(self, last=None):
        sig = self.sig
        if last is None and self.rng.random() < 0.3 and self.tail_call():
            return
        vals = [self.operand(t, 0.2) for t in sig.results]
        if last is not None:
            vals[-1] = last
        if sig.tuple_result:
            tv = self.new_var("tuple")
            self.emit("%s = tuple(%s)" % (tv, ", ".join(vals)))
            self.end("return %s" % tv)
        else:
            self.end(("return " + ", ".join(vals)) if vals else "return")

    # -- whole functions ----------------------------------------------------
    def body(self, must_call=()):
        self.start("entry", self.env)
        if self.sig.recursive:
            depth, t = self.sig.params[0]
            self.protected.add(depth)
            base, rec = self.fresh("base"), self.fresh("recur")
            c = self.new_var("bool")
            self.emit("%s = %s" % (c, self.rng.choice(["le(%s, 0)" % depth, "lt(%s, 1)" % depth])))
            self.define(c, "bool")
            env0 = dict(self.env)
            self.end(self.branch(c, base, rec))
            self.start(base, env0)
            self.seq(self.rng.randint(0, 2), may_diverge=False)
            self.ret()
            self.start(rec, env0)
            self.self_calls_left = self.sig.self_calls
            self.seq(self.rng.randint(1, 4), may_diverge=False)
            while self.self_calls_left > 0:
                if self.self_calls_left == 1 and self.rng.random() < 0.4:
                    self.tail_call(force_self=True)      # return call f(depth - k, ...)
                    return
                self.self_call()
                self.seq(self.rng.randint(0, 2), may_diverge=False)
        else:
            self.seq(self.rng.randint(2, 8), may_diverge=False)
            for callee in must_call:
                if not callee.called:
                    self.call(callee)
                    self.seq(self.rng.randint(0, 2), may_diverge=False)
        self.ret(self.checksum() if self.sig.name == "main" else None)

    def checksum(self):
        """Fold every defined variable into the last result, so that no difference hides."""
        h = self.new_var("i64")
        self.emit("%s = %d" % (h, self.rng.randint(1, 99)))
        self.define(h, "i64")
        for n, t in list(self.env.items()):
            if n == h or t == "tuple":
                continue
            if t != "i64":
                x = self.new_var("i64")
                self.emit("%s = cast(%s, dtype=i64)" % (x, n))
                self.define(x, "i64")
                n = x
            self.emit("%s = mul(%s, 1000003)" % (h, h))
            self.emit("%s = add(%s, %s)" % (h, h, n))
        return h

    def text(self):
        order = self.blocks
        if self.rng.random() < 0.5:       # the textual order of blocks is theirs to choose
            rest = self.blocks[1:]
            self.rng.shuffle(rest)
            order = self.blocks[:1] + rest
        out = [self.sig.header() + " {"]
        for label, instrs, term in order:
            out.append("%s:" % label)
            out.extend("  " + i for i in instrs)
            out.append("  " + term)
        out.append("}")
        return "\n".join(out)


CMPS = ["eq", "ne", "lt", "le", "gt", "ge"]
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def intersect(envs):
    envs = list(envs)
    out = dict(envs[0])
    for e in envs[1:]:
        out = {k: v for k, v in out.items() if k in e}
    return out


def make_program(seed, index):
    """(program text, entry signature, cost bound per thread) of program `index` of `seed`."""
    rng = random.Random(common_seed(seed, index))
    n_helpers = rng.randint(1, 5)
    sigs = []
    main_params = [("x%d" % i, rng.choice(["i64", "i64", "i32", "i32", "bool"]) if i else
                    rng.choice(["i64", "i32"])) for i in range(rng.randint(1, 4))]
    main_results = [rng.choice(["i64", "i32", "bool"]) for _ in range(rng.randint(0, 2))] + ["i64"]
    sigs.append(Sig("main", main_params, main_results, False, True, rng.random() < 0.5))
    for i in range(1, n_helpers + 1):
        recursive = rng.random() < 0.4
        params = [("p%d" % j, rng.choice(["i64", "i64", "i32", "i32", "bool"]) if j else
                   rng.choice(["i64", "i32"])) for j in range(rng.randint(1, 4))]
        self_calls = max_depth = 0
        if recursive:
            params[0] = ("depth", rng.choice(["i64", "i32"]))
            self_calls = rng.choice([1, 1, 2])
            max_depth = rng.randint(3, 5) if self_calls == 2 else rng.randint(3, 80)
        nres = rng.choice([0, 1, 1, 2, 2, 3])
        results = [rng.choice(["i64", "i32", "bool"]) for _ in range(nres)]
        tuple_result = nres >= 2 and rng.random() < 0.3
        sigs.append(Sig("f%d" % i, params, results, tuple_result, rng.random() < 0.6,
                        rng.random() < 0.6, recursive, max_depth, self_calls))
    texts = {}
    for sig in reversed(sigs):
        if sig.recursive:
            frames = sum(sig.self_calls ** d for d in range(sig.max_depth + 1))
            budget = FRAME_BUDGET
        else:
            frames = 1
            budget = ENTRY_BUDGET if sig.name == "main" else FUNC_BUDGET
        fg = FuncGen(rng, sig, sigs, budget)
        fg.body(must_call=sigs[1:] if sig.name == "main" else ())
        sig.cost = max(fg.cost, 1) * frames
        texts[sig.name] = fg.text()
    funcs = [texts[s.name] for s in sigs]
    # main first or anywhere: the entry is named with --entry
    rest = funcs[1:]
    rng.shuffle(rest)
    pos = rng.randint(0, len(rest))
    funcs = rest[:pos] + funcs[:1] + rest[pos:]
    header = "# random program %d of seed %d (tests/differential/random_programs.py)\n" % (index, seed)
    return header + "\n\n".join(funcs) + "\n", sigs[0], sigs[0].cost


def common_seed(*parts):
    """A seed from the parts that does not depend on PYTHONHASHSEED."""
    return zlib.crc32(repr(parts).encode())


def make_inputs(rng, sig, batch):
    """Inputs for main: some parameters shared (batch 1) when batch > 1."""
    out = {}
    for name, t in sig.params:
        n = 1 if batch > 1 and rng.random() < 0.25 else batch
        out[name] = [value(rng, t) for _ in range(n)]
    return out


def value(rng, t):
    if t == "bool":
        return rng.random() < 0.5
    lo, hi = RANGE[t]
    r = rng.random()
    if r < 0.5:
        return rng.randint(-12, 12)
    if r < 0.7:
        return rng.randint(-10**6, 10**6)
    if r < 0.9:
        return rng.randint(lo, hi)
    return rng.choice([lo, hi, lo + 1, hi - 1, 0])


# ---------------------------------------------------------------------------
# The harness.

def check_one(ab, seed, index, workdir, timeout):
    """Returns (passed, [(description, reproduce lines)], files to save)."""
    text, sig, _ = make_program(seed, index)
    rng = random.Random(common_seed(seed, index, "inputs"))
    d = os.path.join(workdir, "p%d" % index)
    os.makedirs(d, exist_ok=True)
    prog = os.path.join(d, "prog.ab")
    lowered = os.path.join(d, "prog.lowered.ab")
    with open(prog, "w") as f:
        f.write(text)
    batches = [1, rng.randint(2, 300)]
    inputs = []
    for b in batches:
        path = os.path.join(d, "inputs.b%d.json" % b)
        with open(path, "w") as f:
            json.dump(make_inputs(rng, sig, b), f)
        inputs.append(path)
    failures = []
    fallbacks = set()
    chk = common.run([ab, "check", prog, "--entry", "main", "--inputs", inputs[0]], timeout)
    if chk.rc != 0:
        failures.append(("autobatch check rejected the program (a generator bug, or the tool's): %s"
                         % common.first_line(chk.err),
                         [common.shell([ab, "check", prog, "--entry", "main", "--inputs", inputs[0]])]))
        return 0, failures, d, fallbacks
    low = common.run(common.lower_cmd(ab, prog, "main"), timeout, lowered)
    passed = 0
    for b, inp in zip(batches, inputs):
        ref_cmd = common.run_cmd(ab, "reference", prog, lowered, "main", inp, b)
        ref = common.run(ref_cmd, timeout)
        if ref.rc != 0:  # the generator promises programs without runtime errors
            failures.append(("batch %d: the reference run failed (exit %d; a generator bug, or the "
                             "tool's): %s" % (b, ref.rc, common.first_line(ref.err)), [common.shell(ref_cmd)]))
            continue
        for config in common.CONFIGS[1:]:
            if config.startswith("lowered/") and low.rc != 0:
                why = "lower failed (exit %d): %s" % (low.rc, common.first_line(low.err))
            else:
                got = common.run(common.run_cmd(ab, config, prog, lowered, "main", inp, b), timeout)
                if common.FALLBACK_NOTE in got.err:
                    fallbacks.add(config.split("/")[-1])
                why = common.compare_procs(ref, got)
            if why is None:
                passed += 1
            else:
                failures.append(("batch %d %s vs reference: %s" % (b, config, why),
                                 [common.reproduce(ab, config, prog, lowered, "main", inp, b),
                                  common.reproduce(ab, "reference", prog, lowered, "main", inp, b)]))
    return passed, failures, d, fallbacks


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--autobatch", help="the binary (default $AUTOBATCH or build/autobatch)")
    ap.add_argument("--count", "-n", type=int, default=150, help="number of programs (default 150)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", type=int, action="append", help="only program K (repeatable)")
    ap.add_argument("--print", type=int, metavar="K", help="print program K and example inputs")
    ap.add_argument("--jobs", "-j", type=int, default=common.default_jobs())
    ap.add_argument("--timeout", type=float, default=600, help="seconds per autobatch run")
    ap.add_argument("--failures", default=os.path.join(common.ROOT, "build", "differential-failures"))
    a = ap.parse_args(argv)

    if a.print is not None:
        text, sig, cost = make_program(a.seed, a.print)
        sys.stdout.write(text)
        rng = random.Random(common_seed(a.seed, a.print, "inputs"))
        print("# inputs (batch 4): %s" % json.dumps(make_inputs(rng, sig, 4)))
        print("# cost bound: %d block executions per thread" % cost)
        return 0

    ab = common.find_autobatch(a.autobatch)
    start = time.time()
    indices = a.only if a.only else list(range(a.count))
    workdir = tempfile.mkdtemp(prefix="autobatch-random-")
    for k in indices:  # what an earlier run saved for these programs is stale now
        shutil.rmtree(os.path.join(a.failures, "seed%d-prog%d" % (a.seed, k)), ignore_errors=True)
    passed = failed = 0
    fallbacks = set()
    try:
        with common.pool(a.jobs) as ex:
            futs = [(k, ex.submit(check_one, ab, a.seed, k, workdir, a.timeout)) for k in indices]
            for k, fut in futs:
                p, fails, d, fb = fut.result()
                passed += p
                failed += len(fails)
                fallbacks |= fb
                if not fails:
                    continue
                dest = os.path.join(a.failures, "seed%d-prog%d" % (a.seed, k))
                if os.path.exists(dest):
                    shutil.rmtree(dest)
                shutil.copytree(d, dest)
                shown = os.path.relpath(dest) if not os.path.relpath(dest).startswith("../..") else dest
                for why, cmds in fails:
                    print("FAIL program %d (seed %d) %s" % (k, a.seed, why.replace(d, shown)))
                    for i, c in enumerate(cmds):
                        print("     %s: %s" % ("reproduce" if i == 0 else "reference", c.replace(d, shown)))
                print("     saved in %s; regenerate with: %s --seed %d --only %d"
                      % (dest, os.path.relpath(os.path.abspath(__file__)), a.seed, k))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if fallbacks:
        print("note: %s fell back to the reference interpreter (not built yet): "
              "those comparisons test nothing new" % ", ".join("--vm " + c for c in sorted(fallbacks)))
    print("%d random programs (seed %d) in %.1fs" % (len(indices), a.seed, time.time() - start))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
