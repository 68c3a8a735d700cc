"""Any compiled GameTree as a jittable, vmappable multi-agent environment (pgx style).

    tree = jaxsolve.compile_game(jaxsolve.games.load("spoof", shuffle_initial=True))
    state = env.init(tree, key)                  # chance is sampled up to a decision
    while not state.terminated:
        action = policy(env.observe(tree, state, state.current_player), state.legal_action_mask)
        state = env.step(tree, state, action, key)   # the move, then chance again
    state.rewards                                # [P] the terminal utilities

Every function below is pure array code on the tree: `jax.jit` it with the tree as
an argument (the tree is a pytree whose sizes are static, so a second batch or a
second tree of the same sizes reuses the compilation) and `jax.vmap` it over keys,
states and actions with `in_axes=None` for the tree. `describe` and `history` are
host-side helpers for humans.

Chance nodes never surface: `init` and `step` sample them from `tree.chance_probs`
until a decision node or a terminal is reached, so a state is always one of the two.

Observations. The tree stores one information state (infoset) per decision node,
that of the player to act, so what a player knows is summarised by its latest
infoset: `observation[p]` is the infoset at which player p acts now (when it is to
move) or at which it last acted, and -1 before its first decision. It holds only
what p knew (its infoset string, `tree.names.infosets[id]`) and never reveals what
happened since p last acted -- p learns that at its next infoset. `observe(tree,
state, p)` returns it; `observation_one_hot(tree, state)` gives the [P, I] one-hot
vectors (all zeros for -1) for networks.

Rewards. Utilities are terminal-only: `rewards` is zero until the game ends and then
the utilities of the terminal reached, [P]. Stepping a terminated state is a no-op
(the state, rewards included, is returned unchanged), so sum rewards only on the
step that sets `terminated`, or just read them at the end.

Illegal actions (pgx's convention). An action outside the legal mask (or outside
[0, A)) does not move: the game ends at once with `illegal_action=True`, the player
who made it gets `illegal_penalty` (default -1) and every other player
`-illegal_penalty / (P - 1)`, so zero-sum games stay zero-sum. Nothing raises
inside jit.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxsolve import validate
from jaxsolve.tree import arguments as tree_arguments
from jaxsolve.protocol import CHANCE, TERMINAL
from jaxsolve.tree import GameTree


class EnvState(NamedTuple):
    """One game in progress (a pytree; batch it with vmap). P players, A actions.

    Attributes:
      node: `[]` int32, the history node: a decision node or a terminal.
      current_player: `[]` int32, the player to act; TERMINAL (-4) once terminated.
      observation: `[P]` int32, each player's latest infoset id, -1 before any.
      legal_action_mask: `[A]` bool, the acting player's legal actions.
      rewards: `[P]` float, zero until terminated, then the utilities.
      terminated: `[]` bool.
      illegal_action: `[]` bool, terminated by an illegal action.
      step_count: `[]` int32, decisions taken (chance samples not counted).
    """

    node: jax.Array
    current_player: jax.Array
    observation: jax.Array
    legal_action_mask: jax.Array
    rewards: jax.Array
    terminated: jax.Array
    illegal_action: jax.Array
    step_count: jax.Array


def _check_state(tree: GameTree, state, where: str) -> None:
    """`state` must be an EnvState of this tree's shapes (a state of another game
    would fail in a broadcast inside the step, or index the wrong rows)."""
    if not isinstance(state, EnvState):
        validate.fail(where, f"state must be an EnvState (from env.init), got "
                             f"{type(state).__name__}", validate.ArgumentTypeError)
    want = {"observation": (tree.sizes.num_players,),
            "legal_action_mask": (tree.sizes.num_actions,)}
    for field, shape in want.items():
        got = tuple(np.shape(getattr(state, field)))
        if got != shape:
            validate.fail(where, f"state.{field} has shape {got}, this tree's is {shape}: "
                                 "a state of another game? (under vmap, each state is one "
                                 "game's)")


def _settle(tree: GameTree, node, key):
    """Samples chance outcomes from `node` until a decision node or a terminal."""
    player, index = jnp.asarray(tree.node_player), jnp.asarray(tree.node_index)
    probs, children = jnp.asarray(tree.chance_probs), jnp.asarray(tree.children)

    def body(carry):
        node, key = carry
        key, sub = jax.random.split(key)
        outcome = jax.random.categorical(sub, jnp.log(probs[index[node]]))
        return children[node, outcome], key

    node, _ = jax.lax.while_loop(lambda c: player[c[0]] == CHANCE, body, (node, key))
    return node


def _at(tree: GameTree, node, observation, step_count) -> EnvState:
    """The state at a decision node or terminal `node`; updates the acting player's
    observation to its infoset there."""
    player = jnp.asarray(tree.node_player)[node]
    index = jnp.asarray(tree.node_index)[node]
    terminal = player == TERMINAL
    num_players = tree.sizes.num_players
    acting = (~terminal) & (jnp.arange(num_players) == player)
    observation = jnp.where(acting, index, observation).astype(jnp.int32)
    legal = jnp.asarray(tree.legal)[jnp.where(terminal, 0, index)] & ~terminal
    utilities = jnp.asarray(tree.utilities)[jnp.where(terminal, index, 0)]
    rewards = jnp.where(terminal, utilities, jnp.zeros_like(utilities))
    return EnvState(node=jnp.asarray(node, jnp.int32), current_player=player.astype(jnp.int32),
                    observation=observation, legal_action_mask=legal, rewards=rewards,
                    terminated=terminal, illegal_action=jnp.asarray(False),
                    step_count=jnp.asarray(step_count, jnp.int32))


def init(tree: GameTree, key: jax.Array) -> EnvState:
    """A new game: chance is sampled with `key` from the root to the first decision node
    (or a terminal, in a game that may end on chance alone).

    Args:
      tree: the compiled game, with its history arrays.
      key: PRNG key for the chance outcomes.

    Returns:
      The `EnvState` at the first decision node (or terminal).

    Raises:
      ArgumentError: `tree` is not a GameTree with histories, or `key` is not a PRNG key.

    Examples:
      >>> import jax
      >>> import jaxsolve
      >>> from jaxsolve import env, games
      >>> tree = jaxsolve.compile_game(games.load("kuhn_poker"))
      >>> state = env.init(tree, jax.random.PRNGKey(0))
      >>> int(state.current_player), state.legal_action_mask.tolist()
      (0, [True, True])
    """
    tree_arguments.game_tree(tree, "env.init", histories=True)
    validate.prng_key(key, "env.init")
    node = _settle(tree, jnp.asarray(0, jnp.int32), key)
    return _at(tree, node, jnp.full(tree.sizes.num_players, -1, jnp.int32), 0)


def _action(action, where: str) -> jax.Array:
    """`action` as a [] int32: one integer (any value: one outside [0, A) or not legal
    ends the game as illegal), concrete or traced. A float (-0.5 would have played
    action 0, 1.7 action 1), a string, a bool or an array of several is refused, since
    casting it would play a move nobody chose."""
    dtype = getattr(action, "dtype", None)
    integral = (validate.is_int(action) if dtype is None
                else jnp.issubdtype(dtype, jnp.integer) and np.shape(action) == ())
    if not integral:
        validate.fail(where, f"action must be one integer, got {action!r}"
                      if dtype is None else f"action must be one integer, got an array of "
                      f"shape {list(np.shape(action))} and dtype {dtype}",
                      validate.ArgumentTypeError)
    if not validate.traced(action) and not -2 ** 31 <= int(action) < 2 ** 31:
        return jnp.asarray(-1, jnp.int32)  # out of range, as any other illegal action
    return jnp.asarray(action, jnp.int32)


def step(tree: GameTree, state: EnvState, action: int | jax.Array, key: jax.Array, *,
         illegal_penalty: float = -1.0) -> EnvState:
    """Applies the acting player's `action`, then samples chance with `key` up to the next
    decision node or terminal.

    A terminated state is returned as it is; an illegal action ends the game (see the
    module docstring).

    Args:
      tree: the compiled game, with its history arrays.
      state: an `EnvState` of this tree.
      action: `[]` int, the action id (an integer, concrete or traced).
      key: PRNG key for the chance outcomes that follow.
      illegal_penalty: the reward of a player who plays an illegal action; the others
        share its negation.

    Returns:
      The next `EnvState`.

    Raises:
      ArgumentError: a bad tree, state of another game, key, or non-finite penalty.
      ArgumentTypeError: `action` is not one integer.
    """
    tree_arguments.game_tree(tree, "env.step", histories=True)
    _check_state(tree, state, "env.step")
    validate.prng_key(key, "env.step")
    action = _action(action, "env.step")
    if not validate.traced(illegal_penalty):
        illegal_penalty = validate.static("env.step", "illegal_penalty", illegal_penalty,
                                          validate.number_rule())
    slot = jnp.clip(action, 0, tree.sizes.num_actions - 1)
    legal = (action >= 0) & (action < tree.sizes.num_actions) & state.legal_action_mask[slot]
    child = jnp.asarray(tree.children)[state.node, slot]
    moved = _at(tree, _settle(tree, jnp.where(legal, child, 0), key), state.observation,
                state.step_count + 1)
    num_players = tree.sizes.num_players
    actor = jnp.arange(num_players) == state.current_player
    others = -illegal_penalty / max(num_players - 1, 1)
    penalty = jnp.where(actor, illegal_penalty, others).astype(state.rewards.dtype)
    punished = state._replace(current_player=jnp.asarray(TERMINAL, jnp.int32),
                              legal_action_mask=jnp.zeros_like(state.legal_action_mask),
                              rewards=penalty, terminated=jnp.asarray(True),
                              illegal_action=jnp.asarray(True),
                              step_count=state.step_count + 1)
    new = jax.tree.map(lambda a, b: jnp.where(legal, a, b), moved, punished)
    return jax.tree.map(lambda old, a: jnp.where(state.terminated, old, a), state, new)


def observe(tree: GameTree, state: EnvState, player: int | jax.Array) -> jax.Array:
    """Player `player`'s latest infoset: its current infoset when it is to move, else the
    one at which it last acted.

    Args:
      tree: the compiled game, with its history arrays.
      state: an `EnvState` of this tree.
      player: the player, an int in `[0, P)`.

    Returns:
      `[]` int32 infoset id; -1 before the player's first decision.

    Raises:
      ArgumentError: a state of another game, or `player` out of range.
    """
    _check_state(tree, state, "env.observe")
    return state.observation[tree_arguments.player(tree, player, "env.observe")]


def observation_one_hot(tree: GameTree, state: EnvState) -> jax.Array:
    """One-hot of each player's latest infoset, for networks.

    Args:
      tree: the compiled game, with its history arrays.
      state: an `EnvState` of this tree.

    Returns:
      `[P, I]` float32 array (a zero row for a player yet to act).
    """
    return jax.nn.one_hot(state.observation, tree.sizes.num_infosets, dtype=jnp.float32)


def random_legal_action(key: jax.Array, state: EnvState) -> jax.Array:
    """A uniformly random legal action.

    Args:
      key: PRNG key.
      state: an `EnvState`.

    Returns:
      `[]` int32 action id; 0 at a terminated state.
    """
    logits = jnp.where(state.legal_action_mask, 0.0, -jnp.inf)
    return jnp.where(state.terminated, 0, jax.random.categorical(key, logits)).astype(jnp.int32)


def rollout(tree: GameTree, key: jax.Array) -> EnvState:
    """One whole game with uniformly random legal actions (a `lax.while_loop`); vmap it
    over keys for a batch of games.

    Args:
      tree: the compiled game, with its history arrays.
      key: PRNG key for the actions and chance.

    Returns:
      The terminated `EnvState`; `rewards` `[P]` holds the utilities.

    Raises:
      ArgumentError: `tree` is not a GameTree with histories, or `key` is not a PRNG key.
    """
    tree_arguments.game_tree(tree, "env.rollout", histories=True)
    validate.prng_key(key, "env.rollout")
    key, first = jax.random.split(key)

    def body(carry):
        state, key = carry
        key, pick, chance = jax.random.split(key, 3)
        return step(tree, state, random_legal_action(pick, state), chance), key

    state, _ = jax.lax.while_loop(lambda c: ~c[0].terminated, body, (init(tree, first), key))
    return state


# ---------------------------------------------------------------------- host side
def history(tree: GameTree, state: EnvState) -> list[int]:
    """The actions (chance outcomes included) from the root to the state's node. Host-side.

    Args:
      tree: the compiled game, with its history arrays.
      state: one unbatched `EnvState` of this tree.

    Returns:
      A list of action ids, root first.
    """
    node, out = int(state.node), []
    parent, action = np.asarray(tree.parent), np.asarray(tree.parent_action)
    while parent[node] >= 0:
        out.append(int(action[node]))
        node = int(parent[node])
    return out[::-1]


def describe(tree: GameTree, state: EnvState) -> str:
    """A readable account of one unbatched state: who is to move, each player's observed
    information state by name, the legal actions by name, the rewards. Host-side.

    Args:
      tree: the compiled game, with its history arrays.
      state: one unbatched `EnvState` of this tree.

    Returns:
      A multi-line string.
    """
    names, player = tree.names, int(state.current_player)
    obs = [int(o) for o in np.asarray(state.observation)]
    lines = [f"{names.game}: node {int(state.node)}, history {history(tree, state)}, "
             f"step {int(state.step_count)}"]
    if bool(state.terminated):
        how = " by an illegal action" if bool(state.illegal_action) else ""
        lines.append(f"terminated{how}; rewards {np.asarray(state.rewards).tolist()}")
    else:
        legal = np.nonzero(np.asarray(state.legal_action_mask))[0]
        labels = ", ".join(f"{a}={names.actions[obs[player]][a]!r}" for a in legal)
        lines.append(f"player {player} to move; legal: {labels}")
    for p, o in enumerate(obs):
        seen = f"infoset {o} {names.infosets[o]!r}" if o >= 0 else "nothing yet"
        lines.append(f"  player {p} observes {seen}")
    return "\n".join(lines)


__all__ = ["EnvState", "describe", "history", "init", "observation_one_hot", "observe",
           "random_legal_action", "rollout", "step"]
