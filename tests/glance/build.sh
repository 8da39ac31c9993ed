#!/usr/bin/env bash
# Builds the first-glance test programs into OUT (build/progs/glance), programs of the shapes
# users run, not the project's fixtures: a C program whose memory a Debian library (GLib)
# allocates for it, one whose memory glibc's unnamed string functions touch, a Rust program
# static and dynamic (and static without debug info of its own), and a Go program built with Debian's Go. The dynamic ones run in the
# guest with Debian's libraries (copied by tests/vm/47-first-glance.sh).
set -euo pipefail
src=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build.sh OUT}
mkdir -p "$out"
gcc -O2 -g -Wall -Werror $(pkg-config --cflags glib-2.0) -o "$out/glib_catalog" "$src/glib_catalog.c" $(pkg-config --libs glib-2.0)
gcc -O2 -g -Wall -Werror -o "$out/strings_fill" "$src/strings_fill.c"
rustc --edition 2021 -O -g -C target-feature=+crt-static -o "$out/rust_cache-static" "$src/rust_cache.rs"
rustc --edition 2021 -O -g -o "$out/rust_cache-dynamic" "$src/rust_cache.rs"
# Built as `rustc -O` and older cargo release builds are: no debug info of its own (the
# standard library's line tables still come with it).
rustc --edition 2021 -O -C target-feature=+crt-static -o "$out/rust_cache-nodebug" "$src/rust_cache.rs"
# Debian's Go, static (no cgo), with a build cache of its own for the build.
gocache=$(mktemp -d)
trap 'rm -rf "$gocache"' EXIT
GOCACHE="$gocache" GOPATH="$gocache/path" GO111MODULE=off CGO_ENABLED=0 \
    go build -o "$out/go_cache" "$src/go_cache.go"
