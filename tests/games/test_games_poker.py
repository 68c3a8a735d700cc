"""The built-in Kuhn and Leduc games against OpenSpiel, walked in lockstep.

OpenSpiel is the truth: at every history both trees must agree on the player to
move, the legal actions, the chance distribution and the terminal returns, and
our information_state_string must cut the decision histories into exactly the
same information sets as pyspiel's.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from jaxsolve import games
from jaxsolve.games.kuhn_poker import KuhnPoker
from jaxsolve.games.leduc_poker import LeducPoker
from jaxsolve.protocol import CHANCE, TERMINAL

pyspiel = pytest.importorskip("pyspiel")


def _partition(groups: dict) -> set[frozenset]:
    return {frozenset(histories) for histories in groups.values()}


def _lockstep(ours_game, theirs_game) -> dict:
    """Walks both trees together (explicit stack); asserts node-by-node agreement and
    returns the infoset partitions and the number of histories."""
    ours_sets, theirs_sets, tensor_sets = defaultdict(set), defaultdict(set), defaultdict(set)
    tensor_len = None
    count = 0
    stack = [(ours_game.new_initial_state(), theirs_game.new_initial_state(), ())]
    while stack:
        ours, theirs, history = stack.pop()
        count += 1
        player = ours.current_player()
        assert player == theirs.current_player(), history
        assert ours.is_terminal() == theirs.is_terminal(), history
        if player == TERMINAL:
            np.testing.assert_allclose(ours.returns(), theirs.returns(), atol=1e-12,
                                       err_msg=str(history))
            assert sum(ours.returns()) == pytest.approx(ours_game.utility_sum())
            assert all(ours_game.min_utility() <= r <= ours_game.max_utility()
                       for r in ours.returns())
            continue
        actions = list(ours.legal_actions())
        assert actions == list(theirs.legal_actions()), history
        if player == CHANCE:
            mine, truth = ours.chance_outcomes(), theirs.chance_outcomes()
            assert [a for a, _ in mine] == [a for a, _ in truth], history
            np.testing.assert_allclose([p for _, p in mine], [p for _, p in truth],
                                       atol=1e-12, rtol=0, err_msg=str(history))
        else:
            ours_sets[(player, ours.information_state_string(player))].add(history)
            theirs_sets[(player, theirs.information_state_string(player))].add(history)
            # The tensor must be a faithful infoset key too (fixed length, float32).
            tensor = ours.information_state_tensor(player)
            assert tensor.dtype == np.float32
            tensor_len = tensor_len or tensor.shape[0]
            assert tensor.shape == (tensor_len,)
            tensor_sets[(player, tensor.tobytes())].add(history)
            assert all(isinstance(ours.action_to_string(player, a), str) for a in actions)
        for a in actions:
            stack.append((ours.child(a), theirs.child(a), history + (a,)))
    return {"count": count, "ours": _partition(ours_sets), "theirs": _partition(theirs_sets),
            "tensor": _partition(tensor_sets)}


def _count_histories(game) -> int:
    """Every history, chance and terminal nodes included, of a pyspiel tree."""
    count, stack = 0, [game.new_initial_state()]
    while stack:
        state = stack.pop()
        count += 1
        if not state.is_terminal():
            stack.extend(state.child(a) for a in state.legal_actions())
    return count


@pytest.mark.parametrize("players", [2, 3, 4])
def test_kuhn_matches_openspiel(players):
    truth = pyspiel.load_game("kuhn_poker", {"players": players})
    result = _lockstep(KuhnPoker(players=players), truth)
    assert result["count"] == _count_histories(truth)
    assert result["ours"] == result["theirs"]
    assert result["tensor"] == result["theirs"]


def test_leduc_matches_openspiel():
    truth = pyspiel.load_game("leduc_poker")
    result = _lockstep(LeducPoker(), truth)
    # 9,457 histories, chance and terminal nodes included: a plain walk of pyspiel's
    # tree counts them (the literal is the number other tests quote).
    assert result["count"] == _count_histories(truth) == 9457
    assert result["ours"] == result["theirs"]
    assert result["tensor"] == result["theirs"]
    assert len(result["ours"]) == 936  # Leduc's well-known infoset count


def test_game_metadata():
    kuhn, leduc = KuhnPoker(players=3), LeducPoker()
    assert (kuhn.num_players(), kuhn.num_distinct_actions()) == (3, 2)
    assert (leduc.num_players(), leduc.num_distinct_actions()) == (2, 3)
    for ours, name, params in ((kuhn, "kuhn_poker", {"players": 3}),
                               (leduc, "leduc_poker", {})):
        truth = pyspiel.load_game(name, params)
        assert ours.min_utility() == truth.min_utility()
        assert ours.max_utility() == truth.max_utility()
        assert ours.utility_sum() == 0.0
    assert isinstance(games.load("kuhn_poker", players=3), KuhnPoker)
    assert isinstance(games.load("leduc_poker"), LeducPoker)


def test_names_and_clone_independence():
    state = LeducPoker().new_initial_state()
    for a in (0, 3):
        state.apply_action(a)
    assert state.information_state_string(0) == "p0 card=J1 history=/"
    clone = state.clone()
    clone.apply_action(2)
    assert state.rounds == [[], []] and clone.rounds == [[2], []]
    assert state.legal_actions() == [1, 2]  # no Fold when there is nothing to call
    assert clone.legal_actions() == [0, 1, 2]
    assert [state.action_to_string(0, a) for a in (0, 1, 2)] == ["Fold", "Call", "Raise"]
    assert state.action_to_string(CHANCE, 5) == "Deal:K2"
    kuhn = KuhnPoker().new_initial_state()
    assert [kuhn.action_to_string(0, a) for a in (0, 1)] == ["Pass", "Bet"]


@pytest.mark.parametrize("bad", [1, 11, 0, -2, 2.5, "3", True])
def test_kuhn_bad_players(bad):
    with pytest.raises(ValueError, match=r"players.*2\.\.10"):
        KuhnPoker(players=bad)


def test_registry_rejects_unknown_parameter():
    with pytest.raises(ValueError, match="players"):
        games.load("leduc_poker", players=3)
