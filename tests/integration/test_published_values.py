"""The field's published numbers, reproduced by our solvers and evaluators.

Kuhn poker's value for player 0 is -1/18 (Kuhn 1950); the uniform profile's NashConv
is 11/12 in Kuhn and 4.747222222 in Leduc; Leduc's value is -0.0856064 (Lanctot
et al.; OpenSpiel's tests). These are computed by nobody here.
"""

import pytest

import jaxsolve
from conftest import AVERAGE, NASH_CONV, POLICY_VALUE, builtin_tree, solve

KUHN_VALUE = -1.0 / 18.0
LEDUC_VALUE = -0.0856064


@pytest.mark.float64  # the published digits
def test_uniform_nash_conv_kuhn():
    tree = builtin_tree("kuhn_poker")
    assert float(NASH_CONV(tree, jaxsolve.uniform_policy(tree))) == pytest.approx(11 / 12, abs=1e-12)


@pytest.mark.float64  # the published digits
def test_uniform_nash_conv_leduc():
    tree = builtin_tree("leduc_poker")
    assert float(NASH_CONV(tree, jaxsolve.uniform_policy(tree))) == pytest.approx(4.747222222, abs=1e-9)


def test_kuhn_value_after_cfr():
    tree = builtin_tree("kuhn_poker")
    state = solve(jaxsolve.cfr(), tree, 2000)
    value = POLICY_VALUE(tree, AVERAGE(tree, state))
    assert float(value[0]) == pytest.approx(KUHN_VALUE, abs=1e-3)
    assert float(value[0] + value[1]) == pytest.approx(0.0, abs=1e-12)


def test_leduc_value_after_cfr_plus():
    tree = builtin_tree("leduc_poker")
    state = solve(jaxsolve.cfr_plus(), tree, 1000)
    policy = AVERAGE(tree, state)
    assert float(POLICY_VALUE(tree, policy)[0]) == pytest.approx(LEDUC_VALUE, abs=1e-3)
    assert float(NASH_CONV(tree, policy)) < 1e-3


def test_three_player_kuhn_cfr_plus_approaches_equilibrium():
    # CFR need not converge in 3-player games, but in 3-player Kuhn poker it is known
    # to reach low NashConv (Risk & Szafron 2010); our NashConv is checked against
    # OpenSpiel's in test_openspiel_parity.
    tree = builtin_tree("kuhn_poker", players=3)
    state = solve(jaxsolve.cfr_plus(), tree, 3000)
    assert float(NASH_CONV(tree, AVERAGE(tree, state))) < 5e-3
