"""Card abstraction in Leduc poker: solve a coarser game, measure it in the true one.

    python experiments/abstraction.py            # 2,000 CFR+ iterations per abstraction
    python experiments/abstraction.py --quick    # 200 iterations

Each abstraction is an infoset key built from the Leduc state's fields (private
card `state.private[p]`, public card `state.public`, betting `state.rounds`; card c
has rank c // 2), passed to `jaxsolve.abstraction.abstract`, which compiles the
same histories with coarser infosets. CFR+ solves the coarse tree; its average
policy is lifted to real Leduc (every true infoset plays its bucket's row) and
evaluated there exactly. The table reports:

* coarse infosets: rows of the abstract policy (real Leduc has 936);
* exploitability in true Leduc: NashConv / 2 of the lifted policy, in chips;
  what the abstraction costs (plus the solver's own residual);
* in the abstract game: exploitability on the coarse tree, i.e. against a best
  responder who is abstracted too; it goes to zero as CFR+ converges. Reported
  only for perfect-recall abstractions, where it is exact; the imperfect-recall
  row has none (CFR still runs there, but best response on the coarse tree is not
  exact; see jaxsolve.abstraction).

Abstractions (the fine key distinguishes suits: "J1" and "J2" are different infosets):

  none                the true information states
  ranks               suits dropped (lossless: suits never matter in Leduc)
  J=Q preflop         J and Q one bucket in round 1, exact rank after the flop
                      (perfect recall: the player learns more, forgets nothing)
  J=Q                 J and Q one bucket in both rounds, public rank exact
                      (the player cannot tell a pair with a public J or Q)
  board-relative      exact rank in round 1, after the flop only pair / higher /
                      lower than the public card (imperfect recall: forgets its card)
  no private card     the private card ignored altogether

Writes results/abstraction.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings

import jax

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from machine import positive  # noqa: E402  (experiments/machine.py)
import jaxsolve  # noqa: E402
from jaxsolve import games  # noqa: E402
from jaxsolve.abstraction import abstract  # noqa: E402

RUN = jax.jit(jaxsolve.run, static_argnums=(0,))
AVERAGE = jax.jit(jaxsolve.average_policy)
EXPLOIT = jax.jit(jaxsolve.exploitability)
RANKS = "JQK"


def leduc_key(preflop, postflop):
    """An infoset key: `preflop(rank)` labels the private card before the public card
    is dealt, `postflop(rank, public_rank)` after it; the public rank and the
    betting are always kept."""
    def key(state, player):
        rank = state.private[player] // 2
        betting = "/".join("".join("fcr"[a] for a in r) for r in state.rounds)
        if state.public < 0:
            return f"p{player} {preflop(rank)} {betting}"
        public = state.public // 2
        return f"p{player} {postflop(rank, public)} public={RANKS[public]} {betting}"
    return key


def _jq(rank):
    return "JQ" if rank < 2 else "K"


def _relative(rank, public):
    return "pair" if rank == public else ("higher" if rank > public else "lower")


ABSTRACTIONS = {
    "none": None,
    "ranks": leduc_key(lambda r: RANKS[r], lambda r, pub: RANKS[r]),
    "J=Q preflop": leduc_key(_jq, lambda r, pub: RANKS[r]),
    "J=Q": leduc_key(_jq, lambda r, pub: _jq(r)),
    "board-relative": leduc_key(lambda r: RANKS[r], _relative),
    "no private card": leduc_key(lambda r: "?", lambda r, pub: "?"),
}


def run_one(name, key, solver, iterations):
    game = games.load("leduc_poker")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", jaxsolve.ImperfectRecallWarning)
        t0 = time.perf_counter()
        abs_ = abstract(game, key)  # key None: the true information states
        compile_s = time.perf_counter() - t0
    coarse = abs_.coarse
    t0 = time.perf_counter()
    state = RUN(solver, coarse, solver.init(coarse), iterations)
    policy = AVERAGE(coarse, state)
    policy.block_until_ready()
    solve_s = time.perf_counter() - t0
    true = float(EXPLOIT(abs_.fine, abs_.lift(policy)))
    in_abstract = float(EXPLOIT(coarse, policy)) if abs_.perfect_recall else None
    return {"abstraction": name, "coarse_infosets": coarse.sizes.num_infosets,
            "fine_infosets": abs_.fine.sizes.num_infosets,
            "perfect_recall": abs_.perfect_recall, "iterations": iterations,
            "exploitability_true": true, "exploitability_abstract": in_abstract,
            "compile_s": round(compile_s, 3), "solve_s": round(solve_s, 3)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="200 iterations")
    parser.add_argument("--iters", type=positive(int), default=None, help="CFR+ iterations")
    parser.add_argument("--out", default=os.path.join(ROOT, "results", "abstraction.json"),
                        help="JSON file to write (default results/abstraction.json)")
    args = parser.parse_args(argv)
    if os.path.isdir(args.out):  # refused now, not after the solves
        parser.error(f"--out {args.out} is a folder; give the JSON file's path")
    jax.config.update("jax_enable_x64", True)  # float64 from here on; importing sets nothing
    iterations = args.iters or (200 if args.quick else 2000)
    solver = jaxsolve.cfr_plus()

    rows = [run_one(name, key, solver, iterations) for name, key in ABSTRACTIONS.items()]
    header = (f"{'abstraction':<17}{'coarse infosets':>16}{'recall':>11}{'iterations':>11}"
              f"{'expl. true Leduc':>18}{'expl. abstract':>16}")
    print(f"Leduc poker, CFR+ on each abstraction, lifted to the true game "
          f"({rows[0]['fine_infosets']} infosets); exploitability = NashConv / 2, chips")
    print(header)
    print("-" * len(header))
    for r in rows:
        abstract_txt = ("n/a" if r["exploitability_abstract"] is None
                        else f"{r['exploitability_abstract']:.6f}")
        print(f"{r['abstraction']:<17}{r['coarse_infosets']:>16}"
              f"{'perfect' if r['perfect_recall'] else 'imperfect':>11}{r['iterations']:>11}"
              f"{r['exploitability_true']:>18.6f}{abstract_txt:>16}")

    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"game": "leduc_poker", "solver": solver.name, "iterations": iterations,
                   "jax_backend": jax.default_backend(), "rows": rows}, f, indent=2)
    print(f"wrote {os.path.relpath(args.out, ROOT)}")


if __name__ == "__main__":
    import jaxsolve.allocator  # a program of its own: keeps freed memory, as `jaxsolve` does
    jaxsolve.allocator.keep_freed_memory()
    main()
