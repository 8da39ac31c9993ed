#!/usr/bin/env bash
# Builds the unwinding test programs into OUT (build/progs): chains, twice (without and with
# frame pointers, static glibc); sqlite_rows and dlopen_z against Debian's shared libsqlite3,
# libz and glibc (copied into the guest by the scenarios); rust_vec with Rust's std.
set -euo pipefail
src=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build.sh OUT}
mkdir -p "$out"
cc=(gcc -g -Wall -Werror)
"${cc[@]}" -static -O2 -fomit-frame-pointer -o "$out/chains-nofp" "$src/chains.c" -lpthread
"${cc[@]}" -static -O2 -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer \
    -o "$out/chains-fp" "$src/chains.c" -lpthread
"${cc[@]}" -O2 -o "$out/sqlite_rows" "$src/sqlite_rows.c" -lsqlite3
strip -o "$out/sqlite_rows-stripped" "$out/sqlite_rows"
"${cc[@]}" -O2 -o "$out/dlopen_z" "$src/dlopen_z.c" -ldl
rustc --edition 2021 -O -g -C target-feature=+crt-static -o "$out/rust_vec" "$src/rust_vec.rs"
