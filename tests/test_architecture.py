"""The composition rules of docs/architecture.md, checked on the source.

* No class in ``study`` or ``tui`` inherits from more than one project class: work is
  composed (a collaborator held by the class), never mixed in.
* No ``raise NotImplementedError`` stands in for a method some host class provides: a
  method that raises it belongs to an abstract base whose every subclass defines it.
* The event log has one writer: one module of the packages holds ``INSERT INTO events``.
* No module imports another module's underscore names.
* ``study``'s floors (values, file, state, read, handle, work): no import runs back up
  to a higher floor, and the wings of one floor import each other without a ring (one
  allowance, with its reason, in ``WING_RINGS_ALLOWED``).
* The work floor's ``analysis``, ``exchange`` and ``refi`` run no SQL of their own: they read
  through ``study.queries`` (allowances, with their reasons, in ``SQL_ALLOWED``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.test_import_graph import find_cycle, import_graph

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("codebooks", "scoring", "screening", "study", "tui")


def sources(*packages: str) -> list[Path]:
    return sorted(path for package in packages for path in (ROOT / package).rglob("*.py"))


def project_classes() -> set[str]:
    """Names of the classes defined anywhere in the packages."""
    names: set[str] = set()
    for path in sources(*PACKAGES):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names.update(node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef))
    return names


def base_name(node: ast.expr) -> str:
    if isinstance(node, ast.Subscript):
        return base_name(node.value)
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


#: Library bases that a project class may stand beside (``Protocol``, ``Generic``).
NOT_PROJECT = {"Protocol", "Generic", "NamedTuple", "Enum", "StrEnum", "Exception"}


@pytest.mark.parametrize("package", ["study", "tui"])
def test_no_class_mixes_in_more_than_one_project_class(package: str) -> None:
    ours = project_classes() - NOT_PROJECT
    mixed = []
    for path in sources(package):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            project_bases = [name for b in node.bases if (name := base_name(b)) in ours]
            if len(project_bases) > 1:
                mixed.append(f"{path.relative_to(ROOT)}: {node.name}({', '.join(project_bases)})")
    assert not mixed, "classes mixing project classes:\n" + "\n".join(mixed)


def is_stub(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether a method's body is only (a docstring and) ``raise NotImplementedError``."""
    body = [
        s
        for s in function.body
        if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
    ]
    return (
        len(body) == 1
        and isinstance(body[0], ast.Raise)
        and "NotImplementedError" in ast.unparse(body[0].exc or ast.Constant(None))
    )


def test_no_host_stubs() -> None:
    # A method that raises NotImplementedError is allowed only as an abstract base's:
    # the class has subclasses in the packages and each of them defines the method. A
    # stub standing in for what a host class provides has none.
    classes: dict[str, tuple[str, list[str], set[str], set[str]]] = {}
    for path in sources(*PACKAGES):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            methods = {
                f.name for f in node.body if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
            }
            stubs = {
                f.name
                for f in node.body
                if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
                and path.parts[len(ROOT.parts)] in ("study", "tui")
                and is_stub(f)
            }
            bases = [base_name(b) for b in node.bases]
            classes[node.name] = (str(path.relative_to(ROOT)), bases, methods, stubs)
    bad = []
    for name, (where, _, _, stubs) in classes.items():
        if not stubs:
            continue
        subclasses = [c for c, (_, bases, _, _) in classes.items() if name in bases]
        if not subclasses:
            bad.append(f"{where}: {name} has stubs {sorted(stubs)} and no subclass")
        for sub in subclasses:
            missing = stubs - classes[sub][2]
            if missing:
                bad.append(f"{classes[sub][0]}: {sub} does not define {sorted(missing)}")
    assert not bad, bad


def test_the_event_log_has_one_writer() -> None:
    writers = {
        str(path.relative_to(ROOT))
        for path in sources(*PACKAGES)
        if re.search(r"INSERT\s+INTO\s+events\b", path.read_text(encoding="utf-8"), re.I)
    }
    assert writers == {"study/file/events.py"}


def test_no_module_imports_another_modules_private_names() -> None:
    found = []
    for path in sources(*PACKAGES):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                top = node.module.split(".")[0]
                if top not in PACKAGES:
                    continue
                private = [
                    a.name for a in node.names if a.name.startswith("_") and a.name != "__version__"
                ]
                if private:
                    found.append(f"{path.relative_to(ROOT)}: from {node.module} import {private}")
    assert not found, found


# --- study's floors -------------------------------------------------------------------
#
# docs/architecture.md draws ``study`` as floors, bottom up; a module may import modules
# of its own floor and of the floors below, never one above (an import that "runs back
# up"). A floor is a list of wings: a folder (``study.scores``) or a top-level module
# (``study.rows``); a module belongs to the wing of its longest matching name.
#
# The imports are those of tests/test_import_graph.py: every import that can run, at
# module level or inside a function, counts; those under ``if TYPE_CHECKING:`` do not.
# Those never run (every module of ``study`` that has them starts with ``from __future__
# import annotations``, so the names serve annotations only): a namespace on the state
# floor may name ``study.store.Study`` in a signature without depending on it. A package
# importing its submodule is Python's edge, not the code's, and is left out too; so the
# package ``study`` (the front door, which re-exports the handle) is placed beside the
# handle, and a lower module that imported ``from study import Study`` would be caught.

STUDY_FLOORS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # Values and the handle's protocol: imported by every floor, import nothing above.
    (
        "values",
        (
            "study.errors",
            "study.rows",
            "study.stamps",
            "study.codec",
            "study.scope",
            "study.index",
            "study.handle",
            "study.lazy",
        ),
    ),
    # The file (schema, life, locks, the event log's writer) and reading response files.
    ("file", ("study.file", "study.intake")),
    # The state the namespaces keep, typed against study.handle.StudyHandle.
    ("state", ("study.scores", "study.audit", "study.iteration", "study.log")),
    # The read face (StudyView: the handle with its scores and decisions) and what reads it.
    ("read", ("study.view", "study.labels", "study.queries")),
    # The handle (Study) that composes the namespaces, and the package's front door.
    ("handle", ("study.store", "study")),
    # Work over an open study.
    (
        "work",
        ("study.analysis", "study.exchange", "study.report", "study.refi", "study.score_run"),
    ),
)

#: Imports between two wings of one floor that form a ring, each allowed with its reason.
#: Between floors nothing is allowed: there is no import that runs back up.
WING_RINGS_ALLOWED = {
    # The one ring of the top floor: analysis.findings writes its tables with exchange's
    # long frame, provenance and writers, and exchange.export puts the validity screen's
    # lines (analysis.screen, imported when an export asks for them) beside the data.
    # Both are work over a study; untangling them means moving the screen's lines out of
    # the analysis wing or the export's table building out of exchange, larger than
    # this change. The export's edge is the one allowed: exchange otherwise sits below
    # analysis.
    ("study.exchange", "study.analysis"),
}


def wing_of(module: str, floors: tuple[tuple[str, tuple[str, ...]], ...]) -> tuple[int, str]:
    """The floor (its index, bottom up) and the wing of ``module``.

    Raises:
        KeyError: ``module`` is on no floor.
    """
    best: tuple[int, str] | None = None
    for level, (_, wings) in enumerate(floors):
        for wing in wings:
            inside = module == wing or ("." in wing and module.startswith(wing + "."))
            if inside and (best is None or len(wing) > len(best[1])):
                best = (level, wing)
    if best is None:
        raise KeyError(module)
    return best


def back_running(
    graph: dict[str, set[str]], floors: tuple[tuple[str, tuple[str, ...]], ...]
) -> list[str]:
    """Each import of ``graph`` from a module to one on a higher floor, in words."""
    found = []
    for module, targets in sorted(graph.items()):
        level, _ = wing_of(module, floors)
        for target in sorted(targets):
            if target.split(".")[0] != module.split(".")[0]:
                continue  # another package: the import contract's business
            up, _ = wing_of(target, floors)
            if up > level:
                found.append(f"{module} ({floors[level][0]}) imports {target} ({floors[up][0]})")
    return found


def wing_rings(
    graph: dict[str, set[str]],
    floors: tuple[tuple[str, tuple[str, ...]], ...],
    allowed: set[tuple[str, str]] | frozenset[tuple[str, str]] = frozenset(),
) -> list[str] | None:
    """A ring of wings (folders importing each other), once the allowed edges are left
    out, or None."""
    wings: dict[str, set[str]] = {}
    for module, targets in graph.items():
        _, source = wing_of(module, floors)
        for target in targets:
            if target.split(".")[0] != module.split(".")[0]:
                continue
            _, dest = wing_of(target, floors)
            if dest != source and (source, dest) not in allowed:
                wings.setdefault(source, set()).add(dest)
    return find_cycle(wings)


def study_graph() -> dict[str, set[str]]:
    return import_graph(ROOT, ("study",))


def test_every_study_module_is_on_a_floor() -> None:
    unplaced = []
    for module in study_graph():
        try:
            wing_of(module, STUDY_FLOORS)
        except KeyError:
            unplaced.append(module)
    assert not unplaced, "study modules on no floor of STUDY_FLOORS: " + ", ".join(unplaced)


def test_no_study_import_runs_back_up() -> None:
    found = back_running(study_graph(), STUDY_FLOORS)
    assert not found, "imports running back up a floor:\n" + "\n".join(found)


def test_the_wings_of_study_import_each_other_without_a_ring() -> None:
    ring = wing_rings(study_graph(), STUDY_FLOORS, WING_RINGS_ALLOWED)
    assert ring is None, "wings importing each other in a ring: " + " -> ".join(ring or [])
    # Each allowance is still needed: one that no longer is goes.
    for source, dest in sorted(WING_RINGS_ALLOWED):
        assert wing_rings(study_graph(), STUDY_FLOORS, WING_RINGS_ALLOWED - {(source, dest)})


SYNTHETIC_FLOORS = (
    ("values", ("pkg.rows",)),
    ("state", ("pkg.log", "pkg.scores")),
    ("handle", ("pkg.store", "pkg")),
)


def test_the_layers_check_catches_an_import_running_back_up(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "log").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from pkg.store import Store\n")
    (pkg / "rows.py").write_text("ROWS = ()\n")
    (pkg / "log" / "__init__.py").write_text("")
    (pkg / "log" / "events.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from pkg.rows import ROWS\n"
        "if TYPE_CHECKING:\n    from pkg.store import Store\n"
    )
    (pkg / "store.py").write_text("from pkg.log import events\nclass Store: ...\n")
    graph = import_graph(tmp_path, ("pkg",))
    # Downward imports, an annotation-only import of a higher floor and the package
    # re-exporting its handle: nothing runs back up.
    assert back_running(graph, SYNTHETIC_FLOORS) == []
    # A lazy import inside a function counts as much as one at the top.
    (pkg / "rows.py").write_text("def rows():\n    from pkg.log import events\n    return events\n")
    # And so does going through the front door.
    (pkg / "log" / "decisions.py").write_text("from pkg import Store\n")
    graph = import_graph(tmp_path, ("pkg",))
    assert back_running(graph, SYNTHETIC_FLOORS) == [
        "pkg.log.decisions (state) imports pkg (handle)",
        "pkg.rows (values) imports pkg.log.events (state)",
    ]
    with pytest.raises(KeyError):
        wing_of("pkg.elsewhere", SYNTHETIC_FLOORS)


def test_the_layers_check_catches_a_ring_of_wings_on_one_floor() -> None:
    graph = {
        "pkg.log.decisions": {"pkg.scores.ledger", "pkg.rows"},
        "pkg.scores.ledger": {"pkg.log.events"},
        "pkg.log.events": set(),
        "pkg.rows": set(),
    }
    assert back_running(graph, SYNTHETIC_FLOORS) == []
    assert sorted(wing_rings(graph, SYNTHETIC_FLOORS) or []) == ["pkg.log", "pkg.log", "pkg.scores"]
    allowed = {("pkg.scores", "pkg.log")}
    assert wing_rings(graph, SYNTHETIC_FLOORS, allowed) is None


# --- Textual's private names ----------------------------------------------------------
#
# A method of ours named like a private one of a Textual base class replaces it without
# a word: ``DetailPane._render_content`` once stood in for Widget's own renderer, and
# ``_on_click``/``_on_focus``/``_on_blur`` overrides depend on how Textual dispatches
# its private handlers. Our classes use public handlers (``on_click``) and names of
# their own.


def textual_private_overrides(classes: list[type]) -> list[str]:
    """Each name of one of ``classes`` (its own ``__dict__``) that is a private name of a
    Textual class in its MRO, in words. Names Textual's metaclass gives every subclass
    (``_decorated_handlers``, ``_css_type_name`` ...) are Textual's own and left out."""
    from textual.app import App
    from textual.widget import Widget

    automatic = set(vars(type("Probe", (Widget,), {}))) | set(vars(type("Probe", (App,), {})))
    found = []
    for cls in classes:
        textual = [b for b in cls.__mro__ if b.__module__.split(".")[0] == "textual"]
        for name in vars(cls):
            if not name.startswith("_") or name.startswith("__") or name in automatic:
                continue
            owners = [b.__qualname__ for b in textual if name in vars(b)]
            if owners:
                found.append(f"{cls.__module__}.{cls.__qualname__}.{name} ({owners[0]})")
    return found


def tui_textual_classes() -> list[type]:
    """Every Widget (Screen included) and App subclass defined in ``tui``."""
    import importlib
    import pkgutil

    from textual.app import App
    from textual.widget import Widget

    import tui

    for info in pkgutil.walk_packages(tui.__path__, "tui."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)
    found: list[type] = []
    todo: list[type] = [Widget, App]
    while todo:
        cls = todo.pop()
        subclasses: list[type] = cls.__subclasses__()
        for sub in subclasses:
            if sub not in found:
                todo.append(sub)
                found.append(sub)
    return [cls for cls in found if cls.__module__.split(".")[0] == "tui"]


def test_no_tui_class_uses_a_private_name_of_its_textual_base() -> None:
    classes = tui_textual_classes()
    assert len(classes) > 20
    found = textual_private_overrides(classes)
    assert not found, "tui classes reusing Textual's private names:\n" + "\n".join(found)


def test_the_private_name_check_catches_an_override() -> None:
    from textual import events
    from textual.scroll_view import ScrollView

    class Shadowing(ScrollView):
        def _render_content(self) -> None: ...

        async def _on_click(self, event: events.Click) -> None: ...

        def on_focus(self, event: events.Focus) -> None: ...

        def _own_helper(self) -> None: ...

    found = textual_private_overrides([Shadowing])
    assert [line.rsplit(".", 1)[-1] for line in found] == [
        "_render_content (Widget)",
        "_on_click (Widget)",
    ]


#: The review screen's widgets: its own to steer (tui/screens/review.py).
REVIEW_WIDGETS = {"pair_queue", "detail", "screening", "scoring_progress", "status_line"}


def review_widget_reaches(source: str) -> list[str]:
    """``x.<widget>.<member>`` where ``x`` is not ``self``: a module steering the review
    screen's widgets from outside instead of asking the screen."""
    return [
        f"line {node.lineno}: .{node.value.attr}.{node.attr}"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Attribute)
        and node.value.attr in REVIEW_WIDGETS
        and not (isinstance(node.value.value, ast.Name) and node.value.value.id == "self")
    ]


def test_the_app_asks_the_review_screen_never_its_widgets() -> None:
    # What the screen shows is the screen's to decide (messages or its own methods): the
    # app once wrote review.scoring_progress.progress five times and reloaded its queue.
    assert review_widget_reaches("review.pair_queue.reload()") == ["line 1: .pair_queue.reload"]
    assert review_widget_reaches("self.pair_queue.reload()\nreview.reload_queue()") == []
    offenders = {
        str(path.relative_to(ROOT)): hits
        for path in sorted((ROOT / "tui").rglob("*.py"))
        if path.name != "review.py" or path.parent.name != "screens"
        if (hits := review_widget_reaches(path.read_text(encoding="utf-8")))
    }
    assert offenders == {}


def test_every_widget_that_repaints_itself_follows_the_one_frame_rule() -> None:
    # tui/widgets/frames.py: a widget that asks for a repaint in a key's handler hands the
    # request to the screen with paint_with_key, or the key is painted a frame late. A
    # widget class that calls self.refresh(...) must use it, itself or through a base of
    # the project's (PagedList's paint_with_key).
    import importlib
    import inspect
    import pkgutil

    from textual.widget import Widget

    import tui

    modules = [
        importlib.import_module(info.name)
        for info in pkgutil.walk_packages(tui.__path__, "tui.")
        if not info.name.startswith("tui.serve") and not info.name.endswith("__main__")
    ]
    late = []
    for module in modules:
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != module.__name__ or not issubclass(cls, Widget):
                continue
            if "self.refresh(" not in inspect.getsource(cls):
                continue
            ours = [k for k in cls.__mro__ if k.__module__.startswith("tui.")]
            if not any("paint_with_key" in inspect.getsource(k) for k in ours):
                late.append(f"{module.__name__}.{cls.__name__}")
    assert late == []


# --- study's front doors --------------------------------------------------------------
#
# docs/architecture.md: another room (``tui``, ``screening``) imports ``study`` through
# its doors only: the package ``study``, a wing's package whose ``__all__`` lists what it
# lends, and the modules of DOOR_MODULES. A module whose name starts with ``_`` belongs to
# the package that holds it: no other wing of ``study`` imports it either. Every import
# counts here, those under ``if TYPE_CHECKING:`` too. Tests and benchmarks may look inside.

#: Modules of ``study`` that are doors of their own, each with its reason.
DOOR_MODULES = {
    # Every error study raises, in one module so that a caller finds them all.
    "study.errors",
    # The values a study hands out (decisions, orders, statuses), passed around by every room.
    "study.rows",
}

#: The rooms that may use study only through its doors.
ROOMS = ("screening", "tui")


def module_paths(root: Path, package: str) -> dict[str, Path]:
    """Each module of ``package`` under ``root`` by its dotted name."""
    found = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def lent_names(path: Path) -> frozenset[str] | None:
    """The names of a package's ``__all__``, or None when it has none."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                return frozenset(ast.literal_eval(node.value or ast.Constant(None)))
    return None


def study_doors(root: Path = ROOT) -> dict[str, frozenset[str] | None]:
    """Each door of ``study`` and the names it lends (None: a door module lends all of its
    names). A package is a door when its ``__init__`` has an ``__all__``."""
    doors: dict[str, frozenset[str] | None] = dict.fromkeys(DOOR_MODULES)
    for module, path in module_paths(root, "study").items():
        if path.name == "__init__.py" and (names := lent_names(path)) is not None:
            doors[module] = names
    return doors


def imported(source: str, modules: set[str]) -> list[tuple[int, str, str | None]]:
    """Each ``(line, module, name)`` that ``source`` imports of the project (``name`` None
    for a module imported whole), every import counted (function-level, TYPE_CHECKING)."""
    found: list[tuple[int, str, str | None]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name, None) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                whole = f"{node.module}.{a.name}"
                if whole in modules:
                    found.append((node.lineno, whole, None))
                else:
                    found.append((node.lineno, node.module, a.name))
    return found


def internal_owner(module: str) -> str | None:
    """The package that a module with a leading ``_`` (at any level) belongs to, or None."""
    parts = module.split(".")
    for i, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i])
    return None


def past_the_doors(
    source: str, doors: dict[str, frozenset[str] | None], modules: set[str]
) -> list[str]:
    """Each import of ``study`` in ``source`` (a module of another room) that does not go
    through a door, in words."""
    found = []
    for line, module, name in imported(source, modules):
        if module.split(".")[0] != "study":
            continue
        if (owner := internal_owner(module)) is not None:
            found.append(f"line {line}: {module} is {owner}'s own")
        elif module not in doors:
            found.append(f"line {line}: {module} is no door (import from its wing's package)")
        elif name is not None and (lent := doors[module]) is not None and name not in lent:
            found.append(f"line {line}: {module} does not lend {name} (not in its __all__)")
    return found


def internals_reached(importer: str, source: str, modules: set[str]) -> list[str]:
    """Each import in ``source`` (of module ``importer``) of a module with a leading ``_``
    that belongs to a package ``importer`` is not in, in words."""
    found = []
    for line, module, _ in imported(source, modules):
        owner = internal_owner(module)
        if owner is not None and importer != owner and not importer.startswith(owner + "."):
            found.append(f"{importer} line {line}: {module} is {owner}'s own")
    return found


def study_modules() -> set[str]:
    return set(module_paths(ROOT, "study"))


@pytest.mark.parametrize("room", ROOMS)
def test_the_rooms_use_study_through_its_front_doors(room: str) -> None:
    doors, modules = study_doors(), study_modules()
    found = [
        f"{path.relative_to(ROOT)} {hit}"
        for path in sources(room)
        for hit in past_the_doors(path.read_text(encoding="utf-8"), doors, modules)
    ]
    assert not found, f"{room} reaching past study's front doors:\n" + "\n".join(found)


def test_no_package_imports_another_wings_internal_modules() -> None:
    found = []
    for package in PACKAGES:
        names = set(module_paths(ROOT, package))
        for module, path in module_paths(ROOT, package).items():
            found += internals_reached(module, path.read_text(encoding="utf-8"), names)
    assert not found, "imports of another wing's internal modules:\n" + "\n".join(found)


def test_every_door_lends_what_it_lists() -> None:
    import importlib

    doors = study_doors()
    # The wings the rooms use, and the handle's package, each have a door.
    assert {"study", "study.analysis", "study.exchange", "study.refi", "study.report"} <= set(doors)
    missing = []
    for door, names in doors.items():
        module = importlib.import_module(door)
        missing += [f"{door}.{n}" for n in sorted(names or ()) if not hasattr(module, n)]
        # A door lends no internal module's name under the module's own name.
        missing += [f"{door}.{n}" for n in sorted(names or ()) if n.startswith("_")]
    assert not missing, missing


def test_the_front_door_check_catches_a_way_past_the_doors() -> None:
    doors: dict[str, frozenset[str] | None] = {
        "study": frozenset({"Study", "rows"}),
        "study.analysis": frozenset({"learn"}),
        "study.rows": None,
    }
    modules = {"study", "study.rows", "study.analysis", "study.analysis._learning"}
    modules |= {"study.analysis.screen", "study.store"}
    source = (
        "from typing import TYPE_CHECKING\n"
        "from study import Study, rows\n"
        "from study.rows import Decision\n"
        "from study.analysis import learn\n"
        "import textual\n"
        "from study.store import Study\n"
        "def lazily():\n"
        "    from study.analysis._learning import learn\n"
        "    import study.analysis.screen\n"
        "if TYPE_CHECKING:\n"
        "    from study.analysis import fits\n"
        "    from study.analysis import _learning\n"
    )
    assert past_the_doors(source, doors, modules) == [
        "line 6: study.store is no door (import from its wing's package)",
        "line 8: study.analysis._learning is study.analysis's own",
        "line 9: study.analysis.screen is no door (import from its wing's package)",
        "line 11: study.analysis does not lend fits (not in its __all__)",
        "line 12: study.analysis._learning is study.analysis's own",
    ]
    assert past_the_doors("from study import Study\nimport study.rows\n", doors, modules) == []


def test_the_internal_module_check_catches_another_wing_reaching_in() -> None:
    modules = {"study.report._data", "study.report._files", "study.analysis._learning"}
    source = "from study.report._data import report_data\nimport study.analysis._learning\n"
    # Inside the wing: its own.
    assert internals_reached("study.report._files", source, modules) == [
        "study.report._files line 2: study.analysis._learning is study.analysis's own"
    ]
    assert internals_reached("study.report", source, modules)[0].startswith("study.report line 2")
    assert internals_reached("study.exchange.export", source, modules) == [
        "study.exchange.export line 1: study.report._data is study.report's own",
        "study.exchange.export line 2: study.analysis._learning is study.analysis's own",
    ]
    assert internal_owner("study.report._data.POOLED") == "study.report"
    assert internal_owner("study.report.__init__") is None


# --- the work floor's SQL -------------------------------------------------------------
#
# docs/architecture.md: the work floor reads through the query wing (``study.queries``)
# and writes through the handle's namespaces; it runs no SQL of its own. A module of
# ``study.analysis`` or ``study.exchange`` that names a connection's ``execute``,
# ``executemany`` or ``executescript`` (called, or taken to call later) breaks that.

#: The wings of the work floor that run no SQL of their own.
SQL_FREE_WINGS = ("study/analysis", "study/exchange", "study/refi")

#: SQL a module of those wings may still run, as ``(path, line text)``, each with its
#: reason. None is left: every read is a function of study.queries, every write a
#: namespace's (the learned curves' table is study.scores.learned's).
SQL_ALLOWED: dict[tuple[str, str], str] = {}

SQL_METHODS = frozenset({"execute", "executemany", "executescript"})


def sql_run(source: str) -> list[tuple[int, str]]:
    """Each ``(line, method)`` where ``source`` names a connection's (or cursor's) way to
    run SQL: ``x.execute``, ``x.executemany``, ``x.executescript``."""
    return sorted(
        (node.lineno, node.attr)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute) and node.attr in SQL_METHODS
    )


def unallowed_sql(where: str, source: str, allowed: dict[tuple[str, str], str]) -> list[str]:
    """Each place ``source`` (the module at path ``where``) runs SQL that ``allowed`` does
    not list, in words."""
    lines = source.splitlines()
    return [
        f"{where}:{line}: .{method}("
        for line, method in sql_run(source)
        if (where, lines[line - 1].strip()) not in allowed
    ]


def test_the_work_floor_runs_no_sql_of_its_own() -> None:
    found = []
    for wing in SQL_FREE_WINGS:
        for path in sorted((ROOT / wing).rglob("*.py")):
            where = str(path.relative_to(ROOT))
            found += unallowed_sql(where, path.read_text(encoding="utf-8"), SQL_ALLOWED)
    assert not found, "SQL run on the work floor (read through study.queries):\n" + "\n".join(found)


def test_the_sql_check_catches_a_query_on_the_work_floor() -> None:
    source = (
        "from study.queries.records import note_rows\n"
        "def notes(study):\n"
        "    with study.snapshot() as conn:\n"
        "        return note_rows(conn)\n"
        "def codes(study):\n"
        "    with study.snapshot() as conn:\n"
        "        return conn.execute('SELECT cid FROM codes').fetchall()\n"
        "def load(conn, rows):\n"
        "    conn.executemany('INSERT INTO notes VALUES (?, ?)', rows)\n"
        "    run = conn.executescript\n"
        "    run('DELETE FROM notes')\n"
    )
    assert sql_run(source) == [(7, "execute"), (9, "executemany"), (10, "executescript")]
    where = "study/exchange/loader.py"
    assert unallowed_sql(where, source, {}) == [
        f"{where}:7: .execute(",
        f"{where}:9: .executemany(",
        f"{where}:10: .executescript(",
    ]
    # An allowance names the module and the line: that line only.
    allowed = {(where, "conn.executemany('INSERT INTO notes VALUES (?, ?)', rows)"): "a reason"}
    assert unallowed_sql(where, source, allowed) == [
        f"{where}:7: .execute(",
        f"{where}:10: .executescript(",
    ]
    assert unallowed_sql("study/exchange/other.py", source, allowed)[1].endswith(
        ":9: .executemany("
    )
    assert sql_run("def f(study):\n    return study.execute_plan()\n") == []
