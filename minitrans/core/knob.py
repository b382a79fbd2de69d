"""``knob``: a schema field with its one line of help.

The schemas (:mod:`minitrans.core.config`, :mod:`minitrans.core.decoding_options`) declare their
fields with it, and :mod:`minitrans.core.config_help` reads the help back for ``train.py --help``
and the configuration reference; this module sits below all three, so none imports another back.
"""

from __future__ import annotations

import dataclasses
from typing import Any

_NO_DEFAULT = object()


def knob(default: Any = _NO_DEFAULT, help: str = "", *, factory: Any = None, hidden: bool = False, shown: str = ""):
    """A schema field and its one line of help, kept in the field's metadata where ``--help`` and
    the configuration reference read it; ``hidden`` leaves a testing aid out of both, ``shown``
    is the default as the help states it when the value depends on the machine."""
    metadata = {"help": help, "hidden": hidden, "shown": shown}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


__all__ = ["knob"]
