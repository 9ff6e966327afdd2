# The two commands a newcomer needs: `make demo` and `make test`. Everything else is CMake presets.
JOBS ?= $(shell nproc)
SCENARIO ?= scenarios/deepseek-v3-2048xh800.json
BUILD = @cmake --preset $(1) >/dev/null && cmake --build --preset $(1) -j $(JOBS)

.PHONY: demo test deps release debug asan bench fuzz clean

deps:
	@scripts/install-deps

release: deps
	$(call BUILD,cpu-release)

debug: deps
	$(call BUILD,cpu-debug)

asan: deps
	$(call BUILD,asan)

demo: release
	./build/cpu-release/cli/plumb memory $(SCENARIO)
	./build/cpu-release/cli/plumb run $(SCENARIO) --trace build/step-trace.json
	@echo "timeline: build/step-trace.json (open it in https://ui.perfetto.dev)"

test: debug asan
	ctest --preset cpu-debug -j $(JOBS)
	ctest --preset asan -j $(JOBS)

bench: release
	./build/cpu-release/bench/plumb_bench

# Every reader under libFuzzer with ASan and UBSan, FUZZ_SECONDS each (not part of make test).
FUZZ_SECONDS ?= 60
fuzz:
	@scripts/install-deps fuzz
	$(call BUILD,fuzz)
	scripts/fuzz-run $(FUZZ_SECONDS)

clean:
	rm -rf build
