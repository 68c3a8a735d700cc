"""The docstrings of the public API: their examples run (each a test of its own), and
every public function and class documents its arguments (`Args:`) and what it returns
(`Returns:`), Google style, as the API reference renders them.

Public: every name without a leading underscore defined in a public module below,
and the names of a private module that a package's `__all__` re-exports or that a
page of docs/api/ renders (`members: [...]`). Examples print the same with float32
and float64 (the suite runs with x64 on): floats are rounded before printing."""

import ast
import doctest
import importlib
import inspect
import re
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent

MODULES = [
    "jaxsolve", "jaxsolve.solvers", "jaxsolve.evaluate", "jaxsolve.exact", "jaxsolve.sequences",
    "jaxsolve.updates", "jaxsolve.packing", "jaxsolve.base", "jaxsolve.sampling", "jaxsolve.sampling._scheme",
    "jaxsolve.sampling._rows", "jaxsolve.sampling._walk", "jaxsolve.sampling._estimate",
    "jaxsolve.sampling._iteration", "jaxsolve.sampling._solvers", "jaxsolve.visit_counts",
    "jaxsolve.stopping", "jaxsolve.batch", "jaxsolve.abstraction", "jaxsolve.env",
    "jaxsolve.distributed", "jaxsolve.plot", "jaxsolve.policy", "jaxsolve.openspiel",
    "jaxsolve.mcts", "jaxsolve.mcts._noise", "jaxsolve.mcts._packing",
    "jaxsolve.mcts._policies", "jaxsolve.mcts._search", "jaxsolve.mcts._selection",
    "jaxsolve.mcts._tree", "jaxsolve.alphazero", "jaxsolve.alphazero.selfplay",
    "jaxsolve.alphazero.exact", "jaxsolve.alphazero.evaluate", "jaxsolve.alphazero.network",
    "jaxsolve.games", "jaxsolve.errors", "jaxsolve.validate", "jaxsolve.npz", "jaxsolve.allocator",
    "jaxsolve.interrupt", "jaxsolve.progress", "jaxsolve.protocol", "jaxsolve.tree",
    "jaxsolve.tree.game_tree", "jaxsolve.tree.sizes", "jaxsolve.tree.layout",
    "jaxsolve.tree.arguments", "jaxsolve.tree.checks", "jaxsolve.tree.file",
    "jaxsolve.tree.structure", "jaxsolve.checkpoint", "jaxsolve.compile", "jaxsolve.check",
    "jaxsolve.rules", "jaxsolve.assemble", "jaxsolve.builders", "jaxsolve.builders.assemble",
    "jaxsolve.builders.battleship", "jaxsolve.builders.goofspiel",
    "jaxsolve.builders.liars_dice", "jaxsolve.alphazero.train", "jaxsolve.alphazero.checks",
    "jaxsolve.subgames", "jaxsolve.subgames.public", "jaxsolve.subgames.subtree",
    "jaxsolve.subgames.gadgets", "jaxsolve.subgames.resolving",
]

# Float output is rounded in the examples; ELLIPSIS for what varies (lists of names).
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _doctests():
    finder = doctest.DocTestFinder(exclude_empty=True)
    found = []
    for name in MODULES:
        module = importlib.import_module(name)
        found += [t for t in finder.find(module, name) if t.examples]
    return sorted(found, key=lambda t: t.name)


DOCTESTS = _doctests()


def test_the_main_entry_points_have_examples():
    names = {t.name for t in DOCTESTS}
    for name in ("jaxsolve", "jaxsolve.solvers.cfr_plus", "jaxsolve.solvers.run",
                 "jaxsolve.solvers.average_policy", "jaxsolve.evaluate.exploitability",
                 "jaxsolve.batch.sweep", "jaxsolve.games.load", "jaxsolve.mcts._search.search"):
        assert name in names, name


@pytest.mark.parametrize("test", DOCTESTS, ids=[t.name for t in DOCTESTS])
def test_docstring_examples_run(test):
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    report = []
    result = runner.run(test, out=report.append, clear_globs=True)
    assert result.failed == 0, "".join(report)


# --------------------------------------------------------------- Args and Returns present
def _rendered_members() -> dict[str, set[str]]:
    """{module: names} that the docs/api pages render with an explicit members list."""
    rendered: dict[str, set[str]] = {}
    for page in (ROOT / "docs" / "api").glob("*.md"):
        text = page.read_text()
        for target, members in re.findall(r"^::: (\S+)\n(?:\s+.*\n)*?\s+members: \[([^\]]*)\]",
                                          text, re.M):
            rendered.setdefault(target, set()).update(m.strip() for m in members.split(","))
    return rendered


def _public_names(module) -> list[str]:
    name = module.__name__
    if not name.rsplit(".", 1)[-1].startswith("_"):
        return [n for n, obj in vars(module).items() if not n.startswith("_")
                and getattr(obj, "__module__", None) == name
                and (inspect.isfunction(obj) or inspect.isclass(obj))]
    package = importlib.import_module(name.rsplit(".", 1)[0])
    exported = {n for n in getattr(package, "__all__", ())
                if getattr(getattr(package, n, None), "__module__", None) == name}
    return sorted(exported | _rendered_members().get(name, set()))


def _documented(module):
    """(qualified name, object, is a class) of every public function, class and method."""
    for name in _public_names(module):
        obj = getattr(module, name)
        yield f"{module.__name__}.{name}", obj, inspect.isclass(obj)
        if inspect.isclass(obj):
            for attr, value in vars(obj).items():
                if isinstance(value, (staticmethod, classmethod)):
                    value = value.__func__
                if not attr.startswith("_") and inspect.isfunction(value):
                    yield f"{module.__name__}.{name}.{attr}", value, False


def _sections(doc: str) -> dict[str, str]:
    """Google-style section name -> its body."""
    parts = re.split(r"^(\w+):[ \t]*\n", doc, flags=re.M)
    return {head: body for head, body in zip(parts[1::2], parts[2::2])}


def _entries(body: str) -> set[str]:
    """The names an Args/Attributes section documents (the least indented lines)."""
    lines = [line for line in body.splitlines() if line.strip()]
    stop = next((k for k, line in enumerate(lines) if not line[:1].isspace()), len(lines))
    lines = lines[:stop]
    if not lines:
        return set()
    indent = min(len(line) - len(line.lstrip()) for line in lines)
    return {m.group(1).lstrip("*") for line in lines
            if len(line) - len(line.lstrip()) == indent
            and (m := re.match(r"\s*(\**\w+)(?: \(.*?\))?:", line))}


def _parameters(obj) -> list[str]:
    # A class's own __init__ where it writes one (a Flax module's class signature is
    # its metaclass's); else the signature its fields make (NamedTuple, dataclass). A
    # typing.Protocol takes no arguments: the __init__ typing gives it is no signature.
    if inspect.isclass(obj) and getattr(obj, "_is_protocol", False):
        return []
    if inspect.isclass(obj) and "__init__" in vars(obj):
        obj = obj.__init__
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return []
    return [p for p in signature.parameters if p not in ("self", "cls")]


def _returns_something(fn) -> bool:
    """Whether `fn`'s own body returns a value or yields (nested functions aside)."""
    node = ast.parse(textwrap.dedent(inspect.getsource(fn))).body[0]
    if node.returns is not None and ast.unparse(node.returns) == "None":
        return False

    def search(parent) -> bool:
        for child in ast.iter_child_nodes(parent):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                                  ast.ClassDef)):
                continue
            if isinstance(child, (ast.Yield, ast.YieldFrom)) or (
                    isinstance(child, ast.Return) and child.value is not None
                    and not (isinstance(child.value, ast.Constant) and child.value.value is None)):
                return True
            if search(child):
                return True
        return False

    return search(node)


def _problems(qualname: str, obj, is_class: bool) -> list[str]:
    doc = (obj.__doc__ if is_class else inspect.getdoc(obj)) or ""
    doc = inspect.cleandoc(doc)
    if not doc:
        return [f"{qualname}: no docstring"]
    sections = _sections(doc)
    listed = _entries(sections.get("Args", ""))
    if is_class:  # a NamedTuple's or dataclass's fields are its Attributes
        listed |= _entries(sections.get("Attributes", ""))
    missing = [p for p in _parameters(obj) if p not in listed]
    out = []
    if missing:
        section = "Attributes/Args" if is_class else "Args"
        out.append(f"{qualname}: {section} lacks {', '.join(missing)}")
    if not is_class and _returns_something(obj) and not {"Returns", "Yields"} & set(sections):
        out.append(f"{qualname}: no Returns")
    return out


def test_every_public_name_documents_its_arguments_and_result():
    problems = []
    for name in MODULES:
        for qualname, obj, is_class in _documented(importlib.import_module(name)):
            problems += _problems(qualname, obj, is_class)
    assert not problems, "docstrings to complete:\n" + "\n".join(problems)
