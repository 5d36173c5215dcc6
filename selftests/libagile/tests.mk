# SPDX-License-Identifier: MIT
#
# The libagile selftest programs, one per concern (selftests/libagile/*.c,
# and *.cpp for C++),
# in the order the runners run them.  Included by selftests/libagile/Makefile.
TESTS := deque-stress fib array-sum pfor-uneven nested-spawn oversubscribe \
	error-propagation create-destroy task-tree spill \
	pin-fallback concurrent-runs cross-pool steal-leap-wake \
	doorbell eu-pool eu-race kernels sched-eu offload-fault gpu-probe gpu-eu group segments \
	coll-plan coll-ops coll-threads coll-procs coll-misuse \
	api-version api-cplusplus

# The EU tests check-gpu runs again with AGILE_EU_POOL=gpu.
GPU_TESTS := eu-pool sched-eu kernels gpu-eu
