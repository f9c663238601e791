"""How a new project installs harness: the pip requirement the running harness came from.

harness is not on a package index yet, so ``pip install loop-harness`` finds nothing. A
project made by ``harness init`` installs harness the way this one was installed, read
from its ``direct_url.json`` (PEP 610): from a git URL, the URL and commit; from a wheel
file, the wheel itself, copied into the project's ``wheels/`` (a CI runner cannot reach
this machine's files); from an index, the version. From a folder (a checkout, an editable
install) there is nothing a runner can reach: the folder is named, with a note saying how
to give a git URL or a wheel instead (docs/tutorial.md#1-install-and-make-a-project).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlparse

__all__ = ["DISTRIBUTION", "Installed", "from_direct_url", "harness_requirement"]

DISTRIBUTION = "loop-harness"


@dataclass(frozen=True)
class Installed:
    """The requirement a project gives pip for harness, the files to copy into the
    project for it (source -> path in the project), and a note when a runner cannot
    install it as given."""

    requirement: str
    copies: dict[Path, str] = field(default_factory=dict)
    note: str | None = None


def harness_requirement() -> Installed:
    """How the running harness was installed, as a requirement a project can give pip."""
    try:
        found = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:  # run from a source tree, not installed
        return Installed(DISTRIBUTION, note=_FOLDER_NOTE.format(where="a source tree"))
    # A source tree's own metadata (an .egg-info folder beside harness/, made by a build in
    # the checkout) says nothing of how to install it elsewhere.
    where = getattr(found, "_path", None)
    if isinstance(where, Path) and where.suffix == ".egg-info":
        return Installed(
            str(where.parent), note=_FOLDER_NOTE.format(where=f"the folder {where.parent}")
        )
    text = found.read_text("direct_url.json")
    if not text:  # from a package index
        return Installed(f"{DISTRIBUTION}=={found.version}")
    try:
        direct = json.loads(text)
    except ValueError:
        direct = {}
    return from_direct_url(direct)


_FOLDER_NOTE = (
    "harness was installed from {where}, which a CI runner cannot reach: replace the "
    "requirement in README.md and .github/workflows/harness.yml with a git URL "
    "(loop-harness @ git+https://...) or a wheel committed to the project (pip wheel "
    "--no-deps -w wheels PATH/TO/harness); docs/tutorial.md#1-install-and-make-a-project"
)


def from_direct_url(direct: dict) -> Installed:
    """The requirement for an install a ``direct_url.json`` (PEP 610) describes."""
    url = str(direct.get("url", ""))
    vcs = direct.get("vcs_info")
    if isinstance(vcs, dict):
        commit = vcs.get("commit_id") or vcs.get("requested_revision")
        at = f"@{commit}" if commit else ""
        return Installed(f"{DISTRIBUTION} @ {vcs.get('vcs', 'git')}+{url}{at}")
    parsed = urlparse(url)
    if parsed.scheme in ("http", "https"):
        return Installed(f"{DISTRIBUTION} @ {url}")
    path = Path(unquote(parsed.path))
    if "archive_info" in direct and path.suffix == ".whl" and path.is_file():
        # The wheel itself goes into the project: its README and workflow install it.
        inside = f"wheels/{path.name}"
        return Installed(f"./{inside}", copies={path: inside})
    return Installed(str(path), note=_FOLDER_NOTE.format(where=f"the folder {path}"))
