# swift-activerecord — the front door.
#   make run     build and run the quickstart on the default database (SQLite, a file outside the
#                checkout, in ~/.local/share/ActiveRecordQuickstart/: it says where)
#   make clean-run  remove that database (its file, -wal, -shm, and the directory once empty)
#   make run-postgres  the second example: the same models on a throwaway PostgreSQL server
#   make test    every test (what CI runs; the README lists them): the debug build once, the
#                documentation's code blocks compiled, Swift and the C examples and tests on SQLite
#                and on a throwaway PostgreSQL server (scripts/with-postgres.sh), the header, snippet
#                and seam checks, the Swift examples, make run's message, the docs; beside them
#                (make -j2) package-graph, the release build once (a user's package from a tagged
#                clone) and test-install's checks on its library
#   make package-graph  a user's package depending on a clone tagged VERSION by URL, built in
#                release and run; the documentation's Package.swift blocks resolved; test-install's
#                checks on the library it built (scripts/test-package-graph.sh)
#   make test-tsan  the Swift tests under the thread sanitizer (.ci/run runs it after make test)
#   make test-topologies  the replication, failover and pgbouncer tests, each suite on its own
#                throwaway primary + 2 standbys (scripts/with-topology.sh; .ci/run runs it after make test)
#   make test-pgbouncer  the tests behind a throwaway pgbouncer in transaction pooling mode, in front
#                of a throwaway PostgreSQL server (make test runs them too, in test-engines)
#   make bench   the release benchmark against the raw sqlite3 C API, and on a throwaway PostgreSQL
#                server against raw libpq
#   make bench-instructions  instructions per operation, library against raw sqlite3 (and the
#                client side against raw libpq, on a throwaway PostgreSQL server), under
#                callgrind (a figure the machine's load does not move; ROWS=5000 by default)
#   make bench-pgbouncer  the PostgreSQL section in seconds, the library also with transactionPooling
#                and through a throwaway pgbouncer in transaction mode (PG_N=10000 rows)
#   make bench-server  the HTTP service under load (wrk, 16/64/256 connections, a mixed profile):
#                Examples/Server against the same service on Fluent (Benchmarks/FluentServer), on
#                SQLite and on a throwaway PostgreSQL server; the table in Benchmarks/server-results.md
#   make bench-peers  the same PostgreSQL work through binary raw libpq, the library, PostgresNIO and
#                Fluent (Benchmarks/Peers) on a throwaway server: instructions and wall-clock, checked
#                verdicts; the table in Benchmarks/peers-results.md
#   make bench-c the C API (release libactiverecord.so) against the raw sqlite3 C API (N=2000: quick)
#   make fuzz    libFuzzer on the predicate parser (FUZZ_SECONDS=600 by default)
#   make lib     libactiverecord.so in .build/c/lib, for C programs (header: include/activerecord.h),
#                replaced by renaming a new file over it, so that programs running on it go on
#   make header  regenerate include/activerecord.h from the Swift shim
#   make c-examples  build the C examples (gcc, clang, the header as C++) and diff their output
#   make c-test  the C API tests (Tests/c/test_api.c) under valgrind
#   make docs    the DocC reference and articles (Sources/ActiveRecord/ActiveRecord.docc), zero warnings,
#                in .build/docs/ActiveRecord.doccarchive (the plugin is fetched only here: AR_DOCS=1), a
#                static site: it ends with the command that serves it (python3 -m http.server) and the URL
#   make release-check  what a release needs: a clean tree, a fresh header, the docs, the tests, and
#                VERSION, ar_version() and CHANGELOG.md agreeing
#   make swift-examples  run the Swift examples (Examples/*/) and diff each with its expected.txt
#   make serve   build and run the server example (Examples/Server: Hummingbird 2, a JSON API) on
#                127.0.0.1:8080 over ./server.sqlite; DATABASE=postgresql://… for PostgreSQL, PORT=…
#   make test-server  build the server example and drive every route with real HTTP requests
#                (scripts/test-server.py), on a temporary SQLite file, then on a throwaway PostgreSQL
#   make install [PREFIX=/usr/local] [DESTDIR=]  the release C library with its SONAME, the Swift
#                runtime it needs, activerecord.h and activerecord.pc; make uninstall removes them
#   make test-install  installs into a temporary prefix, builds Examples/c/quickstart.c with
#                nothing but pkg-config, runs it without the toolchain, uninstalls (make test runs
#                these checks on the library package-graph built, with the same flags)
SWIFT       ?= swift
# -gdwarf-4: the C target's (ARSQLiteMutexes) debug information in a form valgrind 3.19 reads
# (clang's default DWARF 5 stops memcheck and callgrind on libactiverecord.so).
SWIFTFLAGS  ?= -Xswiftc -warnings-as-errors -Xcc -gdwarf-4
APT_PACKAGES = libsqlite3-dev libpq-dev postgresql pgbouncer pkg-config gcc g++ valgrind python3

.PHONY: all deps build run clean-run test-run run-postgres test test-debug test-engines examples bench fuzz lib test-lib-replace header check-header c-examples c-test clean \
        package-graph check-snippets check-doc-snippets check-seams test-tsan install-build install uninstall test-install swift-examples \
        docs release-check serve server-build test-server test-topologies test-pgbouncer test-pgbouncer-run

all: build

# Installs the system packages the build needs, when they are missing.
deps:
	@missing=""; \
	for p in $(APT_PACKAGES); do \
	  dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "make: installing missing system packages:$$missing (apt-get)"; \
	  if [ "$$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi; \
	  case "$$missing" in *postgresql*) \
	    $$SUDO mkdir -p /etc/postgresql-common; \
	    echo "create_main_cluster = false" | $$SUDO tee -a /etc/postgresql-common/createcluster.conf >/dev/null;; \
	  esac; \
	  $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q $$missing \
	    || { echo "make: could not install$$missing; install them and retry" >&2; exit 1; }; \
	fi; \
	pkg-config --exists sqlite3 || { echo "make: pkg-config cannot find sqlite3 (libsqlite3-dev)" >&2; exit 1; }
	pkg-config --exists libpq || { echo "make: pkg-config cannot find libpq (libpq-dev)" >&2; exit 1; }

build: deps
	$(SWIFT) build $(SWIFTFLAGS)

run: deps
	$(SWIFT) build $(SWIFTFLAGS) --product ActiveRecordQuickstart
	$$($(SWIFT) build $(SWIFTFLAGS) --show-bin-path)/ActiveRecordQuickstart
	@if [ -n "$${ACTIVERECORD_DATABASE:-}" ]; then \
	  echo "make run: the quickstart used ACTIVERECORD_DATABASE, $$ACTIVERECORD_DATABASE (yours: make clean-run leaves it alone)"; \
	else \
	  echo "make run: the quickstart's database is $(RUN_DATABASE), outside the checkout; make clean-run removes it"; \
	fi

# The file make run's quickstart uses when ACTIVERECORD_DATABASE is not set: the library's default
# for a program named ActiveRecordQuickstart, in its data directory (Database.dataDirectory():
# $$XDG_DATA_HOME when it is an absolute path, else ~/.local/share, ~ being $$HOME or, when that is
# unset or empty, the user's home in the user database). make test-run checks that this is the path
# the quickstart prints.
RUN_DATA_DIR = $$(case "$${XDG_DATA_HOME:-}" in /*) printf %s "$$XDG_DATA_HOME";; \
  *) printf %s "$${HOME:-$$(getent passwd "$$(id -u)" | cut -d: -f6)}/.local/share";; esac)/ActiveRecordQuickstart
RUN_DATABASE = $(RUN_DATA_DIR)/ActiveRecordQuickstart.sqlite

# Removes make run's default database: that file, its -wal and -shm, and its directory when it is
# left empty; nothing else. A file ACTIVERECORD_DATABASE names is the user's own: never removed.
clean-run:
	@database="$(RUN_DATABASE)"; \
	for file in "$$database" "$$database-wal" "$$database-shm"; do \
	  if [ -e "$$file" ]; then rm -f -- "$$file" && echo "clean-run: removed $$file"; fi; \
	done; \
	if [ -d "$(RUN_DATA_DIR)" ]; then \
	  rmdir -- "$(RUN_DATA_DIR)" 2>/dev/null && echo "clean-run: removed the empty directory $(RUN_DATA_DIR)" \
	    || echo "clean-run: kept $(RUN_DATA_DIR), which holds other files"; \
	fi; \
	echo "clean-run: $$database is gone"; \
	if [ -n "$${ACTIVERECORD_DATABASE:-}" ]; then \
	  echo "clean-run: left ACTIVERECORD_DATABASE's file alone ($$ACTIVERECORD_DATABASE): remove it yourself if it was for make run"; \
	fi

# make run, then make clean-run, in a temporary data directory: run names the file the quickstart
# wrote, and clean-run removes it (with its directory once empty) and nothing else.
test-run:
	@set -e; unset ACTIVERECORD_DATABASE; data=$$(mktemp -d); trap 'rm -rf "$$data"' EXIT; \
	database=$$data/ActiveRecordQuickstart/ActiveRecordQuickstart.sqlite; \
	output=; fail() { echo "test-run: $$*" >&2; echo "$$output" >&2; exit 1; }; \
	output=$$(XDG_DATA_HOME="$$data" $(MAKE) --no-print-directory -s run 2>&1) || fail "make run failed:"; \
	echo "$$output" | grep -qxF "database: $$database" || fail "the quickstart did not use $$database"; \
	echo "$$output" | grep -qF "database is $$database, outside the checkout; make clean-run removes it" \
	  || fail "make run did not say where it wrote and how to remove it"; \
	[ -f "$$database" ] || fail "make run did not write $$database"; \
	touch "$$database-wal" "$$database-shm" "$$data/ActiveRecordQuickstart/other.txt" "$$data/other.sqlite"; \
	XDG_DATA_HOME="$$data" $(MAKE) --no-print-directory -s clean-run > /dev/null; \
	for file in "$$database" "$$database-wal" "$$database-shm"; do [ ! -e "$$file" ] || fail "clean-run left $$file"; done; \
	[ -f "$$data/ActiveRecordQuickstart/other.txt" ] && [ -f "$$data/other.sqlite" ] || fail "clean-run removed another file"; \
	rm "$$data/ActiveRecordQuickstart/other.txt"; \
	XDG_DATA_HOME="$$data" $(MAKE) --no-print-directory -s clean-run > /dev/null; \
	[ ! -e "$$data/ActiveRecordQuickstart" ] || fail "clean-run left the empty directory"; \
	mine=$$data/mine.sqlite; touch "$$mine" "$$mine-wal"; \
	ACTIVERECORD_DATABASE="$$mine" XDG_DATA_HOME="$$data" $(MAKE) --no-print-directory -s clean-run > /dev/null; \
	[ -f "$$mine" ] && [ -f "$$mine-wal" ] || fail "clean-run removed the file ACTIVERECORD_DATABASE names"; \
	echo "test-run: make run names $$database; make clean-run removes it, its -wal, -shm and empty directory, and nothing else (not ACTIVERECORD_DATABASE's file)"

# The second example: the same models on a throwaway PostgreSQL server (Examples/PostgreSQL).
run-postgres: deps
	$(SWIFT) build $(SWIFTFLAGS) --product ActiveRecordPostgreSQLExample
	scripts/with-postgres.sh sh -c '"$$0" "$$AR_TEST_POSTGRES_URL"' \
	  $$($(SWIFT) build $(SWIFTFLAGS) --show-bin-path)/ActiveRecordPostgreSQLExample

examples: run run-postgres swift-examples

# The Swift examples, each compared with its Examples/<name>/expected.txt (standard output;
# the library's log goes to standard error). The migrations example runs twice on one file,
# as the app's first and next version.
SWIFT_EXAMPLES = Library Validations Threads
swift-examples: deps
	$(SWIFT) build $(SWIFTFLAGS) $(foreach e,$(SWIFT_EXAMPLES) Migrations,--product ActiveRecordExample$(e))
	@set -e; bin=$$($(SWIFT) build $(SWIFTFLAGS) --show-bin-path); work=$$(mktemp -d); trap 'rm -rf "$$work"' EXIT; \
	for example in $(SWIFT_EXAMPLES); do \
	  (cd "$$work" && "$$bin/ActiveRecordExample$$example") > "$$work/$$example.out"; \
	  diff -u Examples/$$example/expected.txt "$$work/$$example.out"; \
	done; \
	{ "$$bin/ActiveRecordExampleMigrations" "$$work/notes.sqlite" 1 && \
	  "$$bin/ActiveRecordExampleMigrations" "$$work/notes.sqlite" 2; } > "$$work/Migrations.out" 2> "$$work/Migrations.log"; \
	diff -u Examples/Migrations/expected.txt "$$work/Migrations.out"; \
	grep -q "migration 'rename Note.body to text' applied" "$$work/Migrations.log" \
	  || { echo "swift-examples: the migrations example did not log its step:" >&2; cat "$$work/Migrations.log" >&2; exit 1; }; \
	echo "swift-examples: $(SWIFT_EXAMPLES) Migrations match their expected output"

# The server example, its own package in Examples/Server (Hummingbird and SwiftNIO never reach
# the library's package graph), built in its own .build there. The first build fetches and builds
# Hummingbird and its dependencies: about 4 minutes on 2 cores.
SERVER_DIR = Examples/Server
SERVER_BIN = $(SERVER_DIR)/.build/debug/ActiveRecordServer
DATABASE  ?= ./server.sqlite
PORT      ?= 8080

server-build: deps
	cd $(SERVER_DIR) && $(SWIFT) build $(SWIFTFLAGS)

serve: server-build
	$(SERVER_BIN) --host 127.0.0.1 --port $(PORT) --database "$(DATABASE)"

# Every route driven over HTTP, bad input included, on a temporary SQLite file and then on a
# throwaway PostgreSQL server. The script starts the server on a free port and always stops it.
test-server: server-build
	python3 scripts/test-server.py $(SERVER_BIN)
	scripts/with-postgres.sh sh -c 'python3 scripts/test-server.py "$$0" --database "$$AR_TEST_POSTGRES_URL"' $(SERVER_BIN)

# Each configuration is built once: debug first (swift build --build-tests, on both cores), which
# every later step and the docs reuse (the same flags: nothing rebuilds); then release, by
# package-graph (a user's package from a tagged clone, in release with make install's flags;
# test-install's checks run on its library), beside test-debug's tests and checks (make -j2): the
# tests mostly wait on their servers and sleeps, and the release build runs one compile job at a
# time (--jobs=1), so that the tests keep a core (some measure how fast a local server answers).
# package-graph prints its builds' output only when they fail. Once it is done, test-debug's
# sub-makes may run two of their targets at a time (make's job slots). A failing lane is named at
# the end.
test: deps
	$(SWIFT) build --build-tests $(SWIFTFLAGS)
	@rm -f .build/failed-lanes
	@$(MAKE) --no-print-directory -j2 test-lane-test-debug test-lane-package-graph PACKAGE_GRAPH_JOBS=--jobs=1 \
	  || { echo "make test: FAILED in $$(cat .build/failed-lanes 2>/dev/null | xargs) (the two lanes' output is interleaved above: search for '***', 'error' or '✘')" >&2; exit 1; }
	@echo "make test: every check passed"

# A lane of make test: the target, with its name noted when it fails (make test names it last).
test-lane-%:
	@$(MAKE) --no-print-directory $* || { mkdir -p .build && echo "$*" >> .build/failed-lanes; exit 1; }

test-debug: deps
	$(SWIFT) build --build-tests $(SWIFTFLAGS)
	$(MAKE) --no-print-directory check-doc-snippets
	$(MAKE) --no-print-directory lib
	scripts/with-postgres.sh $(MAKE) --no-print-directory test-engines
	$(MAKE) --no-print-directory check-header check-snippets check-seams swift-examples test-lib-replace test-cleanup test-run docs

# What runs on both engines: the Swift tests (each parameterised over SQLite and, when
# AR_TEST_POSTGRES names a server, PostgreSQL), the C examples and the C tests. make test
# runs it inside scripts/with-postgres.sh; alone, it runs on SQLite only.
test-engines:
	$(SWIFT) test --skip-build
	@if [ -n "$${AR_TEST_POSTGRES:-}" ]; then $(MAKE) --no-print-directory test-pgbouncer-run; fi
	$(MAKE) --no-print-directory c-examples c-test

# The library behind pgbouncer in transaction pooling mode (issue 34): a throwaway pgbouncer
# (pool_mode = transaction, fewer server connections than a client's pool) in front of the
# throwaway server (scripts/with-pgbouncer.sh), and the tests that need it
# (Tests/ActiveRecordTests/TransactionPoolingTests.swift). test-engines runs them on PostgreSQL.
test-pgbouncer: deps
	$(SWIFT) build --build-tests $(SWIFTFLAGS)
	$(MAKE) --no-print-directory test-pgbouncer-run

# Throwaway servers never outlive their run: scripts/with-postgres.sh and with-pgbouncer.sh killed
# with SIGKILL (no trap runs) still leave no server, pgbouncer or directory (their guard,
# scripts/guard.sh, cleans up). About 10 seconds.
.PHONY: test-cleanup
test-cleanup:
	scripts/test-cleanup.sh

test-pgbouncer-run:
	scripts/with-pgbouncer.sh $(SWIFT) test --skip-build --filter TransactionPoolingTests

# Every Swift test under the thread sanitizer, in its own build directory, on both engines.
# The library's locks are pthread mutexes, which the sanitizer sees (Sources/ARCore/Lock.swift
# says why not Synchronization.Mutex), so no suppression is needed. About 2 minutes from nothing.
test-tsan: deps lib
	$(SWIFT) build --build-tests --sanitize=thread --scratch-path .build-tsan $(SWIFTFLAGS)
	scripts/with-postgres.sh $(SWIFT) test --skip-build --sanitize=thread --scratch-path .build-tsan

# The topology tests (Tests/ActiveRecordTests/Topology*.swift), each suite on a throwaway primary +
# 2 streaming standbys of its own (scripts/with-topology.sh; scripts/topology-ctl.sh kills, promotes,
# delays): roles, then read-your-writes under injected lag (one suite after the other: each stops
# standbys); failover under 4 writer processes with synchronous replication; 8 processes through
# pgbouncer (transaction pooling) onto the primary and 2 standbys, with a failover. AR_TOPO_SUITE
# names the suite a topology is for (a failover would break the others' topology).
test-topologies: deps
	$(SWIFT) build --build-tests $(SWIFTFLAGS)
	AR_TOPO_SUITE=roles scripts/with-topology.sh --bouncer sh -c \
	  '$(SWIFT) test --skip-build --filter TopologyRolesTests && $(SWIFT) test --skip-build --filter ReplicaLagTests'
	AR_TOPO_SUITE=failover scripts/with-topology.sh --sync $(SWIFT) test --skip-build --filter TopologyFailoverTests
	AR_TOPO_SUITE=whole scripts/with-topology.sh --sync --bouncer $(SWIFT) test --skip-build --filter TopologyWholePictureTests

# A user's package depending on this one as the README says (scripts/test-package-graph.sh): a
# clone of the checkout tagged VERSION, the documentation's Package.swift blocks resolved against
# it, and Tests/PackageGraph (its own targets named Quickstart and CSQLite: target names are unique
# across a package graph) built from it by URL, `from: VERSION`, in release with make install's
# flags: a save and a fetch, timed and traced by the metrics and tracing backends it bootstraps;
# then test-install's checks on the libactiverecord.so it built (the release configuration, built
# once). And the library brings exactly its three packages into a user's graph.
PACKAGE_GRAPH_DEPENDENCIES = swift-distributed-tracing swift-log swift-metrics
package-graph: deps
	@dependencies=$$(env -u AR_DOCS $(SWIFT) package show-dependencies --format flatlist | sort | xargs); \
	  [ "$$dependencies" = "$(PACKAGE_GRAPH_DEPENDENCIES)" ] \
	  || { echo "package-graph: the library depends on '$$dependencies', expected '$(PACKAGE_GRAPH_DEPENDENCIES)'" >&2; exit 1; }
	SWIFT="$(SWIFT)" scripts/test-package-graph.sh $(VERSION_NUMBER) "$(SWIFT_RUNTIME_DIR)" $(INSTALL_FLAGS) $(PACKAGE_GRAPH_JOBS)

# Tests/Compile/*.swift must not compile (options that would do nothing, names that must not
# exist), each with its error.
check-snippets: deps
	$(SWIFT) build $(SWIFTFLAGS)
	python3 scripts/check-swift-snippets.py $$($(SWIFT) build $(SWIFTFLAGS) --show-bin-path)/Modules

# Every ```swift and ```c block of README.md and of the DocC articles compiles against the
# built modules and include/activerecord.h (scripts/check-doc-snippets.py says how fragments
# are compiled and which markers a block may carry; Tests/DocSnippets holds the pages' preludes).
check-doc-snippets: deps
	$(SWIFT) build $(SWIFTFLAGS)
	python3 scripts/check-doc-snippets.py $$($(SWIFT) build $(SWIFTFLAGS) --show-bin-path)/Modules

# Quoting, raw memory, error recognition and ARValidation's dependencies keep to their seams.
check-seams:
	bash scripts/check-seams.sh

# SwiftPM's incremental build of Benchmarks (a package depending on this one by path) misses source
# files added here since its last build: when the list of files under Sources/ changed, its build
# plan is dropped (release.yaml, build.db), so that the next build plans anew (the objects stay).
bench_plan = list=$$(find Sources -name '*.swift' | LC_ALL=C sort | cksum); \
  [ "$$(cat Benchmarks/.build/sources.cksum 2>/dev/null)" = "$$list" ] \
  || { rm -f Benchmarks/.build/release.yaml Benchmarks/.build/build.db; mkdir -p Benchmarks/.build; echo "$$list" > Benchmarks/.build/sources.cksum; }

# The PostgreSQL section runs on a throwaway local server (scripts/with-postgres.sh).
bench: deps
	@$(bench_plan)
	cd Benchmarks && $(SWIFT) build -c release --product ARBench $(SWIFTFLAGS)
	scripts/with-postgres.sh Benchmarks/.build/release/ARBench $(N)
	$(MAKE) --no-print-directory bench-c

# The predicate tokenizer, parser and renderer depend on nothing else (but the one
# quoting function), so the fuzz target compiles them directly: copies without their
# `import ARCore` line (the module they belong to), compiled as one module with the fuzz entry
# point. Crashes land in .build/fuzz/crash-*.
FUZZ_SECONDS ?= 600
FUZZ_SOURCES = Sources/ARQuery/PredicateSyntax.swift Sources/ARQuery/PredicateParser.swift \
               Sources/ARQuery/PredicateRenderer.swift Sources/ARCore/Identifier.swift Fuzz/PredicateFuzz.swift
fuzz:
	@rm -rf .build/fuzz/src && mkdir -p .build/fuzz/corpus .build/fuzz/src
	@for f in $(FUZZ_SOURCES); do sed '/^\(@_spi([A-Za-z]*) \)\{0,1\}import ARCore$$/d' $$f > .build/fuzz/src/$$(basename $$f); done
	@swiftc -sanitize=fuzzer,address -parse-as-library -package-name ARFuzz -O .build/fuzz/src/*.swift \
	  -o .build/fuzz/predicate-fuzz > .build/fuzz/build.log 2>&1 \
	  || { grep -v "Cannot export local symbol" .build/fuzz/build.log; exit 1; }
	cp Fuzz/seeds/* .build/fuzz/corpus/
	SWIFT_BACKTRACE=enable=no .build/fuzz/predicate-fuzz -max_total_time=$(FUZZ_SECONDS) -max_len=4096 \
	  -print_final_stats=1 -artifact_prefix=.build/fuzz/ .build/fuzz/corpus

# The C ABI. The library and the examples are built with the strict C flags.
C_DIR     = .build/c
C_LIB     = $(abspath $(C_DIR)/lib)
CFLAGS_C  = -std=c99 -Wall -Wextra -Werror -pedantic -Iinclude
LDFLAGS_C = -L$(C_LIB) -lactiverecord -Wl,-rpath,$(C_LIB)
SWIFT_HEADER = $$($(SWIFT) build $(SWIFTFLAGS) --show-bin-path)/ARCShim.build/include/ARCShim-Swift.h

# Copies file $(1) to $(2) as a new file renamed over the old one (rename(2) is atomic): a
# program running on the old library keeps it whole (cp would rewrite it in place, changing
# the code under the running program: a crash), and one starting finds the old or the new.
replace_file = cp $(1) $(2).new-$$$$ && mv -fT $(2).new-$$$$ $(2) || { rm -f $(2).new-$$$$; false; }

lib: deps
	$(SWIFT) build $(SWIFTFLAGS) --product activerecord
	@mkdir -p $(C_LIB)
	$(call replace_file,$$($(SWIFT) build $(SWIFTFLAGS) --show-bin-path)/libactiverecord.so,$(C_LIB)/libactiverecord.so)

# make lib run while a C program runs on the library: the program goes on, and the library is a
# new file (scripts/test-lib-replace.sh).
test-lib-replace: lib
	scripts/test-lib-replace.sh $(CC)

header: lib
	python3 scripts/generate-header.py $(SWIFT_HEADER) include/activerecord.h

# Fails when the committed header differs from a fresh generation.
check-header: lib
	@python3 scripts/generate-header.py $(SWIFT_HEADER) $(C_DIR)/activerecord.h
	@diff -u include/activerecord.h $(C_DIR)/activerecord.h \
	  || { echo "include/activerecord.h is stale: run 'make header' and commit it" >&2; exit 1; }
	@echo "include/activerecord.h matches the shim"

# The C examples and the C API tests (Examples/c, Tests/c). $(CC) (gcc unless set)
# builds them with the strict C flags; clang builds them as C99 too and g++ compiles the
# header as C++11. c-examples runs both examples (quickstart on a fresh file) and fails
# on any difference from Examples/c/*.expected; c-test runs Tests/c/test_api.c under
# valgrind: any memory error or leak fails (Tests/c/valgrind.supp explains what it hides).
ifeq ($(origin CC),default)
CC = gcc
endif
CLANG        ?= clang
CXX_HEADER   ?= g++
CFLAGS_CLANG  = -std=c99 -Wall -Wextra -Werror -pedantic -Iinclude
CXXFLAGS_C    = -std=c++11 -Wall -Wextra -Werror -pedantic -Iinclude
VALGRIND_C    = valgrind --num-callers=40 --leak-check=full --show-leak-kinds=definite,indirect,possible \
                --errors-for-leak-kinds=definite,indirect,possible --error-exitcode=1 \
                --suppressions=Tests/c/valgrind.supp

c-examples: lib
	@mkdir -p $(C_DIR)/examples
	$(CC) $(CFLAGS_C) Examples/c/quickstart.c -o $(C_DIR)/examples/quickstart $(LDFLAGS_C)
	$(CC) $(CFLAGS_C) Examples/c/library.c -o $(C_DIR)/examples/library $(LDFLAGS_C)
	$(CLANG) $(CFLAGS_CLANG) Examples/c/quickstart.c -o $(C_DIR)/examples/quickstart-clang $(LDFLAGS_C)
	$(CLANG) $(CFLAGS_CLANG) Examples/c/library.c -o $(C_DIR)/examples/library-clang $(LDFLAGS_C)
	$(CXX_HEADER) $(CXXFLAGS_C) Tests/c/header_cxx.cpp -o $(C_DIR)/examples/header_cxx $(LDFLAGS_C)
	$(C_DIR)/examples/header_cxx
	cd $(C_DIR)/examples && rm -f quickstart-c.sqlite quickstart-c.sqlite-wal quickstart-c.sqlite-shm \
	  && ./quickstart > quickstart.out
	diff -u Examples/c/quickstart.expected $(C_DIR)/examples/quickstart.out
	$(C_DIR)/examples/library > $(C_DIR)/examples/library.out
	diff -u Examples/c/library.expected $(C_DIR)/examples/library.out
	@echo "c-examples: quickstart and library match their .expected output"
	@if [ -n "$$AR_TEST_POSTGRES_URL" ]; then \
	  set -e; schema=c_examples_$$$$; \
	  psql "$$AR_TEST_POSTGRES" -qc "CREATE SCHEMA $$schema"; \
	  trap 'psql "$$AR_TEST_POSTGRES" -qc "SET client_min_messages = warning; DROP SCHEMA IF EXISTS $$schema CASCADE"' EXIT; \
	  url="$$AR_TEST_POSTGRES_URL&options=-csearch_path%3D$$schema"; \
	  $(C_DIR)/examples/quickstart "$$url" | tail -n +2 > $(C_DIR)/examples/quickstart-pg.out; \
	  tail -n +2 Examples/c/quickstart.expected | diff -u - $(C_DIR)/examples/quickstart-pg.out; \
	  $(C_DIR)/examples/library "$$url" > $(C_DIR)/examples/library-pg.out; \
	  diff -u Examples/c/library.expected $(C_DIR)/examples/library-pg.out; \
	  echo "c-examples: on PostgreSQL too (a postgresql:// URL to ar_open), the same output"; \
	fi

# The C tests make their PostgreSQL schemas through libpq (the library needs no header of it),
# and ask the process's SQLite for its memory statistics.
LIBPQ_FLAGS = $$(pkg-config --cflags --libs libpq) -lsqlite3

c-test: lib
	@mkdir -p $(C_DIR)/test
	$(CC) $(CFLAGS_C) -pthread Tests/c/test_api.c -o $(C_DIR)/test/test_api $(LDFLAGS_C) $(LIBPQ_FLAGS)
	$(CLANG) $(CFLAGS_CLANG) -pthread Tests/c/test_api.c -o $(C_DIR)/test/test_api-clang $(LDFLAGS_C) $(LIBPQ_FLAGS)
	rm -rf $(C_DIR)/test/scratch
	$(VALGRIND_C) $(C_DIR)/test/test_api $(C_DIR)/test/scratch

# The release library, for measuring the C API (make lib builds the debug one).
C_RELEASE_LIB = $(abspath $(C_DIR)/release/lib)

# Each workload's instructions per operation on both sides, counted with callgrind
# (scripts/bench-instructions.sh): a few minutes at the default 5,000 rows; with a throwaway
# PostgreSQL server (scripts/with-postgres.sh), the client side's on PostgreSQL too.
ROWS ?= 5000
.PHONY: bench-instructions
bench-instructions: deps bench-c-build
	@$(bench_plan)
	cd Benchmarks && $(SWIFT) build -c release --product ARBench $(SWIFTFLAGS)
	scripts/with-postgres.sh scripts/bench-instructions.sh Benchmarks/.build/release/ARBench $(ROWS) $(C_DIR)/bench-c

# The issue-33 service under load against its Fluent twin (scripts/bench-server.sh): builds both
# servers in release (the first Fluent build takes minutes), installs wrk if missing, runs each
# engine (PostgreSQL on a throwaway server) at 16, 64 and 256 connections, prints the table and
# writes it to Benchmarks/server-results.md. DURATION=10s, SEED=100 and the others: see the script.
# The PostgreSQL section in seconds with the library also behind a throwaway pgbouncer in
# transaction pooling mode (scripts/with-pgbouncer.sh), beside its default on the same server.
PG_N ?= 10000
.PHONY: bench-pgbouncer
bench-pgbouncer: deps
	@$(bench_plan)
	cd Benchmarks && $(SWIFT) build -c release --product ARBench $(SWIFTFLAGS)
	scripts/with-pgbouncer.sh sh -c 'AR_BENCH_POSTGRES="$$AR_TEST_PGBOUNCER_DIRECT" AR_BENCH_PGBOUNCER="$$AR_TEST_PGBOUNCER" \
	  Benchmarks/.build/release/ARBench postgres $(PG_N)'

# Issue 35, point 4: insertAll of BULK_N rows (default 10,000) against raw libpq row by row and
# in pipeline mode, and fetch() against the cursor at 100,000 and 1,000,000 rows (peak RSS in a
# child process), on a throwaway PostgreSQL (Benchmarks/Sources/ARBench/PostgresBulk.swift).
BULK_N ?= 10000
.PHONY: bench-bulk
bench-bulk: deps
	@$(bench_plan)
	cd Benchmarks && $(SWIFT) build -c release --product ARBench $(SWIFTFLAGS)
	scripts/with-postgres.sh Benchmarks/.build/release/ARBench postgres-bulk $(BULK_N)

.PHONY: bench-server
bench-server: deps
	SWIFT="$(SWIFT)" scripts/bench-server.sh

# Issue 35's peers (scripts/bench-peers.sh): the same PostgreSQL work through binary raw libpq, the
# library, raw PostgresNIO and Fluent (Benchmarks/Peers, its own package: the first release build
# takes minutes), on a throwaway server; instructions per operation (callgrind, all threads) and
# wall-clock medians, a verdict per row; the table also in Benchmarks/peers-results.md.
.PHONY: bench-peers
bench-peers: deps
	SWIFT="$(SWIFT)" scripts/bench-peers.sh

.PHONY: lib-release bench-c bench-c-build
lib-release: deps
	$(SWIFT) build -c release --product activerecord $(SWIFTFLAGS)
	@mkdir -p $(C_RELEASE_LIB)
	$(call replace_file,$$($(SWIFT) build -c release $(SWIFTFLAGS) --show-bin-path)/libactiverecord.so,$(C_RELEASE_LIB)/libactiverecord.so)

# Benchmarks/c/bench.c: insert and fetch N records (100,000 by default) through the C API
# and through raw sqlite3, best of 3 rounds per side.
bench-c: bench-c-build
	$(C_DIR)/bench-c $(N)

bench-c-build: lib-release
	gcc -O2 $(CFLAGS_C) Benchmarks/c/bench.c -o $(C_DIR)/bench-c \
	  -L$(C_RELEASE_LIB) -lactiverecord -Wl,-rpath,$(C_RELEASE_LIB) -lsqlite3

# The documentation: every Swift module's symbols and the umbrella's articles, combined. The
# docc plugin is a dependency only while AR_DOCS is set (Package.swift), so it never reaches users.
# docc writes the archive for static hosting (an index.html per page, the pages' JSON under data/):
# any static file server shows it. The plugin merges the modules in the order they were built; they
# are merged again in DOC_TARGETS' order, the sidebar's (the umbrella, whose page holds the
# articles, first). The archive's own root page is the reader app, which has no page for "/": a
# redirect replaces it, to the ActiveRecord page (the articles, then the modules' reference).
DOC_TARGETS = ActiveRecord ActiveRecordPostgreSQL ARCore ARQuery ARRelations ARValidation ARMigrations ARSQLite
DOC_ARCHIVE = .build/docs/ActiveRecord.doccarchive
DOC_PARTS   = .build/plugins/Swift-DocC/outputs/intermediates
docs: deps
	rm -rf .build/docs $(DOC_PARTS) && mkdir -p .build/docs
	AR_DOCS=1 $(SWIFT) package $(SWIFTFLAGS) --disable-sandbox --allow-writing-to-directory .build/docs generate-documentation \
	  --enable-experimental-combined-documentation $(foreach t,$(DOC_TARGETS),--target $(t)) \
	  --warnings-as-errors --output-path $(DOC_ARCHIVE)
	rm -rf $(DOC_ARCHIVE) && docc merge $(foreach t,$(DOC_TARGETS),$(DOC_PARTS)/$(t).doccarchive) --output-path $(DOC_ARCHIVE) \
	  --synthesized-landing-page-name swift-activerecord --synthesized-landing-page-kind Package
	@# check what was made (the plugin exits 0 even when its own merge fails)
	@for page in activerecord activerecord/gettingstarted activerecord/migratingfromiactiverecord arcore/model \
	    activerecordpostgresql activerecordpostgresql/arcore/databaselocation \
	    'activerecordpostgresql/arcore/databaselocation/postgres(_:replicas:maximumconnections:connectionwait:connecttimeout:transactionpooling:)'; do \
	  [ -f "$(DOC_ARCHIVE)/data/documentation/$$page.json" ] && [ -f "$(DOC_ARCHIVE)/documentation/$$page/index.html" ] \
	    || { echo "docs: the archive lacks the page documentation/$$page" >&2; exit 1; }; \
	done
	@printf '%s\n' '<!doctype html><meta charset="utf-8"><title>swift-activerecord</title>' \
	  '<meta http-equiv="refresh" content="0; url=documentation/activerecord/">' \
	  '<p><a href="documentation/activerecord/">The swift-activerecord documentation</a></p>' > $(DOC_ARCHIVE)/index.html
	@echo "docs: $(DOC_ARCHIVE); to read it, serve it as static files:"
	@echo "  python3 -m http.server --directory $(DOC_ARCHIVE) 8000"
	@echo "  then open http://localhost:8000/ (it leads to http://localhost:8000/documentation/activerecord)"

# A release: nothing uncommitted, the header fresh, the docs and every test passing, and the
# version the same in VERSION, ar_version() and the CHANGELOG's newest release section.
release-check:
	@[ -z "$$(git status --porcelain)" ] || { echo "release-check: the tree has uncommitted changes:" >&2; git status --short >&2; exit 1; }
	$(MAKE) --no-print-directory test   # the header check and the docs included
	@version=$(VERSION_NUMBER); \
	grep -q "private let version: StaticString = \"$$version\"" Sources/ARCShim/CDatabase.swift \
	  || { echo "release-check: ar_version() is not $$version (Sources/ARCShim/CDatabase.swift)" >&2; exit 1; }; \
	printf '#include <stdio.h>\n#include "activerecord.h"\nint main(void) { puts(ar_version()); return 0; }\n' > $(C_DIR)/version.c; \
	$(CC) -Iinclude $(C_DIR)/version.c -o $(C_DIR)/version $(LDFLAGS_C) && [ "$$($(C_DIR)/version)" = "$$version" ] \
	  || { echo "release-check: the built library's ar_version() is not $$version" >&2; exit 1; }; \
	case "$$(grep -m1 -E '^## [0-9]' CHANGELOG.md)" in "## $$version "*|"## $$version") ;; *) false;; esac \
	  || { echo "release-check: CHANGELOG.md's newest release section is not '## $$version'" >&2; exit 1; }; \
	echo "release-check: $$version is ready (clean tree, fresh header, docs, tests; VERSION, ar_version() and CHANGELOG agree)"

# Installing: the release library built for it (its own build folder, .build-install): with
# a SONAME, and finding the Swift runtime beside it ($$ORIGIN/activerecord) instead of in the
# toolchain. VERSION holds the version; ar_version() and the CHANGELOG agree (release-check).
VERSION_NUMBER := $(shell cat VERSION)
PREFIX  ?= /usr/local
INSTALL_FLAGS = -c release $(SWIFTFLAGS) -Xswiftc -no-toolchain-stdlib-rpath \
  -Xlinker -soname -Xlinker libactiverecord.so.$(firstword $(subst ., ,$(VERSION_NUMBER))) -Xlinker -rpath -Xlinker '$$ORIGIN/activerecord'
INSTALL_BUILD = $(SWIFT) build --product activerecord --scratch-path .build-install $(INSTALL_FLAGS)

INSTALL_LIBRARY = .build-install/release/libactiverecord.so
# The runtime library path of the toolchain $(SWIFT) is (not of whatever swift PATH finds).
SWIFT_RUNTIME_DIR = $$($(SWIFT) -print-target-info | python3 -c 'import json, sys; print(json.load(sys.stdin)["paths"]["runtimeLibraryPaths"][0])')

install-build: deps
	$(INSTALL_BUILD)

# Built only when a source changed since (a file target), so that `make install-build` as
# yourself and then `sudo make install` builds nothing as root.
$(INSTALL_LIBRARY): Package.swift $(shell find Sources -name '*.swift' -o -name '*.h' -o -name '*.modulemap')
	$(MAKE) --no-print-directory install-build

install: $(INSTALL_LIBRARY)
	scripts/install.sh install $(INSTALL_LIBRARY) include/activerecord.h "$(PREFIX)" $(VERSION_NUMBER) "$(SWIFT_RUNTIME_DIR)"

uninstall:
	scripts/install.sh uninstall "$(PREFIX)"

test-install: install-build
	scripts/test-install.sh $(INSTALL_LIBRARY) $(VERSION_NUMBER) "$(SWIFT_RUNTIME_DIR)"

clean:
	rm -rf .build .build-install .build-tsan .build-static Tests/PackageGraph/.build Benchmarks/.build Examples/Server/.build Benchmarks/FluentServer/.build
