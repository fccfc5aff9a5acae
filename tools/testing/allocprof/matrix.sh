# SPDX-License-Identifier: GPL-2.0
# Reader of tools/testing/allocprof/matrix, sourced by tools/testing/allocprof/test.sh and tools/testing/allocprof/bench/run.sh.

MATRIX=${MATRIX:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/matrix}

# matrix_rows KIND: the rows of KIND without the kind field, every word @NAME
# of a mode replaced by that mode's arguments.  Fails on an unknown @word.
matrix_rows() {
	awk -F'|' -v kind="$1" '
		function expand(s,   n, w, i, r) {
			n = split(s, w, " ")
			r = ""
			for (i = 1; i <= n; i++) {
				if (w[i] ~ /^@/ && w[i] != "@all" && w[i] != "@smp") {
					if (!(w[i] in mode)) {
						printf "matrix:%d: unknown mode %s\n", NR, w[i] > "/dev/stderr"
						bad = 1
						continue
					}
					w[i] = mode[w[i]]
				}
				if (w[i] != "")
					r = r (r == "" ? "" : " ") w[i]
			}
			return r
		}
		/^#/ || NF == 0 { next }
		$1 == "mode" { mode["@" $2] = $3; next }
		$1 == kind {
			out = ""
			for (i = 2; i <= NF; i++)
				out = out (i == 2 ? "" : "|") expand($i)
			print out
		}
		END { exit bad }' "$MATRIX"
}

# matrix_boots TARGET: NAME|APPEND|TESTS|JUDGE-OPTIONS, one per test boot of
# TARGET, in order; the rows of '*' if no row names TARGET.
matrix_boots() {
	local -
	set -o pipefail
	matrix_rows boot | awk -F'|' -v t="$1" '
		{
			n = split($1, ts, " ")
			for (i = 1; i <= n; i++) {
				if (ts[i] == t)
					own[++nown] = $0
				if (ts[i] == "*")
					any[++nany] = $0
			}
		}
		END {
			if (nown)
				for (i = 1; i <= nown; i++) print substr(own[i], index(own[i], "|") + 1)
			else
				for (i = 1; i <= nany; i++) print substr(any[i], index(any[i], "|") + 1)
		}'
}

# matrix_bench NAME: BASE|VARIANT|APPEND of bench configuration NAME.
matrix_bench() {
	local -
	set -o pipefail
	matrix_rows bench | awk -F'|' -v n="$1" '
		{ split($1, l, ":") }
		l[2] == n { print $2 "|" $3 "|" $4; found = 1 }
		END { exit !found }'
}

# matrix_smp LIST: the selftests named in file LIST (one per line) but the
# patches ones, comma-separated: what @smp stands for.
matrix_smp() {
	grep -vxF -f <(matrix_rows patches | tr ' ' '\n') "$1" | paste -sd,
}
