#!/usr/bin/python3
# Runs a command and prints its CPU time (user, system) and context switches
# to stderr: TSU_BENCH_WRAP for run_netns_bench.sh / ab_netns.sh.
import os
import resource
import subprocess
import sys

status = subprocess.call(sys.argv[1:])
u = resource.getrusage(resource.RUSAGE_CHILDREN)
sys.stderr.write("CPU rank=%s user=%.3f sys=%.3f vcsw=%d ivcsw=%d\n" %
                 (os.environ.get("TSU_RANK", "?"), u.ru_utime, u.ru_stime, u.ru_nvcsw, u.ru_nivcsw))
sys.exit(status)
