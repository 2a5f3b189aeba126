#!/usr/bin/python3
"""Data and reference moments for the posteriordb tests (tests/sample/posteriordb/).

Reads a local git copy of posteriordb (https://github.com/stan-dev/posteriordb), with no work
tree needed: `git --git-dir=GITDIR show COMMIT:PATH`. For each posterior of POSTERIORS below:

- writes tests/sample/posteriordb/MODEL.json: the posterior's data,
  posterior_database/data/data/DATA.json.zip unzipped, unchanged (CmdStan's JSON data format,
  which `autobatch sample --data` reads);
- reads the reference draws, posterior_database/reference_posteriors/draws/draws/NAME.json.zip
  (posteriordb's: 10 chains of 1000 thinned draws from Stan), and writes, for every quantity
  in them, the mean and the sd (n - 1 denominator) of all draws pooled, and the number of draws,
  under the name autobatch gives it (0-based indices: Stan's beta[1] is beta[0]; RENAME
  below for names a translation had to change), to tests/sample/posteriordb/reference.json.

Usage (from the repository root):
  /usr/bin/python3 tools/gen_posteriordb_reference.py GITDIR [COMMIT]
Review the diff before committing. Standard library only.
"""

import io
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

# posteriordb posterior name -> the translation's name (tests/sample/posteriordb/NAME.ab).
POSTERIORS = {
    "arma-arma11": "arma11",
    "hmm_example-hmm_example": "hmm_example",
    "bball_drive_event_0-hmm_drive_0": "hmm_drive_0",
    "low_dim_gauss_mix-low_dim_gauss_mix": "low_dim_gauss_mix",
    "gp_pois_regr-gp_pois_regr": "gp_pois_regr",
    "gp_pois_regr-gp_regr": "gp_regr",
    "sblrc-blr": "sblrc_blr",
    "sblri-blr": "sblri_blr",
    "kilpisjarvi_mod-kilpisjarvi": "kilpisjarvi",
    "nes1972-nes": "nes1972",
    "mesquite-logmesquite_logvash": "logmesquite_logvash",
    "earnings-logearn_interaction_z": "logearn_interaction_z",
    "kidiq_with_mom_work-kidscore_interaction_c": "kidscore_interaction_c",
}

# Parameters a translation names differently (a declared parameter may not be named theta).
RENAME = {
    "arma-arma11": {"theta": "theta_ma"},
    "low_dim_gauss_mix-low_dim_gauss_mix": {"theta": "theta_mix"},
}

OUT = Path(__file__).resolve().parent.parent / "tests" / "sample" / "posteriordb"


def git_show(gitdir, commit, path):
    return subprocess.run(["git", "--git-dir", gitdir, "show", f"{commit}:{path}"],
                          check=True, capture_output=True).stdout


def unzip_json(blob):
    with zipfile.ZipFile(io.BytesIO(blob)) as z:
        (name,) = z.namelist()
        return z.read(name)


def autobatch_name(name, rename):
    m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)(?:\[([0-9,]+)\])?", name)
    base, idx = m.group(1), m.group(2)
    base = rename.get(base, base)
    if idx is None:
        return base
    return base + "[" + ", ".join(str(int(i) - 1) for i in idx.split(",")) + "]"


def moments(xs):
    n = len(xs)
    mean = sum(xs) / n
    var = sum((x - mean) ** 2 for x in xs) / (n - 1)
    return mean, var ** 0.5


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    gitdir = sys.argv[1]
    commit = sys.argv[2] if len(sys.argv) == 3 else "HEAD"
    commit = subprocess.run(["git", "--git-dir", gitdir, "rev-parse", commit], check=True,
                            capture_output=True, text=True).stdout.strip()
    out = {
        "_about": (
            "Made by tools/gen_posteriordb_reference.py from posteriordb "
            f"(https://github.com/stan-dev/posteriordb) commit {commit}: for each posterior, the "
            "mean and sd (n - 1 denominator) of every quantity over all reference draws pooled "
            "(posterior_database/reference_posteriors/draws/draws/NAME.json.zip), n the number "
            "of draws; names 0-based as autobatch gives them."),
    }
    for posterior, model in POSTERIORS.items():
        info = json.loads(git_show(gitdir, commit,
                                   f"posterior_database/posteriors/{posterior}.json"))
        data = unzip_json(git_show(gitdir, commit,
                                   f"posterior_database/data/data/{info['data_name']}.json.zip"))
        (OUT / f"{model}.json").write_bytes(data if data.endswith(b"\n") else data + b"\n")
        draws = json.loads(unzip_json(git_show(
            gitdir, commit,
            f"posterior_database/reference_posteriors/draws/draws/{posterior}.json.zip")))
        quantities = {}
        for name in draws[0]:
            xs = [x for chain in draws for x in chain[name]]
            mean, sd = moments(xs)
            quantities[autobatch_name(name, RENAME.get(posterior, {}))] = {
                "mean": mean, "sd": sd, "n": len(xs)}
        out[model] = {"posterior": posterior, "model": info["model_name"],
                      "data": info["data_name"], "quantities": quantities}
    (OUT / "reference.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
