"""The plugin manager: built-ins, entry points, local project plugins, per-agent extras.

Discovery, in order: the built-ins of DEFAULT_PLUGINS (ordinary plugins), the
entry-point group ``harness``, the modules of ``[tool.harness] plugins`` in the
project's pyproject.toml (imported with the project root on sys.path), and modules
added at run time (``-p``, ``--harness-plugin``). ``HARNESS_DISABLE_PLUGINS``
(comma-separated names) blocks plugins by name.

Which set applies is explicit, never the current directory: ``Agent(...)`` gets
``default_plugins()`` (the built-ins and the entry points, the same in any folder); the
front ends ask for ``discover(root)``, a project's set, so that a scenario file loads and
runs with the plugins of its own project wherever the command was started. One
``PluginDiscovery`` keeps each set, found once.
"""

from __future__ import annotations

import difflib
import importlib
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import pluggy

from harness import hookspecs
from harness._errors import HarnessError, where_defined
from harness._project import ProjectConfigError, project_config, project_root

__all__ = [
    "DEFAULT_PLUGINS",
    "ENGINE_PLUGINS",
    "INTEGRATION_PLUGINS",
    "KINDS",
    "PluginDiscovery",
    "PluginError",
    "Plugins",
    "default_plugins",
    "discover",
    "discovery",
    "load_plugin_modules",
]

# The engine's built-ins: engine modules (or lower), which the scripted loop needs.
ENGINE_PLUGINS: tuple[str, ...] = (
    "harness._stagnation",
    "harness.planners._agentbuilder",
    "harness.planners._react",
    "harness.llm._scripted",
    "harness._checks",
    "harness.detectors._builtin",
    "harness._users",
)
# The integrations' built-ins (the openai source, the judged expectations, the target
# kinds), loaded after the engine's; tests/test_architecture.py checks each string's layer.
INTEGRATION_PLUGINS: tuple[str, ...] = (
    "harness.providers.openai",
    "harness.providers.anthropic",
    "harness.providers.gemini",
    "harness.judge._judges",
    "harness.external._targets",
    "harness._modelwires",
)
DEFAULT_PLUGINS: tuple[str, ...] = (*ENGINE_PLUGINS, *INTEGRATION_PLUGINS)


def builtin_name(module: str) -> str:
    """A built-in plugin's name: its module's path without the private marks (the module
    ``harness._stagnation`` is the plugin ``harness._stagnation``), so the names users read
    in ``harness plugins`` and block with HARNESS_DISABLE_PLUGINS do not follow the files."""
    return ".".join(part.removeprefix("_") for part in module.split("."))


_BUILTIN_NAMES = frozenset(builtin_name(module) for module in DEFAULT_PLUGINS)

_HOOK_PREFIX = "harness_"
_SPEC_NAMES = frozenset(name for name in dir(hookspecs) if name.startswith(_HOOK_PREFIX))


class PluginError(HarnessError):
    """A plugin could not be loaded or registered something invalid."""


class _Manager(pluggy.PluginManager):
    """Treats every ``harness_*`` function as a hook implementation, marked or not,

    so that a misspelled hook name is an error at registration instead of a hook
    that silently never runs.
    """

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> Any:
        opts = super().parse_hookimpl_opts(plugin, name)
        if opts is None and name.startswith(_HOOK_PREFIX) and callable(getattr(plugin, name, None)):
            return {}
        return opts


@dataclass
class Registered:
    """What one plugin registered through the registration hooks."""

    planners: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    llms: list[str] = field(default_factory=list)
    expectations: list[str] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)
    detectors: list[str] = field(default_factory=list)
    users: list[str] = field(default_factory=list)
    wires: list[str] = field(default_factory=list)


# The kinds of named components plugins register (``harness_register_<kind>``): the
# fields of Registered, in order.
KINDS: tuple[str, ...] = tuple(f.name for f in fields(Registered))


class Plugins:
    """A pluggy manager with harness's hookspecs and the registries its plugins fill."""

    def __init__(self, plugins: Iterable[tuple[str, Any]] = ()) -> None:
        self.pm = _Manager("harness")
        self.pm.add_hookspecs(hookspecs)
        self._order: list[tuple[str, Any]] = []
        # Each kind's registry, built when first asked for: a scripted run never asks for
        # the wires, whose built-in plugin imports them only when called.
        self._registries: dict[str, dict[str, Any]] = {}
        self.registered: dict[str, Registered] = {}
        # Plugins whose origin pluggy does not know (the project's own): name -> origin.
        self.origins: dict[str, str] = {}
        for name, plugin in plugins:
            self.register(plugin, name)

    @property
    def hook(self) -> Any:
        """The hook caller (``plugins.hook.harness_agent_start(run=...)``)."""
        return self.pm.hook

    def register(self, plugin: Any, name: str | None = None) -> str | None:
        """Register a plugin object or module; unknown ``harness_*`` hooks are an error."""
        if self.pm.is_registered(plugin):
            return None
        name = name or self._default_name(plugin)
        if self.pm.is_blocked(name):
            return None
        try:
            self.pm.register(plugin, name)
            self.pm.check_pending()
        except pluggy.PluginValidationError as exc:
            if self.pm.is_registered(plugin):
                self.pm.unregister(plugin)
            raise PluginError(_explain_validation(name, plugin, exc)) from None
        self._order.append((name, plugin))
        self._registries = {}
        return name

    def _default_name(self, plugin: Any) -> str:
        """A module's or class's name, or an instance's class path (``#2``... when taken).

        Never repr(): it shows a memory address, which says nothing in an error message.
        """
        name = getattr(plugin, "__name__", None)
        if isinstance(name, str):
            return name
        base = where_defined(type(plugin))
        name, n = base, 1
        while self.pm.get_plugin(name) is not None:
            n += 1
            name = f"{base} #{n}"
        return name

    def adopt(self, plugin: Any, name: str) -> None:
        """Keep a plugin that pluggy registered itself (its entry-point loader)."""
        self._order.append((name, plugin))
        self._registries = {}

    def origin(self, name: str) -> str:
        """Where a plugin came from, as ``harness plugins`` says it."""
        if name in _BUILTIN_NAMES:
            return "built-in"
        for plugin, dist in self.pm.list_plugin_distinfo():
            if self.pm.get_name(plugin) == name:
                values = [ep.value for ep in dist.entry_points if ep.name == name]
                return f"entry point {values[0] if values else name} ({dist.project_name})"
        return self.origins.get(name, "-p / --harness-plugin")

    def unregister(self, plugin: Any) -> None:
        """Remove a plugin registered before."""
        self.pm.unregister(plugin)
        self._order = [(n, p) for n, p in self._order if p is not plugin]
        self._registries = {}

    def block(self, name: str) -> None:
        """Never register a plugin of this name."""
        self.pm.set_blocked(name)

    def plugins(self) -> list[tuple[str, Any]]:
        """(name, plugin) in registration order."""
        return list(self._order)

    def with_extra(self, extra: Iterable[Any]) -> Plugins:
        """A new manager holding these plugins plus ``extra`` (for one Agent only)."""
        extra = list(extra)
        if not extra:
            return self
        child = Plugins(self._order)
        for plugin in extra:
            child.register(plugin)
        return child

    # -- registries -------------------------------------------------------------------

    def _build_registry(self, kind: str) -> dict[str, Any]:
        registry: dict[str, Any] = {}
        owners: dict[str, str] = {}
        for registered in self.registered.values():
            getattr(registered, kind).clear()

        def collector(plugin_name: str) -> Callable[..., None]:
            def register(*args: Any, **options: Any) -> None:
                key, value = _registration(kind, plugin_name, args, options)
                previous = owners.get(key)
                if previous is not None:
                    raise PluginError(
                        f"{kind[:-1]} {key!r} is registered twice: by {previous} and by "
                        f"{plugin_name}; rename one or block a plugin with HARNESS_DISABLE_PLUGINS"
                    )
                owners[key] = plugin_name
                registry[key] = value
                getattr(self.registered.setdefault(plugin_name, Registered()), kind).append(key)

            return register

        caller = getattr(self.pm.hook, f"harness_register_{kind}")
        # Call implementations one by one, oldest first, so each registration is
        # attributed to its plugin (for `harness plugins` and duplicate errors).
        for impl in caller.get_hookimpls():
            impl.function(register=collector(impl.plugin_name))
        return registry

    def registry(self, kind: str) -> dict[str, Any]:
        """``planners``, ``tools``, ``llms``, ``expectations``, ``targets``, ``detectors``,
        ``users`` or ``wires``: name -> registered object (a wire: ``(wire, vendor)``)."""
        found = self._registries.get(kind)
        if found is None:
            if kind not in KINDS:
                raise KeyError(kind)
            found = self._registries[kind] = self._build_registry(kind)
        return found

    def check(self) -> None:
        """Build every registry an agent's run may ask for, so that a plugin registering
        something wrong is a PluginError where the agent is made, not mid-run. (The wires
        are left to their first use: their built-in plugin imports them then.)"""
        for kind in KINDS:
            if kind != "wires":
                self.registry(kind)

    def planner_factory(self, name: str) -> Callable[[Any], Any]:
        """The factory of the planner called ``name`` (clear error listing the known ones)."""
        return self._lookup("planners", "planner", name)

    def llm_factory(self, name: str) -> Callable[[Any], Any]:
        """The factory of the LLM source called ``name``."""
        return self._lookup("llms", "LLM provider", name)

    def target_factory(self, name: str) -> Callable[[], Any]:
        """The factory of the target kind called ``name`` (``python``, ``command``, ...)."""
        return self._lookup("targets", "target kind", name)

    def detector_factory(self, name: str) -> Callable[..., Any]:
        """The factory of the stuck detector called ``name``."""
        return self._lookup("detectors", "detector", name)

    def user_factory(self, name: str) -> Callable[..., Any]:
        """The factory of the user simulator called ``name``."""
        return self._lookup("users", "user simulator", name)

    def tool(self, name: str) -> Any:
        """The registered tool called ``name``."""
        return self._lookup("tools", "tool", name)

    def _lookup(self, kind: str, label: str, name: str) -> Any:
        found = self.registry(kind).get(name)
        if found is None:
            known = sorted(self.registry(kind))
            hint = difflib.get_close_matches(name, known, n=1)
            extra = f"; did you mean {hint[0]!r}?" if hint else ""
            raise PluginError(
                f"unknown {label} {name!r} (known: {', '.join(known) or 'none'}){extra}"
            )
        return found


def _registration(
    kind: str, plugin_name: str, args: tuple[Any, ...], options: dict[str, Any]
) -> tuple[str, Any]:
    """The key and the value one ``register(...)`` call of a ``kind`` registers."""
    if kind == "tools" and len(args) == 1 and not options:
        from harness._tools import as_tool

        tool = as_tool(args[0])
        return tool.name, tool
    if kind == "wires" and len(args) == 1 and set(options) <= {"vendor"}:
        wire = args[0]
        if not isinstance(getattr(wire, "name", None), str) or not callable(
            getattr(wire, "serves", None)
        ):
            raise PluginError(
                f"{plugin_name}: register(wire) takes a harness.wires._neutral.Wire "
                f"(with a name and serves(path)), not {type(wire).__name__}"
            )
        return wire.name, (wire, options.get("vendor"))
    if kind == "tools":
        raise PluginError(f"{plugin_name}: register(tool) takes one @tool function")
    if kind == "wires":
        raise PluginError(f"{plugin_name}: register(wire, vendor=None) takes one wire")
    if len(args) != 2 or options or not isinstance(args[0], str) or not callable(args[1]):
        raise PluginError(f"{plugin_name}: register(name, factory) takes a name and a callable")
    return args[0], args[1]


def _explain_validation(name: str, plugin: Any, exc: pluggy.PluginValidationError) -> str:
    text = str(exc)
    unknown = [
        attr
        for attr in dir(plugin)
        if attr.startswith(_HOOK_PREFIX)
        and attr not in _SPEC_NAMES
        and callable(getattr(plugin, attr))
    ]
    if not unknown:
        return f"plugin {name}: {text}"
    parts = []
    for attr in unknown:
        hint = difflib.get_close_matches(attr, sorted(_SPEC_NAMES), n=1)
        parts.append(f"{attr}" + (f" (did you mean {hint[0]}?)" if hint else ""))
    return f"plugin {name}: unknown hook {', '.join(parts)}; hooks are listed in harness.hookspecs"


# -- discovery ---------------------------------------------------------------------------


def _import_plugin(module: str, where: str, root: Path | None = None) -> Any:
    try:
        imported = importlib.import_module(module)
    except ImportError as exc:
        raise PluginError(f"{where}: cannot import plugin module {module!r}: {exc}") from None
    if root is not None:
        _check_origin(imported, module, where, root)
    return imported


def _check_origin(imported: Any, module: str, where: str, root: Path) -> None:
    """A project's own plugin module must come from that project.

    Two projects with a ``plugins`` package each cannot both be imported in one
    process: Python keeps the first. Using it for the second would be silently wrong.
    """
    local = root.joinpath(*module.split("."))
    if not (local.with_suffix(".py").is_file() or (local / "__init__.py").is_file()):
        return  # an installed module, not one of the project's files
    found = getattr(imported, "__file__", None)
    if found is None or Path(found).resolve().is_relative_to(root):
        return
    raise PluginError(
        f"{where}: plugin module {module!r} is already imported from {found}, another "
        "project; run this project's scenarios in a process of their own (or rename one "
        "of the packages)"
    )


def _disabled() -> set[str]:
    return {
        n.strip() for n in os.environ.get("HARNESS_DISABLE_PLUGINS", "").split(",") if n.strip()
    }


def _discover(root: Path | None, added: tuple[str, ...] = ()) -> Plugins:
    """A new manager: the built-ins and the entry points; with ``root``, that project's
    ``[tool.harness] plugins``; then the ``added`` modules."""
    plugins = Plugins()
    disabled = _disabled()
    for name in disabled:
        plugins.block(name)
    for module in DEFAULT_PLUGINS:
        name = builtin_name(module)
        if name not in disabled:
            plugins.register(_import_plugin(module, "built-in plugins"), name)
    _load_entry_points(plugins)
    if root is not None:
        _load_project(plugins, root, disabled)
    for module in added:
        plugins.register(_import_plugin(module, "--harness-plugin"), module)
    return plugins


def _load_project(plugins: Plugins, root: Path, disabled: set[str]) -> None:
    """The modules of ``[tool.harness] plugins``, imported with the project root on sys.path."""
    try:
        local = project_config(root).get("plugins", [])
    except ProjectConfigError as exc:
        raise PluginError(str(exc)) from None
    if not local:
        return
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    where = f"{root / 'pyproject.toml'} [tool.harness] plugins"
    for module in local:
        if module not in disabled:
            plugins.register(_import_plugin(module, where, root), module)
            plugins.origins[module] = "pyproject.toml [tool.harness] plugins"


def _load_entry_points(plugins: Plugins) -> None:
    """pluggy's own loader for the entry-point group ``harness`` (blocked names skipped);
    its validation and load errors said for people."""
    pm = plugins.pm
    before = {name for name, _ in pm.list_name_plugin()}
    try:
        pm.load_setuptools_entrypoints("harness")
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        # pluggy's error carries the plugin, not its name: the entry point's name it was
        # registered under.
        name = pm.get_name(exc.plugin) or "of the entry-point group 'harness'"
        raise PluginError(_explain_validation(name, exc.plugin, exc)) from None
    except Exception as exc:  # a broken third-party plugin must say what broke
        raise PluginError(
            f"a plugin of the entry-point group 'harness' failed to load: "
            f"{type(exc).__name__}: {exc} (block it by name with HARNESS_DISABLE_PLUGINS)"
        ) from None
    for name, plugin in pm.list_name_plugin():
        if name not in before:
            plugins.adopt(plugin, name)


class PluginDiscovery:
    """The plugin sets of one process, each discovered once, by (project root, added modules).

    ``default()``, what ``Agent(...)`` gets, is the built-ins and the installed entry
    points: the same set in any folder. ``project(root)`` adds a project's ``[tool.harness]
    plugins`` and the modules the front end added for the session (``-p``,
    ``--harness-plugin``); the front ends (the ``harness`` command, the pytest plugin,
    the scenario runner) are the only ones that name a project.
    """

    def __init__(self) -> None:
        self._found: dict[tuple[Path | None, tuple[str, ...]], Plugins] = {}
        self._roots: dict[str | Path, Path] = {}
        self.added: tuple[str, ...] = ()

    def default(self) -> Plugins:
        """The built-ins and the installed entry points."""
        return self._get(None, ())

    def project(self, root: str | Path) -> Plugins:
        """The plugins of the project at ``root``, with the added modules."""
        # Each root resolved once: a run asks four times, harness explore runs thousands.
        resolved = self._roots.get(root)
        if resolved is None:
            resolved = Path(root).resolve()
            if Path(root).is_absolute():  # a relative one depends on the current directory
                self._roots[root] = resolved
        return self._get(resolved, self.added)

    def _get(self, root: Path | None, added: tuple[str, ...]) -> Plugins:
        found = self._found.get((root, added))
        if found is None:
            found = self._found[(root, added)] = _discover(root, added)
        return found

    def sets(self) -> list[Plugins]:
        """Every plugin set found so far, the defaults first (found now if not yet)."""
        default = self.default()
        return [default, *(p for p in self._found.values() if p is not default)]

    def add_modules(self, modules: Iterable[str]) -> None:
        """Give every project these modules from now on (``-p``, ``--harness-plugin``).

        Each is imported and its hooks checked now: one that does not load raises
        PluginError here, not in the middle of a run.
        """
        for module in modules:
            if module not in self.added:
                Plugins().register(_import_plugin(module, "--harness-plugin"), module)
                self.added = (*self.added, module)

    def reset(self) -> None:
        """Forget every plugin set and the added modules (the next use discovers again)."""
        self._found.clear()
        self._roots.clear()
        self.added = ()


# The process's one discovery: tests reset it, front ends add their -p modules to it.
discovery = PluginDiscovery()


def default_plugins() -> Plugins:
    """The built-ins and the installed entry-point plugins (``Agent(...)``'s default)."""
    return discovery.default()


def discover(root: str | Path | None = None) -> Plugins:
    """The plugins of the project at ``root``: the defaults, its ``[tool.harness] plugins``
    and the modules added with ``-p`` / ``--harness-plugin``.

    Without ``root``, the project of the current directory (the nearest folder with a
    pyproject.toml): ``Agent(..., plugins=discover())`` in a script of the project.
    """
    return discovery.project(project_root() if root is None else root)


def load_plugin_modules(modules: Iterable[str]) -> Plugins:
    """Add plugin modules given at run time (``-p``, ``--harness-plugin``); the current
    project's plugins with them.

    Like ``[tool.harness] plugins``, they import from the project root: ``-p plugins.shop``
    works from the console script too, whose sys.path lacks the current directory. A
    module that does not load raises PluginError here, not in the middle of a run.
    """
    modules = list(modules)
    root = project_root()
    if modules and str(root) not in sys.path:
        sys.path.insert(0, str(root))
    discovery.add_modules(modules)
    return discover(root)
