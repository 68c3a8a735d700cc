"""The selection rules and Sequential Halving's schedule, on hand-made node statistics."""

from jaxsolve import mcts


def test_gumbel_waves_plan():
    # By hand from Sequential Halving (Karnin et al.; mctx's table) with m = 9 considered
    # actions and 32 simulations: ceil(log2 9) = 4 phases; phase 1 visits all 9 once
    # (9 unvisited actions, 9 simulations: one wave); phase 2 keeps 4 and gives each 2
    # visits: the first round picks 4 of the 9 once-visited actions one by one (each
    # pick sees the values the last backed up), the second round visits those same 4
    # (one wave of 4); then 2 survive: 2 picks out of the 4, then 6 rounds of both
    # (waves of 2) and one last simulation, 9 + 4 + 4 + 2 + 12 + 1 = 32.
    assert mcts.gumbel_waves(16, 32, 9) == ((9, 1), (1, 4), (4, 1), (1, 2), (2, 6), (1, 1))
    # m = 8: the same, with 7 rounds of pairs.
    assert mcts.gumbel_waves(16, 32, 8) == ((8, 1), (1, 4), (4, 1), (1, 2), (2, 7))
    # m = 2: every round visits both; m <= 1: one action, one simulation at a time.
    assert mcts.gumbel_waves(16, 32, 2) == ((2, 16),)
    assert mcts.gumbel_waves(16, 32, 1) == mcts.gumbel_waves(16, 32, 0) == ((1, 32),)
    for n in (1, 7, 32, 100):
        for m in range(17):
            plan = mcts.gumbel_waves(16, n, m)
            assert sum(w * c for w, c in plan) == n
            assert max(w for w, _ in plan) <= max(m, 1)
