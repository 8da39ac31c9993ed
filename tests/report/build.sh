#!/bin/sh
# Builds the fixture program statically, as the checked-in binaries were built:
#   alloc_sites    keep_cache() keeps 3 MiB
#   alloc_sites5   the "next build": keep_cache() keeps 5 MiB (for --diff)
set -eu
cd "$(dirname "$0")"
gcc -static -O1 -g -fno-omit-frame-pointer -o alloc_sites alloc_sites.c
gcc -static -O1 -g -fno-omit-frame-pointer -DKEEP_MIB=5 -o alloc_sites5 alloc_sites.c
