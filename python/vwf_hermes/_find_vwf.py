"""Finds the ``vwf`` binary that a pip install put beside this package.

The ``visual-workflow`` wheel installs ``vwf`` into the scripts directory of the environment it is
installed into (``bin/`` of a virtual environment, ``~/.local/bin`` for a user install, ...). The
plugin runs that binary rather than whichever ``vwf`` comes first on ``PATH``, so the plugin and
the binary always come from one install. The directories are tried in the order pip uses them,
then the layouts of ``pip install --prefix`` and ``--target``, whose scripts sysconfig does not
know about.
"""

from __future__ import annotations

import fnmatch
import os
import sys
import sysconfig
from typing import Iterator, Optional

PACKAGE = "vwf_hermes"


class VwfNotFound(FileNotFoundError):
    """No ``vwf`` binary in any directory a pip install could have put it in."""


def find_vwf_bin() -> str:
    """The path of the environment's ``vwf`` binary; raises :class:`VwfNotFound` listing every
    directory it looked in."""
    name = "vwf" + (sysconfig.get_config_var("EXE") or "")
    tried: list = []
    for directory in _script_dirs():
        if not directory or directory in tried:
            continue
        tried.append(directory)
        path = os.path.join(directory, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    listed = "".join(f"\n - {d}" for d in tried)
    raise VwfNotFound(f"no {name} binary in any of these directories:{listed}")


def _script_dirs() -> Iterator[Optional[str]]:
    # This interpreter's scripts directory (a virtual environment's bin/), then its base's.
    yield sysconfig.get_path("scripts")
    yield sysconfig.get_path("scripts", vars={"base": sys.base_prefix})
    # A user install (`pip install --user`): ~/.local/bin and its platform variants.
    yield sysconfig.get_path("scripts", scheme=_user_scheme())
    here = os.path.dirname(os.path.abspath(__file__))
    # `pip install --prefix P`: the package is P/lib/pythonX.Y/site-packages/vwf_hermes.
    yield _join(_strip_tail(here, f"lib/python*/site-packages/{PACKAGE}"), "bin")
    yield _join(_strip_tail(here, f"Lib/site-packages/{PACKAGE}"), "Scripts")
    # `pip install --target T`: the package is T/vwf_hermes, the binary T/bin/vwf.
    yield _join(_strip_tail(here, PACKAGE), "bin")


def _strip_tail(path: str, pattern: str) -> Optional[str]:
    """``path`` without its last components when they match ``pattern`` (``/``-separated,
    ``*`` wildcards, compared case-insensitively); ``None`` when they do not."""
    parts = path.split(os.sep)
    wanted = pattern.split("/")
    if len(parts) <= len(wanted):
        return None
    tail = parts[-len(wanted):]
    if all(fnmatch.fnmatch(p.lower(), w.lower()) for p, w in zip(tail, wanted)):
        return os.sep.join(parts[: -len(wanted)])
    return None


def _join(path: Optional[str], leaf: str) -> Optional[str]:
    return os.path.join(path, leaf) if path else None


def _user_scheme() -> str:
    if sys.version_info >= (3, 10):
        return sysconfig.get_preferred_scheme("user")
    if os.name == "nt":
        return "nt_user"
    if sys.platform == "darwin" and getattr(sys, "_framework", None):
        return "osx_framework_user"
    return "posix_user"
