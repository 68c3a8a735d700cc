"""Every public name imports, and the registry lists what loads."""

import jax
import numpy as np
import pytest

import jaxsolve
from conftest import builtin_tree
from jaxsolve import games


def test_every_public_name_is_exported():
    missing = [name for name in jaxsolve.__all__ if not hasattr(jaxsolve, name)]
    assert not missing
    assert len(set(jaxsolve.__all__)) == len(jaxsolve.__all__)


def test_solver_factories_are_cached_and_named():
    for name, factory in jaxsolve.SOLVERS.items():
        solver = factory()
        assert solver is factory() and solver.name.startswith(name.split("-")[0])


def test_every_registered_game_loads_and_rejects_unknown_parameters():
    for name in games.names():
        assert games.load(name).num_players() >= 2
        with pytest.raises(ValueError, match="no parameter 'bogus'"):
            games.load(name, bogus=1)
    with pytest.raises(KeyError, match="unknown game"):
        games.load("nope")


def test_argument_errors_are_exported_and_catchable_as_value_or_type_errors():
    import pytest
    tree = jaxsolve.compile_game(games.load("kuhn_poker"))
    with pytest.raises(jaxsolve.ArgumentTypeError) as wrong_kind:
        jaxsolve.run("cfr+", tree, jaxsolve.cfr_plus().init(tree), 1)
    assert isinstance(wrong_kind.value, TypeError) and isinstance(wrong_kind.value, ValueError)
    with pytest.raises(jaxsolve.ArgumentError, match=r"^run: num_iterations must be an integer in \[0, 2,147,483,647\]"):
        jaxsolve.run(jaxsolve.cfr_plus(), tree, jaxsolve.cfr_plus().init(tree), -1)


def test_every_solver_is_initialised_alike_and_declares_whether_it_samples():
    """`init(tree, key=None)` for every built-in solver; `samples` says which draw from
    the key (their states carry it). A full-width solver's key changes nothing."""
    tree = builtin_tree("kuhn_poker")
    key = jax.random.PRNGKey(3)
    sampling = []
    for name, make in jaxsolve.SOLVERS.items():
        solver = make()
        state = solver.init(tree, key)
        assert solver.samples == ("key" in type(state)._fields), name
        if solver.samples:
            sampling.append(name)
            assert np.array_equal(state.key, key), name
        else:
            fresh = solver.init(tree)
            assert all(np.array_equal(a, b) for a, b in zip(state, fresh)), name
    assert sorted(sampling) == ["es-mccfr", "os-mccfr"]
    assert jaxsolve.sampled_cfr().samples and not jaxsolve.cfr_variant("mine").samples
    own = jaxsolve.Solver(lambda tree, key=None: 0, lambda tree, state: state, "mine")
    assert own.samples is False
    with pytest.raises(jaxsolve.ArgumentError, match="cfr\\+.init"):
        jaxsolve.cfr_plus().init(tree, 7)
