"""Subgames as trees: the root's subgame is the game, a subgame's value is the public
state's share of the game's value (summed directly over the full tree), a deviation
inside a subgame is one in the game, and writing a subgame policy back touches only
its infosets."""

import numpy as np
import pytest

import jaxsolve
from conftest import NASH_CONV, POLICY_VALUE, pyspiel_tree, solve
from jaxsolve.protocol import CHANCE, TERMINAL
from toy_games import spread_infoset_game

pytestmark = pytest.mark.float64


def random_policy(tree, seed=0):
    """A policy with every legal action's probability away from 0 and 1 (Dirichlet
    rows), so every history is reached."""
    rng = np.random.default_rng(seed)
    legal = np.asarray(tree.legal)
    raw = rng.dirichlet(np.ones(legal.shape[1]), size=legal.shape[0]) * legal + 1e-3 * legal
    return raw / raw.sum(axis=1, keepdims=True)


def direct_sum(tree, policy, histories):
    """(the probability of reaching the public state, [P] the sum over the terminals
    below it of chance's and every player's reach times the utilities), by a walk of
    the full tree in Python, history by history."""
    player, index = np.asarray(tree.node_player), np.asarray(tree.node_index)
    children, probs = np.asarray(tree.children), np.asarray(tree.chance_probs)
    utilities = np.asarray(tree.utilities)
    inside = set(int(h) for h in histories)
    reach, total = 0.0, np.zeros(tree.sizes.num_players)
    stack = [(0, 1.0, False)]
    while stack:
        node, p, below = stack.pop()
        if node in inside:
            below = True
            reach += p
        if player[node] == TERMINAL:
            if below:
                total += p * utilities[index[node]]
            continue
        row = probs[index[node]] if player[node] == CHANCE else policy[index[node]]
        for a, child in enumerate(children[node]):
            if child >= 0:
                stack.append((int(child), p * row[a], below))
    return reach, total


def with_decisions(tree, states):
    """The public states whose subtrees hold a decision."""
    player = np.asarray(tree.node_player)
    return [s for s in range(len(states)) if (player[subtrees(tree, states[s])] >= 0).any()]


def subtrees(tree, public):
    """[N] bool: the histories in the subtrees of a public state's histories."""
    parent = np.asarray(tree.parent)
    inside = np.zeros(tree.sizes.num_nodes, bool)
    inside[public.histories] = True
    for node in range(tree.sizes.num_nodes):
        if parent[node] >= 0 and inside[parent[node]]:
            inside[node] = True
    return inside


@pytest.mark.parametrize("name", ["kuhn_poker", "leduc_poker"])
def test_the_root_public_states_subgame_is_the_game(name):
    tree = pyspiel_tree(name)
    policy = random_policy(tree)
    sub = jaxsolve.subgame(tree, jaxsolve.public_states(tree)[0], policy)
    assert sub.normalizer == 1.0 and sub.tree.sizes.num_nodes == tree.sizes.num_nodes + 1
    mine = jaxsolve.restrict_policy(policy, sub)
    np.testing.assert_allclose(POLICY_VALUE(sub.tree, mine), POLICY_VALUE(tree, policy),
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(NASH_CONV(sub.tree, mine), NASH_CONV(tree, policy),
                               rtol=0, atol=1e-12)


def kuhn_and_leduc_states():
    """Every Kuhn public state with a decision below it, and in Leduc the largest such
    state of every other depth from the first bet on (each subgame compiles once)."""
    cases = []
    for name in ("kuhn_poker", "leduc_poker"):
        tree = pyspiel_tree(name)
        states = jaxsolve.public_states(tree)
        chosen = with_decisions(tree, states)
        if name == "leduc_poker":
            by_depth = {}
            for s in chosen:
                best = by_depth.get(states[s].depth)
                if best is None or states[s].histories.size > states[best].histories.size:
                    by_depth[states[s].depth] = s
            chosen = [by_depth[d] for d in (3, 5, 7, 9)]
        cases += [(name, s) for s in chosen]
    return cases


@pytest.mark.parametrize("name,state", kuhn_and_leduc_states())
def test_subgame_value_is_the_public_states_share_of_the_games_value(name, state):
    """Under the blueprint restricted to it, the subgame's value times the reach of its
    public state is the game's sum over the public state's terminals of chance's
    reach times both players' reaches times the utilities; and a best response inside
    the subgame is a deviation in the game at infosets that lie wholly inside it, so
    it gains the game `normalizer` times as much: the subgame's NashConv times the
    normalizer is at most the game's."""
    tree = pyspiel_tree(name)
    policy = random_policy(tree, seed=state)
    public = jaxsolve.public_states(tree)[state]
    sub = jaxsolve.subgame(tree, public, policy)
    reach, total = direct_sum(tree, policy, public.histories)
    assert sub.normalizer == pytest.approx(reach, rel=1e-12)
    mine = jaxsolve.restrict_policy(policy, sub)
    np.testing.assert_allclose(np.asarray(POLICY_VALUE(sub.tree, mine)) * sub.normalizer, total,
                               rtol=1e-10, atol=1e-14)
    bound = float(NASH_CONV(tree, policy))
    assert float(NASH_CONV(sub.tree, mine)) * sub.normalizer <= bound + 1e-12
    # the root deals the public state's histories by their reach
    deal = np.asarray(sub.tree.chance_probs)[0, :public.histories.size]
    np.testing.assert_allclose(deal, sub.chance_reach * sub.reach.prod(axis=1) / reach,
                               rtol=1e-12)
    assert np.array_equal(sub.nodes[1:public.histories.size + 1], public.histories)


@pytest.mark.parametrize("name,iterations", [("kuhn_poker", 2000), ("leduc_poker", 300)])
def test_resolving_against_an_equilibrium_blueprint(name, iterations):
    """With a near-equilibrium blueprint: its restriction is near-equilibrium in the
    subgame (the NashConv bound above); re-solving the subgame with CFR+ reaches a
    value within both policies' NashConv of the restriction's (any two profiles of a
    two-player zero-sum game have values within the sum of their NashConvs); writing
    the result back changes the subgame's infosets only; writing back the blueprint's
    own restriction gives the blueprint exactly."""
    tree = pyspiel_tree(name)
    solver = jaxsolve.cfr_plus()
    blueprint = np.asarray(jaxsolve.average_policy(tree, solve(solver, tree, iterations)))
    full_nash_conv = float(NASH_CONV(tree, blueprint))
    public = _pick(tree, jaxsolve.public_states(tree), name)
    sub = jaxsolve.subgame(tree, public, blueprint)
    restricted = jaxsolve.restrict_policy(blueprint, sub)
    assert np.array_equal(np.asarray(jaxsolve.write_back(blueprint, sub, restricted)), blueprint)
    restricted_nash_conv = float(NASH_CONV(sub.tree, restricted))
    assert restricted_nash_conv * sub.normalizer <= full_nash_conv + 1e-12
    resolved = jaxsolve.average_policy(sub.tree, solve(solver, sub.tree, iterations))
    resolved_nash_conv = float(NASH_CONV(sub.tree, resolved))
    assert resolved_nash_conv < 1e-2
    gap = abs(float(POLICY_VALUE(sub.tree, resolved)[0] - POLICY_VALUE(sub.tree, restricted)[0]))
    assert gap <= resolved_nash_conv + restricted_nash_conv + 1e-12
    full = np.asarray(jaxsolve.write_back(blueprint, sub, resolved))
    outside = np.setdiff1d(np.arange(tree.sizes.num_infosets), sub.infosets)
    assert np.array_equal(full[outside], blueprint[outside])
    np.testing.assert_array_equal(full[sub.infosets], np.asarray(resolved))


def _pick(tree, states, name):
    """Kuhn: player 1 holding the jack, facing a bet (its one infoset "0b"). Leduc: the
    state where round 2 opens after check-check with the first public card."""
    names = tree.names.infosets
    for s in range(len(states)):
        infosets = [names[i] for p in states[s].infosets for i in p]
        if name == "kuhn_poker" and infosets == ["0b"]:
            return states[s]
        if (name == "leduc_poker" and len(infosets) == 5 and
                all("[Public: 0]" in i and "[Round1: 1 1][Round2: ]" in i for i in infosets)):
            return states[s]
    raise AssertionError("state not found")


def test_subgame_trees_pass_the_checks_of_a_saved_tree(tmp_path):
    """The file reader checks that the arrays describe one game (histories, infoset
    parents, terminal paths); every subgame of Leduc with a decision passes."""
    tree = pyspiel_tree("leduc_poker")
    states = jaxsolve.public_states(tree)
    policy = random_policy(tree)
    for depth in range(len(states.counts)):
        for s in range(states.state_offsets[depth], states.state_offsets[depth + 1], 97):
            try:
                sub = jaxsolve.subgame(tree, states[s], policy)
            except jaxsolve.ArgumentError as e:
                assert "no decision" in str(e)
                continue
            loaded = jaxsolve.GameTree.load(sub.tree.save(tmp_path / f"{s}.npz"))
            assert loaded.sizes == sub.tree.sizes


def test_blueprints_change_only_the_deal():
    """A history the blueprint never reaches keeps its subtree, dealt with probability
    0: two blueprints give trees of one structure (one compilation serves both)."""
    tree = pyspiel_tree("kuhn_poker")
    states = jaxsolve.public_states(tree)
    public = states[states.state_offsets[2]]  # the six deals
    names = tree.names.infosets
    never_jack = random_policy(tree)
    never_jack[names.index("0")] = [1.0, 0.0]  # holding the jack, player 0 never bets
    a = jaxsolve.subgame(tree, public, random_policy(tree))
    b = jaxsolve.subgame(tree, public, never_jack)
    assert a.tree.sizes == b.tree.sizes and a.tree.names == b.tree.names
    assert jaxsolve.stack([a.tree, b.tree]).chance_probs.shape[0] == 2  # a batch of two
    for field in ("node_player", "children", "infoset_parent", "terminal_sequences"):
        assert np.array_equal(getattr(a.tree, field), getattr(b.tree, field)), field
    # nothing above the deals is a player's: the deal is chance's 1/6 each
    np.testing.assert_allclose(np.asarray(b.tree.chance_probs)[0, :6], 1 / 6)
    after_bet = [states[s] for s in range(states.state_offsets[3], states.state_offsets[4])
                 if names.index("0b") in states[s].infosets[1]][0]  # player 1: jack, bet
    reached = jaxsolve.subgame(tree, after_bet, never_jack)
    assert float(np.asarray(reached.tree.chance_probs)[0].sum()) == pytest.approx(1.0)


def test_refusals():
    tree = pyspiel_tree("kuhn_poker")
    states = jaxsolve.public_states(tree)
    policy = jaxsolve.uniform_policy(tree)
    with pytest.raises(jaxsolve.ArgumentTypeError, match="^subgame: public_state must be"):
        jaxsolve.subgame(tree, 3, policy)
    terminals = states[states.state_offsets[5]]
    with pytest.raises(jaxsolve.ArgumentError, match="no decision"):
        jaxsolve.subgame(tree, terminals, policy)
    never_bets = np.asarray(policy).copy()
    for i, name in enumerate(tree.names.infosets):
        if name in ("0", "1", "2"):
            never_bets[i] = [1.0, 0.0]
    after_bet = states[states.state_offsets[3] + 1]
    with pytest.raises(jaxsolve.ArgumentError, match="never reaches"):
        jaxsolve.subgame(tree, after_bet, never_bets)
    leduc = jaxsolve.public_states(pyspiel_tree("leduc_poker"))
    with pytest.raises(jaxsolve.ArgumentError, match="another tree"):
        jaxsolve.subgame(tree, leduc[leduc.state_offsets[8]], policy)
    spread = jaxsolve.compile_game(spread_infoset_game())
    spread_states = jaxsolve.public_states(spread)
    opened = [spread_states[s] for s in range(len(spread_states)) if not spread_states.closed[s]]
    with pytest.raises(jaxsolve.ArgumentError, match="not closed"):
        jaxsolve.subgame(spread, opened[0], jaxsolve.uniform_policy(spread))
    sub = jaxsolve.subgame(tree, states[0], policy)
    with pytest.raises(jaxsolve.ArgumentError, match="^write_back: policy has shape"):
        jaxsolve.write_back(policy, sub, policy[:3])
    with pytest.raises(jaxsolve.ArgumentTypeError, match="^write_back: cut must be"):
        jaxsolve.write_back(policy, sub.tree, policy)
