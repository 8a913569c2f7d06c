"""The package's layout: the library never imports its applications or tools, and no module imports itself back.

Library: every module of torchgrabcut outside the subpackages below (the API, the cv2
drop-in, GrabCutModel, image I/O, the bundled data). Applications: the command line,
the dataset job, the server. Tools: what the command line's eval and bench run.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import torchgrabcut

PACKAGE = Path(torchgrabcut.__file__).resolve().parent
APPLICATIONS = ("torchgrabcut.cli", "torchgrabcut.dataset", "torchgrabcut.server", "torchgrabcut.__main__")
TOOLS = "torchgrabcut.tools"
# What `pip install torchgrabcut` does not bring: each is imported only where it is needed.
OPTIONAL = ("cv2", "flask", "werkzeug", "matplotlib", "pycocotools", "tqdm", "maxflow")


def module_files(package: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its __init__.py)."""
    modules = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Which package modules each module imports, anywhere in it (in functions and under TYPE_CHECKING too)."""
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = name.split(".") if is_package else name.split(".")[:-1]
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                # `from package import module` imports the module; `from module import name` the module.
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            for target in targets:
                # `import a.b.c` names a.b.c; a name inside a module resolves to the module.
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as [a, b, ..., a], or None."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)) is not None:
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)) is not None:
            return cycle
    return None


def _in(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def layer(name: str) -> str:
    if any(_in(name, app) for app in APPLICATIONS):
        return "application"
    return "tools" if _in(name, TOOLS) else "library"


def test_the_graph_reader_sees_a_cycle_and_the_layers(tmp_path: Path) -> None:
    pkg = tmp_path / "torchgrabcut"
    (pkg / "tools").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from torchgrabcut.api import grabcut\n")
    (pkg / "api.py").write_text("def grabcut(): pass\n")
    (pkg / "tools" / "__init__.py").write_text("")
    (pkg / "tools" / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n")
    (pkg / "tools" / "b.py").write_text("def f():\n    from torchgrabcut.tools import a\n")
    graph = import_graph(module_files(pkg))
    assert graph["torchgrabcut"] == {"torchgrabcut.api"}
    assert graph["torchgrabcut.tools.a"] == {"torchgrabcut.tools.b"}
    assert find_cycle(graph) == ["torchgrabcut.tools.a", "torchgrabcut.tools.b", "torchgrabcut.tools.a"]
    assert find_cycle({"x": {"y"}, "y": set()}) is None
    assert [layer(n) for n in ("torchgrabcut.data", "torchgrabcut.cli.demo", "torchgrabcut.tools.speed")] == [
        "library",
        "application",
        "tools",
    ]


def test_no_import_cycle() -> None:
    cycle = find_cycle(import_graph(module_files()))
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_library_imports_neither_applications_nor_tools() -> None:
    graph = import_graph(module_files())
    library = {name for name in graph if layer(name) == "library"}
    assert {"torchgrabcut", "torchgrabcut.api", "torchgrabcut.imageio", "torchgrabcut.data"} <= library
    wrong = {f"{a} imports {b}" for a in library for b in graph[a] if layer(b) != "library"}
    assert not wrong, sorted(wrong)
    # The tools measure the library and are run by the command line, never the reverse.
    tools = {name for name in graph if layer(name) == "tools"}
    wrong = {f"{a} imports {b}" for a in tools for b in graph[a] if layer(b) == "application"}
    assert not wrong, sorted(wrong)


_IMPORT_ALL = """
import importlib, importlib.abc, json, sys

class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in OPTIONAL:
            raise ModuleNotFoundError(f"No module named {name!r} (optional)", name=name)
        return None

OPTIONAL = set(json.loads(sys.argv[1]))
refuse = Refuse()
sys.meta_path.insert(0, refuse)
import torchgrabcut
loaded_by_library = sorted(m for m in sys.modules if m.startswith("torchgrabcut"))
failed = {}
def import_all(names):
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as err:
            failed[name] = f"{type(err).__name__}: {err}"
import_all(json.loads(sys.argv[2]))
from torchgrabcut.cli import build_parser
build_parser()  # all that --help needs
sys.meta_path.remove(refuse)  # the applications may need their extras
import_all(json.loads(sys.argv[3]))
print(json.dumps({"library": loaded_by_library, "failed": failed}))
"""


def test_the_package_ships_no_test_hooks() -> None:
    """Tests reach into the package from tests/python (e.g. dataset_hooks.py); nothing installed exists for them."""
    assert [n for n in module_files() if "test" in n.rpartition(".")[2]] == []


def test_every_module_imports_in_a_fresh_process() -> None:
    # The library, the tools and --help without the optional packages; the applications with them.
    names = [n for n in module_files() if n != "torchgrabcut.__main__"]  # __main__ runs the CLI
    base = [n for n in names if layer(n) != "application"]
    apps = [n for n in names if layer(n) == "application"]
    out = subprocess.run(
        [sys.executable, "-c", _IMPORT_ALL, json.dumps(OPTIONAL), json.dumps(base), json.dumps(apps)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.splitlines()[-1])
    assert result["failed"] == {}
    # `import torchgrabcut` loads the library alone.
    assert [m for m in result["library"] if layer(m) != "library"] == []


def test_every_subcommand_registers_the_same_way() -> None:
    import argparse

    from torchgrabcut.cli import SUBCOMMANDS, build_parser

    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert list(sub.choices) == ["demo", "segment", "eval", "bench", "dataset", "serve"]
    # One module per subcommand, in that order, each with add_parser and the run it registers.
    for (name, subparser), module in zip(sub.choices.items(), SUBCOMMANDS, strict=True):
        assert callable(module.add_parser), name
        assert subparser.get_default("handler") is module.run, name


TESTS = Path(__file__).resolve().parent
# Test files of a subpackage that test it through more than one of its modules.
WHOLE_SUBPACKAGE_TESTS = {
    "server/test_browser.py": "the page in a real browser",
    "tools/test_quality.py": "tools.evaluate against cv2.grabCut on all of GrabCut-50",
}


def test_the_tests_mirror_the_package() -> None:
    """Each application and the tools have their tests in tests/python/<subpackage>, each file named after a
    module there (test_<module>.py, or test_<subpackage>_<module>.py where another folder has that name); the
    library's tests sit in tests/python itself. Basenames are unique: pytest imports them by basename."""
    subpackages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    expected = {s for s in subpackages if layer(f"torchgrabcut.{s}") != "library"}
    folders = {p.parent.name for p in TESTS.glob("*/test_*.py")}
    assert folders == expected
    names = [p.name for p in TESTS.rglob("*.py") if "__pycache__" not in p.parts]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    wrong = []
    for folder in sorted(folders):
        modules = {p.stem for p in (PACKAGE / folder).glob("*.py")} - {"__init__"}
        allowed = {folder} | modules | {f"{folder}_{m}" for m in modules}
        for path in sorted((TESTS / folder).glob("test_*.py")):
            key = f"{folder}/{path.name}"
            if path.stem.removeprefix("test_") not in allowed and key not in WHOLE_SUBPACKAGE_TESTS:
                wrong.append(key)
    assert not wrong, f"tests named after no module of their subpackage: {wrong}"
