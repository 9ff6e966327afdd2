# The two commands a newcomer needs: `make demo` and `make test`. Everything else is CMake presets.
JOBS ?= $(shell nproc)
SCENARIO ?= scenarios/deepseek-v3-2048xh800.json

.PHONY: demo test deps build-release build-debug build-asan bench clean

deps:
	@scripts/install-deps

build-%: deps
	@cmake --preset $* >/dev/null
	@cmake --build --preset $* -j $(JOBS)

demo: build-cpu-release
	./build/cpu-release/cli/plumb memory $(SCENARIO)

test: build-cpu-debug build-asan
	ctest --preset cpu-debug -j $(JOBS)
	ctest --preset asan -j $(JOBS)

bench: build-cpu-release
	./build/cpu-release/bench/plumb_bench

clean:
	rm -rf build
