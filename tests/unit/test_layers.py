"""The package's layers: what each part may import, as README's architecture section draws it.

Data flows one way: measure -> data (the store) -> analysis / predict -> report; the CLI and the
validation runs sit on top. Imports inside functions count as much as top-level ones, and so do
imports under ``if TYPE_CHECKING:``: a module that needs another's names even only for its
types cannot be read without it, so two such modules are one circle to break all the same.

No two modules import each other, directly or through others: the import graph of the package
has no circle (a strongly connected component of more than one module). In ``cli/``, a command
(``<name>_cmd.py``, loaded by name from ``cli/__init__``) imports no command: what several
commands share lives in a helper module of ``cli/`` that imports no command either.
"""

import ast
from pathlib import Path

import numpy as np
from scipy.sparse import csr_array
from scipy.sparse.csgraph import connected_components

import commscope

PACKAGE = Path(commscope.__file__).resolve().parent
BASE = {"errors", "limits", "strict", "units", "safe_write", "status", "__version__"}
EVERY_PART_BELOW = {"check", "data", "importers", "measure", "analysis", "predict", "simulate",
                    "report", "kinds", "validate"}  # fmt: skip
# part -> the parts it may import besides itself and BASE
ALLOWED = {
    "data": set(),
    "importers": {"data"},
    "measure": {"data"},
    "analysis": {"data"},
    "predict": {"data", "analysis"},
    "simulate": {"data", "analysis", "predict", "measure"},
    "report": {"data", "analysis", "predict", "simulate"},
    "validate": {"data", "analysis", "predict", "measure"},
    "kinds": {"data", "analysis", "report"},
    "check": {"data", "analysis", "kinds"},
    # jobs: every part below the command line; cli: jobs too (beyond measure, simulate and
    # validate only what CLI_MAY_IMPORT lists)
    "jobs": EVERY_PART_BELOW,
    "cli": EVERY_PART_BELOW | {"jobs"},
}
# The command line turns argv into requests and renders outcomes; what runs a measurement,
# places ranks or changes the cluster lives in jobs/. What cli still takes from the parts that
# run things, module by module, is this list: a new entry is a move into jobs/ not made.
CLI_BELOW = ("measure", "simulate", "validate")
CLI_MAY_IMPORT = {
    # the engine command builds and lists engines; vcluster's own command runs the cluster
    "engine_cmd": {"measure.engine", "measure.mpi"},
    "vcluster_cmd": {"measure.vcluster", "measure.vcluster.slurm"},
    # argv -> request: option tables and the checks a request passes before it is stored
    "run_options": {"measure.engine_options"},
    "run_request": {"measure.cvars", "measure.engine_options", "measure.launch",
                    "measure.runner", "measure.vcluster"},
    "run_where": {"measure.hosts"},
    "predict_cmd": {"measure.slurm", "measure.vcluster"},  # node names for a model
    "show_cmd": {"simulate.netload"},
    # the program kinds' requests (node, TCP); the simulator's and validation's own commands
    "run_node": {"measure.compute.hpcc", "measure.compute.node", "measure.compute.sizes"},
    "run_tcp": {"measure.tcp.program", "measure.vcluster"},
    "tcp_cmd": {"measure.launch", "measure.tcp.program"},
    "simulate_calibrate": {"simulate.agreement", "simulate.calibrate", "simulate.setup"},
    "simulate_run": {"simulate.agreement", "simulate.netload", "simulate.setup",
                     "simulate.sweeps"},
    "validate_cmd": {"measure.hosts", "measure.mpi", "measure.runner", "measure.slurm",
                     "validate.timers"},
    "validate_predict": {"measure.cvars", "measure.hosts", "measure.launch", "measure.mpi",
                         "measure.slurm", "measure.vcluster", "validate.forcing",
                         "validate.predict"},
}  # fmt: skip
ROOT_MODULES = {"__init__", "__main__"} | BASE - {"__version__"}


def part_of(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def imported_parts(path: Path) -> set[str]:
    parts = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "commscope":
                parts |= {alias.name for alias in node.names}
            elif node.module.startswith("commscope."):
                parts.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            parts |= {a.name.split(".")[1] for a in node.names if a.name.startswith("commscope.")}
    return parts


def test_every_part_imports_only_the_layers_below_it():
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        part = part_of(path)
        allowed = ALLOWED.get(part, set()) | BASE | {part}
        if part == "__main__":
            allowed |= {"cli"}
        wrong += [
            f"{path.relative_to(PACKAGE)} imports commscope.{p}"
            for p in sorted(imported_parts(path) - allowed)
        ]
    assert not wrong, "\n".join(wrong)


def test_the_package_root_holds_few_modules_and_the_parts_are_known():
    modules = {p.stem for p in PACKAGE.glob("*.py")}
    assert modules == ROOT_MODULES
    parts = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert parts == set(ALLOWED)


def test_the_layer_table_catches_a_wrong_import(tmp_path):
    leak = tmp_path / "leak.py"
    leak.write_text(
        "def f():\n    from commscope.measure import runner\nfrom commscope import cli, units\n"
    )
    assert imported_parts(leak) == {"measure", "cli", "units"}


def module_name(path: Path, root: Path = PACKAGE.parent) -> str:
    """``commscope.cli.run_cmd`` for ``cli/run_cmd.py``; a package's ``__init__`` is the package."""
    rel = path.relative_to(root).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def imported_modules(path: Path, known: set[str], root: Path = PACKAGE.parent) -> set[str]:
    """The modules of ``known`` that ``path`` imports anywhere in it, relative imports resolved.

    ``from a import b`` names the module ``a.b`` when there is one, else ``a``. Python runs the
    package ``a`` first in either case; that edge is left out, as import checkers leave it:
    a package that loads its modules by name (``cli/__init__``) would otherwise close a circle
    with every module that imports a sibling.
    """
    here = module_name(path, root)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")  # level 1: this package, 2: its parent, ...
                up = parts[: len(parts) - node.level + 1]
                base = ".".join([*up, *([node.module] if node.module else [])])
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
    return (found & known) - {here}


def import_graph() -> dict[str, set[str]]:
    """Every module of the package -> the package's modules it imports."""
    paths = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
    return {name: imported_modules(path, set(paths)) for name, path in paths.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The graph's circles: each strongly connected component of two or more modules, sorted."""
    names = sorted(graph)
    index = {name: i for i, name in enumerate(names)}
    edges = np.array([(index[a], index[b]) for a in names for b in graph[a]], dtype=np.int64)
    edges = edges.reshape(-1, 2)  # (importer, imported) rows, also when there are none
    matrix = csr_array(
        (np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(len(names), len(names))
    )
    _, label = connected_components(matrix, directed=True, connection="strong")
    groups: dict[int, list[str]] = {}
    for name, component in zip(names, label, strict=True):
        groups.setdefault(int(component), []).append(name)
    return sorted(g for g in groups.values() if len(g) > 1)


def test_no_module_imports_itself_through_others():
    found = circles(import_graph())
    assert not found, "import circles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_no_cli_module_imports_a_command():
    graph = import_graph()
    commands = {
        name for name in graph if name.startswith("commscope.cli.") and name.endswith("_cmd")
    }
    wrong = [
        f"{name} imports {command}"
        for name in sorted(graph)
        if name.startswith("commscope.cli")
        for command in sorted(graph[name] & commands)
    ]
    assert not wrong, "\n".join(wrong)


def test_the_import_graph_reads_every_kind_of_import_and_finds_a_circle(tmp_path):
    pkg = tmp_path / "commscope" / "toy"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from . import b\n")
    (pkg / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .c import x\n"
    )
    (pkg / "c.py").write_text("import commscope.toy.a\nfrom commscope.toy import d\n")
    (pkg / "d.py").write_text("from commscope import toy\n")
    paths = {module_name(p, tmp_path): p for p in pkg.glob("*.py")}
    graph = {name: imported_modules(p, set(paths), tmp_path) for name, p in paths.items()}
    assert graph == {
        "commscope.toy": set(),
        "commscope.toy.a": {"commscope.toy.b"},
        "commscope.toy.b": {"commscope.toy.c"},
        "commscope.toy.c": {"commscope.toy.a", "commscope.toy.d"},  # not the package toy
        "commscope.toy.d": {"commscope.toy"},
    }
    assert circles(graph) == [["commscope.toy.a", "commscope.toy.b", "commscope.toy.c"]]


def test_cli_takes_from_the_parts_that_run_things_only_what_its_list_allows():
    graph = import_graph()
    wrong = []
    for name in sorted(graph):
        if not name.startswith("commscope.cli."):
            continue
        short = name.removeprefix("commscope.cli.")
        below = {
            m.removeprefix("commscope.")
            for m in graph[name]
            if m.count(".") >= 2 and m.split(".")[1] in CLI_BELOW
        }
        extra = below - CLI_MAY_IMPORT.get(short, set())
        wrong += [f"cli/{short} imports {m}: run it through jobs/" for m in sorted(extra)]
    assert not wrong, "\n".join(wrong)
    stale = [
        f"cli/{short} no longer imports {m}: drop it from CLI_MAY_IMPORT"
        for short, allowed in CLI_MAY_IMPORT.items()
        for m in sorted(
            allowed - {x.removeprefix("commscope.") for x in graph[f"commscope.cli.{short}"]}
        )
    ]
    assert not stale, "\n".join(stale)


def test_no_cli_module_creates_a_run():
    # A request becomes a stored run in jobs/; cli only turns argv into the request.
    creators = sorted(
        f"cli/{path.name}"
        for path in (PACKAGE / "cli").glob("*.py")
        if "create_run(" in path.read_text("utf-8")
    )
    assert creators == [], f"{', '.join(creators)} store runs themselves: move that into jobs/"
