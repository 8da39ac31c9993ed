#!/usr/bin/env bash
# Builds the runtimes' test programs into OUT (build/progs/runtimes) for
# tests/vm/51-runtimes.sh: a C++ program built with g++ against Debian's libstdc++
# (templates, an anonymous namespace, a lambda), a Go program built with Debian's Go that
# forces collections, the Node.js script, copied (the guest runs the host's node), and an
# STL-heavy C++ unit preprocessed here (stl_unit.ii), which tests/defaults/gxx.sh
# compiles in the guest with the host's g++ and no headers.
set -euo pipefail
src=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build.sh OUT}
mkdir -p "$out"
g++ -std=c++17 -O2 -g -Wall -Werror -o "$out/templates" "$src/templates.cc"
cp "$src/hold.js" "$out/hold.js"
g++ -E -O2 -o "$out/stl_unit.ii" "$src/stl_unit.cc"
gocache=$(mktemp -d)
trap 'rm -rf "$gocache"' EXIT
GOCACHE="$gocache" GOPATH="$gocache/path" GO111MODULE=off CGO_ENABLED=0 \
    go build -o "$out/gc_hold" "$src/gc_hold.go"
