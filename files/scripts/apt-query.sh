# shellcheck shell=sh
# Read-only package queries for rocm-fleet's facts (rocm_fleet.facts.apt_removal): nothing here takes
# a lock or writes a file. Facts put this file in front of their own script.

# installed_matching EXCEPT NOT_LINE GLOB...: "name|version" of each installed package
# (half-installed ones too; not-installed and config-files-only ones not) that a GLOB
# names, except names matching a glob of the space-separated EXCEPT and "name|version"
# lines matching the extended regex NOT_LINE ("" for none). Needs `set -f` (EXCEPT's
# globs are matched, not expanded).
installed_matching() {
    except=$1
    not_line=${2:-^$}
    shift 2
    # Read first, filter only what was found: on most hosts no GLOB names anything, and
    # the filters would be three processes for nothing (this runs in every survey).
    # shellcheck disable=SC2016  # dpkg-query's format, not the shell's
    listing=$(dpkg-query -W -f='${db:Status-Abbrev}|${Package}|${Version}\n' "$@" 2>/dev/null)
    [ -n "$listing" ] || return 0
    # sed: the lines of installed and half-installed packages (grep -E '^.[^nc]'), their
    # status field dropped (cut -d'|' -f2-), in one process.
    printf '%s\n' "$listing" \
        | sed -n 's/^.[^nc][^|]*|//p' | grep -Ev "$not_line" \
        | while IFS='|' read -r name version; do
            for pattern in $except; do
                # shellcheck disable=SC2254  # a glob on purpose
                case $name in $pattern) continue 2 ;; esac
            done
            printf '%s|%s\n' "$name" "$version"
        done
}

# simulate_purge PACKAGE...: what `apt-get purge PACKAGE...` would remove, from apt's own
# simulation (-s: nothing is done, no lock taken, no cache file written, and no planner log:
# a removal, even simulated, otherwise writes /var/log/apt/eipp.log.xz): a "__removes=name"
# line per package apt would take off, "__error=message" for apt's errors.
simulate_purge() {
    LC_ALL=C apt-get -s -o Debug::NoLocking=1 -o Dir::Cache::pkgcache= \
        -o Dir::Cache::srcpkgcache= -o Dir::Log::Planner= purge "$@" </dev/null 2>&1 \
        | sed -nE -e 's/^(Purg|Remv) ([^ ]+).*/__removes=\2/p' -e 's/^E: /__error=/p'
}
