"""The small games (Mini Maneuver, Orbital Pursuit-Evasion, Maneuver Detection,
Conjunction, Spoof): whole-tree walks against the facts their sources state (see each
game's module docstring), parameter validation, and equilibrium facts derived by hand
in the comments."""

from __future__ import annotations

import itertools
from collections import defaultdict

import numpy as np
import pytest

from jaxsolve import games
from jaxsolve.protocol import CHANCE, TERMINAL

SMALL_GAMES = ["mini_maneuver", "orbital_pursuit_evasion", "maneuver_detection",
              "conjunction", "spoof"]


def walk(game):
    """Walks the whole tree with an explicit stack, checking the protocol contracts
    at every node. Returns the number of histories, {player: {infoset: set of own
    (infoset, action) sequences}}, the terminal returns and the chance nodes."""
    histories, own_sequences, terminals, chance_nodes = 0, defaultdict(dict), [], []
    tensors = defaultdict(dict)
    shape = tuple(game.information_state_tensor_shape())
    stack = [(game.new_initial_state(), ())]
    while stack:
        state, path = stack.pop()
        histories += 1
        player = state.current_player()
        if player == TERMINAL:
            assert state.is_terminal() and state.legal_actions() == []
            returns = state.returns()
            assert len(returns) == game.num_players()
            assert all(game.min_utility() - 1e-12 <= r <= game.max_utility() + 1e-12
                       for r in returns)
            if game.utility_sum() is not None:
                assert sum(returns) == pytest.approx(game.utility_sum(), abs=1e-12)
            terminals.append((path, returns))
            continue
        actions = state.legal_actions()
        assert actions == sorted(set(actions)) and actions, path
        assert all(0 <= a < game.num_distinct_actions() for a in actions) or player == CHANCE
        if player == CHANCE:
            outcomes = state.chance_outcomes()
            assert [a for a, _ in outcomes] == actions
            assert all(p > 0 for _, p in outcomes)
            assert sum(p for _, p in outcomes) == pytest.approx(1.0, abs=1e-12)
            chance_nodes.append((path, outcomes))
        else:
            info = state.information_state_string(player)
            own = tuple((i, a) for p, i, a in path if p == player)
            own_sequences[player].setdefault(info, set()).add((own, tuple(actions)))
            tensor = state.information_state_tensor(player)
            assert tensor.dtype == np.float32 and tensor.shape == shape
            tensors[player].setdefault(info, set()).add(tensor.tobytes())
            for a in actions:
                assert isinstance(state.action_to_string(player, a), str)
        info = state.information_state_string(player) if player >= 0 else None
        for a in actions:
            child = state.clone()
            child.apply_action(a)
            stack.append((child, path + ((player, info, a),)))
    # Infoset strings are disjoint across players; tensors key the same infosets.
    assert not set(own_sequences[0]) & set(own_sequences[1])
    for p, by_info in tensors.items():
        assert all(len(v) == 1 for v in by_info.values()), p
        assert len({next(iter(v)) for v in by_info.values()}) == len(by_info), p
    return histories, own_sequences, terminals, chance_nodes


def perfect_recall(own_sequences) -> dict:
    return {p: all(len(v) == 1 for v in by_info.values())
            for p, by_info in own_sequences.items()}


def counts(own_sequences) -> tuple:
    return tuple(len(own_sequences[p]) for p in (0, 1))


def expected_returns(game, policy) -> np.ndarray:
    """Expected returns when every player plays policy(player, infoset) -> an action, or
    {action: probability} for a mixed one."""
    total = np.zeros(game.num_players())
    stack = [(game.new_initial_state(), 1.0)]
    while stack:
        state, prob = stack.pop()
        player = state.current_player()
        if player == TERMINAL:
            total += prob * np.asarray(state.returns())
        elif player == CHANCE:
            stack.extend((state.child(a), prob * p) for a, p in state.chance_outcomes())
        else:
            choice = policy(player, state.information_state_string(player))
            mix = choice if isinstance(choice, dict) else {choice: 1.0}
            stack.extend((state.child(a), prob * p) for a, p in mix.items() if p > 0)
    return total


def test_registry_loads_every_small_game():
    for name in SMALL_GAMES:
        assert name in games.names()
        game = games.load(name)
        assert game.num_players() == 2
    with pytest.raises(ValueError, match="no parameter"):
        games.load("spoof", rounds=3)


# -- Mini Maneuver ---------------------------------------------------------------------
def test_mini_maneuver_structure():
    game = games.load("mini_maneuver")
    histories, own, terminals, chance = walk(game)
    assert histories == 15 and len(terminals) == 8          # 1 + 2 + 4 + 8
    assert counts(own) == (2, 2)
    assert set(own[0]) == {"card=NO_MANEUVER", "card=MANEUVER"}
    assert set(own[1]) == {"signal=S", "signal=Q"}
    assert chance == [((), [(0, 0.5), (1, 0.5)])]
    state = game.new_initial_state()
    assert [state.action_to_string(CHANCE, a) for a in (0, 1)] == ["No-maneuver", "Maneuver"]
    state = state.child(1)
    assert [state.action_to_string(0, a) for a in (0, 1)] == ["Signal", "Quiet"]
    assert [state.action_to_string(1, a) for a in (0, 1)] == ["Watch", "Skip"]
    # Payoffs exactly as the tutorial lists them: (card, signal, response) -> Operator.
    table = {(path[0][2], path[2][2]): r for path, r in terminals}
    assert table == {(1, 0): [-2.0, 2.0], (1, 1): [1.0, -1.0],
                     (0, 0): [1.0, -1.0], (0, 1): [0.0, 0.0]}


def test_mini_maneuver_equilibrium_by_hand():
    # Hand derivation. The Observer's payoff does not depend on the signal, only on
    # the card and its response. Against "always Watch" every Operator strategy gets
    # 0.5 * (-2) + 0.5 * (+1) = -0.5. Against a pooling Operator (both cards Signal)
    # the Observer at "signal=S" has posterior 1/2: Watch pays it 0.5*2 - 0.5*1 = 0.5,
    # Skip -0.5, so Watch is its best response and the Operator gets -0.5. Hence
    # (pool, always Watch) is a saddle point and the value is -0.5 to the Operator.
    # The Observer's strategy is unique: if it Watches with probability w_S after S
    # and w_Q after Q, the Operator sending M-cards to S and N-cards to Q gets
    # 0.5 (1 - 3 w_S) + 0.5 w_Q, which exceeds -0.5 whenever w_S < 1 and w_Q = 1, and
    # symmetric deviations cover the rest; in particular every pure Observer column
    # other than Watch-Watch gives some Operator row more than -0.5.
    game = games.load("mini_maneuver")
    rows = list(itertools.product((0, 1), repeat=2))      # (signal on N, signal on M)
    cols = list(itertools.product((0, 1), repeat=2))      # (response to S, response to Q)
    payoff = np.zeros((4, 4))
    for i, (on_n, on_m) in enumerate(rows):
        for j, (to_s, to_q) in enumerate(cols):
            def policy(player, info, on_n=on_n, on_m=on_m, to_s=to_s, to_q=to_q):
                if player == 0:
                    return on_m if info == "card=MANEUVER" else on_n
                return to_s if info == "signal=S" else to_q
            payoff[i, j] = expected_returns(game, policy)[0]
    watch_watch = cols.index((0, 0))
    pool = rows.index((0, 0))
    assert payoff[:, watch_watch] == pytest.approx(np.full(4, -0.5))
    assert payoff[pool].min() == pytest.approx(-0.5)
    for j in range(4):
        if j != watch_watch:
            assert payoff[:, j].max() > -0.5 + 1e-9


# -- Orbital Pursuit-Evasion -------------------------------------------------------------
@pytest.mark.parametrize("detection", ["deterministic", "stochastic"])
@pytest.mark.parametrize("infostate", ["perfect_recall", "entry_position_turn"])
def test_orbital_structure(detection, infostate):
    game = games.load("orbital_pursuit_evasion", detection=detection, infostate=infostate)
    histories, own, terminals, chance = walk(game)
    root = [outcomes for path, outcomes in chance if path == ()]
    assert root == [[(0, 0.25), (1, 0.25), (2, 0.25), (3, 0.25)]]   # 4 entry points
    detections = [o for path, o in chance if path]
    if detection == "deterministic":
        assert detections == []
    else:
        probs = {tuple(round(p, 12) for _, p in o) for o in detections}
        assert probs == {(0.1, 0.9), (0.3, 0.7)}   # (not detected, detected)
    assert all(sum(r) == 0 and abs(r[0]) == 1 for _, r in terminals)
    assert max(len(path) for path, _ in terminals) <= 1 + 3 * 3  # chance + 3 turns
    # The Defender's infosets: its all-miss histories, 1 + 5 + 25 over three turns.
    assert len(own[1]) == 31
    recall = perfect_recall(own)
    assert recall[1]
    # The entry-position-turn strings forget the Attacker's own moves.
    assert recall[0] == (infostate == "perfect_recall")


def _minimax_value(game, fixed_player, fixed_policy):
    """Value to player 0 when `fixed_player` plays fixed_policy(entry, state) and the
    other player picks the best action at every node (knowing everything: an upper
    bound on what a best response of that player achieves)."""
    def value(state, entry):
        player = state.current_player()
        if player == TERMINAL:
            return state.returns()[0]
        if player == CHANCE:
            return sum(p * value(state.child(a), a if entry is None else entry)
                       for a, p in state.chance_outcomes())
        if player == fixed_player:
            return value(state.child(fixed_policy(entry, state)), entry)
        vals = [value(state.child(a), entry) for a in state.legal_actions()]
        return max(vals) if player == 0 else min(vals)
    return value(game.new_initial_state(), None)


@pytest.mark.parametrize("detection,value", [("deterministic", -1.0), ("stochastic", -0.8)])
def test_orbital_value_by_hand(detection, value):
    # Hand derivation. The entry cells are 2 steps from the centre and every cell next
    # to the centre is under the centre cross (sensor 4). So on the turn before it
    # wins, the Attacker stands in the cross when the Defender senses. A Defender that
    # always activates sensor 4 therefore always detects it (deterministic: value -1)
    # or detects it with probability >= 0.9 (stochastic: the Attacker wins at most
    # 0.1, value <= 0.1 - 0.9 = -0.8). Conversely an Attacker heading straight in
    # stands in the cross only at turn 1, then wins unless detected there: it wins
    # with probability >= 0.1 against anything (stochastic value >= -0.8).
    game = games.load("orbital_pursuit_evasion", detection=detection)
    always_cross = _minimax_value(game, 1, lambda entry, state: 4)
    assert always_cross == pytest.approx(value)
    if detection == "stochastic":
        straight_in = {0: 1, 1: 0, 2: 3, 3: 2}  # N entry moves S, S moves N, E->W, W->E
        assert _minimax_value(game, 0, lambda e, s: straight_in[e]) == pytest.approx(value)


def test_orbital_names_and_tensors():
    game = games.load("orbital_pursuit_evasion", infostate="entry_position_turn")
    state = game.new_initial_state()
    assert state.action_to_string(CHANCE, 0) == "Entry N"
    state = state.child(0).child(0)       # enter north, Defender uses the NW sensor
    assert state.information_state_string(0) == "entry=0,pos=(0,2),turn=0"
    assert state.information_state_string(1) == "s0=N"
    assert [state.action_to_string(0, a) for a in range(5)] == ["N", "S", "E", "W", "Stay"]
    state = state.child(1)
    assert state.information_state_string(0) == "entry=0,pos=(1,2),turn=1"
    t = state.information_state_tensor(0)
    assert t[0] == 1 and t[4 + 1 * 5 + 2] == 1 and t[29] == pytest.approx(1 / 3)
    state = state.child(4)                # the cross catches it at (1, 2)
    assert state.is_terminal() and state.returns() == [-1.0, 1.0]
    assert state.information_state_string(1) == "s0=N,s4=D"
    assert state.information_state_tensor(1)[10 + 5 + 4] == 1.0


# -- Maneuver detection ---------------------------------------------------------------
# The parameter table, as literals. The tutorial's sketch of this variant fixes only
# the structure: the card is dealt as in Mini Maneuver ("each with
# probability 0.5"), the Operator picks one of 4 maneuver intensities, the Observer one
# of 5 sensor allocations, and detection is a chance node whose probability depends on
# both. It gives NO numbers for the detection probabilities or the payoffs; those
# below are the defaults written out in the docstring of games/maneuver_detection.py
# ("Defaults (intensity rows None/Small/Medium/Large; allocation columns as above)"),
# i.e. the game's specification, copied from that text rather than imported. The
# situation order (0 = No-maneuver, 1 = Maneuver), intensity order and allocation order
# are pinned to the game's own action names in the test below.
MD_SITUATION_PROBS = (0.5, 0.5)                      # Mini Maneuver's deal
MD_INTENSITIES = ("None", "Small", "Medium", "Large")
MD_ALLOCATIONS = ("Wide survey", "Small-burn watch", "Medium-burn watch",
                  "Large-burn watch", "Passive")
MD_DETECTION = np.array([[0.00, 0.00, 0.00, 0.00, 0.00],     # None: never detected
                         [0.55, 0.85, 0.25, 0.10, 0.05],     # Small
                         [0.60, 0.25, 0.95, 0.10, 0.10],     # Medium
                         [0.60, 0.20, 0.15, 0.85, 0.30]])    # Large
MD_UNDETECTED = np.array([[0.0, -0.3, -0.7, -0.9],           # No-maneuver (decoy fuel)
                          [-0.5, 0.5, 2.0, 2.5]])            # Maneuver (mission value)
MD_DETECTED = np.array([[0.0, 0.9, 0.5, 0.3],                # No-maneuver (decoy spotted)
                        [-0.5, -1.5, -1.5, -1.5]])           # Maneuver (caught)


def _md_expected_payoffs() -> np.ndarray:
    """U[s, i, j]: the Operator's expected payoff given situation s, intensity i and
    allocation j, averaging over the detection chance node: p U_det + (1 - p) U_undet."""
    p = MD_DETECTION[None, :, :]
    return p * MD_DETECTED[:, :, None] + (1 - p) * MD_UNDETECTED[:, :, None]


def _md_lp(payoff, w, extra_ub=None, objective=None):
    """The game as an LP, written from the table alone. The Operator sees s and then
    moves once, so its strategy is a behaviour x[s, :] per situation (a distribution over
    intensities; with one decision per infoset this IS its realization plan); the
    Observer moves once at a single infoset knowing nothing, so its strategy is one
    distribution y over allocations. The Operator's expected payoff is bilinear,
    sum_{s,i,j} w_s x[s,i] y_j U[s,i,j], and the inner min over y is attained at a pure
    allocation, so the value is
        max v  s.t.  v <= sum_{s,i} w_s x[s,i] U[s,i,j]  for every j,  sum_i x[s,i] = 1.
    Variables (x flattened, v). Returns the scipy result."""
    from scipy.optimize import linprog
    S, I, J = payoff.shape
    n = S * I
    coef = (w[:, None, None] * payoff).reshape(n, J)      # coef[(s,i), j]
    a_ub = np.hstack([-coef.T, np.ones((J, 1))])           # v - x.coef[:, j] <= 0
    b_ub = np.zeros(J)
    if extra_ub is not None:
        a_ub, b_ub = np.vstack([a_ub, extra_ub[0]]), np.concatenate([b_ub, extra_ub[1]])
    a_eq = np.hstack([np.kron(np.eye(S), np.ones((1, I))), np.zeros((S, 1))])
    c = np.zeros(n + 1)
    c[-1] = -1.0                                           # maximise v
    if objective is not None:
        c = objective
    res = linprog(c, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=np.ones(S),
                  bounds=[(0, None)] * n + [(None, None)], method="highs")
    assert res.status == 0, res.message
    return res


def _md_observer_lp(payoff, w, extra_ub=None, objective=None):
    """The Observer's side (the LP dual): min sum_s w_s u_s  s.t.
    sum_j y_j U[s,i,j] <= u_s for every (s, i),  sum_j y_j = 1,  y >= 0  (u_s is the
    Operator's best-response payoff in situation s). Variables (y, u)."""
    from scipy.optimize import linprog
    S, I, J = payoff.shape
    a_ub = np.hstack([payoff.reshape(S * I, J), -np.kron(np.eye(S), np.ones((I, 1)))])
    b_ub = np.zeros(S * I)
    if extra_ub is not None:
        a_ub, b_ub = np.vstack([a_ub, extra_ub[0]]), np.concatenate([b_ub, extra_ub[1]])
    c = np.concatenate([np.zeros(J), w]) if objective is None else objective
    res = linprog(c, A_ub=a_ub, b_ub=b_ub, A_eq=np.hstack([np.ones((1, J)), np.zeros((1, S))]),
                  b_eq=[1.0], bounds=[(0, None)] * J + [(None, None)] * S, method="highs")
    assert res.status == 0, res.message
    return res


def test_maneuver_detection_structure_and_mixing():
    game = games.load("maneuver_detection")
    histories, own, terminals, chance = walk(game)
    assert counts(own) == (2, 1)          # one infoset per situation; the Observer one
    # The deal, then one detection node per (situation, intensity, allocation);
    # intensity "None" is never detected, so its detection node has one outcome.
    assert histories == 121 and len(chance) == 1 + 2 * 4 * 5 and len(terminals) == 70
    assert sorted(len(o) for _, o in chance).count(1) == 2 * 5
    assert perfect_recall(own) == {0: True, 1: True}

    # Pin the literal table's row/column order to the game's action names, then check
    # every (situation, intensity, allocation) entry of the game's tree against it.
    root = game.new_initial_state()
    assert root.chance_outcomes() == [(0, MD_SITUATION_PROBS[0]), (1, MD_SITUATION_PROBS[1])]
    assert [root.action_to_string(CHANCE, s) for s in (0, 1)] == ["No-maneuver", "Maneuver"]
    assert [root.child(s).information_state_string(0) for s in (0, 1)] == [
        "situation=N", "situation=M"]
    payoff = _md_expected_payoffs()
    for s in (0, 1):
        node = root.child(s)
        assert [node.action_to_string(0, i) for i in node.legal_actions()] == list(MD_INTENSITIES)
        for i in range(4):
            observer = node.child(i)
            assert [observer.action_to_string(1, j)
                    for j in observer.legal_actions()] == list(MD_ALLOCATIONS)
            for j in range(5):
                detect = observer.child(j)
                got = sum(p * detect.child(d).returns()[0] for d, p in detect.chance_outcomes())
                assert got == pytest.approx(payoff[s, i, j], abs=1e-12), (s, i, j)

    # Solve the table's LP (both sides) with scipy, independently of the game code.
    pytest.importorskip("scipy")
    w = np.asarray(MD_SITUATION_PROBS)
    op = _md_lp(payoff, w)
    value, x = -op.fun, op.x[:8].reshape(2, 4)
    ob = _md_observer_lp(payoff, w)
    y = ob.x[:5]
    assert ob.fun == pytest.approx(value, abs=1e-9)        # LP duality: same value
    # (Sanity of the construction, not asserted: a separate operator LP over the same
    # defaults gives 0.1313036, N: None/Small (0.266, 0.734), M: Medium/Large
    # (0.508, 0.492); this LP reproduces it.)
    # Uniqueness: over the optimal faces (value within 1e-9 of optimum), minimise and
    # maximise every coordinate of x and y; each range collapsing to a point means the
    # equilibrium strategy of that player is unique, so comparing mixes is legitimate.
    n = 8
    keep_op = (np.concatenate([-(w[:, None, None] * payoff).reshape(n, 5).T,
                               np.zeros((5, 1))], axis=1), np.full(5, -(value - 1e-9)))
    keep_ob = (np.concatenate([np.zeros(5), w])[None, :], np.array([value + 1e-9]))
    for k in range(n):
        for sign in (1.0, -1.0):
            obj = np.zeros(n + 1)
            obj[k] = sign
            r = _md_lp(payoff, w, extra_ub=keep_op, objective=obj)
            assert abs(r.x[k] - x.flat[k]) < 1e-6, ("operator not unique", k)
    for k in range(5):
        for sign in (1.0, -1.0):
            obj = np.zeros(5 + 2)
            obj[k] = sign
            r = _md_observer_lp(payoff, w, extra_ub=keep_ob, objective=obj)
            assert abs(r.x[k] - y[k]) < 1e-6, ("observer not unique", k)
    # Indifference: against the Operator's mix every allocation the Observer uses earns
    # exactly the value, and every other allocation is strictly worse for the Observer.
    per_allocation = np.einsum("s,si,sij->j", w, x, payoff)
    used = y > 1e-6
    assert per_allocation[used] == pytest.approx(np.full(used.sum(), value), abs=1e-9)
    assert np.all(per_allocation[~used] > value + 1e-6)
    # Likewise each situation's used intensities are best responses to y.
    per_intensity = payoff @ y                                   # [s, i]
    for s in (0, 1):
        best = per_intensity[s].max()
        assert np.all(per_intensity[s][x[s] > 1e-6] == pytest.approx(best, abs=1e-9))

    # The project's sequence-form LP on the game's tree must agree with all of it.
    try:  # tests/ is on sys.path when it is not a package (pytest's default rootdir mode)
        from reference.sequence_form_lp import solve_zero_sum
    except ImportError:  # pragma: no cover
        from tests.reference.sequence_form_lp import solve_zero_sum  # type: ignore
    solution = solve_zero_sum(game)
    assert solution.value == pytest.approx(value, abs=1e-7)
    strategies = solution.strategies
    for s, info in enumerate(("situation=N", "situation=M")):
        got = [strategies[0][info][i] for i in range(4)]
        assert got == pytest.approx(x[s].tolist(), abs=1e-6), info
    got = [strategies[1]["operator_acted"][j] for j in range(5)]
    assert got == pytest.approx(y.tolist(), abs=1e-6)
    supports = {info: sorted(a for a, p in strategy.items() if p > 1e-6)
                for player in (0, 1) for info, strategy in strategies[player].items()}
    assert supports == {"situation=N": np.flatnonzero(x[0] > 1e-6).tolist(),
                        "situation=M": np.flatnonzero(x[1] > 1e-6).tolist(),
                        "operator_acted": np.flatnonzero(y > 1e-6).tolist()}


# -- Conjunction --------------------------------------------------------------------
def test_conjunction_structure():
    game = games.load("conjunction")
    assert game.utility_sum() is None
    histories, own, terminals, chance = walk(game)
    assert counts(own) == (2, 4) and len(terminals) == 16
    assert all(o == [(0, 0.5), (1, 0.5)] for _, o in chance) and len(chance) == 3
    # Returns are the cost table's entries: all 16 rows of the course project's table,
    # copied as literals in its column order:
    # Alice priority, Bob priority, A action, B action -> (Alice cost, Bob cost).
    project_table = {
        "HHMM": (-3, -3), "HHMH": (-3, -1), "HHHM": (-1, -3), "HHHH": (-10, -10),
        "HLMM": (-3, -1), "HLMH": (-3, -1), "HLHM": (-1, -1), "HLHH": (-10, -10),
        "LHMM": (-1, -3), "LHMH": (-1, -1), "LHHM": (-1, -3), "LHHH": (-10, -10),
        "LLMM": (-1, -1), "LLMH": (-1, -1), "LLHM": (-1, -1), "LLHH": (-10, -10),
    }
    # Key each terminal by the game's own move names ("Alice priority High", ...,
    # "Maneuver"/"Hold"), so the index encoding is checked too, not assumed.
    seen = set()
    for path, returns in terminals:
        state, key = game.new_initial_state(), ""
        for player, _, a in path:
            key += state.action_to_string(player, a).split()[-1][0]
            state = state.child(a)
        assert returns == list(project_table[key]), key
        seen.add(key)
    assert seen == set(project_table)
    assert counts(walk(games.load("conjunction", alice_sees_bob_priority=True))[1]) == (4, 4)
    three = games.load("conjunction", num_actions=3)
    _, own3, terminals3, _ = walk(three)
    assert counts(own3) == (2, 6) and len(terminals3) == 36
    c = three.costs
    assert c[0, 0, 0, 0].tolist() == [-10, -10]       # both up: conjunction persists
    assert c[0, 0, 0, 1].tolist() == [-3, -3]         # up / down: the M/M entry
    assert c[1, 0, 1, 2].tolist() == [-1, -1]         # down / hold: the M/H entry


def test_conjunction_equilibrium_by_hand():
    # Hand derivation from the default table (priority 0 = High, action 0 = M, 1 = H).
    # Bob after Alice's M: High Bob pays -3 to maneuver and -1 to hold -> Hold;
    #   Low Bob pays -1 either way (indifferent).
    # Bob after Alice's H: holding collides (-10) -> Maneuver (-3 High, -1 Low).
    # Alice against that Bob: High Alice pays -3 to maneuver, -1 to hold -> Hold;
    #   Low Alice pays -1 either way. Alice's cost never depends on Bob after her M.
    # So sigma* = (Alice: High->H, Low->M; Bob: M after H, H after M) is a Nash
    # equilibrium. Values: Alice 0.5 * (-1) + 0.5 * (-1) = -1; Bob: Alice High holds
    # and Bob maneuvers (-3 High, -1 Low), Alice Low maneuvers and Bob holds (-1, -1):
    # (-3 - 1 - 1 - 1) / 4 = -1.5.
    game = games.load("conjunction")
    c = game.costs
    for ap in (0, 1):
        assert c[ap, 0, 0, 1, 1] > c[ap, 0, 0, 0, 1]          # High Bob holds after M
        assert c[ap, 1, 0, 1, 1] == c[ap, 1, 0, 0, 1]         # Low Bob indifferent
        for bp in (0, 1):
            assert c[ap, bp, 1, 0, 1] > c[ap, bp, 1, 1, 1]    # maneuver after H
    alice_star = {"alice p=H": 1, "alice p=L": 0}

    def bob_star(info):
        return 1 if info.endswith("alice=M") else 0

    _assert_conjunction_equilibrium(game, alice_star, bob_star, [-1.0, -1.5])


def _assert_conjunction_equilibrium(game, alice, bob, values):
    """(alice {infoset: action}, bob infoset -> action or {action: prob}) is worth
    `values` and no player gains by a pure deviation (a mixed one's value is an average
    of pure ones', so these are all the deviations to check)."""
    profile = lambda alice, bob: lambda p, info: alice[info] if p == 0 else bob(info)  # noqa: E731
    assert expected_returns(game, profile(alice, bob)) == pytest.approx(values)
    for a_high, a_low in itertools.product((0, 1), repeat=2):         # Alice's deviations
        alt = {"alice p=H": a_high, "alice p=L": a_low}
        assert expected_returns(game, profile(alt, bob))[0] <= values[0] + 1e-12
    bob_infos = ["bob p=H alice=M", "bob p=H alice=H", "bob p=L alice=M", "bob p=L alice=H"]
    for choice in itertools.product((0, 1), repeat=4):                # Bob's deviations
        table = dict(zip(bob_infos, choice))
        assert expected_returns(game, profile(alice, table.get))[1] <= values[1] + 1e-12


def test_conjunction_second_equilibrium_by_hand():
    # Where CFR+, LCFR, DCFR and PCFR+ end (test_small_game_equilibria.py): Alice always
    # maneuvers (0 = M); Bob holds after her M when High (-1 against -3) and mixes when
    # Low (-1 either way); after her H, which she never plays, he holds with
    # probability q. Values: Alice (-3 - 1) / 2 = -2 whatever Bob does after her M;
    # Bob -1. Alice holding meets Bob's hold with probability q (his priority does not
    # matter when q is the same at both): -10 q - (1 - q) = -1 - 9 q, no better than
    # High's -3 once q >= 2/9 and never better than Low's -1. Bob's deviations after
    # her H are off the path and gain nothing. So for q >= 2/9 it is a Nash
    # equilibrium, and for q < 2/9 High Alice gains by holding. Not subgame perfect:
    # reached, Bob's hold after her H costs -10 against -3 (High) or -1 (Low).
    game = games.load("conjunction")

    def bob_holding_after_a_hold(q):
        def bob(info):
            if info.endswith("alice=H"):
                return {1: q, 0: 1 - q}
            return 1 if info.startswith("bob p=H") else {0: 0.5, 1: 0.5}
        return bob

    for q in (2 / 9, 0.5, 1.0):
        _assert_conjunction_equilibrium(game, {"alice p=H": 0, "alice p=L": 0},
                                        bob_holding_after_a_hold(q), [-2.0, -1.0])
    # Below 2/9, High Alice gains by holding: -1 - 9q > -3.
    bob = bob_holding_after_a_hold(0.2)
    holds = {"alice p=H": 1, "alice p=L": 0}
    gain = expected_returns(game, lambda p, info: holds[info] if p == 0 else bob(info))[0]
    assert gain == pytest.approx(0.5 * (-1 - 9 * 0.2) + 0.5 * -1) and gain > -2.0


# -- Spoof ------------------------------------------------------------------------------
@pytest.mark.parametrize("shuffle", [False, True])
def test_spoof_structure(shuffle):
    game = games.load("spoof", max_rounds=3, shuffle_initial=shuffle)
    state = game.new_initial_state()
    assert state.current_player() == (CHANCE if shuffle else 1)
    assert state.legal_actions() == [0, 1, 2]
    histories, own, terminals, chance = walk(game)
    assert perfect_recall(own) == {0: True, 1: True}
    assert len(chance) == (1 if shuffle else 0)
    for path, returns in terminals:
        toggles = len([a for p, _, a in path if p == 0])
        assert toggles <= 3
        if returns == [0.0, 0.0]:
            assert toggles == 3 and path[-1][0] == 1      # a draw only after max_rounds
        else:
            assert path[-1][0] == 0 and sum(returns) == 0  # a toggle decides the game
    # Round 1 starts from two heads, so only Player 0 can win it (by hitting the tail).
    one = games.load("spoof", max_rounds=1)
    _, own1, terminals1, _ = walk(one)
    assert len(own1[0]) == 1
    assert sorted(r[0] for _, r in terminals1).count(-1.0) == 0


def test_spoof_information():
    state = games.load("spoof").new_initial_state().child(2)   # coins H H T
    state = state.child(0)                                     # toggle 0 -> T H T
    assert state.current_player() == 1
    assert state.information_state_string(0) == "p0 t0"      # count told after the swap
    state = state.child(1)                                     # swap 1 and 2 -> T T H
    assert state.information_state_string(0) == "p0 t0:1"
    assert state.information_state_string(1) == "p1 tail=2 t0 s1 | coins=TTH"
    state = state.child(2)                                     # toggle 2 -> T T T
    assert state.is_terminal() and state.returns() == [-1.0, 1.0]


# -- parameters -------------------------------------------------------------------------
@pytest.mark.parametrize("name,params,match", [
    ("orbital_pursuit_evasion", {"detection": "noisy"}, "detection"),
    ("orbital_pursuit_evasion", {"infostate": "imperfect"}, "infostate"),
    ("maneuver_detection", {"situation_probs": (0.7, 0.7)}, "situation_probs"),
    ("maneuver_detection", {"detection_probs": ((0.5, 1.5),)}, "detection_probs"),
    ("maneuver_detection", {"payoff_detected": ((1.0,), (2.0,))}, "payoff_detected"),
    ("maneuver_detection", {"payoff_undetected": "x"}, "payoff_undetected"),
    ("conjunction", {"costs": np.zeros((2, 2, 2, 2))}, "costs"),
    ("conjunction", {"costs": np.zeros((2, 2, 2, 2, 2)), "num_actions": 3}, "costs"),
    ("conjunction", {"num_actions": 4}, "num_actions"),
    ("conjunction", {"alice_sees_bob_priority": "yes"}, "alice_sees_bob_priority"),
    ("spoof", {"max_rounds": 0}, "max_rounds"),
    ("spoof", {"max_rounds": 2.5}, "max_rounds"),
    ("spoof", {"shuffle_initial": 1}, "shuffle_initial"),
])
def test_bad_parameters(name, params, match):
    with pytest.raises(ValueError, match=match):
        games.load(name, **params)


def test_custom_parameters_are_used():
    costs = np.arange(32, dtype=float).reshape(2, 2, 2, 2, 2) * -1
    game = games.load("conjunction", costs=costs)
    state = game.new_initial_state()
    for a in (1, 0, 1, 1):
        state = state.child(a)
    assert state.returns() == costs[1, 0, 1, 1].tolist()
    md = games.load("maneuver_detection", detection_probs=[[0.0, 1.0]],
                    payoff_undetected=[[0.0], [1.0]], payoff_detected=[[0.0], [-1.0]])
    _, own, terminals, _ = walk(md)
    assert counts(own) == (2, 1) and len(terminals) == 4


# -- old names, kept for one version -----------------------------------------------------
def test_orbital_infostate_seed_still_builds_the_entry_position_turn_game():
    """infostate="seed", the old name, builds the entry-position-turn game, with a
    DeprecationWarning attributed to the caller's line (through games.load), so that
    Python's filters treat it as the caller's."""
    with pytest.warns(DeprecationWarning, match="infostate='entry_position_turn'") as caught:
        old = games.load("orbital_pursuit_evasion", infostate="seed")
    assert [w.filename for w in caught] == [__file__]
    new = games.load("orbital_pursuit_evasion", infostate="entry_position_turn")
    assert repr(old) == repr(new)
    # The same histories, cut into the same infosets with the same strings.
    (old_histories, old_own, *_), (new_histories, new_own, *_) = walk(old), walk(new)
    assert old_histories == new_histories and old_own == new_own


def test_conjunction_seed_costs_is_the_old_name_of_two_action_costs():
    from jaxsolve.games import conjunction

    with pytest.warns(DeprecationWarning, match="conjunction.TWO_ACTION_COSTS") as caught:
        from jaxsolve.games.conjunction import SEED_COSTS
    assert [w.filename for w in caught] == [__file__]
    assert SEED_COSTS is conjunction.TWO_ACTION_COSTS
    assert np.array_equal(games.load("conjunction", costs=SEED_COSTS).costs,
                          games.load("conjunction").costs)
    with pytest.raises(AttributeError, match="NO_SUCH_COSTS"):
        conjunction.NO_SUCH_COSTS  # noqa: B018 - only the old names are served
