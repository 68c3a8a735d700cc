"""jaxsolve's imports go one way: read from the source (nothing is imported), the
graph of imports between its modules has no cycle and no arrow against `LAYERS`, and
no function imports a jaxsolve module to dodge one.

`LAYERS` is DESIGN.md's order as the code has it. A module may import the modules
listed before it: every module of an earlier layer, and those listed before it in its
own layer. An entry ending in ".*" is a package taken as one group (its modules may
import one another; the cycle check still applies) and may be absent. Names are
relative to `jaxsolve`; "__init__" is `jaxsolve/__init__.py`, "builders" the
package `jaxsolve/builders/__init__.py`.

Imports inside functions are allowed only for what must not load with the module
(`import jaxsolve` loads no Flax, optax or matplotlib, no tqdm and no SciPy): the
optional or heavy third-party packages of `LAZY_PACKAGES`, and jaxsolve modules that
load one of `HEAVY_PACKAGES` when imported (the AlphaZero half, from its command
line). Each such import says why on its own line, in a comment. Standard-library and
other imports go at the top of the module.
"""

from __future__ import annotations

import ast
import io
import re
import subprocess
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "jaxsolve"

LAYERS = [
    # foundations: the C allocator's settings, the error hierarchy, the warning of a
    # renamed name, the game protocol, progress bars (tqdm loads when one is drawn),
    # Ctrl-C held back while a step runs, the .npz reader and atomic writer
    ["allocator", "errors", "_deprecated", "protocol", "progress", "interrupt", "npz"],
    # core: the checks of settings (no tree: the search uses them); the tree package:
    # GameTree's sizes, names and array catalogue, the layout the kernels derive, its
    # structure checks, the checks of its arrays, its .npz format, the type itself
    # (its methods call the checks and the format), the package's public names, the
    # argument checks on a tree; the built-in games, written against the protocol,
    # once they live in jaxsolve/
    ["validate", "tree.sizes", "tree.layout", "tree.structure", "tree.checks", "tree.file",
     "tree.game_tree", "tree", "tree.arguments", "games.*"],
    # ingest: the protocol's rules (shared by the walk and the checks), per-node arrays
    # -> GameTree (shared by compile_game and the builders), the builders' level
    # stream, the walk, the conformance checks, the array-native builders
    ["rules", "assemble", "builders.assemble", "compile", "check", "builders.goofspiel",
     "builders.liars_dice", "builders.battleship", "builders"],
    # cfr building blocks: sequence-form kernels, the Solver and state types with their
    # checks, the update rules every solver shares, each player's packed sequences,
    # the one full-width CFR iteration every solver of the family runs
    ["sequences", "base", "updates", "packing", "kernel"],
    # mccfr: visit counts, the scheme, the sampling distributions, the frontier walk,
    # the estimators, a solver's init and step, the sampling solvers, their public names
    ["visit_counts", "sampling._scheme", "sampling._rows", "sampling._walk",
     "sampling._estimate", "sampling._iteration", "sampling._solvers", "sampling"],
    # the solvers: the full-width CFR family, SOLVERS (every built-in by name), run
    ["solvers"],
    # what works on a tree and a solver state; the exact LP (SciPy loads when it runs);
    # public states and subgames cut out as trees of their own
    ["evaluate", "policy", "stopping", "batch", "abstraction", "env", "checkpoint", "exact",
     "subgames.public", "subgames.histories", "subgames.splice", "subgames.subtree",
     "subgames.gadgets", "subgames.resolving", "subgames"],
    # several processes as one run, sharding (its mesh axis passed explicitly),
    # OpenSpiel interop
    ["processes", "distributed", "openspiel"],
    # the public API: `import jaxsolve`
    ["__init__"],
    # plots (matplotlib loads when one is drawn)
    ["plot"],
    # the game-agnostic batched MCTS: selection rules, argument checks, noise, the
    # embeddings' packing, the tree, the search loop, the policies, the public names
    ["mcts._selection", "mcts._checks", "mcts._noise", "mcts._packing", "mcts._tree",
     "mcts._search", "mcts._policies", "mcts"],
    # the AlphaZero trainer for the pursuit game (Flax and optax load with network,
    # selfplay, train, evaluate)
    ["alphazero", "alphazero.checks", "alphazero.network", "alphazero.exact",
     "alphazero.selfplay", "alphazero.train", "alphazero.evaluate"],
    # the command line: shared errors and options, output, the run of a long command,
    # GAME specs, solver settings, the check schedule, where `solve` runs, one module
    # per command, the parser and main; the launcher of local processes
    ["cli._base", "cli._output", "cli._pipe", "cli._run", "cli._game_spec",
     "cli._solver_args", "cli._checks", "cli._placement", "cli.games", "cli.check",
     "cli.solve", "cli.sweep", "cli.pursuit", "cli", "__main__", "launch"],
]

# Third-party packages a function may import: optional (OpenSpiel, SciPy) or heavy at
# import.
LAZY_PACKAGES = {"pyspiel", "open_spiel", "matplotlib", "flax", "optax", "tqdm", "scipy"}
# A jaxsolve module that loads one of these at import may be imported in a function.
HEAVY_PACKAGES = {"flax", "optax", "matplotlib"}
# What `import jaxsolve` must not load.
NOT_LOADED_BY_IMPORT = ("flax", "optax", "matplotlib", "tqdm", "scipy")


class Import:
    """One import statement's target: a jaxsolve module (`module`, its dotted name
    relative to jaxsolve) or a third-party/stdlib package (`package`, top-level).
    `typing_only`: under `if TYPE_CHECKING:`, never run."""

    def __init__(self, source: str, line: int, in_function: bool, module: str | None = None,
                 package: str | None = None, comment: str = "", typing_only: bool = False):
        self.source, self.line, self.in_function = source, line, in_function
        self.module, self.package, self.comment = module, package, comment
        self.typing_only = typing_only

    def __repr__(self) -> str:
        where = "in a function" if self.in_function else "at module level"
        return f"{self.source} line {self.line} ({where}): {self.module or self.package}"


def _module_files() -> dict[str, Path]:
    """{module name relative to jaxsolve: file}; a package by its own name."""
    files = {}
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(ROOT / PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1] or ["__init__"]
        files[".".join(parts)] = path
    return files


def _relative(dotted: str) -> str | None:
    """A dotted import name as a jaxsolve module name, None outside jaxsolve."""
    if dotted == PACKAGE:
        return "__init__"
    if dotted.startswith(PACKAGE + "."):
        return dotted[len(PACKAGE) + 1:]
    return None


def _absolute(name: str) -> str:
    return PACKAGE if name == "__init__" else f"{PACKAGE}.{name}"


def _comments(text: str) -> dict[int, str]:
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    return {t.start[0]: t.string for t in tokens if t.type == tokenize.COMMENT}


def _imports(name: str, path: Path, modules: set[str]) -> list[Import]:
    text = path.read_text()
    comments = _comments(text)
    tree = ast.parse(text, str(path))
    is_package = path.name == "__init__.py"
    found = []

    def comment_of(node) -> str:
        return " ".join(comments[k] for k in range(node.lineno, node.end_lineno + 1)
                        if k in comments)

    def typing_block(node) -> bool:
        test = node.test if isinstance(node, ast.If) else None
        return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
            isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")

    def visit(node, in_function: bool, typing_only: bool = False):
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                       ast.Lambda))
            if isinstance(child, ast.Import):
                for alias in child.names:
                    target = _relative(alias.name)
                    found.append(Import(name, child.lineno, in_function,
                                        module=target, comment=comment_of(child),
                                        package=None if target else alias.name.split(".")[0],
                                        typing_only=typing_only))
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:  # relative: from the importing module's package
                    package = _absolute(name).split(".")
                    if not is_package:
                        package = package[:-1]
                    package = package[:len(package) - (child.level - 1)]
                    base = ".".join(package + ([base] if base else []))
                target = _relative(base)
                if target is None:
                    if base != "__future__":
                        found.append(Import(name, child.lineno, in_function,
                                            package=base.split(".")[0],
                                            comment=comment_of(child), typing_only=typing_only))
                    continue
                for alias in child.names:  # `from jaxsolve import tree` imports a module
                    sub = f"{target}.{alias.name}" if target != "__init__" else alias.name
                    found.append(Import(name, child.lineno, in_function,
                                        module=sub if sub in modules else target,
                                        comment=comment_of(child), typing_only=typing_only))
            visit(child, inside, typing_only or typing_block(child))

    visit(tree, False)
    return found


FILES = _module_files()
IMPORTS = {name: _imports(name, path, set(FILES)) for name, path in FILES.items()}


def _edges(run_on_import: bool = False) -> dict[str, set[str]]:
    """{module: the jaxsolve modules it imports}; with `run_on_import`, only those its
    own import loads (not inside functions, not for type checkers only)."""
    return {name: {i.module for i in found if i.module is not None and i.module != name
                   and not (run_on_import and (i.in_function or i.typing_only))}
            for name, found in IMPORTS.items()}


def _position(name: str) -> tuple[int, int, bool] | None:
    """(layer, entry, whether the entry is a group) of a module, None if unlisted."""
    for layer, entries in enumerate(LAYERS):
        for index, entry in enumerate(entries):
            if entry.endswith(".*"):
                group = entry[:-2]
                if name == group or name.startswith(group + "."):
                    return layer, index, True
            elif entry == name:
                return layer, index, False
    return None


def _cycles(edges: dict[str, set[str]]) -> list[tuple[list[str], set[str]]]:
    """(one cycle, all the modules caught in it with it) for each strongly connected
    component (Tarjan) of more than one module, or of a module importing itself."""
    index, low, stack, on_stack, components = {}, {}, [], set(), []

    def connect(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            components.append(set(component))

    for v in sorted(edges):
        if v not in index:
            connect(v)
    cycles = []
    for component in components:
        start = min(component)
        if len(component) == 1 and start not in edges.get(start, ()):
            continue
        # The shortest way back to `start` within the component, breadth first.
        paths, queue, cycle = {start: [start]}, [start], None
        while queue and cycle is None:
            v = queue.pop(0)
            for w in sorted(edges.get(v, ()) & component):
                if w == start:
                    cycle = paths[v] + [start]
                    break
                if w not in paths:
                    paths[w] = paths[v] + [w]
                    queue.append(w)
        cycles.append((cycle, component))
    return cycles


def _heavy() -> set[str]:
    """jaxsolve modules whose import (at module level, through other jaxsolve modules)
    loads one of HEAVY_PACKAGES."""
    edges = _edges(run_on_import=True)
    heavy = {name for name, found in IMPORTS.items()
             if any(i.package in HEAVY_PACKAGES and not (i.in_function or i.typing_only)
                    for i in found)}
    grew = True
    while grew:
        more = {name for name, targets in edges.items() if targets & heavy} - heavy
        heavy |= more
        grew = bool(more)
    return heavy


def _gives_reason(comment: str) -> bool:
    """A comment with words of its own, beyond a linter's `noqa: CODE` or a pragma."""
    text = re.sub(r"noqa(:\s*[A-Z]+\d+(\s*,\s*[A-Z]+\d+)*)?", " ", comment)
    text = re.sub(r"pragma:\s*no cover", " ", text)
    return bool(re.search(r"[A-Za-z]{3,}", text))


def test_the_graph_is_read_from_every_module():
    # The parser sees what it should: known arrows of the source, both kinds of import.
    assert len(FILES) > 40 and {"tree", "solvers", "cli", "__init__", "builders"} <= set(FILES)
    edges = _edges()
    assert {"tree", "tree.checks", "validate", "errors"} <= edges["tree.arguments"]
    assert "sampling" in edges["__init__"] and "builders" in edges["__init__"]
    assert "builders.assemble" in edges["builders.goofspiel"]


def test_every_module_has_one_place_in_the_layers():
    listed = [entry for entries in LAYERS for entry in entries]
    assert len(listed) == len(set(listed)), "an entry is listed twice"
    stale = [e for e in listed if not e.endswith(".*") and e not in FILES]
    assert not stale, f"LAYERS lists modules that do not exist: {stale}"
    unplaced = sorted(name for name in FILES if _position(name) is None)
    assert not unplaced, f"modules in no layer (add them to LAYERS): {unplaced}"


def test_no_import_cycle():
    cycles = _cycles(_edges())
    assert not cycles, "import cycles:\n" + "\n".join(
        f"{' -> '.join(cycle)} (modules on cycles with it: {', '.join(sorted(caught))})"
        for cycle, caught in cycles)


def test_every_import_goes_down_the_layers():
    against = {}  # one line per statement and module
    for name, found in sorted(IMPORTS.items()):
        here = _position(name)
        for i in found:
            if i.module is None or i.module == name or here is None:
                continue
            there = _position(i.module)
            if there is None:
                continue  # reported by test_every_module_has_one_place_in_the_layers
            same_group = there[:2] == here[:2] and here[2]
            if not (there[:2] < here[:2] or same_group):
                against[repr(i)] = (f"{i!r} (layer {here[0]} imports layer {there[0]}: "
                                    f"{i.module} is listed after {name})")
    assert not against, "imports against LAYERS:\n" + "\n".join(against.values())


def test_functions_import_only_what_must_load_late_and_say_why():
    heavy = _heavy()
    wrong = {}  # one line per statement and module
    for name, found in sorted(IMPORTS.items()):
        for i in found:
            if not i.in_function:
                continue
            if i.module is not None and i.module not in heavy:
                wrong[repr(i)] = (f"{i!r}: a jaxsolve module that loads nothing heavy; "
                                  "import it at the top of the module")
            elif i.package is not None and i.package not in LAZY_PACKAGES:
                wrong[repr(i)] = (f"{i!r}: import it at the top of the module (only "
                                  f"{', '.join(sorted(LAZY_PACKAGES))} may load late)")
            elif not _gives_reason(i.comment):
                wrong[repr(i)] = f"{i!r}: say why it loads late, in a comment on its line"
    assert not wrong, "imports inside functions:\n" + "\n".join(wrong.values())


def test_the_heavy_modules_are_the_alphazero_network_half_and_nothing_of_the_cfr_half():
    heavy = _heavy()
    assert {"alphazero.network", "alphazero.train"} <= heavy
    assert not heavy & {"__init__", "cli", "plot", "cli.pursuit", "solvers", "sampling"}


def test_import_jaxsolve_loads_no_flax_optax_matplotlib_or_tqdm():
    probe = ("import sys, jaxsolve; "
             f"print(sorted(m for m in {NOT_LOADED_BY_IMPORT!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout


def test_the_search_and_the_setting_checks_import_no_tree():
    # jaxsolve.mcts is game-agnostic: nothing of the CFR half (the tree, the solvers)
    # reaches it, and the setting checks it shares import no tree.
    edges = _edges()
    cfr_half = {"tree", "tree.sizes", "tree.layout", "tree.checks", "tree.game_tree",
                "tree.arguments", "sequences", "solvers", "kernel", "packing"}

    def reach(start):
        seen, todo = set(), [start]
        while todo:
            for target in edges.get(todo.pop(), ()):
                if target not in seen:
                    seen.add(target)
                    todo.append(target)
        return seen

    assert not reach("validate") & cfr_half
    for name in [n for n in FILES if n == "mcts" or n.startswith("mcts.")]:
        assert not reach(name) & cfr_half, f"{name} reaches {reach(name) & cfr_half}"
