# SPDX-License-Identifier: GPL-2.0
# Sourced by the guest jobs (tests/guest/*-job.sh): the manifest of what a
# job must run, as markers the host holds the console to (tools/ktap, its
# rules on suites). A suite whose binary is missing, that crashes, or that
# prints fewer results than its plan fails the run; so does a planned
# suite that never ran.
#
#	plan NAME...			the suites this job must run, each once
#	suite NAME CMD [ARG]...		runs CMD as suite NAME: its KTAP is NAME's
#	test_one NAME CMD [ARG]...	suite NAME of one test: CMD exits 0

plan() {
	echo "radiance-guest: plan $*"
}

suite() {
	suite_name=$1
	shift
	echo "radiance-guest: suite $suite_name"
	"$@"
	suite_rc=$?
	# On a line of its own even if CMD's output did not end with a newline.
	printf '\nradiance-guest: suite %s exit %d\n' "$suite_name" "$suite_rc"
}

test_one() {
	suite "$1" /ktap-one.sh "$@"
}
