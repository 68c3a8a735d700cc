"""Public states: the partition checked against its definition by brute force, the
counts of Kuhn, Leduc and liar's dice against hand derivations, and against the
public observations OpenSpiel's Kuhn and Leduc report."""

from math import comb

import numpy as np
import pytest

import jaxsolve
from conftest import pyspiel_game, pyspiel_tree
from jaxsolve.protocol import TERMINAL
from toy_games import spread_infoset_game


# ------------------------------------------------------------------ the definition
def brute_force_partition(tree):
    """Per depth, the public states by the definition, history by history in Python:
    the finest partition of the depth's histories in which no infoset has histories
    in the subtrees of two parts, i.e. the connected components of "their subtrees
    share an infoset"; and per part whether the union of its subtrees holds every
    history of the infosets met there. Returns {depth: [(histories, closed), ...]}."""
    player, index = np.asarray(tree.node_player), np.asarray(tree.node_index)
    children = np.asarray(tree.children)
    offsets = tree.sizes.level_offsets
    infoset_histories = {}
    for node in np.flatnonzero(player >= 0):
        infoset_histories.setdefault(int(index[node]), set()).add(int(node))
    below = {}  # node -> its subtree's histories (itself included)
    for node in range(tree.sizes.num_nodes - 1, -1, -1):
        below[node] = {node}.union(*(below[int(c)] for c in children[node] if c >= 0))
    out = {}
    for d in range(len(offsets) - 1):
        nodes = list(range(offsets[d], offsets[d + 1]))
        met = {h: {int(index[n]) for n in below[h] if player[n] >= 0} for h in nodes}
        part = {h: h for h in nodes}

        def find(h):
            while part[h] != h:
                h = part[h]
            return h

        first = {}  # infoset -> the first history met whose subtree holds it
        for h in nodes:
            for i in met[h]:
                part[find(h)] = find(first.setdefault(i, h))
        groups = {}
        for h in nodes:
            groups.setdefault(find(h), []).append(h)
        out[d] = []
        for members in groups.values():
            union = set().union(*(below[h] for h in members))
            infosets = set().union(*(met[h] for h in members))
            closed = all(infoset_histories[i] <= union for i in infosets)
            out[d].append((sorted(members), closed))
    return out


def as_sets(states):
    """{depth: [(histories, closed), ...]} of our PublicStates, in the same form."""
    out = {}
    for s in range(len(states)):
        state = states[s]
        out.setdefault(state.depth, []).append((state.histories.tolist(), state.closed))
    return out


@pytest.mark.parametrize("name", ["kuhn_poker", "leduc_poker"])
def test_partition_is_the_definitions_finest_closed_one(name):
    tree = pyspiel_tree(name)
    states = jaxsolve.public_states(tree)
    want = brute_force_partition(tree)
    got = as_sets(states)
    assert {d: sorted(p) for d, p in got.items()} == {d: sorted(p) for d, p in want.items()}
    assert states.closed.all()


def test_infosets_at_several_depths_link_across_them_and_open_the_lower_states():
    tree = jaxsolve.compile_game(spread_infoset_game())
    states = jaxsolve.public_states(tree)
    got, want = as_sets(states), brute_force_partition(tree)
    assert {d: sorted(p) for d, p in got.items()} == {d: sorted(p) for d, p in want.items()}
    # By hand. Depth 0: the root. Depth 1: x's history there and player 0's node "a",
    # the ancestor at depth 1 of x's other history, are one closed state. Depth 2: x's
    # lower history is a state of its own, open since x also has a history above it;
    # the three leaves (two below x's upper history, one below "a") are each their own
    # state: 4. Depth 3: the two leaves below x's lower history: 2.
    assert states.counts.tolist() == [1, 1, 4, 2]
    x = tree.names.infosets.index("x")
    lower = [s for s in range(len(states)) if states[s].depth == 2 and
             x in states[s].infosets[1].tolist()]
    assert len(lower) == 1 and not states[lower[0]].closed
    assert int((~states.closed).sum()) == 1


# ------------------------------------------------------------------ the arrays agree
@pytest.mark.parametrize("name", ["kuhn_poker", "leduc_poker"])
def test_arrays_describe_one_partition(name):
    tree = pyspiel_tree(name)
    states = jaxsolve.public_states(tree)
    player, index = np.asarray(tree.node_player), np.asarray(tree.node_index)
    offsets = tree.sizes.level_offsets
    assert sorted(states.histories.tolist()) == list(range(tree.sizes.num_nodes))
    for d in range(len(offsets) - 1):
        local = states.at_depth(d)
        assert np.array_equal(local + states.state_offsets[d],
                              states.node_state[offsets[d]:offsets[d + 1]])
        assert (states.node_depth[offsets[d]:offsets[d + 1]] == d).all()
        # numbered by first history within the depth
        firsts = [np.flatnonzero(local == k)[0] for k in range(states.counts[d])]
        assert firsts == sorted(firsts)
    for s in range(len(states)):
        state = states[s]
        assert (states.node_state[state.histories] == s).all()
        decides = state.histories[player[state.histories] >= 0]
        infosets = np.unique(index[decides])
        owner = np.asarray(tree.infoset_player)[infosets]
        for p in range(tree.sizes.num_players):
            assert state.infosets[p].tolist() == infosets[owner == p].tolist()
    # Every infoset lies in one public state (OpenSpiel's infosets count the moves).
    decides = np.flatnonzero(player >= 0)
    per_infoset = np.unique(np.stack([index[decides], states.node_state[decides]]), axis=1)
    assert per_infoset.shape[1] == tree.sizes.num_infosets


# ------------------------------------------------------------------ counts by hand
def test_kuhn_counts():
    """OpenSpiel's Kuhn: chance deals player 0's card (depth 1), then player 1's
    (depth 2); player 0 passes or bets (depth 3), player 1 answers (depth 4), and
    after pass-bet player 0 answers (depth 5).

    Depth 0: the root. Depth 1: the 3 histories of player 0's card; player 1's later
    infosets (its card and the betting) link the two deals with the same card for
    player 1, so J-Q and K-Q link J and K, and so on: 1 state. Depth 2: the 6 deals;
    player 0's infosets link the deals with the same card for player 0, player 1's
    those with the same card for player 1: the graph of the six ordered pairs of
    three cards is connected, 1 state. Depth 3: after a pass both players act again,
    so as at depth 2 one state of 6; after a bet only player 1 acts, once: its
    infosets link only the two deals in which it holds the same card, so 3 states of
    2: 4 in all. Depth 4: pass-pass, bet-pass and bet-bet are terminals, each its own
    state (18); after pass-bet only player 0 acts: 3 states of 2 by its card: 21.
    Depth 5: 12 terminals, 12 states."""
    states = jaxsolve.public_states(pyspiel_tree("kuhn_poker"))
    assert states.counts.tolist() == [1, 1, 1, 4, 21, 12]
    assert [states[s].histories.size for s in range(states.state_offsets[3],
                                                    states.state_offsets[4])] == [6, 2, 2, 2]


def test_leduc_counts():
    """OpenSpiel's Leduc: 6 cards (3 ranks x 2 suits, and the infosets name the card,
    suit included), player 0's card (depth 1), player 1's (depth 2); round 1 betting
    (at most two raises, no fold before a bet); the public card; round 2 betting.

    As in Kuhn, the deals before round 1, and the histories after every round-1
    sequence that does not end the game, are one state each (both players still
    act): depths 0-2 hold 1 state each; depth 3 (c, r): 2. Depth 4: cc, cr, rc, rr
    one state each (rr: player 0 still calls into round 2), rf 30 terminals: 34.
    From the public card on, the infosets name it, so states split by public card
    (6 cards): over the remaining 5 cards, the 20 ordered deals are linked as in
    Kuhn. A round-2 decision where the mover acts for the last time (rr, crr: two
    raises, fold or call left) links only the deals with the same card for the mover:
    5 states of 4 per public card, 30. Round-2 sequences, by length j, one round-1
    continuation: j=0: '' (6); j=1: c, r (12); j=2: cc, rf, rc terminals (3 x 120),
    cr (6), rr (30): 396; j=3: crf, crc, rrf, rrc terminals (4 x 120), crr (30): 510;
    j=4: crrf, crrc: 240.
    Round 1 ends (by a call) after cc and rc (public card at depth 5, round 2 from
    depth 5), crc and rrc (depth 6), crrc (depth 7).
    Depth 5: cc and rc after the public card: 2 x 6; crf, rrf: 2 x 30 terminals; crc,
    rrc (chance: 1 each), crr (player 1 calls into round 2: 1): 75.
    Depth 6: cc, rc at j=1: 2 x 12; crc, rrc at j=0: 2 x 6; crrf 30 terminals; crrc
    chance: 1: 67. Depth 7: 2 x 396 + 2 x 12 + 6 = 822. Depth 8: 2 x 510 + 2 x 396 +
    12 = 1824. Depth 9: 2 x 240 + 2 x 510 + 396 = 1896. Depth 10: 2 x 240 + 510 = 990.
    Depth 11: 240."""
    j = [6, 12, 3 * 120 + 6 + 30, 4 * 120 + 30, 240]  # round-2 states by length
    want = [1, 1, 1, 2, 1 + 1 + 1 + 1 + 30, 2 * 6 + 2 * 30 + 3, 2 * j[1] + 2 * j[0] + 30 + 1,
            2 * j[2] + 2 * j[1] + j[0], 2 * j[3] + 2 * j[2] + j[1],
            2 * j[4] + 2 * j[3] + j[2], 2 * j[4] + j[3], j[4]]
    assert want == [1, 1, 1, 2, 34, 75, 67, 822, 1824, 1896, 990, 240]
    states = jaxsolve.public_states(pyspiel_tree("leduc_poker"))
    assert states.counts.tolist() == want


def test_liars_dice_counts():
    """Liar's dice, one six-sided die each (the builder's tree, OpenSpiel's game):
    chance rolls player 0's die (depth 1), player 1's (depth 2); then the players
    alternate, each bid above the last among 12 (quantity 1-2 x face), or "liar",
    which ends the game, after the first bid.

    Depths 0-2: 1 state each (both players' later infosets link every die). At depth
    2 + k, k >= 1 bids made: a sequence whose last bid is not the highest lets both
    players act again: one state of 36 rolls, C(11, k) sequences (k bids of the 11
    lower ones); a sequence ending in the highest bid leaves the mover only "liar":
    its infosets link the rolls with its own die, 6 states, for C(11, k - 1)
    sequences; k - 1 >= 1 bids then "liar" are terminals, 36 states each, for
    C(12, k - 1) sequences. Depth 15: 12 bids then liar, 36."""
    want = [1, 1, 1] + [comb(11, k) + 6 * comb(11, k - 1) + (36 * comb(12, k - 1) if k > 1
                                                              else 0) for k in range(1, 13)]
    want.append(36)
    states = jaxsolve.public_states(jaxsolve.builders.liars_dice((1, 1), 6))
    assert states.counts.tolist() == want
    assert states.closed.all()


# ------------------------------------------------------------------ public observations
def public_strings(name):
    """Each history's public observation string, from OpenSpiel's observer with
    public information and perfect recall (the public actions so far)."""
    pyspiel = pytest.importorskip("pyspiel")
    from open_spiel.python.observation import make_observation  # noqa: PLC0415

    game = pyspiel_game(name)
    observer = make_observation(game, pyspiel.IIGObservationType(
        public_info=True, perfect_recall=True, private_info=pyspiel.PrivateInfoType.NONE))
    tree = pyspiel_tree(name)
    parent, action = np.asarray(tree.parent), np.asarray(tree.parent_action)
    player = np.asarray(tree.node_player)
    out = []
    for node in range(tree.sizes.num_nodes):
        path, cur = [], node
        while parent[cur] >= 0:
            path.append(int(action[cur]))
            cur = parent[cur]
        state = game.new_initial_state()
        for a in reversed(path):
            state.apply_action(a)
        assert state.is_terminal() == (player[node] == TERMINAL)
        out.append(observer.string_from(state, 0))
    return out


@pytest.mark.parametrize("name", ["kuhn_poker", "leduc_poker"])
def test_public_states_refine_the_games_public_observations(name):
    """The game's own public states (histories of one depth with one public
    observation) have closed subtrees, so the finest such partition splits each of
    them into ours: no state of ours spans two public observations."""
    tree = pyspiel_tree(name)
    states = jaxsolve.public_states(tree)
    strings = np.array(public_strings(name), dtype=object)
    for s in range(len(states)):
        assert len(set(strings[states[s].histories])) == 1
    # and the game's partition is coarser where one player moves for the last time:
    # in Kuhn after a bet, one observation "b" covers 3 of our states.
    if name == "kuhn_poker":
        bet = [s for s in range(states.state_offsets[3], states.state_offsets[4])
               if strings[states[s].histories[0]] == "b"]
        assert len(bet) == 3


def test_refuses_what_is_not_a_tree_with_histories():
    tree = pyspiel_tree("kuhn_poker")
    with pytest.raises(jaxsolve.ArgumentTypeError, match="^public_states: expected a GameTree"):
        jaxsolve.public_states(pyspiel_game("kuhn_poker"))
    with pytest.raises(jaxsolve.ArgumentError, match="public_states"):
        jaxsolve.public_states(tree.without_histories())
    states = jaxsolve.public_states(tree)
    with pytest.raises(jaxsolve.ArgumentError, match="depth"):
        states.at_depth(6)
    with pytest.raises(jaxsolve.ArgumentError, match="index"):
        states[len(states)]
