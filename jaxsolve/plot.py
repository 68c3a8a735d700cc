"""Convergence plots, drawn with matplotlib's Agg canvas (no display, no pyplot state)."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Mapping


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
