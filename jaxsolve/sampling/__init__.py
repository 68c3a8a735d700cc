"""Monte-Carlo CFR: one sampling scheme with CFR, chance sampling, external and
outcome sampling as special cases (Lanctot et al. 2009, "Monte Carlo Sampling for
Regret Minimization in Extensive Games").

The scheme: when player p traverses, every decision node and chance node either
**expands** all its actions or **samples** one. A sample is thus a set Q of leaves;
a leaf z is in Q with probability q(z), the product of the sampling probabilities
at the sampled nodes on its path. Every counterfactual value is then
estimated without bias by weighting each leaf of Q by 1/q(z):

    v~(I, a) = sum_{z in Q below Ia} u_p(z) pi_{-p}(z) pi_c(z) pi_p(z | Ia) / q(z)

which is the full-width formula of `jaxsolve.sequences` restricted to the leaves
of Q, so the same code computes both. Sampled regrets `v~(I, a) - sum_b s(I, b)
v~(I, b)` are linear in v~ and hence unbiased too.

| scheme | traverser's nodes | opponents' nodes | chance nodes |
|---|---|---|---|
| full CFR | expand | expand | expand |
| chance-sampled CFR | expand | expand | sample |
| external sampling (ES) | expand | sample (policy) | sample |
| outcome sampling (OS) | sample (explore) | sample (policy) | sample |

Opponents sample from their current policy, chance from its probabilities and the
traverser, where it samples, from `exploration * uniform + (1 - exploration) *
policy` so that every action keeps a chance to be tried. A mask of one's own
(`sampled_cfr(mask=..., chance_mask=...)`) chooses per infoset and per chance node.

Array form. A sample is a breadth-first walk over the history arrays holding a
frontier of K slots (K, the *capacity*, is the most leaves one sample can reach
under the scheme, computed from the tree when the solver is initialised: 1 for
outcome sampling, the size of the traverser's subtree for external sampling). At
each depth every slot either expands into all its children or samples one, and the
children are compacted into the K slots with a cumulative sum. A batch of B samples
is `vmap` of that walk; the leaves of all B samples then go through the terminal-view
formulas above in one segment sum. Alternatively (`traversal="counts"`) the batch
is drawn as visit counts n(h) in one pass down the tree (`jaxsolve.visit_counts`)
and every leaf of the full terminal view is weighted by n(z) / (q(z) B): the same
estimate at a cost independent of B, cheaper once B walks would examine more than
about a third as many slots as the tree has histories (`traversal="auto"` chooses
by that count, `choose_traversal`).

Average strategy. The increment at an infoset I of player r is estimated by
sum over the visited histories h in I of pi_r(h) / q(h) times the current policy at
I: its expectation is |I| pi_r(I) sigma(I), the CFR average's increment up to a
factor fixed per infoset (which normalisation removes). External sampling updates
the opponents' infosets (which it samples on-policy, so pi_r / q stays bounded),
outcome sampling the traverser's, as OpenSpiel's solvers do.

Private modules: `_scheme` (the expand masks and the capacity), `_rows` (the
distributions a traversal samples from), `_walk` (the frontier walk), `_estimate` (the
estimators of both traversals and the choice between them), `_iteration` (a solver's
init and step, sparse and dense), `_solvers` (the `Solver`s and their settings). The
visit counts are `jaxsolve.visit_counts`.
"""

from jaxsolve.base import MCCFRState
from jaxsolve.sampling._estimate import SLOT_COST, Estimate, choose_traversal, estimate
from jaxsolve.sampling._iteration import histories_touched
from jaxsolve.sampling._scheme import capacity, make_scheme, scheme_masks
from jaxsolve.sampling._solvers import (
    AVERAGING, DEFAULT_BATCH_SIZE, RULES, SAMPLING_SOLVERS, TRAVERSALS, chance_sampling,
    external_sampling, outcome_sampling, sampled_cfr)
from jaxsolve.sampling._walk import walk

__all__ = ["AVERAGING", "DEFAULT_BATCH_SIZE", "RULES", "SAMPLING_SOLVERS", "SLOT_COST",
           "TRAVERSALS", "Estimate", "MCCFRState", "capacity", "chance_sampling",
           "choose_traversal", "estimate", "external_sampling", "histories_touched",
           "make_scheme", "outcome_sampling", "sampled_cfr", "scheme_masks", "walk"]
