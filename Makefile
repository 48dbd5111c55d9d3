# musicd build, test and demo entry points.
#   make        build build/musicd and build/musicd-import
#   make test   install what is missing, build, run every test (the include-graph check, unit,
#               fuzz, integration, and integration again under ASan/UBSan)
#   make tools  build/tools/slowfs, the slow and hung FUSE filesystem of the storage tests
#   make layers server/'s include graph: layers only include layers below them, no cycle,
#               event2/http_struct.h in one module of wire/
#   make demo   install what the demo needs, build, start FerretDB, make a sample library, run
#               musicd (DEMO_PORT, DEMO_METRICS_PORT, DEMO_DB_PORT, DEMO_MONGODB_URI:
#               scripts/setup/demo)
#   make deb    the Debian package: build/deb/musicd_$(VERSION)_<arch>.deb
#               (scripts/packaging/build-deb)
#   make bench  musicd against nginx, every workload (scripts/benchmarks/bench; docs/BENCHMARKS.md)
# scripts/ holds what these run, one folder per purpose: setup/, tests/, benchmarks/, packaging/.
#   make install / make uninstall   (GNU conventions: PREFIX, DESTDIR, bindir, sbindir, ...; below)
CC       ?= cc
PKGS     := libevent libevent_pthreads libmongoc-1.0 libsystemd libcrypto
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
WARN     := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wformat=2
BASE_CFLAGS := -std=gnu11 -D_GNU_SOURCE -pthread $(WARN) $(PKG_CFLAGS) -Iserver
CFLAGS   ?= -O2 -g
# CPPFLAGS and LDFLAGS (empty unless given: dpkg-buildflags' hardening for the Debian package) go
# into build/musicd and build/musicd-import.
SAN_FLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
VERSION  := $(shell cat VERSION)

# server/ is one folder per layer (server/README.md); a module is server/LAYER/NAME.c + .h.
SERVER_SRCS := $(wildcard server/*/*.c)
SERVER_HDRS := $(wildcard server/*/*.h)
# Everything but main.c: the library that unit tests link against.
LIB_SRCS := $(filter-out server/ops/main.c,$(SERVER_SRCS))
UNIT_SRCS := $(wildcard tests/unit/test_*.c)

OBJ      := build/obj
ASAN_OBJ := build/asan/obj

all: build/musicd build/musicd-import

build/musicd: $(SERVER_SRCS:server/%.c=$(OBJ)/%.o)
	$(CC) $(CFLAGS) $(LDFLAGS) -pthread -o $@ $^ $(PKG_LIBS)

$(OBJ)/%.o: server/%.c $(SERVER_HDRS) VERSION Makefile
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(CPPFLAGS) $(CFLAGS) -DMUSICD_VERSION='"$(VERSION)"' $(MAIN_DEFINES) -c -o $@ $<

# The configuration file musicd reads without --config: the one make install puts in place,
# $(sysconfdir)/musicd/musicd.conf (sysconfdir and the install's other directories are below).
# Only ops/main.c and import/main.c are compiled with it, and again whenever it changes: the
# stamp file holds the path and is rewritten only then. make install links a musicd and a
# musicd-import of their own with its sysconfdir's (build/install/), so that an install for
# another PREFIX never relinks build/musicd or build/musicd-import.
CONFIG_FILE = $(sysconfdir)/musicd/musicd.conf
$(OBJ)/ops/main.o $(ASAN_OBJ)/ops/main.o $(OBJ)/import/main.o $(ASAN_OBJ)/import/main.o: \
		build/config-file.stamp
$(OBJ)/ops/main.o $(ASAN_OBJ)/ops/main.o $(OBJ)/import/main.o $(ASAN_OBJ)/import/main.o: \
		MAIN_DEFINES = -DMUSICD_CONFIG_FILE='"$(CONFIG_FILE)"'

build/config-file.stamp build/install/config-file.stamp: FORCE
	@mkdir -p $(@D)
	@[ "$$(cat $@ 2>/dev/null)" = '$(CONFIG_FILE)' ] || echo '$(CONFIG_FILE)' >$@

INSTALL_OBJ := build/install/obj
build/install/musicd: $(filter-out $(OBJ)/ops/main.o,$(SERVER_SRCS:server/%.c=$(OBJ)/%.o)) \
		$(INSTALL_OBJ)/ops/main.o
	$(CC) $(CFLAGS) $(LDFLAGS) -pthread -o $@ $^ $(PKG_LIBS)

$(INSTALL_OBJ)/ops/main.o: server/ops/main.c $(SERVER_HDRS) VERSION Makefile \
		build/install/config-file.stamp
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(CPPFLAGS) $(CFLAGS) -DMUSICD_VERSION='"$(VERSION)"' \
		-DMUSICD_CONFIG_FILE='"$(CONFIG_FILE)"' -c -o $@ $<

asan: build/asan/musicd build/asan/musicd-import

build/asan/musicd: $(SERVER_SRCS:server/%.c=$(ASAN_OBJ)/%.o)
	$(CC) $(SAN_FLAGS) -pthread -o $@ $^ $(PKG_LIBS)

$(ASAN_OBJ)/%.o: server/%.c $(SERVER_HDRS) VERSION Makefile
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(SAN_FLAGS) -DMUSICD_VERSION='"$(VERSION)"' $(MAIN_DEFINES) -c -o $@ $<

# musicd-import: import/*.c plus the server modules it shares (config and the flags reader,
# content types, containment), and import/tags.cpp: TagLib's C++ interface (its C binding in
# bookworm has neither the property map nor durations in milliseconds).
CXX      ?= c++
IMPORT_PKGS := libmongoc-1.0 taglib libcrypto
# -Iimport first: TagLib's include directory has an id3v2.h of its own.
IMPORT_CFLAGS := -Iimport $(shell pkg-config --cflags $(IMPORT_PKGS) 2>/dev/null)
IMPORT_LIBS := $(shell pkg-config --libs $(IMPORT_PKGS) 2>/dev/null) -lstdc++
IMPORT_CXXFLAGS := -std=gnu++17 -D_GNU_SOURCE -pthread -Wall -Wextra -Werror -Wshadow -Wformat=2 \
	$(shell pkg-config --cflags libmongoc-1.0 2>/dev/null) -Iserver $(IMPORT_CFLAGS)
IMPORT_SRCS := $(wildcard import/*.c)
IMPORT_LIB_SRCS := $(filter-out import/main.c,$(IMPORT_SRCS))
IMPORT_SHARED := $(addprefix server/,config/config.c config/option_table.c config/config_sources.c config/config_check.c base/flags.c base/nearest_name.c http/cors.c http/response_head.c base/log.c base/log_file.c base/log_writer.c base/clock.c \
	http/proxy_trust.c http/content_type.c media/containment.c \
	http/url_token.c http/route.c http/chars.c config/url_keys.c)
IMPORT_OBJS := $(IMPORT_SRCS:import/%.c=$(OBJ)/import/%.o) $(OBJ)/import/tags.o \
	$(IMPORT_SHARED:server/%.c=$(OBJ)/%.o)
IMPORT_ASAN_LIB_OBJS := $(IMPORT_LIB_SRCS:import/%.c=$(ASAN_OBJ)/import/%.o) $(ASAN_OBJ)/import/tags.o \
	$(IMPORT_SHARED:server/%.c=$(ASAN_OBJ)/%.o)

build/musicd-import: $(IMPORT_OBJS)
	$(CC) $(CFLAGS) $(LDFLAGS) -pthread -o $@ $^ $(IMPORT_LIBS)

build/asan/musicd-import: $(ASAN_OBJ)/import/main.o $(IMPORT_ASAN_LIB_OBJS)
	$(CC) $(SAN_FLAGS) -pthread -o $@ $^ $(IMPORT_LIBS)

# musicd-import reads the same file without --config: its install links its own main.o too.
build/install/musicd-import: $(filter-out $(OBJ)/import/main.o,$(IMPORT_OBJS)) \
		$(INSTALL_OBJ)/import/main.o
	$(CC) $(CFLAGS) $(LDFLAGS) -pthread -o $@ $^ $(IMPORT_LIBS)

$(INSTALL_OBJ)/import/main.o: import/main.c $(wildcard import/*.h) $(SERVER_HDRS) VERSION \
		Makefile build/install/config-file.stamp
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(IMPORT_CFLAGS) $(CPPFLAGS) $(CFLAGS) -DMUSICD_VERSION='"$(VERSION)"' \
		-DMUSICD_CONFIG_FILE='"$(CONFIG_FILE)"' -c -o $@ $<

$(OBJ)/import/%.o: import/%.c $(wildcard import/*.h) $(SERVER_HDRS) VERSION Makefile | $(OBJ)/import
	$(CC) $(BASE_CFLAGS) $(IMPORT_CFLAGS) $(CPPFLAGS) $(CFLAGS) -DMUSICD_VERSION='"$(VERSION)"' $(MAIN_DEFINES) -c -o $@ $<

$(ASAN_OBJ)/import/%.o: import/%.c $(wildcard import/*.h) $(SERVER_HDRS) VERSION Makefile | $(ASAN_OBJ)/import
	$(CC) $(BASE_CFLAGS) $(IMPORT_CFLAGS) $(SAN_FLAGS) -DMUSICD_VERSION='"$(VERSION)"' $(MAIN_DEFINES) -c -o $@ $<

$(OBJ)/import/%.o: import/%.cpp $(wildcard import/*.h) Makefile | $(OBJ)/import
	$(CXX) $(IMPORT_CXXFLAGS) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(ASAN_OBJ)/import/%.o: import/%.cpp $(wildcard import/*.h) Makefile | $(ASAN_OBJ)/import
	$(CXX) $(IMPORT_CXXFLAGS) $(SAN_FLAGS) -c -o $@ $<

$(OBJ)/import $(ASAN_OBJ)/import:
	mkdir -p $@

# Unit tests of musicd-import's modules link its sanitized objects (all but main).
build/tests/test_import_%: tests/unit/test_import_%.c $(IMPORT_ASAN_LIB_OBJS) | build/tests
	$(CC) $(BASE_CFLAGS) $(IMPORT_CFLAGS) $(SAN_FLAGS) -o $@ $^ $(IMPORT_LIBS) -lcmocka

# Unit tests: each tests/unit/test_X.c links the sanitized server objects (all but main).
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=build/tests/%)
unit-build: $(UNIT_BINS)

build/tests/%: tests/unit/%.c $(LIB_SRCS:server/%.c=$(ASAN_OBJ)/%.o) | build/tests
	$(CC) $(BASE_CFLAGS) $(SAN_FLAGS) -o $@ $^ $(PKG_LIBS) -lcmocka

# The caches' unit tests, and the signed-URL check's (workers share one set of prepared keys),
# again under ThreadSanitizer (their code is the concurrent part of the tree):
# build/tests/test_X_tsan links the server objects built with -fsanitize=thread.
TSAN_FLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=thread
TSAN_OBJ := build/tsan/obj
TSAN_TESTS := test_lru test_lookup_cache test_file_cache test_settings test_url_token test_address_counts test_task_pool test_disk_io test_log_writer
TSAN_BINS := $(TSAN_TESTS:%=build/tests/%_tsan)
unit-build: $(TSAN_BINS)

build/tests/%_tsan: tests/unit/%.c $(LIB_SRCS:server/%.c=$(TSAN_OBJ)/%.o) | build/tests
	$(CC) $(BASE_CFLAGS) $(TSAN_FLAGS) -o $@ $^ $(PKG_LIBS) -lcmocka

$(TSAN_OBJ)/%.o: server/%.c $(SERVER_HDRS) VERSION Makefile
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(TSAN_FLAGS) -DMUSICD_VERSION='"$(VERSION)"' -c -o $@ $<

# Fuzz targets (libFuzzer, clang) call the pure modules directly.
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS := $(FUZZ_SRCS:tests/fuzz/%.c=build/fuzz/%)
PURE_SRCS := $(addprefix server/,http/range.c http/cond.c http/etag.c http/http_date.c http/proxy_trust.c \
	http/route.c media/containment.c http/content_type.c http/offload.c \
	config/config.c config/option_table.c config/config_sources.c config/config_check.c base/flags.c base/nearest_name.c http/cors.c http/disposition.c base/log.c base/log_file.c base/log_writer.c base/clock.c \
	http/multipart.c \
	http/framing.c http/response_head.c http/request_scan.c http/chars.c \
	http/url_token.c http/url_redact.c config/url_keys.c)
# The signed-URL check's HMAC is libcrypto's.
PURE_LIBS := $(shell pkg-config --libs libcrypto 2>/dev/null)
FUZZ_FLAGS := -std=gnu11 -D_GNU_SOURCE -Iserver -g -O1 -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined
fuzz-build: $(FUZZ_BINS)

# musicd-import's raw tag readers, fuzzed on their own (pure, no TagLib; libbson checks UTF-8).
IMPORT_FUZZ_SRCS := $(addprefix import/,id3v2.c vorbis_comment.c ogg.c mpeg.c flac.c mp4.c)
build/fuzz/fuzz_import_tags: tests/fuzz/fuzz_import_tags.c $(IMPORT_FUZZ_SRCS) $(wildcard import/*.h) | build/fuzz
	clang $(FUZZ_FLAGS) -Iimport $(shell pkg-config --cflags libbson-1.0) -o $@ $< \
		$(IMPORT_FUZZ_SRCS) $(shell pkg-config --libs libbson-1.0)

build/fuzz/%: tests/fuzz/%.c $(PURE_SRCS) $(SERVER_HDRS) | build/fuzz
	clang $(FUZZ_FLAGS) -o $@ $< $(PURE_SRCS) $(PURE_LIBS)

fuzz: fuzz-build
	@scripts/tests/run-fuzzers $(FUZZ_BINS)

$(OBJ) $(ASAN_OBJ) $(TSAN_OBJ) build/tests build/fuzz build/tools:
	mkdir -p $@

# Test tools built here (scripts/benchmarks/bench and soak build their clients themselves):
# build/tools/slowfs, the slow and hung FUSE filesystem of the storage tests and of
# scripts/benchmarks/bench's slow section (tests/tools/slowfs.c; libfuse3-dev,
# scripts/setup/install-deps test).
TOOLS := build/tools/slowfs
tools: $(TOOLS)

build/tools/slowfs: tests/tools/slowfs.c Makefile | build/tools
	$(CC) -std=gnu11 -O2 -g $(WARN) -pthread $(shell pkg-config --cflags fuse3 2>/dev/null) -o $@ $< \
		$(shell pkg-config --libs fuse3 2>/dev/null)

# What each target installs (scripts/setup/install-deps): demo, the build and the demo's needs;
# test, those and the test toolchain; deb, the build's and the packaging tools.
deps:
	@scripts/setup/install-deps test

demo-deps:
	@scripts/setup/install-deps demo

ferretdb:
	@scripts/setup/ferretdb build

unit: unit-build
	@scripts/tests/run-unit-tests $(UNIT_BINS) $(TSAN_BINS)

layers:
	@/usr/bin/python3 tests/check_layers.py server

# make test builds on every CPU (JOBS): the four builds of the tree are independent objects.
JOBS ?= $(shell nproc 2>/dev/null || echo 1)

test: deps
	@$(MAKE) --no-print-directory -s -j$(JOBS) all asan unit-build fuzz-build tools
	@scripts/setup/ferretdb build
	@scripts/setup/ferretdb build-unpatched var/bin/ferretdb-unpatched
	@scripts/tests/run-tests

demo: demo-deps
	@$(MAKE) --no-print-directory -s all
	@scripts/setup/ferretdb build
	@scripts/setup/demo

# The Debian package: build/deb/musicd_$(VERSION)_<arch>.deb (scripts/packaging/build-deb,
# docs/operating.md).
deb:
	@scripts/setup/install-deps deb
	@DEBDIR=$(DEBDIR) scripts/packaging/build-deb

bench: deps
	@$(MAKE) --no-print-directory -s all
	@scripts/benchmarks/bench

clean:
	rm -rf build

# -- make install / make uninstall -----------------------------------------------------------
# GNU directory variables, each overridable: make install PREFIX=/usr DESTDIR=/tmp/stage.
# sysconfdir is $(prefix)/etc as GNU says, except for PREFIX=/usr, whose configuration belongs
# in /etc (FHS): /usr/local -> /usr/local/etc, /opt/x -> /opt/x/etc, /usr -> /etc.
# Files under sysconfdir (musicd.conf, the logrotate file) are the operator's: install never
# overwrites one, uninstall removes one only if it is still the installed file.
# The Debian package (make deb) is this install with PREFIX=/usr and SYSTEMDUNITDIR=/lib/systemd/system.
PREFIX         ?= /usr/local
prefix         ?= $(PREFIX)
exec_prefix    ?= $(prefix)
bindir         ?= $(exec_prefix)/bin
sbindir        ?= $(exec_prefix)/sbin
datarootdir    ?= $(prefix)/share
mandir         ?= $(datarootdir)/man
man1dir        ?= $(mandir)/man1
man8dir        ?= $(mandir)/man8
docdir         ?= $(datarootdir)/doc/musicd
pkgdatadir     ?= $(datarootdir)/musicd
ifeq ($(patsubst %/,%,$(prefix)),/usr)
SYSCONFDIR     ?= /etc
else
SYSCONFDIR     ?= $(prefix)/etc
endif
sysconfdir     ?= $(SYSCONFDIR)
SYSTEMDUNITDIR ?= $(prefix)/lib/systemd/system
TMPFILESDIR    ?= $(prefix)/lib/tmpfiles.d
SYSUSERSDIR    ?= $(prefix)/lib/sysusers.d
LOGROTATEDIR   ?= $(sysconfdir)/logrotate.d
INSTALL        ?= install
INSTALL_PROGRAM ?= $(INSTALL) -m 755
INSTALL_DATA   ?= $(INSTALL) -m 644

CONF_INSTALLED := $(DESTDIR)$(sysconfdir)/musicd/musicd.conf
# The nginx sites and the VCLs, with the files of the VCLs' opt-in blocks beside them (a VCL
# includes them from its own directory): examples to copy and adapt (docs/deployment.md).
EXAMPLES := config/nginx-musicd.conf config/nginx-musicd-offload.conf \
	config/nginx-musicd-cluster.conf config/varnish-musicd.vcl config/varnish-musicd-cluster.vcl \
	config/varnish-musicd-request-limit.vcl config/varnish-musicd-url-signing.vcl \
	config/varnish-musicd-cors.vcl
EXAMPLES_INSTALLED := $(DESTDIR)$(docdir)/examples
LOGROTATE_INSTALLED := $(DESTDIR)$(LOGROTATEDIR)/musicd
# The repository's unit and man page are written for PREFIX=/usr: their paths are rewritten to
# where this install puts things. The configuration gets the installed layout's lines (its
# header lists them): the media root, the logs in /var/log/musicd (where the logrotate file
# looks), the user of the unit. Each rewrite is checked to have happened.
UNIT_SED := -e 's|^ExecStart=/usr/sbin/musicd --config /etc/musicd/musicd\.conf$$|ExecStart=$(sbindir)/musicd --config $(sysconfdir)/musicd/musicd.conf|'
TEMPLATE_SED := -e 's|^Description=musicd, |Description=musicd (instance %i), |'
MAN_SED := -e 's|/etc/musicd/|$(sysconfdir)/musicd/|g' -e 's|/usr/sbin/musicd|$(sbindir)/musicd|g' \
	-e 's|/usr/share/musicd/|$(pkgdatadir)/|g' \
	-e 's|/usr/lib/systemd/system/musicd\.service|$(SYSTEMDUNITDIR)/musicd.service|g' \
	-e 's|/etc/logrotate\.d/musicd|$(LOGROTATEDIR)/musicd|g'
CONF_LINES := 'media-root = /var/lib/musicd/music' 'access-log = /var/log/musicd/access.log' \
	'error-log = /var/log/musicd/error.log' 'user = musicd' 'pid-file = /run/musicd/musicd.pid'
# The logrotate file signals only a process running $(sbindir)/musicd.
LOGROTATE_SED := -e 's| --exec /usr/sbin/musicd$$| --exec $(sbindir)/musicd|'
LOGROTATE_LINE := start-stop-daemon --stop --signal USR1 --pidfile /run/musicd/musicd.pid --exec $(sbindir)/musicd
CONF_SED := -e 's|^\#media-root = /srv/music$$|media-root = /var/lib/musicd/music|' \
	-e 's|^access-log = off$$|access-log = /var/log/musicd/access.log|' \
	-e 's|^error-log = stderr$$|error-log = /var/log/musicd/error.log|' \
	-e 's|^\#user = musicd$$|user = musicd|' \
	-e 's|^pid-file = off$$|pid-file = /run/musicd/musicd.pid|'

# Where the system reads each kind of file: an install elsewhere says so (make install
# PREFIX=/opt/x: systemd, systemd-tmpfiles and logrotate would not see it).
SYSTEMD_READS := /etc/systemd/system /usr/local/lib/systemd/system /usr/lib/systemd/system /lib/systemd/system
TMPFILES_READS := /etc/tmpfiles.d /usr/local/lib/tmpfiles.d /usr/lib/tmpfiles.d
SYSUSERS_READS := /etc/sysusers.d /usr/local/lib/sysusers.d /usr/lib/sysusers.d
LOGROTATE_READS := /etc/logrotate.d
# $(call unread,DIR,READS,TOOL,FILE,VARIABLE): the note, or nothing.
unread = $(if $(filter $(patsubst %/,%,$(1)),$(2)),,echo "install: $(DESTDIR)$(1)/$(4): $(3) reads only $(2) (give $(5)=$(firstword $(2)))";)

# The configuration as installed (the same for every PREFIX).
build/install/musicd.conf: config/musicd.conf Makefile
	@mkdir -p build/install
	@tmp=$@.$$$$.tmp; sed $(CONF_SED) $< >$$tmp && \
	for line in $(CONF_LINES); do \
		grep -qx "$$line" $$tmp || { echo "$$line: not in $@" >&2; rm -f $$tmp; exit 1; }; \
	done && mv $$tmp $@

# The logrotate file as installed: its sbindir's (rewritten whatever the last install's was).
build/install/musicd.logrotate: config/musicd.logrotate Makefile FORCE
	@mkdir -p build/install
	@tmp=$@.$$$$.tmp; sed $(LOGROTATE_SED) $< >$$tmp && \
	grep -q '^[[:space:]]*$(LOGROTATE_LINE)$$' $$tmp || { echo "$(LOGROTATE_LINE): not in $@" >&2; rm -f $$tmp; exit 1; }; \
	mv $$tmp $@

UNIT_INSTALLED := $(DESTDIR)$(SYSTEMDUNITDIR)/musicd.service
TEMPLATE_INSTALLED := $(DESTDIR)$(SYSTEMDUNITDIR)/musicd@.service
MAN_INSTALLED := $(DESTDIR)$(man8dir)/musicd.8
# Prometheus's rules (with their unit tests, so an edited copy can be tested) and the Grafana
# dashboard: read from where they are installed (docs/monitoring.md).
MONITORING_FILES := prometheus/musicd.rules.yml prometheus/musicd.rules.test.yml \
	grafana/musicd-dashboard.json

install: build/install/musicd build/install/musicd-import build/install/musicd.conf build/install/musicd.logrotate
	$(INSTALL) -d -m 755 $(DESTDIR)$(sbindir) $(DESTDIR)$(bindir) $(DESTDIR)$(sysconfdir)/musicd \
		$(DESTDIR)$(SYSTEMDUNITDIR) $(DESTDIR)$(TMPFILESDIR) $(DESTDIR)$(SYSUSERSDIR) \
		$(DESTDIR)$(LOGROTATEDIR) $(DESTDIR)$(man1dir) $(DESTDIR)$(man8dir) $(EXAMPLES_INSTALLED)
	$(INSTALL_PROGRAM) build/install/musicd $(DESTDIR)$(sbindir)/musicd
	$(INSTALL_PROGRAM) build/install/musicd-import $(DESTDIR)$(bindir)/musicd-import
	@if [ -e $(CONF_INSTALLED) ]; then echo "install: $(CONF_INSTALLED) exists, kept"; \
	else \
		$(INSTALL_DATA) build/install/musicd.conf $(CONF_INSTALLED); fi
	@if [ -e $(LOGROTATE_INSTALLED) ]; then echo "install: $(LOGROTATE_INSTALLED) exists, kept"; \
	else \
		$(INSTALL_DATA) build/install/musicd.logrotate $(LOGROTATE_INSTALLED); fi
	sed $(UNIT_SED) config/musicd.service >$(UNIT_INSTALLED)
	grep -qx 'ExecStart=$(sbindir)/musicd --config $(sysconfdir)/musicd/musicd.conf' $(UNIT_INSTALLED)
	sed $(TEMPLATE_SED) $(UNIT_INSTALLED) >$(TEMPLATE_INSTALLED)
	grep -q '^Description=musicd (instance %i), ' $(TEMPLATE_INSTALLED)
	sed $(MAN_SED) man/musicd.8 >$(MAN_INSTALLED)
	chmod 644 $(UNIT_INSTALLED) $(TEMPLATE_INSTALLED) $(MAN_INSTALLED)
	$(INSTALL_DATA) config/musicd.tmpfiles $(DESTDIR)$(TMPFILESDIR)/musicd.conf
	$(INSTALL_DATA) config/musicd.sysusers $(DESTDIR)$(SYSUSERSDIR)/musicd.conf
	$(INSTALL_DATA) import/musicd-import.1 $(DESTDIR)$(man1dir)/musicd-import.1
	$(INSTALL_DATA) $(EXAMPLES) $(EXAMPLES_INSTALLED)
	$(INSTALL) -d -m 755 $(DESTDIR)$(pkgdatadir)/prometheus $(DESTDIR)$(pkgdatadir)/grafana
	for file in $(MONITORING_FILES); do $(INSTALL_DATA) config/$$file $(DESTDIR)$(pkgdatadir)/$$file || exit 1; done
	@$(call unread,$(SYSTEMDUNITDIR),$(SYSTEMD_READS),systemd,musicd.service,SYSTEMDUNITDIR)
	@$(call unread,$(TMPFILESDIR),$(TMPFILES_READS),systemd-tmpfiles,musicd.conf,TMPFILESDIR)
	@$(call unread,$(SYSUSERSDIR),$(SYSUSERS_READS),systemd-sysusers,musicd.conf,SYSUSERSDIR)
	@$(call unread,$(LOGROTATEDIR),$(LOGROTATE_READS),logrotate,musicd,LOGROTATEDIR)
	@if [ -z "$(DESTDIR)" ]; then \
		echo "install: next, as root: the user and the directories of the layout, then the unit:"; \
		echo "    systemd-sysusers $(SYSUSERSDIR)/musicd.conf && systemd-tmpfiles --create $(TMPFILESDIR)/musicd.conf"; \
		echo "    systemctl daemon-reload && systemctl enable --now musicd"; fi

uninstall: build/install/musicd.conf build/install/musicd.logrotate
	rm -f $(DESTDIR)$(sbindir)/musicd $(DESTDIR)$(bindir)/musicd-import \
		$(UNIT_INSTALLED) $(TEMPLATE_INSTALLED) \
		$(DESTDIR)$(TMPFILESDIR)/musicd.conf $(DESTDIR)$(SYSUSERSDIR)/musicd.conf \
		$(MAN_INSTALLED) $(DESTDIR)$(man1dir)/musicd-import.1 \
		$(addprefix $(EXAMPLES_INSTALLED)/,$(notdir $(EXAMPLES))) \
		$(MONITORING_FILES:%=$(DESTDIR)$(pkgdatadir)/%)
	@for pair in build/install/musicd.conf:$(CONF_INSTALLED) build/install/musicd.logrotate:$(LOGROTATE_INSTALLED); do \
		shipped=$${pair%%:*}; installed=$${pair#*:}; \
		if [ ! -e "$$installed" ]; then :; \
		elif cmp -s "$$shipped" "$$installed"; then rm -f "$$installed"; \
		else echo "uninstall: $$installed was edited, kept"; fi; \
	done
	-@rmdir $(DESTDIR)$(sysconfdir)/musicd 2>/dev/null || true
	-@rmdir $(EXAMPLES_INSTALLED) $(DESTDIR)$(docdir) 2>/dev/null || true
	-@rmdir $(DESTDIR)$(pkgdatadir)/prometheus $(DESTDIR)$(pkgdatadir)/grafana \
		$(DESTDIR)$(pkgdatadir) 2>/dev/null || true

FORCE:

.PHONY: all asan unit-build unit layers fuzz-build fuzz tools deps demo-deps ferretdb test demo deb bench clean install uninstall FORCE
