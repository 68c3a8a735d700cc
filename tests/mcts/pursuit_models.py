"""What the tests of jaxsolve.mcts share: the pursuit-evasion game's default
parameters, a small network, roots a few plies into the game, and models for both
searches (ours and mctx's)."""

import functools

import jax
import jax.numpy as jnp
import mctx
import pytest

from jaxsolve import mcts
from jaxsolve.alphazero import network, selfplay
from jaxsolve.games import pursuit_evasion as pe

ENV = pe.Params()
SIMS = 24


@functools.cache
def make_net():
    """(graphdef, params) of a 32x32 network."""
    return network.init_params(ENV.obs_size, hidden=(32, 32), seed=3)


@functools.cache
def make_roots():
    """8 positions a few random plies into the default game (no terminal within reach)."""
    batch = 8
    state = jax.vmap(lambda k: pe.init(ENV, k))(jax.random.split(jax.random.key(0), batch))
    step = jax.vmap(functools.partial(pe.step, ENV))
    for i in range(5):
        keys = jax.random.split(jax.random.key(10 + i), batch)
        state = step(state, jax.vmap(pe.random_action)(keys, state))
    return state  # defender to move: action 8 is illegal


def mctx_recurrent(graphdef):
    def rec(params, key, action, state):
        out, nxt = selfplay.recurrent_fn(graphdef, ENV, params, key, action, state)
        return mctx.RecurrentFnOutput(reward=out.reward, discount=out.discount,
                                      prior_logits=out.prior_logits, value=out.value), nxt
    return rec


def uniform_recurrent(env):
    """A model with uniform priors over *all* actions and zero values: only masking
    keeps the search off illegal moves, and only the tree sees the real outcome."""
    def rec(params, key, action, state):
        nxt = jax.vmap(functools.partial(pe.step, env))(state, action)
        reward = jnp.take_along_axis(nxt.rewards, state.current_player[:, None], 1)[:, 0]
        zeros = jnp.zeros(action.shape, jnp.float32)
        return mcts.RecurrentFnOutput(reward, jnp.where(nxt.terminated, 0.0, -1.0),
                                      jnp.zeros(nxt.legal_action_mask.shape), zeros,
                                      nxt.legal_action_mask), nxt
    return rec


# The fixtures the search and policy tests share (a test module imports them by name,
# and pytest finds them there).
@pytest.fixture(scope="module")
def net():
    return make_net()


@pytest.fixture(scope="module")
def roots():
    return make_roots()
