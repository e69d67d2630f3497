#!/usr/bin/env bash
# guard.sh PID CMD...: runs CMD once the process PID has ended, however it ended.
#
# The with-*.sh scripts stop what they started in an EXIT trap, which runs on a normal end and
# on HUP, INT and TERM, but not on SIGKILL (a `timeout -s KILL`, a killed process group of a
# test runner): each also starts this guard, detached in a session of its own (setsid), which
# polls the script's pid once a second and then runs the script's `--cleanup DIR`. After a
# normal end the trap has removed DIR already and the cleanup does nothing.
set -u
owner=$1
shift
while kill -0 "$owner" 2>/dev/null; do sleep 1; done
exec "$@"
