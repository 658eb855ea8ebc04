# SPDX-License-Identifier: MIT
# The front door over meson. `make run` and `make check` are the README's first two commands.
#
#   make deps    install the missing Debian packages (root)
#   make         build (debug, ASan + UBSan) into build/
#   make run     the main job: a confined command whose write lands, then one that is denied
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

DEMO = $(CURDIR)/$(BUILD)/demo

run: all
	@mkdir -p "$(DEMO)"
	$(BUILD)/dsh-sandbox probe
	$(BUILD)/dsh-sandbox exec --mode workspace-write --workspace "$(DEMO)" -- \
		sh -c 'echo landed > "$(DEMO)/inside.txt" && cat "$(DEMO)/inside.txt"'
	-$(BUILD)/dsh-sandbox exec --mode workspace-write --workspace "$(DEMO)" -- \
		sh -c 'echo escaped > /etc/dsh-sandbox-demo'
	$(BUILD)/dsh-sandbox bash --mode workspace-write --workspace "$(DEMO)" \
		'echo landed > inside.txt && cat inside.txt; echo escaped > /etc/dsh-sandbox-demo'
	@echo

check: all
	tests/check.sh $(BUILD)

clean:
	rm -rf $(BUILD) build-clang
