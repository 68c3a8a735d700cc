"""Policy/value network: a Flax NNX multilayer perceptron (3 x 128 by default).

The model is used functionally, as mctx expects of a callback: `init_params` splits
the NNX module into a static `GraphDef` and a pytree of parameters, and `apply`
merges them back inside the caller's jit. Parameters are therefore an explicit
argument of everything downstream (search, self-play, training, checkpoints).

Reference: Silver et al., "Mastering the game of Go without human knowledge" (2017):
a shared trunk with a softmax policy head and a tanh value head.
"""

from __future__ import annotations

from typing import Sequence, Tuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from jaxsolve.errors import ArgumentError


class PolicyValueNet(nnx.Module):
    """MLP trunk -> (policy logits `[B, A]`, value in (-1, 1) `[B]`).

    Args:
      obs_size: the observation's width.
      num_actions: A.
      hidden: the trunk's layer widths.
      rngs: the initialisation's random streams.
    """

    def __init__(self, obs_size: int, num_actions: int, hidden: Sequence[int], *,
                 rngs: nnx.Rngs):
        sizes = [obs_size, *hidden]
        self.trunk = nnx.List([nnx.Linear(a, b, rngs=rngs) for a, b in zip(sizes, sizes[1:])])
        self.policy_head = nnx.Linear(sizes[-1], num_actions, rngs=rngs)
        self.value_head = nnx.Linear(sizes[-1], 1, rngs=rngs)

    def __call__(self, obs: jax.Array) -> Tuple[jax.Array, jax.Array]:
        h = obs
        for layer in self.trunk:
            h = jax.nn.relu(layer(h))
        return self.policy_head(h), jnp.tanh(self.value_head(h))[..., 0]


def init_params(obs_size: int, num_actions: int = 9, hidden: Sequence[int] = (128, 128, 128),
                seed: int = 0) -> Tuple[nnx.GraphDef, nnx.State]:
    """Builds the network.

    Args:
      obs_size: the observation's width.
      num_actions: A.
      hidden: the trunk's layer widths.
      seed: the initialisation's seed.

    Returns:
      (graphdef, params): the static structure (hashable; pass it statically or close
        over it) and the parameter pytree (an `nnx.State`).
    """
    model = PolicyValueNet(obs_size, num_actions, tuple(hidden), rngs=nnx.Rngs(seed))
    graphdef, params = nnx.split(model, nnx.Param)
    return graphdef, params


def apply(graphdef: nnx.GraphDef, params: nnx.State, obs: jax.Array
          ) -> Tuple[jax.Array, jax.Array]:
    """Evaluates the network.

    Args:
      graphdef: the static structure from `init_params`.
      params: the parameters.
      obs: `[B, obs_size]` observations.

    Returns:
      (logits `[B, A]`, value `[B]`).

    Raises:
      ValueError: an observation of another width than the network's input (another
        game's), refused from the shapes alone.
    """
    model = nnx.merge(graphdef, params)
    width = (model.trunk[0] if len(model.trunk) else model.policy_head).in_features
    if np.shape(obs)[-1:] != (width,):
        raise ArgumentError(f"network.apply: obs must be [B, {width}] (the network's input "
                            f"width), got shape {np.shape(obs)}")
    return model(obs)


def masked_logits(logits: jax.Array, legal: jax.Array) -> jax.Array:
    """Logits with illegal actions pushed to the dtype's minimum (never -inf, so a softmax
    over an all-illegal row stays finite).

    Args:
      logits: `[..., A]`.
      legal: `[..., A]` bool.

    Returns:
      `[..., A]`, the legal maximum at 0.
    """
    logits = logits - jnp.max(logits, axis=-1, keepdims=True)
    return jnp.where(legal, logits, jnp.finfo(logits.dtype).min)


__all__ = ["PolicyValueNet", "apply", "init_params", "masked_logits"]
