"""The sequence-form kernels: which path each tree takes, and the pieces they share.

Counterfactual values, best responses and the CFR family's step are computed from
realization plans and a backup over each player's own infoset tree: level by level
on slices where a tree's infosets are grouped by (player, own depth)
(`KernelLayout.infoset_blocks`), in passes over all infosets where they are not, and on
whole paths for a player without perfect recall. Which of these a tree takes is
pinned here, so that the OpenSpiel parity tests (test_openspiel_parity.py: Kuhn
and liar's dice grouped, Leduc not) keep covering both sequence-form paths; their
values are compared with OpenSpiel's there, and with path sums computed here in
NumPy from the tree's own paths, an independent formulation of the same sum.
"""

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsolve
from jaxsolve import sequences as seq
from jaxsolve.updates import instant_regrets
from jaxsolve import kernel, packing
from jaxsolve.tree.layout import (SLOT_COSTS, SlotCosts, block_columns, depth_groups,
                                  infoset_blocks, slot_costs)
from jaxsolve.tree.sizes import SAVED_FIELDS
from conftest import builtin_tree, pyspiel_tree
from toy_games import SpecGame, chance, decision, leaf

# Compared with NumPy's float64 sums and with a loop of steps to 1e-12: float64.
pytestmark = pytest.mark.float64


def test_parity_games_cover_both_sequence_form_paths():
    pytest.importorskip("pyspiel")
    assert pyspiel_tree("kuhn_poker").layout.infoset_blocks is not None
    assert pyspiel_tree("liars_dice", dice_sides=4).layout.infoset_blocks is not None
    assert pyspiel_tree("leduc_poker").layout.infoset_blocks is None


def test_blocks_of_grouped_and_interleaved_ids():
    # Player 0 at depths 0, 1; player 1 at depth 0: grouped in any order of groups.
    assert infoset_blocks([1, 1, 0, 0, 0], [0, 0, 0, 0, 1], 2) == (((2, 4), (4, 5)), ((0, 2),))
    # Player 0's depth-0 infosets split by player 1's: no single slice.
    assert infoset_blocks([0, 1, 0], [0, 0, 0], 2) is None
    # A player who never moves has no blocks; a batch's first game is read.
    assert infoset_blocks(np.array([[0, 0]] * 3), np.array([[0, 1]] * 3), 2) == (
        ((0, 1), (1, 2)), ())


def _numpy_path_values(tree, policy, player):
    """q[I, a] = sum over leaves z below (I, a) of chance * others' reach * u_p *
    p's own reach after (I, a), straight from the tree's per-leaf paths."""
    policy = np.asarray(policy, np.float64)
    flat = np.append(policy.reshape(-1), 1.0)
    probs = np.append(np.asarray(tree.chance_probs, np.float64).reshape(-1), 1.0)
    chance_reach = probs[np.asarray(tree.terminal_chance)].prod(axis=-1)
    paths = np.asarray(tree.terminal_sequences)
    reach = flat[paths].prod(axis=-1)  # [P, Z]
    others = chance_reach * np.prod(np.delete(reach, player, axis=0), axis=0)
    weights = others * np.asarray(tree.utilities, np.float64)[:, player]
    q = np.zeros(flat.size)
    for z, path in enumerate(paths[player]):
        for k, s in enumerate(path):
            q[s] += weights[z] * flat[path[k + 1:]].prod()
    return q[:-1].reshape(policy.shape)


@pytest.mark.parametrize("name", ["kuhn_poker", "leduc_poker"])
def test_sequence_form_values_equal_numpy_path_sums(name):
    tree = builtin_tree(name)
    rng = np.random.default_rng(0)
    legal = np.asarray(tree.legal)
    policy = rng.random(legal.shape) * legal
    policy /= policy.sum(axis=-1, keepdims=True)
    ungrouped = dataclasses.replace(tree, layout=dataclasses.replace(tree.layout,
                                                                     infoset_blocks=None))
    for player in range(tree.sizes.num_players):
        want = _numpy_path_values(tree, policy, player)
        for variant in (tree, ungrouped):
            got, _ = jaxsolve.counterfactual_values(variant, policy, player)
            np.testing.assert_allclose(np.asarray(got), want, atol=1e-12)


def test_a_forgetful_player_is_valued_on_whole_paths():
    # Player 0 moves twice and forgets its first move at the second infoset "y".
    second = decision(0, "y", leaf(2.0, -2.0), leaf(0.0, 0.0))
    game = SpecGame(chance((0.5, decision(0, "x", second, second)),
                           (0.5, decision(0, "x", leaf(1.0, -1.0), second))))
    with pytest.warns(jaxsolve.ImperfectRecallWarning):
        tree = jaxsolve.compile_game(game)
    assert tree.sizes.perfect_recall == (False, True)
    policy = np.array([[0.25, 0.75], [0.5, 0.5]])
    got, _ = jaxsolve.counterfactual_values(tree, policy, 0)
    np.testing.assert_allclose(np.asarray(got), _numpy_path_values(tree, policy, 0),
                               atol=1e-12)


def test_blocks_are_derived_again_when_a_tree_is_loaded(tmp_path):
    tree = builtin_tree("kuhn_poker")
    assert tree.layout.infoset_blocks is not None
    assert jaxsolve.GameTree.load(tree.save(tmp_path / "kuhn")).sizes == tree.sizes


def test_instant_regrets_of_equal_values_are_exactly_zero():
    # Three equal values that a different summation order left one ulp apart: CFR+
    # would otherwise make the residue a pure strategy.
    value = 0.1824417
    values = np.array([[value, np.nextafter(value, 1.0), value], [1.0, 0.0, 0.5]])
    policy = np.array([[1 / 3, 1 / 3, 1 / 3], [0.5, 0.25, 0.25]])
    regrets = np.asarray(instant_regrets(policy, values))
    assert np.all(regrets[0] == 0.0)
    # A real regret is untouched: v = 0.5 + 0 + 0.125 = 0.625.
    np.testing.assert_allclose(regrets[1], [0.375, -0.625, -0.125], atol=1e-15)


@pytest.mark.parametrize("width", [3, 65])
def test_row_reductions_equal_numpys(width):
    x = np.random.default_rng(1).normal(size=(4, width))
    np.testing.assert_allclose(np.asarray(seq.row_sum(x)), x.sum(axis=-1), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(seq.row_sum(x, keepdims=True)),
                               x.sum(axis=-1, keepdims=True), rtol=1e-12)
    np.testing.assert_array_equal(np.asarray(seq.row_max(x)), x.max(axis=-1))


def test_a_tree_without_histories_solves_and_evaluates_as_the_full_one():
    full = builtin_tree("leduc_poker")
    slim = full.without_histories()
    assert not slim.has_histories and slim.terminal_sequences is None
    # Leduc in float64: the saved arrays hold 85 bytes a history, of which the
    # history arrays hold 16 + 4 * 3 and the leaves' own paths 4 * P * L = 32 a leaf
    # (most histories are leaves); 24 are left. The derived packing adds each leaf's
    # last sequence per player (4 * P bytes a leaf) and the leaves in rows of slots
    # (4 bytes a slot, the rows of 8 holding about 1.6 slots a leaf per player):
    # about 16 more a history.
    derived = sum(np.asarray(x).nbytes for x in jax.tree_util.tree_leaves(slim.layout))
    assert jaxsolve.builders.tree_bytes(slim) - derived < full.sizes.num_nodes * 30
    assert derived < full.sizes.num_nodes * 20
    solver = jaxsolve.cfr_plus()
    ours = jaxsolve.run(solver, slim, solver.init(slim), 20)
    theirs = jaxsolve.run(solver, full, solver.init(full), 20)
    np.testing.assert_array_equal(np.asarray(ours.regrets), np.asarray(theirs.regrets))
    policy = jaxsolve.average_policy(slim, ours)
    assert float(jaxsolve.exploitability(slim, policy)) == pytest.approx(
        float(jaxsolve.exploitability(full, policy)), abs=1e-15)


def test_what_needs_histories_refuses_a_tree_without_them(tmp_path):
    slim = builtin_tree("kuhn_poker").without_histories()
    for call, where in [(lambda: slim.save(tmp_path / "t"), "GameTree.save"),
                        (lambda: jaxsolve.external_sampling().init(slim), "es-mccfr.init"),
                        (slim.chance_histories, "GameTree.chance_histories"),
                        (lambda: slim.replace(children=np.zeros((58, 3), np.int32)),
                         "GameTree.replace")]:
        with pytest.raises(jaxsolve.ArgumentError, match=where + ".*without"):
            call()


def test_a_builder_without_histories_builds_no_paths():
    full = jaxsolve.builders.goofspiel(3)
    slim = jaxsolve.builders.goofspiel(3, histories=False)
    assert slim.terminal_sequences is None and slim.node_player is None
    for field in ("terminal_last", "terminal_chance", "utilities", "infoset_parent", "legal"):
        np.testing.assert_array_equal(np.asarray(getattr(slim, field)),
                                      np.asarray(getattr(full, field)))
    assert slim.sizes == full.sizes


@pytest.mark.parametrize("solver,game", [
    ("cfr", "kuhn3"), ("cfr+", "kuhn3"), ("dcfr", "kuhn3"), ("pcfr+", "kuhn3"),
    ("cfr+", "liars"), ("pcfr+", "liars"), ("dcfr", "leduc")])
def test_runs_loop_by_player_equals_a_loop_of_steps(solver, game):
    # The kernel keeps each player's legal sequences packed (jaxsolve.kernel.steps);
    # its padded formulation (`padded_step`, for trees where a player forgets)
    # computes the same update on [I, A] rows with the leaves' own paths, so the
    # iterates agree to round-off. Three-player Kuhn: every update multiplies two
    # other players' reach. Liar's dice: infosets of one depth have 1 to 9 legal
    # actions, so the packing reorders them and packs their actions. OpenSpiel's
    # Leduc: the players' infosets interleaved in its numbering.
    pytest.importorskip("pyspiel")
    tree = {"kuhn3": lambda: pyspiel_tree("kuhn_poker", players=3),
            "liars": lambda: pyspiel_tree("liars_dice", dice_sides=4),
            "leduc": lambda: pyspiel_tree("leduc_poker")}[game]()
    assert packing.available(tree)
    solver = jaxsolve.SOLVERS[solver]()
    rule = solver.steps.keywords["rule"]
    ours = jaxsolve.run(solver, tree, solver.init(tree), 7)
    stepped, step = solver.init(tree), jax.jit(solver.step)
    for _ in range(7):  # Solver.step: the same kernel, one iteration a call
        stepped = step(tree, stepped)
    padded = jax.jit(kernel.padded_step, static_argnums=2)
    state = solver.init(tree)
    for _ in range(7):
        state = padded(tree, state, rule)
    for field in ("regrets", "average", "average_carry", "prediction", "total_weight"):
        for other in (stepped, state):
            np.testing.assert_allclose(np.asarray(getattr(ours, field)),
                                       np.asarray(getattr(other, field)), rtol=0, atol=1e-12)
    for field in ("regrets", "average", "average_carry", "prediction", "total_weight"):
        np.testing.assert_allclose(np.asarray(getattr(ours, field)),
                                   np.asarray(getattr(state, field)), rtol=0, atol=1e-12)
    assert int(ours.iteration) == 7


def test_block_columns_count_each_depths_infosets_by_legal_actions():
    legal = np.array([[1, 1, 1], [1, 0, 0], [1, 1, 0], [0, 1, 0], [1, 1, 1]], bool)
    # player 0: depth 0 holds infosets 0-2 (3, 1 and 2 legal actions), depth 1
    # infoset 3 (1); player 1: infoset 4 (3).
    groups = ((np.arange(3), np.array([3])), (np.array([4]),))
    assert block_columns(legal, groups) == (((3, 2, 1), (1,)), ((1, 1, 1),))
    assert block_columns(legal, None) is None


def test_depth_groups_take_any_numbering():
    # Players' infosets interleaved, depths out of order: the groups are the same
    # sets as a contiguous numbering's blocks would be, ids ascending.
    player, depth = [1, 0, 0, 1, 0], [0, 1, 0, 1, 0]
    groups = depth_groups(player, depth, 2)
    assert [[list(g) for g in p] for p in groups] == [[[2, 4], [1]], [[0], [3]]]
    assert infoset_blocks(player, depth, 2) is None
    assert depth_groups([0, 0], [0, 2], 1) is None  # own depth 1 missing


@pytest.mark.parametrize("game", ["liars4", "leduc"])
def test_packing_holds_each_players_legal_sequences_once(game):
    # Liar's dice with 4 sides: widths 1 to 9 at one depth. OpenSpiel's Leduc: the
    # players' infosets interleaved in the order its walk meets them.
    pytest.importorskip("pyspiel")
    tree = (pyspiel_tree("liars_dice", dice_sides=4) if game == "liars4"
            else pyspiel_tree("leduc_poker"))
    assert packing.available(tree)
    legal = np.asarray(tree.legal)
    A, empty = tree.sizes.num_actions, tree.sizes.empty_sequence
    rng = np.random.default_rng(0)
    x = rng.standard_normal(legal.shape) * legal
    groups = depth_groups(tree.infoset_player, tree.infoset_depth, 2)
    for p, player_groups in enumerate(groups):
        layout, packed = packing.layout(tree, p), packing.packed(tree, p)
        rows, flat = np.asarray(packed.rows), np.asarray(packed.sequences)
        mine = np.concatenate(player_groups)
        # every own infoset once, by depth, most legal actions first within a depth
        assert sorted(rows) == list(mine) and layout.size == legal[mine].sum()
        for depth, ids in enumerate(player_groups):
            widths = legal[rows[layout.rows(depth)]].sum(axis=1)
            assert set(rows[layout.rows(depth)]) == set(ids)
            assert (np.asarray(tree.infoset_depth)[ids] == depth).all()
            assert (np.asarray(tree.infoset_player)[ids] == p).all()
            assert list(widths) == sorted(widths, reverse=True)
        # every legal sequence of the player once
        sequences = (mine[:, None] * A + np.arange(A)).reshape(-1)
        assert sorted(flat) == sorted(sequences[legal[mine].reshape(-1)])
        # parents, ancestors and leaves name the tree's own sequences, S the empty one
        with_empty = np.append(flat, empty)
        np.testing.assert_array_equal(with_empty[np.asarray(packed.parent)],
                                      np.asarray(tree.infoset_parent)[rows])
        np.testing.assert_array_equal(with_empty[np.asarray(packed.ancestors)],
                                      np.asarray(tree.infoset_ancestors)[rows])
        np.testing.assert_array_equal(with_empty[np.asarray(packed.last)],
                                      np.asarray(tree.terminal_last)[p])
        # row sums, row maxima and their spread agree with the padded rows'
        entries = jnp.asarray(x.reshape(-1)[flat])
        np.testing.assert_allclose(np.asarray(layout.row_sum(entries)),
                                   x[rows].sum(axis=1), rtol=1e-12)
        np.testing.assert_array_equal(np.asarray(layout.row_max(entries)),
                                      np.where(legal[rows], x[rows], -np.inf).max(axis=1))
        spread = np.asarray(layout.spread(jnp.asarray(x[rows].sum(axis=1))))
        np.testing.assert_allclose(spread, x.sum(axis=1)[flat // A], rtol=1e-12)


@pytest.mark.parametrize("game", ["liars4", "kuhn3"])
def test_leaf_slots_hold_each_leaf_once_in_a_row_of_its_sequence(game):
    # Liar's dice: each sequence has the same number of leaves, one row each (no
    # scatter). Three-player Kuhn: rows of several widths, added up by sequence.
    pytest.importorskip("pyspiel")
    tree = (pyspiel_tree("liars_dice", dice_sides=4) if game == "liars4" else
            pyspiel_tree("kuhn_poker", players=3))
    num_leaves = tree.sizes.num_terminals
    assert any(k for k, _ in tree.layout.leaf_slots)
    weights = np.random.default_rng(1).standard_normal(num_leaves)
    for p in range(tree.sizes.num_players):
        slots, last = packing.slots(tree, p), np.asarray(packing.packed(tree, p).last)
        if slots is None:
            continue
        leaves = np.asarray(slots.leaves)
        rows = (np.arange(leaves.shape[1]) if slots.sequences is None
                else np.asarray(slots.sequences))
        assert sorted(leaves[leaves < num_leaves]) == list(range(num_leaves))
        for k in range(leaves.shape[0]):  # every leaf in a row of its own sequence
            held = leaves[k] < num_leaves
            np.testing.assert_array_equal(last[leaves[k][held]], rows[held])
        expected = np.zeros(packing.layout(tree, p).size + 1)
        np.add.at(expected, last, weights)
        in_slots = np.append(weights, 0.0)[leaves]
        np.testing.assert_allclose(np.asarray(packing.slot_sums(
            packing.layout(tree, p), slots, jnp.asarray(in_slots))), expected, rtol=1e-12)
    if game == "liars4":
        assert all(packing.slots(tree, p).sequences is None for p in range(2))
    else:
        assert any(packing.slots(tree, p) is not None and packing.slots(tree, p).sequences
                   is not None for p in range(3))


def test_packed_arrays_are_derived_again_and_never_saved(tmp_path):
    # A loaded tree derives the same packing; the file holds none of it; a traced
    # replace of what it is read off drops it, and the loop then steps padded.
    tree = builtin_tree("kuhn_poker")
    assert packing.available(tree)
    path = tree.save(tmp_path / "kuhn.npz")
    assert set(np.load(path).files) <= set(SAVED_FIELDS) | {"__meta__"}
    loaded = jaxsolve.GameTree.load(path)
    leaves, structure = jax.tree_util.tree_flatten(tree.layout)
    loaded_leaves, loaded_structure = jax.tree_util.tree_flatten(loaded.layout)
    assert loaded_structure == structure and len(leaves) == 7 + tree.sizes.num_players - 1
    for ours, theirs in zip(loaded_leaves, leaves):
        np.testing.assert_array_equal(ours, theirs)
    seen = []

    def traced(last):
        seen.append(packing.available(tree.replace(terminal_last=last)))
        return last

    jax.jit(traced)(tree.terminal_last)
    assert seen == [False]
    with pytest.raises(jaxsolve.ArgumentError, match="layout"):
        tree.replace(layout=tree.layout)


def test_runs_loop_by_player_with_a_player_who_never_acts():
    # Player 1 of this game never decides: its packing is empty, and the loop still
    # takes the steps of player 0, whose best action (the 3) it finds.
    tree = jaxsolve.compile_game(SpecGame(decision(0, "a", leaf(1.0, -1.0), leaf(3.0, -3.0),
                                                   leaf(2.0, -2.0))))
    assert tree.layout.block_columns == (((1, 1, 1),), ())
    solver = jaxsolve.cfr_plus()
    ours = jaxsolve.run(solver, tree, solver.init(tree), 5)
    state = solver.init(tree)
    for _ in range(5):
        state = solver.step(tree, state)
    np.testing.assert_allclose(np.asarray(ours.regrets), np.asarray(state.regrets), atol=1e-12)
    np.testing.assert_allclose(np.asarray(jaxsolve.average_policy(tree, ours))[0, 1], 1.0,
                               atol=0.1)


def test_the_slot_layout_follows_the_costs_it_is_given():
    # The CPU's measured costs give liar's dice 1x4 rows of slots; costs under which a
    # slot never pays keep every player's scatter. The iterates are the same sums
    # in another order.
    tree = jaxsolve.builders.liars_dice((1, 1), 4, histories=False)
    assert slot_costs("cpu") == SLOT_COSTS["cpu"] and slot_costs("other") == SLOT_COSTS["cpu"]
    laid = tree.with_slot_costs(SLOT_COSTS["cpu"])
    assert any(k for k, _ in laid.layout.leaf_slots)
    scattered = tree.with_slot_costs(SlotCosts(1.0, float("inf")))
    assert all(k == 0 for k, _ in scattered.layout.leaf_slots)
    assert slot_costs("gpu") == SLOT_COSTS["gpu"] and all(
        k == 0 for k, _ in tree.with_slot_costs(slot_costs("gpu")).layout.leaf_slots)
    solver = jaxsolve.cfr_plus()
    a, b = (jaxsolve.run(solver, t, solver.init(t), 6) for t in (laid, scattered))
    np.testing.assert_allclose(np.asarray(a.average), np.asarray(b.average), rtol=1e-5,
                               atol=1e-6)
    with pytest.raises(jaxsolve.ArgumentTypeError, match="with_slot_costs: costs must be"):
        tree.with_slot_costs((1.5, 0.5))
