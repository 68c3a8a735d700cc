"""The README's API example runs as printed (on Kuhn instead of Leduc, for time)."""

import re
from pathlib import Path

import numpy as np


def test_readme_example_runs(capsys):
    text = (Path(__file__).parent.parent / "README.md").read_text()
    block = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    assert "jaxsolve.sweep" in block and "jaxsolve.run" in block
    scope = {}
    exec(compile(block.replace('"leduc_poker"', '"kuhn_poker"'), "README.md", "exec"), scope)
    states, tree = scope["states"], scope["tree"]
    assert states.average.shape == (64,) + np.shape(tree.legal)
    exploitability, value = capsys.readouterr().out.split(" ", 1)
    assert float(exploitability) < 1e-3 and "-0.0555" in value  # Kuhn's value is -1/18


def test_readme_sampling_and_abstraction_example_runs(capsys):
    """The second block (Monte-Carlo CFR, seed 004's masks, final strategies, an
    abstraction) runs as printed on the Leduc tree the first block builds, with 100
    iterations instead of 1000; the lifted coarse policy is a valid policy of the true
    game, so its exploitability there is a finite positive number."""
    import jax

    import games
    import jaxsolve

    text = (Path(__file__).parent.parent / "README.md").read_text()
    block = re.findall(r"```python\n(.*?)```", text, re.S)[1]
    assert "sampled_cfr" in block and "abstraction.abstract" in block
    scope = {"jax": jax, "np": np, "games": games, "jaxsolve": jaxsolve,
             "tree": jaxsolve.compile_game(games.load("leduc_poker")),
             "run": jax.jit(jaxsolve.run, static_argnums=0)}
    exec(compile(block.replace(", 1000)", ", 100)"), "README.md", "exec"), scope)
    lifted, tree = np.asarray(scope["lifted"]), scope["tree"]
    assert lifted.shape == np.shape(tree.legal)
    np.testing.assert_allclose(lifted.sum(1), 1.0, atol=1e-5)
    assert 0 < float(capsys.readouterr().out) < 5.0  # Leduc payoffs lie in [-13, 13]
    assert scope["mine_state"].average.shape == np.shape(tree.legal)
