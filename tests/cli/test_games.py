"""`jaxsolve games`: the built-in games listed and counted, one game described."""

import re

import pytest

from jaxsolve import cli, games


def test_games_lists_the_builtin_games(capsys):
    assert cli.main(["games"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(map(len, lines)) <= 100  # it was about 200 columns wide
    kuhn, kuhn_parameters = [line for line in lines if line.startswith("kuhn_poker ")]
    # Players, histories, infosets. By hand: the root deal, 3 cards for player 0 and
    # 6 ordered deals (chance nodes: 1 + 3 = 4, then 6 betting roots), and per deal 4
    # decision histories (-, p, b, pb) and 5 terminals (pp, pbp, pbb, bp, bb):
    # 1 + 3 + 6 x (4 + 5) = 58; 3 cards x 2 histories per player x 2 players = 12.
    assert kuhn.split()[1:4] == ["2", "58", "12"]
    assert kuhn_parameters.split() == ["kuhn_poker", "players=2"]
    # Leduc's 9,457 histories: pyspiel's own tree walked (test_games_poker).
    assert any(line.startswith("leduc_poker ") and "9,457" in line for line in lines)

    assert cli.main(["games", "--no-count"]) == 0
    listed = capsys.readouterr().out
    assert "kuhn_poker" in listed and "leduc_poker" in listed
    assert max(map(len, listed.splitlines())) <= 100
    # maneuver_detection's tables are shortened in the listing, and it says where the
    # whole values are.
    assert "payoff_detected=((0.0, 0.9, 0.5, 0.3), (-..." in listed
    assert "`jaxsolve games NAME` shows them whole" in listed



def test_games_name_describes_one_game_in_full(capsys):
    assert cli.main(["games", "maneuver_detection"]) == 0
    shown = capsys.readouterr().out
    # The rules from the module's docstring, every default whole, and the sizes.
    assert shown.startswith("maneuver_detection\n") and "Rules" in shown
    defaults = games.parameters("maneuver_detection")
    for key, value in defaults.items():
        assert f"  {key} = {value!r}\n" in shown, key
    # The sizes line: Kuhn's 58 histories and 12 infosets, counted by hand above.
    assert cli.main(["games", "kuhn_poker"]) == 0
    assert "with these defaults: 2 players, 58 histories, 12 infosets (6/6 per player)" in (
        capsys.readouterr().out)
    assert cli.main(["games", "no_such_game"]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert "unknown game 'no_such_game'; known games: " in err and "kuhn_poker" in err
    assert cli.main(["games", "leduc"]) == cli.EXIT_USAGE
    assert "unknown game 'leduc' (did you mean 'leduc_poker'?); known games: " in (
        capsys.readouterr().err)


def test_a_long_parameter_list_wraps_between_parameters():
    from jaxsolve.cli.games import _format_columns  # noqa: PLC0415

    items = [f"parameter_{k}=({k}.0, {k}.5)" for k in range(12)]
    text = _format_columns(["game", "parameters"], [["a_game", items], ["b", ["-"]]], width=60)
    lines = text.splitlines()
    assert max(map(len, lines)) <= 60 and lines[-1].split() == ["b", "-"]
    # Every item whole on one line, in order, under the column's start.
    joined = " ".join(line[len("a_game  "):] for line in lines[2:-1])
    assert joined == ", ".join(items)
    assert all(line.startswith(" " * len("a_game  ")) for line in lines[3:-1])



def test_games_name_describes_an_openspiel_game_from_its_registry(capsys):
    pytest.importorskip("pyspiel")
    assert cli.main(["games", "openspiel:kuhn_poker"]) == 0
    shown = capsys.readouterr().out
    assert "OpenSpiel's Kuhn Poker: 2-10 players, sequential" in shown
    assert "  players = 2\n" in shown
    # pyspiel's own tree walked: the same 58 histories as ours (counted by hand above).
    assert "2 players, 58 histories, 12 infosets" in shown
    assert cli.main(["games", "openspiel:no_such_game"]) == cli.EXIT_USAGE
    assert "OpenSpiel has no game 'no_such_game'" in capsys.readouterr().err
    # OpenSpiel's string form: its values replace the defaults. Three-player Kuhn has
    # 16 infosets per player by hand: 4 cards x the 4 betting sequences one can face.
    assert cli.main(["games", "openspiel:kuhn_poker(players=3)"]) == 0
    shown = capsys.readouterr().out
    assert "  players = 3\n" in shown and "48 infosets (16/16/16 per player)" in shown
    # A simultaneous game's values and kind are the game's, not the registry defaults
    # and the turn-based wrapper's own "game" parameter (goofspiel's imp_info=True
    # makes it imperfect information: OpenSpiel's own get_type says so).
    assert cli.main(["games", "openspiel:goofspiel(num_cards=3,imp_info=True)"]) == 0
    shown = capsys.readouterr().out
    assert "  num_cards = 3\n" in shown and "  imp_info = True\n" in shown
    assert "  game = " not in shown and "imperfect information" in shown
    assert "parameters (set with solve's or sweep's --param KEY=VALUE):" in shown



# At 1 ms the alarm can land inside JAX's gc callback, which swallows it (reported as
# unraisable): that game is then counted in full, which the test allows.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_the_games_listing_blames_its_clock_not_the_game(capsys):
    """The listing's time limit once surfaced inside the walk as 'child(0) raised
    _TimeLimit' on a history, as if the game had failed."""
    assert cli.main(["games", "--timeout", "0.001"]) == 0
    notes = [line for line in capsys.readouterr().out.splitlines() if line.startswith("note:")]
    assert notes and all(re.fullmatch(r"note: \S+: not counted \(compiling took over 0.001 s\)",
                                      line) for line in notes), notes

