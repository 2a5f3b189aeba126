"""The README's Python examples, run unchanged from the repository root."""
import contextlib
import io
import os
import re

import numpy as np

from conftest import SOURCE_DIR


def readme_python_blocks():
    text = (SOURCE_DIR / "README.md").read_text()
    section = text.split("\n## Python\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def run_block(code):
    ns, out = {}, io.StringIO()
    cwd = os.getcwd()
    os.chdir(SOURCE_DIR)
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, "README.md", "exec"), ns)
    finally:
        os.chdir(cwd)
    return ns, out.getvalue()


def test_readme_examples():
    fib, nuts, ascent = readme_python_blocks()
    ns, printed = run_block(fib)
    assert ns["out"].tolist() == [13, 21, 34, 21]
    last, steps = printed.split()
    assert last == "6765" and int(steps) == ns["res"].stats["steps"] > 0
    ns, printed = run_block(nuts)
    mean = np.array([float(v) for v in printed.strip(" []\n").split()])
    assert np.allclose(mean, ns["mu"], atol=0.08), mean
    ns, printed = run_block(ascent)
    lp = np.array([float(v) for v in printed.strip(" []\n").split()])
    assert np.allclose(lp, ns["lp"]) and np.all(np.diff(lp) > 0), lp
