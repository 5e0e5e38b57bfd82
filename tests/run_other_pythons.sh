#!/usr/bin/env bash
# make test-pythons: build an sdist of the committed tree (HEAD), install it (speedups
# compiled, required) into a fresh venv for each supported interpreter found on this machine
# (python3.10 ... python3.13 on PATH or in pyenv) with the official SDK (a peer), run the suites
# that need no Node or web-app peers against the INSTALLED package, from the snapshot's tests/ (outside the checkout, so the
# checkout's sources are not imported). Prints one line per interpreter; an interpreter that is
# not found is reported as such, never silently passed.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY="${PY:-$ROOT/.venv/bin/python}"
WORK="${TMPDIR:-/tmp}/mcp-lite-pythons"
rm -rf "$WORK" && mkdir -p "$WORK/src"
git -C "$ROOT" archive HEAD | tar -x -C "$WORK/src"
"$PY" -m build --sdist --outdir "$WORK/dist" "$WORK/src" > "$WORK/sdist.log" 2>&1 \
    || { echo "building the sdist failed (see $WORK/sdist.log)"; exit 2; }
SDIST="$(ls "$WORK"/dist/mcp_lite_client-*.tar.gz | head -1)"
SUITES="tests/kernels tests/protocol tests/connection tests/client tests/cli tests/server"
status=0
summary=()
for version in 3.10 3.11 3.12 3.13; do
    py="$(command -v "python$version" 2>/dev/null || true)"
    if [ -z "$py" ] || ! "$py" -c 'pass' 2>/dev/null; then
        pyenv_root="$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"
        py="$(ls -d "$pyenv_root"/versions/"$version".*/bin/python 2>/dev/null | sort -V | tail -1)"
    fi
    if [ -z "$py" ] || ! "$py" -c 'pass' 2>/dev/null; then
        summary+=("python$version: NOT FOUND on this machine (not tested)")
        continue
    fi
    dir="$WORK/py$version"
    rm -rf "$dir" && mkdir -p "$dir"
    "$py" -m venv "$dir/venv" || { summary+=("python$version: venv failed"); status=1; continue; }
    pip=("$dir/venv/bin/python" -m pip --disable-pip-version-check --quiet)
    if ! MCP_LITE_REQUIRE_EXTENSIONS=1 "${pip[@]}" install "$SDIST" \
            "pytest>=8" "pytest-timeout>=2.3" "hypothesis>=6.100" "jsonschema>=4" "mcp>=2.3" \
            > "$dir/install.log" 2>&1; then
        summary+=("python$version: install from the sdist FAILED (see $dir/install.log)")
        status=1
        continue
    fi
    cp -r "$WORK/src/tests" "$WORK/src/examples" "$WORK/src/pyproject.toml" "$dir/"
    rm -rf "$dir/tests/peers/node_modules"
    version_line="$(cd "$dir" && venv/bin/mcp-lite --version)"
    (cd "$dir" && venv/bin/pytest -q -p no:cacheprovider -x $SUITES > pytest.log 2>&1)
    rc=$?
    result="$(tail -1 "$dir/pytest.log")"
    [ $rc -eq 0 ] || status=1
    summary+=("python$version: $version_line; $result")
done
# Without a C compiler the same sdist must give a working pure-Python install that says so.
dir="$WORK/no-compiler"
py="$(command -v python3)"
"$py" -m venv "$dir/venv"
if CC=/bin/false "$dir/venv/bin/python" -m pip --disable-pip-version-check --quiet install \
        --no-cache-dir "$SDIST" > "$dir/install.log" 2>&1; then
    version_line="$("$dir/venv/bin/mcp-lite" --version)"
    call="$(cd "$dir" && venv/bin/python -c '
import mcp_lite
s = mcp_lite.Server("calc")
@s.tool()
def add(a: int, b: int) -> int:
    return a + b
with mcp_lite.connect(s) as c:
    print(c.call_tool("add", {"a": 2, "b": 3}).data)')"
    case "$version_line" in
        *"speedups: pure Python"*) [ "$call" = "{'result': 5}" ] || status=1 ;;
        *) status=1 ;;
    esac
    summary+=("no compiler (CC=/bin/false): $version_line; add(2, 3) -> $call")
else
    summary+=("no compiler (CC=/bin/false): install FAILED (see $dir/install.log)")
    status=1
fi
printf '%s\n' "${summary[@]}"
exit $status
