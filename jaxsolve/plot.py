"""Convergence and sweep plots, drawn with matplotlib's Agg canvas (no display, no pyplot state)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _on_log_axis(ax, xs, ys, **style) -> None:
    """`ys` against `xs` on a log y axis. Values that are not positive (an exact
    zero: a solver at an exact equilibrium) have no place there; they are drawn as
    downward triangles at a floor a decade below the smallest positive value (1e-16
    if none is), labelled, instead of vanishing from the plot."""
    positive = [(x, y) for x, y in zip(xs, ys) if y > 0]
    zero = [x for x, y in zip(xs, ys) if y <= 0]  # (NaN is neither: not drawn)
    floor = min((y for _, y in positive), default=1e-15) / 10
    if positive:
        ax.plot(*zip(*positive), **style)
    if zero:
        ax.plot(zero, [floor] * len(zero), linestyle="none", marker="v",
                color=style.get("color", "C3"), label=f"<= 0 (drawn at {floor:.0e})")
        ax.legend()
    ax.set_yscale("log")


def plot_convergence(history: Iterable[Mapping[str, float]], path: str | Path, *,
                     title: str, metric: str = "exploitability",
                     target: float | None = None) -> Path:
    """Writes `convergence_figure(history, title=title, metric=metric, target=target)` to
    `path` as a PNG.

    Args:
      history: records with "iteration" and `metric` keys, as in convergence.json.
      path: the PNG file to write.
      title: the plot title.
      metric: which value to plot.
      target: drawn as a dashed line, if positive.

    Returns:
      `path`, as a `Path`.
    """
    path = Path(path)
    convergence_figure(history, title=title, metric=metric, target=target).savefig(
        path, format="png")
    return path


def convergence_figure(history: Iterable[Mapping[str, float]], *, title: str,
                       metric: str = "exploitability", target: float | None = None) -> Figure:
    """A log-log plot of `metric` against iterations.

    Args:
      history: records with "iteration" and `metric` keys, as in convergence.json.
      title: the plot title (e.g. "kuhn_poker - cfr+").
      metric: which value to plot. Points that are not positive (exact zeros, or float
        round-off below zero) have no place on a log axis: they are marked at a floor
        below the others, labelled.
      target: drawn as a dashed line (a `--target` run's), if positive.

    Returns:
      A matplotlib `Figure` (Agg canvas, no pyplot state).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: PLC0415 - slow to import
    from matplotlib.figure import Figure  # noqa: PLC0415 - slow to import

    points = [(r["iteration"], r[metric]) for r in history if r["iteration"] > 0]
    fig = Figure(figsize=(6.4, 4.4), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    if points:
        xs, ys = zip(*points)
        _on_log_axis(ax, xs, ys, marker="." if len(xs) < 60 else None, linewidth=1.5,
                     color="C0")
        ax.set_xscale("log")
    else:
        ax.text(0.5, 0.5, f"no {metric} recorded", ha="center", va="center",
                transform=ax.transAxes)
    if target is not None and target > 0:
        ax.axhline(target, color="k", linestyle="--", linewidth=1, label=f"target {target:g}")
        ax.legend()
    ax.set_xlabel("iterations")
    ax.set_ylabel(metric)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    return fig


def plot_sweep(points: list[Mapping[str, Any]], key: str, path: str | Path,
               labels: list[str], title: str, target: float | None = None) -> Path:
    """Writes `sweep_figure(points, key, labels, title, target)` to `path` as a PNG.

    Args:
      points: as `sweep_figure` takes them.
      key: the varied parameter's name.
      path: the PNG file to write.
      labels: the parameter's values as text.
      title: the figure's title.
      target: the target exploitability, if the sweep had one.

    Returns:
      `path`, as a `Path`.
    """
    sweep_figure(points, key, labels, title, target).savefig(path)
    return Path(path)


def sweep_figure(points: list[Mapping[str, Any]], key: str, labels: list[str], title: str,
                 target: float | None = None) -> Figure:
    """`jaxsolve sweep`'s plot: each player's value against the varied parameter `key`, and
    the exploitability on a log axis beside it.

    With a `target`, also the iterations each point needed to reach it (hollow markers
    where the cap stopped it first) and the target as a line on the exploitability axis.

    Args:
      points: records with "value" (the parameter's), "values" (one per player) and
        "exploitability", as in sweep.json (and "iterations" with a target).
      key: the varied parameter's name, the x axis's label.
      labels: the parameter's values as text, for the axis when they are not numbers
        (the points are then placed by position).
      title: the figure's title.
      target: the target exploitability, if the sweep had one.

    Returns:
      A matplotlib `Figure` (Agg canvas, no pyplot state).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: PLC0415 - slow to import
    from matplotlib.figure import Figure  # noqa: PLC0415 - slow to import
    from matplotlib.ticker import MaxNLocator  # noqa: PLC0415 - slow to import

    numeric = all(isinstance(p["value"], (int, float)) and not isinstance(p["value"], bool)
                  for p in points)
    xs = [p["value"] for p in points] if numeric else list(range(len(points)))
    panels = 2 if target is None else 3
    fig = Figure(figsize=(4.8 * panels, 4.2), dpi=100)
    FigureCanvasAgg(fig)
    axes = [fig.add_subplot(1, panels, k + 1) for k in range(panels)]
    left, right = axes[:2]
    # The player count may vary with the parameter (players=2:4:3): every player
    # that any point has gets a line, over the points that have it.
    for player in range(max(len(p["values"]) for p in points)):
        has = [(x, p["values"][player]) for x, p in zip(xs, points) if len(p["values"]) > player]
        left.plot(*zip(*has), marker="o", label=f"player {player}")
    left.set_ylabel("value of the solved strategy")
    left.legend()
    _on_log_axis(right, xs, [p["exploitability"] for p in points], marker="o", color="C3")
    right.set_ylabel("exploitability")
    if target is not None:
        if target > 0:
            right.axhline(target, color="k", linestyle="--", linewidth=1, label="target")
            right.legend()
        count = axes[2]
        reached = [p["exploitability"] <= target for p in points]
        count.plot(xs, [p["iterations"] for p in points], color="C2")
        for x, p, ok in zip(xs, points, reached):
            count.plot([x], [p["iterations"]], marker="o", color="C2",
                       markerfacecolor="C2" if ok else "none")
        count.set_ylabel(f"iterations to exploitability <= {target:g}")
    integer = numeric and all(isinstance(x, int) for x in xs)
    for ax in axes:
        ax.set_xlabel(key)
        ax.grid(True, alpha=0.3)
        if integer:  # players=2:4:3 has no player count 2.5 between its ticks
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        if not numeric:
            ax.set_xticks(xs, labels, rotation=30, ha="right", fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


__all__ = ["convergence_figure", "plot_convergence", "plot_sweep", "sweep_figure"]
