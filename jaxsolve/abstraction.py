"""Information abstraction: solve a coarser game, play the result in the true one.

`compile_game(game, infoset_key=fn)` compiles the *same* histories as the true game
but coalesces information states that `fn(state, player) -> str` gives the same key
(e.g. J and Q in one bucket). That coarse tree is an ordinary GameTree: any solver
runs on it, and its policy has one row per coarse infoset. This module connects it
back to the true game:

    abs_ = jaxsolve.abstraction.abstract(game, key)       # coarse + fine tree + map
    state = jax.jit(jaxsolve.run, static_argnums=0)(solver, abs_.coarse,
                                                    solver.init(abs_.coarse), 1000)
    coarse_policy = jaxsolve.average_policy(abs_.coarse, state)   # [I_coarse, A]
    fine_policy = abs_.lift(coarse_policy)                         # [I_fine, A]
    jaxsolve.exploitability(abs_.fine, fine_policy)                # in the true game

* `infoset_map(coarse, fine)` -> `[I_fine]` int32, the coarse infoset of each fine
  infoset. It checks that both trees hold the same histories (same game) and that
  the coarse key really is a coarsening: every fine infoset lies inside exactly one
  coarse infoset, with the same player and legal actions.
* `lift(policy, mapping)` is the coarse policy played in the fine game: one gather,
  jittable and vmappable; `lift_policy(coarse, fine, policy)` builds the map first.
* `abstract(game, key)` compiles both trees and the map; `exploitability_in_true_game`
  lifts and evaluates in one call.

Perfect and imperfect recall. A key that never lets a player forget (it drops
information the player never had, or reveals more later, e.g. "J = Q before the
flop, exact afterwards") gives a perfect-recall abstract game: CFR converges to its
Nash equilibrium and `exploitability(coarse, policy)` is exact *in the abstract
game* (against a best responder who is also abstracted). A key that forgets (e.g.
"exact card before the flop, only pair / no pair after it") makes `compile_game`
warn `ImperfectRecallWarning`. CFR is still well defined as array code: regrets
are summed over every history of a merged infoset along its true path (imperfect-
recall CFR as in Waugh et al. 2009 and Lanctot et al. 2012), but it carries no
convergence guarantee, the average strategy weights each infoset by the own reach
of one representative history, and best response / exploitability on the coarse
tree are not exact. In both cases what counts is the *true* game: the lifted policy
is a valid perfect-recall behavioural policy there (it just plays identically in
infosets that the abstraction merged), and `exploitability(fine, lift(...))` is
exact. That number, not the abstract one, is the cost of the abstraction.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxsolve import validate
from jaxsolve.tree import arguments as tree_arguments
from jaxsolve.compile import InfosetKey, compile_game
from jaxsolve.errors import ArgumentTypeError, GameError
from jaxsolve.evaluate import exploitability
from jaxsolve.protocol import CHANCE, TERMINAL, GameLike
from jaxsolve.tree import GameTree

# History arrays that two trees of the same game share node for node. node_index is
# compared only at chance and terminal nodes (decision nodes are what differs).
_SAME_GAME_FIELDS = ("node_player", "children", "parent", "parent_action",
                     "chance_probs", "utilities")


def _check_same_game(coarse: GameTree, fine: GameTree) -> None:
    """Raises GameError unless the two trees hold the same histories."""
    def differ(what: str):
        raise GameError(f"the trees are not the same game ({coarse.names.game!r}, "
                        f"{fine.names.game!r}): {what} differ, so infosets cannot be "
                        "mapped; compile both from one game, changing only infoset_key")

    if coarse.sizes.num_players != fine.sizes.num_players:
        differ("numbers of players")
    if coarse.sizes.num_nodes != fine.sizes.num_nodes:
        differ(f"numbers of histories ({coarse.sizes.num_nodes} vs {fine.sizes.num_nodes})")
    if coarse.sizes.num_actions != fine.sizes.num_actions:
        differ("action widths")
    for field in _SAME_GAME_FIELDS:
        a, b = np.asarray(getattr(coarse, field)), np.asarray(getattr(fine, field))
        if a.shape != b.shape or not np.array_equal(a, b):
            differ(field)
    player = np.asarray(fine.node_player)
    other = (player == CHANCE) | (player == TERMINAL)
    if not np.array_equal(np.asarray(coarse.node_index)[other], np.asarray(fine.node_index)[other]):
        differ("chance/terminal node indices")


def infoset_map(coarse: GameTree, fine: GameTree) -> np.ndarray:
    """The coarse infoset containing each fine infoset.

    Both trees must be compiled from the same game (only `infoset_key` differs), so their
    histories agree node for node; `coarse` must be a coarsening of `fine`. Host-side
    (NumPy); compute it once and pass it to `lift`.

    Args:
      coarse: the game compiled with the abstraction's infoset key.
      fine: the same game compiled with its true information states.

    Returns:
      `[I_fine]` int32 NumPy array of coarse infoset ids.

    Raises:
      GameError: the trees hold different histories; a fine infoset lies in two coarse
        infosets (the key is not a coarsening, the message names one); or a fine infoset
        and its coarse infoset differ in player or legal actions.
    """
    tree_arguments.game_tree(coarse, "infoset_map", histories=True)
    tree_arguments.game_tree(fine, "infoset_map", histories=True)
    _check_same_game(coarse, fine)
    player = np.asarray(fine.node_player)
    decision = np.nonzero(player >= 0)[0]
    f = np.asarray(fine.node_index)[decision].astype(np.int64)
    c = np.asarray(coarse.node_index)[decision].astype(np.int64)
    mapping = np.full(fine.sizes.num_infosets, -1, np.int64)
    mapping[f] = c  # some coarse id per fine infoset; checked for consistency below
    bad = np.nonzero(mapping[f] != c)[0]
    if bad.size:
        k = bad[0]
        name = fine.names.infosets[f[k]]
        raise GameError(
            f"the coarse key is not a coarsening of the fine one: fine infoset {name!r} "
            f"lies in coarse infosets {coarse.names.infosets[mapping[f[k]]]!r} and "
            f"{coarse.names.infosets[c[k]]!r} (it would be split, not merged); the key "
            "must depend only on what the fine information state determines")
    if (mapping < 0).any():  # a fine infoset without any decision node: not a tree we made
        raise GameError(f"fine infoset {fine.names.infosets[int(np.argmin(mapping))]!r} "
                        "has no history")
    fine_owner = np.asarray(fine.infoset_player)
    coarse_owner = np.asarray(coarse.infoset_player)[mapping]
    legal_f, legal_c = np.asarray(fine.legal), np.asarray(coarse.legal)[mapping]
    for what, wrong in (("player", fine_owner != coarse_owner),
                        ("legal actions", (legal_f != legal_c).any(axis=-1))):
        if wrong.any():
            i = int(np.argmax(wrong))
            raise GameError(f"fine infoset {fine.names.infosets[i]!r} and its coarse infoset "
                            f"{coarse.names.infosets[mapping[i]]!r} differ in {what}")
    return mapping.astype(np.int32)


def lift(policy: jax.Array, mapping: jax.Array | np.ndarray) -> jax.Array:
    """The coarse `policy` played in the fine game.

    Every fine infoset takes the row of its coarse infoset: a gather, so it jits and
    vmaps (over a leading batch of policies too). Unchecked: `Abstraction.lift` and
    `lift_policy` check the policy first.

    Args:
      policy: `[..., I_coarse, A]` a policy of the coarse tree.
      mapping: `[I_fine]` int, `infoset_map(coarse, fine)`.

    Returns:
      `[..., I_fine, A]` the policy of the fine tree.
    """
    policy = jnp.asarray(policy)
    return jnp.take(policy, jnp.asarray(mapping), axis=-2)


def lift_policy(coarse: GameTree, fine: GameTree, policy: jax.Array) -> jax.Array:
    """`lift(policy, infoset_map(coarse, fine))`: convenient, but builds the map on the
    host each call; inside jit or a loop, build it once and use `lift`.

    Args:
      coarse: the abstract tree.
      fine: the true game's tree.
      policy: `[..., I_coarse, A]` a policy of the coarse tree.

    Returns:
      `[..., I_fine, A]` the policy of the fine tree.

    Raises:
      ArgumentError: `policy` is not a coarse policy (the true game's shape is named).
      GameError: as `infoset_map` raises.
    """
    mapping = infoset_map(coarse, fine)
    return lift(_coarse_policy(coarse, fine, policy, "lift_policy"), mapping)


def _coarse_policy(coarse: GameTree, fine: GameTree, policy, where: str) -> jax.Array:
    """`policy` checked to be a coarse one ([..., I_coarse, A] floats). A policy of the
    true game is refused by name: lifting gathers rows by coarse id, so a fine
    policy would give a plausible but meaningless result."""
    rows = (fine.sizes.num_infosets, fine.sizes.num_actions)
    if np.shape(policy)[-2:] == rows and fine.sizes.num_infosets != coarse.sizes.num_infosets:
        validate.fail(where, f"policy has the true game's shape [{rows[0]}, {rows[1]}]; "
                             f"pass the abstract game's [{coarse.sizes.num_infosets}, "
                             f"{rows[1]}] policy, e.g. jaxsolve.average_policy(coarse, state), "
                             "which this lifts into the true game")
    return tree_arguments.policy(coarse, policy, where, what="the coarse tree", batch_ok=True)


@dataclasses.dataclass(frozen=True)
class Abstraction:
    """A game compiled twice, with the abstraction's infoset key and with the true
    information states.

    Attributes:
      coarse: the tree compiled with the abstraction's infoset key.
      fine: the tree of the true information states.
      mapping: `[I_fine]` int32, `infoset_map(coarse, fine)`.
    """

    coarse: GameTree
    fine: GameTree
    mapping: np.ndarray  # [I_fine] int32

    @property
    def perfect_recall(self) -> bool:
        """Whether the abstract game has perfect recall for every player."""
        return all(self.coarse.sizes.perfect_recall)

    def lift(self, policy: jax.Array) -> jax.Array:
        """The coarse policy played in the true game.

        Args:
          policy: `[..., I_coarse, A]` a policy of `coarse`.

        Returns:
          `[..., I_fine, A]` the policy of `fine`.

        Raises:
          ArgumentError: `policy` is not a policy of `coarse`.
        """
        return lift(_coarse_policy(self.coarse, self.fine, policy, "Abstraction.lift"),
                    self.mapping)

    def summary(self) -> dict[str, Any]:
        """The sizes of the abstraction, for reports.

        Returns:
          A dict with the game's name, `fine_infosets`, `coarse_infosets` and
            `perfect_recall` (of the abstract game).
        """
        return {"game": self.fine.names.game,
                "fine_infosets": self.fine.sizes.num_infosets,
                "coarse_infosets": self.coarse.sizes.num_infosets,
                "perfect_recall": self.perfect_recall}


def abstract(game: GameLike, infoset_key: InfosetKey | None, *,
             fine_key: InfosetKey | None = None, **compile_kwargs: Any) -> Abstraction:
    """Compiles `game` with `infoset_key` (coarse) and with `fine_key` (default: the game's
    own information states), and maps one onto the other.

    Args:
      game: a protocol game (as `compile_game` takes).
      infoset_key: `(state, player) -> str`, the abstraction's key.
      fine_key: the true game's key; None for the game's own information states.
      **compile_kwargs: go to both `compile_game` calls (e.g. `max_nodes`);
        `warn_imperfect_recall` applies to the coarse tree only (the true game's recall
        is the game's business).

    Returns:
      The `Abstraction`.

    Raises:
      GameError: as `compile_game` and `infoset_map` raise.
    """
    fine_kwargs = {k: v for k, v in compile_kwargs.items() if k != "warn_imperfect_recall"}
    fine = compile_game(game, infoset_key=fine_key, **fine_kwargs)
    coarse = compile_game(game, infoset_key=infoset_key, **compile_kwargs)
    return Abstraction(coarse, fine, infoset_map(coarse, fine))


def exploitability_in_true_game(abstraction: Abstraction, coarse_policy: jax.Array) -> jax.Array:
    """Exploitability (NashConv / players) of the lifted policy in the fine game.

    Exact whatever the abstraction's recall, as long as the true game has perfect recall
    (the fine tree's own `sizes.perfect_recall`). Jittable with the abstraction closed
    over: `jax.jit(functools.partial(exploitability_in_true_game, abs_))`.

    Args:
      abstraction: from `abstract`.
      coarse_policy: `[I_coarse, A]` a policy of the coarse tree.

    Returns:
      `[]` float array.

    Raises:
      ArgumentTypeError: `abstraction` is not an `Abstraction`.
      ArgumentError: `coarse_policy` is not a policy of the coarse tree.
    """
    where = "exploitability_in_true_game"
    if not isinstance(abstraction, Abstraction):
        validate.fail(where, "expected an Abstraction (from jaxsolve.abstraction.abstract), "
                             f"got {type(abstraction).__name__}", ArgumentTypeError)
    policy = _coarse_policy(abstraction.coarse, abstraction.fine, coarse_policy, where)
    return exploitability(abstraction.fine, lift(policy, abstraction.mapping))
