"""bench_cfr's contestants and how each is timed: OpenSpiel's C++ CFRPlusSolver,
OpenSpiel's JaxCFR and jaxsolve's full-width solver (CFR+ unless --solver), each run
to the game's checkpoints in timed blocks of iterations.

Every contestant's result carries the same timing fields (`block_stats`): the median
ms per iteration over its timed blocks, the fastest block, how many blocks were timed,
and each block's seconds per iteration (`block_s_per_iter`, so a reader sees the
spread behind the median)."""

from __future__ import annotations

import gc
import os
import statistics
import time

from bench_cfr_memory import device_memory, peak_rss
from machine import check_tolerance, compare_check


# ------------------------------------------------------------------ timing
def timed(fn, *args):
    """(fn(*args), seconds it took by time.perf_counter)."""
    start = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - start


def _median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        _, seconds = timed(fn)
        times.append(seconds)
    return statistics.median(times)


def _drive(step_n, evaluate, checkpoints, block, done=0, cap_s=None):
    """Runs a stateful solver to each checkpoint in timed blocks of `block` iterations.

    Returns (seconds per iteration for each block, {checkpoint: evaluate()}, iterations
    done, whether the time cap stopped it). Evaluations are not timed.
    """
    per_iter, expl, spent, capped = [], {}, 0.0, False
    for target in checkpoints:
        while done < target:
            if cap_s is not None and spent > cap_s:
                capped = True
                break
            n = min(block, target - done)
            _, seconds = timed(step_n, n)
            per_iter.append(seconds / n)
            spent += seconds
            done += n
        if capped:
            break
        expl[target] = evaluate()
    return per_iter, expl, done, capped


def _loads(before, after):
    """The 1-minute load average around a solver's timed iterations (the solvers of a
    game run one after another, so a load change falls on one side only)."""
    return {"before": before, "after": after}


def block_stats(per_iter):
    """A contestant's timing fields from the seconds per iteration of its timed blocks:
    the median (what the tables print and the ratios compare), the fastest, the count,
    and every block's own figure, in the order timed, so the JSON shows the spread the
    median hides (a block slowed by another process on the machine, say)."""
    return {"ms_per_iter": 1e3 * statistics.median(per_iter) if per_iter else None,
            "ms_per_iter_min": 1e3 * min(per_iter) if per_iter else None,
            "timed_blocks": len(per_iter),
            "block_s_per_iter": list(per_iter)}


def load_average():
    """1-minute load average: other processes on the machine skew every timing."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else None


# ------------------------------------------------------------------ the contestants
def bench_openspiel_cpp(pyspiel, game, checkpoints, block, eval_repeats, cap_s):
    solver, setup = timed(pyspiel.CFRPlusSolver, game)

    def step_n(n):
        for _ in range(n):
            solver.evaluate_and_update_policy()

    def evaluate():
        return float(pyspiel.exploitability(game, solver.average_policy()))

    load_before = load_average()
    per_iter, expl, done, capped = _drive(step_n, evaluate, checkpoints, block, cap_s=cap_s)
    result = {"setup_s": setup, "compile_s": None, **block_stats(per_iter),
              "block_iters": block, "iterations_done": done, "capped": capped,
              "exploitability": {str(k): v for k, v in expl.items()}, "dtype": "float64",
              "load_average_1min": _loads(load_before, load_average())}
    # Evaluation time of pyspiel.exploitability on the C++ average policy: as the solver
    # hands it out (a CFRAveragePolicy view) and as a TabularPolicy copy (faster).
    average, tabular = solver.average_policy(), solver.tabular_average_policy()
    result["eval_ms_average_policy"] = 1e3 * _median_time(
        lambda: pyspiel.exploitability(game, average), eval_repeats)
    result["eval_ms_tabular_policy"] = 1e3 * _median_time(
        lambda: pyspiel.exploitability(game, tabular), eval_repeats)
    # pyspiel.exploitability builds every player's best-response tree on each call. A
    # user scoring many policies can build them once and swap each policy in
    # (TabularBestResponse.set_policy): timed so, OpenSpiel's setup is left out, as
    # ours leaves out compile_game and the jit compile. Zero-sum: NashConv is the sum
    # of the best-response values, checked against pyspiel.exploitability.
    players = game.num_players()
    responders = [pyspiel.TabularBestResponse(game, p, tabular) for p in range(players)]
    root = game.new_initial_state().history_str()

    def reused():
        for r in responders:
            r.set_policy(tabular)
        return sum(r.value(root) for r in responders) / players

    result["eval_ms_reused_best_responses"] = 1e3 * _median_time(reused, eval_repeats)
    result["reused_best_responses_agree"] = bool(
        abs(reused() - pyspiel.exploitability(game, tabular)) < 1e-9)
    return result


def bench_jaxcfr(jax, pyspiel, game, checkpoints, block, cap_s):
    from open_spiel.python import policy as os_policy  # noqa: PLC0415
    from open_spiel.python.jax.cfr.jax_cfr import JaxCFR  # noqa: PLC0415

    solver, setup = timed(JaxCFR, game)  # regret_matching_plus, alternating, linear

    def step_n(n):
        solver.multiple_steps(n)  # a Python loop over jitted per-player steps
        jax.block_until_ready((solver.regrets, solver.averages))

    _, compile_s = timed(step_n, 1)

    def evaluate():
        tabular = os_policy.python_policy_to_pyspiel_policy(solver.average_policy())
        return float(pyspiel.exploitability(game, tabular))

    load_before = load_average()
    per_iter, expl, done, capped = _drive(step_n, evaluate, checkpoints, block, done=1,
                                          cap_s=cap_s)
    loads = _loads(load_before, load_average())
    dtype = str(solver.regrets[0].dtype)
    solver = None  # free its device arrays before the next solver (the closures are done)
    gc.collect()
    return {"setup_s": setup, "compile_s": compile_s, **block_stats(per_iter),
            "block_iters": block, "iterations_done": done, "capped": capped,
            "exploitability": {str(k): v for k, v in expl.items()}, "dtype": dtype,
            "load_average_1min": loads}


def bench_jaxsolve(jax, jaxsolve, pyspiel, os_game, tree, setup_s, checkpoints, block,
                   repeats, eval_repeats, solver_name="cfr+"):
    """jaxsolve's `solver_name` (CFR+ by default) on `tree` (host arrays): placed on the
    device once, then blocks of `block` iterations in one compiled call each, the state
    donated from call to call."""
    import numpy as np  # noqa: PLC0415

    from jaxsolve.builders import tree_bytes  # noqa: PLC0415

    mem_before = device_memory(jax)
    tree_dev, put_s = timed(lambda: jax.block_until_ready(jax.device_put(tree)))
    mem_tree = device_memory(jax)

    solver = jaxsolve.SOLVERS[solver_name]()
    run = jax.jit(jaxsolve.run, static_argnums=(0,), donate_argnums=(2,))
    average = jax.jit(jaxsolve.average_policy)

    def run_block(state, n):
        return jax.block_until_ready(run(solver, tree_dev, state, n))

    # init shares one zeros array among four fields: copy, so each donated buffer is
    # distinct. The zero-iteration call compiles (the count is traced).
    state = jax.tree.map(lambda x: x.copy(), solver.init(tree_dev))
    state, compile_s = timed(run_block, state, 0)

    per_iter, policies, done = [], {}, 0
    load_before = load_average()
    for target in checkpoints:
        while done < target:
            n = min(block, target - done)
            state, seconds = timed(run_block, state, n)
            if n == block:
                per_iter.append(seconds / n)
            done += n
        policies[target] = jax.block_until_ready(average(tree_dev, state))
    while len(per_iter) < repeats:
        state, seconds = timed(run_block, state, block)
        per_iter.append(seconds / block)
        done += block
    loads = _loads(load_before, load_average())
    mem_run = device_memory(jax)
    dtype = str(state.regrets.dtype)
    del state

    exploitability = jax.jit(jaxsolve.exploitability)
    first, last = policies[checkpoints[0]], policies[checkpoints[-1]]
    _, eval_compile_s = timed(lambda: jax.block_until_ready(exploitability(tree_dev, first)))
    expl = {str(k): float(exploitability(tree_dev, p)) for k, p in policies.items()}
    eval_s = _median_time(lambda: jax.block_until_ready(exploitability(tree_dev, last)),
                          eval_repeats)
    mem_eval = device_memory(jax)

    check, compared, tolerance = {}, {}, None
    if os_game is not None:  # pyspiel's exploitability of our average policies
        from jaxsolve.openspiel import to_tabular_policy  # noqa: PLC0415

        utilities = np.asarray(tree.utilities)
        payoff_scale = float(max(utilities.max(), -utilities.min()))  # max |payoff|
        rtol, atol = check_tolerance(dtype, payoff_scale)
        tolerance = {"rtol": rtol, "atol": atol, "payoff_scale": payoff_scale}
        for k, p in policies.items():
            tabular = pyspiel.TabularPolicy(
                to_tabular_policy(tree, os_game, np.asarray(p)).to_dict())
            check[str(k)] = float(pyspiel.exploitability(os_game, tabular))
            compared[str(k)] = compare_check(expl[str(k)], check[str(k)], rtol, atol)
    # Free the device arrays before the OpenSpiel solvers run (the closures above that
    # capture them are done; None rather than `del`, which linters misread there).
    tree_dev = policies = first = last = p = None
    gc.collect()

    def stat(m, key):
        return None if m is None else m.get(key)

    return {"setup_s": setup_s, "compile_s": compile_s, **block_stats(per_iter),
            "block_iters": block, "iterations_done": done, "capped": False,
            "exploitability": expl, "exploitability_by_pyspiel": check or None,
            "exploitability_check": compared or None,
            "check_tolerance": tolerance,
            "eval_ms": 1e3 * eval_s, "eval_compile_s": eval_compile_s, "dtype": dtype,
            "device_put_s": put_s, "load_average_1min": loads,
            "memory": {
                "tree_bytes": tree_bytes(tree),
                "device_bytes_limit": stat(mem_tree, "bytes_limit"),
                "device_bytes_in_use_before_tree": stat(mem_before, "bytes_in_use"),
                "device_bytes_in_use_after_tree": stat(mem_tree, "bytes_in_use"),
                "device_peak_bytes_after_iterations": stat(mem_run, "peak_bytes_in_use"),
                "device_peak_bytes_after_evaluation": stat(mem_eval, "peak_bytes_in_use"),
                "host_peak_rss_bytes": peak_rss(),
            },
            "tree": {"nodes": tree.sizes.num_nodes, "infosets": tree.sizes.num_infosets,
                     "max_actions": tree.sizes.num_actions,
                     "terminals": tree.sizes.num_terminals}}
