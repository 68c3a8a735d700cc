"""jaxsolve: imperfect-information games solved as array code in JAX.

Compile a game once into a `GameTree` of arrays, run a solver on it, evaluate:

>>> import jaxsolve
>>> from jaxsolve import games          # the built-in games, loaded by name
>>> tree = jaxsolve.compile_game(games.load("kuhn_poker"))
>>> tree.sizes.num_infosets, tree.sizes.num_actions, tree.sizes.num_terminals
(12, 2, 30)
>>> solver = jaxsolve.cfr_plus()
>>> state = jaxsolve.run(solver, tree, solver.init(tree), 1000)
>>> policy = jaxsolve.average_policy(tree, state)          # [I, A]
>>> print(f"{float(jaxsolve.exploitability(tree, policy)):.1e}")
8.7e-05
"""

import importlib

from jaxsolve.allocator import keep_freed_memory
from jaxsolve.batch import batch_axes, stack, sweep, unstack
from jaxsolve.solvers import (SOLVERS, CFRState, MMDState, Solver, average_policy, cfr,
                              cfr_plus, cfr_variant, current_policy, dcfr, dcfr_plus, lcfr,
                              mmd, pcfr_plus, pdcfr_plus, regret_matching, run, sapcfr_plus)
from jaxsolve import (abstraction, builders, distributed, env, processes, sampling, sequences,
                      subgames)
from jaxsolve.sampling import (MCCFRState, chance_sampling, external_sampling,
                               outcome_sampling, sampled_cfr)
from jaxsolve.check import CheckReport, check_game
from jaxsolve.compile import compile_game
from jaxsolve.errors import (ArgumentError, ArgumentTypeError, CheckpointError,
                             DistributedError, GameError, ImperfectRecallWarning,
                             JaxsolveError, LargeGameWarning, MissingDependency)
from jaxsolve.evaluate import (best_response, best_response_values, counterfactual_values,
                               exploitability, nash_conv, policy_value, uniform_policy)
from jaxsolve.exact import Equilibrium, solve_exact
from jaxsolve.policy import final_policy, from_table, purify, table, threshold
from jaxsolve.protocol import CHANCE, SIMULTANEOUS, TERMINAL
from jaxsolve.stopping import Stopped, run_until
from jaxsolve.subgames import (PublicState, PublicStates, Subgame, public_states,
                               restrict_policy, subgame, write_back)
from jaxsolve.tree import GameTree, KernelLayout, SlotCosts, TreeNames, TreeSizes
from jaxsolve.updates import Rows

__version__ = "0.2.0"  # the package's version too (pyproject.toml reads it)

__all__ = [
    "CHANCE", "SIMULTANEOUS", "SOLVERS", "TERMINAL", "ArgumentError", "ArgumentTypeError",
    "CheckpointError", "DistributedError", "Equilibrium", "JaxsolveError", "LargeGameWarning", "MissingDependency",
    "CFRState", "MCCFRState", "MMDState",
    "chance_sampling", "external_sampling", "outcome_sampling", "sampled_cfr", "CheckReport", "GameError", "GameTree",
    "abstraction", "builders", "distributed", "processes", "sampling", "sequences", "subgames",
    "PublicState", "PublicStates", "Subgame", "public_states", "restrict_policy", "subgame",
    "write_back",
    "ImperfectRecallWarning", "KernelLayout", "SlotCosts", "Solver", "Stopped", "TreeNames",
    "TreeSizes", "average_policy",
    "best_response", "best_response_values", "cfr", "cfr_plus", "cfr_variant", "check_game", "compile_game",
    "counterfactual_values",
    "current_policy", "dcfr", "dcfr_plus", "env", "exploitability", "final_policy", "from_table", "keep_freed_memory", "lcfr", "mmd", "nash_conv",
    "pcfr_plus", "pdcfr_plus", "policy_value", "purify", "regret_matching", "Rows", "run", "run_until",
    "sapcfr_plus", "solve_exact", "stack", "sweep", "table",
    "unstack", "batch_axes",
    "threshold",
    "uniform_policy",
]


def __getattr__(name: str):
    # `jaxsolve.games` (the built-in games) is imported on first use (PEP 562), not
    # here: `import jaxsolve` loads no game module.
    if name == "games":
        return importlib.import_module(f"{__name__}.games")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
