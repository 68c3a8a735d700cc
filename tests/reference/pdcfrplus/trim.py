"""Writes this folder's data from the full reference runs (see README.md): run once,
by hand, where those runs' JSON files are; the tests read only what it writes.

    python tests/reference/pdcfrplus/trim.py /path/to/ref51/data

exploitability.json: the curves the tests compare (Kuhn: 200 iterations; Leduc:
PDCFR+ 150, DCFR+ 50). dcfr_plus_leduc_states.npz: DCFR+'s state on Leduc after
iterations 100, 101, 199 and 200, in jaxsolve's row order of the built-in Leduc poker
(the reference keys its infosets by OpenSpiel's strings: they are matched to the rows
of `compile_game(pyspiel.load_game("leduc_poker"))`, whose rows and action columns
this script checks to be the built-in game's).
"""

import json
import pathlib
import sys

import jax
import numpy as np
import pyspiel

jax.config.update("jax_enable_x64", True)

import jaxsolve  # noqa: E402
from jaxsolve import games  # noqa: E402

HERE = pathlib.Path(__file__).parent
CURVES = {("pdcfr_plus", "kuhn_poker"): 200, ("dcfr_plus", "kuhn_poker"): 200,
          ("pdcfr_plus", "leduc_poker"): 150, ("dcfr_plus", "leduc_poker"): 50}
CHECKPOINTS = ("100", "101", "199", "200")


def curves(data: pathlib.Path) -> None:
    runs = {}
    for (variant, game), n in CURVES.items():
        ref = json.loads((data / f"{variant}_{game}.json").read_text())
        runs[f"{variant}/{game}"] = {
            "command": ref["command"], "hyperparameters": ref["hyperparameters"],
            "conventions": ref["conventions"], "exploitability": ref["exploitability"][:n]}
        repository, commit = ref["repository"], ref["commit"]
    record = {"repository": repository, "commit": commit,
              "exploitability_meaning": "NashConv / 2 of the average policy, in chips "
              "(open_spiel.python.algorithms.exploitability.exploitability); entry k is "
              "after iteration k + 1", "runs": runs}
    (HERE / "exploitability.json").write_text(json.dumps(record, indent=1) + "\n")


def states(data: pathlib.Path) -> None:
    ref = json.loads((data / "states_dcfr_plus_leduc_poker.json").read_text())
    theirs = jaxsolve.compile_game(pyspiel.load_game("leduc_poker"))
    ours = jaxsolve.compile_game(games.load("leduc_poker"))
    for field in ("legal", "infoset_player", "infoset_parent"):
        assert np.array_equal(np.asarray(getattr(theirs, field)), np.asarray(getattr(ours, field)))
    solver = jaxsolve.dcfr_plus()
    a, b = (jaxsolve.run(solver, t, solver.init(t), 20) for t in (theirs, ours))
    assert np.array_equal(np.asarray(a.regrets), np.asarray(b.regrets))
    row = {name: i for i, name in enumerate(theirs.names.infosets)}
    shape = np.shape(ours.legal)
    out = {"infosets": np.asarray(ours.names.infosets), "legal": np.asarray(ours.legal),
           "n_histories": np.zeros(shape[0], np.int32)}
    for k in CHECKPOINTS:
        snap = ref["checkpoints"][k]
        regrets, cum = np.zeros(shape), np.zeros(shape)
        for entry in snap["infosets"]:
            i = row[entry["key"]]
            assert list(np.flatnonzero(out["legal"][i])) == entry["actions"]
            regrets[i, entry["actions"]] = entry["regrets"]
            cum[i, entry["actions"]] = entry["cum_policy"]
            out["n_histories"][i] = entry["n_histories"]
        out[f"regrets_{k}"], out[f"cum_policy_{k}"] = regrets, cum
        out[f"exploitability_{k}"] = np.float64(snap["exploitability"])
    np.savez_compressed(HERE / "dcfr_plus_leduc_states.npz", **out)


if __name__ == "__main__":
    curves(pathlib.Path(sys.argv[1]))
    states(pathlib.Path(sys.argv[1]))
