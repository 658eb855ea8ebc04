# SPDX-License-Identifier: MIT
# The front door over meson. `make run` and `make check` are the README's first two commands.
#
#   make deps    install the missing Debian packages (root)
#   make         build (debug, ASan + UBSan) into build/
#   make run     the main job: show a resolved policy
#   make check   build and run every test and lint; ends with "N passed, N failed, N skipped"

BUILD      ?= build
MESON_OPTS ?= -Dbuildtype=debug -Db_sanitize=address,undefined -Dwerror=true

.PHONY: all deps run check clean

all: deps $(BUILD)/build.ninja
	ninja -C $(BUILD)

deps:
	@scripts/install-deps.sh

$(BUILD)/build.ninja:
	meson setup $(BUILD) $(MESON_OPTS)

run: all
	$(BUILD)/dsh-sandbox policy --mode workspace-write --workspace "$(CURDIR)"
	$(BUILD)/dsh-sandbox policy --mode read-only --workspace "$(CURDIR)" --json

check: all
	tests/check.sh $(BUILD)

clean:
	rm -rf $(BUILD) build-clang
