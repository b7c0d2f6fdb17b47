# tests/embed/pkgconfig.mk — a consumer built by make through pkg-config, as README.md shows
# (check_embed.py pkgconfig): make -f pkgconfig.mk MODEL=name PKG=name_emu OUT=dir [CONSUMER=consumer.c]
# with PKG_CONFIG_PATH at the folder of PKG.pc.
SRC_DIR := $(dir $(lastword $(MAKEFILE_LIST)))
CONSUMER ?= $(SRC_DIR)consumer.c
CFLAGS := -std=c99 -pedantic-errors -Wall -Wextra -Werror -DMODEL=$(MODEL) $(shell pkg-config --cflags $(PKG))
CXXFLAGS := -std=c++11 -pedantic-errors -Wall -Wextra -Werror -DMODEL=$(MODEL) $(shell pkg-config --cflags $(PKG))
LDLIBS := $(shell pkg-config --libs $(PKG))

$(OUT)/consumer_c: $(CONSUMER)
	$(CC) $(CFLAGS) -o $@ $< $(LDLIBS)

$(OUT)/consumer_cxx: $(SRC_DIR)consumer.cpp
	$(CXX) $(CXXFLAGS) -o $@ $< $(LDLIBS)
