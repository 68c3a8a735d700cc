"""Exact equilibria of two-player zero-sum games: the sequence-form linear program.

A player's mixed behaviour is written as its *realization plan* x: for each of its
sequences (the empty one, and every own (infoset, action) pair) the probability that
it plays all of that sequence's own actions. With perfect recall the plans are
exactly the vectors with

    x[empty] = 1,   sum_a x[(I, a)] = x[parent(I)] for every own infoset I,   x >= 0,

written E x = e (player 1's: F y = f), and player 0's expected payoff is bilinear,
x^T M y, where M[s, t] sums chance reach times player 0's payoff over the leaves whose
last own sequences are s and t. Player 0's maximin plan is the solution of one LP:
for a fixed x, player 1's best reply solves min_y (M^T x)^T y over F y = f, y >= 0,
whose LP dual is max_q f^T q over F^T q <= M^T x (q free, one entry per row of F);
by strong duality the two optima agree, so

    max_{x, q}  f^T q   subject to   F^T q - M^T x <= 0,   E x = e,   x >= 0

gives player 0's equilibrium plan x and the game value f^T q = q[0]. The same LP with
the players' roles and player 1's payoffs gives player 1's plan. The size of each LP
is linear in the game tree (sequences plus infosets), not in its pure strategies.

References:
  * D. Koller, N. Megiddo, B. von Stengel, "Fast algorithms for finding randomized
    strategies in game trees", STOC 1994.
  * B. von Stengel, "Efficient computation of behavior strategies", Games and
    Economic Behavior 14, 1996.
"""

from __future__ import annotations

import time
import warnings
from typing import Any, NamedTuple

import numpy as np

from jaxsolve.errors import LargeGameWarning, MissingDependency
from jaxsolve.tree import GameTree
from jaxsolve.tree import arguments as tree_arguments
from jaxsolve.tree.sizes import observed_utility_sum
from jaxsolve.validate import fail, traced

# Above this many sequences (both players', empty ones included) `solve_exact` warns.
# HiGHS's time grows faster than the sequences and depends on the game: on a CPU,
# Leduc poker (2,186 sequences) takes 0.3 s, liar's dice with one six-sided die each
# (49,142) 10 s, goofspiel with 6 cards (74,078) 70 s and liar's dice with
# seven-sided dice (229,364) 2 minutes: past this size a solve takes minutes or more,
# and CFR is usually the faster way to a close approximation.
LARGE_SEQUENCES = 100_000

# HiGHS's primal and dual feasibility tolerances: the plans satisfy their constraints
# and the value is optimal to about this, relative to the payoffs' scale. An own plan
# below it at an infoset counts as not reaching it.
TOLERANCE = 1e-10

_CFR_ADVICE = (
    "For such a game run CFR (jaxsolve.run with jaxsolve.cfr_plus()) and measure the "
    "result with jaxsolve.nash_conv: CFR's average policy converges to a Nash "
    "equilibrium only in two-player zero-sum games; elsewhere the joint distribution of "
    "the profiles it plays converges to a coarse correlated equilibrium, and its "
    "average policy, the product of that distribution's marginals, need not be an "
    "equilibrium at all."
)


class LPReport(NamedTuple):
    """What HiGHS says about one player's LP.

    Attributes:
      value: the LP's optimum: the payoff the player's plan guarantees it against any
        opponent (for player 1 in its own payoffs).
      iterations: HiGHS's iteration count (simplex or interior point).
      seconds: the wall-clock time of the solve, building the LP included.
      message: HiGHS's closing message.
    """

    value: float
    iterations: int
    seconds: float
    message: str


class Equilibrium(NamedTuple):
    """A Nash equilibrium of a two-player zero-sum game, from `solve_exact`.

    Attributes:
      policy: `[I, A]` float64 NumPy array: both players' behavioural strategies, in
        the layout `jaxsolve.average_policy` returns (0 at illegal actions; uniform
        at an infoset its own player's plan never reaches).
      value: player 0's expected payoff at the equilibrium, the game value (player 1
        gets `tree.sizes.utility_sum - value`).
      plan: `[I*A + 1]` float64 NumPy array: both players' realization plans in the
        layout of `jaxsolve.sequences.realization_plan` (entry `i * A + a` belongs to
        the player of infoset i; the empty sequence's 1 last).
      reports: one `LPReport` per player. Their values sum to the utility sum up to
        the LP's tolerance; the shortfall bounds the profile's NashConv.
    """

    policy: np.ndarray
    value: float
    plan: np.ndarray
    reports: tuple[LPReport, LPReport]


def solve_exact(tree: GameTree) -> Equilibrium:
    """A Nash equilibrium and the value of a two-player zero-sum game, by linear
    programming (the sequence-form LP of Koller, Megiddo & von Stengel 1994).

    Solves two LPs with SciPy's HiGHS (`scipy.optimize.linprog(method="highs")`),
    one per player, each of the size of the game tree; see the module docstring for
    the program. Runs on the host, outside jit. A constant-sum game is solved as the
    zero-sum game it is equivalent to. Needs SciPy: `pip install "jaxsolve[exact]"`.

    Args:
      tree: the compiled game: two players, perfect recall, zero- or constant-sum,
        no batch axis.

    Returns:
      An `Equilibrium`: `policy` `[I, A]` (pass it to `jaxsolve.exploitability`),
        `value` player 0's game value as a Python float, `plan` the realization
        plans, `reports` HiGHS's account of each LP.

    Raises:
      ArgumentTypeError: `tree` is not a GameTree.
      ArgumentError: the tree has a batch axis or traced arrays, or the game has other
        than two players, is general-sum, or a player forgets (imperfect recall).
      MissingDependency: SciPy is not installed.
      RuntimeError: HiGHS stops without an optimum.

    Warns:
      LargeGameWarning: the game has more than `LARGE_SEQUENCES` sequences.

    Examples:
      >>> import jaxsolve
      >>> from jaxsolve import games
      >>> tree = jaxsolve.compile_game(games.load("kuhn_poker"))
      >>> eq = jaxsolve.solve_exact(tree)
      >>> round(eq.value, 9), round(-1 / 18, 9)
      (-0.055555556, -0.055555556)
      >>> float(jaxsolve.exploitability(tree, eq.policy)) < 1e-6
      True
    """
    where = "solve_exact"
    _check(tree, where)
    optimize, sparse = _scipy(where)
    sz = tree.sizes
    legal = np.asarray(tree.legal, bool)
    owner = np.asarray(tree.infoset_player)
    parent = np.asarray(tree.infoset_parent)
    ids = [_sequence_ids(legal, owner, p) for p in range(2)]
    size = sum(len(s) for s in ids)
    if size > LARGE_SEQUENCES:
        warnings.warn(f"{where}: the game has {size:,} sequences, above {LARGE_SEQUENCES:,}: "
                      "the LPs may take minutes to hours and much memory. CFR (jaxsolve.run "
                      "with jaxsolve.cfr_plus()) approaches the equilibrium far sooner.",
                      LargeGameWarning, stacklevel=2)
    columns = [_columns(s, sz.empty_sequence) for s in ids]
    constraints = [_constraints(sparse, legal, owner, parent, p, columns[p], len(ids[p]))
                   for p in range(2)]
    chance = _chance_reach(tree)
    utilities = np.asarray(tree.utilities, np.float64)
    leaf_columns = [columns[p][np.asarray(tree.terminal_last[p])] for p in range(2)]

    plan = np.zeros(sz.empty_sequence + 1)
    plan[-1] = 1.0
    reports = []
    for p in range(2):
        start = time.perf_counter()
        # [own sequences, opponent's sequences]: chance reach times p's payoff summed
        # over the leaves that end both players' paths there (the COO sums duplicates).
        payoff = sparse.coo_matrix(
            (chance * utilities[:, p], (leaf_columns[p], leaf_columns[1 - p])),
            shape=(len(ids[p]), len(ids[1 - p]))).tocsr()
        x, value, result = _maximin(optimize, sparse, payoff, constraints[p],
                                    constraints[1 - p], where, p)
        plan[ids[p]] = x
        reports.append(LPReport(value, int(result.nit), time.perf_counter() - start,
                                str(result.message)))
    return Equilibrium(_behavioural(plan, legal), reports[0].value, plan, tuple(reports))


def _check(tree: Any, where: str) -> None:
    """Refuses what the sequence-form LP cannot solve, naming the alternative."""
    tree_arguments.game_tree(tree, where)
    if any(traced(getattr(tree, f)) for f in ("utilities", "chance_probs", "legal")):
        fail(where, "the tree holds traced arrays: the LP runs on the host, with SciPy; "
                    "call it outside jit and vmap")
    sz = tree.sizes
    if sz.num_players != 2:
        fail(where, f"the game has {sz.num_players} players; the sequence-form LP finds "
                    f"equilibria of two-player zero-sum games only. {_CFR_ADVICE}")
    forgetful = [p for p in range(2) if not sz.perfect_recall[p]]
    if forgetful:
        fail(where, f"player {forgetful[0]} forgets (imperfect recall): the sequence form "
                    "describes a player's strategies only with perfect recall. CFR "
                    "(jaxsolve.run) still runs on this tree, without a guarantee of "
                    "convergence.")
    # Read from the utilities themselves: sizes.utility_sum is not updated for a tree
    # whose utilities were replaced under a trace.
    if observed_utility_sum(tree.utilities) is None:
        fail(where, "the game is general-sum (the players' payoffs do not sum to one "
                    "constant at every terminal); the sequence-form LP finds equilibria "
                    f"of two-player zero-sum games only. {_CFR_ADVICE}")


def _scipy(where: str):
    """SciPy's optimize and sparse modules, or a MissingDependency naming the extra."""
    try:
        import scipy.optimize  # noqa: PLC0415 - optional: only the LP needs SciPy
        import scipy.sparse  # noqa: PLC0415 - optional: only the LP needs SciPy
    except ImportError as e:
        raise MissingDependency(f"{where} needs SciPy (its HiGHS LP solver), which is not "
                                'installed: pip install "jaxsolve[exact]" (from a clone: '
                                'pip install -e ".[exact]")') from e
    return scipy.optimize, scipy.sparse


def _sequence_ids(legal: np.ndarray, owner: np.ndarray, player: int) -> np.ndarray:
    """`[S_p]` int64: the flat ids (`infoset * A + action`) of `player`'s sequences,
    the empty sequence (`I * A`) first, then each own infoset's legal actions."""
    infosets = np.flatnonzero(owner == player)
    rows, actions = np.nonzero(legal[infosets])
    num_infosets, num_actions = legal.shape
    return np.concatenate([[num_infosets * num_actions],
                           infosets[rows] * num_actions + actions]).astype(np.int64)


def _columns(ids: np.ndarray, empty: int) -> np.ndarray:
    """`[I*A + 1]` int64: each flat sequence id's column among `ids`, -1 if not one."""
    columns = np.full(empty + 1, -1, np.int64)
    columns[ids] = np.arange(len(ids))
    return columns


def _constraints(sparse, legal: np.ndarray, owner: np.ndarray, parent: np.ndarray,
                 player: int, columns: np.ndarray, num_sequences: int):
    """`player`'s plan constraints: a sparse `[1 + I_p, S_p]` matrix and its `[1 + I_p]`
    right-hand side. Row 0 fixes the empty sequence at 1; row k says that infoset k
    (of `player`'s, in id order) gets exactly its parent sequence's probability,
    split over its actions."""
    infosets = np.flatnonzero(owner == player)
    num_actions = legal.shape[1]
    rows, actions = np.nonzero(legal[infosets])
    row_of_action = 1 + rows
    row_of_parent = 1 + np.arange(len(infosets))
    r = np.concatenate([[0], row_of_action, row_of_parent])
    c = np.concatenate([[0], columns[infosets[rows] * num_actions + actions],
                        columns[parent[infosets]]])
    v = np.concatenate([[1.0], np.ones(len(rows)), -np.ones(len(infosets))])
    matrix = sparse.coo_matrix((v, (r, c)), shape=(1 + len(infosets), num_sequences))
    rhs = np.zeros(1 + len(infosets))
    rhs[0] = 1.0
    return matrix.tocsr(), rhs


def _maximin(optimize, sparse, payoff, own, opponent, where: str, player: int):
    """The maximin plan of the player whose payoff is `payoff` `[S_own, S_opp]`.

    Variables: the own plan x (>= 0) then one free dual variable per row of the
    opponent's constraints; maximises the dual objective f^T q (f is 1 at row 0 only)
    subject to F^T q - payoff^T x <= 0 and E x = e. Returns (x, value, HiGHS result)."""
    (own_matrix, own_rhs), (opp_matrix, opp_rhs) = own, opponent
    num_x, num_q = own_matrix.shape[1], opp_matrix.shape[0]
    objective = np.concatenate([np.zeros(num_x), -opp_rhs])  # linprog minimises
    inequalities = sparse.hstack([-payoff.T, opp_matrix.T], format="csr")
    equalities = sparse.hstack([own_matrix, sparse.csr_matrix((own_matrix.shape[0], num_q))],
                               format="csr")
    result = optimize.linprog(
        objective, A_ub=inequalities, b_ub=np.zeros(inequalities.shape[0]),
        A_eq=equalities, b_eq=own_rhs, bounds=[(0, None)] * num_x + [(None, None)] * num_q,
        method="highs", options={"primal_feasibility_tolerance": TOLERANCE,
                                 "dual_feasibility_tolerance": TOLERANCE})
    if result.status != 0:
        raise RuntimeError(f"{where}: HiGHS found no optimum of player {player}'s LP: "
                           f"{result.message}")
    return np.asarray(result.x[:num_x]), -float(result.fun), result


def _chance_reach(tree: GameTree) -> np.ndarray:
    """`[Z]` float64: chance's probability of each leaf, on the host in float64 (the
    device arrays may be float32)."""
    probs = np.asarray(tree.chance_probs, np.float64).reshape(-1)
    flat = np.concatenate([probs, [1.0]])  # the padding index plays with probability 1
    return np.prod(flat[np.asarray(tree.terminal_chance)], axis=-1)


def _behavioural(plan: np.ndarray, legal: np.ndarray) -> np.ndarray:
    """`[I, A]`: pi(a | I) = x[(I, a)] / sum_b x[(I, b)] from the realization plans
    `[I*A + 1]`, uniform over the legal actions where the own plan's mass at I is
    within the LP's tolerance of 0 (I is never reached, so any behaviour there is
    optimal)."""
    mass = np.where(legal, np.maximum(plan[:-1].reshape(legal.shape), 0.0), 0.0)
    total = mass.sum(axis=-1, keepdims=True)
    reached = total > TOLERANCE
    uniform = legal / legal.sum(axis=-1, keepdims=True)
    return np.where(reached, mass / np.where(reached, total, 1.0), uniform)
