# SPDX-License-Identifier: MIT
# The front door over meson. `make run` and `make check` are the README's first two commands.
#
#   make deps    install the missing Debian packages (root)
#   make         build (debug, ASan + UBSan) into build/
#   make run     the main job: a confined command whose write lands, then one that is denied
#   make check   build and run every test and lint; ends with "N passed, N failed, N skipped"
#   make install     a release build into $(RELEASE), installed under $(PREFIX) (and $(DESTDIR))
#   make uninstall   removes what the last `make install` put there

BUILD      ?= build
MESON_OPTS ?= -Dbuildtype=debug -Db_sanitize=address,undefined -Dwerror=true

PREFIX     ?= /usr/local
DESTDIR    ?=
RELEASE    ?= build-release

.PHONY: all deps run check clean install uninstall

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

install:
	@[ -f $(RELEASE)/build.ninja ] || \
		meson setup $(RELEASE) -Dbuildtype=release -Dtests=false --prefix="$(PREFIX)"
	meson configure $(RELEASE) --prefix="$(PREFIX)"
	meson install -C $(RELEASE) --destdir "$(DESTDIR)"

# meson's uninstall removes the files its install log names (DESTDIR included).
uninstall:
	ninja -C $(RELEASE) uninstall

clean:
	rm -rf $(BUILD) build-clang $(RELEASE)
