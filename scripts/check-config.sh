#!/usr/bin/env bash
# Fail if an option the fragments ask for did not make it into the final .config
# (a dependency missing from a fragment, or a toolchain Kconfig rejected, e.g. for RUST).
# Usage: scripts/check-config.sh FRAGMENT... CONFIG
# A later fragment overrides an earlier one's setting of the same option (as
# merge_config.sh does); a "# CONFIG_FOO is not set" line asks for FOO to be off.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 FRAGMENT... CONFIG" >&2; exit 2; }
config=${!#}
declare -A want=()
order=()
for fragment in "${@:1:$#-1}"; do
    while IFS= read -r line; do
        case "$line" in
            '# CONFIG_'*' is not set') sym=${line#'# '}; sym=${sym%% *} ;;
            ''|'#'*) continue ;;
            *) sym=${line%%=*} ;;
        esac
        [ -n "${want[$sym]+x}" ] || order+=("$sym")
        want[$sym]=$line
    done < "$fragment"
done
bad=0
for sym in "${order[@]}"; do
    line=${want[$sym]}
    got=$(grep -E "^(# )?${sym}[= ]" "$config" || true)
    case "$line" in
        '# '*) ok=$([[ -z "$got" || "$got" == "$line" ]] && echo 1 || echo 0) ;;
        *) ok=$([[ "$got" == "$line" ]] && echo 1 || echo 0) ;;
    esac
    if [ "$ok" != 1 ]; then
        echo "kernel config: wanted '$line', got '${got:-unset}'" >&2
        bad=1
    fi
done
exit $bad
