"""Scale presets of the chapters: ``params/quick.yaml`` and ``params/paper.yaml``.

Each file maps a chapter name to its parameters. ``quick`` is what CI runs (a few
minutes on two cores); ``paper`` uses the papers' own sizes. A chapter reads its
preset with :func:`load`, and any parameter the user set explicitly (through
papermill ``-p`` or in Jupyter) overrides the preset.
"""

import os
from pathlib import Path

import yaml

SCALES = ("quick", "paper")


def find_params_dir(start=None):
    """The ``params/`` directory: ``$TSDYN_PARAMS`` or the nearest one above ``start``."""
    if os.environ.get("TSDYN_PARAMS"):
        return Path(os.environ["TSDYN_PARAMS"])
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "params" / "quick.yaml").is_file():
            return folder / "params"
    raise FileNotFoundError(
        f"no params/quick.yaml above {here}; set TSDYN_PARAMS to the params directory")


def load(chapter, scale, overrides=None, *, params_dir=None):
    """Parameters of ``chapter`` at ``scale``, with the non-None ``overrides`` applied.

    Raises ``ValueError`` for an unknown scale or an override that the preset does
    not define (a misspelt parameter should not be silently ignored).
    """
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}; got {scale!r}")
    path = Path(params_dir or find_params_dir()) / f"{scale}.yaml"
    with open(path) as f:
        presets = yaml.safe_load(f)
    if chapter not in presets:
        raise ValueError(f"chapter {chapter!r} has no preset in {path}")
    config = dict(presets[chapter])
    for key, value in (overrides or {}).items():
        if key not in config:
            raise ValueError(f"{key!r} is not a parameter of chapter {chapter!r}; "
                             f"known: {sorted(config)}")
        if value is not None:
            config[key] = value
    return config
