"""Bad input to the CFR solvers' public array API is refused at the edge, by name
(jaxsolve.validate), and the checks cost nothing under jit and vmap.

One test per kind of bad input; each asserts the exception type and what the
message says. Errors raise before anything is traced, so only the last tests
compile (Kuhn-sized)."""

import importlib
import inspect
import math
import pkgutil
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxsolve
from conftest import AVERAGE, EXPLOITABILITY, POLICY_VALUE, RUN, builtin_tree
from jaxsolve import abstraction, games
from jaxsolve.errors import ArgumentError, ArgumentTypeError

GAME_NOT_TREE = (r"expected a GameTree \(compile the game with jaxsolve.compile_game\), "
                 "got KuhnPoker")


@pytest.fixture(scope="module")
def kuhn():
    return builtin_tree("kuhn_poker")


@pytest.fixture(scope="module")
def kuhn3():
    return builtin_tree("kuhn_poker", players=3)


@pytest.fixture(scope="module")
def policy(kuhn):
    """A [12, 2] Kuhn policy that is not uniform."""
    p = np.asarray(jaxsolve.uniform_policy(kuhn)).copy()
    p[0] = [0.8, 0.2]
    return jnp.asarray(p)


@pytest.fixture(scope="module")
def blind():
    """Kuhn with the private card dropped: 4 coarse infosets for 12 true ones."""
    return abstraction.abstract(
        games.load("kuhn_poker"), lambda s, p: f"p{p} " + "".join("pb"[a] for a in s._bets))


def test_argument_errors_are_value_errors_and_type_errors_also_type_errors():
    assert issubclass(ArgumentError, jaxsolve.GameError) and issubclass(ArgumentError, ValueError)
    assert issubclass(ArgumentTypeError, ArgumentError) and issubclass(ArgumentTypeError, TypeError)


# `python -m jaxsolve`: importing it runs the command line.
COMMAND_LINE = ("jaxsolve.__main__",)


def _library_modules():
    # jaxsolve.games is installed from the repository's games/ folder, outside
    # jaxsolve/'s own: walked on its own path.
    names = [m.name for path, prefix in ((jaxsolve.__path__, "jaxsolve."),
                                         (jaxsolve.games.__path__, "jaxsolve.games."))
             for m in pkgutil.walk_packages(path, prefix)]
    return [importlib.import_module(name) for name in names
            if not name.startswith(COMMAND_LINE)]


def test_every_error_the_library_defines_is_a_jaxsolve_error():
    """One base class: every exception class of jaxsolve's modules (the AlphaZero half,
    the search and the built-in games included) derives from JaxsolveError, and so
    from ValueError. Control flow that is no error (a KeyboardInterrupt subclass) and
    warnings are not errors."""
    modules = _library_modules()
    assert {"jaxsolve.alphazero.train", "jaxsolve.mcts", "jaxsolve.games.pursuit_evasion",
            "jaxsolve.checkpoint"} <= {m.__name__ for m in modules}
    defined = {f"{m.__name__}.{name}": value for m in modules
               for name, value in vars(m).items()
               if inspect.isclass(value) and issubclass(value, Exception)
               and not issubclass(value, Warning) and value.__module__ == m.__name__}
    assert {"jaxsolve.errors.CheckpointError", "jaxsolve.errors.TooLarge"} <= set(defined)
    outside = sorted(name for name, cls in defined.items()
                     if not issubclass(cls, jaxsolve.JaxsolveError))
    assert not outside, f"errors outside the hierarchy: {outside}"
    assert issubclass(jaxsolve.JaxsolveError, ValueError)


def test_errors_are_exported_where_users_find_them():
    from jaxsolve import checkpoint, errors  # noqa: PLC0415
    from jaxsolve.alphazero import exact  # noqa: PLC0415
    assert checkpoint.CheckpointError is errors.CheckpointError is jaxsolve.CheckpointError
    assert exact.TooLarge is errors.TooLarge
    assert jaxsolve.JaxsolveError is errors.JaxsolveError


def test_bad_input_from_every_area_raises_the_base_class(kuhn, tmp_path):
    """A representative bad input of each area - a final policy's kind, a search's
    simulation count, a training config, the game's parameters, a damaged checkpoint
    - raises a JaxsolveError, whatever else it also is."""
    from jaxsolve import mcts  # noqa: PLC0415
    from jaxsolve.alphazero import train  # noqa: PLC0415 - loads Flax
    from jaxsolve.checkpoint import load_checkpoint, save_checkpoint  # noqa: PLC0415
    from jaxsolve.games import pursuit_evasion as pe  # noqa: PLC0415
    from jaxsolve.visit_counts import visit_counts  # noqa: PLC0415
    state = jaxsolve.cfr_plus().init(kuhn)
    save_checkpoint(tmp_path / "c.npz", state, {})
    (tmp_path / "cut.npz").write_bytes((tmp_path / "c.npz").read_bytes()[:200])
    for call, says in [
            (lambda: jaxsolve.final_policy(kuhn, state, "median"),
             "final_policy: unknown final policy kind 'median'"),
            (lambda: mcts.search(None, None, None, None, num_simulations=-1,
                                 root_select=None, interior_select=None),
             "search: num_simulations must be an integer >= 0 (a Python int"),
            (lambda: mcts.alphazero_policy(None, None, None, None, -1),
             "alphazero_policy: num_simulations must be an integer >= 0 (a Python int"),
            (lambda: mcts.gumbel_policy(None, None, None, None, 2.5),
             "gumbel_policy: num_simulations must be an integer >= 0 (a Python int"),
            (lambda: train.TrainConfig(batch_size=0),
             "TrainConfig.batch_size must be an integer >= 1, got 0"),
            (lambda: train.TrainConfig(hidden="wide"), "TrainConfig.hidden must be a tuple"),
            (lambda: pe.Params(grid_size=4), "Params: grid_size must be an odd integer >= 3"),
            (lambda: load_checkpoint(tmp_path / "cut.npz"), "cut.npz: not a readable checkpoint"),
            (lambda: visit_counts(kuhn, None, None, None, None, 1, split="even"),
             "visit_counts: split must be one of")]:
        with pytest.raises(jaxsolve.JaxsolveError, match=re.escape(says)):
            call()


# ---------------------------------------------------------------- 1, 4: policy shapes
POLICY_FUNCTIONS = {
    "policy_value": jaxsolve.policy_value,
    "best_response_values": jaxsolve.best_response_values,
    "best_response": lambda tree, p: jaxsolve.best_response(tree, p, 0),
    "nash_conv": jaxsolve.nash_conv,
    "exploitability": jaxsolve.exploitability,
    "table": jaxsolve.table,
    "purify": jaxsolve.purify,
    "threshold": lambda tree, p: jaxsolve.threshold(tree, p, 0.1),
}


@pytest.mark.parametrize("name", POLICY_FUNCTIONS)
def test_a_policy_of_another_game_is_refused_by_every_policy_function(name, kuhn, kuhn3):
    with pytest.raises(ValueError, match=rf"^{name}: policy has shape \(48, 2\) but the tree "
                                         r"has 12 infosets x 2 actions; expected \[12, 2\] "
                                         r"\(a policy from another game\?\)"):
        POLICY_FUNCTIONS[name](kuhn, jaxsolve.uniform_policy(kuhn3))


@pytest.mark.parametrize("make, says", [
    (lambda kuhn, kuhn3, p: jaxsolve.exploitability(kuhn3, p), r"\(12, 2\) but the tree has 48"),
    (lambda kuhn, kuhn3, p: jaxsolve.exploitability(kuhn, p.T), r"\(2, 12\).*transposed"),
    (lambda kuhn, kuhn3, p: jaxsolve.policy_value(kuhn, jnp.ones((3, 2))), r"\(3, 2\)"),
    (lambda kuhn, kuhn3, p: jaxsolve.table(kuhn, jnp.ones((3, 2))), r"^table: .*\(3, 2\)"),
    (lambda kuhn, kuhn3, p: jaxsolve.nash_conv(kuhn, jnp.stack([p, p])),
     r"\(2, 12, 2\).*batch axis of 2; call through jax.vmap"),
], ids=["tree-of-3", "transposed", "too-few-rows", "table", "batched"])
def test_wrongly_shaped_policies_name_the_shape(make, says, kuhn, kuhn3, policy):
    with pytest.raises(ValueError, match=says):
        make(kuhn, kuhn3, policy)


@pytest.mark.parametrize("name", POLICY_FUNCTIONS)
@pytest.mark.parametrize("row, says", [
    ([0.8, 0.8], r"infoset 3 \('.*'\) sums to 1\.6, not 1: \[0\.8, 0\.8\] \(normalise rows"),
    ([0.0, 0.0], r"infoset 3 \('.*'\) sums to 0, not 1"),
    ([np.nan, 0.5], r"infoset 3 \('.*'\) holds a non-finite value"),
    ([1.5, -0.5], r"infoset 3 \('.*'\) holds a negative value"),
], ids=["unnormalised", "zero", "nan", "negative"])
def test_a_policy_that_is_not_a_distribution_is_refused(name, row, says, kuhn):
    # Unchecked, each would give a plausible number: an all-zero policy exploitability
    # 0, a solver's unnormalised average 5e6.
    bad = np.asarray(jaxsolve.uniform_policy(kuhn)).copy()
    bad[3] = row
    for as_array in (jnp.asarray, np.asarray):
        with pytest.raises(ValueError, match=rf"^{name}: policy is not a distribution over "
                                             rf"the legal actions of the tree: {says}"):
            POLICY_FUNCTIONS[name](kuhn, as_array(bad))


def test_probability_on_an_illegal_action_is_refused():
    # Action ids 0 and 2: column 1 is illegal, and mass put there is refused, not dropped.
    from toy_games import SpecGame, decision, leaf
    tree = jaxsolve.compile_game(SpecGame(decision(0, "a", leaf(1, -1), leaf(0, 0),
                                                   actions=[0, 2])))
    with pytest.raises(ValueError, match=r"^exploitability: .*infoset 0 \('a'\) puts 0\.3333 "
                                         r"on action 1, which is illegal there"):
        jaxsolve.exploitability(tree, jnp.full((1, 3), 1 / 3))
    assert float(jaxsolve.policy_value(tree, jnp.asarray([[1.0, 0.0, 0.0]]))[0]) == 1.0


# ---------------------------------------------------------------- 2: policy types
def test_a_list_policy_is_converted_and_an_integer_one_refused(kuhn, policy):
    as_list = np.asarray(policy).tolist()
    np.testing.assert_allclose(jaxsolve.policy_value(kuhn, as_list),
                               jaxsolve.policy_value(kuhn, policy))
    with pytest.raises(TypeError, match=r"^exploitability: policy must hold probabilities "
                                        r"as floats, got dtype int32"):
        jaxsolve.exploitability(kuhn, jnp.ones((12, 2), jnp.int32))
    with pytest.raises(TypeError, match="policy must be an array, got 'pass'"):
        jaxsolve.policy_value(kuhn, "pass")


# ---------------------------------------------------------------- 3: players
@pytest.mark.parametrize("player, error, says", [
    (5, ValueError, r"player must be an integer in \[0, 1\] \(2 players\), got 5"),
    (-1, ValueError, r"player must be an integer in \[0, 1\] \(2 players\), got -1"),
    (1.0, TypeError, r"player must be an integer in \[0, 1\] \(2 players\), got 1.0"),
])
def test_best_response_refuses_players_the_game_does_not_have(player, error, says, kuhn, policy):
    with pytest.raises(error, match=rf"^best_response: {says}"):
        jaxsolve.best_response(kuhn, policy, player)
    assert jaxsolve.best_response(kuhn, policy, np.int64(1))[1].shape == (12, 2)


# ---------------------------------------------------------------- 5: solver states
def test_a_state_of_another_game_is_refused(kuhn, kuhn3):
    s = jaxsolve.cfr_plus()
    other = s.init(kuhn3)
    says = (r"state.regrets is \[48, 2\] but the tree is \[12, 2\]: "
            "the state was initialised on another game")
    for name, call in [("run", lambda: jaxsolve.run(s, kuhn, other, 3)),
                       ("run_until", lambda: jaxsolve.run_until(s, kuhn, other, 1e-3, 3)),
                       ("average_policy", lambda: jaxsolve.average_policy(kuhn, other)),
                       ("current_policy", lambda: jaxsolve.current_policy(kuhn, other)),
                       (r"cfr\+.step", lambda: s.step(kuhn, other))]:
        with pytest.raises(ValueError, match=f"^{name}: {says}"):
            call()
    with pytest.raises(TypeError, match=r"^average_policy: expected a solver state"):
        jaxsolve.average_policy(kuhn, {"average": 0})


def test_a_state_of_another_solver_is_refused(kuhn):
    cfr_plus, es = jaxsolve.cfr_plus(), jaxsolve.external_sampling(8)
    with pytest.raises(TypeError, match=r"^run: es-mccfr needs the MCCFRState from its own "
                                        r"init\(tree, key\), got CFRState"):
        jaxsolve.run(es, kuhn, cfr_plus.init(kuhn), 3)
    with pytest.raises(TypeError, match=r"^es-mccfr.step: .*got CFRState"):
        es.step(kuhn, cfr_plus.init(kuhn))
    with pytest.raises(TypeError, match=r"^run: cfr\+ needs the CFRState from its own "
                                        r"init\(tree\), got MCCFRState"):
        jaxsolve.run(cfr_plus, kuhn, es.init(kuhn, jax.random.PRNGKey(0)), 3)


# ---------------------------------------------------------------- 6: solvers and trees
def test_what_is_not_a_solver_is_refused_with_the_call_that_makes_one(kuhn):
    state = jaxsolve.cfr_plus().init(kuhn)
    with pytest.raises(TypeError, match=r"^run: expected a Solver such as jaxsolve.cfr_plus\(\), "
                                        r"got 'cfr\+' \(by name: "
                                        r"jaxsolve.SOLVERS\['cfr\+'\]\(\)\)"):
        jaxsolve.run("cfr+", kuhn, state, 3)
    with pytest.raises(TypeError,
                       match=r"got the function cfr_plus: call it: jaxsolve.cfr_plus\(\)"):
        jaxsolve.run(jaxsolve.cfr_plus, kuhn, state, 3)


@pytest.mark.parametrize("name, call", [
    ("run", lambda g, k: jaxsolve.run(jaxsolve.cfr_plus(), g, jaxsolve.cfr_plus().init(k), 3)),
    ("run_until", lambda g, k: jaxsolve.run_until(jaxsolve.cfr_plus(), g,
                                                  jaxsolve.cfr_plus().init(k), 1e-3, 3)),
    (r"cfr\+.init", lambda g, k: jaxsolve.cfr_plus().init(g)),
    ("es-mccfr.init", lambda g, k: jaxsolve.external_sampling(8).init(g)),
    ("stack", lambda g, k: jaxsolve.stack([g])),
    ("sweep", lambda g, k: jaxsolve.sweep(g, utilities=np.zeros((2, 30, 2)))),
    ("env.init", lambda g, k: jaxsolve.env.init(g, jax.random.key(0))),
    ("exploitability", lambda g, k: jaxsolve.exploitability(g, jaxsolve.uniform_policy(k))),
    ("from_table", lambda g, k: jaxsolve.from_table(g, {})),
])
def test_a_game_passed_for_its_tree_is_refused(name, call, kuhn):
    with pytest.raises(TypeError, match=f"^{name}: {GAME_NOT_TREE}"):
        call(games.load("kuhn_poker"), kuhn)


# ---------------------------------------------------------------- 7: iteration counts
@pytest.mark.parametrize("count, error, says", [
    (2.5, TypeError, r"num_iterations must be an integer in \[0, 2,147,483,647\], got 2.5"),
    (-5, ValueError, r"num_iterations must be an integer in \[0, 2,147,483,647\], got -5"),
    ("3", TypeError, r"num_iterations must be an integer in \[0, 2,147,483,647\], got '3'"),
    (2 ** 31, ValueError, r"num_iterations must be an integer in \[0, 2,147,483,647\], got 2,147,483,648"),
])
def test_run_refuses_counts_that_are_not_integers_at_least_zero(count, error, says, kuhn):
    s = jaxsolve.cfr_plus()
    with pytest.raises(error, match=f"^run: {says}"):
        jaxsolve.run(s, kuhn, s.init(kuhn), count)


@pytest.mark.parametrize("make", [jaxsolve.cfr_plus, jaxsolve.dcfr,
                                  lambda: jaxsolve.external_sampling(4)])
def test_a_count_past_the_int32_iteration_counter_is_refused(make, kuhn):
    # The counter is int32: from 2**31 - 3 iterations, 3 more fit and 5 would wrap it
    # to a negative count (DCFR's discounts and every average weight read it), so
    # run and run_until refuse them before any step; the 3 that fit run.
    s = make()
    state = s.init(kuhn, jax.random.key(0))._replace(iteration=jnp.int32(2 ** 31 - 4))
    for call in (lambda: jaxsolve.run(s, kuhn, state, 5),
                 lambda: jaxsolve.run_until(s, kuhn, state, 0.0, 5)):
        with pytest.raises(ValueError, match="has run 2,147,483,644 iterations and counts "
                                             "them in int32: at most 3 more fit, got 5"):
            call()
    assert int(jaxsolve.run(s, kuhn, state, 3).iteration) == 2 ** 31 - 1


# ---------------------------------------------------------------- 8: solver settings
@pytest.mark.parametrize("make, error, says", [
    (lambda: jaxsolve.dcfr(float("nan")), ValueError,
     "^dcfr: alpha must be a finite number, got nan"),
    (lambda: jaxsolve.dcfr("1.5"), TypeError, "^dcfr: alpha must be a finite number, got '1.5'"),
    (lambda: jaxsolve.dcfr(1.5, 0.0, -1.0), ValueError,
     "^dcfr: gamma must be a finite number >= 0, got -1.0"),
    (lambda: jaxsolve.pcfr_plus(-50.0), ValueError,
     "^pcfr_plus: gamma must be a finite number >= 0, got -50.0"),
    (lambda: jaxsolve.cfr(alternating="yes"), TypeError, "^cfr: alternating must be True or False"),
    (lambda: jaxsolve.outcome_sampling(8, exploration="0.6"), TypeError,
     r"^outcome_sampling: exploration must be a number in \[0, 1\], got '0.6'"),
    (lambda: jaxsolve.external_sampling(batch_size=2.0), TypeError,
     r"^external_sampling: batch_size must be an integer in \[1, 2,147,483,647\], got 2.0"),
    (lambda: jaxsolve.external_sampling(batch_size=2 ** 31), ValueError,
     r"^external_sampling: batch_size must be an integer in \[1, 2,147,483,647\], "
     "got 2,147,483,648"),
    (lambda: jaxsolve.sampled_cfr(expand_own="no"), TypeError,
     "^sampled_cfr: expand_own must be True or False, got 'no'"),
    (lambda: jaxsolve.sampled_cfr(rule="cfr++"), ValueError,
     "^sampled_cfr: rule must be one of 'cfr', 'cfr\\+', 'dcfr', got 'cfr\\+\\+'"),
])
def test_solver_settings_must_be_numbers_in_range(make, error, says):
    with pytest.raises(error, match=says):
        make()


def test_dcfr_accepts_the_literature_settings():
    assert jaxsolve.dcfr(1.5, -math.inf, 2).name == "dcfr(1.5,-inf,2)"  # negatives dropped
    assert jaxsolve.dcfr(np.float32(1.5), np.int64(0), 2).name == "dcfr(1.5,0,2)"


# ---------------------------------------------------------------- 9: policy helpers
def test_threshold_and_from_table_refuse_bad_settings(kuhn, policy):
    with pytest.raises(ValueError, match=r"^threshold: tau must be a number in \[0, 1\), got 2.0"):
        jaxsolve.threshold(kuhn, policy, 2.0)
    with pytest.raises(ValueError, match="^from_table: default must be one of 'uniform', "
                                         "'error', got 'eror'"):
        jaxsolve.from_table(kuhn, {}, default="eror")
    with pytest.raises(TypeError, match=r"^from_table: mapping must be \{infoset: "
                                        r"\{action: probability\}\}.*got list"):
        jaxsolve.from_table(kuhn, [1, 2])
    name = kuhn.names.infosets[0]
    with pytest.raises(TypeError, match=f"^from_table: infoset '{name}' maps to list"):
        jaxsolve.from_table(kuhn, {name: [0.5, 0.5]})
    with pytest.raises(TypeError, match="^from_table: probability of 'Pass'"):
        jaxsolve.from_table(kuhn, {name: {"Pass": "half", "Bet": 0.5}})


# ---------------------------------------------------------------- 13: batched trees
def test_a_batched_tree_outside_vmap_is_refused_with_the_vmap_to_use(kuhn, policy):
    batch, _ = jaxsolve.sweep(kuhn, utilities=np.stack([kuhn.utilities] * 2))
    says = r"the tree has a batch axis of 2 \(a batch from jaxsolve.sweep or jaxsolve.stack\): " \
           r"call it through jax.vmap"
    with pytest.raises(ValueError, match=f"^exploitability: {says}"):
        jaxsolve.exploitability(batch, policy)
    s = jaxsolve.cfr_plus()
    with pytest.raises(ValueError, match=f"^run: {says}"):
        jaxsolve.run(s, jaxsolve.stack([kuhn, kuhn]), s.init(kuhn), 3)
    with pytest.raises(TypeError, match="^sweep: utilities must be real numbers, got dtype <U1"):
        jaxsolve.sweep(kuhn, utilities=np.full((2, 30, 2), "a"))
    with pytest.raises(TypeError, match=r"^stack: expected a sequence of trees"):
        jaxsolve.stack(kuhn)


# ---------------------------------------------------------------- 14: abstraction
def test_lifting_refuses_a_policy_of_the_true_game(blind):
    fine = jaxsolve.uniform_policy(blind.fine)
    says = r"policy has the true game's shape \[12, 2\]; pass the abstract game's \[4, 2\] policy"
    with pytest.raises(ValueError, match=f"^Abstraction.lift: {says}"):
        blind.lift(fine)
    with pytest.raises(ValueError, match=f"^exploitability_in_true_game: {says}"):
        abstraction.exploitability_in_true_game(blind, fine)
    with pytest.raises(ValueError, match=f"^lift_policy: {says}"):
        abstraction.lift_policy(blind.coarse, blind.fine, fine)
    coarse = jaxsolve.uniform_policy(blind.coarse)
    assert blind.lift(jnp.stack([coarse, coarse])).shape == (2, 12, 2)  # batches may lead


# ---------------------------------------------------------------- 15: keys
def test_env_refuses_a_number_for_a_key(kuhn):
    with pytest.raises(TypeError, match=r"^env.init: key must be a jax.random key, e.g. "
                                        r"jax.random.key\(0\) .*got int"):
        jaxsolve.env.init(kuhn, 0)
    with pytest.raises(TypeError, match=r"^env.rollout: key must be .*got float32 array"):
        jaxsolve.env.rollout(kuhn, jnp.zeros(2, jnp.float32))
    with pytest.raises(TypeError, match=r"^es-mccfr.init: key must be a jax.random key"):
        jaxsolve.external_sampling(8).init(kuhn, 7)
    typed = jaxsolve.external_sampling(8).init(kuhn, jax.random.key(3))
    np.testing.assert_array_equal(typed.key, jax.random.PRNGKey(3))  # the state holds raw words


# ---------------------------------------------------------------- transformations
def test_the_checks_pass_under_jit_vmap_and_grad(kuhn, policy):
    """Static shapes and dtypes are all the checks read: traced counts, players' rows,
    thresholds and vmapped trees (unbatched inside vmap) pass."""
    s = jaxsolve.cfr_plus()
    state = RUN(s, kuhn, s.init(kuhn), np.int64(4))  # the count traced
    assert int(state.iteration) == 4
    expl = float(EXPLOITABILITY(kuhn, jaxsolve.average_policy(kuhn, state)))
    cut = jax.jit(jaxsolve.threshold)(kuhn, policy, 0.5)  # tau traced
    np.testing.assert_allclose(cut[0], [1.0, 0.0])

    utilities = np.stack([np.asarray(kuhn.utilities) * c for c in (1.0, 2.0)])
    batch, axes = jaxsolve.sweep(kuhn, utilities=utilities)
    swept = jax.jit(jax.vmap(jaxsolve.exploitability, in_axes=(axes, None)))(batch, policy)
    # Each game of the sweep has the unbatched exploitability of its own tree.
    np.testing.assert_allclose(swept[0], EXPLOITABILITY(kuhn, policy), rtol=1e-12)
    np.testing.assert_allclose(swept[1], 2 * swept[0], rtol=1e-9)
    states = jax.jit(jax.vmap(lambda t: jaxsolve.run(s, t, s.init(t), 3), in_axes=(axes,)))(batch)
    averages = jax.vmap(jaxsolve.average_policy, in_axes=(None, 0))(kuhn, states)
    assert averages.shape == (2, 12, 2)
    for b, u in enumerate(utilities):  # each vmapped run is the unbatched run of its tree
        alone = kuhn.replace(utilities=u)
        alone_state = RUN(s, alone, s.init(alone), np.int64(3))  # RUN's compilation above
        np.testing.assert_allclose(averages[b], AVERAGE(alone, alone_state), rtol=1e-12,
                                   atol=1e-15)

    # policy_value is multilinear in the policy's entries, so a central difference is
    # exact up to round-off: the gradient must equal it entry by entry. The difference
    # is taken in float64 (in float32 it would carry eps / h ~ 1e-4 of round-off); the
    # float32 gradient equals it to float32 round-off.
    grad = jax.grad(lambda p: jaxsolve.policy_value(kuhn, p)[0])(policy)
    assert grad.shape == (12, 2)
    h, fd = 1e-3, np.zeros((12, 2))
    with jax.enable_x64(True):
        for i, a in np.ndindex(12, 2):
            up, down = np.array(policy, np.float64), np.array(policy, np.float64)
            up[i, a] += h
            down[i, a] -= h
            fd[i, a] = (POLICY_VALUE(kuhn, up)[0] - POLICY_VALUE(kuhn, down)[0]) / (2 * h)
    np.testing.assert_allclose(grad, fd, atol=1e-6)
    assert np.abs(fd).max() > 0.1  # a gradient of zeros would not pass

    # The 4 iterations the traced count ran are CFR+'s: OpenSpiel's C++ CFRPlusSolver,
    # which our CFR+ equals iterate for iterate (test_openspiel_parity), run 4 times on
    # its Kuhn poker (the same tree as ours, test_games_poker), leaves a policy of the
    # same exploitability.
    pyspiel = pytest.importorskip("pyspiel")
    game = pyspiel.load_game("kuhn_poker")
    theirs = pyspiel.CFRPlusSolver(game)
    for _ in range(4):
        theirs.evaluate_and_update_policy()
    # float32 (eps 1.2e-7) sums over Kuhn's 30 leaves; an iteration more or less moves
    # it by 0.026 or more.
    assert expl == pytest.approx(pyspiel.exploitability(game, theirs.average_policy()),
                                 abs=1e-6)


# ---------------------------------------------------------------- host-side entry points
def test_host_side_functions_say_so_when_traced_or_given_the_wrong_kind(kuhn):
    # sweep inside jit says so, not a TracerArrayConversionError from np.asarray.
    with pytest.raises(TypeError, match="^sweep: builds the batch on the host, so it runs "
                                        "outside jit"):
        jax.jit(lambda u: jaxsolve.sweep(kuhn, utilities=u)[0].utilities)(
            jnp.stack([kuhn.utilities] * 2))
    with pytest.raises(TypeError, match="^GameTree.load: path must be a file name, got int"):
        jaxsolve.GameTree.load(3)
    s = jaxsolve.cfr_plus()
    with pytest.raises(ValueError, match=r"^run_sharded: num_iterations must be an integer in \[0, 2,147,483,647\], got -1"):
        jaxsolve.distributed.run_sharded(s, kuhn, s.init(kuhn), -1)
    batch, axes = jaxsolve.sweep(kuhn, utilities=jnp.stack([kuhn.utilities] * 2))
    with pytest.raises(ValueError, match=r"^solve_batch: num_iterations must be an integer in \[0, 2,147,483,647\], got -1"):
        jaxsolve.distributed.solve_batch(s, batch, axes, -1)
    # One tree where a batch belongs: said so, not "batched arrays disagree".
    with pytest.raises(jaxsolve.GameError, match=r"in_axes batches 'node_player' along axis 0, "
                       r"so it needs shape \(B,\) \+ \(58,\), got \(58,\): one tree, not a batch"):
        jaxsolve.distributed.solve_batch(s, kuhn, 0, 10)
    with pytest.raises(jaxsolve.GameError, match=r"'utilities' along axis 0, so it needs shape "
                       r"\(B,\) \+ \(30, 2\), got \(30, 2\): one tree"):
        jaxsolve.distributed.exploitability_batch(kuhn, axes, s.init(kuhn))
