"""jaxsolve.distributed on 4 simulated CPU devices equals the one-device solve, and the
AlphaZero search runs per device under shard_map.

XLA's device count is fixed when JAX initialises, and this test session's JAX is
already up with one device, so the checks run in one subprocess started with
XLA_FLAGS=--xla_force_host_platform_device_count=4 (one process: JAX start-up and
the Leduc compile are paid once). It prints its measurements as JSON and the tests
below assert on them.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent("""
    import json
    import jax
    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_numpy_rank_promotion", "raise")
    import numpy as np
    import jaxsolve
    from jaxsolve import distributed, games

    out = {"devices": jax.device_count()}
    run = jax.jit(jaxsolve.run, static_argnums=0)
    nash_conv = jax.jit(jaxsolve.nash_conv)

    def diff(a, b):  # relative to b's scale: regrets and sums grow with iterations
        a, b = np.asarray(a), np.asarray(b)
        return float(np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b))))

    def split_over(x):  # devices holding x, and the shape of each one's part
        return [len(x.sharding.device_set), [list(s.data.shape) for s in x.addressable_shards]]

    def batch_check(name, tree, batch, axes, solver, iters):
        plain = jax.jit(jax.vmap(lambda t: jaxsolve.run(solver, t, solver.init(t), iters),
                                 in_axes=(axes,)))(batch)
        states = distributed.solve_batch(solver, batch, axes, iters)
        expl = distributed.exploitability_batch(batch, axes, states)
        plain_expl = jax.vmap(
            lambda t, s: jaxsolve.exploitability(t, jaxsolve.average_policy(t, s)),
            in_axes=(axes, 0))(batch, plain)
        placed, size = distributed.shard_batch(batch, axes)
        out[name] = {
            "size": size, "shape": list(states.regrets.shape),
            "regrets": diff(states.regrets, plain.regrets),
            "average": diff(states.average, plain.average),
            "exploitability": diff(expl, plain_expl),
            "placed_utilities": split_over(placed.utilities),
            "placed_legal_replicated": bool(placed.legal.sharding.is_fully_replicated),
            "result": split_over(states.regrets),
        }

    def tree_check(name, tree, solver, iters, one_device=False):
        sharded = distributed.shard_tree(tree)
        ref = run(solver, tree, solver.init(tree), iters)
        state = distributed.run_sharded(solver, sharded, solver.init(tree), iters)
        if one_device:  # same program, psum over one device: the unsharded sums exactly
            mesh1 = jax.sharding.Mesh(np.array(jax.devices()[:1]), ("terminals",))
            one = distributed.run_sharded(solver, distributed.shard_tree(tree, mesh1),
                                          solver.init(tree), iters)
            out[name + "_one_device"] = (diff(one.regrets, ref.regrets)
                                         + diff(one.average, ref.average))
        policy = jaxsolve.average_policy(tree, ref)
        mesh = distributed.default_mesh()  # what shard_tree used
        jaxpr = str(jax.make_jaxpr(lambda t, p: distributed.on_terminal_shards(
            jaxsolve.nash_conv, t, p, mesh=mesh))(sharded, policy))
        out[name] = {
            "terminals": [tree.sizes.num_terminals, sharded.sizes.num_terminals],
            "regrets": diff(state.regrets, ref.regrets),
            "policy": diff(jaxsolve.average_policy(tree, state), policy),
            "nash_conv": [float(distributed.nash_conv_sharded(sharded, policy)),
                          float(nash_conv(tree, policy))],
            "exploitability": [float(distributed.exploitability_sharded(sharded, policy)),
                               float(jaxsolve.exploitability(tree, policy))],
            "policy_value": diff(jax.jit(lambda t, p: distributed.on_terminal_shards(
                jaxsolve.policy_value, t, p, mesh=mesh))(sharded, policy),
                jaxsolve.policy_value(tree, policy)),
            "utilities": split_over(sharded.utilities),
            "sequences": split_over(sharded.terminal_sequences),
            "state_replicated": [len(state.regrets.sharding.device_set),
                                 bool(state.regrets.sharding.is_fully_replicated)],
            "psum": "psum" in jaxpr,
        }

    rng = np.random.default_rng(0)
    kuhn = jaxsolve.compile_game(games.load("kuhn_poker"))
    u = np.asarray(kuhn.utilities)
    utilities = np.stack([u * rng.uniform(0.5, 2.0) + rng.normal(0, 0.3, u.shape)
                          for _ in range(6)])
    probs = np.asarray(kuhn.chance_probs)
    noisy = np.where(probs > 0, probs * rng.uniform(0.5, 1.5, (6,) + probs.shape), 0.0)
    chance = noisy / noisy.sum(-1, keepdims=True)
    batch, axes = jaxsolve.sweep(kuhn, utilities=utilities, chance_probs=chance)
    batch_check("kuhn_batch", kuhn, batch, axes, jaxsolve.cfr_plus(), 20)
    stacked = jaxsolve.stack([kuhn.replace(utilities=x) for x in utilities[:4]])
    batch_check("kuhn_stack", kuhn, stacked, 0, jaxsolve.cfr(), 20)  # every array batched
    # A sampling solver: game b starts from init(game_b, split(key, B)[b]) on the host.
    sampler, key = jaxsolve.external_sampling(batch_size=4), jax.random.PRNGKey(5)
    states = distributed.solve_batch(sampler, batch, axes, 20, key=key)
    alone = [run(sampler, game, sampler.init(game, k), 20)
             for game, k in zip(jaxsolve.unstack(batch), jax.random.split(key, 6))]
    out["kuhn_sampling_batch"] = {
        "regrets": max(diff(states.regrets[b], a.regrets) for b, a in enumerate(alone)),
        "average": max(diff(states.average[b], a.average) for b, a in enumerate(alone)),
        "distinct": len({np.asarray(a.regrets).tobytes() for a in alone}),
        "result": split_over(states.regrets)}
    tree_check("kuhn_tree", kuhn, jaxsolve.cfr_plus(), 50)
    tree_check("kuhn_tree_cfr", kuhn, jaxsolve.cfr(), 50)  # simultaneous updates

    import os, tempfile
    with tempfile.TemporaryDirectory() as folder:  # saved: the game, not the mesh layout
        padded = distributed.shard_tree(kuhn)
        try:  # a failure here fails only the saving test below
            back = jaxsolve.GameTree.load(padded.save(os.path.join(folder, "kuhn.npz")))
            out["saved_sharded"] = {
                "terminals": [padded.sizes.num_terminals, back.sizes.num_terminals],
                "equal": back.sizes == kuhn.sizes and back.names == kuhn.names and all(
                    np.array_equal(x, y)
                    for x, y in zip(jax.tree.leaves(back), jax.tree.leaves(kuhn)))}
        except Exception as e:
            out["saved_sharded"] = {"error": repr(e)[:2000]}

    leduc = jaxsolve.compile_game(games.load("leduc_poker"))
    tree_check("leduc_tree", leduc, jaxsolve.cfr_plus(), 50, one_device=True)
    # infosets of one depth with 1 to 6 legal actions: run's packed loop on shards
    tree_check("liars_tree", jaxsolve.builders.liars_dice((1, 1), 3), jaxsolve.cfr_plus(), 30)
    # magnetic mirror descent: its MMDState on a terminal-split tree and over a batch
    mmd = jaxsolve.mmd()
    ref = run(mmd, leduc, mmd.init(leduc), 30)
    on_shards = distributed.run_sharded(mmd, distributed.shard_tree(leduc), mmd.init(leduc), 30)
    states = distributed.solve_batch(mmd, batch, axes, 20)
    plain = jax.jit(jax.vmap(lambda t: jaxsolve.run(mmd, t, mmd.init(t), 20),
                             in_axes=(axes,)))(batch)
    plain_expl = jax.vmap(lambda t, s: jaxsolve.exploitability(t, s.policy),
                          in_axes=(axes, 0))(batch, plain)
    out["mmd"] = {"tree": diff(on_shards.policy, ref.policy) + diff(on_shards.magnet, ref.magnet),
                  "batch": diff(states.policy, plain.policy),
                  "exploitability": diff(distributed.exploitability_batch(batch, axes, states),
                                         plain_expl)}
    try:  # a policy that is no distribution: traced inside the sharded jit, checked before
        distributed.exploitability_sharded(distributed.shard_tree(kuhn), np.ones((12, 2)))
        out["bad_policy"] = "accepted"
    except jaxsolve.ArgumentError as e:
        out["bad_policy"] = str(e)

    # AlphaZero search per device: 4 shards of 2 root states, each shard with its own
    # key, under shard_map's replication check, against each shard searched alone (the
    # one-device search whose visit counts tests/mcts/test_policies.py compares with mctx's).
    # Gumbel only, since each policy costs two compiles here; PUCT runs the same tree
    # code, which is where shard_map's carry types matter.
    import functools
    from jax.sharding import NamedSharding, PartitionSpec as P
    from jaxsolve import mcts
    from jaxsolve.alphazero import network, selfplay
    from jaxsolve.games import pursuit_evasion as pe
    env = pe.Params()
    graphdef, params = network.init_params(env.obs_size)
    states = jax.vmap(lambda k: pe.init(env, k))(jax.random.split(jax.random.PRNGKey(0), 8))
    rec = functools.partial(selfplay.recurrent_fn, graphdef, env)
    mesh = jax.make_mesh((4,), ("batch",))
    key = jax.random.PRNGKey(3)

    def visits(p, k, s):
        root = selfplay.root_fn(graphdef, env, p, s)
        return mcts.gumbel_policy(p, k, root, rec, 6).visit_counts

    per_shard = lambda p, k, s: visits(p, jax.random.fold_in(k, jax.lax.axis_index("batch")), s)
    sharded = jax.jit(distributed._shard_map(per_shard, mesh, (P(), P(), P("batch")),
                                             P("batch")))
    try:  # a failure here fails only the search test below
        got = sharded(params, key, jax.device_put(states, NamedSharding(mesh, P("batch"))))
        alone = jax.jit(visits)
        want = np.concatenate([alone(params, jax.random.fold_in(key, i),
                                     jax.tree.map(lambda x: x[2 * i:2 * i + 2], states))
                               for i in range(4)])
        out["search"] = {"equal": bool((np.asarray(got) == want).all()),
                         "distinct_shards": len({w.tobytes() for w in want[::2]}),
                         "visits": want.sum(-1).tolist(), "split": split_over(got)}
    except Exception as e:
        out["search"] = {"error": repr(e)[:2000]}
    print("RESULT", json.dumps(out))
""")


@pytest.fixture(scope="module")
def results():
    flags = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4"
    path = os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    env = dict(os.environ, XLA_FLAGS=flags.strip(), JAX_PLATFORMS="cpu", PYTHONPATH=path)
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def test_four_devices(results):
    assert results["devices"] == 4


@pytest.mark.parametrize("name", ["kuhn_batch", "kuhn_stack"])
def test_sharded_batch_equals_vmap(results, name):
    r = results[name]
    assert r["regrets"] < 1e-12 and r["average"] < 1e-12 and r["exploitability"] < 1e-12
    assert r["shape"][0] == r["size"]  # padding stripped


def test_batch_is_split_over_devices(results):
    kuhn = results["kuhn_batch"]  # 6 games padded to 8: two per device
    assert kuhn["placed_utilities"] == [4, [[2, 30, 2]] * 4]
    assert kuhn["placed_legal_replicated"]
    stack = results["kuhn_stack"]  # 4 games, no padding: results stay split
    assert stack["result"][0] == 4 and all(s[0] == 1 for s in stack["result"][1])


def test_a_sharded_tree_saves_as_its_game(results):
    # Kuhn's 30 terminals are padded to 32 for 4 devices; the file holds the 30.
    assert results["saved_sharded"] == {"terminals": [32, 30], "equal": True}


def test_a_sampling_solver_solves_a_batch_game_by_game(results):
    """Each of the 6 games (2 per device after padding to 8) is its own run alone from
    its own key, so the runs differ; the sampled batch of 4 is the same per game."""
    r = results["kuhn_sampling_batch"]
    assert r["regrets"] < 1e-12 and r["average"] < 1e-12
    assert r["distinct"] == 6
    assert r["result"][0] == 4


# Iterates: four partial sums added by a psum round differently from one long sum.
# CFR+ amplifies that (regrets are differences of near-equal values): on Leduc the
# gap is 4e-16 after 1 iteration, 1e-14 after 10 and 5e-12 after 50, as between us
# and OpenSpiel (test_openspiel_parity). Evaluations of one policy agree to 1e-12.
@pytest.mark.parametrize("name,tol", [("kuhn_tree", 1e-12), ("kuhn_tree_cfr", 1e-12),
                                      ("leduc_tree", 1e-10), ("liars_tree", 1e-10)])
def test_sharded_tree_equals_unsharded(results, name, tol):
    r = results[name]
    assert r["regrets"] < tol and r["policy"] < tol
    assert r["policy_value"] < 1e-12
    assert r["nash_conv"][0] == pytest.approx(r["nash_conv"][1], abs=1e-12)
    assert r["exploitability"][0] == pytest.approx(r["exploitability"][1], abs=1e-12)
    assert r["psum"]  # the cross-device sum is an explicit collective


def test_mmd_runs_on_a_split_tree_and_over_a_batch(results):
    """Magnetic mirror descent's reach sums take the same psum as its values."""
    assert all(v < 1e-12 for v in results["mmd"].values()), results["mmd"]


def test_tree_terminals_are_split_and_padded(results):
    kuhn = results["kuhn_tree"]
    assert kuhn["terminals"] == [30, 32]  # padded with two inert leaves
    assert kuhn["utilities"] == [4, [[8, 2]] * 4]
    assert kuhn["sequences"][0] == 4 and all(s[1] == 8 for s in kuhn["sequences"][1])
    assert kuhn["state_replicated"] == [4, True]
    z = results["leduc_tree"]["terminals"][1]
    assert results["leduc_tree"]["utilities"] == [4, [[z // 4, 2]] * 4]


def test_one_device_mesh_is_bitwise_the_unsharded_solve(results):
    assert results["leduc_tree_one_device"] == 0.0


def test_gumbel_search_runs_per_device_under_shard_map(results):
    """The MCTS inside shard_map (replication check on): each device's search equals
    that shard searched alone, with its own key (so the shards differ)."""
    r = results["search"]
    assert "error" not in r, r.get("error")
    assert r["equal"]
    assert r["distinct_shards"] > 1
    assert r["visits"] == [6] * 8  # every root got its 6 simulations
    assert r["split"] == [4, [[2, 9]] * 4]


def test_a_policy_that_is_no_distribution_is_refused_as_unsharded(results):
    # Refused as jaxsolve.exploitability refuses it, not evaluated (1.1667).
    message = results["bad_policy"]
    assert message.startswith("nash_conv_sharded: ") and "sums to 2" in message, message


# Refusals, before anything is placed or compiled (one device is enough).
KUHN = None


def _kuhn_sweep():
    import numpy as np

    import jaxsolve
    from jaxsolve import games
    global KUHN
    KUHN = KUHN or jaxsolve.compile_game(games.load("kuhn_poker"))
    u = np.asarray(KUHN.utilities)
    return KUHN, *jaxsolve.sweep(KUHN, utilities=np.stack([u, 2 * u, 3 * u]))


def test_sampling_solvers_are_refused_on_a_terminal_split_tree():
    """Their traversal gathers utilities by whole-tree terminal ids, which a device's
    slice of the terminals does not have (they would return wrong regrets)."""
    import jax

    import jaxsolve
    from jaxsolve import distributed
    kuhn, _, _ = _kuhn_sweep()
    solver = jaxsolve.outcome_sampling(8)
    with pytest.raises(jaxsolve.ArgumentError, match="run_sharded: os-mccfr samples terminals "
                                                     "by their ids in the whole tree"):
        distributed.run_sharded(solver, distributed.shard_tree(kuhn),
                                solver.init(kuhn, jax.random.PRNGKey(0)), 5)


def test_batch_arguments_are_checked_by_name():
    import re

    import jax

    import jaxsolve
    from jaxsolve import distributed
    kuhn, batch, axes = _kuhn_sweep()
    with pytest.raises(jaxsolve.ArgumentTypeError, match="solve_batch: expected a Solver"):
        distributed.solve_batch(None, batch, axes, 5)
    with pytest.raises(jaxsolve.ArgumentError, match="solve_batch: key is for sampling "
                                                     r"solvers; cfr\+ is deterministic"):
        distributed.solve_batch(jaxsolve.cfr_plus(), batch, axes, 5, key=jax.random.PRNGKey(0))
    # A sweep's batch with in_axes=0: names what is batched and where the axes come from.
    with pytest.raises(jaxsolve.GameError, match=re.escape(
            "this batch holds one 'node_player' shared by all games (batched: utilities); "
            "pass the in_axes jaxsolve.sweep returned")):
        distributed.solve_batch(jaxsolve.cfr_plus(), batch, 0, 5)
    with pytest.raises(jaxsolve.GameError, match="one tree, not a batch"):
        distributed.solve_batch(jaxsolve.cfr_plus(), kuhn, 0, 5)
    one_game = jaxsolve.cfr_plus().init(kuhn)  # named, not deep inside shard_map
    with pytest.raises(jaxsolve.ArgumentError, match=re.escape(
            "exploitability_batch: states.average is [12, 2] but the batch needs [3, 12, 2]")):
        distributed.exploitability_batch(batch, axes, one_game)
