"""Independent reference solver: the sequence-form linear program.

Ground truth for testing the CFR solvers, written WITHOUT the solver code: it walks any
game that satisfies the duck-typed protocol of `jaxsolve/protocol.py` (a `pyspiel.Game`
or a plain-Python game) and imports nothing from `jaxsolve` except two constants.

References:
  * D. Koller, N. Megiddo, B. von Stengel, "Fast algorithms for finding randomized
    strategies in game trees", STOC 1994.
  * B. von Stengel, "Efficient computation of behavior strategies", GEB 14, 1996.

A *sequence* of player i is the list of (infoset, action) pairs i has taken so far; with
perfect recall it is identified by its last pair (infoset_string, action), and the empty
sequence is `EMPTY_SEQUENCE` (None).  A *realization plan* x gives every sequence the
probability that the player plays all of its actions; it is exactly characterised by
    x[empty] = 1,   and   sum_a x[(I, a)] = x[parent(I)]  for every infoset I,  x >= 0,
i.e. E x = e, x >= 0 (F y = f, y >= 0 for player 1).  The expected payoff of player 0 is
bilinear, x^T A y, with A[s0, s1] = sum over terminals z whose sequences are (s0, s1) of
chance_reach(z) * u_0(z).  The equilibrium of the zero-sum game is then an LP.

Besides the LP, `best_response_value` and `expected_values` evaluate a behavioural
profile by their own tree walks, giving an outside reference for exploitability.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Hashable, Mapping, Sequence

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from jaxsolve.protocol import CHANCE, TERMINAL  # constants only: no solver code

EMPTY_SEQUENCE = None  # the empty sequence; other sequences are (infoset_string, action)

# A behavioural strategy of one player: {infoset_string: {action: probability}}.
Strategy = Mapping[str, Mapping[int, float]]

_ZERO_SUM_RTOL = 1e-9  # |u0 + u1| allowed at a terminal, relative to max(1, |u|)
_VALUE_ATOL = 1e-7  # the two LPs' values must agree this closely
_HIGHS_OPTIONS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}


@dataclass(frozen=True)
class SequenceForm:
    """The sequence form of a 2-player zero-sum game with perfect recall.

    sequences[p]      : list of player p's sequences; index 0 is EMPTY_SEQUENCE.
    seq_index[p]      : sequence -> column index into E (p=0) / F (p=1) and A.
    infoset_parent[p] : infoset_string -> index of the sequence leading to it.
    infoset_actions[p]: infoset_string -> tuple of legal actions.
    E, e              : player 0's realization-plan constraints E x = e (x >= 0).
    F, f              : player 1's realization-plan constraints F y = f (y >= 0).
    A                 : sparse (n0 x n1) payoff of player 0, chance probabilities folded in.
    num_histories     : number of histories visited by the walk.
    """

    sequences: tuple[list, list]
    seq_index: tuple[dict, dict]
    infoset_parent: tuple[dict, dict]
    infoset_actions: tuple[dict, dict]
    E: sp.csr_matrix
    e: np.ndarray
    F: sp.csr_matrix
    f: np.ndarray
    A: sp.csr_matrix
    num_histories: int


@dataclass(frozen=True)
class LPSolution:
    """value: player 0's expected payoff at equilibrium (the game value).
    strategies: per player {infoset_string: {action: prob}}, behavioural form of the plans
        (uniform at infosets the player's own plan never reaches).
    realization_plans: per player {sequence: realization probability}.
    values: (value of player 0's LP, value of player 1's LP); they agree to 1e-7.
    sequence_form: the SequenceForm the LPs were built from."""

    value: float
    strategies: tuple[dict, dict]
    realization_plans: tuple[dict, dict]
    values: tuple[float, float]
    sequence_form: SequenceForm


def _child(state: Any, action: int) -> Any:
    """The successor state, via `child` when the state has it, else clone + apply."""
    if hasattr(state, "child"):
        return state.child(action)
    new = state.clone()
    new.apply_action(action)
    return new


def _node_kind(state: Any) -> int:
    """TERMINAL, CHANCE or the acting player's index; other kinds are not supported."""
    if state.is_terminal():
        return TERMINAL
    player = state.current_player()
    if player != CHANCE and player < 0:
        raise ValueError(f"unsupported node kind {player} (simultaneous-move node?)")
    return player


def build_sequence_form(game: Any) -> SequenceForm:
    """Walk the game tree once (explicit stack) and assemble E, e, F, f and A."""
    if game.num_players() != 2:
        raise ValueError(f"sequence-form LP needs a 2-player game, got {game.num_players()}")
    sequences: tuple[list, list] = ([EMPTY_SEQUENCE], [EMPTY_SEQUENCE])
    seq_index: tuple[dict, dict] = ({EMPTY_SEQUENCE: 0}, {EMPTY_SEQUENCE: 0})
    parent: tuple[dict, dict] = ({}, {})
    actions_of: tuple[dict, dict] = ({}, {})
    rows, cols, vals = [], [], []  # COO triplets of A; duplicates are summed later
    num_histories = 0

    # Stack entries: (state, player 0's sequence index, player 1's sequence index,
    # chance reach).  Each player's current sequence is what its next infoset hangs off.
    stack = [(game.new_initial_state(), 0, 0, 1.0)]
    while stack:
        state, s0, s1, chance = stack.pop()
        num_histories += 1
        kind = _node_kind(state)
        if kind == TERMINAL:
            u0, u1 = (float(r) for r in state.returns())
            if abs(u0 + u1) > _ZERO_SUM_RTOL * max(1.0, abs(u0), abs(u1)):
                raise ValueError(f"game is not zero-sum at a terminal: returns {u0}, {u1}")
            if u0 != 0.0:  # payoff entry for the pair of sequences leading here
                rows.append(s0)
                cols.append(s1)
                vals.append(chance * u0)
        elif kind == CHANCE:
            for action, prob in state.chance_outcomes():
                if prob > 0.0:  # zero-probability outcomes contribute nothing to A
                    stack.append((_child(state, action), s0, s1, chance * prob))
        else:
            p = kind
            own = (s0, s1)[p]
            info = state.information_state_string(p)
            legal = tuple(int(a) for a in state.legal_actions())
            if info not in parent[p]:
                # New infoset: its sequences (info, a) extend the current own sequence.
                parent[p][info] = own
                actions_of[p][info] = legal
                for a in legal:
                    seq_index[p][(info, a)] = len(sequences[p])
                    sequences[p].append((info, a))
            elif parent[p][info] != own:
                # Perfect recall <=> every history of an infoset has the same own sequence.
                raise ValueError(
                    f"imperfect recall: player {p}'s infoset {info!r} is reached after "
                    f"own sequences {sequences[p][parent[p][info]]!r} and {sequences[p][own]!r}"
                )
            elif actions_of[p][info] != legal:
                raise ValueError(f"infoset {info!r} has inconsistent legal actions")
            for a in legal:
                child_seq = seq_index[p][(info, a)]
                if p == 0:
                    stack.append((_child(state, a), child_seq, s1, chance))
                else:
                    stack.append((_child(state, a), s0, child_seq, chance))

    def constraints(p: int) -> tuple[sp.csr_matrix, np.ndarray]:
        # Row 0: the empty sequence is always played (x[empty] = 1).  One row per infoset
        # I: probability flows from the parent sequence into I's actions, so that
        # sum_a x[(I, a)] - x[parent(I)] = 0 (the player reaches I whenever it plays the
        # parent sequence, and then picks exactly one action).
        r, c, v = [0], [0], [1.0]
        for row, (info, par) in enumerate(parent[p].items(), start=1):
            legal = actions_of[p][info]
            r += [row] * (len(legal) + 1)
            c += [par] + [seq_index[p][(info, a)] for a in legal]
            v += [-1.0] + [1.0] * len(legal)
        shape = (len(parent[p]) + 1, len(sequences[p]))
        rhs = np.zeros(shape[0])
        rhs[0] = 1.0
        return sp.coo_matrix((v, (r, c)), shape=shape).tocsr(), rhs

    E, e = constraints(0)
    F, f = constraints(1)
    A = sp.coo_matrix((vals, (rows, cols)), shape=(len(sequences[0]), len(sequences[1])))
    return SequenceForm(
        sequences, seq_index, parent, actions_of, E, e, F, f, A.tocsr(), num_histories
    )


def _solve_lp(payoff: sp.spmatrix, own_E, own_e, opp_E, opp_e) -> tuple[float, np.ndarray]:
    """max_x min_y x^T payoff y  over  own_E x = own_e, x >= 0;  opp_E y = opp_e, y >= 0.

    For fixed x the inner problem  min_y (payoff^T x)^T y  s.t. opp_E y = opp_e, y >= 0
    has the LP dual  max_q opp_e^T q  s.t. opp_E^T q <= payoff^T x  (q free); by strong
    duality both have the same value, so the outer max can be taken jointly over (x, q):
        max opp_e^T q   s.t.  opp_E^T q - payoff^T x <= 0,  own_E x = own_e,  x >= 0.
    Returns (value, x).
    """
    n, m = payoff.shape[0], opp_E.shape[0]
    c = np.concatenate([np.zeros(n), -opp_e])  # linprog minimises: negate the objective
    A_ub = sp.hstack([-payoff.T, opp_E.T], format="csr")
    A_eq = sp.hstack([own_E, sp.csr_matrix((own_E.shape[0], m))], format="csr")
    bounds = [(0, None)] * n + [(None, None)] * m
    res = linprog(c, A_ub=A_ub, b_ub=np.zeros(A_ub.shape[0]), A_eq=A_eq, b_eq=own_e,
                  bounds=bounds, method="highs", options=_HIGHS_OPTIONS)
    if res.status != 0:
        raise RuntimeError(f"HiGHS failed: {res.message}")
    return -float(res.fun), np.asarray(res.x[:n])


def _behavioural(sf: SequenceForm, p: int, plan: np.ndarray) -> dict:
    """pi(a | I) = x[(I, a)] / sum_b x[(I, b)]; uniform where the own plan gives I mass 0."""
    strategy = {}
    for info, legal in sf.infoset_actions[p].items():
        mass = np.array([max(plan[sf.seq_index[p][(info, a)]], 0.0) for a in legal])
        total = mass.sum()
        probs = mass / total if total > 1e-12 else np.full(len(legal), 1.0 / len(legal))
        strategy[info] = {a: float(q) for a, q in zip(legal, probs)}
    return strategy


def solve_zero_sum(game: Any) -> LPSolution:
    """Nash equilibrium and value of a 2-player zero-sum perfect-recall game."""
    sf = build_sequence_form(game)
    # Player 0 maximises x^T A y; player 1 maximises x^T (-A) y, i.e. its own payoff.
    v0, x = _solve_lp(sf.A, sf.E, sf.e, sf.F, sf.f)
    v1, y = _solve_lp(-sf.A.T.tocsr(), sf.F, sf.f, sf.E, sf.e)
    value0_from_p1 = -v1  # player 1's guaranteed payoff is minus player 0's value
    if abs(v0 - value0_from_p1) > _VALUE_ATOL:
        raise AssertionError(f"primal values disagree: {v0} vs {value0_from_p1}")
    plans = tuple(
        {s: float(z[i]) for i, s in enumerate(sf.sequences[p])} for p, z in ((0, x), (1, y))
    )
    strategies = (_behavioural(sf, 0, x), _behavioural(sf, 1, y))
    return LPSolution(v0, strategies, plans, (v0, value0_from_p1), sf)


def _action_probs(strategies: Sequence[Strategy], p: int, state: Any) -> list:
    """[(action, prob)] of player p's behavioural strategy at `state`."""
    info = state.information_state_string(p)
    table = strategies[p].get(info)
    if table is None:
        raise KeyError(f"no strategy for player {p} at infoset {info!r}")
    probs = [(int(a), float(table.get(int(a), 0.0))) for a in state.legal_actions()]
    if abs(sum(q for _, q in probs) - 1.0) > 1e-6:
        raise ValueError(f"strategy at {info!r} does not sum to 1 over legal actions")
    return probs


def expected_values(game: Any, strategies: Sequence[Strategy]) -> list[float]:
    """Expected return of every player when all follow `strategies` (tree walk)."""
    totals = np.zeros(game.num_players())
    stack = [(game.new_initial_state(), 1.0)]  # (state, reach probability)
    while stack:
        state, reach = stack.pop()
        kind = _node_kind(state)
        if kind == TERMINAL:
            totals += reach * np.asarray(state.returns(), dtype=float)
            continue
        moves = state.chance_outcomes() if kind == CHANCE else _action_probs(strategies, kind, state)
        for action, prob in moves:
            if prob > 0.0:
                stack.append((_child(state, action), reach * prob))
    return [float(v) for v in totals]


def best_response_value(game: Any, strategies: Sequence[Strategy], player: int) -> float:
    """Value to `player` of a best response against the others' behavioural strategies.

    Pass 1 (tree walk): carry each history's counterfactual weight w(h) (chance and
    opponents' reach; the responder's own choices are NOT multiplied in) and the
    responder's own sequence.  Terminal z adds w(z) * u(z) to its own sequence's bucket,
    and each responder infoset I records the sequence it hangs off and its depth (number
    of own actions before it).  Summing over a bucket groups all histories of an infoset
    that share a continuation, weighted as a BR must weigh them.
    Pass 2: bottom-up over the responder's infosets, deepest first: the value of
    sequence s is its terminal bucket plus, for every infoset I hanging off s, the best
    action's value max_a V((I, a)).  With perfect recall these choices are independent,
    so V(empty sequence) is the best-response value (in absolute, unnormalised terms).
    """
    bucket: dict[Hashable, float] = defaultdict(float)
    infosets: dict[str, tuple[Hashable, tuple, int]] = {}  # info -> (parent seq, actions, depth)
    stack = [(game.new_initial_state(), 1.0, EMPTY_SEQUENCE, 0)]
    while stack:
        state, weight, own_seq, depth = stack.pop()
        kind = _node_kind(state)
        if kind == TERMINAL:
            bucket[own_seq] += weight * float(state.returns()[player])
        elif kind == player:
            info = state.information_state_string(player)
            legal = tuple(int(a) for a in state.legal_actions())
            known = infosets.setdefault(info, (own_seq, legal, depth))
            if known[0] != own_seq:
                raise ValueError(f"imperfect recall at player {player}'s infoset {info!r}")
            for a in legal:  # the responder's actions keep the weight: they are chosen below
                stack.append((_child(state, a), weight, (info, a), depth + 1))
        else:
            moves = state.chance_outcomes() if kind == CHANCE else _action_probs(strategies, kind, state)
            for action, prob in moves:
                if prob > 0.0:  # zero-weight histories cannot change the value
                    stack.append((_child(state, action), weight * prob, own_seq, depth))

    value = dict(bucket)
    for info, (par, legal, _) in sorted(infosets.items(), key=lambda kv: -kv[1][2]):
        value[par] = value.get(par, 0.0) + max(value.get((info, a), 0.0) for a in legal)
    return float(value.get(EMPTY_SEQUENCE, 0.0))
