"""Array-native builders (jaxsolve.builders) against compiling the OpenSpiel game.

For small parameters every builder is checked node for node against
`compile_game(pyspiel.load_game(...))`: histories are matched by their action
paths (derived from parent / parent_action in both trees), and under that
bijection players, chance probabilities, utilities, the infoset partition and
legal actions agree. The builders also reproduce compile_game's breadth-first
order, infoset numbering and OpenSpiel's information-state strings, so the arrays
and names are equal outright, which is checked too. Uniform-policy NashConv on the
built tree equals OpenSpiel's Python `exploitability.nash_conv` to 1e-9 (float64),
and oversize requests are refused before anything big is allocated.
"""

import tracemalloc

import numpy as np
import pytest

import jaxsolve
from conftest import NASH_CONV, pyspiel_game
from jaxsolve import GameError
from jaxsolve.builders import (battleship, battleship_spec, estimate_bytes, goofspiel,
                               goofspiel_spec, liars_dice, liars_dice_spec, tree_bytes)
from jaxsolve.tree.checks import validate_shapes

pyspiel = pytest.importorskip("pyspiel")
from open_spiel.python import policy as os_policy  # noqa: E402
from open_spiel.python.algorithms import exploitability  # noqa: E402

F64 = np.float64
GOOF = {"imp_info": True, "points_order": "descending"}


def _ship(sizes, values=None):
    values = values or [1.0] * len(sizes)
    return {"ship_sizes": f"[{';'.join(map(str, sizes))}]",
            "ship_values": f"[{';'.join(map(str, values))}]"}


# (id, builder, OpenSpiel name, OpenSpiel parameters)
CASES = [
    ("goofspiel3", lambda: goofspiel(3, dtype=F64), "goofspiel", {"num_cards": 3, **GOOF}),
    ("goofspiel4", lambda: goofspiel(4, dtype=F64), "goofspiel", {"num_cards": 4, **GOOF}),
    ("goofspiel4_points", lambda: goofspiel(4, returns_type="point_difference", dtype=F64),
     "goofspiel", {"num_cards": 4, "returns_type": "point_difference", **GOOF}),
    ("goofspiel3_ascending_total",
     lambda: goofspiel(3, points_order="ascending", returns_type="total_points", dtype=F64),
     "goofspiel", {"num_cards": 3, "imp_info": True, "points_order": "ascending",
                   "returns_type": "total_points"}),
    ("liars_dice_1x3", lambda: liars_dice((1, 1), 3, dtype=F64), "liars_dice",
     {"numdice": 1, "dice_sides": 3}),
    ("liars_dice_1x4", lambda: liars_dice((1, 1), 4, dtype=F64), "liars_dice",
     {"numdice": 1, "dice_sides": 4}),
    ("liars_dice_2x2_quantity",
     lambda: liars_dice((2, 2), 2, bidding_rule="reset-quantity", dtype=F64), "liars_dice",
     {"numdice": 2, "dice_sides": 2, "bidding_rule": "reset-quantity"}),
    ("battleship_2x2", lambda: battleship(2, 2, (1,), num_shots=2, dtype=F64), "battleship",
     {"board_width": 2, "board_height": 2, "num_shots": 2, **_ship([1])}),
    ("battleship_1x3_no_repeat",
     lambda: battleship(3, 1, (2,), num_shots=2, allow_repeated_shots=False, dtype=F64),
     "battleship", {"board_width": 3, "board_height": 1, "num_shots": 2,
                    "allow_repeated_shots": False, **_ship([2])}),
    ("battleship_2x2_two_ships_general_sum",
     lambda: battleship(2, 2, (1, 1), (1.0, 2.0), num_shots=1, loss_multiplier=0.5, dtype=F64),
     "battleship", {"board_width": 2, "board_height": 2, "num_shots": 1,
                    "loss_multiplier": 0.5, **_ship([1, 1], [1.0, 2.0])}),
]
IDS = [c[0] for c in CASES]
_BUILT: dict = {}


def _pair(case_id):
    """(built tree, compiled tree, pyspiel game), built once per session."""
    if case_id not in _BUILT:
        _, build, name, params = CASES[IDS.index(case_id)]
        game = pyspiel_game(name, **params)
        _BUILT[case_id] = (build(), jaxsolve.compile_game(game), game)
    return _BUILT[case_id]


def _paths(tree) -> list[tuple[int, ...]]:
    """Each node's action path from the root (parents precede children: BFS)."""
    parent, action = np.asarray(tree.parent).tolist(), np.asarray(tree.parent_action).tolist()
    paths: list[tuple[int, ...]] = []
    for p, a in zip(parent, action):
        paths.append(() if p < 0 else paths[p] + (a,))
    return paths


@pytest.mark.parametrize("case_id", IDS)
def test_histories_match_compiled_openspiel_by_action_path(case_id):
    built, ref, _ = _pair(case_id)
    validate_shapes(built)
    assert built.names.game == ref.names.game  # sweeps and stack group trees by name
    for field in ("num_nodes", "num_infosets", "num_terminals", "num_chance",
                  "level_offsets", "num_actions", "perfect_recall", "utility_sum"):
        assert getattr(built.sizes, field) == getattr(ref.sizes, field), field
    ours, theirs = _paths(built), _paths(ref)
    where = {path: node for node, path in enumerate(theirs)}
    assert len(where) == len(theirs) and set(ours) == set(where)
    match = np.array([where[path] for path in ours])  # built node -> compiled node

    player = np.asarray(built.node_player)
    assert np.array_equal(player, np.asarray(ref.node_player)[match])
    index, ref_index = np.asarray(built.node_index), np.asarray(ref.node_index)[match]
    chance, terminal, decision = player == jaxsolve.CHANCE, player == jaxsolve.TERMINAL, player >= 0
    np.testing.assert_array_equal(np.asarray(built.chance_probs)[index[chance]],
                                  np.asarray(ref.chance_probs)[ref_index[chance]])
    np.testing.assert_array_equal(np.asarray(built.utilities)[index[terminal]],
                                  np.asarray(ref.utilities)[ref_index[terminal]])
    # Same infoset partition: the infoset pairs (built id, compiled id) over all
    # decision nodes form a bijection, with the same legal actions and players.
    pairs = np.unique(np.stack([index[decision], ref_index[decision]], 1), axis=0)
    assert len(pairs) == built.sizes.num_infosets
    assert len(np.unique(pairs[:, 0])) == len(np.unique(pairs[:, 1])) == len(pairs)
    np.testing.assert_array_equal(np.asarray(built.legal)[pairs[:, 0]],
                                  np.asarray(ref.legal)[pairs[:, 1]])
    np.testing.assert_array_equal(np.asarray(built.infoset_player)[pairs[:, 0]],
                                  np.asarray(ref.infoset_player)[pairs[:, 1]])


@pytest.mark.parametrize("case_id", IDS)
def test_arrays_and_names_equal_compiled_openspiel(case_id):
    # Stronger than the bijection: same order, ids and OpenSpiel's infoset strings.
    built, ref, _ = _pair(case_id)
    assert built.sizes == ref.sizes
    for field in ("node_player", "node_index", "children", "parent", "parent_action",
                  "infoset_player", "legal", "infoset_parent", "infoset_ancestors",
                  "infoset_depth", "chance_probs", "utilities", "terminal_node",
                  "terminal_sequences", "terminal_last", "terminal_chance"):
        np.testing.assert_array_equal(getattr(built, field), getattr(ref, field), err_msg=field)
    assert built.names.infosets == ref.names.infosets
    assert built.names.actions == ref.names.actions
    # The game's name too (every parameter, as OpenSpiel spells it), so names are equal
    # and one compiled function serves both trees.
    assert built.names.game == ref.names.game
    assert built.names == ref.names


def _openspiel_uniform_nash_conv(game) -> float:
    if game.get_type().dynamics == pyspiel.GameType.Dynamics.SIMULTANEOUS:
        game = pyspiel.convert_to_turn_based(game)
    return exploitability.nash_conv(game, os_policy.UniformRandomPolicy(game))


@pytest.mark.float64  # OpenSpiel's NashConv to 1e-9
@pytest.mark.parametrize("case_id", IDS)
def test_uniform_nash_conv_equals_openspiel(case_id):
    built, _, game = _pair(case_id)
    ours = float(NASH_CONV(built, jaxsolve.uniform_policy(built)))
    assert ours == pytest.approx(_openspiel_uniform_nash_conv(game), abs=1e-9)


def test_float32_default_tree_agrees_with_float64():
    small, exact = goofspiel(4), _pair("goofspiel4")[0]
    assert small.utilities.dtype == np.float32 and exact.utilities.dtype == np.float64
    np.testing.assert_array_equal(small.utilities, exact.utilities)  # small integers
    dice = liars_dice((1, 1), 3)
    assert dice.chance_probs.dtype == np.float32
    np.testing.assert_allclose(dice.chance_probs, _pair("liars_dice_1x3")[0].chance_probs,
                               rtol=1e-7)


def test_sizes_by_arithmetic():
    # Goofspiel, N cards: round r starts with M_r = (N!/(N-r)!)^2 histories, each
    # with N-r bids for P0 and N-r for P1; the last card is played automatically.
    # So round r (r = 0..N-2) holds M_r P0 nodes and M_r (N-r) P1 nodes, and the
    # M_{N-1} histories after it are the terminals:
    # num_nodes = sum_{r=0..N-2} M_r (1 + N - r) + M_{N-1}; for N = 7,
    # 1*8 + 49*7 + 1764*6 + 44100*5 + 705600*4 + 6350400*3 + 25401600 = 47,506,635.
    spec = goofspiel_spec(7)
    assert spec.num_terminals == 5040**2
    assert spec.num_nodes == 47_506_635
    # Liar's dice 1x6: 36 rolls x (2^12 bidding nodes + 2^12 - 1 terminals) + 7 chance.
    spec = liars_dice_spec((1, 1), 6)
    assert spec.num_nodes == 36 * (2**12 + 2**12 - 1) + 7 == 294_883


@pytest.mark.parametrize("case_id,spec", [
    ("goofspiel4", lambda: goofspiel_spec(4)),
    ("liars_dice_1x4", lambda: liars_dice_spec((1, 1), 4)),
    ("battleship_2x2", lambda: battleship_spec(2, 2, (1,), num_shots=2)),
], ids=["goofspiel4", "liars_dice_1x4", "battleship_2x2"])
def test_estimate_covers_the_tree(case_id, spec):
    assert estimate_bytes(spec(), np.float64) >= tree_bytes(_pair(case_id)[0])


@pytest.mark.parametrize("request_", [
    lambda: goofspiel(8),  # 3.0e9 histories
    lambda: goofspiel(5, max_bytes=100_000),
    lambda: liars_dice((2, 2), 6),  # 4.3e10 histories
    lambda: battleship(3, 3, (1,), num_shots=4),  # bound 3.9e9
], ids=["goofspiel8", "goofspiel5_small_budget", "liars_dice_2x6", "battleship_3x3"])
def test_oversize_request_is_refused_before_allocating(request_):
    tracemalloc.start()
    try:
        with pytest.raises(GameError, match=r"max_bytes=.*Raise max_bytes") as info:
            request_()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "histories" in str(info.value) and "iB" in str(info.value)
    assert peak < 1_000_000, f"allocated {peak} bytes before refusing"


def test_bad_parameters_are_game_errors():
    with pytest.raises(GameError, match="points_order"):
        goofspiel(4, points_order="random")
    with pytest.raises(GameError, match="bidding_rule"):
        liars_dice(bidding_rule="nope")
    with pytest.raises(GameError, match="cannot all be placed"):
        battleship(2, 2, (2, 2, 2))


def test_built_tree_saves_and_loads(tmp_path):
    built = _pair("battleship_2x2")[0]
    loaded = jaxsolve.GameTree.load(built.save(tmp_path / "battleship"))
    assert loaded.sizes == built.sizes and loaded.names == built.names
    np.testing.assert_array_equal(loaded.terminal_sequences, built.terminal_sequences)


@pytest.mark.parametrize("make, says", [
    (lambda: goofspiel(2.5), "^goofspiel: num_cards must be an integer, got 2.5"),
    (lambda: liars_dice(dice=1), "^liars_dice: dice must be two integers"),
    (lambda: liars_dice(faces="6"), "^liars_dice: dice must be two integers .* faces='6'"),
])
def test_builder_arguments_of_the_wrong_kind_are_named(make, says):
    # Each is named, not a bare TypeError from range(), len() or a comparison.
    with pytest.raises(TypeError, match=says):
        make()


@pytest.mark.parametrize("kwargs, says", [
    ({"allow_repeated_shots": "no"}, "allow_repeated_shots must be True or False"),
    ({"board_width": 2.5}, "board_width must be an integer >= 1, got 2.5"),
    ({"ship_sizes": (1.5,)}, "ship_sizes entry must be an integer >= 1, got 1.5"),
    ({"num_shots": "2"}, "num_shots must be an integer >= 1, got '2'"),
    ({"ship_values": (float("nan"),)}, "ship_values entry must be a finite number >= 0, got nan"),
    ({"loss_multiplier": float("inf")}, "loss_multiplier must be a finite number, got inf"),
    ({"ship_sizes": 1}, "ship_sizes must be a list or tuple"),
])
def test_battleship_refuses_settings_it_would_have_cast(kwargs, says):
    """Each is refused rather than cast into another game (bool("no") is True: the
    repeated-shots game; int(2.5) a 2-wide board) or into NaN payoffs."""
    with pytest.raises(jaxsolve.ArgumentError, match=f"^battleship: {says}"):
        battleship(**kwargs)


@pytest.mark.parametrize("make, says", [
    # int32 utilities truncate goofspiel's halves and liar's dice's 1/6 chance
    # probabilities to 0: a tree of another game (a boolean one: of none).
    (lambda: goofspiel(3, dtype=np.int32), "^goofspiel: dtype must be np.float32 or "
                                           "np.float64, got int32"),
    (lambda: liars_dice(dtype=bool), "^liars_dice: dtype must be np.float32 or np.float64, "
                                     "got bool"),
    (lambda: battleship(dtype="big"), "^battleship: dtype must be np.float32 or np.float64, "
                                      "got 'big'"),
    # A budget that is no number is named (not a bare TypeError from a comparison); a
    # negative one is refused, not read as "refuse everything" with a message about
    # the game's size.
    (lambda: battleship(max_bytes="big"),
     "^battleship: max_bytes must be a finite number > 0, got 'big'"),
    (lambda: goofspiel(3, max_bytes=-1),
     "^goofspiel: max_bytes must be a finite number > 0, got -1"),
])
def test_dtype_and_budget_are_checked_at_the_builder(make, says):
    with pytest.raises(jaxsolve.ArgumentError, match=says):
        make()
    # A budget given as a float (16e9 bytes) is a budget.
    assert goofspiel(3, max_bytes=16e9, dtype=np.float64).utilities.dtype == np.float64


def test_sizes_beyond_gibibytes_read_as_such():
    from jaxsolve.builders import format_bytes
    assert format_bytes(5 * 2**40) == "5.0 TiB" and format_bytes(3.5 * 2**50) == "3.5 PiB"
    assert format_bytes(1.5 * 2**30) == "1.50 GiB" and format_bytes(512) == "512 B"


def test_a_build_shows_its_progress_when_asked(monkeypatch):
    """The bar counts every history, level by level, and says which level it is on."""
    from jaxsolve import progress
    bars = []

    class Recorder:
        def __init__(self, **options):
            self.options, self.updates, self.postfix = options, [], []
            bars.append(self)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def update(self, n):
            self.updates.append(n)

        def set_postfix_str(self, text, refresh=True):
            self.postfix.append(text)

    monkeypatch.setattr(progress, "bar", Recorder)
    tree = liars_dice((1, 1), 3, progress=True)
    [bar] = bars
    assert bar.options["desc"] == "building liars_dice((1, 1), 3)"
    assert bar.options["total"] == sum(bar.updates) == tree.sizes.num_nodes
    assert bar.updates == np.diff(tree.sizes.level_offsets).tolist()  # one per level
    assert bar.postfix[-1] == f"level {len(bar.updates)} of {len(bar.updates)}"
    with pytest.raises(jaxsolve.ArgumentTypeError, match="goofspiel: progress must be True"):
        goofspiel(3, progress="yes")
