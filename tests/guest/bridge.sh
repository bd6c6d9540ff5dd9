# SPDX-License-Identifier: GPL-2.0
# Sourced by the guest jobs whose devices gluon-bridge serves (user-job,
# soc-job): starting a bridge and waiting for it to go.
#
#	serve NAME MODE [ARG]...	starts `gluon-bridge MODE ARG...`, logging
#					to /tmp/NAME; waits for its node; prints
#					the bridge's pid and its node (radianceN)
#	gone PID			waits until PID (not a child) is gone

serve() {
	log=/tmp/$1
	shift
	/gluon-bridge "$@" >"$log" 2>&1 &
	pid=$!
	for _ in $(seq 100); do
		node=$(head -n1 "$log" 2>/dev/null)
		[ -n "$node" ] && [ -e "/dev/$node" ] && break
		sleep 0.1
	done
	echo "$pid $node"
}

gone() {
	while kill -0 "$1" 2>/dev/null; do sleep 0.1; done
}
