# shellcheck shell=bash
# Sourced by the harness scripts: what they all need.
#
#   PROG=NAME            set before sourcing to name the messages
#                        (default: the script's file name)
#   DIE_STATUS=N         exit status of die (default 1; the TAP checkers
#                        use 2, so that "failed" and "could not run" differ)
#   msg TEXT...          "PROG: TEXT" on stdout
#   die TEXT...          "PROG: error: TEXT" on stderr, then exit
#   config_want CONFIG FRAGMENT...
#                        every CONFIG_X=V line of the fragments (the last
#                        one wins, as in Kconfig) must hold in the .config
#                        file CONFIG (V = n: the option is absent or unset);
#                        prints each miss on stderr, returns 1 if any
#   tap_tally LABEL LOG RC [POINTS]
#                        adds the "ok" / "not ok" lines of the TAP file LOG
#                        to the totals $passed / $failed (a "# SKIP" point
#                        is a failure, as in the guest); a stage that
#                        exited RC != 0 without a failed point, or that
#                        printed another number of points than its one
#                        plan line "1..N" (if it printed one), or fewer
#                        than POINTS (when given: the least it must
#                        print, so that a stage may grow points before
#                        its caller's count is raised), or no point at
#                        all, counts as one more failure (a crash is not a
#                        pass); $tally_p / $tally_f: this stage's counts
#   point STATUS TEXT    one TAP point, "ok N TEXT" if STATUS is 0, counted
#                        in $passed / $failed (scripts/lib/tap.sh, which the
#                        guest's runners share)
#   seed_list SPEC       the seeds of a --seeds SPEC ("1-8", "5,9,12",
#                        "3,20-25"), one a line; dies on anything else, an
#                        empty range or no seed at all
#   progress_wait PID EVERY CMD...
#                        waits for the background job PID (a build), with
#                        a line "PROG:   ... Ns, <CMD's output>" every EVERY
#                        seconds meanwhile; returns the job's exit status
#   client_tarball NAME [PATH]
#                        the source tarball NAME of a client (CRIU, Wine,
#                        bdwgc): PATH when given (the caller's *_TARBALL),
#                        else ../shared/clients/NAME beside the clone or,
#                        when that is missing, beside the repository it was
#                        cloned from (a local origin: CI's clean clone);
#                        the caller sets $top
#   bg_run LOG EVERY CMD DESC COMMAND...
#                        "PROG: DESC (log: LOG)", COMMAND with its output
#                        appended to LOG under progress_wait EVERY CMD, then
#                        "PROG:   ... done in Ns"; if it fails, LOG's last
#                        30 lines on stderr and die
PROG=${PROG:-${0##*/}}
DIE_STATUS=${DIE_STATUS:-1}

msg() { echo "$PROG: $*"; }
die() { echo "$PROG: error: $*" >&2; exit "$DIE_STATUS"; }

# kbuild_env TOP: the environment of every kernel build here: reproducible
# kbuild stamps and ccache paths relative to TOP (so clean clones hit), and
# the Debian packaging's names.  KDEB_PKGVERSION is the version of our
# packages (<kernel/BASE>+memwatch1); bindeb-pkg's debian/rules builds with
# KBUILD_BUILD_VERSION set to its revision (after the last "-": the "#..."
# of uname -v), so every build takes that number rather than the counter
# in .version: packaging a kernel just built relinks nothing.  LOCALVERSION
# set and empty keeps setlocalversion from appending "+" (a git tree not at
# a tag) to CONFIG_LOCALVERSION: uname -r is <version><CONFIG_LOCALVERSION>.
kbuild_env() {
	export KBUILD_BUILD_TIMESTAMP="Sat Jan  1 00:00:00 UTC 2000"
	export KBUILD_BUILD_USER=memwatch KBUILD_BUILD_HOST=memwatch
	export CCACHE_BASEDIR=$1 CCACHE_NOHASHDIR=1 CCACHE_SLOPPINESS=time_macros
	export KDEB_PKGVERSION KDEB_CHANGELOG_DIST=bookworm DEBEMAIL="memwatch <memwatch@invalid>"
	KDEB_PKGVERSION="$(cat "$1/kernel/BASE")+memwatch1"
	export KBUILD_BUILD_VERSION=${KDEB_PKGVERSION##*-} LOCALVERSION=
}

# tree_state TREE: the commit and the edits of a git work tree, one line
# (what build/headers and the test packages were made from).
tree_state() {
	echo "$(git -C "$1" rev-parse HEAD) $(git -C "$1" status --porcelain --untracked-files=no | sha256sum)"
}

config_want() {
	local config=$1 f line opt val bad=0
	shift
	for f in "$config" "$@"; do
		[ -r "$f" ] || { echo "$PROG:   cannot read $f" >&2; return 1; }
	done
	while IFS= read -r line; do
		opt=${line%%=*} val=${line#*=}
		if [ "$val" = n ]; then
			grep -q "^$opt=" "$config" || continue
		elif grep -qx "$opt=$val" "$config"; then
			continue
		fi
		echo "$PROG:   $opt: wanted $val, got $(grep -E "^(# )?${opt}[= ]" "$config" || echo absent)" >&2
		bad=1
	done < <(awk -F= '/^CONFIG_[A-Za-z0-9_]*=/ {
			if (!($1 in v)) o[n++] = $1
			v[$1] = $0
		}
		END { for (i = 0; i < n; i++) print v[o[i]] }' "$@")
	return "$bad"
}

seed_list() {
	local part any=0
	case "$1" in
	''|*[!0-9,-]*) die "--seeds $1: not a list like 1-8 or 5,9,12" ;;
	esac
	for part in ${1//,/ }; do
		case "$part" in
		[0-9]*-[0-9]*)
			[ "${part%-*}" -le "${part#*-}" ] || die "--seeds: empty range '$part'"
			seq "${part%-*}" "${part#*-}" ;;
		*[!0-9]*|'') die "--seeds: bad element '$part'" ;;
		*) echo "$part" ;;
		esac
		any=1
	done
	[ $any = 1 ] || die "--seeds $1: no seed"
}

client_tarball() {
	local name=$1 t origin
	if [ -n "${2:-}" ]; then
		echo "$2"
		return
	fi
	t=$(realpath -m "$top/../shared/clients/$name")
	if [ ! -f "$t" ]; then
		origin=$(git -C "$top" remote get-url origin 2>/dev/null || true)
		if [ -n "$origin" ] && [ -d "$origin" ] &&
			[ -f "$(realpath -m "$origin/../shared/clients/$name")" ]; then
			t=$(realpath -m "$origin/../shared/clients/$name")
		fi
	fi
	echo "$t"
}

progress_wait() {
	local pid=$1 every=$2 t0=$SECONDS next=$2
	shift 2
	while sleep 1 && kill -0 "$pid" 2>/dev/null; do
		[ $((SECONDS - t0)) -ge "$next" ] || continue
		msg "  ... $((SECONDS - t0))s, $("$@")"
		next=$(((SECONDS - t0) / every * every + every))
	done
	wait "$pid"
}

bg_run() {
	local log=$1 every=$2 count=$3 desc=$4 t0=$SECONDS
	shift 4
	msg "$desc (log: ${log#"${top:-}"/})"
	"$@" >>"$log" 2>&1 &
	progress_wait $! "$every" "$count" ||
		{ tail -30 "$log" >&2; die "$desc failed (full log: ${log#"${top:-}"/})"; }
	msg "  ... done in $((SECONDS - t0))s"
}

# point and the totals $passed / $failed
# shellcheck source=scripts/lib/tap.sh
. "${BASH_SOURCE[0]%/*}/tap.sh"
# shellcheck disable=SC2034 # this stage's, the caller's to read
tally_p=0 tally_f=0
# shellcheck disable=SC2034
tap_tally() {
	local label=$1 log=$2 rc=$3 least=${4:-0} plan=0 p f
	# A "# SKIP" point fails, as in the guest (tests/harness/run-suites, by
	# the same pattern): an expected skip is written as a passing check of
	# what is expected.
	p=$(grep '^ok ' "$log" | grep -cvi '#[[:space:]]*skip')
	f=$(grep -cE '^not ok |^ok .*#[[:space:]]*[Ss][Kk][Ii][Pp]' "$log")
	if [ "$(grep -cE '^1\.\.[0-9]+$' "$log")" -eq 1 ]; then
		plan=$(sed -n 's/^1\.\.\([0-9]*\)$/\1/p' "$log")
	fi
	if [ "$((p + f))" -eq 0 ]; then
		echo "# $label printed no test point: counted as a failure"
		f=1
	elif [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "# $label exited $rc without a failed point: counted as a failure"
		f=$((f + 1))
	elif [ "$plan" -gt 0 ] && [ "$((p + f))" -ne "$plan" ]; then
		echo "# $label printed $((p + f)) points, not $plan: counted as a failure"
		f=$((f + 1))
	elif [ "$((p + f))" -lt "$least" ]; then
		echo "# $label printed $((p + f)) points, fewer than $least: counted as a failure"
		f=$((f + 1))
	fi
	passed=$((passed + p)) failed=$((failed + f))
	tally_p=$p tally_f=$f
}
