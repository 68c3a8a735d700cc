"""Convergence and sweep plots, drawn with matplotlib's Agg canvas (no display, no pyplot state)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping


def plot_convergence(history: Iterable[Mapping[str, float]], path: str | Path, *,
                     title: str, metric: str = "exploitability") -> Path:
    """Writes a log-log plot of `metric` against iterations to `path` (a PNG).

    Args:
      history: records with "iteration" and `metric` keys, as in convergence.json.
      path: where to write the image.
      title: the plot title (e.g. "kuhn_poker - cfr+").
      metric: which value to plot. Points that are not positive (exact zeros, or
        float round-off below zero) cannot be shown on a log axis and are left out.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: PLC0415
    from matplotlib.figure import Figure  # noqa: PLC0415

    points = [(r["iteration"], r[metric]) for r in history
              if r["iteration"] > 0 and r[metric] > 0]
    fig = Figure(figsize=(6.4, 4.4), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    if points:
        xs, ys = zip(*points)
        ax.plot(xs, ys, marker="." if len(xs) < 60 else None, linewidth=1.5)
        ax.set_xscale("log")
        ax.set_yscale("log")
    else:
        ax.text(0.5, 0.5, f"no positive {metric} to plot", ha="center", va="center",
                transform=ax.transAxes)
    ax.set_xlabel("iterations")
    ax.set_ylabel(metric)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, format="png")
    return path


__all__ = ["plot_convergence"]


def plot_sweep(points: list[Mapping[str, Any]], key: str, path: str | Path,
               labels: list[str], title: str, target: float | None = None) -> Path:
    """Writes `jaxsolve sweep`'s plot to `path` (a PNG): each player's value against the
    varied parameter `key`, and the exploitability on a log axis beside it; with a
    `target`, also the iterations each point needed to reach it (hollow markers where
    the cap stopped it first) and the target as a line on the exploitability axis.

    Args:
      points: records with "value" (the parameter's), "values" (one per player) and
        "exploitability", as in sweep.json (and "iterations" with a target).
      labels: the parameter's values as text, for the axis when they are not numbers
        (the points are then placed by position).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: PLC0415
    from matplotlib.figure import Figure  # noqa: PLC0415

    numeric = all(isinstance(p["value"], (int, float)) and not isinstance(p["value"], bool)
                  for p in points)
    xs = [p["value"] for p in points] if numeric else list(range(len(points)))
    panels = 2 if target is None else 3
    fig = Figure(figsize=(4.8 * panels, 4.2), dpi=100)
    FigureCanvasAgg(fig)
    axes = [fig.add_subplot(1, panels, k + 1) for k in range(panels)]
    left, right = axes[:2]
    for player in range(len(points[0]["values"])):
        left.plot(xs, [p["values"][player] for p in points], marker="o", label=f"player {player}")
    left.set_ylabel("value of the solved strategy")
    left.legend()
    shown = [(x, p["exploitability"]) for x, p in zip(xs, points) if p["exploitability"] > 0]
    if shown:
        right.plot(*zip(*shown), marker="o", color="C3")
        right.set_yscale("log")
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
    for ax in axes:
        ax.set_xlabel(key)
        ax.grid(True, alpha=0.3)
        if not numeric:
            ax.set_xticks(xs, labels, rotation=30, ha="right", fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path)
    return Path(path)
