#!/usr/bin/env bash
# Fail if an option the fragment asks for did not make it into the final .config
# (a dependency missing from the fragment, or a toolchain Kconfig rejected, e.g. for RUST).
set -euo pipefail
fragment=$1 config=$2
bad=0
while IFS= read -r line; do
    case "$line" in ''|'#'*) continue ;; esac
    if ! grep -qxF -- "$line" "$config"; then
        echo "kernel config: wanted '$line', got '$(grep -E "^(# )?${line%%=*}[= ]" "$config" || echo unset)'" >&2
        bad=1
    fi
done < "$fragment"
exit $bad
