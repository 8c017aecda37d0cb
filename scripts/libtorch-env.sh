#!/usr/bin/env bash
# Installs PyTorch 2.13.0 (the libtorch that tch 0.26 expects) from PyPI into a cache folder outside
# the clone, once, and exports what tch's build needs. Source it: `. scripts/libtorch-env.sh`.
#
# Overrides:
#   LIBTORCH              an existing libtorch (C++ distribution or a torch package dir); skips PyPI
#   GNNAUDIT_TORCH_DIR    where the PyPI install lives (default ~/.cache/gnnaudit/torch-2.13.0)
TORCH_VERSION=2.13.0
PYG_VERSION=2.8.1

if [ -n "${LIBTORCH:-}" ]; then
  if [ ! -d "$LIBTORCH/lib" ]; then
    echo "error: LIBTORCH=$LIBTORCH has no lib/ folder; point it at a libtorch ${TORCH_VERSION} install" >&2
    return 2 2>/dev/null || exit 2
  fi
  export LIBTORCH_BYPASS_VERSION_CHECK=${LIBTORCH_BYPASS_VERSION_CHECK:-0}
else
  GNNAUDIT_TORCH_DIR=${GNNAUDIT_TORCH_DIR:-$HOME/.cache/gnnaudit/torch-$TORCH_VERSION}
  if [ ! -f "$GNNAUDIT_TORCH_DIR/.installed" ]; then
    echo "gnnaudit: installing PyTorch $TORCH_VERSION from PyPI into $GNNAUDIT_TORCH_DIR (once, ~5 GB)" >&2
    rm -rf "$GNNAUDIT_TORCH_DIR"
    python3 -m venv "$GNNAUDIT_TORCH_DIR" || { echo "error: python3 -m venv failed" >&2; return 2 2>/dev/null || exit 2; }
    "$GNNAUDIT_TORCH_DIR/bin/pip" install --quiet --disable-pip-version-check "torch==$TORCH_VERSION" \
      || { echo "error: pip could not install torch==$TORCH_VERSION" >&2; return 2 2>/dev/null || exit 2; }
    touch "$GNNAUDIT_TORCH_DIR/.installed"
  fi
  # PyTorch Geometric (pure Python; it pulls NumPy), for the tests that audit a PyG model exported
  # as its users export it. libtorch's build does not need it, so a failed install only warns.
  if [ ! -f "$GNNAUDIT_TORCH_DIR/.pyg-installed" ]; then
    echo "gnnaudit: installing torch_geometric $PYG_VERSION from PyPI into $GNNAUDIT_TORCH_DIR (once)" >&2
    if "$GNNAUDIT_TORCH_DIR/bin/pip" install --quiet --disable-pip-version-check "torch_geometric==$PYG_VERSION"; then
      touch "$GNNAUDIT_TORCH_DIR/.pyg-installed"
    else
      echo "warning: pip could not install torch_geometric==$PYG_VERSION; the PyG export tests will fail" >&2
    fi
  fi
  # torch-sys asks this interpreter where torch's headers and libraries are.
  export LIBTORCH_USE_PYTORCH=1
  export PATH="$GNNAUDIT_TORCH_DIR/bin:$PATH"
  export VIRTUAL_ENV="$GNNAUDIT_TORCH_DIR"
fi
