"""The full-width solvers' exploitability after a fixed number of iterations.

    python experiments/cfr_variants.py --publish   # results/cfr_variants.json
    python experiments/cfr_variants.py --quick     # Kuhn only, 10 and 100 iterations

Each built-in solver of the CFR family, with its default settings, runs on Kuhn and
Leduc poker from `init`; after each checkpoint (100 and 1000 iterations) the report
holds `jaxsolve.exploitability` of the average policy (of the current policy for
`mmd`, a last-iterate method). Float32, as users run it. The
figures are no timing: the same code on the same numbers gives them again, so they
move only when a solver's arithmetic changes (Choosing a solver shows the table).

Results go to results/local/cfr_variants.json (`--publish`: results/cfr_variants.json;
`--quick`: results/cfr_variants_quick.json, ignored by git; `--out` wins over all).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import machine
import jaxsolve
from jaxsolve import games

SOLVERS = ("cfr_plus", "dcfr", "pcfr_plus", "dcfr_plus", "pdcfr_plus", "sapcfr_plus", "mmd")
GAMES = {"kuhn_poker": "Kuhn", "leduc_poker": "Leduc"}
CHECKPOINTS = (100, 1000)
QUICK = {"games": ("kuhn_poker",), "checkpoints": (10, 100)}


def exploitability_at(solver, tree, checkpoints) -> dict[str, float]:
    """{iterations: exploitability} at each checkpoint of one run: of the average policy,
    or of the current one for a last-iterate solver (`mmd`), whose current policy is
    what converges."""
    state, done, out = solver.init(tree), 0, {}
    for n in checkpoints:
        state = jaxsolve.run(solver, tree, state, n - done)
        done = n
        policy = (jaxsolve.current_policy(tree, state, solver) if solver.last_iterate
                  else jaxsolve.average_policy(tree, state))
        out[str(n)] = float(jaxsolve.exploitability(tree, policy))
    return out


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="Kuhn only, 10 and 100 iterations")
    parser.add_argument("--out", default=None, help="report path")
    machine.add_publish_option(parser)
    args = parser.parse_args(argv)
    machine.refuse_published_smoke_run(parser, args)
    names = QUICK["games"] if args.quick else tuple(GAMES)
    checkpoints = QUICK["checkpoints"] if args.quick else CHECKPOINTS
    results = {}
    for name in names:
        tree = jaxsolve.compile_game(games.load(name))
        results[name] = {"label": GAMES[name], "solvers": {}}
        for solver_name in SOLVERS:
            values = exploitability_at(getattr(jaxsolve, solver_name)(), tree, checkpoints)
            results[name]["solvers"][solver_name] = values
            print(f"{name:<12} {solver_name + '()':<14}"
                  + "".join(f" {n:>6}: {v:.2e}" for n, v in values.items()), flush=True)
    report = {"command": " ".join(["python experiments/cfr_variants.py", *(argv or sys.argv[1:])]),
              "date": time.strftime("%Y-%m-%d"), "machine": machine.machine_info(),
              "quick": args.quick, "checkpoints": list(checkpoints), "games": results}
    smoke = machine.RESULTS / "cfr_variants_quick.json" if args.quick else None
    path = machine.report_path("cfr_variants.json", args.out, args.publish, smoke)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1))
    print(f"written: {machine.where_written(path)}")
    return report


if __name__ == "__main__":
    main()
