"""maturin's PEP 517 backend, with the environment the torch-sys crate needs to build.

torch-sys builds against the torch package of the interpreter that installs gnnaudit. pip's build
isolation hides that interpreter's site-packages from the build, so this finds torch with the
isolation lifted and hands its folder to torch-sys as LIBTORCH. CARGO_TARGET_DIR defaults to the
target dir of scripts/test.sh, so the dependencies the CLI built are reused.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import maturin

_FIND_TORCH = "import os, torch; print(os.path.dirname(torch.__file__))"


def _torch_dir() -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONNOUSERSITE", "PYTHONHOME")}
    done = subprocess.run([sys.executable, "-c", _FIND_TORCH], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(
            f"gnnaudit: the interpreter {sys.executable} cannot import torch ({done.stderr.strip()}); "
            "install torch==2.13.0 into it first (scripts/libtorch-env.sh makes such an environment)"
        )
    return done.stdout.strip()


def _prepare() -> None:
    if not os.environ.get("LIBTORCH"):
        os.environ["LIBTORCH"] = _torch_dir()
    # LIBTORCH takes the place of asking the interpreter, which cannot import torch here.
    os.environ.pop("LIBTORCH_USE_PYTORCH", None)
    os.environ.setdefault("PYO3_PYTHON", sys.executable)
    # torch-sys reads the Python headers' folder from `python` on PATH (`python3` without a
    # VIRTUAL_ENV): make that this interpreter.
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    os.environ.setdefault("VIRTUAL_ENV", sys.prefix)
    os.environ.setdefault("CARGO_TARGET_DIR", str(Path.home() / ".cache" / "gnnaudit" / "target"))


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    _prepare()
    return maturin.build_wheel(wheel_directory, config_settings, metadata_directory)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    _prepare()
    return maturin.build_editable(wheel_directory, config_settings, metadata_directory)


def build_sdist(sdist_directory, config_settings=None):
    return maturin.build_sdist(sdist_directory, config_settings)


get_requires_for_build_wheel = maturin.get_requires_for_build_wheel
get_requires_for_build_sdist = maturin.get_requires_for_build_sdist
get_requires_for_build_editable = maturin.get_requires_for_build_editable
prepare_metadata_for_build_wheel = maturin.prepare_metadata_for_build_wheel
prepare_metadata_for_build_editable = maturin.prepare_metadata_for_build_editable
