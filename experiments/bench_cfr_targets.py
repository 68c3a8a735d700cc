"""The speed targets that bench_cfr judges (per-iteration ratios against OpenSpiel's
solvers, ms per iteration on one H200), and its verdicts: `met` is True or False, or
None with the reason where this run cannot judge a target (not measured, an H200
target off an H200, a --quick smoke run, another --solver than CFR+). Figures printed
beside a verdict never round onto its other side."""

from __future__ import annotations

import math

from machine import figure_beside


RATIO_TARGETS = [  # (game, ratio key, at least, description)
    ("leduc", "cpp_ms_per_iter_over_jaxsolve", 10, "Leduc >= 10x faster/iter than C++ CFR+"),
    ("leduc", "jaxcfr_ms_per_iter_over_jaxsolve", 3, "Leduc >= 3x faster/iter than JaxCFR"),
    ("liars", "cpp_ms_per_iter_over_jaxsolve", 3, "liar's dice >= 3x faster/iter than C++"),
    # Judged with OpenSpiel's best-response trees built once, as our compile is left
    # out: pyspiel.exploitability rebuilds them on every call, which the call-for-call
    # ratio (pyspiel_exploitability_over_jaxsolve, ~2.6x this one) counts on its side only.
    ("leduc", "pyspiel_reused_best_responses_over_jaxsolve", 10,
     "Leduc exploitability >= 10x faster than pyspiel's (setup left out on both sides)"),
]
MS_TARGETS = [  # (game, at most ms per jaxsolve CFR+ iteration, description)
    ("goofspiel7", 8.0, "Goofspiel-7 <= 8 ms per CFR+ iteration (target on one H200)"),
    ("leduc", 0.3, "Leduc <= 0.3 ms per CFR+ iteration (target on one H200)"),
]
_SMOKE = ("smoke run (--quick: fewer and shorter timed blocks than the target assumes), "
          "not a verdict")


def _on_h200(result: dict, probe: dict | None) -> tuple[bool, str]:
    """(whether `result` ran on an H200 GPU, 'backend/device kind'), from the game's own
    worker where it recorded them (a --merge can mix runs), else from the probe."""
    facts = result if result.get("jax_backend") else (probe or {})
    backend, kind = facts.get("jax_backend"), facts.get("device_kind") or ""
    return backend == "gpu" and "H200" in kind, f"{backend or 'unknown'}/{kind or 'unknown'}"


def _check(text, value, threshold, at_least, unit, decimals, reason=None):
    met = None
    if value is not None and reason is None:
        met = value >= threshold if at_least else value <= threshold
    return {"target": text, "value": value, "threshold": threshold, "at_least": at_least,
            "unit": unit, "decimals": decimals, "met": met,
            "reason": reason if value is not None else "not measured in this run"}


MIN_BLOCKS = 3  # a per-iteration ratio from fewer timed blocks on a side is one sample
# The competitor each per-iteration ratio compares jaxsolve with (its key in a result).
_COMPETITOR = {"cpp_ms_per_iter_over_jaxsolve": "openspiel_cpp",
               "jaxcfr_ms_per_iter_over_jaxsolve": "jaxcfr"}


def _too_few_blocks(result: dict, key: str) -> str | None:
    """Why a per-iteration ratio cannot be judged: a side timed in fewer than
    MIN_BLOCKS blocks (--liars-iters 20 timed C++ in one block of 20, its cold first
    iteration included)."""
    if key not in _COMPETITOR:
        return None
    few = [f"{side} {r['timed_blocks']}" for side in ("jaxsolve", _COMPETITOR[key])
           if isinstance(r := result.get(side), dict)
           and r.get("timed_blocks", MIN_BLOCKS) < MIN_BLOCKS]
    return (f"fewer than {MIN_BLOCKS} timed blocks ({', '.join(few)}): raise the "
            "iterations") if few else None


def _other_solver(result) -> str | None:
    """Why a CFR+ target cannot be judged from a run of another solver (--solver)."""
    solver = result.get("solver", "cfr+")
    return None if solver == "cfr+" else f"the target is for CFR+, this run is {solver}"


def targets(results, probe=None, quick=False):
    """The speed targets. `met` is None (with a `reason`) where the run cannot
    judge one: not measured, an H200 target off an H200 (from `probe`, the machine
    facts), or a quick run's shortened timing."""
    checks = []
    for game, key, threshold, text in RATIO_TARGETS:
        result = results.get(game, {})
        value = result.get("ratios", {}).get(key)
        reason = _SMOKE if result.get("quick", quick) else (_other_solver(result)
                                                              or _too_few_blocks(result, key))
        checks.append(_check(text, value, threshold, True, "x", 3, reason))
    for game, limit, text in MS_TARGETS:
        result = results.get(game, {})
        value = (result.get("jaxsolve") or {}).get("ms_per_iter")
        h200, where = _on_h200(result, probe)
        reason = (None if h200 else f"not measured on an H200 (ran on {where})")
        if reason is None and result.get("quick", quick):
            reason = _SMOKE
        reason = reason or _other_solver(result)
        checks.append(_check(text, value, limit, False, " ms",
                             sig_decimals(value, 4) if value else 4, reason))
    liars = results.get("liars", {})
    if liars.get("tree_source") == "pyspiel":  # compile_game does not change with --quick
        checks.append(_check("liar's dice compile_game <= 15 s",
                             liars["jaxsolve"]["setup_s"], 15, False, " s", 3))
    return checks


def format_check(check) -> str:
    """One target line: the value with enough digits, then met / NOT met / not judged."""
    value = figure_beside(check["value"], check["threshold"], check["decimals"])
    if check["met"] is None:
        verdict = f"not judged: {check['reason']}"
    else:
        verdict = "met" if check["met"] else "NOT met"
    return f"target: {check['target']}: {value}{check['unit']} ({verdict})"


def sig_decimals(value: float, sig: int) -> int:
    """Decimals that give `value` `sig` significant digits in fixed point."""
    if not value or not math.isfinite(value):
        return 0
    return max(sig - 1 - math.floor(math.log10(abs(value))), 0)
