"""Re-solving a depth with the gadgets of jaxsolve.subgames, checked against what the
papers prove and a hand-solved game.

* The coin-toss game of Brown and Sandholm (NeurIPS 2017), solved by hand below:
  unsafe re-solving of the Play subgame raises the exploitability of an equilibrium
  from 0 to 1/8; the resolve and max-margin gadgets keep it an equilibrium.
* Safety (Burch, Johanson and Bowling 2014; Moravcik et al. 2016): on Leduc poker and
  liar's dice, over ten blueprints from uniform to nearly solved, re-solving every
  public state of a depth for both players never raises the full game's NashConv by
  more than the gadgets' own bound, and that bound is small once the gadgets are
  solved. The full game's NashConv is computed on the full tree (an evaluation
  checked against OpenSpiel elsewhere), the bound from the gadget trees alone.
* The gadgets' trees: the deal is chance times p's reach; "terminate" pays o's
  counterfactual best-response value v(J), computed here by a walk in Python.
"""

import itertools

import jax
import numpy as np
import pytest

import jaxsolve
from conftest import AVERAGE, NASH_CONV, RUN, builtin_tree
from jaxsolve.protocol import CHANCE, TERMINAL
from toy_games import SpecGame, chance, decision, leaf

pytestmark = pytest.mark.float64

gadget, resolve = jaxsolve.subgames.gadget, jaxsolve.subgames.resolve


def coin_toss():
    """Brown and Sandholm's coin toss. A fair coin lands Heads or Tails; player 0 sees
    it and either sells (gets 0.5 on Heads, -0.5 on Tails) or plays; after play,
    player 1, not seeing the coin, guesses: a right guess pays player 1 one chip, a
    wrong one pays player 0. Zero-sum.

    By hand: if player 1 guesses Heads with probability q, playing is worth 1 - 2q to
    player 0 on Heads and 2q - 1 on Tails, selling 0.5 and -0.5; with q = 1/4 both are
    equal on both sides, and player 0 playing with the same probability x on both
    sides makes player 1 indifferent (each guess is right half the time). So
    (x = 1/2, q = 1/4) is an equilibrium of value 0. In the Play subgame alone (the
    blueprint's ranges: Heads and Tails equally likely) every q is optimal for player
    1; CFR from the uniform policy stays at q = 1/2 (both guesses' regrets are 0), and
    against q = 1/2 player 0 sells on Heads (0.5 > 0) and plays on Tails (0 > -0.5):
    0.25 for player 0, so the exploitability rises from 0 to 1/8."""
    def side(coin, sell):
        right, wrong = leaf(-1, 1), leaf(1, -1)
        guess = decision(1, "guess", right, wrong) if coin == "H" else \
            decision(1, "guess", wrong, right)
        return decision(0, coin, leaf(sell, -sell), guess, actions=[0, 1])
    return SpecGame(chance((0.5, side("H", 0.5)), (0.5, side("T", -0.5))), name="coin_toss")


def coin_toss_case():
    tree = jaxsolve.compile_game(coin_toss())
    names = tree.names.infosets
    blueprint = np.array([[0.25, 0.75] if n == "guess" else [0.5, 0.5] for n in names])
    states = jaxsolve.public_states(tree)
    play = next(s for s in states if s.depth == 2 and s.histories.size == 2)
    return tree, blueprint, play


def test_unsafe_resolving_makes_the_coin_toss_equilibrium_exploitable():
    tree, blueprint, play = coin_toss_case()
    assert float(NASH_CONV(tree, blueprint)) == pytest.approx(0.0, abs=1e-15)
    unsafe = resolve(tree, blueprint, depth=2, method="unsafe", iterations=200)
    guess = tree.names.infosets.index("guess")
    np.testing.assert_allclose(np.asarray(unsafe.policy)[guess], [0.5, 0.5], atol=1e-12)
    assert float(jaxsolve.exploitability(tree, unsafe.policy)) == pytest.approx(1 / 8, abs=1e-12)
    assert unsafe.nash_conv_bound is None


@pytest.mark.parametrize("method", ["resolve", "max_margin"])
def test_safe_gadgets_keep_the_coin_toss_equilibrium(method):
    """Both gadgets force q = 1/4: with the resolve gadget player 0 terminates on Heads
    (0.5) unless 1 - 2q <= 0.5 and on Tails (-0.5) unless 2q - 1 <= -0.5; max-margin
    maximises min(0.5 - (1 - 2q), -0.5 - (2q - 1)), largest (0) at q = 1/4."""
    tree, blueprint, play = coin_toss_case()
    g = gadget(tree, play, blueprint, 1, method)
    np.testing.assert_allclose(g.set_value, [0.5, -0.5], atol=1e-15)  # 1 - 2q, 2q - 1
    # chance times player 1's reach; player 0's own (1/2 for play) is left out
    np.testing.assert_allclose(g.set_reach, [0.5, 0.5], atol=1e-15)
    done = resolve(tree, blueprint, depth=2, method=method, iterations=3000, players=(1,))
    guess = tree.names.infosets.index("guess")
    assert abs(float(np.asarray(done.policy)[guess, 0]) - 0.25) < 2e-3
    rise = float(NASH_CONV(tree, done.policy)) - float(NASH_CONV(tree, blueprint))
    assert rise <= done.nash_conv_bound + 1e-12
    assert done.nash_conv_bound < 1e-3


def test_the_resolve_gadgets_tree_by_hand():
    """Kuhn poker's six deals re-solved for player 1 (o = player 0, who knows its
    card): the root deals the deals by chance times player 1's reach (1 at the root of
    the betting), player 0 then terminates or follows knowing its card, and
    "terminate" pays player 0's counterfactual best-response value of that card
    against the blueprint, per unit of reach: here the best of player 0's pure
    strategies below the card's two deals, enumerated in Python."""
    tree = builtin_tree("kuhn_poker")
    states = jaxsolve.public_states(tree)
    rng = np.random.default_rng(0)
    blueprint = rng.dirichlet([1, 1], size=tree.sizes.num_infosets)
    g = gadget(tree, states[2], blueprint, 1, "resolve")
    assert len(g.set_state) == 3  # player 0's cards
    for j, histories in enumerate(g.set_histories):
        assert g.set_reach[j] == pytest.approx(1 / 3, abs=1e-15)  # 2 deals of 1/6 each
        assert g.set_value[j] == pytest.approx(_best_pure_value(tree, blueprint, histories, 0),
                                               abs=1e-12)
    # every copied infoset is in the full game, and only player 1's are written back
    assert set(g.infosets[g.written]) == {i for i in range(tree.sizes.num_infosets)
                                           if int(tree.infoset_player[i]) == 1}
    # o's gadget decisions: one per card, "follow" or "terminate"
    own = np.flatnonzero(g.infosets < 0)
    assert [g.tree.names.actions[i][:2] for i in own] == [("follow", "terminate")] * 3


def _best_pure_value(tree, policy, histories, player):
    """The most `player` gets, averaged over `histories` (equally likely), over every
    pure strategy of its infosets below them, the other player playing `policy`."""
    node_player, index = np.asarray(tree.node_player), np.asarray(tree.node_index)
    children, legal = np.asarray(tree.children), np.asarray(tree.legal)

    def below(node):
        yield node
        for c in children[node]:
            if c >= 0:
                yield from below(int(c))

    mine = sorted({int(index[n]) for h in histories for n in below(int(h))
                   if node_player[n] == player})
    choices = [np.flatnonzero(legal[i]) for i in mine]

    def value(node, pure):
        kind = node_player[node]
        if kind == TERMINAL:
            return float(np.asarray(tree.utilities)[index[node], player])
        if kind == player:
            return value(int(children[node, pure[int(index[node])]]), pure)
        row = np.asarray(tree.chance_probs)[index[node]] if kind == CHANCE else policy[index[node]]
        return sum(row[a] * value(int(c), pure) for a, c in enumerate(children[node]) if c >= 0)

    return max(np.mean([value(int(h), dict(zip(mine, actions))) for h in histories])
               for actions in itertools.product(*choices))


def blueprints(tree, count=10):
    """`count` blueprints from bad to nearly solved: uniform, three Dirichlet draws,
    then CFR+'s average after 2, 5, 10, 30, 100 and 300 iterations (every action's
    probability above 0, so every blueprint's gadget has one structure)."""
    legal = np.asarray(tree.legal)
    rng = np.random.default_rng(1)
    out = [np.asarray(jaxsolve.uniform_policy(tree))]
    for _ in range(3):
        raw = rng.dirichlet(np.ones(legal.shape[1]), size=legal.shape[0]) * legal + 1e-3 * legal
        out.append(raw / raw.sum(axis=1, keepdims=True))
    solver = jaxsolve.cfr_plus()
    state, done = solver.init(tree), 0
    for iterations in (2, 5, 10, 30, 100, 300):
        state = RUN(solver, tree, state, iterations - done)
        done = iterations
        out.append(np.asarray(AVERAGE(tree, state)))
    return out[:count]


def _safety(tree, depth, method, iterations):
    """For ten blueprints: (NashConv before, after re-solving both players at `depth`,
    the gadgets' bound). The gadgets of one player under the ten blueprints share a
    structure: stacked, they are solved in one vmapped call."""
    chosen = jaxsolve.subgames.with_decisions(tree, depth)
    plans = blueprints(tree)
    after = [np.array(p) for p in plans]
    bound = np.zeros(len(plans))
    solver = jaxsolve.cfr_plus()
    solve_all = jax.jit(jax.vmap(lambda t: AVERAGE(t, RUN(solver, t, solver.init(t),
                                                          iterations))))
    for player in (0, 1):
        gadgets = [gadget(tree, chosen, p, player, method) for p in plans]
        solutions = solve_all(jaxsolve.stack([g.tree for g in gadgets]))
        for k, g in enumerate(gadgets):
            after[k] = np.asarray(jaxsolve.write_back(after[k], g, solutions[k]))
            bound[k] += g.nash_conv_bound(solutions[k])
    before = np.array([float(NASH_CONV(tree, p)) for p in plans])
    after = np.array([float(NASH_CONV(tree, p)) for p in after])
    return before, after, bound


@pytest.mark.parametrize("method", ["resolve", "max_margin"])
@pytest.mark.parametrize("depth", [3, 6])
def test_resolving_leduc_never_raises_nash_conv_beyond_the_bound(method, depth):
    tree = builtin_tree("leduc_poker")
    before, after, bound = _safety(tree, depth, method, iterations=500)
    assert np.all(after <= before + bound + 1e-9), (before, after, bound)
    # Leduc's payoffs span 26 chips; the gadgets solved to well under 1e-3 of that
    assert np.all(bound < 1e-3 * 26), bound
    # the six weakest blueprints (NashConv 1.2 to 5.7) gain, the four worst a tenth or more
    assert np.all(after[:6] < before[:6]) and np.all(after[:4] < 0.9 * before[:4]), \
        (before, after)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["resolve", "max_margin"])
def test_resolving_liars_dice_never_raises_nash_conv_beyond_the_bound(method):
    tree = jaxsolve.builders.liars_dice((1, 1), 6)
    before, after, bound = _safety(tree, 11, method, iterations=300)
    assert np.all(after <= before + bound + 1e-9), (before, after, bound)
    assert np.all(bound < 1e-3 * 2), bound  # payoffs +-1


def test_an_equilibrium_blueprint_stays_one():
    """Kuhn's equilibrium from the exact LP: re-solved at every depth that has
    decisions below it, by both safe gadgets, its NashConv stays within the gadgets'
    bound of 0."""
    tree = builtin_tree("kuhn_poker")
    exact = np.asarray(jaxsolve.solve_exact(tree).policy)
    assert float(NASH_CONV(tree, exact)) < 1e-9
    for method in ("resolve", "max_margin"):
        for depth in (2, 3):
            done = resolve(tree, exact, depth, method=method, iterations=2000)
            assert float(NASH_CONV(tree, done.policy)) <= done.nash_conv_bound + 1e-9
            assert done.nash_conv_bound < 1e-3 * 4  # Kuhn's payoffs span 4 chips


def test_bad_arguments_are_refused_by_name():
    tree = builtin_tree("kuhn_poker")
    states = jaxsolve.public_states(tree)
    policy = jaxsolve.uniform_policy(tree)
    with pytest.raises(jaxsolve.ArgumentError, match="^gadget: method must be one of"):
        gadget(tree, states[2], policy, 1, "maxmargin")
    with pytest.raises(jaxsolve.ArgumentError, match="leave player out"):
        gadget(tree, states[2], policy, 1, "unsafe")
    with pytest.raises(jaxsolve.ArgumentError, match="depths \\[2, 3\\]"):
        gadget(tree, [states[2], states[3]], policy, 1)
    with pytest.raises(jaxsolve.ArgumentError, match="given twice"):
        gadget(tree, [states[3], states[3]], policy, 1)
    with pytest.raises(jaxsolve.ArgumentTypeError, match="must hold PublicStates"):
        gadget(tree, [3], policy, 1)
    three = builtin_tree("kuhn_poker", players=3)
    with pytest.raises(jaxsolve.ArgumentError, match="two-player constant-sum"):
        gadget(three, jaxsolve.public_states(three)[2], jaxsolve.uniform_policy(three), 1)
    with pytest.raises(jaxsolve.ArgumentError, match="^resolve: depth must be an integer"):
        resolve(tree, policy, 9)
    with pytest.raises(jaxsolve.ArgumentError, match="nothing to re-solve"):
        resolve(tree, policy, 5)  # terminals only
    with pytest.raises(jaxsolve.ArgumentError, match="^resolve: iterations"):
        resolve(tree, policy, 2, iterations=0)
    with pytest.raises(jaxsolve.ArgumentTypeError, match="^resolve: solver must be"):
        resolve(tree, policy, 2, solver="cfr+")
    with pytest.raises(jaxsolve.ArgumentError, match="names a player twice"):
        resolve(tree, policy, 2, players=(1, 1))
    g = gadget(tree, states[2], policy, method="unsafe")
    with pytest.raises(jaxsolve.ArgumentError, match="no bound"):
        g.nash_conv_bound(jaxsolve.uniform_policy(g.tree))
