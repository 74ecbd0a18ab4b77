#!/usr/bin/env bash
# The intersphinx inventories of docs/conf.py, so that the site links to Python's, NumPy's,
# gymnasium's and Stable-Baselines3's own API pages without fetching anything at build time.
#
#   python.inv       Python 3.11's, as Debian's python3.11-doc package ships it
#   numpy.inv        built by Sphinx from NumPy's reference pages for arrays, scalars, dtypes,
#                    array creation and manipulation, and numpy.random.Generator
#   gymnasium.inv    built by Sphinx from gymnasium's API pages (docs/api), as dirhtml, the builder
#                    of gymnasium.farama.org
#   sb3.inv          built by Sphinx from Stable-Baselines3's whole docs/ folder
#
# Each built inventory comes from the project's own documentation sources at the commit below,
# with its docstrings from the installed package: the page and anchor of every object are the
# ones its site serves. Run from the repository root in a venv with the test extra (sphinx,
# myst-parser, numpy, gymnasium, stable-baselines3), with git and network access:
#
#   bash docs/_intersphinx/make_inventories.sh
#
# GYMNASIUM_SRC, NUMPY_SRC and SB3_SRC may name local clones instead.
set -euo pipefail
OUT="$(cd "$(dirname "$0")" && pwd)"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

GYMNASIUM_COMMIT=3f0476a8cc224dcce2167cc4b6971ae0f04d5cfc   # gymnasium 1.4.0
NUMPY_COMMIT=1f90bbb55e65e7de68921bc3f1a2d94492fdf689       # numpy 2.6.0.dev0
SB3_COMMIT=e05d2dbe6eda0acd0ef2e316e3e4065677add3eb         # stable-baselines3 2.9.0a4

checkout() {  # checkout NAME URL COMMIT SRC_VARIABLE_VALUE -> prints the checkout's path
  local name=$1 url=$2 commit=$3 src=${4:-}
  if [ -z "$src" ]; then
    src="$WORK/$name-src"
    git clone -q --filter=blob:none --no-checkout "$url" "$src"
  fi
  mkdir -p "$WORK/$name"
  git -C "$src" archive "$commit" "${@:5}" | tar x -C "$WORK/$name"
  echo "$WORK/$name"
}

if [ -f /usr/share/doc/python3.11/html/objects.inv ]; then
  cp /usr/share/doc/python3.11/html/objects.inv "$OUT/python.inv"
else
  echo "python.inv: apt-get install python3.11-doc first" >&2
  exit 1
fi

# gymnasium: docs/api as a site of its own, built as gymnasium.farama.org is (dirhtml)
dir=$(checkout gymnasium https://github.com/Farama-Foundation/Gymnasium $GYMNASIUM_COMMIT "${GYMNASIUM_SRC:-}" docs/api)
cat > "$dir/docs/conf.py" <<'EOF'
project = "Gymnasium"
extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.napoleon"]
autoclass_content = "both"
napoleon_use_ivar = True
napoleon_custom_sections = [("Returns", "params_style")]
myst_enable_extensions = ["colon_fence", "dollarmath"]
EOF
printf '# Gymnasium\n\n```{toctree}\n:glob:\napi/*\napi/*/*\n```\n' > "$dir/docs/index.md"
python -m sphinx -q -b dirhtml -D release=1.4.0 "$dir/docs" "$dir/build" 2>/dev/null
cp "$dir/build/objects.inv" "$OUT/gymnasium.inv"

# NumPy: the reference pages of the objects a VecEnv's signatures and pages name
dir=$(checkout numpy https://github.com/numpy/numpy $NUMPY_COMMIT "${NUMPY_SRC:-}" doc/source/_templates \
      doc/source/reference/arrays.ndarray.rst doc/source/reference/arrays.scalars.rst \
      doc/source/reference/arrays.dtypes.rst doc/source/reference/random/generator.rst \
      doc/source/reference/routines.array-creation.rst doc/source/reference/routines.array-manipulation.rst)
cat > "$dir/doc/source/conf.py" <<'EOF'
project = "NumPy"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.autosummary", "sphinx.ext.napoleon"]
autosummary_generate = True
templates_path = ["_templates"]
EOF
printf 'NumPy\n=====\n\n.. toctree::\n   :glob:\n\n   reference/*\n   reference/random/*\n' > "$dir/doc/source/index.rst"
python -m sphinx -q -b html -D html_theme=basic -D release=2.6 "$dir/doc/source" "$dir/build" 2>/dev/null
cp "$dir/build/objects.inv" "$OUT/numpy.inv"

# Stable-Baselines3: its docs/ folder (the project's conf.py needs its theme; a plain one serves)
dir=$(checkout sb3 https://github.com/DLR-RM/stable-baselines3 $SB3_COMMIT "${SB3_SRC:-}" docs)
cat > "$dir/docs/conf.py" <<'EOF'
project = "Stable Baselines3"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.autosummary", "sphinx.ext.mathjax", "myst_parser"]
autodoc_typehints = "description"
master_doc = "index"
EOF
python -m sphinx -q -b html -D html_theme=basic -D release=2.9 "$dir/docs" "$dir/build" 2>/dev/null
cp "$dir/build/objects.inv" "$OUT/sb3.inv"

ls -l "$OUT"/*.inv
