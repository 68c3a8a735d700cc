"""`jaxsolve.solve_exact`, the sequence-form LP, against truths nobody here computed
with it: published game values (Kuhn 1950; Leduc as OpenSpiel and the literature give
it), Kuhn's characterisation of the second player's unique equilibrium strategy, the
closed form of a 2x2 matrix game, the independent sequence-form LP and tree walks in
tests/reference (which walk the game, not the GameTree), and CFR+'s best-response
bounds on random games.

The value bound for CFR: in a two-player zero-sum game, for any profile with
best-response values BR0 (player 0 against player 1's part) and BR1, the game value
v* and the profile's value u0 both lie in [-BR1, BR0], so |u0 - v*| <= BR0 + BR1 =
NashConv (twice the exploitability: u0 can sit at one end of the interval and v* at
the other).
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

import jaxsolve
from conftest import AVERAGE, BEST_RESPONSE_VALUES, POLICY_VALUE, RUN, builtin_tree
from jaxsolve import exact, games, sequences
from toy_games import SpecGame, chance, decision, leaf

pytest.importorskip("scipy")
try:  # tests/ is on sys.path when it is not a package (pytest's default rootdir mode)
    from reference.sequence_form_lp import best_response_value, solve_zero_sum
except ImportError:  # tests/ is a package
    from tests.reference.sequence_form_lp import (  # type: ignore[no-redef]
        best_response_value, solve_zero_sum)

# LP values and exploitability to 1e-9: float64.
pytestmark = pytest.mark.float64

ROUND_OFF = 1e-9  # HiGHS's feasibility tolerance (1e-10) and float64 sums


def _strategies(tree, policy):
    """The reference's behavioural form: per player {infoset: {action: prob}}."""
    legal, owner = np.asarray(tree.legal), np.asarray(tree.infoset_player)
    out = [{}, {}]
    for i, name in enumerate(tree.names.infosets):
        out[owner[i]][name] = {int(a): float(policy[i, a]) for a in np.nonzero(legal[i])[0]}
    return out


def _reference_nash_conv(game, tree, policy):
    """NashConv of a zero-sum profile by the reference's own best-response walks."""
    strategies = _strategies(tree, policy)
    return best_response_value(game, strategies, 0) + best_response_value(game, strategies, 1)


# ---------------------------------------------------------------- published values
def test_kuhn_value_and_the_second_players_unique_strategy():
    tree = builtin_tree("kuhn_poker")
    eq = jaxsolve.solve_exact(tree)
    assert isinstance(eq.value, float)
    assert eq.value == pytest.approx(-1 / 18, abs=1e-9)  # Kuhn 1950
    assert float(jaxsolve.exploitability(tree, eq.policy)) < 1e-9
    assert _reference_nash_conv(games.load("kuhn_poker"), tree, eq.policy) < 1e-9
    # Kuhn 1950: player 1's equilibrium strategy is unique. With the Jack it bets a
    # third of the time after a pass and folds to a bet; with the Queen it checks
    # behind and calls a bet a third of the time; with the King it always bets/calls.
    table = jaxsolve.table(tree, eq.policy)
    expected = {"p1 card=0 history=p": 1 / 3, "p1 card=0 history=b": 0.0,
                "p1 card=1 history=p": 0.0, "p1 card=1 history=b": 1 / 3,
                "p1 card=2 history=p": 1.0, "p1 card=2 history=b": 1.0}
    for infoset, bet in expected.items():
        assert table[infoset]["Bet"] == pytest.approx(bet, abs=1e-9), infoset
    # Player 0's equilibria are a family in alpha = P(bet | Jack) in [0, 1/3]: it bets
    # the King with 3 alpha and calls with the Queen after pass-bet with alpha + 1/3.
    alpha = table["p0 card=0 history="]["Bet"]
    assert -1e-9 <= alpha <= 1 / 3 + 1e-9
    assert table["p0 card=2 history="]["Bet"] == pytest.approx(3 * alpha, abs=1e-9)
    assert table["p0 card=1 history=pb"]["Bet"] == pytest.approx(alpha + 1 / 3, abs=1e-9)
    # The lean view (no history arrays) holds all the LP reads.
    lean = jaxsolve.solve_exact(tree.without_histories())
    assert lean.value == eq.value and np.array_equal(lean.policy, eq.policy)


def test_leduc_value_equals_the_published_one_and_the_reference_lp():
    tree, game = builtin_tree("leduc_poker"), games.load("leduc_poker")
    eq = jaxsolve.solve_exact(tree)
    assert eq.value == pytest.approx(-0.0856064, abs=1e-6)  # the published digits
    assert eq.value == pytest.approx(solve_zero_sum(game).value, abs=ROUND_OFF)
    assert float(jaxsolve.nash_conv(tree, eq.policy)) < 1e-9
    # Each LP's optimum is what its player's plan guarantees: they meet at the value.
    assert eq.reports[0].value == eq.value
    assert eq.reports[1].value == pytest.approx(-eq.value, abs=ROUND_OFF)
    assert all(r.iterations > 0 and "Optimal" in r.message for r in eq.reports)


def test_a_constant_sum_matrix_game_matches_the_closed_form():
    """A 2x2 game without a saddle point, payoffs (a b; c d) to the row player:
    value (ad - bc) / (a + d - b - c), the row player plays its first row with
    probability (d - c) / (a + d - b - c) and the column player its first column
    with (d - b) / (a + d - b - c). Written constant-sum (the payoffs sum to 5 at
    every terminal), which is the same game strategically."""
    a, b, c, d = 3.0, -1.0, -2.0, 4.0
    column = lambda first, second: decision(1, "column", leaf(first, 5 - first),  # noqa: E731
                                            leaf(second, 5 - second))
    game = SpecGame(decision(0, "row", column(a, b), column(c, d)), name="matrix")
    tree = jaxsolve.compile_game(game)
    eq = jaxsolve.solve_exact(tree)
    den = a + d - b - c
    assert eq.value == pytest.approx((a * d - b * c) / den, abs=1e-12)
    row, col = (tree.names.infosets.index(n) for n in ("row", "column"))
    assert eq.policy[row, 0] == pytest.approx((d - c) / den, abs=1e-12)
    assert eq.policy[col, 0] == pytest.approx((d - b) / den, abs=1e-12)
    assert eq.reports[0].value + eq.reports[1].value == pytest.approx(5.0, abs=1e-12)


def test_the_plans_are_realization_plans_of_the_policy():
    """`plan` meets the sequence-form constraints (the empty sequence 1; each infoset
    gets its parent sequence's mass) and equals the plan the policy induces
    (`sequences.realization_plan`) wherever the own player reaches."""
    tree = builtin_tree("leduc_poker")
    eq = jaxsolve.solve_exact(tree)
    sz = tree.sizes
    plan = eq.plan
    assert plan.shape == (sz.empty_sequence + 1,) and plan[-1] == 1.0
    assert np.all(plan >= -ROUND_OFF)
    mass = plan[:-1].reshape(sz.num_infosets, sz.num_actions).sum(axis=1)
    np.testing.assert_allclose(mass, plan[np.asarray(tree.infoset_parent)], atol=ROUND_OFF)
    induced = np.asarray(sequences.realization_plan(
        tree, sequences.flatten(tree, eq.policy)))
    np.testing.assert_allclose(induced, plan, atol=1e-8)


# ---------------------------------------------------------------- the catalogue's games
DOCUMENT_GAMES = [
    ("mini_maneuver", {}),
    ("maneuver_detection", {}),
    ("spoof", {"max_rounds": 1}),
    ("spoof", {"max_rounds": 3}),
    ("spoof", {"max_rounds": 4}),
    ("orbital_pursuit_evasion", {"detection": "stochastic"}),
    # 78,645 histories, compiled from the game in 11 s on 2 cores; the stochastic
    # variant covers the same code.
    pytest.param(("orbital_pursuit_evasion", {"detection": "deterministic"}),
                 marks=pytest.mark.slow),
]
# Derived by hand (tests/integration/test_small_game_equilibria.py explains each).
HAND_VALUES = {("mini_maneuver", ()): -0.5,
               ("orbital_pursuit_evasion", (("detection", "deterministic"),)): -1.0,
               ("orbital_pursuit_evasion", (("detection", "stochastic"),)): -0.8}


def _case_id(case):
    name, params = case
    return name + "".join(f"-{k}={v}" for k, v in params.items())


@pytest.mark.parametrize("case", DOCUMENT_GAMES, ids=_case_id)
def test_catalogue_games_match_the_reference_lp(case):
    name, params = case
    tree, game = builtin_tree(name, **params), games.load(name, **params)
    eq = jaxsolve.solve_exact(tree)
    assert eq.value == pytest.approx(solve_zero_sum(game).value, abs=ROUND_OFF)
    hand = HAND_VALUES.get((name, tuple(sorted(params.items()))))
    if hand is not None:
        assert eq.value == pytest.approx(hand, abs=ROUND_OFF)
    assert float(jaxsolve.nash_conv(tree, eq.policy)) < ROUND_OFF


# ---------------------------------------------------------------- random games
def _public_tree(rng, depth, player):
    """The public action tree: None at a leaf, else (player, [subtrees]). Both players
    see every action, so an infoset is (own signal, public history): perfect recall."""
    if depth == 0 or (depth < 3 and rng.random() < 0.3):
        return None
    width = int(rng.integers(2, 4))
    return player, [_public_tree(rng, depth - 1, 1 - player) for _ in range(width)]


def _deal(rng, public, signals, history=""):
    if public is None:
        u = float(rng.normal())
        return leaf(u, -u)
    player, children = public
    return decision(player, f"p{player} signal={signals[player]} public={history}",
                    *[_deal(rng, child, signals, history + str(a))
                      for a, child in enumerate(children)])


def random_game(structure: int, numbers: int) -> SpecGame:
    """A random two-player zero-sum game of imperfect information: chance deals each
    player a private signal (2 or 3 of them), then the players act in turn over a
    public tree of depth up to 4. `structure` draws the tree (and so the GameTree's
    shape and names), `numbers` the signals' probabilities and the payoffs (normal)."""
    shape = np.random.default_rng(structure)
    public = _public_tree(shape, 4, int(shape.integers(2)))
    counts = shape.integers(2, 4, size=2)
    rng = np.random.default_rng(numbers)
    probs = [rng.dirichlet(np.ones(n)) for n in counts]
    return SpecGame(chance(*[(float(p0), chance(*[(float(p1), _deal(rng, public, (s0, s1)))
                                                 for s1, p1 in enumerate(probs[1])]))
                             for s0, p0 in enumerate(probs[0])]),
                    name=f"random{structure}")


@pytest.mark.parametrize("structure", range(8))
def test_random_games_match_the_reference_lp(structure):
    game = random_game(structure, numbers=100 + structure)
    tree = jaxsolve.compile_game(game)
    eq = jaxsolve.solve_exact(tree)
    assert eq.value == pytest.approx(solve_zero_sum(game).value, abs=ROUND_OFF)
    assert _reference_nash_conv(game, tree, eq.policy) < ROUND_OFF


@pytest.mark.parametrize("numbers", [0, 1, 2])
def test_random_games_bound_cfr(numbers):
    """CFR+'s profile brackets the LP value (the bound of the module docstring). One
    tree structure with other numbers each time: the CFR loop compiles once."""
    game = random_game(structure=1, numbers=numbers)
    tree = jaxsolve.compile_game(game)
    eq = jaxsolve.solve_exact(tree)
    solver = jaxsolve.cfr_plus()
    policy = AVERAGE(tree, RUN(solver, tree, solver.init(tree), 300))
    value = float(POLICY_VALUE(tree, policy)[0])
    br = np.asarray(BEST_RESPONSE_VALUES(tree, policy))
    nash_conv = float(br.sum())  # zero-sum: the on-policy values sum to 0
    assert nash_conv < 1e-2  # the bounds below are tight enough to catch a wrong value
    assert -br[1] - ROUND_OFF <= eq.value <= br[0] + ROUND_OFF
    assert abs(value - eq.value) <= nash_conv + ROUND_OFF


# ---------------------------------------------------------------- refusals
def test_more_than_two_players_are_refused_naming_cfr():
    with pytest.raises(jaxsolve.ArgumentError,
                       match=r"^solve_exact: the game has 3 players.*jaxsolve\.run with "
                             r"jaxsolve\.cfr_plus\(\).*coarse correlated equilibrium"):
        jaxsolve.solve_exact(builtin_tree("kuhn_poker", players=3))


def test_a_general_sum_game_is_refused_naming_cfr():
    with pytest.raises(jaxsolve.ArgumentError,
                       match=r"^solve_exact: the game is general-sum.*Nash equilibrium only "
                             r"in two-player zero-sum games"):
        jaxsolve.solve_exact(builtin_tree("conjunction"))


def test_imperfect_recall_is_refused():
    # Player 0 moves twice and forgets its first move: both second decisions are "b".
    second = lambda: decision(0, "b", leaf(1, -1), leaf(0, 0))  # noqa: E731
    game = SpecGame(decision(0, "a", second(), second()), name="forgetful")
    with pytest.warns(jaxsolve.ImperfectRecallWarning):
        tree = jaxsolve.compile_game(game)
    with pytest.raises(jaxsolve.ArgumentError,
                       match=r"^solve_exact: player 0 forgets \(imperfect recall\)"):
        jaxsolve.solve_exact(tree)


def test_other_arguments_are_refused():
    kuhn = builtin_tree("kuhn_poker")
    with pytest.raises(jaxsolve.ArgumentTypeError, match="^solve_exact: expected a GameTree"):
        jaxsolve.solve_exact(games.load("kuhn_poker"))
    with pytest.raises(jaxsolve.ArgumentError,
                       match="^solve_exact: the tree has a batch axis"):
        jaxsolve.solve_exact(jaxsolve.stack([kuhn, kuhn]))


def test_without_scipy_the_error_names_the_extra(monkeypatch):
    for name in ("scipy", "scipy.optimize", "scipy.sparse"):
        monkeypatch.setitem(sys.modules, name, None)  # `import scipy...` raises ImportError
    with pytest.raises(jaxsolve.MissingDependency,
                       match=r'solve_exact needs SciPy.*pip install "jaxsolve\[exact\]"') as e:
        jaxsolve.solve_exact(builtin_tree("kuhn_poker"))
    assert isinstance(e.value, ImportError) and isinstance(e.value, jaxsolve.JaxsolveError)


def test_a_large_game_warns_and_still_solves(monkeypatch):
    monkeypatch.setattr(exact, "LARGE_SEQUENCES", 20)  # Kuhn has 2 x 13 sequences
    with pytest.warns(jaxsolve.LargeGameWarning, match="26 sequences, above 20.*cfr_plus"):
        eq = jaxsolve.solve_exact(builtin_tree("kuhn_poker"))
    assert eq.value == pytest.approx(-1 / 18, abs=1e-9)


def test_packing_a_forgetful_tree_is_refused_by_name():
    """The packed index arrays exist only where every player recalls: asking for a
    forgetful player's packing names the reason instead of failing inside JAX."""
    from jaxsolve import packing

    second = lambda: decision(0, "b", leaf(1, -1), leaf(0, 0))  # noqa: E731
    with pytest.warns(jaxsolve.ImperfectRecallWarning):
        tree = jaxsolve.compile_game(SpecGame(decision(0, "a", second(), second()),
                                              name="forgetful"))
    assert not packing.available(tree)
    with pytest.raises(jaxsolve.ArgumentError,
                       match=r"^packing: this tree has no packed sequences: player\(s\) \[0\] "
                             r"forget"):
        packing.packed(tree, 0)
