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
