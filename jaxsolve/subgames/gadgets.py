"""Re-solving gadgets: the games whose solutions improve a blueprint inside subgames.

Re-solving replaces one player's blueprint strategy inside the public states of one
depth. Call that player p and the other o; the subgames' values are o's. Let
r(h) = chance(h) * pi_p(h) be the probability that chance and p's blueprint reach a
root history h (o's own reach left out: the values are counterfactual), and split
each public state's histories into o's *root sets* J: the finest sets that no
infoset of o below them straddles (where o acts at the root, its infosets there;
where o never acts again, single histories). o's counterfactual best-response value
of J against the blueprint, per unit of reach, is

    v(J) = sum_{h in J} r(h) V(h) / r(J),

V(h) being o's value at h when p plays the blueprint and o best responds. A
replacement strategy of p is *safe* when no v'(J) it gives exceeds v(J): o's best
response then gains nothing anywhere above the subgames, so p's exploitability in
the full game cannot rise (Burch, Johanson and Bowling 2014). The gadgets are games
whose equilibria give p such a strategy:

* `"resolve"` (Burch et al., AAAI 2014): chance deals h in proportion to r(h); o,
  knowing its root set, chooses to *terminate*, receiving v(J), or to *follow* into
  the subgame. p's equilibrium strategy keeps every v'(J) <= v(J).
* `"max_margin"` (Moravcik et al., AAAI 2016): o picks a root set J (one decision
  per public state); chance deals h in J in proportion to r(h); every payoff below
  is shifted by -v(J) for o (+v(J) for p). The equilibrium maximises the smallest
  margin v(J) - v'(J), so when a strategy with positive margins exists it gains
  against every root set, not only the worst.
* `"unsafe"`: chance deals h in proportion to its reach under the whole blueprint
  (o's own reach included), as `jaxsolve.subgame` does, and both players re-solve.
  Nothing bounds what it does to the full game: against the blueprint's own ranges
  it can settle on a strategy the blueprint's opponent exploits (the coin-toss game
  of Brown and Sandholm, NeurIPS 2017, shows it).

Several public states of one depth make one tree: a chance node picks state k with
probability Z_k / sum Z, Z_k = sum of r(h) over its histories (the whole blueprint's
reach for "unsafe"), and below it lies state k's gadget. The gadgets share no
infoset, so any CFR-family solver run on the union runs each gadget as if alone (its
regret matching and averages are per infoset), in one compiled call.

The safe gadgets need two players and a constant sum (zero-sum up to a constant).
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import jax
import numpy as np

from jaxsolve import evaluate
from jaxsolve.errors import ArgumentTypeError
from jaxsolve.subgames.histories import descend, history_reach, history_values
from jaxsolve.subgames.public import PublicState, _components
from jaxsolve.subgames.splice import Splice
from jaxsolve.subgames.subtree import check_closed, subtree_nodes
from jaxsolve.tree import GameTree
from jaxsolve.tree import arguments as tree_arguments
from jaxsolve.validate import fail, kind_of, one_of_rule, require

# The ways to build a gadget, in the order of the docs.
METHODS = ("resolve", "max_margin", "unsafe")


@dataclasses.dataclass(frozen=True, eq=False)
class Gadget:
    """The gadget of one player at some public states of one depth, as one tree.

    Shapes use K public states, J root sets of o over all of them, I' infosets of the
    gadget and A' its actions (the full game's, or more where o picks among more root
    sets than that).

    Attributes:
      tree: the gadget's `GameTree`: any solver, evaluation or sweep takes it.
      source: the full game's tree.
      method: "resolve", "max_margin" or "unsafe".
      player: the re-solved player p (both players for "unsafe": None).
      states: the K `PublicState`s.
      infosets: [I'] int32, each gadget infoset's infoset in `source`, -1 for o's
        gadget decisions.
      written: [I'] bool, the infosets whose rows a solution writes back: p's copied
        infosets (every copied infoset for "unsafe").
      mass: [K] float64, Z_k: chance's and p's reach of each state (every player's
        for "unsafe").
      set_state: [J] int32, the state of each root set.
      set_reach: [J] float64, r(J).
      set_value: [J] float64, v(J), o's counterfactual best-response value per unit of
        reach against the blueprint (0 where r(J) is 0; all 0 for "unsafe").
      set_entry: [J] int32, the gadget infoset where o chooses for each root set: its
        terminate-or-follow infoset ("resolve"), its state's pick ("max_margin"), -1
        ("unsafe").
      set_histories: J arrays of the source histories of each root set.
    """

    tree: GameTree
    source: GameTree
    method: str
    player: int | None
    states: tuple[PublicState, ...]
    infosets: np.ndarray
    written: np.ndarray
    mass: np.ndarray
    set_state: np.ndarray
    set_reach: np.ndarray
    set_value: np.ndarray
    set_entry: np.ndarray
    set_histories: tuple[np.ndarray, ...]

    def __repr__(self) -> str:
        who = "both players" if self.player is None else f"player {self.player}"
        return (f"Gadget({self.method} for {who} at {len(self.states)} public states of "
                f"depth {self.states[0].depth}, {len(self.set_state)} root sets; "
                f"{self.tree!r})")

    def nash_conv_bound(self, policy: jax.Array) -> float:
        """How much p's part of `policy` can raise the full game's NashConv when
        written back: an upper bound on the rise of o's best-response value.

        For "resolve" it is the sum over root sets of r(J) (v'(J) - v(J))^+; for
        "max_margin" the sum over states of Z_k times the largest v'(J) - v(J) of
        the state (at least 0); both read off o's best response in the gadget. 0 when
        p's part is an exact solution of a gadget built from an equilibrium-or-worse
        blueprint; any solution to within e of the gadget's value gives at most e
        times sum Z.

        Args:
          policy: `[I', A']` policy of the gadget (a solver's final policy).

        Returns:
          The bound, in the full game's utility (>= 0).

        Raises:
          ArgumentError: `policy` is not a policy of the gadget, or the gadget is
            "unsafe" (nothing bounds it).
        """
        where = "Gadget.nash_conv_bound"
        if self.method == "unsafe":
            fail(where, "unsafe re-solving has no bound: build a 'resolve' or 'max_margin' "
                        "gadget for one")
        policy = tree_arguments.policy(self.tree, policy, where)
        o = 1 - self.player
        _, responded = evaluate.best_response(self.tree, policy, o)
        _, entry = evaluate.counterfactual_values(self.tree, responded, o)
        entry = np.asarray(entry, np.float64)[self.set_entry]
        total = float(self.mass.sum())
        if self.method == "resolve":
            # entry = r(J) / sum Z * max(v'(J), v(J)) at each root set's own infoset.
            return float(np.maximum(total * entry - self.set_reach * self.set_value, 0).sum())
        # entry = Z_k / sum Z * max_J (v'(J) - v(J)), once per state (first set of each).
        first = np.unique(self.set_state, return_index=True)[1]
        return float(np.maximum(total * entry[first], 0).sum())


def gadget(tree: GameTree, states: PublicState | Sequence[PublicState],
           blueprint: jax.Array, player: int | None = None, method: str = "resolve"
           ) -> Gadget:
    """The gadget that re-solves `player` at `states`, as one tree.

    See `jaxsolve.subgames.gadgets` for the three methods. A state whose histories
    chance and p's blueprint never reach (Z_k = 0) keeps its place in the tree with
    probability 0, so gadgets of one set of states under different blueprints share
    their structure (and a `jax.vmap` over them one compilation), as long as the same
    root sets are reached (for "max_margin", the reached ones are o's legal picks).

    Args:
      tree: the full game's tree, with its histories, no batch.
      states: a closed `PublicState` of `tree`, or several of one depth.
      blueprint: `[I, A]` policy of the full game, every player's rows.
      player: the re-solved player (0 or 1); None with "unsafe" (both re-solve).
      method: "resolve" (the default), "max_margin" or "unsafe".

    Returns:
      The `Gadget`.

    Raises:
      ArgumentTypeError: `tree` is not a GameTree, or a state not a PublicState.
      ArgumentError: `tree` lacks its histories or has a batch axis; a safe method on a
        game that is not two-player constant-sum; a player out of range (or given for
        "unsafe"); states of different depths, repeated, open, of another tree, or
        leading to no decision; `blueprint` not a policy of `tree`, or reaching none of
        the states.

    Examples:
      Kuhn poker's six deals, re-solved for player 1: player 0 enters knowing its card.

      >>> import jaxsolve
      >>> from jaxsolve import games
      >>> tree = jaxsolve.compile_game(games.load("kuhn_poker"))
      >>> states = jaxsolve.public_states(tree)
      >>> g = jaxsolve.subgames.gadget(tree, states[2], jaxsolve.uniform_policy(tree), 1)
      >>> len(g.set_state)                  # player 0's three cards
      3
    """
    where = "gadget"
    tree_arguments.game_tree(tree, where, histories=True)
    method = require(f"{where}: method", method, one_of_rule(*METHODS))
    states = _states(states, tree, where)
    P = tree.sizes.num_players
    if method == "unsafe":
        if player is not None:
            fail(where, "unsafe re-solving re-solves every player: leave player out")
    else:
        if P != 2 or tree.sizes.utility_sum is None:
            fail(where, f"the {method!r} gadget needs a two-player constant-sum game "
                        f"({tree.names.game!r} has {P} players"
                        f"{'' if tree.sizes.utility_sum is not None else ', no constant sum'}); "
                        "use method='unsafe'")
        player = tree_arguments.player(tree, player, where, static=True)
    blueprint = np.asarray(tree_arguments.policy(tree, blueprint, where, host=True), np.float64)
    depth = states[0].depth
    roots = [np.unique(np.asarray(s.histories, np.int64)) for s in states]
    for r in roots:
        check_closed(tree, subtree_nodes(tree, r, depth), where)
    reach_rows = history_reach(tree, blueprint, depth)
    if method == "unsafe":
        reach = reach_rows.prod(axis=0)
    else:
        reach = reach_rows[P] * reach_rows[player]
    sets, set_state = _root_sets(tree, roots, depth, None if player is None else 1 - player)
    mass = np.array([reach[r].sum() for r in roots])
    if not mass.sum() > 0:
        fail(where, "the blueprint never reaches any of the states: there is no "
                    "distribution to deal")
    set_reach = np.array([reach[h].sum() for h in sets])
    set_value = np.zeros(len(sets))
    if method != "unsafe":
        o = 1 - player
        _, responded = evaluate.best_response(tree, blueprint, o)
        values = history_values(tree, np.asarray(responded, np.float64), o)
        for j, h in enumerate(sets):
            if set_reach[j] > 0:
                set_value[j] = float(reach[h] @ values[h]) / set_reach[j]
    build = _BUILDERS[method]
    spliced, set_entry = build(tree, states, roots, sets, set_state, reach, mass, set_reach,
                               set_value, player)
    player_of = np.asarray(spliced.tree.infoset_player)
    copied = spliced.infosets >= 0
    written = copied if player is None else copied & (player_of == player)
    return Gadget(tree=spliced.tree, source=tree, method=method, player=player,
                  states=tuple(states), infosets=spliced.infosets, written=written,
                  mass=mass, set_state=set_state, set_reach=set_reach, set_value=set_value,
                  set_entry=set_entry, set_histories=tuple(sets))


def _states(states, tree: GameTree, where: str) -> list[PublicState]:
    """The states as a non-empty list of distinct PublicStates of one depth."""
    if isinstance(states, PublicState):
        states = [states]
    elif isinstance(states, (list, tuple)):
        states = list(states)
    else:
        fail(where, "states must be a PublicState or a sequence of them "
                    f"(jaxsolve.public_states(tree)[s]), got {kind_of(states)}",
             ArgumentTypeError)
    if not states:
        fail(where, "states is empty: give at least one public state")
    for s in states:
        if not isinstance(s, PublicState):
            fail(where, f"states must hold PublicStates, got {kind_of(s)}", ArgumentTypeError)
    depths = sorted({s.depth for s in states})
    if len(depths) > 1:
        fail(where, f"the states lie at depths {depths}; a gadget takes states of one depth")
    ids = [s.index for s in states]
    if len(set(ids)) < len(ids):
        fail(where, f"public state {next(i for i in ids if ids.count(i) > 1)} is given twice")
    offsets = tree.sizes.level_offsets
    depth = depths[0]
    for s in states:
        h = np.asarray(s.histories)
        if not 0 <= depth < len(offsets) - 1 or not h.size or h.min() < offsets[depth] \
                or h.max() >= offsets[depth + 1]:
            fail(where, f"public state {s.index} does not lie at depth {depth} of this tree "
                        "(a public state of another tree?)")
        if not s.closed:
            fail(where, f"public state {s.index} is open (PublicStates.closed is False): an "
                        "infoset reaches it from above, so it cannot be cut out")
    return states


def _root_sets(tree: GameTree, roots: list[np.ndarray], depth: int, o: int | None
               ) -> tuple[list[np.ndarray], np.ndarray]:
    """(o's root sets, each an ascending array of histories; [J] the state of each),
    state by state. A root set is a connected component of the state's histories
    linked by o's infosets below them; for "unsafe" (o None) each state is one set."""
    if o is None:
        return list(roots), np.arange(len(roots), dtype=np.int32)
    player, index = np.asarray(tree.node_player), np.asarray(tree.node_index)
    everything = np.concatenate(roots)
    label = np.full(tree.sizes.num_nodes, -1, np.int64)
    label[everything] = np.arange(len(everything))
    descend(tree, label, depth)
    mine = np.flatnonzero((label >= 0) & (player == o))
    met, infoset_vertex = np.unique(index[mine], return_inverse=True)
    R = len(everything)
    component = _components(R + len(met), label[mine], R + infoset_vertex)[:R]
    sets, set_state, start = [], [], 0
    for k, r in enumerate(roots):
        local = component[start:start + len(r)]
        start += len(r)
        for c in np.unique(local):
            sets.append(r[local == c])
            set_state.append(k)
    return sets, np.asarray(set_state, np.int32)


def _deal(weights: np.ndarray) -> np.ndarray:
    """`weights` normalised to probabilities; uniform where they sum to 0 (a part the
    blueprint never reaches, dealt with probability 0 above)."""
    total = weights.sum()
    return weights / total if total > 0 else np.full(len(weights), 1.0 / len(weights))


def _name(tree: GameTree, method: str, player, states) -> str:
    who = "both players" if player is None else f"player {player}"
    return f"{tree.names.game} {method} gadget for {who} at depth {states[0].depth}"


def _resolve(tree, states, roots, sets, set_state, reach, mass, set_reach, set_value, player):
    """Chance picks a state, chance deals its histories by r(h), o terminates (v(J)) or
    follows."""
    o, c = 1 - player, tree.sizes.utility_sum
    splice = Splice(tree, max(tree.sizes.num_actions, 2), max(len(states), max(map(len, roots))))
    top = splice.chance(-1, 0, _deal(mass)[None])
    deals = splice.chance(np.repeat(top, len(states)), np.arange(len(states)),
                          _padded([_deal(reach[r]) for r in roots]))
    entry_keys = splice.infosets(
        o, np.tile([True, True] + [False] * (splice.A - 2), (len(sets), 1)),
        [f"gadget: player {o} at public state {states[k].index}, root set {j}: follow or "
         "terminate" for j, k in enumerate(set_state)],
        [("follow", "terminate")] * len(sets))
    # every root history's set, state and place in its state's deal
    set_of = np.repeat(np.arange(len(sets)), [len(h) for h in sets])
    histories = np.concatenate(sets)
    place = np.zeros(tree.sizes.num_nodes, np.int64)
    for r in roots:
        place[r] = np.arange(len(r))
    k_of, i_of = set_state[set_of], place[histories]
    entries = splice.decisions(deals[k_of], i_of, o, entry_keys[set_of])
    splice.copies(entries, 0, histories)
    utilities = np.zeros((len(histories), 2))
    utilities[:, o] = set_value[set_of]
    utilities[:, player] = c - set_value[set_of]
    splice.terminals(entries, 1, utilities)
    spliced = splice.build(_name(tree, "resolve", player, states), c)
    return spliced, spliced.new_infosets[entry_keys].astype(np.int32)


def _max_margin(tree, states, roots, sets, set_state, reach, mass, set_reach, set_value,
                player):
    """Chance picks a state, o picks a root set J, chance deals J's histories by r(h);
    payoffs below shifted by -v(J) for o."""
    o, c = 1 - player, tree.sizes.utility_sum
    per_state = np.bincount(set_state, minlength=len(states))
    widest = max(map(len, sets))
    splice = Splice(tree, max(tree.sizes.num_actions, int(per_state.max())),
                    max(len(states), widest))
    top = splice.chance(-1, 0, _deal(mass)[None])
    first_set = np.concatenate([[0], np.cumsum(per_state)[:-1]])
    legal = np.zeros((len(states), splice.A), bool)
    for k in range(len(states)):
        legal[k, :per_state[k]] = set_reach[set_state == k] > 0
        if not legal[k].any():  # a state the blueprint never reaches: any pick, weight 0
            legal[k, :per_state[k]] = True
    pick_keys = splice.infosets(
        o, legal,
        [f"gadget: player {o} picks a root set of public state {s.index}" for s in states],
        [tuple(f"root set {j}" for j in range(first_set[k], first_set[k] + per_state[k]))
         for k in range(len(states))])
    picks = splice.decisions(top, np.arange(len(states)), o, pick_keys)
    deals = splice.chance(picks[set_state], np.arange(len(sets)) - first_set[set_state],
                          _padded([_deal(reach[h]) for h in sets]))
    shift = np.zeros((len(sets), 2))
    shift[:, o], shift[:, player] = -set_value, set_value
    sizes = np.array([len(h) for h in sets])
    owner = np.repeat(np.arange(len(sets)), sizes)
    splice.copies(deals[owner], np.arange(len(owner)) - np.repeat(np.cumsum(sizes) - sizes, sizes),
                  np.concatenate(sets), shift[owner])
    spliced = splice.build(_name(tree, "max_margin", player, states), c)
    return spliced, spliced.new_infosets[pick_keys][set_state].astype(np.int32)


def _unsafe(tree, states, roots, sets, set_state, reach, mass, set_reach, set_value, player):
    """Chance picks a state, chance deals its histories by the whole blueprint's reach."""
    splice = Splice(tree, tree.sizes.num_actions, max(len(states), max(map(len, roots))))
    top = splice.chance(-1, 0, _deal(mass)[None])
    deals = splice.chance(np.repeat(top, len(states)), np.arange(len(states)),
                          _padded([_deal(reach[r]) for r in roots]))
    sizes = np.array([len(r) for r in roots])
    owner = np.repeat(np.arange(len(roots)), sizes)
    splice.copies(deals[owner], np.arange(len(owner)) - np.repeat(np.cumsum(sizes) - sizes, sizes),
                  np.concatenate(roots))
    spliced = splice.build(_name(tree, "unsafe", None, states), tree.sizes.utility_sum)
    return spliced, np.full(len(sets), -1, np.int32)


def _padded(rows: list[np.ndarray]) -> np.ndarray:
    """Rows of different lengths as one zero-padded [n, max length] array."""
    out = np.zeros((len(rows), max(map(len, rows))))
    for i, r in enumerate(rows):
        out[i, :len(r)] = r
    return out


_BUILDERS = {"resolve": _resolve, "max_margin": _max_margin, "unsafe": _unsafe}
