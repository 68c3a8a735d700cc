"""Every public name imports, and the registry lists what loads."""

import jaxsolve
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
    import pytest
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
    with pytest.raises(jaxsolve.ArgumentError, match="^run: num_iterations must be at least 0"):
        jaxsolve.run(jaxsolve.cfr_plus(), tree, jaxsolve.cfr_plus().init(tree), -1)
