"""Cross-check autobatch's .npy and JSON I/O against NumPy.

(a) NumPy writes arrays of every supported dtype (format versions 1.0, 2.0
    and 3.0); npy_tool reads them with our reader and writes them back with
    our writer; NumPy loads the copy and it must be bit-identical. The same
    files loaded as inputs and printed as output JSON must give the exact
    values.
(b) npy_tool turns JSON inputs into .npy outputs; NumPy loads them and
    compares them exactly with what Python computed from the same JSON.
(c) What NumPy writes that we do not support (big-endian, Fortran order,
    other dtypes) is rejected with a message saying what was found.

Usage: numpy_roundtrip.py NPY_TOOL WORK_DIR. Exit 0 on success, 1 on the
first mismatch, 77 (skip) without NumPy.
"""
import json
import os
import shutil
import subprocess
import sys

try:
    import numpy as np
except ImportError:
    print("numpy_roundtrip: numpy is not installed; skipping")
    sys.exit(77)

TOOL, WORK = sys.argv[1], sys.argv[2]
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def run(*args):
    return subprocess.run([TOOL, *args], capture_output=True, text=True)


def same_bits(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def from_json_value(v, dtype):
    """A nested list from our JSON (with "NaN"/"Infinity" strings) as an array."""
    def fix(x):
        if isinstance(x, list):
            return [fix(e) for e in x]
        if isinstance(x, str):
            return {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}[x]
        return x
    return np.array(fix(v), dtype=dtype)


def save(name, arr, version=None):
    path = os.path.join(WORK, name)
    if version is None:
        np.save(path, arr)
    else:
        with open(path, "wb") as f:
            np.lib.format.write_array(f, arr, version=version)
    return path


shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)

rng = np.random.default_rng(12345)
f32 = np.float32
arrays = {
    "b1": np.array([[True, False, True], [False, False, True]]),
    "i4": np.array([1, -2, 2**31 - 1, -(2**31), 0], dtype="<i4"),
    "i8": np.array([1, -2, 2**63 - 1, -(2**63), 2**53 + 1], dtype="<i8"),
    "f4": np.array([0.1, 1 / 3, -0.0, np.inf, -np.inf, np.nan, np.finfo(f32).max,
                    np.finfo(f32).tiny, 1e-45, 16777217], dtype="<f4"),
    "f8": np.array([0.1, 1 / 3, -0.0, np.inf, -np.inf, np.nan, np.finfo(float).max,
                    5e-324, 1e22, 2.0**60], dtype="<f8"),
    "f4_random": rng.standard_normal(1000).astype("<f4") * f32(1e3),
    "f8_random": rng.standard_normal((50, 4)) * 1e-5,
    "i4_3d": np.arange(24, dtype="<i4").reshape(2, 3, 4),
    "f8_0d": np.array(3.25),
    "i8_0d": np.array(-7, dtype="<i8"),
    "f8_empty": np.zeros((0, 3)),
    "b1_empty_event": np.zeros((2, 0), dtype=bool),
}

# (a) NumPy writes, we read and write back, NumPy reads.
for name, arr in arrays.items():
    for version in (None, (1, 0), (2, 0), (3, 0)):
        tag = f"{name} v{version or 'default'}"
        src = save(f"{name}_{version and version[0]}.npy", arr, version)
        dst = src + ".copy.npy"
        r = run("copy", src, dst)
        check(r.returncode == 0, f"{tag}: copy failed: {r.stderr.strip()}")
        if r.returncode != 0:
            continue
        back = np.load(dst)
        check(same_bits(arr, back), f"{tag}: copy differs: {back!r}")

    # As an input printed as output JSON: exact values, batch first.
    r = run("input", save(name + ".npy", arr))
    check(r.returncode == 0, f"{name}: input failed: {r.stderr.strip()}")
    if r.returncode == 0:
        out = json.loads(r.stdout)["outputs"][0]
        expect = arr.reshape(1) if arr.ndim == 0 else arr
        got = from_json_value(out, arr.dtype).reshape(expect.shape)
        check(same_bits(expect, got), f"{name}: JSON output differs: {r.stdout[:200]}")

# Shortest round-trip text: f32 values print by float's shortest form.
r = run("input", save("short.npy", np.array([0.1, 0.2, 3.4028235e38], dtype="<f4")))
check(r.stdout.strip() == '{"outputs": [[0.1, 0.2, 3.4028235e+38]], "names": ["out0"]}', f"f32 text: {r.stdout.strip()}")
r = run("input", os.path.join(WORK, "f4_random.npy"))
tokens = r.stdout.split("[[")[1].split("]]")[0].split(", ")
check(all(len(t.lstrip("-").replace(".", "").split("e")[0].lstrip("0")) <= 9 for t in tokens),
      "f32 output uses more than 9 significant digits")
# NumPy's own shortest f32 digits (Dragon4, unique=True) must name the same value.
theirs = [np.format_float_positional(v, unique=True, trim="0") for v in arrays["f4_random"]]
check(len(tokens) == len(theirs) and all(float(a) == float(b) for a, b in zip(tokens, theirs)),
      "f32 shortest text differs from NumPy's")

# Declared types convert: <i8 into f64 and i32, integral <f8 into i64.
r = run("input", os.path.join(WORK, "i4_3d.npy"), "f64[3,4]")
check(r.returncode == 0 and np.array_equal(np.array(json.loads(r.stdout)["outputs"][0]),
                                           arrays["i4_3d"].astype(float)), f"i4 as f64: {r.stderr}")
save("integral.npy", np.array([1.0, -2.0, 3e15]))
r = run("input", os.path.join(WORK, "integral.npy"), "i64")
check(r.stdout.strip() == '{"outputs": [[1, -2, 3000000000000000]], "names": ["out0"]}', f"f8 as i64: {r.stdout} {r.stderr}")
save("frac.npy", np.array([1.0, 2.5]))
r = run("input", os.path.join(WORK, "frac.npy"), "i64")
check(r.returncode == 1 and "2.5 is not an integer" in r.stderr and "'x'" in r.stderr, f"f8 2.5 as i64: {r.stderr}")
r = run("input", os.path.join(WORK, "i8.npy"), "i32")
check(r.returncode == 1 and "out of range for i32" in r.stderr, f"i8 as i32: {r.stderr}")

# (b) JSON in, .npy out (one file, a directory), NumPy reads.
cases = [
    ('{"p0": [1, 2, 3]}', ["i64"], [np.array([1, 2, 3], dtype="<i8")]),
    ('{"p0": [[0.1, "NaN"], ["Infinity", -0.0]]}', ["f32[2]"],
     [np.array([[0.1, np.nan], [np.inf, -0.0]], dtype="<f4")]),
    ('{"p0": [1.5, 2], "p1": [true, false], "p2": 7}', ["f64", "bool", "i32"],
     [np.array([1.5, 2.0]), np.array([True, False]), np.array([7, 7], dtype="<i4")]),
]
for k, (text, types, expected) in enumerate(cases):
    target = os.path.join(WORK, f"json{k}.npy") if len(expected) == 1 else os.path.join(WORK, f"dir{k}") + "/"
    r = run("fromjson", text, *types, target)
    check(r.returncode == 0, f"fromjson {text}: {r.stderr.strip()}")
    if r.returncode != 0:
        continue
    paths = [target] if len(expected) == 1 else [os.path.join(target, f"out{i}.npy") for i in range(len(expected))]
    for path, want in zip(paths, expected):
        check(same_bits(np.load(path), want), f"fromjson {text} -> {path}: {np.load(path)!r}")

# (c) What we reject, with the reason.
rejects = {
    "big_endian.npy": (np.array([1.0, 2.0], dtype=">f8"), "dtype '>f8' is not supported"),
    "fortran.npy": (np.asfortranarray(np.arange(6.0).reshape(2, 3)), "Fortran-order"),
    "uint8.npy": (np.array([1, 2], dtype="|u1"), "dtype '|u1' is not supported"),
    "complex.npy": (np.array([1j]), "dtype '<c16' is not supported"),
    "structured.npy": (np.zeros(2, dtype=[("a", "<f8")]), "structured dtypes are not supported"),
}
for name, (arr, message) in rejects.items():
    r = run("copy", save(name, arr), os.path.join(WORK, name + ".copy.npy"))
    check(r.returncode == 1 and message in r.stderr, f"{name}: expected '{message}', got: {r.stderr.strip()}")
    check(not os.path.exists(os.path.join(WORK, name + ".copy.npy")), f"{name}: a file was written")

if failures:
    print(f"numpy_roundtrip: {len(failures)} failure(s)")
    sys.exit(1)
print("numpy_roundtrip: all checks passed")
