"""The selection rules and Sequential Halving's schedule, on hand-made node statistics."""

import math

import jax.numpy as jnp
import numpy as np

from jaxsolve import mcts


def _view(visits, qvalues, logits, raw_value, node_value=0.0):
    """A NodeView of one node (B = 1) from per-action lists; every action legal."""
    col = lambda x: jnp.asarray(x, jnp.float32)[:, None]
    prior = jnp.exp(col(logits)) / jnp.sum(jnp.exp(col(logits)))
    return mcts.NodeView(visits=col(visits), qvalues=col(qvalues), prior_logits=col(logits),
                         prior=prior, legal=jnp.ones((len(visits), 1), bool),
                         node_visit=jnp.array([1.0 + sum(visits)], jnp.float32),
                         node_value=jnp.array([node_value], jnp.float32),
                         raw_value=jnp.array([raw_value], jnp.float32))


def test_completed_q_and_the_gumbel_interior_rule_by_hand():
    # Visits (2, 0, 1), q (0.5, -, -0.1), prior exp(logits) (1, 0.5, 0.25), raw value 0.2.
    # The unvisited action's q is the raw value mixed with the prior-weighted mean of
    # the visited q's: (0.5 - 0.025) / 1.25 = 0.38, mixed (0.2 + 3 * 0.38) / 4 = 0.335.
    # Min-max over (0.5, 0.335, -0.1) gives (1, 0.725, 0), scaled by (50 + 2) * 0.1.
    v = _view([2, 0, 1], [0.5, 0.0, -0.1], [0.0, math.log(0.5), math.log(0.25)], 0.2)
    q = np.asarray(mcts.q_completed_by_mix_value(v))[:, 0]
    np.testing.assert_allclose(q, [5.2, 5.2 * 0.435 / 0.6, 0.0], rtol=1e-6)
    # softmax(logits + q) = (0.892, 0.107, 0.001) less visits / 4 = (0.5, 0, 0.25):
    # action 0 (0.39 against 0.11 and -0.25).
    assert np.asarray(mcts.gumbel_interior_select(v)).tolist() == [0]
    # Action 0 visited 9 times of 10: the mixed value is (0.2 + 10 * 0.38) / 11 = 0.364,
    # q (5.9, 5.9 * 0.464 / 0.6, 0), softmax (0.884, 0.116, 0.001) less (9, 0, 1) / 11:
    # action 1 (0.116 against 0.066 and -0.090).
    busy = _view([9, 0, 1], [0.5, 0.0, -0.1], [0.0, math.log(0.5), math.log(0.25)], 0.2)
    assert np.asarray(mcts.gumbel_interior_select(busy)).tolist() == [1]


def test_puct_breaks_ties_by_the_lowest_action():
    # Nothing visited, a uniform prior: every score is equal, action 0 is chosen
    # (mctx would break the tie with random noise).
    v = _view([0, 0, 0], [0.0] * 3, [0.0] * 3, 0.0)
    assert np.asarray(mcts.puct_select(v)).tolist() == [0]


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
