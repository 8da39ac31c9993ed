#!/usr/bin/env bash
# Every path the documentation names exists: README.md, docs/*.md, userspace/README.md and
# scripts/stock/README.md are read for `code spans` and [links](targets) that name a file of this
# repository, and each must exist, relative to the repository's top or to the document's own
# folder. What counts as a repository path:
#   - a span or link that starts with one of the top-level folders (src/ userspace/ tests/
#     scripts/ docs/ patches/ .ci/), or with a crate folder of userspace/ in userspace/README.md;
#     a name without its end (`patches/0001`) matches the files it begins;
#   - a bare file name of source or docs (`state.rs`, `check.sh`): some tracked file has it.
# Not checked: absolute paths (/proc/..., the guest's files), build/ (made by the build),
# kernel-tree paths (mm/, rust/kernel/), and names with placeholders (`...`, `*`, `<`, `$`, PID).
# Prints each missing path as FILE:LINE: PATH and ends with a count; exits 1 if any is missing.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
docs=(README.md docs/*.md userspace/README.md scripts/stock/README.md)
tracked=$(git ls-files 2>/dev/null || find . -type f -not -path './.git/*' | sed 's|^\./||')
basenames=$(sed 's|.*/||' <<< "$tracked" | sort -u)
missing=0 checked=0

exists() { # PATH DOCDIR: the path, or files it begins, relative to the top or to DOCDIR
    local path=${1%/} dir=$2 base
    for base in . "$dir"; do
        [ -e "$base/$path" ] && return 0
        compgen -G "$base/$path*" >/dev/null && return 0
    done
    return 1
}

for doc in "${docs[@]}"; do
    [ -f "$doc" ] || continue
    dir=$(dirname "$doc")
    # one candidate a line: LINE<TAB>TEXT, from `spans` and ](links)
    while IFS=$'\t' read -r line cand; do
        cand=${cand%%#*}
        [ -n "$cand" ] || continue
        case "$cand" in
            *...*|*'*'*|*'<'*|*'$'*|*PID*|http*|/*|build/*|../build/*|'~'*) continue ;;
        esac
        if [[ "$cand" =~ ^(\.\./)*(src|userspace|tests|scripts|docs|patches|\.ci)(/|$) ]] ||
            { [ "$doc" = userspace/README.md ] && [[ "$cand" =~ ^memmon(-cli|-unwind)?/ ]]; } ||
            [[ "$cand" =~ ^[^/]+\.md$ && "$doc" == docs/* ]]; then
            checked=$((checked + 1))
            exists "$cand" "$dir" && continue
        elif [[ "$cand" =~ ^[A-Za-z0-9_.-]+\.(rs|sh|c|h|md|patch|toml|config)$ ]]; then
            checked=$((checked + 1))
            grep -qxF "$cand" <<< "$basenames" && continue
        else
            continue
        fi
        echo "$doc:$line: $cand"
        missing=$((missing + 1))
    done < <(grep -noE '`[^` ]+`|\]\([^) ]+\)' "$doc" |
        sed -E 's/^([0-9]+):`(.*)`$/\1\t\2/; s/^([0-9]+):\]\((.*)\)$/\1\t\2/')
done
echo "$checked paths named in the docs, $missing missing"
[ "$missing" -eq 0 ]
