"""Writes this folder's data from the full reference runs (see README.md): run once,
by hand, where those runs' JSON files are; the tests read only what it writes.

    python tests/reference/mmd/trim.py /path/to/ref51/data

exploitability.json: the current policy's exploitability after each of 200
iterations of the MMD authors' code (both Nash settings of their examples, on Kuhn and
Leduc poker) and of LiteEFG's MMD, each with the command, commit and settings of its
run.
"""

import json
import pathlib
import sys

HERE = pathlib.Path(__file__).parent
# (key in exploitability.json, file of the full run)
RUNS = {
    "sokota/annealing_temperature/kuhn_poker": "mmd_annealing_temperature_kuhn_poker.json",
    "sokota/annealing_temperature/leduc_poker": "mmd_annealing_temperature_leduc_poker.json",
    "sokota/moving_magnet/kuhn_poker": "mmd_moving_magnet_kuhn_poker.json",
    "sokota/moving_magnet/leduc_poker": "mmd_moving_magnet_leduc_poker.json",
    "liteefg/kuhn_poker": "liteefg_MMD_classdefault_entropy_kuhn_poker.json",
    "liteefg/leduc_poker": "liteefg_MMD_classdefault_entropy_leduc_poker.json",
}


# LiteEFG's runs name their package release, not a commit, and their meaning in the
# library's own terms (its exploitability is NashConv; the runs store NashConv / 2).
LITEEFG = {
    "repository": "github.com/liumy2010/LiteEFG, run from its PyPI release liteefg 1.0.0 "
                  "(built from the sdist)",
    "commit": "liteefg 1.0.0 (PyPI)",
    "conventions": "LiteEFG's baselines/MMD.py with its class defaults: Entropy regulariser, "
                   "eta 0.005, tau 0.05, gamma 0 (no lower bound, no floor), Q feedback "
                   "(counterfactual value / opponent and chance reach), simultaneous updates, "
                   "uniform magnet; output the current policy",
    "exploitability_meaning": "LiteEFG's exploitability (the sum over players, NashConv) "
                              "divided by 2: OpenSpiel's exploitability of the current policy",
}


def main(data: pathlib.Path) -> None:
    runs = {}
    for key, name in RUNS.items():
        ref = json.loads((data / name).read_text())
        runs[key] = {field: ref[field] for field in (
            "repository", "commit", "command", "hyperparameters", "conventions",
            "exploitability_meaning", "exploitability") if field in ref}
        if key.startswith("liteefg/"):
            runs[key].update(LITEEFG)
    record = {"exploitability_meaning": "NashConv / 2 of the CURRENT policy (the last "
              "iterate), in chips (open_spiel.python.algorithms.exploitability."
              "exploitability); entry k is after iteration k + 1", "runs": runs}
    (HERE / "exploitability.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]))
