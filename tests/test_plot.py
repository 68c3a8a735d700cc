"""The plots show what the records hold: no point silently dropped."""

import numpy as np

from jaxsolve.plot import convergence_figure, sweep_figure


def _lines(ax):
    return [(np.asarray(line.get_xdata()).tolist(), np.asarray(line.get_ydata()).tolist(),
             line.get_label())
            for line in ax.get_lines()]


def test_exact_zeros_are_marked_below_the_log_axis_not_dropped():
    # DCFR on spoof reaches exploitability 0.0 exactly; the plot stopped there.
    history = [{"iteration": i, "exploitability": e}
               for i, e in [(1, 0.5), (10, 0.01), (100, 0.0), (1000, 0.0)]]
    [line, zeros] = _lines(convergence_figure(history, title="t").axes[0])
    assert line[:2] == ([1, 10], [0.5, 0.01])
    assert zeros[0] == [100, 1000]
    assert np.allclose(zeros[1], [0.001, 0.001]) and zeros[2] == "<= 0 (drawn at 1e-03)"


def test_a_sweep_draws_every_player_of_every_point():
    """players=2:4:3: the 3- and 4-player games have players the first point lacks."""
    points = [{"value": n, "values": [float(p) for p in range(n)], "exploitability": e}
              for n, e in [(2, 0.1), (3, 0.0), (4, 0.2)]]
    fig = sweep_figure(points, "players", ["2", "3", "4"], "t")
    values, exploitability = fig.axes[:2]
    lines = _lines(values)
    assert [label for *_, label in lines] == ["player 0", "player 1", "player 2", "player 3"]
    assert lines[2][:2] == ([3, 4], [2.0, 2.0]) and lines[3][:2] == ([4], [3.0])
    [line, zeros] = _lines(exploitability)
    assert line[0] == [2, 4] and zeros[0] == [3]
    assert all(float(t).is_integer() for t in values.get_xticks())  # no player count 2.5


def test_a_targeted_runs_plot_draws_its_target():
    """solve --target drew no target line on convergence.png, while sweep's plot did."""
    history = [{"iteration": i, "exploitability": 1.0 / i} for i in (10, 20, 40)]
    assert len(_lines(convergence_figure(history, title="t").axes[0])) == 1
    ax = convergence_figure(history, title="t", target=0.05).axes[0]
    [_, target] = _lines(ax)
    assert target[1:] == ([0.05, 0.05], "target 0.05")
