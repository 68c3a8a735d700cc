"""Information abstraction: infoset_map, lifting a coarse policy, exploitability in
the true game (jaxsolve.abstraction)."""

from __future__ import annotations

import dataclasses
import functools
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsolve
from conftest import AVERAGE, EXPLOITABILITY, POLICY_VALUE, builtin_tree, solve
from jaxsolve import games
from jaxsolve.abstraction import (Abstraction, abstract, exploitability_in_true_game,
                                  infoset_map, lift, lift_policy)


def _random_policy(tree, seed=0):
    legal = np.asarray(tree.legal)
    x = np.random.default_rng(seed).random(legal.shape) * legal
    return jnp.asarray(x / x.sum(axis=-1, keepdims=True))


# ------------------------------------------------------------------ keys
def kuhn_blind(state, player):
    """Kuhn with the private card dropped: only the player and the betting."""
    return f"p{player} " + "".join("pb"[a] for a in state._bets)


def leduc_key(bucket):
    """Leduc infosets by `bucket(rank)` of the private card; public rank and betting kept."""
    def key(state, player):
        rank = state.private[player] // 2
        public = f" public={'JQK'[state.public // 2]}" if state.public >= 0 else ""
        betting = "/".join("".join("fcr"[a] for a in r) for r in state.rounds)
        return f"p{player} {bucket(rank)}{public} {betting}"
    return key


@functools.cache
def kuhn_blind_abstraction() -> Abstraction:
    return abstract(games.load("kuhn_poker"), kuhn_blind)


@functools.cache
def leduc_jq_abstraction() -> Abstraction:
    return abstract(games.load("leduc_poker"), leduc_key(lambda r: "JQ" if r < 2 else "K"))


# ------------------------------------------------------------------ identity
def test_identity_key_gives_identity_map_and_lifting_changes_nothing():
    game = games.load("kuhn_poker")
    abs_ = abstract(game, lambda s, p: s.information_state_string(p))
    np.testing.assert_array_equal(abs_.mapping, np.arange(abs_.fine.sizes.num_infosets))
    assert abs_.mapping.dtype == np.int32
    assert abs_.coarse.names == abs_.fine.names and abs_.perfect_recall
    policy = _random_policy(abs_.fine)
    np.testing.assert_array_equal(abs_.lift(policy), policy)
    np.testing.assert_array_equal(lift_policy(abs_.coarse, abs_.fine, policy), policy)
    # Also against an independently compiled tree of the same game.
    np.testing.assert_array_equal(infoset_map(builtin_tree("kuhn_poker"), abs_.fine),
                                  np.arange(abs_.fine.sizes.num_infosets))


# ------------------------------------------------------------------ Kuhn, card-blind
def test_kuhn_card_blind_map_and_hand_derived_values():
    abs_ = kuhn_blind_abstraction()
    coarse, fine = abs_.coarse, abs_.fine
    # 12 true infosets (3 cards x 4 betting histories) collapse to the 4 histories.
    assert (coarse.sizes.num_infosets, fine.sizes.num_infosets) == (4, 12)
    assert abs_.perfect_recall  # the player never knew its card in the abstract game
    for i, name in enumerate(fine.names.infosets):
        player, _, history = name.split(" ")
        assert coarse.names.infosets[abs_.mapping[i]] == f"{player} {history[len('history='):]}"
    # Uniform lifts to uniform: OpenSpiel's exploitability of uniform Kuhn is 11/24.
    uniform = jaxsolve.uniform_policy(coarse)
    np.testing.assert_allclose(exploitability_in_true_game(abs_, uniform), 11 / 24, atol=1e-12)
    # Always bet/call, blind. Against it the best response bets or calls except with
    # the 0 card (fold / check-fold, -1 instead of -2): BR value (-1 + 0 + 2) / 3 for
    # each player, on-policy value 0, so exploitability 1/3.
    always_bet = jnp.zeros_like(uniform).at[:, 1].set(1.0)
    np.testing.assert_allclose(EXPLOITABILITY(fine, abs_.lift(always_bet)), 1 / 3, atol=1e-12)
    # The abstract game: neither player sees a card, so every showdown is worth 0 in
    # expectation while folding loses the ante: a blind bettor is always called, and
    # the game's value is 0. CFR+ solves it.
    policy = AVERAGE(coarse, solve(jaxsolve.cfr_plus(), coarse, 500))
    assert float(EXPLOITABILITY(coarse, policy)) < 1e-3
    np.testing.assert_allclose(np.asarray(POLICY_VALUE(coarse, policy)), 0.0, atol=1e-3)
    true = float(EXPLOITABILITY(fine, abs_.lift(policy)))
    assert 0.1 < true < 1.0  # blind play is exploitable by a player who sees the card


@pytest.mark.float64  # OpenSpiel's exploitability to 1e-9
def test_kuhn_card_blind_lifted_exploitability_matches_openspiel():
    pyspiel = pytest.importorskip("pyspiel")
    from open_spiel.python.algorithms import exploitability as os_exploitability

    from jaxsolve.openspiel import to_tabular_policy

    game = pyspiel.load_game("kuhn_poker")
    # pyspiel's history starts with the two deals; drop them and keep the bets.
    abs_ = abstract(game, lambda s, p: f"p{p} " + "".join("pb"[a] for a in s.history()[2:]))
    assert abs_.coarse.sizes.num_infosets == 4
    coarse_policy = AVERAGE(abs_.coarse, solve(jaxsolve.cfr_plus(), abs_.coarse, 300))
    lifted = abs_.lift(coarse_policy)
    ours = float(EXPLOITABILITY(abs_.fine, lifted))
    theirs = os_exploitability.exploitability(game, to_tabular_policy(abs_.fine, game, lifted))
    np.testing.assert_allclose(ours, theirs, atol=1e-9)
    assert ours > 0.1


# ------------------------------------------------------------------ bad keys
def test_key_that_splits_an_infoset_is_not_a_coarsening():
    # Adds the opponent's card: finer, not coarser, so each true infoset splits.
    def peek(state, player):
        return state.information_state_string(player) + f" opp={state._cards[1 - player]}"

    with pytest.raises(jaxsolve.GameError, match=r"not a coarsening.*'p0 card=\d history=' "
                                                 r"lies in coarse infosets"):
        abstract(games.load("kuhn_poker"), peek)


def test_key_merging_different_legal_actions_is_rejected():
    # Dropping Leduc's betting merges infosets facing a raise (Fold legal) or not.
    def no_betting(state, player):
        return f"p{player} {state.private[player] // 2}"

    with pytest.raises(jaxsolve.GameError, match="legal actions"):
        abstract(games.load("leduc_poker"), no_betting)
    # The same check in infoset_map, for trees that did not come from compile_game
    # (GameTree.replace refuses a legal mask its children contradict, so the tree is
    # assembled with dataclasses.replace, as code of one's own might).
    abs_ = kuhn_blind_abstraction()
    legal = np.asarray(abs_.coarse.legal).copy()
    legal[0, 0] = False
    with pytest.raises(jaxsolve.ArgumentError, match=r"node 4 has a child for action 0, but "
                                                     r"legal\[0, 0\] \('p0 '\) is False"):
        abs_.coarse.replace(legal=legal)
    with pytest.raises(jaxsolve.GameError, match="differ in legal actions"):
        infoset_map(dataclasses.replace(abs_.coarse, legal=legal), abs_.fine)


def test_key_merging_players_is_rejected():
    with pytest.raises(jaxsolve.GameError, match="belongs to player"):
        abstract(games.load("kuhn_poker"), lambda s, p: "everything")


def test_trees_of_different_games_are_rejected():
    kuhn = builtin_tree("kuhn_poker")
    with pytest.raises(jaxsolve.GameError, match="not the same game"):
        infoset_map(kuhn, builtin_tree("leduc_poker"))
    with pytest.raises(jaxsolve.GameError, match="not the same game"):
        infoset_map(kuhn, builtin_tree("kuhn_poker", players=3))
    # Same shapes, other payoffs.
    with pytest.raises(jaxsolve.GameError, match="utilities differ"):
        infoset_map(kuhn, kuhn.replace(utilities=2 * np.asarray(kuhn.utilities)))


# ------------------------------------------------------------------ Leduc, J = Q
def test_leduc_jq_bucket_rows_equal_and_costs_exploitability():
    abs_ = leduc_jq_abstraction()
    coarse, fine, mapping = abs_.coarse, abs_.fine, abs_.mapping
    assert abs_.perfect_recall and coarse.sizes.num_infosets < fine.sizes.num_infosets
    solver = jaxsolve.cfr_plus()
    iterations = 200
    policy = AVERAGE(coarse, solve(solver, coarse, iterations))
    lifted = jax.jit(lift)(policy, mapping)
    lifted_np = np.asarray(lifted)
    # Fine infosets sharing a coarse infoset play identical rows (J1, J2, Q1, Q2).
    for c in range(coarse.sizes.num_infosets):
        rows = lifted_np[mapping == c]
        assert len(rows) >= 2
        np.testing.assert_array_equal(rows, np.broadcast_to(rows[0], rows.shape))
        np.testing.assert_array_equal(rows[0], np.asarray(policy)[c])
    full = AVERAGE(fine, solve(solver, fine, iterations))
    full_expl = float(EXPLOITABILITY(fine, full))
    true_expl = float(EXPLOITABILITY(fine, lifted))
    assert full_expl < 0.02
    assert true_expl > full_expl + 0.1  # the abstraction costs, and much more than CFR's residual
    # In its own (perfect-recall) abstract game the policy is nearly unexploitable.
    assert float(EXPLOITABILITY(coarse, policy)) < 0.02
    # The lifted policy's exploitability in the true game is OpenSpiel's (C++) for the
    # same policy on its own leduc_poker: to 1e-9 in float64, and the float32 figure
    # above within float32 round-off of it.
    pyspiel = pytest.importorskip("pyspiel")
    game = pyspiel.load_game("leduc_poker")
    tabular = _on_pyspiel_leduc(game, fine, lifted_np)
    with jax.enable_x64(True):
        exact = float(EXPLOITABILITY(fine, lifted_np.astype(np.float64)))
    assert exact == pytest.approx(pyspiel.exploitability(game, tabular.to_dict()), abs=1e-9)
    assert true_expl == pytest.approx(exact, rel=1e-5)  # float32 sums over Leduc's leaves


def _on_pyspiel_leduc(game, tree, policy):
    """`policy` ([I, A], rows named as `tree`'s, our Leduc) as an OpenSpiel
    TabularPolicy of pyspiel's leduc_poker. The two games have the same histories,
    action for action (test_games_poker walks them in lockstep) but other infoset
    names, so each of pyspiel's infosets takes the row of ours at the same history."""
    from open_spiel.python import policy as os_policy

    index = {name: i for i, name in enumerate(tree.names.infosets)}
    row_of = {}
    stack = [(games.load("leduc_poker").new_initial_state(), game.new_initial_state())]
    while stack:
        ours, theirs = stack.pop()
        if theirs.is_terminal():
            continue
        player = theirs.current_player()
        if player >= 0:
            row_of[theirs.information_state_string(player)] = \
                index[ours.information_state_string(player)]
        stack.extend((ours.child(a), theirs.child(a)) for a in theirs.legal_actions())
    tabular = os_policy.TabularPolicy(game)
    assert set(row_of) == set(tabular.state_lookup)
    for name, row in tabular.state_lookup.items():
        tabular.action_probability_array[row] = policy[row_of[name]]
    return tabular


def test_imperfect_recall_abstraction_warns_and_lifts():
    # Exact rank before the flop, only "paired or not" after it: the player forgets.
    def forgetful(state, player):
        rank = state.private[player] // 2
        betting = "/".join("".join("fcr"[a] for a in r) for r in state.rounds)
        if state.public < 0:
            return f"p{player} {rank} {betting}"
        return f"p{player} pair={rank == state.public // 2} {state.public // 2} {betting}"

    with pytest.warns(jaxsolve.ImperfectRecallWarning):
        abs_ = abstract(games.load("leduc_poker"), forgetful)
    assert not abs_.perfect_recall and all(abs_.fine.sizes.perfect_recall)
    uniform = jaxsolve.uniform_policy(abs_.coarse)
    # Uniform anywhere lifts to uniform: same exploitability as the true game's uniform.
    np.testing.assert_allclose(
        EXPLOITABILITY(abs_.fine, abs_.lift(uniform)),
        EXPLOITABILITY(abs_.fine, jaxsolve.uniform_policy(abs_.fine)), rtol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        abstract(games.load("kuhn_poker"), kuhn_blind)  # perfect recall: no warning
