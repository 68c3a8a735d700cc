"""When `jaxsolve solve` and `sweep` evaluate the exploitability: the schedule that
--target and --eval-every choose, described in their output.

The gaps are `jaxsolve.stopping.check_gap`, the definition `jaxsolve.run_until` runs
too. With --target and no --eval-every, both commands check every 10 iterations, or
every 10% of the iterations done where that is more: an evaluation costs about one
iteration, so the checks take at most a tenth of the run, and a run stops at most 10
iterations or 10% past the check that first could have stopped it. `--eval-every K`
checks every K iterations instead.
"""

from __future__ import annotations

from typing import NamedTuple

from jaxsolve.cli._base import CLIError
from jaxsolve.stopping import CHECK_EVERY, CHECK_GROWTH_PERCENT, check_gap, check_iterations

# The help of --eval-every and --target, as solve and sweep both print it.
SCHEDULE_HELP = (f"every {CHECK_EVERY} iterations, or every {CHECK_GROWTH_PERCENT}%% of the "
                 "iterations done where that is more")


class Schedule(NamedTuple):
    """Checks `every` iterations apart, or `growth_percent` % of the iterations done
    apart where that is more (0: exactly `every` apart)."""

    every: int
    growth_percent: int = 0

    def gap(self, iteration: int) -> int:
        """Iterations from a check at `iteration` to the next."""
        return check_gap(iteration, self.every, self.growth_percent)

    def checks(self, start: int, stop: int) -> list[int]:
        """The iterations a run from `start` to `stop` checks (`stop` included)."""
        return check_iterations(start, stop, self.every, self.growth_percent)

    def end_after(self, start: int, length: int) -> int:
        """The first check at least `length` iterations after a check at `start`."""
        if not self.growth_percent:
            return start + -(-length // self.every) * self.every
        at = start
        while at < start + length:
            at += self.gap(at)
        return at

    def describe(self) -> str:
        """'every 10 iterations up to iteration 100, then every 10% of the iterations
        done', or 'every K iterations'."""
        if not self.growth_percent:
            return f"every {self.every} iteration{'s' * (self.every != 1)}"
        knee = -(-100 * self.every // self.growth_percent)
        return (f"every {self.every} iterations up to iteration {knee}, then every "
                f"{self.growth_percent}% of the iterations done")

    def record(self) -> dict:
        """The schedule's fields in a run's records (checkpoint, strategy.json, sweep.json)."""
        return {"eval_every": self.every, "check_growth_percent": self.growth_percent}


TARGET_SCHEDULE = Schedule(CHECK_EVERY, CHECK_GROWTH_PERCENT)


def schedule(args, every_without_target: int) -> Schedule:
    """The schedule of a command's --eval-every, --target and --iters: every K with
    `--eval-every K`; else the growing schedule with a target; else every
    `every_without_target` iterations. `--eval-every` past --iters is refused: the run
    would check only at its end."""
    if args.eval_every is not None:
        if args.eval_every > args.iters:
            raise CLIError(f"--eval-every {args.eval_every} is more than --iters "
                           f"{args.iters}: the run would check only at its end; give at most "
                           f"--eval-every {args.iters}, or leave it out")
        return Schedule(args.eval_every)
    if args.target is not None:
        return TARGET_SCHEDULE
    return Schedule(every_without_target)


def last_checks(history: list[dict], count: int = 3) -> str:
    """'1210: 1.23e-03, 1331: 9.87e-04': the last `count` checks of a run's record."""
    return ", ".join(f"{r['iteration']}: {r['exploitability']:.3g}" for r in history[-count:])


__all__ = ["SCHEDULE_HELP", "Schedule", "TARGET_SCHEDULE", "last_checks", "schedule"]
