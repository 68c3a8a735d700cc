"""Does the network run slower after many small kernels, or only look slower in a profile?

In an XLA:CPU profile of the Gumbel search, the network's first two layers take
longer (by median) than in a loop of model calls alone: 17 against 11 us, 53 against
42 us.
This script times the question without the profiler. It uses three jitted loops, each
with the root call and 32 steps:

* `both`:   ~100 small gather/argmax/scatter kernels (a while loop, like a walk),
            then a model call (the game's step and the 3x128 network);
* `kernels`: the same kernels, no model call;
* `model`:  the model calls alone.

If the kernels slowed the network down, `both - kernels - model` would be positive:
about 0.5 ms at the profile's per-layer figures. On a 2-core CPU it is negative, a
few tenths of a millisecond (one root call and one dispatch are counted twice), so
the slowdown belongs to the profiler, and per-op profile times are upper
bounds.

    python experiments/profile_artifact.py [--rounds 30] [--repeats 3]
"""

from __future__ import annotations

import argparse
import functools
import statistics

import jax
import jax.numpy as jnp

from jaxsolve.alphazero import network, selfplay
from jaxsolve.games import pursuit_evasion as pe

try:  # run as a script from the repository root
    from bench_mcts import _seconds
except ImportError:  # imported as experiments.profile_artifact
    from experiments.bench_mcts import _seconds


def loops(batch: int = 256, steps: int = 32, levels: int = 3, kernels_per_level: int = 10):
    """{name: jitted fn(params, key)} for the three loops, and the network params."""
    env = pe.Params()
    graphdef, params = network.init_params(env.obs_size)
    state = jax.vmap(lambda k: pe.init(env, k))(jax.random.split(jax.random.PRNGKey(0), batch))
    rec = functools.partial(selfplay.recurrent_fn, graphdef, env)
    rows = jnp.arange(batch)

    def level(c):
        """`kernels_per_level` rounds of gather, argmax and scatter on a [B, 33, 9]
        array, each depending on the last (so none can be fused away)."""
        j, table, x = c
        for w in range(kernels_per_level):
            row = table[rows, (x + w) % 33]
            x = (jnp.argmax(row + jnp.sin(x[:, None] * 1.0), -1) + j) % 33
            table = table.at[rows, x, 0].add(1.0)
        return j + 1, table, x

    def make(with_kernels: bool, with_model: bool):
        def run(p, key):
            def body(i, carry):
                s, total, table = carry
                x = jnp.argmax(s.legal_action_mask, -1).astype(jnp.int32)
                if with_kernels:
                    # A trip count XLA cannot see through, like a walk's depth.
                    n = jnp.minimum(levels, 1 + (total[0] > -1e9).astype(jnp.int32) * levels)
                    _, table, walked = jax.lax.while_loop(lambda c: c[0] < n, level,
                                                          (jnp.int32(0), table, x))
                    x = jnp.where(walked > 100, walked, x)
                if with_model:
                    out, s = rec(p, jax.random.fold_in(key, i), x, s)
                    total = total + out.value + out.prior_logits[:, 0]
                else:
                    total = total + x.astype(total.dtype)
                return s, total, table
            root = selfplay.root_fn(graphdef, env, p, state)
            table = jnp.zeros((batch, 33, 9), jnp.float32)
            return jax.lax.fori_loop(0, steps, body, (state, root.value, table))[1]
        return jax.jit(run)

    return {"both": make(True, True), "kernels": make(True, False),
            "model": make(False, True)}, params


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    fns, params = loops()
    times = _seconds(fns, params, args.repeats, args.rounds)
    ms = {name: statistics.median([t for r in ts for t in r]) * 1e3 for name, ts in times.items()}
    for name, m in ms.items():
        print(f"{name:8s} {m:7.3f} ms/call")
    extra = ms["both"] - ms["kernels"] - ms["model"]
    print(f"both - kernels - model = {extra:+.3f} ms (positive: the kernels slow the model)")
    return extra


if __name__ == "__main__":
    import jaxsolve.allocator  # a program of its own: keeps freed memory, as `jaxsolve` does
    jaxsolve.allocator.keep_freed_memory()
    main()
