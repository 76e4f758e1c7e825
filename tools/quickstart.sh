#!/usr/bin/env bash
# The README's two quick-start commands, for a fresh Debian 12 or 13 machine (as root):
#   tools/quickstart.sh demo   install, build, train examples/train.py through llmlaunch
#   tools/quickstart.sh test   install, build (default and ASan), run the whole test suite
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-}
case $mode in
demo | test) ;;
*) echo "usage: $0 demo|test" >&2; exit 2 ;;
esac

packages() { # $1: build or test
	awk -v want="$1" '!/^#/ && NF { if ($1 == "build" || want == "test") for (i = 2; i <= NF; i++) print $i }' \
		tools/debian-packages.txt
}

install_packages() {
	local missing=()
	for p in $(packages "$1"); do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	echo "quickstart: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

build() { # $1: preset, then extra configure arguments
	local preset=$1
	shift
	cmake --preset "$preset" "$@" >/dev/null
	cmake --build --preset "$preset" -j "$(nproc)"
}

if [ "$mode" = demo ]; then
	install_packages build
	build default -DBUILD_TESTING=OFF
	exec ./build/llmlaunch --python /usr/bin/python3 examples/train.py
fi

install_packages test
status=0
# The optimised build warns where the others do not (-O2's flow analysis): it must be
# as clean as what the .deb ships.
build release || status=1
for preset in default asan; do
	build "$preset" -DBUILD_TESTING=ON
	# Each test runs once: a test that needs a retry is a bug.
	ctest --preset "$preset" -j "$(nproc)" || status=1
done
if [ -x tests/fuzz/run.sh ]; then
	tests/fuzz/run.sh || status=1
fi
exit $status
