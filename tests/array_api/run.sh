#!/usr/bin/env bash
# Run the Array API standard's official conformance suite against nda.
#
#   tests/array_api/run.sh /path/to/array-api-tests [--max-examples 200] [pytest args...]
#
# The suite is not on PyPI: clone https://github.com/data-apis/array-api-tests and its spec
# submodule (git clone --recurse-submodules, or put https://github.com/data-apis/array-api in
# its array-api/ folder). It is kept out of this repository. Needs, in the Python that has
# nda installed: pytest, hypothesis, ndindex (pip install ndindex).
set -euo pipefail
suite="${1:?usage: $0 /path/to/array-api-tests [pytest args...]}"
shift
here="$(cd "$(dirname "$0")" && pwd)"
python="${PYTHON:-python}"
cd "$suite"
test -d array-api/spec || { echo "$suite/array-api/ is missing: put the data-apis/array-api spec repository there" >&2; exit 2; }
ARRAY_API_TESTS_MODULE=nda exec "$python" -m pytest array_api_tests -q -p no:cacheprovider -W ignore \
    --xfails-file "$here/xfails.txt" --max-examples 20 "$@"
