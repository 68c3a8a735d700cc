"""Re-solving a depth: every public state's gadget solved in one call, written back.

`resolve(tree, blueprint, depth)` builds, for each re-solved player, one gadget tree
holding the gadgets of every public state of `depth` that chance and the player's
blueprint reach (`jaxsolve.subgames.gadget`), runs a solver on it in one compiled
call, and writes the player's part of the result into the blueprint. With a safe
gadget each player's exploitability rises by at most what its gadget's own solution
leaves (`Resolution.nash_conv_bound`), so a blueprint only gets better where the
gadgets are solved well; an equilibrium stays one.

`write_back` and `restrict_policy` move policies between a cut (a `Subgame` or a
`Gadget`) and the full game.
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np

from jaxsolve.errors import ArgumentTypeError
from jaxsolve.policy import final_policy
from jaxsolve.solvers import Solver, cfr_plus, run
from jaxsolve.subgames.gadgets import METHODS, Gadget, gadget
from jaxsolve.subgames.histories import descend, history_reach
from jaxsolve.subgames.public import PublicState, PublicStates, public_states
from jaxsolve.subgames.subtree import Subgame
from jaxsolve.tree import GameTree
from jaxsolve.tree import arguments as tree_arguments
from jaxsolve.validate import fail, integer_rule, kind_of, one_of_rule, require


@dataclasses.dataclass(frozen=True, eq=False)
class Resolution:
    """A blueprint re-solved at one depth.

    Attributes:
      policy: `[I, A]` the full game's policy: the blueprint, with each re-solved
        player's infosets at and below the depth played as its gadget's solution.
      gadgets: the gadgets solved, one per re-solved player (one for "unsafe").
      solutions: each gadget's solved `[I', A']` policy.
      nash_conv_bound: the most the re-solving can have raised the full game's
        NashConv (the sum of the gadgets' `nash_conv_bound`; half of it bounds the
        exploitability's rise); None for "unsafe".
    """

    policy: jax.Array
    gadgets: tuple[Gadget, ...]
    solutions: tuple[jax.Array, ...]
    nash_conv_bound: float | None


def resolve(tree: GameTree, blueprint: jax.Array, depth: int, *, method: str = "resolve",
            solver: Solver | None = None, iterations: int = 1000,
            players: tuple[int, ...] | None = None) -> Resolution:
    """Re-solves every public state of one depth against `blueprint`.

    For each re-solved player p, the gadgets of the closed public states of `depth`
    that hold a decision below them and that chance and p's blueprint reach are built
    as one tree (`jaxsolve.subgames.gadget`), `solver` runs `iterations` steps on it
    in one compiled call, and p's rows of the solver's final policy replace the
    blueprint's. "unsafe" re-solves both players in one gadget dealt by the whole
    blueprint's reach.

    Args:
      tree: the full game's tree, with its histories, no batch; two-player constant-sum
        for the safe methods.
      blueprint: `[I, A]` policy of the full game.
      depth: the depth whose public states are re-solved (0 to D, as in
        `PublicStates.at_depth`).
      method: "resolve" (the default), "max_margin" or "unsafe".
      solver: any full-width solver (`jaxsolve.cfr_plus()` by default).
      iterations: the solver's steps on each gadget.
      players: the players to re-solve (default both); ignored by "unsafe".

    Returns:
      The `Resolution`.

    Raises:
      ArgumentError: as `gadget`; `depth` out of range or without a public state that
        the blueprint reaches and that holds a decision below it, or with an open one;
        `iterations` below 1; a player out of range or repeated.
      ArgumentTypeError: `solver` is not a Solver.

    Examples:
      >>> import jaxsolve
      >>> from jaxsolve import games
      >>> tree = jaxsolve.compile_game(games.load("kuhn_poker"))
      >>> rough = jaxsolve.uniform_policy(tree)
      >>> better = jaxsolve.subgames.resolve(tree, rough, depth=2, iterations=500)
      >>> before = float(jaxsolve.exploitability(tree, rough))
      >>> after = float(jaxsolve.exploitability(tree, better.policy))
      >>> print(f"{before:.2f} -> {after:.2f}")    # never worse, by the gadgets' bound
      0.46 -> 0.30
    """
    where = "resolve"
    tree_arguments.game_tree(tree, where, histories=True)
    method = require(f"{where}: method", method, one_of_rule(*METHODS))
    solver = cfr_plus() if solver is None else solver
    if not isinstance(solver, Solver):
        fail(where, f"solver must be a Solver (jaxsolve.cfr_plus(), ...), got {kind_of(solver)}",
             ArgumentTypeError)
    iterations = require(f"{where}: iterations", iterations, integer_rule(1))
    blueprint = tree_arguments.policy(tree, blueprint, where)
    host = np.asarray(blueprint, np.float64)
    candidates = _with_decisions(tree, public_states(tree), depth, where)
    if method == "unsafe":
        players = (None,)
    elif players is None:
        players = tuple(range(tree.sizes.num_players))
    else:
        players = tuple(tree_arguments.player(tree, p, where, static=True) for p in players)
        if len(set(players)) < len(players):
            fail(where, f"players {players} names a player twice")
    reach = history_reach(tree, host, depth)
    policy, gadgets, solutions = blueprint, [], []
    for p in players:
        weight = reach.prod(axis=0) if p is None else reach[-1] * reach[p]
        chosen = [s for s in candidates if weight[s.histories].sum() > 0]
        if not chosen:
            continue
        open_ = [s.index for s in chosen if not s.closed]
        if open_:
            fail(where, f"public state {open_[0]} of depth {depth} is open (an infoset reaches "
                        "it from above): this depth cannot be cut; re-solve another")
        g = gadget(tree, chosen, host, p, method)
        state = run(solver, g.tree, solver.init(g.tree), iterations)
        solution = final_policy(g.tree, state, solver=solver)
        policy = write_back(policy, g, solution)
        gadgets.append(g)
        solutions.append(solution)
    if not gadgets:
        fail(where, f"no public state of depth {depth} is reached by the blueprint and has a "
                    "decision below it: nothing to re-solve there")
    bound = None if method == "unsafe" else float(
        sum(g.nash_conv_bound(s) for g, s in zip(gadgets, solutions)))
    return Resolution(policy=policy, gadgets=tuple(gadgets), solutions=tuple(solutions),
                      nash_conv_bound=bound)


def with_decisions(tree: GameTree, depth: int) -> list[PublicState]:
    """The public states of one depth with a decision in their subtrees: those there
    is something to re-solve in.

    Args:
      tree: the game's tree, with its histories, no batch.
      depth: a depth of the tree (0 to D).

    Returns:
      The `PublicState`s, in the order of `public_states(tree)`.

    Raises:
      ArgumentError: `tree` lacks its histories or has a batch axis, or `depth` is out
        of range.

    Examples:
      >>> import jaxsolve
      >>> from jaxsolve import games
      >>> tree = jaxsolve.compile_game(games.load("kuhn_poker"))
      >>> [len(jaxsolve.subgames.with_decisions(tree, d)) for d in range(6)]
      [1, 1, 1, 4, 3, 0]
    """
    tree_arguments.game_tree(tree, "with_decisions", histories=True)
    return _with_decisions(tree, public_states(tree), depth, "with_decisions")


def _with_decisions(tree: GameTree, states: PublicStates, depth: int, where: str
                    ) -> list[PublicState]:
    depth = require(f"{where}: depth", depth,
                    integer_rule(0, len(states.counts) - 1, note=f"{len(states.counts)} depths"))
    offsets, player = tree.sizes.level_offsets, np.asarray(tree.node_player)
    label = np.full(tree.sizes.num_nodes, -1, np.int64)
    label[offsets[depth]:offsets[depth + 1]] = states.at_depth(depth)
    descend(tree, label, depth)
    found = np.unique(label[(label >= 0) & (player >= 0)])
    return [states[int(states.state_offsets[depth] + s)] for s in found]


def restrict_policy(policy: jax.Array, subgame: Subgame) -> jax.Array:
    """A full game's policy on the subgame's infosets.

    Args:
      policy: `[I, A]` policy of `subgame.source`.
      subgame: the `Subgame`.

    Returns:
      `[I', A]`: row i is `policy[subgame.infosets[i]]`.

    Raises:
      ArgumentTypeError: `subgame` is not a Subgame.
      ArgumentError: `policy` is not a policy of the full game.
    """
    if not isinstance(subgame, Subgame):
        fail("restrict_policy", "subgame must be a Subgame (from jaxsolve.subgame), got "
                                f"{kind_of(subgame)}", ArgumentTypeError)
    policy = tree_arguments.policy(subgame.source, policy, "restrict_policy",
                                   what="the full game")
    return policy[subgame.infosets]


def write_back(policy: jax.Array, cut: Subgame | Gadget, cut_policy: jax.Array) -> jax.Array:
    """A full game's policy with a subgame's or a gadget's infosets played as
    `cut_policy`.

    A subgame writes every infoset back; a gadget its re-solved player's copied
    infosets (`Gadget.written`; both players' for "unsafe"), not o's gadget decisions.
    The infosets lie entirely inside the public states' subtrees, so the result
    differs from `policy` there only; writing back `restrict_policy(policy, subgame)`
    gives `policy` itself.

    Args:
      policy: `[I, A]` policy of `cut.source`, kept elsewhere.
      cut: the `Subgame` or `Gadget`.
      cut_policy: `[I', A']` policy of `cut.tree` (e.g. a solver's final policy on it).

    Returns:
      `[I, A]` in `policy`'s dtype.

    Raises:
      ArgumentTypeError: `cut` is neither a Subgame nor a Gadget.
      ArgumentError: either policy does not fit its tree.
    """
    where = "write_back"
    if not isinstance(cut, (Subgame, Gadget)):
        fail(where, "cut must be a Subgame (jaxsolve.subgame) or a Gadget "
                    f"(jaxsolve.subgames.gadget), got {kind_of(cut)}", ArgumentTypeError)
    policy = tree_arguments.policy(cut.source, policy, where, what="the full game")
    cut_policy = tree_arguments.policy(cut.tree, cut_policy, where, what="the cut's tree")
    A = cut.source.sizes.num_actions
    if isinstance(cut, Subgame):
        return policy.at[cut.infosets].set(cut_policy.astype(policy.dtype))
    rows = np.flatnonzero(cut.written)
    return policy.at[cut.infosets[rows]].set(cut_policy[rows, :A].astype(policy.dtype))
