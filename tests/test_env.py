"""The environment view of a GameTree, on Spoof played as a two-agent environment:
a random initial arrangement from the key, turns passing Player 0 (toggle) -> Player 1
(keep/swap) -> Player 0 ..., per-player observations, rewards at the end, many games
at once under vmap; checked against the protocol game stepped in Python."""

import jax
import numpy as np
import pytest

import jaxsolve
from jaxsolve import env, games
from jaxsolve.protocol import TERMINAL
from conftest import builtin_tree
from toy_games import SpecGame, chance, decision, leaf

GAME = games.load("spoof", shuffle_initial=True)
TREE = jaxsolve.compile_game(GAME)
INIT = jax.jit(env.init)
STEP = jax.jit(env.step)
ROLLOUTS = jax.jit(jax.vmap(env.rollout, in_axes=(None, 0)))


def depth_one_ancestor(tree, nodes):
    """[B] nodes -> their ancestors at depth 1 (the node after the first chance move)."""
    nodes, parent, start = np.asarray(nodes), np.asarray(tree.parent), tree.sizes.level_offsets[2]
    while (nodes >= start).any():
        nodes = np.where(nodes >= start, parent[nodes], nodes)
    return nodes


def test_spoof_step_by_step_matches_the_protocol_game():
    rng = np.random.default_rng(0)
    for seed in range(12):
        key, first = jax.random.split(jax.random.key(seed))
        state = INIT(TREE, first)
        start = env.history(TREE, state)
        assert len(start) == 1  # chance placed the tail; Player 0 is to move
        py = GAME.new_initial_state()
        py.apply_action(start[0])
        known, movers, actions = [None, None], [], []
        while not bool(state.terminated):
            cp = int(state.current_player)
            assert cp == py.current_player()
            legal = np.nonzero(np.asarray(state.legal_action_mask))[0].tolist()
            assert legal == py.legal_actions() == ([0, 1, 2] if cp == 0 else [0, 1])
            known[cp] = py.information_state_string(cp)  # what the mover knows now
            for p in range(2):  # each player sees its own latest infoset, nothing newer
                o = int(env.observe(TREE, state, p))
                assert (o == -1) if known[p] is None else TREE.names.infosets[o] == known[p]
            action = int(rng.choice(legal))
            movers.append(cp)
            actions.append(action)
            py.apply_action(action)
            key, sub = jax.random.split(key)
            state = STEP(TREE, state, action, sub)
        assert py.is_terminal() and int(state.current_player) == TERMINAL
        assert movers == [i % 2 for i in range(len(movers))]  # turns alternate from Player 0
        assert int(state.step_count) == len(movers) and not bool(state.illegal_action)
        assert env.history(TREE, state) == start + actions
        np.testing.assert_array_equal(np.asarray(state.rewards), py.returns())
        assert "terminated; rewards" in env.describe(TREE, state)


def key_with_tail(tail):
    """A key whose initial arrangement has the tail at `tail`."""
    return next(k for k in map(jax.random.key, range(100))
                if env.history(TREE, INIT(TREE, k)) == [tail])


def test_spoof_player0_is_told_the_true_number_of_heads():
    # Tail at 0: THH. Toggle 2: THT (1 head). Swap 0 and 1: HTT. Toggle 1: HHT (2
    # heads). Keep. Player 0 must have been told 1 and then 2 heads.
    state = INIT(TREE, key_with_tail(0))
    for a in (2, 1, 1, 0):
        state = STEP(TREE, state, a, jax.random.key(0))
    assert int(state.current_player) == 0
    assert TREE.names.infosets[int(env.observe(TREE, state, 0))] == "p0 t2:1 t1:2"


def test_many_games_at_once_under_vmap():
    keys = jax.random.split(jax.random.key(42), 1000)
    final = ROLLOUTS(TREE, keys)
    nodes = np.asarray(final.node)
    # Every game finished at a terminal, by legal moves, with that terminal's utilities.
    assert np.asarray(final.terminated).all() and not np.asarray(final.illegal_action).any()
    assert (np.asarray(TREE.node_player)[nodes] == TERMINAL).all()
    expected = np.asarray(TREE.utilities)[np.asarray(TREE.node_index)[nodes]]
    np.testing.assert_array_equal(np.asarray(final.rewards), expected)
    depth = np.searchsorted(TREE.sizes.level_offsets, nodes, side="right") - 1
    np.testing.assert_array_equal(np.asarray(final.step_count), depth - 1)  # one chance move
    assert set(np.unique(expected[:, 0])) == {-1.0, 0.0, 1.0}  # wins, losses and draws
    # The initial arrangements (the tail's position) are uniform over the three. With
    # fixed keys the test is deterministic; 13.8 is the chi-square (2 degrees of
    # freedom) value a fair sampler exceeds with probability 0.001, while one that
    # ignored an arrangement would score about 500.
    tails = np.asarray(TREE.parent_action)[depth_one_ancestor(TREE, nodes)]
    counts = np.bincount(tails, minlength=3)
    chi2 = ((counts - 1000 / 3) ** 2 / (1000 / 3)).sum()
    assert counts.sum() == 1000 and chi2 < 13.8, counts
    # A few of the batch replayed in the protocol game give the same returns.
    for i in range(0, 1000, 97):
        one = jax.tree.map(lambda x: x[i], final)
        py = GAME.new_initial_state()
        for a in env.history(TREE, one):
            py.apply_action(a)
        assert py.is_terminal() and py.returns() == np.asarray(one.rewards).tolist()


def test_jit_does_not_recompile_for_a_second_batch():
    traces = []

    def rollouts(tree, keys):
        traces.append(1)  # runs only while tracing
        return jax.vmap(env.rollout, in_axes=(None, 0))(tree, keys)
    run = jax.jit(rollouts)
    a = run(TREE, jax.random.split(jax.random.key(1), 256))
    b = run(TREE, jax.random.split(jax.random.key(2), 256))
    doubled = run(TREE.replace(utilities=np.asarray(TREE.utilities) * 2),
                  jax.random.split(jax.random.key(1), 256))  # same sizes: same program
    assert len(traces) == 1
    assert not np.array_equal(np.asarray(a.node), np.asarray(b.node))
    np.testing.assert_array_equal(np.asarray(doubled.rewards), 2 * np.asarray(a.rewards))


def test_batched_states_step_like_single_ones():
    keys = jax.random.split(jax.random.key(3), 8)
    states = jax.vmap(INIT, in_axes=(None, 0))(TREE, keys)
    actions = jax.vmap(env.random_legal_action)(keys, states)
    batched = jax.jit(jax.vmap(env.step, in_axes=(None, 0, 0, 0)))(TREE, states, actions, keys)
    for i in range(8):
        one = STEP(TREE, jax.tree.map(lambda x: x[i], states), actions[i], keys[i])
        for got, want in zip(batched, one):
            np.testing.assert_array_equal(np.asarray(got[i]), np.asarray(want))
    assert env.observation_one_hot(TREE, batched).shape == (8, 2, TREE.num_infosets)
    one_hot = np.asarray(env.observation_one_hot(TREE, jax.tree.map(lambda x: x[0], batched)))
    observed = np.asarray(batched.observation[0])
    expected = np.where((observed >= 0)[:, None], np.eye(TREE.num_infosets)[observed], 0.0)
    np.testing.assert_array_equal(one_hot, expected)  # a zero row for "nothing yet" (-1)


@pytest.mark.parametrize("first_toggle, action", [(True, 2), (False, 7), (False, -1)])
def test_illegal_actions_end_the_game_with_a_penalty(first_toggle, action):
    # Player 1 (after Player 0's toggle) has only Keep 0 and Swap 1, so 2 is illegal
    # there; 7 and -1 are outside the action range anywhere.
    state = INIT(TREE, jax.random.key(0))
    if first_toggle:  # toggle a head (not the tail): one head left, the game goes on
        tail = env.history(TREE, state)[0]
        state = STEP(TREE, state, (tail + 1) % 3, jax.random.key(1))
        assert int(state.current_player) == 1
    mover = int(state.current_player)
    bad = STEP(TREE, state, action, jax.random.key(2))
    assert bool(bad.terminated) and bool(bad.illegal_action)
    assert int(bad.node) == int(state.node) and int(bad.current_player) == TERMINAL
    assert np.asarray(bad.rewards).tolist() == [-1.0 if p == mover else 1.0 for p in range(2)]
    assert not np.asarray(bad.legal_action_mask).any()
    again = STEP(TREE, bad, 0, jax.random.key(3))  # a terminated state does not move
    for got, want in zip(again, bad):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_chance_inside_the_game_is_sampled_with_its_probabilities():
    # Player 0 moves, then chance picks 0 w.p. 0.2 or 1 w.p. 0.8 before Player 1.
    after = lambda: chance((0.2, decision(1, "a", leaf(1, -1), leaf(0, 0))),  # noqa: E731
                           (0.8, decision(1, "b", leaf(-1, 1), leaf(2, -2))))
    tree = jaxsolve.compile_game(SpecGame(decision(0, "root", after(), after())))
    keys = jax.random.split(jax.random.key(5), 4000)
    start = jax.vmap(env.init, in_axes=(None, 0))(tree, keys)
    moved = jax.jit(jax.vmap(env.step, in_axes=(None, 0, None, 0)))(tree, start, 1, keys)
    assert (np.asarray(moved.current_player) == 1).all()
    # Binomial(4000, 0.8): mean 3200, sd about 25; allow 5 sd.
    b_count = sum(tree.names.infosets[o] == "b" for o in np.asarray(moved.observation[:, 1]))
    assert abs(b_count - 3200) < 127, b_count
    assert "player 1 to move" in env.describe(tree, jax.tree.map(lambda x: x[0], moved))


def test_every_game_ends_with_its_terminal_utilities_on_leduc():
    tree = jaxsolve.compile_game(games.load("leduc_poker"))  # chance mid-game: the board
    final = ROLLOUTS(tree, jax.random.split(jax.random.key(7), 500))
    nodes = np.asarray(final.node)
    assert np.asarray(final.terminated).all()
    assert (np.asarray(tree.node_player)[nodes] == TERMINAL).all()
    np.testing.assert_array_equal(np.asarray(final.rewards),
                                  np.asarray(tree.utilities)[np.asarray(tree.node_index)[nodes]])


def test_a_state_of_another_game_or_a_player_out_of_range_is_refused():
    # Unchecked, a Leduc state stepped on Kuhn would fail in a broadcast inside JAX,
    # and observe(tree, state, 5) on a 2-player game return -1 (a clamped index).
    kuhn, leduc = builtin_tree("kuhn_poker"), builtin_tree("leduc_poker")
    state = env.init(leduc, jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match=r"^env.step: state.observation|^env.step: state.legal"):
        env.step(kuhn, env.init(builtin_tree("kuhn_poker", players=3), jax.random.PRNGKey(0)),
                 0, jax.random.PRNGKey(1))
    with pytest.raises(ValueError, match=r"^env.step: state.legal_action_mask has shape \(3,\), "
                                         r"this tree's is \(2,\)"):
        env.step(kuhn, state, 0, jax.random.PRNGKey(1))
    with pytest.raises(ValueError, match=r"^env.observe: player must be an integer in \[0, 1\] \(2 players\)"):
        env.observe(leduc, state, 5)
    with pytest.raises(TypeError, match="^env.observe: state must be an EnvState"):
        env.observe(leduc, {"node": 0}, 0)
    assert int(env.observe(leduc, state, 0)) >= 0


@pytest.mark.parametrize("action", [-0.5, 1.7, "1", True, np.array([0, 1])])
def test_an_action_that_is_not_one_integer_is_refused(action):
    """A float is not cast (-0.5 would play Pass, 1.7 Bet), nor a string accepted: a
    move nobody chose. Integers outside [0, A), even beyond int32, stay illegal moves."""
    tree = jaxsolve.compile_game(games.load("kuhn_poker"))
    state, key = env.init(tree, jax.random.PRNGKey(0)), jax.random.PRNGKey(1)
    with pytest.raises(jaxsolve.ArgumentTypeError, match="^env.step: action must be one integer"):
        env.step(tree, state, action, key)
    assert bool(env.step(tree, state, 2 ** 40, key).illegal_action)
    with pytest.raises(jaxsolve.ArgumentTypeError, match="illegal_penalty must be a finite number"):
        env.step(tree, state, 0, key, illegal_penalty="x")
